#!/usr/bin/env bash
# A real Kata node in a real cluster: a kubelet 1.36 joined to a real
# kube-apiserver and kube-scheduler, on containerd (Debian's) with two
# runtime handlers, runc and kata-qemu-runtime-rs (the kit's
# containerd-shim-kata-v2); the policy served by a real policy-server with
# the settings of examples/cluster-admission-policy.yaml, its webhook
# registered as the Kubewarden controller registers it, and the RuntimeClass
# of examples/runtimeclass-kata-qemu-runtime-rs.yaml. Every pod goes through
# the API server, the webhook and the scheduler, and the kubelet starts it.
# The suite checks each pod's class, its phase and container states, and
# what its container answers.
#
#   tests/kata/node.sh        (make e2e-kata; KATA_KIT=DIR, else
#                              ../shared/kata-kit; KEEP=1 keeps the logs;
#                              HOLD=1 keeps the cluster up at the end;
#                              FINDINGS=0 skips the compatibility pairs,
#                              DEMO=0 the demo's scenarios)
#
# Without a kit, or without a binary, it prints one SKIP line and succeeds.
# Root is needed: a containerd and a kubelet of its own, VMs.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source tests/cluster/lib.sh
source tests/kata/kit.sh
find_kit "Kata node suite"
need_bins "Kata node suite" etcd:ETCD kube-apiserver:KUBE_APISERVER kubectl:KUBECTL \
  kube-scheduler:KUBE_SCHEDULER kubelet:KUBELET policy-server:POLICY_SERVER kwctl:KWCTL
[[ $(id -u) -eq 0 ]] || die "the Kata node suite runs containerd, a kubelet and VMs: run it as root"
kit_packages
[[ -x /usr/lib/cni/bridge ]] || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq containernetworking-plugins >/dev/null
for tool in openssl curl jq; do
  command -v "$tool" >/dev/null || die "$tool is needed (scripts/setup.sh installs it)"
done
WASM=$ROOT/${POLICY:-policy.wasm}
[[ -f $WASM ]] || die "$WASM not found: make policy.wasm"

D=$(mktemp -d /tmp/kata-node.XXXXXX)
POLICY_FILE=$D/policy.wasm
"$KWCTL" annotate -m metadata.yml -u README.md -o "$POLICY_FILE" "$WASM" >/dev/null
KEEP=${KEEP:-0}
CRDS=""
NODE=kata-node
CLASS=kata-qemu-runtime-rs
NS=kata-e2e

