//! Property tests over generated pods and nodes:
//! - the scheduling filters agree with an independent, plain re-statement of
//!   the rules written here (`model`), node by node;
//! - the decision does not depend on node order;
//! - adding a node never turns "mutate" into "leave";
//! - asking for more of a resource never turns "leave" into "mutate";
//! - adding a use of any feature Kata cannot run, while that feature is
//!   enabled, never leaves the pod mutated (and names the feature);
//! - a mutation is the request object plus `spec.runtimeClassName`, nothing
//!   else, whatever unknown fields the object carries at any depth;
//! - `annotateDecision` changes nothing but the decision annotation, and
//!   `false` answers byte for byte what no setting does.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeSelector, Toleration};
use kata_runtime_policy::annotation::{
    DECISION_ANNOTATION, MAX_ANNOTATIONS_BYTES, MAX_VALUE_BYTES, bounded,
};
use kata_runtime_policy::cluster::{Cluster, FakeCluster, LookupError, NodeMasks};
use kata_runtime_policy::decision::Decision;
use kata_runtime_policy::decision::Findings;
use kata_runtime_policy::incompatible::PodFeature;
use kata_runtime_policy::kubelet::{CriNeeds, HandlerNeeds, KubeletNeeds};
use kata_runtime_policy::node::{KeyFilter, parse_node};
use kata_runtime_policy::pod::PodFacts;
use kata_runtime_policy::response::render;
use kata_runtime_policy::review::Review;
use kata_runtime_policy::scheduling::Constraints;
use kata_runtime_policy::scheduling::node_resources_fit::ResourceFit;
use kata_runtime_policy::scheduling::pod_topology_spread::SpreadLabels;
use proptest::prelude::*;
use serde_json::{Value, json};

// ---------------------------------------------------------------- generators

const NAMES: [&str; 6] = ["n0", "n1", "n2", "n3", "n4", "n5"];
const LABEL_KEYS: [&str; 4] = ["zone", "disk", "gen", "katacontainers.io/kata-runtime"];
// Includes values that are not valid label values ("-1", "+5") and not integers.
const VALUES: [&str; 9] = ["", "a", "b", "1", "5", "9", "-1", "+5", "007"];
const TAINT_KEYS: [&str; 3] = ["t1", "t2", "node.kubernetes.io/unschedulable"];
const EFFECTS: [&str; 4] = ["NoSchedule", "NoExecute", "PreferNoSchedule", ""];
const TOLERATION_OPS: [&str; 6] = ["", "Equal", "Exists", "Lt", "Gt", "Bogus"];
const AFFINITY_OPS: [&str; 7] = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Bogus"];

fn pick<T: Clone + std::fmt::Debug + 'static>(items: &'static [T]) -> impl Strategy<Value = T> {
    proptest::sample::select(items)
}

/// Resource names and quantities, few enough that fits and misfits both occur.
const RESOURCES: [&str; 4] = ["cpu", "memory", "pods", "example.com/gpu"];
const QUANTITIES: [&str; 12] = [
    "0", "100m", "500m", "1", "2", "4", "16", "110", "512Mi", "1Gi", "8Gi", "64Gi",
];

fn resource_list(max: usize) -> impl Strategy<Value = Value> {
    proptest::collection::btree_map(pick(&RESOURCES), pick(&QUANTITIES), 0..max)
        .prop_map(|m| json!(m))
}

/// Runtime handler names a node may report; the RuntimeClass's is "kata".
const HANDLERS: [&str; 5] = ["", "runc", "kata", "kata-qemu", "kata-clh"];

/// `status.runtimeHandlers`: absent (`Null` here), empty, or a few entries
/// with random features.
fn runtime_handlers() -> impl Strategy<Value = Value> {
    let entry = (pick(&HANDLERS), any::<bool>(), any::<bool>()).prop_map(|(name, u, r)| {
        json!({"name": name, "features": {"userNamespaces": u, "recursiveReadOnlyMounts": r}})
    });
    prop_oneof![
        2 => Just(Value::Null),
        1 => Just(json!([])),
        4 => proptest::collection::vec(entry, 1..4).prop_map(Value::Array),
    ]
}

/// `status.features`: absent (`Null` here), the CRI's answer, or an odd
/// shape that supports nothing.
fn node_features() -> impl Strategy<Value = Value> {
    prop_oneof![
        2 => Just(Value::Null),
        3 => any::<bool>().prop_map(|b| json!({ "supplementalGroupsPolicy": b })),
        1 => prop_oneof![
            Just(json!({})),
            Just(json!({"supplementalGroupsPolicy": null})),
            Just(json!([true])),
            Just(json!({"supplementalGroupsPolicy": "true"})),
        ],
    ]
}

/// `nodes` without `status.features`, as an older kubelet or CRI reports them.
fn without_features(nodes: &[Value]) -> Vec<Value> {
    nodes
        .iter()
        .cloned()
        .map(|mut n| {
            if let Some(status) = n["status"].as_object_mut() {
                status.remove("features");
            }
            n
        })
        .collect()
}

fn verdict(a: &Review) -> &'static str {
    a.decision.verdict()
}

fn node(name: &'static str) -> impl Strategy<Value = Value> {
    let labels = proptest::collection::btree_map(pick(&LABEL_KEYS), pick(&VALUES), 0..4);
    let taint = (pick(&TAINT_KEYS), pick(&VALUES), pick(&EFFECTS[..3]))
        .prop_map(|(k, v, e)| json!({"key": k, "value": v, "effect": e}));
    let taints = proptest::collection::vec(taint, 0..3);
    let allocatable = proptest::option::weighted(0.8, resource_list(5));
    (
        labels,
        taints,
        any::<bool>(),
        allocatable,
        runtime_handlers(),
        node_features(),
    )
        .prop_map(
            move |(labels, taints, unschedulable, allocatable, handlers, features)| {
                let mut n = json!({"metadata": {"name": name, "labels": labels},
                   "spec": {"taints": taints, "unschedulable": unschedulable}});
                if let Some(a) = allocatable {
                    n["status"] = json!({ "allocatable": a });
                }
                if !handlers.is_null() {
                    n["status"]["runtimeHandlers"] = handlers;
                }
                if !features.is_null() {
                    n["status"]["features"] = features;
                }
                n
            },
        )
}

/// `node` with a handler list that does not name "kata".
fn node_without_kata(name: &'static str) -> impl Strategy<Value = Value> {
    let others = proptest::collection::vec(pick(&["", "runc", "kata-qemu", "kata-clh"]), 1..4);
    (node(name), others).prop_map(|(mut n, others)| {
        let entries: Vec<Value> = others.iter().map(|h| json!({"name": h})).collect();
        n["status"]["runtimeHandlers"] = Value::Array(entries);
        n
    })
}

fn nodes() -> impl Strategy<Value = Vec<Value>> {
    (0..=NAMES.len())
        .prop_flat_map(|n| NAMES[..n].iter().map(|name| node(name)).collect::<Vec<_>>())
}

fn toleration() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just(""), pick(&TAINT_KEYS)],
        pick(&TOLERATION_OPS),
        pick(&VALUES),
        pick(&EFFECTS),
    )
        .prop_map(|(k, op, v, e)| json!({"key": k, "operator": op, "value": v, "effect": e}))
}

fn requirement() -> impl Strategy<Value = Value> {
    (
        pick(&LABEL_KEYS),
        pick(&AFFINITY_OPS),
        proptest::collection::vec(pick(&VALUES), 0..3),
    )
        .prop_map(|(k, op, values)| json!({"key": k, "operator": op, "values": values}))
}

fn field() -> impl Strategy<Value = Value> {
    (
        prop_oneof![Just("metadata.name"), Just("metadata.uid")],
        prop_oneof![Just("In"), Just("NotIn"), Just("Exists")],
        proptest::collection::vec(pick(&NAMES), 0..3),
    )
        .prop_map(|(k, op, values)| json!({"key": k, "operator": op, "values": values}))
}

