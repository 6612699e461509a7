//! The requests the policy sends and how host errors are read.

use super::*;

#[test]
fn one_stable_node_query() {
    let json = serde_json::to_value(kata_nodes_request(
        Some("katacontainers.io/kata-runtime=true"),
        NodeMasks::Plain,
    ))
    .unwrap();
    assert_eq!(
        json,
        serde_json::json!({"api_version": "v1", "kind": "Node",
            "label_selector": "katacontainers.io/kata-runtime=true", "field_selector": null,
            "field_masks": ["spec.taints", "spec.unschedulable", "status.allocatable"]})
    );
    // The masks go out in the order kwctl's replay compares them in
    // (sorted), whichever query it is.
    for (masks, status) in [
        (
            NodeMasks::HandlerNames,
            &["status.runtimeHandlers.name"][..],
        ),
        (
            NodeMasks::HandlerFeatures,
            &["status.features", "status.runtimeHandlers"][..],
        ),
    ] {
        let mut expected = vec!["spec.taints", "spec.unschedulable", "status.allocatable"];
        expected.extend(status);
        let expected = serde_json::json!(expected);
        let list = serde_json::to_value(kata_nodes_request(None, masks)).unwrap();
        assert_eq!(list["field_masks"], expected);
        let get = serde_json::to_value(node_request("w1", masks)).unwrap();
        assert_eq!(get["field_masks"], expected);
    }
    let rc = serde_json::to_value(runtime_class_request("kata")).unwrap();
    assert_eq!(
        rc,
        serde_json::json!({"api_version": "node.k8s.io/v1", "kind": "RuntimeClass", "name": "kata",
            "namespace": null, "disable_cache": true, "field_masks": null})
    );
}

/// One read stuck on a silent connection must hold up its own
/// admission only: no one-shot read goes through policy-server's
/// locked cache.
#[test]
fn every_one_shot_read_skips_the_shared_cache() {
    let subject = Subject {
        user: "u",
        groups: vec![],
    };
    let gets = [
        runtime_class_request("kata"),
        node_request("w1", NodeMasks::HandlerNames),
    ]
    .into_iter()
    .chain(
        [
            VolumeKind::PersistentVolumeClaim,
            VolumeKind::PersistentVolume,
            VolumeKind::StorageClass,
        ]
        .map(|kind| object_request(kind, Some("ns"), "x")),
    );
    for get in gets {
        assert!(get.disable_cache, "{} {}", get.kind, get.name);
    }
    for verb in ["list", "watch"] {
        assert!(can_i_request(&subject, verb).disable_cache);
        assert!(
            access_request(&subject, verb, VolumeKind::PersistentVolume.resource()).disable_cache
        );
    }
}

#[test]
fn volume_reads_are_fixed_masked_queries() {
    let claim = serde_json::to_value(object_request(
        VolumeKind::PersistentVolumeClaim,
        Some("default"),
        "data-0",
    ))
    .unwrap();
    assert_eq!(claim["namespace"], "default");
    assert_eq!(claim["field_masks"], serde_json::json!(PVC_FIELD_MASKS));
    let class =
        serde_json::to_value(object_request(VolumeKind::StorageClass, None, "gp3")).unwrap();
    assert_eq!(class["api_version"], "storage.k8s.io/v1");
    assert_eq!(class["field_masks"], serde_json::Value::Null);
    assert_eq!(
        serde_json::to_value(objects_request(VolumeKind::PersistentVolume)).unwrap(),
        serde_json::json!({"api_version": "v1", "kind": "PersistentVolume", "label_selector": null,
            "field_selector": null, "field_masks": PV_FIELD_MASKS})
    );
    let subject = Subject {
        user: "u",
        groups: vec![],
    };
    let access = serde_json::to_value(access_request(
        &subject,
        "list",
        VolumeKind::StorageClass.resource(),
    ))
    .unwrap();
    assert_eq!(
        access["subject_access_review"]["resource_attributes"]["group"],
        "storage.k8s.io"
    );
    assert_eq!(
        access["subject_access_review"]["resource_attributes"]["resource"],
        "storageclasses"
    );
    assert_eq!(
        VolumeKind::StorageClass.resource().qualified(),
        "storageclasses.storage.k8s.io"
    );
}

