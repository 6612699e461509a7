//! Resource names, resource lists, and a pod's total requests as
//! component-helpers' `resource.PodRequests` computes them for the scheduler.

use std::collections::BTreeMap;

use crate::labels::{is_dns_subdomain, is_qualified_name};
use crate::quantity::Quantity;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";
const HUGEPAGES_PREFIX: &str = "hugepages-";

/// Resource name → exact quantity.
pub type ResourceList = BTreeMap<String, Quantity>;

/// `v1helper.IsExtendedResourceName`: a qualified name with a `/`, outside
/// the `kubernetes.io/` namespace, not a quota `requests.` name.
pub fn is_extended(name: &str) -> bool {
    name.contains('/')
        && !name.contains("kubernetes.io/")
        && !name.starts_with("requests.")
        && is_qualified_name(&format!("requests.{name}"))
}

/// Whether NodeResourcesFit checks `name`: cpu, memory, ephemeral-storage
/// and the scalar resources (`util.IsScalarResourceName`: extended,
/// `hugepages-*`, prefixed native `*kubernetes.io/*`, `attachable-volumes-*`).
/// The scheduler's `framework.Resource` drops every other name.
pub fn is_checked(name: &str) -> bool {
    matches!(name, CPU | MEMORY | EPHEMERAL_STORAGE)
        || name.starts_with(HUGEPAGES_PREFIX)
        || name.starts_with("attachable-volumes-")
        || name.contains("kubernetes.io/")
        || is_extended(name)
}

/// The scheduler checks cpu, memory and ephemeral-storage first.
pub fn check_order(name: &str) -> u8 {
    match name {
        CPU => 0,
        MEMORY => 1,
        EPHEMERAL_STORAGE => 2,
        _ => 3,
    }
}

/// `IsSupportedPodLevelResource`: what `spec.resources` may set.
fn is_pod_level(name: &str) -> bool {
    matches!(name, CPU | MEMORY) || name.starts_with(HUGEPAGES_PREFIX)
}

/// A set of extended resources, by exact name or by `group/*`: the
/// `ignoredResources` setting (what the fit check skips, like the scheduler's
/// `ignoredResources` and `ignoredResourceGroups`) and `hostDeviceResources`
/// (what a device plugin hands over as host device nodes).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceNames {
    names: Vec<String>,
    groups: Vec<String>,
}

impl ResourceNames {
    /// Parses the setting's entries; the error names the bad entry.
    pub fn parse<'a>(entries: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut set = ResourceNames::default();
        for entry in entries {
            if let Some(group) = entry.strip_suffix("/*") {
                if !is_dns_subdomain(group) || group.ends_with("kubernetes.io") {
                    return Err(format!(
                        "{entry:?} is not a resource group: expected \"<domain>/*\" with a DNS subdomain outside kubernetes.io, such as \"example.com/*\""
                    ));
                }
                set.groups.push(group.to_string());
            } else if is_extended(entry) {
                set.names.push(entry.to_string());
            } else {
                return Err(format!(
                    "{entry:?} is not an extended resource name: expected \"<domain>/<name>\" outside kubernetes.io, such as \"nvidia.com/gpu\", or a group such as \"nvidia.com/*\""
                ));
            }
        }
        Ok(set)
    }

    /// Whether `name` is listed, or its domain is a listed group.
    pub fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
            || name
                .split_once('/')
                .is_some_and(|(group, _)| self.groups.iter().any(|g| g == group))
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.groups.is_empty()
    }
}

/// A container's `resources`, after the API server's defaulting.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerResources {
    pub requests: ResourceList,
    pub limits: ResourceList,
}

impl ContainerResources {
    /// `SetDefaults_Pod`: every limit missing from requests is copied there,
    /// key by key (an explicit request, even 0, wins). Mutating webhooks see
    /// pods after this; doing it again changes nothing for them and makes an
    /// undefaulted pod (`kwctl run`) read the same.
    pub fn defaulted(mut self) -> ContainerResources {
        for (name, limit) in &self.limits {
            self.requests.entry(name.clone()).or_insert(*limit);
        }
        self
    }
}

/// The resource facts of a pod: what `PodRequests` reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodResources {
    pub containers: Vec<ContainerResources>,
    /// Init containers in order; `true` for a restartable sidecar
    /// (`restartPolicy: Always`).
    pub init_containers: Vec<(ContainerResources, bool)>,
    /// Pod-level `spec.resources`.
    pub pod_level: ContainerResources,
}

