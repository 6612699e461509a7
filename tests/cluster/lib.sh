# Control plane on loopback for the real-cluster suite: etcd, kube-apiserver
# (RBAC on), kube-scheduler, and policy-server running the policy behind a
# MutatingWebhookConfiguration. Sourced by run.sh; every process it starts
# is recorded in $D/pids and stopped by PID (stop_all).

log() { echo "[cluster $(date +%T)] $*" >&2; }
die() {
  log "ERROR: $*"
  exit 1
}

# find_bin NAME VAR: $VAR, else $KUBEBUILDER_ASSETS/NAME, else PATH.
find_bin() {
  local name=$1 var=$2 found=
  if [[ -n ${!var:-} ]]; then
    found=${!var}
  elif [[ -n ${KUBEBUILDER_ASSETS:-} && -x $KUBEBUILDER_ASSETS/$name ]]; then
    found=$KUBEBUILDER_ASSETS/$name
  else
    found=$(command -v "$name" 2>/dev/null || true)
  fi
  if [[ -z $found || ! -x $found ]]; then
    return 1
  fi
  printf -v "$var" '%s' "$found"
}

port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
TAKEN=" "
free_port() { # VAR FIRST
  local p=$2
  while port_in_use "$p" || [[ $TAKEN == *" $p "* ]]; do p=$((p + 1)); done
  TAKEN+="$p "
  printf -v "$1" '%s' "$p"
}

wait_http() { # url seconds [curl args]
  local url=$1 end=$(($(date +%s) + $2))
  shift 2
  while (($(date +%s) < end)); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" 2>/dev/null)" == 200 ]] && return 0
    sleep 0.2
  done
  return 1
}

start_bg() { # name cmd...
  local name=$1
  shift
  "$@" </dev/null >"$D/$name.log" 2>&1 &
  local pid=$!
  disown "$pid" # stopped by PID below, without the shell's job messages
  echo "$name $pid" >>"$D/pids"
  log "$name started (pid $pid, log $D/$name.log)"
}

stop_one() { # name: stop the process recorded under that name
  local name=$1 n pid
  [[ -f $D/pids ]] || return 0
  while read -r n pid; do
    [[ $n == "$name" ]] || continue
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done <"$D/pids"
  grep -v "^$name " "$D/pids" >"$D/pids.new" || true
  mv "$D/pids.new" "$D/pids"
}

stop_all() {
  [[ -n ${D:-} && -f $D/pids ]] || return 0
  local n pid
  tac "$D/pids" | while read -r n pid; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  sleep 0.5
  tac "$D/pids" | while read -r n pid; do
    kill -KILL "$pid" 2>/dev/null || true
  done
  rm -f "$D/pids"
}

gen_certs() {
  local P=$D/pki
  mkdir -p "$P"
  (
    cd "$P"
    openssl genrsa -out ca.key 2048 2>/dev/null
    openssl req -x509 -new -nodes -key ca.key -subj "/CN=kata-policy-test-ca" -days 30 -out ca.crt 2>/dev/null
    sign() { # name subject eku [san]
      openssl genrsa -out "$1.key" 2048 2>/dev/null
      openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
      {
        echo "basicConstraints=CA:FALSE"
        echo "keyUsage=critical,digitalSignature,keyEncipherment"
        echo "extendedKeyUsage=$3"
        [[ -z ${4:-} ]] || echo "subjectAltName=$4"
      } >"$1.ext"
      openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 \
        -extfile "$1.ext" -out "$1.crt" 2>/dev/null
      rm -f "$1.csr" "$1.ext"
    }
    sign apiserver "/CN=kube-apiserver" serverAuth "IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
    sign admin "/O=system:masters/CN=kubernetes-admin" clientAuth
    sign scheduler "/CN=system:kube-scheduler" clientAuth
    sign policy-server "/CN=policy-server" serverAuth "IP:127.0.0.1"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
}

# kubeconfig FILE USER CREDENTIALS: CREDENTIALS is the user's YAML flow map
# (client certificate and key, or a token); the CA goes inline, as
# policy-server's client needs it.
kubeconfig() {
  cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 <"$D/pki/ca.crt")
users:
- name: $2
  user: $3
contexts:
- name: local
  context: {cluster: local, user: $2}
current-context: local
EOF
}
# client_cert NAME: the credentials of the client certificate NAME.crt.
client_cert() { echo "{client-certificate: $D/pki/$1.crt, client-key: $D/pki/$1.key}"; }

