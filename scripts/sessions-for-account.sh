#!/usr/bin/env bash
# sessions-for-account.sh ACCOUNT OUT_DIR SESSION.yml...
#
# Writes a copy of each recorded host-capability session (a kwctl
# --replay-host-capabilities-interactions file) into OUT_DIR, under the same
# file name, with every kubernetes/can_i question (a SubjectAccessReview)
# asked for the PolicyServer account ACCOUNT instead of the one it was
# recorded for:
#
#   scripts/sessions-for-account.sh system:serviceaccount:kubewarden:kata-runtime-policy \
#     test_data/sessions/examples test_data/sessions/kata-workers.yml
#
# Why: before it lists nodes, the policy asks whether the account of its
# policyServerServiceAccount setting may list and watch them, and a replay
# answers only the exact question recorded. The sessions of test_data/sessions
# were recorded for the default account,
# system:serviceaccount:kubewarden:policy-server; replayed with another
# account (the examples' system:serviceaccount:kubewarden:kata-runtime-policy)
# the first question already fails with "Replay error: unexpected request".
#
# ACCOUNT is system:serviceaccount:NAMESPACE:NAME, NAMESPACE and NAME DNS
# labels (what the policy accepts in policyServerServiceAccount). In each
# can_i request the user becomes ACCOUNT and the group
# system:serviceaccounts:<recorded namespace> becomes
# system:serviceaccounts:NAMESPACE; in its recorded answer, the RBAC reason's
# ServiceAccount "<name>/<namespace>" becomes ServiceAccount "NAME/NAMESPACE".
# Nothing else changes: the other questions, the answers, the comments.
# A rewritten copy starts with a comment saying so. A session without any
# can_i question (e.g. one for a pod bound to a node, read by name) is copied
# unchanged, with a note on stderr.
#
# Fails, writing nothing for that session, on a malformed ACCOUNT, a missing
# or unreadable session, a can_i request whose user is not a service account
# or that it cannot find in the recorded form (the request as a YAML block
# starting with the line !KubernetesCanI, as kwctl records it), two sessions
# with the same file name, or an output that would overwrite its own input.
#
# Tools: bash, awk, mkdir, cp, mv, mktemp (Debian's base system).
set -euo pipefail

usage() {
  echo "usage: $0 system:serviceaccount:NAMESPACE:NAME OUT_DIR SESSION.yml..." >&2
  exit 2
}

for tool in awk mkdir cp mv mktemp; do
  command -v "$tool" >/dev/null || {
    echo "$0: $tool is required" >&2
    exit 1
  }
done

