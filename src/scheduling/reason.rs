//! The words of a verdict on one node, in kube-scheduler's (and the
//! kubelet's) terms: why a node cannot run the pod ([`Reason`], [`Unfit`]),
//! why its runtime cannot start it ([`Lack`]), and the nodes the scheduler
//! may pick that would fail the pod ([`Broken`]). Every filter and gate
//! speaks them; the diagnosis and the decision only count and show them.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::node::{CriFeature, HandlerFeature};

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
    /// A required pod affinity term finds no matching pod in the node's
    /// domain, or the node lacks its topology key (InterPodAffinity).
    PodAffinity,
    /// A required pod anti-affinity term finds a matching pod in the
    /// node's domain.
    PodAntiAffinity,
    /// An existing pod's required anti-affinity matches the pod in the
    /// node's domain.
    ExistingPodsAntiAffinity,
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
            Reason::PodAffinity => f.write_str("node(s) didn't match pod affinity rules"),
            Reason::PodAntiAffinity => f.write_str("node(s) didn't match pod anti-affinity rules"),
            Reason::ExistingPodsAntiAffinity => {
                f.write_str("node(s) didn't satisfy existing pods anti-affinity rules")
            }
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

/// Why a node's runtime cannot start the pod.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Lack {
    /// The node's CRI does not report a feature the kubelet's admission
    /// needs (`node_features`); checked before the handler.
    CriFeature(CriFeature),
    /// The node reports handlers, and not the RuntimeClass's.
    NotReported(Arc<str>),
    /// The node reports no handlers at all, and one is needed.
    NothingReported,
    /// The node lists the handler without a feature the pod needs.
    HandlerFeature(Arc<str>, HandlerFeature),
}

impl std::fmt::Display for Lack {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lack::CriFeature(feature) => write!(f, "do not support {feature}"),
            Lack::NotReported(handler) => {
                write!(f, "do not report runtime handler {handler:?}")
            }
            Lack::NothingReported => f.write_str("report no runtime handlers"),
            Lack::HandlerFeature(handler, feature) => write!(
                f,
                "report runtime handler {handler:?} without features.{} (the pod sets {})",
                feature.field(),
                feature.asked_by()
            ),
        }
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
        self.record_many([name], 1, lack);
    }

    /// Records `count` such nodes at once (the members of a node shape),
    /// of which `names` are the first, sorted.
    pub fn record_many(
        &mut self,
        names: impl IntoIterator<Item = Cow<'n, str>>,
        count: usize,
        lack: &Lack,
    ) {
        self.pickable += count;
        *self.lacks.entry(lack.clone()).or_default() += count;
        for name in names {
            let at = self.names.partition_point(|n| n.as_ref() < name.as_ref());
            if at < Self::NAMED {
                self.names.insert(at, name);
                self.names.truncate(Self::NAMED);
            }
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
