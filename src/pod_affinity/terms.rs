//! A pod affinity term compiled once (the scheduler framework's
//! `AffinityTerm`), then matched against every pod of the cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodAffinityTerm;

use crate::labels::{Selector, SelectorOp};

/// Namespace labels, by namespace name.
pub type NamespaceLabels = BTreeMap<String, BTreeMap<String, String>>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Term {
    /// `namespaces`; the term's pod's own namespace when neither
    /// `namespaces` nor `namespaceSelector` is set. Sorted.
    namespaces: Vec<String>,
    /// `namespaceSelector`: unset selects nothing, `{}` every namespace.
    namespace_selector: Selector,
    selector: Selector,
    pub topology_key: String,
}

impl Term {
    /// The term of a pod in `namespace`. For the pod being created, pass
    /// its labels as `own_labels`: the API server merges `matchLabelKeys`
    /// (`key In (value)`) and `mismatchLabelKeys` (`key NotIn (value)`)
    /// into the label selector when it creates the pod, after the
    /// admission webhooks, and the scheduler reads the merged selector.
    /// Existing pods' terms are already merged.
    pub fn compile(
        term: &PodAffinityTerm,
        namespace: &str,
        own_labels: Option<&BTreeMap<String, String>>,
    ) -> Result<Term, String> {
        let mut selector = Selector::compile(term.label_selector.as_ref())
            .map_err(|e| format!("labelSelector: {e}"))?;
        if let Some(labels) = own_labels {
            let keys = [
                (&term.match_label_keys, SelectorOp::In),
                (&term.mismatch_label_keys, SelectorOp::NotIn),
            ];
            for (keys, op) in keys {
                for key in keys.iter().flatten() {
                    if let Some(value) = labels.get(key) {
                        selector
                            .and(key, op, value)
                            .map_err(|e| format!("matchLabelKeys: {e}"))?;
                    }
                }
            }
        }
        let namespace_selector = Selector::compile(term.namespace_selector.as_ref())
            .map_err(|e| format!("namespaceSelector: {e}"))?;
        let mut namespaces = term.namespaces.clone().unwrap_or_default();
        if namespaces.is_empty() && term.namespace_selector.is_none() {
            namespaces.push(namespace.to_string());
        }
        namespaces.sort();
        namespaces.dedup();
        Ok(Term {
            namespaces,
            namespace_selector,
            selector,
            topology_key: term.topology_key.clone(),
        })
    }

    /// What matching one pod may cost, in requirements checked (at least
    /// one): a pod chooses how many its selectors hold.
    pub fn weight(&self) -> usize {
        1 + self.selector.requirement_count() + self.namespace_selector.requirement_count()
    }

    /// Whether matching needs namespaces' labels: a namespace selector
    /// with requirements (`{}` selects every namespace without them).
    pub fn reads_namespace_labels(&self) -> bool {
        matches!(&self.namespace_selector, Selector::All(all) if !all.is_empty())
    }

