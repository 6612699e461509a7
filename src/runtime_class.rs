//! What the RuntimeClass admission plugin does to a pod once we set
//! `runtimeClassName`: it merges the class's `scheduling` into the pod and
//! refuses pods that conflict with it. We apply the same rules before
//! mutating, because mutating a pod that the plugin then refuses turns an
//! admissible pod into a failed one.

use k8s_openapi::api::node::v1::RuntimeClass;

use crate::pod::PodFacts;
use crate::quantity::Quantity;
use crate::resources::{ResourceList, ResourceNames};
use crate::scheduling::Constraints;
use crate::scheduling::node_resources_fit::ResourceFit;
use crate::scheduling::pod_topology_spread::SpreadLabels;

/// Parses the host's `get_resource` answer. k8s-openapi checks `apiVersion`
/// and `kind`, so an answer of the wrong kind is an error too.
pub fn parse(bytes: &[u8]) -> Result<RuntimeClass, String> {
    serde_json::from_slice(bytes).map_err(|e| {
        format!("the RuntimeClass from the cluster is not a valid node.k8s.io/v1 RuntimeClass: {e}")
    })
}

/// The class's `overhead.podFixed`, which the RuntimeClass plugin copies
/// into the pod's `spec.overhead`: the scheduler counts it with the requests.
pub fn overhead(rc: &RuntimeClass) -> Result<ResourceList, String> {
    let name = rc.metadata.name.as_deref().unwrap_or_default();
    rc.overhead
        .as_ref()
        .and_then(|o| o.pod_fixed.as_ref())
        .into_iter()
        .flatten()
        .map(|(resource, q)| {
            Quantity::parse(&q.0)
                .map(|q| (resource.clone(), q.round_up_to_milli()))
                .map_err(|e| {
                    format!(
                        "RuntimeClass {name:?} has overhead.podFixed {resource}: {:?}, which is not a valid quantity ({e})",
                        q.0
                    )
                })
        })
        .collect()
}

/// The pod's constraints as the RuntimeClass plugin will leave them, or the
/// reason the plugin would refuse the pod. `overhead` is [`overhead`]`(rc)`.
pub fn effective_constraints(
    pod: &PodFacts,
    rc: &RuntimeClass,
    overhead: &ResourceList,
    ignored: &ResourceNames,
) -> Result<Constraints, String> {
    let name = rc.metadata.name.as_deref().unwrap_or_default();
    check_overhead(pod, rc, overhead, name)?;
    let scheduling = rc.scheduling.as_ref();
    let mut node_selector = pod.node_selector.clone();
    let rc_selector = scheduling.and_then(|s| s.node_selector.as_ref());
    for (key, rc_value) in rc_selector.into_iter().flatten() {
        match node_selector.get(key) {
            Some(pod_value) if pod_value != rc_value => {
                return Err(format!(
                    "RuntimeClass {name:?} requires nodeSelector {key}={rc_value} but the pod's nodeSelector has {key}={pod_value}; \
                     the RuntimeClass admission plugin would refuse the pod"
                ));
            }
            _ => {
                node_selector.insert(key.clone(), rc_value.clone());
            }
        }
    }
    // MergeTolerations drops tolerations covered by others; for deciding
    // whether a taint is tolerated, the plain union is equivalent.
    let mut tolerations = pod.tolerations.clone();
    tolerations.extend(
        scheduling
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default(),
    );
    let requests = pod.resources.requests(overhead);
    let spread = SpreadLabels::new(
        pod.topology_spread
            .iter()
            .map(|(key, when)| (key.as_str(), when.as_str())),
    );
    Ok(Constraints::new(
        pod.node_name.as_deref(),
        &node_selector,
        pod.required_node_affinity.as_ref(),
        tolerations,
    )
    .with_resources(ResourceFit::new(&requests, ignored))
    .with_spread(spread))
}

