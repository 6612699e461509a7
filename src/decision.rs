//! All policy logic: from a validation payload and a view of the cluster to a
//! [`Decision`]. No I/O besides the [`Cluster`] trait, so every path is
//! testable natively with a fake cluster.

use crate::cluster::{Cluster, LookupError, LookupErrorKind, NodeMasks};
use crate::node::{HandlerFeature, HandlerFeatures};
use crate::pod::PodFacts;
use crate::request::{self, AdmissionRequest};
use crate::scheduling::node_features::FeatureNeeds;
use crate::scheduling::runtime_handler::HandlerNeeds;
use crate::scheduling::{Broken, Constraints, Feasibility};
use crate::settings::{HandlerCheck, Outcome, Settings};
use crate::volumes::{self, PodRef, Refusal};
use crate::{annotation, incompatible, mutation, runtime_class};

/// How every explanation of a pod left without Kata for a reason starts.
pub const NOT_ASSIGNED: &str = "kata runtime not assigned: ";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Admit the pod with `spec.runtimeClassName` set: `object` is the raw
    /// request object with that one member added. `warn`: tell the user
    /// (some nodes the pod may land on cannot start it). `note`: a second
    /// warning of its own (a gated pod), so that neither cuts the other.
    Mutate {
        object: String,
        explanation: String,
        warn: bool,
        note: Option<String>,
    },
    /// Admit unchanged. `warn`: tell the user (every pod left without Kata).
    /// `object`: with `annotateDecision`, the raw request object with only
    /// the decision annotation added; `None`: no patch at all.
    Unchanged {
        explanation: String,
        warn: bool,
        object: Option<String>,
    },
    /// Refuse the request.
    Reject {
        explanation: String,
        code: Option<u16>,
    },
}

impl Decision {
    pub fn explanation(&self) -> &str {
        match self {
            Decision::Mutate { explanation, .. }
            | Decision::Unchanged { explanation, .. }
            | Decision::Reject { explanation, .. } => explanation,
        }
    }

    /// The whole reason, for the audit annotation and the decision
    /// annotation: the explanation, then the note if there is one.
    pub fn reason(&self) -> std::borrow::Cow<'_, str> {
        match self {
            Decision::Mutate {
                explanation,
                note: Some(note),
                ..
            } => format!("{explanation}; {note}").into(),
            other => other.explanation().into(),
        }
    }

    fn leave(explanation: String) -> Decision {
        Decision::Unchanged {
            explanation,
            warn: true,
            object: None,
        }
    }

    /// The `noFeasibleNode` / `lookupFailure` outcome for a pod that cannot get Kata.
    fn not_assigned(outcome: Outcome, why: String) -> Decision {
        let explanation = format!("{NOT_ASSIGNED}{why}");
        match outcome {
            Outcome::Accept => Decision::leave(explanation),
            Outcome::Reject => Decision::Reject {
                explanation,
                code: None,
            },
        }
    }
}

/// Evaluates a raw `validate` payload. Malformed input is refused with 400.
pub fn decide_payload(payload: &[u8], cluster: &impl Cluster) -> Decision {
    let bad_request = |explanation: String| Decision::Reject {
        explanation,
        code: Some(400),
    };
    let payload = match request::parse(payload) {
        Ok(p) => p,
        Err(e) => return bad_request(e),
    };
    let settings = match payload
        .settings
        .map(|raw| Settings::from_json(raw.get().as_bytes()))
    {
        None => Settings::default(),
        Some(Ok(s)) => s,
        Some(Err(e)) => return bad_request(format!("invalid policy settings: {e}")),
    };
    decide(&payload.request, &settings, cluster)
}

pub fn decide(request: &AdmissionRequest, settings: &Settings, cluster: &impl Cluster) -> Decision {
    if !request.is_pod_create() {
        return Decision::Unchanged {
            explanation: format!(
                "not evaluated: the policy acts on Pod CREATE only, this is {}",
                request.describe()
            ),
            warn: false,
            object: None,
        };
    }
    let Some(object) = request.object.map(|o| o.get()) else {
        return Decision::Reject {
            explanation: "the Pod CREATE request has no object".into(),
            code: Some(400),
        };
    };
    let pod = match PodFacts::from_json(object) {
        Ok(pod) => pod,
        Err(e) => {
            return Decision::Reject {
                explanation: e,
                code: Some(400),
            };
        }
    };
    let decision = evaluate(object, &pod, request, settings, cluster);
    // Annotated: every pod the policy judged. Not a mirror pod (its object
    // is the kubelet's copy of a static pod, which the policy never
    // changes), nor a pod with runtimeClassName "" (left for the API server
    // to refuse, see `named_class`).
    let judged = !pod.is_mirror && pod.runtime_class_name.as_deref() != Some("");
    if settings.annotate_decision && judged {
        annotation::annotate(decision, object)
    } else {
        decision
    }
}

