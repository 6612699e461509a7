//! The NodeUnschedulable filter: a cordoned node (`spec.unschedulable`) acts
//! as the taint `node.kubernetes.io/unschedulable:NoSchedule`.

use k8s_openapi::api::core::v1::Toleration;

use super::taint_toleration::{NO_SCHEDULE, any_tolerates};
use crate::node::Node;

pub const UNSCHEDULABLE_TAINT: &str = "node.kubernetes.io/unschedulable";

/// Whether the pod may be scheduled onto the node despite a cordon.
pub fn passes(node: &Node, tolerations: &[Toleration]) -> bool {
    !node.spec.unschedulable || any_tolerates(tolerations, UNSCHEDULABLE_TAINT, "", NO_SCHEDULE)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::test_support::node;
    use serde_json::json;

    #[test]
    fn cordoned_nodes_need_the_unschedulable_toleration() {
        let cordoned = node(json!({"name": "c", "unschedulable": true}));
        let open = node(json!({"name": "o"}));
        let none: Vec<Toleration> = vec![];
        assert!(passes(&open, &none));
        assert!(!passes(&cordoned, &none));
        let t: Vec<Toleration> = serde_json::from_value(
            json!([{"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoSchedule"}]),
        )
        .unwrap();
        assert!(passes(&cordoned, &t));
        let wrong: Vec<Toleration> = serde_json::from_value(
            json!([{"key": UNSCHEDULABLE_TAINT, "operator": "Exists", "effect": "NoExecute"}]),
        )
        .unwrap();
        assert!(!passes(&cordoned, &wrong));
    }
}
