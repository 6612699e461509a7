//! The words of a decision: the explanation (the warning, the refusal's
//! message), the note of a gated pod, and the reasons the decision
//! annotation bounds. Made from the decision's data, never cut from text.

use super::{Decision, Reasons, Refusal, Unchanged};
use crate::printable;

/// How every explanation of a pod left without Kata for a reason starts.
pub const NOT_ASSIGNED: &str = "kata runtime not assigned: ";

/// How many gates the note names; the rest are counted.
const GATES_NAMED: usize = 3;

/// The longest explanation, in bytes: the refusal's message and the audit
/// reason. Findings grow with the pod (one per hostPath socket), and the
/// pod is the tenant's: 16,000 sockets would otherwise make megabytes of
/// message and of audit log. Dozens of whole findings fit.
pub const MAX_EXPLANATION_BYTES: usize = 4096;

impl Reasons {
    /// `start` then the reasons, at most `max` bytes in all: whole reasons
    /// are kept from the first, then `; and N more` says how many were left
    /// out; a first reason too long on its own is cut on a character
    /// boundary and marked with `...`. Reasons are never split.
    pub fn bounded(&self, start: &str, max: usize) -> String {
        let reasons = &self.0;
        let mut out = String::with_capacity(max.min(start.len() + 64));
        out.push_str(start);
        for (i, reason) in reasons.iter().enumerate() {
            let separator = if i == 0 { "" } else { "; " };
            // Room is kept for the count of the reasons after this one, so
            // that stopping at the next one always fits.
            let after = reasons.len() - i - 1;
            if out.len() + separator.len() + reason.len() + more(after).len() <= max {
                out.push_str(separator);
                out.push_str(reason);
                continue;
            }
            if i == 0 {
                let tail = more(after);
                let room = max.saturating_sub(out.len() + tail.len() + "...".len());
                out.push_str(printable::prefix(reason, room));
                out.push_str("...");
                out.push_str(&tail);
                return out;
            }
            out.push_str(&more(reasons.len() - i));
            return out;
        }
        out
    }
}

fn more(left_out: usize) -> String {
    match left_out {
        0 => String::new(),
        n => format!("; and {n} more"),
    }
}

/// `kata-clh: 0/2 kata nodes can run this pod: …; kata-fc: …`: each class
/// passed over and why.
fn passed_over(passed: &[(String, Reasons)]) -> String {
    let each: Vec<String> = (passed.iter())
        .map(|(class, reasons)| format!("{class}: {}", reasons.bounded("", MAX_EXPLANATION_BYTES)))
        .collect();
    each.join("; ")
}

impl Decision {
    /// What the user reads: the warning of an admitted pod (when
    /// [`warns`](Self::warns)), the message of a refusal.
    pub fn explanation(&self) -> String {
        match self {
            Decision::Mutate {
                class,
                broken,
                passed,
                ranked,
                ..
            } => match (broken, passed.is_empty()) {
                // Names no node and no count: without broken nodes the
                // search may stop at the first fit, and the host's list
                // order is not stable.
                (None, true) => {
                    format!("runtimeClassName {class:?} assigned: a kata node can run this pod")
                }
                // The first of several classes: which one.
                (Some(broken), true) if *ranked => format!(
                    "runtimeClassName {class:?} assigned, but {broken}: if the scheduler picks one, \
                     the pod will not start"
                ),
                (Some(broken), true) => format!(
                    "kata runtime assigned, but {broken}: if the scheduler picks one, the pod will not start"
                ),
                // A later class: which, and why each earlier one was not.
                (None, false) => format!(
                    "runtimeClassName {class:?} assigned ({})",
                    passed_over(passed)
                ),
                (Some(broken), false) => format!(
                    "runtimeClassName {class:?} assigned ({}), but {broken}: if the scheduler picks one, \
                     the pod will not start",
                    passed_over(passed)
                ),
            },
            Decision::Unchanged(Unchanged::NotEvaluated(request)) => {
                format!("not evaluated: the policy acts on Pod CREATE only, this is {request}")
            }
            Decision::Unchanged(Unchanged::EmptyClassName) => {
                "runtimeClassName is \"\", which the API server refuses (a RuntimeClass name is a \
                 DNS subdomain); left unchanged: remove the field to let the policy decide"
                    .into()
            }
            Decision::Unchanged(Unchanged::NamedClass { class, .. }) => {
                format!("pod already sets runtimeClassName {class:?}; left unchanged")
            }
            Decision::Unchanged(Unchanged::NotAssigned(reasons)) => {
                reasons.bounded(NOT_ASSIGNED, MAX_EXPLANATION_BYTES)
            }
            // A refusal says that Kata is required, and by which setting.
            Decision::Reject(Refusal::NotAssigned(cause, reasons)) => reasons.bounded(
                &format!(
                    "kata runtime required ({}: reject), and not assigned: ",
                    cause.setting()
                ),
                MAX_EXPLANATION_BYTES,
            ),
            Decision::Reject(Refusal::BadRequest(why) | Refusal::Internal(why)) => why.clone(),
            Decision::Reject(Refusal::NotAllowed { class, allowed }) => format!(
                "runtimeClassName {class:?} is not allowed (allowedRuntimeClasses: {})",
                allowed.join(", ")
            ),
            Decision::Reject(Refusal::KataRequired(reasons)) => reasons.bounded(
                "kata runtime required (incompatiblePod: reject), and not assigned: ",
                MAX_EXPLANATION_BYTES,
            ),
        }
    }

