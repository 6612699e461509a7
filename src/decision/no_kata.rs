//! Why a class cannot be given to the pod: [`NoKata`], and every sentence
//! the decision writes about it, in one place. The scheduler's own words
//! (`0/N kata nodes …`, each filter's reason) are `scheduling`'s; the
//! explanations around them (`explain.rs`) are made from the decision.

use super::answer::{Cause, Findings};
use crate::cluster::{LookupError, LookupErrorKind, Subject};
use crate::pod_affinity::Unresolved as AffinityUnresolved;
use crate::scheduling::Diagnosis;
use crate::settings::KataNodeSelector;
use crate::volumes::Unresolved;

/// Why a class cannot be given to the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoKata {
    pub cause: Cause,
    pub findings: Findings,
}

/// What policy-server needs to read nodes and RuntimeClasses. The fix comes
/// before the host's (long) text so that it survives the 255-byte cut of
/// the warning.
const GRANT_NODES: &str = "grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, \
     and list both in contextAwareResources";

/// What policy-server needs for the inter-pod affinity check; the setting
/// first.
const GRANT_PODS: &str =
    "set checkPodAffinity: false or grant policy-server list/watch on pods and namespaces";

/// What policy-server needs for the volume checks; the setting first.
const GRANT_VOLUMES: &str = "set checkVolumes: false or grant policy-server get on persistentvolumeclaims, \
     persistentvolumes, storageclasses.storage.k8s.io and list/watch on the last two";

impl NoKata {
    pub fn new(cause: Cause, finding: impl Into<String>) -> Self {
        NoKata {
            cause,
            findings: Findings::one(finding),
        }
    }

    /// The cluster answered something the policy cannot read.
    pub fn unreadable(why: impl Into<String>) -> Self {
        NoKata::new(Cause::LookupFailure, why)
    }

    /// The pod's own constraints conflict with the class's.
    pub fn conflict(why: impl Into<String>) -> Self {
        NoKata::new(Cause::NoFeasibleNode, why)
    }

    pub fn missing_class(class: &str) -> Self {
        NoKata::conflict(format!("RuntimeClass {class:?} does not exist"))
    }

    /// A class ranked after one that could not be judged.
    pub fn not_tried(after: &str) -> Self {
        NoKata::unreadable(format!(
            "not tried: ranked after {after}, which could not be judged"
        ))
    }

    /// A host call about nodes or RuntimeClasses failed.
    pub fn lookup_failed(what: &str, e: &LookupError) -> Self {
        let hint = match e.kind {
            LookupErrorKind::Forbidden => format!(" (forbidden: {GRANT_NODES})"),
            LookupErrorKind::NotFound | LookupErrorKind::Replay | LookupErrorKind::Failed => {
                String::new()
            }
        };
        NoKata::unreadable(format!("{what}{hint}: {}", e.message))
    }

    /// The access question itself failed.
    pub fn access_unknown(subject: &Subject, verb: &str, e: &LookupError) -> Self {
        // A replay's miss is no missing grant: no RBAC hint, and its
        // explanation keeps its place in the 255-byte warning.
        let hint = match e.kind {
            LookupErrorKind::Replay => "",
            _ => "; policy-server needs create on subjectaccessreviews.authorization.k8s.io",
        };
        NoKata::unreadable(format!(
            "cannot check whether {} may {verb} nodes (kubernetes/can_i{hint}): {}",
            subject.user, e.message
        ))
    }

    /// policy-server may not make the node list.
    pub fn access_denied(subject: &Subject, denied: &[&str]) -> Self {
        NoKata::unreadable(format!(
            "cannot list kata nodes (forbidden: {} may not {} nodes; {GRANT_NODES})",
            subject.user,
            denied.join(", ")
        ))
    }

