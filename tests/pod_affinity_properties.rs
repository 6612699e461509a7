//! Properties of inter-pod affinity through the whole decision: it agrees
//! with a plain model of kube-scheduler's InterPodAffinity filter (every
//! kata node, every pod, every term, walked directly), and existing pods
//! only ever narrow (affinity) or widen (anti-affinity) what the pod may
//! get.

use kata_runtime_policy::cluster::FakeCluster;
use kata_runtime_policy::decision::Decision;
use proptest::prelude::*;
use serde_json::{Value, json};

const KATA: [&str; 3] = ["k1", "k2", "k3"];
const OTHER: [&str; 2] = ["g1", "g2"];
const APPS: [&str; 3] = ["x", "y", "z"];
/// `rack` is on no node: a term on it is never met by affinity.
const KEYS: [&str; 3] = ["zone", "kubernetes.io/hostname", "rack"];

fn node(name: &str, kata: bool, zone: Option<&str>) -> Value {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if kata {
        labels["katacontainers.io/kata-runtime"] = json!("true");
    }
    if let Some(z) = zone {
        labels["zone"] = json!(z);
    }
    json!({"metadata": {"name": name, "labels": labels}})
}

fn nodes() -> impl Strategy<Value = Vec<Value>> {
    let zone = proptest::option::weighted(0.8, prop::sample::select(&["a", "b", "c"][..]));
    proptest::collection::vec(zone, 5).prop_map(|zones| {
        (KATA.iter().map(|n| (n, true)))
            .chain(OTHER.iter().map(|n| (n, false)))
            .zip(zones)
            .map(|((name, kata), zone)| node(name, kata, zone))
            .collect()
    })
}

/// Existing pods: `(app, node)`; `gone` is a node that does not exist.
fn pods() -> impl Strategy<Value = Vec<(&'static str, &'static str)>> {
    let on = prop::sample::select(&["k1", "k2", "k3", "g1", "g2", "gone"][..]);
    proptest::collection::vec((prop::sample::select(&APPS[..]), on), 0..7)
}

#[derive(Debug, Clone)]
struct Term {
    app: &'static str,
    key: &'static str,
}

fn terms() -> impl Strategy<Value = Vec<Term>> {
    let term = (
        prop::sample::select(&APPS[..]),
        prop::sample::select(&KEYS[..]),
    )
        .prop_map(|(app, key)| Term { app, key });
    proptest::collection::vec(term, 1..3)
}

fn json_terms(terms: &[Term]) -> Value {
    terms
        .iter()
        .map(|t| json!({"labelSelector": {"matchLabels": {"app": t.app}}, "topologyKey": t.key}))
        .collect()
}

fn existing(i: usize, app: &str, on: &str) -> Value {
    json!({"metadata": {"name": format!("p{i}"), "namespace": "default", "labels": {"app": app}},
           "spec": {"nodeName": on}})
}

/// The verdict on a pod labelled `app=own` with these terms.
fn decide(nodes: &[Value], pods: &[(&str, &str)], own: &str, kind: &str, terms: &[Term]) -> bool {
    let object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "new", "namespace": "default", "labels": {"app": own}},
        "spec": {"containers": [{"name": "c", "image": "i"}],
                 "affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": json_terms(terms)}}}});
    let payload = json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "namespace": "default", "object": object},
        "settings": {"runtimeClassName": "kata", "annotateDecision": false,
                     "policyServerServiceAccount": "system:serviceaccount:kubewarden:policy-server"}});
    let pods: Vec<Value> = (pods.iter().enumerate())
        .map(|(i, (app, on))| existing(i, app, on))
        .collect();
    let cluster = FakeCluster::new(nodes.to_vec()).selecting().pods(pods);
    let review = kata_runtime_policy::admission::review(payload.to_string().as_bytes(), &cluster);
    matches!(review.decision, Decision::Mutate { .. })
}

fn label<'a>(node: &'a Value, key: &str) -> Option<&'a str> {
    node["metadata"]["labels"][key].as_str()
}

/// The plain model: kube-scheduler's filter on each kata node, by walking
/// every pod for every term.
fn model(nodes: &[Value], pods: &[(&str, &str)], own: &str, kind: &str, terms: &[Term]) -> bool {
    let node_of = |name: &str| nodes.iter().find(|n| n["metadata"]["name"] == name);
    let placed: Vec<(&str, &Value)> = (pods.iter())
        .filter_map(|(app, on)| node_of(on).map(|n| (*app, n)))
        .collect();
    let kata = nodes
        .iter()
        .filter(|n| label(n, "katacontainers.io/kata-runtime").is_some());
    let fits = |n: &Value| {
        let same = |m: &Value, key: &str| label(n, key).is_some() && label(n, key) == label(m, key);
        if kind == "podAffinity" {
            let all = |app: &str| terms.iter().all(|t| t.app == app);
            if terms.iter().any(|t| label(n, t.key).is_none()) {
                return false;
            }
            let held = terms
                .iter()
                .all(|t| placed.iter().any(|(app, m)| all(app) && same(m, t.key)));
            let none_anywhere = !placed
                .iter()
                .any(|(app, m)| all(app) && terms.iter().any(|t| label(m, t.key).is_some()));
            held || (none_anywhere && all(own))
        } else {
            terms.iter().all(|t| {
                !placed
                    .iter()
                    .any(|(app, m)| *app == t.app && same(m, t.key))
            })
        }
    };
    kata.into_iter().any(fits)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn the_decision_is_the_plain_models(
        nodes in nodes(), pods in pods(), own in prop::sample::select(&APPS[..]),
        anti in any::<bool>(), terms in terms(),
    ) {
        let kind = if anti { "podAntiAffinity" } else { "podAffinity" };
        prop_assert_eq!(
            decide(&nodes, &pods, own, kind, &terms),
            model(&nodes, &pods, own, kind, &terms)
        );
    }

    #[test]
    fn without_pods_affinity_never_gives_more_and_anti_affinity_never_less(
        nodes in nodes(), pods in pods(), anti in any::<bool>(), terms in terms(),
    ) {
        // A pod its own terms do not select: the exception for the first
        // pod of a group does not apply to it.
        let own = "none";
        let kind = if anti { "podAntiAffinity" } else { "podAffinity" };
        let with = decide(&nodes, &pods, own, kind, &terms);
        let without = decide(&nodes, &[], own, kind, &terms);
        if anti {
            prop_assert!(!with || without, "removing every pod took Kata away from an anti-affine pod");
        } else {
            prop_assert!(!without || with, "removing every pod gave Kata to an affine pod it was denied");
            prop_assert!(!without, "with no pod to join, an affine pod got Kata");
        }
    }
}
