//! The cluster as Kubewarden's host capabilities show it: the requests the
//! policy sends (fixed, so that policy-server and kwctl's replay see the
//! same ones every time) and how their answers are read.

use std::collections::BTreeSet;
use std::rc::Rc;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ResourceAttributes,
    SubjectAccessReview,
};

use super::api::{
    Access, Cluster, LookupError, LookupErrorKind, NAMESPACE_FIELD_MASKS, NODES, NodeList,
    NodeMasks, POD_FIELD_MASKS, POD_FIELD_SELECTOR, Resource, Subject, VolumeKind,
};

/// Every one-shot read (`get_resource`, `can_i`) skips policy-server's
/// cache. That cache is one mutex per kind of call, held across the API
/// request (policy-evaluator's `#[cached(sync_writes = "default")]`), and
/// kube-rs waits 295 s for an answer on a connection that went silent: one
/// read stuck there stalls every admission's reads for five minutes.
/// Uncached, a stuck read stalls its own admission only (RELIABILITY.md,
/// "A silent API connection"). The price is one API request per read.
pub const DISABLE_CACHE: bool = true;

pub fn runtime_class_request(name: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: "node.k8s.io/v1".to_string(),
        kind: "RuntimeClass".to_string(),
        name: name.to_string(),
        namespace: None,
        disable_cache: DISABLE_CACHE,
        field_masks: None,
    }
}

pub fn config_map_request(namespace: &str, name: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: "v1".to_string(),
        kind: "ConfigMap".to_string(),
        name: name.to_string(),
        namespace: Some(namespace.to_string()),
        disable_cache: DISABLE_CACHE,
        field_masks: None,
    }
}

pub fn node_request(name: &str, masks: NodeMasks) -> GetResourceRequest {
    GetResourceRequest {
        api_version: "v1".to_string(),
        kind: "Node".to_string(),
        name: name.to_string(),
        namespace: None,
        disable_cache: DISABLE_CACHE,
        field_masks: Some(masks.fields().iter().map(|m| m.to_string()).collect()),
    }
}

pub fn kata_nodes_request(
    label_selector: Option<&str>,
    masks: NodeMasks,
) -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: "v1".to_string(),
        kind: "Node".to_string(),
        label_selector: label_selector.map(str::to_string),
        field_selector: None,
        field_masks: Some(
            masks
                .fields()
                .iter()
                .map(|m| m.to_string())
                .collect::<BTreeSet<_>>(),
        ),
    }
}

pub fn object_request(kind: VolumeKind, namespace: Option<&str>, name: &str) -> GetResourceRequest {
    GetResourceRequest {
        api_version: kind.api_version().to_string(),
        kind: kind.kind().to_string(),
        name: name.to_string(),
        namespace: namespace.map(str::to_string),
        disable_cache: DISABLE_CACHE,
        field_masks: kind
            .field_masks()
            .map(|masks| masks.iter().map(|m| m.to_string()).collect()),
    }
}

pub fn objects_request(kind: VolumeKind) -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: kind.api_version().to_string(),
        kind: kind.kind().to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: kind
            .field_masks()
            .map(|masks| masks.iter().map(|m| m.to_string()).collect()),
    }
}

/// The one pod query: every pod placed on a node, masked.
pub fn pods_request() -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: "v1".to_string(),
        kind: "Pod".to_string(),
        label_selector: None,
        field_selector: Some(POD_FIELD_SELECTOR.to_string()),
        field_masks: Some(POD_FIELD_MASKS.iter().map(|m| m.to_string()).collect()),
    }
}

pub fn namespaces_request() -> ListAllResourcesRequest {
    ListAllResourcesRequest {
        api_version: "v1".to_string(),
        kind: "Namespace".to_string(),
        label_selector: None,
        field_selector: None,
        field_masks: Some(
            NAMESPACE_FIELD_MASKS
                .iter()
                .map(|m| m.to_string())
                .collect(),
        ),
    }
}

pub fn can_i_request(subject: &Subject, verb: &str) -> CanIRequest {
    access_request(subject, verb, NODES)
}