fn term() -> impl Strategy<Value = Value> {
    (
        proptest::collection::vec(requirement(), 0..3),
        proptest::collection::vec(field(), 0..2),
    )
        .prop_map(|(e, f)| json!({"matchExpressions": e, "matchFields": f}))
}

fn container(init: bool) -> impl Strategy<Value = Value> {
    (resource_list(3), resource_list(2), any::<bool>()).prop_map(move |(requests, limits, always)| {
        let mut c = json!({"name": "c", "image": "i", "resources": {"requests": requests, "limits": limits}});
        if init && always {
            c["restartPolicy"] = json!("Always");
        }
        c
    })
}

fn spread() -> impl Strategy<Value = Value> {
    let when = prop_oneof![Just("DoNotSchedule"), Just("ScheduleAnyway")];
    proptest::collection::vec((pick(&LABEL_KEYS), when), 0..2).prop_map(|cs| {
        json!(
            cs.into_iter()
                .map(|(key, when)| json!({"maxSkew": 1, "topologyKey": key,
            "whenUnsatisfiable": when}))
                .collect::<Vec<_>>()
        )
    })
}

/// A pod spec with any mix of the constraints the filters read.
fn pod_spec() -> impl Strategy<Value = Value> {
    (
        proptest::collection::btree_map(pick(&LABEL_KEYS), pick(&VALUES), 0..2),
        proptest::option::weighted(0.6, proptest::collection::vec(term(), 0..3)),
        proptest::collection::vec(toleration(), 0..3),
        proptest::option::weighted(0.2, pick(&NAMES)),
        proptest::collection::vec(container(false), 1..3),
        proptest::collection::vec(container(true), 0..3),
        spread(),
    )
        .prop_map(|(selector, terms, tolerations, node_name, containers, inits, spread)| {
            let mut spec = json!({"containers": containers, "initContainers": inits,
                                  "topologySpreadConstraints": spread,
                                  "nodeSelector": selector, "tolerations": tolerations});
            if let Some(terms) = terms {
                spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                    {"nodeSelectorTerms": terms}}});
            }
            if let Some(name) = node_name {
                spec["nodeName"] = json!(name);
            }
            spec
        })
}

// ---------------------------------------------------------------- the model

/// The rules, restated as plainly as possible over raw JSON.
mod model {
    use serde_json::Value;