/// The decision on a Pod CREATE whose object reads as a pod.
fn evaluate(
    object: &str,
    pod: &PodFacts,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Decision {
    let class = settings.runtime_class_name.as_str();

    if let Some(existing) = &pod.runtime_class_name {
        return named_class(existing, pod, settings);
    }
    if pod.is_mirror {
        return Decision::leave(format!(
            "{NOT_ASSIGNED}mirror pod of a static pod (the kubelet runs it, not the API)"
        ));
    }
    if let Some(left) = runtime_incompatible(pod, settings) {
        return left;
    }
    if !pod.has_spec {
        return Decision::leave(format!("{NOT_ASSIGNED}the pod has no spec"));
    }

    let rc_bytes = match cluster.runtime_class(class) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Decision::not_assigned(
                settings.no_feasible_node,
                format!("RuntimeClass {class:?} does not exist"),
            );
        }
        Err(e) => {
            return lookup_failed(settings, &format!("cannot read RuntimeClass {class:?}"), &e);
        }
    };
    let rc = match runtime_class::parse(&rc_bytes) {
        Ok(rc) => rc,
        Err(e) => return Decision::not_assigned(settings.lookup_failure, e),
    };
    let overhead = match runtime_class::overhead(&rc) {
        Ok(overhead) => overhead,
        Err(e) => return Decision::not_assigned(settings.lookup_failure, e),
    };
    // Validated with the settings: a failure here is a policy bug, not input.
    let ignored = match settings.ignored() {
        Ok(ignored) => ignored,
        Err(e) => {
            return Decision::Reject {
                explanation: format!("invalid policy settings: {e}"),
                code: Some(400),
            };
        }
    };
    let constraints = match runtime_class::effective_constraints(pod, &rc, &overhead, &ignored) {
        Ok(c) => c,
        Err(conflict) => return Decision::not_assigned(settings.no_feasible_node, conflict),
    };

    let constraints = match with_volumes(constraints, pod, request, settings, cluster) {
        Ok(c) => c,
        Err(refused) => return refused,
    };
    let constraints = constraints
        .with_handler(handler_needs(pod, &rc.handler, settings))
        .with_features(FeatureNeeds {
            supplemental_groups_policy: pod.strict_supplemental_groups,
        });
    let masks = node_masks(constraints.handler(), constraints.features());
    let gates = &pod.scheduling_gates;

    if let Some(names) = constraints.pinned_nodes() {
        return pinned::decide(
            object,
            settings,
            cluster,
            &constraints,
            &names,
            masks,
            gates,
        );
    }
    if let Err(refused) = may_list_nodes(settings, cluster) {
        return refused;
    }
    let selector = settings.host_label_selector();
    let node_bytes = match cluster.kata_nodes(selector, masks) {
        Ok(bytes) => bytes,
        Err(e) => return lookup_failed(settings, "cannot list kata nodes", &e),
    };
    let (diagnosis, bound_elsewhere) = match constraints.find_feasible(&node_bytes) {
        Ok(Feasibility::Fits { broken }) => return mutate(object, class, broken, gates),
        Ok(Feasibility::NoneFits {
            diagnosis,
            bound_elsewhere,
        }) => (diagnosis, bound_elsewhere),
        Err(e) => return Decision::not_assigned(settings.lookup_failure, e),
    };
    let why = if diagnosis.total() == 0 {
        format!(
            "no node matches kataNodeSelector {:?}",
            selector.unwrap_or_default()
        )
    } else if let Some(name) = bound_elsewhere {
        format!("the pod is bound to node {name:?} (spec.nodeName), which is not a kata node")
    } else {
        diagnosis.to_string()
    };
    Decision::not_assigned(settings.no_feasible_node, why)
}

/// What the pod needs of a node's runtime handler, unless
/// `runtimeHandlerCheck` is off. `handler` is the RuntimeClass's `handler`.
fn handler_needs(pod: &PodFacts, handler: &str, settings: &Settings) -> Option<HandlerNeeds> {
    let required = match settings.runtime_handler_check {
        HandlerCheck::Off => return None,
        HandlerCheck::Auto => false,
        HandlerCheck::Required => true,
    };
    Some(HandlerNeeds {
        handler: handler.into(),
        required,
        // Reaches here only when `userNamespaces` is not in skipPodsUsing.
        features: HandlerFeatures::default()
            .with(
                HandlerFeature::UserNamespaces,
                pod.runtime.host_users == Some(false),
            )
            .with(
                HandlerFeature::RecursiveReadOnlyMounts,
                pod.recursive_read_only,
            ),
    })
}

