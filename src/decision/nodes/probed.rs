//! The runtime-handler check at the price of `runtimeHandlerCheck: off`.
//!
//! policy-server serializes the whole cached list on every
//! `list_resources_all`, and the handlers' names more than double each
//! node's share of it. Yet the decision needs one fact: is there one node
//! that passes every filter and whose runtime can start the pod? So the
//! list is the one `off` reads (no handlers), the scheduler's filters pick
//! the candidates, and the candidates alone are read by name with the
//! handlers (a direct GET, cached per name by policy-server), in list
//! order, until one can start the pod: the [`Probe`] is the pass's gate.
//!
//! After [`MAX_MISSES`] candidates that cannot, or a read that fails, the
//! list with the handlers answers instead, as it did before this probe: a
//! cluster where the labelled nodes lack the handler (k3s's containerd,
//! a half-done install) gets the whole diagnosis. Either way the decision
//! is the exhaustive check's; only the warning about broken nodes names
//! the ones met rather than all of them.

use super::ctx::{Feasible, NodeCtx};
use super::listed;
use crate::cluster::{Cluster, NodeMasks};
use crate::decision::no_kata::NoKata;
use crate::kubelet::KubeletNeeds;
use crate::node::{KeyFilter, Node, parse_node};
use crate::scheduling::{Broken, Constraints, Feasibility, Gate, Pass, Stop, Verdict};
use crate::settings::KataNodeSelector;

/// Candidates that cannot start the pod before the list with the handlers
/// is read instead: a few GETs cost less than that list at any size.
pub const MAX_MISSES: usize = 3;

pub fn feasible(
    ctx: &NodeCtx,
    cluster: &impl Cluster,
    constraints: &Constraints,
    kubelet: &KubeletNeeds,
) -> Feasible {
    let plain = ctx.list(cluster, NodeMasks::Plain)?;
    let probe = Probe {
        cluster,
        constraints,
        kubelet,
        selector: ctx.selector,
        misses: 0,
    };
    match Pass::new(constraints, probe, Stop::FirstFit).scan(&plain) {
        Err(why) => Err(NoKata::unreadable(why)),
        Ok(Feasibility::Fits { broken }) => Ok(broken.map(Broken::into_owned)),
        // No candidate at all: the handlers change nothing.
        Ok(Feasibility::NoneFits { diagnosis, met: 0 }) => {
            Err(NoKata::no_fit(&diagnosis, ctx.selector))
        }
        Ok(Feasibility::NoneFits { .. } | Feasibility::GaveUp) => {
            listed::feasible(ctx, cluster, constraints, kubelet, kubelet.masks())
        }
    }
}

/// Reads each candidate again by name, with what the kubelet's gates need.
struct Probe<'a, C> {
    cluster: &'a C,
    constraints: &'a Constraints,
    kubelet: &'a KubeletNeeds,
    selector: &'a KataNodeSelector,
    misses: usize,
}

impl<'n, C: Cluster> Gate<'n> for Probe<'_, C> {
    /// The answer is trusted no more than the list: a node of another name
    /// (a proxy or cache that mixed answers up), one that no longer matches
    /// `kataNodeSelector` (relabelled since the list was cached) or no
    /// longer passes the filters is a miss, never a fit.
    fn admit(&mut self, listed: &Node<'n>) -> Verdict {
        let name = listed.name();
        let bytes = match self.cluster.node(name, self.kubelet.masks()) {
            Ok(Some(bytes)) => bytes,
            // Deleted since the list was cached.
            Ok(None) => return self.miss(Verdict::Skip),
            // The list tells, and reports a broken answer as it always did.
            Err(_) => return Verdict::GiveUp,
        };
        let Ok(node) = parse_node(&bytes, KeyFilter::All) else {
            return Verdict::GiveUp;
        };
        if node.name() != name || !self.selector.matches(|key| node.metadata.labels.get(key)) {
            return self.miss(Verdict::Skip);
        }
        if self.constraints.check(&node).is_err() {
            // Changed since the list was cached: not a candidate any more.
            return self.miss(Verdict::Skip);
        }
        match self.kubelet.check(&node) {
            Ok(()) => Verdict::Starts,
            Err(lack) => self.miss(Verdict::Lacks(lack)),
        }
    }
}

impl<C> Probe<'_, C> {
    fn miss(&mut self, verdict: Verdict) -> Verdict {
        self.misses += 1;
        match self.misses >= MAX_MISSES {
            true => Verdict::GiveUp,
            false => verdict,
        }
    }
}
