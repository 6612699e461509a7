//! The packaging files agree with each other and with the policy:
//! metadata.yml, questions-ui.yml, policy-settings.json, the settings table
//! of docs/settings.md, the tables of docs/kata-compatibility.md, the
//! README's Kata-mandatory recipe, Cargo.toml's version, and examples/
//! (artifacthub-pkg.yml: artifacthub.rs). Example settings are validated by
//! the compiled policy itself.

mod common;

use std::collections::BTreeSet;

use common::{root, test_policy, test_settings};
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
            {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass"},
            // nodeShapes: the node shapes' ConfigMap, read by name.
            {"apiVersion": "v1", "kind": "ConfigMap"},
            // checkPodAffinity: the pods, and the namespaces their terms select.
            {"apiVersion": "v1", "kind": "Pod"},
            {"apiVersion": "v1", "kind": "Namespace"}])
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
    // The questions, each followed by its subquestions (asked when the
    // question's answer is its `show_subquestion_if`).
    let questions: Vec<&Value> = q["questions"]
        .as_array()
        .expect("questions list")
        .iter()
        .flat_map(|q| std::iter::once(q).chain(q["subquestions"].as_array().into_iter().flatten()))
        .collect();
    let questions = &questions;
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
    let p = test_policy();
    for question in questions {
        let name = question["variable"].as_str().unwrap();
        let Some(options) = question["options"].as_array() else {
            continue;
        };
        for option in options.iter().chain([&Value::from("bogus")]) {
            let settings = test_settings(&serde_json::json!({ name: option }));
            let settings = serde_json::to_vec(&settings).unwrap();
            let verdict = p.validate_settings(&settings).unwrap();
            assert_eq!(
                verdict["valid"],
                options.contains(option),
                "{name}: {option} -> {verdict}"
            );
        }
    }
    let reference = std::fs::read_to_string(root().join("docs/settings.md")).unwrap();
    for name in known {
        assert!(
            reference.contains(&format!("| `{name}` |")),
            "docs/settings.md settings table lacks {name}"
        );
    }
    // The documented example is what the policy accepts, and it is the defaults.
    let text = std::fs::read(root().join("policy-settings.json")).unwrap();
    assert_eq!(p.validate_settings(&text).unwrap()["valid"], true);
    // A setting the policy cannot do without is a required question, and
    // its description says it is: policy-settings.json without it is refused.
    let mut required = BTreeSet::new();
    for question in questions {
        let name = question["variable"].as_str().unwrap();
        let mut without = defaults.clone();
        without.remove(name);
        let verdict = p
            .validate_settings(&serde_json::to_vec(&without).unwrap())
            .unwrap();
        if verdict["valid"] == false {
            let message = verdict["message"].as_str().unwrap();
            assert!(
                message.starts_with(&format!("{name} is required: ")),
                "{message}"
            );
            assert_eq!(question["required"], true, "{name}");
            assert!(
                (question["description"].as_str().unwrap_or_default()).starts_with("Required: set"),
                "{name}: the description says what to set"
            );
            required.insert(name);
        }
    }
    assert_eq!(
        required,
        BTreeSet::from(["policyServerServiceAccount", "runtimeClassName"])
    );
}