/// The fixed node query for these needs: the handlers' names for every
/// pod, the features (the handlers' and the CRI's `status.features`) only
/// for the rare pods that depend on one. A pod that needs a CRI feature
/// reads it whatever `runtimeHandlerCheck` says, through the same second
/// query: never a query per pod shape.
fn node_masks(needs: Option<&HandlerNeeds>, features: FeatureNeeds) -> NodeMasks {
    match needs {
        _ if features.any() => NodeMasks::HandlerFeatures,
        None => NodeMasks::Plain,
        Some(needs) if needs.needs_features() => NodeMasks::HandlerFeatures,
        Some(_) => NodeMasks::HandlerNames,
    }
}

/// A pod that names its RuntimeClass itself keeps it, if
/// `allowedRuntimeClasses` allows it; no host call either way.
fn named_class(existing: &str, pod: &PodFacts, settings: &Settings) -> Decision {
    let class = settings.runtime_class_name.as_str();
    if existing.is_empty() {
        // The API server refuses "" (its RuntimeClass admission plugin:
        // "resource name may not be empty"; its validation: not a DNS
        // subdomain): giving it Kata would turn a refused pod into one that
        // runs, so it is left for the API server to refuse.
        return Decision::leave(
            "runtimeClassName is \"\", which the API server refuses (a RuntimeClass name is a \
             DNS subdomain); left unchanged: remove the field to let the policy decide"
                .into(),
        );
    }
    if let Some(allowed) = &settings.allowed_runtime_classes {
        // Mirror pods are the kubelet's static pods: refusing the mirror
        // would only hide a pod that runs anyway.
        if existing != class && !pod.is_mirror && !allowed.iter().any(|a| a == existing) {
            let mut names = vec![class];
            names.extend(allowed.iter().map(String::as_str).filter(|a| *a != class));
            return Decision::Reject {
                explanation: format!(
                    "runtimeClassName {existing:?} is not allowed (allowedRuntimeClasses: {})",
                    names.join(", ")
                ),
                code: None,
            };
        }
    }
    Decision::Unchanged {
        explanation: format!("pod already sets runtimeClassName {existing:?}; left unchanged"),
        // A pod that already asked for our class has Kata: nothing to warn about.
        warn: existing != class,
        object: None,
    }
}

/// The runtime-compatibility check (`skipPodsUsing`): a pod using a feature
/// Kata cannot provide is left unchanged whatever `noFeasibleNode` says,
/// since the pod runs as it is, unless `incompatiblePod: reject` says that
/// every pod must run under Kata. Every finding goes into the explanation,
/// the first one first so that it survives the warning's cut.
fn runtime_incompatible(pod: &PodFacts, settings: &Settings) -> Option<Decision> {
    if settings.skip_pods_using.is_empty() {
        return None;
    }
    let findings = incompatible::check(&pod.runtime, &settings.incompatible_rules());
    if findings.is_empty() {
        return None;
    }
    let reasons = findings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ");
    Some(match settings.incompatible_pod {
        Outcome::Accept => Decision::leave(format!("{NOT_ASSIGNED}{reasons}")),
        Outcome::Reject => Decision::Reject {
            explanation: format!(
                "kata runtime required (incompatiblePod: reject), and not assigned: {reasons}"
            ),
            code: None,
        },
    })
}

