//! `annotateDecision`: every evaluated Pod CREATE the policy admits carries
//! its decision as an annotation; nothing else about the answer changes.

use super::*;
use kata_runtime_policy::annotation::{DECISION_ANNOTATION as KEY, MAX_VALUE_BYTES};

/// The same request decided without and with `annotateDecision: true` on
/// top of `settings`, each against a fresh cluster from `cluster`.
fn off_and_on(object: &Value, settings: &Value, cluster: impl Fn() -> FakeCluster) -> (Seen, Seen) {
    let mut on = settings.clone();
    on["annotateDecision"] = json!(true);
    let off = decide_payload(
        &request("Pod", "", "CREATE", object.clone(), settings.clone()),
        &cluster(),
    );
    let on = decide_payload(
        &request("Pod", "", "CREATE", object.clone(), on),
        &cluster(),
    );
    (off, on)
}

fn parsed(text: &str) -> Value {
    serde_json::from_str(text).unwrap()
}

/// The annotation `on` adds to the decision `off`, checking that it adds
/// nothing else: same verdict, explanation and warning; for a mutation the
/// same object plus the annotation; for an unchanged pod the request's
/// object plus the annotation. `None`: `on` is `off` exactly.
fn added_annotation(off: &Seen, on: &Seen, original: &Value) -> Option<String> {
    let with = |base: &Value, value: &Value| {
        let mut expected = base.clone();
        expected["metadata"]["annotations"][KEY] = value.clone();
        expected
    };
    match (off, on) {
        (
            Seen::Mutate {
                object: before,
                explanation: e1,
                warn: w1,
                note: n1,
            },
            Seen::Mutate {
                object: after,
                explanation: e2,
                warn: w2,
                note: n2,
            },
        ) => {
            assert_eq!((e1, w1, n1), (e2, w2, n2));
            let after = parsed(after);
            let value = after["metadata"]["annotations"][KEY].clone();
            assert_eq!(after, with(&parsed(before), &value));
            Some(value.as_str().expect("a string value").to_string())
        }
        (
            Seen::Unchanged {
                explanation: e1,
                warn: w1,
                object: None,
            },
            Seen::Unchanged {
                explanation: e2,
                warn: w2,
                object: Some(after),
            },
        ) => {
            assert_eq!((e1, w1), (e2, w2));
            let after = parsed(after);
            let value = after["metadata"]["annotations"][KEY].clone();
            assert_eq!(after, with(original, &value));
            Some(value.as_str().expect("a string value").to_string())
        }
        _ => {
            assert_eq!(off, on, "only the annotation may differ");
            None
        }
    }
}

fn pod(metadata: Value, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})
}

fn named() -> Value {
    json!({"name": "p", "namespace": "default"})
}

fn with_class(class: &str) -> Value {
    json!({"containers": containers(), "runtimeClassName": class})
}

/// The values the documentation quotes, and the decision around them.
#[test]
fn mutated_unchanged_and_named_classes() {
    let cases = [
        (
            pod(named(), json!({"containers": containers()})),
            "mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod",
        ),
        (
            pod(named(), master_pinned_spec()),
            "unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
        ),
        (
            pod(named(), with_class("runc")),
            "unchanged: pod already sets runtimeClassName \"runc\"",
        ),
        (
            pod(named(), with_class("kata")),
            "unchanged: pod already sets runtimeClassName \"kata\"",
        ),
        (
            pod(
                named(),
                json!({"containers": containers(), "hostNetwork": true}),
            ),
            "unchanged: the pod uses hostNetwork, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)",
        ),
        (
            json!({"metadata": {"name": "x"}}),
            "unchanged: the pod has no spec",
        ),
    ];
    for (object, want) in cases {
        let (off, on) = off_and_on(&object, &json!({}), seed_cluster);
        assert_eq!(
            added_annotation(&off, &on, &object).as_deref(),
            Some(want),
            "{object}"
        );
    }
    // The mutated pod has both members.
    let (_, on) = off_and_on(
        &pod(named(), json!({"containers": containers()})),
        &json!({}),
        seed_cluster,
    );
    assert_eq!(mutated_spec(&on)["runtimeClassName"], "kata");
    // The unchanged pod keeps its warning; its own class stays quiet.
    let (_, pinned) = off_and_on(
        &pod(named(), master_pinned_spec()),
        &json!({}),
        seed_cluster,
    );
    assert!(matches!(pinned, Seen::Unchanged { warn: true, .. }));
    let (_, kata) = off_and_on(&pod(named(), with_class("kata")), &json!({}), seed_cluster);
    assert!(matches!(kata, Seen::Unchanged { warn: false, .. }));
}

