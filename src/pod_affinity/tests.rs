//! kube-scheduler's own Filter cases (`interpodaffinity/filtering_test.go`,
//! `TestRequiredAffinitySingleNode` and `TestRequiredAffinityMultipleNodes`),
//! where they fit: the pods counted here, then each node judged by the
//! filter. Namespace `""` upstream is `default` here; cases that only test
//! the scheduler's own plumbing (PreFilter skips, parse errors of preferred
//! terms) are left out.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::*;
use crate::cluster::{Call, FakeCluster, LookupErrorKind};
use crate::node::{KeyFilter, parse_node};
use crate::scheduling::Reason;

const A: &str = "node(s) didn't match pod affinity rules";
const ANTI: &str = "node(s) didn't match pod anti-affinity rules";
const EXIST: &str = "node(s) didn't satisfy existing pods anti-affinity rules";

fn node(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}})
}

fn existing(ns: &str, name: &str, labels: Value, node: &str, anti: Value) -> Value {
    let mut pod = json!({"metadata": {"name": name, "namespace": ns, "labels": labels},
                         "spec": {"nodeName": node, "containers": [{"name": "c"}]}});
    if !anti.is_null() {
        pod["spec"]["affinity"] =
            json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": anti}});
    }
    pod
}

fn expr(key: &str, op: &str, values: &[&str]) -> Value {
    match op {
        "Exists" | "DoesNotExist" => json!({"key": key, "operator": op}),
        _ => json!({"key": key, "operator": op, "values": values}),
    }
}

/// A term selecting with `exprs` in the pod's namespace.
fn term(exprs: Vec<Value>, key: &str) -> Value {
    json!({"labelSelector": {"matchExpressions": exprs}, "topologyKey": key})
}

struct Incoming {
    namespace: &'static str,
    labels: BTreeMap<String, String>,
    terms: PodAffinityTerms,
}

fn incoming(ns: &'static str, labels: Value, affinity: Value, anti: Value) -> Incoming {
    let read = |v: Value| -> Vec<PodAffinityTerm> {
        if v.is_null() {
            Vec::new()
        } else {
            serde_json::from_value(v).unwrap()
        }
    };
    Incoming {
        namespace: ns,
        labels: serde_json::from_value(labels).unwrap(),
        terms: PodAffinityTerms {
            affinity: read(affinity),
            anti_affinity: read(anti),
        },
    }
}

fn subject() -> Subject<'static> {
    Subject {
        user: "system:serviceaccount:kubewarden:policy-server",
        groups: vec![],
    }
}

fn resolved(cluster: &FakeCluster, pod: &Incoming) -> Result<InterPodAffinity, Unresolved> {
    let pod = AffinityPod {
        namespace: pod.namespace,
        labels: &pod.labels,
        terms: &pod.terms,
    };
    resolve(&pod, &subject(), cluster)
}

/// Each node's verdict: `None` when it passes, else the reason.
fn judge(nodes: Vec<Value>, pods: Vec<Value>, pod: Incoming) -> Vec<Option<String>> {
    let cluster = FakeCluster::new(nodes.clone())
        .pods(pods)
        .namespaces(namespaces());
    let check = resolved(&cluster, &pod).unwrap();
    nodes
        .iter()
        .map(|n| {
            let text = n.to_string();
            let node = parse_node(text.as_bytes(), KeyFilter::All).unwrap();
            check.check(&node).err().map(|r| r.to_string())
        })
        .collect()
}

fn namespaces() -> Vec<Value> {
    [
        "subteam1.team1",
        "subteam2.team1",
        "subteam1.team2",
        "subteam2.team2",
    ]
    .iter()
    .map(|n| {
        let team = n.split('.').nth(1).unwrap();
        json!({"metadata": {"name": n, "labels": {"team": team}}})
    })
    .collect()
}

fn ok() -> Option<String> {
    None
}

fn no(reason: &str) -> Option<String> {
    Some(reason.to_string())
}

fn single() -> Vec<Value> {
    vec![node("node1", json!({"region": "r1", "zone": "z11"}))]
}

fn scan_pod() -> Value {
    existing(
        "default",
        "p0",
        json!({"service": "securityscan"}),
        "node1",
        Value::Null,
    )
}

