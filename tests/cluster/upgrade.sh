# Upgrading from 0.1.0, and rolling back: README.md's sections "Upgrade from
# 0.1.0" and "Roll back to 0.1.0", every command as written and in order, on
# a cluster set up as 0.1.0's README set it up (its examples, from the commit
# released as 0.1.0, and its module, built from that commit). The Kubewarden
# controller's part is controller.sh's, played where README.md waits for it.
# After every command a new pod must get Kata (at no step is Pod creation
# without a protect policy), and every PolicyServer that serves policies
# must still be allowed to read what they read. Sourced by run.sh at its
# end, after every other policy is gone.

# The commit released as 0.1.0 (CHANGELOG.md, "[0.1.0] - 2026-11-29").
V010_COMMIT=4cbcb661f289905dc28873976706f17648fcdb91
UPGRADE_NS=upgrade

# v010_module: 0.1.0's policy, built from its commit with its own lock file
# into target/v0.1.0 (kept between runs), annotated with its own metadata,
# in V010_WASM. Returns 1, with the reason in V010_MISSING, when this
# checkout has not that commit (a shallow clone).
v010_module() {
  local src=$D/v0.1.0-src out
  if ! git -C "$ROOT" cat-file -e "$V010_COMMIT^{commit}" 2>/dev/null; then
    V010_MISSING="this checkout has not the commit released as 0.1.0 ($V010_COMMIT; a shallow clone?)"
    return 1
  fi
  mkdir -p "$src"
  git -C "$ROOT" archive "$V010_COMMIT" | tar -x -C "$src" || die "0.1.0's files: git archive $V010_COMMIT failed"
  log "building 0.1.0's policy from $V010_COMMIT"
  out=$(cd "$src" && CARGO_TARGET_DIR=$ROOT/target/v0.1.0 cargo build --locked --target=wasm32-wasip1 --release -p kata-runtime-policy 2>&1) ||
    die "0.1.0's policy does not build: $(tail -5 <<<"$out")"
  V010_WASM=$D/v0.1.0.wasm
  out=$("$KWCTL" annotate -m "$src/metadata.yml" -u "$src/README.md" -o "$V010_WASM" \
    "$ROOT/target/v0.1.0/wasm32-wasip1/release/kata_runtime_policy.wasm" 2>&1) ||
    die "0.1.0's policy: kwctl annotate failed: $out"
}

# upgrade_probe NAME: a plain pod NAME in $UPGRADE_NS (run.sh's in_rollout
# and rollout_class); its class in PROBE_CLASS ("" none, "missing" when not
# created), kubectl's output in PROBE_OUT.
upgrade_probe() {
  PROBE_OUT=$(in_rollout $UPGRADE_NS "$1")
  PROBE_CLASS=$(rollout_class $UPGRADE_NS "$1")
}

# upgrade_probe_steady NAME: upgrade_probe, told apart from load (the pod
# probed last in PROBE_NAME). A call the API server gave up on (the
# webhook's timeoutSeconds: on a busy CI machine a fresh policy-server's
# first evaluations, or 0.1.0's first node list, can outlast it) fails open
# under failurePolicy Ignore, whatever the configuration: the pod is probed
# again, up to UPGRADE_RETRIES times 3 s apart, and a note says so. A
# refused connection (a policy-server stopped while a webhook still calls
# it) is a gap of the configuration, never retried.
UPGRADE_RETRIES=4
upgrade_probe_steady() {
  local before timeouts try=0 name=$1
  while :; do
    before=$(wc -l <"$D/kube-apiserver.log")
    PROBE_NAME=$name
    upgrade_probe "$name"
    [[ $PROBE_CLASS == "" ]] || return 0
    timeouts=$(tail -n +"$((before + 1))" "$D/kube-apiserver.log" | grep -F 'failing open clusterwide-kata-runtime' || true)
    [[ -n $timeouts && $timeouts != *"connection refused"* &&
      $timeouts =~ (deadline exceeded|Client\.Timeout) ]] || return 0
    ((try < UPGRADE_RETRIES)) || return 0
    try=$((try + 1))
    echo "# note: $name failed open on a webhook timeout ($(one_line "$(head -1 <<<"$timeouts" | cut -c1-300)")); probed again as $1-again$try in 3 s"
    sleep 3
    name=$1-again$try
  done
}

