//! The pod's PersistentVolumeClaims, read from the cluster once per pod and
//! compiled into a [`VolumeCheck`] for the node filters: which PV each
//! bound claim uses, and where each unbound claim could be bound or
//! provisioned (`../shared/VOLUMES.md` states the rules and their sources).
//!
//! Host calls, in this order for each claim, each object read once: the
//! claim (`get_resource`), its PV, its StorageClass; the StorageClass list
//! only for a claim without a class (the default class), the PV list only
//! for an unbound claim whose class cannot provision on every node. Lists
//! are asked about with `can_i` first: a list policy-server may not make
//! never answers.
//!
//! The walk over the pod's claims is here; `reader` makes the host calls,
//! `matching` says which PVs a claim can bind to, and `unresolved` says
//! why the check could not be compiled.

mod matching;
pub mod objects;
mod reader;
mod unresolved;

use std::collections::BTreeSet;

use crate::cluster::{Cluster, Subject};
use crate::scheduling::volume_binding::{VolumeAffinity, VolumeCheck};
use crate::scheduling::volume_zone::VolumeZones;
use matching::will_bind;
use objects::Claim;
use reader::Reader;

pub use unresolved::Unresolved;

/// A pod volume backed by a PersistentVolumeClaim.
#[derive(Debug, Clone, PartialEq)]
pub struct PodVolume {
    pub name: String,
    pub source: ClaimSource,
}

#[derive(Debug, Clone, PartialEq)]
pub enum ClaimSource {
    /// `persistentVolumeClaim.claimName`, in the pod's namespace.
    Claim(String),
    /// A generic ephemeral volume: the claim its controller will create.
    Ephemeral(Box<Claim>),
}

/// What the lookups need to know about the pod.
pub struct PodRef<'a> {
    pub name: Option<&'a str>,
    pub namespace: &'a str,
    pub claims: &'a [PodVolume],
}

/// Reads the pod's claims and compiles the per-node check.
pub fn resolve(
    pod: &PodRef,
    subject: &Subject,
    cluster: &impl Cluster,
) -> Result<VolumeCheck, Unresolved> {
    let mut reader = Reader::new(cluster, subject);
    let mut bound = Vec::new();
    let mut zones = Vec::new();
    // Unbound claims are matched after the others: a free PV that a
    // pre-bound claim will take is no candidate for them.
    let mut pending = Vec::new();
    // PVs bound or pre-bound to the pod's claims, by name.
    let mut taken = BTreeSet::new();
    for volume in pod.claims {
        let (claim, name, zone_checked) = match &volume.source {
            ClaimSource::Claim(name) => {
                let claim = reader.claim(pod.namespace, name)?.ok_or_else(|| {
                    Unresolved::Pod(format!("persistentvolumeclaim {name:?} not found"))
                })?;
                (claim, name.clone(), true)
            }
            ClaimSource::Ephemeral(template) => {
                let (claim, name) = ephemeral_claim(pod, &volume.name, template, &mut reader)?;
                (claim, name, false)
            }
        };
        let state = claim_state(&claim, &name)?;
        match state {
            State::Bound(pv_name) | State::PreBound(pv_name) => {
                let pv = reader.volume(pv_name)?;
                let pv = match (state, pv) {
                    (State::Bound(_), None) => {
                        return Err(Unresolved::Pod(format!(
                            "persistentvolume {pv_name:?} not found"
                        )));
                    }
                    (State::Bound(_), Some(pv)) => pv,
                    (_, pv) => pv
                        .filter(|pv| will_bind(pv, &claim, &name, pod.namespace))
                        .ok_or_else(|| {
                            Unresolved::Pod(
                                "pod has unbound immediate PersistentVolumeClaims".into(),
                            )
                        })?,
                };
                bound.push(VolumeAffinity::new(pv.required_affinity()));
                taken.insert(pv.metadata.name.clone());
                if zone_checked {
                    zones.push(VolumeZones::from_labels(|k| pv.metadata.label(k)));
                }
            }
            State::Unbound => pending.push((claim, name, zone_checked)),
        }
    }
    let mut unbound = Vec::new();
    for (claim, name, zone_checked) in pending {
        unbound.push(reader.unbound(&claim, &name, pod.namespace, zone_checked, &taken)?);
    }
    Ok(VolumeCheck::new(bound, unbound, zones))
}

enum State<'c> {
    /// `volumeName` set and binding completed.
    Bound(&'c str),
    /// `volumeName` set by the user, binding not completed.
    PreBound(&'c str),
    Unbound,
}

/// The claim's state, or the pod-level failures upstream's PreFilter reports.
fn claim_state<'c>(claim: &'c Claim, name: &str) -> Result<State<'c>, Unresolved> {
    if claim.metadata.deletion_timestamp.is_some() {
        return Err(Unresolved::Pod(format!(
            "persistentvolumeclaim {name:?} is being deleted"
        )));
    }
    if claim.phase() == Some("Lost") {
        return Err(Unresolved::Pod(format!(
            "persistentvolumeclaim {name:?} bound to non-existent persistentvolume {:?}",
            claim.volume_name().unwrap_or_default()
        )));
    }
    Ok(match claim.volume_name() {
        Some(pv) if claim.is_bound() => State::Bound(pv),
        Some(pv) => State::PreBound(pv),
        None => State::Unbound,
    })
}

/// The claim an ephemeral volume uses: the existing one, if the pod has a
/// name and a claim `<pod>-<volume>` exists that a Pod of that name owns
/// (an earlier pod of a StatefulSet-like controller: it goes with that pod),
/// else the one the controller will create from the template.
fn ephemeral_claim<C: Cluster>(
    pod: &PodRef,
    volume: &str,
    template: &Claim,
    reader: &mut Reader<C>,
) -> Result<(Claim, String), Unresolved> {
    let mut claim = template.clone();
    claim.metadata.namespace = Some(pod.namespace.to_string());
    // The claim the controller will create has no UID yet: no PV's claimRef
    // with a UID names it (`names_claim`).
    claim.metadata.uid = None;
    let Some(pod_name) = pod.name else {
        // `generateName`: the claim name is not known yet, nor can it be taken.
        return Ok((claim, format!("<pod>-{volume}")));
    };
    let name = format!("{pod_name}-{volume}");
    claim.metadata.name = name.clone();
    if let Some(existing) = reader.claim(pod.namespace, &name)? {
        // Upstream matches the owner's UID with the pod's. At admission the
        // pod has no UID yet, so a claim controlled by a Pod of this name is
        // a leftover of an earlier pod of that name, being garbage-collected:
        // the controller will create the claim again, so the template is
        // judged. (Its PV names the old claim's UID and never binds to the
        // new one.)
        let owned_by_pod = existing
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.controller == Some(true) && o.kind == "Pod" && o.name == pod_name);
        if !owned_by_pod {
            let ns = pod.namespace;
            return Err(Unresolved::Pod(format!(
                "PVC {ns}/{name} was not created for pod {ns}/{pod_name} (pod is not owner)"
            )));
        }
    }
    Ok((claim, name))
}

#[cfg(test)]
mod tests;
