//! The NodeResourcesFit filter, static: would the pod fit the node if the
//! node were empty? kube-scheduler calls a request above the node's total
//! allocatable *unresolvable*: no preemption and no waiting ever fixes it.
//!
//! Rules (`noderesources/fit.go` `fitsRequest`, `framework/types.go`): one
//! pod must fit the `pods` count; cpu is compared in milli-units, everything
//! else in units, both rounded up; a zero request is never checked; equality
//! fits; a resource the node does not list counts as 0.

use std::sync::Arc;

use super::Reason;
use crate::node::Node;
use crate::quantity::Amount;
use crate::resources::{self, IgnoredResources, ResourceList};

#[derive(Debug, Clone, PartialEq, Eq)]
struct Request {
    name: Arc<str>,
    /// In the node's units: milli-cpu, else units.
    amount: i64,
    extended: bool,
}

/// The pod's requests, compiled once per pod: only the resources the
/// filter checks, each with a non-zero request, in the scheduler's order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceFit {
    requests: Vec<Request>,
}

impl ResourceFit {
    /// `requests`: the pod's total requests, overhead included.
    pub fn new(requests: &ResourceList, ignored: &IgnoredResources) -> ResourceFit {
        let mut checked: Vec<Request> = requests
            .iter()
            .filter(|(name, _)| resources::is_checked(name))
            .filter(|(name, _)| !(resources::is_extended(name) && ignored.ignores(name)))
            .map(|(name, q)| Request {
                name: Arc::from(name.as_str()),
                amount: if name == resources::CPU {
                    q.milli_value()
                } else {
                    q.value()
                },
                extended: resources::is_extended(name),
            })
            .filter(|r| r.amount != 0)
            .collect();
        // cpu, memory, ephemeral-storage, then the rest by name.
        checked.sort_by_key(|r| (resources::check_order(&r.name), r.name.clone()));
        ResourceFit { requests: checked }
    }

    /// The allocatable keys the check reads: a node scan keeps only these.
    pub fn allocatable_keys(&self) -> Vec<String> {
        std::iter::once(resources::PODS.to_string())
            .chain(self.requests.iter().map(|r| r.name.to_string()))
            .collect()
    }

    /// Every resource the node is short of, in the scheduler's order; empty
    /// when the pod fits. `kubelet`: judged as the kubelet admits a pod
    /// bound by `spec.nodeName`, which drops extended resources the node
    /// does not list at all (`removeMissingExtendedResources`). An
    /// allocatable value that does not parse is an error naming the node.
    pub fn shortfalls<'n>(&self, node: &Node, kubelet: bool) -> Result<Vec<Reason<'n>>, String> {
        let allocatable = &node.allocatable;
        if !allocatable.listed {
            return Ok(Vec::new());
        }
        let amount = |name: &str| {
            allocatable
                .get(name)
                .map(|text| {
                    Amount::parse(text).map_err(|e| {
                        format!(
                            "node {:?} has status.allocatable {name}: {text:?}, which is not a valid quantity ({e})",
                            node.name()
                        )
                    })
                })
                .transpose()
        };
        let mut reasons = Vec::new();
        if amount(resources::PODS)?.is_some_and(|pods| pods.units < 1) {
            reasons.push(Reason::TooManyPods);
        }
        for request in &self.requests {
            let available = match amount(&request.name)? {
                Some(a) if &*request.name == resources::CPU => a.milli,
                Some(a) => a.units,
                None if kubelet && request.extended => continue,
                None => 0,
            };
            if request.amount > available {
                reasons.push(Reason::Insufficient(request.name.clone()));
            }
        }
        Ok(reasons)
    }
}

#[cfg(test)]
mod tests;