    /// [`matches`](Self::matches), or the term's label selector alone when
    /// its namespace selector selects a namespace without labels.
    /// kube-scheduler 1.34 to 1.36.3 match the pod's own terms so
    /// (kubernetes/kubernetes#141526: the resolved namespaces are added,
    /// the selector is kept, and it is matched against no labels), so that
    /// a selector made only of `NotIn` and `DoesNotExist` takes every
    /// namespace. For anti-affinity that is the stricter reading, and the
    /// one to judge by until the fix ships; affinity takes the other.
    pub fn matches_any_scheduler<'a>(
        &self,
        namespace: &str,
        namespace_labels: Option<&BTreeMap<String, String>>,
        label: impl Fn(&str) -> Option<&'a str> + Copy,
    ) -> bool {
        self.matches(namespace, namespace_labels, label)
            || (self.reads_namespace_labels()
                && self.namespace_selector.matches(|_| None)
                && self.selector.matches(label))
    }

    /// `AffinityTerm.Matches`: a pod in `namespace` (whose labels are
    /// `namespace_labels`, `None` when unknown) with labels `label`.
    pub fn matches<'a>(
        &self,
        namespace: &str,
        namespace_labels: Option<&BTreeMap<String, String>>,
        label: impl Fn(&str) -> Option<&'a str>,
    ) -> bool {
        let named = self
            .namespaces
            .binary_search_by(|n| n.as_str().cmp(namespace))
            .is_ok();
        let selected = || match &self.namespace_selector {
            Selector::Nothing => false,
            Selector::All(all) if all.is_empty() => true,
            selector => {
                namespace_labels.is_some_and(|l| selector.matches(|k| l.get(k).map(String::as_str)))
            }
        };
        (named || selected()) && self.selector.matches(label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn term(v: serde_json::Value) -> PodAffinityTerm {
        serde_json::from_value(v).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn matches(
        t: &Term,
        ns: &str,
        ns_labels: Option<&BTreeMap<String, String>>,
        pod: &[(&str, &str)],
    ) -> bool {
        let pod = labels(pod);
        t.matches(ns, ns_labels, |k| pod.get(k).map(String::as_str))
    }

    #[test]
    fn without_namespaces_a_term_means_its_pods_own_namespace() {
        let t = Term::compile(
            &term(json!({"topologyKey":"zone","labelSelector":{"matchLabels":{"app":"db"}}})),
            "shop",
            None,
        )
        .unwrap();
        assert!(matches(&t, "shop", None, &[("app", "db")]));
        assert!(!matches(&t, "other", None, &[("app", "db")]));
        assert!(!matches(&t, "shop", None, &[("app", "web")]));
    }

    #[test]
    fn named_namespaces_replace_the_own_one() {
        let t = Term::compile(
            &term(json!({"topologyKey":"zone","namespaces":["b","a"],"labelSelector":{}})),
            "shop",
            None,
        )
        .unwrap();
        assert!(matches(&t, "a", None, &[]) && matches(&t, "b", None, &[]));
        assert!(!matches(&t, "shop", None, &[]));
    }

    #[test]
    fn an_empty_namespace_selector_means_every_namespace() {
        let t = Term::compile(
            &term(json!({"topologyKey":"zone","namespaceSelector":{},"labelSelector":{}})),
            "shop",
            None,
        )
        .unwrap();
        assert!(!t.reads_namespace_labels());
        assert!(matches(&t, "anywhere", None, &[]));
    }

    #[test]
    fn a_namespace_selector_matches_the_namespaces_labels() {
        let t = Term::compile(
            &term(json!({"topologyKey":"zone","namespaces":["x"],
                         "namespaceSelector":{"matchLabels":{"team":"a"}},"labelSelector":{}})),
            "shop",
            None,
        )
        .unwrap();
        assert!(t.reads_namespace_labels());
        let team_a = labels(&[("team", "a")]);
        assert!(matches(&t, "n1", Some(&team_a), &[]));
        assert!(!matches(&t, "n1", Some(&labels(&[("team", "b")])), &[]));
        assert!(!matches(&t, "n1", None, &[]), "unknown namespace");
        assert!(matches(&t, "x", None, &[]), "named namespaces still count");
    }

    #[test]
    fn a_negative_namespace_selector_takes_every_namespace_for_the_stricter_reading() {
        let t = Term::compile(
            &term(json!({"topologyKey":"zone","labelSelector":{"matchLabels":{"app":"db"}},
                         "namespaceSelector":{"matchExpressions":[
                            {"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["a"]}]}})),
            "a",
            None,
        )
        .unwrap();
        let a = labels(&[("kubernetes.io/metadata.name", "a")]);
        let pod = labels(&[("app", "db")]);
        let pod = |k: &str| pod.get(k).map(String::as_str);
        assert!(!t.matches("a", Some(&a), pod));
        assert!(t.matches_any_scheduler("a", Some(&a), pod));
        let positive = Term::compile(
            &term(json!({"topologyKey":"zone","labelSelector":{},
                         "namespaceSelector":{"matchLabels":{"team":"x"}}})),
            "a",
            None,
        )
        .unwrap();
        assert!(!positive.matches_any_scheduler("a", Some(&a), pod));
    }

    #[test]
    fn an_unset_label_selector_matches_no_pod() {
        let t = Term::compile(&term(json!({"topologyKey":"zone"})), "shop", None).unwrap();
        assert!(!matches(&t, "shop", None, &[]));
    }

    #[test]
    fn match_label_keys_are_merged_for_the_pod_being_created_only() {
        let raw = term(
            json!({"topologyKey":"zone","labelSelector":{"matchLabels":{"app":"web"}},
                              "matchLabelKeys":["rev","absent"],"mismatchLabelKeys":["team"]}),
        );
        let own = labels(&[("app", "web"), ("rev", "2"), ("team", "a")]);
        let created = Term::compile(&raw, "shop", Some(&own)).unwrap();
        assert!(matches(
            &created,
            "shop",
            None,
            &[("app", "web"), ("rev", "2"), ("team", "b")]
        ));
        assert!(!matches(
            &created,
            "shop",
            None,
            &[("app", "web"), ("rev", "1"), ("team", "b")]
        ));
        assert!(!matches(
            &created,
            "shop",
            None,
            &[("app", "web"), ("rev", "2"), ("team", "a")]
        ));
        let existing = Term::compile(&raw, "shop", None).unwrap();
        assert!(matches(
            &existing,
            "shop",
            None,
            &[("app", "web"), ("rev", "1"), ("team", "a")]
        ));
    }

    #[test]
    fn invalid_selectors_say_which() {
        let bad = term(
            json!({"topologyKey":"zone","labelSelector":{"matchExpressions":[{"key":"a","operator":"Gt","values":["1"]}]}}),
        );
        assert!(
            Term::compile(&bad, "ns", None)
                .unwrap_err()
                .starts_with("labelSelector: ")
        );
        let bad = term(
            json!({"topologyKey":"zone","namespaceSelector":{"matchExpressions":[{"key":"a","operator":"In"}]}}),
        );
        assert!(
            Term::compile(&bad, "ns", None)
                .unwrap_err()
                .starts_with("namespaceSelector: ")
        );
    }
}
