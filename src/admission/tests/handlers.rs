//! The runtime-handler check (`runtimeHandlerCheck`) through the whole
//! decision: a node counts as a Kata node only if its own runtime reports
//! the RuntimeClass's handler.

use super::*;

/// kata-deploy 4.x on containerd 2.x: one handler per shim, next to the
/// default handler and runc. `kata-qemu` is the class's handler here.
fn kata_deploy_handlers(kata_userns: bool) -> Value {
    let mut list = vec![
        json!({"name": "", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": true}}),
        json!({"name": "runc", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": true}}),
    ];
    for shim in [
        "kata-qemu",
        "kata-qemu-runtime-rs",
        "kata-clh",
        "kata-fc",
        "kata-dragonball",
        "kata-qemu-nvidia-gpu",
    ] {
        list.push(json!({"name": shim,
            "features": {"recursiveReadOnlyMounts": true, "userNamespaces": kata_userns}}));
    }
    Value::Array(list)
}

/// A labelled kata worker whose runtime reports `handlers` (`None`: the
/// field is absent, as from a kubelet before 1.30).
fn reporting(name: &str, handlers: Option<Value>) -> Value {
    let mut n = worker(name);
    if let Some(h) = handlers {
        n["status"] = json!({ "runtimeHandlers": h });
    }
    n
}

/// The k3s story: kata-deploy labelled the node, containerd never loaded Kata.
fn runc_only() -> Value {
    json!([{"name": ""}, {"name": "runc"}])
}

fn qemu_cluster(nodes: Vec<Value>) -> FakeCluster {
    FakeCluster::new(nodes).with_class(Some(kata_class(json!({"handler": "kata-qemu"}))))
}

fn plain() -> Vec<u8> {
    pod_request(json!({"containers": containers()}))
}

#[test]
fn a_labelled_node_whose_runtime_never_loaded_kata_does_not_count() {
    let cluster = qemu_cluster(vec![
        reporting("k3s-1", Some(runc_only())),
        reporting("k3s-2", Some(runc_only())),
    ]);
    assert_eq!(
        leave_text(&decide_payload(&plain(), &cluster)),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) do not report runtime handler \"kata-qemu\""
    );
    assert_eq!(*cluster.masks.borrow(), [NodeMasks::HandlerNames]);
    let strict = with_settings(
        json!({"containers": containers()}),
        json!({"noFeasibleNode": "reject"}),
    );
    assert!(matches!(
        decide_payload(&strict, &cluster),
        Seen::Reject { explanation, code: None } if explanation.ends_with("do not report runtime handler \"kata-qemu\"")
    ));
}

#[test]
fn off_reads_no_handler_and_trusts_the_label_as_before() {
    let cluster = qemu_cluster(vec![reporting("k3s-1", Some(runc_only()))]);
    let off = with_settings(
        json!({"containers": containers()}),
        json!({"runtimeHandlerCheck": "off"}),
    );
    let d = decide_payload(&off, &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(matches!(d, Seen::Mutate { warn: false, .. }));
    assert_eq!(*cluster.masks.borrow(), [NodeMasks::Plain]);
}

#[test]
fn the_handler_is_compared_not_the_class_name() {
    // Class "kata" runs handler "kata-qemu": a node reporting "kata" only
    // has no runtime for it.
    let cluster = qemu_cluster(vec![reporting("w", Some(json!([{"name": "kata"}])))]);
    assert!(
        leave_text(&decide_payload(&plain(), &cluster))
            .ends_with("1 node(s) do not report runtime handler \"kata-qemu\"")
    );
    let good = qemu_cluster(vec![reporting("w", Some(kata_deploy_handlers(false)))]);
    assert!(matches!(
        decide_payload(&plain(), &good),
        Seen::Mutate { warn: false, .. }
    ));
}

#[test]
fn a_node_that_reports_nothing_counts_by_its_label_unless_required() {
    let cluster = qemu_cluster(vec![reporting("old-kubelet", None)]);
    assert!(matches!(
        decide_payload(&plain(), &cluster),
        Seen::Mutate { warn: false, .. }
    ));
    let required = with_settings(
        json!({"containers": containers()}),
        json!({"runtimeHandlerCheck": "required"}),
    );
    assert_eq!(
        leave_text(&decide_payload(&required, &cluster)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) report no runtime handlers"
    );
}

#[test]
fn a_partial_cluster_gives_kata_and_names_the_broken_nodes() {
    let nodes = vec![
        reporting("kata-good", Some(kata_deploy_handlers(false))),
        reporting("kata-broken", Some(runc_only())),
    ];
    let expected = "kata runtime assigned, but 1 of 2 kata nodes that can take this pod do not report runtime \
                    handler \"kata-qemu\" (kata-broken): if the scheduler picks one, the pod will not start";
    for order in [nodes.clone(), nodes.into_iter().rev().collect()] {
        let d = decide_payload(&plain(), &qemu_cluster(order));
        assert_eq!(warned_mutation(&d), expected);
        assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    }
}

#[test]
fn broken_nodes_the_pod_could_never_land_on_are_not_named() {
    let mut tainted = reporting("kata-tainted", Some(runc_only()));
    tainted["spec"]["taints"] =
        json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    let mut cordoned = reporting("kata-cordoned", Some(runc_only()));
    cordoned["spec"]["unschedulable"] = json!(true);
    let cluster = qemu_cluster(vec![
        tainted,
        cordoned,
        reporting("kata-good", Some(kata_deploy_handlers(false))),
    ]);
    assert!(matches!(
        decide_payload(&plain(), &cluster),
        Seen::Mutate { warn: false, .. }
    ));
}

#[test]
fn many_broken_nodes_are_counted_and_five_are_named_in_order() {
    let mut nodes: Vec<Value> = (0..8)
        .rev()
        .map(|i| reporting(&format!("broken-{i}"), Some(runc_only())))
        .collect();
    nodes.insert(3, reporting("good", Some(kata_deploy_handlers(false))));
    nodes.push(reporting("quiet", Some(json!([]))));
    let d = decide_payload(&plain(), &qemu_cluster(nodes));
    assert_eq!(
        warned_mutation(&d),
        "kata runtime assigned, but 8 of 10 kata nodes that can take this pod do not report runtime handler \
         \"kata-qemu\" (broken-0, broken-1, broken-2, broken-3, broken-4, and 3 more): if the scheduler picks one, \
         the pod will not start"
    );
}

#[test]
fn label_free_kata_lets_the_handler_alone_say_which_nodes_run_kata() {
    // Kata installed by hand: no label. Every node is listed; the handler
    // decides. The master reports nothing and is tainted: never named.
    let mut master = master();
    master["status"] = json!({"runtimeHandlers": runc_only()});
    let cluster = qemu_cluster(vec![
        master,
        node("plain-1", json!({}), json!([])),
        reporting("kata-1", Some(kata_deploy_handlers(false))),
    ])
    .with_class(Some(kata_class(json!({"handler": "kata-qemu"}))));
    let settings = json!({"kataNodeSelector": "", "runtimeHandlerCheck": "required"});
    let d = decide_payload(
        &with_settings(json!({"containers": containers()}), settings.clone()),
        &cluster,
    );
    assert_eq!(
        warned_mutation(&d),
        "kata runtime assigned, but 1 of 2 kata nodes that can take this pod report no runtime handlers \
         (plain-1): if the scheduler picks one, the pod will not start"
    );
    assert!(cluster.queries.borrow().contains(&"Nodes None".to_string()));
    // Pinned to the master, which has no Kata runtime: left alone.
    let pinned = decide_payload(&with_settings(master_pinned_spec(), settings), &cluster);
    assert_eq!(
        leave_text(&pinned),
        "kata runtime not assigned: 0/3 kata nodes can run this pod: 2 node(s) didn't match Pod's node \
         affinity/selector, 1 node(s) do not report runtime handler \"kata-qemu\""
    );
}

fn userns_pod() -> Vec<u8> {
    // userNamespaces removed from the defaults: the pod reaches the nodes.
    with_settings(
        json!({"containers": containers(), "hostUsers": false}),
        json!({"skipPodsUsing": ["hostNamespaces"]}),
    )
}

#[test]
fn user_namespaces_need_the_handler_to_report_them() {
    let without = qemu_cluster(vec![reporting("w", Some(kata_deploy_handlers(false)))]);
    assert_eq!(
        leave_text(&decide_payload(&userns_pod(), &without)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) report runtime handler \"kata-qemu\" \
         without features.userNamespaces (the pod sets hostUsers: false)"
    );
    assert_eq!(*without.masks.borrow(), [NodeMasks::HandlerFeatures]);
    let with = qemu_cluster(vec![reporting("w", Some(kata_deploy_handlers(true)))]);
    assert!(matches!(
        decide_payload(&userns_pod(), &with),
        Seen::Mutate { warn: false, .. }
    ));
    // The kubelet refuses when the node reports nothing, even in auto.
    let silent = qemu_cluster(vec![reporting("w", None)]);
    assert!(
        leave_text(&decide_payload(&userns_pod(), &silent))
            .ends_with("1 node(s) report no runtime handlers")
    );
    // With the default skipPodsUsing the pod is skipped before any host call.
    let default = pod_request(json!({"containers": containers(), "hostUsers": false}));
    assert!(leave_text(&decide_payload(&default, &with)).contains("skipPodsUsing: userNamespaces"));
    assert_eq!(with.masks.borrow().len(), 1, "no second node query");
}

fn read_only_pod(mode: &str) -> Vec<u8> {
    pod_request(json!({
        "initContainers": [{"name": "sidecar", "image": "x", "restartPolicy": "Always",
            "volumeMounts": [{"name": "cfg", "mountPath": "/cfg", "readOnly": true, "recursiveReadOnly": mode}]}],
        "containers": containers(),
        "volumes": [{"name": "cfg", "configMap": {"name": "cfg"}}]}))
}

#[test]
fn recursive_read_only_mounts_need_the_handler_to_report_them() {
    let mut handlers = kata_deploy_handlers(false);
    for entry in handlers.as_array_mut().unwrap() {
        if entry["name"] == "kata-qemu" {
            entry["features"]["recursiveReadOnlyMounts"] = json!(false);
        }
    }
    let cluster = qemu_cluster(vec![reporting("w", Some(handlers))]);
    assert_eq!(
        leave_text(&decide_payload(&read_only_pod("Enabled"), &cluster)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) report runtime handler \"kata-qemu\" \
         without features.recursiveReadOnlyMounts (the pod sets recursiveReadOnly: Enabled)"
    );
    // IfPossible falls back to a plain read-only mount; Disabled asks nothing.
    for mode in ["IfPossible", "Disabled"] {
        assert!(matches!(
            decide_payload(&read_only_pod(mode), &cluster),
            Seen::Mutate { warn: false, .. }
        ));
    }
    assert_eq!(
        *cluster.masks.borrow(),
        [
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerNames,
            NodeMasks::HandlerNames
        ]
    );
}

#[test]
fn pinned_pods_follow_the_same_rules_on_their_node() {
    let cluster = qemu_cluster(vec![
        reporting("kata-good", Some(kata_deploy_handlers(false))),
        reporting("kata-broken", Some(runc_only())),
    ]);
    let bound = pod_request(json!({"containers": containers(), "nodeName": "kata-broken"}));
    assert_eq!(
        leave_text(&decide_payload(&bound, &cluster)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) do not report runtime handler \"kata-qemu\""
    );
    let daemon = |node: &str| {
        pod_request(
            json!({"containers": containers(), "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}),
        )
    };
    assert!(
        leave_text(&decide_payload(&daemon("kata-broken"), &cluster))
            .ends_with("1 node(s) do not report runtime handler \"kata-qemu\"")
    );
    assert!(matches!(
        decide_payload(&daemon("kata-good"), &cluster),
        Seen::Mutate { warn: false, .. }
    ));
    // A pod that may land on either (matchFields takes one value per term,
    // as upstream: terms are ORed): Kata, with the warning.
    let both = pod_request(
        json!({"containers": containers(), "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["kata-broken"]}]},
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["kata-good"]}]}]}}}}),
    );
    assert!(warned_mutation(&decide_payload(&both, &cluster)).contains("1 of 2 kata nodes"));
    assert!(
        cluster
            .masks
            .borrow()
            .iter()
            .all(|m| *m == NodeMasks::HandlerNames)
    );
    assert!(
        !cluster
            .queries
            .borrow()
            .iter()
            .any(|q| q.starts_with("Nodes")),
        "pinned pods read their nodes by name"
    );
}

#[test]
fn hostile_handler_lists_never_trap_and_never_vouch_for_a_node() {
    for shape in [
        json!("kata-qemu"),
        json!({"name": "kata-qemu"}),
        json!([1, "kata-qemu", null, {"name": 7}, {"features": {"userNamespaces": true}}]),
        json!([{"name": ["kata-qemu"]}]),
    ] {
        let cluster = qemu_cluster(vec![reporting("w", Some(shape.clone()))]);
        let d = decide_payload(&plain(), &cluster);
        let required = with_settings(
            json!({"containers": containers()}),
            json!({"runtimeHandlerCheck": "required"}),
        );
        let strict = decide_payload(&required, &cluster);
        assert!(
            matches!(strict, Seen::Unchanged { .. }),
            "{shape}: required never trusts a malformed report: {strict:?}"
        );
        // auto: a list of junk reports handlers (none is Kata's); anything
        // else reports nothing and the label decides.
        match shape.is_array() {
            true => assert!(matches!(d, Seen::Unchanged { .. }), "{shape}: {d:?}"),
            false => assert!(matches!(d, Seen::Mutate { .. }), "{shape}: {d:?}"),
        }
    }
}
