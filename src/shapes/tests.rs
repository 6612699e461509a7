use serde_json::{Value, json};

use super::*;

fn node(name: &str, zone: &str, taints: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": zone, "katacontainers.io/kata-runtime": "true"},
            "annotations": {"nfd.node.kubernetes.io/feature-labels": "cpu-cpuid.AVX"}},
        "spec": {"taints": taints, "podCIDR": "10.0.0.0/24"},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi"},
            "runtimeHandlers": [{"name": "kata"}, {"name": "runc"}],
            "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn options() -> BuildOptions {
    BuildOptions {
        selector: "katacontainers.io/kata-runtime=true".into(),
        per_node_labels: DEFAULT_PER_NODE_LABELS.map(String::from).to_vec(),
        listed_at: 1000,
        valid_for: 120,
        max_bytes: 1 << 20,
    }
}

fn config_map(view: &Value) -> Vec<u8> {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {DATA_KEY: view.to_string()}})
        .to_string()
        .into_bytes()
}

#[test]
fn a_pool_is_one_shape_whatever_its_hostnames_and_handler_order() {
    let mut nodes: Vec<Value> = (0..7)
        .map(|i| node(&format!("n{i}"), "a", json!([])))
        .collect();
    // containerd reports its handlers in map order.
    nodes[3]["status"]["runtimeHandlers"] = json!([{"name": "runc"}, {"name": "kata"}]);
    nodes.push(node("z-other-zone", "b", json!([])));
    nodes.push(node(
        "tainted",
        "a",
        json!([{"key": "d", "effect": "NoSchedule"}]),
    ));
    let view = build(&nodes, &options());
    let shapes = view["shapes"].as_array().unwrap();
    let summary: Vec<(u64, Value)> = shapes
        .iter()
        .map(|s| (s["count"].as_u64().unwrap(), s["names"].clone()))
        .collect();
    assert_eq!(
        summary,
        vec![
            (7, json!(["n0", "n1", "n2", "n3", "n4"])),
            (1, json!(["tainted"])),
            (1, json!(["z-other-zone"])),
        ]
    );
    // The shape carries what the policy reads, of its smallest member.
    let first = &shapes[0]["node"];
    assert_eq!(first["metadata"]["name"], "n0");
    assert_eq!(first["metadata"]["labels"]["kubernetes.io/hostname"], "n0");
    assert!(first["metadata"].get("annotations").is_none());
    assert!(first["spec"].get("podCIDR").is_none());
    assert!(first["status"].get("conditions").is_none());
    let parsed = View::parse(&config_map(&view)).unwrap();
    assert_eq!(parsed.nodes, 9);
    assert_eq!(parsed.shapes.len(), 3);
}

#[test]
fn a_label_that_only_some_members_have_splits_the_pool() {
    let mut nodes = vec![node("a", "a", json!([])), node("b", "a", json!([]))];
    nodes[1]["metadata"]["labels"]
        .as_object_mut()
        .unwrap()
        .remove("kubernetes.io/hostname");
    let view = build(&nodes, &options());
    assert_eq!(view["shapes"].as_array().unwrap().len(), 2);
}

#[test]
fn a_node_the_filters_cannot_read_makes_the_view_unusable() {
    let mut nodes = vec![node("a", "a", json!([]))];
    nodes[0]["status"]["allocatable"]["cpu"] = json!("lots");
    let view = build(&nodes, &options());
    assert!(view.get("shapes").is_none());
    let why = View::parse(&config_map(&view)).unwrap_err();
    assert!(
        matches!(&why, Unusable::Declined(w) if w.contains("\"lots\", which is not a valid quantity")),
        "{why}"
    );
}

#[test]
fn a_view_over_its_size_holds_no_shapes_and_says_why() {
    let nodes: Vec<Value> = (0..50)
        .map(|i| node(&format!("n{i}"), &format!("z{i}"), json!([])))
        .collect();
    let view = build(
        &nodes,
        &BuildOptions {
            max_bytes: 2000,
            ..options()
        },
    );
    let why = View::parse(&config_map(&view)).unwrap_err().to_string();
    assert!(why.contains("50 shapes take"), "{why}");
}

#[test]
fn a_view_is_used_only_fresh_and_for_its_selector() {
    let view = View::parse(&config_map(&build(
        &[node("a", "a", json!([]))],
        &options(),
    )))
    .unwrap();
    let selector = "katacontainers.io/kata-runtime=true";
    assert_eq!(view.usable(selector, Some(1120)), Ok(()));
    assert!(matches!(
        view.usable(selector, Some(1121)),
        Err(Unusable::Stale { .. })
    ));
    assert!(matches!(
        view.usable(selector, None),
        Err(Unusable::Stale { now: None, .. })
    ));
    assert!(matches!(
        view.usable("kata=yes", Some(1000)),
        Err(Unusable::OtherSelector(_))
    ));
}

#[test]
fn views_that_do_not_add_up_or_are_not_views_are_unreadable() {
    let mut view = build(&[node("a", "a", json!([]))], &options());
    view["nodes"] = json!(2);
    assert!(matches!(
        View::parse(&config_map(&view)),
        Err(Unusable::Unreadable(_))
    ));
    view["nodes"] = json!(1);
    view["format"] = json!(2);
    assert!(matches!(
        View::parse(&config_map(&view)),
        Err(Unusable::Unreadable(_))
    ));
    for bytes in [
        &b"[]"[..],
        b"{}",
        b"{\"data\": {\"shapes.json\": \"{\"}}",
        b"\xff",
    ] {
        assert!(matches!(View::parse(bytes), Err(Unusable::Unreadable(_))));
    }
}

#[test]
fn per_node_labels_take_prefixes() {
    let per_node = DEFAULT_PER_NODE_LABELS.map(String::from).to_vec();
    assert!(is_per_node(&per_node, "kubernetes.io/hostname"));
    assert!(is_per_node(
        &per_node,
        "topology.k8s.aws/network-node-layer-3"
    ));
    assert!(!is_per_node(&per_node, "topology.kubernetes.io/zone"));
}

#[test]
fn the_size_limit_is_the_size_as_stored_escaped_in_the_config_map() {
    let nodes: Vec<Value> = (0..5)
        .map(|i| node(&format!("n{i}"), &format!("z{i}"), json!([])))
        .collect();
    let roomy = build(&nodes, &options());
    let raw = roomy.to_string().len();
    let escaped = serde_json::to_string(&roomy.to_string()).unwrap().len();
    assert!(escaped > raw);
    // Room for the view as JSON, not for it as a string in `data`.
    let tight = build(
        &nodes,
        &BuildOptions {
            max_bytes: raw + 10,
            ..options()
        },
    );
    assert!(tight.get("shapes").is_none(), "{tight}");
    let fits = build(
        &nodes,
        &BuildOptions {
            max_bytes: escaped + 10,
            ..options()
        },
    );
    assert_eq!(fits["shapes"].as_array().map(Vec::len), Some(5));
}
