//! A second node-list reader built on serde, the oracle of the differential
//! test (`src/node/tests.rs`) and of the `host_answers` fuzz target, which
//! includes this file by path. Test code only: it never ships.
//!
//! The including module provides `KeyFilter`, `Node`, `Scan` and
//! `scan_node_list` (from `crate::node` or `kata_runtime_policy::node`).

use std::fmt;
use std::ops::ControlFlow;

use serde::Deserialize;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{
    HandlerFeature, HandlerFeatures, HandlerReport, KeyFilter, Node, Scan, scan_node_list,
};

/// The handlers whose reports the readers are compared on.
pub const HANDLER_NAMES: [&str; 4] = ["kata", "kata-qemu", "runc", ""];

/// What a reader saw of one node, owned, to compare readers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub name: String,
    pub labels: Vec<(String, String)>,
    /// key, value, effect
    pub taints: Vec<(String, Option<String>, String)>,
    pub unschedulable: bool,
    /// The text of `status.allocatable`.
    pub allocatable: Option<String>,
    /// What the node reports of each of [`HANDLER_NAMES`].
    pub handlers: [Option<HandlerReport>; 4],
    /// `status.features.supplementalGroupsPolicy` is `true`.
    pub supplemental_groups_policy: bool,
}

impl Seen {
    pub fn of(node: &Node) -> Seen {
        let text = |s: &super::Str| s.as_str().to_owned();
        Seen {
            name: node.name().to_owned(),
            labels: node
                .metadata
                .labels
                .0
                .iter()
                .map(|(k, v)| (text(k), text(v)))
                .collect(),
            taints: node
                .spec
                .taints
                .iter()
                .map(|t| (text(&t.key), t.value.as_ref().map(text), text(&t.effect)))
                .collect(),
            unschedulable: node.spec.unschedulable,
            allocatable: node
                .allocatable
                .raw()
                .map(|r| String::from_utf8_lossy(r).into_owned()),
            handlers: HANDLER_NAMES.map(|h| Some(node.runtime_handlers.report(h))),
            supplemental_groups_policy: node.features.supplemental_groups_policy,
        }
    }
}

/// What a node reports of `name`, from `status.runtimeHandlers` read as a
/// `serde_json::Value`: the rules of `RuntimeHandlers::report`, written
/// out plainly.
pub fn report_model(handlers: Option<&serde_json::Value>, name: &str) -> HandlerReport {
    let Some(entries) = handlers
        .and_then(|h| h.as_array())
        .filter(|e| !e.is_empty())
    else {
        return HandlerReport::Nothing;
    };
    let entry = entries
        .iter()
        .filter_map(|e| e.as_object())
        .find(|e| e.get("name").and_then(|n| n.as_str()) == Some(name));
    let Some(entry) = entry else {
        return HandlerReport::NotListed;
    };
    let feature = |key: &str| {
        entry
            .get("features")
            .and_then(|f| f.as_object())
            .and_then(|f| f.get(key))
            == Some(&serde_json::Value::Bool(true))
    };
    HandlerReport::Listed(
        (HandlerFeature::ALL.into_iter()).fold(HandlerFeatures::default(), |set, f| {
            set.with(f, feature(f.field()))
        }),
    )
}

/// How a scan ended (`Err` if the answer was refused) and the nodes it saw
/// until then.
pub type Outcome = (Result<Scan, ()>, Vec<Seen>);

/// The shipped reader, stopping after `stop_after` nodes.
pub fn with_reader(bytes: &[u8], keep: Option<&[String]>, stop_after: usize) -> Outcome {
    let mut seen = Vec::new();
    let filter = keep.map_or(KeyFilter::All, KeyFilter::Only);
    let result = scan_node_list(bytes, filter, |n| {
        seen.push(Seen::of(n));
        if seen.len() >= stop_after {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    });
    (result.map_err(|_| ()), seen)
}

/// The same scan through serde.
pub fn with_serde(bytes: &[u8], keep: Option<&[String]>, stop_after: usize) -> Outcome {
    if bytes.trim_ascii_start().first() != Some(&b'{') {
        return (Err(()), Vec::new());
    }
    let mut list = ListVisitor {
        keep,
        stop_after,
        seen: Vec::new(),
        stopped: false,
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let result = match de.deserialize_map(&mut list) {
        _ if list.stopped => Ok(Scan::Stopped),
        Ok(()) => de.end().map(|()| Scan::Completed).map_err(|_| ()),
        Err(_) => Err(()),
    };
    (result, list.seen)
}

struct ListVisitor<'k> {
    keep: Option<&'k [String]>,
    stop_after: usize,
    seen: Vec<Seen>,
    stopped: bool,
}

impl<'de> Visitor<'de> for &mut ListVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a NodeList object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "kind" => {
                    let kind: Option<String> = map.next_value()?;
                    if kind.is_some_and(|k| k != "NodeList") {
                        return Err(de::Error::custom("kind"));
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

struct Items<'v, 'k>(&'v mut ListVisitor<'k>);

impl<'de> DeserializeSeed<'de> for Items<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Items<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of Nodes")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(node) = seq.next_element_seed(NodeSeed(self.0.keep))? {
            self.0.seen.push(node);
            if self.0.seen.len() >= self.0.stop_after {
                self.0.stopped = true;
                return Err(de::Error::custom("stopped"));
            }
        }
        Ok(())
    }
}

