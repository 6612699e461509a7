//! Table-driven tests of whole admissions, through the public API and the
//! fake [`Cluster`].

use kata_runtime_policy::admission::{review, validate};
use kata_runtime_policy::cluster::{Cluster, FakeCluster, LookupError, LookupErrorKind, NodeMasks};
use kata_runtime_policy::decision::Decision;
use kata_runtime_policy::decision::explain::NOT_ASSIGNED;
use kata_runtime_policy::review::Review;
use serde_json::{Value, json};

/// An admission as a user sees it: the verdict, the object admitted, the
/// explanation and whether it warns, the note, the refusal's code.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    Mutate {
        object: String,
        explanation: String,
        warn: bool,
        note: Option<String>,
    },
    Unchanged {
        explanation: String,
        warn: bool,
        object: Option<String>,
    },
    Reject {
        explanation: String,
        code: Option<u16>,
    },
}

impl Seen {
    fn of(admission: Review) -> Seen {
        let d = &admission.decision;
        let (explanation, warn) = (d.explanation(), d.warns());
        match d {
            Decision::Mutate { .. } => Seen::Mutate {
                object: admission.object.unwrap_or_default(),
                explanation,
                warn,
                note: d.note(),
            },
            Decision::Unchanged(_) => Seen::Unchanged {
                explanation,
                warn,
                object: admission.object,
            },
            Decision::Reject(_) => Seen::Reject {
                explanation,
                code: d.code(),
            },
        }
    }
}

impl Seen {
    fn explanation(&self) -> &str {
        match self {
            Seen::Mutate { explanation, .. }
            | Seen::Unchanged { explanation, .. }
            | Seen::Reject { explanation, .. } => explanation,
        }
    }
}

/// The admission of a raw payload, as the user sees it.
fn decide_payload(payload: &[u8], cluster: &impl Cluster) -> Seen {
    Seen::of(review(payload, cluster))
}

fn kata_class(extra: Value) -> Value {
    let mut rc = json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata"}, "handler": "kata"});
    rc.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    rc
}

fn node(name: &str, labels: Value, taints: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
}

fn worker(name: &str) -> Value {
    node(
        name,
        json!({"katacontainers.io/kata-runtime": "true", "kubernetes.io/hostname": name}),
        json!([]),
    )
}

/// The seed cluster: two kata workers. The master has no kata label, so the
/// host's label selector never returns it.
fn seed_cluster() -> FakeCluster {
    FakeCluster::new(vec![worker("worker-1"), worker("worker-2")])
}

fn master() -> Value {
    node(
        "master",
        json!({"node-role.kubernetes.io/master": ""}),
        json!([{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]),
    )
}

fn pod_request(spec: Value) -> Vec<u8> {
    request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}),
        json!({}),
    )
}

/// `settings` with what the tests assume where they say nothing: the
/// required settings as the fake clusters and recorded sessions have them
/// (the class `kata`, kubewarden-defaults' PolicyServer), and
/// `annotateDecision: false`, so that an object shows the class alone. A
/// test of the annotation, or of a missing setting, says so (`null` is
/// kept: it reads as missing).
fn test_settings(mut settings: Value) -> Value {
    if let Some(map) = settings.as_object_mut() {
        for (key, value) in [
            ("runtimeClassName", json!("kata")),
            (
                "policyServerServiceAccount",
                json!("system:serviceaccount:kubewarden:policy-server"),
            ),
            ("annotateDecision", json!(false)),
        ] {
            map.entry(key).or_insert(value);
        }
    }
    settings
}

/// A payload with `settings` as [`test_settings`] completes them.
fn request(kind: &str, group: &str, op: &str, object: Value, settings: Value) -> Vec<u8> {
    raw_request(kind, group, op, object, test_settings(settings))
}

/// A payload with `settings` exactly as given.
fn raw_request(kind: &str, group: &str, op: &str, object: Value, settings: Value) -> Vec<u8> {
    json!({"request": {"uid": "uid-1", "kind": {"group": group, "version": "v1", "kind": kind},
        "resource": {"group": group, "version": "v1", "resource": "pods"}, "operation": op,
        "namespace": "default", "name": "p", "userInfo": {"username": "alice"}, "object": object},
        "settings": settings})
    .to_string()
    .into_bytes()
}

fn containers() -> Value {
    json!([{"name": "nginx", "image": "nginx", "command": ["sleep", "100000"]}])
}

fn master_pinned_spec() -> Value {
    json!({"containers": containers(),
           "nodeSelector": {"node-role.kubernetes.io/master": ""},
           "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"}]})
}

fn mutated_spec(d: &Seen) -> Value {
    match d {
        Seen::Mutate { object, .. } => {
            serde_json::from_str::<Value>(object).unwrap()["spec"].clone()
        }
        other => panic!("expected a mutation, got {other:?}"),
    }
}

/// The explanation of a mutation that warns (some nodes cannot start the pod).
fn warned_mutation(d: &Seen) -> &str {
    match d {
        Seen::Mutate {
            explanation,
            warn: true,
            ..
        } => explanation,
        other => panic!("expected a mutation with a warning, got {other:?}"),
    }
}

fn leave_text(d: &Seen) -> &str {
    match d {
        Seen::Unchanged {
            explanation,
            warn: true,
            object: None,
        } => explanation,
        other => panic!("expected an unchanged pod with a warning, got {other:?}"),
    }
}

#[test]
fn the_case_that_started_it() {
    let cluster = seed_cluster();
    let pinned = decide_payload(&pod_request(master_pinned_spec()), &cluster);
    assert_eq!(
        leave_text(&pinned),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
    );
    let plain = decide_payload(&pod_request(json!({"containers": containers()})), &cluster);
    assert_eq!(mutated_spec(&plain)["runtimeClassName"], "kata");
}

#[test]
fn a_kata_master_is_reported_with_its_taint() {
    // If the selector matched the master too, the plain pod still fits a worker
    // and the pinned pod fits the master.
    let mut master = master();
    master["metadata"]["labels"]["katacontainers.io/kata-runtime"] = json!("true");
    let cluster = FakeCluster::new(vec![master, worker("worker-1"), worker("worker-2")]);
    assert!(matches!(
        decide_payload(&pod_request(master_pinned_spec()), &cluster),
        Seen::Mutate { .. }
    ));
    let spec =
        json!({"containers": containers(), "nodeSelector": {"node-role.kubernetes.io/master": ""}});
    assert_eq!(
        leave_text(&decide_payload(&pod_request(spec), &cluster)),
        "kata runtime not assigned: 0/3 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) had untolerated taint {node-role.kubernetes.io/master: }"
    );
}

#[test]
fn mutation_adds_only_runtime_class_name() {
    let object = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {"containers": containers(), "someFutureField": {"nested": [1, {"x": null}]}},
        "status": {"phase": "Pending"}, "x-unknown-top": true});
    let d = decide_payload(
        &request("Pod", "", "CREATE", object.clone(), json!({})),
        &seed_cluster(),
    );
    let Seen::Mutate { object: out, .. } = d else {
        panic!("{d:?}")
    };
    let mut expected = object;
    expected["spec"]["runtimeClassName"] = json!("kata");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap(), expected);
}

