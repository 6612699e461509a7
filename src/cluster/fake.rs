//! A cluster for tests: it answers from JSON it was given and records every
//! call, so that a test can check what the policy asked, in which order.
//! Compiled for the crate's own tests and, with the `testing` feature, for
//! the integration tests and the fuzz targets; never in the shipped module.
//!
//! ```
//! use kata_runtime_policy::cluster::{Cluster, FakeCluster, NodeMasks, Subject};
//! use serde_json::json;
//!
//! let worker = json!({"metadata": {"name": "w1"}, "spec": {"taints": []}});
//! let cluster = FakeCluster::new(vec![worker]) // the NodeList's items
//!     .class(None) // no RuntimeClass exists
//!     .deny("watch", "nodes"); // what `can_i` refuses
//! assert_eq!(cluster.runtime_class("kata"), Ok(None));
//! let subject = Subject { user: "u", groups: vec![] };
//! assert!(!cluster.may_on_nodes(&subject, "watch").unwrap().allowed);
//! assert!(cluster.node("w1", NodeMasks::Plain).unwrap().is_some());
//! assert_eq!(
//!     cluster.queries(),
//!     ["RuntimeClass kata", "CanI watch nodes as u []", "Node w1"]
//! );
//! ```
//!
//! By default it answers as policy-server does: each node masked with the
//! query's field masks, `can_i` allowing everything, a missing object as
//! `None`. The list is the nodes given, whatever the label selector (as if
//! the API server had applied it): [`FakeCluster::selecting`] applies it.

// Test support: a broken expectation panics; and reading a `Value` by
// index never does (a missing key reads as null).
#![allow(clippy::panic, clippy::indexing_slicing)]

use std::cell::RefCell;
use std::fmt;

use serde_json::{Value, json};

use super::api::{
    Access, Cluster, LookupError, LookupErrorKind, NodeList, NodeMasks, Resource, Subject,
    VolumeKind,
};

/// One call the policy made, as the fake recorded it (`log_decision` is
/// kept apart: see [`FakeCluster::logged`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Call {
    RuntimeClass(String),
    /// A node list: the label selector and the masks.
    Nodes {
        selector: Option<String>,
        masks: NodeMasks,
    },
    /// A node read by name.
    Node {
        name: String,
        masks: NodeMasks,
    },
    /// A `can_i` question.
    May {
        verb: String,
        resource: Resource,
        user: String,
        groups: Vec<String>,
    },
    /// A volume object read by name.
    Object {
        kind: VolumeKind,
        namespace: Option<String>,
        name: String,
    },
    /// Every object of a kind.
    Objects(VolumeKind),
    /// A ConfigMap read by namespace and name.
    ConfigMap(String, String),
    /// The pod list.
    Pods,
    /// The namespace list.
    Namespaces,
}

/// `RuntimeClass kata`, `Nodes Some("a=b")`, `Node w1`, `CanI list nodes
/// as <user> [<groups>]`, `Get PersistentVolumeClaim ns/name`, `List
/// PersistentVolume`.
impl fmt::Display for Call {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Call::RuntimeClass(name) => write!(f, "RuntimeClass {name}"),
            Call::Nodes { selector, .. } => write!(f, "Nodes {selector:?}"),
            Call::Node { name, .. } => write!(f, "Node {name}"),
            Call::May {
                verb,
                resource,
                user,
                groups,
            } => write!(f, "CanI {verb} {} as {user} {groups:?}", resource.resource),
            Call::Object {
                kind,
                namespace,
                name,
            } => {
                let at = namespace.as_ref().map(|ns| format!("{ns}/"));
                write!(f, "Get {} {}{name}", kind.kind(), at.unwrap_or_default())
            }
            Call::Objects(kind) => write!(f, "List {}", kind.kind()),
            Call::ConfigMap(ns, name) => write!(f, "Get ConfigMap {ns}/{name}"),
            Call::Pods => f.write_str("List Pod"),
            Call::Namespaces => f.write_str("List Namespace"),
        }
    }
}

type Answer = Result<Option<Vec<u8>>, LookupError>;