    fn s<'a>(v: &'a Value, key: &str) -> &'a str {
        v.get(key).and_then(Value::as_str).unwrap_or("")
    }

    fn canonical_int(x: &str) -> Option<i64> {
        let digits = x.strip_prefix('-').unwrap_or(x);
        let ok = x == "0"
            || (!digits.is_empty()
                && !digits.starts_with('0')
                && digits.chars().all(|c| c.is_ascii_digit()));
        if ok { x.parse().ok() } else { None }
    }

    pub fn tolerates(t: &Value, key: &str, value: &str, effect: &str) -> bool {
        if !s(t, "effect").is_empty() && s(t, "effect") != effect {
            return false;
        }
        if !s(t, "key").is_empty() && s(t, "key") != key {
            return false;
        }
        match s(t, "operator") {
            "Exists" => true,
            "" | "Equal" => s(t, "value") == value,
            "Lt" => {
                matches!((canonical_int(value), canonical_int(s(t, "value"))), (Some(a), Some(b)) if a < b)
            }
            "Gt" => {
                matches!((canonical_int(value), canonical_int(s(t, "value"))), (Some(a), Some(b)) if a > b)
            }
            _ => false,
        }
    }

    fn tolerated(pod: &Value, key: &str, value: &str, effect: &str) -> bool {
        pod["tolerations"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| tolerates(t, key, value, effect))
    }

    fn label_value_ok(v: &str) -> bool {
        v.is_empty()
            || (v.len() <= 63
                && v.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                && v.chars().last().is_some_and(|c| c.is_ascii_alphanumeric())
                && v.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
    }

    fn label<'a>(node: &'a Value, key: &str) -> Option<&'a str> {
        node["metadata"]["labels"].get(key).and_then(Value::as_str)
    }

    /// `None` when the term is invalid (it then matches nothing).
    fn term_matches(term: &Value, node: &Value) -> Option<bool> {
        let exprs = term["matchExpressions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let fields = term["matchFields"].as_array().cloned().unwrap_or_default();
        if exprs.is_empty() && fields.is_empty() {
            return None;
        }
        let mut all = true;
        for e in &exprs {
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if !values.iter().all(|v| label_value_ok(v)) {
                return None;
            }
            let have = label(node, s(e, "key"));
            let ok = match s(e, "operator") {
                "In" if !values.is_empty() => have.is_some_and(|h| values.contains(&h)),
                "NotIn" if !values.is_empty() => have.is_none_or(|h| !values.contains(&h)),
                "Exists" if values.is_empty() => have.is_some(),
                "DoesNotExist" if values.is_empty() => have.is_none(),
                op @ ("Gt" | "Lt") if values.len() == 1 => {
                    let bound: i64 = values[0].parse().ok()?;
                    match have.and_then(|h| h.parse::<i64>().ok()) {
                        Some(n) if op == "Gt" => n > bound,
                        Some(n) => n < bound,
                        None => false,
                    }
                }
                _ => return None,
            };
            all &= ok;
        }
        for f in &fields {
            let values: Vec<&str> = f["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            if values.len() != 1 {
                return None;
            }
            let actual = if s(f, "key") == "metadata.name" {
                s(&node["metadata"], "name")
            } else {
                ""
            };
            let ok = match s(f, "operator") {
                "In" => actual == values[0],
                "NotIn" => actual != values[0],
                _ => return None,
            };
            all &= ok;
        }
        Some(all)
    }

    fn affinity(pod: &Value, node: &Value) -> bool {
        let selector_ok = pod["nodeSelector"]
            .as_object()
            .into_iter()
            .flatten()
            .all(|(k, v)| label(node, k) == v.as_str());
        let required =
            &pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
        let terms_ok = match required["nodeSelectorTerms"].as_array() {
            _ if required.is_null() => true,
            Some(terms) => terms.iter().any(|t| term_matches(t, node) == Some(true)),
            None => false,
        };
        selector_ok && terms_ok
    }

    /// The generator's quantities, in milli-units.
    fn milli(q: &str) -> i128 {
        match q {
            "0" => 0,
            "100m" => 100,
            "500m" => 500,
            "1" => 1000,
            "2" => 2000,
            "4" => 4000,
            "16" => 16000,
            "110" => 110_000,
            "512Mi" => 512 * 1024 * 1024 * 1000,
            "1Gi" => 1024 * 1024 * 1024 * 1000,
            "8Gi" => 8 * 1024 * 1024 * 1024 * 1000,
            "64Gi" => 64 * 1024 * 1024 * 1024 * 1000,
            other => panic!("not generated: {other}"),
        }
    }

    type List = std::collections::BTreeMap<String, i128>;

    fn requests_of(c: &Value) -> List {
        let mut r: List = List::new();
        let res = &c["resources"];
        for (k, v) in res["requests"].as_object().into_iter().flatten() {
            r.insert(k.clone(), milli(v.as_str().unwrap()));
        }
        // API defaulting: a limit without a request is the request.
        for (k, v) in res["limits"].as_object().into_iter().flatten() {
            r.entry(k.clone()).or_insert(milli(v.as_str().unwrap()));
        }
        r
    }

    /// Containers add up; an init container runs after the sidecars before
    /// it, next to nothing else; sidecars also run next to the containers.
    fn requests(pod: &Value) -> List {
        let mut total = List::new();
        for c in pod["containers"].as_array().into_iter().flatten() {
            for (k, v) in requests_of(c) {
                *total.entry(k).or_default() += v;
            }
        }
        let mut sidecars = List::new();
        let mut peak = List::new();
        for c in pod["initContainers"].as_array().into_iter().flatten() {
            let r = requests_of(c);
            let mut running = sidecars.clone();
            for (k, v) in &r {
                *running.entry(k.clone()).or_default() += v;
            }
            if c["restartPolicy"] == "Always" {
                sidecars = running.clone();
                for (k, v) in &r {
                    *total.entry(k.clone()).or_default() += v;
                }
            }
            for (k, v) in running {
                let p = peak.entry(k).or_default();
                *p = (*p).max(v);
            }
        }
        for (k, v) in peak {
            let t = total.entry(k).or_default();
            *t = (*t).max(v);
        }
        total
    }

    fn fits_resources(pod: &Value, node: &Value, kubelet: bool) -> bool {
        let Some(alloc) = node["status"]["allocatable"].as_object() else {
            return true;
        };
        let have = |k: &str| alloc.get(k).and_then(Value::as_str).map(milli);
        // cpu compares in milli-units, the rest in whole units (rounded up).
        let units = |k: &str, m: i128| if k == "cpu" { m } else { (m + 999) / 1000 };
        if have("pods").is_some_and(|p| units("pods", p) < 1) {
            return false;
        }
        requests(pod).iter().all(|(k, &want)| {
            if want == 0 || k == "pods" {
                return true;
            }
            match have(k) {
                None if kubelet && k.contains('/') => true,
                h => units(k, want) <= units(k, h.unwrap_or(0)),
            }
        })
    }

    fn spread_labels(pod: &Value, node: &Value) -> bool {
        pod["topologySpreadConstraints"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["whenUnsatisfiable"] == "DoNotSchedule")
            .all(|c| label(node, s(c, "topologyKey")).is_some())
    }

    pub fn feasible(pod: &Value, node: &Value) -> bool {
        let taints: Vec<&Value> = node["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .collect();
        let blocks = |effects: &[&str]| {
            taints.iter().any(|t| {
                effects.contains(&s(t, "effect"))
                    && !tolerated(pod, s(t, "key"), s(t, "value"), s(t, "effect"))
            })
        };
        match pod.get("nodeName").and_then(Value::as_str) {
            Some(name) => {
                s(&node["metadata"], "name") == name
                    && fits_resources(pod, node, true)
                    && affinity(pod, node)
                    && !blocks(&["NoExecute"])
            }
            None => {
                let cordoned = node["spec"]["unschedulable"] == true
                    && !tolerated(pod, "node.kubernetes.io/unschedulable", "", "NoSchedule");
                !cordoned
                    && !blocks(&["NoSchedule", "NoExecute"])
                    && affinity(pod, node)
                    && fits_resources(pod, node, false)
                    && spread_labels(pod, node)
            }
        }
    }
}

// ---------------------------------------------------------------- helpers

fn constraints(spec: &Value) -> Constraints {
    let facts = PodFacts::from_json(&pod(spec.clone()).to_string()).unwrap();
    let fit = ResourceFit::new(
        &facts.resources.requests(&Default::default()),
        &Default::default(),
    );
    let spread = SpreadLabels::new(
        facts
            .topology_spread
            .iter()
            .map(|(k, w)| (k.as_str(), w.as_str())),
    );
    let selector: BTreeMap<String, String> =
        serde_json::from_value(spec["nodeSelector"].clone()).unwrap_or_default();
    let required: Option<NodeSelector> = serde_json::from_value(
        spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"].clone(),
    )
    .unwrap();
    let tolerations: Vec<Toleration> =
        serde_json::from_value(spec["tolerations"].clone()).unwrap_or_default();
    Constraints::new(
        spec["nodeName"].as_str(),
        &selector,
        required.as_ref(),
        tolerations,
    )
    .with_resources(fit)
    .with_spread(spread)
}

/// A cluster answering `nodes`, a NodeList's bytes, as they are (no field
/// masks); a read by name finds any node of the list.
fn fake(nodes: Vec<u8>) -> FakeCluster {
    FakeCluster::new(Vec::new()).list_bytes(nodes).unmasked()
}

/// A cluster of `nodes` as the host shows it: the list applies the label
/// selector (as the API server does), a read by name finds any node.
fn selecting(nodes: Vec<Value>) -> FakeCluster {
    FakeCluster::new(nodes).unmasked().selecting()
}

/// The admission of `payload`, its settings completed where they say
/// nothing with what the properties assume: the required settings as the
/// fakes answer (the class `kata`; kubewarden-defaults' PolicyServer), and
/// `annotateDecision: false`, so that a mutation is the class alone.
/// Refused settings would make every property hold trivially: they fail.
fn review(payload: &Value, cluster: &impl Cluster) -> Review {
    let mut payload = payload.clone();
    if payload["settings"].is_null() {
        payload["settings"] = json!({});
    }
    let settings = payload["settings"].as_object_mut().unwrap();
    for (key, value) in [
        ("runtimeClassName", json!("kata")),
        (
            "policyServerServiceAccount",
            json!("system:serviceaccount:kubewarden:policy-server"),
        ),
        ("annotateDecision", json!(false)),
    ] {
        settings.entry(key).or_insert(value);
    }
    let review = kata_runtime_policy::admission::review(payload.to_string().as_bytes(), cluster);
    let explanation = review.decision.explanation();
    assert!(
        !explanation.starts_with("invalid policy settings"),
        "{explanation}"
    );
    review
}

fn decide(object: &Value, nodes: &[Value]) -> Review {
    decide_with(object, nodes, json!({}))
}

fn decide_with(object: &Value, nodes: &[Value], settings: Value) -> Review {
    let payload = json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "operation": "CREATE", "object": object}, "settings": settings});
    let cluster = fake(
        json!({"kind": "NodeList", "items": nodes})
            .to_string()
            .into_bytes(),
    );
    review(&payload, &cluster)
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": spec})
}

/// Arbitrary JSON, for fields that no Kubernetes library knows.
fn unknown_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(Value::from),
        "[a-zA-Z0-9 _\"\\\\/é\u{1F600}-]{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 32, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            proptest::collection::btree_map("x-[a-z]{1,6}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Settings the `annotateDecision` property runs under.
const BASE_SETTINGS: [&str; 6] = [
    "{}",
    r#"{"noFeasibleNode":"reject"}"#,
    r#"{"incompatiblePod":"reject","skipPodsUsing":["hostNamespaces","privileged","subPath"]}"#,
    r#"{"restrictRuntimeClasses":true}"#,
    r#"{"allowedRuntimeClasses":["runc"],"runtimeHandlerCheck":"off"}"#,
    r#"{"skipPodsUsing":["hostNamespaces","privileged","seccomp","subPath","appArmor"]}"#,
];

/// `annotated` (an object the policy answered with) with the decision
/// annotation taken out again, `metadata.annotations` as in `original`:
/// what is left must be the object without the setting. Fails when the
/// annotations differ in anything but the decision.
fn without_the_annotation(annotated: &Value, original: &Value) -> Result<Value, TestCaseError> {
    let mut out = annotated.clone();
    let others = |v: &Value| {
        let mut map = v.as_object().cloned().unwrap_or_default();
        map.remove(DECISION_ANNOTATION);
        map
    };
    let before = original["metadata"].get("annotations");
    let after = &annotated["metadata"]["annotations"];
    prop_assert_eq!(others(after), before.map(others).unwrap_or_default());
    let metadata = out["metadata"].as_object_mut().unwrap();
    match before {
        Some(v) => {
            metadata.insert("annotations".into(), v.clone());
        }
        None => {
            metadata.remove("annotations");
        }
    }
    Ok(out)
}