fn in_scan(key: &str) -> Value {
    term(
        vec![expr("service", "In", &["securityscan", "value2"])],
        key,
    )
}

#[test]
fn affinity_with_in_and_not_in_matches_the_existing_pod() {
    let pod = incoming(
        "default",
        json!({"security": "S1"}),
        json!([in_scan("region")]),
        Value::Null,
    );
    assert_eq!(judge(single(), vec![scan_pod()], pod), [ok()]);
    let not_in = term(
        vec![expr("service", "NotIn", &["securityscan3", "value3"])],
        "region",
    );
    let pod = incoming(
        "default",
        json!({"security": "S1"}),
        json!([not_in]),
        Value::Null,
    );
    assert_eq!(judge(single(), vec![scan_pod()], pod), [ok()]);
}

#[test]
fn affinity_to_another_namespace_is_not_met_by_this_one() {
    let mut t = in_scan("region");
    t["namespaces"] = json!(["DiffNameSpace"]);
    let pod = incoming("default", json!({}), json!([t]), Value::Null);
    let p = existing(
        "ns",
        "p",
        json!({"service": "securityscan"}),
        "node1",
        Value::Null,
    );
    assert_eq!(judge(single(), vec![p], pod), [no(A)]);
}

#[test]
fn affinity_with_an_unmatching_selector_fails() {
    let t = term(
        vec![expr("service", "In", &["antivirusscan", "value2"])],
        "region",
    );
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        json!([t]),
        Value::Null,
    );
    assert_eq!(judge(single(), vec![scan_pod()], pod), [no(A)]);
}

#[test]
fn every_term_and_every_expression_is_anded() {
    let first = term(
        vec![
            expr("service", "Exists", &[]),
            expr("wrongkey", "DoesNotExist", &[]),
        ],
        "region",
    );
    let second = |v: &str| {
        term(
            vec![
                expr("service", "In", &[v]),
                expr("service", "NotIn", &["WrongValue"]),
            ],
            "region",
        )
    };
    let pod = incoming(
        "default",
        json!({"security": "S1"}),
        json!([first, second("securityscan")]),
        Value::Null,
    );
    assert_eq!(judge(single(), vec![scan_pod()], pod), [ok()]);
    let pod = incoming(
        "default",
        json!({"security": "S1"}),
        json!([first, second("securityscan2")]),
        Value::Null,
    );
    assert_eq!(judge(single(), vec![scan_pod()], pod), [no(A)]);
}

#[test]
fn affinity_and_anti_affinity_and_the_existing_pods_anti_affinity() {
    let anti_virus = term(
        vec![expr("service", "In", &["antivirusscan", "value2"])],
        "node",
    );
    // S8, S9: both met, the existing pod's anti-affinity does not match.
    let pod = || {
        incoming(
            "default",
            json!({"security": "S1"}),
            json!([in_scan("region")]),
            json!([anti_virus]),
        )
    };
    assert_eq!(judge(single(), vec![scan_pod()], pod()), [ok()]);
    let symmetric = existing(
        "default",
        "p0",
        json!({"service": "securityscan"}),
        "node1",
        json!([anti_virus]),
    );
    assert_eq!(judge(single(), vec![symmetric], pod()), [ok()]);
    // S10: the anti-affinity term matches the pod in the node's zone.
    let pod = incoming(
        "default",
        json!({"security": "S1"}),
        json!([in_scan("region")]),
        json!([in_scan("zone")]),
    );
    assert_eq!(judge(single(), vec![scan_pod()], pod), [no(ANTI)]);
    // S11: the existing pod's anti-affinity matches the pod.
    let theirs = existing(
        "default",
        "p0",
        json!({"service": "securityscan"}),
        "node1",
        json!([in_scan("zone")]),
    );
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        json!([in_scan("region")]),
        json!([anti_virus]),
    );
    assert_eq!(judge(single(), vec![theirs], pod), [no(EXIST)]);
}

#[test]
fn a_pod_whose_own_labels_do_not_match_its_terms_is_no_first_of_a_group() {
    let t = term(
        vec![expr("service", "NotIn", &["securityscan", "value2"])],
        "region",
    );
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        json!([t]),
        Value::Null,
    );
    // The existing pod runs on node2, which does not exist: it counts nowhere.
    let p = existing(
        "default",
        "p",
        json!({"service": "securityscan"}),
        "node2",
        Value::Null,
    );
    assert_eq!(judge(single(), vec![p], pod), [no(A)]);
}

