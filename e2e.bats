#!/usr/bin/env bats
# End-to-end tests of the built policy, run through `kwctl run` with recorded
# host-capability sessions (no cluster needed).
#
#   make e2e-tests                      # kwctl + annotated-policy.wasm
#   KWCTL=target/release/kwrun POLICY=policy.wasm bats e2e.bats   # the project's own waPC host (CI)

KWCTL=${KWCTL:-kwctl}
POLICY=${POLICY:-annotated-policy.wasm}

# The settings every kwctl_run starts from. runtimeClassName and
# policyServerServiceAccount are required: the values the recorded sessions
# expect (their RuntimeClass is kata, their can_i questions are asked for
# kubewarden-defaults' PolicyServer). annotateDecision is on by default; off
# here, so that a patch is the class alone: the annotateDecision tests turn
# it on, or back to its default with null.
REQUIRED_SETTINGS='{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}'
E2E_SETTINGS=$(jq -c '. + {annotateDecision: false}' <<<"$REQUIRED_SETTINGS")

# kwctl_run REQUEST SESSION [SETTINGS_JSON]
# REQUEST is a file of test_data, SESSION a file of test_data/sessions; either
# may be an absolute path instead. SETTINGS_JSON is laid over E2E_SETTINGS
# (a key it sets, null included, wins).
kwctl_run() {
  local request=$1 session=$2 settings
  settings=$(jq -c --argjson given "${3:-"{}"}" '. + $given' <<<"$E2E_SETTINGS")
  [[ "$request" == /* ]] || request="test_data/$request"
  [[ "$session" == /* ]] || session="test_data/sessions/$session"
  run "$KWCTL" run --allow-context-aware \
    --request-path "$request" \
    --settings-json "$settings" \
    --replay-host-capabilities-interactions "$session" \
    "$POLICY"
  # Logs go to stderr; the response is the last line of stdout.
  response=$(printf '%s\n' "$output" | grep '^{' | tail -n 1)
}

allowed() { [ "$(jq -r .allowed <<<"$response")" = "$1" ]; }
no_patch() { [ "$(jq -r '.patch // "none"' <<<"$response")" = "none" ]; }
only_runtime_class_patch() {
  [ "$(jq -r .patchType <<<"$response")" = "JSONPatch" ]
  local patch
  patch=$(jq -r .patch <<<"$response" | base64 -d)
  [ "$(jq -c . <<<"$patch")" = "[{\"op\":\"add\",\"path\":\"/spec/runtimeClassName\",\"value\":\"$1\"}]" ]
}
warning_is() { [ "$(jq -r '.warnings[0]' <<<"$response")" = "$1" ]; }
# The warnings are exactly the arguments, in order.
warnings_are() { [ "$(jq -c '.warnings' <<<"$response")" = "$(jq -cn '$ARGS.positional' --args "$@")" ]; }
no_warning() { [ "$(jq -r '.warnings' <<<"$response")" = "null" ]; }
decision_is() { [ "$(jq -r '.auditAnnotations.decision' <<<"$response")" = "$1" ]; }
reason_is() { [ "$(jq -r '.auditAnnotations.reason' <<<"$response")" = "$1" ]; }
# The warning and the audit reason both say $1.
explained() { warning_is "$1" && reason_is "$1"; }
# An empty recording: any call the policy makes to the cluster fails, and
# the outcome is then a lookup failure, not the expected reason.
no_host_calls() {
  printf '[]\n' >"$BATS_TEST_TMPDIR/no-host-calls.yml"
  echo "$BATS_TEST_TMPDIR/no-host-calls.yml"
}
ASSIGNED='runtimeClassName "kata" assigned: a kata node can run this pod'
# The default skipPodsUsing, written out; each *_OFF list is it without one feature.
DEFAULT_SKIPS='["hostNamespaces","userNamespaces","windows","hostSockets","hostDevices","mountPropagation","deviceResources","dynamicResources","imageVolumes"]'
HOST_SOCKETS_OFF='{"skipPodsUsing":["hostNamespaces","userNamespaces","windows","hostDevices","mountPropagation","deviceResources","dynamicResources","imageVolumes"]}'
DYNAMIC_RESOURCES_OFF='{"skipPodsUsing":["hostNamespaces","userNamespaces","windows","hostSockets","hostDevices","mountPropagation","deviceResources","imageVolumes"]}'
IMAGE_VOLUMES_OFF='{"skipPodsUsing":["hostNamespaces","userNamespaces","windows","hostSockets","hostDevices","mountPropagation","deviceResources","dynamicResources"]}'
# The defaults plus privileged: for a Kata runtime configured with
# privileged_without_host_devices = false.
PRIVILEGED_ON='{"skipPodsUsing":["hostNamespaces","userNamespaces","windows","privileged","hostSockets","hostDevices","mountPropagation","deviceResources","dynamicResources","imageVolumes"]}'

@test "plain pod on a cluster with kata workers gets the kata runtime" {
  kwctl_run pod-plain.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "the master-pinned pod that started it all is left alone, with a warning" {
  kwctl_run pod-master-pinned.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
  decision_is unchanged
}

@test "noFeasibleNode=reject refuses the master-pinned pod with the same explanation" {
  kwctl_run pod-master-pinned.json kata-workers.yml '{"noFeasibleNode":"reject"}'
  [ "$status" -eq 0 ]
  allowed false
  no_patch
  [ "$(jq -r .status.message <<<"$response")" = "kata runtime required (noFeasibleNode: reject), and not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector" ]
}

@test "a DaemonSet pod pinned to a kata worker by matchFields gets the kata runtime" {
  kwctl_run pod-daemonset.json node-worker-2.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
}

@test "a DaemonSet pod pinned to the master is left alone" {
  kwctl_run pod-daemonset-master.json node-master.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: the pod can only run on node \"master\" (required node affinity on metadata.name): \"master\" is not a kata node (it does not match kataNodeSelector \"katacontainers.io/kata-runtime=true\")"
}

@test "a pod bound to a kata node by nodeName gets the kata runtime" {
  kwctl_run pod-node-name.json node-worker-1.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
}

@test "a VFIO GPU pod on CPU-only kata nodes is left alone: Insufficient nvidia.com/pgpu" {
  kwctl_run pod-vfio-gpu.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 Insufficient nvidia.com/pgpu"
  decision_is unchanged
}

@test "the same VFIO GPU pod gets kata when one kata node group has GPUs" {
  kwctl_run pod-vfio-gpu.json kata-gpu-group.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
}

@test "ignoredResources skips a GPU served through DRA" {
  kwctl_run pod-vfio-gpu.json kata-workers.yml '{"ignoredResources":["nvidia.com/*"]}'
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
}

@test "a pod that fits a kata node only without the kata overhead is left alone" {
  kwctl_run pod-overhead-edge.json kata-overhead.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 Insufficient cpu"
  # Without overhead in the RuntimeClass, the same pod fits.
  kwctl_run pod-overhead-edge.json kata-workers.yml
  only_runtime_class_patch kata
}

@test "a topology spread key that kata nodes lack leaves the pod alone" {
  kwctl_run pod-topology-spread.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match pod topology spread constraints (missing required label)"
}

@test "a StatefulSet pod whose disk is in a zone without kata nodes is left alone" {
  kwctl_run pod-statefulset.json volume-zone-b.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match PersistentVolume's node affinity"
  decision_is unchanged
}

@test "the same StatefulSet pod gets kata when a kata node is in its disk's zone" {
  kwctl_run pod-statefulset.json volume-zone-b-kata.yml
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  decision_is mutated
}

@test "a pod that must run next to a database on a node without kata is left alone" {
  kwctl_run pod-affinity-db.json affinity-db-off-kata.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match pod affinity rules"
  decision_is unchanged
}

@test "the same pod gets kata when the database runs on a kata node" {
  kwctl_run pod-affinity-db.json affinity-db-kata.yml
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  decision_is mutated
}

@test "a recreated claim never inherits its namesake's disk: the old PV names the old UID" {
  kwctl_run pod-statefulset.json volume-recreated-claim.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't find available persistent volumes to bind"
  decision_is unchanged
}

@test "a pod whose local volumes are on other nodes is left alone" {
  kwctl_run pod-local-volume.json volume-local.yml
  [ "$status" -eq 0 ]
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't find available persistent volumes to bind"
}

@test "a WaitForFirstConsumer claim whose class excludes the kata zones is left alone" {
  kwctl_run pod-zonal-class.json volume-allowed-topologies.yml
  [ "$status" -eq 0 ]
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't find available persistent volumes to bind"
}

@test "checkVolumes=false: volumes are not read and the pod gets kata" {
  kwctl_run pod-statefulset.json kata-workers.yml '{"checkVolumes":false}'
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
}

@test "volume reads refused: lookupFailure names the permission and the setting" {
  kwctl_run pod-statefulset.json volume-forbidden.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  [[ "$(jq -r '.warnings[0]' <<<"$response")" == "kata runtime not assigned: cannot read PersistentVolumeClaim default/data-web-0 (forbidden: set checkVolumes: false or grant policy-server get on persistentvolumeclaims"* ]]
}

@test "a pod bound to a node that does not exist is left alone, and says so" {
  kwctl_run pod-node-name-missing.json node-missing.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: the pod is bound to node \"worker-9\" (spec.nodeName): \"worker-9\" does not exist"
}

@test "a hostNetwork pod is never given kata" {
  kwctl_run pod-host-network.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: the pod uses hostNetwork, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)"
}

# What keeps the CSI node plugin off Kata: its kubelet sockets, /dev and
# Bidirectional propagation, one finding each, in report order.
CSI_FINDINGS=(
  "container \"node-driver-registrar\" mounts host socket path /var/lib/kubelet/plugins/csi.example.com (under /var/lib/kubelet/plugins) (hostPath volume \"socket-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
  "container \"csi-plugin\" mounts host socket path /var/lib/kubelet/plugins/csi.example.com (under /var/lib/kubelet/plugins) (hostPath volume \"socket-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
  "container \"node-driver-registrar\" mounts host socket path /var/lib/kubelet/plugins_registry (in hostSocketPaths) (hostPath volume \"registration-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
  "container \"csi-plugin\" mounts host socket path /var/lib/kubelet/plugins (in hostSocketPaths) (hostPath volume \"plugins-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
  "container \"csi-plugin\" mounts host device path /dev (hostPath volume \"dev-dir\"), but Kata gives it the VM's device node, not the host's (skipPodsUsing: hostDevices)"
  "container \"csi-plugin\" mounts hostPath volume \"mountpoint-dir\" (/var/lib/kubelet/pods) with mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)"
  "container \"csi-plugin\" mounts hostPath volume \"plugins-dir\" (/var/lib/kubelet/plugins) with mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)"
)
# "kata runtime not assigned: " and the findings joined by "; ".
joined_reason() {
  local IFS=$'\x1f'
  local text="$*"
  echo "kata runtime not assigned: ${text//$'\x1f'/; }"
}

@test "a CSI node plugin is never given kata: kubelet sockets, /dev, Bidirectional propagation" {
  kwctl_run pod-csi-node-plugin.json node-worker-2.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  # Its privileged container is not a reason by default: the host paths are.
  reason_is "$(joined_reason "${CSI_FINDINGS[@]}")"
  # The warning is cut to 255 bytes.
  warning_is "kata runtime not assigned: container \"node-driver-registrar\" mounts host socket path /var/lib/kubelet/plugins/csi.example.com (under /var/lib/kubelet/plugins) (hostPath volume \"socket-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets); co..."
  [ "$(jq -r '.warnings[0] | utf8bytelength' <<<"$response")" -eq 255 ]
}

@test "privileged opted in: the CSI node plugin's privileged container comes first" {
  kwctl_run pod-csi-node-plugin.json node-worker-2.yml "$PRIVILEGED_ON"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  reason_is "$(joined_reason "container \"csi-plugin\" is privileged, and a privileged container under Kata gets the VM's devices, not the host's (skipPodsUsing: privileged)" "${CSI_FINDINGS[@]}")"
  warning_is "kata runtime not assigned: container \"csi-plugin\" is privileged, and a privileged container under Kata gets the VM's devices, not the host's (skipPodsUsing: privileged); container \"node-driver-registrar\" mounts host socket path /var/lib/kubelet/plugins..."
}

@test "noFeasibleNode=reject still admits a pod kata cannot run, unchanged" {
  kwctl_run pod-csi-node-plugin.json node-worker-2.yml '{"noFeasibleNode":"reject"}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
}

@test "an agent that mounts docker.sock is left alone" {
  kwctl_run pod-docker-agent.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  warning_is 'kata runtime not assigned: container "agent" mounts host socket /var/run/docker.sock (hostPath volume "docker"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)'
}

@test "the same agent gets kata once hostSockets is off" {
  kwctl_run pod-docker-agent.json kata-workers.yml "$HOST_SOCKETS_OFF"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
}

@test "a hostUsers: false pod is left alone" {
  kwctl_run pod-user-namespace.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: the pod sets hostUsers: false (a user namespace), which the Kata runtime handler does not support: the kubelet would not start it (skipPodsUsing: userNamespaces)"
}

@test "a device-plugin nvidia.com/gpu pod is left alone, even where kata nodes have GPUs" {
  kwctl_run pod-gpu.json kata-gpu-group.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'kata runtime not assigned: container "cuda" asks for nvidia.com/gpu, a device plugin'"'"'s host device that Kata does not pass into its VM (Kata passes VFIO devices) (skipPodsUsing: deviceResources)'
}

# Dynamic Resource Allocation: the pod's spec.resourceClaims.
DRA_TEMPLATE_REASON='kata runtime not assigned: claim "gpu" (ResourceClaimTemplate "one-gpu"), used by container "cuda", init container "gpu-metrics", asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)'
DRA_CLAIM_REASON='kata runtime not assigned: claim "nic" (ResourceClaim "shared-nic"), used by container "router", asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)'

@test "a claim from a ResourceClaimTemplate, used by a container and a sidecar, is left alone without asking the cluster" {
  kwctl_run pod-dra-template.json "$(no_host_calls)"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  explained "$DRA_TEMPLATE_REASON"
}

@test "a claim by name (ResourceClaim) is left alone; the container that does not use it is not named" {
  kwctl_run pod-dra-claim.json "$(no_host_calls)"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  explained "$DRA_CLAIM_REASON"
}

@test "a DRA pod is admitted unchanged whatever noFeasibleNode and lookupFailure say" {
  local strict='{"noFeasibleNode":"reject","lookupFailure":"reject"}'
  kwctl_run pod-dra-template.json "$(no_host_calls)" "$strict"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  explained "$DRA_TEMPLATE_REASON"
  kwctl_run pod-dra-claim.json "$(no_host_calls)" "$strict"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  explained "$DRA_CLAIM_REASON"
}

@test "dynamicResources removed: DRA pods are judged on scheduling, and kata workers fit" {
  kwctl_run pod-dra-template.json kata-workers.yml "$DYNAMIC_RESOURCES_OFF"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
  reason_is "$ASSIGNED"
  kwctl_run pod-dra-claim.json kata-workers.yml "$DYNAMIC_RESOURCES_OFF"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "a plain privileged builder (Docker-in-Docker) gets kata: root in the VM, not on the node" {
  kwctl_run pod-dind-builder.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
  reason_is "$ASSIGNED"
  # The default list written out decides the same.
  kwctl_run pod-dind-builder.json kata-workers.yml "{\"skipPodsUsing\":$DEFAULT_SKIPS}"
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  decision_is mutated
}

@test "privileged opted in: the builder is left alone, without asking the cluster" {
  kwctl_run pod-dind-builder.json "$(no_host_calls)" "$PRIVILEGED_ON"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  explained "kata runtime not assigned: container \"dind\" is privileged, and a privileged container under Kata gets the VM's devices, not the host's (skipPodsUsing: privileged)"
}

@test "an unknown skipPodsUsing feature is refused with the known names" {
  kwctl_run pod-plain.json kata-workers.yml '{"skipPodsUsing":["dockerSocket"]}'
  [ "$status" -ne 0 ] || [ "$(jq -r .allowed <<<"$response")" = "false" ]
  # Every known feature, in the order findings are reported.
  local known='known features: hostNamespaces, userNamespaces, windows, privileged, hostSockets, hostDevices, mountPropagation, deviceResources, dynamicResources, imageVolumes, seccomp, appArmor, seLinux, subPath, memoryEmptyDirLimit'
  [[ "$output" == *"skipPodsUsing: unknown feature \\\"dockerSocket\\\"; $known"* ]] \
    || [[ "$output" == *"skipPodsUsing: unknown feature \"dockerSocket\"; $known"* ]]
}

@test "a pod that already names a runtimeClassName is left alone" {
  kwctl_run pod-runtime-class.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'pod already sets runtimeClassName "gvisor"; left unchanged'
}

@test "allowedRuntimeClasses: a tenant pod naming runc is refused, with the allowed classes" {
  kwctl_run pod-runc.json kata-workers.yml '{"allowedRuntimeClasses":["gvisor"]}'
  [ "$status" -eq 0 ]
  allowed false
  no_patch
  [ "$(jq -r .status.message <<<"$response")" = 'runtimeClassName "runc" is not allowed (allowed: the configured class kata; allowedRuntimeClasses: gvisor)' ]
}

@test "allowedRuntimeClasses: the same pod is admitted unchanged once runc is listed" {
  kwctl_run pod-runc.json kata-workers.yml '{"allowedRuntimeClasses":["gvisor","runc"]}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'pod already sets runtimeClassName "runc"; left unchanged'
}

@test "an empty runtimeClassName is left for the API server to refuse" {
  kwctl_run pod-empty-class.json kata-workers.yml '{"allowedRuntimeClasses":[]}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  [[ "$(jq -r '.warnings[0]' <<<"$response")" == 'runtimeClassName is "", which the API server refuses'* ]]
}

# incompatiblePod: reject, for namespaces where every pod must run under Kata:
# a pod with a runtime-compatibility finding is refused, with every finding
# in the words of the accept-mode warning, before any question to the cluster.
INCOMPATIBLE_REJECT='{"incompatiblePod":"reject"}'
# The Kata-mandatory settings of examples/cluster-admission-policy-kata-mandatory.yaml.
KATA_MANDATORY='{"incompatiblePod":"reject","noFeasibleNode":"reject","allowedRuntimeClasses":[],"lookupFailure":"reject"}'
REQUIRED='kata runtime required (incompatiblePod: reject), and not assigned: '
DOCKER_SOCKET_FINDING='container "agent" mounts host socket /var/run/docker.sock (hostPath volume "docker"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)'
USERNS_FINDING='the pod sets hostUsers: false (a user namespace), which the Kata runtime handler does not support: the kubelet would not start it (skipPodsUsing: userNamespaces)'
DRA_TEMPLATE_FINDING=${DRA_TEMPLATE_REASON#kata runtime not assigned: }
MIRROR_REASON='kata runtime not assigned: mirror pod of a static pod (the kubelet runs it, not the API)'
MASTER_PINNED_REASON="kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
# Refused under noFeasibleNode: reject: Kata is required, and why not given.
NO_FEASIBLE_REQUIRED='kata runtime required (noFeasibleNode: reject), and not assigned: '

# The decision's code a refusal carries, by the setting its message names.
refusal_code() {
  case $1 in
  *"(incompatiblePod: reject)"*) echo 422 ;;
  *"(noFeasibleNode: reject)"*) echo 412 ;;
  *"(lookupFailure: reject)"*) echo 503 ;;
  *" is not allowed (allowed: "*) echo 403 ;;
  *) echo "no decision for: $1" ;;
  esac
}

# Refused with the decision's code and no patch, the audit saying rejected
# with $1.
refused_with() {
  allowed false
  no_patch
  [ "$(jq -r .status.message <<<"$response")" = "$1" ]
  [ "$(jq -r '.status.code // "none"' <<<"$response")" = "$(refusal_code "$1")" ]
  decision_is rejected
  reason_is "$1"
}

@test "incompatiblePod=reject refuses the docker.sock agent, without asking the cluster" {
  for settings in "$INCOMPATIBLE_REJECT" "$KATA_MANDATORY"; do
    kwctl_run pod-docker-agent.json "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    refused_with "$REQUIRED$DOCKER_SOCKET_FINDING"
    warning_is "$REQUIRED$DOCKER_SOCKET_FINDING"
  done
}

@test "incompatiblePod=reject refuses a hostUsers: false pod, without asking the cluster" {
  for settings in "$INCOMPATIBLE_REJECT" "$KATA_MANDATORY"; do
    kwctl_run pod-user-namespace.json "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    refused_with "$REQUIRED$USERNS_FINDING"
    warning_is "$REQUIRED$USERNS_FINDING"
  done
}

@test "incompatiblePod=reject refuses a DRA pod; the warning is cut, the message is whole" {
  for settings in "$INCOMPATIBLE_REJECT" "$KATA_MANDATORY"; do
    kwctl_run pod-dra-template.json "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    refused_with "$REQUIRED$DRA_TEMPLATE_FINDING"
    [ "$(jq -r '.warnings[0] | utf8bytelength' <<<"$response")" -eq 255 ]
    local message
    message=$(jq -r .status.message <<<"$response")
    warning_is "${message:0:252}..."
  done
}

@test "incompatiblePod=reject names every finding of the CSI node plugin" {
  local findings
  findings=$(joined_reason "${CSI_FINDINGS[@]}")
  kwctl_run pod-csi-node-plugin.json "$(no_host_calls)" "$INCOMPATIBLE_REJECT"
  [ "$status" -eq 0 ]
  refused_with "$REQUIRED${findings#kata runtime not assigned: }"
}

@test "incompatiblePod=reject: a feature turned off in skipPodsUsing refuses nothing" {
  kwctl_run pod-docker-agent.json kata-workers.yml "$(jq -c '. + {incompatiblePod: "reject"}' <<<"$HOST_SOCKETS_OFF")"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "incompatiblePod=reject: a mirror pod is admitted unchanged; without its annotation it is refused" {
  for settings in "$INCOMPATIBLE_REJECT" "$KATA_MANDATORY"; do
    kwctl_run pod-mirror.json "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    allowed true
    no_patch
    decision_is unchanged
    explained "$MIRROR_REASON"
  done
  # The annotation is what spares it: the same pod without it uses hostNetwork.
  jq 'del(.object.metadata.annotations["kubernetes.io/config.mirror"])' test_data/pod-mirror.json \
    >"$BATS_TEST_TMPDIR/not-mirror.json"
  kwctl_run "$BATS_TEST_TMPDIR/not-mirror.json" "$(no_host_calls)" "$INCOMPATIBLE_REJECT"
  [ "$status" -eq 0 ]
  refused_with "${REQUIRED}the pod uses hostNetwork, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)"
}

@test "Kata-mandatory: a plain pod gets the kata runtime, as before" {
  kwctl_run pod-plain.json kata-workers.yml "$KATA_MANDATORY"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
  reason_is "$ASSIGNED"
}

@test "Kata-mandatory: the master-pinned pod is refused with the scheduler's reason" {
  kwctl_run pod-master-pinned.json kata-workers.yml "$KATA_MANDATORY"
  [ "$status" -eq 0 ]
  refused_with "$NO_FEASIBLE_REQUIRED${MASTER_PINNED_REASON#kata runtime not assigned: }"
}

@test "Kata-mandatory: a pod naming runc is refused, without asking the cluster" {
  kwctl_run pod-runc.json "$(no_host_calls)" "$KATA_MANDATORY"
  [ "$status" -eq 0 ]
  refused_with 'runtimeClassName "runc" is not allowed (allowed: the configured class kata)'
}

# KEP-5004: a DeviceClass's implicit extended resource is served through DRA too.
DRA_EXTENDED_REASON='kata runtime not assigned: DeviceClass "gpu.example.com" (extended resource deviceclass.resource.kubernetes.io/gpu.example.com), asked for by container "cuda", is served by DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)'

@test "a DeviceClass extended resource (deviceclass.resource.kubernetes.io/...) is a DRA finding, without asking the cluster" {
  kwctl_run pod-dra-extended-resource.json "$(no_host_calls)"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  reason_is "$DRA_EXTENDED_REASON"
  # Longer than a warning may be: cut to 255 bytes.
  warning_is "${DRA_EXTENDED_REASON:0:252}..."
  [ "$(jq -r '.warnings[0] | utf8bytelength' <<<"$response")" -eq 255 ]
  # Whatever noFeasibleNode and lookupFailure say.
  kwctl_run pod-dra-extended-resource.json "$(no_host_calls)" '{"noFeasibleNode":"reject","lookupFailure":"reject"}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  reason_is "$DRA_EXTENDED_REASON"
  # Asked for in limits only, it is the same finding.
  jq 'del(.object.spec.containers[0].resources.requests["deviceclass.resource.kubernetes.io/gpu.example.com"])' \
    test_data/pod-dra-extended-resource.json >"$BATS_TEST_TMPDIR/limits-only.json"
  kwctl_run "$BATS_TEST_TMPDIR/limits-only.json" "$(no_host_calls)"
  [ "$status" -eq 0 ]
  no_patch
  reason_is "$DRA_EXTENDED_REASON"
}

@test "incompatiblePod=reject refuses a DeviceClass extended resource, without asking the cluster" {
  kwctl_run pod-dra-extended-resource.json "$(no_host_calls)" "$INCOMPATIBLE_REJECT"
  [ "$status" -eq 0 ]
  refused_with "$REQUIRED${DRA_EXTENDED_REASON#kata runtime not assigned: }"
}

# KEP-4639 image volumes: an OCI image mounted as a volume.
IMAGE_VOLUME_FINDING='image volume "tools" (image "ghcr.io/example/agent-tools:1.4"), mounted by container "agent", is an OCI image that Kata cannot mount inside its VM (skipPodsUsing: imageVolumes)'

@test "an agent sandbox that mounts an image volume is left alone, without asking the cluster" {
  kwctl_run pod-image-volume.json "$(no_host_calls)"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  decision_is unchanged
  explained "kata runtime not assigned: $IMAGE_VOLUME_FINDING"
  # Whatever noFeasibleNode and lookupFailure say.
  kwctl_run pod-image-volume.json "$(no_host_calls)" '{"noFeasibleNode":"reject","lookupFailure":"reject"}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained "kata runtime not assigned: $IMAGE_VOLUME_FINDING"
}

@test "an image volume mounted by an init container or a sidecar is named with it" {
  jq '.object.spec.initContainers[0].volumeMounts += [{"name": "tools", "mountPath": "/opt/tools"}]
      | .object.spec.initContainers[0].restartPolicy = "Always"' \
    test_data/pod-image-volume.json >"$BATS_TEST_TMPDIR/sidecar.json"
  kwctl_run "$BATS_TEST_TMPDIR/sidecar.json" "$(no_host_calls)"
  [ "$status" -eq 0 ]
  no_patch
  decision_is unchanged
  explained 'kata runtime not assigned: image volume "tools" (image "ghcr.io/example/agent-tools:1.4"), mounted by container "agent", init container "seed-workspace", is an OCI image that Kata cannot mount inside its VM (skipPodsUsing: imageVolumes)'
}

@test "findings come in feature order: dynamicResources, then imageVolumes, then subPath" {
  jq '.object.spec.resourceClaims = [{"name": "nic", "resourceClaimName": "shared-nic"}]
      | .object.spec.containers[0].resources.claims = [{"name": "nic"}]
      | .object.spec.containers[0].volumeMounts[1].subPath = "agent"' \
    test_data/pod-image-volume.json >"$BATS_TEST_TMPDIR/three.json"
  # Whatever order skipPodsUsing names them in.
  for settings in '{"skipPodsUsing":["subPath","imageVolumes","dynamicResources"]}' \
    '{"skipPodsUsing":["dynamicResources","imageVolumes","subPath"]}'; do
    kwctl_run "$BATS_TEST_TMPDIR/three.json" "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    allowed true
    no_patch
    decision_is unchanged
    reason_is "kata runtime not assigned: claim \"nic\" (ResourceClaim \"shared-nic\"), used by container \"agent\", asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources); $IMAGE_VOLUME_FINDING; container \"agent\" mounts volume \"workspace\" with subPath, which is unreliable under Kata (skipPodsUsing: subPath)"
  done
}

@test "imageVolumes removed from skipPodsUsing: the agent sandbox is judged on scheduling and gets kata" {
  kwctl_run pod-image-volume.json kata-workers.yml "$IMAGE_VOLUMES_OFF"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
  reason_is "$ASSIGNED"
}

@test "an image volume no container mounts, or a volume named image of another type, is no finding" {
  jq 'del(.object.spec.containers[0].volumeMounts[0])' test_data/pod-image-volume.json \
    >"$BATS_TEST_TMPDIR/unmounted.json"
  kwctl_run "$BATS_TEST_TMPDIR/unmounted.json" kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
  jq '.object.spec.volumes[0] = {"name": "image", "configMap": {"name": "agent-tools"}}
      | .object.spec.containers[0].volumeMounts[0].name = "image"' test_data/pod-image-volume.json \
    >"$BATS_TEST_TMPDIR/named-image.json"
  kwctl_run "$BATS_TEST_TMPDIR/named-image.json" kata-workers.yml
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  decision_is mutated
}

@test "incompatiblePod=reject refuses the image-volume sandbox, without asking the cluster" {
  for settings in "$INCOMPATIBLE_REJECT" "$KATA_MANDATORY"; do
    kwctl_run pod-image-volume.json "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    refused_with "$REQUIRED$IMAGE_VOLUME_FINDING"
    warning_is "$REQUIRED$IMAGE_VOLUME_FINDING"
  done
}

@test "incompatiblePod=accept gives exactly the answers of no setting" {
  local cases=(
    "pod-docker-agent.json|kata-workers.yml|{}"
    "pod-user-namespace.json|kata-workers.yml|{}"
    "pod-dra-template.json|NONE|{}"
    "pod-dra-extended-resource.json|NONE|{}"
    "pod-image-volume.json|NONE|{}"
    "pod-csi-node-plugin.json|node-worker-2.yml|{}"
    "pod-csi-node-plugin.json|node-worker-2.yml|{\"noFeasibleNode\":\"reject\",\"lookupFailure\":\"reject\"}"
    "pod-mirror.json|NONE|{}"
    "pod-plain.json|kata-workers.yml|{}"
    "pod-master-pinned.json|kata-workers.yml|{\"noFeasibleNode\":\"reject\"}"
    "pod-runc.json|kata-workers.yml|{\"allowedRuntimeClasses\":[]}"
  )
  local entry request session settings before
  for entry in "${cases[@]}"; do
    IFS='|' read -r request session settings <<<"$entry"
    [ "$session" != NONE ] || session=$(no_host_calls)
    kwctl_run "$request" "$session" "$settings"
    [ "$status" -eq 0 ]
    before=$(jq -S . <<<"$response")
    kwctl_run "$request" "$session" "$(jq -c '. + {incompatiblePod: "accept"}' <<<"$settings")"
    [ "$status" -eq 0 ]
    [ "$(jq -S . <<<"$response")" = "$before" ]
  done
  # And that answer is the old one: the agent is admitted unchanged, with its finding.
  kwctl_run pod-docker-agent.json kata-workers.yml '{"incompatiblePod":"accept"}'
  allowed true
  no_patch
  decision_is unchanged
  explained "kata runtime not assigned: $DOCKER_SOCKET_FINDING"
}

@test "incompatiblePod takes accept or reject only" {
  local bad
  for bad in '"Reject"' 'true' '"deny"' '["reject"]'; do
    run "$KWCTL" run --allow-context-aware --request-path test_data/pod-docker-agent.json \
      --settings-json "{\"incompatiblePod\":$bad}" \
      --replay-host-capabilities-interactions test_data/sessions/kata-workers.yml "$POLICY"
    [ "$status" -ne 0 ]
    [[ "$output" == *"Provided settings are not valid"* ]]
    local escaped=${bad//\"/\\\"}
    [[ "$output" == *"incompatiblePod must be \"accept\" or \"reject\", got $bad"* ]] \
      || [[ "$output" == *"incompatiblePod must be \\\"accept\\\" or \\\"reject\\\", got $escaped"* ]]
  done
}

@test "a Deployment is not evaluated" {
  kwctl_run deployment.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  no_warning
}

@test "a malformed Pod is refused with a clear message" {
  kwctl_run pod-malformed.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed false
  jq -r .status.message <<<"$response" | grep -q "the object is not a valid Pod"
  [ "$(jq -r .status.code <<<"$response")" = "400" ]
}

@test "malformed image volumes, supplementalGroupsPolicy and schedulingGates are refused as not a Pod (400)" {
  local cases=(
    'pod-image-volume.json|.object.spec.volumes[0].image = "ghcr.io/example/agent-tools:1.4"'
    'pod-image-volume.json|.object.spec.volumes[0].image = true'
    'pod-image-volume.json|.object.spec.volumes[0].image.reference = 3'
    'pod-strict-supplemental-groups.json|.object.spec.securityContext.supplementalGroupsPolicy = 1'
    'pod-strict-supplemental-groups.json|.object.spec.securityContext.supplementalGroupsPolicy = ["Strict"]'
    'pod-strict-supplemental-groups.json|.object.spec.securityContext.supplementalGroupsPolicy = {"policy": "Strict"}'
    'pod-gated.json|.object.spec.schedulingGates = {"name": "example.com/hold"}'
    'pod-gated.json|.object.spec.schedulingGates = "example.com/hold"'
    'pod-gated.json|.object.spec.schedulingGates = ["example.com/hold"]'
    'pod-gated.json|.object.spec.schedulingGates = [{"name": 1}]'
  )
  local entry request filter
  for entry in "${cases[@]}"; do
    IFS='|' read -r request filter <<<"$entry"
    jq "$filter" "test_data/$request" >"$BATS_TEST_TMPDIR/hostile.json"
    # Refused before any question to the cluster.
    kwctl_run "$BATS_TEST_TMPDIR/hostile.json" "$(no_host_calls)"
    [ "$status" -eq 0 ]
    allowed false
    no_patch
    [[ "$(jq -r .status.message <<<"$response")" == "the object is not a valid Pod: "* ]]
    [ "$(jq -r .status.code <<<"$response")" = "400" ]
  done
}

@test "a missing RuntimeClass leaves the pod alone" {
  kwctl_run pod-plain.json runtimeclass-missing.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'kata runtime not assigned: RuntimeClass "kata" does not exist'
}

@test "the RuntimeClass toleration is merged: a dedicated kata node can run a plain pod" {
  kwctl_run pod-plain.json runtimeclass-scheduling.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
}

@test "the master-pinned pod on dedicated and cordoned kata nodes: reasons per node" {
  kwctl_run pod-master-pinned.json runtimeclass-scheduling.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is "kata runtime not assigned: 0/2 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable"
}

@test "a nodeSelector that conflicts with the RuntimeClass is never mutated" {
  kwctl_run pod-selector-conflict.json runtimeclass-scheduling.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  jq -r '.warnings[0]' <<<"$response" | grep -q 'requires nodeSelector katacontainers.io/kata-runtime=true but the pod'"'"'s nodeSelector has katacontainers.io/kata-runtime=false'
}

@test "no kata nodes: the pod is left alone" {
  kwctl_run pod-plain.json no-kata-nodes.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'kata runtime not assigned: no node matches kataNodeSelector "katacontainers.io/kata-runtime=true"'
}

@test "policy-server may not list or watch nodes: immediate lookupFailure, no list" {
  kwctl_run pod-plain.json nodes-access-denied.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  [ "$(jq -r '.auditAnnotations.reason' <<<"$response")" = "kata runtime not assigned: cannot list kata nodes (forbidden: system:serviceaccount:kubewarden:policy-server may not list, watch nodes; grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, and list both in contextAwareResources)" ]
  kwctl_run pod-plain.json nodes-access-denied.yml '{"lookupFailure":"reject"}'
  allowed false
}

@test "the access question fails: immediate lookupFailure, no list" {
  kwctl_run pod-plain.json can-i-error.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  [[ "$(jq -r '.auditAnnotations.reason' <<<"$response")" == "kata runtime not assigned: cannot check whether system:serviceaccount:kubewarden:policy-server may list nodes (kubernetes/can_i; policy-server needs create on subjectaccessreviews.authorization.k8s.io): "*"Connection refused"* ]]
}

@test "forbidden node list: lookupFailure=accept leaves the pod alone and names the RBAC fix" {
  kwctl_run pod-plain.json forbidden.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  jq -r '.auditAnnotations.reason' <<<"$response" | grep -q "nodes is forbidden"
  jq -r '.auditAnnotations.reason' <<<"$response" | grep -q "get/list/watch on nodes"
  [ "$(jq -r '.warnings[0] | length' <<<"$response")" -le 255 ]
}

@test "forbidden node list: lookupFailure=reject refuses the pod" {
  kwctl_run pod-plain.json forbidden.yml '{"lookupFailure":"reject"}'
  [ "$status" -eq 0 ]
  allowed false
  jq -r .status.message <<<"$response" | grep -q "cannot list kata nodes"
}

# Runtime handlers: what each node's kubelet reports its container runtime
# loaded (status.runtimeHandlers). The sessions' RuntimeClass is "kata" with
# handler "kata-qemu": the pod gets the class name, the nodes report the handler.
# The default skipPodsUsing without userNamespaces.
USERNS_ALLOWED='{"skipPodsUsing":["hostNamespaces","windows","hostSockets","hostDevices","mountPropagation","deviceResources","dynamicResources","imageVolumes"]}'

@test "the k3s story: labelled nodes whose runtime never loaded kata-qemu leave the pod alone" {
  kwctl_run pod-plain.json handlers-k3s.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained 'kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) do not report runtime handler "kata-qemu"'
  decision_is unchanged
}

@test "the k3s story with noFeasibleNode=reject refuses the pod with the same reason" {
  kwctl_run pod-plain.json handlers-k3s.yml '{"noFeasibleNode":"reject"}'
  [ "$status" -eq 0 ]
  allowed false
  no_patch
  [ "$(jq -r .status.message <<<"$response")" = 'kata runtime required (noFeasibleNode: reject), and not assigned: 0/2 kata nodes can run this pod: 2 node(s) do not report runtime handler "kata-qemu"' ]
}

@test "runtimeHandlerCheck: off on the k3s cluster trusts the labels, with the old node masks" {
  kwctl_run pod-plain.json handlers-k3s-check-off.yml '{"runtimeHandlerCheck":"off"}'
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "a partial cluster: the pod gets kata, and the warning names the node without the handler" {
  kwctl_run pod-plain.json handlers-partial.yml
  [ "$status" -eq 0 ]
  allowed true
  # The class name, not the handler.
  only_runtime_class_patch kata
  # kata-cordoned lacks the handler too, but the scheduler never picks it.
  explained 'kata runtime assigned, but at least 1 kata node(s) that can take this pod do not report runtime handler "kata-qemu" (kata-broken): if the scheduler picks one, the pod will not start'
  decision_is mutated
}

@test "a pod bound to a labelled node without the handler is left alone, with the reason" {
  kwctl_run pod-node-name-broken.json handlers-node-broken.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained 'kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) do not report runtime handler "kata-qemu"'
  decision_is unchanged
}

@test "label-free (kataNodeSelector \"\", required): the handler alone finds the kata node" {
  kwctl_run pod-plain.json handlers-label-free.yml '{"kataNodeSelector":"","runtimeHandlerCheck":"required"}'
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  # No scheduling.nodeSelector in the class: the scheduler may pick worker-1.
  explained 'kata runtime assigned, but 1 of 2 kata nodes that can take this pod report no runtime handlers (worker-1): if the scheduler picks one, the pod will not start'
  decision_is mutated
  # The master passes the pod's own filters but reports no kata-qemu.
  kwctl_run pod-master-pinned.json handlers-label-free.yml '{"kataNodeSelector":"","runtimeHandlerCheck":"required"}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained "kata runtime not assigned: 0/3 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector, 1 node(s) do not report runtime handler \"kata-qemu\""
  decision_is unchanged
}

@test "required: nodes that report no handlers do not count; auto judges them by their labels" {
  kwctl_run pod-plain.json handlers-none-reported.yml '{"kataNodeSelector":"","runtimeHandlerCheck":"required"}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained 'kata runtime not assigned: 0/3 kata nodes can run this pod: 2 node(s) report no runtime handlers, 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }'
  decision_is unchanged
  kwctl_run pod-plain.json handlers-none-reported.yml '{"kataNodeSelector":""}'
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "hostUsers: false (userNamespaces not skipped): kata-qemu without features.userNamespaces leaves the pod alone" {
  kwctl_run pod-user-namespace.json handlers-userns-unsupported.yml "$USERNS_ALLOWED"
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained 'kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) report runtime handler "kata-qemu" without features.userNamespaces (the pod sets hostUsers: false)'
  decision_is unchanged
}

@test "hostUsers: false (userNamespaces not skipped): kata-qemu with features.userNamespaces gets kata" {
  kwctl_run pod-user-namespace.json handlers-userns-supported.yml "$USERNS_ALLOWED"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "a recursiveReadOnly: Enabled mount: kata with a warning naming the node without features.recursiveReadOnlyMounts" {
  kwctl_run pod-recursive-read-only.json handlers-rro.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  explained 'kata runtime assigned, but at least 1 kata node(s) that can take this pod report runtime handler "kata-qemu" without features.recursiveReadOnlyMounts (the pod sets recursiveReadOnly: Enabled) (kata-2): if the scheduler picks one, the pod will not start'
  [ "$(jq -r '.warnings[0] | length' <<<"$response")" -le 255 ]
  decision_is mutated
  # Where every kata-qemu reports the feature, no warning.
  kwctl_run pod-recursive-read-only.json handlers-userns-unsupported.yml
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  no_warning
}

# supplementalGroupsPolicy: Strict: the kubelet admits the pod only on a node
# whose CRI reports status.features.supplementalGroupsPolicy: true
# (containerd 2.x does, 1.7 does not). The pod reads the nodes with the
# feature query (handler entries and status.features), whatever
# runtimeHandlerCheck says.
STRICT_UNSUPPORTED='kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) do not support supplementalGroupsPolicy: Strict'
STRICT_PARTIAL='kata runtime assigned, but at least 1 kata node(s) that can take this pod do not support supplementalGroupsPolicy: Strict (kata-2): if the scheduler picks one, the pod will not start'

@test "supplementalGroupsPolicy: Strict on kata nodes still on containerd 1.7 leaves the pod alone" {
  kwctl_run pod-strict-supplemental-groups.json strict-unsupported.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained "$STRICT_UNSUPPORTED"
  decision_is unchanged
  kwctl_run pod-strict-supplemental-groups.json strict-unsupported.yml '{"noFeasibleNode":"reject"}'
  [ "$status" -eq 0 ]
  refused_with "$NO_FEASIBLE_REQUIRED${STRICT_UNSUPPORTED#kata runtime not assigned: }"
}

@test "supplementalGroupsPolicy: Strict mid-upgrade: kata, with a warning naming the containerd 1.7 node" {
  kwctl_run pod-strict-supplemental-groups.json strict-partial.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  explained "$STRICT_PARTIAL"
  decision_is mutated
}

@test "supplementalGroupsPolicy: Strict on containerd 2.x nodes that report it gets kata, no warning" {
  kwctl_run pod-strict-supplemental-groups.json handlers-userns-supported.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

@test "supplementalGroupsPolicy: Strict with runtimeHandlerCheck off still reads status.features" {
  # The same sessions, the same feature query: off turns off the handler check only.
  kwctl_run pod-strict-supplemental-groups.json strict-partial.yml '{"runtimeHandlerCheck":"off"}'
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  explained "$STRICT_PARTIAL"
  kwctl_run pod-strict-supplemental-groups.json strict-unsupported.yml '{"runtimeHandlerCheck":"off"}'
  [ "$status" -eq 0 ]
  no_patch
  explained "$STRICT_UNSUPPORTED"
  decision_is unchanged
  kwctl_run pod-strict-supplemental-groups.json strict-partial.yml '{"runtimeHandlerCheck":"required"}'
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  explained "$STRICT_PARTIAL"
}

@test "supplementalGroupsPolicy: Strict bound to a containerd 1.7 node reads that node with the feature masks" {
  jq '.object.spec.nodeName = "kata-2"' test_data/pod-strict-supplemental-groups.json \
    >"$BATS_TEST_TMPDIR/strict-bound.json"
  kwctl_run "$BATS_TEST_TMPDIR/strict-bound.json" strict-node-kata-2.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained 'kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) do not support supplementalGroupsPolicy: Strict'
  decision_is unchanged
}

@test "supplementalGroupsPolicy: Merge asks nothing more: the plain query, and kata" {
  jq '.object.spec.securityContext.supplementalGroupsPolicy = "Merge"' test_data/pod-strict-supplemental-groups.json \
    >"$BATS_TEST_TMPDIR/merge.json"
  kwctl_run "$BATS_TEST_TMPDIR/merge.json" kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  no_warning
  decision_is mutated
}

# spec.schedulingGates: the pod's node constraints may still change before
# it is scheduled (whatever removes the gate may narrow them first). The gate
# note is a warning of its own; the audit reason is the explanation, then it.
GATE_NOTE='the pod has schedulingGates ("example.com/hold"): node constraints added before it is ungated are not checked, and it stays Pending if they exclude every kata node'
GATED="$ASSIGNED; $GATE_NOTE"

@test "a pod created with a scheduling gate gets kata, with a warning that later node constraints are not checked" {
  kwctl_run pod-gated.json kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  warnings_are "$GATE_NOTE"
  reason_is "$GATED"
  decision_is mutated
}

@test "a gated pod on a partial cluster: two warnings, the nodes then the gate note; the audit reason has both" {
  jq '.object.spec.schedulingGates = [{"name": "example.com/hold"}]' \
    test_data/pod-strict-supplemental-groups.json >"$BATS_TEST_TMPDIR/strict-gated.json"
  kwctl_run "$BATS_TEST_TMPDIR/strict-gated.json" strict-partial.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  decision_is mutated
  warnings_are "$STRICT_PARTIAL" "$GATE_NOTE"
  reason_is "$STRICT_PARTIAL; $GATE_NOTE"
}

@test "a gated pod: each warning is cut to 255 bytes on its own; the audit reason is whole" {
  local gates=(example.com/wait-for-the-capacity-review-of-the-research-gpu-pool
    example.com/wait-for-the-dataset-copy-of-the-research-gpu-pool
    example.com/wait-for-the-license-seat-of-the-research-gpu-pool)
  jq '.object.spec.schedulingGates = ($ARGS.positional | map({name: .}))' --args "${gates[@]}" \
    <test_data/pod-strict-supplemental-groups.json >"$BATS_TEST_TMPDIR/long-gates.json"
  kwctl_run "$BATS_TEST_TMPDIR/long-gates.json" strict-partial.yml
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  local note="the pod has schedulingGates (\"${gates[0]}\", \"${gates[1]}\", \"${gates[2]}\"): node constraints added before it is ungated are not checked, and it stays Pending if they exclude every kata node"
  [ "${#note}" -gt 255 ]
  # The long note is cut; the warning about the nodes before it is not.
  warnings_are "$STRICT_PARTIAL" "${note:0:252}..."
  [ "$(jq -r '.warnings[1] | utf8bytelength' <<<"$response")" -eq 255 ]
  reason_is "$STRICT_PARTIAL; $note"
}

@test "a gated pod no kata node can run is left alone with the scheduler's reason; no gates, no note" {
  jq '.object.spec.nodeSelector = {"node-role.kubernetes.io/master": ""}' test_data/pod-gated.json \
    >"$BATS_TEST_TMPDIR/gated-master.json"
  kwctl_run "$BATS_TEST_TMPDIR/gated-master.json" kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  explained "$MASTER_PINNED_REASON"
  decision_is unchanged
  jq '.object.spec.schedulingGates = []' test_data/pod-gated.json >"$BATS_TEST_TMPDIR/ungated.json"
  kwctl_run "$BATS_TEST_TMPDIR/ungated.json" kata-workers.yml
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  no_warning
  reason_is "$ASSIGNED"
}

@test "runtimeHandlerCheck takes auto, required or off only" {
  run "$KWCTL" run --allow-context-aware --request-path test_data/pod-plain.json \
    --settings-json '{"runtimeHandlerCheck":"strict"}' \
    --replay-host-capabilities-interactions test_data/sessions/handlers-k3s.yml "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Provided settings are not valid"* ]]
  [[ "$output" == *'runtimeHandlerCheck must be \"auto\", \"required\" or \"off\", got \"strict\"'* ]] \
    || [[ "$output" == *'runtimeHandlerCheck must be "auto", "required" or "off", got "strict"'* ]]
}

@test "invalid settings are refused before evaluation" {
  run "$KWCTL" run --allow-context-aware --request-path test_data/pod-plain.json \
    --settings-json '{"kataNodeSelector":"a in x"}' \
    --replay-host-capabilities-interactions test_data/sessions/kata-workers.yml "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Provided settings are not valid"*"kataNodeSelector"* ]]
}

# annotateDecision: every evaluated Pod CREATE the policy admits carries its
# decision as the pod annotation kata-runtime-policy.kubewarden.io/decision,
# "<verdict>: <reason>"; the verdict, warning and audit annotations are
# those without the setting.
ANNOTATE='{"annotateDecision":true}'
PINNED_UNCHANGED="unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"

# annotated_patch VALUE [CLASS]: the patch adds metadata.annotations with
# the decision VALUE alone (the pod had no annotations), then the class.
annotated_patch() {
  [ "$(jq -r .patchType <<<"$response")" = "JSONPatch" ]
  local expected
  expected=$(jq -cn --arg v "$1" --arg class "${2:-}" \
    '[{op: "add", path: "/metadata/annotations", value: {"kata-runtime-policy.kubewarden.io/decision": $v}}]
     + (if $class == "" then [] else [{op: "add", path: "/spec/runtimeClassName", value: $class}] end)')
  [ "$(jq -r .patch <<<"$response" | base64 -d | jq -c .)" = "$expected" ]
}

@test "annotateDecision: a plain pod gets kata and the decision annotation" {
  kwctl_run pod-plain.json kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "mutated: $ASSIGNED" kata
  no_warning
  decision_is mutated
  reason_is "$ASSIGNED"
}

@test "annotateDecision: the master-pinned pod stays unchanged, with the decision on it and its warning" {
  kwctl_run pod-master-pinned.json kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "$PINNED_UNCHANGED"
  decision_is unchanged
  explained "$MASTER_PINNED_REASON"
}

@test "annotateDecision: a pod naming its class says so" {
  kwctl_run pod-runtime-class.json "$(no_host_calls)" "$ANNOTATE"
  [ "$status" -eq 0 ]
  annotated_patch 'unchanged: pod already sets runtimeClassName "gvisor"'
  explained 'pod already sets runtimeClassName "gvisor"; left unchanged'
}

@test "annotateDecision: a Deployment's pod (generateName, ReplicaSet owner, pod-template-hash) carries the decision" {
  kwctl_run pod-deployment-replica.json kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "mutated: $ASSIGNED" kata
  no_warning
  # The same pod pinned to the master: why it did not get Kata is on the pod.
  jq '.object.spec.nodeSelector = {"node-role.kubernetes.io/master": ""}' test_data/pod-deployment-replica.json \
    >"$BATS_TEST_TMPDIR/replica-pinned.json"
  kwctl_run "$BATS_TEST_TMPDIR/replica-pinned.json" kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "$PINNED_UNCHANGED"
  decision_is unchanged
  explained "$MASTER_PINNED_REASON"
}

@test "annotateDecision: a gated pod carries the explanation and the gate note in its decision" {
  kwctl_run pod-gated.json kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  allowed true
  [ "$(jq -r .patch <<<"$response" | base64 -d | jq -c .)" = \
    "$(jq -cn --arg v "mutated: $GATED" '[{op: "add", path: "/metadata/annotations", value: {"kata-runtime-policy.kubewarden.io/decision": $v}}, {op: "add", path: "/spec/runtimeClassName", value: "kata"}]')" ]
  warnings_are "$GATE_NOTE"
  reason_is "$GATED"
}

@test "annotateDecision: a decision already on the pod is replaced" {
  jq --arg k kata-runtime-policy.kubewarden.io/decision \
    '.object.metadata.annotations = {team: "a", ($k): "mutated: trust me"}' test_data/pod-master-pinned.json \
    >"$BATS_TEST_TMPDIR/preset.json"
  kwctl_run "$BATS_TEST_TMPDIR/preset.json" kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  [ "$(jq -r .patch <<<"$response" | base64 -d | jq -c .)" = \
    "$(jq -cn --arg v "$PINNED_UNCHANGED" '[{op: "replace", path: "/metadata/annotations/kata-runtime-policy.kubewarden.io~1decision", value: $v}]')" ]
}

@test "annotateDecision: a \"; \" inside one finding never splits it" {
  # One hostSockets finding, its path holding "; ", too long for the bound.
  local dir
  dir="/var/run/a; b/$(printf 'd%.0s' $(seq 1 450))"
  jq --arg p "$dir/docker.sock" '.object.spec.volumes[0].hostPath.path = $p' test_data/pod-docker-agent.json \
    >"$BATS_TEST_TMPDIR/semicolon.json"
  kwctl_run "$BATS_TEST_TMPDIR/semicolon.json" "$(no_host_calls)" "$ANNOTATE"
  [ "$status" -eq 0 ]
  decision_is unchanged
  local value
  value=$(jq -r .patch <<<"$response" | base64 -d | jq -r '.[0].value["kata-runtime-policy.kubewarden.io/decision"]')
  [ "$(printf '%s' "$value" | wc -c)" -le 512 ]
  [[ "$value" == "unchanged: container \"agent\" mounts host socket /var/run/a; b/ddd"* ]]
  [[ "$value" == *... ]]
  [[ "$value" != *"more"* ]]
}

@test "annotateDecision: a pod whose annotations would pass the API server's 256 KiB is admitted as without the setting" {
  # Keys plus values: 262,144 bytes is the limit. Leave 40 bytes, less than
  # the decision annotation needs (its key alone is 42 bytes).
  local big
  big=$(head -c $((262144 - 15 - 40)) /dev/zero | tr '\0' v)
  jq -n --rawfile v <(printf '%s' "$big") '{"example.com/big": $v}' >"$BATS_TEST_TMPDIR/annotations.json"
  jq --slurpfile a "$BATS_TEST_TMPDIR/annotations.json" '.object.metadata.annotations = $a[0]' test_data/pod-plain.json \
    >"$BATS_TEST_TMPDIR/full.json"
  kwctl_run "$BATS_TEST_TMPDIR/full.json" kata-workers.yml
  [ "$status" -eq 0 ]
  only_runtime_class_patch kata
  kwctl_run "$BATS_TEST_TMPDIR/full.json" kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata
  decision_is mutated
  no_warning
  [[ "$(jq -r .auditAnnotations.reason <<<"$response")" == "$ASSIGNED; decision annotation omitted: the pod's annotations take 262104 bytes, and with it would take"*"over the API server's limit of 262144 bytes" ]]
  # The same pod with room for it: annotated.
  jq '.object.metadata.annotations["example.com/big"] |= .[0:200000]' "$BATS_TEST_TMPDIR/full.json" >"$BATS_TEST_TMPDIR/room.json"
  kwctl_run "$BATS_TEST_TMPDIR/room.json" kata-workers.yml "$ANNOTATE"
  [ "$status" -eq 0 ]
  [ "$(jq -r .patch <<<"$response" | base64 -d | jq -r '.[] | select(.path == "/metadata/annotations/kata-runtime-policy.kubewarden.io~1decision") | .value')" = "mutated: $ASSIGNED" ]
  reason_is "$ASSIGNED"
}

@test "annotateDecision: refused pods, mirror pods, runtimeClassName \"\" and Deployments get no annotation" {
  local cases=(
    "pod-master-pinned.json|kata-workers.yml|{\"noFeasibleNode\":\"reject\"}"
    "pod-runc.json|NONE|{\"restrictRuntimeClasses\":true}"
    "pod-docker-agent.json|NONE|{\"incompatiblePod\":\"reject\"}"
    "pod-mirror.json|NONE|{}"
    "pod-empty-class.json|NONE|{}"
    "deployment.json|NONE|{}"
  )
  local entry request session settings before
  for entry in "${cases[@]}"; do
    IFS='|' read -r request session settings <<<"$entry"
    [ "$session" != NONE ] || session=$(no_host_calls)
    kwctl_run "$request" "$session" "$settings"
    [ "$status" -eq 0 ]
    before=$(jq -S . <<<"$response")
    kwctl_run "$request" "$session" "$(jq -c '. + {annotateDecision: true}' <<<"$settings")"
    [ "$status" -eq 0 ]
    no_patch
    [ "$(jq -S . <<<"$response")" = "$before" ]
  done
}

@test "annotateDecision is on by default: the required settings alone, or null, answer as true" {
  local cases=(
    "pod-plain.json|kata-workers.yml"
    "pod-master-pinned.json|kata-workers.yml"
    "pod-deployment-replica.json|kata-workers.yml"
    "pod-runtime-class.json|NONE"
  )
  local entry request session on
  for entry in "${cases[@]}"; do
    IFS='|' read -r request session <<<"$entry"
    [ "$session" != NONE ] || session=$(no_host_calls)
    kwctl_run "$request" "$session" "$ANNOTATE"
    [ "$status" -eq 0 ]
    on=$(jq -S . <<<"$response")
    [ "$(jq -r .patch <<<"$response")" != null ]
    kwctl_run "$request" "$session" '{"annotateDecision":null}'
    [ "$status" -eq 0 ]
    [ "$(jq -S . <<<"$response")" = "$on" ]
    # Exactly the required settings, as written: no annotateDecision key.
    run "$KWCTL" run --allow-context-aware --request-path "test_data/$request" \
      --settings-json "$REQUIRED_SETTINGS" \
      --replay-host-capabilities-interactions "$([[ "$session" == /* ]] && echo "$session" || echo "test_data/sessions/$session")" \
      "$POLICY"
    [ "$status" -eq 0 ]
    [ "$(printf '%s\n' "$output" | grep '^{' | tail -n 1 | jq -S .)" = "$on" ]
  done
  kwctl_run pod-plain.json kata-workers.yml '{"annotateDecision":null}'
  annotated_patch "mutated: $ASSIGNED" kata
}

@test "annotateDecision takes true or false only" {
  run "$KWCTL" run --allow-context-aware --request-path test_data/pod-plain.json \
    --settings-json '{"annotateDecision":"yes"}' \
    --replay-host-capabilities-interactions test_data/sessions/kata-workers.yml "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Provided settings are not valid"* ]]
  [[ "$output" == *'annotateDecision must be true or false, got \"yes\"'* ]] \
    || [[ "$output" == *'annotateDecision must be true or false, got "yes"'* ]]
}

@test "restrictRuntimeClasses: true without a list allows only the configured class" {
  kwctl_run pod-runc.json "$(no_host_calls)" '{"restrictRuntimeClasses":true}'
  [ "$status" -eq 0 ]
  refused_with 'runtimeClassName "runc" is not allowed (allowed: the configured class kata)'
  jq '.object.spec.runtimeClassName = "kata"' test_data/pod-runc.json >"$BATS_TEST_TMPDIR/kata.json"
  kwctl_run "$BATS_TEST_TMPDIR/kata.json" "$(no_host_calls)" '{"restrictRuntimeClasses":true}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  no_warning
}

@test "restrictRuntimeClasses: true with a list allows the listed classes too" {
  kwctl_run pod-runtime-class.json "$(no_host_calls)" '{"restrictRuntimeClasses":true,"allowedRuntimeClasses":["gvisor"]}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'pod already sets runtimeClassName "gvisor"; left unchanged'
  kwctl_run pod-runc.json "$(no_host_calls)" '{"restrictRuntimeClasses":true,"allowedRuntimeClasses":["gvisor"]}'
  refused_with 'runtimeClassName "runc" is not allowed (allowed: the configured class kata; allowedRuntimeClasses: gvisor)'
}

@test "restrictRuntimeClasses: false with an empty list (the shipped defaults) restricts nothing" {
  kwctl_run pod-runc.json "$(no_host_calls)" '{"restrictRuntimeClasses":false,"allowedRuntimeClasses":[]}'
  [ "$status" -eq 0 ]
  allowed true
  no_patch
  warning_is 'pod already sets runtimeClassName "runc"; left unchanged'
  # policy-settings.json as shipped: the same, with the decision annotated.
  kwctl_run pod-runc.json "$(no_host_calls)" "$(jq -c . policy-settings.json)"
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch 'unchanged: pod already sets runtimeClassName "runc"'
  warning_is 'pod already sets runtimeClassName "runc"; left unchanged'
}

@test "restrictRuntimeClasses: true with an empty allowedRuntimeClasses allows every configured class, and says so" {
  local settings
  settings=$(jq -c '. + {restrictRuntimeClasses: true, allowedRuntimeClasses: []}' <<<"$CLASSES")
  kwctl_run pod-runc.json "$(no_host_calls)" "$settings"
  [ "$status" -eq 0 ]
  refused_with 'runtimeClassName "runc" is not allowed (allowed: the configured classes kata-clh, kata-qemu-runtime-rs, kata-qemu-nvidia-gpu)'
  # Each configured class is allowed: runtimeClassName, a fallback, a routed one.
  for class in kata-clh kata-qemu-runtime-rs kata-qemu-nvidia-gpu; do
    jq --arg c "$class" '.object.spec.runtimeClassName = $c' test_data/pod-runc.json >"$BATS_TEST_TMPDIR/named.json"
    kwctl_run "$BATS_TEST_TMPDIR/named.json" "$(no_host_calls)" "$settings"
    [ "$status" -eq 0 ]
    allowed true
    no_patch
    no_warning
  done
  # With a list: its classes, after the configured ones, each group named.
  settings=$(jq -c '. + {restrictRuntimeClasses: true, allowedRuntimeClasses: ["gvisor", "kata-clh"]}' <<<"$CLASSES")
  kwctl_run pod-runc.json "$(no_host_calls)" "$settings"
  [ "$status" -eq 0 ]
  refused_with 'runtimeClassName "runc" is not allowed (allowed: the configured classes kata-clh, kata-qemu-runtime-rs, kata-qemu-nvidia-gpu; allowedRuntimeClasses: gvisor)'
}

@test "restrictRuntimeClasses: false with a list is refused as a contradiction" {
  run "$KWCTL" run --allow-context-aware --request-path test_data/pod-runc.json \
    --settings-json '{"restrictRuntimeClasses":false,"allowedRuntimeClasses":["gvisor"]}' \
    --replay-host-capabilities-interactions "$(no_host_calls)" "$POLICY"
  [ "$status" -ne 0 ]
  [[ "$output" == *"Provided settings are not valid"* ]]
  [[ "$output" == *'restrictRuntimeClasses: false contradicts allowedRuntimeClasses [\"gvisor\"]: set restrictRuntimeClasses: true, or remove the list'* ]] \
    || [[ "$output" == *'restrictRuntimeClasses: false contradicts allowedRuntimeClasses ["gvisor"]: set restrictRuntimeClasses: true, or remove the list'* ]]
}

# The strict recipe of the operator guide (the Kata-mandatory example's settings).
GUIDE_RECIPE='{"runtimeClassName":"kata","kataNodeSelector":"katacontainers.io/kata-runtime=true","policyServerServiceAccount":"system:serviceaccount:kubewarden:kata-runtime-policy","incompatiblePod":"reject","noFeasibleNode":"reject","lookupFailure":"reject","restrictRuntimeClasses":true,"allowedRuntimeClasses":[],"runtimeHandlerCheck":"auto","annotateDecision":true}'

@test "the guide's strict recipe: runc and the docker.sock agent refused without asking the cluster, kata annotated" {
  kwctl_run pod-runc.json "$(no_host_calls)" "$GUIDE_RECIPE"
  [ "$status" -eq 0 ]
  refused_with 'runtimeClassName "runc" is not allowed (allowed: the configured class kata)'
  kwctl_run pod-docker-agent.json "$(no_host_calls)" "$GUIDE_RECIPE"
  [ "$status" -eq 0 ]
  refused_with "$REQUIRED$DOCKER_SOCKET_FINDING"
  jq '.object.spec.runtimeClassName = "kata"' test_data/pod-runc.json >"$BATS_TEST_TMPDIR/kata.json"
  kwctl_run "$BATS_TEST_TMPDIR/kata.json" "$(no_host_calls)" "$GUIDE_RECIPE"
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch 'unchanged: pod already sets runtimeClassName "kata"'
  no_warning
}

# Several Kata classes (kata-deploy 4.x): fallbackRuntimeClasses and
# runtimeClassesByResource. Each class runs the handler of its name.
CLASSES='{"runtimeClassName":"kata-clh","fallbackRuntimeClasses":["kata-qemu-runtime-rs"],"runtimeClassesByResource":[{"resources":["nvidia.com/pgpu"],"runtimeClassNames":["kata-qemu-nvidia-gpu"]}]}'

@test "fallbackRuntimeClasses: an arm64 pod gets the first class an arm64 kata node runs, and is told why" {
  kwctl_run pod-arm64.json classes-arm64.yml "$CLASSES"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata-qemu-runtime-rs
  explained 'runtimeClassName "kata-qemu-runtime-rs" assigned (kata-clh: 0/3 kata nodes can run this pod: 2 node(s) didn'"'"'t match Pod'"'"'s node affinity/selector, 1 node(s) do not report runtime handler "kata-clh")'
  decision_is mutated
}

@test "runtimeClassesByResource: a VFIO GPU pod gets the GPU class, never the general ones" {
  kwctl_run pod-vfio-gpu.json classes-gpu.yml "$CLASSES"
  [ "$status" -eq 0 ]
  allowed true
  only_runtime_class_patch kata-qemu-nvidia-gpu
  no_warning
  decision_is mutated
}

@test "logDecisions: each evaluated pod is one line of the policy's log, named by generateName before the API server names it" {
  kwctl_run pod-master-pinned.json kata-workers.yml '{"logDecisions":true}'
  [ "$status" -eq 0 ]
  allowed true
  decision_is unchanged
  [[ "$output" == *"default/nginx-schedule-on-master: unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"* ]]
  kwctl_run pod-deployment-replica.json kata-workers.yml '{"logDecisions":true}'
  [ "$status" -eq 0 ]
  decision_is mutated
  [[ "$output" == *"default/web-7d4b9c8f5-*: mutated: $ASSIGNED"* ]]
  # Off by default: no such line.
  kwctl_run pod-deployment-replica.json kata-workers.yml
  [[ "$output" != *"default/web-7d4b9c8f5-*"* ]]
}

@test "null is the default for every setting (Helm renders unset values as null)" {
  kwctl_run pod-plain.json kata-workers.yml '{"annotateDecision":null,"runtimeHandlerCheck":null,"kataNodeSelector":null,"noFeasibleNode":null,"skipPodsUsing":null,"logDecisions":null}'
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "mutated: $ASSIGNED" kata
  no_warning
  reason_is "$ASSIGNED"
}

# runtimeClassName and policyServerServiceAccount have no default.
CLASS_REQUIRED="runtimeClassName is required: the Kata RuntimeClass to assign (kata-deploy 4.x creates kata-qemu-runtime-rs for its default shim, and kata-qemu, kata-clh, ... for the others; list yours with kubectl get runtimeclass)"
ACCOUNT_REQUIRED="policyServerServiceAccount is required: the ServiceAccount the policy's PolicyServer runs as, as \"system:serviceaccount:<namespace>:<name>\" (kubectl get policyserver <policyserver> -o jsonpath='{.spec.serviceAccountName}'; the kubewarden-defaults chart's PolicyServer runs as system:serviceaccount:kubewarden:policy-server)"

# settings_refused_with SETTINGS_JSON MESSAGE: the settings, exactly as given,
# are refused before any evaluation, with exactly MESSAGE.
settings_refused_with() {
  run "$KWCTL" run --allow-context-aware --request-path test_data/pod-plain.json \
    --settings-json "$1" \
    --replay-host-capabilities-interactions "$(no_host_calls)" "$POLICY"
  [ "$status" -ne 0 ]
  # kwctl may print the message JSON-escaped: compare both spellings.
  local escaped
  escaped=$(jq -rn --arg m "$2" '$m | @json | .[1:-1]')
  [[ "$output" == *"Provided settings are not valid: $2"* ]] \
    || [[ "$output" == *"Provided settings are not valid: $escaped"* ]]
  [[ "$output" != *'"allowed"'* ]]
}

@test "settings without runtimeClassName are refused, saying what to set" {
  settings_refused_with '{"policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}' "$CLASS_REQUIRED"
  settings_refused_with '{"runtimeClassName":null,"policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}' "$CLASS_REQUIRED"
  settings_refused_with '{"runtimeClassName":"","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}' "$CLASS_REQUIRED"
}

@test "settings without policyServerServiceAccount are refused, saying what to set" {
  settings_refused_with '{"runtimeClassName":"kata-qemu-runtime-rs"}' "$ACCOUNT_REQUIRED"
  settings_refused_with '{"runtimeClassName":"kata-qemu-runtime-rs","policyServerServiceAccount":null}' "$ACCOUNT_REQUIRED"
}

@test "{} lists both required settings, then every other error" {
  settings_refused_with '{}' "$CLASS_REQUIRED; $ACCOUNT_REQUIRED"
  settings_refused_with '{"noFeasibleNode":"acept"}' "$CLASS_REQUIRED; $ACCOUNT_REQUIRED; noFeasibleNode must be \"accept\" or \"reject\", got \"acept\""
}

# Try it first (README): the settings of examples/cluster-admission-policy.yaml
# as they are (test_data/settings-examples.yml, `make example-sessions`), with
# sessions whose can_i questions are asked for its policyServerServiceAccount
# (test_data/sessions/examples/, scripts/sessions-for-account.sh).
EXAMPLE_SETTINGS=test_data/settings-examples.yml
EXAMPLE_ACCOUNT=system:serviceaccount:kubewarden:kata-runtime-policy
# kwctl_run_example REQUEST SESSION: SESSION is a path from the checkout.
kwctl_run_example() {
  run "$KWCTL" run --allow-context-aware \
    --request-path "test_data/$1" \
    --settings-path "$EXAMPLE_SETTINGS" \
    --replay-host-capabilities-interactions "$2" \
    "$POLICY"
  response=$(printf '%s\n' "$output" | grep '^{' | tail -n 1)
}

# The examples' class: kata-deploy 4.x's default shim's.
EXAMPLE_CLASS=kata-qemu-runtime-rs
EXAMPLE_ASSIGNED="runtimeClassName \"$EXAMPLE_CLASS\" assigned: a kata node can run this pod"

@test "try it first: the protect example's settings give a plain pod kata, with the decision annotation" {
  grep -q "^policyServerServiceAccount: $EXAMPLE_ACCOUNT\$" "$EXAMPLE_SETTINGS"
  grep -q "^runtimeClassName: $EXAMPLE_CLASS\$" "$EXAMPLE_SETTINGS"
  kwctl_run_example pod-plain.json test_data/sessions/examples/kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "mutated: $EXAMPLE_ASSIGNED" "$EXAMPLE_CLASS"
  no_warning
  decision_is mutated
  reason_is "$EXAMPLE_ASSIGNED"
}

@test "try it first: the protect example's settings leave the master-pinned pod alone, in the scheduler's words" {
  kwctl_run_example pod-master-pinned.json test_data/sessions/examples/kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
  explained "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
  decision_is unchanged
}

@test "try it first: the protect example's settings on the k3s story leave a plain pod alone" {
  kwctl_run_example pod-plain.json test_data/sessions/examples/handlers-k3s.yml
  [ "$status" -eq 0 ]
  allowed true
  annotated_patch "unchanged: 0/2 kata nodes can run this pod: 2 node(s) do not report runtime handler \"$EXAMPLE_CLASS\""
  explained "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) do not report runtime handler \"$EXAMPLE_CLASS\""
  decision_is unchanged
}

@test "a session recorded for another policyServerServiceAccount: the reason says so, then the replay's text" {
  # The examples' class, recorded for kubewarden-defaults' PolicyServer.
  kwctl_run_example pod-plain.json test_data/sessions/kata-deploy-4/kata-workers.yml
  [ "$status" -eq 0 ]
  allowed true
  decision_is unchanged
  local reason
  reason=$(jq -r '.auditAnnotations.reason' <<<"$response")
  [[ "$reason" == "kata runtime not assigned: cannot check whether $EXAMPLE_ACCOUNT may list nodes (kubernetes/can_i): the recorded session has no answer for this request (recorded for another policyServerServiceAccount, pod or settings?): Replay error: unexpected request. Was expecting KubernetesCanI {"*'user: "system:serviceaccount:kubewarden:policy-server"'*"} instead" ]]
  [ "$(jq -r '.warnings[0] | length' <<<"$response")" -le 255 ]
  jq -r '.warnings[0]' <<<"$response" | grep -q 'recorded for another policyServerServiceAccount'
}

# policy-server exports each answer's code as the label error_code of
# kubewarden_policy_evaluations_total: the one number per evaluation that
# tells a pod given Kata from one left as it is, admitted ones included.
@test "every Pod CREATE answer carries its decision's code, admitted or refused" {
  for case in "pod-plain.json|kata-workers.yml|200" "pod-master-pinned.json|kata-workers.yml|412" \
    "pod-host-network.json|kata-workers.yml|422" "pod-runtime-class.json|kata-workers.yml|403" \
    "pod-empty-class.json|NONE|204" "pod-mirror.json|NONE|204" "pod-plain.json|nodes-access-denied.yml|503"; do
    IFS='|' read -r pod session code <<<"$case"
    if [ "$session" = NONE ]; then session=$(no_host_calls); fi
    kwctl_run "$pod" "$session"
    [ "$status" -eq 0 ]
    allowed true
    [ "$(jq -r '.status.code // "none"' <<<"$response")" = "$code" ] || {
      echo "$pod: $(jq -c .status <<<"$response"), want $code"
      false
    }
  done
  kwctl_run pod-master-pinned.json kata-workers.yml '{"noFeasibleNode":"reject"}'
  allowed false
  [ "$(jq -r .status.code <<<"$response")" = 412 ]
}