impl PodResources {
    /// Every resource a container, init container or sidecar requests or
    /// limits with a non-zero quantity, and the pod-level ones. A zero
    /// (`nvidia.com/pgpu: "0"`, as Helm charts render an unused GPU) asks
    /// for nothing: the scheduler's fit skips it, and so does routing.
    pub fn nonzero_names(&self) -> std::collections::BTreeSet<&str> {
        let containers = (self.containers.iter())
            .chain(self.init_containers.iter().map(|(c, _)| c))
            .chain(std::iter::once(&self.pod_level));
        containers
            .flat_map(|c| c.requests.iter().chain(c.limits.iter()))
            .filter(|(_, q)| !q.is_zero())
            .map(|(name, _)| name.as_str())
            .collect()
    }

    /// The pod's requests as the scheduler counts them, plus `overhead`
    /// (the RuntimeClass's `overhead.podFixed`, which becomes `spec.overhead`).
    pub fn requests(&self, overhead: &ResourceList) -> ResourceList {
        let containers = self.aggregate(|c| &c.requests);
        let mut total = containers.clone();
        for (name, request) in self.pod_level_requests(&containers) {
            total.insert(name, request);
        }
        add_into(&mut total, overhead);
        total
    }

    /// `aggregateContainerResourcesByFn`: containers summed; init containers
    /// by the max rule, with restartable sidecars running next to everything
    /// after them (KEP-753).
    fn aggregate(&self, pick: impl Fn(&ContainerResources) -> &ResourceList) -> ResourceList {
        let mut sum = ResourceList::new();
        for c in &self.containers {
            add_into(&mut sum, pick(c));
        }
        let mut sidecars = ResourceList::new();
        let mut init_max = ResourceList::new();
        for (c, restartable) in &self.init_containers {
            let in_use = if *restartable {
                add_into(&mut sum, pick(c));
                add_into(&mut sidecars, pick(c));
                sidecars.clone()
            } else {
                let mut in_use = pick(c).clone();
                add_into(&mut in_use, &sidecars);
                in_use
            };
            max_into(&mut init_max, &in_use);
        }
        max_into(&mut sum, &init_max);
        sum
    }

    /// Pod-level requests (cpu, memory, `hugepages-*`), which replace the
    /// container aggregate for their keys, after the API server's pod-level
    /// defaulting (`defaultHugePagePodLimits`, then `defaultPodRequests`).
    fn pod_level_requests(&self, containers: &ResourceList) -> ResourceList {
        let pod = &self.pod_level;
        let mut requests: ResourceList = pod
            .requests
            .iter()
            .filter(|(name, _)| is_pod_level(name))
            .map(|(name, q)| (name.clone(), *q))
            .collect();
        if pod.requests.is_empty() && pod.limits.is_empty() {
            return requests;
        }
        // Hugepage limits of the containers become pod-level limits where
        // the pod level sets neither.
        let mut limits = pod.limits.clone();
        for (name, limit) in self.aggregate(|c| &c.limits) {
            if name.starts_with(HUGEPAGES_PREFIX)
                && !requests.contains_key(&name)
                && !limits.contains_key(&name)
            {
                limits.insert(name, limit);
            }
        }
        if limits.is_empty() {
            return requests;
        }
        // With pod-level limits, a missing pod-level request takes the
        // container aggregate (cpu, memory), else the pod-level limit.
        for (name, aggregate) in containers {
            if matches!(name.as_str(), CPU | MEMORY) && !requests.contains_key(name) {
                requests.insert(name.clone(), *aggregate);
            }
        }
        for (name, limit) in limits.iter().filter(|(name, _)| is_pod_level(name)) {
            requests.entry(name.clone()).or_insert(*limit);
        }
        requests
    }
}

/// `addResourceList`: `into[k] += from[k]` for every key.
pub fn add_into(into: &mut ResourceList, from: &ResourceList) {
    for (name, q) in from {
        let entry = into.entry(name.clone()).or_default();
        *entry = entry.saturating_add(*q);
    }
}

/// `maxResourceList`: `into[k] = max(into[k], from[k])` for every key.
fn max_into(into: &mut ResourceList, from: &ResourceList) {
    for (name, q) in from {
        let entry = into.entry(name.clone()).or_insert(*q);
        *entry = (*entry).max(*q);
    }
}

#[cfg(test)]
mod tests;
