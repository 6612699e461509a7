# Control plane on loopback for the real-cluster suite: etcd, kube-apiserver
# (RBAC on) with Kubewarden's CRDs, kube-scheduler, and policy-server running
# the policies behind the webhook configurations that ClusterAdmissionPolicies
# get from the Kubewarden controller. Sourced by run.sh; every process it
# starts is recorded in $D/pids and stopped by PID (stop_all).

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

# need_bins WHAT NAME:VAR...: each binary found (find_bin), else one line
# saying which is missing and how to name it, and exit 0: WHAT is skipped.
need_bins() {
  local what=$1 spec
  shift
  for spec in "$@"; do
    if ! find_bin "${spec%%:*}" "${spec#*:}"; then
      echo "SKIP $what: ${spec%%:*} not found (set ${spec#*:}, or KUBEBUILDER_ASSETS, or put it on PATH)"
      exit 0
    fi
  done
}

# The suites' ports are below Linux's ephemeral range (32768 and up), where a
# client connection's local port would make a later listen fail.
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
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  sign_cert apiserver "/CN=kube-apiserver" serverAuth "IP:127.0.0.1,DNS:localhost,DNS:kubernetes.default.svc"
  sign_cert admin "/O=system:masters/CN=kubernetes-admin" clientAuth
  sign_cert scheduler "/CN=system:kube-scheduler" clientAuth
  sign_cert policy-server "/CN=policy-server" serverAuth "IP:127.0.0.1"
}

