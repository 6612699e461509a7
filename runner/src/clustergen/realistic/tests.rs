//! What makes the realistic shape realistic, asserted.

use super::super::{Shape, kata_deploy, list_of, shaped_node_list, shaped_nodes, shaped_range};
use super::*;
use std::collections::{BTreeMap, BTreeSet};

const SEED: u64 = 0x6b61_7461;

fn labels_of(node: &Value) -> &Map<String, Value> {
    node["metadata"]["labels"].as_object().unwrap()
}

#[test]
fn same_seed_same_bytes_and_any_slice_is_the_same_nodes() {
    let a = shaped_node_list(Shape::Realistic, 200, View::Unmasked, 7, kata_deploy);
    assert_eq!(
        a,
        shaped_node_list(Shape::Realistic, 200, View::Unmasked, 7, kata_deploy)
    );
    assert_ne!(
        a,
        shaped_node_list(Shape::Realistic, 200, View::Unmasked, 8, kata_deploy)
    );
    let all = shaped_nodes(Shape::Realistic, 200, View::HandlerNames, 7, kata_deploy);
    let tail = shaped_range(
        Shape::Realistic,
        150..200,
        View::HandlerNames,
        7,
        kata_deploy,
    );
    assert_eq!(all[150..], tail[..]);
    assert_eq!(all[3]["metadata"]["name"], node_name(3));
}

#[test]
fn a_node_weighs_what_a_real_one_does() {
    let items = shaped_nodes(Shape::Realistic, 1000, View::Unmasked, SEED, kata_deploy);
    let bytes = list_of(items.clone()).to_string().len() / items.len();
    // `kubectl get node -o json` of an NFD-labelled EKS kata node,
    // managedFields left out: ~9.2 KB.
    assert!((8_500..=10_000).contains(&bytes), "{bytes} bytes per node");
    for node in &items {
        let labels = labels_of(node).len();
        assert!((88..=98).contains(&labels), "{labels} labels");
        let nfd = labels_of(node)
            .keys()
            .filter(|k| k.starts_with("feature.node.kubernetes.io/"))
            .count();
        // NFD lists every feature label it set in an annotation.
        let listed = node["metadata"]["annotations"]["nfd.node.kubernetes.io/feature-labels"]
            .as_str()
            .unwrap()
            .split(',')
            .count();
        assert_eq!(nfd, listed);
        assert_eq!(labels_of(node)["katacontainers.io/kata-runtime"], "true");
    }
    let masked = shaped_node_list(
        Shape::Realistic,
        1000,
        View::HandlerNames,
        SEED,
        kata_deploy,
    );
    assert!(
        masked.len() / 1000 > 6_000,
        "metadata stays whole under the masks"
    );
}

