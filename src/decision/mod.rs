//! All policy logic: from a pod and a view of the cluster to a [`Decision`].
//! No I/O besides the [`Cluster`] trait, so every path is testable natively
//! with a fake cluster. A decision is data (the class, the findings, the
//! diagnosis); its wording is in [`explain`] (and, for why a class cannot be
//! given, `no_kata.rs`), and what is done with it (the mutation, the
//! annotation, the response) in `admission`.
//!
//! - `answer.rs`: what a decision is;
//! - `pod_gates.rs`: the pod's own gates, before any host call;
//! - here: the classes the pod may get, tried in order;
//! - `class.rs`: one class, from its RuntimeClass to the filter pass;
//! - `nodes/`: where the candidate nodes come from (listed, pinned, probed).

mod answer;
mod class;
pub mod explain;
mod no_kata;
mod nodes;
mod pod_gates;

use crate::cluster::{Cluster, Memo};
use crate::pod::PodFacts;
use crate::request::AdmissionRequest;
use crate::settings::Settings;
pub use answer::{Cause, Decision, Findings, Left, Refusal, Unchanged};
use class::DecisionCtx;
pub use no_kata::NoKata;

/// The decision on a Pod CREATE whose object reads as `pod`.
pub fn decide(
    pod: &PodFacts,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Decision {
    if let Some(decided) = pod_gates::judged_without_kata(pod, settings) {
        return decided;
    }
    let classes = classes_for(pod, settings);
    let ctx = DecisionCtx {
        pod,
        namespace: crate::pod::pod_namespace(request, pod),
        settings,
        nodes: nodes::NodeCtx::new(settings),
        pod_affinity: std::cell::OnceCell::new(),
    };
    let tried = match classes.len() {
        1 => try_classes(&classes, &ctx, cluster),
        // Every class judged with the same answers: one node list per
        // admission whatever the number of classes.
        _ => try_classes(&classes, &ctx, &Memo::new(cluster)),
    };
    tried.unwrap_or_else(|failed| none_can_run(settings, failed))
}

/// The classes the pod may get, in order: those of the first
/// `runtimeClassesByResource` route whose resources it requests or limits,
/// else `runtimeClassName` and `fallbackRuntimeClasses`.
fn classes_for<'s>(pod: &PodFacts, settings: &'s Settings) -> Vec<&'s str> {
    let routes = &settings.runtime_classes_by_resource;
    if !routes.is_empty() {
        let names = pod.resources.nonzero_names();
        if let Some(route) = routes
            .iter()
            .find(|r| names.iter().any(|n| r.resources.contains(n)))
        {
            return route.classes.iter().map(String::as_str).collect();
        }
    }
    settings.general_classes().collect()
}

/// The first class a kata node can run the pod with, or every class's
/// reason (`NoKata` of the one class when there is one). A class the
/// cluster could not be asked about ends the search: a later class is
/// ranked lower, and a passing error must not hand it out (a TEE class's
/// pods given the general one); `lookupFailure` decides instead.
fn try_classes(
    classes: &[&str],
    ctx: &DecisionCtx,
    cluster: &impl Cluster,
) -> Result<Decision, Vec<(String, NoKata)>> {
    let mut passed: Vec<(String, NoKata)> = Vec::new();
    for (k, class) in classes.iter().enumerate() {
        match class::feasible(class, ctx, cluster) {
            Ok(broken) => {
                return Ok(Decision::Mutate {
                    class: class.to_string(),
                    broken,
                    gates: ctx.pod.scheduling_gates.clone(),
                    passed: (passed.into_iter())
                        .map(|(class, no)| (class, no.findings))
                        .collect(),
                    ranked: classes.len() > 1,
                });
            }
            Err(no) => {
                let unknown = no.cause == Cause::LookupFailure;
                passed.push((class.to_string(), no));
                if unknown {
                    let later = classes.iter().skip(k + 1);
                    passed.extend(later.map(|later| (later.to_string(), NoKata::not_tried(class))));
                    break;
                }
            }
        }
    }
    Err(passed)
}

/// No class can be given: the outcome setting of the cause (a lookup
/// failure, which ends the search, else no feasible node), and every
/// class's findings, each led by its class when there are several or when
/// the one class is not `runtimeClassName` (a routed pod is told which
/// class it was judged for).
fn none_can_run(settings: &Settings, failed: Vec<(String, NoKata)>) -> Decision {
    let lookup = failed
        .iter()
        .any(|(_, no)| no.cause == Cause::LookupFailure);
    let (outcome, cause) = match lookup {
        true => (settings.lookup_failure, Cause::LookupFailure),
        false => (settings.no_feasible_node, Cause::NoFeasibleNode),
    };
    let findings = match <[_; 1]>::try_from(failed) {
        Ok([(class, no)]) if class == settings.runtime_class_name => no.findings,
        Ok(failed) => led_by_class(Vec::from(failed)),
        Err(failed) => led_by_class(failed),
    };
    Decision::not_assigned(outcome, cause, findings)
}

/// Each class's findings, each led by its class.
fn led_by_class(failed: Vec<(String, NoKata)>) -> Findings {
    Findings(
        failed
            .into_iter()
            .flat_map(|(class, no)| {
                no.findings
                    .0
                    .into_iter()
                    .map(move |r| format!("{class}: {r}"))
            })
            .collect(),
    )
}