/// The ways a pod can use a feature Kata cannot run, each with the
/// `skipPodsUsing` name that covers it.
const FEATURE_USES: [(&str, &str); 28] = [
    ("hostNetwork", "hostNamespaces"),
    ("hostPID", "hostNamespaces"),
    ("hostIPC", "hostNamespaces"),
    ("hostUsers", "userNamespaces"),
    ("windows", "windows"),
    ("privileged", "privileged"),
    ("/var/run/docker.sock", "hostSockets"),
    ("//run//containerd/", "hostSockets"),
    (
        "/var/lib/kubelet/plugins/../plugins_registry",
        "hostSockets",
    ),
    ("/opt/agent.socket", "hostSockets"),
    ("Socket:/opt/api", "hostSockets"),
    ("/dev/fuse", "hostDevices"),
    ("CharDevice:/opt/null", "hostDevices"),
    ("Directory:/dev/./", "hostDevices"),
    ("HostToContainer", "mountPropagation"),
    ("Bidirectional", "mountPropagation"),
    ("nvidia.com/gpu", "deviceResources"),
    ("gpu.intel.com/i915", "deviceResources"),
    ("seccomp", "seccomp"),
    ("podSeccomp", "seccomp"),
    ("appArmor", "appArmor"),
    ("seLinux", "seLinux"),
    ("subPath", "subPath"),
    ("memoryEmptyDirLimit", "memoryEmptyDirLimit"),
    ("claimTemplate", "dynamicResources"),
    ("claimByName", "dynamicResources"),
    ("deviceClassResource", "dynamicResources"),
    ("imageVolume", "imageVolumes"),
];

