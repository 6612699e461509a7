//! `logDecisions`: one line per evaluated Pod CREATE, through the host.

use super::*;

fn logged(payload: &[u8], cluster: &FakeCluster) -> Vec<[String; 4]> {
    decide_payload(payload, cluster);
    cluster.take_logged()
}

#[test]
fn each_evaluated_pod_is_one_line_with_its_decision() {
    let cluster = FakeCluster::new(vec![worker("w1")]);
    let on = json!({"logDecisions": true});
    let plain = with_settings(json!({"containers": containers()}), on.clone());
    assert_eq!(
        logged(&plain, &cluster),
        [[
            "default/web-0: mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod",
            "default",
            "web-0",
            "mutated"
        ]
        .map(String::from)]
    );
    let pinned = with_settings(master_pinned_spec(), on.clone());
    let line = &logged(&pinned, &cluster)[0];
    assert_eq!(line[3], "unchanged");
    assert!(
        line[0].starts_with("default/web-0: unchanged: 0/1 kata nodes can run this pod"),
        "{line:?}"
    );
    // Refused too: the line says so.
    let strict = json!({"logDecisions": true, "noFeasibleNode": "reject"});
    let refused = logged(&with_settings(master_pinned_spec(), strict), &cluster);
    assert_eq!(refused[0][3], "rejected");
}

#[test]
fn off_by_default_and_never_for_what_is_not_evaluated() {
    let cluster = FakeCluster::new(vec![worker("w1")]);
    let plain = with_settings(json!({"containers": containers()}), json!({}));
    assert!(logged(&plain, &cluster).is_empty());
    let deployment = request(
        "Deployment",
        "apps",
        "CREATE",
        json!({"metadata": {"name": "d"}}),
        json!({"logDecisions": true}),
    );
    assert!(logged(&deployment, &cluster).is_empty());
}

#[test]
fn a_pod_named_by_the_api_server_is_logged_by_its_prefix() {
    let cluster = FakeCluster::new(vec![worker("w1")]);
    let payload = request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "web-7d9f8-", "namespace": "default"},
            "spec": {"containers": containers()}}),
        json!({"logDecisions": true}),
    );
    assert_eq!(logged(&payload, &cluster)[0][2], "web-7d9f8-*");
}
