//! `incompatiblePod: reject`: in Kata-mandatory namespaces a pod that uses a
//! feature Kata cannot run is refused, not admitted on the default runtime.

use super::*;

fn docker_agent() -> Value {
    json!({
        "containers": [{"name": "agent", "image": "datadog/agent",
            "volumeMounts": [{"name": "docker", "mountPath": "/var/run/docker.sock"}]}],
        "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]
    })
}

fn reject() -> Value {
    json!({"incompatiblePod": "reject"})
}

#[test]
fn a_pod_kata_cannot_run_is_refused_with_every_finding_and_no_host_call() {
    let mut spec = docker_agent();
    spec["hostUsers"] = json!(false);
    let cluster = seed_cluster();
    let d = decide_payload(&with_settings(spec, reject()), &cluster);
    assert_eq!(
        d,
        Seen::Reject {
            explanation: "kata runtime required (incompatiblePod: reject), and not assigned: the pod sets \
                hostUsers: false (a user namespace), which the Kata runtime handler does not support: the kubelet \
                would not start it (skipPodsUsing: userNamespaces); container \"agent\" mounts host socket \
                /var/run/docker.sock (hostPath volume \"docker\"), which a Kata VM cannot reach \
                (skipPodsUsing: hostSockets)"
                .into(),
            code: Some(422),
        }
    );
    assert!(cluster.queries().is_empty(), "asked the cluster");
}

#[test]
fn accept_leaves_the_pod_as_before() {
    for settings in [json!({}), json!({"incompatiblePod": "accept"})] {
        let d = decide_payload(&with_settings(docker_agent(), settings), &seed_cluster());
        assert!(
            leave_text(&d)
                .starts_with("kata runtime not assigned: container \"agent\" mounts host socket")
        );
    }
}

#[test]
fn a_feature_turned_off_refuses_nothing() {
    let settings = json!({"incompatiblePod": "reject", "skipPodsUsing": ["userNamespaces"]});
    let d = decide_payload(&with_settings(docker_agent(), settings), &seed_cluster());
    assert_eq!(mutated_spec(&d)["runtimeClassName"], "kata");
}

#[test]
fn mirror_pods_and_allowed_classes_are_never_refused_for_a_finding() {
    let mirror = request(
        "Pod",
        "",
        "CREATE",
        json!({"metadata": {"name": "etcd-master", "annotations": {"kubernetes.io/config.mirror": "x"}},
            "spec": {"hostNetwork": true, "nodeName": "master", "containers": containers()}}),
        reject(),
    );
    assert!(leave_text(&decide_payload(&mirror, &seed_cluster())).contains("mirror pod"));
    let mut named = docker_agent();
    named["runtimeClassName"] = json!("gvisor");
    let settings = json!({"incompatiblePod": "reject", "allowedRuntimeClasses": ["gvisor"]});
    let d = decide_payload(&with_settings(named.clone(), settings), &seed_cluster());
    assert!(leave_text(&d).contains("already sets runtimeClassName \"gvisor\""));
    // Its own class: admitted quietly, as before.
    named["runtimeClassName"] = json!("kata");
    let d = decide_payload(&with_settings(named, reject()), &seed_cluster());
    assert!(matches!(d, Seen::Unchanged { warn: false, .. }), "{d:?}");
}

#[test]
fn the_refusal_survives_the_warning_cut() {
    let out = validate(&with_settings(docker_agent(), reject()), &seed_cluster());
    let rendered: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(rendered["accepted"], false);
    assert_eq!(rendered["audit_annotations"]["decision"], "rejected");
    let warning = rendered["warnings"][0].as_str().unwrap();
    assert!(
        warning.starts_with("kata runtime required (incompatiblePod: reject)"),
        "{warning}"
    );
    assert!(
        rendered["message"]
            .as_str()
            .unwrap()
            .ends_with("(skipPodsUsing: hostSockets)")
    );
}

/// A pod with `n` hostPath sockets, each mounted by its one container.
fn many_sockets(n: usize) -> Value {
    let mounts: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("s{i}"), "mountPath": format!("/s/{i}")}))
        .collect();
    let volumes: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("s{i}"), "hostPath": {"path": format!("/run/app-{i}.sock")}}))
        .collect();
    json!({"containers": [{"name": "agent", "image": "a", "volumeMounts": mounts}], "volumes": volumes})
}

#[test]
fn the_message_and_the_audit_reason_stay_bounded_whatever_the_pod() {
    use kata_runtime_policy::decision::explain::MAX_EXPLANATION_BYTES;
    // 16,000 sockets once gave 2.3 MB of audit reason and 2.2 MB of message.
    for settings in [reject(), json!({}), json!({"annotateDecision": true})] {
        let payload = with_settings(many_sockets(16_000), settings.clone());
        let rendered: Value = serde_json::from_slice(&kata_runtime_policy::response::render(
            review(&payload, &seed_cluster()),
        ))
        .unwrap();
        let reason = rendered["audit_annotations"]["reason"].as_str().unwrap();
        assert!(
            reason.len() <= MAX_EXPLANATION_BYTES,
            "{settings}: {}",
            reason.len()
        );
        // Whole findings, then how many were left out.
        assert!(reason.ends_with(" more"), "{reason}");
        let kept = reason.matches("which a Kata VM cannot reach").count();
        assert!(kept > 10, "{kept}");
        assert!(
            reason.contains(&format!("; and {} more", 16_000 - kept)),
            "{settings}: {kept} kept: {reason}"
        );
        if let Some(message) = rendered["message"].as_str() {
            assert_eq!(message, reason, "a refusal's message is its reason");
        }
    }
    // A handful of findings are all there, as before.
    let d = decide_payload(&with_settings(many_sockets(3), reject()), &seed_cluster());
    let Seen::Reject { explanation, .. } = d else {
        panic!("{d:?}")
    };
    assert_eq!(explanation.matches("/run/app-").count(), 3);
    assert!(!explanation.contains("more"));
}
