//! The facts about a Pod that the decision reads, taken from the raw object.
//!
//! Only these fields are deserialized; the object itself is never rebuilt from
//! them (see `mutation.rs`), so fields this crate does not know are safe.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, NodeSelector, Toleration};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::incompatible::{self, RuntimeFacts};
use crate::quantity::Quantity;
use crate::resources::{ContainerResources, PodResources, ResourceList};
use crate::volumes::objects::Claim;
use crate::volumes::{ClaimSource, PodVolume};

/// Annotation the kubelet puts on the API mirror of a static pod.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The AppArmor annotation of one container (before the field, still read).
pub const APP_ARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodObject {
    #[serde(default)]
    metadata: Option<PodMeta>,
    #[serde(default)]
    spec: Option<PodSpec>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodMeta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    generate_name: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    annotations: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PodSpec {
    #[serde(default)]
    node_name: Option<String>,
    #[serde(default)]
    node_selector: Option<BTreeMap<String, String>>,
    #[serde(default)]
    affinity: Option<Affinity>,
    #[serde(default)]
    tolerations: Option<Vec<Toleration>>,
    #[serde(default)]
    host_network: Option<bool>,
    #[serde(rename = "hostPID", default)]
    host_pid: Option<bool>,
    #[serde(rename = "hostIPC", default)]
    host_ipc: Option<bool>,
    #[serde(default)]
    runtime_class_name: Option<String>,
    #[serde(default)]
    overhead: Option<BTreeMap<String, Box<RawValue>>>,
    #[serde(default)]
    containers: Option<Vec<RawContainer>>,
    #[serde(default)]
    init_containers: Option<Vec<RawContainer>>,
    #[serde(default)]
    resources: Option<RawRequirements>,
    #[serde(default)]
    topology_spread_constraints: Option<Vec<RawSpreadConstraint>>,
    #[serde(default)]
    volumes: Option<Vec<RawVolume>>,
    #[serde(default)]
    host_users: Option<bool>,
    #[serde(default)]
    resource_claims: Option<Vec<RawResourceClaim>>,
    #[serde(default)]
    os: Option<RawOs>,
    #[serde(default)]
    security_context: Option<RawPodSecurity>,
    #[serde(default)]
    scheduling_gates: Option<Vec<RawGate>>,
}

#[derive(Debug, Default, Deserialize)]
struct RawGate {
    #[serde(default)]
    name: String,
}

/// The pod's `securityContext`: the fields it shares with a container's
/// (it has no `privileged`), and `supplementalGroupsPolicy`, which only the
/// pod has (so a container's is never read).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPodSecurity {
    #[serde(default)]
    seccomp_profile: Option<RawProfile>,
    #[serde(default)]
    app_armor_profile: Option<RawProfile>,
    #[serde(rename = "seLinuxOptions", default)]
    se_linux_options: Option<BTreeMap<String, Option<String>>>,
    #[serde(default)]
    supplemental_groups_policy: Option<String>,
}

