//! The pod's resources: each container's, init container's and the pod's
//! own requests and limits, parsed exactly and defaulted as the API server
//! does before mutating webhooks run.

use std::collections::BTreeMap;

use serde_json::value::RawValue;

use super::raw::{PodSpec, RawContainer, RawRequirements};
use crate::quantity::Quantity;
use crate::resources::{ContainerResources, PodResources, ResourceList};

pub(super) fn pod_resources(spec: &PodSpec) -> Result<PodResources, String> {
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
pub(super) fn resource_list(
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