start_control_plane() {
  free_port ETCD_PORT 32379
  free_port ETCD_PEER_PORT 32380
  free_port APISERVER_PORT 36443
  free_port SCHEDULER_PORT 30259
  free_port PS_PORT 33000
  free_port PS_READY_PORT 38081
  gen_certs
  kubeconfig "$D/admin.kubeconfig" kubernetes-admin "$(client_cert admin)"
  kubeconfig "$D/scheduler.kubeconfig" system:kube-scheduler "$(client_cert scheduler)"
  : >"$D/pids"
  cat >"$D/etcd.yaml" <<EOF
name: cp
data-dir: $D/etcd-data
listen-client-urls: http://127.0.0.1:$ETCD_PORT
advertise-client-urls: http://127.0.0.1:$ETCD_PORT
listen-peer-urls: http://127.0.0.1:$ETCD_PEER_PORT
initial-advertise-peer-urls: http://127.0.0.1:$ETCD_PEER_PORT
initial-cluster: cp=http://127.0.0.1:$ETCD_PEER_PORT
initial-cluster-state: new
log-level: warn
EOF
  start_bg etcd "$ETCD" --config-file "$D/etcd.yaml"
  wait_http "http://127.0.0.1:$ETCD_PORT/health" 30 || die "etcd not healthy ($D/etcd.log)"
  # Audit log of pod creations: where the policy's audit annotations land.
  cat >"$D/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: [pods]}]
    verbs: [create]
  - level: None
EOF
  start_bg kube-apiserver "$KUBE_APISERVER" \
    --audit-policy-file "$D/audit-policy.yaml" --audit-log-path "$D/audit.log" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$APISERVER_PORT" \
    --tls-cert-file "$D/pki/apiserver.crt" --tls-private-key-file "$D/pki/apiserver.key" \
    --client-ca-file "$D/pki/ca.crt" \
    --service-account-key-file "$D/pki/sa.pub" --service-account-signing-key-file "$D/pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
    --service-cluster-ip-range 10.0.0.0/24 --endpoint-reconciler-type none \
    --allow-privileged=true --profiling=false
  wait_http "https://127.0.0.1:$APISERVER_PORT/readyz" 120 --cacert "$D/pki/ca.crt" ||
    die "kube-apiserver not ready ($D/kube-apiserver.log)"
  start_bg kube-scheduler "$KUBE_SCHEDULER" \
    --kubeconfig "$D/scheduler.kubeconfig" \
    --authentication-kubeconfig "$D/scheduler.kubeconfig" --authorization-kubeconfig "$D/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT"
  wait_http "https://127.0.0.1:$SCHEDULER_PORT/healthz" 60 -k || die "kube-scheduler not healthy ($D/kube-scheduler.log)"
  log "control plane up: apiserver 127.0.0.1:$APISERVER_PORT"
}

k() { "$KUBECTL" --kubeconfig "$D/admin.kubeconfig" "$@"; }

# node NAME LABELS_JSON ALLOCATABLE_JSON [TAINTS_JSON [HANDLERS_JSON]]: a
# Ready node without a kubelet (status through the subresource; the
# not-ready taint that admission adds removed), its runtime handlers
# written after allocatable and conditions (see handlers).
node() {
  local name=$1 labels=$2 alloc=$3 taints=${4:-[]} rh=${5:-}
  jq -n --arg n "$name" --argjson l "$labels" --argjson t "$taints" \
    '{apiVersion:"v1",kind:"Node",metadata:{name:$n,labels:($l + {"kubernetes.io/hostname":$n,"kubernetes.io/os":"linux"})},spec:{taints:$t}}' |
    k create -f - >/dev/null
  k patch node "$name" --subresource=status --type=merge -p "$(jq -n --argjson a "$alloc" \
    '{status:{allocatable:$a,capacity:$a,conditions:[{type:"Ready",status:"True",reason:"KubeletReady",message:"fake",lastHeartbeatTime:(now|todate),lastTransitionTime:(now|todate)}]}}')" >/dev/null
  [[ -z $rh ]] || handlers "$name" "$rh"
  k taint node "$name" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1 || true
}

