//! The NodeAffinity filter: `nodeSelector` AND required node affinity,
//! compiled once per pod and then matched against many nodes, as
//! component-helpers' `nodeaffinity.RequiredNodeAffinity` does.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

use crate::labels::{is_label_value, is_qualified_name};
use crate::node::Node;

#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelOp {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
    Gt(i64),
    Lt(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct LabelRequirement {
    key: String,
    op: LabelOp,
}

impl LabelRequirement {
    fn matches(&self, node: &Node) -> bool {
        let value = node.metadata.labels.get(&self.key);
        match (&self.op, value) {
            (LabelOp::In(values), Some(v)) => values.iter().any(|x| x == v),
            (LabelOp::In(_), None) => false,
            (LabelOp::NotIn(values), Some(v)) => !values.iter().any(|x| x == v),
            (LabelOp::NotIn(_), None) => true,
            (LabelOp::Exists, v) => v.is_some(),
            (LabelOp::DoesNotExist, v) => v.is_none(),
            // A label that is absent or not an integer never matches Gt/Lt.
            (LabelOp::Gt(bound), Some(v)) => v.parse::<i64>().is_ok_and(|n| n > *bound),
            (LabelOp::Lt(bound), Some(v)) => v.parse::<i64>().is_ok_and(|n| n < *bound),
            (LabelOp::Gt(_) | LabelOp::Lt(_), None) => false,
        }
    }
}

/// A `matchFields` requirement: In/NotIn with exactly one value. The only
/// node field is `metadata.name`; like the scheduler, any other key reads as
/// the empty string (API validation refuses such keys before a pod exists).
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldRequirement {
    is_name: bool,
    value: String,
    equal: bool,
}

impl FieldRequirement {
    fn matches(&self, node: &Node) -> bool {
        let field = if self.is_name { node.name() } else { "" };
        (field == self.value) == self.equal
    }
}

/// A term whose requirements all parsed. Terms that do not parse are dropped
/// at compile time: the scheduler ignores them (they match no node).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    labels: Vec<LabelRequirement>,
    fields: Vec<FieldRequirement>,
}

impl Term {
    fn compile(term: &NodeSelectorTerm) -> Option<Term> {
        let exprs = term.match_expressions.as_deref().unwrap_or_default();
        let fields = term.match_fields.as_deref().unwrap_or_default();
        // An empty term matches nothing.
        if exprs.is_empty() && fields.is_empty() {
            return None;
        }
        Some(Term {
            labels: exprs.iter().map(compile_label).collect::<Option<_>>()?,
            fields: fields.iter().map(compile_field).collect::<Option<_>>()?,
        })
    }

    fn matches(&self, node: &Node) -> bool {
        self.labels.iter().all(|r| r.matches(node)) && self.fields.iter().all(|f| f.matches(node))
    }
}

/// The checks of `labels.NewRequirement`; `None` when the requirement is invalid.
fn compile_label(req: &NodeSelectorRequirement) -> Option<LabelRequirement> {
    let values = req.values.clone().unwrap_or_default();
    // Every value must be a valid label value, whatever the operator: so a
    // negative Gt/Lt bound makes the term invalid, as in the scheduler.
    if !is_qualified_name(&req.key) || !values.iter().all(|v| is_label_value(v)) {
        return None;
    }
    let op = match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                return None;
            }
            if req.operator == "In" {
                LabelOp::In(values)
            } else {
                LabelOp::NotIn(values)
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                return None;
            }
            if req.operator == "Exists" {
                LabelOp::Exists
            } else {
                LabelOp::DoesNotExist
            }
        }
        "Gt" | "Lt" => {
            let [value] = values.as_slice() else {
                return None;
            };
            let bound = value.parse::<i64>().ok()?;
            if req.operator == "Gt" {
                LabelOp::Gt(bound)
            } else {
                LabelOp::Lt(bound)
            }
        }
        _ => return None,
    };
    Some(LabelRequirement {
        key: req.key.clone(),
        op,
    })
}

fn compile_field(req: &NodeSelectorRequirement) -> Option<FieldRequirement> {
    let equal = match req.operator.as_str() {
        "In" => true,
        "NotIn" => false,
        _ => return None,
    };
    match req.values.as_deref() {
        Some([value]) => Some(FieldRequirement {
            is_name: req.key == "metadata.name",
            value: value.clone(),
            equal,
        }),
        _ => None,
    }
}

/// A pod's `nodeSelector` AND required node affinity, ready to test nodes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequiredNodeAffinity {
    node_selector: Vec<(String, String)>,
    /// `None`: no required affinity, nothing more to check. `Some(terms)`: at
    /// least one (valid) term must match; an empty list matches no node.
    terms: Option<Vec<Term>>,
}