/// `object` with one use of a feature added to container `which` (of
/// containers then init containers).
fn add_feature_use(object: &mut Value, how: &str, which: prop::sample::Index) {
    let spec = &mut object["spec"];
    let n = spec["containers"].as_array().map_or(0, Vec::len);
    let m = spec["initContainers"].as_array().map_or(0, Vec::len);
    let i = which.index(n + m);
    let (list, i) = if i < n {
        ("containers", i)
    } else {
        ("initContainers", i - n)
    };
    let mut volumes = spec["volumes"].as_array().cloned().unwrap_or_default();
    let container = &mut spec[list][i];
    let mut host_path = |container: &mut Value, path: &str, mount: Value| {
        let (kind, path) = path.split_once(':').unwrap_or(("", path));
        volumes.push(json!({"name": "injected", "hostPath": {"path": path, "type": kind}}));
        let mut mounts = container["volumeMounts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        mounts.push(mount);
        container["volumeMounts"] = json!(mounts);
    };
    let plain_mount = json!({"name": "injected", "mountPath": "/injected"});
    match how {
        "hostNetwork" | "hostPID" | "hostIPC" => spec[how] = json!(true),
        "hostUsers" => spec["hostUsers"] = json!(false),
        "windows" => spec["os"] = json!({"name": "windows"}),
        "privileged" => container["securityContext"] = json!({"privileged": true}),
        "HostToContainer" | "Bidirectional" => host_path(
            container,
            "Directory:/mnt/data",
            json!({"name": "injected", "mountPath": "/data", "mountPropagation": how}),
        ),
        "nvidia.com/gpu" | "gpu.intel.com/i915" => {
            container["resources"]["limits"][how] = json!("1")
        }
        "seccomp" => {
            container["securityContext"] = json!({"seccompProfile": {"type": "RuntimeDefault"}})
        }
        "podSeccomp" => {
            spec["securityContext"] =
                json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "p"}})
        }
        "appArmor" => {
            container["securityContext"] = json!({"appArmorProfile": {"type": "RuntimeDefault"}})
        }
        "seLinux" => {
            container["securityContext"] = json!({"seLinuxOptions": {"level": "s0:c1,c2"}})
        }
        "subPath" => host_path(
            container,
            "Directory:/srv/data",
            json!({"name": "injected", "mountPath": "/s", "subPath": "x"}),
        ),
        "claimTemplate" | "claimByName" => {
            container["resources"]["claims"] = json!([{"name": "injected-claim"}]);
            let claim = match how {
                "claimTemplate" => {
                    json!({"name": "injected-claim", "resourceClaimTemplateName": "one-gpu"})
                }
                _ => json!({"name": "injected-claim", "resourceClaimName": "shared-nic"}),
            };
            let mut claims = spec["resourceClaims"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            claims.push(claim);
            spec["resourceClaims"] = json!(claims);
        }
        "memoryEmptyDirLimit" => {
            volumes
                .push(json!({"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}));
        }
        "deviceClassResource" => {
            container["resources"]["limits"]["deviceclass.resource.kubernetes.io/gpu.example.com"] =
                json!("1")
        }
        "imageVolume" => {
            volumes.push(json!({"name": "injected-image",
                "image": {"reference": "ghcr.io/example/tools:1", "pullPolicy": "IfNotPresent"}}));
            let mut mounts = container["volumeMounts"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            mounts.push(json!({"name": "injected-image", "mountPath": "/tools"}));
            container["volumeMounts"] = json!(mounts);
        }
        path => host_path(container, path, plain_mount),
    }
    spec["volumes"] = json!(volumes);
}

// ---------------------------------------------------------------- properties

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, .. ProptestConfig::default() })]

    #[test]
    fn filters_agree_with_the_plain_model(spec in pod_spec(), nodes in nodes()) {
        let c = constraints(&spec);
        for n in &nodes {
            let text = n.to_string();
            let parsed = parse_node(text.as_bytes(), KeyFilter::All).unwrap();
            prop_assert_eq!(c.check(&parsed).is_ok(), model::feasible(&spec, n), "node {}", n);
        }
    }

    /// The same, with resources as the only constraint, so that the
    /// resource rules decide every case rather than a few.
    #[test]
    fn resource_fit_agrees_with_the_plain_model(
        containers in proptest::collection::vec(container(false), 1..3),
        inits in proptest::collection::vec(container(true), 0..3),
        allocatable in proptest::collection::vec(resource_list(5), 1..4),
        bound in any::<bool>(),
    ) {
        let mut spec = json!({"containers": containers, "initContainers": inits});
        if bound {
            spec["nodeName"] = json!("n0");
        }
        let c = constraints(&spec);
        for a in allocatable {
            let n = json!({"metadata": {"name": "n0"}, "status": {"allocatable": a}});
            let text = n.to_string();
            let parsed = parse_node(text.as_bytes(), KeyFilter::All).unwrap();
            prop_assert_eq!(c.check(&parsed).is_ok(), model::feasible(&spec, &n), "node {}", n);
        }
    }

    #[test]
    fn tolerations_agree_with_the_plain_model(
        t in toleration(), key in pick(&TAINT_KEYS), value in pick(&VALUES), effect in pick(&EFFECTS[..3])
    ) {
        let typed: Toleration = serde_json::from_value(t.clone()).unwrap();
        prop_assert_eq!(
            kata_runtime_policy::scheduling::taint_toleration::tolerates(&typed, key, value, effect),
            model::tolerates(&t, key, value, effect),
            "{} vs {}={}:{}", t, key, value, effect
        );
    }

    #[test]
    fn the_decision_does_not_depend_on_node_order(spec in pod_spec(), nodes in nodes(), seed in any::<u64>()) {
        let mut shuffled = nodes.clone();
        // Deterministic Fisher-Yates from the seed.
        let mut state = seed | 1;
        for i in (1..shuffled.len()).rev() {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17;
            shuffled.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let (before, after) = (decide(&pod(spec.clone()), &nodes), decide(&pod(spec), &shuffled));
        match (&before.decision, &after.decision) {
            // The candidates are read in list order until one can start the
            // pod: which broken nodes are met before it depends on the order
            // (policy-server's cache has none), the class never does.
            (Decision::Mutate { class: a, .. }, Decision::Mutate { class: b, .. }) => prop_assert_eq!(a, b),
            _ => prop_assert_eq!(before, after),
        }
    }

    #[test]
    fn adding_a_node_never_takes_kata_away(spec in pod_spec(), nodes in nodes(), extra in node("extra"), at in any::<prop::sample::Index>()) {
        let before = decide(&pod(spec.clone()), &nodes);
        let mut more = nodes.clone();
        more.insert(at.index(nodes.len() + 1), extra);
        let after = decide(&pod(spec), &more);
        if matches!(before.decision, Decision::Mutate { .. }) {
            prop_assert!(matches!(after.decision, Decision::Mutate { .. }), "{:?}", after);
        }
    }

    #[test]
    fn a_feature_kata_cannot_run_never_leaves_a_pod_mutated(
        spec in pod_spec(), nodes in nodes(), how in pick(&FEATURE_USES),
        which in any::<prop::sample::Index>(),
        others in proptest::sample::subsequence(
            PodFeature::ALL.map(PodFeature::name).to_vec(),
            0..=PodFeature::ALL.len(),
        ),
    ) {
        let (how, feature) = how;
        let mut object = pod(spec);
        let before = decide(&object, &nodes);
        add_feature_use(&mut object, how, which);
        let mut enabled = others;
        enabled.push(feature);
        let after = decide_with(&object, &nodes, json!({"skipPodsUsing": enabled}));
        let named = format!("(skipPodsUsing: {feature})");
        match &after {
            a if matches!(a.decision, Decision::Unchanged(_)) && a.decision.warns() && a.object.is_none() => {
                let explanation = a.decision.explanation();
                prop_assert!(explanation.contains(&named), "{how}: {explanation}");
            }
            other => prop_assert!(false, "{how} on a pod that was {before:?}: {other:?}"),
        }
    }

    /// `incompatiblePod: reject`: a pod with a finding is never admitted
    /// without Kata; and `accept` answers byte for byte what no setting does.
    #[test]
    fn kata_mandatory_refuses_every_pod_with_a_finding(
        spec in pod_spec(), nodes in nodes(), how in pick(&FEATURE_USES),
        which in any::<prop::sample::Index>(),
    ) {
        let (how, feature) = how;
        let mut object = pod(spec);
        for settings in [json!({}), json!({"skipPodsUsing": [feature]})] {
            let plain = render(decide_with(&object, &nodes, settings.clone()));
            let mut accept = settings.clone();
            accept["incompatiblePod"] = json!("accept");
            prop_assert_eq!(&plain, &render(decide_with(&object, &nodes, accept)));
        }
        add_feature_use(&mut object, how, which);
        let settings = json!({"skipPodsUsing": [feature], "incompatiblePod": "reject"});
        match decide_with(&object, &nodes, settings) {
            a if matches!(a.decision, Decision::Reject(_)) && a.decision.code() == Some(422) => {
                let explanation = a.decision.explanation();
                let named = format!("(skipPodsUsing: {feature})");
                prop_assert!(explanation.contains(&named), "{}", explanation);
            }
            other => prop_assert!(false, "{how}: {other:?}"),
        }
    }

    /// kata-deploy runs privileged containers inside the VM: with the
    /// default list, making a container privileged changes nothing.
    #[test]
    fn privileged_alone_never_decides_the_outcome_by_default(
        spec in pod_spec(), nodes in nodes(), which in any::<prop::sample::Index>(),
    ) {
        let object = pod(spec);
        let mut privileged = object.clone();
        add_feature_use(&mut privileged, "privileged", which);
        let verdict = |a: Review| {
            (a.decision.verdict(), a.decision.explanation(), a.decision.warns())
        };
        prop_assert_eq!(verdict(decide(&object, &nodes)), verdict(decide(&privileged, &nodes)));
    }

    #[test]
    fn asking_for_more_never_gives_kata(
        spec in pod_spec(), nodes in nodes(), which in any::<prop::sample::Index>(),
        resource in pick(&RESOURCES), more in pick(&QUANTITIES)
    ) {
        let before = decide(&pod(spec.clone()), &nodes);
        // Add `more` of `resource` to one container's request, in exact
        // arithmetic (a request the container did not have starts at its
        // limit, as defaulting would set it, else at 0).
        let mut bigger = spec.clone();
        let containers = bigger["containers"].as_array_mut().unwrap();
        let i = which.index(containers.len());
        let res = &mut containers[i]["resources"];
        let current = res["requests"].get(resource).or(res["limits"].get(resource))
            .and_then(Value::as_str).unwrap_or("0").to_string();
        let sum = kata_runtime_policy::quantity::Quantity::parse(&current).unwrap()
            .saturating_add(kata_runtime_policy::quantity::Quantity::parse(more).unwrap());
        res["requests"][resource] = json!(format!("{}m", sum.milli_value()));
        let after = decide(&pod(bigger), &nodes);
        if !matches!(before.decision, Decision::Mutate { .. }) {
            prop_assert!(!matches!(after.decision, Decision::Mutate { .. }), "{:?} then {:?}", before, after);
        }
    }

    /// A pod pinned to named nodes reads them by name; the decision must be
    /// the one the list would give (the list path's own search, over the
    /// nodes the selector keeps).
    #[test]
    fn pinned_pods_decide_as_the_list_would(
        spec in pod_spec(), nodes in nodes(), pin in pick(&["n0", "n1", "n5", "gone"]), by_name in any::<bool>(),
    ) {
        let mut spec = spec;
        if by_name {
            spec["nodeName"] = json!(pin);
        } else {
            spec.as_object_mut().unwrap().remove("nodeName");
            spec["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pin]}]}]}}});
        }
        let cluster = selecting(nodes);
        let payload = json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE", "object": pod(spec.clone())},
            "settings": {"kataNodeSelector": "katacontainers.io/kata-runtime"}});
        let named = review(&payload, &cluster);
        let list = cluster.list_answer(Some("katacontainers.io/kata-runtime"), NodeMasks::Plain).unwrap();
        let needs = HandlerNeeds {
            handler: "kata".into(),
            required: false,
            features: Default::default(),
        };
        let needs = KubeletNeeds::of(Some(needs), CriNeeds::default());
        let c = constraints(&spec);
        let listed = kata_runtime_policy::scheduling::Pass::new(&c, &needs, needs.stop()).scan(&list);
        prop_assert_eq!(
            matches!(named.decision, Decision::Mutate { .. }),
            matches!(listed, Ok(kata_runtime_policy::scheduling::Feasibility::Fits { .. })),
            "named {:?}, listed {:?}", named, listed
        );
    }

    /// The handler is verified on the candidates only, read by name until
    /// one can start the pod: the decision (the verdict, the class, and
    /// every word when the pod is not given Kata) is the exhaustive
    /// check's, which judges every listed node; a warning about broken
    /// nodes names only nodes the exhaustive one counts.
    #[test]
    fn verifying_the_candidates_decides_as_the_exhaustive_check(
        spec in pod_spec(), nodes in nodes(), check in pick(&["auto", "required"]),
        no_userns in any::<bool>(), strict in any::<bool>(), rro in any::<bool>(),
    ) {
        let mut spec = spec;
        prop_assume!(constraints(&spec).pinned_nodes().is_none());
        if no_userns {
            spec["hostUsers"] = json!(false);
        }
        if strict {
            spec["securityContext"] = json!({"supplementalGroupsPolicy": "Strict"});
        }
        if rro {
            spec["volumes"] = json!([{"name": "v", "emptyDir": {}}]);
            spec["containers"][0]["volumeMounts"] = json!([{"name": "v", "mountPath": "/v",
                "readOnly": true, "recursiveReadOnly": "Enabled"}]);
        }
        let payload = json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "operation": "CREATE", "object": pod(spec)},
            "settings": {"runtimeHandlerCheck": check, "skipPodsUsing": []}});
        let fake = || fake(json!({"kind": "NodeList", "items": nodes}).to_string().into_bytes());
        let probed = review(&payload, &fake());
        // Every read by name fails: the policy then answers from the list
        // with the handlers, judging every node (the exhaustive check).
        let exhaustive = review(&payload, &fake().every_read(Err(LookupError::from_host("connection refused".into()))));
        match (&probed.decision, &exhaustive.decision) {
            (
                Decision::Mutate { class, broken, .. },
                Decision::Mutate { class: all_class, broken: all_broken, .. },
            ) => {
                prop_assert_eq!(class, all_class);
                if let Some(met) = broken {
                    let all = all_broken.as_ref().expect("a broken node met is one the whole list has");
                    prop_assert!(met.count() <= all.count());
                    prop_assert!(met.names.iter().all(|n| all.names.contains(n) || all.count() > all.names.len()),
                        "{:?} not in {:?}", met, all);
                }
            }
            (probed, exhaustive) => prop_assert_eq!(probed, exhaustive),
        }
    }

    /// One class and no routes is the policy before several classes:
    /// empty lists, or a route on a resource the pod does not use, change
    /// nothing in the review (the class, the patch, every message).
    #[test]
    fn one_class_and_no_routes_decide_as_before(
        spec in pod_spec(), nodes in nodes(), check in pick(&["auto", "required", "off"]),
        route in any::<bool>(),
    ) {
        let before = json!({"runtimeHandlerCheck": check, "annotateDecision": true});
        let mut now = before.clone();
        now["fallbackRuntimeClasses"] = json!([]);
        now["runtimeClassesByResource"] = match route {
            true => json!([{"resources": ["example.com/unused"], "runtimeClassNames": ["kata-gpu"]}]),
            false => json!([]),
        };
        prop_assert_eq!(decide_with(&pod(spec.clone()), &nodes, before), decide_with(&pod(spec), &nodes, now));
    }

    /// With fallbacks, a pod is given Kata iff some listed class alone
    /// would give it, and the class is the first such.
    #[test]
    fn fallbacks_assign_the_first_class_that_can_run_the_pod(
        spec in pod_spec(), nodes in nodes(), order in proptest::sample::subsequence(vec!["kata", "kata-qemu", "kata-clh"], 1..=3),
        check in pick(&["auto", "required"]), shuffle in any::<bool>(),
    ) {
        let mut classes = order;
        if shuffle {
            classes.reverse();
        }
        // Each RuntimeClass runs the handler of its own name.
        let own = |name: &&str| json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": name});
        let cluster = fake(json!({"kind": "NodeList", "items": nodes}).to_string().into_bytes())
            .classes(classes.iter().map(own).collect());
        let run = |first: &str, rest: &[&str]| {
            let payload = json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE", "object": pod(spec.clone())},
                "settings": {"runtimeClassName": first, "fallbackRuntimeClasses": rest, "runtimeHandlerCheck": check}});
            review(&payload, &cluster).decision
        };
        let alone: Vec<Decision> = classes.iter().map(|c| run(c, &[])).collect();
        let first_alone = classes.iter().zip(&alone).find(|(_, d)| matches!(d, Decision::Mutate { .. }));
        let together = run(classes[0], &classes[1..]);
        match (first_alone, &together) {
            (Some((want, _)), Decision::Mutate { class, .. }) => prop_assert_eq!(class.as_str(), *want),
            (None, Decision::Mutate { class, .. }) => prop_assert!(false, "{class} given, no class alone: {:?}", alone),
            (Some((want, _)), other) => prop_assert!(false, "{want} alone gives Kata, together: {:?}", other),
            (None, _) => {}
        }
    }

    /// A node whose runtime reports handlers, none of them the class's, is
    /// never a Kata node: with no other node, no pod gets Kata.
    #[test]
    fn no_node_reporting_the_handler_means_no_mutation(
        spec in pod_spec(),
        nodes in proptest::collection::vec(node_without_kata("n"), 0..4),
        check in pick(&["auto", "required"]),
    ) {
        let nodes: Vec<Value> = nodes.into_iter().enumerate().map(|(i, mut n)| {
            n["metadata"]["name"] = json!(format!("n{i}"));
            n
        }).collect();
        let d = decide_with(&pod(spec.clone()), &nodes, json!({"runtimeHandlerCheck": check}));
        prop_assert!(!matches!(d.decision, Decision::Mutate { .. }), "{:?}", d);
        // Off ignores the field: the decision is the one without it.
        let bare: Vec<Value> = nodes.iter().cloned().map(|mut n| {
            n["status"].as_object_mut().unwrap().remove("runtimeHandlers");
            n
        }).collect();
        let off = json!({"runtimeHandlerCheck": "off"});
        prop_assert_eq!(
            decide_with(&pod(spec.clone()), &nodes, off.clone()),
            decide_with(&pod(spec), &bare, off)
        );
    }

    #[test]
    fn adding_a_node_that_lacks_the_handler_never_gives_kata(
        spec in pod_spec(), nodes in nodes(), extra in node_without_kata("extra"),
        at in any::<prop::sample::Index>(), check in pick(&["auto", "required"]),
    ) {
        let settings = json!({"runtimeHandlerCheck": check});
        let before = decide_with(&pod(spec.clone()), &nodes, settings.clone());
        let mut more = nodes.clone();
        more.insert(at.index(nodes.len() + 1), extra);
        let after = decide_with(&pod(spec), &more, settings);
        if !matches!(before.decision, Decision::Mutate { .. }) {
            prop_assert!(!matches!(after.decision, Decision::Mutate { .. }), "{:?} then {:?}", before, after);
        }
    }

    /// `annotateDecision: true` adds the decision annotation to what the
    /// policy admits, and changes nothing else: not the verdict, the
    /// message, the warning, the audit annotations or the class. `false`
    /// is byte for byte no setting.
    #[test]
    fn annotate_decision_changes_nothing_but_the_annotation(
        spec in pod_spec(), nodes in nodes(), in_meta in unknown_json(),
        use_of in proptest::option::weighted(0.5, pick(&FEATURE_USES)),
        which in any::<prop::sample::Index>(),
        class in proptest::option::weighted(0.3, pick(&["kata", "runc", "gvisor", ""])),
        mirror in proptest::bool::weighted(0.15),
        preset in 0..5usize,
        base in pick(&BASE_SETTINGS),
    ) {
        let mut object = pod(spec);
        object["metadata"]["x-meta"] = in_meta;
        if let Some((how, _)) = use_of {
            add_feature_use(&mut object, how, which);
        }
        if let Some(class) = class {
            object["spec"]["runtimeClassName"] = json!(class);
        }
        // Absent, null, empty, another, and a preset decision.
        let presets = [Value::Null, json!({}), json!({"a": "b"}),
            json!({DECISION_ANNOTATION: "mutated: preset", "z": ""})];
        if let Some(preset) = preset.checked_sub(1) {
            object["metadata"]["annotations"] = presets[preset].clone();
        }
        if mirror {
            object["metadata"]["annotations"]["kubernetes.io/config.mirror"] = json!("x");
        }
        let base: Value = serde_json::from_str(base).unwrap();
        let with = |on: bool| {
            let mut settings = base.clone();
            settings["annotateDecision"] = json!(on);
            render(decide_with(&object, &nodes, settings))
        };
        let plain = render(decide_with(&object, &nodes, base.clone()));
        let off = with(false);
        prop_assert_eq!(String::from_utf8_lossy(&off), String::from_utf8_lossy(&plain));

        let plain: Value = serde_json::from_slice(&plain).unwrap();
        let on: Value = serde_json::from_slice(&with(true)).unwrap();
        for field in ["accepted", "message", "code", "audit_annotations", "warnings"] {
            prop_assert_eq!(&on[field], &plain[field], "{}", field);
        }
        let verdict = plain["audit_annotations"]["decision"].as_str().unwrap();
        let judged = !mirror && class != Some("");
        if verdict == "rejected" || !judged {
            prop_assert_eq!(&on, &plain);
            return Ok(());
        }
        // Request objects sent as text, read back as the API server does.
        let original: Value = serde_json::from_str(&object.to_string()).unwrap();
        let annotated = &on["mutated_object"];
        prop_assert!(annotated.is_object(), "{verdict}: no object: {on}");
        let value = annotated["metadata"]["annotations"][DECISION_ANNOTATION].as_str().unwrap();
        prop_assert!(value.len() <= MAX_VALUE_BYTES);
        prop_assert!(value.starts_with(&format!("{verdict}: ")), "{value}");
        let reason = plain["audit_annotations"]["reason"].as_str().unwrap();
        let reason = reason.strip_prefix("kata runtime not assigned: ").unwrap_or(reason);
        let reason = reason.strip_suffix("; left unchanged").unwrap_or(reason);
        let full = format!("{verdict}: {reason}");
        if full.len() <= MAX_VALUE_BYTES {
            prop_assert_eq!(value, full);
        }
        let rest = without_the_annotation(annotated, &original)?;
        match verdict {
            "mutated" => {
                prop_assert_eq!(&rest["spec"]["runtimeClassName"], &json!("kata"));
                prop_assert_eq!(&rest, &plain["mutated_object"]);
            }
            _ => {
                prop_assert_eq!(&plain["mutated_object"], &Value::Null);
                prop_assert_eq!(&rest, &original);
            }
        }
    }

    #[test]
    fn a_mutation_adds_runtime_class_name_and_nothing_else(
        top in unknown_json(), in_spec in unknown_json(), in_meta in unknown_json()
    ) {
        let mut object = pod(json!({"containers": [{"name": "c", "image": "i", "x-deep": in_spec.clone()}]}));
        object["x-top"] = top;
        object["spec"]["x-unknown"] = in_spec;
        object["metadata"]["x-meta"] = in_meta;
        let nodes = vec![json!({"metadata": {"name": "n0"}})];
        let admission = decide(&object, &nodes);
        let (Decision::Mutate { .. }, Some(out)) = (&admission.decision, admission.object) else {
            return Err(TestCaseError::fail("expected a mutation"));
        };
        // Both sides parsed from text, as the API server reads them (serde_json
        // does not round-trip every float through a Value exactly).
        let mut expected: Value = serde_json::from_str(&object.to_string()).unwrap();
        expected["spec"]["runtimeClassName"] = json!("kata");
        prop_assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), expected);
    }

    /// The kubelet refuses a Strict pod on a node whose CRI does not report
    /// the feature: taking the reports away never gives Kata, and a Strict
    /// pod that gets Kata has a node that reports it.
    #[test]
    fn removing_status_features_never_gives_a_strict_pod_kata(
        spec in pod_spec(), nodes in nodes(), check in pick(&["auto", "off", "required"]),
    ) {
        let mut spec = spec;
        spec["securityContext"] = json!({"supplementalGroupsPolicy": "Strict"});
        let settings = json!({"runtimeHandlerCheck": check});
        let before = decide_with(&pod(spec.clone()), &nodes, settings.clone());
        let after = decide_with(&pod(spec), &without_features(&nodes), settings);
        prop_assert!(!matches!(after.decision, Decision::Mutate { .. }), "{:?}", after);
        if matches!(before.decision, Decision::Mutate { .. }) {
            prop_assert!(
                nodes.iter().any(|n| n["status"]["features"]["supplementalGroupsPolicy"] == json!(true)),
                "mutated with no node supporting Strict: {:?}", before
            );
        }
    }

    /// `Merge`, or no policy, asks nothing of the node's features.
    #[test]
    fn status_features_never_matter_to_a_pod_that_is_not_strict(
        spec in pod_spec(), nodes in nodes(), policy in prop_oneof![Just(json!(null)), Just(json!("Merge"))],
    ) {
        let mut spec = spec;
        spec["securityContext"] = json!({"supplementalGroupsPolicy": policy});
        prop_assert_eq!(
            decide(&pod(spec.clone()), &nodes),
            decide(&pod(spec), &without_features(&nodes))
        );
    }

    /// Scheduling gates never change whether a pod gets Kata: only what the
    /// user is told.
    #[test]
    fn gates_never_change_the_verdict(
        spec in pod_spec(), nodes in nodes(),
        gates in proptest::collection::vec(pick(&["kueue.x-k8s.io/admission", "example.com/hold", ""]), 1..5),
    ) {
        let plain = decide(&pod(spec.clone()), &nodes);
        let mut gated = spec;
        gated["schedulingGates"] = json!(gates.iter().map(|g| json!({"name": g})).collect::<Vec<_>>());
        let after = decide(&pod(gated), &nodes);
        prop_assert_eq!(verdict(&plain), verdict(&after));
        if matches!(after.decision, Decision::Mutate { .. }) {
            prop_assert!(
                after.decision.note().as_deref().is_some_and(|n| n.starts_with("the pod has schedulingGates")),
                "{:?}", after
            );
        }
    }
}