#[test]
fn existing_anti_affinity_applies_to_a_pod_without_terms_of_its_own_once_read() {
    // S13: read for a pod with terms; the pod's own terms are met.
    let theirs = existing(
        "default",
        "p0",
        json!({"service": "securityscan"}),
        "node1",
        json!([in_scan("zone")]),
    );
    let other = term(vec![expr("x", "Exists", &[])], "zone");
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        Value::Null,
        json!([other]),
    );
    assert_eq!(judge(single(), vec![theirs], pod), [no(EXIST)]);
    // S14: their NotIn term does not match.
    let not_in = term(
        vec![expr("service", "NotIn", &["securityscan", "value2"])],
        "zone",
    );
    let theirs = existing(
        "default",
        "p0",
        json!({"service": "securityscan"}),
        "node1",
        json!([not_in]),
    );
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        Value::Null,
        json!([other]),
    );
    assert_eq!(judge(single(), vec![theirs], pod), [ok()]);
}

#[test]
fn the_pods_own_anti_affinity_is_reported_before_the_existing_pods() {
    // S15, S16, S17.
    let exists = |k: &str, topo: &str| term(vec![expr(k, "Exists", &[])], topo);
    let theirs = existing(
        "default",
        "p0",
        json!({"security": "S1"}),
        "node1",
        json!([exists("security", "zone")]),
    );
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        Value::Null,
        json!([exists("service", "region"), exists("security", "region")]),
    );
    assert_eq!(judge(single(), vec![theirs.clone()], pod), [no(ANTI)]);
    let pod = incoming(
        "default",
        json!({"service": "securityscan"}),
        Value::Null,
        json!([exists("service", "zone"), exists("security", "zone")]),
    );
    assert_eq!(judge(single(), vec![theirs], pod), [no(ANTI)]);
    let theirs = existing(
        "default",
        "p0",
        json!({"service": "securityscan"}),
        "node1",
        json!([exists("service", "zone"), exists("security", "zone")]),
    );
    let pod = incoming(
        "default",
        json!({"security": "S1"}),
        Value::Null,
        json!([exists("security", "zone")]),
    );
    assert_eq!(judge(single(), vec![theirs], pod), [no(EXIST)]);
}

#[test]
fn namespace_selectors_choose_the_namespaces_by_their_labels() {
    let with_ns = |sel: Value, key: &str| {
        let mut t = in_scan(key);
        t["namespaceSelector"] = sel;
        t
    };
    let team1 =
        json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]});
    let at = |ns: &str| {
        existing(
            ns,
            "p",
            json!({"service": "securityscan"}),
            "node1",
            Value::Null,
        )
    };
    // S22, S23: affinity.
    let pod = || {
        incoming(
            "default",
            json!({"security": "S1"}),
            json!([with_ns(team1.clone(), "region")]),
            Value::Null,
        )
    };
    assert_eq!(judge(single(), vec![at("subteam1.team1")], pod()), [ok()]);
    assert_eq!(judge(single(), vec![at("subteam1.team2")], pod()), [no(A)]);
    // S24, S25, S26: anti-affinity.
    let pod = |sel: Value| {
        incoming(
            "subteam1.team1",
            json!({"security": "S1"}),
            Value::Null,
            json!([with_ns(sel, "zone")]),
        )
    };
    assert_eq!(
        judge(single(), vec![at("subteam2.team1")], pod(team1.clone())),
        [no(ANTI)]
    );
    assert_eq!(
        judge(single(), vec![at("subteam2.team1")], pod(json!({}))),
        [no(ANTI)]
    );
    assert_eq!(
        judge(single(), vec![at("subteam1.team2")], pod(team1)),
        [ok()]
    );
}

fn china() -> Value {
    json!({"region": "China"})
}
fn china_az1() -> Value {
    json!({"region": "China", "az": "az1"})
}
fn india() -> Value {
    json!({"region": "India"})
}
fn rz(r: &str, z: &str, host: &str) -> Value {
    json!({"region": r, "zone": z, "hostname": host})
}

