//! What the policy asks the cluster, behind a trait so that the
//! decision stays pure and testable without a host.
//!
//! Answers are raw JSON bytes: parsing belongs to the decision, where a
//! malformed answer is one more documented outcome.

use std::collections::BTreeSet;
use std::rc::Rc;

use kubewarden_policy_sdk::host_capabilities::kubernetes::{
    CanIRequest, GetResourceRequest, ListAllResourcesRequest, ResourceAttributes,
    SubjectAccessReview,
};
use serde::Deserialize;

/// The only node fields the policy reads besides `metadata`, which the host
/// always keeps, with `runtimeHandlerCheck: off`. Fixed, so policy-server
/// serves every admission from one watch-backed cache.
pub const NODE_FIELD_MASKS: [&str; 3] = ["spec.taints", "spec.unschedulable", "status.allocatable"];

/// [`NODE_FIELD_MASKS`] and the names of the runtime handlers the node's
/// container runtime loaded: what every pod needs to tell a Kata node.
/// policy-server's field masks walk into arrays, so each entry keeps only
/// its `name`, about a quarter of the entry (BENCHMARKS.md, "Runtime
/// handlers").
pub const NODE_HANDLER_NAME_MASKS: [&str; 4] = [
    "spec.taints",
    "spec.unschedulable",
    "status.allocatable",
    "status.runtimeHandlers.name",
];

/// [`NODE_FIELD_MASKS`], the whole runtime handler entries, features
/// included, and the CRI's own `status.features`: asked only for the rare
/// pods whose start depends on a feature (`hostUsers: false`,
/// `recursiveReadOnly: Enabled`, `supplementalGroupsPolicy: Strict`). A
/// second fixed query, so a second cache, never one per pod. Sorted, as
/// kwctl's replay compares them.
pub const NODE_HANDLER_FEATURE_MASKS: [&str; 5] = [
    "spec.taints",
    "spec.unschedulable",
    "status.allocatable",
    "status.features",
    "status.runtimeHandlers",
];

/// Which of the fixed node queries to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeMasks {
    /// `runtimeHandlerCheck: off`: no handler is read.
    Plain,
    /// The handlers' names.
    HandlerNames,
    /// The handlers with their features.
    HandlerFeatures,
}

impl NodeMasks {
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            NodeMasks::Plain => &NODE_FIELD_MASKS,
            NodeMasks::HandlerNames => &NODE_HANDLER_NAME_MASKS,
            NodeMasks::HandlerFeatures => &NODE_HANDLER_FEATURE_MASKS,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LookupErrorKind {
    /// The policy-server service account may not read the resource (RBAC),
    /// or the policy was not granted the resource in `contextAwareResources`.
    Forbidden,
    /// The object does not exist.
    NotFound,
    /// A replayed session (`kwctl run --replay-host-capabilities-interactions`,
    /// or kwrun) has no answer for the call: its next recorded request is
    /// another one, or none is left. Never from a cluster.
    Replay,
    /// Anything else: timeouts, API errors, host errors.
    Failed,
}

/// What a [`LookupErrorKind::Replay`] means, in the operator's words: the
/// usual causes of a recorded session that no longer matches. It comes
/// before the host's (long) text, which names the request expected and the
/// one made, so that it survives the 255-byte cut of the warning.
pub const REPLAY_MISS: &str = "the recorded session has no answer for this request \
     (recorded for another policyServerServiceAccount, pod or settings?)";

/// How kwctl's replay (policy-evaluator) says a call got no answer, a
/// request other than the next recorded one or none left; kwrun says the
/// same.
const REPLAY_ERRORS: [&str; 2] = ["Replay error", "the list of recorded responses is empty"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupError {
    pub kind: LookupErrorKind,
    pub message: String,
}

impl LookupError {
    /// Classifies a host error message. The host passes on the API server's
    /// error text, so status reasons are recognised by their names; policy-server
    /// reports a missing object as "Cannot find <apiVersion>/<kind> named ...".
    /// A replay's miss comes first: its text quotes the requests, whatever
    /// they contain. Its message starts with [`REPLAY_MISS`].
    pub fn from_host(message: String) -> LookupError {
        let has = |needle: &str| message.contains(needle);
        let kind = if REPLAY_ERRORS.iter().any(|e| has(e)) {
            LookupErrorKind::Replay
        } else if has("Forbidden") || has("forbidden") || has("has not been granted access") {
            LookupErrorKind::Forbidden
        } else if has("Cannot find ") || has("NotFound") || has("not found") {
            LookupErrorKind::NotFound
        } else {
            LookupErrorKind::Failed
        };
        // Prefixes added by the waPC guest and by policy-evaluator say nothing
        // to the user; neither does the backtrace a host started with
        // RUST_BACKTRACE=1 appends to its errors (anyhow's `{:?}`).
        let mut text = message.as_str();
        for prefix in ["Host error: ", "Callback evaluation failure: "] {
            text = text.strip_prefix(prefix).unwrap_or(text);
        }
        if let Some(at) = text.find("Stack backtrace:") {
            text = text.get(..at).unwrap_or(text);
        }
        let text = one_line(text);
        LookupError {
            message: match kind {
                LookupErrorKind::Replay => format!("{REPLAY_MISS}: {text}"),
                _ => text,
            },
            kind,
        }
    }
}

/// A SubjectAccessReview's answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
pub struct Access {
    #[serde(default)]
    pub allowed: bool,
    /// The authorizer's explanation, if it gave one.
    #[serde(default)]
    pub reason: Option<String>,
}

/// Who asks, in a SubjectAccessReview: a user name and its groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Subject<'a> {
    pub user: &'a str,
    pub groups: Vec<String>,
}

/// `text` on one line: every run of whitespace that holds a line break
/// becomes one space (warnings and audit annotations are single lines).
fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for (i, line) in text
        .trim()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
    {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(line.trim());
    }
    out
}

