//! The kata NodeList, every node through the filter pass until the answer
//! is known.

use super::ctx::{Feasible, NodeCtx};
use crate::cluster::{Cluster, NodeMasks};
use crate::decision::no_kata::NoKata;
use crate::kubelet::KubeletNeeds;
use crate::scheduling::{Broken, Constraints, Feasibility, Pass};

/// Whether a listed kata node can run the pod. `masks`: the node query
/// (the probe lists without the handlers, then asks again with them).
pub fn feasible(
    ctx: &NodeCtx,
    cluster: &impl Cluster,
    constraints: &Constraints,
    kubelet: &KubeletNeeds,
    masks: NodeMasks,
) -> Feasible {
    let nodes = ctx.list(cluster, masks)?;
    match Pass::new(constraints, kubelet, kubelet.stop()).scan(&nodes) {
        Ok(Feasibility::Fits { broken }) => Ok(broken.map(Broken::into_owned)),
        Ok(Feasibility::NoneFits { diagnosis, .. }) => {
            Err(NoKata::no_fit(&diagnosis, ctx.selector))
        }
        // The kubelet's gate never gives up; were it to, nothing is known.
        Ok(Feasibility::GaveUp) => Err(NoKata::unreadable("the kata nodes could not be judged")),
        Err(e) => Err(NoKata::unreadable(e)),
    }
}