#[test]
fn affinity_holds_across_a_topology_domain() {
    // M1.
    let nodes = vec![
        node("node1", china()),
        node("node2", china_az1()),
        node("node3", india()),
    ];
    let p1 = existing("default", "p1", json!({"foo": "bar"}), "node1", Value::Null);
    let pod = incoming(
        "default",
        json!({}),
        json!([term(vec![expr("foo", "In", &["bar"])], "region")]),
        Value::Null,
    );
    assert_eq!(judge(nodes, vec![p1], pod), [ok(), ok(), no(A)]);
}

#[test]
fn the_first_pod_of_a_self_affine_group_goes_anywhere_with_the_keys() {
    // M2, M3: no pod matches both terms (p1 lacks service).
    let terms = json!([
        term(vec![expr("foo", "In", &["bar"])], "zone"),
        term(vec![expr("service", "In", &["securityscan"])], "zone")
    ]);
    let pod = || {
        incoming(
            "default",
            json!({"foo": "bar", "service": "securityscan"}),
            terms.clone(),
            Value::Null,
        )
    };
    let p1 = existing("default", "p1", json!({"foo": "bar"}), "nodeA", Value::Null);
    let nodes = vec![
        node("nodeA", json!({"zone": "az1", "hostname": "h1"})),
        node("nodeB", json!({"zone": "az2", "hostname": "h2"})),
    ];
    assert_eq!(judge(nodes, vec![p1.clone()], pod()), [ok(), ok()]);
    let nodes = vec![
        node("nodeA", json!({"zoneLabel": "az1", "hostname": "h1"})),
        node("nodeB", json!({"zoneLabel": "az2", "hostname": "h2"})),
    ];
    assert_eq!(judge(nodes, vec![p1], pod()), [no(A), no(A)]);
}

#[test]
fn anti_affinity_fills_every_node_of_the_domain() {
    // M4, M5, M6.
    let two = || {
        vec![
            node("nodeA", json!({"region": "r1", "hostname": "nodeA"})),
            node("nodeB", json!({"region": "r1", "hostname": "nodeB"})),
        ]
    };
    let abc = existing(
        "default",
        "p",
        json!({"foo": "abc", "service": "securityscan"}),
        "nodeA",
        Value::Null,
    );
    let pod = incoming(
        "default",
        json!({}),
        Value::Null,
        json!([term(vec![expr("foo", "In", &["abc"])], "region")]),
    );
    assert_eq!(judge(two(), vec![abc.clone()], pod), [no(ANTI), no(ANTI)]);
    let pod = incoming(
        "default",
        json!({}),
        Value::Null,
        json!([
            term(vec![expr("foo", "In", &["abc"])], "region"),
            term(vec![expr("service", "In", &["securityscan"])], "zone")
        ]),
    );
    let nodes = vec![
        node("nodeA", rz("r1", "z1", "nodeA")),
        node("nodeB", rz("r1", "z2", "nodeB")),
    ];
    assert_eq!(judge(nodes, vec![abc.clone()], pod), [no(ANTI), no(ANTI)]);
    let nodes = vec![
        node("nodeA", china()),
        node("nodeB", china_az1()),
        node("nodeC", india()),
    ];
    let pod = incoming(
        "default",
        json!({}),
        Value::Null,
        json!([term(vec![expr("foo", "In", &["abc"])], "region")]),
    );
    assert_eq!(judge(nodes, vec![abc], pod), [no(ANTI), no(ANTI), ok()]);
}

#[test]
fn anti_affinity_counts_pods_of_the_terms_namespaces_only() {
    // M7: the pod on nodeC matches by labels but runs in another namespace,
    // and its own term names its namespace only.
    let nodes = vec![
        node("nodeA", china()),
        node("nodeB", china_az1()),
        node("nodeC", india()),
    ];
    let a = existing("ns1", "a", json!({"foo": "bar"}), "nodeA", Value::Null);
    let c = existing(
        "ns2",
        "c",
        json!({"foo": "123"}),
        "nodeC",
        json!([term(vec![expr("foo", "In", &["123"])], "region")]),
    );
    let pod = incoming(
        "ns1",
        json!({"foo": "123"}),
        Value::Null,
        json!([term(vec![expr("foo", "In", &["bar"])], "region")]),
    );
    assert_eq!(judge(nodes, vec![a, c], pod), [no(ANTI), no(ANTI), ok()]);
}

