//! The host lookups of one admission: each object read once and each list
//! asked about with `can_i` first, the answers parsed into the volume
//! objects, and where an unbound claim could be bound.

use std::collections::{BTreeMap, BTreeSet};

use super::matching::candidates;
use super::objects::{self, ANN_SELECTED_NODE, Claim, StorageClass, Volume};
use super::unresolved::Unresolved;
use crate::cluster::{Cluster, Subject, VolumeKind};
use crate::scheduling::volume_binding::{Provisioning, UnboundClaim};

/// The host lookups of one admission, each answer read once.
pub(super) struct Reader<'a, C> {
    cluster: &'a C,
    subject: &'a Subject<'a>,
    classes: BTreeMap<String, Option<StorageClass>>,
    /// The default class's name ("" when there is none), once listed.
    default_class: Option<String>,
    /// Every PV, once listed.
    volumes: Option<Vec<Volume>>,
}

impl<'a, C: Cluster> Reader<'a, C> {
    pub(super) fn new(cluster: &'a C, subject: &'a Subject<'a>) -> Self {
        Reader {
            cluster,
            subject,
            classes: BTreeMap::new(),
            default_class: None,
            volumes: None,
        }
    }

    fn get(
        &self,
        kind: VolumeKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Vec<u8>>, Unresolved> {
        self.cluster
            .object(kind, namespace, name)
            .map_err(|error| Unresolved::Lookup {
                what: match namespace {
                    Some(ns) => format!("cannot read {} {ns}/{name}", kind.kind()),
                    None => format!("cannot read {} {name}", kind.kind()),
                },
                error,
            })
    }

    pub(super) fn claim(
        &mut self,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Claim>, Unresolved> {
        let kind = VolumeKind::PersistentVolumeClaim;
        let Some(bytes) = self.get(kind, Some(namespace), name)? else {
            return Ok(None);
        };
        objects::parse(&bytes, kind.kind())
            .map(Some)
            .map_err(Unresolved::Invalid)
    }

    pub(super) fn volume(&mut self, name: &str) -> Result<Option<Volume>, Unresolved> {
        let kind = VolumeKind::PersistentVolume;
        let Some(bytes) = self.get(kind, None, name)? else {
            return Ok(None);
        };
        objects::parse(&bytes, kind.kind())
            .map(Some)
            .map_err(Unresolved::Invalid)
    }

    fn class(&mut self, name: &str) -> Result<Option<StorageClass>, Unresolved> {
        if let Some(known) = self.classes.get(name) {
            return Ok(known.clone());
        }
        let kind = VolumeKind::StorageClass;
        let class = match self.get(kind, None, name)? {
            Some(bytes) => Some(objects::parse(&bytes, kind.kind()).map_err(Unresolved::Invalid)?),
            None => None,
        };
        self.classes.insert(name.to_string(), class.clone());
        Ok(class)
    }

    /// Lists every object of `kind`, after asking whether policy-server may.
    fn list(&self, kind: VolumeKind) -> Result<Vec<u8>, Unresolved> {
        let resource = kind.resource();
        let mut denied = Vec::new();
        for verb in ["list", "watch"] {
            match self.cluster.may(self.subject, verb, resource) {
                Ok(access) if access.allowed => {}
                Ok(_) => denied.push(verb),
                Err(error) => {
                    return Err(Unresolved::Lookup {
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
            return Err(Unresolved::Denied {
                resource: resource.qualified(),
                verbs: denied,
            });
        }
        self.cluster
            .objects(kind)
            .map_err(|error| Unresolved::Lookup {
                what: format!("cannot list {}", resource.qualified()),
                error,
            })
    }

    /// The default StorageClass: the newest marked default, then by name
    /// (`GetDefaultClass`); "" when none is.
    fn default_class(&mut self) -> Result<String, Unresolved> {
        if let Some(name) = &self.default_class {
            return Ok(name.clone());
        }
        let bytes = self.list(VolumeKind::StorageClass)?;
        let classes: Vec<StorageClass> =
            objects::parse_list(&bytes, "StorageClass").map_err(Unresolved::Invalid)?;
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

    fn volumes(&mut self) -> Result<&[Volume], Unresolved> {
        if self.volumes.is_none() {
            let bytes = self.list(VolumeKind::PersistentVolume)?;
            let list =
                objects::parse_list(&bytes, "PersistentVolume").map_err(Unresolved::Invalid)?;
            self.volumes = Some(list);
        }
        Ok(self.volumes.as_deref().unwrap_or_default())
    }

    /// Where an unbound claim could be bound: its matching Available PVs and
    /// its class's provisioning.
    pub(super) fn unbound(
        &mut self,
        claim: &Claim,
        name: &str,
        namespace: &str,
        persistent: bool,
        taken: &BTreeSet<String>,
    ) -> Result<UnboundClaim, Unresolved> {
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
            Unresolved::Invalid(format!("PersistentVolumeClaim {namespace}/{name}: {e}"))
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
