#!/usr/bin/env bash
# Every settings document main ships (examples/, policy-settings.json,
# test_data/settings-examples.yml, the policy blocks and settings blocks of
# README.md, docs/ and artifacthub-install.md, a settings block merged over
# the protect example's settings) must validate against the
# module of the release main names (Cargo.toml's version): the examples pin
# that release, and policy-server stops on a setting the module refuses.
# Runs the module in the project's own runner (kwrun): no cluster needed.
# Needs python3 with PyYAML (Debian: python3-yaml).
set -euo pipefail

cd "$(dirname "$0")/.."
root=$PWD
die() { printf 'release-settings: %s\n' "$*" >&2; exit 1; }

python3 -c 'import yaml' 2>/dev/null ||
  die "needs python3 with PyYAML to read the YAML documents (Debian: apt-get install python3-yaml; else pip install pyyaml)"

# 1. The release main names: the first version under [package].
version=$(awk '/^\[/ { pkg = ($0 == "[package]") }
  pkg && /^version *= *"/ { sub(/^version *= *"/, ""); sub(/".*/, ""); print; exit }' Cargo.toml)
[ -n "$version" ] || die "no version under [package] in Cargo.toml"

# 2. Its commit: the tag, else the commit that added its dated CHANGELOG
# section. In a shallow clone the oldest commit seen may not be the one that
# added it (the cut-off commit seems to add the whole file): refuse to guess.
if rel=$(git rev-parse -q --verify "refs/tags/v$version^{commit}"); then
  found="tag v$version"
elif [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  die "no tag v$version and the history is shallow, so the commit that released $version cannot be found: run git fetch --unshallow (or fetch the tag v$version)"
else
  rel=$(git log --format=%H -S"## [$version] - " -- CHANGELOG.md | tail -n 1)
  [ -n "$rel" ] || die "Cargo.toml names $version, but $version is not released: no tag v$version and no commit adds a '## [$version] - YYYY-MM-DD' section to CHANGELOG.md. Release $version (commit its dated CHANGELOG section, or tag v$version) before the documents name it, or set Cargo.toml back to the last release"
  found="the commit that added CHANGELOG.md's [$version] section"
fi
short=$(git rev-parse --short "$rel")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/release-settings.XXXXXX")
worktree=""
cleanup() {
  if [ -n "$worktree" ]; then
    git worktree remove --force "$worktree" 2>/dev/null || true
    git worktree prune
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# 3. The module at that commit. policy.wasm only when the policy sources here
# (committed and not) are the release's: make rebuilds it if it is stale.
sources=(src Cargo.toml Cargo.lock)
if git diff --quiet "$rel" -- "${sources[@]}" && git diff --quiet HEAD -- "${sources[@]}"; then
  make --no-print-directory policy.wasm >&2
  module=policy.wasm
else
  # The release's own sources and lock file, built into a target dir of its
  # own (dependency builds kept across runs, main's target/ untouched). A
  # commit's sources never change: its module is kept, named by the commit.
  module=target/release-settings/kata_runtime_policy-$rel.wasm
  if [ ! -f "$module" ]; then
    worktree=$tmp/worktree
    git worktree add -q --detach "$worktree" "$rel"
    echo "release-settings: building the v$version module from $short" >&2
    # Built from inside the worktree so that the release's own cargo config
    # and toolchain files apply, not HEAD's.
    (cd "$worktree" && cargo build --locked --release --target wasm32-wasip1 \
      -p kata-runtime-policy --target-dir "$root/target/release-settings")
    cp target/release-settings/wasm32-wasip1/release/kata_runtime_policy.wasm "$module.tmp"
    mv "$module.tmp" "$module"
  fi
fi

# 4. The runner: `kwrun run` validates the settings before evaluating, and
# the evaluation itself cannot fail (no session: an allowed response), so any
# error is either a refusal or a broken check.
cargo build -q -p kwrun
kwrun=target/debug/kwrun

total=0
failed=0
check() { # check LABEL SETTINGS-FILE
  local err
  total=$((total + 1))
  if err=$("$kwrun" run --request-path test_data/pod-plain.json \
    --settings-path "$2" "$module" 2>&1 >/dev/null); then
    echo "ok $1"
    return
  fi
  failed=$((failed + 1))
  err=${err#Error: }
  case $err in
    "Provided settings are not valid"*)
      echo "not ok $1: settings refused by the v$version module (built from $short): ${err#Provided settings are not valid: } — release a new version, or remove settings that v$version does not know" ;;
    *) echo "not ok $1: cannot check it with the v$version module (built from $short): $err" ;;
  esac
}

# 5. The settings documents. PyYAML reads YAML 1.1 as kubectl does (what the
# API server stores is what policy-server gets). Each line: LABEL<TAB>JSON,
# or LABEL<TAB>!ERROR for a document that cannot be read.
extract=$(
  cat <<'PY'
import json, os, re, sys, yaml

KINDS = {"ClusterAdmissionPolicy", "AdmissionPolicy", "ClusterAdmissionPolicyGroup"}

def ours(spec):
    # A policy of another module is not ours to check; a doc block may omit it.
    return "module" not in spec or "kata-runtime-policy" in str(spec["module"])

def policies(doc):
    if not isinstance(doc, dict) or doc.get("kind") not in KINDS:
        return
    spec = doc.get("spec") or {}
    name = (doc.get("metadata") or {}).get("name", "?")
    if doc["kind"] == "ClusterAdmissionPolicyGroup":
        for member, p in (spec.get("policies") or {}).items():
            if ours(p or {}):
                yield f"{name}/{member}", (p or {}).get("settings") or {}
    elif ours(spec):
        yield name, spec.get("settings") or {}

def emit(label, value):
    print(f"{label}\t{value}")

def check_text(label, text, block):
    try:
        docs = list(yaml.safe_load_all(text))
    except yaml.YAMLError as e:
        emit(label, "!not valid YAML: " + " ".join(str(e).split()))
        return
    for doc in docs:
        for name, settings in policies(doc):
            emit(f"{label}#{name}", json.dumps(settings))
        # A documentation block showing only some settings of the policy:
        # what they change in the example's (a block without the required
        # settings is a fragment to merge, not a policy of its own).
        if block and isinstance(doc, dict) and set(doc) == {"settings"}:
            emit(f"{label}#settings", json.dumps({**BASE, **(doc["settings"] or {})}))

POLICY = re.compile(r"^kind: *(Cluster)?AdmissionPolicy(Group)?\s*$", re.M)
BASE = yaml.safe_load(open("test_data/settings-examples.yml", encoding="utf-8")) or {}
for path in sys.argv[1:]:
    if not os.path.exists(path):  # not every checkout has every document
        continue
    text = open(path, encoding="utf-8").read()
    if not path.endswith(".md"):
        check_text(path, text, False)
        continue
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"^(\s*)```ya?ml\s*$", lines[i])
        i += 1
        if not m:
            continue
        start, indent, body = i, len(m.group(1)), []
        while i < len(lines) and not re.match(r"^\s*```\s*$", lines[i]):
            body.append(lines[i][indent:])
            i += 1
        i += 1
        block = "\n".join(body)
        if POLICY.search(block) or re.search(r"^settings:\s*$", block, re.M):
            check_text(f"{path}:{start}", block, True)
PY
)
shopt -s nullglob
docs=$(python3 -c "$extract" examples/*.yaml README.md docs/*.md artifacthub-install.md)

# Whole settings files go to kwrun as they are.
for file in policy-settings.json test_data/settings-examples.yml; do
  [ -f "$file" ] || continue
  check "$file" "$file"
done
n=0
while IFS=$'\t' read -r label settings; do
  [ -n "$label" ] || continue
  if [ "${settings:0:1}" = "!" ]; then
    total=$((total + 1)) failed=$((failed + 1))
    echo "not ok $label: ${settings:1}"
    continue
  fi
  n=$((n + 1))
  printf '%s\n' "$settings" >"$tmp/settings-$n.json"
  check "$label" "$tmp/settings-$n.json"
done <<<"$docs"

# 6. The verdict, naming the release and where its module came from.
from="v$version: module built from $short, $found"
if [ "$failed" -gt 0 ]; then
  echo "release-settings: $failed of $total settings documents refused by the release main names ($from)"
  exit 1
fi
echo "release-settings: all $total settings documents validate against the release main names ($from)"
