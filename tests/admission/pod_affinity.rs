//! Inter-pod affinity through the whole decision: which pods read the
//! cluster's pods, and what a pod whose affinity no kata node can satisfy
//! is told.

use super::*;

/// Two kata workers in zones a and b, and a general node in zone c where
/// the database runs.
fn zoned() -> FakeCluster {
    let kata = |name: &str, zone: &str| {
        let mut n = worker(name);
        n["metadata"]["labels"]["topology.kubernetes.io/zone"] = json!(zone);
        n
    };
    let general = node(
        "general-1",
        json!({"kubernetes.io/hostname": "general-1", "topology.kubernetes.io/zone": "c"}),
        json!([]),
    );
    FakeCluster::new(vec![kata("worker-1", "a"), kata("worker-2", "b")])
        .unlisted(vec![general])
        .pods(vec![
            running("db-0", json!({"app": "db"}), "general-1"),
            running("web-0", json!({"app": "web"}), "worker-1"),
        ])
}

fn running(name: &str, labels: Value, node: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default", "labels": labels},
           "spec": {"nodeName": node, "containers": containers()}})
}

fn with_terms(kind: &str, app: &str, key: &str) -> Value {
    json!({"containers": containers(), "affinity": {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}]}}})
}

const ZONE: &str = "topology.kubernetes.io/zone";
const HOST: &str = "kubernetes.io/hostname";

#[test]
fn a_pod_that_must_run_next_to_pods_off_kata_is_left_alone() {
    let cluster = zoned();
    let d = decide_payload(
        &pod_request(with_terms("podAffinity", "db", ZONE)),
        &cluster,
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: \
         2 node(s) didn't match pod affinity rules"
    );
    // Next to a pod on a kata node, it gets Kata.
    let d = decide_payload(
        &pod_request(with_terms("podAffinity", "web", HOST)),
        &zoned(),
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn a_pod_kept_away_from_every_kata_domain_is_left_alone() {
    let cluster = zoned().pods(vec![
        running("web-0", json!({"app": "web"}), "worker-1"),
        running("web-1", json!({"app": "web"}), "worker-2"),
    ]);
    let d = decide_payload(
        &pod_request(with_terms("podAntiAffinity", "web", HOST)),
        &cluster,
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: \
         2 node(s) didn't match pod anti-affinity rules"
    );
    // One free domain is enough.
    let d = decide_payload(
        &pod_request(with_terms("podAntiAffinity", "web", HOST)),
        &zoned(),
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn an_existing_pods_anti_affinity_keeps_the_pod_out() {
    // Both workers run a pod that keeps app=api out of its zone.
    let guard = |name: &str, node: &str| {
        let mut p = running(name, json!({"app": "guard"}), node);
        p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "api"}}, "topologyKey": ZONE}]}});
        p
    };
    let cluster = zoned().pods(vec![guard("g-1", "worker-1"), guard("g-2", "worker-2")]);
    let mut spec = with_terms("podAffinity", "guard", ZONE);
    let object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "api"}}, "spec": spec.take()});
    let d = decide_payload(&request("Pod", "", "CREATE", object, json!({})), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: \
         2 node(s) didn't satisfy existing pods anti-affinity rules"
    );
}

#[test]
fn only_pods_with_required_terms_read_the_cluster_s_pods() {
    let listed = |cluster: &FakeCluster| cluster.queries().iter().any(|q| q == "List Pod");
    let plain = zoned();
    decide_payload(&pod_request(json!({"containers": containers()})), &plain);
    assert!(!listed(&plain));
    // Preferred terms are scores, not filters.
    let preferred = zoned();
    let spec = json!({"containers": containers(), "affinity": {"podAffinity": {
        "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm":
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": ZONE}}]}}});
    let d = decide_payload(&pod_request(spec), &preferred);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(!listed(&preferred));
    // A pod bound by spec.nodeName bypasses the scheduler's filters.
    let bound = zoned();
    let mut spec = with_terms("podAffinity", "db", ZONE);
    spec["nodeName"] = json!("worker-1");
    let d = decide_payload(&pod_request(spec), &bound);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(!listed(&bound));
    // Turned off, the pod is judged without it, as before.
    let off = zoned();
    let payload = request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
               "spec": with_terms("podAffinity", "db", ZONE)}),
        json!({"checkPodAffinity": false}),
    );
    assert_eq!(
        mutated_spec(&decide_payload(&payload, &off))["runtimeClassName"],
        "kata"
    );
    assert!(!listed(&off));
}

#[test]
fn the_pods_are_read_once_whatever_the_number_of_classes() {
    let cluster = zoned();
    let payload = request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
               "spec": with_terms("podAffinity", "db", ZONE)}),
        json!({"fallbackRuntimeClasses": ["kata-clh", "kata-fc"]}),
    );
    leave_text(&decide_payload(&payload, &cluster));
    let lists = cluster
        .queries()
        .iter()
        .filter(|q| *q == "List Pod")
        .count();
    assert_eq!(lists, 1);
}

#[test]
fn a_pod_list_policy_server_may_not_make_is_a_lookup_failure_with_the_grant() {
    let cluster = zoned().deny("list", "pods");
    let d = decide_payload(
        &pod_request(with_terms("podAffinity", "db", ZONE)),
        &cluster,
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: cannot list pods (forbidden: \
         system:serviceaccount:kubewarden:policy-server may not list pods; \
         set checkPodAffinity: false or grant policy-server list/watch on pods and namespaces)"
    );
    assert!(!cluster.queries().iter().any(|q| q == "List Pod"));
    let strict = request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
               "spec": with_terms("podAffinity", "db", ZONE)}),
        json!({"lookupFailure": "reject"}),
    );
    let failing = zoned().pods_answer(Err(LookupError {
        kind: LookupErrorKind::Forbidden,
        message: "pods is forbidden".into(),
    }));
    assert!(matches!(
        decide_payload(&strict, &failing),
        Seen::Reject { explanation, code: Some(503) }
            if explanation.contains("cannot list pods (forbidden: set checkPodAffinity: false")
    ));
}