#[test]
fn a_partial_cluster_is_annotated_with_its_warning() {
    let handlers = |names: &[&str]| json!({"runtimeHandlers": names.iter().map(|n| json!({"name": n})).collect::<Vec<_>>()});
    let mut good = worker("kata-good");
    good["status"] = handlers(&["", "runc", "kata"]);
    let mut broken = worker("kata-broken");
    broken["status"] = handlers(&["", "runc"]);
    let object = pod(named(), json!({"containers": containers()}));
    let (off, on) = off_and_on(&object, &json!({}), || {
        FakeCluster::new(vec![broken.clone(), good.clone()])
    });
    assert_eq!(
        added_annotation(&off, &on, &object).unwrap(),
        "mutated: kata runtime assigned, but at least 1 kata node(s) that can take this pod do not report \
         runtime handler \"kata\" (kata-broken): if the scheduler picks one, the pod will not start"
    );
    assert!(matches!(on, Seen::Mutate { warn: true, .. }));
}

/// Refusals, requests that are not evaluated, mirror pods and
/// `runtimeClassName: ""` are answered exactly as without the setting.
#[test]
fn no_annotation_where_there_is_nothing_to_annotate() {
    let mirror =
        json!({"name": "etcd-master", "annotations": {"kubernetes.io/config.mirror": "x"}});
    let cases = [
        (
            pod(named(), master_pinned_spec()),
            json!({"noFeasibleNode": "reject"}),
        ),
        (
            pod(named(), with_class("runc")),
            json!({"allowedRuntimeClasses": []}),
        ),
        (
            pod(named(), with_class("runc")),
            json!({"restrictRuntimeClasses": true}),
        ),
        (
            pod(
                named(),
                json!({"containers": containers(), "hostNetwork": true}),
            ),
            json!({"incompatiblePod": "reject"}),
        ),
        (
            pod(
                mirror.clone(),
                json!({"containers": containers(), "hostNetwork": true, "nodeName": "master"}),
            ),
            json!({}),
        ),
        (
            pod(
                mirror.clone(),
                json!({"containers": containers(), "nodeName": "master"}),
            ),
            json!({}),
        ),
        (
            pod(mirror, with_class("runc")),
            json!({"allowedRuntimeClasses": []}),
        ),
        (pod(named(), with_class("")), json!({})),
        (
            pod(named(), with_class("")),
            json!({"restrictRuntimeClasses": true}),
        ),
    ];
    for (object, settings) in cases {
        let (off, on) = off_and_on(&object, &settings, seed_cluster);
        assert_eq!(off, on, "{object} {settings}");
        assert!(!matches!(
            on,
            Seen::Unchanged {
                object: Some(_),
                ..
            }
        ));
        if let Seen::Mutate { object: out, .. } = &on {
            assert_eq!(parsed(out)["metadata"]["annotations"].get(KEY), None);
        }
    }
    // Not a Pod CREATE: not evaluated, no object.
    for (kind, group, op) in [
        ("Deployment", "apps", "CREATE"),
        ("Pod", "", "UPDATE"),
        ("Pod", "", "DELETE"),
    ] {
        let d = decide_payload(
            &request(
                kind,
                group,
                op,
                pod(named(), json!({})),
                json!({"annotateDecision": true}),
            ),
            &seed_cluster(),
        );
        assert!(
            matches!(&d, Seen::Unchanged { warn: false, object: None, explanation } if explanation.starts_with("not evaluated")),
            "{d:?}"
        );
    }
}

