//! All policy logic: from a pod and a view of the cluster to a [`Decision`].
//! No I/O besides the [`Cluster`] trait, so every path is testable natively
//! with a fake cluster. A decision is data (the class, the findings, the
//! diagnosis); its wording is in [`explain`], and what is done with it
//! (the mutation, the annotation, the response) in `admission`.

use crate::cluster::{Cluster, LookupError, LookupErrorKind, NodeList, NodeMasks};
use crate::incompatible;
use crate::node::{HandlerFeature, HandlerFeatures};
use crate::pod::PodFacts;
use crate::request::AdmissionRequest;
use crate::runtime_class;
use crate::scheduling::node_features::FeatureNeeds;
use crate::scheduling::runtime_handler::HandlerNeeds;
use crate::scheduling::{Broken, Constraints, Diagnosis, Feasibility};
use crate::settings::{HandlerCheck, Outcome, Settings};
use crate::volumes::{self, PodRef, Refusal as VolumeRefusal};

pub mod explain;
mod memo;
mod pinned;
mod probed;

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
        passed: Vec<(String, Reasons)>,
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
    /// The pod cannot get Kata, and the outcome setting says accept.
    NotAssigned(Reasons),
}

/// Why a request is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The request cannot be read (HTTP 400).
    BadRequest(String),
    /// The response cannot be made (HTTP 500).
    Internal(String),
    /// The pod names a class `allowedRuntimeClasses` does not allow.
    NotAllowed { class: String, allowed: Vec<String> },
    /// The pod cannot get Kata, and the outcome setting of the cause says
    /// reject.
    NotAssigned(Cause, Reasons),
    /// The pod uses a feature Kata cannot run, under `incompatiblePod: reject`.
    KataRequired(Reasons),
}

/// Why a pod cannot get Kata: whole findings, each one sentence, the first
/// one first. Never cut apart: a finding may contain any text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reasons(pub Vec<String>);

impl Reasons {
    pub fn one(reason: impl Into<String>) -> Self {
        Reasons(vec![reason.into()])
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

/// Why a class cannot be given to the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoKata {
    pub cause: Cause,
    pub reasons: Reasons,
}

impl NoKata {
    fn new(cause: Cause, reason: impl Into<String>) -> Self {
        NoKata {
            cause,
            reasons: Reasons::one(reason),
        }
    }
}

impl Decision {
    pub fn bad_request(why: impl Into<String>) -> Decision {
        Decision::Reject(Refusal::BadRequest(why.into()))
    }

