//! Groups whole nodes into shapes: the view the node-shapes controller
//! writes. Pure: the same nodes and options make the same bytes.

use std::collections::BTreeMap;

use serde::Serialize;
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
    /// A view longer than this, as stored (a JSON string in the
    /// ConfigMap's data, escaped), holds no shapes and says why (a
    /// ConfigMap holds at most 1 MiB).
    pub max_bytes: usize,
}

/// A view as the controller writes it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Written<'a> {
    format: u64,
    selector: &'a str,
    listed_at: i64,
    valid_until: i64,
    nodes: usize,
    per_node_labels: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    shapes: Option<Vec<Group>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unusable: Option<String>,
}

/// One shape: how many nodes, the first names sorted, the smallest-named
/// member's form.
#[derive(Serialize)]
struct Group {
    count: usize,
    names: Vec<String>,
    node: Value,
}

/// The view of `nodes`, listed with `options.selector`, as JSON.
pub fn build(nodes: &[Value], options: &BuildOptions) -> Value {
    let mut view = Written {
        format: FORMAT,
        selector: &options.selector,
        listed_at: options.listed_at,
        valid_until: options.listed_at.saturating_add(options.valid_for),
        nodes: nodes.len(),
        per_node_labels: &options.per_node_labels,
        shapes: None,
        unusable: None,
    };
    match shapes(nodes, &options.per_node_labels) {
        Ok(shapes) => {
            let count = shapes.len();
            view.shapes = Some(shapes);
            // As stored: a JSON string in the ConfigMap's data, escaped.
            let stored = serde_json::to_string(&view).and_then(|t| serde_json::to_string(&t));
            let size = stored.map_or(usize::MAX, |b| b.len());
            if size > options.max_bytes {
                view.shapes = None;
                view.unusable = Some(format!(
                    "{count} shapes take {size} bytes, more than {}: name more labels as per-node",
                    options.max_bytes
                ));
            }
        }
        Err(why) => view.unusable = Some(why),
    }
    serde_json::to_value(&view).unwrap_or(Value::Null)
}

/// One entry per shape, in the order of their smallest member names.
fn shapes(nodes: &[Value], per_node: &[String]) -> Result<Vec<Group>, String> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    for node in nodes {
        let form = form_of(node);
        let name = readable(&form)?;
        let key = shape_key(&form, per_node);
        let group = groups.entry(key).or_insert(Group {
            count: 0,
            names: Vec::new(),
            node: Value::Null,
        });
        group.count += 1;
        if group.names.first().is_none_or(|smallest| name < *smallest) {
            group.node = form;
        }
        let at = group.names.partition_point(|n| *n < name);
        if at < Broken::NAMED {
            group.names.insert(at, name);
            group.names.truncate(Broken::NAMED);
        }
    }
    let mut shapes: Vec<Group> = groups.into_values().collect();
    shapes.sort_by(|a, b| a.names.first().cmp(&b.names.first()));
    Ok(shapes)
}

/// What the policy reads of a node, as a node list with every field mask
/// shows it: its name and labels, taints, `unschedulable`, allocatable,
/// runtime handlers and the CRI's features. Annotations stay out.
pub fn form_of(node: &Value) -> Value {
    let pick = |part: &str, keys: &[&str]| -> Map<String, Value> {
        let from = node.get(part);
        keys.iter()
            .filter_map(|k| {
                from.and_then(|f| f.get(*k))
                    .map(|v| (k.to_string(), v.clone()))
            })
            .collect()
    };
    json!({
        "metadata": pick("metadata", &["name", "labels"]),
        "spec": pick("spec", &["taints", "unschedulable"]),
        "status": pick("status", &["allocatable", "features", "runtimeHandlers"]),
    })
}

/// A view holds only nodes the policy can read whole: a node the filters
/// could not read (a malformed field, an allocatable that is no quantity)
/// stops a node list's pass where it stands, which a view cannot replay.
/// The node's name.
fn readable(form: &Value) -> Result<String, String> {
    let bytes = form.to_string();
    parse_node(bytes.as_bytes(), KeyFilter::All)?;
    let name = form.pointer("/metadata/name").and_then(Value::as_str);
    let name = name.ok_or("a node has no name")?;
    let allocatable = form
        .pointer("/status/allocatable")
        .and_then(Value::as_object);
    for (resource, amount) in allocatable.into_iter().flatten() {
        if !matches!(amount.as_str().map(Amount::parse), Some(Ok(_))) {
            return Err(format!(
                "node {name:?} has status.allocatable {resource}: {amount}, which is not a valid quantity"
            ));
        }
    }
    Ok(name.to_string())
}

/// The form without what differs between members of a pool: the name,
/// the per-node labels' values, and the order of the runtime handlers
/// (containerd reports them in map order).
fn shape_key(form: &Value, per_node: &[String]) -> String {
    let mut key = form.clone();
    if let Some(meta) = key.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("name");
        let labels = meta.get_mut("labels").and_then(Value::as_object_mut);
        for (k, v) in labels.into_iter().flatten() {
            if is_per_node(per_node, k) {
                *v = Value::Null;
            }
        }
    }
    let handlers = key
        .pointer_mut("/status/runtimeHandlers")
        .and_then(Value::as_array_mut);
    if let Some(handlers) = handlers {
        handlers.sort_by_cached_key(|h| h.get("name").map(Value::to_string));
    }
    key.to_string()
}