/// A fake [`Cluster`], built with the methods below from
/// [`FakeCluster::new`].
pub struct FakeCluster {
    /// What every RuntimeClass read answers, unless `classes` is set.
    class: Answer,
    /// The RuntimeClasses by `metadata.name`; any other does not exist.
    classes: Option<Vec<Value>>,
    /// The NodeList's bytes, or the list's error.
    list: Result<Vec<u8>, LookupError>,
    /// Nodes a read by name finds that the list does not hold.
    unlisted: Vec<Value>,
    /// What a read of these nodes answers instead of the list's node.
    reads: Vec<(String, Result<Option<Value>, LookupError>)>,
    /// What every read by name answers, whatever the name, as it is.
    every_read: Option<Answer>,
    masking: bool,
    selecting: bool,
    /// `(verb, resource)` pairs `can_i` refuses; `*` is every verb.
    denied: Vec<(String, String)>,
    access_error: Option<LookupError>,
    volume_objects: Vec<Value>,
    /// What every read by name of a kind answers, as it is.
    volume_answers: Vec<(VolumeKind, Vec<u8>)>,
    /// What the list of a kind answers, as it is.
    volume_lists: Vec<(VolumeKind, Vec<u8>)>,
    volume_error: Option<LookupError>,
    volumes_only: bool,
    /// What a ConfigMap read answers: `(namespace, name, answer)`; any
    /// other does not exist.
    config_maps: Vec<(String, String, Answer)>,
    /// The time the fake's clock tells.
    now: Option<i64>,
    /// The pods the pod list holds (those with a `spec.nodeName`), or its
    /// bytes, or its error.
    pods: Result<Vec<u8>, LookupError>,
    /// The namespaces the namespace list holds, or its error.
    namespaces: Result<Vec<u8>, LookupError>,
    calls: RefCell<Vec<Call>>,
    logged: RefCell<Vec<[String; 4]>>,
}

impl FakeCluster {
    /// A cluster whose node list holds `nodes`; every RuntimeClass read
    /// answers the class `kata` (handler `kata`); no volume object; `can_i`
    /// allows everything.
    pub fn new(nodes: Vec<Value>) -> Self {
        FakeCluster {
            class: Ok(Some(
                json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass",
                    "metadata": {"name": "kata"}, "handler": "kata"})
                .to_string()
                .into_bytes(),
            )),
            classes: None,
            list: Ok(
                json!({"apiVersion": "v1", "kind": "NodeList", "items": nodes})
                    .to_string()
                    .into_bytes(),
            ),
            unlisted: Vec::new(),
            reads: Vec::new(),
            every_read: None,
            masking: true,
            selecting: false,
            denied: Vec::new(),
            access_error: None,
            volume_objects: Vec::new(),
            volume_answers: Vec::new(),
            volume_lists: Vec::new(),
            volume_error: None,
            volumes_only: false,
            config_maps: Vec::new(),
            now: Some(FakeCluster::NOW),
            pods: Ok(br#"{"kind":"PodList","items":[]}"#.to_vec()),
            namespaces: Ok(br#"{"kind":"NamespaceList","items":[]}"#.to_vec()),
            calls: RefCell::default(),
            logged: RefCell::default(),
        }
    }

    // ------------------------------------------------------ RuntimeClasses

    /// Every RuntimeClass read answers `class`, whatever the name asked
    /// (`None`: it does not exist).
    pub fn class(mut self, class: Option<Value>) -> Self {
        self.class = Ok(class.map(|c| c.to_string().into_bytes()));
        self
    }

    /// Every RuntimeClass read answers these bytes.
    pub fn class_bytes(mut self, bytes: Vec<u8>) -> Self {
        self.class = Ok(Some(bytes));
        self
    }

    /// Every RuntimeClass read fails with `error`.
    pub fn class_error(mut self, error: LookupError) -> Self {
        self.class = Err(error);
        self
    }

    /// The RuntimeClasses, read by `metadata.name`: any other name does
    /// not exist.
    pub fn classes(mut self, classes: Vec<Value>) -> Self {
        self.classes = Some(classes);
        self
    }

    // --------------------------------------------------------------- nodes

    /// The node list answers these bytes (malformed ones too). A read by
    /// name finds the nodes of its `items`, when it has any.
    pub fn list_bytes(mut self, bytes: Vec<u8>) -> Self {
        self.list = Ok(bytes);
        self
    }

    /// The node list fails with `error`, and so does every read by name
    /// that [`FakeCluster::read`] does not answer.
    pub fn list_error(mut self, error: LookupError) -> Self {
        self.list = Err(error);
        self
    }

    /// Nodes a read by name finds, that the list does not return (nodes
    /// outside `kataNodeSelector`).
    pub fn unlisted(mut self, nodes: Vec<Value>) -> Self {
        self.unlisted = nodes;
        self
    }

    /// A read of node `name` answers `answer` (masked) instead: deleted,
    /// changed or failing since the list.
    pub fn read(mut self, name: &str, answer: Result<Option<Value>, LookupError>) -> Self {
        self.reads.push((name.to_string(), answer));
        self
    }

