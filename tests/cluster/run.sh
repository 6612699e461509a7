#!/usr/bin/env bash
# The production path, for real: a real kube-apiserver calls a real
# policy-server running policy.wasm through MutatingWebhookConfigurations,
# and a real kube-scheduler places the pods (all but those with DRA claims,
# which need a DRA driver: for them only admission is checked).
#
#   tests/cluster/run.sh            (make e2e-cluster; POLICY=policy.wasm)
#
# Binaries: KUBEBUILDER_ASSETS (envtest's folder: etcd, kube-apiserver,
# kubectl), KUBE_SCHEDULER, POLICY_SERVER, KWCTL, and ETCD / KUBE_APISERVER /
# KUBECTL to name one directly; else PATH. When one is missing the suite is
# skipped with one line saying which, and exits 0. Everything listens on
# 127.0.0.1; every process started is stopped by its PID on exit.
#
# Kubewarden's CRDs: KUBEWARDEN_CRDS (their folder). With them, every manifest
# in examples/ and kwctl's scaffolded ClusterAdmissionPolicy go through the
# API server (server-side dry run, strict field validation), and the policies
# the suite runs (examples/cluster-admission-policy.yaml, then its monitor
# variant, examples/cluster-admission-policy-kata-mandatory.yaml in a
# labelled namespace, a copy of the first with its commented opt-out
# objectSelector in force, and one with README.md's settings for kata-deploy
# 4.x's classes, all from one policy-server) are the examples as the API
# server stored them. Without them those checks are skipped, with a
# line saying so, and the policies are the examples as written.
# policy-server runs as examples/policy-server.yaml's ServiceAccount, with
# examples/rbac.yaml's rules alone; the kata RuntimeClass is
# examples/runtimeclass-kata-qemu-runtime-rs.yaml (and, for the scenarios,
# the same class named kata: see SUITE_CLASS).
#
# README.md's operator commands that this control plane can run (no
# kubelets, no kube-controller-manager, no Kubewarden controller, no Helm,
# no registry) are taken from README.md itself and run as written (lib.sh,
# readme_cmd and readme_sh): a README change that breaks one, or changes
# an output it shows, fails the suite. Last, README.md's upgrade from 0.1.0
# and its roll back, every command in order, against 0.1.0's examples and
# module, with the Kubewarden controller's part played by controller.sh
# (upgrade.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
source tests/cluster/lib.sh

need_bins "real-cluster suite" etcd:ETCD kube-apiserver:KUBE_APISERVER kubectl:KUBECTL \
  kube-scheduler:KUBE_SCHEDULER policy-server:POLICY_SERVER kwctl:KWCTL
for tool in openssl curl jq; do
  command -v "$tool" >/dev/null || die "$tool is needed (scripts/setup.sh installs it)"
done
find_crds || true
WASM=$ROOT/${POLICY:-policy.wasm}
[[ -f $WASM ]] || die "$WASM not found: make policy.wasm"

D=$(mktemp -d /tmp/kata-policy-cluster.XXXXXX)
# policy-server loads annotated modules only (the protocol version, the
# metadata): annotate as `make annotated-policy.wasm` does.
POLICY_FILE=$D/policy.wasm
"$KWCTL" annotate -m metadata.yml -u README.md -o "$POLICY_FILE" "$WASM" >/dev/null
KEEP=${KEEP_CLUSTER_DIR:-0}
cleanup() {
  stop_all
  if [[ $KEEP == 1 ]]; then log "logs kept in $D"; else rm -rf "$D"; fi
}
trap cleanup EXIT
T0=$(date +%s)
start_control_plane
[[ -z $CRDS ]] || install_crds

