//! The parts of a Node that feasibility needs, read from the host's NodeList
//! answer without copying strings where the JSON has no escapes.
//!
//! Deliberately not `k8s_openapi::api::core::v1::Node`: that type allocates
//! every annotation and status field, and this list is read on every Pod
//! CREATE. Everything not named here is skipped by serde.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use std::ops::ControlFlow;

use crate::json_scan::Cursor;

#[cfg(test)]
use serde::de::SeqAccess;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

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
    fn keeps(&self, key: &str) -> bool {
        self.keeps_bytes(key.as_bytes())
    }

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

struct LabelsSeed<'k>(KeyFilter<'k>);

impl<'de, 'k> DeserializeSeed<'de> for LabelsSeed<'k> {
    type Value = Labels<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Labels<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'k> Visitor<'de> for LabelsSeed<'k> {
    type Value = Labels<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of label keys to values")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Labels<'de>, E> {
        Ok(Labels::default())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels<'de>, A::Error> {
        let mut labels = Vec::new();
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if self.0.keeps(key.as_str()) {
                labels.push((key, map.next_value()?));
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(Labels(labels))
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct Taint<'a> {
    #[serde(borrow, default)]
    pub key: Str<'a>,
    #[serde(borrow, default)]
    pub value: Option<Str<'a>>,
    #[serde(borrow, default)]
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

struct MetaSeed<'k>(KeyFilter<'k>);

impl<'de, 'k> DeserializeSeed<'de> for MetaSeed<'k> {
    type Value = NodeMeta<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<NodeMeta<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'k> Visitor<'de> for MetaSeed<'k> {
    type Value = NodeMeta<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("Node metadata")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<NodeMeta<'de>, A::Error> {
        let mut name = None;
        let mut labels = Labels::default();
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match key.as_str() {
                "name" => name = Some(map.next_value()?),
                "labels" => labels = map.next_value_seed(LabelsSeed(self.0))?,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        Ok(NodeMeta { name, labels })
    }
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct NodeSpec<'a> {
    #[serde(borrow, default, deserialize_with = "null_as_empty")]
    pub taints: Vec<Taint<'a>>,
    #[serde(default, deserialize_with = "null_as_default")]
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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node<'a> {
    pub metadata: NodeMeta<'a>,
    pub spec: NodeSpec<'a>,
    pub allocatable: Allocatable<'a>,
}

/// Reads one Node, keeping the labels `KeyFilter` names.
struct NodeSeed<'k>(KeyFilter<'k>);

impl<'de, 'k> DeserializeSeed<'de> for NodeSeed<'k> {
    type Value = Node<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node<'de>, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de, 'k> Visitor<'de> for NodeSeed<'k> {
    type Value = Node<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Node")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'de>, A::Error> {
        let mut metadata = None;
        let mut spec = NodeSpec::default();
        let mut status = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match key.as_str() {
                "metadata" => metadata = Some(map.next_value_seed(MetaSeed(self.0))?),
                "spec" => {
                    spec = map
                        .next_value::<Option<NodeSpec<'de>>>()?
                        .unwrap_or_default()
                }
                "status" => status = map.next_value_seed(OptionalSeed(StatusSeed))?.flatten(),
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let metadata: NodeMeta<'de> =
            metadata.ok_or_else(|| de::Error::missing_field("metadata"))?;
        let allocatable = status.unwrap_or_default();
        Ok(Node {
            metadata,
            spec,
            allocatable,
        })
    }
}

/// `null` or what `T` reads.
struct OptionalSeed<T>(T);

impl<'de, T: DeserializeSeed<'de>> DeserializeSeed<'de> for OptionalSeed<T> {
    type Value = Option<T::Value>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de, T: DeserializeSeed<'de>> Visitor<'de> for OptionalSeed<T> {
    type Value = Option<T::Value>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("null or a value")
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(d).map(Some)
    }
}

/// `status`, in the serde reader: only `allocatable`, as raw text.
struct StatusSeed;