/// A Deployment's pod, as the ReplicaSet controller creates it: no name
/// yet, an owner, the template hash label, no annotations.
#[test]
fn a_controller_made_pod_gets_the_annotation() {
    let metadata = json!({"generateName": "web-7d4b9c8f5-", "namespace": "default",
        "labels": {"app": "web", "pod-template-hash": "7d4b9c8f5"},
        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c8f5",
            "uid": "0b1c2d3e-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}]});
    for (spec, want) in [
        (
            json!({"containers": containers()}),
            "mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod",
        ),
        (
            master_pinned_spec(),
            "unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
        ),
    ] {
        let object = pod(metadata.clone(), spec);
        let (off, on) = off_and_on(&object, &json!({}), seed_cluster);
        assert_eq!(added_annotation(&off, &on, &object).as_deref(), Some(want));
    }
}

/// A user cannot preset the decision: a value already there is replaced;
/// the pod's other annotations stay.
#[test]
fn a_preset_decision_is_replaced() {
    let metadata = json!({"name": "p", "annotations": {KEY: "mutated: trust me", "team": "a"}});
    let object = pod(metadata, master_pinned_spec());
    let (off, on) = off_and_on(&object, &json!({}), seed_cluster);
    let Seen::Unchanged {
        object: Some(out), ..
    } = &on
    else {
        panic!("{on:?}")
    };
    assert_eq!(
        parsed(out)["metadata"]["annotations"],
        json!({KEY: "unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector",
               "team": "a"})
    );
    // Without the setting the policy touches nothing, the preset included.
    assert!(matches!(off, Seen::Unchanged { object: None, .. }));
}

/// Many findings: the value keeps the first whole ones and counts the rest.
#[test]
fn a_long_reason_keeps_whole_findings_and_counts_the_rest() {
    let containers: Vec<Value> = (0..8)
        .map(|i| {
            json!({"name": format!("agent-{i}"), "image": "i",
            "volumeMounts": [{"name": "docker", "mountPath": "/var/run/docker.sock"}]})
        })
        .collect();
    let spec = json!({"containers": containers,
        "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]});
    let object = pod(named(), spec);
    let (off, on) = off_and_on(&object, &json!({}), seed_cluster);
    let value = added_annotation(&off, &on, &object).unwrap();
    let findings: Vec<&str> = off
        .explanation()
        .strip_prefix(NOT_ASSIGNED)
        .unwrap()
        .split("; ")
        .collect();
    assert_eq!(findings.len(), 8, "{}", off.explanation());
    assert!(value.len() <= MAX_VALUE_BYTES, "{} bytes", value.len());
    let (kept, more) = value.rsplit_once("; and ").unwrap();
    let kept: Vec<&str> = kept
        .strip_prefix("unchanged: ")
        .unwrap()
        .split("; ")
        .collect();
    assert_eq!(kept, findings[..kept.len()]);
    assert_eq!(more, format!("{} more", findings.len() - kept.len()));
    assert!(kept.len() >= 2, "{value}");
}

/// The setting asks the cluster nothing more, in any case.
#[test]
fn the_annotation_asks_the_cluster_nothing() {
    for object in [
        pod(named(), json!({"containers": containers()})),
        pod(named(), master_pinned_spec()),
        pod(named(), with_class("runc")),
    ] {
        let ask = |settings: Value| {
            let cluster = seed_cluster();
            decide_payload(
                &request("Pod", "", "CREATE", object.clone(), settings),
                &cluster,
            );
            cluster.take_queries()
        };
        assert_eq!(ask(json!({})), ask(json!({"annotateDecision": true})));
    }
}

/// `annotateDecision: false` is no setting at all, byte for byte.
#[test]
fn false_is_the_answer_of_no_setting() {
    let mirror = json!({"name": "m", "annotations": {"kubernetes.io/config.mirror": "x"}});
    for object in [
        pod(named(), json!({"containers": containers()})),
        pod(named(), master_pinned_spec()),
        pod(named(), with_class("runc")),
        pod(named(), with_class("")),
        pod(mirror, json!({"containers": containers()})),
        json!({"metadata": {"name": "x"}}),
    ] {
        for settings in [json!({}), json!({"noFeasibleNode": "reject"})] {
            let mut off = settings.clone();
            off["annotateDecision"] = json!(false);
            let render = |s: Value| {
                validate(
                    &request("Pod", "", "CREATE", object.clone(), s),
                    &seed_cluster(),
                )
            };
            assert_eq!(render(settings.clone()), render(off), "{object} {settings}");
        }
    }
}

/// The default is on: settings that say nothing about `annotateDecision`
/// (the required settings alone), or `null`, annotate as `true` does.
#[test]
fn the_decision_is_annotated_by_default() {
    let object = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": containers()}});
    let minimal = json!({"runtimeClassName": "kata",
        "policyServerServiceAccount": "system:serviceaccount:kubewarden:policy-server"});
    let decide = |settings: Value| {
        decide_payload(
            &raw_request("Pod", "", "CREATE", object.clone(), settings),
            &seed_cluster(),
        )
    };
    let mut on = minimal.clone();
    on["annotateDecision"] = json!(true);
    let annotated = decide(on);
    assert!(
        matches!(&annotated, Seen::Mutate { object, .. }
            if parsed(object)["metadata"]["annotations"][KEY]
                == "mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod"),
        "{annotated:?}"
    );
    let mut null = minimal.clone();
    null["annotateDecision"] = Value::Null;
    for settings in [minimal.clone(), null] {
        assert_eq!(decide(settings.clone()), annotated, "{settings}");
    }
    let mut off = minimal;
    off["annotateDecision"] = json!(false);
    assert_ne!(decide(off), annotated);
}