impl RawPodSecurity {
    /// The fields shared with a container's context.
    fn common(&self) -> RawSecurity {
        RawSecurity {
            privileged: None,
            seccomp_profile: self.seccomp_profile.clone(),
            app_armor_profile: self.app_armor_profile.clone(),
            se_linux_options: self.se_linux_options.clone(),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
struct RawOs {
    #[serde(default)]
    name: Option<String>,
}

/// The fields of a pod's or a container's `securityContext` that the
/// runtime-compatibility check reads.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSecurity {
    #[serde(default)]
    privileged: Option<bool>,
    #[serde(default)]
    seccomp_profile: Option<RawProfile>,
    #[serde(default)]
    app_armor_profile: Option<RawProfile>,
    #[serde(rename = "seLinuxOptions", default)]
    se_linux_options: Option<BTreeMap<String, Option<String>>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct RawProfile {
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMount {
    #[serde(default)]
    name: String,
    #[serde(default)]
    mount_propagation: Option<String>,
    #[serde(default)]
    sub_path: Option<String>,
    #[serde(default)]
    sub_path_expr: Option<String>,
    #[serde(default)]
    recursive_read_only: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
struct RawHostPath {
    #[serde(default)]
    path: Option<String>,
    #[serde(rename = "type", default)]
    kind: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEmptyDir {
    #[serde(default)]
    medium: Option<String>,
    /// A quantity, kept as JSON text: only shown, never computed with.
    #[serde(default)]
    size_limit: Option<Box<RawValue>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawVolume {
    #[serde(default)]
    name: String,
    #[serde(default)]
    persistent_volume_claim: Option<RawClaimSource>,
    #[serde(default)]
    ephemeral: Option<RawEphemeral>,
    #[serde(default)]
    host_path: Option<RawHostPath>,
    #[serde(default)]
    empty_dir: Option<RawEmptyDir>,
    #[serde(default)]
    image: Option<RawImageSource>,
}

/// An image volume (KEP-4639).
#[derive(Debug, Default, Deserialize)]
struct RawImageSource {
    #[serde(default)]
    reference: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawClaimSource {
    #[serde(default)]
    claim_name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawEphemeral {
    #[serde(default)]
    volume_claim_template: Option<Claim>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawContainer {
    #[serde(default)]
    name: String,
    #[serde(default)]
    resources: Option<RawRequirements>,
    #[serde(default)]
    restart_policy: Option<String>,
    #[serde(default)]
    security_context: Option<RawSecurity>,
    #[serde(default)]
    volume_mounts: Option<Vec<RawMount>>,
}

/// Quantities stay raw JSON text until parsed exactly (never via f64).
#[derive(Debug, Default, Deserialize)]
struct RawRequirements {
    #[serde(default)]
    requests: Option<BTreeMap<String, Box<RawValue>>>,
    #[serde(default)]
    limits: Option<BTreeMap<String, Box<RawValue>>>,
    /// `resources.claims`: the pod's resource claims a container uses.
    #[serde(default)]
    claims: Option<Vec<RawClaimUse>>,
}

#[derive(Debug, Default, Deserialize)]
struct RawClaimUse {
    #[serde(default)]
    name: String,
}

/// An entry of `spec.resourceClaims` (DRA).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawResourceClaim {
    #[serde(default)]
    name: String,
    #[serde(default)]
    resource_claim_name: Option<String>,
    #[serde(default)]
    resource_claim_template_name: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawSpreadConstraint {
    #[serde(default)]
    topology_key: String,
    #[serde(default)]
    when_unsatisfiable: String,
}

/// What the policy needs to know about one Pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodFacts {
    pub has_spec: bool,
    pub is_mirror: bool,
    pub node_name: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    /// `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_node_affinity: Option<NodeSelector>,
    pub tolerations: Vec<Toleration>,
    /// What the runtime-compatibility check reads (`incompatible`).
    pub runtime: RuntimeFacts,
    /// `spec.runtimeClassName`, `Some("")` included.
    pub runtime_class_name: Option<String>,
    /// `spec.overhead` (normally unset: the RuntimeClass plugin sets it).
    pub overhead: Option<ResourceList>,
    /// Container, init-container and pod-level resources, defaulted as the
    /// API server does before mutating webhooks run.
    pub resources: PodResources,
    /// `(topologyKey, whenUnsatisfiable)` of each topology spread constraint.
    pub topology_spread: Vec<(String, String)>,
    /// `metadata.name`: empty for a pod created with `generateName` (the
    /// API server names it after admission).
    pub name: Option<String>,
    /// `metadata.generateName`: the prefix of the name the API server gives.
    pub generate_name: Option<String>,
    pub namespace: Option<String>,
    /// The volumes that use PersistentVolumeClaims, in spec order.
    pub claims: Vec<PodVolume>,
    /// A container, init container or sidecar mounts a volume with
    /// `recursiveReadOnly: Enabled`: the kubelet then needs the runtime
    /// handler to support it (`IfPossible` falls back, `Disabled` asks
    /// nothing).
    pub recursive_read_only: bool,
    /// `securityContext.supplementalGroupsPolicy: Strict`: the kubelet then
    /// needs the node's CRI to report the feature.
    pub strict_supplemental_groups: bool,
    /// `spec.schedulingGates` names: while any is set, the pod's node
    /// constraints may still be narrowed.
    pub scheduling_gates: Vec<String>,
    /// `metadata.annotations` (the decision annotation counts them against
    /// the API server's limit).
    pub annotations: BTreeMap<String, String>,
}

impl PodFacts {
    /// Reads the facts from the raw JSON of a Pod.
    pub fn from_json(raw: &str) -> Result<PodFacts, String> {
        if !crate::node::starts_as_object(raw.as_bytes()) {
            return Err("the object is not a valid Pod: not a JSON object".into());
        }
        let pod: PodObject =
            serde_json::from_str(raw).map_err(|e| format!("the object is not a valid Pod: {e}"))?;
        let meta = pod.metadata.unwrap_or_default();
        let has_spec = pod.spec.is_some();
        let mut spec = pod.spec.unwrap_or_default();
        let invalid = |e: String| format!("the object is not a valid Pod: {e}");
        let resources = pod_resources(&spec).map_err(invalid)?;
        let overhead = spec
            .overhead
            .as_ref()
            .map(|o| resource_list(Some(o), "spec.overhead"))
            .transpose()
            .map_err(invalid)?;
        let recursive_read_only = (spec.containers.iter().flatten())
            .chain(spec.init_containers.iter().flatten())
            .flat_map(|c| c.volume_mounts.iter().flatten())
            .any(|m| m.recursive_read_only.as_deref() == Some("Enabled"));
        let strict_supplemental_groups = (spec.security_context.as_ref())
            .and_then(|s| s.supplemental_groups_policy.as_deref())
            == Some("Strict");
        let scheduling_gates = (spec.scheduling_gates.take().into_iter().flatten())
            .map(|g| g.name)
            .collect();
        let runtime = runtime_facts(&mut spec, &resources, meta.annotations.as_ref());
        let claims = spec
            .volumes
            .into_iter()
            .flatten()
            .filter_map(|v| {
                let source = match (v.persistent_volume_claim, v.ephemeral) {
                    (Some(pvc), _) => ClaimSource::Claim(pvc.claim_name),
                    (None, Some(e)) => ClaimSource::Ephemeral(Box::new(e.volume_claim_template?)),
                    (None, None) => return None,
                };
                Some(PodVolume {
                    name: v.name,
                    source,
                })
            })
            .collect();
        Ok(PodFacts {
            has_spec,
            is_mirror: meta
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION)),
            node_name: spec.node_name.filter(|n| !n.is_empty()),
            node_selector: spec.node_selector.unwrap_or_default(),
            required_node_affinity: spec
                .affinity
                .and_then(|a| a.node_affinity)
                .and_then(|na| na.required_during_scheduling_ignored_during_execution),
            tolerations: spec.tolerations.unwrap_or_default(),
            runtime,
            // "" is kept: the API server refuses it, the policy must not
            // give it a class (decision.rs).
            runtime_class_name: spec.runtime_class_name,
            overhead,
            resources,
            topology_spread: spec
                .topology_spread_constraints
                .unwrap_or_default()
                .into_iter()
                .map(|c| (c.topology_key, c.when_unsatisfiable))
                .collect(),
            name: meta.name.filter(|n| !n.is_empty()),
            generate_name: meta.generate_name.filter(|n| !n.is_empty()),
            namespace: meta.namespace.filter(|n| !n.is_empty()),
            claims,
            recursive_read_only,
            strict_supplemental_groups,
            scheduling_gates,
            annotations: meta.annotations.unwrap_or_default(),
        })
    }
}

/// The facts of the runtime-compatibility check. `resources` holds the
/// containers' parsed resources, in the order of `spec`; the containers are
/// moved out of `spec` (nothing reads them after this).
fn runtime_facts(
    spec: &mut PodSpec,
    resources: &PodResources,
    annotations: Option<&BTreeMap<String, String>>,
) -> RuntimeFacts {
    let host_namespaces = [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ]
    .into_iter()
    .filter(|(_, on)| *on == Some(true))
    .map(|(name, _)| name)
    .collect();
    let init_resources = resources.init_containers.iter().map(|(r, _)| r);
    let containers = (spec.containers.iter().flatten().map(|c| (c, false)))
        .zip(resources.containers.iter())
        .chain((spec.init_containers.iter().flatten().map(|c| (c, true))).zip(init_resources))
        .map(|((c, init), r)| incompatible::Container {
            name: c.name.clone(),
            init,
            security: security(c.security_context.as_ref()),
            mounts: c
                .volume_mounts
                .iter()
                .flatten()
                .map(|m| incompatible::Mount {
                    volume: m.name.clone(),
                    propagation: m.mount_propagation.clone(),
                    sub_path: [("subPath", &m.sub_path), ("subPathExpr", &m.sub_path_expr)]
                        .into_iter()
                        .find(|(_, v)| v.as_deref().is_some_and(|v| !v.is_empty()))
                        .map(|(field, _)| field),
                })
                .collect(),
            resources: nonzero_names(r),
            claims: (c.resources.iter())
                .flat_map(|r| r.claims.iter().flatten())
                .map(|u| u.name.clone())
                .collect(),
        })
        .collect();
    let volumes = (spec.volumes.iter().flatten())
        .filter(|v| v.host_path.is_some() || v.empty_dir.is_some() || v.image.is_some())
        .map(|v| incompatible::Volume {
            name: v.name.clone(),
            host_path: v.host_path.as_ref().map(|h| incompatible::HostPath {
                path: incompatible::clean(h.path.as_deref().unwrap_or_default()),
                kind: h.kind.clone().unwrap_or_default(),
            }),
            memory_size_limit: (v.empty_dir.as_ref())
                .filter(|e| e.medium.as_deref() == Some("Memory"))
                .and_then(|e| e.size_limit.as_ref())
                .map(|q| q.get().trim_matches('"').to_string())
                .filter(|q| q != "null"),
            image: (v.image.as_ref()).map(|i| i.reference.clone().unwrap_or_default()),
        })
        .collect();
    let app_armor_annotations = (annotations.into_iter().flatten())
        .filter_map(|(key, value)| {
            let container = key.strip_prefix(APP_ARMOR_ANNOTATION_PREFIX)?;
            Some((container.to_string(), value.clone()))
        })
        .collect();
    RuntimeFacts {
        host_namespaces,
        host_users: spec.host_users,
        os_name: spec.os.as_ref().and_then(|os| os.name.clone()),
        security: security(
            spec.security_context
                .as_ref()
                .map(RawPodSecurity::common)
                .as_ref(),
        ),
        containers,
        volumes,
        app_armor_annotations,
        resource_claims: (spec.resource_claims.iter().flatten())
            .map(|c| incompatible::ResourceClaim {
                name: c.name.clone(),
                source: [
                    ("ResourceClaimTemplate", &c.resource_claim_template_name),
                    ("ResourceClaim", &c.resource_claim_name),
                ]
                .into_iter()
                .find_map(|(kind, name)| {
                    name.as_ref()
                        .filter(|n| !n.is_empty())
                        .map(|n| (kind, n.clone()))
                }),
            })
            .collect(),
    }
}

fn security(raw: Option<&RawSecurity>) -> incompatible::Security {
    let Some(raw) = raw else {
        return incompatible::Security::default();
    };
    let kind = |p: &Option<RawProfile>| p.as_ref().and_then(|p| p.kind.clone());
    incompatible::Security {
        privileged: raw.privileged == Some(true),
        seccomp: kind(&raw.seccomp_profile),
        app_armor: kind(&raw.app_armor_profile),
        se_linux: (raw.se_linux_options.iter().flatten())
            .any(|(_, v)| v.as_deref().is_some_and(|v| !v.is_empty())),
    }
}

/// The extended resources (the only kind `hostDeviceResources` can name) a
/// container requests or limits with a non-zero quantity.
fn nonzero_names(r: &ContainerResources) -> Vec<String> {
    let mut names: Vec<String> = (r.requests.iter().chain(r.limits.iter()))
        .filter(|(name, q)| name.contains('/') && !q.is_zero())
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

fn pod_resources(spec: &PodSpec) -> Result<PodResources, String> {
    let containers = |list: &Option<Vec<RawContainer>>, field: &str| {
        list.iter()
            .flatten()
            .enumerate()
            .map(|(i, c)| {
                let r = container_resources(c.resources.as_ref(), &format!("spec.{field}[{i}]"))?;
                Ok((r, c.restart_policy.as_deref() == Some("Always")))
            })
            .collect::<Result<Vec<_>, String>>()
    };
    Ok(PodResources {
        containers: containers(&spec.containers, "containers")?
            .into_iter()
            .map(|(r, _)| r)
            .collect(),
        init_containers: containers(&spec.init_containers, "initContainers")?,
        // Pod-level limits are not copied into requests like a container's:
        // `PodResources::requests` applies the pod-level defaulting rule.
        pod_level: raw_requirements(spec.resources.as_ref(), "spec")?,
    })
}

fn container_resources(
    raw: Option<&RawRequirements>,
    path: &str,
) -> Result<ContainerResources, String> {
    Ok(raw_requirements(raw, path)?.defaulted())
}

fn raw_requirements(
    raw: Option<&RawRequirements>,
    path: &str,
) -> Result<ContainerResources, String> {
    let Some(raw) = raw else {
        return Ok(ContainerResources::default());
    };
    Ok(ContainerResources {
        requests: resource_list(raw.requests.as_ref(), &format!("{path}.resources.requests"))?,
        limits: resource_list(raw.limits.as_ref(), &format!("{path}.resources.limits"))?,
    })
}

/// Parses a ResourceList; API defaulting rounds each quantity up to milli.
fn resource_list(
    raw: Option<&BTreeMap<String, Box<RawValue>>>,
    path: &str,
) -> Result<ResourceList, String> {
    raw.into_iter()
        .flatten()
        .map(|(name, value)| {
            let text = value.get();
            let q = if text == "null" {
                Quantity::ZERO
            } else {
                Quantity::from_json_text(text)
                    .map_err(|e| format!("{path}.{name}: {text} is not a valid quantity ({e})"))?
            };
            Ok((name.clone(), q.round_up_to_milli()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_scheduling_fields() {
        let facts = PodFacts::from_json(
            r#"{"metadata":{"name":"p","annotations":{"kubernetes.io/config.mirror":"x"}},
                "spec":{"nodeName":"n1","nodeSelector":{"a":""},"hostPID":true,"hostIPC":false,
                        "tolerations":[{"key":"k","operator":"Exists"}],
                        "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
                            {"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}},
                        "runtimeClassName":"gvisor","futureField":{"deep":[1,2]}}}"#,
        )
        .unwrap();
        assert!(facts.has_spec && facts.is_mirror);
        assert_eq!(facts.node_name.as_deref(), Some("n1"));
        assert_eq!(facts.node_selector.get("a").map(String::as_str), Some(""));
        assert_eq!(facts.runtime.host_namespaces, vec!["hostPID"]);
        assert_eq!(facts.tolerations.len(), 1);
        assert_eq!(
            facts
                .required_node_affinity
                .unwrap()
                .node_selector_terms
                .len(),
            1
        );
        assert_eq!(facts.runtime_class_name.as_deref(), Some("gvisor"));
    }

    #[test]
    fn empty_strings_and_nulls_mean_unset() {
        let facts = PodFacts::from_json(
            r#"{"metadata":{"generateName":"web-"},"spec":{"nodeName":"","runtimeClassName":"","tolerations":null}}"#,
        )
        .unwrap();
        assert_eq!(facts.node_name, None);
        assert_eq!(facts.runtime_class_name.as_deref(), Some(""));
        assert!(facts.tolerations.is_empty() && !facts.is_mirror);
        assert!(!PodFacts::from_json("{}").unwrap().has_spec);
    }

    #[test]
    fn malformed_pods_are_errors_not_panics() {
        for bad in [
            "[]",
            "{\"spec\":{\"tolerations\":\"all\"}}",
            "{\"spec\":{\"hostNetwork\":\"yes\"}}",
            "nope",
        ] {
            assert!(
                PodFacts::from_json(bad)
                    .unwrap_err()
                    .contains("not a valid Pod"),
                "{bad}"
            );
        }
    }
}