#[test]
fn a_topology_key_no_node_has_makes_no_domain() {
    // M9 (the pod's own terms), M12, M13 (one term's key is missing).
    let nodes = || {
        vec![
            node("nodeA", rz("r1", "z1", "nodeA")),
            node("nodeB", rz("r1", "z1", "nodeB")),
        ]
    };
    let foo = existing("default", "p", json!({"foo": ""}), "nodeA", Value::Null);
    let pod = incoming(
        "default",
        json!({}),
        Value::Null,
        json!([term(vec![expr("foo", "Exists", &[])], "invalid-node-label")]),
    );
    assert_eq!(judge(nodes(), vec![foo], pod), [ok(), ok()]);
    let nodes = || {
        vec![
            node("nodeA", rz("r1", "z1", "nodeA")),
            node("nodeB", rz("r1", "z2", "nodeB")),
        ]
    };
    let terms = json!([
        term(vec![expr("foo", "Exists", &[])], "invalid-node-label"),
        term(vec![expr("bar", "Exists", &[])], "zone")
    ]);
    let theirs = existing("default", "p", json!({}), "nodeA", terms.clone());
    let pod = incoming(
        "default",
        json!({"foo": "", "bar": ""}),
        Value::Null,
        json!([term(vec![expr("zzz", "Exists", &[])], "zone")]),
    );
    assert_eq!(judge(nodes(), vec![theirs], pod), [no(EXIST), ok()]);
    let both = existing(
        "default",
        "p",
        json!({"foo": "", "bar": ""}),
        "nodeA",
        Value::Null,
    );
    let pod = incoming("default", json!({}), Value::Null, terms);
    assert_eq!(judge(nodes(), vec![both], pod), [no(ANTI), ok()]);
}

#[test]
fn each_existing_pod_and_each_anti_affinity_term_counts_on_its_own() {
    // M10, M11, M14, M15, M16.
    let exists = |k: &str, topo: &str| term(vec![expr(k, "Exists", &[])], topo);
    let r1 = |z: &str, h: &str| node(h, rz("r1", z, h));
    let pod = || {
        incoming(
            "default",
            json!({"foo": "", "bar": ""}),
            Value::Null,
            json!([exists("none", "zone")]),
        )
    };
    let pods = vec![
        existing(
            "default",
            "a",
            json!({}),
            "nodeA",
            json!([exists("foo", "zone")]),
        ),
        existing(
            "default",
            "b",
            json!({}),
            "nodeA",
            json!([exists("bar", "region")]),
        ),
    ];
    assert_eq!(
        judge(vec![r1("z1", "nodeA"), r1("z2", "nodeB")], pods, pod()),
        [no(EXIST), no(EXIST)]
    );
    let pods = vec![
        existing("default", "a", json!({"foo": ""}), "nodeA", Value::Null),
        existing("default", "b", json!({"bar": ""}), "nodeB", Value::Null),
    ];
    let anti = incoming(
        "default",
        json!({}),
        Value::Null,
        json!([exists("foo", "zone"), exists("bar", "region")]),
    );
    assert_eq!(
        judge(vec![r1("z1", "nodeA"), r1("z2", "nodeB")], pods, anti),
        [no(ANTI), no(ANTI)]
    );
    let pods = vec![existing(
        "default",
        "a",
        json!({}),
        "nodeA",
        json!([exists("foo", "region"), exists("bar", "zone")]),
    )];
    assert_eq!(
        judge(vec![r1("z1", "nodeA"), r1("z2", "nodeB")], pods, pod()),
        [no(EXIST), no(EXIST)]
    );
    let pods = vec![
        existing(
            "default",
            "a",
            json!({}),
            "nodeA",
            json!([exists("foo", "zone"), exists("labelA", "zone")]),
        ),
        existing(
            "default",
            "b",
            json!({}),
            "nodeB",
            json!([exists("bar", "zone"), exists("labelB", "zone")]),
        ),
    ];
    let nodes = vec![r1("z1", "nodeA"), r1("z2", "nodeB"), r1("z3", "nodeC")];
    assert_eq!(judge(nodes, pods, pod()), [no(EXIST), no(EXIST), ok()]);
}

