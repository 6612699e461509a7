//! The pod's own gates, before any host call: a class it names itself, a
//! mirror pod, a feature Kata cannot run (`skipPodsUsing`), no spec.

use super::answer::{Decision, Findings, Left, Refusal, Unchanged};
use crate::incompatible;
use crate::pod::PodFacts;
use crate::settings::{Outcome, Settings};

/// The pod's own gates, before any host call: a class it names itself, a
/// mirror pod, a feature Kata cannot run, no spec: the decision, when one
/// of them decides.
pub fn judged_without_kata(pod: &PodFacts, settings: &Settings) -> Option<Decision> {
    if let Some(existing) = &pod.runtime_class_name {
        return Some(named_class(existing, pod, settings));
    }
    let left = |why: &str| {
        Decision::Unchanged(Unchanged::NotAssigned(Left::NotJudged, Findings::one(why)))
    };
    if pod.is_mirror {
        return Some(left(
            "mirror pod of a static pod (the kubelet runs it, not the API)",
        ));
    }
    if let Some(decided) = runtime_incompatible(pod, settings) {
        return Some(decided);
    }
    (!pod.has_spec).then(|| left("the pod has no spec"))
}

/// A pod that names its RuntimeClass itself keeps it, if
/// `allowedRuntimeClasses` allows it; no host call either way.
fn named_class(existing: &str, pod: &PodFacts, settings: &Settings) -> Decision {
    // Every class the policy assigns is allowed, and is "ours".
    let configured = settings.configured_classes();
    let ours = configured.contains(&existing);
    if existing.is_empty() {
        // The API server refuses "" (its RuntimeClass admission plugin:
        // "resource name may not be empty"; its validation: not a DNS
        // subdomain): giving it Kata would turn a refused pod into one that
        // runs, so it is left for the API server to refuse.
        return Decision::Unchanged(Unchanged::EmptyClassName);
    }
    if let Some(allowed) = &settings.allowed_runtime_classes {
        // Mirror pods are the kubelet's static pods: refusing the mirror
        // would only hide a pod that runs anyway.
        if !ours && !pod.is_mirror && !allowed.iter().any(|a| a == existing) {
            return Decision::Reject(Refusal::NotAllowed {
                class: existing.into(),
                configured: configured.iter().map(|c| c.to_string()).collect(),
                listed: (allowed.iter())
                    .filter(|a| !configured.contains(&a.as_str()))
                    .cloned()
                    .collect(),
            });
        }
    }
    Decision::Unchanged(Unchanged::NamedClass {
        class: existing.into(),
        ours,
    })
}

/// The runtime-compatibility check (`skipPodsUsing`): a pod using a feature
/// Kata cannot provide is left unchanged whatever `noFeasibleNode` says,
/// since the pod runs as it is, unless `incompatiblePod: reject` says that
/// every pod must run under Kata. Every finding is kept, the first first.
fn runtime_incompatible(pod: &PodFacts, settings: &Settings) -> Option<Decision> {
    if settings.skip_pods_using.is_empty() {
        return None;
    }
    let findings = incompatible::check(&pod.runtime, &settings.incompatible_rules());
    if findings.is_empty() {
        return None;
    }
    let findings = Findings(findings.iter().map(ToString::to_string).collect());
    Some(match settings.incompatible_pod {
        Outcome::Accept => {
            Decision::Unchanged(Unchanged::NotAssigned(Left::Incompatible, findings))
        }
        Outcome::Reject => Decision::Reject(Refusal::KataRequired(findings)),
    })
}