/// A pod that sets `spec.overhead` must match the class's `overhead.podFixed`
/// (`setOverhead`, `validateOverhead`): the same resources, and quantities
/// equal in value (`apiequality.Semantic`: "1" equals "1000m").
fn check_overhead(
    pod: &PodFacts,
    rc: &RuntimeClass,
    fixed: &ResourceList,
    name: &str,
) -> Result<(), String> {
    let Some(pod_overhead) = pod.overhead.as_ref().filter(|o| !o.is_empty()) else {
        return Ok(());
    };
    let defined = rc.overhead.as_ref().is_some_and(|o| o.pod_fixed.is_some());
    if !defined {
        return Err(format!(
            "the pod sets spec.overhead but RuntimeClass {name:?} defines none; the RuntimeClass admission plugin would refuse the pod"
        ));
    }
    if pod_overhead != fixed {
        return Err(format!(
            "the pod's spec.overhead differs from RuntimeClass {name:?} overhead.podFixed; the RuntimeClass admission plugin would refuse the pod"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::Reason;
    use crate::scheduling::test_support::node;
    use serde_json::json;

    fn rc(v: serde_json::Value) -> RuntimeClass {
        let mut full = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata"});
        full.as_object_mut()
            .unwrap()
            .extend(v.as_object().unwrap().clone());
        parse(full.to_string().as_bytes()).unwrap()
    }

    fn pod(spec: serde_json::Value) -> PodFacts {
        PodFacts::from_json(&json!({"spec": spec}).to_string()).unwrap()
    }

    fn effective_constraints(pod: &PodFacts, rc: &RuntimeClass) -> Result<Constraints, String> {
        super::effective_constraints(pod, rc, &overhead(rc)?, &ResourceNames::default())
    }

    #[test]
    fn merges_the_class_node_selector_and_tolerations() {
        let class = rc(json!({"scheduling": {
            "nodeSelector": {"katacontainers.io/kata-runtime": "true"},
            "tolerations": [{"key": "kata", "operator": "Exists", "effect": "NoSchedule"}]}}));
        let c = effective_constraints(&pod(json!({})), &class).unwrap();
        let labelled = node(
            json!({"name": "k", "labels": {"katacontainers.io/kata-runtime": "true"},
                                   "taints": [{"key": "kata", "effect": "NoSchedule"}]}),
        );
        let unlabelled = node(json!({"name": "u", "labels": {}}));
        assert_eq!(
            c.check(&labelled),
            Ok(()),
            "class toleration must be merged"
        );
        assert_eq!(
            c.check(&unlabelled),
            Err(Reason::NodeAffinity.into()),
            "class nodeSelector must be merged"
        );
        // The same value on both sides is no conflict.
        let same = pod(json!({"nodeSelector": {"katacontainers.io/kata-runtime": "true"}}));
        assert!(effective_constraints(&same, &class).is_ok());
    }

    #[test]
    fn a_conflicting_node_selector_is_refused() {
        let class =
            rc(json!({"scheduling": {"nodeSelector": {"katacontainers.io/kata-runtime": "true"}}}));
        let p = pod(json!({"nodeSelector": {"katacontainers.io/kata-runtime": "false"}}));
        let err = effective_constraints(&p, &class).unwrap_err();
        assert!(
            err.contains("requires nodeSelector katacontainers.io/kata-runtime=true"),
            "{err}"
        );
        assert!(
            err.contains("katacontainers.io/kata-runtime=false"),
            "{err}"
        );
    }

    #[test]
    fn a_class_without_scheduling_changes_nothing() {
        let c = effective_constraints(&pod(json!({"nodeSelector": {"a": "b"}})), &rc(json!({})))
            .unwrap();
        assert_eq!(
            c.check(&node(json!({"name": "n", "labels": {"a": "b"}}))),
            Ok(())
        );
        assert_eq!(
            c.check(&node(json!({"name": "n", "labels": {}}))),
            Err(Reason::NodeAffinity.into())
        );
    }

    #[test]
    fn overhead_must_match() {
        let class = rc(json!({"overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}}}));
        assert!(effective_constraints(&pod(json!({})), &class).is_ok());
        let same = pod(json!({"overhead": {"cpu": "250m", "memory": "160Mi"}}));
        assert!(effective_constraints(&same, &class).is_ok());
        // Equal in value is equal, as the plugin's semantic comparison.
        let same_value = pod(json!({"overhead": {"cpu": "0.25", "memory": "163840Ki"}}));
        assert!(effective_constraints(&same_value, &class).is_ok());
        let fewer_keys = pod(json!({"overhead": {"cpu": "250m"}}));
        assert!(
            effective_constraints(&fewer_keys, &class)
                .unwrap_err()
                .contains("differs")
        );
        let other = pod(json!({"overhead": {"cpu": "1"}}));
        assert!(
            effective_constraints(&other, &class)
                .unwrap_err()
                .contains("differs")
        );
        assert!(
            effective_constraints(&other, &rc(json!({})))
                .unwrap_err()
                .contains("defines none")
        );
    }

    #[test]
    fn answers_of_the_wrong_kind_are_refused() {
        for bad in [
            &br#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"kata"}}"#[..],
            br#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata"},"handler":5}"#,
            b"[]",
            b"<html>",
        ] {
            assert!(parse(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
