//! Host failure matrix: every way the cluster can fail to answer, through
//! the waPC host with session files, under both `lookupFailure` settings.
//! Each gets its documented outcome, a clear message and no trap.

mod common;

use common::{request, session, test_policy};
use kwrun::{CallbackRequest, Exchange, Response, Session};
use serde_json::{Value, json};

/// (session file, settings, allowed, text the reason must contain)
const MATRIX: &[(&str, &str, bool, &str)] = &[
    // RBAC: policy-server may not list nodes.
    (
        "forbidden.yml",
        r#"{}"#,
        true,
        "cannot list kata nodes (forbidden: grant policy-server get/list/watch",
    ),
    (
        "forbidden.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "nodes is forbidden",
    ),
    // can_i says policy-server may neither list nor watch nodes: no list is
    // made (policy-server's would hang), the session has none to answer.
    (
        "nodes-access-denied.yml",
        r#"{}"#,
        true,
        "cannot list kata nodes (forbidden: system:serviceaccount:kubewarden:policy-server may not list, watch nodes; grant policy-server get/list/watch",
    ),
    (
        "nodes-access-denied.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "may not list, watch nodes",
    ),
    // can_i itself fails: nothing more is asked.
    (
        "can-i-error.yml",
        r#"{}"#,
        true,
        "cannot check whether system:serviceaccount:kubewarden:policy-server may list nodes (kubernetes/can_i; \
         policy-server needs create on subjectaccessreviews.authorization.k8s.io): HyperError: error trying to connect",
    ),
    (
        "can-i-error.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "HyperError: error trying to connect",
    ),
    // The RuntimeClass does not exist: no pod can use it (noFeasibleNode).
    (
        "runtimeclass-missing.yml",
        r#"{}"#,
        true,
        "RuntimeClass \"kata\" does not exist",
    ),
    (
        "runtimeclass-missing.yml",
        r#"{"noFeasibleNode":"reject"}"#,
        false,
        "RuntimeClass \"kata\" does not exist",
    ),
    (
        "runtimeclass-missing.yml",
        r#"{"lookupFailure":"reject"}"#,
        true,
        "does not exist",
    ),
    // Timeouts and other host errors.
    (
        "host-timeout.yml",
        r#"{}"#,
        true,
        "cannot list kata nodes: error sending request",
    ),
    (
        "host-timeout.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "operation timed out",
    ),
    // A host error with a backtrace (RUST_BACKTRACE=1): the message only,
    // on one line (the test also checks there is no line break).
    (
        "host-error-backtrace.yml",
        r#"{}"#,
        true,
        "cannot list kata nodes: error sending request for url (https://kubernetes.default.svc/api/v1/nodes?labelSelector=katacontainers.io%2Fkata-runtime%3Dtrue): operation timed out",
    ),
    // Answers that are not what was asked for.
    (
        "nodes-truncated.yml",
        r#"{}"#,
        true,
        "not a valid NodeList: EOF while parsing",
    ),
    (
        "nodes-truncated.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "not a valid NodeList",
    ),
    (
        "nodes-not-json.yml",
        r#"{}"#,
        true,
        "not a valid NodeList: not a JSON object",
    ),
    (
        "nodes-not-json.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "not a valid NodeList",
    ),
    (
        "nodes-wrong-kind.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "kind is \"PodList\"",
    ),
    (
        "runtimeclass-wrong-kind.yml",
        r#"{}"#,
        true,
        "not a valid node.k8s.io/v1 RuntimeClass",
    ),
    (
        "runtimeclass-wrong-kind.yml",
        r#"{"lookupFailure":"reject"}"#,
        false,
        "not a valid node.k8s.io/v1 RuntimeClass",
    ),
    // An empty list is an answer, not a failure: noFeasibleNode.
    (
        "no-kata-nodes.yml",
        r#"{}"#,
        true,
        "no node matches kataNodeSelector",
    ),
    (
        "no-kata-nodes.yml",
        r#"{"lookupFailure":"reject"}"#,
        true,
        "no node matches kataNodeSelector",
    ),
    (
        "no-kata-nodes.yml",
        r#"{"noFeasibleNode":"reject"}"#,
        false,
        "no node matches kataNodeSelector",
    ),
];

