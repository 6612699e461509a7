//! Inter-pod affinity needs the pods the cluster already runs: read here,
//! once per pod that has required terms, and counted into the topology
//! domains that the InterPodAffinity filter
//! ([`InterPodAffinity`](crate::scheduling::inter_pod_affinity)) matches
//! each node against.
//!
//! Host calls, in this order: the namespaces (only when a term selects
//! namespaces by label), the pods (one fixed query: every pod, all
//! namespaces, masked to what the filter reads), then the nodes those
//! matching pods run on, for their topology labels: read by name when
//! they are few, else one list of every node. Lists are asked about with
//! `can_i` first: a list policy-server may not make never answers.

mod existing;
mod terms;

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::PodAffinityTerm;

use crate::cluster::{Cluster, LookupError, NAMESPACES, NODES, NodeMasks, PODS, Resource, Subject};
use crate::node::{KeyFilter, parse_node, scan_node_list};
use crate::pod::PodAffinityTerms;
use crate::scheduling::inter_pod_affinity::{Domains, InterPodAffinity};
use existing::{ExistingPod, ScanError, scan_pod_list};
use terms::{NamespaceLabels, Term};

/// Beyond this many nodes to read for their labels, one list of every
/// node costs less than the reads.
pub const MAX_NODE_READS: usize = 32;

/// The most requirement checks one admission's term matches may make
/// (existing pods times the requirements of the pod's terms, each term
/// counting one at least): a pod chooses its terms, the cluster its pods,
/// and the product must not outlast the webhook's timeout.
pub const MAX_TERM_MATCHES: usize = 20_000_000;

/// What the affinity check needs to know about the pod.
pub struct AffinityPod<'a> {
    pub namespace: &'a str,
    pub labels: &'a BTreeMap<String, String>,
    pub terms: &'a PodAffinityTerms,
}

/// Why the affinity check gives no [`InterPodAffinity`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// A term of the pod cannot be read: the API server refuses such a pod.
    Pod(String),
    /// A read failed or was refused.
    Lookup { what: String, error: LookupError },
    /// policy-server may not list a kind (`can_i` said no).
    Denied {
        resource: String,
        verbs: Vec<&'static str>,
    },
    /// An answer that does not parse, or a check that would cost too much.
    Invalid(String),
}

/// Reads the cluster's pods and counts the domains of the pod's terms.
pub fn resolve(
    pod: &AffinityPod,
    subject: &Subject,
    cluster: &impl Cluster,
) -> Result<InterPodAffinity, Unresolved> {
    let affinity = compile(&pod.terms.affinity, pod, "podAffinity")?;
    let anti = compile(&pod.terms.anti_affinity, pod, "podAntiAffinity")?;
    let mut namespaces = Namespaces::default();
    if affinity
        .iter()
        .chain(&anti)
        .any(Term::reads_namespace_labels)
    {
        namespaces.read(cluster, subject)?;
    }
    let bytes = list(cluster, subject, PODS, |c| c.pods())?;
    let mut counted = Counted::default();
    let weight: usize = affinity.iter().chain(&anti).map(Term::weight).sum();
    let mut matches = 0usize;
    let scanned = scan_pod_list(&bytes, |existing| {
        // Only pods the scheduler placed count (its cache's assigned pods).
        if existing.node_name.as_str().is_empty() {
            return Ok(());
        }
        matches = matches.saturating_add(weight);
        if matches > MAX_TERM_MATCHES {
            return Err(format!(
                "cannot check pod affinity: its {} terms ({weight} requirements) against the cluster's pods exceed {MAX_TERM_MATCHES} requirement checks",
                affinity.len() + anti.len()
            ));
        }
        counted.count(
            existing,
            &affinity,
            &anti,
            pod,
            &mut namespaces,
            cluster,
            subject,
        )
    });
    match scanned {
        Ok(()) => {}
        Err(ScanError::Invalid(why)) => return Err(Unresolved::Invalid(why)),
        Err(ScanError::Stopped(why)) => {
            return Err(counted.failed.take().unwrap_or(Unresolved::Invalid(why)));
        }
    }
    let nodes = node_labels(&counted, &affinity, cluster, subject)?;
    let domains = |hosts: &BTreeMap<String, BTreeSet<String>>| {
        let mut domains = Domains::new();
        for (node, keys) in hosts {
            let Some(labels) = nodes.get(node) else {
                continue;
            };
            for key in keys {
                if let Some(value) = labels.get(key) {
                    domains
                        .entry(key.clone())
                        .or_default()
                        .insert(value.clone());
                }
            }
        }
        domains
    };
    let keys: BTreeSet<String> = affinity.iter().map(|t| t.topology_key.clone()).collect();
    let hosts = |nodes: &BTreeSet<String>| {
        (nodes.iter())
            .map(|node| (node.clone(), keys.clone()))
            .collect::<BTreeMap<_, _>>()
    };
    let affinity_domains = domains(&hosts(&counted.affinity));
    // The exception for the first pod of a group holds only if both
    // readings of the terms find no pod, and the narrower one matches the
    // pod itself: the stricter of the two schedulers.
    let own_ns = namespaces.get(pod.namespace);
    let first_of_group = domains(&hosts(&counted.affinity_wide)).is_empty()
        && !affinity.is_empty()
        && (affinity.iter()).all(|t| t.matches(pod.namespace, own_ns, |k| own(pod, k)));
    Ok(InterPodAffinity {
        affinity_keys: keys.into_iter().collect(),
        affinity: affinity_domains,
        first_of_group,
        anti_affinity: domains(&counted.anti),
        existing_anti_affinity: domains(&counted.existing),
    })
}

