//! The VolumeBinding filter (`volumebinding/binder.go`, `FindPodVolumes`)
//! and VolumeZone after it, statically: could the pod's claims ever be
//! bound and used on this node? The claims are resolved from the cluster
//! once per pod (`crate::volumes`); this is the per-node part.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorTerm, TopologySelectorTerm};

use super::node_affinity::RequiredNodeAffinity;
use super::reason::{Reason, Unfit};
use super::volume_zone::{TOPOLOGY_KEYS, VolumeZones};
use crate::node::Node;
use crate::quantity::Quantity;

/// A PV's `spec.nodeAffinity.required` against a node's labels
/// (`CheckNodeAffinity`). The node is matched on its labels only: upstream
/// builds a node without a name, and a nameless node satisfies every
/// `matchFields` requirement, so those never constrain a volume.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeAffinity(Option<RequiredNodeAffinity>);

impl VolumeAffinity {
    pub fn new(required: Option<&NodeSelector>) -> VolumeAffinity {
        let Some(required) = required else {
            return VolumeAffinity(None);
        };
        let terms = &required.node_selector_terms;
        let fields_only = |t: &NodeSelectorTerm| {
            t.match_expressions
                .as_deref()
                .unwrap_or_default()
                .is_empty()
                && !t.match_fields.as_deref().unwrap_or_default().is_empty()
        };
        // A term of fields only matches every node; the terms are ORed.
        if terms.iter().any(fields_only) {
            return VolumeAffinity(None);
        }
        let labels_only = NodeSelector {
            node_selector_terms: terms
                .iter()
                .map(|t| NodeSelectorTerm {
                    match_expressions: t.match_expressions.clone(),
                    match_fields: None,
                })
                .collect(),
        };
        VolumeAffinity(Some(RequiredNodeAffinity::new(
            &BTreeMap::new(),
            Some(&labels_only),
        )))
    }

    pub fn matches(&self, node: &Node) -> bool {
        self.0.as_ref().is_none_or(|a| a.matches(node))
    }

    fn label_keys(&self) -> Vec<String> {
        self.0.as_ref().map(|a| a.label_keys()).unwrap_or_default()
    }
}

/// Where a class can provision a volume: its `allowedTopologies`
/// (`MatchTopologySelectorTerms`: terms ORed, expressions ANDed as `In`, an
/// empty list admits every node, an empty term none; keys are compared as
/// written, without beta/GA translation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provisioning {
    terms: Vec<Vec<(String, Vec<String>)>>,
}

impl Provisioning {
    pub fn new(allowed: &[TopologySelectorTerm]) -> Provisioning {
        Provisioning {
            terms: allowed
                .iter()
                .map(|t| {
                    (t.match_label_expressions.iter().flatten())
                        .map(|e| (e.key.clone(), e.values.clone()))
                        .collect()
                })
                .collect(),
        }
    }

    /// Provisioning admits every node.
    pub fn anywhere(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn admits(&self, node: &Node) -> bool {
        self.anywhere()
            || self.terms.iter().any(|term| {
                !term.is_empty()
                    && term.iter().all(|(key, values)| {
                        node.metadata
                            .labels
                            .get(key)
                            .is_some_and(|v| values.iter().any(|x| x == v))
                    })
            })
    }

    fn label_keys(&self) -> impl Iterator<Item = &String> {
        self.terms.iter().flatten().map(|(k, _)| k)
    }
}

/// An existing PV an unbound claim could be bound to, already matched to
/// the claim on everything that does not depend on the node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Candidate {
    pub name: String,
    pub affinity: VolumeAffinity,
    /// Checked only for Immediate claims of `persistentVolumeClaim` volumes:
    /// once bound, such a volume goes through VolumeZone too.
    pub zones: VolumeZones,
}

