//! The facts about a Pod that the decision reads, taken from the raw object.
//!
//! Only these fields are deserialized (`raw`); the object itself is never
//! rebuilt from them (see `mutation.rs`), so fields this crate does not know
//! are safe. The facts are taken by concern: `resources`, `runtime` (what
//! the compatibility check reads) and `volumes`.

mod raw;
mod resources;
mod runtime;
mod volumes;

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, PodAffinityTerm, Toleration};

use crate::incompatible::RuntimeFacts;
use crate::request::AdmissionRequest;
use crate::resources::{PodResources, ResourceList};
use crate::volumes::PodVolume;
use raw::PodObject;
use resources::{pod_resources, resource_list};
use runtime::runtime_facts;

pub use runtime::APP_ARMOR_ANNOTATION_PREFIX;

/// Annotation the kubelet puts on the API mirror of a static pod.
pub const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";

/// What the policy needs to know about one Pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodFacts {
    pub has_spec: bool,
    pub is_mirror: bool,
    pub node_name: Option<String>,
    pub node_selector: BTreeMap<String, String>,
    /// `affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution`.
    pub required_node_affinity: Option<NodeSelector>,
    pub tolerations: Vec<Toleration>,
    /// What the runtime-compatibility check reads (`incompatible`).
    pub runtime: RuntimeFacts,
    /// `spec.runtimeClassName`, `Some("")` included.
    pub runtime_class_name: Option<String>,
    /// `spec.overhead` (normally unset: the RuntimeClass plugin sets it).
    pub overhead: Option<ResourceList>,
    /// Container, init-container and pod-level resources, defaulted as the
    /// API server does before mutating webhooks run.
    pub resources: PodResources,
    /// `(topologyKey, whenUnsatisfiable)` of each topology spread constraint.
    pub topology_spread: Vec<(String, String)>,
    /// `metadata.name`: empty for a pod created with `generateName` (the
    /// API server names it after admission).
    pub name: Option<String>,
    /// `metadata.generateName`: the prefix of the name the API server gives.
    pub generate_name: Option<String>,
    pub namespace: Option<String>,
    /// The volumes that use PersistentVolumeClaims, in spec order.
    pub claims: Vec<PodVolume>,
    /// A container, init container or sidecar mounts a volume with
    /// `recursiveReadOnly: Enabled`: the kubelet then needs the runtime
    /// handler to support it (`IfPossible` falls back, `Disabled` asks
    /// nothing).
    pub recursive_read_only: bool,
    /// `securityContext.supplementalGroupsPolicy: Strict`: the kubelet then
    /// needs the node's CRI to report the feature.
    pub strict_supplemental_groups: bool,
    /// `spec.schedulingGates` names: while any is set, the pod's node
    /// constraints may still be narrowed.
    pub scheduling_gates: Vec<String>,
    /// `metadata.annotations` (the decision annotation counts them against
    /// the API server's limit).
    pub annotations: BTreeMap<String, String>,
    /// `metadata.labels`: what pod affinity terms match.
    pub labels: BTreeMap<String, String>,
    /// The required `podAffinity` and `podAntiAffinity` terms
    /// (`requiredDuringSchedulingIgnoredDuringExecution`).
    pub pod_affinity: PodAffinityTerms,
}

/// A pod's required inter-pod affinity terms, as it sent them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PodAffinityTerms {
    pub affinity: Vec<PodAffinityTerm>,
    pub anti_affinity: Vec<PodAffinityTerm>,
}

impl PodAffinityTerms {
    pub fn is_empty(&self) -> bool {
        self.affinity.is_empty() && self.anti_affinity.is_empty()
    }
}