/// A kind the volume check reads, with what the host needs to name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VolumeKind {
    PersistentVolumeClaim,
    PersistentVolume,
    StorageClass,
}

impl VolumeKind {
    pub fn api_version(self) -> &'static str {
        match self {
            VolumeKind::StorageClass => "storage.k8s.io/v1",
            _ => "v1",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            VolumeKind::PersistentVolumeClaim => "PersistentVolumeClaim",
            VolumeKind::PersistentVolume => "PersistentVolume",
            VolumeKind::StorageClass => "StorageClass",
        }
    }

    /// The API resource, for `can_i` and RBAC hints.
    pub fn resource(self) -> Resource {
        match self {
            VolumeKind::PersistentVolumeClaim => Resource::new("", "persistentvolumeclaims"),
            VolumeKind::PersistentVolume => Resource::new("", "persistentvolumes"),
            VolumeKind::StorageClass => Resource::new("storage.k8s.io", "storageclasses"),
        }
    }

    /// The fields a read of this kind asks for besides `metadata` (which the
    /// host always keeps): what the binder reads, fixed per kind, so that
    /// policy-server keeps one cache for each. StorageClasses are small and
    /// their fields are not under `spec`: read whole.
    pub fn field_masks(self) -> Option<&'static [&'static str]> {
        match self {
            VolumeKind::PersistentVolumeClaim => Some(&PVC_FIELD_MASKS),
            VolumeKind::PersistentVolume => Some(&PV_FIELD_MASKS),
            VolumeKind::StorageClass => None,
        }
    }
}

/// What the volume check reads of a claim. `metadata` is never masked:
/// policy-server applies field masks to everything but `metadata` (DESIGN,
/// "Host capabilities"; checked against policy-server 1.36 by the
/// real-cluster suite), so `metadata.uid`, which a PV's claimRef is
/// compared with, always comes.
pub const PVC_FIELD_MASKS: [&str; 8] = [
    "spec.accessModes",
    "spec.resources",
    "spec.selector",
    "spec.storageClassName",
    "spec.volumeAttributesClassName",
    "spec.volumeMode",
    "spec.volumeName",
    "status.phase",
];

/// What the volume check reads of a PV.
pub const PV_FIELD_MASKS: [&str; 8] = [
    "spec.accessModes",
    "spec.capacity",
    "spec.claimRef",
    "spec.nodeAffinity",
    "spec.storageClassName",
    "spec.volumeAttributesClassName",
    "spec.volumeMode",
    "status.phase",
];

/// An API resource, as a SubjectAccessReview names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Resource {
    pub group: &'static str,
    pub resource: &'static str,
}

impl Resource {
    pub const fn new(group: &'static str, resource: &'static str) -> Resource {
        Resource { group, resource }
    }

