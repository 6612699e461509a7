use super::*;
use crate::scheduling::test_support::node;
use serde_json::json;

fn constraints(pod_spec: serde_json::Value) -> Constraints {
    let selector: BTreeMap<String, String> =
        serde_json::from_value(pod_spec.get("nodeSelector").cloned().unwrap_or(json!({}))).unwrap();
    let required: Option<NodeSelector> = serde_json::from_value(
        pod_spec
            .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
            .cloned()
            .unwrap_or_default(),
    )
    .unwrap();
    let tolerations: Vec<Toleration> =
        serde_json::from_value(pod_spec.get("tolerations").cloned().unwrap_or(json!([]))).unwrap();
    Constraints::new(
        pod_spec["nodeName"].as_str(),
        &selector,
        required.as_ref(),
        tolerations,
    )
}

fn master() -> Node<'static> {
    node(
        json!({"name": "master", "labels": {"node-role.kubernetes.io/master": ""},
                "taints": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]}),
    )
}

#[test]
fn the_first_failing_filter_is_reported_in_scheduler_order() {
    let n = node(json!({"name": "n", "unschedulable": true, "labels": {},
                        "taints": [{"key": "t", "value": "v", "effect": "NoSchedule"}]}));
    let c = constraints(json!({"nodeSelector": {"x": "y"}}));
    assert_eq!(c.check(&n), Err(Reason::Unschedulable.into()));
    let c = constraints(json!({"nodeSelector": {"x": "y"},
        "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}));
    assert_eq!(c.check(&n), Err(Reason::taint("t", "v").into()));
    let c =
        constraints(json!({"nodeSelector": {"x": "y"}, "tolerations": [{"operator": "Exists"}]}));
    assert_eq!(c.check(&n), Err(Reason::NodeAffinity.into()));
    let c = constraints(json!({"tolerations": [{"operator": "Exists"}]}));
    assert_eq!(c.check(&n), Ok(()));
}

#[test]
fn the_master_pinned_pod_fits_the_master_only() {
    let pod = constraints(
        json!({"nodeSelector": {"node-role.kubernetes.io/master": ""},
        "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}]}),
    );
    let worker = node(json!({"name": "w1", "labels": {"katacontainers.io/kata-runtime": "true"}}));
    assert_eq!(pod.check(&master()), Ok(()));
    assert_eq!(pod.check(&worker), Err(Reason::NodeAffinity.into()));
    let plain = constraints(json!({}));
    assert_eq!(plain.check(&worker), Ok(()));
    assert_eq!(
        plain.check(&master()),
        Err(Reason::taint("node-role.kubernetes.io/master", "").into())
    );
}

#[test]
fn prefer_no_schedule_never_blocks() {
    let n = node(json!({"name": "n", "taints": [{"key": "soft", "effect": "PreferNoSchedule"}]}));
    assert_eq!(constraints(json!({})).check(&n), Ok(()));
}

#[test]
fn pods_with_node_name_are_judged_like_the_kubelet() {
    let tainted = node(
        json!({"name": "w1", "unschedulable": true, "labels": {"zone": "a"},
        "taints": [{"key": "ns", "effect": "NoSchedule"}]}),
    );
    let bound = constraints(json!({"nodeName": "w1"}));
    assert_eq!(
        bound.check(&tainted),
        Ok(()),
        "kubelet ignores cordons and NoSchedule taints"
    );
    let other = node(json!({"name": "w2"}));
    assert_eq!(bound.check(&other), Err(Reason::NodeName.into()));
    let evicting = node(
        json!({"name": "w1", "taints": [{"key": "gone", "value": "x", "effect": "NoExecute"}]}),
    );
    assert_eq!(
        bound.check(&evicting),
        Err(Reason::taint("gone", "x").into())
    );
    let wrong_zone = constraints(json!({"nodeName": "w1", "nodeSelector": {"zone": "b"}}));
    assert_eq!(
        wrong_zone.check(&tainted),
        Err(Reason::NodeAffinity.into()),
        "kubelet checks the selector"
    );
}

#[test]
fn reasons_read_like_the_scheduler() {
    assert_eq!(
        Reason::Unschedulable.to_string(),
        "node(s) were unschedulable"
    );
    assert_eq!(
        Reason::NodeName.to_string(),
        "node(s) didn't match the requested node name"
    );
    assert_eq!(
        Reason::NodeAffinity.to_string(),
        "node(s) didn't match Pod's node affinity/selector"
    );
    assert_eq!(
        Reason::taint("k", "").to_string(),
        "node(s) had untolerated taint {k: }"
    );
}