impl<'de> DeserializeSeed<'de> for StatusSeed {
    type Value = Option<Allocatable<'de>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StatusSeed {
    type Value = Option<Allocatable<'de>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a NodeStatus")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut allocatable = None;
        while let Some(key) = map.next_key::<Str<'de>>()? {
            if key.as_str() == "allocatable" {
                let raw: Option<&'de serde_json::value::RawValue> = map.next_value()?;
                if raw.is_some_and(|r| !r.get().starts_with('{')) {
                    return Err(de::Error::custom("allocatable is not an object"));
                }
                allocatable = raw.map(|r| Allocatable {
                    raw: Some(r.get().as_bytes()),
                });
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(allocatable)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Node<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        NodeSeed(KeyFilter::All).deserialize(d)
    }
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

/// Error that unwinds the reader (or serde, in the test oracle) out of a scan
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
                    read_node(c, labels, &mut node)?;
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
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, default)]
        kind: Option<Str<'a>>,
    }
    let kind: Kind = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if let Some(kind) = kind.kind.filter(|k| k.as_str() != "Node") {
        return Err(invalid(format!("kind is {:?}", kind.as_str())));
    }
    let mut c = Cursor::new(bytes);
    let mut node = Node::default();
    read_node(&mut c, labels, &mut node).map_err(invalid)?;
    if !c.at_end() {
        return c.error("trailing characters").map_err(invalid);
    }
    Ok(node)
}

