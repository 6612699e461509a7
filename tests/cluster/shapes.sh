#!/usr/bin/env bash
# The node shapes on the real path: kata-node-shapes, run as
# examples/node-shapes.yaml runs it (its account and RBAC, its arguments),
# against a real kube-apiserver 1.36, and a real policy-server 1.36 serving
# two copies of examples/cluster-admission-policy.yaml: one as shipped
# (the node list), one with nodeShapes pointing at the controller's
# ConfigMap. Every pod is posted to both as an AdmissionReview; their
# answers (allowed, patch, warnings) must be the same:
#   - with the controller running (a fresh view: two pools, one shape each);
#   - with a view that lies (written by hand, fresh): the shapes copy
#     follows it, which proves it reads the view and not the nodes;
#   - with that view stale (validUntil past), then missing (deleted):
#     both answer as the node list;
#   - with the controller started again: the view is back and agrees.
#
#   tests/cluster/shapes.sh          (make e2e-shapes; POLICY=policy.wasm,
#                                     SHAPES_BIN=target/debug/kata-node-shapes)
#
# Binaries as tests/cluster/run.sh finds them; when one is missing the suite
# is skipped with one line saying which.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source tests/cluster/lib.sh

need_bins "node shapes suite" etcd:ETCD kube-apiserver:KUBE_APISERVER kubectl:KUBECTL \
  kube-scheduler:KUBE_SCHEDULER policy-server:POLICY_SERVER kwctl:KWCTL
for tool in openssl curl jq; do
  command -v "$tool" >/dev/null || die "$tool is needed (scripts/setup.sh installs it)"
done
WASM=$ROOT/${POLICY:-policy.wasm}
[[ -f $WASM ]] || die "$WASM not found: make policy.wasm"
SHAPES_BIN=$ROOT/${SHAPES_BIN:-target/debug/kata-node-shapes}
[[ -x $SHAPES_BIN ]] || die "$SHAPES_BIN not found: cargo build -p kata-node-shapes"

