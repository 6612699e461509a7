//! kube-scheduler's InterPodAffinity filter
//! (`pkg/scheduler/framework/plugins/interpodaffinity/filtering.go`), for
//! the pod's required terms and the existing pods' required anti-affinity.
//!
//! Its PreFilter counts, per topology pair (a node label's key and value),
//! the existing pods that match the pod's affinity terms (a pod counts
//! only if it matches every term), its anti-affinity terms (each term on
//! its own), and the existing pods whose anti-affinity terms match the
//! pod. That counting needs the cluster's pods and is done by
//! `pod_affinity`; here are the resulting domains and the per-node rule:
//!
//! 1. every affinity term's topology key is a label of the node, and each
//!    of the node's values holds a matching pod, unless no pod anywhere
//!    matches and the pod matches its own terms (the first pod of a group
//!    that is affine to itself may go anywhere with the keys);
//! 2. no anti-affinity term's domain of the node holds a matching pod;
//! 3. no existing pod's anti-affinity term forbids the node's domain.
//!
//! Each failure is the scheduler's reason, in that order.

use std::collections::{BTreeMap, BTreeSet};

use super::reason::Reason;
use crate::node::Node;

/// Topology domains, by key: the values that hold a counted pod.
pub type Domains = BTreeMap<String, BTreeSet<String>>;

/// The PreFilter state of one pod (upstream's `preFilterState`), without
/// counts: the filter asks only whether a count is above zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterPodAffinity {
    /// The topology keys of the required affinity terms, sorted, deduped.
    pub affinity_keys: Vec<String>,
    /// Where pods matching every affinity term run.
    pub affinity: Domains,
    /// No existing pod matches the affinity terms and the pod matches them
    /// all itself.
    pub first_of_group: bool,
    /// Where pods matching an anti-affinity term run, by the term's key.
    pub anti_affinity: Domains,
    /// The domains an existing pod's anti-affinity keeps the pod out of.
    pub existing_anti_affinity: Domains,
}

impl InterPodAffinity {
    /// The node labels the filter reads.
    pub fn label_keys(&self) -> impl Iterator<Item = &String> {
        (self.affinity_keys.iter())
            .chain(self.anti_affinity.keys())
            .chain(self.existing_anti_affinity.keys())
    }

    /// `Ok` when the node passes all three rules, else the first failure.
    pub fn check(&self, node: &Node) -> Result<(), Reason<'static>> {
        let labels = &node.metadata.labels;
        let mut every_domain_holds_one = true;
        for key in &self.affinity_keys {
            let Some(value) = labels.get(key) else {
                return Err(Reason::PodAffinity);
            };
            every_domain_holds_one &= holds(&self.affinity, key, value);
        }
        if !every_domain_holds_one && !self.first_of_group {
            return Err(Reason::PodAffinity);
        }
        let forbidden = |domains: &Domains| {
            (domains.iter())
                .any(|(key, values)| labels.get(key).is_some_and(|v| values.contains(v)))
        };
        if forbidden(&self.anti_affinity) {
            return Err(Reason::PodAntiAffinity);
        }
        if forbidden(&self.existing_anti_affinity) {
            return Err(Reason::ExistingPodsAntiAffinity);
        }
        Ok(())
    }
}

fn holds(domains: &Domains, key: &str, value: &str) -> bool {
    domains
        .get(key)
        .is_some_and(|values| values.contains(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::test_support::node_with_labels;

    fn domains(pairs: &[(&str, &str)]) -> Domains {
        let mut d = Domains::new();
        for (k, v) in pairs {
            d.entry(k.to_string()).or_default().insert(v.to_string());
        }
        d
    }

    fn affinity(keys: &[&str], held: &[(&str, &str)]) -> InterPodAffinity {
        InterPodAffinity {
            affinity_keys: keys.iter().map(|k| k.to_string()).collect(),
            affinity: domains(held),
            ..Default::default()
        }
    }

    #[test]
    fn affinity_needs_a_matching_pod_in_the_nodes_domain() {
        let check = affinity(&["zone"], &[("zone", "a")]);
        assert_eq!(
            check.check(&node_with_labels("n1", &[("zone", "a")])),
            Ok(())
        );
        assert_eq!(
            check.check(&node_with_labels("n2", &[("zone", "b")])),
            Err(Reason::PodAffinity)
        );
    }

    #[test]
    fn a_node_without_the_topology_key_never_satisfies_affinity() {
        let mut first = affinity(&["zone"], &[]);
        first.first_of_group = true;
        assert_eq!(
            first.check(&node_with_labels("n1", &[("rack", "a")])),
            Err(Reason::PodAffinity),
            "not even the first pod of a group"
        );
        assert_eq!(
            first.check(&node_with_labels("n1", &[("zone", "x")])),
            Ok(())
        );
    }

    #[test]
    fn every_affinity_key_must_hold_a_matching_pod() {
        let check = affinity(&["host", "zone"], &[("zone", "a"), ("host", "n9")]);
        let node = node_with_labels("n1", &[("zone", "a"), ("host", "n1")]);
        assert_eq!(check.check(&node), Err(Reason::PodAffinity));
        let node = node_with_labels("n9", &[("zone", "a"), ("host", "n9")]);
        assert_eq!(check.check(&node), Ok(()));
    }

    #[test]
    fn anti_affinity_keeps_the_pod_out_of_a_domain_with_a_matching_pod() {
        let check = InterPodAffinity {
            anti_affinity: domains(&[("zone", "a")]),
            ..Default::default()
        };
        let in_a = node_with_labels("n1", &[("zone", "a")]);
        assert_eq!(check.check(&in_a), Err(Reason::PodAntiAffinity));
        assert_eq!(
            check.check(&node_with_labels("n2", &[("zone", "b")])),
            Ok(())
        );
        assert_eq!(
            check.check(&node_with_labels("n3", &[])),
            Ok(()),
            "no key, no domain"
        );
    }

    #[test]
    fn existing_pods_anti_affinity_comes_after_the_pods_own_rules() {
        let check = InterPodAffinity {
            anti_affinity: domains(&[("zone", "a")]),
            existing_anti_affinity: domains(&[("zone", "a"), ("host", "n2")]),
            ..Default::default()
        };
        assert_eq!(
            check.check(&node_with_labels("n1", &[("zone", "a")])),
            Err(Reason::PodAntiAffinity)
        );
        assert_eq!(
            check.check(&node_with_labels("n2", &[("zone", "b"), ("host", "n2")])),
            Err(Reason::ExistingPodsAntiAffinity)
        );
        assert_eq!(
            check.check(&node_with_labels("n3", &[("zone", "b")])),
            Ok(())
        );
    }

    #[test]
    fn affinity_fails_before_anti_affinity() {
        let check = InterPodAffinity {
            affinity_keys: vec!["zone".into()],
            anti_affinity: domains(&[("zone", "b")]),
            ..Default::default()
        };
        assert_eq!(
            check.check(&node_with_labels("n1", &[("zone", "b")])),
            Err(Reason::PodAffinity)
        );
    }

    #[test]
    fn label_keys_are_every_key_read() {
        let check = InterPodAffinity {
            affinity_keys: vec!["zone".into()],
            anti_affinity: domains(&[("host", "a")]),
            existing_anti_affinity: domains(&[("rack", "r")]),
            ..Default::default()
        };
        let keys: Vec<&String> = check.label_keys().collect();
        assert_eq!(keys, ["zone", "host", "rack"]);
    }
}
