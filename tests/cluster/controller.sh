# What the Kubewarden controller does with PolicyServers and
# ClusterAdmissionPolicies, for the suite's upgrade path (upgrade.sh), where
# README.md's own commands create, delete and replace policies on two
# PolicyServers. There is no controller binary here: controller_sync does
# its part when it is called (upgrade.sh calls it where README.md waits, and
# on deletions), from the objects in the API server, by its rules
# (kubewarden-controller 1.36):
# - each PolicyServer runs one policy-server as its spec.serviceAccountName,
#   serving the ClusterAdmissionPolicies whose spec.policyServer names it;
#   when that set changes, a new policy-server starts, the webhooks move to
#   it, and the old one stops 5 s later (the Deployment's rolling update: at
#   no moment is a policy without a server);
# - its Deployment, policy-server-NAME in $KW_NAMESPACE, with the status of
#   a rolled-out Deployment (README.md waits for it);
# - each policy's webhook configuration (webhook_configuration, lib.sh) and
#   status.policyStatus active; the configurations of deleted policies go;
# - spec.policyServer never changes: the controller's validating webhook
#   refuses it with "spec.policyServer: Forbidden: the field is immutable";
#   here a ValidatingAdmissionPolicy (controller_immutable) says the same.
# Sourced by upgrade.sh, after lib.sh.

# Sourced once (install.sh, then upgrade.sh): the state below is kept.
[[ -z ${CONTROLLER_SOURCED:-} ]] || return 0
CONTROLLER_SOURCED=1

# MODULES: each registry reference a policy may name, to the annotated
# module file policy-server loads instead (no registry here).
declare -gA MODULES=()
# Per PolicyServer: its running process's name, port, and policies.yml.
declare -gA PS_PROC=() PS_AT=() PS_SERVED=()
PS_GENERATION=0
# Replaced policy-servers, still running: when each was replaced.
declare -gA RETIRED=()

# controller_immutable: the ValidatingAdmissionPolicy (and its binding) that
# refuses a change of a ClusterAdmissionPolicy's spec.policyServer.
controller_immutable() {
  k apply -f - >/dev/null <<'EOF'
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: kubewarden-controller-policyserver-immutable
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
      - apiGroups: [policies.kubewarden.io]
        apiVersions: ["*"]
        operations: [UPDATE]
        resources: [clusteradmissionpolicies]
  validations:
    - expression: "object.spec.policyServer == oldObject.spec.policyServer"
      message: "spec.policyServer: Forbidden: the field is immutable"
      reason: Invalid
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: kubewarden-controller-policyserver-immutable
spec:
  policyName: kubewarden-controller-policyserver-immutable
  validationActions: [Deny]
EOF
}

# controller_deployment PS SA REPLICAS: the PolicyServer's Deployment, with
# the status kube-controller-manager would write once it has rolled out
# (there is none here).
controller_deployment() {
  local ps=$1 sa=$2 replicas=$3 name=policy-server-$1
  if ! k -n "$KW_NAMESPACE" get deploy "$name" >/dev/null 2>&1; then
    jq -n --arg n "$name" --arg ns "$KW_NAMESPACE" --arg sa "$sa" --arg ps "$ps" --argjson r "$replicas" '{
      apiVersion: "apps/v1", kind: "Deployment",
      metadata: {name: $n, namespace: $ns, labels: {"kubewarden/policy-server": $ps}},
      spec: {replicas: $r, selector: {matchLabels: {"kubewarden/policy-server": $ps}},
        template: {metadata: {labels: {"kubewarden/policy-server": $ps}},
          spec: {serviceAccountName: $sa, containers: [{name: "policy-server", image: "ghcr.io/kubewarden/policy-server:v1.36.0"}]}}}}' |
      k create -f - >/dev/null
  fi
  k -n "$KW_NAMESPACE" patch deploy "$name" --subresource=status --type=merge -p "$(jq -nc \
    --argjson g "$(k -n "$KW_NAMESPACE" get deploy "$name" -o jsonpath='{.metadata.generation}')" --argjson r "$replicas" \
    '{status: {observedGeneration: $g, replicas: $r, updatedReplicas: $r, readyReplicas: $r, availableReplicas: $r}}')" >/dev/null
}

# controller_clean_slate: the suite's own policy-server stopped, and every
# ClusterAdmissionPolicy and Kubewarden webhook configuration gone: the
# controller's cluster before a README path starts (each caller removes what
# else its starting point lacks).
controller_clean_slate() {
  stop_one policy-server
  k delete clusteradmissionpolicies --all >/dev/null
  k delete mutatingwebhookconfigurations,validatingwebhookconfigurations -l app.kubernetes.io/part-of=kubewarden >/dev/null
}

# controller_serve PS SA POLICIES_YML: a new policy-server for the
# PolicyServer PS, as its account SA, serving POLICIES_YML; PS_PROC and
# PS_AT name it. The one it replaces is left running (controller_sync stops
# it once the webhooks have moved).
controller_serve() {
  local ps=$1 sa=$2 dir port ready token
  PS_GENERATION=$((PS_GENERATION + 1))
  dir=$D/ps-$ps-$PS_GENERATION
  mkdir -p "$dir"
  printf '%s\n' "$3" >"$dir/policies.yml"
  token=$(k -n "$KW_NAMESPACE" create token "$sa" --duration 2h 2>&1) ||
    die "PolicyServer $ps: no token for its ServiceAccount $KW_NAMESPACE/$sa ($token): its pods would not start"
  kubeconfig "$dir/kubeconfig" "$sa" "{token: $token}"
  free_port port 23100
  free_port ready 28100
  serve_policy_server "ps-$ps-$PS_GENERATION" "$port" "$ready" "$dir/kubeconfig" "$dir/policies.yml" \
    "${CONTROLLER_LOG_LEVEL:-warn}"
  PS_PROC[$ps]=ps-$ps-$PS_GENERATION
  PS_AT[$ps]=https://127.0.0.1:$port
}