# upgrade_policies: the ClusterAdmissionPolicies, "name@policyServer@module"
# each, sorted, space-separated.
upgrade_policies() {
  k get clusteradmissionpolicies -o json |
    jq -r '[.items[] | "\(.metadata.name)@\(.spec.policyServer)@\(.spec.module | sub(".*:"; ""))"] | sort | join(" ")'
}

# Each probe pod upgrade_follow made: the command it followed, and the
# policies kata-runtime-policy's policy-server then served.
declare -A PROBE_AFTER=() PROBE_SERVED=()

# upgrade_bindings: the bindings of kata-runtime-policy-reader,
# "name=namespace:account,…" each, sorted.
upgrade_bindings() {
  k get clusterrolebindings -o json | jq -r '[.items[] | select(.roleRef.name == "kata-runtime-policy-reader")
    | "\(.metadata.name)=\([.subjects[]? | "\(.namespace):\(.name)"] | join(","))"] | sort | join(" ")'
}

# upgrade_webhooks: Kubewarden's mutating webhook configurations,
# "name@the policy-server it calls" each, sorted.
upgrade_webhooks() {
  k get mutatingwebhookconfigurations -l app.kubernetes.io/part-of=kubewarden -o json |
    jq -r '[.items[] | "\(.metadata.name)@\(.webhooks[0].clientConfig.url | sub("/validate/.*"; ""))"] | sort | join(" ")'
}

# upgrade_access: for each PolicyServer that serves policies, whether its
# account may still read what they read (list nodes, get RuntimeClasses);
# "" when all may, else what is missing. Its running policy-server would
# go on from its watch cache for a while: the grants are asked for.
upgrade_access() {
  local ps sa verb
  for ps in "${!PS_SERVED[@]}"; do
    [[ -n $(controller_served "$ps") ]] || continue
    sa=$(k get policyserver "$ps" -o jsonpath='{.spec.serviceAccountName}' 2>/dev/null || echo policy-server)
    for verb in "list nodes" "get runtimeclasses.node.k8s.io"; do
      # shellcheck disable=SC2086 # the verb and the resource, two words
      [[ $(k auth can-i $verb --as="system:serviceaccount:$KW_NAMESPACE:$sa" 2>/dev/null) == yes ]] ||
        echo -n " $ps's account $sa may not $verb;"
    done
  done
}

# upgrade_follow SECTION WHAT: every command of README.md's SECTION run in
# order from a working folder (examples/ there is the repository's). The
# controller acts when README.md gives it time, as a real one needs it:
# before each wait (kubectl wait, rollout status), and, for a deletion,
# the part its finalizer does before the deletion completes (controller_sync
# drop); it catches up at the end. After each command a new pod in
# $UPGRADE_NS gets Kata, and every PolicyServer serving policies may read
# what they read. A shown output must be the one README.md shows.
upgrade_follow() {
  local section=$1 what=$2 i cmd n=0 gaps="" denied="" class diff access
  readme_section "$section"
  for i in "${!SECTION_CMDS[@]}"; do
    cmd=${SECTION_CMDS[i]}
    if [[ $cmd == *"kubectl wait "* || $cmd == *" wait --for=create "* || $cmd == *" rollout status "* ]]; then controller_sync; fi
    README_DIR=$UPGRADE_DIR readme_run "$cmd"
    CMD=$cmd
    if ((RC != 0)); then
      fail "$what: README.md's \`$(one_line "$cmd")\`: exit $RC: $(one_line "$OUT")${gaps:+; before it, a pod without Kata$gaps}${denied:+; before it, access lost$denied}"
      return
    fi
    if [[ -n ${SECTION_SHOWN[i]} ]] && ! diff=$(readme_output_is "${SECTION_SHOWN[i]}" "$OUT"); then
      fail "$what: README.md's \`$(one_line "$cmd")\`: $diff: $(one_line "$OUT")"
      return
    fi
    if [[ $cmd == "kubectl delete "* ]]; then controller_sync drop; fi
    n=$((n + 1))
    upgrade_probe_steady "$what-$n"
    class=$PROBE_CLASS
    # 0.1.0's examples assign kata, this release's kata-qemu-runtime-rs:
    # the same shim (the suite's two classes differ only by name).
    [[ $class == kata || $class == kata-qemu-runtime-rs ]] || gaps+=" after \`$(one_line "$cmd")\`: class '$class' ($(one_line "$PROBE_OUT"));"
    access=$(upgrade_access)
    [[ -z $access ]] || denied+=" after \`$(one_line "$cmd")\`:$access"
    PROBE_AFTER[$PROBE_NAME]=$cmd
    PROBE_SERVED[$PROBE_NAME]=$(controller_served kata-runtime-policy)
  done
  controller_sync
  if [[ -z $gaps && -z $denied ]]; then
    pass "$what: README.md's $n commands run as written; after each, a new pod gets Kata and every PolicyServer may read what its policies read"
  else
    fail "$what:${gaps:+ a pod without Kata$gaps}${denied:+ access lost$denied}"
  fi
}

