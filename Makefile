# kata-runtime-policy. `make demo` shows the policy deciding on example pods;
# `make check` is the full test suite (what CI runs).

SOURCE_FILES := $(shell find src -type f -name '*.rs') Cargo.toml
RUNNER_FILES := $(shell find runner -type f -name '*.rs' 2>/dev/null) runner/Cargo.toml
# The project's own waPC host, a kwctl-compatible runner (runner/).
KWRUN := target/debug/kwrun
KWCTL ?= kwctl

.PHONY: all
all: policy.wasm

.PHONY: setup
setup:
	scripts/setup.sh

# wasm-opt -Oz (Debian's binaryen) takes 14% off the module at no measured
# cost in speed; policy-server compiles the module at boot (BENCHMARKS.md).
WASM_OPT_FEATURES := --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int --enable-mutable-globals

policy.wasm: $(SOURCE_FILES)
	rustup target add wasm32-wasip1
	cargo build --target=wasm32-wasip1 --release -p kata-runtime-policy
	wasm-opt -Oz $(WASM_OPT_FEATURES) target/wasm32-wasip1/release/kata_runtime_policy.wasm -o policy.wasm

annotated-policy.wasm: policy.wasm metadata.yml README.md
	$(KWCTL) annotate -m metadata.yml -u README.md -o annotated-policy.wasm policy.wasm

# What `kwctl scaffold artifacthub` produces from metadata.yml and
# questions-ui.yml; the version is metadata.yml's io.kubewarden.policy.version
# (runner/tests/artifacthub.rs re-derives the file and its rules without kwctl).
# createdAt is then set to that version's release date in CHANGELOG.md, so
# that the file does not change each time it is scaffolded
# (runner/tests/release.rs checks both).
.PHONY: artifacthub
artifacthub: metadata.yml questions-ui.yml artifacthub-install.md CHANGELOG.md
	$(KWCTL) scaffold artifacthub --metadata-path metadata.yml \
	  --questions-path questions-ui.yml --output artifacthub-pkg.yml
	@# kwctl's install text scaffolds a policy that cannot read the cluster:
	@# artifacthub-install.md replaces it.
	awk 'FNR == NR { text = text "  " $$0 "\n"; next } \
	  skip && /^  / { next } { skip = 0 } \
	  $$0 == "install: |" { print; gsub(/\n  \n/, "\n\n", text); printf "%s", text; skip = 1; next } \
	  { print }' artifacthub-install.md artifacthub-pkg.yml > artifacthub-pkg.yml.tmp
	mv artifacthub-pkg.yml.tmp artifacthub-pkg.yml
	@version=$$(sed -n 's/^  io\.kubewarden\.policy\.version: *//p' metadata.yml); \
	date=$$(sed -n "s/^## \[$$version\] - \([0-9-]*\)$$/\1/p" CHANGELOG.md); \
	if [ -n "$$date" ]; then \
	  sed -i "s/^createdAt: .*/createdAt: $${date}T00:00:00Z/" artifacthub-pkg.yml; \
	else \
	  echo "CHANGELOG.md has no [$$version] section: createdAt left as kwctl wrote it"; \
	fi

$(KWRUN): $(RUNNER_FILES)
	cargo build -p kwrun

.PHONY: fmt
fmt:
	cargo fmt --all

.PHONY: lint
lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings

# The user documents (README.md, CHANGELOG.md, BENCHMARKS.md, RELIABILITY.md,
# docs/, examples/, metadata.yml, questions-ui.yml): every relative link and
# anchor resolves, every repository file they name exists, and none mentions
# an issue number or ../shared (runner/tests/docs.rs; also part of `test`);
# and every settings document they ship validates against the module of the
# release they name, built from its commit (scripts/release-settings.sh).
.PHONY: docs-check
docs-check:
	cargo test -p kwrun --test docs
	scripts/release-settings.sh

# Unit tests (native) and the integration tests that run policy.wasm in the waPC host.
.PHONY: test
test: policy.wasm
	POLICY_WASM=$(CURDIR)/policy.wasm cargo test --workspace

# e2e.bats with kwctl, as Kubewarden's policies run it.
.PHONY: e2e-tests
e2e-tests: annotated-policy.wasm
	bats e2e.bats

# e2e.bats under the real kwctl when it is there (KWCTL, else PATH);
# skipped with a line saying so otherwise.
.PHONY: e2e-tests-kwctl
e2e-tests-kwctl: policy.wasm
	@if command -v $(KWCTL) >/dev/null 2>&1; then \
	  $(MAKE) --no-print-directory e2e-tests; \
	else \
	  echo "SKIP e2e.bats under kwctl: $(KWCTL) not found (set KWCTL or put kwctl on PATH)"; \
	fi

# The real production path: kube-apiserver -> policy-server -> policy.wasm,
# kube-scheduler placing every pod (tests/cluster/run.sh; skips, saying
# which binary is missing, when one is).
.PHONY: e2e-cluster
e2e-cluster: policy.wasm
	tests/cluster/run.sh

# A silent API connection between policy-server and the API server, for
# real: admissions keep being decided (tests/cluster/faults.sh, through
# tests/cluster/faultproxy.py; skips, saying which binary is missing).
.PHONY: e2e-faults
e2e-faults: policy.wasm
	tests/cluster/faults.sh

