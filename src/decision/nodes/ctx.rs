//! What the node paths share: the settings they read, taken once per
//! admission, the node list and the access question before it.

use crate::cluster::{Cluster, NodeList, NodeMasks, Subject};
use crate::decision::no_kata::NoKata;
use crate::scheduling::Broken;
use crate::settings::{ConfigMapRef, KataNodeSelector, Settings};

/// A kata node can run the pod (`Some`: with nodes the scheduler may pick
/// and the pod would fail on), or why none can.
pub type Feasible = Result<Option<Broken<'static>>, NoKata>;

/// What the node paths read of the settings, taken once per admission.
pub struct NodeCtx<'s> {
    /// `kataNodeSelector`: what makes a node a kata node.
    pub selector: &'s KataNodeSelector,
    /// policy-server's account, for the access question.
    pub subject: Subject<'s>,
    /// `nodeShapes`: where the node shapes are, if anywhere.
    pub shapes: Option<&'s ConfigMapRef>,
}

impl<'s> NodeCtx<'s> {
    pub fn new(settings: &'s Settings) -> Self {
        NodeCtx {
            selector: &settings.kata_node_selector,
            subject: settings.policy_server_subject(),
            shapes: settings.node_shapes.as_ref(),
        }
    }

    /// The kata node list; ask [`may_list_nodes`](Self::may_list_nodes)
    /// first.
    pub fn list(&self, cluster: &impl Cluster, masks: NodeMasks) -> Result<NodeList, NoKata> {
        cluster
            .kata_nodes(self.selector.host_selector(), masks)
            .map_err(|e| NoKata::lookup_failed("cannot list kata nodes", &e))
    }

    /// Asks the host whether policy-server may list and watch nodes, before
    /// listing them: policy-server serves the list from a watch cache whose
    /// first load, when refused, retries forever, so a list it may not make
    /// never answers and the admission hangs past every timeout. A denied
    /// verb or a failed question is the `lookupFailure` outcome, at once.
    pub fn may_list_nodes(&self, cluster: &impl Cluster) -> Result<(), NoKata> {
        let mut denied = Vec::new();
        for verb in ["list", "watch"] {
            match cluster.may_on_nodes(&self.subject, verb) {
                Ok(access) if access.allowed => {}
                Ok(_) => denied.push(verb),
                Err(e) => return Err(NoKata::access_unknown(&self.subject, verb, &e)),
            }
        }
        match denied.is_empty() {
            true => Ok(()),
            false => Err(NoKata::access_denied(&self.subject, &denied)),
        }
    }
}
