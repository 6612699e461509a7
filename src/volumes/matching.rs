//! Which PersistentVolumes a claim can bind to: the claimRef, the claim's
//! requirements and its label selector, as the PV controller and the
//! scheduler's `FindMatchingVolume` judge them.

use super::objects::{Claim, ClaimRef, Volume};
use crate::scheduling::volume_binding::{Candidate, VolumeAffinity};
use crate::scheduling::volume_zone::VolumeZones;

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
pub(super) fn will_bind(pv: &Volume, claim: &Claim, name: &str, namespace: &str) -> bool {
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

/// The PVs `FindMatchingVolume` could pick for the claim on some node,
/// smallest first; a PV pre-bound to the claim is the only one.
pub(super) fn candidates(
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
