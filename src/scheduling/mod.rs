//! Feasibility of one pod on kata nodes, as kube-scheduler (or, for pods that
//! name their node, the kubelet) decides it. Pure: no I/O, no allocation per
//! node on the success path.
//!
//! One file per scheduler filter; this module runs them in the scheduler's
//! order and keeps the first failure of each node, as the framework does.

mod diagnosis;
pub mod node_affinity;
pub mod node_features;
pub mod node_name;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod pod_topology_spread;
pub mod runtime_handler;
pub mod taint_toleration;
mod tally;
pub mod volume_binding;
pub mod volume_zone;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};

pub use diagnosis::Diagnosis;
pub use tally::Tally;

/// The answer of [`Constraints::find_feasible`].
#[derive(Debug, PartialEq, Eq)]
pub enum Feasibility<'n> {
    /// A node can run the pod. `broken`: nodes the scheduler may pick as
    /// well, whose runtime cannot start it.
    Fits { broken: Option<Broken<'n>> },
    NoneFits {
        diagnosis: Diagnosis<'n>,
        bound_elsewhere: Option<String>,
    },
}
use node_affinity::RequiredNodeAffinity;
use node_features::FeatureNeeds;
use node_resources_fit::{FitMemo, ResourceFit};
use pod_topology_spread::SpreadLabels;
use runtime_handler::{HandlerNeeds, Lack};
use taint_toleration::{NO_EXECUTE, NO_SCHEDULE, first_untolerated};
use volume_binding::VolumeCheck;

use crate::node::{KeyFilter, Node, scan_node_list};

/// Why a node cannot run the pod, in kube-scheduler's words.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason<'n> {
    Unschedulable,
    NodeName,
    /// Borrowed from the node list where the JSON allows, so that the
    /// diagnosis outlives each parsed node without copying.
    UntoleratedTaint {
        key: Cow<'n, str>,
        value: Cow<'n, str>,
    },
    NodeAffinity,
    /// The pod does not fit the node's `pods` count.
    TooManyPods,
    /// The pod requests more of a resource than the node has allocatable.
    Insufficient(Arc<str>),
    /// A bound claim's volume cannot be used from the node (its node affinity).
    VolumeNodeConflict,
    /// An unbound claim finds no volume to bind, and none can be provisioned, there.
    VolumeBindConflict,
    /// A bound claim's volume is in another zone or region (VolumeZone).
    VolumeZoneConflict,
    /// A `DoNotSchedule` topology spread constraint names a label the node lacks.
    TopologySpreadLabel,
    /// Not a scheduler filter: the node passes them all, but its runtime
    /// cannot start the pod (the kubelet's gates, `runtime_handler`).
    Runtime(Lack),
    /// Not a scheduling reason: the node's data a filter needs does not
    /// parse. The scan stops with this as the error of the whole answer.
    Unreadable(Arc<str>),
}

impl<'n> Reason<'n> {
    pub fn taint(key: impl Into<Cow<'n, str>>, value: impl Into<Cow<'n, str>>) -> Self {
        Reason::UntoleratedTaint {
            key: key.into(),
            value: value.into(),
        }
    }
}

impl std::fmt::Display for Reason<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reason::Unschedulable => f.write_str("node(s) were unschedulable"),
            Reason::NodeName => f.write_str("node(s) didn't match the requested node name"),
            Reason::UntoleratedTaint { key, value } => {
                write!(f, "node(s) had untolerated taint {{{key}: {value}}}")
            }
            Reason::NodeAffinity => {
                f.write_str("node(s) didn't match Pod's node affinity/selector")
            }
            Reason::TooManyPods => f.write_str("Too many pods"),
            Reason::Insufficient(resource) => write!(f, "Insufficient {resource}"),
            Reason::VolumeNodeConflict => {
                f.write_str("node(s) didn't match PersistentVolume's node affinity")
            }
            Reason::VolumeBindConflict => {
                f.write_str("node(s) didn't find available persistent volumes to bind")
            }
            Reason::VolumeZoneConflict => f.write_str("node(s) had no available volume zone"),
            Reason::TopologySpreadLabel => f.write_str(
                "node(s) didn't match pod topology spread constraints (missing required label)",
            ),
            Reason::Runtime(lack) => write!(f, "node(s) {lack}"),
            Reason::Unreadable(why) => f.write_str(why),
        }
    }
}