proptest! {
    /// The decision annotation's bound works on whole reasons: the value
    /// fits, starts with the verdict, and is the first k reasons whole
    /// (then how many were left out), or the first one cut with "...";
    /// whatever text a reason holds, "; " included.
    #[test]
    fn the_annotation_keeps_whole_reasons(
        reasons in proptest::collection::vec("[a-z; é€]{0,300}", 0..8),
    ) {
        let out = bounded("unchanged: ", &Findings(reasons.clone()));
        prop_assert!(out.len() <= MAX_VALUE_BYTES, "{} bytes", out.len());
        let rest = out.strip_prefix("unchanged: ").unwrap();
        let whole = (0..=reasons.len()).rev().any(|k| {
            let kept = reasons[..k].join("; ");
            let more = reasons.len() - k;
            rest == kept && more == 0 || rest == format!("{kept}; and {more} more")
        });
        let cut = reasons.first().is_some_and(|first| {
            let tail = match reasons.len() - 1 {
                0 => String::new(),
                n => format!("; and {n} more"),
            };
            rest.strip_suffix(tail.as_str())
                .and_then(|r| r.strip_suffix("..."))
                .is_some_and(|start| first.starts_with(start) && start.len() < first.len())
        });
        prop_assert!(whole || cut, "{:?} -> {:?}", reasons, out);
    }

    /// The annotation never takes a pod's annotations past the API
    /// server's 262,144 bytes: annotated within it, or admitted as with
    /// the setting off and the omission said in the audit reason.
    #[test]
    fn the_annotation_never_passes_the_api_servers_limit(
        slack in 0usize..400, extra in 0usize..3,
    ) {
        let mut annotations = serde_json::Map::new();
        for i in 0..extra {
            annotations.insert(format!("example.com/a{i}"), json!("x"));
        }
        let used: usize = annotations.iter().map(|(k, v)| k.len() + v.as_str().unwrap().len()).sum();
        let key = "example.com/big";
        let room = MAX_ANNOTATIONS_BYTES - used - key.len() - slack;
        annotations.insert(key.into(), json!("v".repeat(room)));
        let mut object = pod(json!({"containers": [{"name": "c", "image": "i"}]}));
        object["metadata"]["annotations"] = Value::Object(annotations);
        let nodes = vec![json!({"metadata": {"name": "n0"}})];
        let off = decide_with(&object, &nodes, json!({}));
        let on = decide_with(&object, &nodes, json!({"annotateDecision": true}));
        prop_assert_eq!(&on.decision, &off.decision);
        let annotated: Value = serde_json::from_str(on.object.as_deref().unwrap()).unwrap();
        let total: usize = annotated["metadata"]["annotations"].as_object().unwrap().iter()
            .map(|(k, v)| k.len() + v.as_str().unwrap().len()).sum();
        prop_assert!(total <= MAX_ANNOTATIONS_BYTES, "{} bytes", total);
        match &on.audit_note {
            None => prop_assert!(annotated["metadata"]["annotations"][DECISION_ANNOTATION].is_string()),
            Some(note) => {
                prop_assert!(note.starts_with("decision annotation omitted: "), "{}", note);
                prop_assert_eq!(&on.object, &off.object);
            }
        }
    }
}