[[ $# -ge 3 ]] || usage
account=$1
out_dir=$2
shift 2

# A DNS label: lower-case letters, digits and '-', 1 to 63, alphanumeric at
# both ends.
label='[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?'
if ! [[ $account =~ ^system:serviceaccount:($label):($label)$ ]]; then
  echo "$0: malformed account \"$account\": expected system:serviceaccount:NAMESPACE:NAME," >&2
  echo "  NAMESPACE and NAME DNS labels (lower-case letters, digits and '-', at most 63)" >&2
  exit 1
fi
namespace=${BASH_REMATCH[1]}
name=${BASH_REMATCH[3]}

mkdir -p "$out_dir"

# The rewrite; its input is one session, its output the copy. Exits 3 when
# the session has no can_i question (nothing written), 1 on an error.
# shellcheck disable=SC2016 # awk's own $0 and $fields
rewrite='
function indent(s) { match(s, /^ */); return RLENGTH }
function fail(msg) { printf "%s:%d: %s\n", FILENAME, FNR, msg > "/dev/stderr"; failed = 1; exit 1 }
# Every occurrence of the literal text `from` in `s` replaced by `to`.
function replace_all(s, from, to,    at, out) {
  out = ""
  while ((at = index(s, from)) > 0) {
    out = out substr(s, 1, at - 1) to
    s = substr(s, at + length(from))
  }
  return out s
}
# The RBAC reason names a service account "<name>/<namespace>", written
# inside a JSON string (escaped quotes).
function rbac_name(user,    parts) {
  split(user, parts, ":")
  return "ServiceAccount \\\"" parts[4] "/" parts[3] "\\\""
}
BEGIN {
  account = ENVIRON["SFA_ACCOUNT"]; namespace = ENVIRON["SFA_NAMESPACE"]
  name = ENVIRON["SFA_NAME"]; new_rbac = "ServiceAccount \\\"" name "/" namespace "\\\""
  questions = 0; lines = 0; recorded = ""
}
{
  line = $0
  # A top-level list item starts the next exchange.
  if (line ~ /^- /) { old = ""; in_question = 0 }
  if (in_question && line !~ /^[ \t]*$/ && indent(line) < question_indent) {
    if (!seen_user) fail("the kubernetes/can_i request above has no user line")
    in_question = 0
  }
  if (line ~ /^ *!KubernetesCanI[ \t]*$/) {
    if (in_question && !seen_user) fail("the kubernetes/can_i request above has no user line")
    in_question = 1; question_indent = indent(line); seen_user = 0; questions++
  } else if (index(line, "KubernetesCanI")) {
    fail("a kubernetes/can_i request not in the recorded form (a YAML block starting with the line !KubernetesCanI): cannot rewrite it")
  } else if (in_question && match(line, /^ *user: */)) {
    if (seen_user) fail("a kubernetes/can_i request with two user lines")
    user = substr(line, RLENGTH + 1)
    sub(/[ \t]+$/, "", user)
    if (user !~ /^system:serviceaccount:[^:]+:[^:]+$/)
      fail("the kubernetes/can_i request asks about " user ", not a service account (system:serviceaccount:NAMESPACE:NAME): cannot rewrite it")
    line = substr(line, 1, RLENGTH) account
    seen_user = 1; old = rbac_name(user)
    if (index(" " recorded " ", " " user " ") == 0) recorded = recorded (recorded == "" ? "" : " ") user
  } else if (in_question && match(line, /^ *- system:serviceaccounts:/)) {
    line = substr(line, 1, RLENGTH) namespace
  } else if (!in_question && old != "") {
    line = replace_all(line, old, new_rbac)
  }
  out[++lines] = line
}
END {
  if (failed) exit 1
  if (in_question && !seen_user) fail("the kubernetes/can_i request at the end has no user line")
  if (questions == 0) exit 3
  file = FILENAME; sub(/.*\//, "", file)
  print "# Generated by scripts/sessions-for-account.sh (do not edit): " file
  print "# with its kubernetes/can_i questions asked for"
  print "# " account " (recorded for"
  print "# " recorded ")."
  for (i = 1; i <= lines; i++) print out[i]
}'

# Every session checked before any is written.
declare -A written=()
for session in "$@"; do
  [[ -f $session && -r $session ]] || {
    echo "$0: $session: no such readable file" >&2
    exit 1
  }
  base=${session##*/}
  target=$out_dir/$base
  if [[ -n ${written[$base]:-} ]]; then
    echo "$0: $session and ${written[$base]} would both be written to $target" >&2
    exit 1
  fi
  if [[ -e $target && $session -ef $target ]]; then
    echo "$0: $session would be overwritten by its own copy: choose another OUT_DIR" >&2
    exit 1
  fi
  written[$base]=$session
done

for session in "$@"; do
  base=${session##*/}
  target=$out_dir/$base
  tmp=$(mktemp "$out_dir/.$base.XXXXXX")
  status=0
  SFA_ACCOUNT=$account SFA_NAMESPACE=$namespace SFA_NAME=$name \
    awk "$rewrite" "$session" >"$tmp" || status=$?
  case $status in
    0)
      # mktemp made it private; a copy is as readable as any new file.
      chmod "$(printf '%o' $((0666 & ~0$(umask))))" "$tmp"
      mv "$tmp" "$target"
      echo "$target: can_i asked for $account"
      ;;
    3)
      rm -f "$tmp"
      cp "$session" "$target"
      echo "$target: copied unchanged (no kubernetes/can_i question in $session)" >&2
      ;;
    *)
      rm -f "$tmp"
      echo "$0: $session: not rewritten" >&2
      exit 1
      ;;
  esac
done
