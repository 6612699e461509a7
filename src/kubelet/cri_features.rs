//! The kubelet's admission gate on the node's CRI features
//! (`status.features`), which the scheduler never reads: a node that fails
//! here is one it may still pick, and the kubelet then refuses the pod.
//!
//! - `securityContext.supplementalGroupsPolicy: Strict` (KEP-3619, beta in
//!   1.33, GA in 1.35): kubelet `pkg/kubelet/lifecycle/predicate.go` refuses
//!   the pod (`SupplementalGroupsPolicyNotSupported`) unless the node
//!   reports `status.features.supplementalGroupsPolicy: true`; absent, null
//!   and false all refuse. It is a feature of the node's CRI (containerd
//!   ≥ 2.0, CRI-O ≥ 1.31), not of one runtime handler, so it applies
//!   whatever `runtimeHandlerCheck` says. `Merge`, or no policy, asks
//!   nothing.

use crate::node::CriFeature;
use crate::node::Node;
use crate::pod::PodFacts;

/// What the pod needs of the node's CRI, compiled once per pod.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CriNeeds {
    /// The pod sets `supplementalGroupsPolicy: Strict`.
    pub supplemental_groups_policy: bool,
}

impl CriNeeds {
    /// What the pod's own fields ask of the node's CRI.
    pub fn of(pod: &PodFacts) -> Self {
        CriNeeds {
            supplemental_groups_policy: pod.strict_supplemental_groups,
        }
    }

    /// Whether the pod needs any feature: only then is `status.features`
    /// asked of the cluster.
    pub fn any(self) -> bool {
        self.supplemental_groups_policy
    }

    /// `Ok` when the node reports every feature the pod needs.
    pub fn passes(self, node: &Node) -> Result<(), CriFeature> {
        if self.supplemental_groups_policy && !node.features.supplemental_groups_policy {
            return Err(CriFeature::SupplementalGroupsPolicy);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::{KeyFilter, parse_node};
    use serde_json::{Value, json};

    fn node(status: Value) -> Node<'static> {
        let n = json!({"metadata": {"name": "n"}, "status": status});
        let text: &'static str = Box::leak(n.to_string().into_boxed_str());
        parse_node(text.as_bytes(), KeyFilter::All).unwrap()
    }

    const STRICT: CriNeeds = CriNeeds {
        supplemental_groups_policy: true,
    };

    #[test]
    fn a_strict_pod_needs_the_node_to_report_the_feature_true() {
        assert_eq!(
            STRICT.passes(&node(
                json!({"features": {"supplementalGroupsPolicy": true}})
            )),
            Ok(())
        );
        // The kubelet refuses on absent, null and false alike.
        for lacking in [
            json!({}),
            json!({"features": null}),
            json!({"features": {}}),
            json!({"features": {"supplementalGroupsPolicy": null}}),
            json!({"features": {"supplementalGroupsPolicy": false}}),
        ] {
            assert_eq!(
                STRICT.passes(&node(lacking.clone())),
                Err(CriFeature::SupplementalGroupsPolicy),
                "{lacking}"
            );
        }
    }

    #[test]
    fn a_pod_that_is_not_strict_asks_nothing() {
        let none = CriNeeds::default();
        assert!(!none.any() && STRICT.any());
        assert_eq!(none.passes(&node(json!({}))), Ok(()));
        assert_eq!(
            none.passes(&node(
                json!({"features": {"supplementalGroupsPolicy": false}})
            )),
            Ok(())
        );
    }

    #[test]
    fn hostile_features_support_nothing_and_never_trap() {
        for odd in [
            json!({"features": [true]}),
            json!({"features": "supplementalGroupsPolicy"}),
            json!({"features": true}),
            json!({"features": {"supplementalGroupsPolicy": "true"}}),
            json!({"features": {"supplementalGroupsPolicy": 1}}),
            json!({"features": {"supplementalGroupsPolicy": {"enabled": true}}}),
            json!({"features": {"supplementalGroupsPolicy": [true]}}),
            // A runtime handler's features do not count: it is the CRI's.
            json!({"runtimeHandlers": [{"name": "kata-qemu",
                   "features": {"supplementalGroupsPolicy": true}}]}),
        ] {
            assert_eq!(
                STRICT.passes(&node(odd.clone())),
                Err(CriFeature::SupplementalGroupsPolicy),
                "{odd}"
            );
        }
        // A repeated key overrides the earlier one, as in serde_json.
        let text = br#"{"metadata":{"name":"n"},"status":{"features":
            {"supplementalGroupsPolicy":false,"supplementalGroupsPolicy":true}}}"#;
        assert_eq!(
            STRICT.passes(&parse_node(text, KeyFilter::All).unwrap()),
            Ok(())
        );
    }

    #[test]
    fn the_reason_reads_like_the_kubelet() {
        assert_eq!(
            CriFeature::SupplementalGroupsPolicy.to_string(),
            "supplementalGroupsPolicy: Strict"
        );
    }
}
