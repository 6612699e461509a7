//! Integration tests: the real `policy.wasm`, run in the waPC host exactly as
//! policy-server runs it, with cluster answers replayed from the same session
//! files that e2e.bats uses.
//!
//! The module is `$POLICY_WASM`, else `policy.wasm` at the repository root,
//! else the release build in `target/`, which is built if it is missing.

mod common;

use common::{TestPolicy, kata_mandatory, request, root, session, test_policy, test_settings};
use kwrun::{AdmissionResponse, Session};
use serde_json::{Value, json};

/// Runs one fixture and checks that the session was used up exactly when the
/// policy was expected to ask the cluster.
fn run(
    policy: &TestPolicy,
    request_file: &str,
    session_file: &str,
    settings: Value,
) -> AdmissionResponse {
    policy.evaluate(&request(request_file), &settings, session(session_file))
}

fn warning(r: &AdmissionResponse) -> &str {
    r.warnings
        .as_ref()
        .and_then(|w| w.first())
        .map(String::as_str)
        .unwrap_or("")
}

fn assert_only_runtime_class_added(r: &AdmissionResponse, class: &str) {
    assert!(r.allowed, "{r:?}");
    assert_eq!(r.patch_type.as_deref(), Some("JSONPatch"), "{r:?}");
    assert_eq!(
        r.patch_operations().unwrap(),
        Some(json!([{"op": "add", "path": "/spec/runtimeClassName", "value": class}]))
    );
}

fn assert_unchanged(r: &AdmissionResponse) {
    assert!(r.allowed, "{r:?}");
    assert_eq!(r.patch, None, "{r:?}");
}