# sign_cert NAME SUBJECT EKU [SAN]: $D/pki/NAME.key and NAME.crt, signed by
# the suite's CA (gen_certs).
sign_cert() {
  (
    cd "$D/pki"
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

# start_etcd [LINE...]: a one-member etcd on ETCD_PORT and ETCD_PEER_PORT,
# healthy before it returns; each LINE is added to its config (e.g.
# "unsafe-no-fsync: true" for a benchmark).
start_etcd() {
  {
    cat <<EOF
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
    if [[ $# -gt 0 ]]; then printf '%s\n' "$@"; fi
  } >"$D/etcd.yaml"
  start_bg etcd "$ETCD" --config-file "$D/etcd.yaml"
  wait_http "http://127.0.0.1:$ETCD_PORT/health" 30 || die "etcd not healthy ($D/etcd.log)"
}

start_control_plane() {
  free_port ETCD_PORT 22379
  free_port ETCD_PEER_PORT 22380
  free_port APISERVER_PORT 26443
  free_port SCHEDULER_PORT 20259
  free_port PS_PORT 23000
  free_port PS_READY_PORT 28081
  gen_certs
  kubeconfig "$D/admin.kubeconfig" kubernetes-admin "$(client_cert admin)"
  kubeconfig "$D/scheduler.kubeconfig" system:kube-scheduler "$(client_cert scheduler)"
  : >"$D/pids"
  start_etcd
  # Audit log of every request on pods and their subresources, as an
  # operator's audit policy at level Metadata has it: the policy's audit
  # annotations land on the pod's creation, among its reads, the
  # scheduler's binding and status updates (audit_of and README.md's query
  # pick the creation).
  cat >"$D/audit-policy.yaml" <<EOF
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    resources: [{group: "", resources: [pods, pods/*]}]
  - level: None
EOF
  # A kubelet (tests/kata/node.sh) is reached at its InternalIP: its node
  # name resolves nowhere.
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
    --allow-privileged=true --profiling=false \
    --kubelet-preferred-address-types InternalIP,Hostname
  wait_http "https://127.0.0.1:$APISERVER_PORT/readyz" 120 --cacert "$D/pki/ca.crt" ||
    die "kube-apiserver not ready ($D/kube-apiserver.log)"
  start_bg kube-scheduler "$KUBE_SCHEDULER" \
    --kubeconfig "$D/scheduler.kubeconfig" \
    --authentication-kubeconfig "$D/scheduler.kubeconfig" --authorization-kubeconfig "$D/scheduler.kubeconfig" \
    --leader-elect=false --bind-address 127.0.0.1 --secure-port "$SCHEDULER_PORT"
  wait_http "https://127.0.0.1:$SCHEDULER_PORT/healthz" 60 -k || die "kube-scheduler not healthy ($D/kube-scheduler.log)"
  log "control plane up: apiserver 127.0.0.1:$APISERVER_PORT"
}

# (Its discovery cache in $D: an earlier run on the same port served other kinds.)
k() { "$KUBECTL" --kubeconfig "$D/admin.kubeconfig" --cache-dir "$D/kubectl-cache" "$@"; }

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
# features NAME FEATURES_JSON: the node's status.features (the CRI's own,
# e.g. {"supplementalGroupsPolicy":true}), as the kubelet publishes them,
# through the status subresource by a JSON merge patch (allocatable,
# conditions and runtimeHandlers stay). Read back at once, as handlers does:
# an API server that drops the field stops the suite here.
features() {
  local name=$1 want got
  want=$(jq -cS . <<<"$2")
  k patch node "$name" --subresource=status --type=merge -p "{\"status\":{\"features\":$want}}" >/dev/null
  got=$(k get node "$name" -o json | jq -cS '.status.features')
  [[ $got == "$want" ]] || die "node $name: status.features reads back as $got after writing $want"
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

# ---------------------------------------------------------------- Kubewarden
# There is no Kubewarden controller here: the suite does what it would do with
# a ClusterAdmissionPolicy, by its rules (kubewarden-controller 1.36:
# internal/controller/policy_subreconciler_webhook.go for the webhook,
# policyserver_controller_configmap.go for policy-server's policies.yml),
# from the object as the API server stored it.

# The namespace Kubewarden runs in (the controller's deploymentsNamespace):
# policy-server's ServiceAccount is there, and the webhook of every
# ClusterAdmissionPolicy leaves it out.
KW_NAMESPACE=kubewarden

# find_crds: the folder of Kubewarden's CRDs (KUBEWARDEN_CRDS; .ci/run sets
# it when the CRDs come with the prebuilt hosts) in CRDS. Without them CRDS
# is empty and CRDS_MISSING says why.
CRDS=""
CRDS_MISSING=""
find_crds() {
  local dir=${KUBEWARDEN_CRDS:-}
  if [[ -z $dir ]]; then
    CRDS_MISSING="Kubewarden's CRDs not found (set KUBEWARDEN_CRDS to the folder of the kubewarden-crds chart's CRDs)"
  elif ! compgen -G "$dir/*.yaml" >/dev/null; then
    CRDS_MISSING="KUBEWARDEN_CRDS=$dir holds no CRD files (*.yaml)"
  else
    CRDS=$(cd "$dir" && pwd)
    return 0
  fi
  return 1
}

# install_crds: the CRDs into the API server, established (served) before
# anything uses them.
install_crds() {
  local out
  out=$(k create -f "$CRDS" 2>&1) || die "Kubewarden's CRDs from $CRDS refused: $out"
  k wait --for condition=established --timeout=60s -f "$CRDS" >/dev/null ||
    die "Kubewarden's CRDs from $CRDS not established within 60 s"
  k get crd clusteradmissionpolicies.policies.kubewarden.io >/dev/null 2>&1 ||
    die "$CRDS has no ClusterAdmissionPolicy CRD"
  log "Kubewarden's CRDs established: $(k get crd -o name | grep -c 'policies\.kubewarden\.io$') from $CRDS"
}

# yaml_objects FILE: the objects in FILE as JSON, one a line, as kubectl reads
# them, without asking the API server (so also for kinds it does not serve).
yaml_objects() {
  k annotate --local -o json -f "$1" kata-policy-suite- |
    jq -c 'if .metadata.annotations == {} then del(.metadata.annotations) else . end'
}

# use_policy FILE SETTINGS [NAMESPACE...]: the ClusterAdmissionPolicy in FILE
# joins the policies the suite runs. The suite changes at most four things
# in it: spec.module (this checkout's annotated policy.wasm, file://, instead
# of the registry), runtimeClassName when it is the example class
# kata-qemu-runtime-rs and SUITE_CLASS is set (the same class under the
# suite's name), SETTINGS merged into spec.settings (the suite's own;
# '{}' none), and, with NAMESPACE..., one namespaceSelector expression added
# that leaves those namespaces out ($BYHAND, where pods get the class by hand,
# unseen by the webhook, and namespaces another policy judges alone). The
# object is created in the API server and read back: CAP is what the server
# stored (defaults filled in), POLICY_ID the controller's name for it
# (clusterwide-<name>), and $D/policies.yml policy-server's configuration,
# made from every policy the suite runs (one policy-server serves them all,
# as a PolicyServer does; it reads the file when it starts). Without the
# CRDs, CAP is the object as written, with the same changes.
use_policy() {
  local file=$1 settings=$2 want name out leave
  shift 2
  leave=$(jq -cn '$ARGS.positional' --args "$@")
  want=$(yaml_objects "$file" | jq -c --arg wasm "file://$POLICY_FILE" --argjson leave "$leave" --argjson s "$settings" \
    --arg class "${SUITE_CLASS:-}" '
    select(.kind == "ClusterAdmissionPolicy") | .spec.module = $wasm
    | if $class != "" and .spec.settings.runtimeClassName == "kata-qemu-runtime-rs"
      then .spec.settings.runtimeClassName = $class else . end
    | if $s == {} then . else .spec.settings += $s end
    | if $leave == [] then . else
        .spec.namespaceSelector.matchExpressions += [{key: "kubernetes.io/metadata.name", operator: "NotIn", values: $leave}]
      end')
  [[ -n $want && $want != *$'\n'* ]] || die "$file: not one ClusterAdmissionPolicy"
  name=$(jq -r .metadata.name <<<"$want")
  if [[ -n $CRDS ]]; then
    out=$(k create -f - <<<"$want" 2>&1) || die "$file, as the suite runs it, refused by the API server: $out"
    CAP=$(k get clusteradmissionpolicy "$name" -o json)
  else
    CAP=$want
  fi
  POLICY_ID=clusterwide-$name
  mkdir -p "$D/served"
  echo "$CAP" >"$D/served/$POLICY_ID.json"
  write_policies_yml
  log "policy $POLICY_ID from $file, $([[ -n $CRDS ]] && echo "as the API server stored it" || echo "as written (no CRDs)")"
}

# write_policies_yml: $D/policies.yml, one entry for each policy in
# $D/served (use_policy adds them, drop_policy takes them out).
write_policies_yml() {
  local f
  for f in "$D"/served/*.json; do
    if [[ -f $f ]]; then policies_yml <"$f"; fi
  done | jq -s 'add // {}' >"$D/policies.yml"
}

# policies_yml: policy-server's policies.yml for the ClusterAdmissionPolicy on
# stdin, the entry the controller writes into the PolicyServer's ConfigMap
# (JSON, which YAML reads): under the policy's unique name, its module, mode,
# mutating, context-aware resources, settings, message and evaluation timeout
# as stored, and every host capability (the controller grants "*" to every
# cluster-wide policy).
policies_yml() {
  jq '{("clusterwide-" + .metadata.name): (({
      namespacedName: {namespace: "", name: .metadata.name},
      module: .spec.module,
      policyMode: (.spec.mode // "protect"),
      allowedToMutate: (.spec.mutating // false),
      contextAwareResources: .spec.contextAwareResources,
      settings: .spec.settings,
      message: .spec.message,
      timeoutEvalSeconds: .spec.timeoutEvalSeconds
    } | with_entries(select(.value != null and .value != "" and .value != []))) + {hostCapabilities: ["*"]})}'
}

# serve_policy_server NAME PORT READY_PORT KUBECONFIG POLICIES [LEVEL]: a
# policy-server (process NAME, log $D/NAME.log) serving POLICIES on PORT as
# the user of KUBECONFIG, at LEVEL (warn unless given), ready before it
# returns.
serve_policy_server() {
  local name=$1 port=$2 ready=$3 level=${6:-warn} metrics=()
  # With PS_METRICS (an OTLP/gRPC endpoint, such as otlpsink.py's), its
  # metrics go there every second, as a PolicyServer's go to its collector.
  [[ -z ${PS_METRICS:-} ]] || metrics=(--enable-metrics)
  start_bg "$name" env KUBECONFIG="$4" RUST_LOG="$level" \
    ${PS_METRICS:+OTEL_EXPORTER_OTLP_ENDPOINT="$PS_METRICS" OTEL_METRIC_EXPORT_INTERVAL=1000} \
    "$POLICY_SERVER" --addr 127.0.0.1 --port "$port" --readiness-probe-port "$ready" "${metrics[@]}" \
    --cert-file "$D/pki/policy-server.crt" --key-file "$D/pki/policy-server.key" \
    --policies "$5" --policies-download-dir "$D/$name-downloads" \
    --sigstore-cache-dir "$D/sigstore" --policy-timeout 2 --log-level "$level" --log-no-color
  local pid end=$(($(date +%s) + 120))
  pid=$(awk -v n="$name" '$1 == n {print $2}' "$D/pids")
  until [[ "$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$ready/readiness")" == 200 ]]; do
    kill -0 "$pid" 2>/dev/null || die "$name exited: $(grep -m1 Error "$D/$name.log")"
    (($(date +%s) < end)) || die "$name not ready ($D/$name.log)"
    sleep 0.2
  done
  log "$name ready on 127.0.0.1:$port"
}

# start_policy_server: the suite's policy-server, serving $D/policies.yml at
# log level PS_LOG_LEVEL (warn unless set).
start_policy_server() {
  serve_policy_server policy-server "$PS_PORT" "$PS_READY_PORT" "$D/policy-server.kubeconfig" \
    "$D/policies.yml" "${PS_LOG_LEVEL:-warn}"
}

# webhook_configuration URL: the webhook configuration the controller makes of
# the ClusterAdmissionPolicy on stdin, pointing at URL (policy-server here;
# the controller names its Service) with the suite's CA. Mutating when
# spec.mutating, else Validating; named clusterwide-<name>, path
# /validate/clusterwide-<name>; rules, failurePolicy, matchPolicy,
# objectSelector, timeoutSeconds and matchConditions copied (unset ones get
# the API server's defaults); sideEffects None unless set;
# admissionReviewVersions [v1]; the namespaceSelector leaves out Kubewarden's
# namespace, then has the policy's own matchExpressions (the controller keeps
# only those), unless allowInsideAdmissionControllerNamespace, which takes the
# policy's selector as it is.
webhook_configuration() {
  jq --arg url "$1" --arg ca "$(base64 -w0 <"$D/pki/ca.crt")" --arg kw "$KW_NAMESPACE" '
    ("clusterwide-" + .metadata.name) as $id | .spec as $s | {
      apiVersion: "admissionregistration.k8s.io/v1",
      kind: (if $s.mutating then "MutatingWebhookConfiguration" else "ValidatingWebhookConfiguration" end),
      metadata: {
        name: $id,
        labels: {"app.kubernetes.io/part-of": "kubewarden"},
        annotations: {kubewardenPolicyName: .metadata.name, kubewardenPolicyNamespace: ""}
      },
      webhooks: [{
        name: ($id + ".kubewarden.admission"),
        clientConfig: {url: ($url + "/validate/" + $id), caBundle: $ca},
        rules: $s.rules,
        failurePolicy: $s.failurePolicy,
        matchPolicy: $s.matchPolicy,
        namespaceSelector: (if $s.allowInsideAdmissionControllerNamespace then $s.namespaceSelector
          else {matchExpressions: ([{key: "kubernetes.io/metadata.name", operator: "NotIn", values: [$kw]}]
            + ($s.namespaceSelector.matchExpressions // []))} end),
        objectSelector: $s.objectSelector,
        sideEffects: ($s.sideEffects // "None"),
        timeoutSeconds: $s.timeoutSeconds,
        admissionReviewVersions: ["v1"],
        matchConditions: $s.matchConditions
      } | with_entries(select(.value != null))]
    }'
}

# register_webhook [CAP_JSON]: the webhook configuration of CAP_JSON (CAP
# when not given), pointing at the suite's policy-server, into the API
# server. WEBHOOK is the webhook's name (its audit annotations start with
# it), WEBHOOK_CONFIG the configuration's kind/name.
register_webhook() {
  local conf
  conf=$(webhook_configuration "https://127.0.0.1:$PS_PORT" <<<"${1:-$CAP}")
  k apply -f - >/dev/null <<<"$conf"
  WEBHOOK=$(jq -r '.webhooks[0].name' <<<"$conf")
  WEBHOOK_CONFIG=$(jq -r '.kind + "/" + .metadata.name' <<<"$conf")
  log "$WEBHOOK_CONFIG registered from the ClusterAdmissionPolicy"
}

# drop_policy: CAP and its webhook configuration gone, as after
# `kubectl delete clusteradmissionpolicy` (the controller deletes the
# webhook), and its entry out of policies.yml (read when policy-server next
# starts).
drop_policy() {
  k delete "$WEBHOOK_CONFIG" >/dev/null
  [[ -z $CRDS ]] || k delete clusteradmissionpolicy "$(jq -r .metadata.name <<<"$CAP")" >/dev/null
  rm -f "$D/served/clusterwide-$(jq -r .metadata.name <<<"$CAP").json"
  write_policies_yml
}

# ---------------------------------------------------------------- README.md
# The operator guide's commands, taken from README.md itself: the suite runs
# what the README says, so a README change that breaks a command fails the
# suite. readme_cmd picks one command of a ```console block, readme_inline
# one `code span`; each dies, naming what it looked for, when README.md no
# longer has it (or has it twice, different). readme_sh runs it as an
# operator's shell would, with this cluster's kubectl first on PATH.

README_CMDS=()
README_SHOWN=()
# The operator guide: README.md, then the operations guide and the upgrade
# guide it links to, read as one text (a command is looked up in all three).
GUIDE_FILES=(README.md docs/operations.md docs/upgrade.md)

# readme_guide: the path of the guide's text, made once.
readme_guide() {
  if [[ ! -s $D/guide.md ]]; then
    (cd "$ROOT" && for f in "${GUIDE_FILES[@]}"; do cat "$f"; echo; done) >"$D/guide.md"
  fi
  echo "$D/guide.md"
}

# readme_complete TEXT: TEXT is whole shell commands (no open quote, no
# unterminated here-document, no trailing backslash).
readme_complete() {
  local err
  [[ $1 != *\\ ]] || return 1
  err=$(bash -n <<<"$1" 2>&1) && [[ -z $err ]]
}

# readme_block_commands LINE...: the commands of one ```console block into
# README_CMDS, each with the output README.md shows for it in README_SHOWN
# (its lines, each ending in a newline; empty when none is shown). In a block
# whose commands have the "$ " prompt, a command's shown output is the lines
# up to the next prompt; in a block without prompts every line belongs to a
# command. A command goes on over lines until it is whole (a trailing
# backslash, an open quote, a here-document).
readme_block_commands() {
  local -a l=("$@")
  local n=$# i=0 prompt=0 cmd shown x
  for x in "${l[@]}"; do [[ $x != '$ '* ]] || prompt=1; done
  while ((i < n)); do
    if ((prompt)); then
      [[ ${l[i]} == '$ '* ]] || { i=$((i + 1)); continue; }
      cmd=${l[i]#'$ '}
    else
      [[ -n ${l[i]//[[:space:]]/} ]] || { i=$((i + 1)); continue; }
      cmd=${l[i]}
    fi
    i=$((i + 1))
    while ! readme_complete "$cmd" && ((i < n)); do
      cmd+=$'\n'${l[i]}
      i=$((i + 1))
    done
    shown=""
    while ((prompt && i < n)) && [[ ${l[i]} != '$ '* ]]; do
      shown+=${l[i]}$'\n'
      i=$((i + 1))
    done
    README_CMDS+=("$cmd")
    README_SHOWN+=("$shown")
  done
}

# readme_parse: every command of README.md's ```console blocks (indented
# ones, in lists, included). A bare ``` block that follows a console block
# without prompts, with nothing but blank lines between, is the shown output
# of that block's last command.
readme_parse() {
  ((${#README_CMDS[@]} == 0)) || return 0
  local -a lines block
  local n i=0 indent lang follow=0 last
  mapfile -t lines <"${README_FILE:-$(readme_guide)}"
  n=${#lines[@]}
  while ((i < n)); do
    if [[ ${lines[i]} =~ ^([[:space:]]*)\`\`\`([A-Za-z]*)[[:space:]]*$ ]]; then
      indent=${BASH_REMATCH[1]}
      lang=${BASH_REMATCH[2]}
      block=()
      i=$((i + 1))
      while ((i < n)) && ! [[ ${lines[i]} =~ ^[[:space:]]*\`\`\`[[:space:]]*$ ]]; do
        block+=("${lines[i]#"$indent"}")
        i=$((i + 1))
      done
      i=$((i + 1))
      if [[ $lang == console ]]; then
        readme_block_commands "${block[@]}"
        last=$((${#README_CMDS[@]} - 1))
        follow=1
        [[ -z ${README_SHOWN[last]} ]] || follow=0
      else
        if [[ -z $lang ]] && ((follow && ${#block[@]} > 0)); then
          README_SHOWN[last]=$(printf '%s\n' "${block[@]}")$'\n'
        fi
        follow=0
      fi
      continue
    fi
    [[ -z ${lines[i]//[[:space:]]/} ]] || follow=0
    i=$((i + 1))
  done
  ((${#README_CMDS[@]} > 0)) || die "README.md: no command in a \`\`\`console block"
}

# readme_cmd FIRST [CONTAINING]: the command of a ```console block whose
# first line is FIRST (else, starts with FIRST) and that contains
# CONTAINING, in CMD, its shown output in SHOWN. The same command in two
# places counts once; two different ones, or none, end the suite.
readme_cmd() {
  local i first exact=() prefix=() pick distinct
  readme_parse
  for i in "${!README_CMDS[@]}"; do
    [[ -z ${2:-} || ${README_CMDS[i]} == *"$2"* ]] || continue
    first=${README_CMDS[i]%%$'\n'*}
    [[ $first != "$1" ]] || exact+=("$i")
    [[ $first != "$1"* ]] || prefix+=("$i")
  done
  pick=("${exact[@]}")
  ((${#pick[@]} > 0)) || pick=("${prefix[@]}")
  distinct=$(for i in "${pick[@]}"; do printf '%s\0' "${README_CMDS[i]}"; done | sort -zu | tr -cd '\0' | wc -c)
  ((distinct == 1)) ||
    die "README.md: $distinct different commands of its \`\`\`console blocks start with '$1'${2:+ and contain '$2'}; the suite runs exactly one"
  CMD=${README_CMDS[pick[0]]}
  SHOWN=${README_SHOWN[pick[0]]}
}

# readme_section HEADING: every command of the ```console blocks in
# README.md's section "### HEADING" (up to the next heading of its level or
# above), in order, in SECTION_CMDS, each one's shown output in
# SECTION_SHOWN. Dies when the section is missing or has none.
readme_section() {
  local -a keep_cmds=("${README_CMDS[@]}") keep_shown=("${README_SHOWN[@]}")
  awk -v h="$1" '
    !fence && !on && /^##+ / { t = $0; sub(/^#+ /, "", t); if (t == h) { on = 1; level = index($0, " "); next } }
    !fence && on && /^#+ / && index($0, " ") <= level { exit }
    /^[[:space:]]*```/ { fence = !fence }
    on' "$(readme_guide)" >"$D/readme-section.md"
  [[ -s $D/readme-section.md ]] || die "the guide (${GUIDE_FILES[*]}): no section '$1'"
  README_CMDS=()
  README_SHOWN=()
  README_FILE=$D/readme-section.md readme_parse
  SECTION_CMDS=("${README_CMDS[@]}")
  SECTION_SHOWN=("${README_SHOWN[@]}")
  README_CMDS=("${keep_cmds[@]}")
  README_SHOWN=("${keep_shown[@]}")
}

# readme_inline FIRST: the inline code span of README.md (outside fenced
# blocks) that starts with FIRST, in CMD ("\|" in a table row read as "|").
# The same span in two places counts once; two different ones, or none, end
# the suite.
readme_inline() {
  local spans
  spans=$(awk '/^[[:space:]]*```/ { fenced = !fenced; next } !fenced {
      line = $0; if (line ~ /^\|/) gsub(/\\\|/, "|", line)
      while (match(line, /`[^`]+`/)) { print substr(line, RSTART + 1, RLENGTH - 2); line = substr(line, RSTART + RLENGTH) }
    }' "$(readme_guide)" | awk -v f="$1" 'index($0, f) == 1' | sort -u)
  [[ -n $spans && $spans != *$'\n'* ]] ||
    die "README.md: $(grep -c . <<<"$spans") different \`code spans\` start with '$1'; the suite runs exactly one"
  CMD=$spans
  SHOWN=""
}

# readme_sh COMMAND: COMMAND run by bash from the repository's root
# (README_DIR, when set), as an operator runs it, with kubectl (and kwctl,
# through KUBECONFIG) talking to this cluster as its administrator
# (README_NS set: that namespace is the current one); failglob and
# pipefail on: an unmatched glob is an error, as in zsh (a custom-columns
# path with [*] must be quoted), and so is a failing command anywhere in a
# pipeline. Its stdout and stderr together on stdout; its
# status.
readme_sh() {
  if [[ ! -x $D/readme-bin/kubectl ]]; then
    mkdir -p "$D/readme-bin"
    printf '#!/usr/bin/env bash\nexec %q --kubeconfig %q --cache-dir %q ${README_NS:+--namespace "$README_NS"} "$@"\n' \
      "$KUBECTL" "$D/admin.kubeconfig" "$D/kubectl-cache" >"$D/readme-bin/kubectl"
    chmod +x "$D/readme-bin/kubectl"
    # kwctl, with this checkout's annotated module standing in for the
    # release's registry reference the guide names (there is no registry
    # here): `kwctl pull` of it has nothing to do, and any other command
    # reads the file instead.
    local ref
    ref=$(yaml_objects "$ROOT/examples/cluster-admission-policy.yaml" | jq -r .spec.module)
    printf '#!/usr/bin/env bash
ref=%q file=%q
if [[ ${1:-} == pull && ${2:-} == "$ref" ]]; then echo "(the suite: $ref is $file)"; exit 0; fi
args=()
for a in "$@"; do if [[ $a == "$ref" ]]; then args+=("$file"); else args+=("$a"); fi; done
exec %q "${args[@]}"
' \
      "$ref" "$POLICY_FILE" "$(realpath "$KWCTL")" >"$D/readme-bin/kwctl"
    chmod +x "$D/readme-bin/kwctl"
  fi
  (cd "${README_DIR:-$ROOT}" && PATH="$D/readme-bin:$PATH" KUBECONFIG="$D/admin.kubeconfig" \
    bash -O failglob -o pipefail -c "$1" 2>&1)
}

# readme_line_is WANT GOT: GOT is the line WANT, each "…" in WANT standing
# for any text.
readme_line_is() {
  local rest=$1 pat=""
  while [[ $rest == *…* ]]; do
    pat+=$(printf '%q' "${rest%%…*}")'*'
    rest=${rest#*…}
  done
  pat+=$(printf '%q' "$rest")
  eval "[[ \$2 == $pat ]]"
}

# readme_output_is SHOWN OUTPUT: OUTPUT has the lines SHOWN has, each as
# readme_line_is reads it, no more, no fewer; on stdout, what differs.
readme_output_is() {
  local -a want got
  local i
  mapfile -t want < <(printf '%s' "$1")
  mapfile -t got < <(printf '%s' "$2")
  if ((${#want[@]} != ${#got[@]})); then
    echo "${#got[@]} line(s), README.md shows ${#want[@]}"
    return 1
  fi
  for i in "${!want[@]}"; do
    readme_line_is "${want[i]}" "${got[i]}" || {
      echo "line $((i + 1)) is '${got[i]}', README.md shows '${want[i]}'"
      return 1
    }
  done
}
