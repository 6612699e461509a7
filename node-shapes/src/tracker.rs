//! What the controller knows of the kata nodes, from the watch's events,
//! and when the view must be written again. Pure: no I/O, no clock.

use std::collections::BTreeMap;

use kata_runtime_policy::shapes::{BuildOptions, build, form_of};
use serde_json::Value;

/// A watch event, as the tracker needs it.
#[derive(Debug)]
pub enum Change {
    /// A (re)list starts.
    Init,
    /// A node of the list.
    Listed(Value),
    /// The list is complete.
    Done,
    /// A node was added or changed.
    Applied(Value),
    /// A node was deleted.
    Deleted(Value),
}

pub struct Tracker {
    options: BuildOptions,
    /// The nodes of the last complete list and the events since, each as
    /// the policy reads it (annotations and most of the status dropped).
    nodes: BTreeMap<String, Value>,
    /// A list under way.
    listing: Option<BTreeMap<String, Value>>,
    /// When the last list completed, in Unix seconds.
    listed_at: Option<i64>,
    /// A change not yet written.
    dirty: bool,
    /// The view last handed out to be written: a change the policy does
    /// not read (a kubelet's status heartbeat) makes the same view, and
    /// is not written again.
    last: Option<Value>,
}

fn name(node: &Value) -> String {
    node["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

impl Tracker {
    /// `options.listed_at` is ignored: a list's completion sets it.
    pub fn new(options: BuildOptions) -> Tracker {
        Tracker {
            options,
            nodes: BTreeMap::new(),
            listing: None,
            listed_at: None,
            dirty: false,
            last: None,
        }
    }

    pub fn apply(&mut self, change: Change, now: i64) {
        match change {
            Change::Init => self.listing = Some(BTreeMap::new()),
            Change::Listed(node) => {
                let listing = self.listing.get_or_insert_default();
                listing.insert(name(&node), form_of(&node));
            }
            Change::Done => {
                self.nodes = self.listing.take().unwrap_or_default();
                self.listed_at = Some(now);
                self.dirty = true;
            }
            Change::Applied(node) => {
                self.nodes.insert(name(&node), form_of(&node));
                self.dirty = true;
            }
            Change::Deleted(node) => {
                self.nodes.remove(&name(&node));
                self.dirty = true;
            }
        }
    }

    /// The view to write, when something changed since the last one
    /// written and a list has completed (before that nothing is known).
    pub fn due(&mut self) -> Option<Value> {
        let listed_at = self.listed_at?;
        if !self.dirty {
            return None;
        }
        self.dirty = false;
        let nodes: Vec<Value> = self.nodes.values().cloned().collect();
        let options = BuildOptions {
            listed_at,
            ..self.options.clone()
        };
        let view = build(&nodes, &options);
        if self.last.as_ref() == Some(&view) {
            return None;
        }
        self.last = Some(view.clone());
        Some(view)
    }

    /// A write failed: try again at the next tick.
    pub fn retry(&mut self) {
        self.dirty = true;
        self.last = None;
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(name: &str, zone: &str) -> Value {
        json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": zone},
            "annotations": {"a": "b"}}, "status": {"allocatable": {"cpu": "2"}}})
    }

    fn tracker() -> Tracker {
        Tracker::new(BuildOptions {
            selector: "katacontainers.io/kata-runtime=true".into(),
            per_node_labels: vec!["kubernetes.io/hostname".into()],
            listed_at: 0,
            valid_for: 180,
            max_bytes: 1 << 20,
        })
    }

    fn counts(view: &Value) -> Vec<u64> {
        view["shapes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["count"].as_u64().unwrap())
            .collect()
    }

    #[test]
    fn nothing_is_written_before_the_first_list_completes() {
        let mut t = tracker();
        t.apply(Change::Init, 10);
        t.apply(Change::Listed(node("a", "z1")), 10);
        assert!(t.due().is_none());
        t.apply(Change::Applied(node("b", "z1")), 11);
        assert!(t.due().is_none(), "an event before the list is not a view");
        t.apply(Change::Done, 12);
        let view = t.due().unwrap();
        assert_eq!(view["listedAt"], 12);
        assert_eq!(view["validUntil"], 192);
        assert_eq!(counts(&view), [1]);
        assert!(t.due().is_none(), "written once until the next change");
    }

    #[test]
    fn events_change_the_view_and_a_relist_replaces_it_and_renews_it() {
        let mut t = tracker();
        for change in [Change::Init, Change::Listed(node("a", "z1")), Change::Done] {
            t.apply(change, 100);
        }
        t.due();
        t.apply(Change::Applied(node("b", "z1")), 105);
        t.apply(Change::Applied(node("c", "z2")), 105);
        let view = t.due().unwrap();
        assert_eq!(
            view["listedAt"], 100,
            "events do not prove the watch is alive"
        );
        assert_eq!(counts(&view), [2, 1]);
        t.apply(Change::Deleted(node("c", "z2")), 106);
        assert_eq!(counts(&t.due().unwrap()), [2]);
        // A relist without "b": the list replaces what the events said.
        for change in [Change::Init, Change::Listed(node("a", "z1")), Change::Done] {
            t.apply(change, 160);
        }
        let view = t.due().unwrap();
        assert_eq!(
            (view["listedAt"].clone(), counts(&view)),
            (json!(160), vec![1])
        );
        assert_eq!(t.node_count(), 1);
    }

    #[test]
    fn a_change_the_policy_does_not_read_writes_nothing() {
        let mut t = tracker();
        for change in [Change::Init, Change::Listed(node("a", "z1")), Change::Done] {
            t.apply(change, 100);
        }
        assert!(t.due().is_some());
        // A status heartbeat: conditions and annotations change, nothing the
        // policy reads.
        let mut beat = node("a", "z1");
        beat["status"]["conditions"] = json!([{"type": "Ready", "lastHeartbeatTime": "now"}]);
        beat["metadata"]["annotations"]["a"] = json!("c");
        t.apply(Change::Applied(beat), 110);
        assert!(t.due().is_none());
        t.apply(Change::Applied(node("a", "z2")), 111);
        assert!(t.due().is_some(), "a label the policy reads changed");
    }

    #[test]
    fn a_failed_write_is_tried_again() {
        let mut t = tracker();
        for change in [Change::Init, Change::Done] {
            t.apply(change, 1);
        }
        assert!(t.due().is_some());
        assert!(t.due().is_none());
        t.retry();
        assert_eq!(t.due().unwrap()["nodes"], 0);
    }
}
