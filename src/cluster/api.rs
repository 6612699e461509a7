//! The words of a conversation with the cluster: the [`Cluster`] trait,
//! the queries it takes ([`NodeMasks`], [`VolumeKind`], [`Resource`]) and
//! its answers and errors ([`Access`], [`LookupError`]). Apart from
//! `mod.rs` so that the host, the memo and the fake, which all speak them,
//! import them from beside themselves, never from the folder above.

use std::rc::Rc;

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
pub const PODS: Resource = Resource::new("", "pods");
pub const NAMESPACES: Resource = Resource::new("", "namespaces");

/// What inter-pod affinity reads of every pod besides `metadata` (which
/// the host always keeps: namespace and labels): the node it runs on and
/// its required anti-affinity. Fixed, so policy-server keeps one cache of
/// pods, whatever the pods' selectors. Sorted, as kwctl's replay compares
/// them.
pub const POD_FIELD_MASKS: [&str; 2] = [
    "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
    "spec.nodeName",
];

/// The pods the scheduler's cache holds: placed on a node (its
/// assigned-pod filter) and not finished (its pod informer's selector).
/// The API server leaves the others out of the one fixed pod query.
pub const POD_FIELD_SELECTOR: &str = "spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed";

/// Namespaces are read for their labels only (`metadata`); the mask keeps
/// the rest of each object out.
pub const NAMESPACE_FIELD_MASKS: [&str; 1] = ["status.phase"];

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

    /// The ConfigMap `name` in `namespace` (the node shapes); `Ok(None)`
    /// when it does not exist. A direct GET: it fails fast, never hangs.
    fn config_map(&self, namespace: &str, name: &str) -> Result<Option<Vec<u8>>, LookupError>;

    /// The time, in Unix seconds; `None` when it cannot be read.
    fn now(&self) -> Option<i64> {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        since.ok().and_then(|d| i64::try_from(d.as_secs()).ok())
    }

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

    /// The `v1` PodList of every pod placed on a node, in all namespaces
    /// ([`POD_FIELD_SELECTOR`]), with [`POD_FIELD_MASKS`]. Ask
    /// [`Cluster::may`] first.
    fn pods(&self) -> Result<Vec<u8>, LookupError>;

    /// The `v1` NamespaceList, with [`NAMESPACE_FIELD_MASKS`]. Ask
    /// [`Cluster::may`] first.
    fn namespaces(&self) -> Result<Vec<u8>, LookupError>;
}
