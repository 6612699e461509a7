//! What the kubelet checks when it admits the pod on a node, which the
//! scheduler never reads: the runtime handler the RuntimeClass names and
//! its features (`handler.rs`), and the CRI's own features
//! (`cri_features.rs`). A node that fails here is one the scheduler may
//! still pick: the pod is placed and never starts.
//!
//! [`KubeletNeeds`] is built once per pod and class, and says which node
//! query it needs ([`KubeletNeeds::masks`]). A new gate is a file here, a
//! pod fact (`pod.rs`) and a reader arm (`node.rs`).

pub mod cri_features;
pub mod handler;

use crate::cluster::NodeMasks;
use crate::node::{HandlerFeature, HandlerFeatures, Node};
use crate::pod::PodFacts;
use crate::scheduling::{Gate, Lack, Stop, Verdict};
use crate::settings::HandlerCheck;
pub use cri_features::CriNeeds;
pub use handler::HandlerNeeds;

/// What the pod needs of a node's runtime, with one class.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KubeletNeeds {
    /// The runtime-handler gates; `None` with `runtimeHandlerCheck: off`.
    handler: Option<HandlerNeeds>,
    /// The CRI's features, whatever `runtimeHandlerCheck` says.
    cri: CriNeeds,
}

impl KubeletNeeds {
    /// The needs of `pod` with a class whose `handler` is given, as
    /// `runtimeHandlerCheck` asks them to be checked.
    pub fn new(pod: &PodFacts, handler: &str, check: HandlerCheck) -> Self {
        let required = match check {
            HandlerCheck::Off => None,
            HandlerCheck::Auto => Some(false),
            HandlerCheck::Required => Some(true),
        };
        KubeletNeeds {
            handler: required.map(|required| HandlerNeeds {
                handler: handler.into(),
                required,
                // Reaches here only when `userNamespaces` is not in
                // skipPodsUsing.
                features: HandlerFeatures::default()
                    .with(
                        HandlerFeature::UserNamespaces,
                        pod.runtime.host_users == Some(false),
                    )
                    .with(
                        HandlerFeature::RecursiveReadOnlyMounts,
                        pod.recursive_read_only,
                    ),
            }),
            cri: CriNeeds::of(pod),
        }
    }

    /// Needs given part by part (tests, benchmarks).
    pub fn of(handler: Option<HandlerNeeds>, cri: CriNeeds) -> Self {
        KubeletNeeds { handler, cri }
    }

    /// Whether a node may pass every scheduler filter and still fail here.
    pub fn any(&self) -> bool {
        self.handler.is_some() || self.cri.any()
    }

    /// How far a pass reads: with a gate, every node, to name those the
    /// scheduler may pick and the pod would fail on ([`crate::scheduling::Broken`]).
    pub fn stop(&self) -> Stop {
        match self.any() {
            true => Stop::WholeList,
            false => Stop::FirstFit,
        }
    }

    /// The fixed node query for these needs: the handlers' names for every
    /// pod, the features (the handlers' and the CRI's `status.features`)
    /// only for the rare pods that depend on one. A pod that needs a CRI
    /// feature reads it whatever `runtimeHandlerCheck` says, through the
    /// same second query: never a query per pod shape.
    pub fn masks(&self) -> NodeMasks {
        match &self.handler {
            _ if self.cri.any() => NodeMasks::HandlerFeatures,
            None => NodeMasks::Plain,
            Some(needs) if needs.needs_features() => NodeMasks::HandlerFeatures,
            Some(_) => NodeMasks::HandlerNames,
        }
    }

    /// `Ok` when the node's runtime can start the pod, as far as the node
    /// reports it: the CRI's features first, then the handler.
    pub fn check(&self, node: &Node) -> Result<(), Lack> {
        self.cri.passes(node).map_err(Lack::CriFeature)?;
        match &self.handler {
            Some(handler) => handler.passes(node),
            None => Ok(()),
        }
    }
}

impl<'n> Gate<'n> for &KubeletNeeds {
    fn admit(&mut self, node: &Node<'n>) -> Verdict {
        match self.check(node) {
            Ok(()) => Verdict::Starts,
            Err(lack) => Verdict::Lacks(lack),
        }
    }
}
