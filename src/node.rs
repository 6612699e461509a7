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

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

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

/// Which labels a node scan keeps. Parsing every label of thousands of nodes
/// cost more than the rest of the node list, and constraints read only a few
/// keys, so a scan keeps those and skips the other values unread.
#[derive(Debug, Clone, Copy)]
pub enum LabelFilter<'k> {
    All,
    Only(&'k [String]),
}

impl LabelFilter<'_> {
    fn keeps(&self, key: &str) -> bool {
        match self {
            LabelFilter::All => true,
            LabelFilter::Only(keys) => keys.iter().any(|k| k == key),
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

struct LabelsSeed<'k>(LabelFilter<'k>);

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

struct MetaSeed<'k>(LabelFilter<'k>);

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

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Node<'a> {
    pub metadata: NodeMeta<'a>,
    pub spec: NodeSpec<'a>,
}

/// Reads one Node, keeping the labels `LabelFilter` names.
struct NodeSeed<'k>(LabelFilter<'k>);

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
        while let Some(key) = map.next_key::<Str<'de>>()? {
            match key.as_str() {
                "metadata" => metadata = Some(map.next_value_seed(MetaSeed(self.0))?),
                "spec" => {
                    spec = map
                        .next_value::<Option<NodeSpec<'de>>>()?
                        .unwrap_or_default()
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let metadata = metadata.ok_or_else(|| de::Error::missing_field("metadata"))?;
        Ok(Node { metadata, spec })
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Node<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        NodeSeed(LabelFilter::All).deserialize(d)
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

/// Error message that unwinds serde out of a scan the visitor stopped.
/// Never shown: it is told apart from real errors by `stopped`.
const STOP: &str = "scan stopped by the visitor";

/// Parses the host's `list_resources_all` answer (a `v1` NodeList) one node
/// at a time, calling `visit` on each, without keeping the nodes: memory
/// stays flat however long the list, and `ControlFlow::Break` stops the
/// parse right there.
pub fn scan_node_list<'de, F>(
    bytes: &'de [u8],
    labels: LabelFilter<'_>,
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

struct ListVisitor<'k, F> {
    visit: F,
    labels: LabelFilter<'k>,
    stopped: bool,
}

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

struct Items<'v, 'k, F>(&'v mut ListVisitor<'k, F>);

impl<'de, F> DeserializeSeed<'de> for Items<'_, '_, F>
where
    F: FnMut(&Node<'de>) -> ControlFlow<()>,
{
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

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
    scan_node_list(bytes, LabelFilter::All, |n| {
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
        scan_node_list(json, LabelFilter::Only(&wanted), |n| {
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
}