#[test]
fn affinity_needs_one_pod_that_matches_every_term() {
    // M17, M18.
    let terms = json!([
        term(vec![expr("foo", "Exists", &[])], "region"),
        term(vec![expr("bar", "Exists", &[])], "zone")
    ]);
    let pod = || incoming("default", json!({}), terms.clone(), Value::Null);
    let both = existing(
        "default",
        "p1",
        json!({"foo": "", "bar": ""}),
        "nodeA",
        Value::Null,
    );
    let nodes = vec![
        node("nodeA", rz("r1", "z1", "nodeA")),
        node("nodeB", rz("r1", "z1", "nodeB")),
    ];
    assert_eq!(judge(nodes, vec![both], pod()), [ok(), ok()]);
    let split = vec![
        existing("default", "p1", json!({"foo": ""}), "nodeA", Value::Null),
        existing("default", "p2", json!({"bar": ""}), "nodeB", Value::Null),
    ];
    let nodes = vec![
        node("nodeA", rz("r1", "z1", "nodeA")),
        node("nodeB", rz("r1", "z2", "nodeB")),
    ];
    assert_eq!(judge(nodes, split, pod()), [no(A), no(A)]);
}

// ----------------------------------------------------- beyond upstream's

#[test]
fn pods_on_nodes_outside_the_candidates_count_by_their_nodes_labels() {
    // The database runs on a general node in zone a; the candidates are in
    // zones a and b: only the one in a has it in its zone.
    let general = node("general-1", json!({"zone": "a", "hostname": "general-1"}));
    let kata = vec![
        node("kata-a", json!({"zone": "a"})),
        node("kata-b", json!({"zone": "b"})),
    ];
    let db = existing(
        "default",
        "db",
        json!({"app": "db"}),
        "general-1",
        Value::Null,
    );
    let cluster = FakeCluster::new(kata.clone())
        .unlisted(vec![general])
        .pods(vec![db]);
    let pod = incoming(
        "default",
        json!({}),
        json!([term(vec![expr("app", "In", &["db"])], "zone")]),
        Value::Null,
    );
    let check = resolved(&cluster, &pod).unwrap();
    assert_eq!(check.affinity.get("zone").map(|v| v.len()), Some(1));
    assert!(cluster.queries().contains(&"Node general-1".to_string()));
    let verdicts: Vec<_> = (kata.iter())
        .map(|n| {
            let text = n.to_string();
            check
                .check(&parse_node(text.as_bytes(), KeyFilter::All).unwrap())
                .err()
        })
        .collect();
    assert_eq!(verdicts, [None, Some(Reason::PodAffinity)]);
}

#[test]
fn match_label_keys_narrow_the_pods_own_terms_to_its_revision() {
    // A rolling update: the old revision's pods must not keep the new
    // one out (the API server merges matchLabelKeys after the webhooks).
    let old = existing(
        "default",
        "old",
        json!({"app": "web", "rev": "1"}),
        "node1",
        Value::Null,
    );
    let mut t = term(vec![expr("app", "In", &["web"])], "zone");
    t["matchLabelKeys"] = json!(["rev"]);
    let pod = incoming(
        "default",
        json!({"app": "web", "rev": "2"}),
        Value::Null,
        json!([t]),
    );
    assert_eq!(judge(single(), vec![old.clone()], pod), [ok()]);
    let plain = term(vec![expr("app", "In", &["web"])], "zone");
    let pod = incoming(
        "default",
        json!({"app": "web", "rev": "2"}),
        Value::Null,
        json!([plain]),
    );
    assert_eq!(judge(single(), vec![old], pod), [no(ANTI)]);
}