    /// Every read by name answers `answer` as it is, whatever the name.
    pub fn every_read(mut self, answer: Result<Option<Vec<u8>>, LookupError>) -> Self {
        self.every_read = Some(answer);
        self
    }

    /// Nodes are answered as given, without applying the field masks.
    pub fn unmasked(mut self) -> Self {
        self.masking = false;
        self
    }

    /// The list keeps the nodes its label selector matches, as the API
    /// server does (by default it returns every node it holds).
    pub fn selecting(mut self) -> Self {
        self.selecting = true;
        self
    }

    // -------------------------------------------------------------- can_i

    /// `can_i` refuses `verb` (`*`: every verb) on `resource` (`nodes`,
    /// `persistentvolumes`, ...).
    pub fn deny(mut self, verb: &str, resource: &str) -> Self {
        self.denied.push((verb.to_string(), resource.to_string()));
        self
    }

    /// Every `can_i` fails with `error`.
    pub fn access_error(mut self, error: LookupError) -> Self {
        self.access_error = Some(error);
        self
    }

    // ------------------------------------------------------------- volumes

    /// The PersistentVolumeClaims, PersistentVolumes and StorageClasses,
    /// found by `kind`, `metadata.name` and `metadata.namespace`.
    pub fn volume_objects(mut self, objects: Vec<Value>) -> Self {
        self.volume_objects = objects;
        self
    }

    /// Every read by name of `kind` answers these bytes.
    pub fn volume_answer(mut self, kind: VolumeKind, bytes: Vec<u8>) -> Self {
        self.volume_answers.push((kind, bytes));
        self
    }

    /// The list of `kind` answers these bytes.
    pub fn volume_list(mut self, kind: VolumeKind, bytes: Vec<u8>) -> Self {
        self.volume_lists.push((kind, bytes));
        self
    }

    /// Every volume object read, by name or listed, fails with `error`.
    pub fn volume_error(mut self, error: LookupError) -> Self {
        self.volume_error = Some(error);
        self
    }

    /// Reading a RuntimeClass or a node panics: for tests of the volume
    /// check alone, which reads neither.
    pub fn volumes_only(mut self) -> Self {
        self.volumes_only = true;
        self
    }

    // -------------------------------------------------- ConfigMaps, clock

    /// The time the fake's clock tells unless set: 2026-12-01T00:00:00Z.
    pub const NOW: i64 = 1_764_547_200;

    /// A read of the ConfigMap `namespace/name` answers `answer`.
    pub fn config_map(mut self, namespace: &str, name: &str, answer: Answer) -> Self {
        self.config_maps
            .push((namespace.to_string(), name.to_string(), answer));
        self
    }

    /// The clock tells `now` (`None`: it cannot be read).
    pub fn at(mut self, now: Option<i64>) -> Self {
        self.now = now;
        self
    }

    // -------------------------------------------------- pods, namespaces

    /// The pods the cluster runs: the pod list holds those placed on a
    /// node, masked as policy-server masks them.
    pub fn pods(mut self, pods: Vec<Value>) -> Self {
        let items: Vec<Value> = (pods.iter())
            .filter(|p| {
                p["spec"]["nodeName"]
                    .as_str()
                    .is_some_and(|n| !n.is_empty())
            })
            .map(|p| masked_fields(p, &crate::cluster::POD_FIELD_MASKS))
            .collect();
        self.pods = Ok(json!({"kind": "PodList", "items": items})
            .to_string()
            .into_bytes());
        self
    }

    /// The pod list answers these bytes, or fails with this error.
    pub fn pods_answer(mut self, answer: Result<Vec<u8>, LookupError>) -> Self {
        self.pods = answer;
        self
    }

    /// The namespaces, whole.
    pub fn namespaces(mut self, namespaces: Vec<Value>) -> Self {
        let list = json!({"kind": "NamespaceList", "items": namespaces});
        self.namespaces = Ok(list.to_string().into_bytes());
        self
    }

    /// The namespace list answers these bytes, or fails with this error.
    pub fn namespaces_answer(mut self, answer: Result<Vec<u8>, LookupError>) -> Self {
        self.namespaces = answer;
        self
    }

    // ---------------------------------------------------------- what it saw

    /// Every call so far, in order.
    pub fn calls(&self) -> Vec<Call> {
        self.calls.borrow().clone()
    }

    /// Every call so far, in order, as text ([`Call`]'s `Display`).
    pub fn queries(&self) -> Vec<String> {
        self.calls.borrow().iter().map(Call::to_string).collect()
    }