FAILED=0
PASSED=0
fail() {
  echo "not ok - $*"
  FAILED=$((FAILED + 1))
}
pass() {
  echo "ok - $*"
  PASSED=$((PASSED + 1))
}
# readme_run COMMAND: a command of README.md (readme_cmd, readme_inline) run
# as an operator runs it (readme_sh); OUT what it printed, trailing newlines
# kept, RC its status.
readme_run() {
  OUT=$(readme_sh "$1"; echo "~$?")
  RC=${OUT##*~}
  OUT=${OUT%~*}
}
# one_line TEXT: TEXT on one line, for a report.
one_line() { local t=${1%$'\n'}; echo "${t//$'\n'/; }"; }
# columns AWK_ARGS...: OUT (readme_run) reduced by awk, one line per record
# joined with spaces.
columns() { awk "$@" < <(printf '%s' "$OUT") | tr '\n' ' '; }
# readme_expect GOT EXPECTED WHAT: CMD (readme_run) exited 0 and GOT, what
# it printed or a reduction of it, is EXPECTED; WHAT says what that shows.
readme_expect() {
  if [[ $RC == 0 && $1 == "$2" ]]; then
    pass "README.md's \`$CMD\`: $3"
  else
    fail "README.md's \`$CMD\`: exit $RC: $(one_line "$OUT")"
  fi
}
# readme_shows WHAT [SECONDS]: CMD (readme_cmd) succeeds and prints the
# output README.md shows for it (SHOWN; readme_output_is), trying again for
# up to SECONDS (what it reads is written asynchronously).
readme_shows() {
  local diff="" end=$(($(date +%s) + ${2:-0}))
  if [[ -z $SHOWN ]]; then
    fail "README.md: $1, \`$(one_line "$CMD")\`: no output shown (a \$ prompt, then the output): nothing to check"
    return
  fi
  while :; do
    readme_run "$CMD"
    ((RC != 0)) || ! diff=$(readme_output_is "$SHOWN" "$OUT") || break
    (($(date +%s) < end)) || break
    sleep 0.2
  done
  if ((RC == 0)) && [[ -z $diff ]]; then
    pass "README.md's $1: the output README.md shows: $(one_line "$OUT")"
  else
    fail "README.md's $1: exit $RC${diff:+, $diff}: $(one_line "$OUT")"
  fi
}

# ---------------------------------------------------------------- the cluster
TENANT=tenant
BYHAND=by-hand # not covered by the webhook: the same pods, the class set by hand
# Kata-mandatory: labelled for examples/cluster-admission-policy-kata-mandatory.yaml
# (by README.md's command, below), and judged by that policy alone.
MANDATORY=kata-only
MANDATORY_LABEL=kata-runtime-policy.kubewarden.io/kata-mandatory
# Opt-out: judged by examples/cluster-admission-policy.yaml with its
# commented objectSelector in force (a copy), and by that policy alone.
OPTOUT=self-service
OPTOUT_LABEL=kata-runtime-policy.kubewarden.io/opt-out
# Kata classes: judged by a copy of examples/cluster-admission-policy.yaml
# with README.md's settings for kata-deploy 4.x's classes ("Choosing among
# Kata classes"), and by that policy alone.
CLASSES_NS=kata-classes
# Rolling out namespace by namespace: examples/cluster-admission-policy-rollout.yaml
# alone judges these two, once README.md's label moves the first to protect.
ROLLOUT_ON=rollout-shop
ROLLOUT_OFF=rollout-bank
# README.md's smoke test ("Verify") runs in the namespace it creates,
# judged by examples/cluster-admission-policy.yaml alone, as in README.md.
readme_cmd "kubectl create namespace "
SMOKE=${CMD##* }
for ns in kubewarden $TENANT $BYHAND $MANDATORY $OPTOUT $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF; do
  k create namespace $ns >/dev/null
done
for ns in default kube-system kubewarden $TENANT $BYHAND $MANDATORY $OPTOUT $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF; do
  k -n $ns create serviceaccount default >/dev/null 2>&1 || true
done

echo "# manifests: what users apply, through the API server with Kubewarden's CRDs"
# kubectl apply --dry-run=server --validate=strict: the server validates and
# defaults each object as it would store it (an unknown field is an error, a
# value the CRD's schema does not allow is refused) and stores nothing.
strict() { k apply --dry-run=server --validate=strict -f "$1" 2>&1; }
if [[ -z $CRDS ]]; then
  echo "SKIP manifests against Kubewarden's CRDs: $CRDS_MISSING"
else
  # Every manifest in examples/: the ClusterAdmissionPolicies and
  # AdmissionPolicies, rbac.yaml, the RuntimeClass, and whatever else
  # comes. Each must be accepted, without a warning.
  checked=" "
  policies=0
  for f in examples/*.yaml examples/*.yml; do
    [[ -f $f ]] || continue
    if ! objs=$(yaml_objects "$f" 2>&1) || [[ -z $objs ]]; then
      fail "$f: not read as Kubernetes objects: ${objs//$'\n'/ }"
      continue
    fi
    checked+="$f "
    policies=$((policies + $(jq -s '[.[] | select(.kind | test("^(Cluster)?AdmissionPolicy(Group)?$"))] | length' <<<"$objs")))
    for ns in $(jq -r '.metadata.namespace // empty' <<<"$objs" | sort -u); do
      k get namespace "$ns" >/dev/null 2>&1 || k create namespace "$ns" >/dev/null
    done
    if ! out=$(strict "$f"); then
      fail "$f: refused by the API server: ${out//$'\n'/ }"
    elif [[ $out == *Warning:* ]]; then
      fail "$f: accepted with a warning: ${out//$'\n'/ }"
    else
      pass "$f: accepted: ${out//$'\n'/; }"
    fi
  done
  for f in examples/rbac.yaml examples/runtimeclass-kata-qemu-runtime-rs.yaml examples/policy-server.yaml; do
    [[ $checked == *" $f "* ]] || fail "$f: not found, or not Kubernetes objects"
  done
  ((policies > 0)) || fail "examples/: no ClusterAdmissionPolicy or AdmissionPolicy found"

  # What `kwctl scaffold manifest` writes from the annotated module
  # (`make annotated-policy.wasm` is the same annotation) with the settings
  # of policy-settings.json, without and with the contextAwareResources the
  # metadata asks for (README, "Install", step 4). Accepted, and the
  # settings stored as policy-settings.json has them.
  for extra in "" --allow-context-aware; do
    what="kwctl scaffold manifest --type ClusterAdmissionPolicy${extra:+ $extra} --settings-path policy-settings.json"
    file=$D/scaffold${extra}.yaml
    if ! "$KWCTL" scaffold manifest --type ClusterAdmissionPolicy ${extra:+"$extra"} --settings-path policy-settings.json \
      "$POLICY_FILE" >"$file" 2>"$D/scaffold.log"; then
      fail "$what: kwctl failed: $(grep -v WARN "$D/scaffold.log" | tail -1)"
      continue
    fi
    if ! out=$(strict "$file"); then
      fail "$what: refused by the API server: ${out//$'\n'/ }"
    elif [[ $out == *Warning:* ]]; then
      fail "$what: accepted with a warning: ${out//$'\n'/ }"
    elif [[ $(k create --dry-run=server -o json -f "$file" | jq --slurpfile s policy-settings.json '.spec.settings == $s[0]') != true ]]; then
      fail "$what: accepted, but the settings stored differ from policy-settings.json: $(k create --dry-run=server -o json -f "$file" | jq -c .spec.settings)"
    else
      pass "$what: accepted ($(jq -r '.spec.contextAwareResources // [] | length' < <(yaml_objects "$file")) contextAwareResources), the settings stored as in policy-settings.json: $out"
    fi
  done

  # The check can fail: copies of examples/cluster-admission-policy.yaml,
  # each with one fault, must be refused in the server's words.
  refused() { # WHAT JQ_EDIT WORDS
    local out
    yaml_objects examples/cluster-admission-policy.yaml | jq "$2" >"$D/faulty.json"
    if out=$(strict "$D/faulty.json"); then
      fail "a copy with $1: accepted: $out"
    elif [[ $out != *"$3"* ]]; then
      fail "a copy with $1: refused, but without '$3': $out"
    else
      pass "a copy with $1: refused: ${out//"$D/"/}"
    fi
  }
  refused "one unknown field (spec.timeoutSecond)" '.spec.timeoutSecond = 10' \
    'strict decoding error: unknown field "spec.timeoutSecond"'
  refused "mode outside protect/monitor" '.spec.mode = "enforce"' 'spec.mode: Unsupported value: "enforce"'
  refused "a contextAwareResources entry without kind" '.spec.contextAwareResources[0] |= del(.kind)' \
    'spec.contextAwareResources[0].kind: Required value'
fi
# The kata RuntimeClass is examples/runtimeclass-kata-qemu-runtime-rs.yaml,
# kata-deploy 4.1.0's class of its default shim: its handler, its overhead,
# and both node labels kata-deploy puts on a node once Kata runs there,
# which its nodeSelector selects. The scenarios assign the same class under
# the name kata (what runtimeClasses.createDefault=true makes), so that
# each check reads one short name: use_policy sets runtimeClassName to
# $SUITE_CLASS where an example names the example class. The install path
# (install.sh) runs the examples as written.
EXAMPLE_CLASS_FILE=examples/runtimeclass-kata-qemu-runtime-rs.yaml
EXAMPLE_CLASS=$(yaml_objects $EXAMPLE_CLASS_FILE | jq -c 'select(.kind == "RuntimeClass")')
[[ $(jq -r .metadata.name <<<"$EXAMPLE_CLASS") == kata-qemu-runtime-rs ]] || die "$EXAMPLE_CLASS_FILE: no RuntimeClass kata-qemu-runtime-rs"
KATA_CLASS=$(jq -c '.metadata.name = "kata"' <<<"$EXAMPLE_CLASS")
SUITE_CLASS=kata
KATA_HANDLER=$(jq -r .handler <<<"$KATA_CLASS")
KATA_LABELS='"katacontainers.io/kata-runtime":"true","kata-deploy.katacontainers.io/default":"true"'
[[ $(jq -cS .scheduling.nodeSelector <<<"$KATA_CLASS") == "$(jq -cS . <<<"{$KATA_LABELS}")" ]] ||
  die "$EXAMPLE_CLASS_FILE selects $(jq -c .scheduling.nodeSelector <<<"$KATA_CLASS"), not kata-deploy 4.x's {$KATA_LABELS}"
# What the RuntimeClass admission merges into a pod that uses the class
# (overhead, then the two labels of its nodeSelector), as kata-deploy 4.x's
# qemu classes have it: the policy must have predicted it.
KATA_MERGE='[{"cpu":"250m","memory":"320Mi"},"true","true"]'
merge_of() { jq -c '[.spec.overhead, .spec.nodeSelector["katacontainers.io/kata-runtime"], .spec.nodeSelector["kata-deploy.katacontainers.io/default"]]' <<<"$1"; }
ZONE_A='"topology.kubernetes.io/zone":"eu-west-1a","topology.kubernetes.io/region":"eu-west-1"'
ZONE_B='"topology.kubernetes.io/zone":"eu-west-1b","topology.kubernetes.io/region":"eu-west-1"'
SMALL='{"cpu":"8","memory":"32Gi","pods":"110"}'
# status.runtimeHandlers as containerd 2 publishes them through the kubelet
# (Kubernetes >= 1.30): the default handler (""), runc, and where kata-deploy
# configured Kata its shims' handlers: kata-qemu, and the class's
# kata-qemu-runtime-rs (a name that only starts like another must not do).
HF='{"recursiveReadOnlyMounts":true,"userNamespaces":true}'
KATA_HANDLERS="[{\"name\":\"\",\"features\":$HF},{\"name\":\"kata-qemu\",\"features\":$HF},{\"name\":\"$KATA_HANDLER\",\"features\":$HF},{\"name\":\"runc\",\"features\":$HF}]"
RUNC_HANDLERS="[{\"name\":\"\",\"features\":$HF},{\"name\":\"runc\",\"features\":$HF}]"
node worker-1 "{$KATA_LABELS,$ZONE_A}" "$SMALL" '[]' "$KATA_HANDLERS"
node worker-2 "{$KATA_LABELS,$ZONE_A}" "$SMALL" '[{"key":"dedicated","value":"db","effect":"NoSchedule"}]' "$KATA_HANDLERS"
node master "{\"node-role.kubernetes.io/master\":\"\",$ZONE_A}" '{"cpu":"4","memory":"16Gi","pods":"110"}' \
  '[{"key":"node-role.kubernetes.io/master","effect":"NoSchedule"}]' "$RUNC_HANDLERS"
node worker-3 "{$ZONE_B,\"example.com/rack\":\"r1\"}" '{"cpu":"16","memory":"64Gi","pods":"110","nvidia.com/pgpu":"4"}' \
  '[]' "$RUNC_HANDLERS"

k apply -f $EXAMPLE_CLASS_FILE >/dev/null
k apply -f - <<<"$KATA_CLASS" >/dev/null
k apply -f - >/dev/null <<'EOF'
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: gvisor}
handler: runsc
---
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: runc}
handler: runc
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal-b}
provisioner: ebs.csi.example.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
  - matchLabelExpressions: [{key: topology.kubernetes.io/zone, values: [eu-west-1b]}]
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: manual}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
EOF
# A claim bound to a disk in eu-west-1b (bound as the PV controller would
# write it), and an unbound claim of the zone-b class, in both namespaces.
for ns in $TENANT $BYHAND; do
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk-b-$ns, labels: {topology.kubernetes.io/zone: eu-west-1b}}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  claimRef: {namespace: $ns, name: data-b}
  csi: {driver: ebs.csi.example.com, volumeHandle: vol-$ns}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1b]}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-b
  namespace: $ns
  annotations: {pv.kubernetes.io/bind-completed: "yes"}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  volumeName: disk-b-$ns
  resources: {requests: {storage: 10Gi}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: scratch-b, namespace: $ns}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: zonal-b
  resources: {requests: {storage: 1Gi}}
EOF
  uid=$(k -n $ns get pvc data-b -o jsonpath='{.metadata.uid}')
  k patch pv disk-b-$ns --type=merge -p "{\"spec\":{\"claimRef\":{\"uid\":\"$uid\"}}}" >/dev/null
  k patch pv disk-b-$ns --subresource=status --type=merge -p '{"status":{"phase":"Bound"}}' >/dev/null
  k -n $ns patch pvc data-b --subresource=status --type=merge \
    -p '{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"10Gi"}}}' >/dev/null
done

echo "# README.md's install commands, as it gives them: step 3, and the Kata-mandatory label"
# policy-server's identity: the ServiceAccount examples/policy-server.yaml
# makes in Kubewarden's namespace, the one its PolicyServer runs as, which
# examples/rbac.yaml binds and the example policies name in their settings
# (policyServerServiceAccount). With the CRDs the whole file goes in (the
# PolicyServer is stored; no controller deploys it: the suite's
# policy-server plays its part), else its ServiceAccount alone.
PS_OBJECTS=$(yaml_objects examples/policy-server.yaml)
PS_NAME=$(jq -r 'select(.kind == "PolicyServer") | .metadata.name' <<<"$PS_OBJECTS")
PS_SA=$(jq -r 'select(.kind == "PolicyServer") | .spec.serviceAccountName // empty' <<<"$PS_OBJECTS")
[[ -n $PS_SA && $(jq -r --arg sa "$PS_SA" 'select(.kind == "ServiceAccount" and .metadata.name == $sa) | .metadata.namespace' <<<"$PS_OBJECTS") == "$KW_NAMESPACE" ]] ||
  die "examples/policy-server.yaml: no ServiceAccount '$PS_SA' in $KW_NAMESPACE for its PolicyServer '$PS_NAME'"
# Both files go in by README.md's commands (step 3). Its third,
# `kubectl -n kubewarden rollout status`, waits for the Deployment the
# Kubewarden controller makes of the PolicyServer: not run, there is no
# controller.
for f in examples/policy-server.yaml examples/rbac.yaml; do
  readme_cmd "kubectl apply -f $f"
  if [[ -z $CRDS && $f == examples/policy-server.yaml ]]; then
    echo "SKIP README.md's \`$CMD\`: $CRDS_MISSING (its ServiceAccount alone goes in)"
    jq 'select(.kind == "ServiceAccount")' <<<"$PS_OBJECTS" | k apply -f - >/dev/null
    continue
  fi
  readme_run "$CMD"
  if ((RC != 0)) || [[ $OUT == *Warning:* ]]; then
    fail "README.md's \`$CMD\`: exit $RC: $(one_line "$OUT")"
  else
    pass "README.md's \`$CMD\`: $(one_line "$OUT")"
  fi
done
PS_USER=system:serviceaccount:$KW_NAMESPACE:$PS_SA
# The Kata-mandatory namespace is labelled by README.md's command
# ("Kata-mandatory namespaces"), for the suite's namespace instead of its
# tenant-a, and listed by the next one: the label must be the one the
# example's namespaceSelector selects (the Kata-mandatory checks below).
readme_cmd "kubectl label namespace " "kata-mandatory"
[[ $CMD == *" tenant-a "* ]] || die "README.md: \`$CMD\` no longer labels tenant-a, the namespace the suite replaces by its own"
readme_run "${CMD/ tenant-a / $MANDATORY }"
labelled=$RC:$(one_line "$OUT")
readme_cmd "kubectl get namespaces -l "
readme_run "$CMD"
listed=$(awk 'NR > 1 {print $1}' < <(printf '%s' "$OUT") | sort | tr '\n' ' ')
if [[ $labelled == "0:namespace/$MANDATORY labeled" && $RC == 0 && $listed == "$MANDATORY " ]]; then
  pass "README.md's \`kubectl label namespace\` labels $MANDATORY ($labelled), and \`$CMD\` lists it alone"
else
  fail "README.md's \`kubectl label namespace\` for $MANDATORY: $labelled; \`$CMD\`: exit $RC: $(one_line "$OUT")"
fi
TOKEN=$(k -n "$KW_NAMESPACE" create token "$PS_SA" --duration 2h)
kubeconfig "$D/policy-server.kubeconfig" "$PS_SA" "{token: $TOKEN}"
# The policies, each created in the API server and read back (use_policy);
# policy-server's policies.yml (both, one policy-server) and each webhook
# configuration are made from the stored objects, by the controller's rules.
# - examples/cluster-admission-policy-kata-mandatory.yaml, only its module
#   changed (this checkout's): its own webhook, on the namespaces labelled
#   $MANDATORY_LABEL=true ($MANDATORY).
# - examples/cluster-admission-policy.yaml, its module changed, $BYHAND,
#   $MANDATORY and $CLASSES_NS left out, and settings of the suite's own: the restriction of
#   the classes a pod names itself on, gvisor allowed (SUITE_SETTINGS).
#   $MANDATORY is left out so that
#   there the Kata-mandatory policy alone decides: the API server calls
#   mutating webhooks in the order of their configurations' names, and this
#   one, first, would refuse a runc pod in its own words, and give a plain
#   pod Kata before the other saw it. $OPTOUT is left out too: there the
#   opt-out copy alone decides.
# - The opt-out copy: examples/cluster-admission-policy.yaml with its
#   commented objectSelector block uncommented, as a user would, and another
#   name (kata-runtime-opt-out), judging $OPTOUT only: every other namespace
#   the suite uses left out ($SMOKE too, which the suite creates later).
SUITE_SETTINGS='{"restrictRuntimeClasses": true, "allowedRuntimeClasses": ["gvisor"]}'
use_policy examples/cluster-admission-policy-kata-mandatory.yaml '{}'
MANDATORY_CAP=$CAP
MANDATORY_ID=$POLICY_ID
OPTOUT_FILE=$D/cluster-admission-policy-opt-out.yaml
awk '
  block && /^  #   / { sub(/^  # /, "  "); print; next }
  { block = 0 }
  $0 == "  # objectSelector:" { block = 1; print "  objectSelector:"; next }
  { print }' examples/cluster-admission-policy.yaml |
  sed 's/^  name: kata-runtime$/  name: kata-runtime-opt-out/' >"$OPTOUT_FILE"
# The copy differs from the example in its name and the uncommented
# selector alone, and the selector leaves out the labelled pods.
copy_diff=$(jq -cn --argjson a "$(yaml_objects examples/cluster-admission-policy.yaml)" \
  --argjson b "$(yaml_objects "$OPTOUT_FILE")" --arg l "$OPTOUT_LABEL" '
  if ($b | del(.spec.objectSelector) | .metadata.name = $a.metadata.name) != $a then "other changes"
  elif $b.spec.objectSelector != {matchExpressions: [{key: $l, operator: "NotIn", values: ["true"]}]}
  then "objectSelector \($b.spec.objectSelector)" else "" end')
if [[ $copy_diff == '""' ]]; then
  pass "opt-out: examples/cluster-admission-policy.yaml's commented objectSelector, uncommented, is $OPTOUT_LABEL NotIn [\"true\"], and the only change"
else
  fail "opt-out: the copy with the commented objectSelector uncommented: $copy_diff"
fi
use_policy "$OPTOUT_FILE" '{}' $TENANT $BYHAND $MANDATORY $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF "$SMOKE"
OPTOUT_CAP=$CAP
OPTOUT_ID=$POLICY_ID
# - The classes copy: examples/cluster-admission-policy.yaml named
#   kata-runtime-classes, with the settings README.md gives for kata-deploy
#   4.x's classes in place of its runtimeClassName, judging $CLASSES_NS only.
CLASSES_FILE=$D/cluster-admission-policy-classes.json
awk '/^### Choosing among Kata classes/ {on = 1} on && /^```yaml$/ {block = 1; next} block && /^```$/ {exit} block {print "  " $0}' "$(readme_guide)" |
  { printf 'apiVersion: example.com/v1\nkind: Snippet\nmetadata: {name: readme}\nspec:\n'; cat; } >"$D/classes-snippet.yaml"
CLASSES_SETTINGS=$(yaml_objects "$D/classes-snippet.yaml" | jq -c '.spec.settings // empty')
[[ $(jq -r '.fallbackRuntimeClasses | length' <<<"${CLASSES_SETTINGS:-null}" 2>/dev/null) -gt 0 ]] ||
  die "the guide, \"Choosing among Kata classes\": no settings block with fallbackRuntimeClasses ($D/classes-snippet.yaml)"
yaml_objects examples/cluster-admission-policy.yaml | jq -c --argjson s "$CLASSES_SETTINGS" --arg ns $CLASSES_NS '
  .metadata.name = "kata-runtime-classes" | .spec.settings += $s
  | .spec.namespaceSelector.matchExpressions += [{key: "kubernetes.io/metadata.name", operator: "In", values: [$ns]}]' >"$CLASSES_FILE"
use_policy "$CLASSES_FILE" '{}'
CLASSES_CAP=$CAP
CLASSES_ID=$POLICY_ID
use_policy examples/cluster-admission-policy.yaml "$SUITE_SETTINGS" $BYHAND $MANDATORY $OPTOUT $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF
SETTINGS=$(jq -c '.spec.settings // {}' <<<"$CAP")
# With annotateDecision (the examples set it), each pod the policy admits
# carries its decision under this key.
DECISION_KEY=kata-runtime-policy.kubewarden.io/decision
ANNOTATES=$(jq -r '.annotateDecision // false' <<<"$SETTINGS")
start_policy_server
register_webhook "$MANDATORY_CAP"
MANDATORY_WEBHOOK=$WEBHOOK
MANDATORY_CONFIG=$WEBHOOK_CONFIG
register_webhook "$OPTOUT_CAP"
OPTOUT_WEBHOOK=$WEBHOOK
OPTOUT_CONFIG=$WEBHOOK_CONFIG
register_webhook "$CLASSES_CAP"
CLASSES_WEBHOOK=$WEBHOOK
CLASSES_CONFIG=$WEBHOOK_CONFIG
register_webhook
log "cluster ready after $(($(date +%s) - T0)) s"

# ---------------------------------------------------------------- checks

# manifest_json FILE: the manifest as JSON, without the namespace kubectl adds.
manifest_json() { k create --dry-run=client -o json -f "$1" | jq 'del(.metadata.namespace)'; }
# create_pod NS FILE [jq edit] -> kubectl create's stderr (warnings) on stdout
create_pod() {
  local ns=$1 file=$2 edit=${3:-.}
  manifest_json "$file" | jq -c "$edit" | k -n "$ns" create -f - 2>&1 >/dev/null || true
}
get() { k -n "$1" get pod "$2" -o json; }
# fresh_pod NAME [jq edit]: a plain pod under a new name, kubectl's output on stdout
fresh_pod() {
  manifest_json tests/cluster/pods/plain.yaml | jq -c ".metadata.name = \"$1\" | ${2:-.}" |
    k -n $TENANT create -f - 2>&1 >/dev/null || true
}
# class_of NAME: the pod's runtimeClassName, "none" without one, "missing"
# when the pod was not created.
class_of() {
  local pod
  pod=$(k -n $TENANT get pod "$1" -o json 2>/dev/null) || {
    echo missing
    return
  }
  jq -r '.spec.runtimeClassName // "none"' <<<"$pod"
}

# placed NS NAME: the node the scheduler bound the pod to, "unschedulable:
# <message>", or for a pod waiting on its volumes the selected node.
placed() {
  local ns=$1 name=$2 end=$(($(date +%s) + 30)) pod
  while (($(date +%s) < end)); do
    pod=$(get "$ns" "$name")
    local node
    node=$(jq -r '.spec.nodeName // empty' <<<"$pod")
    if [[ -n $node ]]; then
      echo "$node"
      return
    fi
    local cond
    cond=$(jq -r '.status.conditions[]? | select(.type=="PodScheduled" and .status=="False") | "\(.reason): \(.message)"' <<<"$pod")
    if [[ $cond == Unschedulable* ]]; then
      echo "unschedulable: ${cond#Unschedulable: }"
      return
    fi
    local claim
    claim=$(jq -r '.spec.volumes[]?.persistentVolumeClaim.claimName // empty' <<<"$pod" | head -1)
    if [[ -n $claim ]]; then
      local selected
      selected=$(k -n "$ns" get pvc "$claim" -o jsonpath='{.metadata.annotations.volume\.kubernetes\.io/selected-node}' 2>/dev/null || true)
      [[ -z $selected ]] || {
        echo "$selected"
        return
      }
    fi
    sleep 0.3
  done
  echo "pending"
}
# has_warning OUT WANT: OUT contains WANT, or, for a WANT that starts with
# "Warning: ", has it as a whole line.
has_warning() {
  if [[ $2 == "Warning: "* ]]; then
    grep -qxF -- "$2" <<<"$1"
  else
    [[ $1 == *"$2"* ]]
  fi
}
is_kata() { [[ $(k get node "$1" -o jsonpath='{.metadata.labels.katacontainers\.io/kata-runtime}' 2>/dev/null) == true ]]; }

# audit_of NAME [NAMESPACE]: the audit annotations of the pod's creation in
# NAMESPACE, $TENANT when not given: the last create of the pod itself (not
# a subresource such as the scheduler's binding, not a dry run) that
# completed. The log is written asynchronously: waits up to 5 s.
audit_of() {
  local a=""
  for _ in $(seq 1 25); do
    a=$(jq -c --arg n "$1" --arg ns "${2:-$TENANT}" 'select(.verb == "create" and .objectRef.resource == "pods"
      and .objectRef.subresource == null and .objectRef.namespace == $ns and .objectRef.name == $n
      and .stage == "ResponseComplete" and (.requestURI | contains("dryRun=") | not)) | .annotations' "$D/audit.log" | tail -1)
    [[ -z $a ]] || break
    sleep 0.2
  done
  echo "${a:-null}"
}

# decision_note POD_JSON mutated|unchanged WARNING_PART: with annotateDecision,
# the pod's decision annotation, checked against the outcome and the warning:
# "mutated: " and the warning, or the assignment's words when there is none
# (for a gated pod, WARNING_PART is the whole reason: the explanation, "; "
# and the gate note, which kubectl shows as a warning of its own);
# "unchanged: " and the reason, which is the warning without its leading
# "kata runtime not assigned: " (a whole warning line), or has the part. On
# stdout ", annotated" (nothing without annotateDecision); a failure's
# description and status 1 otherwise.
decision_note() {
  local note want=${3#Warning: } expected=""
  [[ $2 == mutated ]] || want=${want#kata runtime not assigned: }
  note=$(jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"' <<<"$1")
  if [[ $ANNOTATES != true ]]; then
    [[ $note == none ]] || { echo "annotated '$note' without annotateDecision"; return 1; }
    return 0
  fi
  if [[ $2 == mutated ]]; then
    expected="mutated: ${want:-runtimeClassName \"kata\" assigned: a kata node can run this pod}"
  elif [[ $3 == "Warning: kata runtime not assigned: "* && $want != *... ]]; then
    expected="unchanged: $want"
  elif [[ $note == "unchanged: "* && $note == *"$want"* ]]; then
    expected=$note
  fi
  if [[ $note != "${expected:-unchanged: …$want…}" ]]; then
    echo "$DECISION_KEY is '$note', not '${expected:-unchanged: …$want…}'"
    return 1
  fi
  echo ", annotated"
}

# scenario FILE mutated [WARNING_PART]
# scenario FILE unchanged WARNING_PART [confirm SCHEDULER_WORDS]
# scenario FILE unchanged WARNING_PART [binds NODE]
#   WARNING_PART: a part of kubectl's output, or, when it starts with
#   "Warning: ", a whole line of it. A mutated pod without one must come
#   with no warning at all. "Maybe: Warning: …": that line or no warning at
#   all (the policy reads the candidates in the order of policy-server's
#   cache, which follows no rule, and names the broken ones met before one
#   that can start the pod).
#   confirm: the same pod, runtimeClassName set by hand where the webhook
#   does not look, must be refused by the API server or be unschedulable,
#   and the answer must contain SCHEDULER_WORDS (the same reason).
#   binds: the same pod by hand is bound to NODE: the scheduler alone would
#   have picked the node the policy turned down (the kubelet's gates).
scenario() {
  local file=tests/cluster/pods/$1.yaml expect=$2 want=${3:-} confirm=${4:-} words=${5:-}
  local name=$1 out pod rc where by_hand hand_where note
  out=$(create_pod $TENANT "$file")
  if [[ $want == "Maybe: "* ]]; then
    want=${want#Maybe: }
    [[ $out == *Warning:* ]] || want=""
  fi
  pod=$(get $TENANT "$name" 2>/dev/null) || {
    fail "$name: not created: $out"
    return
  }
  if ! note=$(decision_note "$pod" "$expect" "$want"); then
    fail "$name: $note"
    return
  fi
  rc=$(jq -r '.spec.runtimeClassName // ""' <<<"$pod")
  where=$(placed $TENANT "$name")
  if [[ $expect == mutated ]]; then
    if [[ $rc != kata ]]; then
      fail "$name: expected the kata class, got '$rc' ($out)"
      return
    fi
    # The RuntimeClass admission's merge, as the policy predicted it.
    local merged
    merged=$(merge_of "$pod")
    [[ $merged == "$KATA_MERGE" ]] || {
      fail "$name: RuntimeClass merge not as predicted: $merged"
      return
    }
    if ! is_kata "$where"; then
      fail "$name: mutated but placed on '$where', not a kata node"
      return
    fi
    if [[ -z $want && $out == *Warning:* ]]; then
      fail "$name: mutated, but with a warning: $out"
      return
    fi
    if ! has_warning "$out" "$want"; then
      fail "$name: mutated, but kubectl's output lacks '$want': $out"
      return
    fi
    pass "$name: mutated, overhead and node selector merged, placed on kata node $where${want:+, with the warning}$note"
  else
    if [[ -n $rc ]]; then
      fail "$name: expected no class, got '$rc'"
      return
    fi
    if ! has_warning "$out" "$want"; then
      fail "$name: warning lacks '$want': $out"
      return
    fi
    local detail="left alone with the warning$note, placed: $where"
    if [[ $confirm == binds ]]; then
      create_pod $BYHAND "$file" '.spec.runtimeClassName = "kata"' >/dev/null
      hand_where=$(placed $BYHAND "$name")
      if [[ $hand_where != "$words" ]]; then
        fail "$name: with the class set by hand, placed '$hand_where', not on $words"
        return
      fi
      detail+="; by hand with kata: bound to $hand_where"
    elif [[ $confirm == confirm ]]; then
      by_hand=$(create_pod $BYHAND "$file" '.spec.runtimeClassName = "kata"')
      if k -n $BYHAND get pod "$name" >/dev/null 2>&1; then
        hand_where=$(placed $BYHAND "$name")
        if [[ $hand_where != unschedulable:* || $hand_where != *"$words"* ]]; then
          fail "$name: with the class set by hand, not unschedulable for '$words': '$hand_where'"
          return
        fi
        detail+="; by hand with kata: $hand_where"
      else
        if [[ $by_hand != *"$words"* ]]; then
          fail "$name: with the class set by hand, refused without '$words': $by_hand"
          return
        fi
        detail+="; by hand with kata: refused: ${by_hand//$'\n'/ }"
      fi
    fi
    pass "$name: $detail"
  fi
}

echo "# the webhook registrations: the controller's, from each ClusterAdmissionPolicy $([[ -n $CRDS ]] && echo "as the API server stored it" || echo "as written (no CRDs)")"
# registration FILE CONFIG ID SUITE_SETTINGS [NAMESPACE...]: the webhook
# configuration CONFIG the API server holds, against what FILE says as
# written (with use_policy's expression leaving out NAMESPACE..., if any) and
# the API server's defaults for what it leaves out; then ID's entry in
# policy-server's policies.yml against FILE as written: its mode, mutating,
# contextAwareResources and settings (SUITE_SETTINGS, the suite's, merged),
# the module the suite's, every host capability.
registration() {
  local file=$1 config=$2 id=$3 suite=$4 leave served expected ps_entry want_entry
  shift 4
  leave=$(jq -cn '$ARGS.positional' --args "$@")
  served=$(k get "$config" -o json | jq -cS '.webhooks[0] | {name, admissionReviewVersions, sideEffects,
    path: (.clientConfig.url | sub("^https://[^/]*"; "")), rules, failurePolicy, matchPolicy, timeoutSeconds,
    objectSelector, namespaceSelector, matchConditions}')
  expected=$(yaml_objects "$file" | jq -cS --arg kw "$KW_NAMESPACE" --argjson leave "$leave" '
    ("clusterwide-" + .metadata.name) as $id | .spec as $s
    | {key: "kubernetes.io/metadata.name", operator: "NotIn"} as $name
    | {name: ($id + ".kubewarden.admission"), admissionReviewVersions: ["v1"], sideEffects: ($s.sideEffects // "None"),
       path: ("/validate/" + $id), rules: ($s.rules | map({scope: "*"} + .)), failurePolicy: ($s.failurePolicy // "Fail"),
       matchPolicy: ($s.matchPolicy // "Equivalent"), timeoutSeconds: ($s.timeoutSeconds // 10),
       objectSelector: ($s.objectSelector // {}), matchConditions: $s.matchConditions,
       namespaceSelector: (if $s.allowInsideAdmissionControllerNamespace then ($s.namespaceSelector // {})
         else {matchExpressions: ([$name + {values: [$kw]}] + ($s.namespaceSelector.matchExpressions // []))} end
         | if $leave == [] then . else .matchExpressions += [$name + {values: $leave}] end)}')
  if [[ $served == "$expected" ]]; then
    pass "$config: $file's $(jq -r '"rules, failurePolicy \(.failurePolicy), timeoutSeconds \(.timeoutSeconds), path \(.path), namespaceSelector \([.namespaceSelector.matchExpressions[] | "\(.key) \(.operator) \(.values)"] | join(" + "))"' <<<"$served")"
  else
    fail "$config: holds $served; $file gives $expected"
  fi
  ps_entry=$(jq -cS --arg id "$id" '.[$id] | {"module": .module, policyMode, allowedToMutate, contextAwareResources, settings, hostCapabilities}' "$D/policies.yml")
  # (use_policy's class: the suite's name for the example class.)
  want_entry=$(yaml_objects "$file" | jq -cS --arg wasm "file://$POLICY_FILE" --argjson suite "$suite" --arg class "${SUITE_CLASS:-}" '
    (if $class != "" and .spec.settings.runtimeClassName == "kata-qemu-runtime-rs"
     then .spec.settings.runtimeClassName = $class else . end) | .spec as $s
    | {"module": $wasm, policyMode: ($s.mode // "protect"), allowedToMutate: ($s.mutating // false),
       contextAwareResources: $s.contextAwareResources, settings: ($s.settings + $suite), hostCapabilities: ["*"]}')
  if [[ $ps_entry == "$want_entry" ]]; then
    pass "policies.yml: $id, $(jq -r '"\(.policyMode), allowedToMutate \(.allowedToMutate), \(.contextAwareResources | length) contextAwareResources, \(.settings | length) settings"' <<<"$ps_entry") as $file has them$([[ $suite == '{}' ]] || echo " (and the suite's $suite)"), every host capability"
  else
    fail "policies.yml: $id: $ps_entry; $file gives $want_entry"
  fi
}
registration examples/cluster-admission-policy.yaml "$WEBHOOK_CONFIG" "$POLICY_ID" \
  "$SUITE_SETTINGS" $BYHAND $MANDATORY $OPTOUT $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF
registration examples/cluster-admission-policy-kata-mandatory.yaml "$MANDATORY_CONFIG" "$MANDATORY_ID" '{}'
registration "$OPTOUT_FILE" "$OPTOUT_CONFIG" "$OPTOUT_ID" '{}' $TENANT $BYHAND $MANDATORY $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF "$SMOKE"
registration "$CLASSES_FILE" "$CLASSES_CONFIG" "$CLASSES_ID" '{}'
served=$(jq -c 'keys' "$D/policies.yml")
[[ $served == "$(jq -cn '$ARGS.positional | sort' --args "$POLICY_ID" "$MANDATORY_ID" "$OPTOUT_ID" "$CLASSES_ID")" ]] && pass "policies.yml: one policy-server serves $served" ||
  fail "policies.yml: serves $served, not $POLICY_ID, $MANDATORY_ID, $OPTOUT_ID and $CLASSES_ID"
# Through the API server: a plain pod is mutated in $TENANT and in
# $MANDATORY (the label), and never seen in Kubewarden's namespace (the
# controller's exclusion) or in kube-system (the example's; unlabelled).
# Server-side dry runs: nothing stored, nothing placed.
# dry_class NS: the class; what the API server said (its warnings or
# error, the decision annotation) goes to $D/dry-why, for a failure.
dry_class() {
  local out class
  out=$(manifest_json tests/cluster/pods/plain.yaml | k -n "$1" create --dry-run=server -o json -f - 2>"$D/dry-class.err") || true
  class=$(jq -r '.spec.runtimeClassName // "none"' <<<"$out" 2>/dev/null) || class=""
  echo "$1: $(jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "no decision"' <<<"$out" 2>/dev/null) $(tr '\n' ' ' <"$D/dry-class.err")" >>"$D/dry-why"
  echo "${class:-none}"
}
seen="$TENANT: $(dry_class $TENANT), $MANDATORY: $(dry_class $MANDATORY), $OPTOUT: $(dry_class $OPTOUT), $KW_NAMESPACE: $(dry_class "$KW_NAMESPACE"), kube-system: $(dry_class kube-system)"
if [[ $seen == "$TENANT: kata, $MANDATORY: kata, $OPTOUT: kata, $KW_NAMESPACE: none, kube-system: none" ]]; then
  pass "namespaceSelector through the API server: a plain pod's class in $seen"
else
  fail "namespaceSelector through the API server: a plain pod's class in $seen ($(tr '\n' ';' <"$D/dry-why"))"
fi

echo "# RBAC: examples/rbac.yaml, what policy-server's account may do"
# Exactly the verbs the policy's host calls use: lists come from a watch-fed
# cache (list and watch), reads by name are one GET, the access questions
# SubjectAccessReviews. Every scenario below runs with these rules alone.
may() { # VERB RESOURCE [kubectl flag]: yes or no (each query below is split into these)
  k auth can-i "$1" "$2" --as="$PS_USER" ${3:+"$3"} 2>/dev/null || true
}
missing=() extra=()
for q in "get nodes" "list nodes" "watch nodes" "get runtimeclasses.node.k8s.io" \
  "get persistentvolumeclaims -A" "get persistentvolumes" "list persistentvolumes" "watch persistentvolumes" \
  "get storageclasses.storage.k8s.io" "list storageclasses.storage.k8s.io" "watch storageclasses.storage.k8s.io" \
  "list pods -A" "watch pods -A" "list namespaces" "watch namespaces" \
  "create subjectaccessreviews.authorization.k8s.io"; do
  [[ $(may $q) == yes ]] || missing+=("$q")
done
for q in "list runtimeclasses.node.k8s.io" "watch runtimeclasses.node.k8s.io" "list persistentvolumeclaims -A" \
  "watch persistentvolumeclaims -A" "update nodes" "patch nodes" "get pods -A" "get secrets -A" \
  "get namespaces" "create pods -A"; do
  [[ $(may $q) == no ]] || extra+=("$q")
done
if ((${#missing[@]} == 0 && ${#extra[@]} == 0)); then
  pass "RBAC: $PS_USER may get/list/watch nodes, persistentvolumes and storageclasses, get runtimeclasses and persistentvolumeclaims, list/watch pods and namespaces, create subjectaccessreviews; nothing else asked (list/watch runtimeclasses and claims, get pods and namespaces, secrets, writes) is granted"
else
  fail "RBAC: $PS_USER lacks: ${missing[*]:-nothing}; has, and should not: ${extra[*]:-nothing}"
fi
# Each example policy runs on examples/policy-server.yaml's PolicyServer, and
# names its account in policyServerServiceAccount (the policy's access
# questions are about that account); rbac.yaml binds the same account.
named=$(for f in examples/cluster-admission-policy*.yaml; do
  yaml_objects "$f" | jq -r --arg f "$f" 'select(.kind == "ClusterAdmissionPolicy")
    | "\($f): policyServer \(.spec.policyServer // "default"), policyServerServiceAccount \(.spec.settings.policyServerServiceAccount // "(default)")"'
done)
bound=$(yaml_objects examples/rbac.yaml | jq -r 'select(.kind == "ClusterRoleBinding") | .subjects[] | "system:serviceaccount:\(.namespace):\(.name)"')
if [[ $(grep -cv "policyServer $PS_NAME, policyServerServiceAccount $PS_USER\$" <<<"$named") == 0 && $bound == "$PS_USER" ]]; then
  pass "examples: $(wc -l <<<"$named") policies on PolicyServer $PS_NAME, settings naming $PS_USER, the account rbac.yaml binds"
else
  fail "examples: PolicyServer $PS_NAME runs as $PS_USER, rbac.yaml binds $bound; ${named//$'\n'/; }"
fi

echo "# scenarios: each pod through the real webhook, placed by the real scheduler"
scenario plain mutated
scenario seed unchanged "didn't match Pod's node affinity/selector" confirm "didn't match Pod's node affinity/selector"
scenario zone-b unchanged "didn't match Pod's node affinity/selector" confirm "didn't match Pod's node affinity/selector"
scenario selector-conflict unchanged 'requires nodeSelector katacontainers.io/kata-runtime=true' confirm 'conflict: runtimeClass.scheduling.nodeSelector'
scenario taint unchanged "untolerated taint {dedicated: db}" confirm "untolerated taint"
scenario overhead unchanged "Insufficient cpu" confirm "Insufficient cpu"
# kata-deploy 4.x's qemu overhead is 320Mi: a pod that fits a kata node's
# 32Gi with 160Mi more (3.x's figure) does not with 320Mi.
scenario overhead-memory unchanged "Insufficient memory" confirm "Insufficient memory"
scenario gpu unchanged "Insufficient nvidia.com/pgpu" confirm "Insufficient nvidia.com/pgpu"
scenario spread unchanged "didn't match pod topology spread constraints (missing required label)" confirm "topology spread constraints (missing required label)"
scenario zonal-disk unchanged "didn't match PersistentVolume's node affinity" confirm "didn't match PersistentVolume's node affinity"
scenario wffc unchanged "didn't find available persistent volumes to bind" confirm "didn't find available persistent volumes to bind"
scenario node-name mutated
scenario ds-worker mutated
scenario ds-master unchanged 'the pod can only run on node "master"' confirm "didn't match Pod's node affinity/selector"
scenario host-network unchanged "(skipPodsUsing: hostNamespaces)"
scenario docker-agent unchanged "(skipPodsUsing: hostSockets)"
# privileged is not a default skip: a plain privileged pod (a
# Docker-in-Docker builder) gets Kata and is bound to a kata node; a
# privileged CSI node plugin still needs the host, and mountPropagation
# (a default) leaves it alone, that reason alone.
scenario privileged mutated
scenario csi-node-plugin unchanged 'Warning: kata runtime not assigned: container "node-driver" mounts hostPath volume "kubelet-dir" (/var/lib/kubelet) with mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)'
# An image volume is an OCI image the kubelet mounts on the node: not inside
# Kata's VM (imageVolumes, a default).
scenario image-volume unchanged 'Warning: kata runtime not assigned: image volume "tools" (image "registry.example.com/tools:v1"), mounted by container "agent", is an OCI image that Kata cannot mount inside its VM (skipPodsUsing: imageVolumes)'

echo "# inter-pod affinity: pods bound by spec.nodeName, then pods whose terms name them"
# bound_pod NAME NODE LABELS_JSON [ANTI_TERMS_JSON]: a pod bound to NODE, as a
# workload the scheduler placed (no kubelet runs it; the scheduler's cache
# counts it all the same).
bound_pod() {
  jq -cn --arg n "$1" --arg node "$2" --argjson l "$3" --argjson anti "${4:-null}" '
    {apiVersion: "v1", kind: "Pod", metadata: {name: $n, labels: $l},
     spec: {nodeName: $node, containers: [{name: "app", image: "registry.example.com/app:v1"}]}}
    | if $anti then .spec.affinity = {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: $anti}} else . end' |
    k -n $TENANT create -f - >/dev/null 2>&1 || fail "bound pod $1 on $2: not created"
}
bound_pod ipa-db worker-3 '{"app":"ipa-db"}'
bound_pod ipa-cache master '{"app":"ipa-cache"}'
# Keeps app=ipa-intruder, of either namespace, out of its zone (eu-west-1a).
bound_pod ipa-guard worker-1 '{"app":"ipa-guard"}' \
  '[{"labelSelector":{"matchLabels":{"app":"ipa-intruder"}},"namespaces":["tenant","by-hand"],"topologyKey":"topology.kubernetes.io/zone"}]'
# policy-server's pod cache follows the API server's watch: let it see them.
sleep 1
scenario affinity-zone-b unchanged "didn't match pod affinity rules" confirm "didn't match pod affinity rules"
scenario affinity-zone-a mutated
scenario anti-own unchanged "didn't match pod anti-affinity rules" confirm "didn't match pod anti-affinity rules"
scenario anti-existing unchanged "didn't satisfy existing pods anti-affinity rules" confirm "didn't satisfy existing pods anti-affinity rules"

audit=$(audit_of plain)
if [[ $audit == *'decision":"mutated"'* ]]; then
  pass "audit: the mutated pod's decision and reason are in the audit log: $audit"
else
  fail "audit: no decision for the plain pod: $audit"
fi

# The claim's UID comes through policy-server's field masks (they never
# touch metadata): a claim pre-bound by volumeName to a zone-a disk whose
# claimRef names it by UID gets Kata; by another UID, never.
prebound() { # NAME CLAIMREF_UID
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: $1, namespace: $TENANT}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  volumeName: disk-$1
  resources: {requests: {storage: 1Gi}}
EOF
  local uid
  uid=$(k -n $TENANT get pvc "$1" -o jsonpath='{.metadata.uid}')
  [[ $2 == own ]] || uid=$2
  k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: PersistentVolume
metadata: {name: disk-$1}
spec:
  capacity: {storage: 1Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: manual
  claimRef: {namespace: $TENANT, name: $1, uid: "$uid"}
  csi: {driver: ebs.csi.example.com, volumeHandle: vol-$1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
        - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [eu-west-1a]}]
EOF
  manifest_json tests/cluster/pods/zonal-disk.yaml |
    jq -c ".metadata.name = \"$1\" | .spec.volumes[0].persistentVolumeClaim.claimName = \"$1\"" |
    k -n $TENANT create -f - 2>&1 >/dev/null || true
}
out=$(prebound pre-own own)
[[ $(class_of pre-own) == kata ]] && pass "claim UID through the masks: pre-bound by this UID, mutated" ||
  fail "claim UID through the masks: pre-bound by this UID, class $(class_of pre-own): $out"
out=$(prebound pre-old 0b9d6e11-3c5a-4f2e-8d7b-61a2f0c3e4d5)
[[ $(class_of pre-old) == none && $out == *"pod has unbound immediate PersistentVolumeClaims"* ]] &&
  pass "claim UID through the masks: pre-bound by an old UID, left alone: $out" ||
  fail "claim UID through the masks: by an old UID, class $(class_of pre-old): $out"

# restrictRuntimeClasses, gvisor allowed: a tenant cannot name runc; the
# real API server refuses the pod with the policy's message.
out=$(fresh_pod tenant-runc '.spec.runtimeClassName = "runc"')
if [[ $(class_of tenant-runc) == missing && $out == *'runtimeClassName \"runc\" is not allowed (allowed: the configured class kata; allowedRuntimeClasses: gvisor)'* || $out == *'runtimeClassName "runc" is not allowed (allowed: the configured class kata; allowedRuntimeClasses: gvisor)'* ]]; then
  pass "allowedRuntimeClasses: runc refused by the API server: ${out//$'\n'/ }"
else
  fail "allowedRuntimeClasses: runc pod: class $(class_of tenant-runc): $out"
fi
out=$(fresh_pod tenant-gvisor '.spec.runtimeClassName = "gvisor"')
[[ $(class_of tenant-gvisor) == gvisor ]] && pass "allowedRuntimeClasses: gvisor admitted as named" ||
  fail "allowedRuntimeClasses: gvisor pod: $out"
# runtimeClassName "": the policy leaves it, the API server refuses it
# (RuntimeClass admission: "resource name may not be empty").
out=$(fresh_pod tenant-empty '.spec.runtimeClassName = ""')
if [[ $(class_of tenant-empty) == missing && ($out == *'resource name may not be empty'* || $out == *'runtimeClassName'*'Invalid value'*) ]]; then
  pass "runtimeClassName \"\": refused by the API server: ${out//$'\n'/ }"
else
  fail "runtimeClassName \"\": class $(class_of tenant-empty): $out"
fi

echo "# dynamic resource allocation: resource.k8s.io/v1 through the real API server"
# 1.36 serves resource.k8s.io/v1 by default (no --runtime-config, no feature
# gate). No DRA driver runs here and no controller makes the template's
# claims, so the scheduler never places these pods: only admission is
# checked, on the API server's answer and in its audit log.
# warning_cut TEXT: the warning the policy sends for the reason TEXT (cut to
# 255 bytes, the cut marked "..."; TEXT is ASCII).
warning_cut() {
  if ((${#1} <= 255)); then echo "$1"; else echo "${1:0:252}..."; fi
}
# dra_scenario NAME REASON: the pod is admitted unchanged, kubectl shows the
# policy's warning (REASON cut) as its only warning, and the audit log has
# the webhook's decision unchanged with REASON whole.
dra_scenario() {
  local name=$1 reason=$2 out pod warnings audit
  out=$(create_pod $TENANT "tests/cluster/pods/$name.yaml")
  pod=$(get $TENANT "$name" 2>/dev/null) || {
    fail "$name: not created: $out"
    return
  }
  if [[ $(jq -r '.spec.runtimeClassName // "none"' <<<"$pod") != none ]] ||
    [[ $(jq -c '.spec | [.overhead, .nodeSelector]' <<<"$pod") != '[null,null]' ]]; then
    fail "$name: changed: $(jq -c '.spec | {runtimeClassName, overhead, nodeSelector}' <<<"$pod")"
    return
  fi
  warnings=$(grep '^Warning: ' <<<"$out" || true)
  if [[ $warnings != "Warning: $(warning_cut "$reason")" ]]; then
    fail "$name: warnings not the policy's: $out"
    return
  fi
  audit=$(audit_of "$name")
  if [[ $(jq -r --arg w "$WEBHOOK" '.[$w + "/decision"]' <<<"$audit") != unchanged ||
    $(jq -r --arg w "$WEBHOOK" '.[$w + "/reason"]' <<<"$audit") != "$reason" ]]; then
    fail "$name: audit annotations: $audit"
    return
  fi
  pass "$name: admitted unchanged by the webhook, the warning ${#reason} bytes$( ((${#reason} <= 255)) || echo ", cut to 255"), the audit reason whole"
}
if k api-versions | grep -qx resource.k8s.io/v1; then
  k apply -f - >/dev/null <<EOF
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: nic.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "nic.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: $TENANT}
spec:
  spec:
    devices:
      requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: shared-nic, namespace: $TENANT}
spec:
  devices:
    requests: [{name: nic, exactly: {deviceClassName: nic.example.com}}]
EOF
  DRA_TAIL='asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)'
  dra_scenario dra-template \
    "kata runtime not assigned: claim \"gpu\" (ResourceClaimTemplate \"one-gpu\"), used by container \"cuda\", $DRA_TAIL"
  dra_scenario dra-shared \
    "kata runtime not assigned: claim \"nic\" (ResourceClaim \"shared-nic\"), used by container \"app\", init container \"proxy\", $DRA_TAIL; claim \"gpu\" (ResourceClaimTemplate \"one-gpu\"), used by container \"app\", $DRA_TAIL; claim \"spare\" (ResourceClaimTemplate \"one-gpu\"), used by no container, $DRA_TAIL"
else
  fail "resource.k8s.io/v1 not served by this kube-apiserver: $(k api-versions | grep resource.k8s.io | tr '\n' ' ')"
fi

echo "# Kata-mandatory namespaces: examples/cluster-admission-policy-kata-mandatory.yaml in $MANDATORY"
# Every pod created in $MANDATORY gets Kata and runs on a kata node, or the
# real API server refuses it with the policy's reason; the general policy
# never sees these pods.
# in_mandatory NAME FILE [jq edit]: FILE's pod under NAME, created in
# $MANDATORY; kubectl's output (warnings, errors) on stdout.
in_mandatory() {
  manifest_json "$2" | jq -c ".metadata.name = \"$1\" | ${3:-.}" | k -n $MANDATORY create -f - 2>&1 >/dev/null || true
}
# webhooks_called AUDIT: the mutating webhook configurations the API server
# called for the request, in order ("configuration:mutated" each), from its
# audit annotations.
webhooks_called() {
  jq -r '[to_entries[] | select(.key | startswith("mutation.webhook.admission.k8s.io/round_0_index_"))
    | .value | fromjson | "\(.configuration):\(.mutated)"] | join(" ")' <<<"$1"
}
# mandatory_refused WHAT NAME FILE EDIT MESSAGE: the API server refuses the
# pod, and kubectl's error ends with the Kata-mandatory webhook's MESSAGE,
# whole; nothing is stored; the audit log has the webhook's decision
# rejected with MESSAGE as the reason.
mandatory_refused() {
  local what=$1 name=$2 file=$3 edit=$4 msg=$5 out audit line found=""
  out=$(in_mandatory "$name" "$file" "$edit")
  if k -n $MANDATORY get pod "$name" >/dev/null 2>&1; then
    fail "$what: admitted: $(k -n $MANDATORY get pod "$name" -o json | jq -c '.spec | {runtimeClassName, nodeName}'): $out"
    return
  fi
  while IFS= read -r line; do
    [[ $line == *"admission webhook \"$MANDATORY_WEBHOOK\" denied the request: $msg" ]] && found=1
  done <<<"$out"
  if [[ -z $found ]]; then
    fail "$what: refused, but not with '$msg' from $MANDATORY_WEBHOOK: $out"
    return
  fi
  audit=$(audit_of "$name" $MANDATORY)
  if [[ $(jq -r --arg w "$MANDATORY_WEBHOOK" '.[$w + "/decision"]' <<<"$audit") != rejected ||
    $(jq -r --arg w "$MANDATORY_WEBHOOK" '.[$w + "/reason"]' <<<"$audit") != "$msg" ]]; then
    fail "$what: refused with the message, but the audit annotations are $audit"
    return
  fi
  pass "$what: refused by the API server with the policy's message, audit decision rejected: ${out//$'\n'/ }"
}
USERNS_FINDING='the pod sets hostUsers: false (a user namespace), which the Kata runtime handler does not support: the kubelet would not start it (skipPodsUsing: userNamespaces)'
mandatory_refused "hostUsers: false" mandatory-userns tests/cluster/pods/plain.yaml '.spec.hostUsers = false' \
  "kata runtime required (incompatiblePod: reject), and not assigned: $USERNS_FINDING"
# The Kata-mandatory example keeps the default skipPodsUsing, which has
# imageVolumes: an image volume pod is refused, in the words of the
# image-volume scenario above.
mandatory_refused "image volume" image-volume tests/cluster/pods/image-volume.yaml . \
  'kata runtime required (incompatiblePod: reject), and not assigned: image volume "tools" (image "registry.example.com/tools:v1"), mounted by container "agent", is an OCI image that Kata cannot mount inside its VM (skipPodsUsing: imageVolumes)'
mandatory_refused "runtimeClassName runc" mandatory-runc tests/cluster/pods/plain.yaml '.spec.runtimeClassName = "runc"' \
  'runtimeClassName "runc" is not allowed (allowed: the configured class kata)'
# The original master-pinned pod (seed): no kata node can run it, in the
# scheduler's words for each (the scenario seed above: the scheduler agrees),
# and noFeasibleNode: reject refuses it.
mandatory_refused "master-pinned pod (seed)" mandatory-seed tests/cluster/pods/seed.yaml . \
  "kata runtime required (noFeasibleNode: reject), and not assigned: 0/2 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: db}"
# A plain pod: Kata, the RuntimeClass merged, bound by the scheduler to a
# kata node, no warning; the Kata-mandatory webhook alone was called.
out=$(in_mandatory mandatory-plain tests/cluster/pods/plain.yaml)
if ! pod=$(k -n $MANDATORY get pod mandatory-plain -o json 2>/dev/null); then
  fail "plain pod in $MANDATORY: not created: $out"
else
  where=$(placed $MANDATORY mandatory-plain)
  merged=$(jq -c '.spec.runtimeClassName' <<<"$pod"):$(merge_of "$pod")
  audit=$(audit_of mandatory-plain $MANDATORY)
  called=$(webhooks_called "$audit")
  if [[ $merged != "\"kata\":$KATA_MERGE" ]]; then
    fail "plain pod in $MANDATORY: not Kata with the RuntimeClass merged: $merged ($out)"
  elif ! is_kata "$where"; then
    fail "plain pod in $MANDATORY: Kata, but placed on '$where', not a kata node"
  elif [[ $out == *Warning:* ]]; then
    fail "plain pod in $MANDATORY: Kata, but with a warning: $out"
  elif [[ $called != "${MANDATORY_CONFIG#*/}:true" ||
    $(jq -r --arg w "$MANDATORY_WEBHOOK" '.[$w + "/decision"]' <<<"$audit") != mutated ]]; then
    fail "plain pod in $MANDATORY: webhooks called: '$called'; audit annotations: $audit"
  else
    pass "plain pod in $MANDATORY: Kata, overhead and node selector merged, placed on kata node $where, no warning; only $MANDATORY_WEBHOOK called (decision mutated)"
  fi