# handlers NAME HANDLERS_JSON: the node's status.runtimeHandlers, as the
# kubelet publishes them, through the status subresource. A JSON merge patch
# replaces only the keys it names, so allocatable and conditions stay, and a
# later merge patch of those leaves the handlers (handlers_kept checks). Read
# back at once: an API server that drops the field (its feature gates off)
# stops the suite here rather than turning every handler check into a
# labels-only one.
declare -gA HANDLERS_SET=()
handlers() {
  local name=$1 want got
  want=$(jq -cS . <<<"$2")
  k patch node "$name" --subresource=status --type=merge -p "{\"status\":{\"runtimeHandlers\":$want}}" >/dev/null
  got=$(k get node "$name" -o json | jq -cS '.status.runtimeHandlers')
  [[ $got == "$want" ]] || die "node $name: status.runtimeHandlers reads back as $got after writing $want"
  HANDLERS_SET[$name]=$want
}
# handlers_kept NODE...: the nodes whose status.runtimeHandlers no longer read
# as handlers wrote them, "name: now" each; nothing when all are kept.
handlers_kept() {
  local name got
  for name in "$@"; do
    got=$(k get node "$name" -o json | jq -cS '.status.runtimeHandlers')
    [[ $got == "${HANDLERS_SET[$name]}" ]] || echo "$name: $got"
  done
}

# The policy as the Kubewarden controller registers a ClusterAdmissionPolicy
# (examples/cluster-admission-policy.yaml): policies.yml for policy-server
# and the MutatingWebhookConfiguration pointing at it.
write_policies() { # SETTINGS_JSON [MODE]
  local settings=$1 mode=${2:-protect}
  cat >"$D/policies.yml" <<EOF
kata-runtime-policy:
  module: file://$POLICY_FILE
  policyMode: $mode
  allowedToMutate: true
  contextAwareResources:
    - apiVersion: v1
      kind: Node
    - apiVersion: node.k8s.io/v1
      kind: RuntimeClass
    - apiVersion: v1
      kind: PersistentVolumeClaim
    - apiVersion: v1
      kind: PersistentVolume
    - apiVersion: storage.k8s.io/v1
      kind: StorageClass
  hostCapabilities: ["*"]
  settings: $settings
EOF
}

start_policy_server() {
  start_bg policy-server env KUBECONFIG="$D/policy-server.kubeconfig" RUST_LOG=warn \
    "$POLICY_SERVER" --addr 127.0.0.1 --port "$PS_PORT" --readiness-probe-port "$PS_READY_PORT" \
    --cert-file "$D/pki/policy-server.crt" --key-file "$D/pki/policy-server.key" \
    --policies "$D/policies.yml" --policies-download-dir "$D/downloads" \
    --sigstore-cache-dir "$D/sigstore" --policy-timeout 2 --log-level warn --log-no-color
  local pid end=$(($(date +%s) + 120))
  pid=$(awk '$1 == "policy-server" {print $2}' "$D/pids")
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$PS_READY_PORT/readiness")" == 200 ]]; do
    kill -0 "$pid" 2>/dev/null || die "policy-server exited: $(grep -m1 Error "$D/policy-server.log")"
    (($(date +%s) < end)) || die "policy-server not ready ($D/policy-server.log)"
    sleep 0.2
  done
  log "policy-server ready on 127.0.0.1:$PS_PORT"
}

register_webhook() {
  k apply -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata:
  name: clusterwide-kata-runtime-policy
webhooks:
  - name: clusterwide-kata-runtime-policy.kubewarden.admission
    admissionReviewVersions: ["v1"]
    sideEffects: None
    failurePolicy: Ignore
    timeoutSeconds: 10
    matchPolicy: Equivalent
    reinvocationPolicy: Never
    clientConfig:
      url: https://127.0.0.1:$PS_PORT/validate/kata-runtime-policy
      caBundle: $(base64 -w0 <"$D/pki/ca.crt")
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["pods"]
        operations: ["CREATE"]
    namespaceSelector:
      matchExpressions:
        - key: kubernetes.io/metadata.name
          operator: NotIn
          values: [kube-system, kubewarden, kata-deploy, by-hand]
EOF
}
