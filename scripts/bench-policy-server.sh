#!/usr/bin/env bash
# What one Pod CREATE admission costs under the REAL policy-server at N kata
# nodes, with runtimeHandlerCheck: off (node query masks spec.taints,
# spec.unschedulable, status.allocatable) and the default auto (the same
# plus, for the candidates read by name, status.runtimeHandlers.name), a
# class whose handler no node reports (auto reads three candidates by name,
# then the list with the handlers), and the skip path (a pod that already
# names a runtimeClassName) for reference.
#
#   scripts/bench-policy-server.sh [NODES] [WARMUP] [RUNS]   (1000 50 200)
#
# Binaries as tests/cluster/run.sh finds them: ETCD, KUBE_APISERVER, KUBECTL,
# POLICY_SERVER, KWCTL, else $KUBEBUILDER_ASSETS/NAME, else PATH. When one is
# missing the script says which and exits 0. POLICY (default policy.wasm) is
# annotated into the temp dir as `make annotated-policy.wasm` does.
#
# It starts etcd and kube-apiserver on 127.0.0.1 (no scheduler, no kubelets),
# creates NODES Ready nodes labelled katacontainers.io/kata-runtime=true with
# a dozen labels, allocatable/capacity, kubelet-like conditions, nodeInfo,
# images and the 12 status.runtimeHandlers containerd 2.x reports with
# kata-deploy 4.x, the RuntimeClass kata (handler kata-qemu), then one
# policy-server (admin kubeconfig, HTTPS) serving two policies that differ
# only in runtimeHandlerCheck. Each case: WARMUP untimed then RUNS timed
# sequential `curl` POSTs of an AdmissionReview to /validate/<policy-id>;
# the answer of every request is checked. Printed: median, p10, p90 of
# curl's time_total, and of the server-side part (time_starttransfer -
# time_pretransfer), in ms. A pod that fits no node (every policy then
# reads the whole node list) splits the guest's early stop from the rest.
# Every process started is stopped by PID and the temp dir removed on exit
# (KEEP=1 keeps the dir).
#
# PODS=N (default 0) also creates N pods placed on the kata nodes (spec.nodeName,
# as the scheduler leaves them), in Deployments' shapes: 20 apps, each
# pod with its app's labels, a pod-template-hash, kubectl and Prometheus
# annotations and a ReplicaSet owner. Then two more cases time a pod with
# required inter-pod affinity (checkPodAffinity): next to app-7's pods
# (mutated), and away from app-7's pods on every kata node's zone (none
# left: unchanged), each reading the pod list.
#
# SHAPE=realistic creates the nodes of kwbench's realistic shape instead
# (runner/src/clustergen/realistic.rs: NFD-labelled EKS nodes in pools, ~93
# labels, some pools tainted, ~1 % cordoned and ~1 % NotReady), printed by
# `kwbench nodes --shape realistic` (KWBENCH, default target/debug/kwbench:
# `cargo build -p kwrun --bin kwbench`), so that both benchmarks measure one
# definition of a node. The default, SHAPE=lean, is the jq-made node below.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NODES=${1:-1000}
WARMUP=${2:-50}
RUNS=${3:-200}
[[ $NODES =~ ^[0-9]+$ && $NODES -ge 1 ]] || { echo "usage: $0 [NODES] [WARMUP] [RUNS]" >&2; exit 2; }
SHAPE=${SHAPE:-lean}
PODS=${PODS:-0}
[[ $PODS =~ ^[0-9]+$ ]] || { echo "PODS is a number, got $PODS" >&2; exit 2; }
[[ $SHAPE == lean || $SHAPE == realistic ]] || { echo "SHAPE is lean or realistic, got $SHAPE" >&2; exit 2; }
source tests/cluster/lib.sh

need_bins "policy-server benchmark" etcd:ETCD kube-apiserver:KUBE_APISERVER kubectl:KUBECTL \
  policy-server:POLICY_SERVER kwctl:KWCTL
for tool in openssl curl jq xargs base64; do
  command -v "$tool" >/dev/null || { echo "SKIP policy-server benchmark: $tool not found"; exit 0; }