/// Reads one node into `node`, reusing its buffers.
fn read_node<'de>(
    c: &mut Cursor<'de>,
    labels: KeyFilter<'_>,
    node: &mut Node<'de>,
) -> Result<(), String> {
    let mut has_metadata = false;
    node.spec.taints.clear();
    node.spec.unschedulable = false;
    node.allocatable = Allocatable::default();
    c.object(|c, key| {
        match key.as_bytes() {
            b"metadata" => {
                read_meta(c, labels, &mut node.metadata)?;
                has_metadata = true;
            }
            b"status" => {
                node.allocatable = Allocatable::default();
                if !c.eat_null()? {
                    read_status(c, &mut node.allocatable)?;
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

/// Reads `status`, keeping the text of `allocatable`.
fn read_status<'de>(c: &mut Cursor<'de>, allocatable: &mut Allocatable<'de>) -> Result<(), String> {
    c.object(|c, key| {
        match key.as_bytes() {
            b"allocatable" if !c.eat_null()? => allocatable.raw = Some(c.raw_object()?),
            b"allocatable" => allocatable.raw = None,
            _ => c.skip_value()?,
        }
        Ok(())
    })
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

/// The same scan through serde, kept as the oracle of a differential test.
#[cfg(test)]
pub fn scan_with_serde<'de, F>(
    bytes: &'de [u8],
    labels: KeyFilter<'_>,
    visit: F,
) -> Result<Scan, String>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    let invalid =
        |why: String| format!("the node list from the cluster is not a valid NodeList: {why}");
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let mut list = ListVisitor {
        visit,
        labels,
        stopped: false,
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    match de.deserialize_map(&mut list) {
        _ if list.stopped => Ok(Scan::Stopped),
        Ok(()) => de
            .end()
            .map(|()| Scan::Completed)
            .map_err(|e| invalid(e.to_string())),
        Err(e) => Err(invalid(e.to_string())),
    }
}

#[cfg(test)]
struct ListVisitor<'k, F> {
    visit: F,
    labels: KeyFilter<'k>,
    stopped: bool,
}

#[cfg(test)]
impl<'de, F> Visitor<'de> for &mut ListVisitor<'_, F>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a NodeList object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match key.as_str() {
                "kind" => {
                    let kind: Option<Str<'de>> = map.next_value()?;
                    if let Some(kind) = kind.filter(|k| k.as_str() != "NodeList") {
                        return Err(de::Error::custom(format!("kind is {:?}", kind.as_str())));
                    }
                }
                "items" => map.next_value_seed(Items(&mut *self))?,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
struct Items<'v, 'k, F>(&'v mut ListVisitor<'k, F>);

#[cfg(test)]
impl<'de, F> DeserializeSeed<'de> for Items<'_, '_, F>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

#[cfg(test)]
impl<'de, F> Visitor<'de> for Items<'_, '_, F>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of Nodes")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(node) = seq.next_element_seed(NodeSeed(self.0.labels))? {
            if (self.0.visit)(&node).is_break() {
                self.0.stopped = true;
                return Err(de::Error::custom(STOP));
            }
        }
        Ok(())
    }
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// All the nodes of a NodeList answer, for tests.
#[cfg(test)]
pub fn parse_node_list(bytes: &[u8]) -> Result<Vec<Node<'_>>, String> {
    let mut nodes = Vec::new();
    scan_node_list(bytes, KeyFilter::All, |n| {
        nodes.push(n.clone());
        ControlFlow::Continue(())
    })?;
    Ok(nodes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_only_what_it_needs_and_borrows() {
        let json = br#"{"apiVersion":"v1","kind":"NodeList","metadata":{"resourceVersion":"1"},
          "items":[{"metadata":{"name":"w1","labels":{"a":"1","esc\"aped":"x"},"annotations":{"big":"..."}},
                    "spec":{"taints":[{"key":"k","effect":"NoSchedule"}],"unschedulable":true,"podCIDR":"10.0.0.0/24"},
                    "status":{"images":[]}},
                   {"metadata":{"name":"w2","labels":null},"spec":{"taints":null}},
                   {"metadata":{"name":"w3"}}]}"#;
        let nodes = parse_node_list(json).unwrap();
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].name(), "w1");
        assert_eq!(nodes[0].metadata.labels.get("a"), Some("1"));
        assert_eq!(nodes[0].metadata.labels.get("esc\"aped"), Some("x"));
        assert!(matches!(nodes[0].metadata.name.0, Cow::Borrowed(_)));
        assert_eq!(nodes[0].spec.taints[0].key.as_str(), "k");
        assert_eq!(nodes[0].spec.taints[0].value(), "");
        assert!(nodes[0].spec.unschedulable);
        assert_eq!(nodes[1].metadata.labels.get("a"), None);
        assert_eq!(nodes[2].metadata.labels.get("a"), None);
        assert!(nodes[1].spec.taints.is_empty());
        assert!(!nodes[2].spec.unschedulable);
    }

    #[test]
    fn a_filtered_scan_keeps_only_the_named_labels() {
        let json =
            br#"{"items":[{"metadata":{"name":"n","labels":{"a":"1","b":"2","c":{"odd":true}}}}]}"#;
        let wanted = vec!["b".to_string(), "missing".to_string()];
        let mut seen = Vec::new();
        scan_node_list(json, KeyFilter::Only(&wanted), |n| {
            seen.push(n.metadata.labels.clone());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(seen[0].get("b"), Some("2"));
        assert_eq!(seen[0].get("a"), None, "not kept");
        // A non-string value is an error only where a label is read.
        assert!(parse_node_list(json).is_err());
    }

    #[test]
    fn reads_a_single_node() {
        let json =
            br#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"w1","labels":{"a":"1"}},
            "spec":{"unschedulable":true},"status":{"allocatable":{"cpu":"4"}}}"#;
        let node = parse_node(json, KeyFilter::All).unwrap();
        assert_eq!(node.name(), "w1");
        assert_eq!(node.metadata.labels.get("a"), Some("1"));
        assert!(node.spec.unschedulable && node.allocatable.listed());
        for bad in [
            &br#"{"kind":"Pod","metadata":{"name":"p"}}"#[..],
            br#"{"kind":"Node"}"#,
            br#"{"metadata":{"name":"w1"}} x"#,
            b"[]",
        ] {
            let err = parse_node(bad, KeyFilter::All).unwrap_err();
            assert!(err.contains("not a valid Node"), "{err}");
        }
    }

    #[test]
    fn empty_and_null_items_are_an_empty_list() {
        assert!(parse_node_list(br#"{"items":[]}"#).unwrap().is_empty());
        assert!(parse_node_list(br#"{"items":null}"#).unwrap().is_empty());
        assert!(
            parse_node_list(br#"{"kind":"NodeList"}"#)
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn refuses_what_is_not_a_node_list() {
        for bad in [
            &b"not json"[..],
            b"{\"items\":[{\"metadata\":{}}]}",
            b"[]",
            b"{\"items\":{}}",
            b"{\"kind\":\"PodList\",\"items\":[]}",
            b"{\"items\":[{\"metadata\":{\"name\":\"a\"}}",
        ] {
            let err = parse_node_list(bad).unwrap_err();
            assert!(err.contains("not a valid NodeList"), "{err}");
        }
    }

    /// The hand-written scan and the serde scan agree on every input: same
    /// nodes seen, same ending, or both refuse it.
    #[test]
    fn the_scanner_agrees_with_serde() {
        let base = r#"{"apiVersion":"v1","kind":"NodeList","metadata":{"resourceVersion":"9"},"items":[
            {"apiVersion":"v1","kind":"Node","metadata":{"name":"a","uid":"u-1","labels":{"zone":"z1","k8s.io/x":"","esc\u0041":"v\"w"},
              "annotations":{"note":"x, y: [z]","n":"1.5e3"}},
             "spec":{"taints":[{"key":"t","value":"1","effect":"NoSchedule","timeAdded":"2026-01-01T00:00:00Z"},{"key":"u","effect":"NoExecute","value":null}],
                     "unschedulable":false,"podCIDRs":["10.0.0.0/24"]},"status":{"images":[{"names":["i"],"sizeBytes":12345678901234567890}],"x":[true,false,null,-0.5e-3],
              "allocatable":{"cpu":"15900m","memory":"64Gi","nvidia.com/gpu":"4","pods":"110","hugepages-2Mi":"0"}}},
            {"status":{"allocatable":{"cpu":"1"}},"metadata":{"name":"b","labels":null},"spec":null},
            {"metadata":{"name":"c"},"spec":{"taints":null,"unschedulable":true},"status":{"allocatable":null}}]}"#;
        let filters: [Vec<String>; 3] = [
            vec![],
            vec!["zone".into(), "cpu".into()],
            vec![
                "zone".into(),
                "escA".into(),
                "k8s.io/x".into(),
                "nvidia.com/gpu".into(),
                "pods".into(),
            ],
        ];
        let run = |text: &[u8], filter: &[String], stop_at: usize, serde: bool| {
            let mut seen = Vec::new();
            let visit = |n: &Node| {
                seen.push(format!("{n:?}"));
                if seen.len() == stop_at {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                }
            };
            let f = if filter.is_empty() {
                KeyFilter::All
            } else {
                KeyFilter::Only(filter)
            };
            let result = if serde {
                scan_with_serde(text, f, visit)
            } else {
                scan_node_list(text, f, visit)
            };
            (result.ok(), seen)
        };
        let mut inputs: Vec<Vec<u8>> = vec![base.as_bytes().to_vec()];
        // Deterministic damage: every single-byte deletion, and substitutions
        // with JSON punctuation, at every position of the base document.
        for at in 0..base.len() {
            let mut cut = base.as_bytes().to_vec();
            cut.remove(at);
            inputs.push(cut);
            for b in [b'"', b',', b'}', b']', b'\\', b'0', b'n', b' '] {
                let mut changed = base.as_bytes().to_vec();
                changed[at] = b;
                inputs.push(changed);
            }
        }
        for text in &inputs {
            for filter in &filters {
                for stop_at in [usize::MAX, 1, 2] {
                    assert_eq!(
                        run(text, filter, stop_at, false),
                        run(text, filter, stop_at, true),
                        "{}",
                        String::from_utf8_lossy(text)
                    );
                }
            }
        }
    }
}