    /// [`FakeCluster::queries`], forgetting them.
    pub fn take_queries(&self) -> Vec<String> {
        self.calls.take().iter().map(Call::to_string).collect()
    }

    /// The masks of every node query, lists and reads by name, in order.
    pub fn masks(&self) -> Vec<NodeMasks> {
        (self.calls.borrow().iter())
            .filter_map(|c| match c {
                Call::Nodes { masks, .. } | Call::Node { masks, .. } => Some(*masks),
                _ => None,
            })
            .collect()
    }

    /// The masks of every node list, in order.
    pub fn listed(&self) -> Vec<NodeMasks> {
        (self.calls.borrow().iter())
            .filter_map(|c| match c {
                Call::Nodes { masks, .. } => Some(*masks),
                _ => None,
            })
            .collect()
    }

    /// Every `log_decision` so far: message, namespace, pod, decision.
    pub fn logged(&self) -> Vec<[String; 4]> {
        self.logged.borrow().clone()
    }

    /// [`FakeCluster::logged`], forgetting them.
    pub fn take_logged(&self) -> Vec<[String; 4]> {
        self.logged.take()
    }

    /// What the node list answers for `selector` and `masks`, without
    /// recording a call.
    pub fn list_answer(
        &self,
        selector: Option<&str>,
        masks: NodeMasks,
    ) -> Result<NodeList, LookupError> {
        let bytes = self.list.clone()?;
        if !self.masking && !self.selecting {
            return Ok(NodeList::new(bytes));
        }
        // A list that is not JSON (the malformed-answer tests) goes
        // through as it is.
        let Ok(mut list) = serde_json::from_slice::<Value>(&bytes) else {
            return Ok(NodeList::new(bytes));
        };
        if let Some(items) = list.get_mut("items").and_then(Value::as_array_mut) {
            if self.selecting {
                let requirements = match selector {
                    Some(s) => crate::labels::parse_selector(s).map_err(|e| LookupError {
                        kind: LookupErrorKind::Failed,
                        message: format!("unable to parse requirement: {e}"),
                    })?,
                    None => Vec::new(),
                };
                items.retain(|n| {
                    requirements
                        .iter()
                        .all(|r| r.matches(|k| n["metadata"]["labels"].get(k)?.as_str()))
                });
            }
            if self.masking {
                for n in items.iter_mut() {
                    *n = masked(n, masks);
                }
            }
        }
        Ok(NodeList::new(list.to_string().into_bytes()))
    }

    fn record(&self, call: Call) {
        self.calls.borrow_mut().push(call);
    }

    fn only_volumes(&self, what: &str) {
        if self.volumes_only {
            panic!("the volume check reads no {what}");
        }
    }

    fn node_answer(&self, node: &Value, masks: NodeMasks) -> Vec<u8> {
        match self.masking {
            true => masked(node, masks).to_string().into_bytes(),
            false => node.to_string().into_bytes(),
        }
    }
}

impl Cluster for FakeCluster {
    fn config_map(&self, namespace: &str, name: &str) -> Answer {
        self.record(Call::ConfigMap(namespace.to_string(), name.to_string()));
        (self.config_maps.iter())
            .find(|(ns, n, _)| ns == namespace && n == name)
            .map_or(Ok(None), |(_, _, answer)| answer.clone())
    }

    fn now(&self) -> Option<i64> {
        self.now
    }

    fn log_decision(&self, message: &str, namespace: &str, pod: &str, decision: &str) {
        self.logged
            .borrow_mut()
            .push([message, namespace, pod, decision].map(String::from));
    }

    fn runtime_class(&self, name: &str) -> Answer {
        self.only_volumes("RuntimeClass");
        self.record(Call::RuntimeClass(name.to_string()));
        match &self.classes {
            Some(classes) => Ok(classes
                .iter()
                .find(|c| c["metadata"]["name"] == name)
                .map(|c| c.to_string().into_bytes())),
            None => self.class.clone(),
        }
    }

    fn kata_nodes(
        &self,
        selector: Option<&str>,
        masks: NodeMasks,
    ) -> Result<NodeList, LookupError> {
        self.only_volumes("node list");
        self.record(Call::Nodes {
            selector: selector.map(str::to_string),
            masks,
        });
        self.list_answer(selector, masks)
    }