#[test]
fn skips_are_decided_before_asking_the_cluster() {
    let cases: Vec<(Vec<u8>, &str, bool)> = vec![
        (
            request(
                "Deployment",
                "apps",
                "CREATE",
                json!({"spec": {}}),
                json!({}),
            ),
            "not evaluated",
            false,
        ),
        (
            request("Pod", "", "UPDATE", json!({"spec": {}}), json!({})),
            "not evaluated",
            false,
        ),
        (
            pod_request(json!({"containers": containers(), "runtimeClassName": "gvisor"})),
            "already sets runtimeClassName \"gvisor\"",
            true,
        ),
        (
            pod_request(json!({"containers": containers(), "runtimeClassName": "kata"})),
            "already sets runtimeClassName \"kata\"",
            false,
        ),
        (
            pod_request(json!({"containers": containers(), "hostNetwork": true})),
            "uses hostNetwork",
            true,
        ),
        (
            pod_request(json!({"containers": containers(), "hostPID": true, "hostIPC": true})),
            "uses hostPID, hostIPC",
            true,
        ),
        (
            request(
                "Pod",
                "",
                "CREATE",
                json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "abc"}}, "spec": {"nodeName": "master"}}),
                json!({}),
            ),
            "mirror pod",
            true,
        ),
        (
            request(
                "Pod",
                "",
                "CREATE",
                json!({"metadata": {"name": "x"}}),
                json!({}),
            ),
            "no spec",
            true,
        ),
    ];
    for (payload, want, want_warn) in cases {
        let cluster = seed_cluster();
        match decide_payload(&payload, &cluster) {
            Seen::Unchanged {
                explanation,
                warn,
                object: None,
            } => {
                assert!(explanation.contains(want), "{explanation:?} lacks {want:?}");
                assert_eq!(warn, want_warn, "{explanation}");
            }
            other => panic!("{want}: {other:?}"),
        }
        assert!(cluster.queries().is_empty(), "{want}: asked the cluster");
    }
}

#[test]
fn host_namespaces_can_be_allowed() {
    let payload = request(
        "Pod",
        "",
        "CREATE",
        json!({"spec": {"containers": containers(), "hostNetwork": true}}),
        json!({"skipHostNamespaces": false}),
    );
    assert!(matches!(
        decide_payload(&payload, &seed_cluster()),
        Seen::Mutate { .. }
    ));
}

/// `allowedRuntimeClasses`: which classes a pod may name itself. No host
/// call either way.
#[test]
fn allowed_runtime_classes() {
    let decide_with = |class: &str, settings: Value, metadata: Value| {
        let cluster = seed_cluster();
        let d = decide_payload(
            &request(
                "Pod",
                "",
                "CREATE",
                json!({"metadata": metadata, "spec": {"containers": containers(), "runtimeClassName": class}}),
                settings,
            ),
            &cluster,
        );
        assert!(cluster.queries().is_empty(), "{class}: asked the cluster");
        d
    };
    let rejected = |d: &Seen| match d {
        Seen::Reject { explanation, .. } => explanation.clone(),
        other => panic!("expected a rejection, got {other:?}"),
    };
    let none = json!({});
    // Absent or null: any class, as before.
    for settings in [json!({}), json!({"allowedRuntimeClasses": null})] {
        assert!(leave_text(&decide_with("runc", settings, none.clone())).contains("already sets"));
    }
    let list = json!({"allowedRuntimeClasses": ["gvisor"]});
    assert_eq!(
        rejected(&decide_with("runc", list.clone(), none.clone())),
        "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata; allowedRuntimeClasses: gvisor)"
    );
    assert!(
        leave_text(&decide_with("gvisor", list.clone(), none.clone())).contains("already sets")
    );
    // The policy's own class is always allowed, without a warning.
    assert!(matches!(
        decide_with("kata", list.clone(), none.clone()),
        Seen::Unchanged { warn: false, .. }
    ));
    // []: only the policy's own class.
    let empty = json!({"allowedRuntimeClasses": []});
    assert_eq!(
        rejected(&decide_with("gvisor", empty.clone(), none.clone())),
        "runtimeClassName \"gvisor\" is not allowed (allowed: the configured class kata)"
    );
    // The own class is named once, as configured, whatever the list says.
    let own =
        json!({"runtimeClassName": "kata-qemu", "allowedRuntimeClasses": ["gvisor", "kata-qemu"]});
    assert_eq!(
        rejected(&decide_with("runc", own, none.clone())),
        "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata-qemu; allowedRuntimeClasses: gvisor)"
    );
    // A list of configured classes only: nothing is said to come from it.
    let configured_only =
        json!({"runtimeClassName": "kata-qemu", "allowedRuntimeClasses": ["kata-qemu"]});
    assert_eq!(
        rejected(&decide_with("runc", configured_only, none.clone())),
        "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata-qemu)"
    );
    // Mirror pods (the kubelet's static pods) are not refused.
    let mirror = json!({"annotations": {"kubernetes.io/config.mirror": "x"}});
    assert!(leave_text(&decide_with("runc", empty.clone(), mirror)).contains("already sets"));
    // "" is refused by the API server's validation: left for it to refuse,
    // never given a class, never refused by the policy.
    for settings in [json!({}), empty] {
        let d = decide_with("", settings, none.clone());
        assert!(
            leave_text(&d).starts_with("runtimeClassName is \"\", which the API server refuses"),
            "{d:?}"
        );
    }
}

/// `restrictRuntimeClasses` through the decision: true restricts (to
/// `runtimeClassName` alone without a list), false with no list does not.
#[test]
fn restrict_runtime_classes() {
    let decide_with = |class: &str, settings: Value| {
        decide_payload(
            &with_settings(
                json!({"containers": containers(), "runtimeClassName": class}),
                settings,
            ),
            &seed_cluster(),
        )
    };
    let refused = |class: &str, settings: Value| match decide_with(class, settings) {
        Seen::Reject { explanation, code } => {
            assert_eq!(code, Some(403));
            explanation
        }
        other => panic!("expected a rejection, got {other:?}"),
    };
    for on in [
        json!({"restrictRuntimeClasses": true}),
        json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": null}),
        json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": []}),
    ] {
        assert_eq!(
            refused("runc", on.clone()),
            "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata)"
        );
        assert!(matches!(
            decide_with("kata", on),
            Seen::Unchanged { warn: false, .. }
        ));
    }
    let listed = json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": ["gvisor"]});
    assert_eq!(
        refused("runc", listed.clone()),
        "runtimeClassName \"runc\" is not allowed (allowed: the configured class kata; allowedRuntimeClasses: gvisor)"
    );
    assert!(leave_text(&decide_with("gvisor", listed)).contains("already sets"));
    for off in [
        json!({"restrictRuntimeClasses": false}),
        json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": []}),
        json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": null}),
    ] {
        assert_eq!(
            leave_text(&decide_with("runc", off)),
            "pod already sets runtimeClassName \"runc\"; left unchanged"
        );
    }
    // The contradiction never reaches a decision: the settings are refused.
    let d = decide_with(
        "runc",
        json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": ["gvisor"]}),
    );
    assert_eq!(
        d,
        Seen::Reject {
            explanation: "invalid policy settings: restrictRuntimeClasses: false contradicts \
                allowedRuntimeClasses [\"gvisor\"]: set restrictRuntimeClasses: true, or remove the list"
                .into(),
            code: Some(400),
        }
    );
}