/// Per-node labels a view may name: none, a key pods select on, a prefix.
const PER_NODE: [&[&str]; 3] = [&[], &["zone"], &["g*"]];

/// `nodes` in pools: node `i` takes the fields of node `from[i]` (when
/// earlier) but keeps its name and draws its own values of the labels
/// `zone` and `gen` it has, as hostnames differ within a pool: the shapes
/// hold several members, told apart only by labels a view may call
/// per-node.
fn pooled(
    mut nodes: Vec<Value>,
    from: &[(prop::sample::Index, prop::sample::Index)],
) -> Vec<Value> {
    for i in 1..nodes.len() {
        let (j, value) = (from[i].0.index(i + 1), from[i].1);
        if j < i {
            let name = nodes[i]["metadata"]["name"].clone();
            nodes[i] = nodes[j].clone();
            nodes[i]["metadata"]["name"] = name;
            let labels = nodes[i]["metadata"]["labels"].as_object_mut();
            for (key, v) in labels.into_iter().flatten() {
                if key == "zone" || key == "gen" {
                    *v = json!(value.get(&VALUES));
                }
            }
        }
    }
    nodes
}

/// The node shapes of `nodes` in a ConfigMap, as the controller writes
/// them, listed at `listed_at` and valid for 60 s.
fn shapes_map(nodes: &[Value], selector: &str, per_node: &[&str], listed_at: i64) -> Vec<u8> {
    use kata_runtime_policy::shapes::{BuildOptions, DATA_KEY, build};
    let view = build(
        nodes,
        &BuildOptions {
            selector: selector.into(),
            per_node_labels: per_node.iter().map(|k| k.to_string()).collect(),
            listed_at,
            valid_for: 60,
            max_bytes: 1 << 20,
        },
    );
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "shapes", "namespace": "kata"},
        "data": {DATA_KEY: view.to_string()}})
    .to_string()
    .into_bytes()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Judged against the node shapes, every pod gets the review the node
    /// list gives it: the verdict, the patch, every word of the warnings
    /// (the diagnosis counts each member; broken nodes are named as the
    /// list names them). And the view really decides: a pod that reads
    /// no node name and no per-node label makes no node list read.
    #[test]
    fn the_node_shapes_decide_as_the_node_list(
        spec in pod_spec(), nodes in nodes(), from in proptest::collection::vec(any::<(prop::sample::Index, prop::sample::Index)>(), NAMES.len()),
        check in pick(&["off", "auto", "required"]), per_node in pick(&PER_NODE),
    ) {
        let nodes = pooled(nodes, &from);
        let object = pod(spec.clone());
        let payload = |shapes: bool| {
            let mut settings = json!({"kataNodeSelector": "", "runtimeHandlerCheck": check});
            if shapes {
                settings["nodeShapes"] = json!("kata/shapes");
            }
            json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE", "object": object}, "settings": settings})
        };
        let list = || fake(json!({"kind": "NodeList", "items": nodes}).to_string().into_bytes());
        let listed = review(&payload(false), &list());
        let map = shapes_map(&nodes, "", per_node, FakeCluster::NOW - 30);
        let cluster = list().config_map("kata", "shapes", Ok(Some(map)));
        let shaped = review(&payload(true), &cluster);
        prop_assert_eq!(&shaped.decision, &listed.decision);
        prop_assert_eq!(render(shaped.clone()), render(listed.clone()));
        let c = constraints(&spec);
        let per_node_read = c.value_keys().iter().any(|k| per_node.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => k.starts_with(prefix),
            None => p == k,
        }));
        let asked = cluster.calls().iter().any(|call| matches!(call, kata_runtime_policy::cluster::Call::ConfigMap(..)));
        if asked && !per_node_read && !c.reads_node_names() {
            prop_assert!(cluster.listed().is_empty(), "{:?}", cluster.calls());
        }
    }

    /// A view that is stale, missing, unreadable, made for other nodes, or
    /// that cannot be read leaves the decision to the node list: the
    /// review is the list's, whatever the view says.
    #[test]
    fn views_that_cannot_be_used_leave_the_node_list_to_decide(
        spec in pod_spec(), nodes in nodes(), other in nodes(), how in 0..6usize,
    ) {
        let object = pod(spec);
        let payload = |shapes: bool| {
            let mut settings = json!({"kataNodeSelector": "", "runtimeHandlerCheck": "auto"});
            if shapes {
                settings["nodeShapes"] = json!("kata/shapes");
            }
            json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE", "object": object}, "settings": settings})
        };
        let list = || fake(json!({"kind": "NodeList", "items": nodes}).to_string().into_bytes());
        let listed = review(&payload(false), &list());
        let answer = match how {
            // Stale: listed long ago, from other nodes.
            0 => Ok(Some(shapes_map(&other, "", &[], FakeCluster::NOW - 3600))),
            // Missing.
            1 => Ok(None),
            // Made for another kataNodeSelector.
            2 => Ok(Some(shapes_map(&other, "kata=yes", &[], FakeCluster::NOW))),
            // Not a view.
            3 => Ok(Some(b"{\"data\": {\"shapes.json\": \"[]\"}}".to_vec())),
            // Forbidden.
            4 => Err(LookupError::from_host("configmaps \"shapes\" is forbidden".into())),
            _ => Ok(Some(shapes_map(&other, "", &[], FakeCluster::NOW))),
        };
        let mut cluster = list().config_map("kata", "shapes", answer);
        if how == 5 {
            // No clock: the view cannot be dated.
            cluster = cluster.at(None);
        }
        let shaped = review(&payload(true), &cluster);
        prop_assert_eq!(&shaped.decision, &listed.decision);
        prop_assert_eq!(render(shaped.clone()), render(listed.clone()));
    }
}

