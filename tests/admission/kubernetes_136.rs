//! Pod shapes that Kubernetes 1.33–1.36 opened: image volumes, DRA extended
//! resources, `supplementalGroupsPolicy: Strict`, and scheduling gates,
//! through the whole decision.

use super::*;

/// A kata-deploy 4.x node on containerd 2.x: the class's handler, and the
/// CRI's `status.features` as `features` says (`None`: not reported).
fn kata_node(name: &str, features: Option<Value>) -> Value {
    let mut n = worker(name);
    n["status"] = json!({"runtimeHandlers": [{"name": "kata", "features": {}}, {"name": "runc"}]});
    if let Some(f) = features {
        n["status"]["features"] = f;
    }
    n
}

fn supports_strict() -> Option<Value> {
    Some(json!({"supplementalGroupsPolicy": true}))
}

fn strict_spec() -> Value {
    json!({"containers": containers(),
        "securityContext": {"runAsUser": 1000, "supplementalGroupsPolicy": "Strict"}})
}

#[test]
fn a_strict_pod_is_left_alone_when_no_kata_node_supports_it() {
    let cluster = FakeCluster::new(vec![
        kata_node("kata-1", None),
        kata_node("kata-2", Some(json!({"supplementalGroupsPolicy": false}))),
        kata_node("kata-3", Some(json!({"supplementalGroupsPolicy": null}))),
    ]);
    assert_eq!(
        leave_text(&decide_payload(&pod_request(strict_spec()), &cluster)),
        "kata runtime not assigned: 0/3 kata nodes can run this pod: 3 node(s) do not support \
         supplementalGroupsPolicy: Strict"
    );
    // The list `off` reads, then the three candidates by name with the
    // feature-bearing masks (which carry status.features), then, none
    // fitting, the feature-bearing list for the whole diagnosis.
    assert_eq!(
        cluster.masks(),
        [
            NodeMasks::Plain,
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerFeatures
        ]
    );
    assert!(
        NodeMasks::HandlerFeatures
            .fields()
            .contains(&"status.features")
    );
}