/// A pod Kata cannot run is left unchanged before any host call, whatever
/// `noFeasibleNode` says, on a cluster where a kata node would fit it.
#[test]
fn pods_kata_cannot_run_are_left_alone_without_asking_the_cluster() {
    let agent = json!({
        "containers": [{"name": "agent", "image": "datadog/agent",
            "volumeMounts": [{"name": "docker", "mountPath": "/var/run/docker.sock"}]}],
        "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]
    });
    let want = "kata runtime not assigned: container \"agent\" mounts host socket /var/run/docker.sock \
                (hostPath volume \"docker\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)";
    for settings in [
        json!({}),
        json!({"noFeasibleNode": "reject", "lookupFailure": "reject"}),
    ] {
        let cluster = seed_cluster();
        let d = decide_payload(
            &request("Pod", "", "CREATE", json!({"spec": agent}), settings),
            &cluster,
        );
        assert_eq!(leave_text(&d), want);
        assert!(cluster.queries().is_empty(), "asked the cluster");
    }
    // With the feature off, the same pod is judged on scheduling and gets Kata.
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": agent}),
            json!({"skipPodsUsing": ["hostNamespaces", "privileged"]}),
        ),
        &seed_cluster(),
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    // A device-plugin GPU pod stays off Kata even where kata nodes list GPUs.
    let mut gpus = cpu_node();
    gpus["nvidia.com/gpu"] = json!("4");
    let cluster = FakeCluster::new(vec![sized_worker("g1", gpus)]);
    let spec = json!({"containers": [{"name": "cuda", "image": "cuda",
        "resources": {"limits": {"nvidia.com/gpu": "1"}}}]});
    let d = decide_payload(&pod_request(spec.clone()), &cluster);
    assert!(
        leave_text(&d)
            .starts_with("kata runtime not assigned: container \"cuda\" asks for nvidia.com/gpu"),
        "{d:?}"
    );
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": spec}),
            json!({"hostDeviceResources": []}),
        ),
        &cluster,
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn dra_pods_stay_off_kata_without_asking_the_cluster() {
    let spec = json!({
        "containers": [{"name": "cuda", "image": "cuda", "resources": {"claims": [{"name": "gpu"}]}}],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    });
    let want = "kata runtime not assigned: claim \"gpu\" (ResourceClaimTemplate \"one-gpu\"), used by container \
                \"cuda\", asks for DRA-allocated devices, which Kata does not pass into its VM \
                (skipPodsUsing: dynamicResources)";
    for settings in [json!({}), json!({"noFeasibleNode": "reject"})] {
        let cluster = seed_cluster();
        let d = decide_payload(&with_settings(spec.clone(), settings), &cluster);
        assert_eq!(leave_text(&d), want);
        assert!(cluster.queries().is_empty(), "asked the cluster");
    }
    // Removed (a Kata that takes DRA devices): judged on scheduling as before.
    let cluster = seed_cluster();
    let d = decide_payload(
        &with_settings(
            spec,
            json!({"skipPodsUsing": ["hostNamespaces", "userNamespaces"]}),
        ),
        &cluster,
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn a_plain_privileged_builder_gets_kata() {
    // Docker-in-Docker: root inside the VM rather than on the node.
    let dind = json!({"containers": [{"name": "dind", "image": "docker:dind",
        "securityContext": {"privileged": true}}]});
    let d = decide_payload(&pod_request(dind.clone()), &seed_cluster());
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    // Opt-in for a Kata configured with privileged_without_host_devices = false.
    let opt_in = decide_payload(
        &with_settings(dind, json!({"skipPodsUsing": ["privileged"]})),
        &seed_cluster(),
    );
    assert!(leave_text(&opt_in).ends_with("(skipPodsUsing: privileged)"));
}

#[test]
fn every_finding_is_in_the_reason_the_first_survives_the_warning_cut() {
    let spec = json!({
        "hostUsers": false,
        "containers": [
            {"name": "a", "securityContext": {"privileged": true},
             "volumeMounts": [{"name": "sock", "mountPath": "/s"}, {"name": "dev", "mountPath": "/dev"}],
             "resources": {"limits": {"amd.com/gpu": "1"}, "claims": [{"name": "nic"}]}}
        ],
        "volumes": [{"name": "sock", "hostPath": {"path": "/run/containerd/containerd.sock"}},
                    {"name": "dev", "hostPath": {"path": "/dev"}}],
        "resourceClaims": [{"name": "nic", "resourceClaimName": "shared-nic"}]
    });
    let d = decide_payload(&pod_request(spec), &seed_cluster());
    let reason = leave_text(&d);
    let features: Vec<&str> = reason
        .split("(skipPodsUsing: ")
        .skip(1)
        .map(|rest| rest.split(')').next().unwrap())
        .collect();
    assert_eq!(
        features,
        [
            "userNamespaces",
            "hostSockets",
            "hostDevices",
            "deviceResources",
            "dynamicResources"
        ]
    );
    let warning = kata_runtime_policy::response::warning(reason);
    assert!(warning.len() <= kata_runtime_policy::response::MAX_WARNING_BYTES);
    assert!(
        warning.contains("(skipPodsUsing: userNamespaces)"),
        "{warning}"
    );
}

#[test]
fn one_stable_query_per_settings() {
    let cluster = seed_cluster();
    for spec in [
        json!({"containers": containers()}),
        master_pinned_spec(),
        json!({"nodeName": "worker-2", "containers": containers()}),
    ] {
        decide_payload(&pod_request(spec), &cluster);
    }
    let queries = cluster.queries();
    let node_queries: Vec<_> = queries.iter().filter(|q| q.starts_with("Nodes")).collect();
    // The pod bound by nodeName reads its node by name instead.
    assert_eq!(node_queries.len(), 2);
    assert!(
        queries.contains(&"Node worker-2".to_string()),
        "{queries:?}"
    );
    assert!(
        node_queries
            .iter()
            .all(|q| *q == "Nodes Some(\"katacontainers.io/kata-runtime=true\")"),
        "{node_queries:?}"
    );
    let everything = FakeCluster::new(vec![worker("w")]);
    decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": {}}),
            json!({"kataNodeSelector": ""}),
        ),
        &everything,
    );
    assert_eq!(everything.queries().last().unwrap(), "Nodes None");
}

#[test]
fn missing_runtime_class_follows_no_feasible_node() {
    let cluster = seed_cluster().class(None);
    let d = decide_payload(&pod_request(json!({"containers": containers()})), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: RuntimeClass \"kata\" does not exist"
    );
    assert_eq!(cluster.queries().len(), 1, "no node list needed");
    let strict = request(
        "Pod",
        "",
        "CREATE",
        json!({"spec": {}}),
        json!({"noFeasibleNode": "reject"}),
    );
    assert!(matches!(
        decide_payload(&strict, &seed_cluster().class(None)),
        Seen::Reject {
            code: Some(412),
            ..
        }
    ));
}

