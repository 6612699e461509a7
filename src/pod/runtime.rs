//! What the runtime-compatibility check reads of the pod
//! ([`RuntimeFacts`]): host namespaces, security contexts, mounts,
//! volumes, device resources and claims, taken from the raw spec, and the
//! containers' AppArmor annotations.

use std::collections::BTreeMap;

use super::raw::{PodSpec, RawPodSecurity, RawProfile, RawSecurity};
use super::volumes;
use crate::incompatible::{self, RuntimeFacts};
use crate::resources::{ContainerResources, PodResources};

/// The AppArmor annotation of one container (before the field, still read).
pub const APP_ARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// The facts of the runtime-compatibility check. `resources` holds the
/// containers' parsed resources, in the order of `spec`; the containers are
/// moved out of `spec` (nothing reads them after this).
pub(super) fn runtime_facts(
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
    let volumes = volumes::runtime_volumes(spec.volumes.as_deref());
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
