#!/usr/bin/env bash
# Runs policy.wasm on the example pods in test_data/ against recorded cluster
# sessions and prints, for each, what the policy decided and why.
set -euo pipefail
cd "$(dirname "$0")/.."
KWRUN=${KWRUN:-target/debug/kwrun}
POLICY=${POLICY:-policy.wasm}

# What every scenario's settings add to: the two required settings, for the
# class and the PolicyServer account the recorded sessions ask about, and
# no decision annotation (the patch shows the class alone) unless a
# scenario turns it on.
BASE='{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server","annotateDecision":false}'

# The settings of a namespace where every pod must run under Kata (the
# example ClusterAdmissionPolicy kata-runtime-mandatory), with the default
# policyServerServiceAccount the recorded sessions ask about.
KATA_MANDATORY='{"incompatiblePod":"reject","noFeasibleNode":"reject","lookupFailure":"reject","restrictRuntimeClasses":true,"allowedRuntimeClasses":[],"runtimeHandlerCheck":"auto","annotateDecision":true}'

# kata-deploy 4.x's classes, ranked: kata-clh (amd64 only) first, then
# kata-qemu-runtime-rs, and the GPU class for pods that ask for a VFIO GPU.
CLASSES='{"runtimeClassName":"kata-clh","fallbackRuntimeClasses":["kata-qemu-runtime-rs"],"runtimeClassesByResource":[{"resources":["nvidia.com/pgpu"],"runtimeClassNames":["kata-qemu-nvidia-gpu"]}]}'

