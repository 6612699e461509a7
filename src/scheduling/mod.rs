//! Feasibility of one pod on kata nodes, as kube-scheduler (or, for pods that
//! name their node, the kubelet) decides it. Pure: no I/O, no allocation per
//! node on the success path.
//!
//! One file per scheduler filter; this module runs them in the scheduler's
//! order and keeps the first failure of each node, as the framework does.

mod diagnosis;
pub mod node_affinity;
pub mod node_name;
pub mod node_unschedulable;
pub mod taint_toleration;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};

pub use diagnosis::Diagnosis;
use node_affinity::RequiredNodeAffinity;
use taint_toleration::{NO_EXECUTE, NO_SCHEDULE, first_untolerated};

use crate::node::Node;

/// Why a node cannot run the pod, in kube-scheduler's words.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason<'n> {
    Unschedulable,
    NodeName,
    UntoleratedTaint { key: &'n str, value: &'n str },
    NodeAffinity,
}

impl std::fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Unschedulable => f.write_str("node(s) were unschedulable"),
            Reason::NodeName => f.write_str("node(s) didn't match the requested node name"),
            Reason::UntoleratedTaint { key, value } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            Reason::NodeAffinity => {
                f.write_str("node(s) didn't match Pod's node affinity/selector")
            }
        }
    }
}

/// The effective scheduling constraints of a pod, compiled once and then
/// tested against every kata node.
#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    /// `spec.nodeName`: the scheduler is bypassed and the kubelet admits the
    /// pod: that node only, no cordon check, only NoExecute taints.
    node_name: Option<String>,
    affinity: RequiredNodeAffinity,
    tolerations: Vec<Toleration>,
}

impl Constraints {
    pub fn new(
        node_name: Option<&str>,
        node_selector: &BTreeMap<String, String>,
        required_affinity: Option<&NodeSelector>,
        tolerations: Vec<Toleration>,
    ) -> Self {
        Constraints {
            node_name: node_name.map(str::to_string),
            affinity: RequiredNodeAffinity::new(node_selector, required_affinity),
            tolerations,
        }
    }