#[test]
fn runtime_class_scheduling_is_merged_before_filtering() {
    let class = kata_class(json!({"scheduling": {
        "nodeSelector": {"katacontainers.io/kata-runtime": "true"},
        "tolerations": [{"key": "kata-only", "operator": "Exists", "effect": "NoSchedule"}]}}));
    let tainted = node(
        "k1",
        json!({"katacontainers.io/kata-runtime": "true"}),
        json!([{"key": "kata-only", "effect": "NoSchedule"}]),
    );
    // Without the class toleration the pod could not run on k1.
    let cluster = FakeCluster::new(vec![tainted.clone()]).class(Some(class.clone()));
    assert!(matches!(
        decide_payload(&pod_request(json!({"containers": containers()})), &cluster),
        Seen::Mutate { .. }
    ));
    let without = FakeCluster::new(vec![tainted]);
    assert!(
        leave_text(&decide_payload(
            &pod_request(json!({"containers": containers()})),
            &without
        ))
        .contains("untolerated taint {kata-only: }")
    );
    // The class nodeSelector excludes nodes that the host selector returned.
    let unlabelled = FakeCluster::new(vec![node("u", json!({"other": "x"}), json!([]))])
        .class(Some(class.clone()));
    assert!(
        leave_text(&decide_payload(
            &pod_request(json!({"containers": containers()})),
            &unlabelled
        ))
        .contains("didn't match Pod's node affinity/selector")
    );
    // A conflicting nodeSelector: the plugin would refuse the pod, so no mutation.
    let conflicting = pod_request(
        json!({"containers": containers(), "nodeSelector": {"katacontainers.io/kata-runtime": "false"}}),
    );
    let d = decide_payload(
        &conflicting,
        &FakeCluster::new(vec![worker("w")]).class(Some(class)),
    );
    assert!(
        leave_text(&d).contains("requires nodeSelector katacontainers.io/kata-runtime=true"),
        "{d:?}"
    );
}

#[test]
fn no_kata_nodes() {
    let d = decide_payload(
        &pod_request(json!({"containers": containers()})),
        &FakeCluster::new(vec![]),
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: no node matches kataNodeSelector \"katacontainers.io/kata-runtime=true\""
    );
}

#[test]
fn lookup_failures_follow_lookup_failure() {
    let forbidden = LookupError {
        kind: LookupErrorKind::Forbidden,
        message: "nodes is forbidden".into(),
    };
    let cluster = seed_cluster().list_error(forbidden.clone());
    let d = decide_payload(&pod_request(json!({"containers": containers()})), &cluster);
    let text = leave_text(&d);
    assert!(
        text.starts_with(
            "kata runtime not assigned: cannot list kata nodes (forbidden: grant policy-server get/list/watch on nodes"
        ) && text.ends_with(": nodes is forbidden"),
        "{text}"
    );
    assert!(
        text.contains("get/list/watch on nodes"),
        "RBAC hint: {text}"
    );

    let strict = request(
        "Pod",
        "",
        "CREATE",
        json!({"spec": {}}),
        json!({"lookupFailure": "reject"}),
    );
    let cluster = seed_cluster().class_error(LookupError {
        kind: LookupErrorKind::Failed,
        message: "timeout".into(),
    });
    match decide_payload(&strict, &cluster) {
        Seen::Reject {
            explanation,
            code: Some(503),
        } => {
            assert_eq!(
                explanation,
                "kata runtime required (lookupFailure: reject), and not assigned: \
                 cannot read RuntimeClass \"kata\": timeout"
            )
        }
        other => panic!("{other:?}"),
    }
    // Malformed answers are lookup failures too, not infeasibility.
    for bad in [&b"not json"[..], b"{\"items\":[{}]}"] {
        let cluster = seed_cluster().list_bytes(bad.to_vec());
        let d = decide_payload(&strict, &cluster);
        assert!(
            matches!(&d, Seen::Reject { explanation, .. } if explanation.contains("not a valid NodeList")),
            "{d:?}"
        );
    }
    let wrong_kind = seed_cluster().class(Some(
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "kata"}}),
    ));
    assert!(matches!(
        decide_payload(&strict, &wrong_kind),
        Seen::Reject { .. }
    ));
    // Lenient settings leave the pod alone instead.
    let lenient = pod_request(json!({}));
    let wrong_kind = seed_cluster().class(Some(json!({"kind": "Node"})));
    assert!(
        leave_text(&decide_payload(&lenient, &wrong_kind))
            .contains("not a valid node.k8s.io/v1 RuntimeClass")
    );
}

