use k8s_openapi::api::core::v1::NodeSelector;
use serde_json::json;

use super::*;
use crate::scheduling::test_support::node;

fn affinity(required: serde_json::Value) -> VolumeAffinity {
    let selector: NodeSelector = serde_json::from_value(required).unwrap();
    VolumeAffinity::new(Some(&selector))
}

#[test]
fn volume_affinity_reads_labels_only() {
    let n = node(json!({"name": "n1", "labels": {"zone": "a"}}));
    let term = |t: serde_json::Value| affinity(json!({"nodeSelectorTerms": [t]}));
    assert!(VolumeAffinity::new(None).matches(&n), "no affinity");
    assert!(
        term(json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}))
            .matches(&n)
    );
    assert!(
        !term(json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}))
            .matches(&n)
    );
    // matchFields on another name: never constrains.
    assert!(
        term(
            json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]})
        )
        .matches(&n)
    );
    assert!(
        term(
            json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]})
        )
        .matches(&n)
    );
    // An empty term matches nothing; terms are ORed.
    assert!(!term(json!({})).matches(&n));
    assert!(
        affinity(json!({"nodeSelectorTerms": [{},
            {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]}))
        .matches(&n)
    );
    assert_eq!(
        term(json!({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}))
            .label_keys(),
        vec!["zone".to_string()]
    );
}

#[test]
fn allowed_topologies_are_ored_terms_of_anded_in_expressions() {
    let terms: Vec<TopologySelectorTerm> = serde_json::from_value(json!([
        {"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}, {"key": "rack", "values": ["1"]}]},
        {"matchLabelExpressions": [{"key": "zone", "values": ["c"]}]}
    ]))
    .unwrap();
    let p = Provisioning::new(&terms);
    let on = |labels: serde_json::Value| node(json!({"name": "n", "labels": labels}));
    assert!(p.admits(&on(json!({"zone": "b", "rack": "1"}))));
    assert!(!p.admits(&on(json!({"zone": "b", "rack": "2"}))));
    assert!(p.admits(&on(json!({"zone": "c"}))));
    assert!(!p.admits(&on(json!({}))));
    assert!(
        Provisioning::new(&[]).admits(&on(json!({}))),
        "no list: anywhere"
    );
    let empty: Vec<TopologySelectorTerm> = serde_json::from_value(json!([{}])).unwrap();
    assert!(
        !Provisioning::new(&empty).admits(&on(json!({}))),
        "an empty term: nowhere"
    );
}

#[test]
fn an_empty_check_passes_every_node_and_reads_no_label() {
    let check = VolumeCheck::default();
    assert!(check.is_empty() && check.label_keys().is_empty());
    assert!(check.check(&node(json!({"name": "n"}))).is_ok());
}
