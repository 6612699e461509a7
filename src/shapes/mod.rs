//! The node shapes: a compact view of the kata nodes, one entry per
//! *shape* (nodes that every filter and gate of the policy judges alike:
//! the same labels but the per-node ones, taints, `unschedulable`,
//! allocatable, runtime handlers and CRI features), with a count and the
//! first member names. Nodes come in pools of identical instances, so
//! 10,000 nodes are tens of shapes, and a pod is judged against each
//! shape once instead of against every node.
//!
//! [`build`] makes the view from whole nodes (the node-shapes controller
//! writes it into a ConfigMap); [`View::parse`] reads it back in the
//! policy, which uses it only when it is fresh, made for the same
//! `kataNodeSelector`, and the pod reads no per-node label or node name:
//! otherwise the node list decides, as it would without the view. Either
//! way the decision is the node list's.

mod build;
mod view;

pub use build::{BuildOptions, build, form_of};
pub use view::{Shape, Unusable, View};

/// The ConfigMap key that holds the view.
pub const DATA_KEY: &str = "shapes.json";

/// The view's format; a policy ignores (and lists nodes instead of) any
/// other.
pub const FORMAT: u64 = 1;

/// The per-node labels a controller leaves out of the shapes by default:
/// the hostname, and the network topology EC2 reports per instance.
/// An entry ending in `*` is a prefix.
pub const DEFAULT_PER_NODE_LABELS: [&str; 2] = [
    "kubernetes.io/hostname",
    "topology.k8s.aws/network-node-layer-*",
];

/// Whether `key` is one of `per_node` (entries ending in `*` are prefixes).
pub fn is_per_node(per_node: &[String], key: &str) -> bool {
    per_node.iter().any(|p| match p.strip_suffix('*') {
        Some(prefix) => key.starts_with(prefix),
        None => p == key,
    })
}

#[cfg(test)]
mod tests;