#[test]
fn no_feasible_node_reject_refuses_with_the_same_explanation() {
    let payload = request(
        "Pod",
        "",
        "CREATE",
        json!({"metadata": {"name": "p"}, "spec": master_pinned_spec()}),
        json!({"noFeasibleNode": "reject"}),
    );
    match decide_payload(&payload, &seed_cluster()) {
        Seen::Reject {
            explanation,
            code: Some(412),
        } => assert!(explanation.contains("0/2 kata nodes can run this pod")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn daemonset_pods_are_pinned_by_match_fields() {
    let pinned_to = |name: &str| {
        json!({"containers": containers(), "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [name]}]}]}}}})
    };
    assert!(matches!(
        decide_payload(&pod_request(pinned_to("worker-2")), &seed_cluster()),
        Seen::Mutate { .. }
    ));
    let cluster = seed_cluster().unlisted(vec![master()]);
    assert_eq!(
        leave_text(&decide_payload(&pod_request(pinned_to("master")), &cluster)),
        "kata runtime not assigned: the pod can only run on node \"master\" (required node affinity on metadata.name): \
         \"master\" is not a kata node (it does not match kataNodeSelector \"katacontainers.io/kata-runtime=true\")"
    );
    assert_eq!(
        leave_text(&decide_payload(&pod_request(pinned_to("gone")), &cluster)),
        "kata runtime not assigned: the pod can only run on node \"gone\" (required node affinity on metadata.name): \
         \"gone\" does not exist"
    );
    // Read by name: no access question, no list.
    assert_eq!(
        cluster.queries(),
        [
            "RuntimeClass kata",
            "Node master",
            "RuntimeClass kata",
            "Node gone"
        ]
    );
}

#[test]
fn node_name_pods_are_judged_on_their_node_only() {
    let bound = |name: &str| pod_request(json!({"containers": containers(), "nodeName": name}));
    assert!(matches!(
        decide_payload(&bound("worker-1"), &seed_cluster()),
        Seen::Mutate { .. }
    ));
    let cluster = seed_cluster().unlisted(vec![master()]);
    assert_eq!(
        leave_text(&decide_payload(&bound("master"), &cluster)),
        "kata runtime not assigned: the pod is bound to node \"master\" (spec.nodeName): \
         \"master\" is not a kata node (it does not match kataNodeSelector \"katacontainers.io/kata-runtime=true\")"
    );
    // An answer for another node says nothing about the one named.
    let mixed_up = seed_cluster().read("worker-1", Ok(Some(worker("worker-2"))));
    assert_eq!(
        leave_text(&decide_payload(&bound("worker-1"), &mixed_up)),
        "kata runtime not assigned: the pod is bound to node \"worker-1\" (spec.nodeName): \
         \"worker-1\" was answered with node \"worker-2\""
    );
    // Bound to a kata node that fails for another reason: the scheduler-style diagnosis.
    let wrong_zone = pod_request(
        json!({"containers": containers(), "nodeName": "worker-1", "nodeSelector": {"zone": "z"}}),
    );
    assert_eq!(
        leave_text(&decide_payload(&wrong_zone, &seed_cluster())),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 node(s) didn't match Pod's node affinity/selector"
    );
    // A cordoned kata node with a NoSchedule taint still admits a bound pod.
    let mut cordoned = worker("worker-1");
    cordoned["spec"] =
        json!({"unschedulable": true, "taints": [{"key": "x", "effect": "NoSchedule"}]});
    let cluster = FakeCluster::new(vec![cordoned.clone()]);
    assert!(matches!(
        decide_payload(&bound("worker-1"), &cluster),
        Seen::Mutate { .. }
    ));
    // ... but the scheduler would not place an unbound pod there.
    assert!(
        leave_text(&decide_payload(
            &pod_request(json!({"containers": containers()})),
            &cluster
        ))
        .contains("1 node(s) were unschedulable")
    );
}

#[test]
fn the_mutation_explanation_names_no_node() {
    let reversed = seed_cluster().list_bytes(
        json!({"items": [worker("worker-2"), worker("worker-1")]})
            .to_string()
            .into_bytes(),
    );
    let plain = pod_request(json!({"containers": containers()}));
    let a = decide_payload(&plain, &seed_cluster());
    assert_eq!(a, decide_payload(&plain, &reversed));
    assert_eq!(
        a.explanation(),
        "runtimeClassName \"kata\" assigned: a kata node can run this pod"
    );
}

#[test]
fn the_decision_does_not_depend_on_node_order() {
    let nodes = vec![
        master(),
        node(
            "a",
            json!({"zone": "x"}),
            json!([{"key": "gpu", "value": "1", "effect": "NoExecute"}]),
        ),
        json!({"metadata": {"name": "c", "labels": {}}, "spec": {"unschedulable": true}}),
        node("b", json!({"zone": "y"}), json!([])),
    ];
    let spec = json!({"containers": containers(), "nodeSelector": {"zone": "x"}});
    let mut explanations = std::collections::BTreeSet::new();
    for rotation in 0..nodes.len() {
        let mut n = nodes.clone();
        n.rotate_left(rotation);
        explanations.insert(
            decide_payload(&pod_request(spec.clone()), &FakeCluster::new(n))
                .explanation()
                .to_string(),
        );
    }
    assert_eq!(explanations.len(), 1, "{explanations:?}");
}

#[test]
fn malformed_input_is_refused_not_panicked_on() {
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"garbage".to_vec(),
            "not a valid Kubewarden validation request",
        ),
        (
            request(
                "Pod",
                "",
                "CREATE",
                json!({"spec": {"tolerations": "all"}}),
                json!({}),
            ),
            "not a valid Pod",
        ),
        (
            request("Pod", "", "CREATE", json!([1, 2]), json!({})),
            "not a valid Pod",
        ),
        (
            request("Pod", "", "CREATE", Value::Null, json!({})),
            "no object",
        ),
        (
            request(
                "Pod",
                "",
                "CREATE",
                json!({"spec": {}}),
                json!({"bogus": 1}),
            ),
            "invalid policy settings: unknown setting \"bogus\"",
        ),
    ];
    for (payload, want) in cases {
        match decide_payload(&payload, &seed_cluster()) {
            Seen::Reject {
                explanation,
                code: Some(400),
            } => assert!(explanation.contains(want), "{explanation}"),
            other => panic!("{want}: {other:?}"),
        }
    }
}

/// Settings without the required ones are refused in `validate` too (400,
/// no host call), as `validate_settings` refuses them: no pod is judged
/// with a class or an account the settings do not name.
#[test]
fn settings_without_the_required_ones_are_refused_before_the_pod_is_judged() {
    let pod = || json!({"spec": {"containers": containers()}});
    let account = json!("system:serviceaccount:kubewarden:policy-server");
    let class_required = "invalid policy settings: runtimeClassName is required: the Kata \
        RuntimeClass to assign (kata-deploy 4.x creates kata-qemu-runtime-rs";
    let account_required = "policyServerServiceAccount is required: the ServiceAccount the \
        policy's PolicyServer runs as";
    let no_settings_key = json!({"request": {"uid": "uid-1",
        "kind": {"group": "", "version": "v1", "kind": "Pod"}, "operation": "CREATE",
        "object": pod()}})
    .to_string()
    .into_bytes();
    for (payload, wants) in [
        (
            raw_request(
                "Pod",
                "",
                "CREATE",
                pod(),
                json!({"policyServerServiceAccount": account}),
            ),
            vec![class_required],
        ),
        (
            raw_request(
                "Pod",
                "",
                "CREATE",
                pod(),
                json!({"runtimeClassName": "kata", "policyServerServiceAccount": null}),
            ),
            vec![account_required],
        ),
        (
            raw_request("Pod", "", "CREATE", pod(), json!({})),
            vec![class_required, account_required],
        ),
        (
            raw_request("Pod", "", "CREATE", pod(), Value::Null),
            vec![class_required, account_required],
        ),
        (no_settings_key, vec![class_required, account_required]),
    ] {
        let cluster = seed_cluster();
        match decide_payload(&payload, &cluster) {
            Seen::Reject {
                explanation,
                code: Some(400),
            } => {
                for want in &wants {
                    assert!(explanation.contains(want), "{explanation}");
                }
                assert_eq!(
                    explanation.contains(account_required),
                    wants.contains(&account_required)
                );
            }
            other => panic!("{wants:?}: {other:?}"),
        }
        assert!(cluster.queries().is_empty(), "asked the cluster");
    }
}

#[test]
fn custom_runtime_class_name() {
    let cluster = FakeCluster::new(vec![worker("w")]).class(Some(json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "kata-qemu"}, "handler": "kata-qemu"})));
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": {}}),
            json!({"runtimeClassName": "kata-qemu"}),
        ),
        &cluster,
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata-qemu");
    assert_eq!(cluster.queries()[0], "RuntimeClass kata-qemu");
}

// ------------------------------------------------- resources and topology

/// A kata worker with `status.allocatable`.
fn sized_worker(name: &str, allocatable: Value) -> Value {
    let mut n = worker(name);
    n["status"] = json!({ "allocatable": allocatable });
    n
}

fn cpu_node() -> Value {
    json!({"cpu": "16", "memory": "64Gi", "ephemeral-storage": "100Gi", "pods": "110", "hugepages-2Mi": "0"})
}

fn gpu_node() -> Value {
    let mut a = cpu_node();
    a["nvidia.com/pgpu"] = json!("4");
    a
}

/// A pod asking for a GPU as Kata takes it: VFIO passthrough (`nvidia.com/pgpu`,
/// the NVIDIA GPU operator's resource for `kata-qemu-nvidia-gpu`), not the
/// device plugin's `nvidia.com/gpu` that `deviceResources` skips.
fn gpu_pod() -> Value {
    json!({"containers": [{"name": "cuda", "image": "cuda",
        "resources": {"limits": {"nvidia.com/pgpu": "1"}}}]})
}

