//! The parts of a Node that feasibility needs, read from the host's NodeList
//! answer without copying strings where the JSON has no escapes.
//!
//! Deliberately not `k8s_openapi::api::core::v1::Node` through serde: that
//! type allocates every annotation and status field, and the list is read on
//! every Pod CREATE. [`json_scan`](crate::json_scan) walks the document once,
//! keeps only the fields below (and only the label keys the constraints
//! read), and validates everything it skips (BENCHMARKS.md, "Node reader").

use std::borrow::Cow;
use std::fmt;
use std::ops::ControlFlow;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};

use crate::json_scan::Cursor;

/// A string borrowed from the input when possible.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Str<'a>(pub Cow<'a, str>);

impl Str<'_> {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// Which keys of a map a node scan keeps. Parsing every label of thousands
/// of nodes cost more than the rest of the node list, and constraints read
/// only a few keys, so a scan keeps those and skips the other values unread.
#[derive(Debug, Clone, Copy)]
pub enum KeyFilter<'k> {
    All,
    Only(&'k [String]),
}

impl KeyFilter<'_> {
    fn keeps_bytes(&self, key: &[u8]) -> bool {
        match self {
            KeyFilter::All => true,
            KeyFilter::Only(keys) => keys.iter().any(|k| k.as_bytes() == key),
        }
    }
}

/// The kept labels of a node, in document order (a short list: a linear
/// search beats building a map for each node).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels<'a>(pub Vec<(Str<'a>, Str<'a>)>);

impl<'a> Labels<'a> {
    /// The value of label `key`, if the node has it (and the scan kept it).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Taint<'a> {
    pub key: Str<'a>,
    pub value: Option<Str<'a>>,
    pub effect: Str<'a>,
}

impl Taint<'_> {
    pub fn value(&self) -> &str {
        self.value.as_ref().map_or("", Str::as_str)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeMeta<'a> {
    pub name: Str<'a>,
    pub labels: Labels<'a>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeSpec<'a> {
    pub taints: Vec<Taint<'a>>,
    pub unschedulable: bool,
}

/// `status.allocatable`, kept as the raw text of its JSON object (already
/// checked as JSON) and read only when a filter reaches the node: most nodes
/// of a long list fail an earlier filter, and reading the entries was most
/// of what this map cost (BENCHMARKS.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocatable<'a> {
    raw: Option<&'a [u8]>,
}

impl<'a> Allocatable<'a> {
    /// Whether the node reports `status.allocatable` at all: a node that
    /// does not is not judged on resources (nothing is known about it).
    pub fn listed(&self) -> bool {
        self.raw.is_some()
    }

    /// The text of the `allocatable` object, if the node lists one.
    pub fn raw(&self) -> Option<&'a [u8]> {
        self.raw
    }

    /// Calls `entry` with the name (as bytes) and the quantity text of each
    /// resource `wanted` accepts, in document order; the other values are
    /// skipped unread. Values read must be strings, as the API server
    /// writes them.
    pub fn for_each(
        &self,
        wanted: impl Fn(&[u8]) -> bool,
        mut entry: impl FnMut(&[u8], &str) -> Result<(), String>,
    ) -> Result<(), String> {
        let Some(raw) = self.raw else {
            return Ok(());
        };
        Cursor::new(raw).object(|c, key| {
            if wanted(key.as_bytes()) {
                entry(key.as_bytes(), &c.string()?)
            } else {
                c.skip_value()
            }
        })
    }
}

/// `status.runtimeHandlers`, kept as the raw text of its JSON value
/// (already checked as JSON) and read only when the runtime-handler check
/// reaches the node, for the one entry it asks about: kata-deploy nodes
/// list a dozen handlers, and most nodes of a long list fail an earlier
/// filter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RuntimeHandlers<'a> {
    raw: Option<&'a [u8]>,
}

/// What a node reports of one runtime handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerReport {
    /// The node reports no handlers: the field is absent, null, empty, or
    /// not a list (an older kubelet or CRI; a malformed list counts as none).
    Nothing,
    /// The node reports handlers, and not this one.
    NotListed,
    /// The node lists the handler, with these features (a feature that is
    /// absent or not a boolean is not supported).
    Listed(HandlerFeatures),
}