# teardown: every sandbox the kubelet left (the kubelet stops first, then
# containerd's tasks, then any shim of this containerd), and the mounts
# under $D.
teardown() {
  local pid id ids=""
  stop_one kubelet 2>/dev/null || true
  if [[ -S $D/containerd.sock ]]; then
    ids=$(ctr --address "$D/containerd.sock" -n k8s.io containers ls -q 2>/dev/null || true)
    for id in $ids; do
      ctr --address "$D/containerd.sock" -n k8s.io tasks kill -s KILL "$id" >/dev/null 2>&1 || true
    done
  fi
  stop_all
  for pid in $(pgrep -f "containerd-shim.*$D/containerd.sock" || true); do kill -9 "$pid" 2>/dev/null || true; done
  # A shim that was killed leaves its VM's processes, named by sandbox id.
  for id in $ids; do pkill -9 -f "$id" 2>/dev/null || true; done
  grep -F " $D/" /proc/mounts | awk '{print $2}' | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  ip link del kata-e2e0 2>/dev/null || true
  ip link del kata-e2e-node 2>/dev/null || true
}
FAILED=0 PASSED=0
cleanup() {
  if [[ ${HOLD:-0} == 1 ]]; then
    log "HOLD=1: the cluster stays up (kubectl --kubeconfig $D/admin.kubeconfig); interrupt to end"
    sleep infinity || true
  fi
  teardown
  if [[ $KEEP == 1 || $FAILED -gt 0 ]]; then log "logs kept in $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
fail() {
  echo "not ok - $*"
  FAILED=$((FAILED + 1))
}
pass() {
  echo "ok - $*"
  PASSED=$((PASSED + 1))
}
one_line() { local t=${1%$'\n'}; echo "${t//$'\n'/; }"; }

echo "# a real Kata node: kit of kata-containers $KIT_COMMIT, guest kernel $GUEST_KERNEL"
start_control_plane
# The node's address: the kubelet refuses a loopback one, and the API
# server reaches the kubelet (logs) there: on an interface of the suite's
# (a bridge without ports; dummy links need a module this machine may lack).
NODE_IP=10.244.76.1
ip link add kata-e2e-node type bridge 2>/dev/null || true
ip addr add $NODE_IP/32 dev kata-e2e-node 2>/dev/null || true
ip link set kata-e2e-node up
# The kubelet's identities: its client certificate (the Node authorizer's
# system:node:NAME in system:nodes) and its serving certificate.
sign_cert kubelet-client "/O=system:nodes/CN=system:node:$NODE" clientAuth
sign_cert kubelet "/CN=$NODE" serverAuth "IP:$NODE_IP"
kubeconfig "$D/kubelet.kubeconfig" "system:node:$NODE" "$(client_cert kubelet-client)"

# containerd: the CRI with runc (the default) and the kit's shim under the
# RuntimeClass's handler name, as kata-deploy registers it (privileged
# containers get the VM's devices); pod networks from the bridge plugin.
kit_config "$D/configuration.toml"
mkdir -p "$D/cni" "$D/images"
cat >"$D/cni/10-kata-e2e.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "kata-e2e", "plugins": [
  {"type": "bridge", "bridge": "kata-e2e0", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.244.77.0/24"}]], "dataDir": "$D/ipam"}}]}
EOF
# runc applies the kubelet's oom_score_adj (-998 for a sandbox); lowering it
# needs CAP_SYS_RESOURCE, which root lacks on some sandboxed machines (this
# kind of CI machine): then runc runs through a wrapper that keeps a
# negative oomScoreAdj at 0, and says so.
RUNC_BINARY=$(command -v runc)
if (($(($(awk '/^CapEff:/ {print "0x" $2}' /proc/self/status) >> 24 & 1)) == 0)); then
  RUNC_BINARY=$D/runc-oom-wrapper
  cat >"$RUNC_BINARY" <<EOF
#!/bin/sh
prev=""
for a in "\$@"; do
  if [ "\$prev" = --bundle ] && [ -f "\$a/config.json" ]; then
    jq '.process.oomScoreAdj |= (if . != null and . < 0 then 0 else . end)' "\$a/config.json" >"\$a/config.json.oom" &&
      mv "\$a/config.json.oom" "\$a/config.json"
  fi
  prev=\$a
done
exec $(command -v runc) "\$@"
EOF
  chmod +x "$RUNC_BINARY"
  log "root has no CAP_SYS_RESOURCE here: runc runs through $RUNC_BINARY (negative oom_score_adj kept at 0)"
fi
cat >"$D/containerd.toml" <<EOF
version = 2
root = "$D/containerd-root"
state = "$D/containerd-state"
[grpc]
  address = "$D/containerd.sock"
[ttrpc]
  address = "$D/containerd.sock.ttrpc"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "localhost/kata-pause:1"
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$RUNC_BINARY"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.$CLASS]
      runtime_type = "io.containerd.kata.v2"
      privileged_without_host_devices = true
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.$CLASS.options]
        ConfigPath = "$D/configuration.toml"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$D/cni"
EOF
start_bg containerd env PATH="$KIT/bin:$PATH" containerd --config "$D/containerd.toml" --log-level debug
for _ in $(seq 1 100); do
  [[ -S $D/containerd.sock ]] && break
  sleep 0.1
done
[[ -S $D/containerd.sock ]] || die "containerd did not start ($D/containerd.log)"
# The images, made here (nothing can be pulled): the probe image, and a
# sandbox ("pause") image whose process only sleeps.
probe_image "$D/images/probe" "$D/images/probe.tar" localhost/kata-probe:1
umoci config --image "$D/images/probe/oci:probe" --tag pause --config.entrypoint /bin/sleep \
  --config.cmd 2147483647 >/dev/null
skopeo copy -q "oci:$D/images/probe/oci:pause" "docker-archive:$D/images/pause.tar:localhost/kata-pause:1" >/dev/null
for t in probe pause; do
  ctr --address "$D/containerd.sock" -n k8s.io images import "$D/images/$t.tar" >/dev/null
done

free_port KUBELET_PORT 20250
free_port KUBELET_HEALTHZ_PORT 20248
cat >"$D/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
containerRuntimeEndpoint: unix://$D/containerd.sock
address: $NODE_IP
port: $KUBELET_PORT
healthzBindAddress: 127.0.0.1
healthzPort: $KUBELET_HEALTHZ_PORT
readOnlyPort: 0
tlsCertFile: $D/pki/kubelet.crt
tlsPrivateKeyFile: $D/pki/kubelet.key
authentication: {anonymous: {enabled: true}, webhook: {enabled: false}}
authorization: {mode: AlwaysAllow}
failSwapOn: false
resolvConf: ""
evictionHard: {memory.available: "1%", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
maxPods: 20
EOF
start_bg kubelet "$KUBELET" --config "$D/kubelet.yaml" --kubeconfig "$D/kubelet.kubeconfig" \
  --hostname-override "$NODE" --node-ip "$NODE_IP" --root-dir "$D/kubelet" \
  --node-labels katacontainers.io/kata-runtime=true,kata-deploy.katacontainers.io/default=true
wait_http "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz" 60 || die "kubelet not healthy ($D/kubelet.log)"
# Ready, then without the not-ready taint that admission gave the node (no
# node-lifecycle controller runs to take it away).
end=$(($(date +%s) + 120))
until [[ $(k get node "$NODE" -o jsonpath='{.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null) == True ]]; do
  (($(date +%s) < end)) || die "node $NODE not Ready in 120 s ($D/kubelet.log)"
  sleep 1
done
k taint node "$NODE" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
log "node $NODE Ready: $(k get node "$NODE" -o jsonpath='{.status.nodeInfo.containerRuntimeVersion} {.status.nodeInfo.kubeletVersion}')"

# The RuntimeClass, the policy-server's account and RBAC, the policy.
k apply -f examples/runtimeclass-kata-qemu-runtime-rs.yaml >/dev/null
PS_OBJECTS=$(yaml_objects examples/policy-server.yaml)
PS_SA=$(jq -r 'select(.kind == "PolicyServer") | .spec.serviceAccountName' <<<"$PS_OBJECTS")
k create namespace "$KW_NAMESPACE" >/dev/null
# Kubewarden's namespace is one the webhook leaves out: the suites' pods
# under runc run there.
k -n "$KW_NAMESPACE" create serviceaccount default >/dev/null
jq 'select(.kind == "ServiceAccount")' <<<"$PS_OBJECTS" | k apply -f - >/dev/null
k apply -f examples/rbac.yaml >/dev/null
kubeconfig "$D/policy-server.kubeconfig" "$PS_SA" "{token: $(k -n "$KW_NAMESPACE" create token "$PS_SA" --duration 2h)}"
use_policy examples/cluster-admission-policy.yaml '{}'
start_policy_server
register_webhook
k create namespace $NS >/dev/null
k -n $NS create serviceaccount default >/dev/null
# pod_json NAME [JQ]: a pod of the probe image whose container writes its
# kernel release into a page and serves it (busybox httpd) on PORT, 8080
# unless set; changed by the jq filter JQ.
pod_json() {
  jq -n --arg n "$1" --arg port "${PORT:-8080}" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n}, spec: {
    automountServiceAccountToken: false, terminationGracePeriodSeconds: 1,
    containers: [{name: "probe", image: "localhost/kata-probe:1", imagePullPolicy: "Never",
      command: ["/bin/sh", "-c", "mkdir -p /tmp/www && uname -r > /tmp/www/index.html && exec httpd -f -p \($port) -h /tmp/www"],
      resources: {requests: {cpu: "100m", memory: "64Mi"}}}]}}' | jq "${2:-.}"
}

# until_settled NAME [done]: waits up to 300 s for pod NAME to run (with
# done: to end), or be stuck (a container waiting for a reason other than
# its creation, or a sandbox that failed); POD is
# the pod as last read, PHASE its phase, STATES its containers' states,
# SECS how long since it was created.
until_settled() {
  local end=$(($(date +%s) + 300)) waiting
  while :; do
    POD=$(k -n $NS get pod "$1" -o json 2>/dev/null || echo '{}')
    PHASE=$(jq -r '.status.phase // "missing"' <<<"$POD")
    waiting=$(jq -r '[.status.containerStatuses[]?.state.waiting.reason // empty
      | select(. != "ContainerCreating" and . != "PodInitializing")] | join(",")' <<<"$POD")
    # A sandbox the runtime failed to create is retried by the kubelet
    # with the same result: its first failure settles the pod.
    [[ -n $waiting ]] || waiting=$(k -n $NS get events --field-selector "involvedObject.name=$1,reason=FailedCreatePodSandBox" \
      -o jsonpath='{.items[0].reason}' 2>/dev/null || true)
    [[ ($PHASE == Running && ${2:-} != done) || $PHASE == Succeeded || $PHASE == Failed || -n $waiting ]] && break
    (($(date +%s) < end)) || break
    sleep 2
  done
  STATES=$(jq -c '[.status.containerStatuses[]? | {(.name): .state}] | add // {}' <<<"$POD")
  SECS=$(($(date +%s) - $(date -d "$(jq -r .metadata.creationTimestamp <<<"$POD")" +%s)))
}

# pod_events NAME: the pod's events, one line.
pod_events() {
  k -n $NS get events --field-selector "involvedObject.name=$1" \
    -o jsonpath='{range .items[*]}{.reason}: {.message}; {end}' 2>/dev/null | cut -c1-600
}

# answer [IP]: what the pod last settled (POD) serves on PORT (8080
# unless set), from this host, at IP (its pod IP unless given); tried for
# up to 20 s, as the container may still be starting its server.
answer() {
  local ip=${1:-$(jq -r '.status.podIP // empty' <<<"$POD")} got=""
  [[ -n $ip ]] || return 0
  for _ in $(seq 1 20); do
    got=$(curl -s --max-time 5 "http://$ip:${PORT:-8080}/" || true)
    [[ -z $got ]] || break
    sleep 1
  done
  echo "$got"
}
# The API server calls a new webhook once its informer has it.
for _ in $(seq 1 50); do
  dry=$(pod_json plain-dry | k -n $NS create --dry-run=server -o json -f - 2>&1 || true)
  class=$(jq -r '.spec.runtimeClassName // ""' <<<"$dry" 2>/dev/null || true)
  [[ $class == "$CLASS" ]] && break
  sleep 0.3
done

[[ $class == "$CLASS" ]] || die "the webhook did not give a dry-run pod $CLASS within 15 s: $(jq -c '.metadata.annotations // .' <<<"$dry" 2>/dev/null || echo "$dry")"

echo "# pods through the API server, the webhook, the scheduler and the kubelet"
# A plain pod: the policy gives it Kata, the scheduler binds it to the Kata
# node, the kubelet starts it in a Kata VM, and it answers from there.
pod_json plain | k -n $NS create -f - >/dev/null
until_settled plain
class=$(jq -r '.spec.runtimeClassName // ""' <<<"$POD")
got=$(answer)
if [[ $class == "$CLASS" && $(jq -r .spec.nodeName <<<"$POD") == "$NODE" && $PHASE == Running &&
  $(jq -r '.status.containerStatuses[0].ready' <<<"$POD") == true && $got == "$GUEST_KERNEL" ]]; then
  pass "a plain pod: given $class by the policy, bound to $NODE, Running and ready in ${SECS} s; its container answers from the Kata guest (uname -r: $got)"
else
  fail "a plain pod: class '$class', node '$(jq -r .spec.nodeName <<<"$POD")', phase $PHASE, states $STATES, answer '$got' (guest kernel $GUEST_KERNEL); events: $(pod_events plain)"
fi
# A pod in the host's network: the policy leaves it alone (hostNamespaces),
# and runc starts it, on the host's kernel.
free_port PORT 20880
pod_json host-net '.spec.hostNetwork = true' | k -n $NS create -f - >/dev/null
until_settled host-net
class=$(jq -r '.spec.runtimeClassName // ""' <<<"$POD")
got=$(answer 127.0.0.1)
unset PORT
if [[ -z $class && $PHASE == Running && $got == "$(uname -r)" ]]; then
  pass "a hostNetwork pod: left alone by the policy, Running under runc in ${SECS} s, on the host's kernel ($got)"
else
  fail "a hostNetwork pod: class '$class', phase $PHASE, states $STATES, answer '$got' (host kernel $(uname -r)); events: $(pod_events host-net)"
fi
k -n $NS delete pod plain host-net --wait=true --timeout=120s >/dev/null 2>&1 || true

[[ ${FINDINGS:-1} == 0 ]] || source tests/kata/findings.sh
[[ ${DEMO:-1} == 0 ]] || source tests/kata/demo.sh

echo "# Kata node: $PASSED passed, $FAILED failed"
((FAILED == 0))