/// Why one node cannot run the pod: the first failing filter's reasons.
/// Mostly one; NodeResourcesFit reports every resource the node is short of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unfit<'n> {
    pub first: Reason<'n>,
    pub more: Vec<Reason<'n>>,
}

impl<'n> From<Reason<'n>> for Unfit<'n> {
    fn from(first: Reason<'n>) -> Self {
        Unfit {
            first,
            more: Vec::new(),
        }
    }
}

impl<'n> Unfit<'n> {
    pub fn reasons(&self) -> impl Iterator<Item = &Reason<'n>> {
        std::iter::once(&self.first).chain(&self.more)
    }
}

/// Beyond this many pinned names, one list costs less than the reads.
pub const MAX_PINNED: usize = 8;

/// The effective scheduling constraints of a pod, compiled once and then
/// tested against every kata node.
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
    /// The kubelet's runtime-handler gates; `None` with
    /// `runtimeHandlerCheck: off`.
    handler: Option<HandlerNeeds>,
    /// The kubelet's gate on the node's CRI features, whatever
    /// `runtimeHandlerCheck` says.
    features: FeatureNeeds,
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
            handler: None,
            features: FeatureNeeds::default(),
            label_keys: Vec::new(),
        };
        c.update_keys();
        c
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

    /// The pod's `spec.nodeName`, if set.
    pub fn node_name(&self) -> Option<&str> {
        self.node_name.as_deref()
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

    /// Adds the runtime-handler gates, checked after every scheduler filter.
    pub fn with_handler(mut self, handler: Option<HandlerNeeds>) -> Self {
        self.handler = handler;
        self
    }

    /// The runtime-handler gates, if checked.
    pub fn handler(&self) -> Option<&HandlerNeeds> {
        self.handler.as_ref()
    }

    /// Adds the gate on the node's CRI features, checked after every
    /// scheduler filter and before the runtime handler.
    pub fn with_features(mut self, features: FeatureNeeds) -> Self {
        self.features = features;
        self
    }

    /// The CRI features the pod needs of a node.
    pub fn features(&self) -> FeatureNeeds {
        self.features
    }

    /// Whether a node may pass every scheduler filter and still fail a
    /// kubelet gate: then every node is read, to name those the scheduler
    /// may pick and the pod would fail on ([`Broken`]).
    pub fn has_kubelet_gates(&self) -> bool {
        self.handler.is_some() || self.features.any()
    }

    fn update_keys(&mut self) {
        let mut labels = self.affinity.label_keys();
        labels.extend(self.spread.label_keys().iter().cloned());
        labels.extend(self.volumes.label_keys());
        labels.sort();
        labels.dedup();
        self.label_keys = labels;
    }

    /// `Ok` when the node can run the pod, else the first failing filter.
    pub fn check<'n>(&self, node: &Node<'n>) -> Result<(), Unfit<'n>> {
        self.check_with(node, &mut FitMemo::default())
    }

    /// [`check`](Self::check), with the resource answers of earlier nodes.
    pub(crate) fn check_with<'n>(
        &self,
        node: &Node<'n>,
        memo: &mut FitMemo<'n>,
    ) -> Result<(), Unfit<'n>> {
        self.scheduler_filters(node, memo)?;
        self.kubelet_gates(node)
    }

    /// The scheduler's filters (or, for a pod with `spec.nodeName`, the
    /// kubelet's admission), without the gates on the node's runtime.
    pub(crate) fn scheduler_filters<'n>(
        &self,
        node: &Node<'n>,
        memo: &mut FitMemo<'n>,
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
            // PodTopologySpread.
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
                self.resources_fit(node, false, memo)?;
                self.volumes.check(node)?;
                if !self.spread.passes(node) {
                    return Err(Reason::TopologySpreadLabel.into());
                }
            }
            // kubelet admission (`AdmissionCheck`): resources, node
            // affinity/selector, node name; then NoExecute taints. It never
            // looks at topology spread, nor at volume topology.
            Some(name) => {
                if !node_name::passes(node, Some(name)) {
                    return Err(Reason::NodeName.into());
                }
                self.resources_fit(node, true, memo)?;
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

    /// The kubelet's gates on the node's runtime, for a node that passes
    /// every scheduler filter.
    pub(crate) fn kubelet_gates<'n>(&self, node: &Node<'n>) -> Result<(), Unfit<'n>> {
        // Last: the scheduler (or the kubelet's admission) would take the
        // node, and the kubelet would then refuse the pod (its admission
        // reads the CRI's features), or the sandbox would fail on it.
        self.features
            .passes(node)
            .map_err(|f| Reason::Runtime(Lack::Unsupported(f)))?;
        if let Some(handler) = &self.handler {
            handler.passes(node).map_err(Reason::Runtime)?;
        }
        Ok(())
    }

    fn resources_fit<'n>(
        &self,
        node: &Node<'n>,
        kubelet: bool,
        memo: &mut FitMemo<'n>,
    ) -> Result<(), Unfit<'n>> {
        // One memo per scan serves one path: `kubelet` is fixed per pod.
        match self.resources.shortfalls_memo(node, kubelet, memo) {
            Ok(None) => Ok(()),
            Ok(Some(unfit)) => Err(unfit),
            Err(why) => Err(Reason::Unreadable(why.into()).into()),
        }
    }

    /// The scheduler's half of [`find_feasible`](Self::find_feasible): each
    /// node of the list that passes every scheduler filter goes to
    /// `candidate`, in list order, until it says stop; the kubelet's gates
    /// are the caller's. `Ok(None)` once a candidate was offered, else why
    /// no node passes, exactly as `find_feasible` says it (a node that
    /// fails a scheduler filter never reaches a kubelet gate).
    pub fn scan_candidates<'n>(
        &self,
        node_list: &'n [u8],
        mut candidate: impl FnMut(&Node<'n>) -> ControlFlow<()>,
    ) -> Result<Option<Feasibility<'n>>, String> {
        let mut memo = FitMemo::default();
        let mut diagnosis = Diagnosis::default();
        let mut offered = false;
        let mut unreadable = None;
        scan_node_list(
            node_list,
            KeyFilter::Only(&self.label_keys),
            |node| match self.scheduler_filters(node, &mut memo) {
                Ok(()) => {
                    offered = true;
                    candidate(node)
                }
                Err(Unfit {
                    first: Reason::Unreadable(why),
                    ..
                }) => {
                    unreadable = Some(why);
                    ControlFlow::Break(())
                }
                Err(_) if offered => ControlFlow::Continue(()),
                Err(unfit) => {
                    diagnosis.record(unfit);
                    ControlFlow::Continue(())
                }
            },
        )?;
        if let Some(why) = unreadable {
            return Err(format!(
                "the node list from the cluster is not a valid NodeList: {why}"
            ));
        }
        // A pod with `spec.nodeName` reads its node by name, never a list.
        Ok((!offered).then_some(Feasibility::NoneFits {
            diagnosis,
            bound_elsewhere: None,
        }))
    }

    /// Whether any node of the host's NodeList can run the pod; if none can,
    /// why. Nodes are checked as they are parsed. Without a kubelet gate,
    /// parsing stops at the first node that fits: the diagnosis is only
    /// needed when none does. With one (the handler check, a CRI feature),
    /// the whole list is read, to find the nodes the scheduler may pick
    /// whose runtime cannot start the pod.
    pub fn find_feasible<'n>(&self, node_list: &'n [u8]) -> Result<Feasibility<'n>, String> {
        let mut tally = Tally::new(self);
        let mut named_node_seen = false;
        let labels = KeyFilter::Only(&self.label_keys);
        scan_node_list(node_list, labels, |node| {
            named_node_seen |= self.node_name.as_deref() == Some(node.name());
            tally.judge(node)
        })?;
        // `spec.nodeName` names a node that is not in the kata list.
        let bound_elsewhere = self.node_name.clone().filter(|_| !named_node_seen);
        tally
            .finish(bound_elsewhere)
            .map_err(|why| format!("the node list from the cluster is not a valid NodeList: {why}"))
    }
}

