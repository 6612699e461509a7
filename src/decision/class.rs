//! Whether a kata node can run the pod with one class, as the scheduler and
//! the kubelet would judge it: the RuntimeClass read, the pod's constraints
//! compiled with it (the scheduler's PreFilter, once), then the node path
//! that fits the pod. Every step of one class, in order, in one place.

use std::cell::OnceCell;
use std::rc::Rc;

use k8s_openapi::api::node::v1::RuntimeClass;

use super::no_kata::NoKata;
use super::nodes::{Feasible, NodeCtx, listed, pinned, probed, shaped};
use crate::cluster::{Cluster, NodeMasks};
use crate::kubelet::KubeletNeeds;
use crate::pod::PodFacts;
use crate::pod_affinity::{self, AffinityPod};
use crate::runtime_class;
use crate::scheduling::Constraints;
use crate::scheduling::inter_pod_affinity::InterPodAffinity;
use crate::settings::Settings;
use crate::volumes::{self, PodRef};

/// What every class of one admission is judged with: the pod, its
/// namespace, the settings and the node paths' context, built once.
pub struct DecisionCtx<'a> {
    pub pod: &'a PodFacts,
    pub namespace: &'a str,
    pub settings: &'a Settings,
    pub nodes: NodeCtx<'a>,
    /// The inter-pod affinity check, counted once for every class: the
    /// class changes none of it.
    pub pod_affinity: OnceCell<Result<Option<Rc<InterPodAffinity>>, NoKata>>,
}

/// `Ok` with the nodes the pod may land on and not start, else why no kata
/// node can run it with `class`.
pub fn feasible(class: &str, ctx: &DecisionCtx, cluster: &impl Cluster) -> Feasible {
    let rc = read_runtime_class(class, cluster)?;
    let (constraints, kubelet) = compile(ctx, &rc)?;
    let constraints = with_volumes(constraints, ctx, cluster)?;
    let constraints = match pod_affinity(ctx, cluster)? {
        Some(check) => constraints.with_pod_affinity(check),
        None => constraints,
    };
    let nodes = &ctx.nodes;
    if let Some(names) = constraints.pinned_nodes() {
        return pinned::feasible(nodes, cluster, &constraints, &kubelet, &names);
    }
    if let Some(answer) = shaped::feasible(nodes, cluster, &constraints, &kubelet) {
        return answer;
    }
    nodes.may_list_nodes(cluster)?;
    // Without a label the candidates are every node, few of them Kata:
    // reading them by name would mostly miss.
    if kubelet.masks() != NodeMasks::Plain && nodes.selector.host_selector().is_some() {
        return probed::feasible(nodes, cluster, &constraints, &kubelet);
    }
    listed::feasible(nodes, cluster, &constraints, &kubelet, kubelet.masks())
}

fn read_runtime_class(class: &str, cluster: &impl Cluster) -> Result<RuntimeClass, NoKata> {
    match cluster.runtime_class(class) {
        Ok(Some(bytes)) => runtime_class::parse(&bytes).map_err(NoKata::unreadable),
        Ok(None) => Err(NoKata::missing_class(class)),
        Err(e) => Err(NoKata::lookup_failed(
            &format!("cannot read RuntimeClass {class:?}"),
            &e,
        )),
    }
}

/// The pod's constraints with the class, as the RuntimeClass admission
/// plugin leaves them (its scheduling merged in, its overhead), and what the
/// kubelet will ask of a node's runtime: built once, matched per node.
fn compile(ctx: &DecisionCtx, rc: &RuntimeClass) -> Result<(Constraints, KubeletNeeds), NoKata> {
    let overhead = runtime_class::overhead(rc).map_err(NoKata::unreadable)?;
    let ignored = &ctx.settings.ignored_resources;
    let constraints = runtime_class::effective_constraints(ctx.pod, rc, &overhead, ignored)
        .map_err(NoKata::conflict)?;
    let kubelet = KubeletNeeds::new(ctx.pod, &rc.handler, ctx.settings.runtime_handler_check);
    Ok((constraints, kubelet))
}

/// Adds the VolumeBinding and VolumeZone checks of the pod's claims. Pods
/// without claims make no host call here; pods bound by `spec.nodeName`
/// bypass the scheduler, so their volumes are not judged.
fn with_volumes(
    constraints: Constraints,
    ctx: &DecisionCtx,
    cluster: &impl Cluster,
) -> Result<Constraints, NoKata> {
    let pod = ctx.pod;
    if !ctx.settings.check_volumes || pod.claims.is_empty() || pod.node_name.is_some() {
        return Ok(constraints);
    }
    let pod_ref = PodRef {
        name: pod.name.as_deref(),
        namespace: ctx.namespace,
        claims: &pod.claims,
    };
    let subject = &ctx.nodes.subject;
    match volumes::resolve(&pod_ref, subject, cluster) {
        Ok(check) => Ok(constraints.with_volumes(check)),
        Err(unresolved) => Err(NoKata::volumes(subject.user, unresolved)),
    }
}

/// The InterPodAffinity check of a pod with required inter-pod
/// (anti-)affinity terms, from the cluster's pods; `None` for every other
/// pod, which reads no pod: pods bound by `spec.nodeName` bypass the
/// scheduler, and `checkPodAffinity: false` judges without it.
fn pod_affinity(
    ctx: &DecisionCtx,
    cluster: &impl Cluster,
) -> Result<Option<Rc<InterPodAffinity>>, NoKata> {
    let pod = ctx.pod;
    if !ctx.settings.check_pod_affinity || pod.pod_affinity.is_empty() || pod.node_name.is_some() {
        return Ok(None);
    }
    let counted = ctx.pod_affinity.get_or_init(|| {
        let pod = AffinityPod {
            namespace: ctx.namespace,
            labels: &pod.labels,
            terms: &pod.pod_affinity,
        };
        let subject = &ctx.nodes.subject;
        pod_affinity::resolve(&pod, subject, cluster)
            .map(|check| Some(Rc::new(check)))
            .map_err(|unresolved| NoKata::pod_affinity(subject.user, unresolved))
    });
    counted.clone()
}