/// A feature of a runtime handler (`status.runtimeHandlers[].features`)
/// that the kubelet checks before it starts a pod that depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HandlerFeature {
    UserNamespaces,
    RecursiveReadOnlyMounts,
}

impl HandlerFeature {
    /// Every feature, in the order they are checked.
    pub const ALL: [HandlerFeature; 2] = [
        HandlerFeature::UserNamespaces,
        HandlerFeature::RecursiveReadOnlyMounts,
    ];

    /// The field of `features`, as the node reports it.
    pub fn field(self) -> &'static str {
        match self {
            HandlerFeature::UserNamespaces => "userNamespaces",
            HandlerFeature::RecursiveReadOnlyMounts => "recursiveReadOnlyMounts",
        }
    }

    /// What in a pod depends on it.
    pub fn asked_by(self) -> &'static str {
        match self {
            HandlerFeature::UserNamespaces => "hostUsers: false",
            HandlerFeature::RecursiveReadOnlyMounts => "recursiveReadOnly: Enabled",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of handler features: those a handler reports, or those a pod needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandlerFeatures(u8);

impl HandlerFeatures {
    /// The set with `feature` in it when `present`, out of it otherwise.
    pub fn with(self, feature: HandlerFeature, present: bool) -> Self {
        match present {
            true => HandlerFeatures(self.0 | feature.bit()),
            false => HandlerFeatures(self.0 & !feature.bit()),
        }
    }

    pub fn contains(self, feature: HandlerFeature) -> bool {
        self.0 & feature.bit() != 0
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The first feature of this set that `reported` lacks.
    pub fn first_missing(self, reported: HandlerFeatures) -> Option<HandlerFeature> {
        (HandlerFeature::ALL.into_iter()).find(|f| self.contains(*f) && !reported.contains(*f))
    }
}

impl<'a> RuntimeHandlers<'a> {
    pub fn from_raw(raw: Option<&'a [u8]>) -> Self {
        RuntimeHandlers { raw }
    }

    /// What the node reports of the handler `name`: the first entry whose
    /// `name` equals it exactly. Entries that are not objects, or whose
    /// `name` is not a string, are ignored. Reads up to that entry only and
    /// allocates nothing (unless a name has escapes).
    pub fn report(&self, name: &str) -> HandlerReport {
        let Some(raw) = self.raw else {
            return HandlerReport::Nothing;
        };
        if raw.first() != Some(&b'[') {
            return HandlerReport::Nothing;
        }
        let mut found = None;
        let mut entries = 0usize;
        // The text was validated when the node was read: a failure here
        // cannot happen, and would mean "reports nothing".
        let read = Cursor::new(raw).array(|c| {
            entries += 1;
            c.skip_ws();
            if !c.peek_is(b'{') {
                c.skip_value()?;
                return Ok(true);
            }
            let mut matches = false;
            let mut features = HandlerFeatures::default();
            // A repeated key overrides the earlier one, as in serde_json.
            c.object(|c, key| {
                match key.as_bytes() {
                    b"name" if c.peek_is(b'"') => matches = c.string()? == name,
                    b"name" => {
                        matches = false;
                        c.skip_value()?;
                    }
                    b"features" if c.peek_is(b'{') => {
                        features = HandlerFeatures::default();
                        c.object(|c, key| {
                            let Some(feature) = (HandlerFeature::ALL.into_iter())
                                .find(|f| f.field().as_bytes() == key.as_bytes())
                            else {
                                return c.skip_value();
                            };
                            let on = c.peek_is(b't') && c.boolean()?;
                            if !on {
                                c.skip_value()?;
                            }
                            features = features.with(feature, on);
                            Ok(())
                        })?;
                    }
                    b"features" => {
                        features = HandlerFeatures::default();
                        c.skip_value()?;
                    }
                    _ => c.skip_value()?,
                }
                Ok(())
            })?;
            if matches {
                found = Some(HandlerReport::Listed(features));
            }
            Ok(found.is_none())
        });
        match (read, found) {
            (Ok(_), Some(report)) => report,
            (Ok(_), None) if entries > 0 => HandlerReport::NotListed,
            _ => HandlerReport::Nothing,
        }
    }
}

/// `status.features`: what the node's container runtime (its CRI, not one
/// handler) supports, as the kubelet reports it. A field that is absent,
/// null or not `true` is not supported, as in the kubelet; a value that is
/// not an object reports nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeFeatures {
    /// `supplementalGroupsPolicy: true`: the CRI honours `Strict`.
    pub supplemental_groups_policy: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node<'a> {
    pub metadata: NodeMeta<'a>,
    pub spec: NodeSpec<'a>,
    pub allocatable: Allocatable<'a>,
    pub runtime_handlers: RuntimeHandlers<'a>,
    pub features: NodeFeatures,
}

impl Node<'_> {
    pub fn name(&self) -> &str {
        self.metadata.name.as_str()
    }
}