#[test]
fn pools_zones_and_node_states_as_in_a_real_cluster() {
    let items = shaped_nodes(Shape::Realistic, 10_000, View::Plain, SEED, kata_deploy);
    let groups: BTreeSet<(String, String)> = items
        .iter()
        .map(|n| {
            let l = labels_of(n);
            (
                l["eks.amazonaws.com/nodegroup"].to_string(),
                l["topology.kubernetes.io/zone"].to_string(),
            )
        })
        .collect();
    assert_eq!(groups.len(), 30, "10 pools × 3 zones");
    let arches: BTreeSet<&str> = items
        .iter()
        .map(|n| labels_of(n)["kubernetes.io/arch"].as_str().unwrap())
        .collect();
    assert_eq!(arches, BTreeSet::from(["amd64", "arm64"]));
    let count = |pred: &dyn Fn(&Value) -> bool| items.iter().filter(|n| pred(n)).count();
    let has_taint = |n: &Value, key: &str, effect: &str| {
        n["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["key"] == key && t["effect"] == effect)
    };
    let cordoned = count(&|n| n["spec"]["unschedulable"] == true);
    assert!((60..=150).contains(&cordoned), "{cordoned} cordoned: ~1 %");
    assert_eq!(
        cordoned,
        count(&|n| has_taint(n, "node.kubernetes.io/unschedulable", "NoSchedule"))
    );
    let not_ready = count(&|n| has_taint(n, "node.kubernetes.io/not-ready", "NoExecute"));
    assert!(
        (60..=150).contains(&not_ready),
        "{not_ready} NotReady: ~1 %"
    );
    assert_eq!(
        not_ready,
        count(&|n| has_taint(n, "node.kubernetes.io/not-ready", "NoSchedule"))
    );
    let gpus = count(&|n| n["status"]["allocatable"].get("nvidia.com/pgpu").is_some());
    assert!(gpus > 300 && gpus == count(&|n| has_taint(n, "nvidia.com/gpu", "NoSchedule")));
    assert!(count(&|n| has_taint(n, "dedicated", "NoSchedule")) > 300);
    let untainted = count(&|n| n["spec"].get("taints").is_none());
    assert!(untainted > 8_000, "{untainted}");
}

/// What may differ between two nodes of one pool: their name, their
/// hostname and their place in the network.
fn per_node(key: &str) -> bool {
    key == "kubernetes.io/hostname" || key.starts_with("topology.k8s.aws/network-node-layer-")
}

#[test]
fn the_nodes_of_a_pool_differ_only_in_name_hostname_and_network_layers() {
    let items = shaped_nodes(
        Shape::Realistic,
        3_000,
        View::HandlerFeatures,
        SEED,
        kata_deploy,
    );
    let mut pools: BTreeMap<(String, String), Vec<&Value>> = BTreeMap::new();
    for (i, node) in items.iter().enumerate() {
        // Cordoned and NotReady nodes carry their state's taints.
        if placement(SEED, i).2 != State::Ready {
            continue;
        }
        let l = labels_of(node);
        let key = (
            l["eks.amazonaws.com/nodegroup"].to_string(),
            l["topology.kubernetes.io/zone"].to_string(),
        );
        pools.entry(key).or_default().push(node);
    }
    let shared = |node: &Value| {
        let labels: BTreeMap<&String, &Value> = labels_of(node)
            .iter()
            .filter(|(k, _)| !per_node(k))
            .collect();
        let handlers: BTreeSet<String> = node["status"]["runtimeHandlers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h.to_string())
            .collect();
        json!({"labels": labels, "spec": node["spec"], "allocatable": node["status"]["allocatable"],
               "handlers": handlers, "features": node["status"]["features"]})
    };
    for (pool, nodes) in &pools {
        assert!(nodes.len() > 20, "{pool:?}: {}", nodes.len());
        let first = shared(nodes[0]);
        for node in nodes {
            assert_eq!(shared(node), first, "{pool:?}");
        }
        let layer3: BTreeSet<&str> = nodes
            .iter()
            .map(|n| {
                labels_of(n)["topology.k8s.aws/network-node-layer-3"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert!(
            layer3.len() > nodes.len() / 10,
            "a few nodes share a layer-3 node"
        );
    }
    let first = &items[0];
    let names: BTreeSet<&str> = items
        .iter()
        .map(|n| labels_of(n)["kubernetes.io/hostname"].as_str().unwrap())
        .collect();
    assert_eq!(names.len(), items.len());
    assert_eq!(
        labels_of(first)["kubernetes.io/hostname"],
        first["metadata"]["name"]
    );
}

#[test]
fn arm64_nodes_report_kata_deploys_arm64_shims() {
    let items = shaped_nodes(Shape::Realistic, 300, View::HandlerNames, SEED, kata_deploy);
    for node in &items {
        let names: BTreeSet<&str> = node["status"]["runtimeHandlers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["name"].as_str().unwrap())
            .collect();
        assert!(names.contains("kata-qemu") && names.contains("runc") && names.contains(""));
        let arm = labels_of(node)["kubernetes.io/arch"] == "arm64";
        assert_eq!(names.len(), if arm { 6 } else { 12 }, "{names:?}");
    }
}
