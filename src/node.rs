//! The parts of a Node that feasibility needs, read from the host's NodeList
//! answer without copying strings where the JSON has no escapes.
//!
//! Deliberately not `k8s_openapi::api::core::v1::Node`: that type allocates
//! every annotation and status field, and this list is read on every Pod
//! CREATE. Everything not named here is skipped by serde.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

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

/// A node's labels in document order. Nodes carry a few dozen labels, so a
/// linear scan beats building a map for each of thousands of nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels<'a>(pub Vec<(Str<'a>, Str<'a>)>);

impl<'a> Labels<'a> {
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v.as_str())
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Labels<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Labels<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of label keys to values")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
                Ok(Labels::default())
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut labels = Vec::with_capacity(map.size_hint().unwrap_or(16));
                while let Some(entry) = map.next_entry()? {
                    labels.push(entry);
                }
                Ok(Labels(labels))
            }
        }
        d.deserialize_any(V)
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

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct NodeMeta<'a> {
    #[serde(borrow)]
    pub name: Str<'a>,
    #[serde(borrow, default)]
    pub labels: Labels<'a>,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct NodeSpec<'a> {
    #[serde(borrow, default, deserialize_with = "null_as_empty")]
    pub taints: Vec<Taint<'a>>,
    #[serde(default, deserialize_with = "null_as_default")]
    pub unschedulable: bool,
}

#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
pub struct Node<'a> {
    #[serde(borrow)]
    pub metadata: NodeMeta<'a>,
    #[serde(borrow, default, deserialize_with = "null_as_default")]
    pub spec: NodeSpec<'a>,
}

impl Node<'_> {
    pub fn name(&self) -> &str {
        self.metadata.name.as_str()
    }
}

#[derive(Deserialize)]
struct NodeList<'a> {
    #[serde(borrow, default)]
    kind: Option<Str<'a>>,
    #[serde(borrow, default, deserialize_with = "null_as_empty")]
    items: Vec<Node<'a>>,
}

/// serde reads structs from JSON arrays too; an answer must be an object.
pub fn starts_as_object(bytes: &[u8]) -> bool {
    bytes.trim_ascii_start().first() == Some(&b'{')
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

/// Parses the host's `list_resources_all` answer (a `v1` `NodeList`).
pub fn parse_node_list(bytes: &[u8]) -> Result<Vec<Node<'_>>, String> {
    let invalid =
        |why: String| format!("the node list from the cluster is not a valid NodeList: {why}");
    if !starts_as_object(bytes) {
        return Err(invalid("not a JSON object".into()));
    }
    let list: NodeList = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    match list.kind {
        Some(kind) if kind.as_str() != "NodeList" => {
            Err(invalid(format!("kind is {:?}", kind.as_str())))
        }
        _ => Ok(list.items),
    }
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
        assert!(nodes[1].spec.taints.is_empty());
        assert!(!nodes[2].spec.unschedulable);
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
