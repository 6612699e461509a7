//! Several Kata classes: `fallbackRuntimeClasses` tried in order after
//! `runtimeClassName`, and `runtimeClassesByResource` routing pods that ask
//! for a resource to their own classes.

use super::*;

/// A class named `name` running handler `name`, with `extra` fields.
fn class(name: &str, extra: Value) -> Value {
    let mut rc = kata_class(json!({"metadata": {"name": name}, "handler": name}));
    rc.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    rc
}

/// A labelled kata worker whose runtime reports `handlers`.
fn reporting(name: &str, handlers: &[&str]) -> Value {
    let mut n = worker(name);
    n["status"] =
        json!({"runtimeHandlers": handlers.iter().map(|h| json!({"name": h})).collect::<Vec<_>>()});
    n
}

/// kata-deploy 4.x's mix: an amd64 node with every shim, an arm64 node
/// without the amd64-only ones, a GPU node with the GPU shim and
/// `nvidia.com/pgpu`.
fn mixed() -> FakeCluster {
    let mut gpu = reporting("gpu-1", &["kata-qemu-runtime-rs", "kata-qemu-nvidia-gpu"]);
    gpu["status"]["allocatable"] =
        json!({"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/pgpu": "4"});
    FakeCluster::new(vec![
        reporting("amd64-1", &["kata-clh", "kata-qemu-runtime-rs"]),
        reporting("arm64-1", &["kata-qemu-runtime-rs"]),
        gpu,
    ])
    .classes(mixed_classes())
}

/// [`mixed`]'s classes, each running the handler of its name.
fn mixed_classes() -> Vec<Value> {
    vec![
        class("kata-clh", json!({})),
        class("kata-qemu-runtime-rs", json!({})),
        class("kata-qemu-nvidia-gpu", json!({})),
    ]
}

fn settings(extra: Value) -> Value {
    let mut s = json!({"runtimeClassName": "kata-clh",
        "fallbackRuntimeClasses": ["kata-qemu-runtime-rs"],
        "runtimeClassesByResource": [{"resources": ["nvidia.com/pgpu"], "runtimeClassNames": ["kata-qemu-nvidia-gpu"]}]});
    s.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    s
}

fn arm64_pod() -> Value {
    json!({"containers": containers(), "nodeSelector": {"kubernetes.io/hostname": "arm64-1"}})
}

fn gpu_pod(extra: Value) -> Value {
    let mut spec = json!({"containers": [{"name": "train", "image": "train",
        "resources": {"limits": {"nvidia.com/pgpu": "1"}}}]});
    spec.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    spec
}