/// serde reads structs from JSON arrays too; an answer must be an object.
pub fn starts_as_object(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'{')
}

/// How a [`scan_node_list`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    /// Every node was visited and the whole answer is a valid NodeList.
    Completed,
    /// The visitor stopped at a node; the rest was not read.
    Stopped,
}

/// Error that unwinds the reader out of a scan
/// the visitor stopped. Never shown: told apart from real errors by `stopped`.
const STOP: &str = "scan stopped by the visitor";

/// Parses the host's `list_resources_all` answer (a `v1` NodeList) one node
/// at a time, calling `visit` on each, without keeping the nodes: memory
/// stays flat however long the list, and `ControlFlow::Break` stops the
/// parse right there. Read with [`json_scan`](crate::json_scan) rather than
/// serde: the node list is the one bulk read of every admission.
pub fn scan_node_list<'de, F>(
    bytes: &'de [u8],
    labels: KeyFilter<'_>,
    mut visit: F,
) -> Result<Scan, String>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    let invalid =
        |why: String| format!("the node list from the cluster is not a valid NodeList: {why}");
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let mut c = Cursor::new(bytes);
    let mut stopped = false;
    c.object(|c, key| {
        match key.as_bytes() {
            b"kind" if !c.eat_null()? => {
                let kind = c.string()?;
                if kind != "NodeList" {
                    return Err(format!("kind is {kind:?}"));
                }
            }
            b"items" if !c.eat_null()? => {
                // One Node, refilled for each element: its vectors keep their
                // capacity, so the scan allocates nothing per node.
                let mut node = Node::default();
                let complete = c.array(|c| {
                    read_node(c, labels, false, &mut node)?;
                    Ok(visit(&node).is_continue())
                })?;
                if !complete {
                    stopped = true;
                    return Err(STOP.into());
                }
            }
            b"kind" | b"items" => {}
            _ => c.skip_value()?,
        }
        Ok(())
    })
    .or_else(|e| if stopped { Ok(()) } else { Err(e) })
    .map_err(invalid)?;
    if stopped {
        return Ok(Scan::Stopped);
    }
    if !c.at_end() {
        return c.error("trailing characters").map_err(invalid);
    }
    Ok(Scan::Completed)
}

/// Parses the host's `get_resource` answer for one `v1` Node.
pub fn parse_node<'de>(bytes: &'de [u8], labels: KeyFilter<'_>) -> Result<Node<'de>, String> {
    let invalid = |why: String| format!("the node from the cluster is not a valid Node: {why}");
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let mut c = Cursor::new(bytes);
    let mut node = Node::default();
    read_node(&mut c, labels, true, &mut node).map_err(invalid)?;
    if !c.at_end() {
        return c.error("trailing characters").map_err(invalid);
    }
    Ok(node)
}