/// The nodes that pass every scheduler filter (the scheduler may pick any
/// of them) but whose runtime cannot start the pod, found while another
/// node can: the pod still gets Kata, with a warning naming them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Broken<'n> {
    /// Nodes that pass every scheduler filter, broken ones included, among
    /// those judged.
    pub pickable: usize,
    /// Whether every node the scheduler may pick was judged; else only the
    /// candidates met until one could start the pod, and there may be more
    /// broken nodes.
    pub whole: bool,
    /// How many broken nodes, by reason.
    pub lacks: BTreeMap<Lack, usize>,
    /// The first [`Broken::NAMED`] broken node names in sorted order, so
    /// that the warning does not depend on the order of the list.
    pub names: Vec<Cow<'n, str>>,
}

impl<'n> Broken<'n> {
    pub const NAMED: usize = 5;

    /// Records a node that passes every scheduler filter and fails a
    /// kubelet gate (the runtime handler, or the CRI's features).
    pub fn record(&mut self, name: Cow<'n, str>, lack: &Lack) {
        self.pickable += 1;
        match self.lacks.get_mut(lack) {
            Some(count) => *count += 1,
            None => {
                self.lacks.insert(lack.clone(), 1);
            }
        }
        let at = self.names.partition_point(|n| n.as_ref() < name.as_ref());
        if at < Self::NAMED {
            self.names.insert(at, name);
            self.names.truncate(Self::NAMED);
        }
    }

