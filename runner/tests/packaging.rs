//! The packaging files agree with each other and with the policy:
//! metadata.yml, artifacthub-pkg.yml, questions-ui.yml, policy-settings.json,
//! the README's settings table, Cargo.toml's version, and examples/.
//! Example settings are validated by the compiled policy itself.

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

/// A YAML document embedded as a string (artifacthub annotations).
fn embedded(v: &Value) -> Value {
    serde_yaml::from_str(v.as_str().expect("an embedded YAML string")).expect("embedded YAML")
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
        serde_json::json!([{"apiVersion": "v1", "kind": "Node"}, {"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass"}])
    );
    assert_eq!(
        m["annotations"]["io.kubewarden.policy.version"],
        cargo_version()
    );
}

#[test]
fn artifacthub_package_agrees_with_metadata_and_questions() {
    let m = yaml("metadata.yml");
    let a = yaml("artifacthub-pkg.yml");
    let version = cargo_version();
    assert_eq!(a["version"], version);
    assert_eq!(a["name"], m["annotations"]["io.kubewarden.policy.title"]);
    assert_eq!(
        a["displayName"],
        m["annotations"]["io.artifacthub.displayName"]
    );
    assert_eq!(
        a["description"],
        m["annotations"]["io.kubewarden.policy.description"]
    );
    assert_eq!(
        a["license"],
        m["annotations"]["io.kubewarden.policy.license"]
    );
    let keywords: Vec<String> = m["annotations"]["io.artifacthub.keywords"]
        .as_str()
        .unwrap()
        .split(',')
        .map(|k| k.trim().to_string())
        .collect();
    assert_eq!(a["keywords"], serde_json::json!(keywords));
    let ann = &a["annotations"];
    assert_eq!(ann["kubewarden/mutation"], "true");
    assert_eq!(
        ann["kubewarden/resources"],
        m["annotations"]["io.artifacthub.resources"]
    );
    assert_eq!(embedded(&ann["kubewarden/rules"]), m["rules"]);
    assert_eq!(
        embedded(&ann["kubewarden/contextAwareResources"]),
        m["contextAwareResources"]
    );
    assert_eq!(
        embedded(&ann["kubewarden/questions-ui"]),
        yaml("questions-ui.yml"),
        "questions-ui.yml embedded verbatim"
    );
    let image = format!(
        "{}:v{version}",
        m["annotations"]["io.kubewarden.policy.ociUrl"]
            .as_str()
            .unwrap()
    );
    assert_eq!(a["containersImages"][0]["image"], image);
    assert!(
        a["install"]
            .as_str()
            .unwrap()
            .contains(&format!("kwctl pull {image}"))
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
            assert_eq!(
                options,
                &vec![Value::from("accept"), Value::from("reject")],
                "{name}"
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
    let p = policy();
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
    for (group, resource) in [("", "nodes"), ("node.k8s.io", "runtimeclasses")] {
        let granted = role["rules"].as_array().unwrap().iter().any(|r| {
            let has = |k: &str, v: &str| r[k].as_array().is_some_and(|a| a.iter().any(|x| x == v));
            has("apiGroups", group)
                && has("resources", resource)
                && ["get", "list", "watch"].iter().all(|v| has("verbs", v))
        });
        assert!(granted, "get/list/watch on {resource}");
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