/// The examples are what the README installs, and they agree with each
/// other: the monitor example is the protect example with `mode: monitor`
/// and `logDecisions: true` (and its own name); every policy runs on examples/policy-server.yaml's
/// PolicyServer and names its account, which rbac.yaml binds with exactly
/// the verbs the policy's host calls use; the opt-out selector is offered
/// (commented) in the protect example and never in the Kata-mandatory one,
/// whose settings are the strict recipe; the RuntimeClass is kata-deploy
/// 4.1.0's `kata` (runtimeClasses.createDefault=true).
#[test]
fn examples_are_ready_to_apply() {
    const PROTECT: &str = "examples/cluster-admission-policy.yaml";
    const MONITOR: &str = "examples/cluster-admission-policy-monitor.yaml";
    const MANDATORY: &str = "examples/cluster-admission-policy-kata-mandatory.yaml";
    const OPT_OUT: &str = "kata-runtime-policy.kubewarden.io/opt-out";
    let m = yaml("metadata.yml");
    let p = test_policy();
    let find = |docs: &[Value], kind: &str, file: &str| -> Value {
        docs.iter()
            .find(|d| d["kind"] == kind)
            .unwrap_or_else(|| panic!("{file}: no {kind}"))
            .clone()
    };

    // The dedicated PolicyServer and the account it runs as.
    let docs = yaml_docs("examples/policy-server.yaml");
    let server = find(&docs, "PolicyServer", "examples/policy-server.yaml");
    assert_eq!(server["apiVersion"], "policies.kubewarden.io/v1");
    assert_eq!(server["metadata"]["name"], "kata-runtime-policy");
    assert_eq!(
        server["spec"]["image"],
        "ghcr.io/kubewarden/policy-server:v1.36.0"
    );
    assert_eq!(server["spec"]["replicas"], 2);
    let sa = find(&docs, "ServiceAccount", "examples/policy-server.yaml");
    assert_eq!(server["spec"]["serviceAccountName"], sa["metadata"]["name"]);
    assert_eq!(sa["metadata"]["namespace"], "kubewarden");
    let account = format!(
        "system:serviceaccount:{}:{}",
        sa["metadata"]["namespace"].as_str().unwrap(),
        sa["metadata"]["name"].as_str().unwrap()
    );
    assert_eq!(
        account,
        "system:serviceaccount:kubewarden:kata-runtime-policy"
    );

    let module = format!(
        "registry://ghcr.io/kata-runtime-policy/policies/kata-runtime-policy:v{}",
        cargo_version()
    );
    let mut policies = Vec::new();
    for (file, mode) in [
        (PROTECT, "protect"),
        (MONITOR, "monitor"),
        (MANDATORY, "protect"),
    ] {
        let cap = find(&yaml_docs(file), "ClusterAdmissionPolicy", file);
        assert_eq!(cap["apiVersion"], "policies.kubewarden.io/v1", "{file}");
        let spec = &cap["spec"];
        assert_eq!(spec["module"], module.as_str(), "{file}");
        assert_eq!(spec["policyServer"], server["metadata"]["name"], "{file}");
        assert_eq!(spec["mode"], mode, "{file}");
        assert_eq!(spec["mutating"], true, "{file}");
        assert_eq!(spec["rules"], m["rules"], "{file}");
        assert_eq!(
            spec["contextAwareResources"], m["contextAwareResources"],
            "{file}"
        );
        assert!(spec["failurePolicy"].is_string(), "{file}");
        assert_eq!(
            spec["settings"]["policyServerServiceAccount"],
            account.as_str(),
            "{file}"
        );
        let settings = serde_json::to_vec(&spec["settings"]).unwrap();
        let verdict = p.validate_settings(&settings).unwrap();
        assert_eq!(verdict["valid"], true, "{file}: {verdict}");
        policies.push(cap);
    }
    let [protect, monitor, mandatory] = &policies[..] else {
        unreachable!()
    };

    // The monitor example is the protect example in monitor mode, under its
    // own name, logging its decisions: nothing else differs.
    assert_ne!(monitor["metadata"]["name"], protect["metadata"]["name"]);
    assert_eq!(protect["spec"]["settings"]["logDecisions"], false);
    let mut expected = protect.clone();
    expected["metadata"]["name"] = monitor["metadata"]["name"].clone();
    expected["spec"]["mode"] = "monitor".into();
    expected["spec"]["settings"]["logDecisions"] = true.into();
    assert_eq!(
        *monitor, expected,
        "{MONITOR} is {PROTECT} with mode: monitor and logDecisions: true"
    );
    let excluded = protect["spec"]["namespaceSelector"]["matchExpressions"].to_string();
    assert!(
        excluded.contains("kube-system") && excluded.contains("kubewarden"),
        "{PROTECT}: {excluded}"
    );
    assert_eq!(protect["spec"]["settings"]["annotateDecision"], true);

    // The opt-out selector: a commented block in the protect example that,
    // uncommented, leaves out the labelled pods; nothing of the kind in the
    // Kata-mandatory example.
    assert!(protect["spec"]["objectSelector"].is_null());
    let text = std::fs::read_to_string(root().join(PROTECT)).unwrap();
    let start = text
        .find("\n  # objectSelector:\n")
        .unwrap_or_else(|| panic!("{PROTECT}: no commented objectSelector"));
    let block: String = text[start + 1..]
        .lines()
        .enumerate()
        .take_while(|(i, line)| *i == 0 || line.starts_with("  #   "))
        .map(|(_, line)| format!("{}\n", line.replacen("  # ", "", 1)))
        .collect();
    let uncommented: Value = serde_yaml::from_str(&block).unwrap();
    assert_eq!(
        uncommented,
        serde_json::json!({"objectSelector": {"matchExpressions": [
            {"key": OPT_OUT, "operator": "NotIn", "values": ["true"]}]}}),
        "{PROTECT}: the commented block"
    );
    assert!(mandatory["spec"]["objectSelector"].is_null());
    assert!(
        !std::fs::read_to_string(root().join(MANDATORY))
            .unwrap()
            .contains(&format!("key: {OPT_OUT}")),
        "{MANDATORY} offers no opt-out"
    );
    // The one strict recipe.
    assert_eq!(
        mandatory["spec"]["settings"],
        serde_json::json!({
            "runtimeClassName": "kata-qemu-runtime-rs",
            "kataNodeSelector": "katacontainers.io/kata-runtime=true",
            "policyServerServiceAccount": account,
            "incompatiblePod": "reject",
            "noFeasibleNode": "reject",
            "lookupFailure": "reject",
            "restrictRuntimeClasses": true,
            "allowedRuntimeClasses": [],
            "runtimeHandlerCheck": "auto",
            "annotateDecision": true,
        }),
        "{MANDATORY}"
    );
    assert_eq!(mandatory["spec"]["failurePolicy"], "Fail");

    // RBAC: exactly the verbs the host calls use (a list is served from a
    // watch: list and watch; a read by name: get; can_i: a
    // SubjectAccessReview), bound to the PolicyServer's account.
    let rbac = yaml_docs("examples/rbac.yaml");
    let role = find(&rbac, "ClusterRole", "examples/rbac.yaml");
    let mut granted = BTreeSet::new();
    for rule in role["rules"].as_array().unwrap() {
        let names = |key: &str| -> Vec<String> {
            rule[key]
                .as_array()
                .unwrap_or_else(|| panic!("rbac.yaml: a rule without {key}"))
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        for group in names("apiGroups") {
            for resource in names("resources") {
                for verb in names("verbs") {
                    granted.insert(format!("{verb} {resource}.{group}"));
                }
            }
        }
    }
    let wanted: BTreeSet<String> = [
        "get nodes.",
        "list nodes.",
        "watch nodes.",
        "get runtimeclasses.node.k8s.io",
        "get persistentvolumeclaims.",
        "get persistentvolumes.",
        "list persistentvolumes.",
        "watch persistentvolumes.",
        "get storageclasses.storage.k8s.io",
        "list storageclasses.storage.k8s.io",
        "watch storageclasses.storage.k8s.io",
        // checkPodAffinity: the pod list, and the namespaces a term selects.
        "list pods.",
        "watch pods.",
        "list namespaces.",
        "watch namespaces.",
        "create subjectaccessreviews.authorization.k8s.io",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(granted, wanted, "examples/rbac.yaml");
    let binding = find(&rbac, "ClusterRoleBinding", "examples/rbac.yaml");
    assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    assert_eq!(
        binding["subjects"],
        serde_json::json!([{"kind": "ServiceAccount",
            "name": sa["metadata"]["name"], "namespace": sa["metadata"]["namespace"]}])
    );

    // kata-deploy 4.1.0's default shim's class, kata-qemu-runtime-rs (the
    // class policy-settings.json assigns): its handler, the qemu overhead,
    // both node labels.
    let rc = find(
        &yaml_docs("examples/runtimeclass-kata-qemu-runtime-rs.yaml"),
        "RuntimeClass",
        "examples/runtimeclass-kata-qemu-runtime-rs.yaml",
    );
    assert_eq!(
        rc["metadata"]["name"],
        settings_defaults()["runtimeClassName"]
    );
    assert_eq!(rc["handler"], "kata-qemu-runtime-rs");
    assert_eq!(
        rc["overhead"]["podFixed"],
        serde_json::json!({"memory": "320Mi", "cpu": "250m"})
    );
    assert_eq!(
        rc["scheduling"]["nodeSelector"],
        serde_json::json!({"katacontainers.io/kata-runtime": "true",
            "kata-deploy.katacontainers.io/default": "true"})
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
    let verdict = test_policy()
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
/// that names the features (the settings table, the tables of
/// docs/kata-compatibility.md, questions) names them all.
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
                {"name": "scratch", "mountPath": "/scratch", "subPath": "a"},
                {"name": "tools", "mountPath": "/tools"}
            ]
        }],
        "volumes": [
            {"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}},
            {"name": "fuse", "hostPath": {"path": "/dev/fuse", "type": "CharDevice"}},
            {"name": "host", "hostPath": {"path": "/srv"}},
            {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
            {"name": "tools", "image": {"reference": "registry.example.com/tools:v1"}}
        ],
        "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
    });
    let p = test_policy();
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

    let reference = std::fs::read_to_string(root().join("docs/settings.md")).unwrap();
    let quoted: Vec<String> = default.iter().map(|f| format!("\"{f}\"")).collect();
    let row = format!(
        "| `skipPodsUsing` | list of strings | `[{}]` |",
        quoted.join(", ")
    );
    assert!(
        reference.contains(&row),
        "docs/settings.md settings table: {row}"
    );
    // docs/kata-compatibility.md: the table of defaults, then the opt-in one,
    // each in its own section.
    let compat = std::fs::read_to_string(root().join("docs/kata-compatibility.md")).unwrap();
    let section = |heading: &str| -> String {
        let body = compat
            .split_once(&format!("\n## {heading}\n"))
            .unwrap_or_else(|| panic!("docs/kata-compatibility.md: a section {heading:?}"))
            .1;
        body.split("\n## ").next().unwrap().to_string()
    };
    let defaults_table = section("Checked by default");
    let opt_in_table = section("Opt-in");
    let rows = |table: &str| -> Vec<String> {
        table
            .lines()
            .filter_map(|l| l.strip_prefix("| `"))
            .filter_map(|l| l.split_once("` |"))
            .map(|(name, _)| name.to_string())
            .collect()
    };
    assert_eq!(
        rows(&defaults_table),
        default,
        "docs/kata-compatibility.md defaults table"
    );
    let opt_in: Vec<String> = known
        .iter()
        .filter(|f| !default.contains(f))
        .cloned()
        .collect();
    assert_eq!(
        rows(&opt_in_table),
        opt_in,
        "docs/kata-compatibility.md opt-in table"
    );

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
    let verdict = test_policy()
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

/// examples/cluster-admission-policy-kata-mandatory.yaml is what the
/// operations guide's "Kata-mandatory namespaces" (the one strict recipe)
/// says it is, and the compiled policy, with its settings, gives each kind
/// of pod the outcome and the message the guide's table quotes.
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
        ("restrictRuntimeClasses", serde_json::json!(true)),
        ("allowedRuntimeClasses", serde_json::json!([])),
        ("lookupFailure", serde_json::json!("reject")),
    ] {
        assert_eq!(settings[key], value, "{key}");
    }
    let p = test_policy();
    let verdict = p
        .validate_settings(&serde_json::to_vec(&settings).unwrap())
        .unwrap();
    assert_eq!(verdict["valid"], true, "{verdict}");

    let readme = std::fs::read_to_string(root().join("docs/operations.md")).unwrap();
    let section = readme
        .split_once("\n### Kata-mandatory namespaces\n")
        .expect("a Kata-mandatory section")
        .1;
    let section = section.split("\n## ").next().unwrap();
    let section = section.split("\n### ").next().unwrap();
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
    assert_eq!(documented, settings, "the guide's settings block");
    // The NotIn expression offered for the general policy names the label.
    assert!(
        section.contains(&format!(
            "- key: {LABEL}\n        operator: NotIn\n        values: [\"true\"]"
        )),
        "a NotIn expression on the label"
    );

    // Each kind of pod, through the compiled policy with the example's settings.
    // The recorded sessions ask about the default PolicyServer's account; the
    // example runs on its own PolicyServer and names that one's account.
    let account = settings["policyServerServiceAccount"]
        .as_str()
        .expect("the example names its PolicyServer's account")
        .to_string();
    let verdict_for = |request: &Value, session: &str| {
        let session = if session.is_empty() {
            kwrun::Session::none()
        } else {
            // Recorded with kata-deploy 4.x's class, the example's.
            let path = root()
                .join("test_data/sessions/kata-deploy-4")
                .join(session);
            let text = std::fs::read_to_string(&path).unwrap();
            let text = text.replace(
                "user: system:serviceaccount:kubewarden:policy-server",
                &format!("user: {account}"),
            );
            kwrun::Session::from_yaml(&text).unwrap_or_else(|e| panic!("{session}: {e}"))
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
            "the guide's Kata-mandatory table lacks `{message}`"
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
            "the guide's Kata-mandatory table lacks {pod}'s findings: {findings}"
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
    assert_eq!(
        plain["mutated_object"]["spec"]["runtimeClassName"],
        settings["runtimeClassName"]
    );
    let reason = plain["audit_annotations"]["reason"].as_str().unwrap();
    assert!(section.contains(&format!("`{reason}`")), "{reason}");

    let mut kata = common::request("pod-plain.json");
    kata["object"]["spec"]["runtimeClassName"] = settings["runtimeClassName"].clone();
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

/// The rollout pair is the monitor and the protect examples, each under
/// its own name, splitting the namespaces by one label: the dry run for
/// those not labelled `rollout=protect`, the protect policy for those that
/// are. Nothing else differs, so each namespace is judged once.
#[test]
fn the_rollout_pair_splits_the_namespaces_between_the_examples() {
    const LABEL: &str = "kata-runtime-policy.kubewarden.io/rollout";
    let docs = yaml_docs("examples/cluster-admission-policy-rollout.yaml");
    let [dry_run, protect] = &docs[..] else {
        panic!("two ClusterAdmissionPolicies, got {}", docs.len());
    };
    for (policy, example, name, operator) in [
        (
            dry_run,
            "examples/cluster-admission-policy-monitor.yaml",
            "kata-runtime-rollout-dry-run",
            "NotIn",
        ),
        (
            protect,
            "examples/cluster-admission-policy.yaml",
            "kata-runtime-rollout",
            "In",
        ),
    ] {
        let mut expected = yaml(example);
        expected["metadata"]["name"] = name.into();
        expected["spec"]["namespaceSelector"]["matchExpressions"]
            .as_array_mut()
            .expect("the example's matchExpressions")
            .push(serde_json::json!({"key": LABEL, "operator": operator, "values": ["protect"]}));
        assert_eq!(
            *policy, expected,
            "{name} is {example} with {LABEL} {operator} [protect]"
        );
    }
}
