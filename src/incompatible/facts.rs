//! The pod's facts the rules read, filled by the pod reader (`pod.rs`).

/// The pod's facts the check reads, taken from the raw object by `pod.rs`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeFacts {
    /// hostNetwork, hostPID, hostIPC: those set to true, in that order.
    pub host_namespaces: Vec<&'static str>,
    pub host_users: Option<bool>,
    pub os_name: Option<String>,
    /// `spec.securityContext`.
    pub security: Security,
    /// `containers`, then `initContainers` (restartable sidecars included).
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
    /// `container.apparmor.security.beta.kubernetes.io/<container>` annotations.
    pub app_armor_annotations: Vec<(String, String)>,
    /// `spec.resourceClaims` (Dynamic Resource Allocation), in spec order.
    pub resource_claims: Vec<ResourceClaim>,
}

/// One entry of `spec.resourceClaims`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceClaim {
    /// The name containers use in `resources.claims`.
    pub name: String,
    /// `("ResourceClaimTemplate", name)` or `("ResourceClaim", name)`; `None`
    /// when neither is set (the API server refuses that pod).
    pub source: Option<(&'static str, String)>,
}

/// The security settings the check reads, at pod or container level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Security {
    pub privileged: bool,
    /// `seccompProfile.type`.
    pub seccomp: Option<String>,
    /// `appArmorProfile.type`.
    pub app_armor: Option<String>,
    /// `seLinuxOptions` sets at least one field.
    pub se_linux: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    pub init: bool,
    pub security: Security,
    pub mounts: Vec<Mount>,
    /// Resources requested or limited with a non-zero quantity.
    pub resources: Vec<String>,
    /// The pod's resource claims it uses (`resources.claims[].name`).
    pub claims: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mount {
    pub volume: String,
    pub propagation: Option<String>,
    /// `subPath` or `subPathExpr`, whichever is set (non-empty).
    pub sub_path: Option<&'static str>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Volume {
    pub name: String,
    pub host_path: Option<HostPath>,
    /// The `sizeLimit` of an `emptyDir` with `medium: Memory`.
    pub memory_size_limit: Option<String>,
    /// An image volume (`image`, KEP-4639): its `reference`, "" when unset.
    pub image: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPath {
    /// Cleaned with [`clean`].
    pub path: String,
    /// `type` ("" when unset).
    pub kind: String,
}