    /// Whether an admitted pod's explanation is a warning: every pod left
    /// without Kata that the policy judged, and Kata given with nodes that
    /// cannot start the pod. A refusal's explanation is its message.
    pub fn warns(&self) -> bool {
        match self {
            Decision::Mutate { broken, passed, .. } => broken.is_some() || !passed.is_empty(),
            Decision::Unchanged(Unchanged::NotEvaluated(_)) => false,
            // A pod that already asked for our class has Kata.
            Decision::Unchanged(Unchanged::NamedClass { ours, .. }) => !ours,
            Decision::Unchanged(_) => true,
            Decision::Reject(_) => true,
        }
    }

    /// A second warning, of its own so that neither cuts the other: a gated
    /// pod given Kata. While it is gated, its `nodeSelector` and required
    /// node affinity may still be narrowed (Kueue injects its
    /// ResourceFlavor's `nodeLabels` when it ungates the pod), and
    /// `runtimeClassName` cannot change after creation.
    pub fn note(&self) -> Option<String> {
        let Decision::Mutate { gates, .. } = self else {
            return None;
        };
        if gates.is_empty() {
            return None;
        }
        let mut named: Vec<String> = (gates.iter().take(GATES_NAMED))
            .map(|g| format!("{g:?}"))
            .collect();
        if gates.len() > GATES_NAMED {
            named.push(format!("and {} more", gates.len() - GATES_NAMED));
        }
        Some(format!(
            "the pod has schedulingGates ({}): node constraints added before it is ungated are not checked, \
             and it stays Pending if they exclude every kata node",
            named.join(", ")
        ))
    }

    /// `mutated`, `unchanged` or `rejected`: the audit annotation's verdict.
    pub fn verdict(&self) -> &'static str {
        match self {
            Decision::Mutate { .. } => "mutated",
            Decision::Unchanged(_) => "unchanged",
            Decision::Reject(_) => "rejected",
        }
    }

    /// The HTTP code of a refusal, when it is not the default.
    pub fn code(&self) -> Option<u16> {
        match self {
            Decision::Reject(Refusal::BadRequest(_)) => Some(400),
            Decision::Reject(Refusal::Internal(_)) => Some(500),
            _ => None,
        }
    }

    /// The whole reason as whole pieces, without the verdict's words ("kata
    /// runtime not assigned", "left unchanged"): for a mutation the
    /// assignment then the note, for a pod left without Kata its findings.
    pub fn reasons(&self) -> Reasons {
        match self {
            Decision::Mutate { .. } => Reasons(
                std::iter::once(self.explanation())
                    .chain(self.note())
                    .collect(),
            ),
            Decision::Unchanged(Unchanged::NamedClass { class, .. }) => {
                Reasons::one(format!("pod already sets runtimeClassName {class:?}"))
            }
            Decision::Unchanged(Unchanged::NotAssigned(reasons))
            | Decision::Reject(Refusal::NotAssigned(_, reasons) | Refusal::KataRequired(reasons)) => {
                reasons.clone()
            }
            other => Reasons::one(other.explanation()),
        }
    }

    /// The explanation, then the note: the audit annotation's reason.
    pub fn reason(&self) -> String {
        match self.note() {
            Some(note) => format!("{}; {note}", self.explanation()),
            None => self.explanation(),
        }
    }
}
