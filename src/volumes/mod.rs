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

pub mod objects;

use std::collections::{BTreeMap, BTreeSet};

use crate::cluster::{Cluster, LookupError, Subject, VolumeKind};
use crate::scheduling::volume_binding::{
    Candidate, Provisioning, UnboundClaim, VolumeAffinity, VolumeCheck,
};
use crate::scheduling::volume_zone::VolumeZones;
use objects::{ANN_SELECTED_NODE, Claim, ClaimRef, StorageClass, Volume};

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

/// Why the volume check gives no [`VolumeCheck`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// No node can ever run the pod, with or without Kata (upstream's words).
    Pod(String),
    /// A read failed or was refused: the `lookupFailure` outcome.
    Lookup { what: String, error: LookupError },
    /// policy-server may not list a kind (`can_i` said no).
    Denied {
        resource: String,
        verbs: Vec<&'static str>,
    },
    /// An answer that does not parse.
    Invalid(String),
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
) -> Result<VolumeCheck, Refusal> {
    let mut reader = Reader {
        cluster,
        subject,
        classes: BTreeMap::new(),
        default_class: None,
        volumes: None,
    };
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
                    Refusal::Pod(format!("persistentvolumeclaim {name:?} not found"))
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
                        return Err(Refusal::Pod(format!(
                            "persistentvolume {pv_name:?} not found"
                        )));
                    }
                    (State::Bound(_), Some(pv)) => pv,
                    (_, pv) => pv
                        .filter(|pv| will_bind(pv, &claim, &name, pod.namespace))
                        .ok_or_else(|| {
                            Refusal::Pod("pod has unbound immediate PersistentVolumeClaims".into())
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
fn claim_state<'c>(claim: &'c Claim, name: &str) -> Result<State<'c>, Refusal> {
    if claim.metadata.deletion_timestamp.is_some() {
        return Err(Refusal::Pod(format!(
            "persistentvolumeclaim {name:?} is being deleted"
        )));
    }
    if claim.phase() == Some("Lost") {
        return Err(Refusal::Pod(format!(
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
) -> Result<(Claim, String), Refusal> {
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
            return Err(Refusal::Pod(format!(
                "PVC {ns}/{name} was not created for pod {ns}/{pod_name} (pod is not owner)"
            )));
        }
    }
    Ok((claim, name))
}

/// Whether a PV's claimRef names the claim `namespace/name`
/// (`IsVolumeBoundToClaim`): namespace and name, and the UID when the
/// claimRef has one. A claimRef with a UID names one incarnation of the
/// claim: a claim deleted and created again, or the claim an ephemeral
/// volume's controller will create (no UID yet), is not it.
fn names_claim(r: &ClaimRef, claim: &Claim, name: &str, namespace: &str) -> bool {
    r.name == name
        && r.namespace == namespace
        && match r.uid.as_deref().filter(|u| !u.is_empty()) {
            None => true,
            Some(uid) => claim.metadata.uid.as_deref() == Some(uid),
        }
}

/// A pre-bound claim binds to its PV if the PV exists and either is free
/// and satisfies the claim, or already names the claim (`syncUnboundClaim`).
fn will_bind(pv: &Volume, claim: &Claim, name: &str, namespace: &str) -> bool {
    match &pv.spec.claim_ref {
        Some(r) => names_claim(r, claim, name, namespace),
        None => {
            pv.metadata.deletion_timestamp.is_none()
                && satisfies(pv, claim)
                && pv.class() == claim.class().unwrap_or_default()
        }
    }
}

/// Size, volume mode, access modes and attributes class
/// (`checkVolumeSatisfyClaim`, without the class).
fn satisfies(pv: &Volume, claim: &Claim) -> bool {
    claim.request().is_ok_and(|r| pv.capacity() >= r)
        && pv.volume_mode() == claim.volume_mode()
        && claim
            .access_modes()
            .iter()
            .all(|m| pv.access_modes().contains(m))
        && pv
            .spec
            .volume_attributes_class_name
            .as_deref()
            .unwrap_or_default()
            == claim
                .spec
                .volume_attributes_class_name
                .as_deref()
                .unwrap_or_default()
}

/// The host lookups of one admission, each answer read once.
struct Reader<'a, C> {
    cluster: &'a C,
    subject: &'a Subject<'a>,
    classes: BTreeMap<String, Option<StorageClass>>,
    /// The default class's name ("" when there is none), once listed.
    default_class: Option<String>,
    /// Every PV, once listed.
    volumes: Option<Vec<Volume>>,
}

impl<C: Cluster> Reader<'_, C> {
    fn get(
        &self,
        kind: VolumeKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Vec<u8>>, Refusal> {
        self.cluster
            .object(kind, namespace, name)
            .map_err(|error| Refusal::Lookup {
                what: match namespace {
                    Some(ns) => format!("cannot read {} {ns}/{name}", kind.kind()),
                    None => format!("cannot read {} {name}", kind.kind()),
                },
                error,
            })
    }

    fn claim(&mut self, namespace: &str, name: &str) -> Result<Option<Claim>, Refusal> {
        let kind = VolumeKind::PersistentVolumeClaim;
        let Some(bytes) = self.get(kind, Some(namespace), name)? else {
            return Ok(None);
        };
        objects::parse(&bytes, kind.kind())
            .map(Some)
            .map_err(Refusal::Invalid)
    }

    fn volume(&mut self, name: &str) -> Result<Option<Volume>, Refusal> {
        let kind = VolumeKind::PersistentVolume;
        let Some(bytes) = self.get(kind, None, name)? else {
            return Ok(None);
        };
        objects::parse(&bytes, kind.kind())
            .map(Some)
            .map_err(Refusal::Invalid)
    }

    fn class(&mut self, name: &str) -> Result<Option<StorageClass>, Refusal> {
        if let Some(known) = self.classes.get(name) {
            return Ok(known.clone());
        }
        let kind = VolumeKind::StorageClass;
        let class = match self.get(kind, None, name)? {
            Some(bytes) => Some(objects::parse(&bytes, kind.kind()).map_err(Refusal::Invalid)?),
            None => None,
        };
        self.classes.insert(name.to_string(), class.clone());
        Ok(class)
    }

    /// Lists every object of `kind`, after asking whether policy-server may.
    fn list(&self, kind: VolumeKind) -> Result<Vec<u8>, Refusal> {
        let resource = kind.resource();
        let mut denied = Vec::new();
        for verb in ["list", "watch"] {
            match self.cluster.may(self.subject, verb, resource) {
                Ok(access) if access.allowed => {}
                Ok(_) => denied.push(verb),
                Err(error) => {
                    return Err(Refusal::Lookup {
                        what: format!(
                            "cannot check whether {} may {verb} {} (kubernetes/can_i)",
                            self.subject.user,
                            resource.qualified()
                        ),
                        error,
                    });
                }
            }
        }
        if !denied.is_empty() {
            return Err(Refusal::Denied {
                resource: resource.qualified(),
                verbs: denied,
            });
        }
        self.cluster.objects(kind).map_err(|error| Refusal::Lookup {
            what: format!("cannot list {}", resource.qualified()),
            error,
        })
    }

    /// The default StorageClass: the newest marked default, then by name
    /// (`GetDefaultClass`); "" when none is.
    fn default_class(&mut self) -> Result<String, Refusal> {
        if let Some(name) = &self.default_class {
            return Ok(name.clone());
        }
        let bytes = self.list(VolumeKind::StorageClass)?;
        let classes: Vec<StorageClass> =
            objects::parse_list(&bytes, "StorageClass").map_err(Refusal::Invalid)?;
        let default = classes
            .iter()
            .filter(|c| c.is_default())
            .max_by(|a, b| {
                let created = |c: &StorageClass| c.metadata.creation_timestamp.clone();
                created(a)
                    .cmp(&created(b))
                    .then_with(|| b.metadata.name.cmp(&a.metadata.name))
            })
            .map(|c| c.metadata.name.clone())
            .unwrap_or_default();
        for class in classes {
            self.classes
                .insert(class.metadata.name.clone(), Some(class));
        }
        self.default_class = Some(default.clone());
        Ok(default)
    }

    fn volumes(&mut self) -> Result<&[Volume], Refusal> {
        if self.volumes.is_none() {
            let bytes = self.list(VolumeKind::PersistentVolume)?;
            let list = objects::parse_list(&bytes, "PersistentVolume").map_err(Refusal::Invalid)?;
            self.volumes = Some(list);
        }
        Ok(self.volumes.as_deref().unwrap_or_default())
    }

    /// Where an unbound claim could be bound: its matching Available PVs and
    /// its class's provisioning.
    fn unbound(
        &mut self,
        claim: &Claim,
        name: &str,
        namespace: &str,
        persistent: bool,
        taken: &BTreeSet<String>,
    ) -> Result<UnboundClaim, Refusal> {
        let class_name = match claim.class() {
            Some(class) => class.to_string(),
            None => self.default_class()?,
        };
        let class = if class_name.is_empty() {
            None
        } else {
            self.class(&class_name)?
        };
        // A missing class or `""` binds Immediately, to a PV or not at all.
        let delayed = class
            .as_ref()
            .is_some_and(StorageClass::waits_for_first_consumer);
        let provisioning = class
            .as_ref()
            .filter(|c| c.provisions())
            .map(|c| Provisioning::new(c.allowed_topologies.as_deref().unwrap_or_default()));
        let request = claim.request().map_err(|e| {
            Refusal::Invalid(format!("PersistentVolumeClaim {namespace}/{name}: {e}"))
        })?;
        let selected_node = claim
            .metadata
            .annotation(ANN_SELECTED_NODE)
            .filter(|_| delayed)
            .map(str::to_string);
        let needs_volumes =
            selected_node.is_none() && !provisioning.as_ref().is_some_and(Provisioning::anywhere);
        let candidates = if needs_volumes {
            let volumes = self.volumes()?;
            candidates(volumes, claim, name, namespace, &class_name)
                .into_iter()
                .filter(|c| !taken.contains(&c.name))
                .collect()
        } else {
            Vec::new()
        };
        Ok(UnboundClaim {
            request,
            selected_node,
            candidates,
            provisioning,
            // Once an Immediate claim is bound, VolumeZone reads its PV.
            zone_checked: persistent && !delayed,
        })
    }
}

/// The PVs `FindMatchingVolume` could pick for the claim on some node,
/// smallest first; a PV pre-bound to the claim is the only one.
fn candidates(
    volumes: &[Volume],
    claim: &Claim,
    name: &str,
    namespace: &str,
    class: &str,
) -> Vec<Candidate> {
    let candidate = |pv: &Volume| Candidate {
        name: pv.metadata.name.clone(),
        affinity: VolumeAffinity::new(pv.required_affinity()),
        zones: VolumeZones::from_labels(|k| pv.metadata.label(k)),
    };
    let usable = |pv: &&Volume| pv.metadata.deletion_timestamp.is_none() && satisfies(pv, claim);
    let pre_bound = volumes.iter().filter(usable).find(|pv| {
        pv.spec
            .claim_ref
            .as_ref()
            .is_some_and(|r| names_claim(r, claim, name, namespace))
    });
    if let Some(pv) = pre_bound {
        return vec![candidate(pv)];
    }
    let selector = claim.spec.selector.as_ref();
    let mut matching: Vec<&Volume> = volumes
        .iter()
        .filter(usable)
        .filter(|pv| {
            pv.spec.claim_ref.is_none()
                && pv.phase() == Some("Available")
                && pv.class() == class
                && selector.is_none_or(|s| selector_matches(s, |k| pv.metadata.label(k)))
        })
        .collect();
    matching.sort_by_key(|pv| pv.capacity());
    matching.into_iter().map(candidate).collect()
}

/// A claim's `spec.selector` against a PV's labels (`LabelSelectorAsSelector`:
/// matchLabels and matchExpressions ANDed; an unknown operator matches none).
fn selector_matches<'a>(
    selector: &k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    label: impl Fn(&str) -> Option<&'a str>,
) -> bool {
    let labels_ok = selector
        .match_labels
        .iter()
        .flatten()
        .all(|(k, v)| label(k) == Some(v.as_str()));
    let exprs_ok = selector.match_expressions.iter().flatten().all(|e| {
        let values = e.values.as_deref().unwrap_or_default();
        let value = label(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| values.iter().any(|x| x == v)),
            "NotIn" => !value.is_some_and(|v| values.iter().any(|x| x == v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_ok && exprs_ok
}

#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
