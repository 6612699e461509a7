//! Nodes for tests, from a few fields.

use crate::node::Node;

/// A node from `{"name", "labels", "taints", "unschedulable",
/// "allocatable"}`; leaked so that tests can hold borrowed nodes
/// without ceremony.
pub fn node(v: serde_json::Value) -> Node<'static> {
    let mut full = serde_json::json!({
        "metadata": {"name": v["name"], "labels": v.get("labels").cloned().unwrap_or_default()},
        "spec": {"taints": v.get("taints").cloned().unwrap_or_default(),
                 "unschedulable": v.get("unschedulable").cloned().unwrap_or(false.into())},
    });
    if let Some(allocatable) = v.get("allocatable") {
        full["status"] = serde_json::json!({ "allocatable": allocatable });
    }
    let text: &'static str = Box::leak(full.to_string().into_boxed_str());
    crate::node::parse_node(text.as_bytes(), crate::node::KeyFilter::All).expect("test node")
}

/// A node with only a name and labels.
pub fn node_with_labels(name: &str, labels: &[(&str, &str)]) -> Node<'static> {
    let labels: serde_json::Map<String, serde_json::Value> = (labels.iter())
        .map(|(k, v)| (k.to_string(), serde_json::Value::from(*v)))
        .collect();
    node(serde_json::json!({ "name": name, "labels": labels }))
}