# request | session | settings | what the cluster looks like
scenarios=(
  "pod-plain.json|kata-workers.yml|{}|two kata workers, a tainted master without kata"
  "pod-master-pinned.json|kata-workers.yml|{}|same cluster: the pod that started it all"
  "pod-master-pinned.json|kata-workers.yml|{\"noFeasibleNode\":\"reject\"}|same, with noFeasibleNode=reject"
  "pod-daemonset.json|node-worker-2.yml|{}|DaemonSet pod pinned to worker-2 (matchFields): reads that node only"
  "pod-daemonset-master.json|node-master.yml|{}|DaemonSet pod pinned to the master"
  "pod-node-name.json|node-worker-1.yml|{}|pod bound to worker-1 by nodeName: reads that node only"
  "pod-node-name-missing.json|node-missing.yml|{}|pod bound to a node that does not exist"
  "pod-vfio-gpu.json|kata-workers.yml|{}|a VFIO GPU pod (nvidia.com/pgpu); the kata workers have no GPUs"
  "pod-vfio-gpu.json|kata-gpu-group.yml|{}|the same VFIO GPU pod; one kata node group has GPUs"
  "pod-overhead-edge.json|kata-workers.yml|{}|7800m cpu on 7910m kata workers, no overhead"
  "pod-overhead-edge.json|kata-overhead.yml|{}|the same pod; the RuntimeClass adds 250m cpu overhead"
  "pod-topology-spread.json|kata-workers.yml|{}|spread over zones; kata workers have no zone label"
  "pod-statefulset.json|volume-zone-b.yml|{}|StatefulSet pod, disk in eu-west-1b; kata workers in eu-west-1a"
  "pod-statefulset.json|volume-zone-b-kata.yml|{}|the same pod; kata worker-2 in eu-west-1b"
  "pod-statefulset.json|volume-recreated-claim.yml|{}|the claim was recreated; its old disk in eu-west-1a names the old claim's UID"
  "pod-affinity-db.json|affinity-db-off-kata.yml|{}|an API pod that must run on its database's node; the database runs on a node without Kata"
  "pod-affinity-db.json|affinity-db-kata.yml|{}|the same pod; the database runs on kata worker-2"
  "pod-local-volume.json|volume-local.yml|{}|local-storage claim; the local volumes are on storage nodes"
  "pod-zonal-class.json|volume-allowed-topologies.yml|{}|ephemeral volume whose class only provisions in eu-west-1b"
  "pod-statefulset.json|kata-workers.yml|{\"checkVolumes\":false}|the StatefulSet pod with checkVolumes=false"
  "pod-statefulset.json|volume-forbidden.yml|{}|policy-server may not read claims (RBAC)"
  "pod-host-network.json|kata-workers.yml|{}|hostNetwork pod"
  "pod-csi-node-plugin.json|node-worker-2.yml|{}|a privileged CSI node plugin on a kata worker (kubelet sockets, Bidirectional, /dev)"
  "pod-docker-agent.json|kata-workers.yml|{}|a log agent that mounts /var/run/docker.sock"
  "pod-docker-agent.json|kata-workers.yml|{\"skipPodsUsing\":[\"hostNamespaces\",\"userNamespaces\",\"windows\",\"hostDevices\",\"mountPropagation\",\"deviceResources\",\"dynamicResources\",\"imageVolumes\"]}|the same agent with hostSockets off"
  "pod-dind-builder.json|kata-workers.yml|{}|a Docker-in-Docker CI builder: privileged, no host paths (root in the VM, not on the node)"
  "pod-dind-builder.json|kata-workers.yml|{\"skipPodsUsing\":[\"hostNamespaces\",\"userNamespaces\",\"windows\",\"privileged\",\"hostSockets\",\"hostDevices\",\"mountPropagation\",\"deviceResources\",\"dynamicResources\",\"imageVolumes\"]}|the same builder with privileged opted in (Kata runtime with privileged_without_host_devices = false)"
  "pod-user-namespace.json|kata-workers.yml|{}|a pod with hostUsers: false (user namespace)"
  "pod-gpu.json|kata-gpu-group.yml|{}|a device-plugin GPU pod (nvidia.com/gpu) where a kata node has GPUs"
  "pod-dra-template.json|kata-workers.yml|{}|a GPU job whose claim comes from a ResourceClaimTemplate (DRA), shared with a metrics sidecar"
  "pod-dra-claim.json|kata-workers.yml|{}|a router using a NIC through an existing ResourceClaim (DRA)"
  "pod-dra-template.json|kata-workers.yml|{\"skipPodsUsing\":[\"hostNamespaces\",\"userNamespaces\",\"windows\",\"hostSockets\",\"hostDevices\",\"mountPropagation\",\"deviceResources\",\"imageVolumes\"]}|the same GPU job with dynamicResources off (devices on Kata nodes not checked)"
  "pod-dra-extended-resource.json|kata-workers.yml|{}|a CUDA job asking for its GPU as the DeviceClass's extended resource (deviceclass.resource.kubernetes.io/gpu.example.com, DRA)"
  "pod-image-volume.json|kata-workers.yml|{}|an agent sandbox whose tools arrive as an OCI image volume (spec.volumes[].image)"
  "pod-image-volume.json|kata-workers.yml|{\"skipPodsUsing\":[\"hostNamespaces\",\"userNamespaces\",\"windows\",\"hostSockets\",\"hostDevices\",\"mountPropagation\",\"deviceResources\",\"dynamicResources\"]}|the same sandbox with imageVolumes off"
  "pod-arm64.json|classes-arm64.yml|{\"runtimeClassName\":\"kata-clh\"}|an arm64 pod; one class per shim (kata-deploy 4.x), kata-clh (amd64 only) configured alone"
  "pod-arm64.json|classes-arm64.yml|$CLASSES|the same arm64 pod, kata-clh then kata-qemu-runtime-rs: the first class an arm64 kata node runs"
  "pod-vfio-gpu.json|classes-gpu.yml|$CLASSES|the VFIO GPU pod with the same settings: nvidia.com/pgpu routed to kata-qemu-nvidia-gpu"
  "pod-runtime-class.json|kata-workers.yml|{}|pod that already names gvisor"
  "pod-runc.json|kata-workers.yml|{\"allowedRuntimeClasses\":[\"gvisor\"]}|a tenant pod naming runc; only gvisor (and kata) allowed"
  "pod-runc.json|kata-workers.yml|{\"allowedRuntimeClasses\":[\"gvisor\",\"runc\"]}|the same pod, runc allowed"
  "pod-runc.json|kata-workers.yml|{\"restrictRuntimeClasses\":true}|the same pod; restrictRuntimeClasses=true without a list: only kata allowed"
  "pod-empty-class.json|kata-workers.yml|{}|runtimeClassName: \"\" (the API server refuses it)"
  "pod-plain.json|kata-workers.yml|{\"annotateDecision\":true}|annotateDecision=true: the decision is written on the pod"
  "pod-master-pinned.json|kata-workers.yml|{\"annotateDecision\":true}|annotateDecision=true: the master-pinned pod carries why it has no kata"
  "pod-deployment-replica.json|kata-workers.yml|{\"annotateDecision\":true}|a Deployment's pod, created by the ReplicaSet controller, with annotateDecision=true"
  "pod-docker-agent.json|kata-workers.yml|$KATA_MANDATORY|Kata-mandatory: an agent that mounts /var/run/docker.sock"
  "pod-user-namespace.json|kata-workers.yml|$KATA_MANDATORY|Kata-mandatory: the hostUsers: false pod"
  "pod-plain.json|kata-workers.yml|$KATA_MANDATORY|Kata-mandatory: a plain pod"
  "pod-master-pinned.json|kata-workers.yml|$KATA_MANDATORY|Kata-mandatory: the master-pinned pod"
  "pod-runc.json|kata-workers.yml|$KATA_MANDATORY|Kata-mandatory: a tenant pod naming runc"
  "pod-mirror.json|kata-workers.yml|$KATA_MANDATORY|Kata-mandatory: the mirror of a static etcd pod (hostNetwork), created by the kubelet"
  "pod-plain.json|runtimeclass-scheduling.yml|{}|RuntimeClass tolerates the dedicated-kata taint"
  "pod-master-pinned.json|runtimeclass-scheduling.yml|{}|dedicated + cordoned kata nodes"
  "pod-selector-conflict.json|runtimeclass-scheduling.yml|{}|nodeSelector conflicts with the RuntimeClass"
  "pod-plain.json|runtimeclass-missing.yml|{}|RuntimeClass kata not installed"
  "pod-plain.json|no-kata-nodes.yml|{}|no node labelled for kata yet"
  "pod-plain.json|handlers-k3s.yml|{}|k3s: kata-deploy labelled both nodes, class kata has handler kata-qemu, but containerd reports only the handlers \"\" and runc"
  "pod-plain.json|handlers-partial.yml|{}|kata-good reports handler kata-qemu, kata-broken does not, kata-cordoned is cordoned"
  "pod-strict-supplemental-groups.json|strict-unsupported.yml|{}|supplementalGroupsPolicy: Strict; both kata nodes still on containerd 1.7 (no status.features)"
  "pod-strict-supplemental-groups.json|strict-partial.yml|{}|the same Strict pod mid-upgrade: kata-1 on containerd 2.1 reports the feature, kata-2 on 1.7 does not"
  "pod-gated.json|kata-workers.yml|{}|a pod created with a scheduling gate (example.com/hold), held until whatever set it removes it"
  "pod-plain.json|nodes-access-denied.yml|{}|policy-server may not list nodes (RBAC): asked first, never listed"
  "pod-plain.json|can-i-error.yml|{}|the access question fails (API server unreachable)"
  "pod-plain.json|forbidden.yml|{}|the node list itself refused (contextAwareResources)"
  "deployment.json|kata-workers.yml|{}|a Deployment (only Pods are evaluated)"
)