    /// The same nodes, with their names copied out of the node list.
    pub fn into_owned(self) -> Broken<'static> {
        Broken {
            pickable: self.pickable,
            whole: self.whole,
            lacks: self.lacks,
            names: (self.names.into_iter())
                .map(|n| Cow::Owned(n.into_owned()))
                .collect(),
        }
    }

    /// How many broken nodes.
    pub fn count(&self) -> usize {
        self.lacks.values().sum()
    }

    pub(crate) fn found(self) -> Option<Self> {
        (self.count() > 0).then_some(self)
    }
}

impl std::fmt::Display for Broken<'_> {
    /// `1 of 2 kata nodes that can take this pod do not report runtime
    /// handler "kata-qemu" (kata-broken)`; when only the nodes met were
    /// judged, `at least 1 kata node(s) that can take this pod …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.count();
        match self.whole {
            true => write!(
                f,
                "{count} of {} kata nodes that can take this pod ",
                self.pickable
            )?,
            false => write!(f, "at least {count} kata node(s) that can take this pod ")?,
        }
        match self.lacks.keys().next() {
            Some(lack) if self.lacks.len() == 1 => write!(f, "{lack}")?,
            _ => {
                f.write_str("cannot start it:")?;
                for (i, (lack, n)) in self.lacks.iter().enumerate() {
                    write!(f, "{} {n} node(s) {lack}", if i == 0 { "" } else { "," })?;
                }
            }
        }
        let names: Vec<&str> = self.names.iter().map(|n| n.as_ref()).collect();
        write!(f, " ({}", names.join(", "))?;
        if count > names.len() {
            write!(f, ", and {} more", count - names.len())?;
        }
        f.write_str(")")
    }
}

#[cfg(test)]
pub(crate) mod test_support {
    use crate::node::Node;

    /// A node from `{"name", "labels", "taints", "unschedulable",
    /// "allocatable"}`; leaked so that tests can hold borrowed nodes
    /// without ceremony.
    pub fn node(v: serde_json::Value) -> Node<'static> {
        let mut full = serde_json::json!({
            "metadata": {"name": v["name"], "labels": v.get("labels").cloned().unwrap_or_default()},
            "spec": {"taints": v.get("taints").cloned().unwrap_or_default(),
                     "unschedulable": v.get("unschedulable").cloned().unwrap_or(false.into())},
        });
        if let Some(allocatable) = v.get("allocatable") {
            full["status"] = serde_json::json!({ "allocatable": allocatable });
        }
        let text: &'static str = Box::leak(full.to_string().into_boxed_str());
        crate::node::parse_node(text.as_bytes(), crate::node::KeyFilter::All).expect("test node")
    }
}