fi

echo "# opting out: examples/cluster-admission-policy.yaml's commented objectSelector, in force in $OPTOUT"
# A pod labelled $OPTOUT_LABEL: "true" never reaches the webhook: admitted as
# written, no warning, no audit annotation of the webhook, no decision
# annotation. The same pod without the label, or with another value, gets
# Kata from the same policy.
OPTOUT_ANNOTATES=$(jq -r '.spec.settings.annotateDecision // false' <<<"$OPTOUT_CAP")
in_optout() { # NAME [jq edit]: the plain pod under NAME in $OPTOUT; kubectl's output
  manifest_json tests/cluster/pods/plain.yaml | jq -c ".metadata.name = \"$1\" | ${2:-.}" |
    k -n $OPTOUT create -f - 2>&1 >/dev/null || true
}
out=$(in_optout opted-out ".metadata.labels[\"$OPTOUT_LABEL\"] = \"true\"")
if ! pod=$(k -n $OPTOUT get pod opted-out -o json 2>/dev/null); then
  fail "opt-out label: not created: $out"
else
  audit=$(audit_of opted-out $OPTOUT)
  seen_by=$(jq -r '(. // {}) | keys | map(select(contains("kubewarden.admission/") or startswith("mutation.webhook."))) | join(" ")' <<<"$audit")
  if [[ $(jq -c '[.spec.runtimeClassName, .spec.overhead, .spec.nodeSelector, .metadata.annotations[$k]]' --arg k "$DECISION_KEY" <<<"$pod") != '[null,null,null,null]' ]]; then
    fail "opt-out label: changed: $(jq -c '{spec: (.spec | {runtimeClassName, overhead, nodeSelector}), annotations: .metadata.annotations}' <<<"$pod")"
  elif [[ -n $out ]]; then
    fail "opt-out label: kubectl said: $out"
  elif [[ -n $seen_by ]]; then
    fail "opt-out label: the webhook saw it: $seen_by"
  else
    pass "opt-out label: admitted as written, no warning, not sent to $OPTOUT_WEBHOOK (no audit annotation of it), no decision annotation"
  fi