proptest! {
    /// A pod that selects on a label the view calls per-node (members of
    /// a shape differ there, as hostnames do) selects one member's value:
    /// the node list must answer, as only it knows which members match.
    #[test]
    fn a_pod_that_selects_on_a_per_node_label_gets_the_node_lists_answer(
        spec in pod_spec(), nodes in nodes(), from in proptest::collection::vec(any::<(prop::sample::Index, prop::sample::Index)>(), NAMES.len()),
        member in any::<prop::sample::Index>(),
    ) {
        let nodes = pooled(nodes, &from);
        prop_assume!(!nodes.is_empty());
        let chosen = &nodes[member.index(nodes.len())]["metadata"]["labels"]["zone"];
        prop_assume!(chosen.is_string());
        let mut spec = spec;
        spec["nodeSelector"] = json!({"zone": chosen});
        let payload = |shapes: bool| {
            let mut settings = json!({"kataNodeSelector": "", "runtimeHandlerCheck": "off"});
            if shapes {
                settings["nodeShapes"] = json!("kata/shapes");
            }
            json!({"request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                "operation": "CREATE", "object": pod(spec.clone())}, "settings": settings})
        };
        let list = || fake(json!({"kind": "NodeList", "items": nodes}).to_string().into_bytes());
        let listed = review(&payload(false), &list());
        let map = shapes_map(&nodes, "", &["zone"], FakeCluster::NOW - 30);
        let shaped = review(&payload(true), &list().config_map("kata", "shapes", Ok(Some(map))));
        prop_assert_eq!(&shaped.decision, &listed.decision);
    }
}
