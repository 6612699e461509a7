//! Groups whole nodes into shapes: the view the node-shapes controller
//! writes. Pure: the same nodes and options make the same bytes.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use super::{FORMAT, is_per_node};
use crate::node::{KeyFilter, parse_node};
use crate::quantity::Amount;
use crate::scheduling::Broken;

/// What a view is made for.
#[derive(Debug, Clone)]
pub struct BuildOptions {
    /// The label selector the nodes were listed with (`kataNodeSelector`).
    pub selector: String,
    /// Labels whose values differ from node to node within a pool
    /// (entries ending in `*` are prefixes): left out of the shape, but
    /// not their presence.
    pub per_node_labels: Vec<String>,
    /// When the nodes were listed, in Unix seconds.
    pub listed_at: i64,
    /// How long after `listed_at` the view may be used.
    pub valid_for: i64,
    /// A view longer than this holds no shapes and says why (a ConfigMap
    /// holds at most 1 MiB).
    pub max_bytes: usize,
}

/// The view of `nodes`, listed with `options.selector`, as JSON.
pub fn build(nodes: &[Value], options: &BuildOptions) -> Value {
    let mut view = json!({
        "format": FORMAT,
        "selector": options.selector,
        "listedAt": options.listed_at,
        "validUntil": options.listed_at.saturating_add(options.valid_for),
        "nodes": nodes.len(),
        "perNodeLabels": options.per_node_labels,
    });
    match shapes(nodes, &options.per_node_labels) {
        Ok(shapes) => {
            let count = shapes.len();
            view["shapes"] = Value::Array(shapes);
            let size = view.to_string().len();
            if size > options.max_bytes {
                if let Some(fields) = view.as_object_mut() {
                    fields.remove("shapes");
                }
                view["unusable"] = json!(format!(
                    "{count} shapes take {size} bytes, more than {}: name more labels as per-node",
                    options.max_bytes
                ));
            }
        }
        Err(why) => view["unusable"] = json!(why),
    }
    view
}

/// One entry per shape, in the order of their smallest member names.
fn shapes(nodes: &[Value], per_node: &[String]) -> Result<Vec<Value>, String> {
    // key -> (count, first names sorted, the form of the smallest member)
    let mut groups: BTreeMap<String, (usize, Vec<String>, Value)> = BTreeMap::new();
    for node in nodes {
        let form = form_of(node);
        readable(&form)?;
        let name = form["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let key = shape_key(&form, per_node);
        let (count, names, first) = groups.entry(key).or_insert((0, Vec::new(), Value::Null));
        *count += 1;
        if names.first().is_none_or(|smallest| name < *smallest) {
            *first = form;
        }
        let at = names.partition_point(|n| *n < name);
        if at < Broken::NAMED {
            names.insert(at, name);
            names.truncate(Broken::NAMED);
        }
    }
    let mut shapes: Vec<Value> = groups
        .into_values()
        .map(|(count, names, node)| json!({"count": count, "names": names, "node": node}))
        .collect();
    shapes.sort_by(|a, b| a["names"][0].as_str().cmp(&b["names"][0].as_str()));
    Ok(shapes)
}

/// What the policy reads of a node, as a node list with every field mask
/// shows it: its name and labels, taints, `unschedulable`, allocatable,
/// runtime handlers and the CRI's features. Annotations stay out.
pub fn form_of(node: &Value) -> Value {
    let pick = |from: &Value, keys: &[&str]| -> Map<String, Value> {
        keys.iter()
            .filter_map(|k| from.get(*k).map(|v| (k.to_string(), v.clone())))
            .collect()
    };
    json!({
        "metadata": pick(&node["metadata"], &["name", "labels"]),
        "spec": pick(&node["spec"], &["taints", "unschedulable"]),
        "status": pick(&node["status"], &["allocatable", "features", "runtimeHandlers"]),
    })
}

/// A view holds only nodes the policy can read whole: a node the filters
/// could not read (a malformed field, an allocatable that is no quantity)
/// stops a node list's pass where it stands, which a view cannot replay.
fn readable(form: &Value) -> Result<(), String> {
    let bytes = form.to_string();
    parse_node(bytes.as_bytes(), KeyFilter::All)?;
    let name = &form["metadata"]["name"];
    if !name.is_string() {
        return Err("a node has no name".into());
    }
    for (resource, amount) in form["status"]["allocatable"].as_object().into_iter().flatten() {
        let quantity = amount.as_str().map(Amount::parse);
        if !matches!(quantity, Some(Ok(_))) {
            return Err(format!("node {name} has status.allocatable {resource}: {amount}, which is not a valid quantity"));
        }
    }
    Ok(())
}

/// The form without what differs between members of a pool: the name,
/// the per-node labels' values, and the order of the runtime handlers
/// (containerd reports them in map order).
fn shape_key(form: &Value, per_node: &[String]) -> String {
    let mut key = form.clone();
    if let Some(meta) = key["metadata"].as_object_mut() {
        meta.remove("name");
    }
    if let Some(labels) = key["metadata"]["labels"].as_object_mut() {
        for (k, v) in labels.iter_mut() {
            if is_per_node(per_node, k) {
                *v = Value::Null;
            }
        }
    }
    if let Some(handlers) = key["status"]["runtimeHandlers"].as_array_mut() {
        handlers.sort_by(|a, b| a["name"].to_string().cmp(&b["name"].to_string()));
    }
    key.to_string()
}
