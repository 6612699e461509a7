//! An API object's label selector (`matchLabels` and `matchExpressions`,
//! ANDed) compiled once, as `metav1.LabelSelectorAsSelector` does, then
//! matched against many label sets.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{Requirement, SelectorOp, requirement};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selector {
    /// A selector that is not set (`nil`): it selects nothing.
    Nothing,
    /// Every requirement must hold; none (`{}`) selects everything.
    All(Vec<Requirement>),
}

impl Selector {
    /// `LabelSelectorAsSelector`: each `matchLabels` entry an `=`
    /// requirement, each expression its operator, with
    /// `labels.NewRequirement`'s checks; an unknown operator is an error.
    pub fn compile(selector: Option<&LabelSelector>) -> Result<Selector, String> {
        let Some(selector) = selector else {
            return Ok(Selector::Nothing);
        };
        let mut all = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            all.push(requirement(key, SelectorOp::Equals, vec![value.clone()])?);
        }
        for e in selector.match_expressions.iter().flatten() {
            let op = match e.operator.as_str() {
                "In" => SelectorOp::In,
                "NotIn" => SelectorOp::NotIn,
                "Exists" => SelectorOp::Exists,
                "DoesNotExist" => SelectorOp::DoesNotExist,
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            };
            all.push(requirement(
                &e.key,
                op,
                e.values.clone().unwrap_or_default(),
            )?);
        }
        Ok(Selector::All(all))
    }

    /// Adds a requirement (as the API server merges `matchLabelKeys`); a
    /// selector that selects nothing still does.
    pub fn and(&mut self, key: &str, op: SelectorOp, value: &str) -> Result<(), String> {
        if let Selector::All(all) = self {
            all.push(requirement(key, op, vec![value.to_string()])?);
        }
        Ok(())
    }

    /// How many requirements a match may check: what a match costs.
    pub fn requirement_count(&self) -> usize {
        match self {
            Selector::Nothing => 0,
            Selector::All(all) => all.len(),
        }
    }

    /// Whether the labels that `label` looks up match.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::All(all) => all.iter().all(|r| r.matches(&label)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;
    use std::collections::BTreeMap;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, operator: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: operator.into(),
            values: Some(values.iter().map(|v| v.to_string()).collect()),
        }
    }

    fn matches(selector: &Selector, l: &BTreeMap<String, String>) -> bool {
        selector.matches(|k| l.get(k).map(String::as_str))
    }

    #[test]
    fn unset_selects_nothing_and_empty_selects_everything() {
        let none = Selector::compile(None).unwrap();
        let empty = Selector::compile(Some(&LabelSelector::default())).unwrap();
        assert!(!matches(&none, &labels(&[])));
        assert!(matches(&empty, &labels(&[])));
        assert!(matches(&empty, &labels(&[("a", "b")])));
    }

    #[test]
    fn labels_and_expressions_are_anded() {
        let s = Selector::compile(Some(&LabelSelector {
            match_labels: Some(labels(&[("app", "db")])),
            match_expressions: Some(vec![
                expr("tier", "In", &["a", "b"]),
                expr("canary", "DoesNotExist", &[]),
            ]),
        }))
        .unwrap();
        assert!(matches(&s, &labels(&[("app", "db"), ("tier", "b")])));
        assert!(!matches(&s, &labels(&[("app", "db"), ("tier", "c")])));
        assert!(!matches(
            &s,
            &labels(&[("app", "db"), ("tier", "a"), ("canary", "")])
        ));
        assert!(!matches(&s, &labels(&[("tier", "a")])));
    }

    #[test]
    fn invalid_selectors_are_errors() {
        for bad in [
            expr("k", "Gt", &["1"]),
            expr("k", "In", &[]),
            expr("k", "Exists", &["x"]),
            expr("not a key", "Exists", &[]),
        ] {
            let s = LabelSelector {
                match_expressions: Some(vec![bad.clone()]),
                ..Default::default()
            };
            assert!(Selector::compile(Some(&s)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn an_added_requirement_narrows_but_never_widens_nothing() {
        let mut s = Selector::compile(Some(&LabelSelector::default())).unwrap();
        s.and("rev", SelectorOp::In, "2").unwrap();
        assert!(matches(&s, &labels(&[("rev", "2")])));
        assert!(!matches(&s, &labels(&[("rev", "1")])));
        let mut nothing = Selector::Nothing;
        nothing.and("rev", SelectorOp::NotIn, "1").unwrap();
        assert!(!matches(&nothing, &labels(&[("rev", "2")])));
    }
}
