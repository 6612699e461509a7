//! Pods that can only ever run on named nodes (`spec.nodeName`, DaemonSet
//! pods pinned by `matchFields`): each named node is read by name instead
//! of listing every kata node. policy-server serializes the whole cached
//! list on every `list_resources_all`, so a DaemonSet rollout over N kata
//! nodes would cost O(N²); reading its one node costs O(1). A direct GET
//! also fails fast, so no access question is needed first.
//!
//! The decision is the one the list would give: a named node counts only if
//! it exists and matches `kataNodeSelector` (what the list's selector does
//! on the API server), and then goes through the same filters.

use super::{Decision, lookup_failed, mutate};
use crate::cluster::{Cluster, NodeMasks};
use crate::labels;
use crate::node::{KeyFilter, parse_node};
use crate::scheduling::{Broken, Constraints, Diagnosis, Reason, Unfit};
use crate::settings::Settings;

pub(super) fn decide(
    object: &str,
    settings: &Settings,
    cluster: &impl Cluster,
    constraints: &Constraints,
    names: &[String],
    masks: NodeMasks,
    gates: &[String],
) -> Decision {
    let class = settings.runtime_class_name.as_str();
    // Validated with the settings; were it not, it would select no node.
    let selector = labels::parse_selector(&settings.kata_node_selector);
    let mut answers = Vec::with_capacity(names.len());
    for name in names {
        match cluster.node(name, masks) {
            Ok(bytes) => answers.push((name, bytes)),
            Err(e) => return lookup_failed(settings, &format!("cannot read node {name:?}"), &e),
        }
    }
    let mut diagnosis = Diagnosis::default();
    let mut broken = Broken::default();
    let mut fits = false;
    let mut absent = Vec::new();
    for (name, bytes) in &answers {
        let Some(bytes) = bytes else {
            absent.push(format!("{name:?} does not exist"));
            continue;
        };
        let node = match parse_node(bytes, KeyFilter::All) {
            Ok(node) => node,
            Err(e) => return Decision::not_assigned(settings.lookup_failure, e),
        };
        let is_kata = selector.as_ref().is_ok_and(|requirements| {
            requirements
                .iter()
                .all(|r| r.matches(|key| node.metadata.labels.get(key)))
        });
        if !is_kata {
            absent.push(format!(
                "{name:?} is not a kata node (it does not match kataNodeSelector {:?})",
                settings.kata_node_selector
            ));
            continue;
        }
        match constraints.check(&node) {
            // Without a kubelet gate no other node matters.
            Ok(()) if !constraints.has_kubelet_gates() => {
                return mutate(object, class, None, gates);
            }
            Ok(()) => {
                fits = true;
                broken.pickable += 1;
            }
            Err(Unfit {
                first: Reason::Unreadable(why),
                ..
            }) => {
                return Decision::not_assigned(
                    settings.lookup_failure,
                    format!("the node from the cluster is not a valid Node: {why}"),
                );
            }
            Err(Unfit {
                first: Reason::Runtime(lack),
                ..
            }) => {
                broken.record(&node, &lack);
                diagnosis.record(Reason::Runtime(lack).into());
            }
            Err(unfit) => diagnosis.record(unfit),
        }
    }
    if fits {
        return mutate(object, class, (broken.count() > 0).then_some(broken), gates);
    }
    let pinned = match constraints.node_name() {
        Some(_) => "the pod is bound to node",
        None => "the pod can only run on node",
    };
    let how = match constraints.node_name() {
        Some(_) => "spec.nodeName",
        None => "required node affinity on metadata.name",
    };
    let named = names
        .iter()
        .map(|n| format!("{n:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let why = match (diagnosis.total(), absent.is_empty()) {
        (0, _) => format!("{pinned} {named} ({how}): {}", absent.join("; ")),
        (_, true) => diagnosis.to_string(),
        (_, false) => format!("{diagnosis}; {}", absent.join("; ")),
    };
    Decision::not_assigned(settings.no_feasible_node, why)
}