    /// `Ok` when the node can run the pod, else the first failing filter.
    pub fn check<'n>(&self, node: &'n Node) -> Result<(), Reason<'n>> {
        let untolerated = |effects: &[&str]| {
            first_untolerated(&node.spec.taints, &self.tolerations, effects).map(|t| {
                Reason::UntoleratedTaint {
                    key: t.key.as_str(),
                    value: t.value(),
                }
            })
        };
        match &self.node_name {
            // kube-scheduler: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity.
            None => {
                if !node_unschedulable::passes(node, &self.tolerations) {
                    return Err(Reason::Unschedulable);
                }
                if let Some(reason) = untolerated(&[NO_SCHEDULE, NO_EXECUTE]) {
                    return Err(reason);
                }
                if !self.affinity.matches(node) {
                    return Err(Reason::NodeAffinity);
                }
            }
            // kubelet admission: node affinity/selector, node name, NoExecute taints.
            Some(name) => {
                if !node_name::passes(node, Some(name)) {
                    return Err(Reason::NodeName);
                }
                if !self.affinity.matches(node) {
                    return Err(Reason::NodeAffinity);
                }
                if let Some(reason) = untolerated(&[NO_EXECUTE]) {
                    return Err(reason);
                }
            }
        }
        Ok(())
    }

    /// The first node that can run the pod, or why none can. Stops at the
    /// first feasible node: the diagnosis is only needed when there is none.
    pub fn find_feasible<'a, 'n>(
        &self,
        nodes: &'a [Node<'n>],
    ) -> Result<&'a Node<'n>, Diagnosis<'a>> {
        let mut diagnosis = Diagnosis::default();
        for node in nodes {
            match self.check(node) {
                Ok(()) => return Ok(node),
                Err(reason) => diagnosis.record(reason),
            }
        }
        Err(diagnosis)
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::node::Node;

    /// A node from `{"name", "labels", "taints", "unschedulable"}`; leaked so
    /// that tests can hold borrowed nodes without ceremony.
    pub fn node(v: serde_json::Value) -> Node<'static> {
        let full = serde_json::json!({
            "metadata": {"name": v["name"], "labels": v.get("labels").cloned().unwrap_or_default()},
            "spec": {"taints": v.get("taints").cloned().unwrap_or_default(),
                     "unschedulable": v.get("unschedulable").cloned().unwrap_or(false.into())},
        });
        let text: &'static str = Box::leak(full.to_string().into_boxed_str());
        serde_json::from_str(text).expect("test node")
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::node;
    use super::*;
    use serde_json::json;

    fn constraints(pod_spec: serde_json::Value) -> Constraints {
        let selector: BTreeMap<String, String> =
            serde_json::from_value(pod_spec.get("nodeSelector").cloned().unwrap_or(json!({})))
                .unwrap();
        let required: Option<NodeSelector> = serde_json::from_value(
            pod_spec
                .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
                .cloned()
                .unwrap_or_default(),
        )
        .unwrap();
        let tolerations: Vec<Toleration> =
            serde_json::from_value(pod_spec.get("tolerations").cloned().unwrap_or(json!([])))
                .unwrap();
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
        assert_eq!(c.check(&n), Err(Reason::Unschedulable));
        let c = constraints(json!({"nodeSelector": {"x": "y"},
            "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}));
        assert_eq!(
            c.check(&n),
            Err(Reason::UntoleratedTaint {
                key: "t",
                value: "v"
            })
        );
        let c = constraints(
            json!({"nodeSelector": {"x": "y"}, "tolerations": [{"operator": "Exists"}]}),
        );
        assert_eq!(c.check(&n), Err(Reason::NodeAffinity));
        let c = constraints(json!({"tolerations": [{"operator": "Exists"}]}));
        assert_eq!(c.check(&n), Ok(()));
    }

    #[test]
    fn the_master_pinned_pod_fits_the_master_only() {
        let pod = constraints(
            json!({"nodeSelector": {"node-role.kubernetes.io/master": ""},
            "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}]}),
        );
        let worker =
            node(json!({"name": "w1", "labels": {"katacontainers.io/kata-runtime": "true"}}));
        assert_eq!(pod.check(&master()), Ok(()));
        assert_eq!(pod.check(&worker), Err(Reason::NodeAffinity));
        let plain = constraints(json!({}));
        assert_eq!(plain.check(&worker), Ok(()));
        assert_eq!(
            plain.check(&master()),
            Err(Reason::UntoleratedTaint {
                key: "node-role.kubernetes.io/master",
                value: ""
            })
        );
    }

    #[test]
    fn prefer_no_schedule_never_blocks() {
        let n =
            node(json!({"name": "n", "taints": [{"key": "soft", "effect": "PreferNoSchedule"}]}));
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
        assert_eq!(bound.check(&other), Err(Reason::NodeName));
        let evicting = node(
            json!({"name": "w1", "taints": [{"key": "gone", "value": "x", "effect": "NoExecute"}]}),
        );
        assert_eq!(
            bound.check(&evicting),
            Err(Reason::UntoleratedTaint {
                key: "gone",
                value: "x"
            })
        );
        let wrong_zone = constraints(json!({"nodeName": "w1", "nodeSelector": {"zone": "b"}}));
        assert_eq!(
            wrong_zone.check(&tainted),
            Err(Reason::NodeAffinity),
            "kubelet checks the selector"
        );
    }

    #[test]
    fn find_feasible_stops_at_the_first_fit_and_diagnoses_otherwise() {
        let nodes = vec![
            master(),
            node(json!({"name": "w1"})),
            node(json!({"name": "w2"})),
        ];
        let plain = constraints(json!({}));
        assert_eq!(plain.find_feasible(&nodes).unwrap().name(), "w1");
        let pinned = constraints(json!({"nodeSelector": {"node-role.kubernetes.io/master": ""}}));
        let d = pinned.find_feasible(&nodes).unwrap_err();
        assert_eq!(
            d.to_string(),
            "0/3 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector, \
             1 node(s) had untolerated taint {node-role.kubernetes.io/master: }"
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
            Reason::UntoleratedTaint {
                key: "k",
                value: ""
            }
            .to_string(),
            "node(s) had untolerated taint {k: }"
        );
    }
}