#[test]
fn settings_are_validated_by_the_module() {
    let p = test_policy();
    // runtimeClassName and policyServerServiceAccount are required: {}
    // lists both, each with what to set.
    let empty = p.validate_settings(b"{}").unwrap();
    assert_eq!(empty["valid"], false, "{empty}");
    let message = empty["message"].as_str().unwrap();
    assert!(
        message.starts_with("runtimeClassName is required: the Kata RuntimeClass to assign")
            && message.contains("; policyServerServiceAccount is required: the ServiceAccount"),
        "{message}"
    );
    let ok = std::fs::read(root().join("policy-settings.json")).unwrap();
    assert_eq!(p.validate_settings(&ok).unwrap()["valid"], true);
    for ok in [
        json!({"incompatiblePod": "accept"}),
        json!({"incompatiblePod": "reject"}),
        kata_mandatory(),
    ] {
        let ok = test_settings(&ok);
        let v = p.validate_settings(ok.to_string().as_bytes()).unwrap();
        assert_eq!(v, json!({"valid": true, "message": null}), "{ok}");
    }
    for (bad, names) in [
        (&br#"{"runtimeClassName":""}"#[..], "runtimeClassName"),
        (br#"{"kataNodeSelector":"a in x"}"#, "kataNodeSelector"),
        (br#"{"noFeasibleNode":"deny"}"#, "noFeasibleNode"),
        (br#"{"lookupFailure":1}"#, "lookupFailure"),
        (br#"{"skipHostNamespaces":"no"}"#, "skipHostNamespaces"),
        (br#"{"ignoredResources":["gpu"]}"#, "ignoredResources"),
        (
            br#"{"policyServerServiceAccount":"policy-server"}"#,
            "policyServerServiceAccount",
        ),
        (
            br#"{"runtimeHandlerCheck":"strict"}"#,
            r#"runtimeHandlerCheck must be "auto", "required" or "off", got "strict""#,
        ),
        (br#"{"runtimeHandlerCheck":true}"#, "runtimeHandlerCheck"),
        (
            br#"{"incompatiblePod":"Reject"}"#,
            r#"incompatiblePod must be "accept" or "reject", got "Reject""#,
        ),
        (
            br#"{"incompatiblePod":true}"#,
            r#"incompatiblePod must be "accept" or "reject", got true"#,
        ),
        // Every known feature, in the order findings are reported.
        (
            br#"{"skipPodsUsing":["hostSocket"]}"#,
            "skipPodsUsing: unknown feature \"hostSocket\"; known features: hostNamespaces, \
             userNamespaces, windows, privileged, hostSockets, hostDevices, mountPropagation, \
             deviceResources, dynamicResources, imageVolumes, seccomp, appArmor, seLinux, subPath, \
             memoryEmptyDirLimit",
        ),
        (br#"{"bogus":true}"#, "bogus"),
        (b"not json", "not valid JSON"),
    ] {
        let v = p.validate_settings(bad).unwrap();
        assert_eq!(v["valid"], false, "{v}");
        assert!(v["message"].as_str().unwrap().contains(names), "{v}");
    }
}

#[test]
fn the_seed_case_and_plain_pods() {
    let p = test_policy();
    let plain = run(&p, "pod-plain.json", "kata-workers.yml", json!({}));
    assert_only_runtime_class_added(&plain, "kata");
    assert_eq!(plain.uid, "7a1f0c66-1d1e-4c39-9c2e-000000000002");
    assert_eq!(plain.warnings, None);
    assert_eq!(
        plain.audit_annotations.as_ref().unwrap()["decision"],
        "mutated"
    );

    let pinned = run(&p, "pod-master-pinned.json", "kata-workers.yml", json!({}));
    assert_unchanged(&pinned);
    assert_eq!(
        warning(&pinned),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
    );
    let refused = run(
        &p,
        "pod-master-pinned.json",
        "kata-workers.yml",
        json!({"noFeasibleNode": "reject"}),
    );
    assert!(!refused.allowed);
    // The same reasons, led by the setting that requires Kata.
    assert_eq!(
        refused.status.as_ref().unwrap().message.as_deref(),
        Some(
            warning(&pinned)
                .replace(
                    "kata runtime not assigned: ",
                    "kata runtime required (noFeasibleNode: reject), and not assigned: "
                )
                .as_str()
        )
    );
}

#[test]
fn pinned_and_bound_pods() {
    let p = test_policy();
    assert_only_runtime_class_added(
        &run(&p, "pod-daemonset.json", "node-worker-2.yml", json!({})),
        "kata",
    );
    let master = run(
        &p,
        "pod-daemonset-master.json",
        "node-master.yml",
        json!({}),
    );
    assert_unchanged(&master);
    assert!(
        warning(&master).contains("\"master\" is not a kata node"),
        "{master:?}"
    );
    let missing = run(
        &p,
        "pod-node-name-missing.json",
        "node-missing.yml",
        json!({}),
    );
    assert_unchanged(&missing);
    assert!(
        warning(&missing).ends_with("\"worker-9\" does not exist"),
        "{missing:?}"
    );
    assert_only_runtime_class_added(
        &run(&p, "pod-node-name.json", "node-worker-1.yml", json!({})),
        "kata",
    );
}

#[test]
fn resources_overhead_and_topology_labels() {
    let p = test_policy();
    let gpu = run(&p, "pod-vfio-gpu.json", "kata-workers.yml", json!({}));
    assert_unchanged(&gpu);
    assert_eq!(
        warning(&gpu),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 Insufficient nvidia.com/pgpu"
    );
    assert_only_runtime_class_added(
        &run(&p, "pod-vfio-gpu.json", "kata-gpu-group.yml", json!({})),
        "kata",
    );
    assert_only_runtime_class_added(
        &run(
            &p,
            "pod-vfio-gpu.json",
            "kata-workers.yml",
            json!({"ignoredResources": ["nvidia.com/pgpu"]}),
        ),
        "kata",
    );
    let edge = run(&p, "pod-overhead-edge.json", "kata-overhead.yml", json!({}));
    assert_unchanged(&edge);
    assert_eq!(
        warning(&edge),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 Insufficient cpu"
    );
    assert_only_runtime_class_added(
        &run(&p, "pod-overhead-edge.json", "kata-workers.yml", json!({})),
        "kata",
    );
    let spread = run(
        &p,
        "pod-topology-spread.json",
        "kata-workers.yml",
        json!({}),
    );
    assert_unchanged(&spread);
    assert_eq!(
        warning(&spread),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: \
         2 node(s) didn't match pod topology spread constraints (missing required label)"
    );
}

/// The default `skipPodsUsing`, written out, without `off` and with `on`.
fn defaults_with(off: &str, on: &str) -> Value {
    let mut features: Vec<&str> = [
        "hostNamespaces",
        "userNamespaces",
        "windows",
        "hostSockets",
        "hostDevices",
        "mountPropagation",
        "deviceResources",
        "dynamicResources",
        "imageVolumes",
    ]
    .into_iter()
    .filter(|f| *f != off)
    .collect();
    if !on.is_empty() {
        features.push(on);
    }
    json!({ "skipPodsUsing": features })
}

/// The CSI node plugin's findings under the defaults: its kubelet sockets,
/// /dev and Bidirectional propagation (its privileged container is not one).
const CSI_FINDINGS: [&str; 7] = [
    "container \"node-driver-registrar\" mounts host socket path /var/lib/kubelet/plugins/csi.example.com \
     (under /var/lib/kubelet/plugins) (hostPath volume \"socket-dir\"), which a Kata VM cannot reach \
     (skipPodsUsing: hostSockets)",
    "container \"csi-plugin\" mounts host socket path /var/lib/kubelet/plugins/csi.example.com \
     (under /var/lib/kubelet/plugins) (hostPath volume \"socket-dir\"), which a Kata VM cannot reach \
     (skipPodsUsing: hostSockets)",
    "container \"node-driver-registrar\" mounts host socket path /var/lib/kubelet/plugins_registry \
     (in hostSocketPaths) (hostPath volume \"registration-dir\"), which a Kata VM cannot reach \
     (skipPodsUsing: hostSockets)",
    "container \"csi-plugin\" mounts host socket path /var/lib/kubelet/plugins (in hostSocketPaths) \
     (hostPath volume \"plugins-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)",
    "container \"csi-plugin\" mounts host device path /dev (hostPath volume \"dev-dir\"), but Kata gives \
     it the VM's device node, not the host's (skipPodsUsing: hostDevices)",
    "container \"csi-plugin\" mounts hostPath volume \"mountpoint-dir\" (/var/lib/kubelet/pods) with \
     mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)",
    "container \"csi-plugin\" mounts hostPath volume \"plugins-dir\" (/var/lib/kubelet/plugins) with \
     mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)",
];

#[test]
fn pods_kata_cannot_run() {
    let p = test_policy();
    let csi = run(
        &p,
        "pod-csi-node-plugin.json",
        "node-worker-2.yml",
        json!({}),
    );
    assert_unchanged(&csi);
    assert_eq!(
        csi.audit_annotations.as_ref().unwrap()["reason"],
        format!("kata runtime not assigned: {}", CSI_FINDINGS.join("; "))
    );
    assert_eq!(
        warning(&csi),
        "kata runtime not assigned: container \"node-driver-registrar\" mounts host socket path \
         /var/lib/kubelet/plugins/csi.example.com (under /var/lib/kubelet/plugins) (hostPath volume \
         \"socket-dir\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets); co..."
    );
    assert_eq!(warning(&csi).len(), 255);
    // With privileged opted in, its privileged container comes first.
    let opted_in = run(
        &p,
        "pod-csi-node-plugin.json",
        "node-worker-2.yml",
        defaults_with("", "privileged"),
    );
    assert_unchanged(&opted_in);
    assert_eq!(
        opted_in.audit_annotations.as_ref().unwrap()["reason"],
        format!(
            "kata runtime not assigned: container \"csi-plugin\" is privileged, and a privileged \
             container under Kata gets the VM's devices, not the host's (skipPodsUsing: privileged); {}",
            CSI_FINDINGS.join("; ")
        )
    );
    // Even where a kata node has GPUs, the device plugin's GPU is not passed in.
    let gpu = run(&p, "pod-gpu.json", "kata-gpu-group.yml", json!({}));
    assert_unchanged(&gpu);
    assert!(
        warning(&gpu).ends_with("(skipPodsUsing: deviceResources)"),
        "{gpu:?}"
    );
    // With hostSockets off, the agent is judged on scheduling: it fits.
    assert_only_runtime_class_added(
        &run(
            &p,
            "pod-docker-agent.json",
            "kata-workers.yml",
            defaults_with("hostSockets", ""),
        ),
        "kata",
    );
}

const DRA_TEMPLATE: &str = "kata runtime not assigned: claim \"gpu\" (ResourceClaimTemplate \"one-gpu\"), \
    used by container \"cuda\", init container \"gpu-metrics\", asks for DRA-allocated devices, which Kata \
    does not pass into its VM (skipPodsUsing: dynamicResources)";
const DRA_CLAIM: &str = "kata runtime not assigned: claim \"nic\" (ResourceClaim \"shared-nic\"), used by \
    container \"router\", asks for DRA-allocated devices, which Kata does not pass into its VM \
    (skipPodsUsing: dynamicResources)";
const ASSIGNED: &str = "runtimeClassName \"kata\" assigned: a kata node can run this pod";

#[test]
fn dra_pods_stay_off_kata_without_asking_the_cluster() {
    let p = test_policy();
    for (file, reason) in [
        ("pod-dra-template.json", DRA_TEMPLATE),
        ("pod-dra-claim.json", DRA_CLAIM),
    ] {
        // No cluster at all, and settings that would refuse on any lookup
        // failure or unfit pod: the claim alone decides.
        for settings in [
            json!({}),
            json!({"noFeasibleNode": "reject", "lookupFailure": "reject"}),
        ] {
            let r = p.evaluate(&request(file), &settings, Session::from_exchanges([]));
            assert_unchanged(&r);
            assert_explained(&r, "unchanged", reason);
        }
        // dynamicResources removed: judged on scheduling, the kata workers fit.
        let off = run(
            &p,
            file,
            "kata-workers.yml",
            defaults_with("dynamicResources", ""),
        );
        assert_only_runtime_class_added(&off, "kata");
        assert_eq!(off.warnings, None, "{file}");
        assert_eq!(off.audit_annotations.as_ref().unwrap()["reason"], ASSIGNED);
        assert_session_used_up(&p, file);
    }

    // Every claim is named, one finding each, used by a container or not.
    let mut two = request("pod-dra-template.json");
    two["object"]["spec"]["resourceClaims"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "nic", "resourceClaimName": "shared-nic"}));
    let r = p.evaluate(&two, &json!({}), Session::from_exchanges([]));
    assert_unchanged(&r);
    let reason = &r.audit_annotations.as_ref().unwrap()["reason"];
    assert_eq!(
        *reason,
        format!(
            "{DRA_TEMPLATE}; claim \"nic\" (ResourceClaim \"shared-nic\"), used by no container, \
             asks for DRA-allocated devices, which Kata does not pass into its VM \
             (skipPodsUsing: dynamicResources)"
        )
    );
    // The warning is cut to 255 bytes; the first claim survives whole.
    assert_eq!(warning(&r), format!("{}...", &reason[..252]));
    assert!(warning(&r).starts_with(DRA_TEMPLATE));

    // An empty list is no claim: the pod is judged on scheduling.
    let mut empty = request("pod-dra-template.json");
    empty["object"]["spec"]["resourceClaims"] = json!([]);
    assert_only_runtime_class_added(
        &p.evaluate(&empty, &json!({}), session("kata-workers.yml")),
        "kata",
    );
    assert_session_used_up(&p, "resourceClaims: []");
}

#[test]
fn a_plain_privileged_builder_gets_kata() {
    let p = test_policy();
    let dind = run(&p, "pod-dind-builder.json", "kata-workers.yml", json!({}));
    assert_only_runtime_class_added(&dind, "kata");
    assert_eq!(dind.warnings, None);
    let annotations = dind.audit_annotations.as_ref().unwrap();
    assert_eq!(annotations["decision"], "mutated");
    assert_eq!(annotations["reason"], ASSIGNED);
    assert_session_used_up(&p, "the builder");
    // Opted in (a Kata with privileged_without_host_devices = false): left
    // alone before any query.
    let opted_in = p.evaluate(
        &request("pod-dind-builder.json"),
        &defaults_with("", "privileged"),
        Session::from_exchanges([]),
    );
    assert_unchanged(&opted_in);
    assert_explained(
        &opted_in,
        "unchanged",
        "kata runtime not assigned: container \"dind\" is privileged, and a privileged container \
         under Kata gets the VM's devices, not the host's (skipPodsUsing: privileged)",
    );
}

#[test]
fn skipped_requests_never_ask_the_cluster() {
    let p = test_policy();
    for (file, warned) in [
        (
            "pod-host-network.json",
            "kata runtime not assigned: the pod uses hostNetwork, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)",
        ),
        (
            "pod-docker-agent.json",
            "kata runtime not assigned: container \"agent\" mounts host socket /var/run/docker.sock (hostPath volume \"docker\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)",
        ),
        (
            "pod-user-namespace.json",
            "kata runtime not assigned: the pod sets hostUsers: false (a user namespace), which the Kata runtime handler does not support: the kubelet would not start it (skipPodsUsing: userNamespaces)",
        ),
        (
            "pod-runtime-class.json",
            "pod already sets runtimeClassName \"gvisor\"; left unchanged",
        ),
        ("pod-dra-template.json", DRA_TEMPLATE),
        ("pod-dra-claim.json", DRA_CLAIM),
        ("pod-image-volume.json", IMAGE_VOLUME),
        ("deployment.json", ""),
    ] {
        let r = p.evaluate(&request(file), &json!({}), session("kata-workers.yml"));
        assert_unchanged(&r);
        assert_eq!(warning(&r), warned, "{file}");
        assert_eq!(
            p.take_session().remaining(),
            KATA_WORKERS_EXCHANGES,
            "{file}: the cluster was queried (can_i included)"
        );
    }
}

#[test]
fn runtime_class_scheduling_and_conflicts() {
    let p = test_policy();
    assert_only_runtime_class_added(
        &run(
            &p,
            "pod-plain.json",
            "runtimeclass-scheduling.yml",
            json!({}),
        ),
        "kata",
    );
    assert_eq!(
        common::required_left(&p.take_session()),
        0,
        "both queries answered"
    );
    let pinned = run(
        &p,
        "pod-master-pinned.json",
        "runtimeclass-scheduling.yml",
        json!({}),
    );
    assert_eq!(
        warning(&pinned),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) were unschedulable"
    );
    let conflict = run(
        &p,
        "pod-selector-conflict.json",
        "runtimeclass-scheduling.yml",
        json!({}),
    );
    assert_unchanged(&conflict);
    assert!(
        warning(&conflict).contains("requires nodeSelector katacontainers.io/kata-runtime=true"),
        "{conflict:?}"
    );
    let missing = run(&p, "pod-plain.json", "runtimeclass-missing.yml", json!({}));
    assert_unchanged(&missing);
    assert_eq!(
        warning(&missing),
        "kata runtime not assigned: RuntimeClass \"kata\" does not exist"
    );
}

#[test]
fn cluster_failures_follow_the_settings() {
    let p = test_policy();
    let none = run(&p, "pod-plain.json", "no-kata-nodes.yml", json!({}));
    assert_unchanged(&none);
    assert!(warning(&none).contains("no node matches kataNodeSelector"));
    let forbidden = run(&p, "pod-plain.json", "forbidden.yml", json!({}));
    assert_unchanged(&forbidden);
    assert!(
        warning(&forbidden).starts_with(
            "kata runtime not assigned: cannot list kata nodes (forbidden: grant policy-server"
        ),
        "{forbidden:?}"
    );
    assert!(warning(&forbidden).len() <= 255);
    assert!(
        warning(&forbidden).contains("get/list/watch on nodes"),
        "the fix survives the cut"
    );
    let reason = &forbidden.audit_annotations.as_ref().unwrap()["reason"];
    assert!(
        reason.contains("nodes is forbidden") && reason.contains("get/list/watch on nodes"),
        "{reason}"
    );
    let strict = run(
        &p,
        "pod-plain.json",
        "forbidden.yml",
        json!({"lookupFailure": "reject"}),
    );
    assert!(!strict.allowed);
}

#[test]
fn a_changed_query_is_caught_by_the_replay() {
    // A different kataNodeSelector is a different host query: the recorded
    // session no longer matches, and the policy reports a lookup failure.
    let p = test_policy();
    let r = run(
        &p,
        "pod-plain.json",
        "kata-workers.yml",
        json!({"kataNodeSelector": "kata=yes"}),
    );
    assert_unchanged(&r);
    let reason = &r.audit_annotations.as_ref().unwrap()["reason"];
    assert!(
        reason.contains(
            "cannot list kata nodes: the recorded session has no answer for this request \
             (recorded for another policyServerServiceAccount, pod or settings?): \
             Replay error: unexpected request"
        ),
        "{reason}"
    );
}

/// A session recorded for the default account, replayed with another
/// policyServerServiceAccount (the examples'): the very first question
/// misses, and the reason says what that likely means, in the warning too.
#[test]
fn a_session_for_another_account_says_so() {
    let p = test_policy();
    let r = run(
        &p,
        "pod-plain.json",
        "kata-workers.yml",
        json!({"policyServerServiceAccount": "system:serviceaccount:kubewarden:kata-runtime-policy"}),
    );
    assert_unchanged(&r);
    let reason = &r.audit_annotations.as_ref().unwrap()["reason"];
    assert!(
        reason.starts_with(
            "kata runtime not assigned: cannot check whether \
             system:serviceaccount:kubewarden:kata-runtime-policy may list nodes (kubernetes/can_i): \
             the recorded session has no answer for this request (recorded for another \
             policyServerServiceAccount, pod or settings?): Replay error: unexpected request. \
             Was expecting KubernetesCanI {"
        ) && reason.ends_with(" instead"),
        "{reason}"
    );
    let warning = &r.warnings.as_ref().unwrap()[0];
    assert!(warning.len() <= 255, "{warning}");
    assert!(
        warning.contains("(recorded for another policyServerServiceAccount, pod or setting"),
        "{warning}"
    );
}

#[test]
fn malformed_requests_are_refused_not_trapped() {
    let p = test_policy();
    let r = run(&p, "pod-malformed.json", "kata-workers.yml", json!({}));
    assert!(!r.allowed);
    let status = r.status.unwrap();
    assert_eq!(status.code, Some(400));
    assert!(
        status
            .message
            .unwrap()
            .contains("the object is not a valid Pod")
    );
    // A request that is not an AdmissionRequest at all.
    let raw = p
        .validate(&json!("not a request"), &json!({}), Session::none())
        .unwrap();
    assert_eq!(raw["accepted"], false);
    assert_eq!(raw["code"], 400);
}

#[test]
fn unknown_fields_survive_the_mutation() {
    let p = test_policy();
    let mut req = request("pod-plain.json");
    req["object"]["spec"]["someFutureField"] = json!({"deep": [1, {"x": 12345678901234567890u64}]});
    req["object"]["x-top-level"] = json!(true);
    let raw = p
        .validate(&req, &json!({}), session("kata-workers.yml"))
        .unwrap();
    let mut expected = req["object"].clone();
    expected["spec"]["runtimeClassName"] = json!("kata");
    assert_eq!(raw["mutated_object"], expected);
}

/// The decision and the reason of the audit annotations; with a warning,
/// the warning says the same (it is at most 255 bytes).
fn assert_explained(r: &AdmissionResponse, decision: &str, reason: &str) {
    let annotations = r.audit_annotations.as_ref().expect("audit annotations");
    assert_eq!(annotations["decision"], decision, "{r:?}");
    assert_eq!(annotations["reason"], reason, "{r:?}");
    assert_eq!(warning(r), reason, "{r:?}");
    assert!(reason.len() <= 255, "{reason}");
}

/// The settings that let a `hostUsers: false` pod reach the node check:
/// the default `skipPodsUsing` without `userNamespaces`.
fn user_namespaces_not_skipped() -> Value {
    defaults_with("userNamespaces", "")
}

/// Each runtime-handler session is answered in full: every recorded query
/// was the one the policy made, field masks included.
fn assert_session_used_up(p: &TestPolicy, what: &str) {
    assert_eq!(
        common::required_left(&p.take_session()),
        0,
        "{what}: a query was not made"
    );
}

#[test]
fn the_k3s_story_labelled_nodes_without_the_handler() {
    let p = test_policy();
    let k3s = run(&p, "pod-plain.json", "handlers-k3s.yml", json!({}));
    assert_unchanged(&k3s);
    assert_explained(
        &k3s,
        "unchanged",
        "kata runtime not assigned: 0/2 kata nodes can run this pod: \
         2 node(s) do not report runtime handler \"kata-qemu\"",
    );
    assert_session_used_up(&p, "k3s");

    // runtimeHandlerCheck: off asks for the old masks and trusts the labels.
    let off = run(
        &p,
        "pod-plain.json",
        "handlers-k3s-check-off.yml",
        json!({"runtimeHandlerCheck": "off"}),
    );
    assert_only_runtime_class_added(&off, "kata");
    assert_eq!(off.warnings, None);
    assert_eq!(
        off.audit_annotations.as_ref().unwrap()["decision"],
        "mutated"
    );
    assert_session_used_up(&p, "off");

    // The default lists the same way, then reads the candidates by name
    // with the handlers' names: the off recording has no such read (nor the
    // list with the handlers the policy falls back on), and the replay says
    // so.
    let auto = run(
        &p,
        "pod-plain.json",
        "handlers-k3s-check-off.yml",
        json!({}),
    );
    assert_unchanged(&auto);
    let reason = &auto.audit_annotations.as_ref().unwrap()["reason"];
    assert_eq!(
        reason,
        "kata runtime not assigned: cannot list kata nodes: the recorded session has no answer for \
         this request (recorded for another policyServerServiceAccount, pod or settings?): \
         the list of recorded responses is empty"
    );
}

#[test]
fn a_partial_cluster_gets_kata_with_a_warning() {
    let p = test_policy();
    // kata-broken comes first in the list: it is read by name, then
    // kata-good, which can start the pod. kata-cordoned lacks the handler
    // too but fails a scheduler filter, so it is neither read nor named.
    let partial = run(&p, "pod-plain.json", "handlers-partial.yml", json!({}));
    // The class name, not its handler.
    assert_only_runtime_class_added(&partial, "kata");
    assert_explained(
        &partial,
        "mutated",
        "kata runtime assigned, but at least 1 kata node(s) that can take this pod do not report \
         runtime handler \"kata-qemu\" (kata-broken): if the scheduler picks one, the pod will not start",
    );
    assert_session_used_up(&p, "partial");

    let bound = run(
        &p,
        "pod-node-name-broken.json",
        "handlers-node-broken.yml",
        json!({}),
    );
    assert_unchanged(&bound);
    assert_explained(
        &bound,
        "unchanged",
        "kata runtime not assigned: 0/1 kata nodes can run this pod: \
         1 node(s) do not report runtime handler \"kata-qemu\"",
    );
    assert_session_used_up(&p, "bound to kata-broken");
}

#[test]
fn label_free_required_lets_the_handler_alone_decide() {
    let p = test_policy();
    let required = json!({"kataNodeSelector": "", "runtimeHandlerCheck": "required"});
    let plain = run(
        &p,
        "pod-plain.json",
        "handlers-label-free.yml",
        required.clone(),
    );
    assert_only_runtime_class_added(&plain, "kata");
    assert_explained(
        &plain,
        "mutated",
        "kata runtime assigned, but 1 of 2 kata nodes that can take this pod report no runtime \
         handlers (worker-1): if the scheduler picks one, the pod will not start",
    );
    assert_session_used_up(&p, "label-free plain");
    let master = run(
        &p,
        "pod-master-pinned.json",
        "handlers-label-free.yml",
        required.clone(),
    );
    assert_unchanged(&master);
    assert_explained(
        &master,
        "unchanged",
        "kata runtime not assigned: 0/3 kata nodes can run this pod: 2 node(s) didn't match \
         Pod's node affinity/selector, 1 node(s) do not report runtime handler \"kata-qemu\"",
    );

    // Nodes that report nothing do not count with required; with auto their
    // labels decide (kataNodeSelector "" selects them all).
    let none = run(&p, "pod-plain.json", "handlers-none-reported.yml", required);
    assert_unchanged(&none);
    assert_explained(
        &none,
        "unchanged",
        "kata runtime not assigned: 0/3 kata nodes can run this pod: 2 node(s) report no runtime \
         handlers, 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }",
    );
    let auto = run(
        &p,
        "pod-plain.json",
        "handlers-none-reported.yml",
        json!({"kataNodeSelector": ""}),
    );
    assert_only_runtime_class_added(&auto, "kata");
    assert_eq!(auto.warnings, None);
    assert_session_used_up(&p, "none reported, auto");
}

#[test]
fn handler_features_for_user_namespaces_and_recursive_read_only_mounts() {
    let p = test_policy();
    let unsupported = run(
        &p,
        "pod-user-namespace.json",
        "handlers-userns-unsupported.yml",
        user_namespaces_not_skipped(),
    );
    assert_unchanged(&unsupported);
    assert_explained(
        &unsupported,
        "unchanged",
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) report runtime \
         handler \"kata-qemu\" without features.userNamespaces (the pod sets hostUsers: false)",
    );
    assert_session_used_up(&p, "userns unsupported");
    let supported = run(
        &p,
        "pod-user-namespace.json",
        "handlers-userns-supported.yml",
        user_namespaces_not_skipped(),
    );
    assert_only_runtime_class_added(&supported, "kata");
    assert_eq!(supported.warnings, None);
    assert_session_used_up(&p, "userns supported");
    // With the default skipPodsUsing the pod is skipped before any query.
    let skipped = run(
        &p,
        "pod-user-namespace.json",
        "handlers-userns-supported.yml",
        json!({}),
    );
    assert_unchanged(&skipped);
    assert!(
        warning(&skipped).ends_with("(skipPodsUsing: userNamespaces)"),
        "{skipped:?}"
    );
    assert_eq!(
        p.take_session().remaining(),
        session("handlers-userns-supported.yml").remaining(),
        "nothing was asked"
    );

    let rro = run(
        &p,
        "pod-recursive-read-only.json",
        "handlers-rro.yml",
        json!({}),
    );
    assert_only_runtime_class_added(&rro, "kata");
    assert_explained(
        &rro,
        "mutated",
        "kata runtime assigned, but at least 1 kata node(s) that can take this pod report runtime \
         handler \"kata-qemu\" without features.recursiveReadOnlyMounts (the pod sets \
         recursiveReadOnly: Enabled) (kata-2): if the scheduler picks one, the pod will not start",
    );
    assert_session_used_up(&p, "rro");
    // Every kata-qemu there reports recursiveReadOnlyMounts (not userNamespaces).
    let rro_ok = run(
        &p,
        "pod-recursive-read-only.json",
        "handlers-userns-unsupported.yml",
        json!({}),
    );
    assert_only_runtime_class_added(&rro_ok, "kata");
    assert_eq!(rro_ok.warnings, None);
    assert_session_used_up(&p, "rro supported");

    // Only these pods ask for the whole entries: a plain pod's query (the
    // names) is not the one recorded in a features session.
    let plain = run(&p, "pod-plain.json", "handlers-rro.yml", json!({}));
    assert_unchanged(&plain);
    let reason = &plain.audit_annotations.as_ref().unwrap()["reason"];
    assert!(
        reason.contains("Replay error: unexpected request"),
        "{reason}"
    );
}

const IMAGE_VOLUME: &str = "kata runtime not assigned: image volume \"tools\" (image \
    \"ghcr.io/example/agent-tools:1.4\"), mounted by container \"agent\", is an OCI image that Kata \
    cannot mount inside its VM (skipPodsUsing: imageVolumes)";
const DRA_EXTENDED: &str = "kata runtime not assigned: DeviceClass \"gpu.example.com\" (extended \
    resource deviceclass.resource.kubernetes.io/gpu.example.com), asked for by container \"cuda\", \
    is served by DRA-allocated devices, which Kata does not pass into its VM \
    (skipPodsUsing: dynamicResources)";

#[test]
fn image_volumes_stay_off_kata_without_asking_the_cluster() {
    let p = test_policy();
    for settings in [
        json!({}),
        json!({"noFeasibleNode": "reject", "lookupFailure": "reject"}),
    ] {
        let r = p.evaluate(
            &request("pod-image-volume.json"),
            &settings,
            Session::from_exchanges([]),
        );
        assert_unchanged(&r);
        assert_explained(&r, "unchanged", IMAGE_VOLUME);
    }
    // Every container that mounts it is named, a sidecar too.
    let mut sidecar = request("pod-image-volume.json");
    let init = &mut sidecar["object"]["spec"]["initContainers"][0];
    init["restartPolicy"] = json!("Always");
    init["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .push(json!({"name": "tools", "mountPath": "/opt/tools"}));
    let r = p.evaluate(&sidecar, &json!({}), Session::from_exchanges([]));
    assert_unchanged(&r);
    assert_explained(
        &r,
        "unchanged",
        &IMAGE_VOLUME.replace(
            "mounted by container \"agent\",",
            "mounted by container \"agent\", init container \"seed-workspace\",",
        ),
    );
    // An image volume without a reference is still one.
    let mut no_reference = request("pod-image-volume.json");
    no_reference["object"]["spec"]["volumes"][0]["image"] = json!({});
    let r = p.evaluate(&no_reference, &json!({}), Session::from_exchanges([]));
    assert_explained(
        &r,
        "unchanged",
        "kata runtime not assigned: image volume \"tools\", mounted by container \"agent\", is an \
         OCI image that Kata cannot mount inside its VM (skipPodsUsing: imageVolumes)",
    );

    // imageVolumes removed: judged on scheduling, the kata workers fit.
    let off = run(
        &p,
        "pod-image-volume.json",
        "kata-workers.yml",
        defaults_with("imageVolumes", ""),
    );
    assert_only_runtime_class_added(&off, "kata");
    assert_eq!(off.warnings, None);
    assert_eq!(off.audit_annotations.as_ref().unwrap()["reason"], ASSIGNED);
    assert_session_used_up(&p, "imageVolumes off");

    // Not mounted, or not an image volume: no finding.
    let mut unmounted = request("pod-image-volume.json");
    unmounted["object"]["spec"]["containers"][0]["volumeMounts"]
        .as_array_mut()
        .unwrap()
        .remove(0);
    let mut named_image = request("pod-image-volume.json");
    named_image["object"]["spec"]["volumes"][0] =
        json!({"name": "image", "configMap": {"name": "agent-tools"}});
    named_image["object"]["spec"]["containers"][0]["volumeMounts"][0]["name"] = json!("image");
    let mut null_image = request("pod-image-volume.json");
    null_image["object"]["spec"]["volumes"][0] =
        json!({"name": "tools", "image": null, "emptyDir": {}});
    for (what, req) in [
        ("unmounted", unmounted),
        ("named image", named_image),
        ("image: null", null_image),
    ] {
        let r = p.evaluate(&req, &json!({}), session("kata-workers.yml"));
        assert_only_runtime_class_added(&r, "kata");
        assert_eq!(r.warnings, None, "{what}");
        assert_session_used_up(&p, what);
    }

    // Findings come in feature order, whatever the order of skipPodsUsing:
    // dynamicResources, then imageVolumes, then the opt-in subPath.
    let mut three = request("pod-image-volume.json");
    let spec = &mut three["object"]["spec"];
    spec["resourceClaims"] = json!([{"name": "nic", "resourceClaimName": "shared-nic"}]);
    spec["containers"][0]["resources"]["claims"] = json!([{"name": "nic"}]);
    spec["containers"][0]["volumeMounts"][1]["subPath"] = json!("agent");
    for order in [
        ["subPath", "imageVolumes", "dynamicResources"],
        ["dynamicResources", "imageVolumes", "subPath"],
    ] {
        let r = p.evaluate(
            &three,
            &json!({ "skipPodsUsing": order }),
            Session::from_exchanges([]),
        );
        assert_unchanged(&r);
        assert_eq!(
            r.audit_annotations.as_ref().unwrap()["reason"],
            format!(
                "kata runtime not assigned: claim \"nic\" (ResourceClaim \"shared-nic\"), used by \
                 container \"agent\", asks for DRA-allocated devices, which Kata does not pass into \
                 its VM (skipPodsUsing: dynamicResources); {}; container \"agent\" mounts volume \
                 \"workspace\" with subPath, which is unreliable under Kata (skipPodsUsing: subPath)",
                IMAGE_VOLUME.trim_start_matches("kata runtime not assigned: ")
            ),
            "{order:?}"
        );
    }

    // incompatiblePod: reject refuses it, before any query.
    let refused = p.evaluate(
        &request("pod-image-volume.json"),
        &kata_mandatory(),
        Session::from_exchanges([]),
    );
    assert_refused(
        &refused,
        &format!(
            "{REQUIRED}{}",
            IMAGE_VOLUME.trim_start_matches("kata runtime not assigned: ")
        ),
    );
}

#[test]
fn device_class_extended_resources_are_a_dra_finding() {
    let p = test_policy();
    for settings in [
        json!({}),
        json!({"noFeasibleNode": "reject", "lookupFailure": "reject"}),
    ] {
        let r = p.evaluate(
            &request("pod-dra-extended-resource.json"),
            &settings,
            Session::from_exchanges([]),
        );
        assert_unchanged(&r);
        let annotations = r.audit_annotations.as_ref().unwrap();
        assert_eq!(annotations["decision"], "unchanged");
        assert_eq!(annotations["reason"], DRA_EXTENDED);
        // Longer than a warning may be: cut at 255 bytes.
        assert_eq!(warning(&r), format!("{}...", &DRA_EXTENDED[..252]));
    }
    // In limits only, or in a sidecar, the same finding.
    let mut limits_only = request("pod-dra-extended-resource.json");
    limits_only["object"]["spec"]["containers"][0]["resources"]["requests"]
        .as_object_mut()
        .unwrap()
        .remove("deviceclass.resource.kubernetes.io/gpu.example.com");
    let r = p.evaluate(&limits_only, &json!({}), Session::from_exchanges([]));
    assert_eq!(
        r.audit_annotations.as_ref().unwrap()["reason"],
        DRA_EXTENDED
    );
    let mut sidecar = request("pod-dra-extended-resource.json");
    sidecar["object"]["spec"]["initContainers"] = json!([{
        "name": "gpu-metrics", "image": "registry.example.com/gpu-metrics-exporter:4.1",
        "restartPolicy": "Always",
        "resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.example.com": "1"}}
    }]);
    let r = p.evaluate(&sidecar, &json!({}), Session::from_exchanges([]));
    assert_eq!(
        r.audit_annotations.as_ref().unwrap()["reason"],
        DRA_EXTENDED.replace(
            "asked for by container \"cuda\",",
            "asked for by container \"cuda\", init container \"gpu-metrics\","
        )
    );
    // A device plugin's resource that only looks alike is not one.
    let mut lookalike = request("pod-dra-extended-resource.json");
    lookalike["object"]["spec"]["containers"][0]["resources"] =
        json!({"limits": {"example.com/deviceclass.resource.kubernetes.io": "1"}});
    let r = p.evaluate(&lookalike, &json!({}), session("kata-workers.yml"));
    assert_unchanged(&r);
    assert!(
        warning(&r).ends_with("2 Insufficient example.com/deviceclass.resource.kubernetes.io"),
        "{r:?}"
    );
    assert_session_used_up(&p, "lookalike");
    // incompatiblePod: reject refuses it, before any query.
    let refused = p.evaluate(
        &request("pod-dra-extended-resource.json"),
        &kata_mandatory(),
        Session::from_exchanges([]),
    );
    assert_refused(
        &refused,
        &format!(
            "{REQUIRED}{}",
            DRA_EXTENDED.trim_start_matches("kata runtime not assigned: ")
        ),
    );
}

const STRICT_UNSUPPORTED: &str = "kata runtime not assigned: 0/2 kata nodes can run this pod: \
    2 node(s) do not support supplementalGroupsPolicy: Strict";
const STRICT_PARTIAL: &str = "kata runtime assigned, but at least 1 kata node(s) that can take this pod \
    do not support supplementalGroupsPolicy: Strict (kata-2): if the scheduler picks one, the pod \
    will not start";

#[test]
fn supplemental_groups_policy_strict_needs_the_node_feature() {
    let p = test_policy();
    for check in ["auto", "required", "off"] {
        let settings = json!({"runtimeHandlerCheck": check});
        let none = run(
            &p,
            "pod-strict-supplemental-groups.json",
            "strict-unsupported.yml",
            settings.clone(),
        );
        assert_unchanged(&none);
        assert_explained(&none, "unchanged", STRICT_UNSUPPORTED);
        assert_session_used_up(&p, &format!("unsupported, {check}"));
        let partial = run(
            &p,
            "pod-strict-supplemental-groups.json",
            "strict-partial.yml",
            settings.clone(),
        );
        assert_only_runtime_class_added(&partial, "kata");
        assert_explained(&partial, "mutated", STRICT_PARTIAL);
        assert_session_used_up(&p, &format!("partial, {check}"));
        // containerd 2.x nodes that report the feature.
        let supported = run(
            &p,
            "pod-strict-supplemental-groups.json",
            "handlers-userns-supported.yml",
            settings,
        );
        assert_only_runtime_class_added(&supported, "kata");
        assert_eq!(supported.warnings, None);
        assert_session_used_up(&p, &format!("supported, {check}"));
    }
    let refused = run(
        &p,
        "pod-strict-supplemental-groups.json",
        "strict-unsupported.yml",
        json!({"noFeasibleNode": "reject"}),
    );
    assert_refused(
        &refused,
        &STRICT_UNSUPPORTED.replace(
            "kata runtime not assigned: ",
            "kata runtime required (noFeasibleNode: reject), and not assigned: ",
        ),
    );

    // Bound to a node: that node, read with the same masks.
    let mut bound = request("pod-strict-supplemental-groups.json");
    bound["object"]["spec"]["nodeName"] = json!("kata-2");
    let r = p.evaluate(&bound, &json!({}), session("strict-node-kata-2.yml"));
    assert_unchanged(&r);
    assert_explained(
        &r,
        "unchanged",
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) do not support \
         supplementalGroupsPolicy: Strict",
    );
    assert_session_used_up(&p, "bound to kata-2");

    // Merge, or no policy, asks the plain query: a feature session is not it.
    let mut merge = request("pod-strict-supplemental-groups.json");
    merge["object"]["spec"]["securityContext"]["supplementalGroupsPolicy"] = json!("Merge");
    assert_only_runtime_class_added(
        &p.evaluate(&merge, &json!({}), session("kata-workers.yml")),
        "kata",
    );
    assert_session_used_up(&p, "Merge");
    let r = p.evaluate(&merge, &json!({}), session("strict-partial.yml"));
    assert_unchanged(&r);
    let reason = &r.audit_annotations.as_ref().unwrap()["reason"];
    assert!(
        reason.contains("Replay error: unexpected request"),
        "{reason}"
    );
}

/// The note a pod created with the gate `example.com/hold` gets with Kata: a
/// warning of its own, and after the explanation in the audit reason.
const GATE_NOTE: &str = "the pod has schedulingGates (\"example.com/hold\"): node constraints \
    added before it is ungated are not checked, and it stays Pending if they exclude every kata \
    node";

/// Every warning of `r`, in order.
fn warnings(r: &AdmissionResponse) -> Vec<&str> {
    r.warnings.iter().flatten().map(String::as_str).collect()
}

#[test]
fn a_gated_pod_gets_kata_with_the_gate_note_as_its_own_warning() {
    let p = test_policy();
    let gated = run(&p, "pod-gated.json", "kata-workers.yml", json!({}));
    assert_only_runtime_class_added(&gated, "kata");
    // The assignment needs no warning: the note is the only one; the audit
    // reason is the explanation, then the note.
    assert_eq!(warnings(&gated), [GATE_NOTE]);
    let audit = gated.audit_annotations.as_ref().unwrap();
    assert_eq!(audit["decision"], "mutated");
    assert_eq!(audit["reason"], format!("{ASSIGNED}; {GATE_NOTE}"));
    assert_session_used_up(&p, "gated");

    // After a partial warning: two warnings, the nodes first, neither cut;
    // the audit reason has both.
    let mut strict = request("pod-strict-supplemental-groups.json");
    strict["object"]["spec"]["schedulingGates"] = json!([{"name": "example.com/hold"}]);
    let r = p.evaluate(&strict, &json!({}), session("strict-partial.yml"));
    assert_only_runtime_class_added(&r, "kata");
    assert_eq!(warnings(&r), [STRICT_PARTIAL, GATE_NOTE]);
    assert_eq!(
        r.audit_annotations.as_ref().unwrap()["reason"],
        format!("{STRICT_PARTIAL}; {GATE_NOTE}")
    );
    assert_session_used_up(&p, "strict gated");

    // Each warning is cut to 255 bytes on its own: long gate names cut the
    // note, not the warning about the nodes; the audit reason stays whole.
    let long: Vec<String> = ["capacity-review", "dataset-copy", "license-seat"]
        .iter()
        .map(|what| format!("example.com/wait-for-the-{what}-of-the-research-gpu-pool"))
        .collect();
    strict["object"]["spec"]["schedulingGates"] = Value::from(
        long.iter()
            .map(|g| json!({ "name": g }))
            .collect::<Vec<_>>(),
    );
    let r = p.evaluate(&strict, &json!({}), session("strict-partial.yml"));
    assert_only_runtime_class_added(&r, "kata");
    let note = GATE_NOTE.replace(
        "\"example.com/hold\"",
        &format!("\"{}\", \"{}\", \"{}\"", long[0], long[1], long[2]),
    );
    assert!(note.len() > 255, "{note}");
    assert_eq!(
        warnings(&r),
        [STRICT_PARTIAL, &format!("{}...", &note[..252])]
    );
    assert_eq!(
        r.audit_annotations.as_ref().unwrap()["reason"],
        format!("{STRICT_PARTIAL}; {note}")
    );
    assert_session_used_up(&p, "long gates");

    // Three gates are named, the rest counted.
    let mut many = request("pod-gated.json");
    many["object"]["spec"]["schedulingGates"] =
        json!(["a", "b", "c", "d", "e"].map(|g| json!({ "name": g })));
    let r = p.evaluate(&many, &json!({}), session("kata-workers.yml"));
    assert_only_runtime_class_added(&r, "kata");
    let note = GATE_NOTE.replace("\"example.com/hold\"", "\"a\", \"b\", \"c\", and 2 more");
    assert_eq!(warnings(&r), [note.as_str()]);
    assert_eq!(
        r.audit_annotations.as_ref().unwrap()["reason"],
        format!("{ASSIGNED}; {note}")
    );

    // No gates (an empty list, null): no note. Unchanged pods get none either.
    for gates in [json!([]), json!(null)] {
        let mut ungated = request("pod-gated.json");
        ungated["object"]["spec"]["schedulingGates"] = gates.clone();
        let r = p.evaluate(&ungated, &json!({}), session("kata-workers.yml"));
        assert_only_runtime_class_added(&r, "kata");
        assert_eq!(r.warnings, None, "{gates}");
        assert_eq!(r.audit_annotations.as_ref().unwrap()["reason"], ASSIGNED);
    }
    let mut pinned = request("pod-master-pinned.json");
    pinned["object"]["spec"]["schedulingGates"] = json!([{"name": "example.com/hold"}]);
    let r = p.evaluate(&pinned, &json!({}), session("kata-workers.yml"));
    assert_unchanged(&r);
    assert_explained(
        &r,
        "unchanged",
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
    );

    // annotateDecision: the decision annotation carries the whole reason;
    // the warnings are the same.
    let annotated = run(&p, "pod-gated.json", "kata-workers.yml", annotate());
    assert_annotated(
        &annotated,
        &format!("mutated: {ASSIGNED}; {GATE_NOTE}"),
        Some("kata"),
    );
    assert_eq!(warnings(&annotated), [GATE_NOTE]);
    assert_session_used_up(&p, "gated, annotated");
}

#[test]
fn malformed_image_volumes_policies_and_gates_are_not_pods() {
    let p = test_policy();
    for (file, pointer, value) in [
        (
            "pod-image-volume.json",
            "/volumes/0/image",
            json!("ghcr.io/example/agent-tools:1.4"),
        ),
        ("pod-image-volume.json", "/volumes/0/image", json!(true)),
        ("pod-image-volume.json", "/volumes/0/image", json!(7)),
        (
            "pod-image-volume.json",
            "/volumes/0/image/reference",
            json!(3),
        ),
        (
            "pod-image-volume.json",
            "/volumes/0/image/reference",
            json!({"ref": "x"}),
        ),
        (
            "pod-strict-supplemental-groups.json",
            "/securityContext/supplementalGroupsPolicy",
            json!(1),
        ),
        (
            "pod-strict-supplemental-groups.json",
            "/securityContext/supplementalGroupsPolicy",
            json!(["Strict"]),
        ),
        (
            "pod-strict-supplemental-groups.json",
            "/securityContext/supplementalGroupsPolicy",
            json!(true),
        ),
        (
            "pod-strict-supplemental-groups.json",
            "/securityContext",
            json!("Strict"),
        ),
        (
            "pod-gated.json",
            "/schedulingGates",
            json!({"name": "example.com/hold"}),
        ),
        (
            "pod-gated.json",
            "/schedulingGates",
            json!("example.com/hold"),
        ),
        (
            "pod-gated.json",
            "/schedulingGates",
            json!(["example.com/hold"]),
        ),
        ("pod-gated.json", "/schedulingGates", json!([null])),
        ("pod-gated.json", "/schedulingGates", json!([{"name": 1}])),
    ] {
        let mut req = request(file);
        *req["object"]["spec"].pointer_mut(pointer).unwrap() = value.clone();
        // No cluster: refused before any question.
        let r = p.evaluate(&req, &json!({}), Session::from_exchanges([]));
        let context = format!("{file} {pointer} = {value}: {r:?}");
        assert!(!r.allowed, "{context}");
        assert_eq!(r.patch, None, "{context}");
        let status = r.status.as_ref().expect("a status");
        assert_eq!(status.code, Some(400), "{context}");
        assert!(
            (status.message.as_deref().unwrap_or_default())
                .starts_with("the object is not a valid Pod: "),
            "{context}"
        );
    }
}

/// `incompatiblePod: reject`: the start of every refusal for a finding.
const REQUIRED: &str = "kata runtime required (incompatiblePod: reject), and not assigned: ";
const DOCKER_SOCKET: &str = "container \"agent\" mounts host socket /var/run/docker.sock (hostPath \
    volume \"docker\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)";
const USER_NAMESPACE: &str = "the pod sets hostUsers: false (a user namespace), which the Kata runtime \
    handler does not support: the kubelet would not start it (skipPodsUsing: userNamespaces)";
const HOST_NETWORK: &str = "the pod uses hostNetwork, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)";
const MIRROR: &str =
    "kata runtime not assigned: mirror pod of a static pod (the kubelet runs it, not the API)";

/// The decision's code a refusal carries, by the setting its message names.
fn refusal_code(message: &str) -> u16 {
    if message.contains("(incompatiblePod: reject)") {
        422
    } else if message.contains("(noFeasibleNode: reject)") {
        412
    } else if message.contains("(lookupFailure: reject)") {
        503
    } else if message.contains(" is not allowed (allowed: ") {
        403
    } else {
        panic!("no decision for the refusal {message:?}")
    }
}

/// A refusal as policy-server passes it on: the decision's code, no patch,
/// the audit saying `rejected` with the message, the warning the message
/// cut at 255 bytes.
fn assert_refused(r: &AdmissionResponse, message: &str) {
    assert!(!r.allowed, "{r:?}");
    assert_eq!(r.patch, None, "{r:?}");
    let status = r.status.as_ref().expect("a status");
    assert_eq!(status.message.as_deref(), Some(message), "{r:?}");
    assert_eq!(status.code, Some(refusal_code(message)), "{r:?}");
    let annotations = r.audit_annotations.as_ref().expect("audit annotations");
    assert_eq!(annotations["decision"], "rejected", "{r:?}");
    assert_eq!(annotations["reason"], message, "{r:?}");
    if message.len() <= 255 {
        assert_eq!(warning(r), message);
    } else {
        assert_eq!(warning(r), format!("{}...", &message[..252]));
    }
}

/// `kata-workers.yml` has four exchanges; all four left means no host call.
/// The exchanges kata-workers.yml records: a request that asks nothing
/// leaves them all.
const KATA_WORKERS_EXCHANGES: usize = 7;

#[test]
fn incompatible_pod_reject_refuses_every_finding_without_asking_the_cluster() {
    let p = test_policy();
    let findings = |reason: &str| {
        reason
            .strip_prefix("kata runtime not assigned: ")
            .unwrap()
            .to_owned()
    };
    let mut two = request("pod-docker-agent.json");
    two["object"]["spec"]["hostUsers"] = json!(false);
    let cases = [
        (request("pod-docker-agent.json"), DOCKER_SOCKET.to_owned()),
        (
            request("pod-user-namespace.json"),
            USER_NAMESPACE.to_owned(),
        ),
        (request("pod-host-network.json"), HOST_NETWORK.to_owned()),
        (request("pod-dra-template.json"), findings(DRA_TEMPLATE)),
        (request("pod-dra-claim.json"), findings(DRA_CLAIM)),
        // Every finding, in report order.
        (two, format!("{USER_NAMESPACE}; {DOCKER_SOCKET}")),
        (request("pod-csi-node-plugin.json"), CSI_FINDINGS.join("; ")),
    ];
    for (req, finding) in &cases {
        let message = format!("{REQUIRED}{finding}");
        for settings in [json!({"incompatiblePod": "reject"}), kata_mandatory()] {
            // A cluster that would answer, and none at all: neither is asked.
            let r = p.evaluate(req, &settings, session("kata-workers.yml"));
            assert_refused(&r, &message);
            assert_eq!(
                p.take_session().remaining(),
                KATA_WORKERS_EXCHANGES,
                "{message}: the cluster was asked"
            );
            let r = p.evaluate(req, &settings, Session::from_exchanges([]));
            assert_refused(&r, &message);
        }
    }
}

#[test]
fn incompatible_pod_reject_spares_mirror_pods_allowed_classes_and_features_turned_off() {
    let p = test_policy();
    for settings in [json!({"incompatiblePod": "reject"}), kata_mandatory()] {
        let mirror = p.evaluate(
            &request("pod-mirror.json"),
            &settings,
            Session::from_exchanges([]),
        );
        assert_unchanged(&mirror);
        assert_explained(&mirror, "unchanged", MIRROR);
    }
    // The annotation is what spares it: without, its hostNetwork refuses it.
    let mut not_mirror = request("pod-mirror.json");
    not_mirror["object"]["metadata"]["annotations"]
        .as_object_mut()
        .unwrap()
        .remove("kubernetes.io/config.mirror");
    assert_refused(
        &p.evaluate(&not_mirror, &kata_mandatory(), Session::from_exchanges([])),
        &format!("{REQUIRED}{HOST_NETWORK}"),
    );

    // A feature turned off makes no finding: the agent is judged on scheduling.
    let mut settings = defaults_with("hostSockets", "");
    settings["incompatiblePod"] = json!("reject");
    let agent = run(&p, "pod-docker-agent.json", "kata-workers.yml", settings);
    assert_only_runtime_class_added(&agent, "kata");
    assert_eq!(agent.warnings, None);
    assert_session_used_up(&p, "hostSockets off");

    // An allowed explicit class is judged as before: another class with a
    // warning, the policy's own quietly; the cluster is not asked.
    let mut gvisor = request("pod-docker-agent.json");
    gvisor["object"]["spec"]["runtimeClassName"] = json!("gvisor");
    let r = p.evaluate(
        &gvisor,
        &json!({"incompatiblePod": "reject", "allowedRuntimeClasses": ["gvisor"]}),
        Session::from_exchanges([]),
    );
    assert_unchanged(&r);
    assert_explained(
        &r,
        "unchanged",
        "pod already sets runtimeClassName \"gvisor\"; left unchanged",
    );
    let mut kata = request("pod-docker-agent.json");
    kata["object"]["spec"]["runtimeClassName"] = json!("kata");
    let r = p.evaluate(&kata, &kata_mandatory(), Session::from_exchanges([]));
    assert_unchanged(&r);
    assert_eq!(r.warnings, None, "{r:?}");
}

#[test]
fn kata_mandatory_gives_kata_or_a_reason() {
    let p = test_policy();
    let plain = run(&p, "pod-plain.json", "kata-workers.yml", kata_mandatory());
    assert_only_runtime_class_added(&plain, "kata");
    assert_eq!(plain.warnings, None);
    assert_eq!(
        plain.audit_annotations.as_ref().unwrap()["reason"],
        ASSIGNED
    );
    assert_session_used_up(&p, "plain");
    let pinned = run(
        &p,
        "pod-master-pinned.json",
        "kata-workers.yml",
        kata_mandatory(),
    );
    assert_refused(
        &pinned,
        "kata runtime required (noFeasibleNode: reject), and not assigned: \
         0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
    );
    let runc = run(&p, "pod-runc.json", "kata-workers.yml", kata_mandatory());
    assert_refused(
        &runc,
        "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata)",
    );
    assert_eq!(
        p.take_session().remaining(),
        KATA_WORKERS_EXCHANGES,
        "runc: the cluster was asked"
    );
}

/// The raw `validate` answer and what is left of the session, the settings
/// completed by [`test_settings`].
fn raw_validate(
    p: &TestPolicy,
    req: &Value,
    settings: &Value,
    session_file: &str,
) -> (Vec<u8>, usize) {
    let settings = test_settings(settings);
    let payload = serde_json::to_vec(&json!({"request": req, "settings": settings})).unwrap();
    let s = if session_file.is_empty() {
        Session::from_exchanges([])
    } else {
        session(session_file)
    };
    let out = p.call_raw("validate", &payload, s).unwrap();
    (out, p.take_session().remaining())
}

/// `accept` answers every fixture byte for byte as no setting does, under
/// the defaults and under the other Kata-mandatory settings, with a cluster
/// and without one; `reject` changes only pods with a finding, into refusals.
#[test]
fn incompatible_pod_accept_is_byte_for_byte_no_setting() {
    let p = test_policy();
    let mut files: Vec<String> = std::fs::read_dir(root().join("test_data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let mut refused = std::collections::BTreeSet::new();
    for file in &files {
        let req = request(file);
        for base in [
            json!({}),
            json!({"noFeasibleNode": "reject", "lookupFailure": "reject", "allowedRuntimeClasses": []}),
        ] {
            let mut accept = base.clone();
            accept["incompatiblePod"] = json!("accept");
            let mut reject = base.clone();
            reject["incompatiblePod"] = json!("reject");
            for session_file in ["kata-workers.yml", ""] {
                let case = format!("{file}, settings {base}, session {session_file:?}");
                let before = raw_validate(&p, &req, &base, session_file);
                let after = raw_validate(&p, &req, &accept, session_file);
                assert_eq!(
                    String::from_utf8_lossy(&after.0),
                    String::from_utf8_lossy(&before.0),
                    "{case}"
                );
                assert_eq!(after.1, before.1, "{case}: other host calls");
                let rejected = raw_validate(&p, &req, &reject, session_file);
                if rejected != before {
                    let verdict: Value = serde_json::from_slice(&rejected.0).unwrap();
                    assert_eq!(verdict["accepted"], false, "{case}: {verdict}");
                    assert!(
                        verdict["message"].as_str().unwrap().starts_with(REQUIRED),
                        "{case}: {verdict}"
                    );
                    refused.insert(file.as_str());
                }
            }
        }
    }
    for file in [
        "pod-csi-node-plugin.json",
        "pod-docker-agent.json",
        "pod-dra-claim.json",
        "pod-dra-extended-resource.json",
        "pod-dra-template.json",
        "pod-gpu.json",
        "pod-image-volume.json",
        "pod-host-network.json",
        "pod-user-namespace.json",
    ] {
        assert!(refused.contains(file), "reject did not refuse {file}");
    }
    for file in [
        "pod-mirror.json",
        "pod-dind-builder.json",
        "pod-gated.json",
        "pod-plain.json",
        "pod-runtime-class.json",
        "pod-strict-supplemental-groups.json",
    ] {
        assert!(!refused.contains(file), "reject changed {file}");
    }
}

// ------------------------------------------------------------ annotateDecision

const DECISION: &str = "kata-runtime-policy.kubewarden.io/decision";
const PINNED_UNCHANGED: &str = "unchanged: 0/2 kata nodes can run this pod: \
    2 node(s) didn't match Pod's node affinity/selector";

fn annotate() -> Value {
    json!({"annotateDecision": true})
}

/// `settings` with `annotateDecision: true` added.
fn annotating(settings: &Value) -> Value {
    let mut on = settings.clone();
    on["annotateDecision"] = json!(true);
    on
}

/// The JSONPatch of an admitted pod that had no annotations: the decision
/// annotation, then the class when there is one.
fn assert_annotated(r: &AdmissionResponse, value: &str, class: Option<&str>) {
    assert!(r.allowed, "{r:?}");
    assert_eq!(r.patch_type.as_deref(), Some("JSONPatch"), "{r:?}");
    let mut ops =
        vec![json!({"op": "add", "path": "/metadata/annotations", "value": {DECISION: value}})];
    if let Some(class) = class {
        ops.push(json!({"op": "add", "path": "/spec/runtimeClassName", "value": class}));
    }
    assert_eq!(r.patch_operations().unwrap(), Some(Value::Array(ops)));
}

#[test]
fn annotate_decision_and_restrict_runtime_classes_settings() {
    let p = test_policy();
    for ok in [
        json!({"annotateDecision": true}),
        json!({"annotateDecision": false}),
        json!({"restrictRuntimeClasses": true}),
        json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": []}),
        json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": ["kata-qemu-nvidia-gpu"]}),
        guide_recipe(),
    ] {
        let ok = test_settings(&ok);
        let v = p.validate_settings(ok.to_string().as_bytes()).unwrap();
        assert_eq!(v, json!({"valid": true, "message": null}), "{ok}");
    }
    for (bad, message) in [
        (
            json!({"annotateDecision": "yes"}),
            r#"annotateDecision must be true or false, got "yes""#,
        ),
        (
            json!({"restrictRuntimeClasses": "true"}),
            r#"restrictRuntimeClasses must be true or false, got "true""#,
        ),
        (
            json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": ["gvisor"]}),
            r#"restrictRuntimeClasses: false contradicts allowedRuntimeClasses ["gvisor"]: set restrictRuntimeClasses: true, or remove the list"#,
        ),
    ] {
        let bad = test_settings(&bad);
        let v = p.validate_settings(bad.to_string().as_bytes()).unwrap();
        assert_eq!(v, json!({"valid": false, "message": message}), "{bad}");
    }
}

#[test]
fn annotate_decision_writes_the_decision_on_admitted_pods() {
    let p = test_policy();
    let plain = run(&p, "pod-plain.json", "kata-workers.yml", annotate());
    assert_annotated(&plain, &format!("mutated: {ASSIGNED}"), Some("kata"));
    assert_eq!(plain.warnings, None);
    assert_eq!(
        plain.audit_annotations.as_ref().unwrap()["decision"],
        "mutated"
    );
    assert_session_used_up(&p, "plain");

    // The pod that started it all: a patch with only the annotation, and
    // still its warning and its audit verdict.
    let pinned = run(&p, "pod-master-pinned.json", "kata-workers.yml", annotate());
    assert_annotated(&pinned, PINNED_UNCHANGED, None);
    assert_explained(
        &pinned,
        "unchanged",
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
    );

    let gvisor = run(&p, "pod-runtime-class.json", "kata-workers.yml", annotate());
    assert_annotated(
        &gvisor,
        "unchanged: pod already sets runtimeClassName \"gvisor\"",
        None,
    );
    assert_eq!(
        warning(&gvisor),
        "pod already sets runtimeClassName \"gvisor\"; left unchanged"
    );

    let agent = run(&p, "pod-docker-agent.json", "kata-workers.yml", annotate());
    assert_annotated(
        &agent,
        "unchanged: container \"agent\" mounts host socket /var/run/docker.sock (hostPath volume \
         \"docker\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)",
        None,
    );
    assert_eq!(
        p.take_session().remaining(),
        KATA_WORKERS_EXCHANGES,
        "the agent: the cluster was asked"
    );
}

/// A Deployment's pod as the ReplicaSet controller sends it: generateName,
/// an owner, the template-hash label, the defaults the API server filled in.
#[test]
fn a_deployment_pod_carries_the_decision() {
    let p = test_policy();
    let r = run(
        &p,
        "pod-deployment-replica.json",
        "kata-workers.yml",
        annotate(),
    );
    assert_annotated(&r, &format!("mutated: {ASSIGNED}"), Some("kata"));
    // The same pod pinned to the master: unchanged, and says why.
    let mut pinned = request("pod-deployment-replica.json");
    pinned["object"]["spec"]["nodeSelector"] = json!({"node-role.kubernetes.io/master": ""});
    let r = p.evaluate(&pinned, &annotate(), session("kata-workers.yml"));
    assert_annotated(&r, PINNED_UNCHANGED, None);
    assert!(
        warning(&r).starts_with("kata runtime not assigned: 0/2"),
        "{r:?}"
    );
    // Every field of the object is passed through: the answer is the
    // request's object plus the two members.
    let raw = p
        .validate(
            &request("pod-deployment-replica.json"),
            &annotate(),
            session("kata-workers.yml"),
        )
        .unwrap();
    let mut expected = request("pod-deployment-replica.json")["object"].clone();
    expected["spec"]["runtimeClassName"] = json!("kata");
    expected["metadata"]["annotations"] = json!({DECISION: format!("mutated: {ASSIGNED}")});
    assert_eq!(raw["mutated_object"], expected);
}

/// A decision already on the pod is replaced; other annotations stay.
#[test]
fn a_preset_decision_is_replaced() {
    let p = test_policy();
    let mut req = request("pod-master-pinned.json");
    req["object"]["metadata"]["annotations"] = json!({"team": "a", DECISION: "mutated: trust me"});
    let r = p.evaluate(&req, &annotate(), session("kata-workers.yml"));
    assert_eq!(
        r.patch_operations().unwrap(),
        Some(json!([{"op": "replace",
            "path": "/metadata/annotations/kata-runtime-policy.kubewarden.io~1decision",
            "value": PINNED_UNCHANGED}]))
    );
}

/// Refusals, requests that are not evaluated, mirror pods and
/// `runtimeClassName: ""` are answered as without the setting.
#[test]
fn no_annotation_on_refusals_mirror_pods_and_what_is_not_evaluated() {
    let p = test_policy();
    for (file, settings, session_file) in [
        (
            "pod-master-pinned.json",
            json!({"noFeasibleNode": "reject"}),
            "kata-workers.yml",
        ),
        ("pod-runc.json", json!({"restrictRuntimeClasses": true}), ""),
        ("pod-runc.json", kata_mandatory(), ""),
        (
            "pod-docker-agent.json",
            json!({"incompatiblePod": "reject"}),
            "",
        ),
        ("pod-mirror.json", json!({}), ""),
        ("pod-mirror.json", kata_mandatory(), ""),
        ("pod-empty-class.json", json!({}), ""),
        (
            "pod-empty-class.json",
            json!({"restrictRuntimeClasses": true}),
            "",
        ),
        ("deployment.json", json!({}), ""),
        ("pod-malformed.json", json!({}), ""),
    ] {
        let req = request(file);
        let before = raw_validate(&p, &req, &settings, session_file);
        let after = raw_validate(&p, &req, &annotating(&settings), session_file);
        assert_eq!(
            String::from_utf8_lossy(&after.0),
            String::from_utf8_lossy(&before.0),
            "{file} {settings}"
        );
        assert_eq!(after.1, before.1, "{file}: other host calls");
        let verdict: Value = serde_json::from_slice(&after.0).unwrap();
        assert_eq!(verdict["mutated_object"], Value::Null, "{file} {settings}");
    }
}

/// Every fixture: `false` is byte for byte no setting; `true` changes
/// neither the verdict, the message, the warning, the audit annotations
/// nor the host calls, and its object is the one without the setting (or
/// the request's) plus the annotation.
#[test]
fn annotate_decision_changes_nothing_but_the_annotation_on_every_fixture() {
    let p = test_policy();
    let mut files: Vec<String> = std::fs::read_dir(root().join("test_data"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let mut annotated = 0;
    for file in &files {
        let req = request(file);
        for base in [json!({}), kata_mandatory(), guide_recipe_without_account()] {
            for session_file in ["kata-workers.yml", ""] {
                let case = format!("{file}, settings {base}, session {session_file:?}");
                let plain = raw_validate(&p, &req, &base, session_file);
                let mut off = base.clone();
                off["annotateDecision"] = json!(false);
                let off = raw_validate(&p, &req, &off, session_file);
                assert_eq!(
                    String::from_utf8_lossy(&off.0),
                    String::from_utf8_lossy(&plain.0),
                    "{case}"
                );
                let on = raw_validate(&p, &req, &annotating(&base), session_file);
                assert_eq!(on.1, plain.1, "{case}: other host calls");
                // The default (null reads as absent) is on.
                let mut default = base.clone();
                default["annotateDecision"] = Value::Null;
                let default = raw_validate(&p, &req, &default, session_file);
                assert_eq!(
                    String::from_utf8_lossy(&default.0),
                    String::from_utf8_lossy(&on.0),
                    "{case}: the default"
                );
                let plain: Value = serde_json::from_slice(&plain.0).unwrap();
                let on: Value = serde_json::from_slice(&on.0).unwrap();
                for field in [
                    "accepted",
                    "message",
                    "code",
                    "audit_annotations",
                    "warnings",
                ] {
                    assert_eq!(on[field], plain[field], "{case}: {field}");
                }
                let Some(value) =
                    on["mutated_object"]["metadata"]["annotations"][DECISION].as_str()
                else {
                    assert_eq!(on, plain, "{case}");
                    continue;
                };
                annotated += 1;
                let verdict = plain["audit_annotations"]["decision"].as_str().unwrap();
                assert!(
                    value.starts_with(&format!("{verdict}: ")),
                    "{case}: {value}"
                );
                assert!(value.len() <= 512, "{case}");
                let mut rest = on["mutated_object"].clone();
                let annotations = rest["metadata"].as_object_mut().unwrap();
                match req["object"]["metadata"].get("annotations") {
                    Some(original) => {
                        annotations.insert("annotations".into(), original.clone());
                    }
                    None => {
                        annotations.remove("annotations");
                    }
                }
                let without = match verdict {
                    "mutated" => plain["mutated_object"].clone(),
                    _ => req["object"].clone(),
                };
                assert_eq!(rest, without, "{case}");
            }
        }
    }
    assert!(annotated >= 20, "only {annotated} annotated answers");
}

/// The strict recipe of the operator guide (the Kata-mandatory example's
/// settings).
fn guide_recipe() -> Value {
    json!({
        "runtimeClassName": "kata",
        "kataNodeSelector": "katacontainers.io/kata-runtime=true",
        "policyServerServiceAccount": "system:serviceaccount:kubewarden:kata-runtime-policy",
        "incompatiblePod": "reject",
        "noFeasibleNode": "reject",
        "lookupFailure": "reject",
        "restrictRuntimeClasses": true,
        "allowedRuntimeClasses": [],
        "runtimeHandlerCheck": "auto",
        "annotateDecision": true
    })
}

/// The recipe without its service account and annotation: the recorded
/// sessions ask `can_i` for the default one.
fn guide_recipe_without_account() -> Value {
    let mut s = guide_recipe();
    let map = s.as_object_mut().unwrap();
    map.remove("policyServerServiceAccount");
    map.remove("annotateDecision");
    s
}

/// The guide's recipe decides as the older Kata-mandatory settings
/// (`allowedRuntimeClasses: []` without `restrictRuntimeClasses`) do, and
/// writes the decision on the pods it admits.
#[test]
fn the_guide_recipe_is_kata_mandatory_with_the_decision_on_the_pod() {
    let p = test_policy();
    let recipe = annotating(&guide_recipe_without_account());
    let plain = run(&p, "pod-plain.json", "kata-workers.yml", recipe.clone());
    assert_annotated(&plain, &format!("mutated: {ASSIGNED}"), Some("kata"));
    assert_session_used_up(&p, "plain");
    let pinned = run(
        &p,
        "pod-master-pinned.json",
        "kata-workers.yml",
        recipe.clone(),
    );
    assert_refused(
        &pinned,
        "kata runtime required (noFeasibleNode: reject), and not assigned: \
         0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
    );
    let runc = p.evaluate(
        &request("pod-runc.json"),
        &recipe,
        Session::from_exchanges([]),
    );
    assert_refused(
        &runc,
        "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata)",
    );
    let agent = p.evaluate(
        &request("pod-docker-agent.json"),
        &recipe,
        Session::from_exchanges([]),
    );
    assert_refused(&agent, &format!("{REQUIRED}{DOCKER_SOCKET}"));
    let mut kata = request("pod-runtime-class.json");
    kata["object"]["spec"]["runtimeClassName"] = json!("kata");
    let kata = p.evaluate(&kata, &recipe, Session::from_exchanges([]));
    assert_annotated(
        &kata,
        "unchanged: pod already sets runtimeClassName \"kata\"",
        None,
    );
    assert_eq!(kata.warnings, None);
}
