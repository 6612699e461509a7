//! The pod's scheduling constraints with its class, compiled once and then
//! matched against each node: kube-scheduler's Filter plugins, in its
//! order, keeping the first failure of each node as the framework does.
//! Built by the decision's `compile` (the PreFilter step); the kubelet's
//! gates are `kubelet::KubeletNeeds`, run by the pass after these.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::rc::Rc;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};

use super::inter_pod_affinity::InterPodAffinity;
use super::node_affinity::RequiredNodeAffinity;
use super::node_resources_fit::{FitAnswers, ResourceFit};
use super::pod_topology_spread::SpreadLabels;
use super::reason::{Reason, Unfit};
use super::taint_toleration::{NO_EXECUTE, NO_SCHEDULE, first_untolerated};
use super::volume_binding::VolumeCheck;
use super::{node_name, node_unschedulable};
use crate::node::Node;

/// Beyond this many pinned names, one list costs less than the reads.
pub const MAX_PINNED: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub struct Constraints {
    /// `spec.nodeName`: the scheduler is bypassed and the kubelet admits the
    /// pod: that node only, no cordon check, only NoExecute taints.
    node_name: Option<String>,
    affinity: RequiredNodeAffinity,
    tolerations: Vec<Toleration>,
    resources: ResourceFit,
    volumes: VolumeCheck,
    spread: SpreadLabels,
    /// The pod's required inter-pod (anti-)affinity and the existing pods'
    /// anti-affinity, when the cluster's pods were read.
    pod_affinity: Option<Rc<InterPodAffinity>>,
    /// The node labels the filters read; a node scan skips all others.
    label_keys: Vec<String>,
}

impl Constraints {
    pub fn new(
        node_name: Option<&str>,
        node_selector: &BTreeMap<String, String>,
        required_affinity: Option<&NodeSelector>,
        tolerations: Vec<Toleration>,
    ) -> Self {
        let affinity = RequiredNodeAffinity::new(node_selector, required_affinity);
        let mut c = Constraints {
            node_name: node_name.map(str::to_string),
            affinity,
            tolerations,
            resources: ResourceFit::default(),
            volumes: VolumeCheck::default(),
            spread: SpreadLabels::default(),
            pod_affinity: None,
            label_keys: Vec::new(),
        };
        c.update_keys();
        c
    }

    /// Adds the static NodeResourcesFit check of the pod's total requests.
    pub fn with_resources(mut self, resources: ResourceFit) -> Self {
        self.resources = resources;
        self.update_keys();
        self
    }

    /// Adds the static VolumeBinding and VolumeZone checks of the pod's claims.
    pub fn with_volumes(mut self, volumes: VolumeCheck) -> Self {
        self.volumes = volumes;
        self.update_keys();
        self
    }

    /// Adds the static PodTopologySpread check (required topology labels).
    pub fn with_spread(mut self, spread: SpreadLabels) -> Self {
        self.spread = spread;
        self.update_keys();
        self
    }

    /// Adds the InterPodAffinity check, counted from the cluster's pods.
    pub fn with_pod_affinity(mut self, check: Rc<InterPodAffinity>) -> Self {
        self.pod_affinity = Some(check);
        self.update_keys();
        self
    }

    /// The nodes the pod can only ever run on, when it names at most
    /// [`MAX_PINNED`] of them: `spec.nodeName`, or required node affinity
    /// whose every term pins `metadata.name` (DaemonSet pods). Those are read
    /// by name instead of listing every kata node.
    pub fn pinned_nodes(&self) -> Option<Vec<String>> {
        let names = match &self.node_name {
            Some(name) => vec![name.clone()],
            None => self.affinity.pinned_names()?,
        };
        (!names.is_empty() && names.len() <= MAX_PINNED).then_some(names)
    }

    /// The node labels the filters read.
    pub fn label_keys(&self) -> &[String] {
        &self.label_keys
    }