    fn not_assigned(outcome: Outcome, cause: Cause, reasons: Reasons) -> Decision {
        match outcome {
            Outcome::Accept => Decision::Unchanged(Unchanged::NotAssigned(reasons)),
            Outcome::Reject => Decision::Reject(Refusal::NotAssigned(cause, reasons)),
        }
    }
}

/// The decision on a Pod CREATE whose object reads as `pod`.
pub fn decide(
    pod: &PodFacts,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Decision {
    if let Some(decided) = judged_without_kata(pod, settings) {
        return decided;
    }
    let classes = classes_for(pod, settings);
    let judged = match classes.len() {
        1 => judge_classes(&classes, pod, request, settings, cluster),
        // Every class judged with the same answers: one node list per
        // admission whatever the number of classes.
        _ => judge_classes(&classes, pod, request, settings, &memo::Memo::new(cluster)),
    };
    judged.unwrap_or_else(|failed| none_can_run(settings, failed))
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
fn judge_classes(
    classes: &[&str],
    pod: &PodFacts,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Result<Decision, Vec<(String, NoKata)>> {
    let mut passed: Vec<(String, NoKata)> = Vec::new();
    for (k, class) in classes.iter().enumerate() {
        match judge_class(class, pod, request, settings, cluster) {
            Ok(broken) => {
                return Ok(Decision::Mutate {
                    class: class.to_string(),
                    broken,
                    gates: pod.scheduling_gates.clone(),
                    passed: (passed.into_iter())
                        .map(|(class, no)| (class, no.reasons))
                        .collect(),
                    ranked: classes.len() > 1,
                });
            }
            Err(no) => {
                let unknown = no.cause == Cause::LookupFailure;
                passed.push((class.to_string(), no));
                if unknown {
                    let why = format!("not tried: ranked after {class}, which could not be judged");
                    passed.extend(
                        classes.iter().skip(k + 1).map(|later| {
                            (later.to_string(), NoKata::new(Cause::LookupFailure, &why))
                        }),
                    );
                    break;
                }
            }
        }
    }
    Err(passed)
}

/// No class can be given: the outcome setting of the cause (a lookup
/// failure, which ends the search, else no feasible node), and every
/// class's reasons, each led by its class when there are several or when
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
    let reasons = match <[_; 1]>::try_from(failed) {
        Ok([(class, no)]) if class == settings.runtime_class_name => no.reasons,
        Ok(failed) => led_by_class(Vec::from(failed)),
        Err(failed) => led_by_class(failed),
    };
    Decision::not_assigned(outcome, cause, reasons)
}

/// Each class's reasons, each led by its class.
fn led_by_class(failed: Vec<(String, NoKata)>) -> Reasons {
    Reasons(
        failed
            .into_iter()
            .flat_map(|(class, no)| {
                no.reasons
                    .0
                    .into_iter()
                    .map(move |r| format!("{class}: {r}"))
            })
            .collect(),
    )
}

/// The pod's own gates, before any host call: a class it names itself, a
/// mirror pod, a feature Kata cannot run, no spec: the decision, when one
/// of them decides.
fn judged_without_kata(pod: &PodFacts, settings: &Settings) -> Option<Decision> {
    if let Some(existing) = &pod.runtime_class_name {
        return Some(named_class(existing, pod, settings));
    }
    let left = |why: &str| Decision::Unchanged(Unchanged::NotAssigned(Reasons::one(why)));
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

/// Whether a kata node can run the pod with `class`, as the scheduler and
/// the kubelet would judge it: `Ok` with the nodes it may land on and not
/// start, else why not. Every step of one class, in one place.
fn judge_class(
    class: &str,
    pod: &PodFacts,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Result<Option<Broken<'static>>, NoKata> {
    let rc = read_runtime_class(class, cluster)?;
    let constraints = constraints(pod, &rc, request, settings, cluster)?;
    let masks = node_masks(constraints.handler(), constraints.features());
    if let Some(names) = constraints.pinned_nodes() {
        return pinned::judge(settings, cluster, &constraints, &names, masks);
    }
    may_list_nodes(settings, cluster)?;
    // Without a label the candidates are every node, few of them Kata:
    // reading them by name would mostly miss.
    if masks != NodeMasks::Plain && settings.host_label_selector().is_some() {
        return probed::judge(settings, cluster, &constraints, masks);
    }
    let nodes = list_nodes(settings, cluster, masks)?;
    feasible(&constraints, &nodes, settings)
}

fn read_runtime_class(
    class: &str,
    cluster: &impl Cluster,
) -> Result<k8s_openapi::api::node::v1::RuntimeClass, NoKata> {
    let bytes = match cluster.runtime_class(class) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return Err(NoKata::new(
                Cause::NoFeasibleNode,
                format!("RuntimeClass {class:?} does not exist"),
            ));
        }
        Err(e) => {
            return Err(lookup_failed(
                &format!("cannot read RuntimeClass {class:?}"),
                &e,
            ));
        }
    };
    runtime_class::parse(&bytes).map_err(|e| NoKata::new(Cause::LookupFailure, e))
}

/// The pod's effective constraints with the class: its scheduling merged
/// in, its overhead, the volumes, and the kubelet's gates.
fn constraints(
    pod: &PodFacts,
    rc: &k8s_openapi::api::node::v1::RuntimeClass,
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Result<Constraints, NoKata> {
    let overhead = runtime_class::overhead(rc).map_err(|e| NoKata::new(Cause::LookupFailure, e))?;
    let constraints =
        runtime_class::effective_constraints(pod, rc, &overhead, &settings.ignored_resources)
            .map_err(|conflict| NoKata::new(Cause::NoFeasibleNode, conflict))?;
    let constraints = with_volumes(constraints, pod, request, settings, cluster)?;
    Ok(constraints
        .with_handler(handler_needs(pod, &rc.handler, settings))
        .with_features(FeatureNeeds {
            supplemental_groups_policy: pod.strict_supplemental_groups,
        }))
}

/// The kata node list; ask [`may_list_nodes`] first.
fn list_nodes(
    settings: &Settings,
    cluster: &impl Cluster,
    masks: NodeMasks,
) -> Result<NodeList, NoKata> {
    cluster
        .kata_nodes(settings.host_label_selector(), masks)
        .map_err(|e| lookup_failed("cannot list kata nodes", &e))
}

/// The answer of the filter pass over the listed kata nodes.
fn feasible(
    constraints: &Constraints,
    node_bytes: &[u8],
    settings: &Settings,
) -> Result<Option<Broken<'static>>, NoKata> {
    match constraints.find_feasible(node_bytes) {
        Ok(Feasibility::Fits { broken }) => Ok(broken.map(Broken::into_owned)),
        Ok(Feasibility::NoneFits {
            diagnosis,
            bound_elsewhere,
        }) => Err(no_fit(&diagnosis, bound_elsewhere, settings)),
        Err(e) => Err(NoKata::new(Cause::LookupFailure, e)),
    }
}

/// Why no listed kata node can run the pod.
fn no_fit(diagnosis: &Diagnosis, bound_elsewhere: Option<String>, settings: &Settings) -> NoKata {
    let why = if diagnosis.total() == 0 {
        format!(
            "no node matches kataNodeSelector {:?}",
            settings.host_label_selector().unwrap_or_default()
        )
    } else if let Some(name) = bound_elsewhere {
        format!("the pod is bound to node {name:?} (spec.nodeName), which is not a kata node")
    } else {
        diagnosis.to_string()
    };
    NoKata::new(Cause::NoFeasibleNode, why)
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
            let mut names: Vec<String> = configured.iter().map(|c| c.to_string()).collect();
            names.extend(
                allowed
                    .iter()
                    .filter(|a| !configured.contains(&a.as_str()))
                    .cloned(),
            );
            return Decision::Reject(Refusal::NotAllowed {
                class: existing.into(),
                allowed: names,
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
    let reasons = Reasons(findings.iter().map(ToString::to_string).collect());
    Some(match settings.incompatible_pod {
        Outcome::Accept => Decision::Unchanged(Unchanged::NotAssigned(reasons)),
        Outcome::Reject => Decision::Reject(Refusal::KataRequired(reasons)),
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
) -> Result<Constraints, NoKata> {
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
        Err(refusal) => Err(volume_refused(subject.user, refusal)),
    }
}

/// Why a volume check could not be made.
fn volume_refused(user: &str, refusal: VolumeRefusal) -> NoKata {
    // The setting first: the warning is cut to 255 bytes.
    const GRANT: &str = "set checkVolumes: false or grant policy-server get on persistentvolumeclaims, \
         persistentvolumes, storageclasses.storage.k8s.io and list/watch on the last two";
    match refusal {
        VolumeRefusal::Pod(why) => NoKata::new(Cause::NoFeasibleNode, why),
        VolumeRefusal::Denied { resource, verbs } => NoKata::new(
            Cause::LookupFailure,
            format!(
                "cannot list {resource} (forbidden: {user} may not {} {resource}; {GRANT})",
                verbs.join(", ")
            ),
        ),
        VolumeRefusal::Lookup { what, error } => {
            let hint = match error.kind {
                LookupErrorKind::Forbidden => format!(" (forbidden: {GRANT})"),
                LookupErrorKind::NotFound | LookupErrorKind::Replay | LookupErrorKind::Failed => {
                    String::new()
                }
            };
            NoKata::new(
                Cause::LookupFailure,
                format!("{what}{hint}: {}", error.message),
            )
        }
        VolumeRefusal::Invalid(why) => NoKata::new(Cause::LookupFailure, why),
    }
}

/// Asks the host whether policy-server may list and watch nodes, before
/// listing them: policy-server serves the list from a watch cache whose
/// first load, when refused, retries forever, so a list it may not make
/// never answers and the admission hangs past every timeout. A denied verb
/// or a failed question is the `lookupFailure` outcome, at once.
fn may_list_nodes(settings: &Settings, cluster: &impl Cluster) -> Result<(), NoKata> {
    let subject = settings.policy_server_subject();
    let mut denied = Vec::new();
    for verb in ["list", "watch"] {
        match cluster.may_on_nodes(&subject, verb) {
            Ok(access) if access.allowed => {}
            Ok(_) => denied.push(verb),
            Err(e) => {
                // A replay's miss is no missing grant: no RBAC hint, and its
                // explanation keeps its place in the 255-byte warning.
                let hint = match e.kind {
                    LookupErrorKind::Replay => "",
                    _ => {
                        "; policy-server needs create on subjectaccessreviews.authorization.k8s.io"
                    }
                };
                return Err(NoKata::new(
                    Cause::LookupFailure,
                    format!(
                        "cannot check whether {} may {verb} nodes (kubernetes/can_i{hint}): {}",
                        subject.user, e.message
                    ),
                ));
            }
        }
    }
    if denied.is_empty() {
        return Ok(());
    }
    Err(NoKata::new(
        Cause::LookupFailure,
        format!(
            "cannot list kata nodes (forbidden: {} may not {} nodes; grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, \
             and list both in contextAwareResources)",
            subject.user,
            denied.join(", ")
        ),
    ))
}

fn lookup_failed(what: &str, e: &LookupError) -> NoKata {
    // The fix comes before the host's (long) text so that it survives the
    // 255-byte cut of the warning.
    let hint = match e.kind {
        LookupErrorKind::Forbidden => {
            " (forbidden: grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, \
             and list both in contextAwareResources)"
        }
        LookupErrorKind::NotFound | LookupErrorKind::Replay | LookupErrorKind::Failed => "",
    };
    NoKata::new(Cause::LookupFailure, format!("{what}{hint}: {}", e.message))
}