/// Adds the VolumeBinding and VolumeZone checks of the pod's claims. Pods
/// without claims make no host call here; pods bound by `spec.nodeName`
/// bypass the scheduler, so their volumes are not judged.
fn with_volumes(
    constraints: Constraints,
    pod: &PodFacts,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Result<Constraints, Decision> {
    if !settings.check_volumes || pod.claims.is_empty() || pod.node_name.is_some() {
        return Ok(constraints);
    }
    let namespace = (request.namespace.as_ref().map(|n| n.as_str()))
        .filter(|n| !n.is_empty())
        .or(pod.namespace.as_deref())
        .unwrap_or("default");
    let pod_ref = PodRef {
        name: pod.name.as_deref(),
        namespace,
        claims: &pod.claims,
    };
    let subject = settings.policy_server_subject();
    match volumes::resolve(&pod_ref, &subject, cluster) {
        Ok(check) => Ok(constraints.with_volumes(check)),
        Err(refusal) => Err(volume_refused(settings, subject.user, refusal)),
    }
}

/// The outcome of a volume check that could not be made.
fn volume_refused(settings: &Settings, user: &str, refusal: Refusal) -> Decision {
    // The setting first: the warning is cut to 255 bytes.
    const GRANT: &str = "set checkVolumes: false or grant policy-server get on persistentvolumeclaims, \
         persistentvolumes, storageclasses.storage.k8s.io and list/watch on the last two";
    match refusal {
        Refusal::Pod(why) => Decision::not_assigned(settings.no_feasible_node, why),
        Refusal::Denied { resource, verbs } => Decision::not_assigned(
            settings.lookup_failure,
            format!(
                "cannot list {resource} (forbidden: {user} may not {} {resource}; {GRANT})",
                verbs.join(", ")
            ),
        ),
        Refusal::Lookup { what, error } => {
            let hint = match error.kind {
                LookupErrorKind::Forbidden => format!(" (forbidden: {GRANT})"),
                LookupErrorKind::NotFound | LookupErrorKind::Failed => String::new(),
            };
            Decision::not_assigned(
                settings.lookup_failure,
                format!("{what}{hint}: {}", error.message),
            )
        }
        Refusal::Invalid(why) => Decision::not_assigned(settings.lookup_failure, why),
    }
}

/// The mutation, once a kata node can run the pod. `broken`: nodes the
/// scheduler may pick too, whose runtime cannot start it. `gates`: the
/// pod's scheduling gates, which get a warning of their own.
fn mutate(object: &str, class: &str, broken: Option<Broken>, gates: &[String]) -> Decision {
    let mut decision = mutate_ungated(object, class, broken);
    if let Decision::Mutate { note, .. } = &mut decision {
        *note = gated_note(gates);
    }
    decision
}

/// How many gates the note names; the rest are counted.
const GATES_NAMED: usize = 3;

/// The note for a gated pod given Kata: while it is gated, its
/// `nodeSelector` and required node affinity may still be narrowed (Kueue
/// injects its ResourceFlavor's `nodeLabels` when it ungates the pod), and
/// `runtimeClassName` cannot change after creation. `None` when ungated.
fn gated_note(gates: &[String]) -> Option<String> {
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

fn mutate_ungated(object: &str, class: &str, broken: Option<Broken>) -> Decision {
    match mutation::set_runtime_class(object, class) {
        Ok(object) => match broken {
            // Names no node and no count: without broken nodes the search
            // may stop at the first fit, and the host's list order is not
            // stable.
            None => Decision::Mutate {
                object,
                explanation: format!(
                    "runtimeClassName {class:?} assigned: a kata node can run this pod"
                ),
                warn: false,
                note: None,
            },
            Some(broken) => Decision::Mutate {
                object,
                explanation: format!(
                    "kata runtime assigned, but {broken}: if the scheduler picks one, the pod will not start"
                ),
                warn: true,
                note: None,
            },
        },
        Err(e) => Decision::Reject {
            explanation: format!("cannot mutate the Pod: {e}"),
            code: Some(400),
        },
    }
}

/// Asks the host whether policy-server may list and watch nodes, before
/// listing them: policy-server serves the list from a watch cache whose
/// first load, when refused, retries forever, so a list it may not make
/// never answers and the admission hangs past every timeout. A denied verb
/// or a failed question is the `lookupFailure` outcome, at once.
fn may_list_nodes(settings: &Settings, cluster: &impl Cluster) -> Result<(), Decision> {
    let subject = settings.policy_server_subject();
    let mut denied = Vec::new();
    for verb in ["list", "watch"] {
        match cluster.may_on_nodes(&subject, verb) {
            Ok(access) if access.allowed => {}
            Ok(_) => denied.push(verb),
            Err(e) => {
                return Err(Decision::not_assigned(
                    settings.lookup_failure,
                    format!(
                        "cannot check whether {} may {verb} nodes (kubernetes/can_i; policy-server needs create on subjectaccessreviews.authorization.k8s.io): {}",
                        subject.user, e.message
                    ),
                ));
            }
        }
    }
    if denied.is_empty() {
        return Ok(());
    }
    Err(Decision::not_assigned(
        settings.lookup_failure,
        format!(
            "cannot list kata nodes (forbidden: {} may not {} nodes; grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, \
             and list both in contextAwareResources)",
            subject.user,
            denied.join(", ")
        ),
    ))
}

fn lookup_failed(settings: &Settings, what: &str, e: &LookupError) -> Decision {
    // The fix comes before the host's (long) text so that it survives the
    // 255-byte cut of the warning.
    let hint = match e.kind {
        LookupErrorKind::Forbidden => {
            " (forbidden: grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, \
             and list both in contextAwareResources)"
        }
        LookupErrorKind::NotFound | LookupErrorKind::Failed => "",
    };
    Decision::not_assigned(
        settings.lookup_failure,
        format!("{what}{hint}: {}", e.message),
    )
}

mod pinned;
#[cfg(test)]
mod tests;