for scenario in "${scenarios[@]}"; do
  IFS='|' read -r request session settings description <<<"$scenario"
  response=$("$KWRUN" run --allow-context-aware --request-path "test_data/$request" \
    --settings-json "$(jq -c --argjson s "$settings" '. + $s' <<<"$BASE")" \
    --replay-host-capabilities-interactions "test_data/sessions/$session" "$POLICY")
  decision=$(jq -r '.auditAnnotations.decision // "?"' <<<"$response")
  reason=$(jq -r '.auditAnnotations.reason // .status.message // ""' <<<"$response")
  patch=$(jq -r 'if .patch then (.patch | @base64d | fromjson | map("\(.op) \(.path)=\(.value)") | join(", ")) else "none" end' <<<"$response")
  printf '\n\033[1m%s\033[0m  (%s; settings %s)\n' "$request" "$description" "$settings"
  printf '  decision: %s (code %s)   allowed: %s   patch: %s\n' "$decision" "$(jq -r '.status.code // "-"' <<<"$response")" "$(jq -r .allowed <<<"$response")" "$patch"
  printf '  why:      %s\n' "$reason"
done
echo
echo "Equivalent kwctl command for one of them:"
echo "  kwctl run --allow-context-aware --request-path test_data/pod-master-pinned.json \\"
echo "    --settings-json '$BASE' \\"
echo "    --replay-host-capabilities-interactions test_data/sessions/kata-workers.yml annotated-policy.wasm"