#[test]
fn the_first_class_a_kata_node_can_run_the_pod_with_is_assigned() {
    let cluster = mixed();
    let plain = with_settings(json!({"containers": containers()}), settings(json!({})));
    let d = decide_payload(&plain, &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata-clh");
    assert!(matches!(d, Seen::Mutate { warn: false, .. }));
    // On arm64 only the fallback runs: assigned, saying why not the first.
    let arm = decide_payload(&with_settings(arm64_pod(), settings(json!({}))), &cluster);
    assert_eq!(
        mutated_spec(&arm)["runtimeClassName"],
        "kata-qemu-runtime-rs"
    );
    assert_eq!(
        warned_mutation(&arm),
        "runtimeClassName \"kata-qemu-runtime-rs\" assigned (kata-clh: 0/3 kata nodes can run this pod: \
         2 node(s) didn't match Pod's node affinity/selector, 1 node(s) do not report runtime handler \"kata-clh\")"
    );
}

#[test]
fn the_warning_about_broken_nodes_names_the_class_among_several() {
    // arm64-1 first: met before amd64-1, which runs kata-clh.
    let cluster = FakeCluster::new(vec![
        reporting("arm64-1", &["kata-qemu-runtime-rs"]),
        reporting("amd64-1", &["kata-clh", "kata-qemu-runtime-rs"]),
    ])
    .classes(mixed_classes());
    let broken = "at least 1 kata node(s) that can take this pod do not report runtime handler \"kata-clh\" \
         (arm64-1): if the scheduler picks one, the pod will not start";
    let plain = json!({"containers": containers()});
    let ranked = decide_payload(&with_settings(plain.clone(), settings(json!({}))), &cluster);
    assert_eq!(mutated_spec(&ranked)["runtimeClassName"], "kata-clh");
    assert_eq!(
        warned_mutation(&ranked),
        format!("runtimeClassName \"kata-clh\" assigned, but {broken}")
    );
    // One class: the wording of a policy without fallbacks.
    let alone = json!({"runtimeClassName": "kata-clh"});
    let single = decide_payload(&with_settings(plain, alone), &cluster);
    assert_eq!(
        warned_mutation(&single),
        format!("kata runtime assigned, but {broken}")
    );
}

#[test]
fn one_node_list_per_admission_whatever_the_number_of_classes() {
    let cluster = mixed();
    decide_payload(&with_settings(arm64_pod(), settings(json!({}))), &cluster);
    let queries = cluster.queries();
    let lists = queries.iter().filter(|q| q.starts_with("Nodes ")).count();
    let classes: Vec<&String> = queries
        .iter()
        .filter(|q| q.starts_with("RuntimeClass "))
        .collect();
    // The plain list once, the list with the handlers (kata-clh's one
    // candidate missed) once.
    assert_eq!(lists, 2, "{queries:?}");
    assert_eq!(
        classes,
        ["RuntimeClass kata-clh", "RuntimeClass kata-qemu-runtime-rs"]
    );
    assert_eq!(queries.iter().filter(|q| q.starts_with("CanI")).count(), 2);
}

#[test]
fn no_class_can_run_the_pod_and_each_says_why() {
    let cluster = mixed();
    let pinned = with_settings(master_pinned_spec(), settings(json!({})));
    assert_eq!(
        leave_text(&decide_payload(&pinned, &cluster)),
        "kata runtime not assigned: kata-clh: 0/3 kata nodes can run this pod: 3 node(s) didn't match Pod's node \
         affinity/selector; kata-qemu-runtime-rs: 0/3 kata nodes can run this pod: 3 node(s) didn't match Pod's \
         node affinity/selector"
    );
    let reject = with_settings(
        master_pinned_spec(),
        settings(json!({"noFeasibleNode": "reject"})),
    );
    assert!(matches!(
        decide_payload(&reject, &cluster),
        Seen::Reject { .. }
    ));
}

#[test]
fn a_class_that_does_not_exist_is_passed_over() {
    let mut classes = mixed_classes();
    classes.remove(0);
    let cluster = mixed().classes(classes);
    let d = decide_payload(
        &with_settings(json!({"containers": containers()}), settings(json!({}))),
        &cluster,
    );
    assert_eq!(
        warned_mutation(&d),
        "runtimeClassName \"kata-qemu-runtime-rs\" assigned (kata-clh: RuntimeClass \"kata-clh\" does not exist)"
    );
}

#[test]
fn a_class_the_cluster_cannot_tell_about_ends_the_search() {
    // kata-clh unreadable (an overhead that is not a quantity): the class
    // ranked after it is not handed out; lookupFailure decides.
    let mut classes = mixed_classes();
    classes[0] = class(
        "kata-clh",
        json!({"overhead": {"podFixed": {"cpu": "lots"}}}),
    );
    let cluster = mixed().classes(classes);
    let plain = json!({"containers": containers()});
    let d = decide_payload(&with_settings(plain.clone(), settings(json!({}))), &cluster);
    let text = leave_text(&d).to_string();
    assert!(
        text.starts_with(
            "kata runtime not assigned: kata-clh: RuntimeClass \"kata-clh\" has overhead"
        ),
        "{text}"
    );
    assert!(
        text.ends_with(
            "; kata-qemu-runtime-rs: not tried: ranked after kata-clh, which could not be judged"
        ),
        "{text}"
    );
    assert!(
        !cluster
            .queries()
            .iter()
            .any(|q| q == "RuntimeClass kata-qemu-runtime-rs"),
        "{:?}",
        cluster.queries()
    );
    let reject = settings(json!({"lookupFailure": "reject"}));
    assert!(matches!(
        decide_payload(&with_settings(plain.clone(), reject), &cluster),
        Seen::Reject { .. }
    ));
    // noFeasibleNode does not apply to it.
    let strict = settings(json!({"noFeasibleNode": "reject"}));
    assert!(!matches!(
        decide_payload(&with_settings(plain, strict), &cluster),
        Seen::Reject { .. }
    ));
}

#[test]
fn a_gpu_pod_takes_its_route_and_never_the_general_classes() {
    let cluster = mixed();
    let gpu = decide_payload(
        &with_settings(gpu_pod(json!({})), settings(json!({}))),
        &cluster,
    );
    assert_eq!(
        mutated_spec(&gpu)["runtimeClassName"],
        "kata-qemu-nvidia-gpu"
    );
    // A sidecar's limit routes the pod too.
    let sidecar = json!({"containers": containers(), "initContainers": [{"name": "s", "image": "s",
        "restartPolicy": "Always", "resources": {"limits": {"nvidia.com/pgpu": "1"}}}]});
    let d = decide_payload(&with_settings(sidecar, settings(json!({}))), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata-qemu-nvidia-gpu");
    // The GPU node out of reach: left without Kata, never the general class.
    let away = gpu_pod(json!({"nodeSelector": {"kubernetes.io/hostname": "amd64-1"}}));
    let text = leave_text(&decide_payload(
        &with_settings(away, settings(json!({}))),
        &cluster,
    ))
    .to_string();
    // It names the class it was judged for: not runtimeClassName, so the
    // user could not tell otherwise.
    assert!(
        text.starts_with(
            "kata runtime not assigned: kata-qemu-nvidia-gpu: 0/3 kata nodes can run this pod"
        ),
        "{text}"
    );
    assert!(
        !text.contains("kata-clh") && !text.contains("kata-qemu-runtime-rs"),
        "{text}"
    );
}

#[test]
fn a_zero_quantity_of_a_routed_resource_routes_nothing() {
    let cluster = mixed();
    // As Helm charts render an unused GPU: the scheduler ignores a zero
    // request, so the pod runs anywhere and takes the general classes.
    for resources in [
        json!({"limits": {"nvidia.com/pgpu": "0"}}),
        json!({"requests": {"nvidia.com/pgpu": "0"}, "limits": {"nvidia.com/pgpu": "0m"}}),
    ] {
        let spec = json!({"containers": [{"name": "app", "image": "app", "resources": resources}],
            "nodeSelector": {"kubernetes.io/hostname": "amd64-1"}});
        let d = decide_payload(&with_settings(spec, settings(json!({}))), &cluster);
        assert_eq!(
            mutated_spec(&d)["runtimeClassName"],
            "kata-clh",
            "{resources}"
        );
    }
    // A non-zero one still routes, in a request or a limit.
    let spec = json!({"containers": [{"name": "app", "image": "app",
        "resources": {"limits": {"nvidia.com/pgpu": "1"}}}, {"name": "b", "image": "b",
        "resources": {"limits": {"nvidia.com/pgpu": "0"}}}]});
    let d = decide_payload(&with_settings(spec, settings(json!({}))), &cluster);
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata-qemu-nvidia-gpu");
}

#[test]
fn a_single_general_class_is_not_named_in_its_reason() {
    let cluster = mixed();
    let spec =
        json!({"containers": containers(), "nodeSelector": {"kubernetes.io/hostname": "none"}});
    let text = leave_text(&decide_payload(
        &with_settings(spec, json!({"runtimeClassName": "kata-clh"})),
        &cluster,
    ))
    .to_string();
    assert!(
        text.starts_with("kata runtime not assigned: 0/3 kata nodes can run this pod"),
        "{text}"
    );
}

#[test]
fn every_configured_class_is_allowed_and_counts_as_kata() {
    let cluster = mixed();
    let restricted = settings(json!({"restrictRuntimeClasses": true}));
    for named in ["kata-clh", "kata-qemu-runtime-rs", "kata-qemu-nvidia-gpu"] {
        let spec = json!({"containers": containers(), "runtimeClassName": named});
        let d = decide_payload(&with_settings(spec, restricted.clone()), &cluster);
        assert!(
            matches!(d, Seen::Unchanged { warn: false, .. }),
            "{named}: {d:?}"
        );
    }
    let runc = json!({"containers": containers(), "runtimeClassName": "runc"});
    let d = decide_payload(&with_settings(runc.clone(), restricted), &cluster);
    // allowedRuntimeClasses is empty: the message names no such list, only
    // where the allowed classes come from.
    assert!(
        matches!(&d, Seen::Reject { explanation, .. }
        if explanation == "runtimeClassName \"runc\" is not allowed (allowed: the configured classes kata-clh, kata-qemu-runtime-rs, kata-qemu-nvidia-gpu)"),
        "{d:?}"
    );
    // With a list, its classes after the configured ones, each group named.
    let listed = settings(json!({"restrictRuntimeClasses": true,
        "allowedRuntimeClasses": ["gvisor", "kata-clh", "kata-fc"]}));
    let d = decide_payload(&with_settings(runc, listed), &cluster);
    assert!(
        matches!(&d, Seen::Reject { explanation, .. }
        if explanation == "runtimeClassName \"runc\" is not allowed (allowed: the configured classes kata-clh, kata-qemu-runtime-rs, kata-qemu-nvidia-gpu; allowedRuntimeClasses: gvisor, kata-fc)"),
        "{d:?}"
    );
    assert!(cluster.queries().is_empty(), "no host call");
}