    /// Why a volume check could not be made.
    pub fn volumes(user: &str, unresolved: Unresolved) -> Self {
        match unresolved {
            Unresolved::Pod(why) => NoKata::conflict(why),
            Unresolved::Denied { resource, verbs } => NoKata::unreadable(format!(
                "cannot list {resource} (forbidden: {user} may not {} {resource}; {GRANT_VOLUMES})",
                verbs.join(", ")
            )),
            Unresolved::Lookup { what, error } => {
                let hint = match error.kind {
                    LookupErrorKind::Forbidden => format!(" (forbidden: {GRANT_VOLUMES})"),
                    LookupErrorKind::NotFound
                    | LookupErrorKind::Replay
                    | LookupErrorKind::Failed => String::new(),
                };
                NoKata::unreadable(format!("{what}{hint}: {}", error.message))
            }
            Unresolved::Invalid(why) => NoKata::unreadable(why),
        }
    }

    /// Why the inter-pod affinity check could not be made.
    pub fn pod_affinity(user: &str, unresolved: AffinityUnresolved) -> Self {
        match unresolved {
            AffinityUnresolved::Pod(why) => NoKata::conflict(why),
            AffinityUnresolved::Denied { resource, verbs } => NoKata::unreadable(format!(
                "cannot list {resource} (forbidden: {user} may not {} {resource}; {GRANT_PODS})",
                verbs.join(", ")
            )),
            AffinityUnresolved::Lookup { what, error } => {
                let hint = match error.kind {
                    LookupErrorKind::Forbidden => format!(" (forbidden: {GRANT_PODS})"),
                    LookupErrorKind::NotFound
                    | LookupErrorKind::Replay
                    | LookupErrorKind::Failed => String::new(),
                };
                NoKata::unreadable(format!("{what}{hint}: {}", error.message))
            }
            AffinityUnresolved::Invalid(why) => NoKata::unreadable(why),
        }
    }

    /// Why no listed kata node can run the pod.
    pub fn no_fit(diagnosis: &Diagnosis, selector: &KataNodeSelector) -> Self {
        let why = match diagnosis.total() {
            0 => format!(
                "no node matches kataNodeSelector {:?}",
                selector.host_selector().unwrap_or_default()
            ),
            _ => diagnosis.to_string(),
        };
        NoKata::conflict(why)
    }

    /// Why none of the nodes a pod is pinned to can run it: the diagnosis
    /// of those judged, then why each other named node does not count.
    pub fn no_pinned_fit(
        diagnosis: &Diagnosis,
        names: &[String],
        bound: bool,
        absent: Vec<String>,
    ) -> Self {
        let findings = match (diagnosis.total(), absent.is_empty()) {
            (0, _) => {
                let (pinned, how) = match bound {
                    true => ("the pod is bound to node", "spec.nodeName"),
                    false => (
                        "the pod can only run on node",
                        "required node affinity on metadata.name",
                    ),
                };
                let named = (names.iter())
                    .map(|n| format!("{n:?}"))
                    .collect::<Vec<_>>()
                    .join(", ");
                let mut absent = absent.into_iter();
                let first = absent.next().unwrap_or_default();
                std::iter::once(format!("{pinned} {named} ({how}): {first}"))
                    .chain(absent)
                    .collect()
            }
            (_, true) => vec![diagnosis.to_string()],
            (_, false) => std::iter::once(diagnosis.to_string())
                .chain(absent)
                .collect(),
        };
        NoKata {
            cause: Cause::NoFeasibleNode,
            findings: Findings(findings),
        }
    }
}

/// Why a named node does not count: it is absent, another node answered
/// for it, or it is no kata node.
pub fn absent(name: &str) -> String {
    format!("{name:?} does not exist")
}

pub fn answered_by(name: &str, other: &str) -> String {
    format!("{name:?} was answered with node {other:?}")
}

pub fn not_kata(name: &str, selector: &KataNodeSelector) -> String {
    format!(
        "{name:?} is not a kata node (it does not match kataNodeSelector {:?})",
        selector.text()
    )
}

/// A node read by name that the filters cannot read.
pub fn not_a_node(why: &str) -> NoKata {
    NoKata::unreadable(crate::node::not_a_node(why))
}