fn own<'a>(pod: &'a AffinityPod, key: &str) -> Option<&'a str> {
    pod.labels.get(key).map(String::as_str)
}

fn compile(
    terms: &[PodAffinityTerm],
    pod: &AffinityPod,
    field: &str,
) -> Result<Vec<Term>, Unresolved> {
    (terms.iter().enumerate())
        .map(|(i, term)| {
            Term::compile(term, pod.namespace, Some(pod.labels)).map_err(|e| {
                Unresolved::Pod(format!(
                    "spec.affinity.{field}.requiredDuringSchedulingIgnoredDuringExecution[{i}].{e}"
                ))
            })
        })
        .collect()
}

/// The nodes that hold counted pods, each with the topology keys read of
/// it.
#[derive(Default)]
struct Counted {
    /// Nodes running a pod that matches every affinity term.
    affinity: BTreeSet<String>,
    /// The same, read as kube-scheduler 1.34 to 1.36.3 read the terms
    /// (`Term::matches_any_scheduler`): a superset.
    affinity_wide: BTreeSet<String>,
    /// Nodes running a pod that matches an anti-affinity term, with the
    /// keys of the terms it matches.
    anti: BTreeMap<String, BTreeSet<String>>,
    /// Nodes running a pod whose own anti-affinity matches the pod.
    existing: BTreeMap<String, BTreeSet<String>>,
    /// Why counting stopped, when a host call failed.
    failed: Option<Unresolved>,
}

impl Counted {
    #[allow(clippy::too_many_arguments)]
    fn count(
        &mut self,
        existing: &ExistingPod,
        affinity: &[Term],
        anti: &[Term],
        pod: &AffinityPod,
        namespaces: &mut Namespaces,
        cluster: &impl Cluster,
        subject: &Subject,
    ) -> Result<(), String> {
        let namespace = existing.namespace.as_str();
        let node = existing.node_name.as_str();
        let ns_labels = namespaces.get(namespace);
        let label = |k: &str| existing.label(k);
        let all = |wide: bool| {
            !affinity.is_empty()
                && (affinity.iter()).all(|t| match wide {
                    true => t.matches_any_scheduler(namespace, ns_labels, label),
                    false => t.matches(namespace, ns_labels, label),
                })
        };
        if all(false) {
            self.affinity.insert(node.to_string());
        }
        if all(true) {
            self.affinity_wide.insert(node.to_string());
        }
        for term in (anti.iter()).filter(|t| t.matches_any_scheduler(namespace, ns_labels, label)) {
            let keys = self.anti.entry(node.to_string()).or_default();
            keys.insert(term.topology_key.clone());
        }
        let Some(raw) = existing.anti_affinity else {
            return Ok(());
        };
        let theirs: Vec<PodAffinityTerm> = serde_json::from_slice(raw)
            .map_err(|e| format!("an existing pod's podAntiAffinity is not readable: {e}"))?;
        for term in &theirs {
            // Validated when that pod was created; one the scheduler could
            // not compile would not count there either.
            let Ok(term) = Term::compile(term, namespace, None) else {
                continue;
            };
            if term.reads_namespace_labels()
                && !namespaces.is_read()
                && let Err(failed) = namespaces.read(cluster, subject)
            {
                self.failed = Some(failed);
                return Err("cannot read namespaces".into());
            }
            // The pod's namespace's labels, or none when it has none.
            let empty = BTreeMap::new();
            let own_ns = Some(namespaces.get(pod.namespace).unwrap_or(&empty));
            if term.matches(pod.namespace, own_ns, |k| own(pod, k)) {
                let keys = self.existing.entry(node.to_string()).or_default();
                keys.insert(term.topology_key);
            }
        }
        Ok(())
    }

    fn nodes(&self) -> BTreeSet<&String> {
        (self.affinity_wide.iter())
            .chain(self.anti.keys())
            .chain(self.existing.keys())
            .collect()
    }
}