    /// `nodes`, `storageclasses.storage.k8s.io`: how RBAC messages name it.
    pub fn qualified(self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

pub const NODES: Resource = Resource::new("", "nodes");

/// A NodeList's bytes, shared: an admission that judges several classes
/// reads each list once, and every class parses the same bytes.
pub type NodeList = Rc<Vec<u8>>;

pub trait Cluster {
    /// The `node.k8s.io/v1` RuntimeClass `name`; `Ok(None)` when it does not exist.
    fn runtime_class(&self, name: &str) -> Result<Option<Vec<u8>>, LookupError>;

    /// The `v1` NodeList of nodes matching `label_selector` (all nodes when
    /// `None`), masked with `masks`.
    fn kata_nodes(
        &self,
        label_selector: Option<&str>,
        masks: NodeMasks,
    ) -> Result<NodeList, LookupError>;

    /// The `v1` Node `name`, masked with `masks`; `Ok(None)` when it does
    /// not exist. A direct GET: it fails fast, never hangs.
    fn node(&self, name: &str, masks: NodeMasks) -> Result<Option<Vec<u8>>, LookupError>;

    /// Writes one admission's decision to policy-server's log, at info
    /// (`logDecisions`): `message` with `namespace`, `pod` and `decision`
    /// as fields. A failed write is ignored: a log line never changes a
    /// decision. Nothing, by default.
    fn log_decision(&self, _message: &str, _namespace: &str, _pod: &str, _decision: &str) {}

    /// Whether `subject` may `verb` (cluster-wide) the core `v1` nodes.
    fn may_on_nodes(&self, subject: &Subject, verb: &str) -> Result<Access, LookupError> {
        self.may(subject, verb, NODES)
    }

    /// Whether `subject` may `verb` `resource` cluster-wide.
    fn may(&self, subject: &Subject, verb: &str, resource: Resource)
    -> Result<Access, LookupError>;

    /// The object `name` of `kind` (in `namespace` when namespaced), with
    /// [`VolumeKind::field_masks`];
    /// `Ok(None)` when it does not exist. A direct GET: it fails fast.
    fn object(
        &self,
        kind: VolumeKind,
        namespace: Option<&str>,
        name: &str,
    ) -> Result<Option<Vec<u8>>, LookupError>;

    /// Every object of `kind` (a cluster-scoped kind), with
    /// [`VolumeKind::field_masks`]. Ask [`Cluster::may`] first: a list
    /// policy-server may not make never answers.
    fn objects(&self, kind: VolumeKind) -> Result<Vec<u8>, LookupError>;
}

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
}

/// Reads a `can_i` answer (a SubjectAccessReviewStatus).
pub fn parse_access(bytes: &[u8]) -> Result<Access, LookupError> {
    serde_json::from_slice(bytes).map_err(|e| LookupError {
        kind: LookupErrorKind::Failed,
        message: format!("the can_i answer is not a SubjectAccessReviewStatus: {e}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_stable_node_query() {
        let json = serde_json::to_value(kata_nodes_request(
            Some("katacontainers.io/kata-runtime=true"),
            NodeMasks::Plain,
        ))
        .unwrap();
        assert_eq!(
            json,
            serde_json::json!({"api_version": "v1", "kind": "Node",
                "label_selector": "katacontainers.io/kata-runtime=true", "field_selector": null,
                "field_masks": ["spec.taints", "spec.unschedulable", "status.allocatable"]})
        );
        // The masks go out in the order kwctl's replay compares them in
        // (sorted), whichever query it is.
        for (masks, status) in [
            (
                NodeMasks::HandlerNames,
                &["status.runtimeHandlers.name"][..],
            ),
            (
                NodeMasks::HandlerFeatures,
                &["status.features", "status.runtimeHandlers"][..],
            ),
        ] {
            let mut expected = vec!["spec.taints", "spec.unschedulable", "status.allocatable"];
            expected.extend(status);
            let expected = serde_json::json!(expected);
            let list = serde_json::to_value(kata_nodes_request(None, masks)).unwrap();
            assert_eq!(list["field_masks"], expected);
            let get = serde_json::to_value(node_request("w1", masks)).unwrap();
            assert_eq!(get["field_masks"], expected);
        }
        let rc = serde_json::to_value(runtime_class_request("kata")).unwrap();
        assert_eq!(
            rc,
            serde_json::json!({"api_version": "node.k8s.io/v1", "kind": "RuntimeClass", "name": "kata",
                "namespace": null, "disable_cache": true, "field_masks": null})
        );
    }

    /// One read stuck on a silent connection must hold up its own
    /// admission only: no one-shot read goes through policy-server's
    /// locked cache.
    #[test]
    fn every_one_shot_read_skips_the_shared_cache() {
        let subject = Subject {
            user: "u",
            groups: vec![],
        };
        let gets = [
            runtime_class_request("kata"),
            node_request("w1", NodeMasks::HandlerNames),
        ]
        .into_iter()
        .chain(
            [
                VolumeKind::PersistentVolumeClaim,
                VolumeKind::PersistentVolume,
                VolumeKind::StorageClass,
            ]
            .map(|kind| object_request(kind, Some("ns"), "x")),
        );
        for get in gets {
            assert!(get.disable_cache, "{} {}", get.kind, get.name);
        }
        for verb in ["list", "watch"] {
            assert!(can_i_request(&subject, verb).disable_cache);
            assert!(
                access_request(&subject, verb, VolumeKind::PersistentVolume.resource())
                    .disable_cache
            );
        }
    }

    #[test]
    fn volume_reads_are_fixed_masked_queries() {
        let claim = serde_json::to_value(object_request(
            VolumeKind::PersistentVolumeClaim,
            Some("default"),
            "data-0",
        ))
        .unwrap();
        assert_eq!(claim["namespace"], "default");
        assert_eq!(claim["field_masks"], serde_json::json!(PVC_FIELD_MASKS));
        let class =
            serde_json::to_value(object_request(VolumeKind::StorageClass, None, "gp3")).unwrap();
        assert_eq!(class["api_version"], "storage.k8s.io/v1");
        assert_eq!(class["field_masks"], serde_json::Value::Null);
        assert_eq!(
            serde_json::to_value(objects_request(VolumeKind::PersistentVolume)).unwrap(),
            serde_json::json!({"api_version": "v1", "kind": "PersistentVolume", "label_selector": null,
                "field_selector": null, "field_masks": PV_FIELD_MASKS})
        );
        let subject = Subject {
            user: "u",
            groups: vec![],
        };
        let access = serde_json::to_value(access_request(
            &subject,
            "list",
            VolumeKind::StorageClass.resource(),
        ))
        .unwrap();
        assert_eq!(
            access["subject_access_review"]["resource_attributes"]["group"],
            "storage.k8s.io"
        );
        assert_eq!(
            access["subject_access_review"]["resource_attributes"]["resource"],
            "storageclasses"
        );
        assert_eq!(
            VolumeKind::StorageClass.resource().qualified(),
            "storageclasses.storage.k8s.io"
        );
    }

    #[test]
    fn the_access_question_is_a_subject_access_review_on_nodes() {
        let subject = Subject {
            user: "system:serviceaccount:kubewarden:policy-server",
            groups: vec!["system:serviceaccounts".into()],
        };
        assert_eq!(
            serde_json::to_value(can_i_request(&subject, "watch")).unwrap(),
            serde_json::json!({"subject_access_review": {"groups": ["system:serviceaccounts"],
                "resource_attributes": {"group": "", "name": null, "namespace": null, "resource": "nodes",
                    "subresource": null, "verb": "watch", "version": null},
                "user": "system:serviceaccount:kubewarden:policy-server"}, "disable_cache": true})
        );
        assert_eq!(
            parse_access(br#"{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding"}"#),
            Ok(Access {
                allowed: true,
                reason: Some("RBAC: allowed by ClusterRoleBinding".into())
            })
        );
        assert!(
            !parse_access(br#"{"allowed":false,"denied":true}"#)
                .unwrap()
                .allowed
        );
        assert!(
            !parse_access(b"{}").unwrap().allowed,
            "no answer is no permission"
        );
        assert!(
            parse_access(b"<html>")
                .unwrap_err()
                .message
                .contains("not a SubjectAccessReviewStatus")
        );
    }

    #[test]
    fn host_errors_lose_backtraces_and_line_breaks() {
        let noisy = "Host error: Callback evaluation failure: ApiError: nodes is forbidden: User \"x\" cannot list \
                     resource \"nodes\": Forbidden (Status { code: 403 })\n\nCaused by:\n    forbidden\n\n\
                     Stack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n   1: policy_evaluator::x\n";
        let e = LookupError::from_host(noisy.into());
        assert_eq!(
            e.message,
            "ApiError: nodes is forbidden: User \"x\" cannot list resource \"nodes\": Forbidden (Status { code: 403 }) \
             Caused by: forbidden"
        );
        assert_eq!(e.kind, LookupErrorKind::Forbidden);
        assert_eq!(LookupError::from_host("plain".into()).message, "plain");
        assert_eq!(
            LookupError::from_host("Host error: a\r\n  b".into()).message,
            "a b"
        );
    }

    /// kwctl's replay texts (policy-evaluator's), as the guest receives them.
    const KWCTL_MISMATCH: &str = "Host error: Callback evaluation failure: Replay error: unexpected request. \
        Was expecting KubernetesCanI { request: SubjectAccessReview { groups: Some([\"system:serviceaccounts\"]), \
        resource_attributes: ResourceAttributes { group: Some(\"\"), name: None, namespace: None, resource: \"nodes\", \
        subresource: None, verb: \"list\", version: None }, user: \"system:serviceaccount:kubewarden:policy-server\" }, \
        disable_cache: false }, got KubernetesCanI { request: SubjectAccessReview { groups: Some([\"system:serviceaccounts\"]), \
        resource_attributes: ResourceAttributes { group: Some(\"\"), name: None, namespace: None, resource: \"nodes\", \
        subresource: None, verb: \"list\", version: None }, user: \"system:serviceaccount:kubewarden:kata-runtime-policy\" }, \
        disable_cache: false } instead";
    const KWCTL_EXHAUSTED: &str =
        "Host error: Callback evaluation failure: the list of recorded responses is empty";

    #[test]
    fn a_replay_miss_says_what_it_means_then_the_hosts_text() {
        let e = LookupError::from_host(KWCTL_MISMATCH.into());
        assert_eq!(e.kind, LookupErrorKind::Replay);
        assert_eq!(
            e.message,
            format!(
                "the recorded session has no answer for this request (recorded for another \
                 policyServerServiceAccount, pod or settings?): {}",
                KWCTL_MISMATCH
                    .strip_prefix("Host error: Callback evaluation failure: ")
                    .unwrap()
            )
        );
        assert!(e.message.ends_with("} instead"), "{}", e.message);
        let e = LookupError::from_host(KWCTL_EXHAUSTED.into());
        assert_eq!(e.kind, LookupErrorKind::Replay);
        assert_eq!(
            e.message,
            format!("{REPLAY_MISS}: the list of recorded responses is empty")
        );
        // The requests it quotes may name anything: still a replay miss,
        // never a missing object (which would read as "does not exist").
        for quoted in ["\"not found\"", "Forbidden", "NotFound"] {
            let text = format!(
                "Replay error: unexpected request. Was expecting KubernetesGetResource {{ name: {quoted:?} }}, got X instead"
            );
            assert_eq!(
                LookupError::from_host(text).kind,
                LookupErrorKind::Replay,
                "{quoted}"
            );
        }
        // Without a replay, the host's text is left as it was.
        assert_eq!(LookupError::from_host("timeout".into()).message, "timeout");
    }

    #[test]
    fn classifies_host_errors() {
        let forbidden = LookupError::from_host(
            "Host error: nodes is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" cannot list resource \"nodes\"".into(),
        );
        assert_eq!(forbidden.kind, LookupErrorKind::Forbidden);
        let kind = |m: &str| LookupError::from_host(m.into()).kind;
        assert_eq!(kind("Host error: timeout"), LookupErrorKind::Failed);
        assert_eq!(
            LookupError::from_host("Host error: Callback evaluation failure: timeout".into())
                .message,
            "timeout"
        );
        assert_eq!(
            kind(
                "Host error: Callback evaluation failure: Cannot find node.k8s.io/v1/RuntimeClass named 'kata' inside of namespace 'None'"
            ),
            LookupErrorKind::NotFound
        );
        assert_eq!(
            kind("runtimeclasses.node.k8s.io \"kata\" not found"),
            LookupErrorKind::NotFound
        );
        assert_eq!(
            kind("Policy has not been granted access to Kubernetes v1/Node resources"),
            LookupErrorKind::Forbidden
        );
        assert_eq!(
            kind("runtimeclasses.node.k8s.io \"kata\" is forbidden: not found in cache"),
            LookupErrorKind::Forbidden
        );
    }
}