done
WASM=$ROOT/${POLICY:-policy.wasm}
[[ -f $WASM ]] || die "$WASM not found: make policy.wasm"
KWBENCH=${KWBENCH:-${CARGO_TARGET_DIR:-$ROOT/target}/debug/kwbench}
[[ $SHAPE == lean || -x $KWBENCH ]] || die "$KWBENCH not found: cargo build -p kwrun --bin kwbench (or set KWBENCH)"

D=$(mktemp -d /tmp/kata-policy-bench.XXXXXX)
cleanup() {
  stop_all
  if [[ ${KEEP:-0} == 1 ]]; then log "kept $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM
POLICY_FILE=$D/policy.wasm
"$KWCTL" annotate -m metadata.yml -u README.md -o "$POLICY_FILE" "$WASM" >/dev/null

# ---------------------------------------------------------- control plane
free_port ETCD_PORT 22379
free_port ETCD_PEER_PORT 22380
free_port APISERVER_PORT 26443
free_port PS_PORT 23000
free_port PS_READY_PORT 28081
gen_certs
kubeconfig "$D/admin.kubeconfig" kubernetes-admin "$(client_cert admin)"
cp "$D/admin.kubeconfig" "$D/policy-server.kubeconfig" # RBAC: admin, simplest
: >"$D/pids"
start_etcd "unsafe-no-fsync: true" "quota-backend-bytes: 8589934592"
start_bg kube-apiserver "$KUBE_APISERVER" \
  --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
  --tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
  --client-ca-file "$D/pki/ca.crt" \
  --service-account-key-file "$D/pki/sa.pub" --service-account-signing-key-file "$D/pki/sa.key" \
  --service-account-issuer https://kubernetes.default.svc.cluster.local \
  --authorization-mode RBAC --service-cluster-ip-range 10.0.0.0/24 \
  --endpoint-reconciler-type none --profiling=false
wait_http "https://127.0.0.1:$APISERVER_PORT/readyz" 120 --cacert "$D/pki/ca.crt" ||
  die "kube-apiserver not ready ($D/kube-apiserver.log)"
log "control plane up: apiserver 127.0.0.1:$APISERVER_PORT"

# ---------------------------------------------------------------- cluster
k apply -f - >/dev/null <<'EOF'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: kata
handler: kata-qemu
overhead:
  podFixed: {cpu: 250m, memory: 160Mi}
scheduling:
  nodeSelector:
    katacontainers.io/kata-runtime: "true"
EOF
# The k3s story: a class whose handler no node's runtime reports. Under
# auto the policy reads the first candidates by name, finds none can start
# the pod, and falls back to the list with the handlers' names.
k apply -f - >/dev/null <<'EOF'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata:
  name: kata-nowhere
handler: kata-nowhere
EOF
k create namespace tenant >/dev/null
# The ServiceAccount controller's part (no controller-manager here): the
# API server alone waits for the default account of a pod that names none.
k -n tenant create serviceaccount default >/dev/null
# The policy asks the API server (can_i) whether policyServerServiceAccount
# may list nodes before it lists them: the example RBAC grants it to the
# account of examples/policy-server.yaml, which the settings below name.
k create namespace kubewarden >/dev/null
k apply -f examples/rbac.yaml >/dev/null

# The handlers containerd 2.x reports with kata-deploy 4.x ("" is the default).
HANDLERS=$(jq -cn '["", "runc", "kata-qemu", "kata-qemu-runtime-rs", "kata-clh", "kata-fc",
  "kata-dragonball", "kata-qemu-snp", "kata-qemu-tdx", "kata-qemu-nvidia-gpu",
  "kata-qemu-nvidia-gpu-snp", "kata-qemu-coco-dev"]
  | map({name: ., features: {userNamespaces: true, recursiveReadOnlyMounts: true}})')

# gen_nodes FIRST LAST: a v1 List of nodes kata-FIRST..kata-LAST, status
# included (the API server keeps a node's status on create, as the kubelet
# registers it).
gen_nodes() {
  jq -cn --argjson first "$1" --argjson last "$2" --argjson rh "$HANDLERS" '
    def img(n; s): {names: ["registry.example.com/" + n + "@sha256:" + ("0" * 64), "registry.example.com/" + n + ":v1.2.3"], sizeBytes: s};
    {apiVersion: "v1", kind: "List", items: [range($first; $last + 1) as $i |
      ("kata-" + ($i | tostring)) as $n |
      (["a", "b", "c"][$i % 3]) as $z |
      {apiVersion: "v1", kind: "Node",
       metadata: {name: $n, labels: {
         "kubernetes.io/hostname": $n, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
         "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
         "beta.kubernetes.io/instance-type": "m6i.4xlarge", "node.kubernetes.io/instance-type": "m6i.4xlarge",
         "topology.kubernetes.io/region": "eu-west-1", "topology.kubernetes.io/zone": ("eu-west-1" + $z),
         "failure-domain.beta.kubernetes.io/region": "eu-west-1", "failure-domain.beta.kubernetes.io/zone": ("eu-west-1" + $z),
         "node-role.kubernetes.io/worker": "", "katacontainers.io/kata-runtime": "true"},
         annotations: {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
       spec: {podCIDR: ("10.\($i / 250 | floor).\($i % 250).0/24"), providerID: ("aws:///eu-west-1" + $z + "/i-" + ($i | tostring))},
       status: {
         capacity: {cpu: "16", memory: "65023356Ki", pods: "110", "ephemeral-storage": "203070420Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
         allocatable: {cpu: "15890m", memory: "63871356Ki", pods: "110", "ephemeral-storage": "187149698763", "hugepages-1Gi": "0", "hugepages-2Mi": "0"},
         conditions: ([["MemoryPressure", "False", "KubeletHasSufficientMemory"], ["DiskPressure", "False", "KubeletHasNoDiskPressure"],
                       ["PIDPressure", "False", "KubeletHasSufficientPID"], ["Ready", "True", "KubeletReady"]]
                      | map({type: .[0], status: .[1], reason: .[2], message: "fake",
                             lastHeartbeatTime: "2026-12-01T00:00:00Z", lastTransitionTime: "2026-12-01T00:00:00Z"})),
         addresses: [{type: "InternalIP", address: ("10.1.\($i / 250 | floor).\($i % 250)")}, {type: "Hostname", address: $n}],
         daemonEndpoints: {kubeletEndpoint: {Port: 10250}},
         nodeInfo: {machineID: "m", systemUUID: "u", bootID: "b", kernelVersion: "6.8.0-1019-aws",
           osImage: "Ubuntu 24.04.1 LTS", containerRuntimeVersion: "containerd://2.1.4",
           kubeletVersion: "v1.36.2", kubeProxyVersion: "", operatingSystem: "linux", architecture: "amd64"},
         images: [img("kata-deploy"; 421000000), img("pause"; 320000), img("kube-proxy"; 30000000),
                  img("coredns"; 16000000), img("node-exporter"; 11000000), img("cilium"; 190000000)],
         runtimeHandlers: $rh}}]}'
}

T0=$(date +%s)
BATCH=250
seq 1 $BATCH "$NODES" | while read -r first; do
  last=$((first + BATCH - 1))
  ((last <= NODES)) || last=$NODES
  if [[ $SHAPE == lean ]]; then
    gen_nodes "$first" "$last" >"$D/nodes-$first.json"
  else # kwbench's nodes are numbered from 0
    "$KWBENCH" nodes --shape realistic --from $((first - 1)) --count $((last - first + 1)) >"$D/nodes-$first.json"
  fi
done
ls "$D"/nodes-*.json | xargs -P 4 -I{} "$KUBECTL" --kubeconfig "$D/admin.kubeconfig" \
  --cache-dir "$D/kubectl-cache" create -f {} -o name >/dev/null
# The not-ready taint TaintNodesByCondition adds on create: off, as a
# kubelet's Ready report makes the node lifecycle controller do (but on the
# realistic shape's NotReady nodes, which were created with it).
if [[ $SHAPE == lean ]]; then
  seq 1 "$NODES" | sed 's/^/kata-/'
else
  jq -r '.items[] | select(all(.spec.taints[]?; .key != "node.kubernetes.io/not-ready")) | .metadata.name' "$D"/nodes-*.json
fi | xargs -P 8 -n 100 bash -c \
  '"$0" --kubeconfig "$1" --cache-dir "$2" taint node "${@:3}" node.kubernetes.io/not-ready:NoSchedule-' \
  "$KUBECTL" "$D/admin.kubeconfig" "$D/kubectl-cache" >/dev/null
if [[ $SHAPE == lean ]]; then
  got=$(k get nodes -l katacontainers.io/kata-runtime=true -o json |
    jq --argjson rh "$HANDLERS" '[.items[] | select((.spec.taints // []) == [] and .status.runtimeHandlers == $rh)] | length')
  [[ $got == "$NODES" ]] || die "$got of $NODES nodes untainted with their 12 runtimeHandlers"
  first_node=kata-1
else
  # Each stored node has the taints, unschedulable and runtimeHandlers it
  # was generated with.
  jq -s 'def key: {taints: ([.spec.taints[]? | [.key, .value, .effect]] | sort),
      unschedulable: (.spec.unschedulable // false), rh: .status.runtimeHandlers};
    [.[].items[] | {key: .metadata.name, value: key}] | from_entries' "$D"/nodes-*.json >"$D/expected.json"
  got=$(k get nodes -l katacontainers.io/kata-runtime=true -o json |
    jq --slurpfile want "$D/expected.json" 'def key: {taints: ([.spec.taints[]? | [.key, .value, .effect]] | sort),
      unschedulable: (.spec.unschedulable // false), rh: .status.runtimeHandlers};
      [.items[] | select(key == $want[0][.metadata.name])] | length')
  [[ $got == "$NODES" ]] || die "$got of $NODES nodes with the taints and runtimeHandlers they were generated with"
  first_node=$(jq -r '.items[0].metadata.name' "$D/nodes-1.json")
fi
one=$(k get node "$first_node" -o json --show-managed-fields)
log "$NODES $SHAPE nodes in $(($(date +%s) - T0)) s; one node: $(wc -c <<<"$one") bytes JSON" \
  "(managedFields $(jq -c .metadata.managedFields <<<"$one" | wc -c))"
# As stored: what `kubectl get node -o json` prints without managedFields
# (indented), and the same compact (what the policy's payloads are made of).
k get nodes -o json | jq -c '.items[] | del(.metadata.managedFields)' >"$D/stored.jsonl"
log "bytes per node as stored, managedFields left out: $(k get node "$first_node" -o json | wc -c) as kubectl prints" \
  "$first_node, $(awk '{s += length($0) + 1} END {printf "%d", s / NR}' "$D/stored.jsonl") compact (mean of $(wc -l <"$D/stored.jsonl"))"

# ------------------------------------------------------------------ pods
# gen_pods FIRST LAST: a v1 List of pods pod-FIRST..pod-LAST, each bound to
# a kata node ($D/names.json, round-robin), 20 apps round-robin.
gen_pods() {
  jq -cn --argjson first "$1" --argjson last "$2" --slurpfile names "$D/names.json" '
    {apiVersion: "v1", kind: "List", items: [range($first; $last + 1) as $i |
      ("app-" + ($i % 20 | tostring)) as $app |
      {apiVersion: "v1", kind: "Pod",
       metadata: {name: ("pod-" + ($i | tostring)), namespace: "tenant",
         labels: {app: $app, "app.kubernetes.io/name": $app, "app.kubernetes.io/part-of": "shop",
                  "app.kubernetes.io/version": "1.4.2", "pod-template-hash": "7c9d8f6b5d"},
         annotations: {"kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z",
                       "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
         ownerReferences: [{apiVersion: "apps/v1", kind: "ReplicaSet", name: ($app + "-7c9d8f6b5d"),
                            uid: "0c7d6e2a-5b1f-4c0e-9a57-1d0f3e2b8c41", controller: true, blockOwnerDeletion: true}]},
       spec: {nodeName: $names[0][$i % ($names[0] | length)],
              containers: [{name: "app", image: ("registry.example.com/" + $app + ":1.4.2"),
                resources: {requests: {cpu: "100m", memory: "128Mi"}}}]}}]}'
}
if ((PODS > 0)); then
  T0=$(date +%s)
  jq -s '[.[] | select(.metadata.labels["katacontainers.io/kata-runtime"] == "true") | .metadata.name]' \
    "$D/stored.jsonl" >"$D/names.json"
  seq 1 500 "$PODS" | while read -r first; do
    last=$((first + 499))
    ((last <= PODS)) || last=$PODS
    gen_pods "$first" "$last" >"$D/pods-$first.json"
  done
  ls "$D"/pods-*.json | xargs -P 4 -I{} "$KUBECTL" --kubeconfig "$D/admin.kubeconfig" \
    --cache-dir "$D/kubectl-cache" create -f {} -o name >/dev/null
  rm -f "$D"/pods-*.json
  got=$(k get --raw "/api/v1/namespaces/tenant/pods?limit=1" | jq -r '.metadata.remainingItemCount + 1')
  [[ $got == "$PODS" ]] || die "$got of $PODS pods created"
  log "$PODS pods in $(($(date +%s) - T0)) s; one: $(k -n tenant get pod pod-1 -o json | jq -c 'del(.metadata.managedFields)' | wc -c) bytes compact"
fi

# ------------------------------------------------------ kata-node-shapes
# The node shapes (nodeShapes) for the kata-shapes policy, written by the
# controller as examples/node-shapes.yaml runs it (the admin's account here).
SHAPES_BIN=$ROOT/${SHAPES_BIN:-target/debug/kata-node-shapes}
[[ -x $SHAPES_BIN ]] || die "$SHAPES_BIN not found: cargo build -p kata-node-shapes"
start_bg kata-node-shapes env KUBECONFIG="$D/admin.kubeconfig" "$SHAPES_BIN" \
  --namespace kubewarden --name kata-node-shapes --selector katacontainers.io/kata-runtime=true
end=$(($(date +%s) + 600))
until [[ $(k -n kubewarden get configmap kata-node-shapes -o json 2>/dev/null |
  jq -r '.data["shapes.json"] // "{}" | fromjson | .nodes') == "$NODES" ]]; do
  (($(date +%s) < end)) || die "no view of $NODES nodes ($D/kata-node-shapes.log)"
  sleep 1
done
VIEW=$(k -n kubewarden get configmap kata-node-shapes -o json | jq -r '.data["shapes.json"]')
log "node shapes: $NODES nodes in $(jq '.shapes | length' <<<"$VIEW") shapes, $(wc -c <<<"$VIEW") bytes"

# ---------------------------------------------------------- policy-server
# annotateDecision off, as kwbench runs it: the skip cases then answer with
# no patch (policy-settings.json turns it on since 0.4.0).
base=$(jq -c '. + {runtimeClassName: "kata", kataNodeSelector: "katacontainers.io/kata-runtime=true",
  policyServerServiceAccount: "system:serviceaccount:kubewarden:kata-runtime-policy", annotateDecision: false}' policy-settings.json)
ctx='[{"apiVersion":"v1","kind":"Node"},{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass"},
  {"apiVersion":"v1","kind":"PersistentVolumeClaim"},{"apiVersion":"v1","kind":"PersistentVolume"},
  {"apiVersion":"storage.k8s.io/v1","kind":"StorageClass"},
  {"apiVersion":"v1","kind":"Pod"},{"apiVersion":"v1","kind":"Namespace"}]'
jq -n --arg wasm "file://$POLICY_FILE" --argjson s "$base" --argjson ctx "$ctx" '
  def entry(name; check): {namespacedName: {namespace: "", name: name}, module: $wasm,
    policyMode: "protect", allowedToMutate: true, contextAwareResources: $ctx,
    settings: ($s + {runtimeHandlerCheck: check}), hostCapabilities: ["*"]};
  {"clusterwide-kata-off": entry("kata-off"; "off"), "clusterwide-kata-auto": entry("kata-auto"; "auto"),
   "clusterwide-kata-nowhere": (entry("kata-nowhere"; "auto") | .settings.runtimeClassName = "kata-nowhere"),
   "clusterwide-kata-shapes": (entry("kata-shapes"; "auto") | .settings.nodeShapes = "kubewarden/kata-node-shapes"
     | .contextAwareResources += [{apiVersion: "v1", kind: "ConfigMap"}])}' \
  >"$D/policies.yml"
start_bg policy-server env KUBECONFIG="$D/policy-server.kubeconfig" RUST_LOG=warn \
  "$POLICY_SERVER" --addr 127.0.0.1 --port "$PS_PORT" --readiness-probe-port "$PS_READY_PORT" \
  --cert-file "$D/pki/policy-server.crt" --key-file "$D/pki/policy-server.key" \
  --policies "$D/policies.yml" --policies-download-dir "$D/downloads" \
  --sigstore-cache-dir "$D/sigstore" --policy-timeout 30 --log-level warn --log-no-color
ps_pid=$(awk '$1 == "policy-server" {print $2}' "$D/pids")
end=$(($(date +%s) + 180))
until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PS_READY_PORT/readiness")" == 200 ]]; do
  kill -0 "$ps_pid" 2>/dev/null || die "policy-server exited: $(grep -v WARN "$D/policy-server.log" | tail -n 5)"
  (($(date +%s) < end)) || die "policy-server not ready ($D/policy-server.log)"
  sleep 0.2
done
log "policy-server $("$POLICY_SERVER" --version 2>/dev/null | head -1) ready on 127.0.0.1:$PS_PORT"

# ----------------------------------------------------------------- bench
review() { jq -c '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: (. + {namespace: "tenant"} | .object.metadata.namespace = "tenant")}' "$@"; }
review test_data/pod-plain.json >"$D/plain.json"
review test_data/pod-plain.json | jq -c '.request.object.spec.runtimeClassName = "runc"' >"$D/skip.json"
# Fits no node (asks 64 CPUs; the realistic shape's metal nodes have up to
# 191: 256): every policy reads the whole list, whatever
# runtimeHandlerCheck, and admits it unchanged (noFeasibleNode: accept).
NOFIT_CPU=64
[[ $SHAPE == lean ]] || NOFIT_CPU=256
review test_data/pod-plain.json |
  jq -c --arg cpu "$NOFIT_CPU" '.request.object.spec.containers[0].resources = {requests: {cpu: $cpu}}' >"$D/nofit.json"

# One curl process for all the requests of a case, each its own transfer
# (--next) on one kept-alive TLS connection, as the API server keeps its
# connection to a webhook: a fresh connection per request adds a TLS 1.3
# handshake and, at random, a ~40 ms stall (the server's session tickets vs
# Nagle and delayed ACKs) to requests that take 1-5 ms otherwise.
# NEW_CONNECTIONS=1 runs one curl (one connection) per request instead.
curl_config() { # policy-id body-file end [first]: requests first..end-1
  local i
  for ((i = ${4:-0}; i < $3; i++)); do
    ((i == ${4:-0})) || echo next
    if [[ $1 == @api ]]; then
      # The API server alone: a server-side dry-run create, no webhook.
      cat <<EOF
url = "https://127.0.0.1:$APISERVER_PORT/api/v1/namespaces/tenant/pods?dryRun=All"
cert = "$D/pki/admin.crt"
key = "$D/pki/admin.key"
EOF
    else
      echo "url = \"https://127.0.0.1:$PS_PORT/validate/$1\""
    fi
    cat <<EOF
cacert = "$D/pki/ca.crt"
header = "Content-Type: application/json"
data-binary = "@$2"
output = "$D/out/$i.json"
silent
show-error
write-out = "%{http_code} %{time_total} %{time_pretransfer} %{time_starttransfer} %{num_connects}\\n"
EOF
  done
}
# check KIND FILE: the answer is the expected decision.
check() {
  local want=$1 f=$2 patch
  jq -e '.response.allowed == true' "$f" >/dev/null || die "not allowed: $(head -c 500 "$f")"
  patch=$(jq -r '.response.patch // empty' "$f")
  if [[ $want == mutated ]]; then
    [[ -n $patch ]] || die "expected a patch: $(head -c 500 "$f")"
    base64 -d <<<"$patch" | jq -e 'any(.[]; .path == "/spec/runtimeClassName" and .value == "kata")' >/dev/null ||
      die "patch without runtimeClassName kata: $(base64 -d <<<"$patch")"
  else
    [[ -z $patch ]] || die "expected no patch: $(base64 -d <<<"$patch")"
  fi
}

# stats FILE: "median p10 p90" (ms) of column 1.
stats() {
  sort -g "$1" | awk '{v[NR] = $1 * 1000} END {
    n = NR
    m = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    i10 = int(0.1 * (n - 1)) + 1; i90 = int(0.9 * (n - 1) + 0.5) + 1
    printf "%.2f %.2f %.2f\n", m, v[i10], v[i90] }'
}

RESULTS=$D/results
: >"$RESULTS"
bench() { # label policy-id body expected
  local label=$1 id=$2 body=$3 want=$4 n=$((WARMUP + RUNS)) i=0 code tt tp ts nc
  rm -rf "$D/out" && mkdir "$D/out"
  curl_config "$id" "$body" "$n" >"$D/curl.cfg"
  if [[ ${NEW_CONNECTIONS:-0} == 1 ]]; then
    : >"$D/lines"
    for ((i = 0; i < n; i++)); do
      curl_config "$id" "$body" "$((i + 1))" "$i" | curl -K - >>"$D/lines"
    done
  else
    curl -K "$D/curl.cfg" >"$D/lines"
  fi
  : >"$D/t.total"
  : >"$D/t.server"
  : >"$D/t.conn"
  i=0
  while read -r code tt tp ts nc; do
    if [[ $want == api ]]; then
      [[ $code == 201 ]] || die "the API server: HTTP $code: $(head -c 500 "$D/out/$i.json")"
    else
      [[ $code == 200 ]] || die "$id: HTTP $code: $(head -c 500 "$D/out/$i.json")"
      check "$want" "$D/out/$i.json"
    fi
    if ((i >= WARMUP)); then
      echo "$tt" >>"$D/t.total"
      awk -v a="$ts" -v b="$tp" 'BEGIN {print a - b}' >>"$D/t.server"
      echo "$nc" >>"$D/t.conn"
    fi
    i=$((i + 1))
  done <"$D/lines"
  ((i == n)) || die "$id: $i answers of $n"
  read -r m p10 p90 < <(stats "$D/t.total")
  read -r sm sp10 sp90 < <(stats "$D/t.server")
  printf '%-34s %8s %8s %8s   %8s %8s %8s  %5s\n' "$label" "$m" "$p10" "$p90" "$sm" "$sp10" "$sp90" \
    "$(awk '{s += $1} END {print s}' "$D/t.conn")" | tee -a "$RESULTS"
}

# throughput LABEL POLICY-ID BODY EXPECTED: STREAMS concurrent streams of
# RUNS requests each (one kept-alive connection per stream, as the API
# server's connections to a webhook under a burst): admissions per second
# and the median of every request's time_total, in ms.
STREAMS=${STREAMS:-4}
throughput() {
  local label=$1 id=$2 body=$3 want=$4 s t0 t1 f
  rm -rf "$D/tp" && mkdir -p "$D/tp"
  for ((s = 0; s < STREAMS; s++)); do
    mkdir -p "$D/tp/$s/out"
    curl_config "$id" "$body" "$RUNS" | sed "s|$D/out/|$D/tp/$s/out/|" >"$D/tp/$s.cfg"
  done
  t0=$(date +%s%N)
  for ((s = 0; s < STREAMS; s++)); do curl -K "$D/tp/$s.cfg" >"$D/tp/$s.lines" & done
  wait
  t1=$(date +%s%N)
  for ((s = 0; s < STREAMS; s++)); do
    awk '$1 != 200 && $1 != 201 {exit 1}' "$D/tp/$s.lines" || die "$id: a request failed under load: $(grep -v '^20[01] ' "$D/tp/$s.lines" | head -1)"
    [[ $want == api ]] || for f in "$D/tp/$s/out/"*.json; do check "$want" "$f"; done
  done
  cat "$D"/tp/*.lines | awk '{print $2}' >"$D/t.total"
  read -r m p10 p90 < <(stats "$D/t.total")
  printf '%-34s %8s %8s %8s   %7.0f/s with %d streams\n' "$label" "$m" "$p10" "$p90" \
    "$(awk -v n="$((STREAMS * RUNS))" -v ns="$((t1 - t0))" 'BEGIN {print n / (ns / 1e9)}')" "$STREAMS" | tee -a "$RESULTS"
}

# api_calls: how many one-shot requests the API server has answered, as
# "node-GETs runtimeclass-GETs SubjectAccessReviews" (the reads an
# admission makes past policy-server's watch caches).
api_calls() {
  k get --raw /metrics | awk '/^apiserver_request_total\{/ {
      if (/resource="nodes"/ && /verb="GET"/) n += $NF
      if (/resource="runtimeclasses"/ && /verb="GET"/) r += $NF
      if (/resource="subjectaccessreviews"/ && /verb="POST"/) a += $NF }
    END { print n + 0, r + 0, a + 0 }'
}

echo
if [[ $SHAPE == lean ]]; then shape_text="12 runtimeHandlers each"; else shape_text="realistic shape"; fi
echo "policy-server, $NODES kata nodes ($shape_text), $WARMUP warm-up + $RUNS timed sequential requests, ms"
printf '%-34s %8s %8s %8s   %8s %8s %8s  %5s\n' case "total" p10 p90 "server" p10 p90 conns
jq -c '.request.object' "$D/plain.json" >"$D/pod.json"
bench "API server alone: dry-run create" @api "$D/pod.json" api
# The node shapes first: policy-server then holds no node cache at all.
bench "shapes: plain pod (mutated)" clusterwide-kata-shapes "$D/plain.json" mutated
bench "shapes: fits no node (all shapes)" clusterwide-kata-shapes "$D/nofit.json" skip
rss_shapes=$(awk '/VmRSS/ {print $2, $3}' "/proc/$ps_pid/status")
bench "off:  plain pod (mutated)" clusterwide-kata-off "$D/plain.json" mutated
read -r n0 r0 a0 < <(api_calls)
bench "auto: plain pod (mutated)" clusterwide-kata-auto "$D/plain.json" mutated
read -r n1 r1 a1 < <(api_calls)
bench "off:  runtimeClassName set (skip)" clusterwide-kata-off "$D/skip.json" skip
bench "auto: runtimeClassName set (skip)" clusterwide-kata-auto "$D/skip.json" skip
bench "off:  fits no node (whole list)" clusterwide-kata-off "$D/nofit.json" skip
bench "auto: fits no node (whole list)" clusterwide-kata-auto "$D/nofit.json" skip
# Again in the other order, to see drift on a shared machine.
bench "auto: plain pod (mutated), 2nd" clusterwide-kata-auto "$D/plain.json" mutated
bench "off:  plain pod (mutated), 2nd" clusterwide-kata-off "$D/plain.json" mutated
rss_one=$(awk '/VmRSS/ {print $2, $3}' "/proc/$ps_pid/status")
bench "auto: no node has the handler" clusterwide-kata-nowhere "$D/plain.json" skip
if ((PODS > 0)); then
  # Next to app-7's pods (on the kata nodes), by hostname: mutated.
  review test_data/pod-plain.json | jq -c '.request.object.spec.affinity = {podAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
    [{labelSelector: {matchLabels: {app: "app-7"}}, topologyKey: "kubernetes.io/hostname"}]}}' >"$D/affinity.json"
  # Away from app-7's pods by zone: every kata zone holds one.
  review test_data/pod-plain.json | jq -c '.request.object.spec.affinity = {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution:
    [{labelSelector: {matchLabels: {app: "app-7"}}, topologyKey: "topology.kubernetes.io/zone"}]}}' >"$D/anti.json"
  rss_before_pods=$(awk '/VmRSS/ {print $2, $3}' "/proc/$ps_pid/status")
  bench "auto: pod affinity, $PODS pods" clusterwide-kata-auto "$D/affinity.json" mutated
  bench "auto: pod anti-affinity, $PODS pods" clusterwide-kata-auto "$D/anti.json" skip
  bench "auto: plain pod, after the pod list" clusterwide-kata-auto "$D/plain.json" mutated
  rss_pods=$(awk '/VmRSS/ {print $2, $3}' "/proc/$ps_pid/status")
fi
echo
echo "under load: $STREAMS concurrent streams of $RUNS requests, ms, and admissions per second"
throughput "API server alone: dry-run create" @api "$D/pod.json" api
throughput "shapes: plain pod (mutated)" clusterwide-kata-shapes "$D/plain.json" mutated
throughput "auto: plain pod (mutated)" clusterwide-kata-auto "$D/plain.json" mutated
awk '/^off: +plain/ {o += $(NF-6); no++} /^auto: plain/ {a += $(NF-6); na++}
  END {printf "\nauto/off (mean of the two runs'"'"' medians of time_total): %.3f\n", (a / na) / (o / no)}' "$RESULTS"
echo "API server requests during the $((WARMUP + RUNS)) auto plain-pod admissions: $((n1 - n0)) node GETs, $((r1 - r0)) RuntimeClass GETs, $((a1 - a0)) SubjectAccessReviews"
echo "policy-server RSS: $rss_shapes with the node shapes alone (no node cache), $rss_one with the node list off reads (one cache), $(awk '/VmRSS/ {print $2, $3}' "/proc/$ps_pid/status") once the k3s case also read the list with the handlers (two caches)"
((PODS == 0)) || echo "policy-server RSS with the pod list: $rss_pods (before it: $rss_before_pods)"
