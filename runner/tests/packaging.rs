//! The packaging files agree with each other and with the policy:
//! metadata.yml, questions-ui.yml, policy-settings.json, the README's
//! settings table, Cargo.toml's version, and examples/ (artifacthub-pkg.yml:
//! artifacthub.rs). Example settings are validated by the compiled policy
//! itself.

mod common;

use std::collections::BTreeSet;

use common::{policy, root};
use serde_json::Value;

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn yaml_docs(path: &str) -> Vec<Value> {
    let text = std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_yaml::Deserializer::from_str(&text)
        .map(|doc| serde::Deserialize::deserialize(doc).unwrap_or_else(|e| panic!("{path}: {e}")))
        .filter(|v: &Value| !v.is_null())
        .collect()
}

fn cargo_version() -> String {
    let toml = std::fs::read_to_string(root().join("Cargo.toml")).unwrap();
    toml.lines()
        .find_map(|l| l.strip_prefix("version = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("package version")
        .to_string()
}

fn settings_defaults() -> serde_json::Map<String, Value> {
    let text = std::fs::read_to_string(root().join("policy-settings.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn metadata_describes_the_policy() {
    let m = yaml("metadata.yml");
    assert_eq!(
        m["rules"],
        serde_json::json!([{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"], "operations": ["CREATE"]}])
    );
    assert_eq!(m["mutating"], true);
    assert_eq!(m["backgroundAudit"], false);
    assert_eq!(m["executionMode"], "kubewarden-wapc");
    assert_eq!(
        m["minimumKubewardenVersion"], "1.33.0",
        "the first host that honours field masks"
    );
    assert_eq!(
        m["contextAwareResources"],
        serde_json::json!([{"apiVersion": "v1", "kind": "Node"}, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass"},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim"}, {"apiVersion": "v1", "kind": "PersistentVolume"},
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass"}])
    );
    assert_eq!(
        m["annotations"]["io.kubewarden.policy.version"],
        cargo_version()
    );
}

#[test]
fn every_setting_is_documented_and_asked_with_its_default() {
    let defaults = settings_defaults();
    let q = yaml("questions-ui.yml");
    let questions = q["questions"].as_array().expect("questions list");
    let asked: BTreeSet<&str> = questions
        .iter()
        .filter_map(|q| q["variable"].as_str())
        .collect();
    let known: BTreeSet<&str> = defaults.keys().map(String::as_str).collect();
    assert_eq!(asked, known);
    for question in questions {
        let name = question["variable"].as_str().unwrap();
        assert_eq!(question["default"], defaults[name], "{name}");
        assert!(
            !question["tooltip"].as_str().unwrap_or_default().is_empty(),
            "{name} has a tooltip"
        );
        if let Some(options) = question["options"].as_array() {
            assert_eq!(question["type"], "enum", "{name}");
            let expected: &[&str] = match name {
                "runtimeHandlerCheck" => &["auto", "required", "off"],
                _ => &["accept", "reject"],
            };
            let expected: Vec<Value> = expected.iter().map(|o| Value::from(*o)).collect();
            assert_eq!(options, &expected, "{name}");
            assert!(options.contains(&question["default"]), "{name}");
        }
    }
    // Every enum option is a value the policy accepts, and nothing else is.
    let p = policy();
    for question in questions {
        let name = question["variable"].as_str().unwrap();
        let Some(options) = question["options"].as_array() else {
            continue;
        };
        for option in options.iter().chain([&Value::from("bogus")]) {
            let settings = serde_json::to_vec(&serde_json::json!({ name: option })).unwrap();
            let verdict = p.validate_settings(&settings).unwrap();
            assert_eq!(
                verdict["valid"],
                options.contains(option),
                "{name}: {option} -> {verdict}"
            );
        }
    }
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    for name in known {
        assert!(
            readme.contains(&format!("| `{name}` |")),
            "README settings table lacks {name}"
        );
    }
    // The documented example is what the policy accepts, and it is the defaults.
    let text = std::fs::read(root().join("policy-settings.json")).unwrap();
    assert_eq!(p.validate_settings(&text).unwrap()["valid"], true);
}

#[test]
fn examples_are_ready_to_apply() {
    let m = yaml("metadata.yml");
    let p = policy();
    for (file, mode) in [
        ("examples/cluster-admission-policy.yaml", "protect"),
        ("examples/cluster-admission-policy-monitor.yaml", "monitor"),
    ] {
        let docs = yaml_docs(file);
        let cap = docs
            .iter()
            .find(|d| d["kind"] == "ClusterAdmissionPolicy")
            .unwrap_or_else(|| panic!("{file}"));
        assert_eq!(cap["apiVersion"], "policies.kubewarden.io/v1", "{file}");
        let spec = &cap["spec"];
        assert_eq!(spec["mode"], mode, "{file}");
        assert_eq!(spec["mutating"], true, "{file}");
        assert_eq!(spec["rules"], m["rules"], "{file}");
        assert_eq!(
            spec["contextAwareResources"], m["contextAwareResources"],
            "{file}"
        );
        assert!(
            spec["module"]
                .as_str()
                .unwrap()
                .starts_with("registry://ghcr.io/"),
            "{file}"
        );
        assert!(spec["failurePolicy"].is_string(), "{file}");
        let excluded = spec["namespaceSelector"]["matchExpressions"].to_string();
        assert!(
            excluded.contains("kube-system") && excluded.contains("kubewarden"),
            "{file}: {excluded}"
        );
        let settings = serde_json::to_vec(&spec["settings"]).unwrap();
        let verdict = p.validate_settings(&settings).unwrap();
        assert_eq!(verdict["valid"], true, "{file}: {verdict}");
    }

    let rbac = yaml_docs("examples/rbac.yaml");
    let role = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRole")
        .expect("ClusterRole");
    for (group, resource, verbs) in [
        ("", "nodes", &["get", "list", "watch"][..]),
        ("node.k8s.io", "runtimeclasses", &["get", "list", "watch"]),
        ("", "persistentvolumeclaims", &["get"]),
        ("", "persistentvolumes", &["get", "list", "watch"]),
        (
            "storage.k8s.io",
            "storageclasses",
            &["get", "list", "watch"],
        ),
    ] {
        let granted = role["rules"].as_array().unwrap().iter().any(|r| {
            let has = |k: &str, v: &str| r[k].as_array().is_some_and(|a| a.iter().any(|x| x == v));
            has("apiGroups", group)
                && has("resources", resource)
                && verbs.iter().all(|v| has("verbs", v))
        });
        assert!(granted, "{verbs:?} on {resource}");
    }
    let binding = rbac
        .iter()
        .find(|d| d["kind"] == "ClusterRoleBinding")
        .expect("ClusterRoleBinding");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);

    let rc = yaml_docs("examples/runtimeclass-kata.yaml");
    let rc = rc
        .iter()
        .find(|d| d["kind"] == "RuntimeClass")
        .expect("RuntimeClass");
    assert_eq!(
        rc["metadata"]["name"],
        settings_defaults()["runtimeClassName"]
    );
    let (key, value) = settings_defaults()["kataNodeSelector"]
        .as_str()
        .unwrap()
        .split_once('=')
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .unwrap();
    assert_eq!(
        rc["scheduling"]["nodeSelector"][key], value,
        "the class selects the nodes kataNodeSelector names"
    );
}

/// The features the compiled policy knows, from its own refusal of an
/// unknown one (`… known features: a, b, …`).
fn known_features() -> Vec<String> {
    let verdict = policy()
        .validate_settings(br#"{"skipPodsUsing": ["noSuchFeature"]}"#)
        .unwrap();
    assert_eq!(verdict["valid"], false, "{verdict}");
    let message = verdict["message"].as_str().expect("a message");
    let (_, list) = message
        .split_once("known features: ")
        .unwrap_or_else(|| panic!("{message}"));
    list.split(", ").map(str::to_string).collect()
}

/// The features named in a pod's audit reason, in order, each once.
fn features_named(reason: &str) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    for part in reason.split("(skipPodsUsing: ").skip(1) {
        let feature = part.split(')').next().unwrap().to_string();
        if !named.contains(&feature) {
            named.push(feature);
        }
    }
    named
}

/// The list the packaging files write out for `skipPodsUsing` is the list
/// the compiled policy applies when the setting is absent, and every file
/// that names the features (README tables, questions) names them all.
#[test]
fn the_shipped_skip_list_is_the_policys_default() {
    let known = known_features();
    // One pod that uses every known feature, judged before any host call.
    let mut request = common::request("pod-plain.json");
    request["object"]["spec"] = serde_json::json!({
        "hostNetwork": true,
        "hostUsers": false,
        "os": {"name": "windows"},
        "containers": [{
            "name": "all",
            "image": "registry.example.com/all:v1",
            "securityContext": {
                "privileged": true,
                "seccompProfile": {"type": "RuntimeDefault"},
                "appArmorProfile": {"type": "RuntimeDefault"},
                "seLinuxOptions": {"level": "s0:c1,c2"}
            },
            "resources": {"limits": {"nvidia.com/gpu": "1"}, "claims": [{"name": "gpu"}]},
            "volumeMounts": [
                {"name": "docker", "mountPath": "/var/run/docker.sock"},
                {"name": "fuse", "mountPath": "/dev/fuse"},
                {"name": "host", "mountPath": "/host", "mountPropagation": "HostToContainer"},
                {"name": "scratch", "mountPath": "/scratch", "subPath": "a"}
            ]
        }],
        "volumes": [
            {"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}},
            {"name": "fuse", "hostPath": {"path": "/dev/fuse", "type": "CharDevice"}},
            {"name": "host", "hostPath": {"path": "/srv"}},
            {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    });
    let p = policy();
    let reason_with = |settings: Value| {
        let verdict = p
            .validate(&request, &settings, kwrun::Session::none())
            .unwrap();
        assert_eq!(
            verdict["audit_annotations"]["decision"], "unchanged",
            "{verdict}"
        );
        verdict["audit_annotations"]["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let all = reason_with(serde_json::json!({ "skipPodsUsing": known }));
    assert_eq!(features_named(&all), known, "the pod uses every feature");
    let default = features_named(&reason_with(serde_json::json!({})));

    let shipped: Vec<String> =
        serde_json::from_value(settings_defaults()["skipPodsUsing"].clone()).unwrap();
    assert_eq!(shipped, default, "policy-settings.json");
    for file in [
        "examples/cluster-admission-policy.yaml",
        "examples/cluster-admission-policy-monitor.yaml",
    ] {
        let docs = yaml_docs(file);
        let cap = docs
            .iter()
            .find(|d| d["kind"] == "ClusterAdmissionPolicy")
            .unwrap();
        assert_eq!(
            cap["spec"]["settings"]["skipPodsUsing"],
            serde_json::json!(default),
            "{file}"
        );
    }

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let quoted: Vec<String> = default.iter().map(|f| format!("\"{f}\"")).collect();
    let row = format!(
        "| `skipPodsUsing` | list of strings | `[{}]` |",
        quoted.join(", ")
    );
    assert!(readme.contains(&row), "README settings table: {row}");
    // "What Kata cannot run": the table of defaults, then the opt-in one.
    let section = readme.split_once("## What Kata cannot run\n").unwrap().1;
    let (defaults_table, rest) = section
        .split_once("\nOpt-in")
        .expect("an opt-in table after the defaults");
    let opt_in_table = rest.split("\n\n").nth(1).expect("the opt-in table");
    let rows = |table: &str| -> Vec<String> {
        table
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |"))
            .map(|(name, _)| name.to_string())
            .collect()
    };
    assert_eq!(rows(defaults_table), default, "README defaults table");
    let opt_in: Vec<String> = known
        .iter()
        .filter(|f| !default.contains(f))
        .cloned()
        .collect();
    assert_eq!(rows(opt_in_table), opt_in, "README opt-in table");

    let q = yaml("questions-ui.yml");
    let question = q["questions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|q| q["variable"] == "skipPodsUsing")
        .unwrap();
    let description = question["description"].as_str().unwrap();
    for feature in &known {
        assert!(
            description.contains(feature.as_str()),
            "questions-ui.yml skipPodsUsing lacks {feature}"
        );
    }
}

/// The settings of the ClusterAdmissionPolicy in `file`.
fn example_settings(file: &str) -> Value {
    let docs = yaml_docs(file);
    let cap = docs
        .iter()
        .find(|d| d["kind"] == "ClusterAdmissionPolicy")
        .unwrap_or_else(|| panic!("{file}"));
    cap["spec"]["settings"].clone()
}

/// policy-settings.json writes out every setting the compiled policy knows
/// (from its own refusal of an unknown one), the deprecated one aside.
#[test]
fn the_shipped_defaults_name_every_setting() {
    let verdict = policy()
        .validate_settings(br#"{"noSuchSetting": true}"#)
        .unwrap();
    assert_eq!(verdict["valid"], false, "{verdict}");
    let message = verdict["message"].as_str().expect("a message");
    let (_, list) = message
        .split_once("known settings: ")
        .unwrap_or_else(|| panic!("{message}"));
    let known: BTreeSet<&str> = list
        .split(", ")
        .filter(|s| !s.ends_with("(deprecated)"))
        .collect();
    let defaults = settings_defaults();
    let shipped: BTreeSet<&str> = defaults.keys().map(String::as_str).collect();
    assert_eq!(shipped, known, "policy-settings.json");
    assert!(known.contains("incompatiblePod"), "{message}");
}

/// examples/cluster-admission-policy-kata-mandatory.yaml is what the README's
/// "Kata-mandatory namespaces" says it is, and the compiled policy, with its
/// settings, gives each kind of pod the outcome and the message the README's
/// table quotes.
#[test]
fn the_kata_mandatory_example_is_what_the_readme_documents() {
    const FILE: &str = "examples/cluster-admission-policy-kata-mandatory.yaml";
    const LABEL: &str = "kata-runtime-policy.kubewarden.io/kata-mandatory";
    let m = yaml("metadata.yml");
    let docs = yaml_docs(FILE);
    let cap = docs
        .iter()
        .find(|d| d["kind"] == "ClusterAdmissionPolicy")
        .expect("a ClusterAdmissionPolicy");
    assert_eq!(cap["apiVersion"], "policies.kubewarden.io/v1");
    assert_eq!(cap["metadata"]["name"], "kata-runtime-mandatory");
    let spec = &cap["spec"];
    assert_eq!(spec["mode"], "protect");
    assert_eq!(spec["mutating"], true);
    assert_eq!(spec["rules"], m["rules"]);
    assert_eq!(spec["contextAwareResources"], m["contextAwareResources"]);
    assert_eq!(spec["failurePolicy"], "Fail");
    assert_eq!(
        spec["namespaceSelector"],
        serde_json::json!({"matchExpressions": [{"key": LABEL, "operator": "In", "values": ["true"]}]})
    );
    let settings = spec["settings"].clone();
    for (key, value) in [
        ("incompatiblePod", serde_json::json!("reject")),
        ("noFeasibleNode", serde_json::json!("reject")),
        ("allowedRuntimeClasses", serde_json::json!([])),
        ("lookupFailure", serde_json::json!("reject")),
    ] {
        assert_eq!(settings[key], value, "{key}");
    }
    let p = policy();
    let verdict = p
        .validate_settings(&serde_json::to_vec(&settings).unwrap())
        .unwrap();
    assert_eq!(verdict["valid"], true, "{verdict}");

    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let section = readme
        .split_once("\n## Kata-mandatory namespaces\n")
        .expect("a Kata-mandatory section")
        .1;
    let section = section.split("\n## ").next().unwrap();
    assert!(section.contains(&format!("`{FILE}`")), "names the example");
    assert!(
        section.contains(&format!("kubectl label namespace tenant-a {LABEL}=true")),
        "labels namespaces as the example selects them"
    );
    // The settings block is the example's settings.
    let block = section
        .split_once("```yaml\nsettings:\n")
        .expect("a settings block")
        .1
        .split_once("```")
        .unwrap()
        .0;
    let documented: Value = serde_yaml::from_str(block).unwrap();
    assert_eq!(documented, settings, "README settings block");
    // The NotIn expression offered for the general policy names the label.
    assert!(
        section.contains(&format!(
            "- key: {LABEL}\n        operator: NotIn\n        values: [\"true\"]"
        )),
        "a NotIn expression on the label"
    );

    // Each kind of pod, through the compiled policy with the example's settings.
    let verdict_for = |request: &Value, session: &str| {
        let session = if session.is_empty() {
            kwrun::Session::none()
        } else {
            common::session(session)
        };
        p.validate(request, &settings, session).unwrap()
    };
    let refused_with = |request: &Value, session: &str| -> String {
        let v = verdict_for(request, session);
        assert_eq!(v["accepted"], false, "{v}");
        assert_eq!(v["audit_annotations"]["decision"], "rejected", "{v}");
        let message = v["message"].as_str().unwrap().to_string();
        assert!(
            section.contains(&format!("`{message}`")),
            "README Kata-mandatory table lacks `{message}`"
        );
        message
    };
    let prefix = "kata runtime required (incompatiblePod: reject), and not assigned: ";
    refused_with(&common::request("pod-user-namespace.json"), "");
    for pod in ["pod-docker-agent.json", "pod-dra-template.json"] {
        let v = verdict_for(&common::request(pod), "");
        assert_eq!(v["accepted"], false, "{pod}: {v}");
        let message = v["message"].as_str().unwrap();
        let findings = message
            .strip_prefix(prefix)
            .unwrap_or_else(|| panic!("{pod}: {message}"));
        assert!(
            section.contains(&format!("`… and not assigned: {findings}`")),
            "README Kata-mandatory table lacks {pod}'s findings: {findings}"
        );
    }
    refused_with(&common::request("pod-runc.json"), "");
    refused_with(
        &common::request("pod-master-pinned.json"),
        "kata-workers.yml",
    );
    refused_with(
        &common::request("pod-plain.json"),
        "nodes-access-denied.yml",
    );

    let plain = verdict_for(&common::request("pod-plain.json"), "kata-workers.yml");
    assert_eq!(plain["accepted"], true, "{plain}");
    assert_eq!(plain["mutated_object"]["spec"]["runtimeClassName"], "kata");
    let reason = plain["audit_annotations"]["reason"].as_str().unwrap();
    assert!(section.contains(&format!("`{reason}`")), "{reason}");

    let mut kata = common::request("pod-plain.json");
    kata["object"]["spec"]["runtimeClassName"] = "kata".into();
    let v = verdict_for(&kata, "");
    assert_eq!(v["accepted"], true, "{v}");
    let reason = v["audit_annotations"]["reason"].as_str().unwrap();
    assert!(section.contains(&format!("`{reason}`")), "{reason}");

    // A mirror pod is admitted even when it uses a feature Kata lacks.
    let mut mirror = common::request("pod-plain.json");
    mirror["object"]["metadata"]["annotations"] =
        serde_json::json!({"kubernetes.io/config.mirror": "0123456789abcdef"});
    mirror["object"]["spec"]["hostNetwork"] = true.into();
    let v = verdict_for(&mirror, "");
    assert_eq!(v["accepted"], true, "{v}");
    assert_eq!(v["audit_annotations"]["decision"], "unchanged", "{v}");
    let reason = v["audit_annotations"]["reason"].as_str().unwrap();
    assert!(section.contains(&format!("`{reason}`")), "{reason}");

    // The general examples keep such pods, unchanged (incompatiblePod: accept).
    for file in [
        "examples/cluster-admission-policy.yaml",
        "examples/cluster-admission-policy-monitor.yaml",
    ] {
        let general = example_settings(file);
        assert_eq!(general["incompatiblePod"], "accept", "{file}");
        let v = p
            .validate(
                &common::request("pod-user-namespace.json"),
                &general,
                kwrun::Session::none(),
            )
            .unwrap();
        assert_eq!(v["accepted"], true, "{file}: {v}");
        assert_eq!(v["audit_annotations"]["decision"], "unchanged", "{file}");
    }
}