#[test]
fn namespaces_are_read_only_for_terms_that_select_them_by_label() {
    let cluster = FakeCluster::new(single()).pods(vec![scan_pod()]);
    let pod = incoming(
        "default",
        json!({}),
        json!([in_scan("region")]),
        Value::Null,
    );
    resolved(&cluster, &pod).unwrap();
    assert_eq!(
        cluster.queries(),
        [
            "CanI list pods as system:serviceaccount:kubewarden:policy-server []",
            "CanI watch pods as system:serviceaccount:kubewarden:policy-server []",
            "List Pod",
            "Node node1",
        ]
    );
    let mut t = in_scan("region");
    t["namespaceSelector"] = json!({"matchLabels": {"team": "a"}});
    let pod = incoming("default", json!({}), json!([t]), Value::Null);
    let cluster = FakeCluster::new(single()).pods(vec![scan_pod()]);
    resolved(&cluster, &pod).unwrap();
    assert!(cluster.calls().contains(&Call::Namespaces));
}

#[test]
fn beyond_the_reads_one_list_of_every_node_gives_the_labels() {
    let nodes: Vec<Value> = (0..=MAX_NODE_READS)
        .map(|i| node(&format!("n{i}"), json!({"zone": format!("z{}", i % 3)})))
        .collect();
    let pods: Vec<Value> = (0..=MAX_NODE_READS)
        .map(|i| {
            existing(
                "default",
                &format!("p{i}"),
                json!({"app": "db"}),
                &format!("n{i}"),
                Value::Null,
            )
        })
        .collect();
    let cluster = FakeCluster::new(nodes).pods(pods);
    let pod = incoming(
        "default",
        json!({}),
        json!([term(vec![expr("app", "In", &["db"])], "zone")]),
        Value::Null,
    );
    let check = resolved(&cluster, &pod).unwrap();
    assert_eq!(check.affinity["zone"].len(), 3);
    let lists: Vec<_> = (cluster.calls().into_iter())
        .filter(|c| matches!(c, Call::Nodes { .. } | Call::Node { .. }))
        .collect();
    assert_eq!(
        lists,
        [Call::Nodes {
            selector: None,
            masks: NodeMasks::Plain
        }]
    );
}

#[test]
fn what_cannot_be_read_says_what_to_grant() {
    let pod = || {
        incoming(
            "default",
            json!({}),
            json!([in_scan("region")]),
            Value::Null,
        )
    };
    let denied = FakeCluster::new(single()).deny("watch", "pods");
    assert_eq!(
        resolved(&denied, &pod()),
        Err(Unresolved::Denied {
            resource: "pods".into(),
            verbs: vec!["watch"]
        })
    );
    assert!(
        !denied.calls().contains(&Call::Pods),
        "a list it may not make never answers"
    );
    let failing = FakeCluster::new(single()).pods_answer(Err(LookupError {
        kind: LookupErrorKind::Failed,
        message: "timeout".into(),
    }));
    assert!(
        matches!(resolved(&failing, &pod()), Err(Unresolved::Lookup { what, .. }) if what == "cannot list pods")
    );
    let garbage = FakeCluster::new(single()).pods_answer(Ok(b"[]".to_vec()));
    assert!(
        matches!(resolved(&garbage, &pod()), Err(Unresolved::Invalid(why)) if why.contains("not a valid PodList"))
    );
    let mut t = in_scan("region");
    t["namespaceSelector"] = json!({"matchLabels": {"team": "a"}});
    let pod = incoming("default", json!({}), json!([t]), Value::Null);
    let denied = FakeCluster::new(single()).deny("list", "namespaces");
    assert!(
        matches!(resolved(&denied, &pod), Err(Unresolved::Denied { resource, .. }) if resource == "namespaces")
    );
}