struct NodeSeed<'k>(Option<&'k [String]>);

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Seen;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Seen, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Seen;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a Node")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Seen, A::Error> {
        let mut seen = Seen {
            handlers: HANDLER_NAMES.map(|h| Some(report_model(None, h))),
            ..Seen::default()
        };
        let mut has_metadata = false;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "metadata" => {
                    let meta = map.next_value_seed(MetaSeed(self.0))?;
                    (seen.name, seen.labels) = meta;
                    has_metadata = true;
                }
                "spec" => {
                    let spec = map.next_value::<Option<Spec>>()?.unwrap_or_default();
                    seen.unschedulable = spec.unschedulable.unwrap_or(false);
                    seen.taints = (spec.taints.unwrap_or_default().into_iter())
                        .map(|t| {
                            (
                                t.key.unwrap_or_default(),
                                t.value,
                                t.effect.unwrap_or_default(),
                            )
                        })
                        .collect();
                }
                "status" => {
                    let status = map.next_value::<Option<Status>>()?.unwrap_or_default();
                    let raw = status.allocatable.map(|r| r.get().to_owned());
                    if raw.as_ref().is_some_and(|r| !r.starts_with('{')) {
                        return Err(de::Error::custom("allocatable is not an object"));
                    }
                    seen.allocatable = raw;
                    let handlers = status.runtime_handlers.as_ref();
                    seen.handlers = HANDLER_NAMES.map(|h| Some(report_model(handlers, h)));
                    seen.supplemental_groups_policy = (status.features.as_ref())
                        .and_then(|f| f.as_object())
                        .and_then(|f| f.get("supplementalGroupsPolicy"))
                        == Some(&serde_json::Value::Bool(true));
                }
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        if !has_metadata {
            return Err(de::Error::missing_field("metadata"));
        }
        Ok(seen)
    }
}

#[derive(Default, Deserialize)]
struct Spec {
    #[serde(default)]
    taints: Option<Vec<Taint>>,
    #[serde(default)]
    unschedulable: Option<bool>,
}

#[derive(Deserialize)]
struct Taint {
    #[serde(default)]
    key: Option<String>,
    #[serde(default)]
    value: Option<String>,
    #[serde(default)]
    effect: Option<String>,
}

#[derive(Default, Deserialize)]
struct Status {
    #[serde(default)]
    allocatable: Option<Box<serde_json::value::RawValue>>,
    /// `null` and absent both read as `None`.
    #[serde(rename = "runtimeHandlers", default)]
    runtime_handlers: Option<serde_json::Value>,
    /// `status.features`, any shape.
    #[serde(default)]
    features: Option<serde_json::Value>,
}

struct MetaSeed<'k>(Option<&'k [String]>);

impl<'de> DeserializeSeed<'de> for MetaSeed<'_> {
    type Value = (String, Vec<(String, String)>);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for MetaSeed<'_> {
    type Value = (String, Vec<(String, String)>);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("Node metadata")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut name = None;
        let mut labels = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "name" => name = Some(map.next_value::<String>()?),
                "labels" => labels = map.next_value_seed(LabelsSeed(self.0))?,
                _ => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let name = name.ok_or_else(|| de::Error::missing_field("name"))?;
        Ok((name, labels))
    }
}

struct LabelsSeed<'k>(Option<&'k [String]>);

impl<'de> DeserializeSeed<'de> for LabelsSeed<'_> {
    type Value = Vec<(String, String)>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for LabelsSeed<'_> {
    type Value = Vec<(String, String)>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of label keys to values")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Vec::new())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut labels = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if self.0.is_none_or(|keep| keep.contains(&key)) {
                let value = map.next_value::<String>()?;
                labels.push((key, value));
            } else {
                map.next_value::<de::IgnoredAny>()?;
            }
        }
        Ok(labels)
    }
}