D=$(mktemp -d /tmp/kata-policy-shapes.XXXXXX)
POLICY_FILE=$D/policy.wasm
"$KWCTL" annotate -m metadata.yml -u README.md -o "$POLICY_FILE" "$WASM" >/dev/null
cleanup() {
  stop_all
  if [[ ${KEEP_CLUSTER_DIR:-0} == 1 ]]; then log "logs kept in $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
T0=$(date +%s)
start_control_plane
FAILED=0 PASSED=0
fail() { echo "not ok - $*"; FAILED=$((FAILED + 1)); }
pass() { echo "ok - $*"; PASSED=$((PASSED + 1)); }

# ------------------------------------------------------------------ cluster
PS_OBJECTS=$(yaml_objects examples/policy-server.yaml)
PS_SA=$(jq -r 'select(.kind == "PolicyServer") | .spec.serviceAccountName' <<<"$PS_OBJECTS")
k create namespace "$KW_NAMESPACE" >/dev/null
jq 'select(.kind == "ServiceAccount")' <<<"$PS_OBJECTS" | k apply -f - >/dev/null
k apply -f examples/rbac.yaml -f examples/node-shapes.yaml >/dev/null
k apply -f examples/runtimeclass-kata-qemu-runtime-rs.yaml >/dev/null
HANDLER=$(k get runtimeclass kata-qemu-runtime-rs -o jsonpath='{.handler}')
KATA='"katacontainers.io/kata-runtime": "true", "kata-deploy.katacontainers.io/default": "true"'
ALLOC='{"cpu": "8", "memory": "32Gi", "pods": "110"}'
RH="[{\"name\": \"runc\"}, {\"name\": \"$HANDLER\"}]"
# Two pools: general (zone a, four nodes) and db (zone b, three nodes,
# tainted), and a control-plane node without Kata.
for i in 1 2 3 4; do node "general-$i" "{$KATA, \"topology.kubernetes.io/zone\": \"a\"}" "$ALLOC" '[]' "$RH"; done
DB_TAINT='[{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]'
for i in 1 2 3; do node "db-$i" "{$KATA, \"topology.kubernetes.io/zone\": \"b\"}" "$ALLOC" "$DB_TAINT" "$RH"; done
node control-plane '{"node-role.kubernetes.io/control-plane": ""}' "$ALLOC" \
  '[{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]'

# ------------------------------------------------------------- controller
# As examples/node-shapes.yaml runs it: its account, its arguments, and a
# short relist and validity so that the suite sees them pass.
SHAPES_OBJECTS=$(yaml_objects examples/node-shapes.yaml)
SHAPES_SA=$(jq -r 'select(.kind == "Deployment") | .spec.template.spec.serviceAccountName' <<<"$SHAPES_OBJECTS")
mapfile -t SHAPES_ARGS < <(jq -r 'select(.kind == "Deployment") | .spec.template.spec.containers[0].args[]' <<<"$SHAPES_OBJECTS")
MAP_NS=${SHAPES_ARGS[1]} MAP_NAME=${SHAPES_ARGS[3]}
kubeconfig "$D/shapes.kubeconfig" "$SHAPES_SA" "{token: $(k -n "$KW_NAMESPACE" create token "$SHAPES_SA" --duration 2h)}"
start_shapes() {
  start_bg kata-node-shapes env KUBECONFIG="$D/shapes.kubeconfig" "$SHAPES_BIN" "${SHAPES_ARGS[@]}" \
    --relist-seconds 2 --valid-seconds 8
}
# view: the view in the ConfigMap ("" when there is none).
view() { k -n "$MAP_NS" get configmap "$MAP_NAME" -o json 2>/dev/null | jq -r '.data["shapes.json"] // ""'; }
until_view() { # JQ: until the view satisfies JQ (20 s)
  local end=$(($(date +%s) + 20))
  until [[ $(view | jq -r "$1" 2>/dev/null) == true ]]; do
    (($(date +%s) < end)) || return 1
    sleep 0.3
  done
}
start_shapes
if until_view '.nodes == 7 and ([.shapes[] | .count] | sort) == [3, 4]'; then
  pass "kata-node-shapes, as examples/node-shapes.yaml's account: 7 kata nodes in 2 shapes: $(view | jq -c '[.shapes[] | {count, names}]')"
else
  fail "kata-node-shapes wrote no view of the 7 kata nodes in 2 shapes: $(view | cut -c1-300); $(tail -3 "$D/kata-node-shapes.log")"
fi
LISTED_AT=$(view | jq .listedAt)
sleep 3
[[ $(view | jq .listedAt) -gt $LISTED_AT ]] && pass "the view is renewed by each relist (listedAt $LISTED_AT, then $(view | jq .listedAt))" ||
  fail "the view was not renewed after 3 s: listedAt $LISTED_AT, then $(view | jq .listedAt)"

# ---------------------------------------------------------- policy-server
kubeconfig "$D/policy-server.kubeconfig" "$PS_SA" "{token: $(k -n "$KW_NAMESPACE" create token "$PS_SA" --duration 2h)}"
use_policy examples/cluster-admission-policy.yaml '{}'
LISTED_ID=$POLICY_ID
yaml_objects examples/cluster-admission-policy.yaml | jq 'select(.kind == "ClusterAdmissionPolicy") | .metadata.name += "-shapes"' >"$D/shapes-policy.yaml"
use_policy "$D/shapes-policy.yaml" "{\"nodeShapes\": \"$MAP_NS/$MAP_NAME\"}"
SHAPED_ID=$POLICY_ID
start_policy_server
log "cluster ready after $(($(date +%s) - T0)) s"

# answer POLICY_ID POD_FILE: policy-server's answer, {allowed, patch, warnings}.
answer() {
  jq -n --argjson pod "$(cat "$2")" \
    '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {uid: "u", kind: {group: "", version: "v1", kind: "Pod"},
      resource: {group: "", version: "v1", resource: "pods"}, name: $pod.metadata.name, namespace: "tenant",
      operation: "CREATE", userInfo: {username: "u"}, object: ($pod | .metadata.namespace = "tenant"), dryRun: false}}' |
    curl -s --cacert "$D/pki/ca.crt" -H 'Content-Type: application/json' --data-binary @- \
      "https://127.0.0.1:$PS_PORT/validate/$1" |
    jq -c '{allowed: .response.allowed, patch: (.response.patch // "" | if . == "" then null else @base64d | fromjson end), warnings: .response.warnings}'
}
mkdir -p "$D/pods"
pod() { # NAME SPEC_JSON: a pod file
  jq -n --arg n "$1" --argjson s "$2" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n},
    spec: ({containers: [{name: "c", image: "registry.example.com/app:v1", resources: {requests: {cpu: "100m"}}}]} + $s)}' >"$D/pods/$1.json"
}
pod plain '{}'
pod zone-b '{"nodeSelector": {"topology.kubernetes.io/zone": "b"}}'
pod zone-b-db '{"nodeSelector": {"topology.kubernetes.io/zone": "b"}, "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}]}'
pod too-big '{"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "9"}}}]}'
pod hostname '{"nodeSelector": {"kubernetes.io/hostname": "db-2"}}'
pod pinned '{"nodeName": "control-plane"}'
PODS=(plain zone-b zone-b-db too-big hostname pinned)