impl RequiredNodeAffinity {
    pub fn new(node_selector: &BTreeMap<String, String>, required: Option<&NodeSelector>) -> Self {
        RequiredNodeAffinity {
            node_selector: node_selector
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            terms: required.map(|sel| {
                sel.node_selector_terms
                    .iter()
                    .filter_map(Term::compile)
                    .collect()
            }),
        }
    }

    /// Every label key this matcher reads: a node scan keeps only these.
    pub fn label_keys(&self) -> Vec<String> {
        let selector = self.node_selector.iter().map(|(k, _)| k);
        let terms = self
            .terms
            .iter()
            .flatten()
            .flat_map(|t| t.labels.iter().map(|r| &r.key));
        let mut keys: Vec<String> = selector.chain(terms).cloned().collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Whether a term reads a node field (`matchFields`): the node's name.
    pub fn reads_fields(&self) -> bool {
        self.terms.iter().flatten().any(|t| !t.fields.is_empty())
    }

    /// The node names the required affinity pins the pod to, when every
    /// term pins it with `matchFields metadata.name In` (the DaemonSet
    /// shape): no other node can match. `None` when some node outside a
    /// name list could match (or there are no terms to say).
    pub fn pinned_names(&self) -> Option<Vec<String>> {
        let terms = self.terms.as_ref()?;
        if terms.is_empty() {
            return None;
        }
        let mut names: Vec<String> = terms
            .iter()
            .map(|t| {
                t.fields
                    .iter()
                    .find(|f| f.is_name && f.equal)
                    .map(|f| f.value.clone())
            })
            .collect::<Option<_>>()?;
        names.sort();
        names.dedup();
        Some(names)
    }

    /// Whether the node passes the NodeAffinity filter.
    pub fn matches(&self, node: &Node) -> bool {
        self.node_selector
            .iter()
            .all(|(k, v)| node.metadata.labels.get(k) == Some(v.as_str()))
            && self
                .terms
                .as_ref()
                .is_none_or(|terms| terms.iter().any(|t| t.matches(node)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduling::test_support::node;
    use serde_json::json;

    fn affinity(selector: serde_json::Value, required: serde_json::Value) -> RequiredNodeAffinity {
        let selector: BTreeMap<String, String> = serde_json::from_value(selector).unwrap();
        let required: Option<NodeSelector> = serde_json::from_value(required).unwrap();
        RequiredNodeAffinity::new(&selector, required.as_ref())
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> serde_json::Value {
        json!({"nodeSelectorTerms": [{"matchExpressions": [{"key": key, "operator": op, "values": values}]}]})
    }

    #[test]
    fn node_selector_is_exact_label_equality() {
        let master = node(json!({"name": "m", "labels": {"node-role.kubernetes.io/master": ""}}));
        let worker = node(json!({"name": "w", "labels": {"role": "worker"}}));
        let empty_value = affinity(json!({"node-role.kubernetes.io/master": ""}), json!(null));
        assert!(
            empty_value.matches(&master),
            "{{k: \"\"}} means the label is present with an empty value"
        );
        assert!(!empty_value.matches(&worker), "absent label must not match");
        let value = affinity(json!({"role": "worker"}), json!(null));
        assert!(value.matches(&worker));
        assert!(
            !affinity(json!({"role": "Worker"}), json!(null)).matches(&worker),
            "case-sensitive"
        );
        assert!(
            affinity(json!({}), json!(null)).matches(&worker),
            "no constraints match every node"
        );
    }

    #[test]
    fn operators() {
        let n = node(json!({"name": "n", "labels": {"zone": "a", "gen": "5", "word": "five"}}));
        let cases: &[(&str, &str, &[&str], bool)] = &[
            ("zone", "In", &["a", "b"], true),
            ("zone", "In", &["b"], false),
            ("missing", "In", &["a"], false),
            ("zone", "NotIn", &["a"], false),
            ("zone", "NotIn", &["b"], true),
            ("missing", "NotIn", &["a"], true),
            ("zone", "Exists", &[], true),
            ("missing", "Exists", &[], false),
            ("zone", "DoesNotExist", &[], false),
            ("missing", "DoesNotExist", &[], true),
            ("gen", "Gt", &["4"], true),
            ("gen", "Gt", &["5"], false),
            ("gen", "Lt", &["6"], true),
            ("gen", "Lt", &["5"], false),
            ("gen", "Gt", &["004"], true),
            // Not a valid label value, so the whole term is invalid.
            ("gen", "Gt", &["-1"], false),
            ("gen", "Gt", &["+1"], false),
            ("word", "Gt", &["1"], false),
            ("word", "Lt", &["1"], false),
            ("missing", "Gt", &["1"], false),
            ("missing", "Lt", &["1"], false),
        ];
        for (key, op, values, want) in cases {
            assert_eq!(
                affinity(json!({}), expr(key, op, values)).matches(&n),
                *want,
                "{key} {op} {values:?}"
            );
        }
    }

    #[test]
    fn invalid_terms_are_skipped_and_match_nothing() {
        let n = node(json!({"name": "n", "labels": {"zone": "a"}}));
        for (op, values) in [
            ("In", vec![]),
            ("NotIn", vec![]),
            ("Exists", vec!["a"]),
            ("DoesNotExist", vec!["a"]),
            ("Gt", vec!["x"]),
            ("Gt", vec!["1", "2"]),
            ("Lt", vec![]),
            ("Equals", vec!["a"]),
            ("In", vec!["not a value!"]),
        ] {
            let a = affinity(json!({}), expr("zone", op, &values));
            assert!(!a.matches(&n), "{op} {values:?} must be an invalid term");
        }
        // An invalid term next to a valid one: the valid one still counts.
        let mixed = affinity(
            json!({}),
            json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Bogus"}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}),
        );
        assert!(mixed.matches(&n));
        assert!(!affinity(json!({}), expr("bad key!", "Exists", &[])).matches(&n));
    }

    #[test]
    fn terms_are_ored_and_requirements_anded() {
        let n = node(json!({"name": "n", "labels": {"zone": "a", "disk": "ssd"}}));
        let and_fail = affinity(
            json!({}),
            json!({"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "zone", "operator": "In", "values": ["a"]},
            {"key": "disk", "operator": "In", "values": ["hdd"]}]}]}),
        );
        assert!(!and_fail.matches(&n), "expressions in one term are ANDed");
        let or_pass = affinity(
            json!({}),
            json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["hdd"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]}),
        );
        assert!(or_pass.matches(&n), "terms are ORed");
        let and_fields = affinity(
            json!({}),
            json!({"nodeSelectorTerms": [{
            "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
            "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["other"]}]}]}),
        );
        assert!(
            !and_fields.matches(&n),
            "fields and expressions in one term are ANDed"
        );
    }

    #[test]
    fn empty_terms_and_missing_required() {
        let n = node(json!({"name": "n", "labels": {"zone": "a"}}));
        assert!(
            !affinity(json!({}), json!({"nodeSelectorTerms": []})).matches(&n),
            "empty term list matches nothing"
        );
        assert!(
            !affinity(json!({}), json!({"nodeSelectorTerms": [{}]})).matches(&n),
            "empty term matches nothing"
        );
        assert!(
            !affinity(
                json!({}),
                json!({"nodeSelectorTerms": [{"matchExpressions": [], "matchFields": []}]})
            )
            .matches(&n)
        );
        assert!(
            affinity(json!({}), json!(null)).matches(&n),
            "no required block constrains nothing"
        );
    }

    #[test]
    fn node_selector_and_affinity_are_anded() {
        let n = node(json!({"name": "n", "labels": {"zone": "a"}}));
        let a = affinity(json!({"zone": "b"}), expr("zone", "In", &["a"]));
        assert!(!a.matches(&n));
        let b = affinity(json!({"zone": "a"}), expr("zone", "In", &["b"]));
        assert!(!b.matches(&n));
    }

    #[test]
    fn match_fields_knows_only_metadata_name() {
        let n = node(json!({"name": "worker-1", "labels": {}}));
        let field = |key: &str, op: &str, values: &[&str]| {
            affinity(
                json!({}),
                json!({"nodeSelectorTerms": [{"matchFields": [{"key": key, "operator": op, "values": values}]}]}),
            )
        };
        assert!(
            field("metadata.name", "In", &["worker-1"]).matches(&n),
            "DaemonSet pinning"
        );
        assert!(!field("metadata.name", "In", &["worker-2"]).matches(&n));
        assert!(field("metadata.name", "NotIn", &["worker-2"]).matches(&n));
        assert!(!field("metadata.name", "NotIn", &["worker-1"]).matches(&n));
        assert!(
            !field("metadata.name", "In", &["worker-1", "worker-2"]).matches(&n),
            "exactly one value"
        );
        assert!(
            !field("metadata.name", "Exists", &[]).matches(&n),
            "only In/NotIn"
        );
        assert!(
            !field("metadata.uid", "In", &["worker-1"]).matches(&n),
            "other keys read as \"\""
        );
        assert!(
            field("metadata.uid", "NotIn", &["worker-1"]).matches(&n),
            "other keys read as \"\""
        );
    }
}