pub fn access_request(subject: &Subject, verb: &str, resource: Resource) -> CanIRequest {
    CanIRequest {
        subject_access_review: SubjectAccessReview {
            groups: Some(subject.groups.clone()),
            resource_attributes: ResourceAttributes {
                // Cluster-wide: no namespace.
                group: Some(resource.group.to_string()),
                name: None,
                namespace: None,
                resource: resource.resource.to_string(),
                subresource: None,
                verb: verb.to_string(),
                version: None,
            },
            user: subject.user.to_string(),
        },
        disable_cache: DISABLE_CACHE,
    }
}

/// The cluster as Kubewarden's host capabilities show it.
pub struct HostCluster;

impl HostCluster {
    fn call(operation: &str, request: &impl serde::Serialize) -> Result<Vec<u8>, String> {
        let payload = serde_json::to_vec(request)
            .map_err(|e| format!("cannot encode the {operation} request: {e}"))?;
        kubewarden_policy_sdk::wapc_guest::host_call(
            "kubewarden",
            "kubernetes",
            operation,
            &payload,
        )
        .map_err(|e| e.to_string())
    }
}

/// `get_resource`, with an object that does not exist as `None`.
fn get_optional(request: &GetResourceRequest) -> Result<Option<Vec<u8>>, LookupError> {
    match HostCluster::call("get_resource", request).map_err(LookupError::from_host) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind == LookupErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

impl Cluster for HostCluster {
    fn runtime_class(&self, name: &str) -> Result<Option<Vec<u8>>, LookupError> {
        get_optional(&runtime_class_request(name))
    }

    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<Vec<u8>>, LookupError> {
        get_optional(&config_map_request(namespace, name))
    }

    fn kata_nodes(
        &self,
        label_selector: Option<&str>,
        masks: NodeMasks,
    ) -> Result<NodeList, LookupError> {
        Self::call(
            "list_resources_all",
            &kata_nodes_request(label_selector, masks),
        )
        .map(Rc::new)
        .map_err(LookupError::from_host)
    }

    fn node(&self, name: &str, masks: NodeMasks) -> Result<Option<Vec<u8>>, LookupError> {
        get_optional(&node_request(name, masks))
    }

    /// Through the SDK's drain (the `kubewarden`/`tracing`/`log` host
    /// call); its error is dropped rather than fused into a panic.
    fn log_decision(&self, message: &str, namespace: &str, pod: &str, decision: &str) {
        use slog::Drain;
        let drain = kubewarden_policy_sdk::logging::KubewardenDrain::default().ignore_res();
        let log = slog::Logger::root(drain, slog::o!());
        slog::info!(log, "{}", message; "namespace" => namespace, "pod" => pod, "decision" => decision);
    }

    fn may(
        &self,
        subject: &Subject,
        verb: &str,
        resource: Resource,
    ) -> Result<Access, LookupError> {
        let bytes = Self::call("can_i", &access_request(subject, verb, resource))
            .map_err(LookupError::from_host)?;
        parse_access(&bytes)
    }

    fn object(
        &self,
        kind: VolumeKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Vec<u8>>, LookupError> {
        get_optional(&object_request(kind, namespace, name))
    }

    fn objects(&self, kind: VolumeKind) -> Result<Vec<u8>, LookupError> {
        Self::call("list_resources_all", &objects_request(kind)).map_err(LookupError::from_host)
    }

    fn pods(&self) -> Result<Vec<u8>, LookupError> {
        Self::call("list_resources_all", &pods_request()).map_err(LookupError::from_host)
    }

    fn namespaces(&self) -> Result<Vec<u8>, LookupError> {
        Self::call("list_resources_all", &namespaces_request()).map_err(LookupError::from_host)
    }
}

/// Reads a `can_i` answer (a SubjectAccessReviewStatus).
pub fn parse_access(bytes: &[u8]) -> Result<Access, LookupError> {
    serde_json::from_slice(bytes).map_err(|e| LookupError {
        kind: LookupErrorKind::Failed,
        message: format!("the can_i answer is not a SubjectAccessReviewStatus: {e}"),
    })
}