#[test]
fn an_invalid_term_of_the_pod_names_its_place() {
    let bad = json!([{"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}}]);
    let pod = incoming("default", json!({}), Value::Null, bad);
    let cluster = FakeCluster::new(single());
    assert!(matches!(
        resolved(&cluster, &pod),
        Err(Unresolved::Pod(why)) if why.starts_with("spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector: ")
    ));
    assert!(cluster.calls().is_empty(), "judged before any read");
}

#[test]
fn a_few_terms_with_many_requirements_count_as_many() {
    let wide: Vec<Value> = (0..2000)
        .map(|i| expr("k", "NotIn", &[&i.to_string()]))
        .collect();
    let pods: Vec<Value> = (0..(MAX_TERM_MATCHES / 2000 + 1))
        .map(|i| existing("default", &format!("p{i}"), json!({}), "node1", Value::Null))
        .collect();
    let cluster = FakeCluster::new(single()).pods(pods);
    let pod = incoming(
        "default",
        json!({}),
        Value::Null,
        json!([term(wide, "zone")]),
    );
    assert!(
        matches!(resolved(&cluster, &pod), Err(Unresolved::Invalid(why)) if why.contains("1 terms (2001 requirements)"))
    );
}

#[test]
fn too_many_term_matches_end_the_count() {
    let many: Vec<Value> = (0..2000)
        .map(|i| term(vec![expr("k", "In", &[&i.to_string()])], "zone"))
        .collect();
    let pods: Vec<Value> = (0..(MAX_TERM_MATCHES / 2000 + 1))
        .map(|i| existing("default", &format!("p{i}"), json!({}), "node1", Value::Null))
        .collect();
    let cluster = FakeCluster::new(single()).pods(pods);
    let pod = incoming("default", json!({}), Value::Null, json!(many));
    assert!(
        matches!(resolved(&cluster, &pod), Err(Unresolved::Invalid(why)) if why.contains("exceed"))
    );
}

#[test]
fn the_first_of_a_group_counts_pods_as_either_scheduler_reads_the_terms() {
    // A pod of the group runs in another namespace, which the term's
    // negative namespace selector excludes: kube-scheduler 1.36.3 counts
    // it anyway (kubernetes/kubernetes#141526), the fixed one does not.
    // Only affinity that both place is affinity the policy counts on.
    let mut t = term(vec![expr("app", "In", &["web"])], "zone");
    t["namespaceSelector"] =
        json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["other"]}]});
    let pod = || {
        incoming(
            "subteam1.team1",
            json!({"app": "web"}),
            json!([t.clone()]),
            Value::Null,
        )
    };
    let elsewhere = existing(
        "subteam1.team2",
        "w",
        json!({"app": "web"}),
        "node1",
        Value::Null,
    );
    let nodes = || {
        vec![
            node("node1", json!({"zone": "a"})),
            node("node2", json!({"zone": "b"})),
        ]
    };
    // team2's labels are {team: team2}: not "other", so both readings count
    // it; the pod may only join it in zone a.
    assert_eq!(judge(nodes(), vec![elsewhere], pod()), [ok(), no(A)]);
    // In a namespace labelled team=other, only the wider reading counts
    // it: no first-of-group exception, and no domain either.
    let cluster = FakeCluster::new(nodes())
        .pods(vec![existing(
            "other-ns",
            "w",
            json!({"app": "web"}),
            "node1",
            Value::Null,
        )])
        .namespaces(vec![
            json!({"metadata": {"name": "other-ns", "labels": {"team": "other"}}}),
            json!({"metadata": {"name": "subteam1.team1", "labels": {"team": "team1"}}}),
        ]);
    let check = resolved(&cluster, &pod()).unwrap();
    assert!(!check.first_of_group && check.affinity.is_empty());
}

#[test]
fn anti_affinity_counts_pods_as_the_wider_reading_of_the_terms() {
    // The pod in other-ns is excluded by the negative namespace selector,
    // but kube-scheduler 1.36.3 counts it (kubernetes/kubernetes#141526):
    // the node it runs on is kept out, as that scheduler would.
    let mut t = term(vec![expr("app", "In", &["web"])], "zone");
    t["namespaceSelector"] =
        json!({"matchExpressions": [{"key": "team", "operator": "NotIn", "values": ["other"]}]});
    let pod = incoming(
        "subteam1.team1",
        json!({"app": "api"}),
        Value::Null,
        json!([t]),
    );
    let nodes = vec![
        node("node1", json!({"zone": "a"})),
        node("node2", json!({"zone": "b"})),
    ];
    let cluster = FakeCluster::new(nodes.clone())
        .pods(vec![existing(
            "other-ns",
            "w",
            json!({"app": "web"}),
            "node1",
            Value::Null,
        )])
        .namespaces(vec![
            json!({"metadata": {"name": "other-ns", "labels": {"team": "other"}}}),
        ]);
    let check = resolved(&cluster, &pod).unwrap();
    assert_eq!(check.anti_affinity.get("zone").map(|v| v.len()), Some(1));
}
