//! The view as the policy reads it, and when it may be used.

use std::collections::BTreeMap;
use std::fmt;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{DATA_KEY, FORMAT, is_per_node};

/// A view the policy may judge a pod against.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct View {
    format: u64,
    pub selector: String,
    pub listed_at: i64,
    pub valid_until: i64,
    pub nodes: usize,
    #[serde(default)]
    pub per_node_labels: Vec<String>,
    #[serde(default)]
    pub shapes: Vec<Shape>,
    /// Why the controller wrote no shapes.
    #[serde(default)]
    unusable: Option<String>,
}

/// Nodes that every filter and gate judges alike.
#[derive(Debug, Deserialize)]
pub struct Shape {
    /// How many nodes.
    pub count: usize,
    /// The first member names, sorted; the first is `node`'s.
    pub names: Vec<String>,
    /// The smallest-named member, as the node list shows it.
    pub node: Box<RawValue>,
}

/// Why a view cannot be used: the node list decides instead.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unusable {
    /// Not a ConfigMap holding a view this policy reads.
    Unreadable(String),
    /// The controller said it could not make one.
    Declined(String),
    /// Made for other nodes than `kataNodeSelector`'s.
    OtherSelector(String),
    /// Older than its `validUntil`, or the time is unknown.
    Stale { valid_until: i64, now: Option<i64> },
}

impl fmt::Display for Unusable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unusable::Unreadable(why) => write!(f, "the node shapes cannot be read: {why}"),
            Unusable::Declined(why) => write!(f, "the node shapes hold no shapes: {why}"),
            Unusable::OtherSelector(s) => {
                write!(f, "the node shapes were made for the nodes of {s:?}")
            }
            Unusable::Stale {
                valid_until,
                now: Some(now),
            } => write!(
                f,
                "the node shapes are stale: valid until {valid_until}, now {now} (Unix seconds)"
            ),
            Unusable::Stale { .. } => f.write_str("the node shapes cannot be dated: no clock"),
        }
    }
}

#[derive(Deserialize)]
struct ConfigMap {
    #[serde(default)]
    data: Option<BTreeMap<String, String>>,
}

impl View {
    /// The view in a ConfigMap's `data`, checked whole: the counts add up
    /// and every shape names its members.
    pub fn parse(config_map: &[u8]) -> Result<View, Unusable> {
        let unreadable = |why: String| Unusable::Unreadable(why);
        let map: ConfigMap =
            serde_json::from_slice(config_map).map_err(|e| unreadable(format!("{e}")))?;
        let text = map
            .data
            .as_ref()
            .and_then(|d| d.get(DATA_KEY))
            .ok_or_else(|| unreadable(format!("no data.{DATA_KEY:?}")))?;
        let view: View = serde_json::from_str(text).map_err(|e| unreadable(format!("{e}")))?;
        if view.format != FORMAT {
            return Err(unreadable(format!("format {}, not {FORMAT}", view.format)));
        }
        if let Some(why) = &view.unusable {
            return Err(Unusable::Declined(why.clone()));
        }
        let counted = view.shapes.iter().try_fold(0usize, |sum, s| {
            let named = !s.names.is_empty() && s.names.len() <= s.count;
            named.then(|| sum.checked_add(s.count)).flatten()
        });
        if counted != Some(view.nodes) {
            return Err(unreadable(format!(
                "its shapes do not add up to its {} nodes",
                view.nodes
            )));
        }
        Ok(view)
    }

    /// Whether the view may judge pods for `selector` at `now` (Unix
    /// seconds; `None` when the clock cannot be read).
    pub fn usable(&self, selector: &str, now: Option<i64>) -> Result<(), Unusable> {
        if self.selector.trim() != selector.trim() {
            return Err(Unusable::OtherSelector(self.selector.clone()));
        }
        match now {
            Some(now) if now <= self.valid_until => Ok(()),
            _ => Err(Unusable::Stale {
                valid_until: self.valid_until,
                now,
            }),
        }
    }

    /// Whether any of `keys` is a per-node label here: a pod that reads
    /// one may tell members of a shape apart.
    pub fn varies_in(&self, keys: &[String]) -> bool {
        keys.iter().any(|k| is_per_node(&self.per_node_labels, k))
    }
}