# The node shapes on the real path: kata-node-shapes writes the view, a
# policy with nodeShapes answers as the node list does, and stale or missing
# views fall back (tests/cluster/shapes.sh).
.PHONY: e2e-shapes
e2e-shapes: policy.wasm
	cargo build -p kata-node-shapes
	tests/cluster/shapes.sh

# Kata's own shim and agent, from a prebuilt kit (docs/real-kata.md): a
# container under io.containerd.kata.v2, what Kata does with the pod
# shapes of docs/kata-compatibility.md, and the demo's mutated pods started
# under Kata. Without a kit (KATA_KIT) it is skipped, saying so.
.PHONY: e2e-kata
e2e-kata: policy.wasm $(KWRUN)
	tests/kata/ctr.sh
	tests/kata/node.sh

# e2e.bats with the project's own runner instead of kwctl.
.PHONY: e2e-tests-local
e2e-tests-local: policy.wasm $(KWRUN)
	KWCTL=$(KWRUN) POLICY=policy.wasm bats e2e.bats

# The benchmark guest: policy.wasm's code plus bench-only functions (floor,
# transfer, memory probe), built with the release settings into its own dir.
BENCH_GUEST := target/wasm32-wasip1/bench-wasm/kata_runtime_policy.wasm
# Cost against pod size: the element counts of the tenant-shaped pods.
POD_SIZES ?= 1000,4000,16000

.PHONY: bench
bench: policy.wasm $(KWRUN)
	cargo build --profile bench-wasm --target wasm32-wasip1 -p kata-runtime-policy --features bench
	target/debug/kwbench $(BENCH_GUEST) policy.wasm $(BENCH_ARGS) | tee target/bench.md
	target/debug/kwbench $(BENCH_GUEST) --pod-sizes $(POD_SIZES) | tee target/bench-pod-size.md

# One Pod CREATE under the real policy-server at NODES kata nodes (etcd,
# kube-apiserver and policy-server on loopback), runtimeHandlerCheck off
# and auto; skips, saying which binary is missing, when one is.
# SHAPE=realistic creates kwbench's realistic nodes (`kwbench nodes`).
NODES ?= 1000

.PHONY: bench-policy-server
bench-policy-server: policy.wasm $(KWRUN)
	cargo build -p kata-node-shapes
	scripts/bench-policy-server.sh $(NODES)

# Coverage-guided fuzzing (fuzz/, cargo-fuzz on stable, no sanitizer).
FUZZ_SECONDS ?= 600

.PHONY: fuzz
fuzz:
	scripts/fuzz.sh $(FUZZ_SECONDS)

# A few seconds per target: catches regressions on every CI run.
.PHONY: fuzz-smoke
fuzz-smoke:
	scripts/fuzz.sh 5

# What the README's "Try it first" replays: the settings of
# examples/cluster-admission-policy.yaml, as a settings file, and copies of
# recorded sessions whose kubernetes/can_i questions are asked for its
# policyServerServiceAccount (scripts/sessions-for-account.sh).
# runner/tests/example_sessions.rs checks that both are up to date.
EXAMPLE_POLICY := examples/cluster-admission-policy.yaml
EXAMPLE_SETTINGS := test_data/settings-examples.yml
EXAMPLE_SESSIONS := kata-deploy-4/kata-workers.yml kata-deploy-4/handlers-k3s.yml

.PHONY: example-sessions
example-sessions:
	@{ echo '# The settings of $(EXAMPLE_POLICY), for kwctl run --settings-path'; \
	  echo '# (make example-sessions; do not edit).'; \
	  awk '/^  settings:[ \t]*$$/ { on = 1; next } \
	       on && $$0 != "" && $$0 !~ /^    / { exit } \
	       on && $$0 !~ /^ *(#|$$)/ { sub(/^    /, ""); print }' $(EXAMPLE_POLICY); \
	} >$(EXAMPLE_SETTINGS)
	@account=$$(sed -n "s/^policyServerServiceAccount: *[\"']*\([^\"' ]*\).*/\1/p" $(EXAMPLE_SETTINGS)); \
	rm -f test_data/sessions/examples/*.yml; \
	scripts/sessions-for-account.sh "$$account" test_data/sessions/examples \
	  $(addprefix test_data/sessions/,$(EXAMPLE_SESSIONS))

.PHONY: demo
demo: setup policy.wasm $(KWRUN)
	KWRUN=$(KWRUN) scripts/demo.sh

# The README's first command, run as CI runs everything: each scenario of
# the demo must be decided (a refused setting fails it).
.PHONY: demo-check
demo-check: policy.wasm $(KWRUN)
	KWRUN=$(KWRUN) scripts/demo.sh >/dev/null

# Everything CI runs, from a fresh machine.
.PHONY: check
check: setup lint docs-check test demo-check e2e-tests-local e2e-tests-kwctl e2e-cluster e2e-faults e2e-shapes e2e-kata fuzz-smoke

.PHONY: clean
clean:
	cargo clean
	rm -f policy.wasm annotated-policy.wasm
