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
//! and then goes through the same filter pass ([`Tally`]) as a listed one.

use super::{Cause, NoKata, Reasons, lookup_failed};
use crate::cluster::{Cluster, NodeMasks};
use crate::node::{KeyFilter, parse_node};
use crate::scheduling::{Broken, Constraints, Feasibility, Tally};
use crate::settings::Settings;

pub(super) fn judge(
    settings: &Settings,
    cluster: &impl Cluster,
    constraints: &Constraints,
    names: &[String],
    masks: NodeMasks,
) -> Result<Option<Broken<'static>>, NoKata> {
    let mut answers = Vec::with_capacity(names.len());
    for name in names {
        match cluster.node(name, masks) {
            Ok(bytes) => answers.push((name, bytes)),
            Err(e) => return Err(lookup_failed(&format!("cannot read node {name:?}"), &e)),
        }
    }
    let selector = &settings.kata_node_selector;
    // Only the labels the filters and the selector read are kept.
    let mut keys = constraints.label_keys().to_vec();
    keys.extend(selector.requirements().iter().map(|r| r.key.clone()));
    let mut tally = Tally::new(constraints);
    let mut absent = Vec::new();
    for (name, bytes) in &answers {
        let Some(bytes) = bytes else {
            absent.push(format!("{name:?} does not exist"));
            continue;
        };
        let node = parse_node(bytes, KeyFilter::Only(&keys))
            .map_err(|e| NoKata::new(Cause::LookupFailure, e))?;
        // An answer for another node (a proxy or cache that mixed answers
        // up) says nothing about this one: it does not count.
        if node.name() != name.as_str() {
            absent.push(format!("{name:?} was answered with node {:?}", node.name()));
            continue;
        }
        if !selector.matches(|key| node.metadata.labels.get(key)) {
            absent.push(format!(
                "{name:?} is not a kata node (it does not match kataNodeSelector {:?})",
                selector.text()
            ));
            continue;
        }
        if tally.judge(&node).is_break() {
            break;
        }
    }
    let diagnosis = match tally.finish(None) {
        Ok(Feasibility::Fits { broken }) => return Ok(broken.map(Broken::into_owned)),
        Ok(Feasibility::NoneFits { diagnosis, .. }) => diagnosis,
        Err(why) => {
            return Err(NoKata::new(
                Cause::LookupFailure,
                format!("the node from the cluster is not a valid Node: {why}"),
            ));
        }
    };
    let reasons = match (diagnosis.total(), absent.is_empty()) {
        (0, _) => {
            let (pinned, how) = match constraints.node_name() {
                Some(_) => ("the pod is bound to node", "spec.nodeName"),
                None => (
                    "the pod can only run on node",
                    "required node affinity on metadata.name",
                ),
            };
            let named = names
                .iter()
                .map(|n| format!("{n:?}"))
                .collect::<Vec<_>>()
                .join(", ");
            let mut reasons = absent.into_iter();
            let first = reasons.next().unwrap_or_default();
            std::iter::once(format!("{pinned} {named} ({how}): {first}"))
                .chain(reasons)
                .collect()
        }
        (_, true) => vec![diagnosis.to_string()],
        (_, false) => std::iter::once(diagnosis.to_string())
            .chain(absent)
            .collect(),
    };
    Err(NoKata {
        cause: Cause::NoFeasibleNode,
        reasons: Reasons(reasons),
    })
}