#[test]
fn a_strict_pod_gets_kata_where_a_kata_node_supports_it() {
    let cluster = FakeCluster::new(vec![kata_node("kata-1", supports_strict())]);
    let d = decide_payload(&pod_request(strict_spec()), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(matches!(d, Seen::Mutate { warn: false, .. }));
    // One of two: Kata, naming the node the kubelet would refuse it on.
    let partial = FakeCluster::new(vec![
        kata_node("kata-old", None),
        kata_node("kata-new", supports_strict()),
    ]);
    assert_eq!(
        warned_mutation(&decide_payload(&pod_request(strict_spec()), &partial)),
        "kata runtime assigned, but at least 1 kata node(s) that can take this pod do not support \
         supplementalGroupsPolicy: Strict (kata-old): if the scheduler picks one, the pod will not start"
    );
}

#[test]
fn merge_or_no_policy_asks_nothing_and_keeps_the_plain_query() {
    let cluster = FakeCluster::new(vec![kata_node("kata-1", None)]);
    for policy in [json!("Merge"), json!(null), json!("strict")] {
        let spec = json!({"containers": containers(),
            "securityContext": {"supplementalGroupsPolicy": policy}});
        let d = decide_payload(&pod_request(spec), &cluster);
        assert!(matches!(d, Seen::Mutate { warn: false, .. }), "{policy}");
    }
    let d = decide_payload(&pod_request(json!({"containers": containers()})), &cluster);
    assert!(matches!(d, Seen::Mutate { warn: false, .. }));
    assert!(
        cluster.listed().iter().all(|m| *m == NodeMasks::Plain),
        "a plain pod lists what `off` lists, one cache: {:?}",
        cluster.listed()
    );
    assert!(
        cluster
            .masks()
            .iter()
            .all(|m| *m != NodeMasks::HandlerFeatures),
        "and reads its candidate with the handlers' names only: {:?}",
        cluster.masks()
    );
}

#[test]
fn strict_is_checked_whatever_runtime_handler_check_says() {
    let cluster = FakeCluster::new(vec![kata_node("kata-1", None)]);
    let off = with_settings(strict_spec(), json!({"runtimeHandlerCheck": "off"}));
    assert_eq!(
        leave_text(&decide_payload(&off, &cluster)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) do not support \
         supplementalGroupsPolicy: Strict"
    );
    assert_eq!(
        cluster.masks(),
        [
            NodeMasks::Plain,
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerFeatures
        ]
    );
    // The plain pod under `off` keeps the plain query.
    let plain_off = with_settings(
        json!({"containers": containers()}),
        json!({"runtimeHandlerCheck": "off"}),
    );
    assert!(matches!(
        decide_payload(&plain_off, &cluster),
        Seen::Mutate { .. }
    ));
    assert_eq!(cluster.masks().last(), Some(&NodeMasks::Plain));
}

#[test]
fn strict_applies_on_the_pinned_path() {
    let cluster = FakeCluster::new(vec![
        kata_node("kata-old", None),
        kata_node("kata-new", supports_strict()),
    ]);
    let mut bound = strict_spec();
    bound["nodeName"] = json!("kata-old");
    assert_eq!(
        leave_text(&decide_payload(&pod_request(bound.clone()), &cluster)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) do not support \
         supplementalGroupsPolicy: Strict"
    );
    bound["nodeName"] = json!("kata-new");
    assert!(matches!(
        decide_payload(&pod_request(bound), &cluster),
        Seen::Mutate { warn: false, .. }
    ));
    assert!(
        cluster
            .masks()
            .iter()
            .all(|m| *m == NodeMasks::HandlerFeatures)
    );
    assert!(
        !cluster.queries().iter().any(|q| q.starts_with("Nodes")),
        "read by name, never listed"
    );
}

#[test]
fn a_strict_pod_reports_the_earlier_filters_first() {
    // A tainted node fails the scheduler, not the kubelet: its reason is
    // the taint, as the scheduler would say.
    let mut tainted = kata_node("kata-tainted", None);
    tainted["spec"]["taints"] =
        json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    let cluster = FakeCluster::new(vec![tainted, kata_node("kata-1", None)]);
    assert_eq!(
        leave_text(&decide_payload(&pod_request(strict_spec()), &cluster)),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 1 node(s) do not support \
         supplementalGroupsPolicy: Strict, 1 node(s) had untolerated taint {dedicated: db}"
    );
}

fn image_volume_spec() -> Value {
    json!({"containers": [{"name": "agent", "image": "python:3.13",
            "volumeMounts": [{"name": "tools", "mountPath": "/tools"}]}],
        "volumes": [{"name": "tools", "image": {"reference": "ghcr.io/example/agent-tools:1.4"}}]})
}

#[test]
fn an_image_volume_pod_is_left_alone_without_a_host_call() {
    let cluster = seed_cluster();
    let d = decide_payload(&pod_request(image_volume_spec()), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: image volume \"tools\" (image \"ghcr.io/example/agent-tools:1.4\"), \
         mounted by container \"agent\", is an OCI image that Kata cannot mount inside its VM \
         (skipPodsUsing: imageVolumes)"
    );
    assert!(cluster.queries().is_empty(), "asked the cluster");
    // Removed from skipPodsUsing: judged like any pod.
    let given = with_settings(
        image_volume_spec(),
        json!({"skipPodsUsing": ["hostSockets"]}),
    );
    assert_eq!(
        mutated_spec(&decide_payload(&given, &cluster))["runtimeClassName"],
        "kata"
    );
}

#[test]
fn a_dra_extended_resource_is_a_dynamic_resources_finding() {
    let spec = json!({"containers": [{"name": "cuda", "image": "cuda",
        "resources": {"limits": {"deviceclass.resource.kubernetes.io/gpu.example.com": "1"}}}]});
    let cluster = seed_cluster();
    assert_eq!(
        leave_text(&decide_payload(&pod_request(spec.clone()), &cluster)),
        "kata runtime not assigned: DeviceClass \"gpu.example.com\" (extended resource \
         deviceclass.resource.kubernetes.io/gpu.example.com), asked for by container \"cuda\", is served by \
         DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)"
    );
    assert!(cluster.queries().is_empty());
    // Without dynamicResources: judged as before, as a resource no kata
    // node has in its allocatable.
    let mut nodes = vec![worker("worker-1")];
    nodes[0]["status"] = json!({"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}});
    let judged = with_settings(spec, json!({"skipPodsUsing": ["hostSockets"]}));
    assert_eq!(
        leave_text(&decide_payload(&judged, &FakeCluster::new(nodes))),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 Insufficient \
         deviceclass.resource.kubernetes.io/gpu.example.com"
    );
}

fn gated_spec(gates: &[&str]) -> Value {
    let gates: Vec<Value> = gates.iter().map(|g| json!({ "name": g })).collect();
    json!({"containers": containers(), "schedulingGates": gates})
}

/// The response policy-server sends for `payload`.
fn response(payload: &[u8], cluster: &FakeCluster) -> Value {
    serde_json::from_slice(&validate(payload, cluster)).unwrap()
}

/// The warnings the API server would show for `payload`.
fn warnings(payload: &[u8], cluster: &FakeCluster) -> Vec<String> {
    serde_json::from_value(response(payload, cluster)["warnings"].clone()).unwrap_or_default()
}

/// The audit annotation's reason for `payload`.
fn audit_reason(payload: &[u8], cluster: &FakeCluster) -> String {
    response(payload, cluster)["audit_annotations"]["reason"]
        .as_str()
        .unwrap()
        .to_string()
}

const GATE_NOTE: &str = "the pod has schedulingGates (\"kueue.x-k8s.io/admission\"): node constraints added before \
                         it is ungated are not checked, and it stays Pending if they exclude every kata node";

#[test]
fn a_gated_pod_given_kata_is_warned_that_later_constraints_are_not_checked() {
    let payload = pod_request(gated_spec(&["kueue.x-k8s.io/admission"]));
    let d = decide_payload(&payload, &seed_cluster());
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert_eq!(
        audit_reason(&payload, &seed_cluster()),
        format!("runtimeClassName \"kata\" assigned: a kata node can run this pod; {GATE_NOTE}")
    );
    // The note alone is the warning: the assignment itself needs none.
    assert_eq!(warnings(&payload, &seed_cluster()), [GATE_NOTE]);
    // Many gates: three named, the rest counted.
    let payload = pod_request(gated_spec(&["a", "b", "c", "d", "e"]));
    assert!(
        warnings(&payload, &seed_cluster())[0]
            .starts_with("the pod has schedulingGates (\"a\", \"b\", \"c\", and 2 more)")
    );
}

#[test]
fn gates_change_neither_the_decision_nor_an_ungated_pod() {
    // Left alone: no gate note (nothing was given).
    let d = decide_payload(
        &pod_request({
            let mut s = master_pinned_spec();
            s["schedulingGates"] = json!([{"name": "kueue.x-k8s.io/admission"}]);
            s
        }),
        &seed_cluster(),
    );
    assert!(!leave_text(&d).contains("schedulingGates"));
    // No gates, or an empty list: no warning.
    for spec in [gated_spec(&[]), json!({"containers": containers()})] {
        let payload = pod_request(spec);
        let d = decide_payload(&payload, &seed_cluster());
        assert!(matches!(
            d,
            Seen::Mutate {
                warn: false,
                note: None,
                ..
            }
        ));
        assert!(warnings(&payload, &seed_cluster()).is_empty());
    }
    // With broken nodes too: two warnings, so that the long one about the
    // nodes never cuts the note off.
    let mut broken = worker("k3s");
    broken["status"] = json!({"runtimeHandlers": [{"name": "runc"}]});
    let cluster = FakeCluster::new(vec![broken, kata_node("kata-1", None)]);
    let payload = pod_request(gated_spec(&["kueue.x-k8s.io/admission"]));
    let shown = warnings(&payload, &cluster);
    assert_eq!(shown.len(), 2, "{shown:?}");
    assert!(shown[0].starts_with("kata runtime assigned, but at least 1 kata node(s)"));
    assert_eq!(shown[1], GATE_NOTE);
    assert!(audit_reason(&payload, &cluster).ends_with(GATE_NOTE));
}

#[test]
fn the_gate_note_is_in_the_annotation_and_the_audit_reason() {
    let payload = with_settings(
        gated_spec(&["kueue.x-k8s.io/admission"]),
        json!({"annotateDecision": true}),
    );
    let d = decide_payload(&payload, &seed_cluster());
    let Seen::Mutate { object, .. } = &d else {
        panic!("{d:?}")
    };
    let pod: Value = serde_json::from_str(object).unwrap();
    let note = pod["metadata"]["annotations"][kata_runtime_policy::annotation::DECISION_ANNOTATION]
        .as_str()
        .unwrap();
    assert!(
        note.starts_with("mutated: runtimeClassName \"kata\" assigned")
            && note.contains("schedulingGates (\"kueue.x-k8s.io/admission\")"),
        "{note}"
    );
    let rendered = response(&payload, &seed_cluster());
    assert!(
        rendered["audit_annotations"]["reason"]
            .as_str()
            .unwrap()
            .contains("node constraints added before it is ungated are not checked")
    );
}

#[test]
fn hostile_shapes_are_refused_as_invalid_pods_never_trapped() {
    for (field, spec) in [
        (
            "image",
            json!({"containers": containers(), "volumes": [{"name": "v", "image": "ghcr.io/x"}]}),
        ),
        (
            "image",
            json!({"containers": containers(), "volumes": [{"name": "v", "image": {"reference": 7}}]}),
        ),
        (
            "supplementalGroupsPolicy",
            json!({"containers": containers(), "securityContext": {"supplementalGroupsPolicy": ["Strict"]}}),
        ),
        (
            "schedulingGates",
            json!({"containers": containers(), "schedulingGates": "kueue"}),
        ),
        (
            "schedulingGates",
            json!({"containers": containers(), "schedulingGates": [{"name": 1}]}),
        ),
    ] {
        let cluster = seed_cluster();
        let d = decide_payload(&pod_request(spec.clone()), &cluster);
        assert!(
            matches!(&d, Seen::Reject { explanation, code: Some(400) }
                if explanation.starts_with("the object is not a valid Pod: ")),
            "{field}: {d:?}"
        );
        assert!(cluster.queries().is_empty());
    }
    // A container has no supplementalGroupsPolicy: whatever it holds there
    // is not read (the API server drops the unknown field).
    let odd = json!({"containers": [{"name": "c", "image": "i",
        "securityContext": {"supplementalGroupsPolicy": 5}}]});
    assert!(matches!(
        decide_payload(&pod_request(odd), &seed_cluster()),
        Seen::Mutate { .. }
    ));
}