impl PodFacts {
    /// Reads the facts from the raw JSON of a Pod.
    pub fn from_json(raw: &str) -> Result<PodFacts, String> {
        if !crate::json::starts_as_object(raw.as_bytes()) {
            return Err("the object is not a valid Pod: not a JSON object".into());
        }
        let pod: PodObject =
            serde_json::from_str(raw).map_err(|e| format!("the object is not a valid Pod: {e}"))?;
        let meta = pod.metadata.unwrap_or_default();
        let has_spec = pod.spec.is_some();
        let mut spec = pod.spec.unwrap_or_default();
        let invalid = |e: String| format!("the object is not a valid Pod: {e}");
        let resources = pod_resources(&spec).map_err(invalid)?;
        let overhead = spec
            .overhead
            .as_ref()
            .map(|o| resource_list(Some(o), "spec.overhead"))
            .transpose()
            .map_err(invalid)?;
        let recursive_read_only = (spec.containers.iter().flatten())
            .chain(spec.init_containers.iter().flatten())
            .flat_map(|c| c.volume_mounts.iter().flatten())
            .any(|m| m.recursive_read_only.as_deref() == Some("Enabled"));
        let strict_supplemental_groups = (spec.security_context.as_ref())
            .and_then(|s| s.supplemental_groups_policy.as_deref())
            == Some("Strict");
        let scheduling_gates = (spec.scheduling_gates.take().into_iter().flatten())
            .map(|g| g.name)
            .collect();
        let runtime = runtime_facts(&mut spec, &resources, meta.annotations.as_ref());
        let claims = volumes::claims(spec.volumes);
        let affinity = spec.affinity.unwrap_or_default();
        let pod_affinity = PodAffinityTerms {
            affinity: (affinity.pod_affinity)
                .and_then(|a| a.required_during_scheduling_ignored_during_execution)
                .unwrap_or_default(),
            anti_affinity: (affinity.pod_anti_affinity)
                .and_then(|a| a.required_during_scheduling_ignored_during_execution)
                .unwrap_or_default(),
        };
        Ok(PodFacts {
            has_spec,
            is_mirror: meta
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key(MIRROR_ANNOTATION)),
            node_name: spec.node_name.filter(|n| !n.is_empty()),
            node_selector: spec.node_selector.unwrap_or_default(),
            required_node_affinity: (affinity.node_affinity)
                .and_then(|na| na.required_during_scheduling_ignored_during_execution),
            tolerations: spec.tolerations.unwrap_or_default(),
            runtime,
            // "" is kept: the API server refuses it, the policy must not
            // give it a class (decision.rs).
            runtime_class_name: spec.runtime_class_name,
            overhead,
            resources,
            topology_spread: spec
                .topology_spread_constraints
                .unwrap_or_default()
                .into_iter()
                .map(|c| (c.topology_key, c.when_unsatisfiable))
                .collect(),
            name: meta.name.filter(|n| !n.is_empty()),
            generate_name: meta.generate_name.filter(|n| !n.is_empty()),
            namespace: meta.namespace.filter(|n| !n.is_empty()),
            claims,
            recursive_read_only,
            strict_supplemental_groups,
            scheduling_gates,
            annotations: meta.annotations.unwrap_or_default(),
            labels: meta.labels.unwrap_or_default(),
            pod_affinity,
        })
    }
}

/// The namespace the pod is created in: the request's, else the pod's
/// `metadata.namespace`, else `default`, where the API server puts a pod
/// that names none.
pub fn pod_namespace<'a>(request: &'a AdmissionRequest, pod: &'a PodFacts) -> &'a str {
    (request.namespace.as_ref().map(|n| n.as_str()))
        .filter(|n| !n.is_empty())
        .or(pod.namespace.as_deref())
        .unwrap_or("default")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_scheduling_fields() {
        let facts = PodFacts::from_json(
            r#"{"metadata":{"name":"p","annotations":{"kubernetes.io/config.mirror":"x"}},
                "spec":{"nodeName":"n1","nodeSelector":{"a":""},"hostPID":true,"hostIPC":false,
                        "tolerations":[{"key":"k","operator":"Exists"}],
                        "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":
                            {"nodeSelectorTerms":[{"matchFields":[{"key":"metadata.name","operator":"In","values":["n1"]}]}]}}},
                        "runtimeClassName":"gvisor","futureField":{"deep":[1,2]}}}"#,
        )
        .unwrap();
        assert!(facts.has_spec && facts.is_mirror);
        assert_eq!(facts.node_name.as_deref(), Some("n1"));
        assert_eq!(facts.node_selector.get("a").map(String::as_str), Some(""));
        assert_eq!(facts.runtime.host_namespaces, vec!["hostPID"]);
        assert_eq!(facts.tolerations.len(), 1);
        assert_eq!(
            facts
                .required_node_affinity
                .unwrap()
                .node_selector_terms
                .len(),
            1
        );
        assert_eq!(facts.runtime_class_name.as_deref(), Some("gvisor"));
    }

    #[test]
    fn empty_strings_and_nulls_mean_unset() {
        let facts = PodFacts::from_json(
            r#"{"metadata":{"generateName":"web-"},"spec":{"nodeName":"","runtimeClassName":"","tolerations":null}}"#,
        )
        .unwrap();
        assert_eq!(facts.node_name, None);
        assert_eq!(facts.runtime_class_name.as_deref(), Some(""));
        assert!(facts.tolerations.is_empty() && !facts.is_mirror);
        assert!(!PodFacts::from_json("{}").unwrap().has_spec);
    }

    #[test]
    fn the_namespace_is_the_requests_then_the_pods_then_default() {
        let request =
            |raw: &'static str| -> AdmissionRequest<'static> { serde_json::from_str(raw).unwrap() };
        let named = PodFacts::from_json(r#"{"metadata":{"namespace":"own"}}"#).unwrap();
        let unnamed = PodFacts::from_json("{}").unwrap();
        let tenant = request(r#"{"namespace":"tenant"}"#);
        let empty = request(r#"{"namespace":""}"#);
        assert_eq!(pod_namespace(&tenant, &named), "tenant");
        assert_eq!(pod_namespace(&empty, &named), "own");
        assert_eq!(pod_namespace(&empty, &unnamed), "default");
    }

    #[test]
    fn malformed_pods_are_errors_not_panics() {
        for bad in [
            "[]",
            "{\"spec\":{\"tolerations\":\"all\"}}",
            "{\"spec\":{\"hostNetwork\":\"yes\"}}",
            "nope",
        ] {
            assert!(
                PodFacts::from_json(bad)
                    .unwrap_err()
                    .contains("not a valid Pod"),
                "{bad}"
            );
        }
    }
}