#[test]
fn a_gpu_pod_on_cpu_only_kata_nodes_is_left_alone() {
    let cluster = FakeCluster::new(vec![
        sized_worker("w1", cpu_node()),
        sized_worker("w2", cpu_node()),
    ]);
    let d = decide_payload(&pod_request(gpu_pod()), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 Insufficient nvidia.com/pgpu"
    );
    // The same pod when one kata node group has GPUs.
    let cluster = FakeCluster::new(vec![
        sized_worker("w1", cpu_node()),
        sized_worker("g1", gpu_node()),
    ]);
    let d = decide_payload(&pod_request(gpu_pod()), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    // A cluster that serves GPUs through DRA lists them in ignoredResources.
    let cluster = FakeCluster::new(vec![sized_worker("w1", cpu_node())]);
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": gpu_pod()}),
            json!({"ignoredResources": ["nvidia.com/*"]}),
        ),
        &cluster,
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn the_kata_overhead_can_make_the_difference() {
    let node = sized_worker("w1", json!({"cpu": "16", "memory": "64Gi", "pods": "110"}));
    let spec = json!({"containers": [{"name": "big", "image": "x",
        "resources": {"requests": {"cpu": "15800m", "memory": "1Gi"}}}]});
    let without = FakeCluster::new(vec![node.clone()]);
    assert_eq!(
        mutated_spec(&decide_payload(&pod_request(spec.clone()), &without))["runtimeClassName"],
        "kata"
    );
    let with = FakeCluster::new(vec![node]).class(Some(kata_class(
        json!({"overhead": {"podFixed": {"cpu": "250m", "memory": "160Mi"}}}),
    )));
    let d = decide_payload(&pod_request(spec), &with);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 Insufficient cpu"
    );
}

#[test]
fn resources_are_checked_after_the_other_filters() {
    // A tainted GPU node reports its taint, not its resources: the first
    // failing filter per node, in the scheduler's order.
    let mut tainted = sized_worker("g1", cpu_node());
    tainted["spec"]["taints"] = json!([{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]);
    let cluster = FakeCluster::new(vec![
        tainted,
        sized_worker("w1", json!({"cpu": "1", "pods": "0"})),
    ]);
    let d = decide_payload(&pod_request(gpu_pod()), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 1 Insufficient nvidia.com/pgpu, \
         1 Too many pods, 1 node(s) had untolerated taint {gpu: yes}"
    );
}

#[test]
fn a_bound_pod_is_checked_on_its_node_like_the_kubelet_does() {
    let cluster = FakeCluster::new(vec![
        sized_worker("w1", cpu_node()),
        sized_worker("g1", gpu_node()),
    ]);
    let big = json!({"containers": [{"name": "c", "resources": {"requests": {"memory": "128Gi"}}}], "nodeName": "w1"});
    assert_eq!(
        leave_text(&decide_payload(&pod_request(big), &cluster)),
        "kata runtime not assigned: 0/1 kata nodes can run this pod: 1 Insufficient memory"
    );
    // The kubelet drops extended resources its node does not list at all
    // (`removeMissingExtendedResources`): it runs this pod on w1.
    let mut spec = gpu_pod();
    spec["nodeName"] = json!("w1");
    assert_eq!(
        mutated_spec(&decide_payload(&pod_request(spec), &cluster))["runtimeClassName"],
        "kata"
    );
    // ... but refuses it on a node that lists too few.
    let few = FakeCluster::new(vec![sized_worker("w1", json!({"nvidia.com/pgpu": "0"}))]);
    let mut spec = gpu_pod();
    spec["nodeName"] = json!("w1");
    assert!(
        leave_text(&decide_payload(&pod_request(spec), &few))
            .contains("1 Insufficient nvidia.com/pgpu")
    );
}

#[test]
fn a_topology_key_that_kata_nodes_lack_rules_them_out() {
    let spread = |key: &str, when: &str| {
        json!({"containers": containers(), "topologySpreadConstraints": [{"maxSkew": 1,
            "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": {"app": "web"}}}]})
    };
    let d = decide_payload(
        &pod_request(spread("topology.kubernetes.io/zone", "DoNotSchedule")),
        &seed_cluster(),
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: \
         2 node(s) didn't match pod topology spread constraints (missing required label)"
    );
    let d = decide_payload(
        &pod_request(spread("topology.kubernetes.io/zone", "ScheduleAnyway")),
        &seed_cluster(),
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    let d = decide_payload(
        &pod_request(spread("kubernetes.io/hostname", "DoNotSchedule")),
        &seed_cluster(),
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn quantities_that_do_not_parse() {
    // In the pod: refused with 400 (the API server never sends one).
    let spec = json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]});
    match decide_payload(&pod_request(spec), &seed_cluster()) {
        Seen::Reject {
            explanation,
            code: Some(400),
        } => assert_eq!(
            explanation,
            "the object is not a valid Pod: spec.containers[0].resources.requests.cpu: \"lots\" is not a valid quantity \
             (quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"
        ),
        other => panic!("{other:?}"),
    }
    // On a node the pod is judged on: the answer is malformed (lookupFailure).
    let cluster = FakeCluster::new(vec![sized_worker("w1", json!({"cpu": "16 cores"}))]);
    let spec = json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]});
    let d = decide_payload(&pod_request(spec.clone()), &cluster);
    assert!(
        leave_text(&d).contains(
            "node \"w1\" has status.allocatable cpu: \"16 cores\", which is not a valid quantity"
        ),
        "{d:?}"
    );
    // In the RuntimeClass overhead: malformed too.
    let cluster = seed_cluster().class(Some(kata_class(
        json!({"overhead": {"podFixed": {"cpu": "a lot"}}}),
    )));
    let d = decide_payload(&pod_request(spec), &cluster);
    assert!(
        leave_text(&d).contains("RuntimeClass \"kata\" has overhead.podFixed cpu: \"a lot\", which is not a valid quantity"),
        "{d:?}"
    );
}

#[test]
fn undefaulted_limits_count_as_requests() {
    // `kwctl run` gives the pod as written; the API server would have
    // copied the limit into the missing request before the webhook.
    let node = sized_worker("w1", json!({"cpu": "2", "memory": "4Gi", "pods": "110"}));
    let cluster = FakeCluster::new(vec![node]);
    let limits_only =
        json!({"containers": [{"name": "c", "resources": {"limits": {"memory": "8Gi"}}}]});
    assert!(
        leave_text(&decide_payload(&pod_request(limits_only), &cluster))
            .contains("Insufficient memory")
    );
    let small_request = json!({"containers": [{"name": "c",
        "resources": {"requests": {"memory": "1Gi"}, "limits": {"memory": "8Gi"}}}]});
    assert_eq!(
        mutated_spec(&decide_payload(&pod_request(small_request), &cluster))["runtimeClassName"],
        "kata"
    );
}

// ------------------------------------------------- access before the list

