//! What a decision is: the pod given a class, left as it is (and why), or
//! refused; data only, worded by `explain.rs`.

use crate::scheduling::Broken;
use crate::settings::Outcome;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Admit the pod with `spec.runtimeClassName: class`. `broken`: nodes
    /// the scheduler may pick too, whose runtime cannot start the pod.
    /// `gates`: the pod's scheduling gates, which the user is told about.
    /// `passed`: the classes tried before `class`, each with why no kata
    /// node can run the pod with it. `ranked`: the pod had several classes
    /// to choose from, so the warning names the one it got.
    Mutate {
        class: String,
        broken: Option<Broken<'static>>,
        gates: Vec<String>,
        passed: Vec<(String, Findings)>,
        ranked: bool,
    },
    /// Admit the pod as it is.
    Unchanged(Unchanged),
    /// Refuse the request.
    Reject(Refusal),
}

/// Why a pod is admitted as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unchanged {
    /// Not a Pod CREATE (the request, described).
    NotEvaluated(String),
    /// `runtimeClassName: ""`, left for the API server to refuse.
    EmptyClassName,
    /// The pod names its class itself. `ours`: the policy's own class.
    NamedClass { class: String, ours: bool },
    /// The pod cannot get Kata (why, for the decision's code), and the
    /// outcome setting says accept.
    NotAssigned(Left, Findings),
}

/// Why an admitted pod goes without Kata, as the decision's code tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Left {
    /// No kata node can run it, or the cluster could not be asked.
    Because(Cause),
    /// It uses a feature Kata cannot run (`skipPodsUsing`).
    Incompatible,
    /// Not the policy's to judge: a mirror pod, a pod without a spec.
    NotJudged,
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request cannot be read (HTTP 400).
    BadRequest(String),
    /// The response cannot be made (HTTP 500).
    Internal(String),
    /// The pod names a class the restriction does not allow: neither one
    /// the policy assigns (`configured`: `runtimeClassName`,
    /// `fallbackRuntimeClasses`, `runtimeClassesByResource`'s) nor one of
    /// `allowedRuntimeClasses` (`listed`, without the configured ones).
    NotAllowed {
        class: String,
        configured: Vec<String>,
        listed: Vec<String>,
    },
    /// The pod cannot get Kata, and the outcome setting of the cause says
    /// reject.
    CannotAssign(Cause, Findings),
    /// The pod uses a feature Kata cannot run, under `incompatiblePod: reject`.
    KataRequired(Findings),
}

/// Why a pod cannot get Kata: whole findings, each one sentence, the first
/// one first. Never cut apart: a finding may contain any text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings(pub Vec<String>);

impl Findings {
    pub fn one(finding: impl Into<String>) -> Self {
        Findings(vec![finding.into()])
    }
}

/// Which outcome setting applies to a pod that cannot get Kata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// No kata node can run the pod (`noFeasibleNode`).
    NoFeasibleNode,
    /// The cluster could not be asked (`lookupFailure`).
    LookupFailure,
}

impl Cause {
    /// The setting that says what to do.
    pub fn setting(self) -> &'static str {
        match self {
            Cause::NoFeasibleNode => "noFeasibleNode",
            Cause::LookupFailure => "lookupFailure",
        }
    }
}

impl Decision {
    pub fn bad_request(why: impl Into<String>) -> Decision {
        Decision::Reject(Refusal::BadRequest(why.into()))
    }

    pub(super) fn not_assigned(outcome: Outcome, cause: Cause, findings: Findings) -> Decision {
        match outcome {
            Outcome::Accept => {
                Decision::Unchanged(Unchanged::NotAssigned(Left::Because(cause), findings))
            }
            Outcome::Reject => Decision::Reject(Refusal::CannotAssign(cause, findings)),
        }
    }
}