fi
for variant in "opt-in-none|no label|." "opt-in-false|label \"false\"|.metadata.labels[\"$OPTOUT_LABEL\"] = \"false\""; do
  IFS='|' read -r name what edit <<<"$variant"
  out=$(in_optout $name "$edit")
  if ! pod=$(k -n $OPTOUT get pod $name -o json 2>/dev/null); then
    fail "opt-out, $what: not created: $out"
    continue
  fi
  where=$(placed $OPTOUT $name)
  audit=$(audit_of $name $OPTOUT)
  annotation=$(jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"' <<<"$pod")
  if [[ $(jq -r '.spec.runtimeClassName' <<<"$pod") != kata || $(merge_of "$pod") != "$KATA_MERGE" ]]; then
    fail "opt-out, $what: not Kata with the RuntimeClass merged: $(jq -c '.spec | {runtimeClassName, overhead, nodeSelector}' <<<"$pod")"
  elif ! is_kata "$where"; then
    fail "opt-out, $what: Kata, but placed on '$where'"
  elif [[ $(jq -r --arg w "$OPTOUT_WEBHOOK" '.[$w + "/decision"]' <<<"$audit") != mutated ]]; then
    fail "opt-out, $what: audit annotations: $audit"
  elif [[ $OPTOUT_ANNOTATES == true && $annotation != "mutated: "* ]] || [[ $OPTOUT_ANNOTATES != true && $annotation != none ]]; then
    fail "opt-out, $what: decision annotation '$annotation' (annotateDecision $OPTOUT_ANNOTATES)"
  else
    pass "opt-out, $what: Kata from $OPTOUT_WEBHOOK, placed on kata node $where$([[ $OPTOUT_ANNOTATES != true ]] || echo ", $DECISION_KEY: $annotation")"
  fi
done

echo "# annotateDecision: a Deployment's pods, created as its controllers create them"
# There is no kube-controller-manager here: the suite plays the Deployment
# and ReplicaSet controllers, as their identities (kubectl --as; the API
# server's bootstrap RBAC lets system:serviceaccount:kube-system:<name>-controller
# do what each controller does). The user creates the Deployment; the
# Deployment controller its ReplicaSet (owned by the Deployment, the pod
# template with its pod-template-hash label); the ReplicaSet controller the
# pod (the template, generateName, an ownerReference to the ReplicaSet).
# The policy's warning goes to whoever creates the pod, the ReplicaSet
# controller: the user sees the decision only on the pod.
RS_CONTROLLER=system:serviceaccount:kube-system:replicaset-controller
DEPLOY_CONTROLLER=system:serviceaccount:kube-system:deployment-controller
# controller_pod NAME FILE: a Deployment NAME whose pod template is FILE's
# pod; sets CP_USER_OUT, CP_RS_OUT, CP_POD_OUT (kubectl's warnings and errors
# for the Deployment, the ReplicaSet, the pod), CP_RS (the ReplicaSet's name)
# and CP_POD (the stored pod's JSON; empty when it was not created).
controller_pod() {
  local name=$1 template deployment uid hash rs_uid pod_name
  template=$(manifest_json "$2" | jq -c --arg d "$name" '{metadata: {labels: {app: $d}}, spec: .spec}')
  deployment=$(jq -cn --arg d "$name" --argjson t "$template" '{apiVersion: "apps/v1", kind: "Deployment",
    metadata: {name: $d}, spec: {replicas: 1, selector: {matchLabels: {app: $d}}, template: $t}}')
  CP_USER_OUT=$(k -n $TENANT create -f - <<<"$deployment" 2>&1 >/dev/null) || true
  uid=$(k -n $TENANT get deployment "$name" -o jsonpath='{.metadata.uid}')
  hash=$(sha256sum <<<"$template" | cut -c1-10)
  CP_RS=$name-$hash
  CP_RS_OUT=$(jq -cn --arg d "$name" --arg rs "$CP_RS" --arg h "$hash" --arg uid "$uid" --argjson t "$template" '
    ($t | .metadata.labels["pod-template-hash"] = $h) as $pt | {apiVersion: "apps/v1", kind: "ReplicaSet",
    metadata: {name: $rs, labels: $pt.metadata.labels,
      ownerReferences: [{apiVersion: "apps/v1", kind: "Deployment", name: $d, uid: $uid, controller: true, blockOwnerDeletion: true}]},
    spec: {replicas: 1, selector: {matchLabels: {app: $d, "pod-template-hash": $h}}, template: $pt}}' |
    k -n $TENANT create --as=$DEPLOY_CONTROLLER -f - 2>&1 >/dev/null) || true
  rs_uid=$(k -n $TENANT get replicaset "$CP_RS" -o jsonpath='{.metadata.uid}' 2>/dev/null || true)
  CP_POD_OUT=$(k -n $TENANT get replicaset "$CP_RS" -o json | jq -c --arg uid "$rs_uid" '{apiVersion: "v1", kind: "Pod",
    metadata: (.spec.template.metadata + {generateName: (.metadata.name + "-"),
      ownerReferences: [{apiVersion: "apps/v1", kind: "ReplicaSet", name: .metadata.name, uid: $uid, controller: true, blockOwnerDeletion: true}]}),
    spec: .spec.template.spec}' |
    k -n $TENANT create --as=$RS_CONTROLLER -o name -f - 2>&1 >"$D/controller-pod") || true
  pod_name=$(sed 's|^pod/||' "$D/controller-pod")
  CP_POD=""
  [[ -z $pod_name ]] || CP_POD=$(get $TENANT "$pod_name")
}
# told OUT: the warnings in kubectl's output OUT, but the API server's own
# about the deprecated node-role.kubernetes.io/master label (the seed's).
told() { grep '^Warning: ' <<<"$1" | grep -vF 'use "node-role.kubernetes.io/control-plane" instead' || true; }
# controller_checked: what every controller-made pod must show: created
# by the ReplicaSet controller as written (labels, ownerReference,
# generateName kept), nothing said to the user or the Deployment
# controller; on stdout what is wrong, nothing when all is well.
controller_checked() {
  if [[ -z $CP_POD ]]; then
    echo "not created: $CP_POD_OUT"
  elif [[ -n $(told "$CP_USER_OUT$CP_RS_OUT") || $CP_USER_OUT$CP_RS_OUT == *rror* ]]; then
    echo "the Deployment's creator or the Deployment controller was told: $CP_USER_OUT $CP_RS_OUT"
  elif [[ $(jq -c '[.metadata.generateName, .metadata.ownerReferences[0].kind, .metadata.ownerReferences[0].name,
      .metadata.labels["pod-template-hash"] != null]' <<<"$CP_POD") != "[\"$CP_RS-\",\"ReplicaSet\",\"$CP_RS\",true]" ]]; then
    echo "the ReplicaSet controller's fields changed: $(jq -c '.metadata | {generateName, ownerReferences, labels}' <<<"$CP_POD")"
  fi
}
if [[ $ANNOTATES != true ]]; then
  fail "annotateDecision: examples/cluster-admission-policy.yaml does not set it: nothing to check on controller-made pods"
else
  # A plain pod: Kata, no warning to anyone, the decision on the pod.
  controller_pod web tests/cluster/pods/plain.yaml
  wrong=$(controller_checked)
  note=$(jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"' <<<"${CP_POD:-null}")
  if [[ -n $wrong ]]; then
    fail "Deployment web: $wrong"
  elif [[ $(jq -r '.spec.runtimeClassName' <<<"$CP_POD") != kata || $(merge_of "$CP_POD") != "$KATA_MERGE" ]]; then
    fail "Deployment web: the pod is not Kata: $(jq -c '.spec | {runtimeClassName, overhead, nodeSelector}' <<<"$CP_POD")"
  elif [[ -n $(told "$CP_POD_OUT") ]]; then
    fail "Deployment web: the ReplicaSet controller was told: $CP_POD_OUT"
  elif [[ $note != 'mutated: runtimeClassName "kata" assigned: a kata node can run this pod' ]]; then
    fail "Deployment web: $DECISION_KEY: $note"
  else
    pass "Deployment web: its pod, created by $RS_CONTROLLER, is Kata, carries $DECISION_KEY: $note; no warning to anyone"
  fi
  # The original master-pinned pod, as a Deployment's: unchanged; the
  # warning went to the ReplicaSet controller alone, and the reason is on
  # the pod.
  controller_pod pinned tests/cluster/pods/seed.yaml
  wrong=$(controller_checked)
  note=$(jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"' <<<"${CP_POD:-null}")
  reason="0/2 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) had untolerated taint {dedicated: db}"
  if [[ -n $wrong ]]; then
    fail "Deployment pinned: $wrong"
  elif [[ $(jq -r '.spec.runtimeClassName // "none"' <<<"$CP_POD") != none ]]; then
    fail "Deployment pinned: the pod got $(jq -r .spec.runtimeClassName <<<"$CP_POD")"
  elif [[ $(told "$CP_POD_OUT") != "Warning: kata runtime not assigned: $reason" ]]; then
    fail "Deployment pinned: the ReplicaSet controller was told: $CP_POD_OUT"
  elif [[ $note != "unchanged: $reason" ]]; then
    fail "Deployment pinned: $DECISION_KEY: $note"
  else
    pass "Deployment pinned: its pod left alone, the warning to $RS_CONTROLLER only, $DECISION_KEY: $note"
  fi
fi

# until_cached FILE WORDS: server-side dry runs of the pod (admitted by the
# webhook, stored nowhere; under a name no pod has) until the warning has
# WORDS (at most 10 s): the node changed last has reached policy-server's
# cache, and with it every earlier change (one watch, in order).
until_cached() {
  local t
  t=$(date +%s%N)
  until manifest_json "$1" | jq '.metadata.name = "cache-probe"' |
    k -n $TENANT create --dry-run=server -f - 2>&1 >/dev/null | grep -qF "$2"; do
    (($(date +%s%N) - t < 10000000000)) || break
    sleep 0.2
  done
  log "$(basename "$1" .yaml): the node change reached policy-server after $((($(date +%s%N) - t) / 1000000)) ms"
}

# until_kata FILE: until a server-side dry run of FILE's pod gets the kata
# class (at most 10 s): policy-server's cache has a node that can start it.
until_kata() {
  local t
  t=$(date +%s%N)
  until manifest_json "$1" | jq '.metadata.name = "cache-probe"' |
    k -n $TENANT create --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.runtimeClassName == "kata"' >/dev/null; do
    (($(date +%s%N) - t < 10000000000)) || break
    sleep 0.2
  done
  log "$(basename "$1" .yaml): the node change reached policy-server after $((($(date +%s%N) - t) / 1000000)) ms"
}

echo "# README.md, as written: step 1, Verify, finding the pods without Kata, the opt-out list"
# Each command is README.md's own (readme_cmd, readme_inline), run as an
# operator's shell runs it (readme_run); what it prints is held to what
# README.md shows, where it shows it, else to what it says.
# README.md's outputs are of a cluster with two kata nodes that the
# master-pinned pod cannot use for one reason alone ("0/2 kata nodes can run
# this pod: 2 node(s) didn't match Pod's node affinity/selector"). Here
# worker-2's taint would add a reason of its own: it is lifted while the
# smoke test's pods are created, then put back.

# Step 1: the classes and the kata nodes; the class's handler, and the
# handlers each node reports.
readme_cmd "kubectl get runtimeclass"
readme_run "$CMD"
got=$(columns 'NR == 1 {print $1, $2, $3; next} {print $1 ":" $2}')
readme_expect "$got" "NAME HANDLER AGE gvisor:runsc kata:$KATA_HANDLER kata-qemu-runtime-rs:$KATA_HANDLER runc:runc " \
  "every class with its handler ($got)"
readme_cmd "kubectl get nodes -l "
readme_run "$CMD"
got=$(awk 'NR > 1 {print $1 ":" $2}' < <(printf '%s' "$OUT") | sort | tr '\n' ' ')
readme_expect "$got" "worker-1:Ready worker-2:Ready " "the kata nodes, Ready ($got)"
readme_cmd "kubectl get runtimeclass kata-qemu-runtime-rs " "handler"
readme_run "$CMD"
readme_expect "$OUT" "$KATA_HANDLER"$'\n' "$(one_line "$OUT")"
# The handlers each node reports: the class's on the kata nodes alone.
readme_cmd "kubectl get nodes -o custom-columns="
readme_run "$CMD"
got=$(columns -v h="$KATA_HANDLER" 'NR == 1 {print $1, $2; next} {print $1 ":" (index("," $2 ",", "," h ",") ? "yes" : "no")}')
readme_expect "$got" "NAME HANDLERS master:no worker-1:yes worker-2:yes worker-3:no " \
  "$KATA_HANDLER reported by $got"
# Troubleshooting ("do not report runtime handler") gives the same two
# commands inline, the class named for NAME.
handlers_cmd=$CMD
readme_inline "kubectl get nodes -o custom-columns="
inline_nodes=$CMD
readme_inline "kubectl get runtimeclass NAME "
readme_run "${CMD/ NAME / kata }"
if [[ $inline_nodes == "$handlers_cmd" && $RC == 0 && $OUT == "$KATA_HANDLER" ]]; then
  pass "README.md's Troubleshooting: the nodes' handlers by step 1's command; \`$CMD\` for kata: $OUT"
else
  fail "README.md's Troubleshooting: \`$inline_nodes\` (step 1: \`$handlers_cmd\`); \`$CMD\` for kata: exit $RC: $(one_line "$OUT")"
fi

# The pods of the operations guide's "Finding the pods that did not get
# Kata", other than the master-pinned one: a pod that names runc and an opted-out pod,
# where the example policy as written judges them ($OPTOUT: the suite's
# restriction refuses runc elsewhere).
out=$(manifest_json tests/cluster/pods/plain.yaml | jq -c '.metadata.name = "build-7f9c" | .spec.runtimeClassName = "runc"' |
  k -n $OPTOUT create -f - 2>&1 >/dev/null || true)
out+=$(manifest_json tests/cluster/pods/plain.yaml | jq -c --arg l "$OPTOUT_LABEL" '.metadata.name = "metrics-agent" | .metadata.labels[$l] = "true"' |
  k -n $OPTOUT create -f - 2>&1 >/dev/null || true)
k -n $OPTOUT get pod build-7f9c metrics-agent >/dev/null 2>&1 || fail "the pods of README.md's \"Finding the pods\": $(one_line "$out")"
# (The master-pinned one, and the checks of the docs' queries over these
# pods, are install.sh's: the smoke test is README.md's install path.)

# Troubleshooting: the account a PolicyServer really uses, for
# policyServerServiceAccount.
if [[ -n $CRDS ]]; then
  readme_inline "kubectl get policyserver NAME "
  readme_run "${CMD/ NAME / $PS_NAME }"
  if [[ $RC == 0 && "system:serviceaccount:$KW_NAMESPACE:$OUT" == "$(jq -r '.policyServerServiceAccount' <<<"$SETTINGS")" ]]; then
    pass "README.md's \`$CMD\` for $PS_NAME: $OUT, the account the policy's policyServerServiceAccount names"
  else
    fail "README.md's \`$CMD\` for $PS_NAME: exit $RC: '$OUT'; the policy names $(jq -r '.policyServerServiceAccount' <<<"$SETTINGS")"
  fi
fi

echo "# Try it: the guide's kwctl commands, as written"
# From a working folder holding what a clone has (test_data/, tests/) and
# annotated-policy.wasm, the suite's module annotated as `make
# annotated-policy.wasm` annotates it; kwctl on PATH, and this cluster in
# KUBECONFIG (readme_sh). The recorded session answers the plain pod; then,
# without it, kwctl asks this cluster, read-only.
TRY_DIR=$D/try
mkdir -p "$TRY_DIR"
ln -s "$ROOT/test_data" "$TRY_DIR/test_data"
ln -s "$ROOT/tests" "$TRY_DIR/tests"
ln -s "$POLICY_FILE" "$TRY_DIR/annotated-policy.wasm"
# try_verdict: the last line of OUT, kwctl's answer: "allowed" and the class
# its patch sets ("allowed -" without a patch), else the line itself.
try_verdict() {
  local last
  last=$(printf '%s' "$OUT" | tail -n 1)
  jq -r 'if .allowed then "allowed " + ((.patch // "" | if . == "" then "-" else (@base64d | fromjson
    | map(select(.path == "/spec/runtimeClassName") | .value) | first // "-") end)) else "refused" end' <<<"$last" 2>/dev/null ||
    echo "$last"
}
readme_cmd "kwctl run " "--replay-host-capabilities-interactions"
README_DIR=$TRY_DIR readme_run "$CMD"
verdict=$(try_verdict)
if [[ $RC == 0 && $verdict == "allowed kata-qemu-runtime-rs" ]]; then
  pass "README.md's \`$(one_line "$CMD")\`: the recorded session answers, the plain pod gets Kata"
else
  fail "README.md's \`$(one_line "$CMD")\`: exit $RC, $verdict: $(one_line "$OUT")"
fi
readme_cmd "kubectl create --dry-run=client -o json -f tests/cluster/pods/plain.yaml "
README_DIR=$TRY_DIR readme_run "$CMD"
wrapped=$RC:$(jq -c '[.kind.kind, .operation, .namespace, .object.metadata.name] | join(" ")' "$TRY_DIR/request.json" 2>&1 || true)
readme_cmd "kwctl run --allow-context-aware --request-path request.json"
README_DIR=$TRY_DIR readme_run "$CMD"
verdict=$(try_verdict)
if [[ $wrapped == '0:"Pod CREATE default plain"' && $RC == 0 && $verdict == "allowed kata-qemu-runtime-rs" ]]; then
  pass "README.md's read-only trial against this cluster: the request wrapped, and \`$(one_line "$CMD")\` answers from the cluster: the plain pod gets Kata"
else
  fail "README.md's read-only trial: the request $wrapped; \`$(one_line "$CMD")\`: exit $RC, $verdict: $(one_line "$OUT")"
fi

echo "# runtime handlers: status.runtimeHandlers through policy-server's field masks"
# More kata nodes, each pool behind its own label and taint, so that the pods
# above never count them and the pods below can use only their pool:
#   kata-lone (pool lone): labelled for Kata, its runtime reports "",
#     kata-qemu and runc, not the class's handler kata-qemu-runtime-rs
#     (kata-deploy's labels without the default shim's runtime);
#   kata-good and kata-broken (pool pair): both pass every filter, one reports
#     the class's handler, one does not.
# Each is built whole (status, handlers, no not-ready taint) before the Kata
# label puts it in the policy's node list, so policy-server's watch-fed cache
# never holds it without its handlers.
pool_node() { # NAME POOL HANDLERS_JSON
  node "$1" "{\"example.com/pool\":\"$2\",$ZONE_A}" '{"cpu":"4","memory":"16Gi","pods":"110"}' \
    "[{\"key\":\"example.com/pool\",\"value\":\"$2\",\"effect\":\"NoSchedule\"}]" "$3"
  k label node "$1" katacontainers.io/kata-runtime=true kata-deploy.katacontainers.io/default=true >/dev/null
}

HANDLER="runtime handler \"$KATA_HANDLER\""
# The only kata node the pod can use is labelled, but its runtime lacks the
# handler: left alone (on it the pod would fail FailedCreatePodSandBox), and
# the scheduler, which never reads runtimeHandlers, binds the same pod set
# by hand to it.
pool_node kata-lone lone "[{\"name\":\"\",\"features\":$HF},{\"name\":\"kata-qemu\",\"features\":$HF},{\"name\":\"runc\",\"features\":$HF}]"
until_cached tests/cluster/pods/handler-missing.yaml "do not report"
scenario handler-missing unchanged "kata runtime not assigned: 0/3 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) do not report $HANDLER, 1 node(s) had untolerated taint {dedicated: db}" \
  binds kata-lone

pool_node kata-good pair "$KATA_HANDLERS"
pool_node kata-broken pair "$RUNC_HANDLERS"
# The policy reads the candidates by name in the order of policy-server's
# cache until one can start the pod: kata-broken is named when it comes
# before kata-good, and the pod gets Kata either way.
until_kata tests/cluster/pods/handler-pair.yaml
PAIR_WARNING="kata runtime assigned, but at least 1 kata node(s) that can take this pod do not report $HANDLER (kata-broken): if the scheduler picks one, the pod will not start"
ASSIGNED='runtimeClassName "kata" assigned: a kata node can run this pod'
scenario handler-pair mutated "Maybe: Warning: $PAIR_WARNING"
# The same warning (if any) is the audit reason; the decision stays mutated.
audit_mutated() { # NAME WARNING: decision mutated, the reason the warning or the plain one
  local audit reason
  audit=$(audit_of "$1")
  reason=$(jq -r --arg w "$WEBHOOK" '.[$w + "/reason"]' <<<"$audit")
  if [[ $(jq -r --arg w "$WEBHOOK" '.[$w + "/decision"]' <<<"$audit") == mutated &&
    ($reason == "$2" || $reason == "$ASSIGNED") ]]; then
    pass "$1: audit decision mutated, the reason $([[ $reason == "$2" ]] && echo "the warning (the broken node was read first)" || echo "without a warning (the good node was read first)")"
  else
    fail "$1: audit annotations: $audit"
  fi
}
audit_mutated handler-pair "$PAIR_WARNING"
# A recursiveReadOnly: Enabled mount: the second query (mask
# status.runtimeHandlers, features kept, a cache of its own) must show
# kata-good's features.recursiveReadOnlyMounts; pruned to names, kata-good
# would fail too and the pod would be left alone.
scenario handler-rro mutated "Maybe: Warning: $PAIR_WARNING"

# The names mask prunes the features: what the host hands the policy for
# the candidates it reads by name, seen in a session kwctl (the same
# policy-evaluator as policy-server) records against this API server.
jq -n --argjson pod "$(manifest_json tests/cluster/pods/handler-pair.yaml)" --arg ns $TENANT \
  '{uid:"6d1f3a52-9e0b-4c7e-8a41-000000000001",kind:{group:"",version:"v1",kind:"Pod"},resource:{group:"",version:"v1",resource:"pods"},
    name:$pod.metadata.name,namespace:$ns,operation:"CREATE",userInfo:{username:"kubernetes-admin",groups:["system:masters"]},
    object:($pod | .metadata.namespace = $ns),oldObject:null,dryRun:false}' >"$D/handler-pair-request.json"
# get_payloads SESSION MASK: the answers to every read of a node by name
# whose field masks include MASK, one per line.
get_payloads() {
  awk -v mask="    - $2" '/^- type: /{hit=0; get=0} /^    !KubernetesGetResource/ {get=1} get && $0 == mask {hit=1}
    hit && /^    payload: /{sub(/^    payload: \047/, ""); sub(/\047$/, ""); gsub(/\047\047/, "\047"); print}' "$1"
}
out=$(KUBECONFIG=$D/admin.kubeconfig "$KWCTL" run --allow-context-aware --settings-json "$SETTINGS" \
  --record-host-capabilities-interactions "$D/handler-pair-session.yml" -r "$D/handler-pair-request.json" \
  "$POLICY_FILE" 2>"$D/kwctl-run.log" || true)
names=$(get_payloads "$D/handler-pair-session.yml" status.runtimeHandlers.name |
  jq -sc '[.[] | {(.metadata.name): .status.runtimeHandlers}] | add' 2>/dev/null || true)
stored=$(k get nodes kata-lone kata-good kata-broken -o json | jq -c '[.items[].status.runtimeHandlers[] | has("features")] | all')
want_names="{\"kata-broken\":[{\"name\":\"\"},{\"name\":\"runc\"}],\"kata-good\":[{\"name\":\"\"},{\"name\":\"kata-qemu\"},{\"name\":\"$KATA_HANDLER\"},{\"name\":\"runc\"}]}"
# Each node read is kata-good or kata-broken, as stored, names only; kata-good
# is read (it is the one that can start the pod), kata-broken if it came first.
said=$(jq -r '.warnings[0] // "none"' <<<"${out:-null}" 2>/dev/null || true)
if [[ $stored == true && -n $names && $names != null &&
  $(jq -c --argjson want "$want_names" 'has("kata-good") and (to_entries | all(.value == $want[.key]))' <<<"$names") == true &&
  ($said == "$PAIR_WARNING" || $said == none) ]]; then
  pass "mask status.runtimeHandlers.name: every entry kept, its features pruned ($names); kwctl's answer one of policy-server's"
else
  fail "mask status.runtimeHandlers.name: features stored: $stored; the host's answer: ${names:-none (see $D/kwctl-run.log)}; kwctl: $out"
fi

# README.md's fix for a broken node (Troubleshooting, "kata runtime
# assigned, but …"), its own command: with kata-broken's Kata label off, the
# pair's pod gets Kata from kata-good alone, without the warning.
readme_inline "kubectl label node kata-broken "
readme_run "$CMD"
labelled=$RC:$(one_line "$OUT")
t=$(date +%s%N)
until out=$(manifest_json tests/cluster/pods/handler-pair.yaml | jq '.metadata.name = "cache-probe"' | k -n $TENANT create --dry-run=server -o json -f - 2>"$D/dry.err") &&
  [[ ! -s $D/dry.err && $(jq -r '.spec.runtimeClassName // "none"' <<<"$out") == kata ]]; do
  (($(date +%s%N) - t < 10000000000)) || break
  sleep 0.2
done
if [[ $labelled == "0:node/kata-broken unlabeled" && ! -s $D/dry.err && $(jq -r '.spec.runtimeClassName // "none"' <<<"$out") == kata ]]; then
  pass "README.md's \`$CMD\` ($labelled): the pair's pod gets Kata, no warning, after $((($(date +%s%N) - t) / 1000000)) ms"
else
  fail "README.md's \`$CMD\`: $labelled; the pair's pod: class $(jq -r '.spec.runtimeClassName // "none"' <<<"${out:-null}" 2>/dev/null), $(one_line "$(cat "$D/dry.err")")"
fi

kept=$(handlers_kept worker-1 worker-2 master worker-3 kata-lone kata-good kata-broken)
[[ -z $kept ]] && pass "runtimeHandlers: every node's still as written, after every status write of the suite" ||
  fail "runtimeHandlers rewritten: $kept"
# Back to the four nodes the faults below expect.
k delete node kata-lone kata-good kata-broken >/dev/null

echo "# node features: status.features through policy-server's field masks"
# A pod with securityContext.supplementalGroupsPolicy: Strict starts only on
# a node whose CRI reports status.features.supplementalGroupsPolicy: true
# (elsewhere the kubelet refuses it: SupplementalGroupsPolicyNotSupported);
# the scheduler never reads status.features. The policy reads them through
# its second node query (masks status.features and status.runtimeHandlers,
# a watch cache of its own). Pool strict, behind its own label and taint as
# the handler pools are, so that no other pod counts its nodes:
#   kata-strict-a: first without the feature (the pod is left alone; by hand
#     the scheduler binds it there), then with it, written through the
#     status subresource (the pod gets Kata and lands there, the pool's only
#     node);
#   kata-strict-b: without the feature, added last (the pod gets Kata, with
#     a warning that names it).
# Both are deleted at the end of this part, as the handler pools are.
STRICT="supplementalGroupsPolicy: Strict"
# until_assigned FILE: server-side dry runs of the pod (as until_cached) until
# it gets the kata class without a warning (at most 10 s): the node change
# that makes it runnable has reached policy-server's cache.
until_assigned() {
  local t out
  t=$(date +%s%N)
  until out=$(manifest_json "$1" | jq '.metadata.name = "cache-probe"' | k -n $TENANT create --dry-run=server -o json -f - 2>"$D/dry.err") &&
    [[ ! -s $D/dry.err && $(jq -r '.spec.runtimeClassName // "none"' <<<"$out") == kata ]]; do
    (($(date +%s%N) - t < 10000000000)) || break
    sleep 0.2
  done
  log "$(basename "$1" .yaml): the node change reached policy-server after $((($(date +%s%N) - t) / 1000000)) ms"
}
pool_node kata-strict-a strict "$KATA_HANDLERS"
until_cached tests/cluster/pods/strict-none.yaml "do not support $STRICT"
scenario strict-none unchanged "Warning: kata runtime not assigned: 0/3 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) do not support $STRICT, 1 node(s) had untolerated taint {dedicated: db}" \
  binds kata-strict-a
# The kubelet's part: the feature through the status subresource (lib.sh's
# features reads it back). The same pod now gets Kata, no warning, and the
# scheduler binds it to kata-strict-a, the node that reports the feature.
features kata-strict-a '{"supplementalGroupsPolicy":true}'
until_assigned tests/cluster/pods/strict-one.yaml
scenario strict-one mutated
where=$(placed $TENANT strict-one)
reported=$(k get node "$where" -o json 2>/dev/null | jq -c '.status.features' 2>/dev/null || true)
if [[ $where == kata-strict-a && $reported == '{"supplementalGroupsPolicy":true}' ]]; then
  pass "strict-one: bound to $where, which reports features $reported"
else
  fail "strict-one: placed '$where' (features ${reported:-none}), not on kata-strict-a"
fi
# A second kata node in the pool, without the feature: both can take the
# pod, one cannot start it. Kata, with the warning naming it; the scheduler
# may pick either.
pool_node kata-strict-b strict "$KATA_HANDLERS"
until_kata tests/cluster/pods/strict-pair.yaml
STRICT_WARNING="kata runtime assigned, but at least 1 kata node(s) that can take this pod do not support $STRICT (kata-strict-b): if the scheduler picks one, the pod will not start"
scenario strict-pair mutated "Maybe: Warning: $STRICT_WARNING"
audit_mutated strict-pair "$STRICT_WARNING"
# The same pod created with a scheduling gate: kubectl shows the warning
# about kata-strict-b (when it was read first) then the gate note, each on
# its own line; the audit reason has both. Held by its gate, it is deleted
# unscheduled.
# GATE_NOTE: the note for the gate example.com/hold (the gated scenario below too).
GATE_NOTE='the pod has schedulingGates ("example.com/hold"): node constraints added before it is ungated are not checked, and it stays Pending if they exclude every kata node'
out=$(create_pod $TENANT tests/cluster/pods/strict-pair.yaml '.metadata.name = "strict-pair-gated" | .spec.schedulingGates = [{name: "example.com/hold"}]')
shown=$(grep '^Warning: ' <<<"$out" || true)
audit=$(audit_of strict-pair-gated)
if [[ $shown == *"$(warning_cut "$STRICT_WARNING")"* ]]; then
  before="$STRICT_WARNING; " lines="Warning: $(warning_cut "$STRICT_WARNING")"$'\n'
else
  before="$ASSIGNED; " lines=""
fi
if [[ $(class_of strict-pair-gated) != kata ]]; then
  fail "strict-pair-gated: not Kata ($(class_of strict-pair-gated)): $out"
elif [[ $shown != "${lines}Warning: $(warning_cut "$GATE_NOTE")" ]]; then
  fail "strict-pair-gated: kubectl's warnings are not the nodes' (if any) then the gate note's: $out"
elif [[ $(jq -r --arg w "$WEBHOOK" '.[$w + "/decision"]' <<<"$audit") != mutated ||
  $(jq -r --arg w "$WEBHOOK" '.[$w + "/reason"]' <<<"$audit") != "$before$GATE_NOTE" ]]; then
  fail "strict-pair-gated: audit annotations: $audit"
elif ! note=$(decision_note "$(get $TENANT strict-pair-gated)" mutated "Warning: $before$GATE_NOTE"); then
  fail "strict-pair-gated: $note"
else
  pass "strict-pair-gated: Kata, $([[ -n $lines ]] && echo "two Warning lines (the nodes, then the gate note)" || echo "the gate note as its Warning line (kata-strict-a was read first)")$note; the audit reason has it"
fi
k -n $TENANT delete pod strict-pair-gated --wait=false >/dev/null 2>&1 || true
# status.features through the masks: the nodes policy-server's host
# answers the reads by name of the features query with, as kwctl (the same
# policy-evaluator) records them against this API server, for the same pod.
jq -n --argjson pod "$(manifest_json tests/cluster/pods/strict-pair.yaml)" --arg ns $TENANT \
  '{uid:"6d1f3a52-9e0b-4c7e-8a41-000000000002",kind:{group:"",version:"v1",kind:"Pod"},resource:{group:"",version:"v1",resource:"pods"},
    name:$pod.metadata.name,namespace:$ns,operation:"CREATE",userInfo:{username:"kubernetes-admin",groups:["system:masters"]},
    object:($pod | .metadata.namespace = $ns),oldObject:null,dryRun:false}' >"$D/strict-pair-request.json"
out=$(KUBECONFIG=$D/admin.kubeconfig "$KWCTL" run --allow-context-aware --settings-json "$SETTINGS" \
  --record-host-capabilities-interactions "$D/strict-pair-session.yml" -r "$D/strict-pair-request.json" \
  "$POLICY_FILE" 2>"$D/kwctl-run.log" || true)
seen=$(get_payloads "$D/strict-pair-session.yml" status.features |
  jq -sc '[.[] | {(.metadata.name): .status.features}] | add' 2>/dev/null || true)
said=$(jq -r '.warnings[0] // "none"' <<<"${out:-null}" 2>/dev/null || true)
if [[ -n $seen && $seen != null &&
  $(jq -c '.["kata-strict-a"] == {"supplementalGroupsPolicy":true} and ((has("kata-strict-b") | not) or .["kata-strict-b"] == null)' <<<"$seen") == true &&
  ($said == "$STRICT_WARNING" || $said == none) ]]; then
  pass "mask status.features: the host's answer to the reads by name has it as written ($seen); kwctl's answer one of policy-server's"
else
  fail "mask status.features: the host's answer: ${seen:-none (see $D/kwctl-run.log)}; kwctl: $out"
fi
# Only Strict asks for the feature: the same pod with Merge gets Kata from
# the pool without a warning.
out=$(manifest_json tests/cluster/pods/strict-pair.yaml | jq '.metadata.name = "merge-probe" | .spec.securityContext.supplementalGroupsPolicy = "Merge"' |
  k -n $TENANT create --dry-run=server -o json -f - 2>"$D/dry.err" || true)
if [[ $(jq -r '.spec.runtimeClassName // "none"' <<<"${out:-null}" 2>/dev/null) == kata && ! -s $D/dry.err ]]; then
  pass "supplementalGroupsPolicy: Merge in pool strict: Kata, no warning"
else
  fail "supplementalGroupsPolicy: Merge in pool strict: class $(jq -r '.spec.runtimeClassName // "none"' <<<"${out:-null}" 2>/dev/null), $(one_line "$(cat "$D/dry.err")")"
fi
# The features write kept the handlers (a merge patch of features alone).
kept=$(handlers_kept kata-strict-a kata-strict-b)
[[ -z $kept ]] && pass "status.features written: the pool's runtimeHandlers still as written" ||
  fail "status.features written: runtimeHandlers rewritten: $kept"
k delete node kata-strict-a kata-strict-b >/dev/null

echo "# scheduling gates: a gated pod given Kata, then narrowed and ungated"
# While a pod is gated, its nodeSelector may still be narrowed (by whatever
# set the gate, before it removes it), after the policy judged it. The
# policy gives Kata and says so in a warning of its own; a narrowing that
# excludes every kata node leaves the pod Pending: the documented limit.
GATED_REASON="runtimeClassName \"kata\" assigned: a kata node can run this pod; $GATE_NOTE"
out=$(create_pod $TENANT tests/cluster/pods/gated.yaml)
if ! pod=$(get $TENANT gated 2>/dev/null); then
  fail "gated: not created: $out"
elif [[ $(jq -r '.spec.runtimeClassName // "none"' <<<"$pod") != kata || $(merge_of "$pod") != "$KATA_MERGE" ]]; then
  fail "gated: not Kata with the RuntimeClass merged: $(jq -c '.spec | {runtimeClassName, overhead, nodeSelector}' <<<"$pod") ($out)"
elif [[ $(grep '^Warning: ' <<<"$out" || true) != "Warning: $(warning_cut "$GATE_NOTE")" ]]; then
  fail "gated: Kata, but kubectl's warnings are not the gate note alone: $out"
elif ! note=$(decision_note "$pod" mutated "Warning: $GATED_REASON"); then
  fail "gated: $note"
elif audit=$(audit_of gated) && [[ $(jq -r --arg w "$WEBHOOK" '.[$w + "/decision"]' <<<"$audit") != mutated ||
  $(jq -r --arg w "$WEBHOOK" '.[$w + "/reason"]' <<<"$audit") != "$GATED_REASON" ]]; then
  fail "gated: audit annotations not mutated with the explanation and the gate note: $audit"
elif [[ $(jq -r '[.spec.nodeName // "", (.status.conditions[]? | select(.type == "PodScheduled") | "\(.status) \(.reason)")] | join("|")' <<<"$pod") != "|False SchedulingGated" ]]; then
  fail "gated: not held by its gate: $(jq -c '{nodeName: .spec.nodeName, conditions: .status.conditions}' <<<"$pod")"
else
  pass "gated: mutated, overhead and node selector merged, the gate note its only warning$note, the audit reason the explanation and the note; held (PodScheduled False SchedulingGated)"
  # Narrowed to worker-3 (not a kata node) while gated, as the API server
  # allows, then ungated: the merged kata selector and the hostname exclude
  # every node. The scheduler says so and the pod stays Pending.
  narrowed=$(k -n $TENANT patch pod gated --type=json \
    -p '[{"op": "add", "path": "/spec/nodeSelector/kubernetes.io~1hostname", "value": "worker-3"}]' 2>&1) || true
  ungated=$(k -n $TENANT patch pod gated --type=json -p '[{"op": "remove", "path": "/spec/schedulingGates"}]' 2>&1) || true
  where=$(placed $TENANT gated)
  sleep 3
  pod=$(get $TENANT gated)
  state=$(jq -r '"\(.status.phase), node \(.spec.nodeName // "none"), gates \(.spec.schedulingGates // [] | length), nodeSelector \(.spec.nodeSelector | tostring)"' <<<"$pod")
  event=$(k -n $TENANT get events --field-selector involvedObject.kind=Pod,involvedObject.name=gated -o json |
    jq -r '[.items[] | select(.reason == "FailedScheduling") | .message] | last // "none"')
  if [[ $narrowed != "pod/gated patched" || $ungated != "pod/gated patched" ]]; then
    fail "gated: narrowing or ungating refused: $narrowed; $ungated"
  elif [[ $where != "unschedulable: "*"didn't match Pod's node affinity/selector"* ||
    $state != "Pending, node none, gates 0, nodeSelector "*'"kubernetes.io/hostname":"worker-3"'* ]]; then
    fail "gated: narrowed to worker-3 and ungated: placed '$where'; now $state; FailedScheduling: $event"
  else
    [[ $event != "${where#unschedulable: }" ]] || event="the same"
    pass "gated: narrowed to worker-3 and ungated, stays Pending ($state): PodScheduled False Unschedulable: ${where#unschedulable: }; the scheduler's FailedScheduling event: $event"
  fi
fi

echo "# Kata classes: kata-deploy 4.x's classes ranked, a VFIO GPU routed to its class ($CLASSES_NS)"
# kata-deploy 4.x installs one RuntimeClass per shim, each selecting both
# Kata labels, with its own handler and overhead: kata-clh (130Mi, 250m;
# amd64 only), kata-qemu-runtime-rs (the suite's copy of the example) and
# kata-qemu-nvidia-gpu (10240Mi, 1 CPU; its guest carries the GPU driver).
# Pool classes, behind its own label and taint as the handler pools are:
#   kata-amd64: every shim but the GPU one;
#   kata-arm64: kata-qemu-runtime-rs only (no clh on arm64);
#   kata-gpu (amd64): every shim, one nvidia.com/pgpu, 24Gi.
# The policy is the README's settings (kata-clh, then kata-qemu-runtime-rs;
# nvidia.com/pgpu routed to kata-qemu-nvidia-gpu). Each pod must come with
# the expected class and its overhead, and the scheduler must place it on a
# node that reports that class's handler.
kata_class() { # NAME HANDLER MEMORY CPU: kata-deploy 4.x's class of a shim
  jq -c --arg n "$1" --arg h "$2" --arg m "$3" --arg c "$4" \
    '.metadata.name = $n | .handler = $h | .overhead.podFixed = {memory: $m, cpu: $c}' <<<"$EXAMPLE_CLASS" |
    k apply -f - >/dev/null
}
kata_class kata-clh kata-clh 130Mi 250m
kata_class kata-qemu-nvidia-gpu kata-qemu-nvidia-gpu 10240Mi 1
handler_list() { jq -nc --argjson f "$HF" '[$ARGS.positional[] | {name: ., features: $f}]' --args "" runc "$@"; }
classes_node() { # NAME ARCH ALLOCATABLE_JSON HANDLER...
  local name=$1 arch=$2 alloc=$3
  shift 3
  node "$name" "{\"example.com/pool\":\"classes\",\"kubernetes.io/arch\":\"$arch\",$ZONE_A}" "$alloc" \
    '[{"key":"example.com/pool","value":"classes","effect":"NoSchedule"}]' "$(handler_list "$@")"
  k label node "$name" katacontainers.io/kata-runtime=true kata-deploy.katacontainers.io/default=true >/dev/null
}
classes_node kata-amd64 amd64 "$SMALL" kata-clh "$KATA_HANDLER"
classes_node kata-arm64 arm64 "$SMALL" "$KATA_HANDLER"
classes_node kata-gpu amd64 '{"cpu":"16","memory":"24Gi","pods":"110","nvidia.com/pgpu":"1"}' \
  kata-clh "$KATA_HANDLER" kata-qemu-nvidia-gpu
KATA_NODES=$(k get nodes -l katacontainers.io/kata-runtime=true -o name | wc -l)

# in_classes FILE: the pod of FILE created in $CLASSES_NS; kubectl's output.
in_classes() { create_pod $CLASSES_NS "$1"; }
# until_classes FILE CLASS: until a server-side dry run of FILE's pod in
# $CLASSES_NS gets CLASS (at most 10 s): policy-server's cache has the pool.
until_classes() {
  local t
  t=$(date +%s%N)
  until manifest_json "$1" | jq '.metadata.name = "cache-probe"' |
    k -n $CLASSES_NS create --dry-run=server -o json -f - 2>/dev/null | jq -e --arg c "$2" '.spec.runtimeClassName == $c' >/dev/null; do
    (($(date +%s%N) - t < 10000000000)) || break
    sleep 0.2
  done
  log "the classes pool reached policy-server after $((($(date +%s%N) - t) / 1000000)) ms"
}
until_classes tests/cluster/pods/classes-arm64.yaml kata-qemu-runtime-rs

# class_scenario NAME CLASS WARNING: the pod NAME (tests/cluster/pods) in
# $CLASSES_NS gets CLASS, with WARNING as kubectl's only warning line (none
# when empty), the same as the decision annotation and the audit reason, the
# class's overhead merged, and is placed on a node whose runtime reports the
# class's handler.
class_scenario() {
  local name=$1 class=$2 want=$3 out pod rc reason where handler reports audit note overhead
  out=$(in_classes tests/cluster/pods/$name.yaml)
  pod=$(k -n $CLASSES_NS get pod "$name" -o json 2>/dev/null) || {
    fail "$name: not created: $out"
    return
  }
  rc=$(jq -r '.spec.runtimeClassName // "none"' <<<"$pod")
  reason=${want:-runtimeClassName \"$class\" assigned: a kata node can run this pod}
  note=$(jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"' <<<"$pod")
  audit=$(audit_of "$name" $CLASSES_NS)
  overhead=$(k get runtimeclass "$class" -o json 2>/dev/null | jq -c .overhead.podFixed)
  where=$(placed $CLASSES_NS "$name")
  handler=$(k get runtimeclass "$class" -o jsonpath='{.handler}' 2>/dev/null)
  reports=$(k get node "$where" -o json 2>/dev/null | jq -r --arg h "$handler" '[.status.runtimeHandlers[]?.name] | index($h) != null')
  if [[ $rc != "$class" ]]; then
    fail "$name: expected class $class, got $rc: $out"
  elif [[ $(grep '^Warning: ' <<<"$out" || true) != "${want:+Warning: $want}" ]]; then
    fail "$name: $class, but kubectl's warnings are not '${want:-none}': $out"
  elif [[ $note != "mutated: $reason" ]]; then
    fail "$name: $DECISION_KEY is '$note', not 'mutated: $reason'"
  elif [[ $(jq -r --arg w "$CLASSES_WEBHOOK" '.[$w + "/reason"]' <<<"$audit") != "$reason" ]]; then
    fail "$name: the audit reason is not '$reason': $audit"
  elif [[ $(jq -c .spec.overhead <<<"$pod") != "$overhead" ]]; then
    fail "$name: overhead $(jq -c .spec.overhead <<<"$pod"), not $class's $overhead"
  elif [[ $reports != true ]]; then
    fail "$name: placed '$where', which does not report handler '$handler' of $class"
  else
    pass "$name: $class$([[ -z $want ]] || echo ", with the warning"), annotated and audited the same, overhead $overhead merged, placed on $where, which reports handler $handler"
  fi
}
# no_class_scenario NAME WANT_PART...: the pod NAME is left alone in
# $CLASSES_NS, its warning one line with each WANT_PART.
no_class_scenario() {
  local name=$1 out pod part lacks=""
  shift
  out=$(in_classes tests/cluster/pods/$name.yaml)
  pod=$(k -n $CLASSES_NS get pod "$name" -o json 2>/dev/null) || {
    fail "$name: not created: $out"
    return
  }
  for part in "$@"; do [[ $out == *"$part"* ]] || lacks+="'$part' "; done
  if [[ $(jq -r '.spec.runtimeClassName // "none"' <<<"$pod") != none ]]; then
    fail "$name: expected no class, got $(jq -r .spec.runtimeClassName <<<"$pod"): $out"
  elif [[ $(grep -c '^Warning: kata runtime not assigned: ' <<<"$out") != 1 || -n $lacks ]]; then
    fail "$name: left alone, but the warning lacks $lacks: $out"
  else
    pass "$name: left alone: $(grep '^Warning: ' <<<"$out"), placed: $(placed $CLASSES_NS "$name")"
  fi
}

# amd64: the first class, on either amd64 node (both report kata-clh).
class_scenario classes-amd64 kata-clh ""
# arm64: kata-clh passed over (its one candidate lacks the handler), in the
# scheduler's words, for every kata node the policy counts.
ARM_WHY="kata-clh: 0/$KATA_NODES kata nodes can run this pod: $((KATA_NODES - 2)) node(s) didn't match Pod's node affinity/selector, 1 node(s) do not report runtime handler \"kata-clh\", 1 node(s) had untolerated taint {dedicated: db}"
class_scenario classes-arm64 kata-qemu-runtime-rs "runtimeClassName \"kata-qemu-runtime-rs\" assigned ($ARM_WHY)"
# The VFIO GPU pod: its route's class, on the one node with its handler.
class_scenario classes-gpu kata-qemu-nvidia-gpu ""
# A GPU pod that fits kata-gpu only without the GPU class's 10Gi overhead:
# never given a general class (kata-clh's 130Mi would fit), left alone.
no_class_scenario classes-gpu-big "Insufficient memory"
# No class runs riscv64: every class and its reason.
no_class_scenario classes-riscv64 "kata runtime not assigned: kata-clh: 0/$KATA_NODES kata nodes can run this pod: " \
  "; kata-qemu-runtime-rs: 0/$KATA_NODES kata nodes can run this pod: "

# Back to the four nodes the faults below expect.
k delete node kata-amd64 kata-arm64 kata-gpu >/dev/null

echo "# faults on the real path"

# until_class PREFIX CLASS: creates plain pods PREFIX-1, PREFIX-2, … until
# one gets CLASS ("none": no class) or 10 s pass. Sets LAST (the last pod),
# OUT (kubectl's output for it) and MS (the time taken).
until_class() {
  local t i=0
  t=$(date +%s%N)
  while :; do
    i=$((i + 1))
    LAST=$1-$i
    OUT=$(fresh_pod "$LAST")
    [[ $(class_of "$LAST") == "$2" ]] && break
    (($(date +%s%N) - t < 10000000000)) || break
    sleep 0.2
  done
  MS=$((($(date +%s%N) - t) / 1000000))
}

# Cordoning every kata node: the next pods follow within the watch latency.
k cordon worker-1 worker-2 >/dev/null
until_class cordon none
if [[ $(class_of "$LAST") == none && $OUT == *"unschedulable"* ]]; then
  pass "cordoned kata nodes: $LAST after ${MS} ms is left alone ($OUT)"
else
  fail "cordoned kata nodes: still mutated after ${MS} ms: $OUT"
fi
k uncordon worker-1 worker-2 >/dev/null
until_class uncordon kata
[[ $(class_of "$LAST") == kata ]] && pass "uncordoned: kata again after ${MS} ms" ||
  fail "uncordoned: no kata after ${MS} ms"

# RBAC removed: the access question says no at once; no list hangs.
k delete clusterrolebinding kata-runtime-policy-reader >/dev/null
# The policy's access questions are asked anew on every admission; the API
# server's RBAC informer sees the deletion within moments.
sleep 1
t=$(date +%s%N)
out=$(fresh_pod rbac-gone)
ms=$((($(date +%s%N) - t) / 1000000))
if [[ $(class_of rbac-gone) == none && $out == *forbidden* ]] && ((ms < 1000)); then
  pass "binding removed: admitted unchanged in ${ms} ms: $out"
else
  fail "binding removed: ${ms} ms, class '$(class_of rbac-gone)': $out"
fi
k apply -f examples/rbac.yaml >/dev/null

# Settings the policy refuses: the CRD takes any settings (the API server
# would store the policy), policy-server does not start, with the policy's
# message.
bad=$D/bad-policies.yml
bad_cap=$(jq -c '{apiVersion, kind, metadata: {name: (.metadata.name + "-bad-settings")}, spec}
  | .spec.settings = {"skipPodsUsing": ["dockerSocket"]}' <<<"$CAP")
if [[ -n $CRDS ]] && ! bad_cap=$(k create --dry-run=server -o json -f - <<<"$bad_cap" 2>&1); then
  fail "refused settings: the API server refuses the policy itself: $bad_cap"
else
  policies_yml <<<"$bad_cap" >"$bad"
  free_port BAD_PORT 24000
  free_port BAD_READY 28181
  set +e
  out=$(KUBECONFIG="$D/policy-server.kubeconfig" timeout 120 "$POLICY_SERVER" --addr 127.0.0.1 --port "$BAD_PORT" \
    --readiness-probe-port "$BAD_READY" --cert-file "$D/pki/policy-server.crt" --key-file "$D/pki/policy-server.key" \
    --policies "$bad" --policies-download-dir "$D/downloads" --sigstore-cache-dir "$D/sigstore" --log-no-color 2>&1)
  status=$?
  set -e
  if ((status != 0 && status != 124)) && [[ $out == *'unknown feature \"dockerSocket\"'* || $out == *'unknown feature "dockerSocket"'* ]]; then
    pass "refused settings: $([[ -z $CRDS ]] || echo "accepted by the CRD, ")policy-server exits ($status) with the policy's message"
  else
    fail "refused settings: exit $status: $(tail -3 <<<"$out")"
  fi
fi

# Monitor mode: no mutation. Kubewarden refuses a protect -> monitor change
# of a policy ("Recreate instead"): the protect policy goes with its webhook,
# and examples/cluster-admission-policy-monitor.yaml comes in (use_policy's
# changes, its own settings). The Kata-mandatory policy stays: policy-server
# starts again with both in policies.yml.
stop_one policy-server
drop_policy
use_policy examples/cluster-admission-policy-monitor.yaml '{}' $BYHAND $MANDATORY $OPTOUT $CLASSES_NS $ROLLOUT_ON $ROLLOUT_OFF
# At info, as a PolicyServer logs by default: the monitor example's
# logDecisions lines are there.
PS_LOG_LEVEL=info start_policy_server
register_webhook
served=$(jq -c 'keys' "$D/policies.yml")
out=$(in_mandatory restarted tests/cluster/pods/plain.yaml)
got=$(k -n $MANDATORY get pod restarted -o jsonpath='{.spec.runtimeClassName}' 2>/dev/null || echo missing)
if [[ $served == "$(jq -cn '$ARGS.positional | sort' --args "$POLICY_ID" "$MANDATORY_ID" "$OPTOUT_ID" "$CLASSES_ID")" && $got == kata ]]; then
  pass "policy-server restarted with $served: a plain pod in $MANDATORY still gets Kata"
else
  fail "policy-server restarted with $served: a plain pod in $MANDATORY gets '$got': $out"
fi
out=$(fresh_pod monitored)
audit=$(audit_of monitored)
# With annotateDecision (the monitor example is the protect one), no
# decision annotation either: the patch that would carry it is not applied.
note=$(k -n $TENANT get pod monitored -o json 2>/dev/null | jq -r --arg k "$DECISION_KEY" '.metadata.annotations[$k] // "none"')
if [[ $(class_of monitored) == none && $note == none && $audit == *'admission/decision":"mutated"'* && $audit == *'\"mutated\":false'* ]]; then
  pass "monitor mode: not mutated (annotateDecision $(jq -r '.spec.settings.annotateDecision // false' <<<"$CAP"): no decision annotation), the would-be decision in the audit annotations: $audit"
else
  fail "monitor mode: class $(class_of monitored), $DECISION_KEY '$note', audit annotations: $audit"
fi
# logDecisions (the monitor example's): the pod's line in policy-server's
# log, found as README.md ("Decisions in policy-server's log") finds it.
want="$TENANT/monitored: mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod"
line=$(grep -F ": mutated: " "$D/policy-server.log" | grep -F "$TENANT/monitored:" | tail -1 || true)
if [[ $(jq -r '.spec.settings.logDecisions // false' <<<"$CAP") == true && $line == *"$want"* ]]; then
  pass "logDecisions: policy-server's log has '$want'"
else
  fail "logDecisions: no line '$want' in policy-server's log (logDecisions $(jq -r '.spec.settings.logDecisions // false' <<<"$CAP")): ${line:-none}"
fi

echo "# rolling out namespace by namespace: examples/cluster-admission-policy-rollout.yaml and README.md's steps"
# The pair's two policies, each as use_policy takes the examples (this
# checkout's module), judging only $ROLLOUT_ON and $ROLLOUT_OFF: one
# expression added, the split by README.md's label kept. policy-server
# starts again with them, at info (the dry run's logDecisions lines).
ROLLOUT_FILE=examples/cluster-admission-policy-rollout.yaml
MONITOR_CAP=$CAP
MONITOR_WEBHOOK=$WEBHOOK
MONITOR_CONFIG=$WEBHOOK_CONFIG
declare -A register_cap=()
rollout_ids=()
i=0
while read -r doc; do
  i=$((i + 1))
  jq -c --arg a $ROLLOUT_ON --arg b $ROLLOUT_OFF \
    '.spec.namespaceSelector.matchExpressions += [{key: "kubernetes.io/metadata.name", operator: "In", values: [$a, $b]}]' \
    <<<"$doc" >"$D/rollout-$i.json"
  use_policy "$D/rollout-$i.json" '{}'
  rollout_ids+=("$POLICY_ID")
  register_cap[$i]=$CAP
done < <(yaml_objects "$ROLLOUT_FILE")
[[ ${#rollout_ids[@]} == 2 ]] || die "$ROLLOUT_FILE: ${#rollout_ids[@]} policies, not 2"
stop_one policy-server
PS_LOG_LEVEL=info start_policy_server
for i in 1 2; do register_webhook "${register_cap[$i]}"; done
# The monitor policy stays the one the checks below drop and stop.
CAP=$MONITOR_CAP
WEBHOOK=$MONITOR_WEBHOOK
WEBHOOK_CONFIG=$MONITOR_CONFIG
in_rollout() { # NS NAME: the plain pod under NAME in NS; kubectl's output
  manifest_json tests/cluster/pods/plain.yaml | jq -c --arg n "$2" '.metadata.name = $n' |
    k -n "$1" create -f - 2>&1 >/dev/null || true
}
rollout_class() { k -n "$1" get pod "$2" -o jsonpath='{.spec.runtimeClassName}' 2>/dev/null || echo missing; }
# The API server calls new webhooks once its informer has them: server-side
# dry runs (which the webhooks see too) until the dry run logs one.
t=$(date +%s%N)
until manifest_json tests/cluster/pods/plain.yaml | jq '.metadata.name = "cache-probe"' |
  k -n $ROLLOUT_ON create --dry-run=server -f - >/dev/null 2>&1 &&
  grep -qF " $ROLLOUT_ON/cache-probe: " "$D/policy-server.log"; do
  (($(date +%s%N) - t < 10000000000)) || break
  sleep 0.3
done
log "the rollout webhooks answer after $((($(date +%s%N) - t) / 1000000)) ms"
# Before the label: the dry run judges $ROLLOUT_ON, changes nothing, and
# logs the decision README.md's step 1 greps for.
out=$(in_rollout $ROLLOUT_ON before)
readme_cmd "kubectl -n kubewarden logs " "grep ' shop/'"
pattern=$(sed -n "s/.*grep '\( shop\/\)'.*/\1/p" <<<"$CMD")
pattern=${pattern/shop/$ROLLOUT_ON}
line=""
for _ in $(seq 1 25); do
  line=$(grep -F "$pattern" "$D/policy-server.log" | grep -F "/before: " | tail -1 || true)
  [[ -z $line ]] || break
  sleep 0.2
done
if [[ $(rollout_class $ROLLOUT_ON before) == "" && -n $pattern && $line == *"$pattern"before": mutated: "* ]]; then
  pass "rollout, step 1: $ROLLOUT_ON unlabelled, judged by the dry run: no class, and README.md's grep '$pattern' finds its decision"
else
  fail "rollout, step 1: class '$(rollout_class $ROLLOUT_ON before)', grep '${pattern:-?}' finds '${line:-nothing}': $out"
fi
# Step 2: a quota with room for the pod, not for the pod and the Kata
# overhead. The quota's status is written as kube-controller-manager would
# (there is none here); the API server's ResourceQuota admission then
# counts each pod, with its overhead.
k -n $ROLLOUT_ON create quota mem --hard=requests.memory=300Mi >/dev/null
k -n $ROLLOUT_ON patch quota mem --subresource=status --type=merge \
  -p '{"status":{"hard":{"requests.memory":"300Mi"},"used":{"requests.memory":"0"}}}' >/dev/null
readme_cmd "kubectl get runtimeclass kata-qemu-runtime-rs -o jsonpath=" "overhead"
readme_run "$CMD"
overhead=$OUT
readme_cmd "kubectl -n shop describe quota"
readme_run "${CMD/ shop / $ROLLOUT_ON }"
if [[ $(jq -cS . <<<"$overhead" 2>/dev/null) == "$(jq -cS .overhead.podFixed <<<"$KATA_CLASS")" && $RC == 0 && $OUT == *"requests.memory"*"300Mi"* ]]; then
  pass "rollout, step 2: README.md's commands show the overhead ($(one_line "$overhead")) and the quota: $(one_line "$OUT")"
else
  fail "rollout, step 2: overhead '$(one_line "$overhead")', quota (exit $RC): $(one_line "$OUT")"
fi
# Step 3: README.md's label. The next pod gets Kata, and with the overhead
# (64Mi + 320Mi) the quota refuses it, as README.md warns.
readme_cmd "kubectl label namespace shop "
readme_run "${CMD/ shop / $ROLLOUT_ON }"
labelled=$RC:$(one_line "$OUT")
t=$(date +%s%N)
until out=$(manifest_json tests/cluster/pods/plain.yaml | jq '.metadata.name = "cache-probe"' |
  k -n $ROLLOUT_ON create --dry-run=server -o json -f - 2>&1) && [[ $(jq -r '.spec.runtimeClassName // ""' <<<"$out" 2>/dev/null) == kata ]] ||
  [[ $out == *"exceeded quota"* ]]; do
  (($(date +%s%N) - t < 10000000000)) || break
  sleep 0.2
done
out=$(in_rollout $ROLLOUT_ON over-quota)
if [[ $labelled == "0:namespace/$ROLLOUT_ON labeled" && $(rollout_class $ROLLOUT_ON over-quota) == missing && $out == *"exceeded quota"* ]]; then
  pass "rollout, step 3: README.md's label moves $ROLLOUT_ON to protect; the quota without headroom refuses the Kata pod: $(one_line "$out")"
else
  fail "rollout, step 3: label $labelled; the pod: class $(rollout_class $ROLLOUT_ON over-quota): $(one_line "$out")"
fi
k -n $ROLLOUT_ON patch quota mem --type=merge -p '{"spec":{"hard":{"requests.memory":"1Gi"}}}' >/dev/null
k -n $ROLLOUT_ON patch quota mem --subresource=status --type=merge -p '{"status":{"hard":{"requests.memory":"1Gi"}}}' >/dev/null
out=$(in_rollout $ROLLOUT_ON after)
other=$(in_rollout $ROLLOUT_OFF after)
where=$(placed $ROLLOUT_ON after)
if [[ $(rollout_class $ROLLOUT_ON after) == kata ]] && is_kata "$where" && [[ $(rollout_class $ROLLOUT_OFF after) == "" ]]; then
  pass "rollout, step 3: with the quota raised, a pod in $ROLLOUT_ON gets Kata (placed on $where); $ROLLOUT_OFF, unlabelled, stays with the dry run"
else
  fail "rollout, step 3: $ROLLOUT_ON: class '$(rollout_class $ROLLOUT_ON after)' on '$where' ($out); $ROLLOUT_OFF: '$(rollout_class $ROLLOUT_OFF after)' ($other)"
fi
# Step 4: README.md's list of the workloads still without Kata: the pod
# created before the label.
readme_cmd "kubectl -n shop get pods -o json "
readme_run "${CMD/ shop / $ROLLOUT_ON }"
if [[ $RC == 0 && $(printf '%s' "$OUT") == "Pod/before" ]]; then
  pass "rollout, step 4: README.md's command lists what still runs without Kata in $ROLLOUT_ON: $(one_line "$OUT")"
else
  fail "rollout, step 4: exit $RC: $(one_line "$OUT")"
fi
# Back: README.md's command removes the label; new pods are the dry run's.
readme_inline "kubectl label namespace shop "
readme_run "${CMD/ shop / $ROLLOUT_ON }"
back=$RC:$(one_line "$OUT")
t=$(date +%s%N)
until out=$(manifest_json tests/cluster/pods/plain.yaml | jq '.metadata.name = "cache-probe"' |
  k -n $ROLLOUT_ON create --dry-run=server -o json -f - 2>/dev/null) && [[ $(jq -r '.spec.runtimeClassName // ""' <<<"$out") == "" ]]; do
  (($(date +%s%N) - t < 10000000000)) || break
  sleep 0.2
done
out=$(in_rollout $ROLLOUT_ON moved-back)
if [[ $back == "0:namespace/$ROLLOUT_ON unlabeled" && $(rollout_class $ROLLOUT_ON moved-back) == "" && $(rollout_class $ROLLOUT_ON after) == kata ]]; then
  pass "rollout, back: README.md's \`${CMD/ shop / $ROLLOUT_ON }\` returns $ROLLOUT_ON to the dry run; the pod given Kata keeps it"
else
  fail "rollout, back: $back; new pod class '$(rollout_class $ROLLOUT_ON moved-back)': $out"
fi

# policy-server gone: failurePolicy Ignore (the monitor example's) admits the
# pod unchanged.
stop_one policy-server
t=$(date +%s%N)
out=$(fresh_pod no-server)
ms=$((($(date +%s%N) - t) / 1000000))
if [[ $(class_of no-server) == none ]]; then
  pass "policy-server stopped: admitted unchanged in ${ms} ms (failurePolicy $(k get "$WEBHOOK_CONFIG" -o jsonpath='{.webhooks[0].failurePolicy}'))"
else
  fail "policy-server stopped: $out"
fi
# In $MANDATORY, failurePolicy Fail (the Kata-mandatory example's): the pod
# the webhook could not judge is refused, not run without Kata.
out=$(in_mandatory no-server tests/cluster/pods/plain.yaml)
if ! k -n $MANDATORY get pod no-server >/dev/null 2>&1 &&
  [[ $out == *"failed calling webhook \"$MANDATORY_WEBHOOK\""* ]]; then
  pass "policy-server stopped: in $MANDATORY refused (failurePolicy $(k get "$MANDATORY_CONFIG" -o jsonpath='{.webhooks[0].failurePolicy}')): ${out//$'\n'/ }"
else
  fail "policy-server stopped: in $MANDATORY: class $(k -n $MANDATORY get pod no-server -o jsonpath='{.spec.runtimeClassName}' 2>&1): $out"
fi

source tests/cluster/install.sh
source tests/cluster/upgrade.sh

echo "# $PASSED passed, $FAILED failed, $(($(date +%s) - T0)) s"
((FAILED == 0))
