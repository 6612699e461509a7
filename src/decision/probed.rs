//! The runtime-handler check at the price of `runtimeHandlerCheck: off`.
//!
//! policy-server serializes the whole cached list on every
//! `list_resources_all`, and the handlers' names more than double each
//! node's share of it. Yet the decision needs one fact: is there one node
//! that passes every filter and whose runtime can start the pod? So the
//! list is the one `off` reads (no handlers), the scheduler's filters pick
//! the candidates, and the candidates alone are read by name with the
//! handlers (a direct GET, cached per name by policy-server), in list
//! order, until one can start the pod.
//!
//! After [`MAX_MISSES`] candidates that cannot, or a read that fails, the
//! list with the handlers answers instead, as it did before this probe: a
//! cluster where the labelled nodes lack the handler (k3s's containerd,
//! a half-done install) gets the whole diagnosis. Either way the decision
//! is the exhaustive check's; only the warning about broken nodes names
//! the ones met rather than all of them.

use std::borrow::Cow;
use std::ops::ControlFlow;

use super::{Cause, NoKata, feasible, list_nodes, no_fit};
use crate::cluster::{Cluster, NodeMasks};
use crate::node::{KeyFilter, parse_node};
use crate::scheduling::{Broken, Constraints, Feasibility, Reason, Unfit};
use crate::settings::{NodeSelector, Settings};

/// Candidates that cannot start the pod before the list with the handlers
/// is read instead: a few GETs cost less than that list at any size.
pub const MAX_MISSES: usize = 3;

pub(super) fn judge(
    settings: &Settings,
    cluster: &impl Cluster,
    constraints: &Constraints,
    masks: NodeMasks,
) -> Result<Option<Broken<'static>>, NoKata> {
    let plain = list_nodes(settings, cluster, NodeMasks::Plain)?;
    let mut probe = Probe::default();
    let selector = &settings.kata_node_selector;
    let scanned = constraints.scan_candidates(&plain, |node| {
        probe.verify(cluster, constraints, selector, node.name(), masks)
    });
    match scanned {
        Err(why) => Err(NoKata::new(Cause::LookupFailure, why)),
        Ok(Some(Feasibility::NoneFits {
            diagnosis,
            bound_elsewhere,
        })) => Err(no_fit(&diagnosis, bound_elsewhere, settings)),
        Ok(_) if probe.fits => Ok(probe.broken.found()),
        Ok(_) => {
            let nodes = list_nodes(settings, cluster, masks)?;
            feasible(constraints, &nodes, settings)
        }
    }
}

/// What the reads by name found so far.
#[derive(Default)]
struct Probe {
    fits: bool,
    misses: usize,
    /// The candidates met whose runtime cannot start the pod.
    broken: Broken<'static>,
}

impl Probe {
    /// Reads the candidate `name` with the handlers and runs every check on
    /// it; `Break` once it can start the pod, or once the list must answer.
    /// The answer is trusted no more than the list: a node of another name
    /// (a proxy or cache that mixed answers up) or one that no longer
    /// matches `kataNodeSelector` (relabelled since the list was cached)
    /// is a miss, never a fit.
    fn verify(
        &mut self,
        cluster: &impl Cluster,
        constraints: &Constraints,
        selector: &NodeSelector,
        name: &str,
        masks: NodeMasks,
    ) -> ControlFlow<()> {
        let bytes = match cluster.node(name, masks) {
            Ok(Some(bytes)) => bytes,
            // Deleted since the list was cached.
            Ok(None) => return self.miss(),
            // The list tells, and reports a broken answer as it always did.
            Err(_) => return ControlFlow::Break(()),
        };
        let Ok(node) = parse_node(&bytes, KeyFilter::All) else {
            return ControlFlow::Break(());
        };
        if node.name() != name || !selector.matches(|key| node.metadata.labels.get(key)) {
            return self.miss();
        }
        match constraints.check(&node) {
            Ok(()) => {
                self.fits = true;
                self.broken.pickable += 1;
                ControlFlow::Break(())
            }
            Err(Unfit {
                first: Reason::Runtime(lack),
                ..
            }) => {
                self.broken.record(Cow::Owned(name.to_string()), &lack);
                self.miss()
            }
            // Changed since the list was cached: not a candidate any more.
            Err(_) => self.miss(),
        }
    }

    fn miss(&mut self) -> ControlFlow<()> {
        self.misses += 1;
        match self.misses >= MAX_MISSES {
            true => ControlFlow::Break(()),
            false => ControlFlow::Continue(()),
        }
    }
}
