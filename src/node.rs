//! The parts of a Node that feasibility needs, read from the host's NodeList
//! answer without copying strings where the JSON has no escapes.
//!
//! Deliberately not `k8s_openapi::api::core::v1::Node` through serde: that
//! type allocates every annotation and status field, and the list is read on
//! every Pod CREATE. [`json_scan`](crate::json_scan) walks the document once,
//! keeps only the fields below (and only the label keys the constraints
//! read), and validates everything it skips (BENCHMARKS.md, "Node reader").
//!
//! This file reads the list and each node; each part of a node has its own
//! reader: `meta` (name, labels), `spec` (taints, cordon), `status`
//! (allocatable, features) and `handlers` (runtime handlers, read lazily).

mod handlers;
mod meta;
mod spec;
mod status;

use std::ops::ControlFlow;

pub use handlers::{HandlerFeature, HandlerFeatures, HandlerReport, RuntimeHandlers};
pub use meta::{KeyFilter, Labels, NodeMeta};
pub use spec::{NodeSpec, Taint};
pub use status::{Allocatable, CriFeature, CriFeatures};
// The type of the node's strings; the scheduling filters' tests and the fuzz
// targets name it here.
pub use crate::json::Str;

use crate::json::starts_as_object;
use crate::json_scan::Cursor;
use meta::read_meta;
use spec::read_spec;
use status::read_status;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node<'a> {
    pub metadata: NodeMeta<'a>,
    pub spec: NodeSpec<'a>,
    pub allocatable: Allocatable<'a>,
    pub runtime_handlers: RuntimeHandlers<'a>,
    pub features: CriFeatures,
}

impl Node<'_> {
    pub fn name(&self) -> &str {
        self.metadata.name.as_str()
    }
}

/// How a [`scan_node_list`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Every node was visited and the whole answer is a valid NodeList.
    Completed,
    /// The visitor stopped at a node; the rest was not read.
    Stopped,
}

/// Error that unwinds the reader out of a scan
/// the visitor stopped. Never shown: told apart from real errors by `stopped`.
const STOP: &str = "scan stopped by the visitor";

/// Parses the host's `list_resources_all` answer (a `v1` NodeList) one node
/// at a time, calling `visit` on each, without keeping the nodes: memory
/// stays flat however long the list, and `ControlFlow::Break` stops the
/// parse right there. Read with [`json_scan`](crate::json_scan) rather than
/// serde: the node list is the one bulk read of every admission.
pub fn scan_node_list<'de, F>(
    bytes: &'de [u8],
    labels: KeyFilter<'_>,
    mut visit: F,
) -> Result<Scan, String>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    let invalid = |why: String| not_a_node_list(&why);
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let mut c = Cursor::new(bytes);
    let mut stopped = false;
    c.object(|c, key| {
        match key.as_bytes() {
            b"kind" if !c.eat_null()? => {
                let kind = c.string()?;
                if kind != "NodeList" {
                    return Err(format!("kind is {kind:?}"));
                }
            }
            b"items" if !c.eat_null()? => {
                // One Node, refilled for each element: its vectors keep their
                // capacity, so the scan allocates nothing per node.
                let mut node = Node::default();
                let complete = c.array(|c| {
                    read_node(c, labels, false, &mut node)?;
                    Ok(visit(&node).is_continue())
                })?;
                if !complete {
                    stopped = true;
                    return Err(STOP.into());
                }
            }
            b"kind" | b"items" => {}
            _ => c.skip_value()?,
        }
        Ok(())
    })
    .or_else(|e| if stopped { Ok(()) } else { Err(e) })
    .map_err(invalid)?;
    if stopped {
        return Ok(Scan::Stopped);
    }
    if !c.at_end() {
        return c.error("trailing characters").map_err(invalid);
    }
    Ok(Scan::Completed)
}

/// Why a node list from the host cannot be read.
pub fn not_a_node_list(why: &str) -> String {
    format!("the node list from the cluster is not a valid NodeList: {why}")
}

/// Why a node from the host cannot be read.
pub fn not_a_node(why: &str) -> String {
    format!("the node from the cluster is not a valid Node: {why}")
}

/// Parses the host's `get_resource` answer for one `v1` Node.
pub fn parse_node<'de>(bytes: &'de [u8], labels: KeyFilter<'_>) -> Result<Node<'de>, String> {
    let invalid = |why: String| not_a_node(&why);
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let mut c = Cursor::new(bytes);
    let mut node = Node::default();
    read_node(&mut c, labels, true, &mut node).map_err(invalid)?;
    if !c.at_end() {
        return c.error("trailing characters").map_err(invalid);
    }
    Ok(node)
}

/// Reads one node into `node`, reusing its buffers. With `check_kind` (a
/// Node on its own, not a list item), a `kind` that is present and not null
/// must be `Node`.
fn read_node<'de>(
    c: &mut Cursor<'de>,
    labels: KeyFilter<'_>,
    check_kind: bool,
    node: &mut Node<'de>,
) -> Result<(), String> {
    let mut has_metadata = false;
    node.spec.taints.clear();
    node.spec.unschedulable = false;
    node.allocatable = Allocatable::default();
    node.runtime_handlers = RuntimeHandlers::default();
    node.features = CriFeatures::default();
    c.object(|c, key| {
        match key.as_bytes() {
            b"kind" if check_kind => {
                if !c.eat_null()? {
                    let kind = c.string()?;
                    if kind != "Node" {
                        return Err(format!("kind is {kind:?}"));
                    }
                }
            }
            b"metadata" => {
                read_meta(c, labels, &mut node.metadata)?;
                has_metadata = true;
            }
            b"status" => {
                node.allocatable = Allocatable::default();
                node.runtime_handlers = RuntimeHandlers::default();
                node.features = CriFeatures::default();
                if !c.eat_null()? {
                    read_status(
                        c,
                        &mut node.allocatable,
                        &mut node.runtime_handlers,
                        &mut node.features,
                    )?;
                }
            }
            b"spec" => {
                node.spec.taints.clear();
                node.spec.unschedulable = false;
                if !c.eat_null()? {
                    read_spec(c, &mut node.spec)?;
                }
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    if has_metadata {
        Ok(())
    } else {
        Err("missing field `metadata`".into())
    }
}

#[cfg(test)]
mod tests;
