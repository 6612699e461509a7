//! The fields of PersistentVolumeClaims, PersistentVolumes and
//! StorageClasses that the volume filters read, from the host's answers.
//! Minimal serde structs: a few objects per pod, unknown fields skipped.

use std::collections::BTreeMap;

use std::fmt;

use k8s_openapi::api::core::v1::{NodeSelector, TopologySelectorTerm};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::json::Str;
use crate::quantity::Quantity;

/// Set by the PV controller once it has bound a claim to its volume.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The node the scheduler chose for a WaitForFirstConsumer claim.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The class, before `storageClassName` existed; wins over it.
pub const ANN_BETA_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// Marks the default StorageClass (and its beta form).
pub const ANN_DEFAULT_CLASS: &str = "storageclass.kubernetes.io/is-default-class";
pub const ANN_BETA_DEFAULT_CLASS: &str = "storageclass.beta.kubernetes.io/is-default-class";
/// Provisioner of classes for pre-created (local) volumes only.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The annotations the volume check reads; the others (often large, such
/// as `kubectl.kubernetes.io/last-applied-configuration`) are skipped unread.
const KNOWN_ANNOTATIONS: [&str; 5] = [
    ANN_BIND_COMPLETED,
    ANN_SELECTED_NODE,
    ANN_BETA_CLASS,
    ANN_DEFAULT_CLASS,
    ANN_BETA_DEFAULT_CLASS,
];

fn known_annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct Known;
    impl<'de> Visitor<'de> for Known {
        type Value = Option<BTreeMap<String, String>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of annotations")
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut known = BTreeMap::new();
            while let Some(key) = map.next_key::<Str<'de>>()? {
                if KNOWN_ANNOTATIONS.contains(&key.as_str()) {
                    known.insert(key.as_str().to_string(), map.next_value::<String>()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Some(known))
        }
    }
    d.deserialize_option(Known)
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
    #[serde(default)]
    pub uid: Option<String>,
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "known_annotations")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub deletion_timestamp: Option<String>,
    #[serde(default)]
    pub creation_timestamp: Option<String>,
    #[serde(default)]
    pub owner_references: Option<Vec<OwnerReference>>,
}