# controller_sync [drop]: the controller's reconciliation, once, for every
# PolicyServer and ClusterAdmissionPolicy in the API server. With "drop",
# only what a deletion needs before it completes (the controller's
# finalizer): deleted policies leave their policy-server and lose their
# webhook, and nothing new is started. Policies created meanwhile wait for
# the next full sync, as they wait for the controller: a README step that
# goes on without waiting for them finds them inactive.
controller_sync() {
  local mode=${1:-all} caps servers ps sa replicas want modules cap name retired=() proc served
  modules=$(for m in "${!MODULES[@]}"; do jq -nc --arg k "$m" --arg v "file://${MODULES[$m]}" '{($k): $v}'; done | jq -sc 'add // {}')
  caps=$(k get clusteradmissionpolicies -o json | jq -c '[.items[] | select(.metadata.deletionTimestamp == null)]')
  if [[ $mode == drop ]]; then
    served=$(for ps in "${!PS_SERVED[@]}"; do
      jq -c --arg ps "$ps" '{($ps): [.[].namespacedName.name]}' <<<"${PS_SERVED[$ps]}"
    done | jq -sc 'add // {}')
    caps=$(jq -c --argjson s "$served" '[.[] | select(.metadata.name as $n | ($s[.spec.policyServer] // []) | index($n))]' <<<"$caps")
  fi
  servers=$(k get policyservers -o json | jq -c '[.items[] | {name: .metadata.name, sa: (.spec.serviceAccountName // "policy-server"), replicas: (.spec.replicas // 1)}]')
  while read -r ps sa replicas; do
    [[ $mode == drop && -z ${PS_SERVED[$ps]+set} ]] && continue
    controller_deployment "$ps" "$sa" "$replicas"
    want=$(jq -c --arg ps "$ps" --argjson m "$modules" '.[] | select(.spec.policyServer == $ps)
      | .spec.module = ($m[.spec.module] // error("no local module for \(.spec.module)"))' <<<"$caps" |
      while read -r cap; do policies_yml <<<"$cap"; done | jq -cs 'add // {}') ||
      die "PolicyServer $ps: a policy names a module the suite has no file for (MODULES: ${!MODULES[*]})"
    [[ $want != "${PS_SERVED[$ps]:-}" ]] || continue
    [[ -z ${PS_PROC[$ps]:-} ]] || retired+=("${PS_PROC[$ps]}")
    PS_PROC[$ps]=""
    PS_SERVED[$ps]=$want
    [[ $want == '{}' ]] || controller_serve "$ps" "$sa" "$want"
  done < <(jq -r '.[] | "\(.name) \(.sa) \(.replicas)"' <<<"$servers")
  # The webhooks: one per policy whose PolicyServer runs, pointing at it.
  while read -r cap; do
    ps=$(jq -r .spec.policyServer <<<"$cap")
    name=$(jq -r .metadata.name <<<"$cap")
    [[ -n ${PS_PROC[$ps]:-} ]] || continue
    webhook_configuration "${PS_AT[$ps]}" <<<"$cap" | k apply -f - >/dev/null
    k patch clusteradmissionpolicy "$name" --subresource=status --type=merge \
      -p "$(jq -nc --arg m "$(jq -r '.spec.mode // "protect"' <<<"$cap")" '{status: {policyStatus: "active", mode: $m}}')" >/dev/null
  done < <(jq -c '.[]' <<<"$caps")
  # The replaced policy-servers stop a while later, as a rolling update's
  # old pods do: the API server may call them until its informer has the
  # moved webhooks.
  for proc in "${retired[@]}"; do RETIRED[$proc]=$(date +%s); done
  for proc in "${!RETIRED[@]}"; do
    if (($(date +%s) - RETIRED[$proc] >= 5)); then
      stop_one "$proc"
      unset "RETIRED[$proc]"
    fi
  done
  # PolicyServers gone: their processes and Deployments too.
  for ps in "${!PS_PROC[@]}"; do
    if ! jq -e --arg ps "$ps" 'any(.[]; .name == $ps)' <<<"$servers" >/dev/null; then
      [[ -z ${PS_PROC[$ps]} ]] || stop_one "${PS_PROC[$ps]}"
      unset "PS_PROC[$ps]" "PS_AT[$ps]" "PS_SERVED[$ps]"
      k -n "$KW_NAMESPACE" delete deploy "policy-server-$ps" --ignore-not-found >/dev/null
    fi
  done
  # The webhook configurations of policies that are gone.
  k get mutatingwebhookconfigurations,validatingwebhookconfigurations -l app.kubernetes.io/part-of=kubewarden -o json |
    jq -r --argjson caps "$caps" '($caps | map(.metadata.name)) as $names
      | .items[] | select(.metadata.annotations.kubewardenPolicyName as $n | $names | index($n) | not)
      | "\(.kind | ascii_downcase)/\(.metadata.name)"' |
    while read -r conf; do k delete "$conf" >/dev/null; done
}

# controller_served PS: the policies PS's policy-server serves, by name,
# space-separated ("" when it runs none).
controller_served() {
  local served=${PS_SERVED[$1]:-}
  jq -r '[.[].namespacedName.name] | sort | join(" ")' <<<"${served:-"{}"}"
}