/// A claim not bound yet: where could it be bound?
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnboundClaim {
    /// The claim's request: claims are matched smallest first.
    pub request: Quantity,
    /// `volume.kubernetes.io/selected-node`: only that node.
    pub selected_node: Option<String>,
    /// Matching PVs, smallest first; a PV pre-bound to the claim alone.
    pub candidates: Vec<Candidate>,
    /// `None` when no provisioner can create a volume for the claim.
    pub provisioning: Option<Provisioning>,
    /// Immediate claims of `persistentVolumeClaim` volumes: a candidate must
    /// pass VolumeZone on the node too.
    pub zone_checked: bool,
}

/// The volume constraints of one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeCheck {
    /// The node affinity of each bound claim's PV.
    bound: Vec<VolumeAffinity>,
    /// Claims to bind, in the order the binder matches them.
    unbound: Vec<UnboundClaim>,
    /// VolumeZone: the zones of the PVs of bound `persistentVolumeClaim` volumes.
    zones: Vec<VolumeZones>,
}

impl VolumeCheck {
    pub fn new(
        bound: Vec<VolumeAffinity>,
        mut unbound: Vec<UnboundClaim>,
        zones: Vec<VolumeZones>,
    ) -> VolumeCheck {
        // `findMatchingVolumes` sorts the claims by request, smallest first.
        unbound.sort_by_key(|c| c.request);
        VolumeCheck {
            bound,
            unbound,
            zones: zones.into_iter().filter(|z| !z.is_empty()).collect(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.bound.is_empty() && self.unbound.is_empty() && self.zones.is_empty()
    }

    /// Every node label the check reads.
    pub fn label_keys(&self) -> Vec<String> {
        let mut keys: Vec<String> = self.bound.iter().flat_map(|a| a.label_keys()).collect();
        for claim in &self.unbound {
            for candidate in &claim.candidates {
                keys.extend(candidate.affinity.label_keys());
            }
            keys.extend(
                claim
                    .provisioning
                    .iter()
                    .flat_map(|p| p.label_keys())
                    .cloned(),
            );
        }
        let zoned = !self.zones.is_empty()
            || self
                .unbound
                .iter()
                .any(|c| c.zone_checked && c.candidates.iter().any(|v| !v.zones.is_empty()));
        if zoned {
            keys.extend(TOPOLOGY_KEYS.iter().map(|k| k.to_string()));
        }
        keys.sort();
        keys.dedup();
        keys
    }

    /// VolumeBinding, then VolumeZone if it passed. VolumeBinding reports
    /// each of its reasons once, in upstream's order.
    pub fn check<'n>(&self, node: &Node<'n>) -> Result<(), Unfit<'n>> {
        let mut reasons = Vec::new();
        if self.bound.iter().any(|a| !a.matches(node)) {
            reasons.push(Reason::VolumeNodeConflict);
        }
        if !self.unbound.is_empty() && !self.can_bind(node) {
            reasons.push(Reason::VolumeBindConflict);
        }
        let mut reasons = reasons.into_iter();
        if let Some(first) = reasons.next() {
            return Err(Unfit {
                first,
                more: reasons.collect(),
            });
        }
        if !self.zones.iter().all(|z| z.passes(node)) {
            return Err(Reason::VolumeZoneConflict.into());
        }
        Ok(())
    }

    /// Whether every unbound claim finds a PV (each PV used once) or can be
    /// provisioned for this node.
    fn can_bind(&self, node: &Node) -> bool {
        let mut used: BTreeSet<&str> = BTreeSet::new();
        self.unbound.iter().all(|claim| {
            match claim.selected_node.as_deref() {
                Some(selected) if selected != node.name() => return false,
                // The scheduler chose this node: the claim is provisioned here.
                Some(_) => return claim.provisioning.as_ref().is_some_and(|p| p.admits(node)),
                None => {}
            }
            let found = claim.candidates.iter().find(|v| {
                !used.contains(&v.name.as_str())
                    && v.affinity.matches(node)
                    && (!claim.zone_checked || v.zones.passes(node))
            });
            match found {
                Some(v) => {
                    used.insert(&v.name);
                    true
                }
                None => claim.provisioning.as_ref().is_some_and(|p| p.admits(node)),
            }
        })
    }
}

#[cfg(test)]
mod tests;