#[cfg(test)]
mod tests {
    use super::test_support::node;
    use super::*;
    use serde_json::json;

    fn constraints(pod_spec: serde_json::Value) -> Constraints {
        let selector: BTreeMap<String, String> =
            serde_json::from_value(pod_spec.get("nodeSelector").cloned().unwrap_or(json!({})))
                .unwrap();
        let required: Option<NodeSelector> = serde_json::from_value(
            pod_spec
                .pointer("/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution")
                .cloned()
                .unwrap_or_default(),
        )
        .unwrap();
        let tolerations: Vec<Toleration> =
            serde_json::from_value(pod_spec.get("tolerations").cloned().unwrap_or(json!([])))
                .unwrap();
        Constraints::new(
            pod_spec["nodeName"].as_str(),
            &selector,
            required.as_ref(),
            tolerations,
        )
    }

    fn master() -> Node<'static> {
        node(
            json!({"name": "master", "labels": {"node-role.kubernetes.io/master": ""},
                    "taints": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]}),
        )
    }

    #[test]
    fn the_first_failing_filter_is_reported_in_scheduler_order() {
        let n = node(json!({"name": "n", "unschedulable": true, "labels": {},
                            "taints": [{"key": "t", "value": "v", "effect": "NoSchedule"}]}));
        let c = constraints(json!({"nodeSelector": {"x": "y"}}));
        assert_eq!(c.check(&n), Err(Reason::Unschedulable.into()));
        let c = constraints(json!({"nodeSelector": {"x": "y"},
            "tolerations": [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists"}]}));
        assert_eq!(c.check(&n), Err(Reason::taint("t", "v").into()));
        let c = constraints(
            json!({"nodeSelector": {"x": "y"}, "tolerations": [{"operator": "Exists"}]}),
        );
        assert_eq!(c.check(&n), Err(Reason::NodeAffinity.into()));
        let c = constraints(json!({"tolerations": [{"operator": "Exists"}]}));
        assert_eq!(c.check(&n), Ok(()));
    }

    #[test]
    fn the_master_pinned_pod_fits_the_master_only() {
        let pod = constraints(
            json!({"nodeSelector": {"node-role.kubernetes.io/master": ""},
            "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}]}),
        );
        let worker =
            node(json!({"name": "w1", "labels": {"katacontainers.io/kata-runtime": "true"}}));
        assert_eq!(pod.check(&master()), Ok(()));
        assert_eq!(pod.check(&worker), Err(Reason::NodeAffinity.into()));
        let plain = constraints(json!({}));
        assert_eq!(plain.check(&worker), Ok(()));
        assert_eq!(
            plain.check(&master()),
            Err(Reason::taint("node-role.kubernetes.io/master", "").into())
        );
    }

    #[test]
    fn prefer_no_schedule_never_blocks() {
        let n =
            node(json!({"name": "n", "taints": [{"key": "soft", "effect": "PreferNoSchedule"}]}));
        assert_eq!(constraints(json!({})).check(&n), Ok(()));
    }

    #[test]
    fn pods_with_node_name_are_judged_like_the_kubelet() {
        let tainted = node(
            json!({"name": "w1", "unschedulable": true, "labels": {"zone": "a"},
            "taints": [{"key": "ns", "effect": "NoSchedule"}]}),
        );
        let bound = constraints(json!({"nodeName": "w1"}));
        assert_eq!(
            bound.check(&tainted),
            Ok(()),
            "kubelet ignores cordons and NoSchedule taints"
        );
        let other = node(json!({"name": "w2"}));
        assert_eq!(bound.check(&other), Err(Reason::NodeName.into()));
        let evicting = node(
            json!({"name": "w1", "taints": [{"key": "gone", "value": "x", "effect": "NoExecute"}]}),
        );
        assert_eq!(
            bound.check(&evicting),
            Err(Reason::taint("gone", "x").into())
        );
        let wrong_zone = constraints(json!({"nodeName": "w1", "nodeSelector": {"zone": "b"}}));
        assert_eq!(
            wrong_zone.check(&tainted),
            Err(Reason::NodeAffinity.into()),
            "kubelet checks the selector"
        );
    }

    #[test]
    fn find_feasible_stops_at_the_first_fit_and_diagnoses_otherwise() {
        let list = |tail: &str| {
            format!(
                r#"{{"kind":"NodeList","items":[
                {{"metadata":{{"name":"master","labels":{{"node-role.kubernetes.io/master":""}}}},
                  "spec":{{"taints":[{{"key":"node-role.kubernetes.io/master","effect":"NoSchedule"}}]}}}},
                {{"metadata":{{"name":"w1"}}}},
                {{"metadata":{{"name":"w2"}}}}{tail}"#
            )
        };
        let complete = list("]}");
        let plain = constraints(json!({}));
        assert_eq!(
            plain.find_feasible(complete.as_bytes()),
            Ok(Feasibility::Fits { broken: None })
        );
        // Parsing stops at w1: what follows it is never read.
        let truncated = list(", garbage");
        assert_eq!(
            plain.find_feasible(truncated.as_bytes()),
            Ok(Feasibility::Fits { broken: None })
        );
        let pinned = constraints(json!({"nodeSelector": {"node-role.kubernetes.io/master": ""}}));
        let Ok(Feasibility::NoneFits {
            diagnosis,
            bound_elsewhere: None,
        }) = pinned.find_feasible(complete.as_bytes())
        else {
            panic!("expected no fit")
        };
        assert_eq!(
            diagnosis.to_string(),
            "0/3 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector, \
             1 node(s) had untolerated taint {node-role.kubernetes.io/master: }"
        );
        // Without a fit, the whole list must be valid.
        assert!(pinned.find_feasible(truncated.as_bytes()).is_err());
        let bound = constraints(json!({"nodeName": "elsewhere"}));
        assert!(matches!(
            bound.find_feasible(complete.as_bytes()),
            Ok(Feasibility::NoneFits { bound_elsewhere: Some(name), .. }) if name == "elsewhere"
        ));
    }

    #[test]
    fn broken_nodes_are_counted_by_reason_and_named_in_order() {
        let needs = HandlerNeeds {
            handler: "kata-qemu".into(),
            required: true,
            features: Default::default(),
        };
        let list = r#"{"kind":"NodeList","items":[
            {"metadata":{"name":"old-kubelet"}},
            {"metadata":{"name":"good"},"status":{"runtimeHandlers":[{"name":"kata-qemu"}]}},
            {"metadata":{"name":"k3s"},"status":{"runtimeHandlers":[{"name":"runc"}]}},
            {"metadata":{"name":"cordoned"},"spec":{"unschedulable":true},"status":{"runtimeHandlers":[]}}]}"#;
        let c = constraints(json!({})).with_handler(Some(needs));
        let Ok(Feasibility::Fits {
            broken: Some(broken),
        }) = c.find_feasible(list.as_bytes())
        else {
            panic!("expected a fit with broken nodes")
        };
        assert_eq!(
            broken.to_string(),
            "2 of 3 kata nodes that can take this pod cannot start it: 1 node(s) do not report runtime \
             handler \"kata-qemu\", 1 node(s) report no runtime handlers (k3s, old-kubelet)"
        );
        // Without the check the scan stops at the first fit, as before.
        let truncated = &list[..list.find("{\"metadata\":{\"name\":\"k3s\"").unwrap()];
        assert!(
            c.find_feasible(truncated.as_bytes()).is_err(),
            "reads the whole list"
        );
        let off = constraints(json!({})).with_handler(None);
        assert_eq!(
            off.find_feasible(truncated.as_bytes()),
            Ok(Feasibility::Fits { broken: None })
        );
    }

    #[test]
    fn reasons_read_like_the_scheduler() {
        assert_eq!(
            Reason::Unschedulable.to_string(),
            "node(s) were unschedulable"
        );
        assert_eq!(
            Reason::NodeName.to_string(),
            "node(s) didn't match the requested node name"
        );
        assert_eq!(
            Reason::NodeAffinity.to_string(),
            "node(s) didn't match Pod's node affinity/selector"
        );
        assert_eq!(
            Reason::taint("k", "").to_string(),
            "node(s) had untolerated taint {k: }"
        );
    }
}