#[test]
fn access_to_nodes_is_asked_before_the_list() {
    let cluster = seed_cluster();
    let d = decide_payload(&pod_request(json!({"containers": containers()})), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    let groups = r#"["system:serviceaccounts", "system:serviceaccounts:kubewarden", "system:authenticated"]"#;
    assert_eq!(
        cluster.queries(),
        vec![
            "RuntimeClass kata".to_string(),
            format!("CanI list nodes as system:serviceaccount:kubewarden:policy-server {groups}"),
            format!("CanI watch nodes as system:serviceaccount:kubewarden:policy-server {groups}"),
            "Nodes Some(\"katacontainers.io/kata-runtime=true\")".to_string(),
            "Node worker-1".to_string(),
        ]
    );
}

#[test]
fn a_denied_list_or_watch_fails_fast_without_listing() {
    for (denied, verbs) in [
        (vec!["list"], "list"),
        (vec!["watch"], "watch"),
        (vec!["list", "watch"], "list, watch"),
    ] {
        let cluster = (denied.iter()).fold(seed_cluster(), |c, verb| c.deny(verb, "nodes"));
        let d = decide_payload(&pod_request(json!({"containers": containers()})), &cluster);
        assert_eq!(
            leave_text(&d),
            format!(
                "kata runtime not assigned: cannot list kata nodes (forbidden: system:serviceaccount:kubewarden:policy-server \
                 may not {verbs} nodes; grant policy-server get/list/watch on nodes and get on runtimeclasses.node.k8s.io, \
                 and list both in contextAwareResources)"
            )
        );
        assert!(
            !cluster.queries().iter().any(|q| q.starts_with("Nodes")),
            "listed after a denial: {:?}",
            cluster.queries()
        );
    }
    // lookupFailure=reject refuses with the same words.
    let cluster = seed_cluster().deny("watch", "nodes");
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": {"containers": containers()}}),
            json!({"lookupFailure": "reject"}),
        ),
        &cluster,
    );
    assert!(
        matches!(d, Seen::Reject { code: Some(503), ref explanation } if explanation.contains("may not watch nodes")),
        "{d:?}"
    );
}

#[test]
fn a_failing_access_question_fails_fast_without_listing() {
    let cluster = seed_cluster().access_error(LookupError::from_host(
        "Host error: Callback evaluation failure: HyperError: error trying to connect: tcp connect error".into(),
    ));
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": {"containers": containers()}}),
            json!({"policyServerServiceAccount": "system:serviceaccount:kw:ps"}),
        ),
        &cluster,
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: cannot check whether system:serviceaccount:kw:ps may list nodes \
         (kubernetes/can_i; policy-server needs create on subjectaccessreviews.authorization.k8s.io): \
         HyperError: error trying to connect: tcp connect error"
    );
    let queries = cluster.queries();
    assert_eq!(
        queries.len(),
        2,
        "RuntimeClass, one can_i, nothing after: {queries:?}"
    );
}

/// A replayed session recorded for another account misses the access
/// question: the reason says so, in place of the RBAC hint, and ends with
/// the replay's own text.
#[test]
fn a_replay_miss_on_the_access_question_names_the_likely_causes() {
    let cluster = seed_cluster().access_error(LookupError::from_host(
        "Host error: Callback evaluation failure: Replay error: unexpected request. Was expecting \
         KubernetesCanI { .. user: \"system:serviceaccount:kubewarden:policy-server\" }, got \
         KubernetesCanI { .. user: \"system:serviceaccount:kw:ps\" } instead"
            .into(),
    ));
    let d = decide_payload(
        &request(
            "Pod",
            "",
            "CREATE",
            json!({"spec": {"containers": containers()}}),
            json!({"policyServerServiceAccount": "system:serviceaccount:kw:ps"}),
        ),
        &cluster,
    );
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: cannot check whether system:serviceaccount:kw:ps may list nodes \
         (kubernetes/can_i): the recorded session has no answer for this request (recorded for another \
         policyServerServiceAccount, pod or settings?): Replay error: unexpected request. Was expecting \
         KubernetesCanI { .. user: \"system:serviceaccount:kubewarden:policy-server\" }, got \
         KubernetesCanI { .. user: \"system:serviceaccount:kw:ps\" } instead"
    );
}

/// Any other read the replay cannot answer: the same words after what was
/// read, no RBAC hint.
#[test]
fn a_replay_miss_on_a_read_names_the_likely_causes() {
    let miss = || {
        LookupError::from_host(
            "Host error: Callback evaluation failure: the list of recorded responses is empty"
                .into(),
        )
    };
    let cluster = seed_cluster().list_error(miss());
    assert_eq!(
        leave_text(&decide_payload(
            &pod_request(json!({"containers": containers()})),
            &cluster
        )),
        "kata runtime not assigned: cannot list kata nodes: the recorded session has no answer for \
         this request (recorded for another policyServerServiceAccount, pod or settings?): \
         the list of recorded responses is empty"
    );
    let cluster = seed_cluster().class_error(miss());
    let text = leave_text(&decide_payload(
        &pod_request(json!({"containers": containers()})),
        &cluster,
    ))
    .to_string();
    assert!(
        text.starts_with(
            "kata runtime not assigned: cannot read RuntimeClass \"kata\": the recorded session has no answer"
        ),
        "{text}"
    );
    let cluster = FakeCluster::new(vec![worker("worker-1")]).volume_error(miss());
    let text = leave_text(&decide_payload(&pod_request(claim_spec()), &cluster)).to_string();
    assert!(
        text.starts_with(
            "kata runtime not assigned: cannot read PersistentVolumeClaim default/data-web-0: the recorded session has no answer"
        ),
        "{text}"
    );
}

// Volumes: the decision around the volume check (its rules: volumes/tests.rs).

const ZONE: &str = "topology.kubernetes.io/zone";

fn zonal_worker(name: &str, zone: &str) -> Value {
    let mut n = worker(name);
    n["metadata"]["labels"][ZONE] = json!(zone);
    n
}

/// A StatefulSet-style claim bound to a disk in `zone` (a CSI PV: node
/// affinity on the zone, and the zone label).
fn zonal_claim(zone: &str) -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data-web-0", "namespace": "default",
                         "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
            "spec": {"storageClassName": "gp3", "volumeName": "pvc-1234", "accessModes": ["ReadWriteOnce"]},
            "status": {"phase": "Bound"}}),
        json!({"apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": "pvc-1234", "labels": {ZONE: zone}},
            "spec": {"storageClassName": "gp3", "capacity": {"storage": "10Gi"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions":
                        [{"key": ZONE, "operator": "In", "values": [zone]}]}]}}},
            "status": {"phase": "Bound"}}),
    ]
}

fn claim_spec() -> Value {
    json!({"containers": containers(),
           "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]})
}

fn with_settings(spec: Value, settings: Value) -> Vec<u8> {
    request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "default"}, "spec": spec}),
        settings,
    )
}