/// Every namespace's labels, once read.
#[derive(Default)]
struct Namespaces(Option<NamespaceLabels>);

impl Namespaces {
    fn is_read(&self) -> bool {
        self.0.is_some()
    }

    fn get(&self, name: &str) -> Option<&BTreeMap<String, String>> {
        self.0.as_ref().and_then(|all| all.get(name))
    }

    fn read(&mut self, cluster: &impl Cluster, subject: &Subject) -> Result<(), Unresolved> {
        let bytes = list(cluster, subject, NAMESPACES, |c| c.namespaces())?;
        self.0 = Some(parse_namespaces(&bytes).map_err(Unresolved::Invalid)?);
        Ok(())
    }
}

/// A `v1` NamespaceList's names and labels.
fn parse_namespaces(bytes: &[u8]) -> Result<NamespaceLabels, String> {
    #[derive(serde::Deserialize)]
    struct List {
        #[serde(default)]
        items: Option<Vec<Item>>,
    }
    #[derive(serde::Deserialize)]
    struct Item {
        metadata: Meta,
    }
    #[derive(serde::Deserialize)]
    struct Meta {
        name: String,
        #[serde(default)]
        labels: Option<BTreeMap<String, String>>,
    }
    let invalid = |e: String| {
        format!("the namespace list from the cluster is not a valid NamespaceList: {e}")
    };
    if !crate::json::starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let list: List = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    Ok((list.items.into_iter().flatten())
        .map(|i| (i.metadata.name, i.metadata.labels.unwrap_or_default()))
        .collect())
}

/// Asks whether policy-server may list and watch `resource`, then lists
/// it with `read`.
fn list<C: Cluster, T>(
    cluster: &C,
    subject: &Subject,
    resource: Resource,
    read: impl FnOnce(&C) -> Result<T, LookupError>,
) -> Result<T, Unresolved> {
    let mut denied = Vec::new();
    for verb in ["list", "watch"] {
        match cluster.may(subject, verb, resource) {
            Ok(access) if access.allowed => {}
            Ok(_) => denied.push(verb),
            Err(error) => {
                return Err(Unresolved::Lookup {
                    what: format!(
                        "cannot check whether {} may {verb} {} (kubernetes/can_i)",
                        subject.user,
                        resource.qualified()
                    ),
                    error,
                });
            }
        }
    }
    if !denied.is_empty() {
        return Err(Unresolved::Denied {
            resource: resource.qualified(),
            verbs: denied,
        });
    }
    read(cluster).map_err(|error| Unresolved::Lookup {
        what: format!("cannot list {}", resource.qualified()),
        error,
    })
}

/// The topology labels of the nodes that hold counted pods, by node name:
/// each read by name when they are few, else from one list of every node.
/// A node that no longer exists holds nothing (the scheduler's snapshot
/// has only nodes that exist).
fn node_labels(
    counted: &Counted,
    affinity: &[Term],
    cluster: &impl Cluster,
    subject: &Subject,
) -> Result<BTreeMap<String, BTreeMap<String, String>>, Unresolved> {
    let names = counted.nodes();
    let mut keys: Vec<String> = (affinity.iter().map(|t| t.topology_key.clone()))
        .chain(counted.anti.values().flatten().cloned())
        .chain(counted.existing.values().flatten().cloned())
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = BTreeMap::new();
    let mut keep = |node: &crate::node::Node| {
        let labels = (node.metadata.labels.0.iter())
            .map(|(k, v)| (k.as_str().to_string(), v.as_str().to_string()))
            .collect();
        out.insert(node.name().to_string(), labels);
    };
    if names.len() <= MAX_NODE_READS {
        for name in names {
            let answer =
                cluster
                    .node(name, NodeMasks::Plain)
                    .map_err(|error| Unresolved::Lookup {
                        what: format!("cannot read node {name:?}"),
                        error,
                    })?;
            if let Some(bytes) = answer {
                let node =
                    parse_node(&bytes, KeyFilter::Only(&keys)).map_err(Unresolved::Invalid)?;
                // A host that answers for another node holds nothing here.
                if node.name() == name.as_str() {
                    keep(&node);
                }
            }
        }
        return Ok(out);
    }
    let bytes = list(cluster, subject, NODES, |c| {
        c.kata_nodes(None, NodeMasks::Plain)
    })?;
    let names: BTreeSet<&str> = names.into_iter().map(String::as_str).collect();
    scan_node_list(&bytes, KeyFilter::Only(&keys), |node| {
        if names.contains(node.name()) {
            keep(node);
        }
        std::ops::ControlFlow::Continue(())
    })
    .map_err(Unresolved::Invalid)?;
    Ok(out)
}

#[cfg(test)]
mod tests;