#[test]
fn every_host_failure_has_its_documented_outcome() {
    let p = test_policy();
    for (file, settings, allowed, reason) in MATRIX {
        let settings: Value = serde_json::from_str(settings).unwrap();
        let verdict = p
            .validate(&request("pod-plain.json"), &settings, session(file))
            .unwrap_or_else(|e| panic!("{file} {settings}: the guest failed: {e:#}"));
        let context = format!("{file} {settings}: {verdict}");
        assert_eq!(verdict["accepted"], *allowed, "{context}");
        assert_eq!(verdict["mutated_object"], Value::Null, "{context}");
        let text = verdict["audit_annotations"]["reason"]
            .as_str()
            .unwrap_or_default();
        assert!(text.contains(reason), "{context}");
        assert!(
            !text.contains('\n') && !text.contains("backtrace"),
            "{context}"
        );
        let warning = verdict["warnings"][0].as_str().unwrap_or_default();
        assert!(!warning.is_empty() && warning.len() <= 255, "{context}");
        if !allowed {
            assert_eq!(verdict["message"].as_str(), Some(text), "{context}");
        }
    }
}

/// With `annotateDecision`, every host failure has the same outcome; an
/// admitted pod carries the reason without its "kata runtime not
/// assigned: " start, in one line, a refused one no patch.
#[test]
fn every_host_failure_is_annotated_only_when_admitted() {
    let p = test_policy();
    for (file, settings, allowed, reason) in MATRIX {
        let mut settings: Value = serde_json::from_str(settings).unwrap();
        settings["annotateDecision"] = json!(true);
        let verdict = p
            .validate(&request("pod-plain.json"), &settings, session(file))
            .unwrap_or_else(|e| panic!("{file} {settings}: the guest failed: {e:#}"));
        let context = format!("{file} {settings}: {verdict}");
        assert_eq!(verdict["accepted"], *allowed, "{context}");
        let value = &verdict["mutated_object"]["metadata"]["annotations"]["kata-runtime-policy.kubewarden.io/decision"];
        if !allowed {
            assert_eq!(verdict["mutated_object"], Value::Null, "{context}");
            continue;
        }
        let value = value.as_str().unwrap_or_else(|| panic!("{context}"));
        let audit = verdict["audit_annotations"]["reason"].as_str().unwrap();
        assert!(
            value.starts_with("unchanged: ") && value.contains(reason),
            "{context}"
        );
        assert!(!value.contains('\n') && value.len() <= 512, "{context}");
        if audit.len() < 500 {
            assert_eq!(
                value,
                format!(
                    "unchanged: {}",
                    audit.strip_prefix("kata runtime not assigned: ").unwrap()
                ),
                "{context}"
            );
        }
        assert_eq!(
            verdict["mutated_object"]["spec"].get("runtimeClassName"),
            None
        );
    }
}

/// policy-server may not read the pod's claim: `lookupFailure`, and the
/// warning (cut to 255 bytes) still names the setting that turns the check
/// off and the permission.
#[test]
fn a_refused_volume_read_names_the_setting_in_the_warning() {
    let p = test_policy();
    for (settings, allowed) in [
        (json!({}), true),
        (json!({"lookupFailure": "reject"}), false),
    ] {
        let verdict = p
            .validate(
                &request("pod-statefulset.json"),
                &settings,
                session("volume-forbidden.yml"),
            )
            .unwrap_or_else(|e| panic!("the guest failed: {e:#}"));
        assert_eq!(verdict["accepted"], allowed, "{verdict}");
        let warning = verdict["warnings"][0].as_str().unwrap_or_default();
        let lead = match allowed {
            true => "kata runtime not assigned: ",
            false => "kata runtime required (lookupFailure: reject), and not assigned: ",
        };
        let rest = warning.strip_prefix(lead).unwrap_or_default();
        assert!(
            rest.starts_with(
                "cannot read PersistentVolumeClaim default/data-web-0 \
                 (forbidden: set checkVolumes: false or grant policy-server get on persistentvolumeclaims"
            ),
            "{warning}"
        );
    }
}

