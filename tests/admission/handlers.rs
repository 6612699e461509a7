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
    FakeCluster::new(nodes).class(Some(kata_class(json!({"handler": "kata-qemu"}))))
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
    // The list `off` reads, each candidate by name, then (no candidate can
    // start the pod) the list with the handlers, for the whole diagnosis.
    assert_eq!(
        cluster.masks(),
        [
            NodeMasks::Plain,
            NodeMasks::HandlerNames,
            NodeMasks::HandlerNames,
            NodeMasks::HandlerNames
        ]
    );
    let strict = with_settings(
        json!({"containers": containers()}),
        json!({"noFeasibleNode": "reject"}),
    );
    assert!(matches!(
        decide_payload(&strict, &cluster),
        Seen::Reject { explanation, code: Some(412) } if explanation.ends_with("do not report runtime handler \"kata-qemu\"")
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
    assert_eq!(cluster.masks(), [NodeMasks::Plain]);
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
    // Candidates are read by name in list order until one can start the
    // pod: the broken nodes met before it are named.
    let reversed = qemu_cluster(nodes.iter().rev().cloned().collect());
    let d = decide_payload(&plain(), &reversed);
    assert_eq!(
        warned_mutation(&d),
        "kata runtime assigned, but at least 1 kata node(s) that can take this pod do not report runtime \
         handler \"kata-qemu\" (kata-broken): if the scheduler picks one, the pod will not start"
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert_eq!(
        reversed.queries()[3..],
        [
            "Nodes Some(\"katacontainers.io/kata-runtime=true\")",
            "Node kata-broken",
            "Node kata-good"
        ]
    );
    // The good node first: no other node is read, none is named.
    let d = decide_payload(&plain(), &qemu_cluster(nodes));
    assert!(matches!(d, Seen::Mutate { warn: false, .. }));
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

fn node_queries(cluster: &FakeCluster) -> Vec<String> {
    (cluster.queries().iter())
        .filter(|q| q.starts_with("Node"))
        .cloned()
        .collect()
}

const LIST: &str = "Nodes Some(\"katacontainers.io/kata-runtime=true\")";

#[test]
fn after_three_candidates_that_cannot_start_the_pod_the_list_with_handlers_answers() {
    let mut nodes: Vec<Value> = (0..4)
        .map(|i| reporting(&format!("broken-{i}"), Some(runc_only())))
        .collect();
    nodes.push(reporting("good", Some(kata_deploy_handlers(false))));
    let cluster = qemu_cluster(nodes);
    let d = decide_payload(&plain(), &cluster);
    // The whole count, as the list with the handlers tells it.
    assert_eq!(
        warned_mutation(&d),
        "kata runtime assigned, but 4 of 5 kata nodes that can take this pod do not report runtime handler \
         \"kata-qemu\" (broken-0, broken-1, broken-2, broken-3): if the scheduler picks one, the pod will not start"
    );
    assert_eq!(
        node_queries(&cluster),
        [
            LIST,
            "Node broken-0",
            "Node broken-1",
            "Node broken-2",
            LIST
        ]
    );
    assert_eq!(
        cluster.listed(),
        [NodeMasks::Plain, NodeMasks::HandlerNames]
    );
}

#[test]
fn candidates_are_only_the_nodes_that_pass_every_scheduler_filter() {
    let mut tainted = reporting("kata-tainted", Some(kata_deploy_handlers(false)));
    tainted["spec"]["taints"] =
        json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
    let cluster = qemu_cluster(vec![
        tainted,
        reporting("kata-broken", Some(runc_only())),
        reporting("kata-good", Some(kata_deploy_handlers(false))),
    ]);
    let d = decide_payload(&plain(), &cluster);
    assert!(warned_mutation(&d).contains("at least 1 kata node(s)"));
    assert_eq!(
        node_queries(&cluster),
        [LIST, "Node kata-broken", "Node kata-good"]
    );
    // No node passes the scheduler's filters: the list `off` reads answers
    // alone, with the diagnosis the list with the handlers would give.
    let pinned = qemu_cluster(vec![
        reporting("kata-1", Some(kata_deploy_handlers(false))),
        reporting("kata-2", Some(runc_only())),
    ]);
    assert_eq!(
        leave_text(&decide_payload(&pod_request(master_pinned_spec()), &pinned)),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node \
         affinity/selector"
    );
    assert_eq!(node_queries(&pinned), [LIST]);
    assert_eq!(pinned.masks(), [NodeMasks::Plain]);
}

#[test]
fn a_candidate_read_by_name_is_judged_as_it_is_now() {
    let good = || reporting("kata-good", Some(kata_deploy_handlers(false)));
    let listed = || reporting("kata-1", Some(kata_deploy_handlers(false)));
    // Deleted since the list was cached: passed over, not named.
    let deleted = qemu_cluster(vec![listed(), good()]).read("kata-1", Ok(None));
    let d = decide_payload(&plain(), &deleted);
    assert!(matches!(d, Seen::Mutate { warn: false, .. }));
    assert_eq!(
        node_queries(&deleted),
        [LIST, "Node kata-1", "Node kata-good"]
    );
    // Tainted since: passed over, not named.
    let mut now = listed();
    now["spec"]["taints"] = json!([{"key": "drain", "effect": "NoSchedule"}]);
    let changed = qemu_cluster(vec![listed(), good()]).read("kata-1", Ok(Some(now)));
    assert!(matches!(
        decide_payload(&plain(), &changed),
        Seen::Mutate { warn: false, .. }
    ));
    assert_eq!(
        node_queries(&changed),
        [LIST, "Node kata-1", "Node kata-good"]
    );
    // Lost its handler since: named.
    let broke = qemu_cluster(vec![listed(), good()])
        .read("kata-1", Ok(Some(reporting("kata-1", Some(runc_only())))));
    assert!(warned_mutation(&decide_payload(&plain(), &broke)).contains("(kata-1)"));
}

#[test]
fn a_read_by_name_that_fails_leaves_the_answer_to_the_list() {
    for kind in [LookupErrorKind::Forbidden, LookupErrorKind::Failed] {
        let error = LookupError {
            kind,
            message: "nodes \"kata-broken\" is forbidden".into(),
        };
        let cluster = qemu_cluster(vec![
            reporting("kata-broken", Some(runc_only())),
            reporting("kata-good", Some(kata_deploy_handlers(false))),
        ])
        .read("kata-broken", Err(error));
        let d = decide_payload(&plain(), &cluster);
        // Exactly the answer of the list with the handlers.
        assert_eq!(
            warned_mutation(&d),
            "kata runtime assigned, but 1 of 2 kata nodes that can take this pod do not report runtime \
             handler \"kata-qemu\" (kata-broken): if the scheduler picks one, the pod will not start"
        );
        assert_eq!(node_queries(&cluster), [LIST, "Node kata-broken", LIST]);
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
    .class(Some(kata_class(json!({"handler": "kata-qemu"}))));
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
    // Without a label the candidates are every node: the list with the
    // handlers, and no read by name.
    assert_eq!(node_queries(&cluster), ["Nodes None"]);
    assert_eq!(cluster.masks(), [NodeMasks::HandlerNames]);
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
    assert_eq!(
        without.masks(),
        [
            NodeMasks::Plain,
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerFeatures
        ]
    );
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
    assert_eq!(
        with.masks(),
        [NodeMasks::Plain, NodeMasks::HandlerFeatures],
        "no node query for the skipped pod"
    );
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
        cluster.masks(),
        [
            NodeMasks::Plain,
            NodeMasks::HandlerFeatures,
            NodeMasks::HandlerFeatures,
            NodeMasks::Plain,
            NodeMasks::HandlerNames,
            NodeMasks::Plain,
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
            .masks()
            .iter()
            .all(|m| *m == NodeMasks::HandlerNames)
    );
    assert!(
        !cluster.queries().iter().any(|q| q.starts_with("Nodes")),
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

#[test]
fn a_read_by_name_is_trusted_no_more_than_the_list() {
    // The list says kata-1's runtime never loaded Kata. A read by name that
    // answers with another node, or with kata-1 relabelled out of
    // kataNodeSelector since the list was cached, must not make it a fit.
    let mut other = reporting("kata-other", Some(kata_deploy_handlers(false)));
    let mut relabelled = reporting("kata-1", Some(kata_deploy_handlers(false)));
    relabelled["metadata"]["labels"]["katacontainers.io/kata-runtime"] = json!("false");
    for answer in [other.clone(), relabelled] {
        let cluster = qemu_cluster(vec![reporting("kata-1", Some(runc_only()))])
            .read("kata-1", Ok(Some(answer.clone())));
        let text = leave_text(&decide_payload(&plain(), &cluster)).to_string();
        assert!(
            text.contains("1 node(s) do not report runtime handler \"kata-qemu\""),
            "{answer}: {text}"
        );
        assert_eq!(node_queries(&cluster), [LIST, "Node kata-1", LIST]);
    }
    // The same answers for a node that can start the pod: still a fit,
    // from the list.
    other["metadata"]["name"] = json!("kata-x");
    let cluster = qemu_cluster(vec![reporting("kata-1", Some(kata_deploy_handlers(false)))])
        .read("kata-1", Ok(Some(other)));
    assert!(matches!(
        decide_payload(&plain(), &cluster),
        Seen::Mutate { warn: false, .. }
    ));
}