impl Meta {
    pub fn annotation(&self, key: &str) -> Option<&str> {
        self.annotations.as_ref()?.get(key).map(String::as_str)
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels.as_ref()?.get(key).map(String::as_str)
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub controller: Option<bool>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSpec {
    #[serde(default)]
    pub storage_class_name: Option<String>,
    #[serde(default)]
    pub volume_name: Option<String>,
    #[serde(default)]
    pub access_modes: Option<Vec<String>>,
    #[serde(default)]
    pub volume_mode: Option<String>,
    #[serde(default)]
    pub resources: Option<ClaimResources>,
    #[serde(default)]
    pub selector: Option<LabelSelector>,
    #[serde(default)]
    pub volume_attributes_class_name: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct ClaimResources {
    #[serde(default)]
    pub requests: Option<BTreeMap<String, serde_json::Value>>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Status {
    #[serde(default)]
    pub phase: Option<String>,
}

/// A `v1` PersistentVolumeClaim, or the claim an ephemeral volume's
/// `volumeClaimTemplate` describes.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Claim {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: ClaimSpec,
    #[serde(default)]
    pub status: Option<Status>,
}

impl Claim {
    /// The class, as `GetPersistentVolumeClaimClass` reads it: the beta
    /// annotation, else `spec.storageClassName`; `None` when neither is set
    /// (the default class applies), `Some("")` for "no class".
    pub fn class(&self) -> Option<&str> {
        self.metadata
            .annotation(ANN_BETA_CLASS)
            .or(self.spec.storage_class_name.as_deref())
    }

    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// `spec.volumeName`, when set.
    pub fn volume_name(&self) -> Option<&str> {
        self.spec.volume_name.as_deref().filter(|v| !v.is_empty())
    }

    /// Bound: a volume name and the PV controller's bind-completed mark.
    pub fn is_bound(&self) -> bool {
        self.volume_name().is_some() && self.metadata.annotation(ANN_BIND_COMPLETED).is_some()
    }

    /// `resources.requests.storage` (zero when absent).
    pub fn request(&self) -> Result<Quantity, String> {
        let requests = self
            .spec
            .resources
            .as_ref()
            .and_then(|r| r.requests.as_ref());
        match requests.and_then(|r| r.get("storage")) {
            None | Some(serde_json::Value::Null) => Ok(Quantity::ZERO),
            Some(serde_json::Value::String(text)) => Quantity::parse(text).map_err(|e| {
                format!("resources.requests.storage {text:?} is not a quantity ({e})")
            }),
            Some(other) => Err(format!(
                "resources.requests.storage {other} is not a quantity"
            )),
        }
    }

    pub fn access_modes(&self) -> &[String] {
        self.spec.access_modes.as_deref().unwrap_or_default()
    }

    /// `volumeMode`, defaulted to `Filesystem` as the API server does.
    pub fn volume_mode(&self) -> &str {
        self.spec.volume_mode.as_deref().unwrap_or("Filesystem")
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ClaimRef {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub namespace: String,
    #[serde(default)]
    pub uid: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct VolumeNodeAffinity {
    #[serde(default)]
    pub required: Option<NodeSelector>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VolumeSpec {
    #[serde(default)]
    pub capacity: Option<BTreeMap<String, serde_json::Value>>,
    #[serde(default)]
    pub access_modes: Option<Vec<String>>,
    #[serde(default)]
    pub volume_mode: Option<String>,
    #[serde(default)]
    pub node_affinity: Option<VolumeNodeAffinity>,
    #[serde(default)]
    pub claim_ref: Option<ClaimRef>,
    #[serde(default)]
    pub storage_class_name: Option<String>,
    #[serde(default)]
    pub volume_attributes_class_name: Option<String>,
}

/// A `v1` PersistentVolume.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
pub struct Volume {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub spec: VolumeSpec,
    #[serde(default)]
    pub status: Option<Status>,
}

impl Volume {
    /// The class, read like a claim's (beta annotation first); "" for none.
    pub fn class(&self) -> &str {
        self.metadata
            .annotation(ANN_BETA_CLASS)
            .or(self.spec.storage_class_name.as_deref())
            .unwrap_or_default()
    }

    pub fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    /// `capacity.storage`; an absent or unreadable capacity holds nothing.
    pub fn capacity(&self) -> Quantity {
        let capacity = self.spec.capacity.as_ref().and_then(|c| c.get("storage"));
        match capacity {
            Some(serde_json::Value::String(text)) => {
                Quantity::parse(text).unwrap_or(Quantity::ZERO)
            }
            _ => Quantity::ZERO,
        }
    }

    pub fn access_modes(&self) -> &[String] {
        self.spec.access_modes.as_deref().unwrap_or_default()
    }

    pub fn volume_mode(&self) -> &str {
        self.spec.volume_mode.as_deref().unwrap_or("Filesystem")
    }

    pub fn required_affinity(&self) -> Option<&NodeSelector> {
        self.spec.node_affinity.as_ref()?.required.as_ref()
    }
}

/// A `storage.k8s.io/v1` StorageClass.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorageClass {
    #[serde(default)]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: Meta,
    #[serde(default)]
    pub provisioner: String,
    #[serde(default)]
    pub volume_binding_mode: Option<String>,
    #[serde(default)]
    pub allowed_topologies: Option<Vec<TopologySelectorTerm>>,
}

impl StorageClass {
    /// `IsDelayBindingMode`; an unset mode is the API default, Immediate.
    pub fn waits_for_first_consumer(&self) -> bool {
        self.volume_binding_mode.as_deref() == Some("WaitForFirstConsumer")
    }

    /// Whether a provisioner can create volumes of this class.
    pub fn provisions(&self) -> bool {
        !self.provisioner.is_empty() && self.provisioner != NO_PROVISIONER
    }

    pub fn is_default(&self) -> bool {
        [ANN_DEFAULT_CLASS, ANN_BETA_DEFAULT_CLASS]
            .iter()
            .any(|a| self.metadata.annotation(a) == Some("true"))
    }
}

#[derive(Debug, Deserialize)]
struct List<T> {
    #[serde(default)]
    kind: Option<String>,
    #[serde(default = "Option::default")]
    items: Option<Vec<T>>,
}

/// An object answer that names its kind.
pub trait Object {
    fn kind(&self) -> Option<&str>;
}

macro_rules! object {
    ($($t:ty),*) => {$(
        impl Object for $t {
            fn kind(&self) -> Option<&str> {
                self.kind.as_deref()
            }
        }
    )*};
}
object!(Claim, Volume, StorageClass);

/// Parses one object answer, checking `kind` when the answer names one.
pub fn parse<'de, T: Deserialize<'de> + Object>(bytes: &'de [u8], kind: &str) -> Result<T, String> {
    let invalid = |why: String| format!("the {kind} from the cluster is not valid: {why}");
    if !crate::json::starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let object: T = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    match object.kind() {
        Some(other) if other != kind => Err(invalid(format!("kind is {other:?}"))),
        _ => Ok(object),
    }
}

/// Parses a list answer (`<kind>List`).
pub fn parse_list<'de, T: Deserialize<'de>>(
    bytes: &'de [u8],
    kind: &str,
) -> Result<Vec<T>, String> {
    let invalid = |why: String| format!("the {kind}List from the cluster is not valid: {why}");
    if !crate::json::starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let list: List<T> = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if let Some(other) = list.kind.filter(|k| *k != format!("{kind}List")) {
        return Err(invalid(format!("kind is {other:?}")));
    }
    Ok(list.items.unwrap_or_default())
}