/// A NodeList of `count` nodes built by repeating a template (fast even in
/// a debug build); the last node alone has the `fits` label.
fn big_node_list(count: usize) -> String {
    let mut out = String::with_capacity(count * 400 + 64);
    out.push_str(r#"{"apiVersion":"v1","kind":"NodeList","metadata":{},"items":["#);
    for i in 0..count {
        if i > 0 {
            out.push(',');
        }
        let fits = if i + 1 == count {
            r#","fits":"yes""#
        } else {
            ""
        };
        out.push_str(&format!(
            r#"{{"apiVersion":"v1","kind":"Node","metadata":{{"name":"node-{i:06}","labels":{{"katacontainers.io/kata-runtime":"true","kubernetes.io/hostname":"node-{i:06}","topology.kubernetes.io/zone":"zone-{z}"{fits}}},"annotations":{{"node.alpha.kubernetes.io/ttl":"0"}}}},"spec":{{"taints":[{{"key":"dedicated","value":"batch","effect":"{e}"}}]}}}}"#,
            z = i % 3,
            e = if i % 5 == 0 { "NoSchedule" } else { "PreferNoSchedule" },
        ));
    }
    out.push_str("]}");
    out
}

/// The last node of `big_node_list`, as a read by name answers it.
fn last_node(nodes: &str) -> String {
    let start = nodes.rfind(r#"{"apiVersion":"v1","kind":"Node","#).unwrap();
    nodes[start..nodes.len() - 2].to_string()
}

fn big_session(nodes: &str) -> Session {
    let rc = r#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata"},"handler":"kata"}"#;
    // The two access questions, as recorded in the project's sessions.
    let access: Vec<Exchange> = session("kata-workers.yml")
        .pending()
        .filter(|e| matches!(e.request, CallbackRequest::KubernetesCanI { .. }))
        .cloned()
        .collect();
    assert_eq!(access.len(), 2);
    let [list, watch] = <[Exchange; 2]>::try_from(access).unwrap();
    Session::from_exchanges([
        Exchange {
            request: CallbackRequest::KubernetesGetResource {
                api_version: "node.k8s.io/v1".into(),
                kind: "RuntimeClass".into(),
                name: "kata".into(),
                namespace: None,
                disable_cache: true,
                field_masks: None,
            },
            response: Response::Success { payload: rc.into() },
        },
        list,
        watch,
        Exchange {
            request: CallbackRequest::KubernetesListResourceAll {
                api_version: "v1".into(),
                kind: "Node".into(),
                label_selector: Some("katacontainers.io/kata-runtime=true".into()),
                field_selector: None,
                field_masks: Some(
                    ["spec.taints", "spec.unschedulable", "status.allocatable"]
                        .map(String::from)
                        .into(),
                ),
            },
            response: Response::Success {
                payload: nodes.into(),
            },
        },
        // The one candidate, read by name with the handlers.
        Exchange {
            request: CallbackRequest::KubernetesGetResource {
                api_version: "v1".into(),
                kind: "Node".into(),
                name: "node-099999".into(),
                namespace: None,
                disable_cache: true,
                field_masks: Some(
                    [
                        "spec.taints",
                        "spec.unschedulable",
                        "status.allocatable",
                        "status.runtimeHandlers.name",
                    ]
                    .map(String::from)
                    .into(),
                ),
            },
            response: Response::Success {
                payload: last_node(nodes),
            },
        },
    ])
}

#[test]
fn a_list_of_100000_nodes_is_handled_in_full() {
    let p = test_policy();
    let nodes = big_node_list(100_000);
    assert!(nodes.len() > 30_000_000, "{} bytes", nodes.len());
    let mut pod = request("pod-plain.json");

    // Only the last of 100,000 nodes fits: the whole list is read.
    pod["object"]["spec"]["nodeSelector"] = json!({"fits": "yes"});
    let last = p
        .validate(&pod, &json!({}), big_session(&nodes))
        .expect("no trap");
    assert_eq!(
        last["audit_annotations"]["decision"], "mutated",
        "{}",
        last["audit_annotations"]
    );

    // None fits: the full diagnosis, counted over every node.
    pod["object"]["spec"]["nodeSelector"] = json!({"fits": "no"});
    let none = p
        .validate(&pod, &json!({}), big_session(&nodes))
        .expect("no trap");
    assert_eq!(
        none["audit_annotations"]["reason"],
        "kata runtime not assigned: 0/100000 kata nodes can run this pod: \
         80000 node(s) didn't match Pod's node affinity/selector, \
         20000 node(s) had untolerated taint {dedicated: batch}"
    );
}
