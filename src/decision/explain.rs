//! The words of a decision: the explanation (the warning, the refusal's
//! message), the note of a gated pod, and the reasons the decision
//! annotation bounds. Made from the decision's data, never cut from text.

use super::answer::{Cause, Decision, Findings, Left, Refusal, Unchanged};
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

impl Findings {
    /// `start` then the reasons, at most `max` bytes in all: whole reasons
    /// are kept from the first, then `; and N more` says how many were left
    /// out; a first reason too long on its own is cut on a character
    /// boundary and marked with `...`. Findings are never split.
    pub fn bounded(&self, start: &str, max: usize) -> String {
        let findings = &self.0;
        let mut out = String::with_capacity(max.min(start.len() + 64));
        out.push_str(start);
        for (i, reason) in findings.iter().enumerate() {
            let separator = if i == 0 { "" } else { "; " };
            // Room is kept for the count of the reasons after this one, so
            // that stopping at the next one always fits.
            let after = findings.len() - i - 1;
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
            out.push_str(&more(findings.len() - i));
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
fn passed_over(passed: &[(String, Findings)]) -> String {
    let each: Vec<String> = (passed.iter())
        .map(|(class, reasons)| format!("{class}: {}", reasons.bounded("", MAX_EXPLANATION_BYTES)))
        .collect();
    each.join("; ")
}

impl Left {
    /// The code of a pod left without Kata for this reason, admitted or
    /// refused: as HTTP reads it, a condition the pod does not meet (412),
    /// a pod Kata cannot process (422), a service that did not answer (503),
    /// nothing to do (204).
    pub fn code(self) -> u16 {
        match self {
            Left::Because(Cause::NoFeasibleNode) => 412,
            Left::Because(Cause::LookupFailure) => 503,
            Left::Incompatible => 422,
            Left::NotJudged => 204,
        }
    }
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
            Decision::Unchanged(Unchanged::NotAssigned(_, findings)) => {
                findings.bounded(NOT_ASSIGNED, MAX_EXPLANATION_BYTES)
            }
            // A refusal says that Kata is required, and by which setting.
            Decision::Reject(Refusal::CannotAssign(cause, findings)) => findings.bounded(
                &format!(
                    "kata runtime required ({}: reject), and not assigned: ",
                    cause.setting()
                ),
                MAX_EXPLANATION_BYTES,
            ),
            Decision::Reject(Refusal::BadRequest(why) | Refusal::Internal(why)) => why.clone(),
            // Where each allowed class comes from: the configured ones are
            // allowed whatever allowedRuntimeClasses says, even when it is [].
            Decision::Reject(Refusal::NotAllowed {
                class,
                configured,
                listed,
            }) => {
                let mut allowed = format!(
                    "the configured class{} {}",
                    if configured.len() == 1 { "" } else { "es" },
                    configured.join(", ")
                );
                if !listed.is_empty() {
                    allowed.push_str(&format!("; allowedRuntimeClasses: {}", listed.join(", ")));
                }
                format!("runtimeClassName {class:?} is not allowed (allowed: {allowed})")
            }
            Decision::Reject(Refusal::KataRequired(findings)) => findings.bounded(
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

    /// The decision's code, on every answer to a Pod CREATE: a refusal's
    /// HTTP status, and, refused or admitted, the label `error_code` under
    /// which policy-server counts the evaluation
    /// (`kubewarden_policy_evaluations_total`), the one per-evaluation
    /// value it exports (`mutated` cannot tell Kata apart: with the
    /// decision annotation every admitted pod carries a patch). The API
    /// server reads no status of an admitted pod.
    pub fn code(&self) -> Option<u16> {
        Some(match self {
            Decision::Mutate { .. } => 200,
            Decision::Unchanged(Unchanged::NotEvaluated(_)) => return None,
            Decision::Unchanged(Unchanged::EmptyClassName) => Left::NotJudged.code(),
            Decision::Unchanged(Unchanged::NamedClass { .. })
            | Decision::Reject(Refusal::NotAllowed { .. }) => 403,
            Decision::Unchanged(Unchanged::NotAssigned(left, _)) => left.code(),
            Decision::Reject(Refusal::CannotAssign(cause, _)) => Left::Because(*cause).code(),
            Decision::Reject(Refusal::KataRequired(_)) => Left::Incompatible.code(),
            Decision::Reject(Refusal::BadRequest(_)) => 400,
            Decision::Reject(Refusal::Internal(_)) => 500,
        })
    }

    /// The whole reason as whole pieces, without the verdict's words ("kata
    /// runtime not assigned", "left unchanged"): for a mutation the
    /// assignment then the note, for a pod left without Kata its findings.
    pub fn findings(&self) -> Findings {
        match self {
            Decision::Mutate { .. } => Findings(
                std::iter::once(self.explanation())
                    .chain(self.note())
                    .collect(),
            ),
            Decision::Unchanged(Unchanged::NamedClass { class, .. }) => {
                Findings::one(format!("pod already sets runtimeClassName {class:?}"))
            }
            Decision::Unchanged(Unchanged::NotAssigned(_, findings))
            | Decision::Reject(
                Refusal::CannotAssign(_, findings) | Refusal::KataRequired(findings),
            ) => findings.clone(),
            other => Findings::one(other.explanation()),
        }
    }

    /// The explanation, then the note: the audit annotation's reason.
    pub fn audit_reason(&self) -> String {
        match self.note() {
            Some(note) => format!("{}; {note}", self.explanation()),
            None => self.explanation(),
        }
    }
}
