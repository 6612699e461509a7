//! Pods that can only ever run on named nodes (`spec.nodeName`, DaemonSet
//! pods pinned by `matchFields`): each named node is read by name instead
//! of listing every kata node. policy-server serializes the whole cached
//! list on every `list_resources_all`, so a DaemonSet rollout over N kata
//! nodes would cost O(N²); reading its one node costs O(1). A direct GET
//! also fails fast, so no access question is needed first.
//!
//! The names only narrow the candidates, as kube-scheduler's PreFilter
//! does: a named node counts only if it exists and matches
//! `kataNodeSelector` (what the list's selector does on the API server),
//! and then goes through the same filter pass as a listed one.

use super::ctx::{Feasible, NodeCtx};
use crate::cluster::Cluster;
use crate::decision::no_kata::{self, NoKata};
use crate::kubelet::KubeletNeeds;
use crate::node::{KeyFilter, parse_node};
use crate::scheduling::{Broken, Constraints, Feasibility, Pass};

pub fn feasible(
    ctx: &NodeCtx,
    cluster: &impl Cluster,
    constraints: &Constraints,
    kubelet: &KubeletNeeds,
    names: &[String],
) -> Feasible {
    let masks = kubelet.masks();
    let mut answers = Vec::with_capacity(names.len());
    for name in names {
        match cluster.node(name, masks) {
            Ok(bytes) => answers.push((name, bytes)),
            Err(e) => {
                return Err(NoKata::lookup_failed(
                    &format!("cannot read node {name:?}"),
                    &e,
                ));
            }
        }
    }
    // Only the labels the filters and the selector read are kept.
    let mut keys = constraints.label_keys().to_vec();
    keys.extend(ctx.selector.requirements().iter().map(|r| r.key.clone()));
    keys.sort();
    keys.dedup();
    let mut pass = Pass::new(constraints, kubelet, kubelet.stop());
    let mut absent = Vec::new();
    for (name, bytes) in &answers {
        let Some(bytes) = bytes else {
            absent.push(no_kata::absent(name));
            continue;
        };
        let node = parse_node(bytes, KeyFilter::Only(&keys)).map_err(NoKata::unreadable)?;
        // An answer for another node (a proxy or cache that mixed answers
        // up) says nothing about this one: it does not count.
        if node.name() != name.as_str() {
            absent.push(no_kata::answered_by(name, node.name()));
            continue;
        }
        if !ctx.selector.matches(|key| node.metadata.labels.get(key)) {
            absent.push(no_kata::not_kata(name, ctx.selector));
            continue;
        }
        if pass.offer(&node).is_break() {
            break;
        }
    }
    match pass.finish() {
        Ok(Feasibility::Fits { broken }) => Ok(broken.map(Broken::into_owned)),
        Ok(Feasibility::NoneFits { diagnosis, .. }) => Err(NoKata::no_pinned_fit(
            &diagnosis,
            names,
            constraints.node_name().is_some(),
            absent,
        )),
        Ok(Feasibility::GaveUp) => Err(NoKata::unreadable("the kata nodes could not be judged")),
        Err(why) => Err(no_kata::not_a_node(&why)),
    }
}
