//! The Pod as serde reads it: only the fields the facts come from. An absent
//! field reads as its default, and unknown fields are skipped.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, Toleration};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::volumes::objects::Claim;

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodObject {
    #[serde(default)]
    pub(super) metadata: Option<PodMeta>,
    #[serde(default)]
    pub(super) spec: Option<PodSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodMeta {
    #[serde(default)]
    pub(super) name: Option<String>,
    #[serde(default)]
    pub(super) generate_name: Option<String>,
    #[serde(default)]
    pub(super) namespace: Option<String>,
    #[serde(default)]
    pub(super) annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(super) labels: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct PodSpec {
    #[serde(default)]
    pub(super) node_name: Option<String>,
    #[serde(default)]
    pub(super) node_selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub(super) affinity: Option<Affinity>,
    #[serde(default)]
    pub(super) tolerations: Option<Vec<Toleration>>,
    #[serde(default)]
    pub(super) host_network: Option<bool>,
    #[serde(rename = "hostPID", default)]
    pub(super) host_pid: Option<bool>,
    #[serde(rename = "hostIPC", default)]
    pub(super) host_ipc: Option<bool>,
    #[serde(default)]
    pub(super) runtime_class_name: Option<String>,
    #[serde(default)]
    pub(super) overhead: Option<BTreeMap<String, Box<RawValue>>>,
    #[serde(default)]
    pub(super) containers: Option<Vec<RawContainer>>,
    #[serde(default)]
    pub(super) init_containers: Option<Vec<RawContainer>>,
    #[serde(default)]
    pub(super) resources: Option<RawRequirements>,
    #[serde(default)]
    pub(super) topology_spread_constraints: Option<Vec<RawSpreadConstraint>>,
    #[serde(default)]
    pub(super) volumes: Option<Vec<RawVolume>>,
    #[serde(default)]
    pub(super) host_users: Option<bool>,
    #[serde(default)]
    pub(super) resource_claims: Option<Vec<RawResourceClaim>>,
    #[serde(default)]
    pub(super) os: Option<RawOs>,
    #[serde(default)]
    pub(super) security_context: Option<RawPodSecurity>,
    #[serde(default)]
    pub(super) scheduling_gates: Option<Vec<RawGate>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawGate {
    #[serde(default)]
    pub(super) name: String,
}

/// The pod's `securityContext`: the fields it shares with a container's
/// (it has no `privileged`), and `supplementalGroupsPolicy`, which only the
/// pod has (so a container's is never read).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawPodSecurity {
    #[serde(default)]
    pub(super) seccomp_profile: Option<RawProfile>,
    #[serde(default)]
    pub(super) app_armor_profile: Option<RawProfile>,
    #[serde(rename = "seLinuxOptions", default)]
    pub(super) se_linux_options: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    pub(super) supplemental_groups_policy: Option<String>,
}

impl RawPodSecurity {
    /// The fields shared with a container's context.
    pub(super) fn common(&self) -> RawSecurity {
        RawSecurity {
            privileged: None,
            seccomp_profile: self.seccomp_profile.clone(),
            app_armor_profile: self.app_armor_profile.clone(),
            se_linux_options: self.se_linux_options.clone(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawOs {
    #[serde(default)]
    pub(super) name: Option<String>,
}

/// The fields of a pod's or a container's `securityContext` that the
/// runtime-compatibility check reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawSecurity {
    #[serde(default)]
    pub(super) privileged: Option<bool>,
    #[serde(default)]
    pub(super) seccomp_profile: Option<RawProfile>,
    #[serde(default)]
    pub(super) app_armor_profile: Option<RawProfile>,
    #[serde(rename = "seLinuxOptions", default)]
    pub(super) se_linux_options: Option<BTreeMap<String, Option<String>>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub(super) struct RawProfile {
    #[serde(rename = "type", default)]
    pub(super) kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawMount {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) mount_propagation: Option<String>,
    #[serde(default)]
    pub(super) sub_path: Option<String>,
    #[serde(default)]
    pub(super) sub_path_expr: Option<String>,
    #[serde(default)]
    pub(super) recursive_read_only: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawHostPath {
    #[serde(default)]
    pub(super) path: Option<String>,
    #[serde(rename = "type", default)]
    pub(super) kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEmptyDir {
    #[serde(default)]
    pub(super) medium: Option<String>,
    /// A quantity, kept as JSON text: only shown, never computed with.
    #[serde(default)]
    pub(super) size_limit: Option<Box<RawValue>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawVolume {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) persistent_volume_claim: Option<RawClaimSource>,
    #[serde(default)]
    pub(super) ephemeral: Option<RawEphemeral>,
    #[serde(default)]
    pub(super) host_path: Option<RawHostPath>,
    #[serde(default)]
    pub(super) empty_dir: Option<RawEmptyDir>,
    #[serde(default)]
    pub(super) image: Option<RawImageSource>,
}

/// An image volume (KEP-4639).
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawImageSource {
    #[serde(default)]
    pub(super) reference: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawClaimSource {
    #[serde(default)]
    pub(super) claim_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawEphemeral {
    #[serde(default)]
    pub(super) volume_claim_template: Option<Claim>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawContainer {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) resources: Option<RawRequirements>,
    #[serde(default)]
    pub(super) restart_policy: Option<String>,
    #[serde(default)]
    pub(super) security_context: Option<RawSecurity>,
    #[serde(default)]
    pub(super) volume_mounts: Option<Vec<RawMount>>,
}

/// Quantities stay raw JSON text until parsed exactly (never via f64).
#[derive(Debug, Default, Deserialize)]
pub(super) struct RawRequirements {
    #[serde(default)]
    pub(super) requests: Option<BTreeMap<String, Box<RawValue>>>,
    #[serde(default)]
    pub(super) limits: Option<BTreeMap<String, Box<RawValue>>>,
    /// `resources.claims`: the pod's resource claims a container uses.
    #[serde(default)]
    pub(super) claims: Option<Vec<RawClaimUse>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct RawClaimUse {
    #[serde(default)]
    pub(super) name: String,
}

/// An entry of `spec.resourceClaims` (DRA).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawResourceClaim {
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) resource_claim_name: Option<String>,
    #[serde(default)]
    pub(super) resource_claim_template_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(super) struct RawSpreadConstraint {
    #[serde(default)]
    pub(super) topology_key: String,
    #[serde(default)]
    pub(super) when_unsatisfiable: String,
}