echo "# upgrading from 0.1.0 and rolling back: README.md's steps, as written"
if [[ -z $CRDS ]]; then
  echo "SKIP upgrade from 0.1.0: $CRDS_MISSING"
elif ! v010_module; then
  echo "SKIP upgrade from 0.1.0: $V010_MISSING"
else
  source tests/cluster/controller.sh
  # Every policy of the suite gone, and the dedicated PolicyServer with its
  # account: a 0.1.0 cluster has neither.
  controller_clean_slate
  k delete -f examples/policy-server.yaml >/dev/null
  k create namespace $UPGRADE_NS >/dev/null
  k -n $UPGRADE_NS create serviceaccount default >/dev/null
  UPGRADE_DIR=$D/upgrade
  mkdir -p "$UPGRADE_DIR"
  ln -s "$ROOT/examples" "$UPGRADE_DIR/examples"
  CURRENT_MODULE=$(yaml_objects examples/cluster-admission-policy.yaml | jq -r .spec.module)
  MODULES[$CURRENT_MODULE]=$POLICY_FILE
  MODULES[registry://ghcr.io/kata-runtime-policy/policies/kata-runtime-policy:v0.1.0]=$V010_WASM
  # 0.1.0 as its README installed it: Kubewarden's default PolicyServer
  # (the kubewarden-defaults chart's, running as kubewarden/policy-server),
  # 0.1.0's RBAC for that account, its protect policy and its dry run.
  k -n "$KW_NAMESPACE" create serviceaccount policy-server >/dev/null
  k apply -f - >/dev/null <<EOF
apiVersion: policies.kubewarden.io/v1
kind: PolicyServer
metadata: {name: default}
spec: {image: "ghcr.io/kubewarden/policy-server:v1.36.0", serviceAccountName: policy-server, replicas: 1}
EOF
  for f in rbac.yaml cluster-admission-policy.yaml cluster-admission-policy-monitor.yaml; do
    git -C "$ROOT" show "$V010_COMMIT:examples/$f" | k apply -f - >/dev/null
  done
  controller_immutable
  controller_sync
  # The API server calls new webhooks once its informer has them.
  t=$(date +%s)
  until manifest_json tests/cluster/pods/plain.yaml | k -n $UPGRADE_NS create --dry-run=server -o json -f - 2>/dev/null |
    jq -e '.spec.runtimeClassName == "kata"' >/dev/null; do
    (($(date +%s) - t < 10)) || break
    sleep 0.3
  done
  before=$(upgrade_policies)
  upgrade_probe v010
  class=$PROBE_CLASS
  if [[ $before == "kata-runtime-dry-run@default@v0.1.0 kata-runtime@default@v0.1.0" && $class == kata &&
    $(controller_served default) == "kata-runtime kata-runtime-dry-run" ]]; then
    pass "0.1.0 as installed: $before, and its module gives a pod Kata"
  else
    fail "0.1.0 as installed: policies $before, served by default: '$(controller_served default)'; the pod: class '$class' ($PROBE_OUT)"
  fi
  # What the upgrade must avoid: this release's example over the 0.1.0
  # policy moves it to another PolicyServer, which the controller refuses.
  # (Tried until the admission policy that stands for it is in force.)
  t=$(date +%s)
  until out=$(k apply --dry-run=server -f examples/cluster-admission-policy.yaml 2>&1); [[ $out == *"the field is immutable"* ]]; do
    (($(date +%s) - t < 15)) || break
    sleep 0.3
  done
  if [[ $out == *"spec.policyServer: Forbidden: the field is immutable"* ]]; then
    pass "0.1.0 as installed: applying examples/cluster-admission-policy.yaml over it is refused: $(one_line "$out")"
  else
    fail "0.1.0 as installed: applying examples/cluster-admission-policy.yaml over it: $(one_line "$out")"
  fi

  upgrade_follow "Upgrade from 0.1.0" upgrade
  after=$(upgrade_policies)
  version=${CURRENT_MODULE##*:}
  bindings=$(upgrade_bindings)
  webhooks=$(upgrade_webhooks)
  at=${PS_AT[kata-runtime-policy]:-none}
  if [[ $after == "kata-runtime-dry-run@kata-runtime-policy@$version kata-runtime@kata-runtime-policy@$version" &&
    $(controller_served default) == "" && $(controller_served kata-runtime-policy) == "kata-runtime kata-runtime-dry-run" &&
    $bindings == "kata-runtime-policy-reader=$KW_NAMESPACE:kata-runtime-policy" &&
    $webhooks == "clusterwide-kata-runtime-dry-run@$at clusterwide-kata-runtime@$at" ]]; then
    pass "upgrade: one policy per role, on kata-runtime-policy, with this release's module ($after); nothing left on the default PolicyServer; only the new account bound; the webhooks call the new PolicyServer"
  else
    fail "upgrade: policies $after; default serves '$(controller_served default)', kata-runtime-policy '$(controller_served kata-runtime-policy)'; bindings $bindings; webhooks $webhooks (kata-runtime-policy at $at)"
  fi
  # While the new policy and the temporary one both ran, the pods carry the
  # decision of the new one: the temporary one, called after it (webhooks
  # go in the order of their configurations' names), found the class set
  # and wrote no annotation over its decision (step 3).
  both=""
  for probe in "${!PROBE_SERVED[@]}"; do
    [[ ${PROBE_SERVED[$probe]} == "kata-runtime kata-runtime-upgrade" ]] || continue
    note=$(k -n $UPGRADE_NS get pod "$probe" -o json 2>/dev/null | jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"' || echo "no pod")
    both+="$probe: $note; "
    [[ $note == "mutated: "* ]] || bad_note=1
  done
  if [[ -n $both && -z ${bad_note:-} ]]; then
    pass "upgrade: while kata-runtime and kata-runtime-upgrade both ran, each pod carries kata-runtime's decision: $both"
  else
    fail "upgrade: the decisions of the pods created while both ran: ${both:-no such pod}"
  fi

  upgrade_follow "Roll back to 0.1.0" rollback
  after=$(upgrade_policies)
  bindings=$(upgrade_bindings)
  webhooks=$(upgrade_webhooks)
  at=${PS_AT[default]:-none}
  if [[ $after == "kata-runtime@default@v0.1.0" && $(controller_served default) == "kata-runtime" &&
    $(controller_served kata-runtime-policy) == "" && $webhooks == "clusterwide-kata-runtime@$at" &&
    $bindings == *"kata-runtime-policy-reader-0-1=$KW_NAMESPACE:policy-server"* ]]; then
    pass "roll back: kata-runtime on the default PolicyServer with 0.1.0's module, as saved before the upgrade, its webhook calling it, its account bound ($bindings); nothing on kata-runtime-policy"
  else
    fail "roll back: policies $after; default serves '$(controller_served default)', kata-runtime-policy '$(controller_served kata-runtime-policy)'; bindings $bindings; webhooks $webhooks (default at $at)"
  fi
fi
