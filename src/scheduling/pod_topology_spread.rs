//! The PodTopologySpread filter, static part: a node without the
//! `topologyKey` label of a `DoNotSchedule` constraint can never run the pod
//! (`podtopologyspread/filtering.go`, `ErrReasonNodeLabelNotMatch`,
//! unresolvable). The skew itself depends on other pods and is transient.

use crate::node::Node;

/// The topology keys of the pod's `DoNotSchedule` constraints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpreadLabels {
    keys: Vec<String>,
}

impl SpreadLabels {
    /// From `(topologyKey, whenUnsatisfiable)` pairs; only `DoNotSchedule`
    /// constraints filter nodes (`ScheduleAnyway` only scores them).
    pub fn new<'a>(constraints: impl IntoIterator<Item = (&'a str, &'a str)>) -> SpreadLabels {
        let mut keys: Vec<String> = constraints
            .into_iter()
            .filter(|(_, when)| *when == "DoNotSchedule")
            .map(|(key, _)| key.to_string())
            .collect();
        keys.sort();
        keys.dedup();
        SpreadLabels { keys }
    }

    pub fn label_keys(&self) -> &[String] {
        &self.keys
    }

    /// Whether the node carries every required topology label.
    pub fn passes(&self, node: &Node) -> bool {
        self.keys
            .iter()
            .all(|key| node.metadata.labels.get(key).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::test_support::node;
    use serde_json::json;

    #[test]
    fn do_not_schedule_keys_must_be_on_the_node() {
        let spread = SpreadLabels::new([
            ("topology.kubernetes.io/zone", "DoNotSchedule"),
            ("kubernetes.io/hostname", "DoNotSchedule"),
            ("rack", "ScheduleAnyway"),
        ]);
        assert_eq!(
            spread.label_keys(),
            ["kubernetes.io/hostname", "topology.kubernetes.io/zone"]
        );
        let both = node(json!({"name": "a", "labels": {
            "topology.kubernetes.io/zone": "z1", "kubernetes.io/hostname": "a"}}));
        // An empty value is still the label: the node is in domain "".
        let empty_zone = node(json!({"name": "b", "labels": {
            "topology.kubernetes.io/zone": "", "kubernetes.io/hostname": "b"}}));
        let no_zone =
            node(json!({"name": "c", "labels": {"kubernetes.io/hostname": "c", "rack": "r"}}));
        assert!(spread.passes(&both));
        assert!(spread.passes(&empty_zone));
        assert!(!spread.passes(&no_zone));
    }

    #[test]
    fn schedule_anyway_and_no_constraints_never_filter() {
        let bare = node(json!({"name": "a"}));
        assert!(SpreadLabels::default().passes(&bare));
        assert!(SpreadLabels::new([("rack", "ScheduleAnyway")]).passes(&bare));
        assert!(
            SpreadLabels::new([("rack", "ScheduleAnyway")])
                .label_keys()
                .is_empty()
        );
    }
}
