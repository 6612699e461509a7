//! The node shapes (`nodeShapes`): the kata nodes as a controller grouped
//! them, one entry per shape of identical nodes with its count, judged
//! once per shape instead of once per node. The view is a small ConfigMap
//! read by name (a direct GET: it fails fast, never hangs), so the
//! admission no longer pays for the whole node list.
//!
//! It decides only when its answer is the node list's: the view is fresh
//! (`validUntil`), made for the same `kataNodeSelector`, holds only nodes
//! the filters can read, and the pod reads no node name and no per-node
//! label's value (members of a shape differ only there). Otherwise, or
//! when it cannot be read, the node list decides, as without it.

use super::ctx::{Feasible, NodeCtx};
use crate::cluster::Cluster;
use crate::decision::no_kata::NoKata;
use crate::kubelet::KubeletNeeds;
use crate::node::{KeyFilter, parse_node};
use crate::scheduling::{Broken, Constraints, Feasibility, Pass};
use crate::shapes::View;

/// The view's answer, or `None` when the node list must decide.
pub fn feasible(
    ctx: &NodeCtx,
    cluster: &impl Cluster,
    constraints: &Constraints,
    kubelet: &KubeletNeeds,
) -> Option<Feasible> {
    let at = ctx.shapes?;
    if constraints.reads_node_names() {
        return None;
    }
    let bytes = cluster.config_map(&at.namespace, &at.name).ok()??;
    let view = View::parse(&bytes).ok()?;
    let selector = ctx.selector.host_selector().unwrap_or_default();
    view.usable(selector, cluster.now()).ok()?;
    if view.varies_in(&constraints.value_keys()) {
        return None;
    }
    judge(&view, ctx, constraints, kubelet)
}

/// Every shape through the pass the node list takes, each weighing as
/// many nodes as it holds.
fn judge(
    view: &View,
    ctx: &NodeCtx,
    constraints: &Constraints,
    kubelet: &KubeletNeeds,
) -> Option<Feasible> {
    let keys = constraints.label_keys();
    let mut pass = Pass::new(constraints, kubelet, kubelet.stop());
    for shape in &view.shapes {
        let node = parse_node(shape.node.get().as_bytes(), KeyFilter::Only(keys)).ok()?;
        if pass
            .offer_shape(&node, shape.count, Some(&shape.names))
            .is_break()
        {
            break;
        }
    }
    match pass.finish() {
        Ok(Feasibility::Fits { broken }) => Some(Ok(broken.map(Broken::into_owned))),
        Ok(Feasibility::NoneFits { diagnosis, .. }) => {
            Some(Err(NoKata::no_fit(&diagnosis, ctx.selector)))
        }
        // A node the filters cannot read: the list reports it as it stands.
        Ok(Feasibility::GaveUp) | Err(_) => None,
    }
}
