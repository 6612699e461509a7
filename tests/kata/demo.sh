# Every `make demo` scenario that the policy mutates, started on the real
# Kata node of tests/kata/node.sh (sourced by it, last). The demo decides
# each scenario against a recorded cluster (kwrun and the scenario's
# session, as scripts/demo.sh does); each pod it gives Kata is then made
# runnable on this node without changing what Kata sees of it, and started
# here under Kata:
#   - kept: containers, init containers and sidecars (restartPolicy Always),
#     security contexts, ports, volume mounts, the pod's own fields;
#   - changed: every image is the probe image, each container sleeps (an
#     init container exits), resources are small, volumes are emptyDirs,
#     env comes without references to objects this cluster lacks, probes
#     and lifecycle hooks are gone;
#   - dropped: what places the pod in the recorded cluster (nodeName,
#     nodeSelector, affinity, topology spread, tolerations, scheduling
#     gates, priority class) and its ServiceAccount.
# The check: Running, every container ready, and `kubectl exec` into its
# first container answers with the guest kernel. A pod Kata does not run is
# tried under runc: if runc runs it, the test fails (the policy gave Kata a
# pod Kata cannot run); if runc does not, it is not expressible here.
# Scenarios mutated only because their settings turned a compatibility
# rule off are left out: the findings above show what Kata does with them.

KWRUN_BIN=${KWRUN:-$ROOT/target/debug/kwrun}
if [[ ! -x $KWRUN_BIN ]]; then
  echo "# SKIP the demo's scenarios on real Kata: $KWRUN_BIN not found (cargo build -p kwrun)"
  return 0
fi
echo "# the demo's mutated scenarios, started on real Kata"
# The demo's own scenarios and settings (scripts/demo.sh, BASE up to the
# end of the scenarios array).
eval "$(sed -n '/^BASE=/,/^)$/p' scripts/demo.sh)"

adapt='def sleeper: ["/bin/sh", "-c", "exec sleep 3600"];
def container(cmd):
  .image = "localhost/kata-probe:1" | .imagePullPolicy = "Never"
  | .command = (if .restartPolicy == "Always" then sleeper else cmd end)
  | del(.args, .livenessProbe, .readinessProbe, .startupProbe, .lifecycle, .resizePolicy, .volumeDevices, .envFrom)
  | .env = [(.env // [])[] | select(.valueFrom == null or .valueFrom.fieldRef != null)]
  | .resources = {requests: {cpu: "50m", memory: "32Mi"}}
  | .ports = [(.ports // [])[] | del(.hostPort, .hostIP)];
.object | {apiVersion: "v1", kind: "Pod",
  metadata: {name: $name, labels: (.metadata.labels // {})},
  spec: (.spec
    | del(.nodeName, .nodeSelector, .affinity, .topologySpreadConstraints, .tolerations, .schedulingGates,
          .priorityClassName, .priority, .preemptionPolicy, .serviceAccountName, .serviceAccount,
          .overhead, .resourceClaims, .runtimeClassName)
    | .automountServiceAccountToken = false
    | .terminationGracePeriodSeconds = 1
    | .volumes = [(.volumes // [])[] | {name, emptyDir: (.emptyDir // {})}]
    | .initContainers = [(.initContainers // [])[] | container(["/bin/sh", "-c", "true"])]
    | .containers = [.containers[] | container(sleeper)])}'

# pod_reason: why the pod last settled (POD) failed as a whole (the
# kubelet's admission refuses a pod with a reason), ", REASON: MESSAGE".
pod_reason() { jq -r '.status | select(.reason) | ", \(.reason): \(.message // "")"' <<<"$POD" | cut -c1-300; }

declare -A DEMO_SEEN=()
n=0
for scenario in "${scenarios[@]}"; do
  IFS='|' read -r request session settings description <<<"$scenario"
  [[ $settings != *skipPodsUsing* ]] || continue
  [[ -z ${DEMO_SEEN[$request]:-} ]] || continue
  response=$("$KWRUN_BIN" run --allow-context-aware --request-path "test_data/$request" \
    --settings-json "$(jq -c --argjson s "$settings" '. + $s' <<<"$BASE")" \
    --replay-host-capabilities-interactions "test_data/sessions/$session" "$WASM" 2>/dev/null || true)
  jq -e '.patch | @base64d | fromjson | any(.path == "/spec/runtimeClassName")' <<<"$response" >/dev/null 2>&1 || continue
  DEMO_SEEN[$request]=1
  n=$((n + 1))
  name=demo-$n
  extended=$(jq -r '[.object.spec | (.containers + (.initContainers // []))[].resources
    | ((.requests // {}) + (.limits // {})) | keys[] | select(contains("/"))] | unique | join(",")' "test_data/$request")
  if [[ -n $extended ]]; then
    echo "# SKIP $request on real Kata: not expressible here: it asks for $extended, which this node has not"
    continue
  fi
  jq --arg name "$name" "$adapt" "test_data/$request" | jq --arg c "$CLASS" '.spec.runtimeClassName = $c' >"$D/$name.json"
  k -n $NS create -f "$D/$name.json" >/dev/null
  until_settled "$name"
  ready=$(jq -r '[.status.containerStatuses[]?.ready] | (length > 0 and all)' <<<"$POD")
  got=$(k -n $NS exec "$name" -c "$(jq -r '.spec.containers[0].name' "$D/$name.json")" -- uname -r 2>&1 || true)
  if [[ $PHASE == Running && $ready == true && $got == "$GUEST_KERNEL" ]]; then
    pass "demo's $request ($description): started on real Kata in ${SECS} s, $(jq '.spec.containers | length' "$D/$name.json") container(s) ready, and it answers from the guest ($got)"
  else
    kata_said="phase $PHASE$(pod_reason), states $(one_line "$STATES" | cut -c1-300), exec '$(one_line "$got" | cut -c1-100)'"
    jq 'del(.spec.runtimeClassName)' "$D/$name.json" | k -n "$KW_NAMESPACE" create -f - >/dev/null
    NS_SAVED=$NS NS=$KW_NAMESPACE
    until_settled "$name"
    NS=$NS_SAVED
    if [[ $PHASE == Running ]]; then
      fail "demo's $request ($description): not run by Kata ($kata_said), though runc runs it"
    else
      echo "# SKIP $request on real Kata: not expressible here: runc does not run it either ($kata_said; runc: phase $PHASE$(pod_reason), $(one_line "$STATES" | cut -c1-200))"
    fi
    k -n "$KW_NAMESPACE" delete pod "$name" --wait=false >/dev/null 2>&1 || true
  fi
  k -n $NS delete pod "$name" --wait=false >/dev/null 2>&1 || true
done
