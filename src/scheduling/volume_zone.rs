//! The VolumeZone filter (`volumezone/volume_zone.go`): a bound
//! PersistentVolume's zone and region labels name where its disk is, and a
//! node that reports a zone or region must be in one of them.

use crate::node::Node;

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const ZONE: &str = "topology.kubernetes.io/zone";
const REGION: &str = "topology.kubernetes.io/region";

/// The four topology keys the filter reads, beta and GA.
pub const TOPOLOGY_KEYS: [&str; 4] = [BETA_ZONE, BETA_REGION, ZONE, REGION];

/// The zone/region labels of one PV: `(key, allowed values)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VolumeZones(Vec<(&'static str, Vec<String>)>);

impl VolumeZones {
    /// Reads a PV's labels. A value lists zones separated by `__` (each part
    /// trimmed, `LabelZonesToSet`); a value with an empty part is an error
    /// upstream, and the label is then ignored.
    pub fn from_labels<'a>(label: impl Fn(&str) -> Option<&'a str>) -> VolumeZones {
        let mut zones = Vec::new();
        for key in TOPOLOGY_KEYS {
            let Some(value) = label(key) else { continue };
            let parts: Vec<String> = value.split("__").map(|p| p.trim().to_string()).collect();
            if parts.iter().any(String::is_empty) {
                continue;
            }
            zones.push((key, parts));
        }
        VolumeZones(zones)
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the node can use the volume. A node without any zone or region
    /// label passes (single-zone clusters). A beta key is looked up on the
    /// node under its GA name too, never the other way round; the node's
    /// value is not split.
    pub fn passes(&self, node: &Node) -> bool {
        let labels = &node.metadata.labels;
        if TOPOLOGY_KEYS.iter().all(|k| labels.get(k).is_none()) {
            return true;
        }
        self.0.iter().all(|(key, values)| {
            let value = labels.get(key).or_else(|| match *key {
                BETA_ZONE => labels.get(ZONE),
                BETA_REGION => labels.get(REGION),
                _ => None,
            });
            value.is_some_and(|v| values.iter().any(|z| z == v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::test_support::node;
    use serde_json::json;

    fn zones(labels: serde_json::Value) -> VolumeZones {
        VolumeZones::from_labels(|k| labels.get(k).and_then(|v| v.as_str()))
    }

    fn on(labels: serde_json::Value) -> Node<'static> {
        node(json!({"name": "n", "labels": labels}))
    }

    /// Translated from `volume_zone_test.go` (`TestSingleZone`,
    /// `TestMultiZone`, `TestWithBinding`): PV labels, node labels, verdict.
    #[test]
    fn upstream_zone_cases() {
        let cases = [
            // TestSingleZone
            (
                "pv with zone, node in it",
                json!({BETA_ZONE: "us-west1-a"}),
                json!({BETA_ZONE: "us-west1-a", "uselessLabel": "none"}),
                true,
            ),
            (
                "pv with zone, node elsewhere",
                json!({BETA_ZONE: "us-west1-a"}),
                json!({BETA_ZONE: "us-west1-b"}),
                false,
            ),
            (
                "pv with region, node in it",
                json!({BETA_REGION: "us-west1"}),
                json!({BETA_REGION: "us-west1"}),
                true,
            ),
            (
                "pv with region, node elsewhere",
                json!({BETA_REGION: "us-west1"}),
                json!({BETA_REGION: "us-east1"}),
                false,
            ),
            (
                "pv with zone and region, node in both",
                json!({BETA_ZONE: "us-west1-a", BETA_REGION: "us-west1"}),
                json!({BETA_ZONE: "us-west1-a", BETA_REGION: "us-west1"}),
                true,
            ),
            (
                "pv with zone and region, node's zone differs",
                json!({BETA_ZONE: "us-west1-a", BETA_REGION: "us-west1"}),
                json!({BETA_ZONE: "us-west1-b", BETA_REGION: "us-west1"}),
                false,
            ),
            (
                "node without topology labels",
                json!({BETA_ZONE: "us-west1-a"}),
                json!({"uselessLabel": "none"}),
                true,
            ),
            (
                "GA pv label, GA node label",
                json!({ZONE: "us-west1-a"}),
                json!({ZONE: "us-west1-a"}),
                true,
            ),
            (
                "GA pv label, GA node label elsewhere",
                json!({ZONE: "us-west1-a"}),
                json!({ZONE: "us-west1-b"}),
                false,
            ),
            (
                "beta pv label, GA node label",
                json!({BETA_ZONE: "us-west1-a"}),
                json!({ZONE: "us-west1-a"}),
                true,
            ),
            (
                "beta pv region, GA node region",
                json!({BETA_REGION: "us-west1"}),
                json!({REGION: "us-west1"}),
                true,
            ),
            // A GA key never falls back to beta.
            (
                "GA pv label, beta node label",
                json!({ZONE: "us-west1-a"}),
                json!({BETA_ZONE: "us-west1-a"}),
                false,
            ),
            // TestMultiZone
            (
                "multi-zone pv, node in one",
                json!({BETA_ZONE: "us-west1-b__us-west1-c"}),
                json!({BETA_ZONE: "us-west1-c"}),
                true,
            ),
            (
                "multi-zone pv, spaces trimmed",
                json!({BETA_ZONE: " us-west1-b __ us-west1-c "}),
                json!({BETA_ZONE: "us-west1-b"}),
                true,
            ),
            (
                "multi-zone pv, node in none",
                json!({BETA_ZONE: "us-west1-b__us-west1-c"}),
                json!({BETA_ZONE: "us-west1-a"}),
                false,
            ),
            (
                "GA multi-zone pv",
                json!({ZONE: "us-west1-b__us-west1-c"}),
                json!({ZONE: "us-west1-c"}),
                true,
            ),
            // The node's own value is never split.
            (
                "node value not split",
                json!({ZONE: "a"}),
                json!({ZONE: "a__b"}),
                false,
            ),
            // A value with an empty part is ignored: no constraint.
            (
                "malformed pv label ignored",
                json!({ZONE: "a____b"}),
                json!({ZONE: "c"}),
                true,
            ),
            (
                "pv without topology labels",
                json!({"other": "x"}),
                json!({ZONE: "c"}),
                true,
            ),
        ];
        for (name, pv, node_labels, expected) in cases {
            assert_eq!(zones(pv).passes(&on(node_labels)), expected, "{name}");
        }
    }
}