/// Reads one node into `node`, reusing its buffers. With `check_kind` (a
/// Node on its own, not a list item), a `kind` that is present and not null
/// must be `Node`.
fn read_node<'de>(
    c: &mut Cursor<'de>,
    labels: KeyFilter<'_>,
    check_kind: bool,
    node: &mut Node<'de>,
) -> Result<(), String> {
    let mut has_metadata = false;
    node.spec.taints.clear();
    node.spec.unschedulable = false;
    node.allocatable = Allocatable::default();
    node.runtime_handlers = RuntimeHandlers::default();
    node.features = NodeFeatures::default();
    c.object(|c, key| {
        match key.as_bytes() {
            b"kind" if check_kind => {
                if !c.eat_null()? {
                    let kind = c.string()?;
                    if kind != "Node" {
                        return Err(format!("kind is {kind:?}"));
                    }
                }
            }
            b"metadata" => {
                read_meta(c, labels, &mut node.metadata)?;
                has_metadata = true;
            }
            b"status" => {
                node.allocatable = Allocatable::default();
                node.runtime_handlers = RuntimeHandlers::default();
                node.features = NodeFeatures::default();
                if !c.eat_null()? {
                    read_status(c, node)?;
                }
            }
            b"spec" => {
                node.spec.taints.clear();
                node.spec.unschedulable = false;
                if !c.eat_null()? {
                    read_spec(c, &mut node.spec)?;
                }
            }
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    if has_metadata {
        Ok(())
    } else {
        Err("missing field `metadata`".into())
    }
}

/// Reads `status`, keeping the text of `allocatable` and `runtimeHandlers`,
/// and reading `features`. A repeated key overrides the earlier one, as in
/// serde_json.
fn read_status<'de>(c: &mut Cursor<'de>, node: &mut Node<'de>) -> Result<(), String> {
    c.object(|c, key| {
        match key.as_bytes() {
            b"allocatable" if !c.eat_null()? => node.allocatable.raw = Some(c.raw_object()?),
            b"allocatable" => node.allocatable.raw = None,
            // Any JSON value: a list that is not one reports nothing.
            b"runtimeHandlers" => node.runtime_handlers.raw = Some(c.raw_value()?),
            b"features" => node.features = read_features(c)?,
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

/// Reads `status.features`; any value that is not an object reports nothing.
fn read_features(c: &mut Cursor<'_>) -> Result<NodeFeatures, String> {
    let mut features = NodeFeatures::default();
    if !c.peek_is(b'{') {
        c.skip_value()?;
        return Ok(features);
    }
    c.object(|c, key| match key.as_bytes() {
        b"supplementalGroupsPolicy" => {
            let on = c.peek_is(b't') && c.boolean()?;
            if !on {
                c.skip_value()?;
            }
            features.supplemental_groups_policy = on;
            Ok(())
        }
        _ => c.skip_value(),
    })?;
    Ok(features)
}

fn read_meta<'de>(
    c: &mut Cursor<'de>,
    filter: KeyFilter<'_>,
    meta: &mut NodeMeta<'de>,
) -> Result<(), String> {
    let mut name = None;
    let labels = &mut meta.labels.0;
    labels.clear();
    c.object(|c, key| {
        match key.as_bytes() {
            b"name" => name = Some(Str(c.string()?)),
            b"labels" if !c.eat_null()? => {
                labels.clear();
                c.object(|c, key| {
                    if filter.keeps_bytes(key.as_bytes()) {
                        labels.push((Str(key.into_text()?), Str(c.string()?)));
                        Ok(())
                    } else {
                        c.skip_value()
                    }
                })?;
            }
            b"labels" => labels.clear(),
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    meta.name = name.ok_or("missing field `name`")?;
    Ok(())
}

fn read_spec<'de>(c: &mut Cursor<'de>, spec: &mut NodeSpec<'de>) -> Result<(), String> {
    c.object(|c, key| {
        match key.as_bytes() {
            b"taints" if !c.eat_null()? => {
                spec.taints.clear();
                c.array(|c| {
                    spec.taints.push(read_taint(c)?);
                    Ok(true)
                })?;
            }
            b"taints" => spec.taints.clear(),
            b"unschedulable" => spec.unschedulable = !c.eat_null()? && c.boolean()?,
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

fn read_taint<'de>(c: &mut Cursor<'de>) -> Result<Taint<'de>, String> {
    let mut taint = Taint::default();
    c.object(|c, key| {
        match key.as_bytes() {
            b"key" if !c.eat_null()? => taint.key = Str(c.string()?),
            b"value" if !c.eat_null()? => taint.value = Some(Str(c.string()?)),
            b"effect" if !c.eat_null()? => taint.effect = Str(c.string()?),
            b"key" | b"effect" => {}
            b"value" => taint.value = None,
            _ => c.skip_value()?,
        }
        Ok(())
    })?;
    Ok(taint)
}

#[cfg(test)]
mod tests;