#[test]
fn the_access_question_is_a_subject_access_review_on_nodes() {
    let subject = Subject {
        user: "system:serviceaccount:kubewarden:policy-server",
        groups: vec!["system:serviceaccounts".into()],
    };
    assert_eq!(
        serde_json::to_value(can_i_request(&subject, "watch")).unwrap(),
        serde_json::json!({"subject_access_review": {"groups": ["system:serviceaccounts"],
            "resource_attributes": {"group": "", "name": null, "namespace": null, "resource": "nodes",
                "subresource": null, "verb": "watch", "version": null},
            "user": "system:serviceaccount:kubewarden:policy-server"}, "disable_cache": true})
    );
    assert_eq!(
        parse_access(br#"{"allowed":true,"reason":"RBAC: allowed by ClusterRoleBinding"}"#),
        Ok(Access {
            allowed: true,
            reason: Some("RBAC: allowed by ClusterRoleBinding".into())
        })
    );
    assert!(
        !parse_access(br#"{"allowed":false,"denied":true}"#)
            .unwrap()
            .allowed
    );
    assert!(
        !parse_access(b"{}").unwrap().allowed,
        "no answer is no permission"
    );
    assert!(
        parse_access(b"<html>")
            .unwrap_err()
            .message
            .contains("not a SubjectAccessReviewStatus")
    );
}

#[test]
fn host_errors_lose_backtraces_and_line_breaks() {
    let noisy = "Host error: Callback evaluation failure: ApiError: nodes is forbidden: User \"x\" cannot list \
                 resource \"nodes\": Forbidden (Status { code: 403 })\n\nCaused by:\n    forbidden\n\n\
                 Stack backtrace:\n   0: anyhow::error::<impl anyhow::Error>::msg\n   1: policy_evaluator::x\n";
    let e = LookupError::from_host(noisy.into());
    assert_eq!(
        e.message,
        "ApiError: nodes is forbidden: User \"x\" cannot list resource \"nodes\": Forbidden (Status { code: 403 }) \
         Caused by: forbidden"
    );
    assert_eq!(e.kind, LookupErrorKind::Forbidden);
    assert_eq!(LookupError::from_host("plain".into()).message, "plain");
    assert_eq!(
        LookupError::from_host("Host error: a\r\n  b".into()).message,
        "a b"
    );
}

/// kwctl's replay texts (policy-evaluator's), as the guest receives them.
const KWCTL_MISMATCH: &str = "Host error: Callback evaluation failure: Replay error: unexpected request. \
    Was expecting KubernetesCanI { request: SubjectAccessReview { groups: Some([\"system:serviceaccounts\"]), \
    resource_attributes: ResourceAttributes { group: Some(\"\"), name: None, namespace: None, resource: \"nodes\", \
    subresource: None, verb: \"list\", version: None }, user: \"system:serviceaccount:kubewarden:policy-server\" }, \
    disable_cache: false }, got KubernetesCanI { request: SubjectAccessReview { groups: Some([\"system:serviceaccounts\"]), \
    resource_attributes: ResourceAttributes { group: Some(\"\"), name: None, namespace: None, resource: \"nodes\", \
    subresource: None, verb: \"list\", version: None }, user: \"system:serviceaccount:kubewarden:kata-runtime-policy\" }, \
    disable_cache: false } instead";
const KWCTL_EXHAUSTED: &str =
    "Host error: Callback evaluation failure: the list of recorded responses is empty";

#[test]
fn a_replay_miss_says_what_it_means_then_the_hosts_text() {
    let e = LookupError::from_host(KWCTL_MISMATCH.into());
    assert_eq!(e.kind, LookupErrorKind::Replay);
    assert_eq!(
        e.message,
        format!(
            "the recorded session has no answer for this request (recorded for another \
             policyServerServiceAccount, pod or settings?): {}",
            KWCTL_MISMATCH
                .strip_prefix("Host error: Callback evaluation failure: ")
                .unwrap()
        )
    );
    assert!(e.message.ends_with("} instead"), "{}", e.message);
    let e = LookupError::from_host(KWCTL_EXHAUSTED.into());
    assert_eq!(e.kind, LookupErrorKind::Replay);
    assert_eq!(
        e.message,
        format!("{REPLAY_MISS}: the list of recorded responses is empty")
    );
    // The requests it quotes may name anything: still a replay miss,
    // never a missing object (which would read as "does not exist").
    for quoted in ["\"not found\"", "Forbidden", "NotFound"] {
        let text = format!(
            "Replay error: unexpected request. Was expecting KubernetesGetResource {{ name: {quoted:?} }}, got X instead"
        );
        assert_eq!(
            LookupError::from_host(text).kind,
            LookupErrorKind::Replay,
            "{quoted}"
        );
    }
    // Without a replay, the host's text is left as it was.
    assert_eq!(LookupError::from_host("timeout".into()).message, "timeout");
}

#[test]
fn classifies_host_errors() {
    let forbidden = LookupError::from_host(
        "Host error: nodes is forbidden: User \"system:serviceaccount:kubewarden:policy-server\" cannot list resource \"nodes\"".into(),
    );
    assert_eq!(forbidden.kind, LookupErrorKind::Forbidden);
    let kind = |m: &str| LookupError::from_host(m.into()).kind;
    assert_eq!(kind("Host error: timeout"), LookupErrorKind::Failed);
    assert_eq!(
        LookupError::from_host("Host error: Callback evaluation failure: timeout".into()).message,
        "timeout"
    );
    assert_eq!(
        kind(
            "Host error: Callback evaluation failure: Cannot find node.k8s.io/v1/RuntimeClass named 'kata' inside of namespace 'None'"
        ),
        LookupErrorKind::NotFound
    );
    assert_eq!(
        kind("runtimeclasses.node.k8s.io \"kata\" not found"),
        LookupErrorKind::NotFound
    );
    assert_eq!(
        kind("Policy has not been granted access to Kubernetes v1/Node resources"),
        LookupErrorKind::Forbidden
    );
    assert_eq!(
        kind("runtimeclasses.node.k8s.io \"kata\" is forbidden: not found in cache"),
        LookupErrorKind::Forbidden
    );
}
