//! The NodeResourcesFit filter, static: would the pod fit the node if the
//! node were empty? kube-scheduler calls a request above the node's total
//! allocatable *unresolvable*: no preemption and no waiting ever fixes it.
//!
//! Rules (`noderesources/fit.go` `fitsRequest`, `framework/types.go`): one
//! pod must fit the `pods` count; cpu is compared in milli-units, everything
//! else in units, both rounded up; a zero request is never checked; equality
//! fits; a resource the node does not list counts as 0.

use std::sync::Arc;

use super::reason::{Reason, Unfit};
use crate::node::Node;
use crate::quantity::Amount;
use crate::resources::{self, ResourceList, ResourceNames};

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
    pub fn new(requests: &ResourceList, ignored: &ResourceNames) -> ResourceFit {
        let mut checked: Vec<Request> = requests
            .iter()
            .filter(|(name, _)| resources::is_checked(name))
            .filter(|(name, _)| !(resources::is_extended(name) && ignored.contains(name)))
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

    /// Every resource the node is short of, in the scheduler's order
    /// (`None` when the pod fits). `kubelet`: judged as the kubelet admits a
    /// pod bound by `spec.nodeName`, which drops extended resources the node
    /// does not list at all (`removeMissingExtendedResources`). An
    /// allocatable value that does not parse is an error naming the node.
    pub fn shortfalls<'n>(&self, node: &Node, kubelet: bool) -> Result<Option<Unfit<'n>>, String> {
        if !node.allocatable.listed() {
            return Ok(None);
        }
        // One pass over the node's entries; per request, whether the node
        // lists it and whether it is short (bit i for request i; requests
        // past the 64th, which no real pod has, are looked up one by one).
        let mut too_many_pods = false;
        let (mut listed, mut short) = (0u64, 0u64);
        let index = |name: &[u8]| {
            self.requests
                .iter()
                .take(64)
                .position(|r| r.name.as_bytes() == name)
        };
        let wanted = |name: &[u8]| name == resources::PODS.as_bytes() || index(name).is_some();
        node.allocatable.for_each(wanted, |name, text| {
            let amount = parse_allocatable(node, name, text)?;
            match index(name) {
                Some(i) => {
                    listed |= 1 << i;
                    if self
                        .requests
                        .get(i)
                        .is_some_and(|r| r.amount > r.available(amount))
                    {
                        short |= 1 << i;
                    } else {
                        short &= !(1 << i);
                    }
                }
                None => too_many_pods = amount.units < 1,
            }
            Ok(())
        })?;
        let mut reasons = too_many_pods.then_some(Reason::TooManyPods).into_iter();
        let mut unfit: Option<Unfit<'n>> = reasons.next().map(Unfit::from);
        for (i, request) in self.requests.iter().enumerate() {
            let is_short = if i < 64 {
                if listed & (1 << i) != 0 {
                    short & (1 << i) != 0
                } else {
                    !(kubelet && request.extended) && request.amount > 0
                }
            } else {
                self.beyond_64(node, request, kubelet)?
            };
            if is_short {
                let reason = Reason::Insufficient(request.name.clone());
                match &mut unfit {
                    Some(u) => u.more.push(reason),
                    None => unfit = Some(reason.into()),
                }
            }
        }
        Ok(unfit)
    }

    /// [`shortfalls`](Self::shortfalls), remembering the answers for the
    /// last few allocatable texts: the nodes of one node group report the
    /// same allocatable byte for byte, so a long list has few distinct ones,
    /// and comparing the text costs less than reading it (BENCHMARKS.md).
    pub fn shortfalls_with<'n>(
        &self,
        node: &Node<'n>,
        kubelet: bool,
        answers: &mut FitAnswers<'n>,
    ) -> Result<Option<Unfit<'n>>, String> {
        let Some(raw) = node.allocatable.raw() else {
            return Ok(None);
        };
        if let Some((_, answer)) = answers.entries.iter().find(|(text, _)| *text == raw) {
            return Ok(answer.clone());
        }
        // Errors name the node: never remembered.
        let answer = self.shortfalls(node, kubelet)?;
        answers.remember(raw, answer.clone());
        Ok(answer)
    }

    /// The slow path for a request past the 64th: its own pass.
    fn beyond_64(&self, node: &Node, request: &Request, kubelet: bool) -> Result<bool, String> {
        let mut found = None;
        let wanted = |name: &[u8]| name == request.name.as_bytes();
        node.allocatable.for_each(wanted, |name, text| {
            found = Some(parse_allocatable(node, name, text)?);
            Ok(())
        })?;
        Ok(match found {
            Some(amount) => request.amount > request.available(amount),
            None => !(kubelet && request.extended) && request.amount > 0,
        })
    }
}

/// The answers of [`ResourceFit::shortfalls_with`] for one pod, one
/// filter path (scheduler or kubelet) and one node list.
#[derive(Debug, Default)]
pub struct FitAnswers<'n> {
    entries: Vec<(&'n [u8], Option<Unfit<'n>>)>,
    /// The entry to replace next, once full.
    next: usize,
}

impl<'n> FitAnswers<'n> {
    const SIZE: usize = 8;

    fn remember(&mut self, text: &'n [u8], answer: Option<Unfit<'n>>) {
        if self.entries.len() < Self::SIZE {
            self.entries.push((text, answer));
        } else if let Some(slot) = self.entries.get_mut(self.next) {
            *slot = (text, answer);
            self.next = (self.next + 1) % Self::SIZE;
        }
    }
}

fn parse_allocatable(node: &Node, name: &[u8], text: &str) -> Result<Amount, String> {
    Amount::parse(text).map_err(|e| {
        format!(
            "node {:?} has status.allocatable {}: {text:?}, which is not a valid quantity ({e})",
            node.name(),
            String::from_utf8_lossy(name)
        )
    })
}

impl Request {
    /// The node's allocatable in this request's units.
    fn available(&self, amount: Amount) -> i64 {
        if &*self.name == resources::CPU {
            amount.milli
        } else {
            amount.units
        }
    }
}

#[cfg(test)]
mod tests;
