//! The one filter pass: candidate nodes go through [`Constraints::check`]
//! one by one, and the tally keeps what the decision needs: whether one
//! fits, why none does, and the nodes the scheduler may pick whose runtime
//! cannot start the pod. Both paths feed it: the listed one (a scan of the
//! kata NodeList) and the pinned one (nodes read by name), which only
//! narrows the candidates, as kube-scheduler's PreFilter does.

use std::ops::ControlFlow;
use std::sync::Arc;

use super::node_resources_fit::FitMemo;
use super::{Broken, Constraints, Diagnosis, Feasibility, Reason, Unfit};
use crate::node::Node;

pub struct Tally<'c, 'n> {
    constraints: &'c Constraints,
    memo: FitMemo<'n>,
    diagnosis: Diagnosis<'n>,
    broken: Broken<'n>,
    fits: bool,
    /// Without a kubelet gate no other node matters once one fits.
    whole_list: bool,
    /// A node whose fields the filters cannot read: the answer is broken.
    unreadable: Option<Arc<str>>,
}

impl<'c, 'n> Tally<'c, 'n> {
    pub fn new(constraints: &'c Constraints) -> Self {
        Tally {
            constraints,
            memo: FitMemo::default(),
            diagnosis: Diagnosis::default(),
            broken: Broken {
                whole: true,
                ..Broken::default()
            },
            fits: false,
            whole_list: constraints.has_kubelet_gates(),
            unreadable: None,
        }
    }

    /// Runs the filters on one candidate; `Break` once the answer is known
    /// (a node fits and no kubelet gate needs the others, or a node is
    /// unreadable).
    pub fn judge(&mut self, node: &Node<'n>) -> ControlFlow<()> {
        match self.constraints.check_with(node, &mut self.memo) {
            Ok(()) => {
                self.fits = true;
                self.broken.pickable += 1;
                if self.whole_list {
                    ControlFlow::Continue(())
                } else {
                    ControlFlow::Break(())
                }
            }
            Err(Unfit {
                first: Reason::Unreadable(why),
                ..
            }) => {
                self.unreadable = Some(why);
                ControlFlow::Break(())
            }
            Err(Unfit {
                first: Reason::Runtime(lack),
                ..
            }) => {
                self.broken.record(node.metadata.name.0.clone(), &lack);
                if !self.fits {
                    self.diagnosis.record(Reason::Runtime(lack).into());
                }
                ControlFlow::Continue(())
            }
            // Once a node fits, the diagnosis is never shown.
            Err(_) if self.fits => ControlFlow::Continue(()),
            Err(unfit) => {
                self.diagnosis.record(unfit);
                ControlFlow::Continue(())
            }
        }
    }

    /// The answer, once every candidate was judged or [`judge`](Self::judge)
    /// said stop; `Err` names the unreadable field. `bound_elsewhere`: the
    /// pod's `spec.nodeName` when it was not among the candidates.
    pub fn finish(self, bound_elsewhere: Option<String>) -> Result<Feasibility<'n>, Arc<str>> {
        if let Some(why) = self.unreadable {
            return Err(why);
        }
        Ok(match self.fits {
            true => Feasibility::Fits {
                broken: self.broken.found(),
            },
            false => Feasibility::NoneFits {
                diagnosis: self.diagnosis,
                bound_elsewhere,
            },
        })
    }
}