    /// The node labels whose values a filter compares (selectors, node
    /// affinity, volume topology); topology spread only asks that its keys
    /// be there.
    pub fn value_keys(&self) -> Vec<String> {
        let mut keys = self.affinity.label_keys();
        keys.extend(self.volumes.label_keys());
        keys
    }

    /// Whether a filter reads the node's name (`spec.nodeName`,
    /// `matchFields`): then nodes of one shape may differ.
    pub fn reads_node_names(&self) -> bool {
        self.node_name.is_some() || self.affinity.reads_fields()
    }

    /// The pod's `spec.nodeName`, if set.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
    }

    fn update_keys(&mut self) {
        let mut labels = self.affinity.label_keys();
        labels.extend(self.spread.label_keys().iter().cloned());
        labels.extend(self.volumes.label_keys());
        labels.extend(
            self.pod_affinity
                .iter()
                .flat_map(|p| p.label_keys().cloned()),
        );
        labels.sort();
        labels.dedup();
        self.label_keys = labels;
    }

    /// `Ok` when the scheduler (or, for a pod with `spec.nodeName`, the
    /// kubelet's admission) takes the node, else the first failing filter.
    pub fn check<'n>(&self, node: &Node<'n>) -> Result<(), Unfit<'n>> {
        self.check_with(node, &mut FitAnswers::default())
    }

    /// [`check`](Self::check), with the resource answers of earlier nodes.
    pub(crate) fn check_with<'n>(
        &self,
        node: &Node<'n>,
        answers: &mut FitAnswers<'n>,
    ) -> Result<(), Unfit<'n>> {
        let untolerated = |effects: &[&str]| {
            first_untolerated(&node.spec.taints, &self.tolerations, effects).map(|t| {
                Reason::UntoleratedTaint {
                    key: t.key.0.clone(),
                    value: t.value.as_ref().map_or(Cow::Borrowed(""), |v| v.0.clone()),
                }
            })
        };
        match &self.node_name {
            // kube-scheduler: NodeUnschedulable, NodeName, TaintToleration,
            // NodeAffinity, NodeResourcesFit, …, VolumeBinding, VolumeZone,
            // PodTopologySpread, InterPodAffinity.
            None => {
                if !node_unschedulable::passes(node, &self.tolerations) {
                    return Err(Reason::Unschedulable.into());
                }
                if let Some(reason) = untolerated(&[NO_SCHEDULE, NO_EXECUTE]) {
                    return Err(reason.into());
                }
                if !self.affinity.matches(node) {
                    return Err(Reason::NodeAffinity.into());
                }
                self.resources_fit(node, false, answers)?;
                self.volumes.check(node)?;
                if !self.spread.passes(node) {
                    return Err(Reason::TopologySpreadLabel.into());
                }
                if let Some(check) = &self.pod_affinity {
                    check.check(node)?;
                }
            }
            // kubelet admission (`AdmissionCheck`): resources, node
            // affinity/selector, node name; then NoExecute taints. It never
            // looks at topology spread, nor at volume topology.
            Some(name) => {
                if !node_name::passes(node, Some(name)) {
                    return Err(Reason::NodeName.into());
                }
                self.resources_fit(node, true, answers)?;
                if !self.affinity.matches(node) {
                    return Err(Reason::NodeAffinity.into());
                }
                if let Some(reason) = untolerated(&[NO_EXECUTE]) {
                    return Err(reason.into());
                }
            }
        }
        Ok(())
    }

    fn resources_fit<'n>(
        &self,
        node: &Node<'n>,
        kubelet: bool,
        answers: &mut FitAnswers<'n>,
    ) -> Result<(), Unfit<'n>> {
        // One set of answers per pass serves one path: `kubelet` is fixed
        // per pod.
        match self.resources.shortfalls_with(node, kubelet, answers) {
            Ok(None) => Ok(()),
            Ok(Some(unfit)) => Err(unfit),
            Err(why) => Err(Reason::Unreadable(why.into()).into()),
        }
    }
}

#[cfg(test)]
mod tests;
