//! The one pass over candidate nodes, as `findNodesThatFitPod` runs it: each
//! candidate goes through the scheduler's filters ([`Constraints`]), and a
//! node they take goes to a [`Gate`], the kubelet's check of its runtime.
//! The pass keeps what the decision needs: whether one node can run the
//! pod, why none can (the 0/N diagnosis), and the nodes the scheduler may
//! pick whose runtime cannot start it ([`Broken`]).
//!
//! Every path feeds it: the listed one ([`Pass::scan`], a kata NodeList
//! parsed node by node), the pinned one (nodes read by name, which only
//! narrows the candidates, as the scheduler's PreFilter does) and the
//! probed one (a gate that reads each candidate again, with its handlers).

use std::borrow::Cow;
use std::ops::ControlFlow;
use std::sync::Arc;

use super::constraints::Constraints;
use super::diagnosis::Diagnosis;
use super::node_resources_fit::FitAnswers;
use super::reason::{Broken, Lack, Reason, Unfit};
use crate::node::{KeyFilter, Node, not_a_node_list, scan_node_list};

/// When the pass stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// At the first node that can run the pod: without a kubelet gate no
    /// other node matters, and a probe stops at the first verified one.
    FirstFit,
    /// Never before the end: with a kubelet gate, every node is read to
    /// name those the scheduler may pick and the pod would fail on.
    WholeList,
}

/// What a gate says of a node the scheduler's filters take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its runtime can start the pod.
    Starts,
    /// The scheduler may pick it, and its runtime cannot start the pod.
    Lacks(Lack),
    /// Not a candidate after all (a probe's read found it changed or gone).
    Skip,
    /// The gate cannot tell: the pass stops without an answer.
    GiveUp,
}

/// The kubelet's side of the pass, after every scheduler filter.
pub trait Gate<'n> {
    fn admit(&mut self, node: &Node<'n>) -> Verdict;
}

/// A node that passes every scheduler filter starts the pod: the pass of a
/// pod without kubelet gates.
pub struct Open;

impl<'n> Gate<'n> for Open {
    fn admit(&mut self, _: &Node<'n>) -> Verdict {
        Verdict::Starts
    }
}

/// The answer of a pass.
#[derive(Debug, PartialEq, Eq)]
pub enum Feasibility<'n> {
    /// A node can run the pod. `broken`: nodes the scheduler may pick as
    /// well, whose runtime cannot start it.
    Fits { broken: Option<Broken<'n>> },
    /// No candidate can. `met`: how many passed the scheduler's filters
    /// (and then failed the gate); the diagnosis counts every candidate.
    NoneFits {
        diagnosis: Diagnosis<'n>,
        met: usize,
    },
    /// The gate gave up before an answer.
    GaveUp,
}

pub struct Pass<'c, 'n, G> {
    constraints: &'c Constraints,
    gate: G,
    stop: Stop,
    answers: FitAnswers<'n>,
    diagnosis: Diagnosis<'n>,
    broken: Broken<'n>,
    fits: bool,
    /// Candidates the scheduler's filters took, whatever the gate said.
    met: usize,
    gave_up: bool,
    /// A node whose fields the filters cannot read: the answer is broken.
    unreadable: Option<Arc<str>>,
}

impl<'c, 'n, G: Gate<'n>> Pass<'c, 'n, G> {
    pub fn new(constraints: &'c Constraints, gate: G, stop: Stop) -> Self {
        Pass {
            constraints,
            gate,
            stop,
            answers: FitAnswers::default(),
            diagnosis: Diagnosis::default(),
            // Only a pass that reads every node knows every broken one.
            broken: Broken {
                whole: stop == Stop::WholeList,
                ..Broken::default()
            },
            fits: false,
            met: 0,
            gave_up: false,
            unreadable: None,
        }
    }

    /// Judges one candidate; `Break` once the answer is known.
    pub fn offer(&mut self, node: &Node<'n>) -> ControlFlow<()> {
        self.offer_shape(node, 1, None)
    }

    /// Judges `count` nodes that every filter and gate judges as `node`
    /// (a node shape), of which `names` are the first, sorted (`None`:
    /// `node` alone).
    pub fn offer_shape(
        &mut self,
        node: &Node<'n>,
        count: usize,
        names: Option<&[String]>,
    ) -> ControlFlow<()> {
        let verdict = match self.constraints.check_with(node, &mut self.answers) {
            Ok(()) => {
                self.met += count;
                self.gate.admit(node)
            }
            Err(Unfit {
                first: Reason::Unreadable(why),
                ..
            }) => {
                self.unreadable = Some(why);
                return ControlFlow::Break(());
            }
            // Once a node fits, the diagnosis is never shown.
            Err(unfit) => {
                if !self.fits {
                    self.diagnosis.record_times(unfit, count);
                }
                return ControlFlow::Continue(());
            }
        };
        match verdict {
            Verdict::Starts => {
                self.fits = true;
                self.broken.pickable += count;
                match self.stop {
                    Stop::FirstFit => ControlFlow::Break(()),
                    Stop::WholeList => ControlFlow::Continue(()),
                }
            }
            Verdict::Lacks(lack) => {
                match names {
                    Some(names) => {
                        let names = names.iter().map(|n| Cow::Owned(n.clone()));
                        self.broken.record_many(names, count, &lack);
                    }
                    None => self.broken.record(node.metadata.name.0.clone(), &lack),
                }
                if !self.fits {
                    self.diagnosis
                        .record_times(Reason::Runtime(lack).into(), count);
                }
                ControlFlow::Continue(())
            }
            Verdict::Skip => ControlFlow::Continue(()),
            Verdict::GiveUp => {
                self.gave_up = true;
                ControlFlow::Break(())
            }
        }
    }

    /// Every node of a NodeList, parsed one by one (only the labels the
    /// filters read), until the answer is known.
    pub fn scan(mut self, node_list: &'n [u8]) -> Result<Feasibility<'n>, String> {
        let keys = self.constraints.label_keys();
        scan_node_list(node_list, KeyFilter::Only(keys), |node| self.offer(node))?;
        self.finish().map_err(|why| not_a_node_list(&why))
    }

    /// The answer, once every candidate was offered or [`offer`](Self::offer)
    /// said stop; `Err` names the unreadable field.
    pub fn finish(self) -> Result<Feasibility<'n>, Arc<str>> {
        if let Some(why) = self.unreadable {
            return Err(why);
        }
        Ok(match (self.fits, self.gave_up) {
            (true, _) => Feasibility::Fits {
                broken: self.broken.found(),
            },
            (false, true) => Feasibility::GaveUp,
            (false, false) => Feasibility::NoneFits {
                met: self.met,
                diagnosis: self.diagnosis,
            },
        })
    }
}

#[cfg(test)]
mod tests;