    fn node(&self, name: &str, masks: NodeMasks) -> Answer {
        self.only_volumes("node");
        self.record(Call::Node {
            name: name.to_string(),
            masks,
        });
        if let Some((_, answer)) = self.reads.iter().find(|(n, _)| n == name) {
            return answer
                .clone()
                .map(|o| o.map(|n| self.node_answer(&n, masks)));
        }
        if let Some(answer) = &self.every_read {
            return answer.clone();
        }
        let list: Value =
            serde_json::from_slice(self.list.as_ref().map_err(Clone::clone)?).unwrap_or_default();
        Ok(self
            .unlisted
            .iter()
            .chain(list["items"].as_array().into_iter().flatten())
            .find(|n| n["metadata"]["name"] == name)
            .map(|n| self.node_answer(n, masks)))
    }

    fn may(
        &self,
        subject: &Subject,
        verb: &str,
        resource: Resource,
    ) -> Result<Access, LookupError> {
        self.record(Call::May {
            verb: verb.to_string(),
            resource,
            user: subject.user.to_string(),
            groups: subject.groups.clone(),
        });
        if let Some(e) = &self.access_error {
            return Err(e.clone());
        }
        let denied = self
            .denied
            .iter()
            .any(|(v, r)| (v == "*" || v == verb) && r == resource.resource);
        Ok(Access {
            allowed: !denied,
            reason: None,
        })
    }

    fn object(&self, kind: VolumeKind, namespace: Option<&str>, name: &str) -> Answer {
        self.record(Call::Object {
            kind,
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
        });
        if let Some(e) = &self.volume_error {
            return Err(e.clone());
        }
        if let Some((_, bytes)) = self.volume_answers.iter().find(|(k, _)| *k == kind) {
            return Ok(Some(bytes.clone()));
        }
        Ok(self
            .volume_objects
            .iter()
            .find(|o| {
                o["kind"] == kind.kind()
                    && o["metadata"]["name"] == name
                    && o["metadata"]["namespace"].as_str() == namespace
            })
            .map(|o| o.to_string().into_bytes()))
    }

    fn pods(&self) -> Result<Vec<u8>, LookupError> {
        self.record(Call::Pods);
        self.pods.clone()
    }

    fn namespaces(&self) -> Result<Vec<u8>, LookupError> {
        self.record(Call::Namespaces);
        self.namespaces.clone()
    }

    fn objects(&self, kind: VolumeKind) -> Result<Vec<u8>, LookupError> {
        self.record(Call::Objects(kind));
        if let Some(e) = &self.volume_error {
            return Err(e.clone());
        }
        if let Some((_, bytes)) = self.volume_lists.iter().find(|(k, _)| *k == kind) {
            return Ok(bytes.clone());
        }
        let items: Vec<&Value> = (self.volume_objects.iter())
            .filter(|o| o["kind"] == kind.kind())
            .collect();
        Ok(
            json!({"kind": format!("{}List", kind.kind()), "items": items})
                .to_string()
                .into_bytes(),
        )
    }
}

/// `node` as policy-server's field masks leave it: `metadata` (and the
/// type) whole, and of the rest only the masked paths, which walk into
/// arrays. A test whose node data the query does not ask for then sees the
/// node without it, as the policy would in a cluster.
fn masked(node: &Value, masks: NodeMasks) -> Value {
    masked_fields(node, masks.fields())
}

/// `object` with `metadata` whole and only the paths of `fields`.
fn masked_fields(node: &Value, fields: &[&str]) -> Value {
    fn keep(src: &Value, path: &[&str]) -> Option<Value> {
        let Some((first, rest)) = path.split_first() else {
            return Some(src.clone());
        };
        match src {
            Value::Object(map) => {
                let inner = keep(map.get(*first)?, rest)?;
                Some(json!({ *first: inner }))
            }
            Value::Array(items) => Some(Value::Array(
                items.iter().filter_map(|i| keep(i, path)).collect(),
            )),
            _ => None,
        }
    }
    fn merge(into: &mut Value, from: Value) {
        match (into, from) {
            (Value::Object(a), Value::Object(b)) => {
                for (k, v) in b {
                    match a.get_mut(&k) {
                        Some(existing) => merge(existing, v),
                        None => {
                            a.insert(k, v);
                        }
                    }
                }
            }
            (into, from) => *into = from,
        }
    }
    let mut out = json!({});
    for key in ["apiVersion", "kind", "metadata"] {
        if let Some(v) = node.get(key) {
            out[key] = v.clone();
        }
    }
    for mask in fields {
        let path: Vec<&str> = mask.split('.').collect();
        if let Some(kept) = keep(node, &path) {
            merge(&mut out, kept);
        }
    }
    out
}
