//! The NodeName filter: a pod that names a node fits that node only.

use crate::node::Node;

pub fn passes(node: &Node, node_name: Option<&str>) -> bool {
    node_name.is_none_or(|name| name == node.name())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::test_support::node;
    use serde_json::json;

    #[test]
    fn named_node_only() {
        let n = node(json!({"name": "w1"}));
        assert!(passes(&n, None));
        assert!(passes(&n, Some("w1")));
        assert!(!passes(&n, Some("w2")));
    }
}