#[test]
fn a_claim_bound_to_a_zone_without_kata_nodes_keeps_the_pod_off_kata() {
    let cluster = FakeCluster::new(vec![
        zonal_worker("worker-1", "zone-a"),
        zonal_worker("worker-2", "zone-a"),
    ])
    .volume_objects(zonal_claim("zone-b"));
    let d = decide_payload(&pod_request(claim_spec()), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match PersistentVolume's node affinity"
    );
    assert_eq!(
        cluster.take_queries()[..3],
        [
            "RuntimeClass kata",
            "Get PersistentVolumeClaim default/data-web-0",
            "Get PersistentVolume pvc-1234"
        ],
        "the claim and its volume, by name, before the node list"
    );
    // A kata node in the disk's zone: Kata.
    let cluster = FakeCluster::new(vec![
        zonal_worker("worker-1", "zone-a"),
        zonal_worker("worker-2", "zone-b"),
    ])
    .volume_objects(zonal_claim("zone-b"));
    let d = decide_payload(&pod_request(claim_spec()), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn check_volumes_false_reads_no_volume() {
    let cluster = FakeCluster::new(vec![zonal_worker("worker-1", "zone-a")])
        .volume_objects(zonal_claim("zone-b"));
    let d = decide_payload(
        &with_settings(claim_spec(), json!({"checkVolumes": false})),
        &cluster,
    );
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(
        !cluster
            .take_queries()
            .iter()
            .any(|q| q.contains("Persistent"))
    );
}

#[test]
fn volumes_of_pods_bound_by_node_name_are_not_judged() {
    let cluster = FakeCluster::new(vec![zonal_worker("worker-1", "zone-a")])
        .volume_objects(zonal_claim("zone-b"));
    let mut spec = claim_spec();
    spec["nodeName"] = json!("worker-1");
    let d = decide_payload(&pod_request(spec), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(
        !cluster
            .take_queries()
            .iter()
            .any(|q| q.contains("Persistent"))
    );
}

#[test]
fn pods_without_claims_make_no_volume_call() {
    let cluster = FakeCluster::new(vec![worker("worker-1")]);
    let spec = json!({"containers": containers(),
        "volumes": [{"name": "tmp", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}}]});
    let d = decide_payload(&pod_request(spec), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
    assert!(
        !cluster
            .take_queries()
            .iter()
            .any(|q| q.contains("Persistent") || q.contains("Storage"))
    );
}

#[test]
fn a_missing_claim_is_the_no_feasible_node_outcome() {
    let cluster = FakeCluster::new(vec![worker("worker-1")]);
    let d = decide_payload(&pod_request(claim_spec()), &cluster);
    assert_eq!(
        leave_text(&d),
        "kata runtime not assigned: persistentvolumeclaim \"data-web-0\" not found"
    );
    assert!(
        !cluster
            .take_queries()
            .iter()
            .any(|q| q.starts_with("Nodes") || q.starts_with("CanI")),
        "no node can run the pod: the nodes are not read"
    );
    let d = decide_payload(
        &with_settings(claim_spec(), json!({"noFeasibleNode": "reject"})),
        &FakeCluster::new(vec![worker("worker-1")]),
    );
    assert!(
        matches!(
            d,
            Seen::Reject {
                code: Some(412),
                ..
            }
        ),
        "{d:?}"
    );
}

#[test]
fn a_refused_volume_read_names_the_permission_and_the_setting() {
    let cluster = FakeCluster::new(vec![worker("worker-1")]).volume_error(LookupError::from_host(
        "Host error: persistentvolumeclaims \"data-web-0\" is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" cannot get resource".into(),
    ));
    let text = leave_text(&decide_payload(&pod_request(claim_spec()), &cluster)).to_string();
    assert!(
        text.starts_with("kata runtime not assigned: cannot read PersistentVolumeClaim default/data-web-0 (forbidden: set checkVolumes: false or grant policy-server get on persistentvolumeclaims, persistentvolumes, storageclasses.storage.k8s.io and list/watch on the last two): "),
        "{text}"
    );
    // A list policy-server may not make is not made.
    let cluster = FakeCluster::new(vec![worker("worker-1")]).volume_objects(vec![
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "data-web-0", "namespace": "default"},
            "spec": {"storageClassName": "local"}}),
        json!({"kind": "StorageClass", "metadata": {"name": "local"},
            "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}),
    ]).deny("*", "persistentvolumes");
    let text = leave_text(&decide_payload(&pod_request(claim_spec()), &cluster)).to_string();
    assert!(
        text.starts_with("kata runtime not assigned: cannot list persistentvolumes (forbidden: system:serviceaccount:kubewarden:policy-server may not list, watch persistentvolumes; set checkVolumes: false or grant"),
        "{text}"
    );
    assert!(
        !cluster
            .take_queries()
            .contains(&"List PersistentVolume".to_string())
    );
}

/// Every answer to a Pod CREATE carries its decision's code, admitted or
/// refused: policy-server exports it as `error_code`, the one label that
/// tells a pod given Kata from one left as it is (with the decision
/// annotation, every admitted pod carries a patch).
#[test]
fn every_pod_create_carries_its_decisions_code() {
    let code = |spec: Value, settings: Value, cluster: &FakeCluster| {
        review(&with_settings(spec, settings), cluster)
            .decision
            .code()
    };
    let plain = || json!({"containers": containers()});
    let pinned =
        json!({"containers": containers(), "nodeSelector": {"node-role.kubernetes.io/master": ""}});
    let host = json!({"containers": containers(), "hostNetwork": true});
    let mirror_of = |mut spec: Value| {
        spec["nodeName"] = json!("master");
        spec
    };
    let seed = seed_cluster();
    let unreadable = seed_cluster().class(None);
    for (what, spec, settings, cluster, want) in [
        ("given Kata", plain(), json!({}), &seed, 200),
        ("no kata node fits", pinned.clone(), json!({}), &seed, 412),
        (
            "no kata node fits, refused",
            pinned,
            json!({"noFeasibleNode": "reject"}),
            &seed,
            412,
        ),
        (
            "the class does not exist",
            plain(),
            json!({}),
            &unreadable,
            412,
        ),
        ("Kata cannot run it", host.clone(), json!({}), &seed, 422),
        (
            "Kata cannot run it, refused",
            host,
            json!({"incompatiblePod": "reject"}),
            &seed,
            422,
        ),
        (
            "names its class",
            json!({"containers": containers(), "runtimeClassName": "gvisor"}),
            json!({}),
            &seed,
            403,
        ),
        (
            "names a class the restriction refuses",
            json!({"containers": containers(), "runtimeClassName": "gvisor"}),
            json!({"restrictRuntimeClasses": true}),
            &seed,
            403,
        ),
        (
            "runtimeClassName \"\"",
            json!({"containers": containers(), "runtimeClassName": ""}),
            json!({}),
            &seed,
            204,
        ),
    ] {
        assert_eq!(code(spec, settings, cluster), Some(want), "{what}");
    }
    let failing = seed_cluster().class_error(LookupError {
        kind: LookupErrorKind::Failed,
        message: "timeout".into(),
    });
    assert_eq!(
        code(plain(), json!({}), &failing),
        Some(503),
        "the cluster cannot be read"
    );
    let mirror = request(
        "Pod",
        "",
        "CREATE",
        json!({"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "m", "namespace": "default", "annotations": {"kubernetes.io/config.mirror": "x"}},
               "spec": mirror_of(plain())}),
        json!({}),
    );
    assert_eq!(
        review(&mirror, &seed).decision.code(),
        Some(204),
        "a mirror pod"
    );
    let not_a_create = request(
        "Pod",
        "",
        "UPDATE",
        json!({"kind": "Pod", "spec": plain()}),
        json!({}),
    );
    assert_eq!(
        review(&not_a_create, &seed).decision.code(),
        None,
        "not a Pod CREATE"
    );
}

mod handlers;

mod incompatible;

mod annotate;

mod kubernetes_136;

mod classes;

mod logging;

mod pod_affinity;