# agree WHAT: every pod gets the same answer from both policies.
agree() {
  local p a b differ=""
  for p in "${PODS[@]}"; do
    a=$(answer "$LISTED_ID" "$D/pods/$p.json")
    b=$(answer "$SHAPED_ID" "$D/pods/$p.json")
    [[ $a == "$b" && $a == *'"allowed":true'* ]] || differ+=" $p: list $a, shapes $b;"
  done
  [[ -z $differ ]] && pass "$1: the ${#PODS[@]} pods get the node list's answers (zone-b: $(answer "$SHAPED_ID" "$D/pods/zone-b.json" | jq -c .warnings))" ||
    fail "$1:$differ"
}
agree "a fresh view"

# A view that lies: the db pool without its taint, fresh. Only a policy
# that reads the view gives zone-b Kata.
stop_one kata-node-shapes
lie=$(view | jq -c --argjson now "$(date +%s)" '.listedAt = $now | .validUntil = $now + 600
  | .shapes |= map(if .names[0] == "db-1" then .node.spec.taints = [] else . end)')
k -n "$MAP_NS" create configmap "$MAP_NAME" --from-literal=shapes.json="$lie" --dry-run=client -o json | k apply --server-side --force-conflicts -f - >/dev/null
listed=$(answer "$LISTED_ID" "$D/pods/zone-b.json" | jq -c .patch)
shaped=$(answer "$SHAPED_ID" "$D/pods/zone-b.json" | jq -c .patch)
if [[ $listed != *'"/spec/runtimeClassName"'* && $shaped == *'"/spec/runtimeClassName","value":"kata-qemu-runtime-rs"'* ]]; then
  pass "a fresh view decides: with db's taint gone from the view only, zone-b gets Kata from the view ($shaped) and not from the nodes"
else
  fail "a lying fresh view: the list's patch $listed, the view's $shaped"
fi
# hostname reads a per-node label: the node list decides even so.
[[ $(answer "$LISTED_ID" "$D/pods/hostname.json") == "$(answer "$SHAPED_ID" "$D/pods/hostname.json")" ]] &&
  pass "a pod that selects kubernetes.io/hostname is judged on the node list, whatever the view says" ||
  fail "hostname: the view decided a per-node label"

stale=$(jq -c --argjson now "$(date +%s)" '.validUntil = $now - 1' <<<"$lie")
k -n "$MAP_NS" create configmap "$MAP_NAME" --from-literal=shapes.json="$stale" --dry-run=client -o json | k apply --server-side --force-conflicts -f - >/dev/null
agree "the lying view, stale"
k -n "$MAP_NS" delete configmap "$MAP_NAME" >/dev/null
agree "no view"

start_shapes
if until_view '.nodes == 7'; then agree "the controller started again"; else fail "no view after the controller started again"; fi

echo "# $PASSED passed, $FAILED failed, $(($(date +%s) - T0)) s"
((FAILED == 0))
