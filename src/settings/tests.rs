use serde_json::{Value, json};

use super::*;
use crate::incompatible::PodFeature;

/// The required settings as the tests' recorded sessions have them: the
/// class `kata`, asked about for kubewarden-defaults' PolicyServer (the
/// placeholders of `Settings::default()`).
fn required_settings() -> Value {
    json!({"runtimeClassName": "kata",
        "policyServerServiceAccount": "system:serviceaccount:kubewarden:policy-server"})
}

/// `settings` with the required settings added where it has no such key
/// (a `null` or `""` is kept, so is a value of another JSON type).
fn with_required(mut settings: Value) -> Value {
    if let (Some(map), Value::Object(required)) = (settings.as_object_mut(), required_settings()) {
        for (key, value) in required {
            map.entry(key).or_insert(value);
        }
    }
    settings
}

/// Reads `settings` with the required ones added where absent.
fn read_settings(settings: Value) -> Result<Settings, String> {
    Settings::from_value(&with_required(settings))
}

const CLASS_REQUIRED: &str = "runtimeClassName is required: the Kata RuntimeClass to assign \
    (kata-deploy 4.x creates kata-qemu-runtime-rs for its default shim, and kata-qemu, kata-clh, \
    ... for the others; list yours with kubectl get runtimeclass)";
const ACCOUNT_REQUIRED: &str = "policyServerServiceAccount is required: the ServiceAccount the \
    policy's PolicyServer runs as, as \"system:serviceaccount:<namespace>:<name>\" (kubectl get \
    policyserver <policyserver> -o jsonpath='{.spec.serviceAccountName}'; the kubewarden-defaults \
    chart's PolicyServer runs as system:serviceaccount:kubewarden:policy-server)";

#[test]
fn the_required_settings_alone_give_the_defaults() {
    assert_eq!(
        Settings::from_json(required_settings().to_string().as_bytes()),
        Ok(Settings::default())
    );
    let d = Settings::default();
    assert_eq!(d.runtime_class_name, "kata");
    assert_eq!(
        d.kata_node_selector.text(),
        "katacontainers.io/kata-runtime=true"
    );
    assert_eq!(d.no_feasible_node, Outcome::Accept);
    assert_eq!(d.lookup_failure, Outcome::Accept);
    assert_eq!(d.skip_pods_using, FeatureSet::default_set());
    assert!(d.annotate_decision);
}

#[test]
fn null_and_empty_settings_are_refused_listing_both_required_settings() {
    let both = format!("{CLASS_REQUIRED}; {ACCOUNT_REQUIRED}");
    for empty in [&b"null"[..], b"{}", b" { } "] {
        assert_eq!(Settings::from_json(empty), Err(both.clone()));
    }
    assert_eq!(Settings::from_value(&Value::Null), Err(both));
}

#[test]
fn a_missing_required_setting_is_refused_with_what_to_set() {
    let account = json!("system:serviceaccount:kubewarden:policy-server");
    // Absent, null and "" are missing alike.
    for missing in [None, Some(json!(null)), Some(json!(""))] {
        let mut settings = json!({ "policyServerServiceAccount": account });
        if let Some(value) = &missing {
            settings["runtimeClassName"] = value.clone();
        }
        assert_eq!(
            Settings::from_value(&settings).unwrap_err(),
            CLASS_REQUIRED,
            "{settings}"
        );
        let mut settings = json!({ "runtimeClassName": "kata-qemu-runtime-rs" });
        if let Some(value) = &missing {
            settings["policyServerServiceAccount"] = value.clone();
        }
        assert_eq!(
            Settings::from_value(&settings).unwrap_err(),
            ACCOUNT_REQUIRED,
            "{settings}"
        );
    }
    // Both at once, whatever else is given.
    assert_eq!(
        Settings::from_value(&json!({"noFeasibleNode": "reject", "runtimeClassName": ""}))
            .unwrap_err(),
        format!("{CLASS_REQUIRED}; {ACCOUNT_REQUIRED}")
    );
    // Given, but not valid: the setting's own message, never "required".
    for (settings, message) in [
        (
            json!({"runtimeClassName": " ", "policyServerServiceAccount": account}),
            "runtimeClassName must name a RuntimeClass (a lowercase DNS subdomain such as \"kata-qemu\"), got \" \"",
        ),
        (
            json!({"runtimeClassName": false, "policyServerServiceAccount": account}),
            "runtimeClassName must be a string, got false",
        ),
        (
            json!({"runtimeClassName": "kata", "policyServerServiceAccount": []}),
            "policyServerServiceAccount must be a string, got []",
        ),
    ] {
        assert_eq!(
            Settings::from_value(&settings).unwrap_err(),
            message,
            "{settings}"
        );
    }
}

/// Missing required settings come first, then every other error in key
/// order, then those of the settings read together: each one reported.
#[test]
fn a_missing_required_setting_comes_before_every_other_error() {
    let err = Settings::from_value(&json!({
        "allowedRuntimeClasses": ["gvisor"],
        "kataNodeSelector": "a in x",
        "policyServerServiceAccount": "policy-server",
        "restrictRuntimeClasses": false
    }))
    .unwrap_err();
    assert_eq!(
        err,
        [
            CLASS_REQUIRED.to_string(),
            refusal(json!({"kataNodeSelector": "a in x"})),
            refusal(json!({"policyServerServiceAccount": "policy-server"})),
            refusal(json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": ["gvisor"]})),
        ]
        .join("; ")
    );
}

/// With runtimeClassName missing, nothing is compared with the placeholder
/// in its place: `fallbackRuntimeClasses: ["kata"]` is no duplicate.
#[test]
fn a_missing_runtime_class_name_is_compared_with_nothing() {
    let settings = json!({"fallbackRuntimeClasses": ["kata"],
        "policyServerServiceAccount": "system:serviceaccount:kubewarden:policy-server"});
    assert_eq!(Settings::from_value(&settings).unwrap_err(), CLASS_REQUIRED);
    let mut given = settings.clone();
    given["runtimeClassName"] = json!("kata");
    assert_eq!(
        Settings::from_value(&given).unwrap_err(),
        "fallbackRuntimeClasses: \"kata\" is runtimeClassName already: list each class once"
    );
}

/// Settings written for the old defaults (the legacy readings included)
/// are refused for the required settings alone, each message once.
#[test]
fn legacy_settings_without_the_required_ones_are_refused() {
    for old in [
        json!({"allowedRuntimeClasses": ["gvisor"]}),
        json!({"skipHostNamespaces": false}),
        json!({"restrictRuntimeClasses": true}),
    ] {
        assert_eq!(
            Settings::from_value(&old).unwrap_err(),
            format!("{CLASS_REQUIRED}; {ACCOUNT_REQUIRED}"),
            "{old}"
        );
        assert!(read_settings(old.clone()).is_ok(), "{old}");
    }
}

#[test]
fn reads_every_setting() {
    let s = read_settings(json!({
        "runtimeClassName": "kata-qemu",
        "kataNodeSelector": "kata in (yes), !building",
        "noFeasibleNode": "reject",
        "lookupFailure": "reject",
        "skipHostNamespaces": false,
        "ignoredResources": ["example.com/foo", "nvidia.com/*"],
        "policyServerServiceAccount": "system:serviceaccount:kw:ps-2"
    }))
    .unwrap();
    assert_eq!(
        s.policy_server_subject(),
        Subject {
            user: "system:serviceaccount:kw:ps-2",
            groups: vec![
                "system:serviceaccounts".into(),
                "system:serviceaccounts:kw".into(),
                "system:authenticated".into()
            ]
        }
    );
    assert_eq!(
        s.ignored_resources,
        ResourceNames::parse(["example.com/foo", "nvidia.com/*"]).unwrap()
    );
    let ignored = &s.ignored_resources;
    assert!(ignored.contains("example.com/foo") && ignored.contains("nvidia.com/gpu"));
    assert!(!ignored.contains("example.com/bar"));
    assert_eq!(s.runtime_class_name, "kata-qemu");
    assert_eq!(s.host_label_selector(), Some("kata in (yes), !building"));
    assert_eq!(s.no_feasible_node, Outcome::Reject);
    assert_eq!(s.lookup_failure, Outcome::Reject);
    assert!(!s.skip_pods_using.contains(PodFeature::HostNamespaces));
    assert!(s.skip_pods_using.contains(PodFeature::DynamicResources));
    assert!(
        !s.skip_pods_using.contains(PodFeature::Privileged),
        "opt-in"
    );
    assert!(Settings::default().check_volumes, "on by default");
    assert!(Settings::default().check_pod_affinity, "on by default");
    assert!(
        !read_settings(json!({"checkPodAffinity": false}))
            .unwrap()
            .check_pod_affinity
    );
    assert!(
        !read_settings(json!({"checkVolumes": false}))
            .unwrap()
            .check_volumes
    );
}

#[test]
fn incompatible_pod_is_accept_or_reject() {
    assert_eq!(Settings::default().incompatible_pod, Outcome::Accept);
    let s = read_settings(json!({"incompatiblePod": "reject"})).unwrap();
    assert_eq!(s.incompatible_pod, Outcome::Reject);
    for bad in [json!("Reject"), json!(false), json!(["reject"]), json!(1)] {
        assert_eq!(
            read_settings(json!({ "incompatiblePod": bad })).unwrap_err(),
            format!("incompatiblePod must be \"accept\" or \"reject\", got {bad}")
        );
    }
}

#[test]
fn runtime_handler_check_is_auto_required_or_off() {
    assert_eq!(
        Settings::default().runtime_handler_check,
        HandlerCheck::Auto
    );
    for (text, check) in [
        ("auto", HandlerCheck::Auto),
        ("required", HandlerCheck::Required),
        ("off", HandlerCheck::Off),
    ] {
        let s = read_settings(json!({ "runtimeHandlerCheck": text })).unwrap();
        assert_eq!(s.runtime_handler_check, check);
    }
    for bad in [json!("Auto"), json!(true), json!(["auto"]), json!("")] {
        let e = read_settings(json!({ "runtimeHandlerCheck": bad })).unwrap_err();
        assert_eq!(
            e,
            format!("runtimeHandlerCheck must be \"auto\", \"required\" or \"off\", got {bad}")
        );
    }
}

#[test]
fn runtime_compatibility_settings() {
    let d = Settings::default();
    let names: Vec<&str> = d.skip_pods_using.iter().map(PodFeature::name).collect();
    assert_eq!(
        names,
        [
            "hostNamespaces",
            "userNamespaces",
            "windows",
            "hostSockets",
            "hostDevices",
            "mountPropagation",
            "deviceResources",
            "dynamicResources",
            "imageVolumes"
        ]
    );
    assert_eq!(d.host_socket_paths, DEFAULT_HOST_SOCKET_PATHS);
    assert_eq!(
        d.host_device_resources,
        ResourceNames::parse(DEFAULT_HOST_DEVICE_RESOURCES).unwrap()
    );
    let s = read_settings(json!({
        "skipPodsUsing": ["seccomp", "hostSockets", "seccomp"],
        "hostSocketPaths": ["//var/lib/spire/./agent/"],
        "hostDeviceResources": ["example.com/fpga", "xilinx.com/*"]
    }))
    .unwrap();
    assert_eq!(
        s.skip_pods_using,
        FeatureSet::of([PodFeature::Seccomp, PodFeature::HostSockets])
    );
    assert_eq!(s.host_socket_paths, ["/var/lib/spire/agent"]);
    assert!(s.host_device_resources.contains("xilinx.com/u250"));
    // [] turns every check off; null keeps the default.
    let none = read_settings(json!({"skipPodsUsing": []})).unwrap();
    assert!(none.skip_pods_using.is_empty());
    let null = json!({"skipPodsUsing": null, "hostSocketPaths": null, "hostDeviceResources": null});
    assert_eq!(read_settings(null.clone()).unwrap(), d);
    // The deprecated skipHostNamespaces.
    let old = read_settings(json!({"skipHostNamespaces": false})).unwrap();
    assert_eq!(
        old.skip_pods_using,
        FeatureSet::default_set().without(PodFeature::HostNamespaces)
    );
    assert_eq!(
        read_settings(json!({"skipHostNamespaces": true})).unwrap(),
        d
    );
    for agreeing in [
        json!({"skipHostNamespaces": true, "skipPodsUsing": ["hostNamespaces"]}),
        json!({"skipHostNamespaces": false, "skipPodsUsing": ["privileged"]}),
    ] {
        assert!(read_settings(agreeing.clone()).is_ok(), "{agreeing}");
    }
}

#[test]
fn allowed_runtime_classes_absent_null_empty_or_listed() {
    assert_eq!(Settings::default().allowed_runtime_classes, None);
    let read = |v: Value| read_settings(v).unwrap().allowed_runtime_classes;
    assert_eq!(read(json!({"allowedRuntimeClasses": null})), None);
    assert_eq!(read(json!({"allowedRuntimeClasses": []})), Some(vec![]));
    assert_eq!(
        read(json!({"allowedRuntimeClasses": ["gvisor", "kata-clh"]})),
        Some(vec!["gvisor".to_string(), "kata-clh".to_string()])
    );
}

#[test]
fn annotate_decision_is_a_boolean_on_by_default() {
    assert!(Settings::default().annotate_decision);
    assert_eq!(
        read_settings(json!({})).map(|s| s.annotate_decision),
        Ok(true)
    );
    let read = |v: Value| read_settings(v).map(|s| s.annotate_decision);
    assert_eq!(read(json!({"annotateDecision": true})), Ok(true));
    assert_eq!(read(json!({"annotateDecision": false})), Ok(false));
    // Nothing else changes with it.
    let off = read_settings(json!({"annotateDecision": false})).unwrap();
    assert_eq!(
        Settings {
            annotate_decision: true,
            ..off
        },
        Settings::default()
    );
    for (bad, shown) in [
        (json!("yes"), "\"yes\""),
        (json!("true"), "\"true\""),
        (json!(1), "1"),
        (json!([true]), "[true]"),
    ] {
        assert_eq!(
            read(json!({ "annotateDecision": bad })).unwrap_err(),
            format!("annotateDecision must be true or false, got {shown}")
        );
    }
}

/// `restrictRuntimeClasses` with `allowedRuntimeClasses`: absent, the
/// list alone decides (the old rule); true restricts, to the list or,
/// without one, to `runtimeClassName` alone; false with no list is off.
#[test]
fn restrict_runtime_classes_with_or_without_a_list() {
    let gvisor = || Some(vec!["gvisor".to_string()]);
    for (settings, allowed) in [
        (json!({}), None),
        (json!({"allowedRuntimeClasses": null}), None),
        (json!({"allowedRuntimeClasses": []}), Some(vec![])),
        (json!({"allowedRuntimeClasses": ["gvisor"]}), gvisor()),
        (json!({"restrictRuntimeClasses": true}), Some(vec![])),
        (
            json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": null}),
            Some(vec![]),
        ),
        (
            json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": []}),
            Some(vec![]),
        ),
        (
            json!({"allowedRuntimeClasses": ["gvisor"], "restrictRuntimeClasses": true}),
            gvisor(),
        ),
        (json!({"restrictRuntimeClasses": false}), None),
        (
            json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": null}),
            None,
        ),
        (
            json!({"allowedRuntimeClasses": [], "restrictRuntimeClasses": false}),
            None,
        ),
    ] {
        let s = read_settings(settings.clone()).unwrap_or_else(|e| panic!("{settings}: {e}"));
        assert_eq!(s.allowed_runtime_classes, allowed, "{settings}");
    }
    // The shipped defaults: off, as with no setting at all.
    let shipped = json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": []});
    assert_eq!(read_settings(shipped.clone()).unwrap(), Settings::default());
}

#[test]
fn restrict_runtime_classes_false_with_a_list_is_refused() {
    let refused = |v: Value| read_settings(v).unwrap_err();
    assert_eq!(
        refused(json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": ["gvisor"]})),
        "restrictRuntimeClasses: false contradicts allowedRuntimeClasses [\"gvisor\"]: \
         set restrictRuntimeClasses: true, or remove the list"
    );
    // In either key order, with every listed class named.
    assert_eq!(
        refused(
            json!({"allowedRuntimeClasses": ["gvisor", "kata-qemu-nvidia-gpu"], "restrictRuntimeClasses": false})
        ),
        "restrictRuntimeClasses: false contradicts allowedRuntimeClasses \
         [\"gvisor\", \"kata-qemu-nvidia-gpu\"]: set restrictRuntimeClasses: true, or remove the list"
    );
    for (bad, shown) in [(json!("false"), "\"false\""), (json!(0), "0")] {
        assert_eq!(
            refused(json!({ "restrictRuntimeClasses": bad })),
            format!("restrictRuntimeClasses must be true or false, got {shown}")
        );
    }
    // The list's names are checked whatever the switch says.
    assert!(
        refused(json!({"restrictRuntimeClasses": true, "allowedRuntimeClasses": ["Runc"]}))
            .starts_with("allowedRuntimeClasses: \"Runc\" is not a RuntimeClass name")
    );
}

#[test]
fn an_unknown_setting_is_refused_with_every_known_one() {
    assert_eq!(
        read_settings(json!({"annotateDecisions": true})).unwrap_err(),
        "unknown setting \"annotateDecisions\"; known settings: runtimeClassName, fallbackRuntimeClasses, \
         runtimeClassesByResource, kataNodeSelector, \
         noFeasibleNode, lookupFailure, incompatiblePod, skipPodsUsing, hostSocketPaths, \
         hostDeviceResources, skipHostNamespaces (deprecated), ignoredResources, \
         policyServerServiceAccount, checkVolumes, checkPodAffinity, restrictRuntimeClasses, \
         allowedRuntimeClasses, runtimeHandlerCheck, annotateDecision, logDecisions, nodeShapes"
    );
}

/// The known settings' names, without the deprecation mark.
fn known_names() -> Vec<String> {
    (super::read::known_names().split(", "))
        .map(|n| n.trim_end_matches(" (deprecated)").to_string())
        .collect()
}

fn is_required(name: &str) -> bool {
    super::read::REQUIRED.iter().any(|(n, _)| *n == name)
}

#[test]
fn null_is_the_default_for_every_setting_but_the_required_ones() {
    let names = known_names();
    assert!(names.len() > 18, "{names:?}");
    for name in &names {
        let read = read_settings(json!({ name: null }));
        match is_required(name) {
            true => assert!(
                read.unwrap_err()
                    .starts_with(&format!("{name} is required: "))
            ),
            false => assert_eq!(read, Ok(Settings::default()), "{name}: null"),
        }
    }
    // Each required setting is a known one.
    for (name, _) in super::read::REQUIRED {
        assert!(names.iter().any(|n| n == name), "{name}");
    }
    // Together, too: null never counts as a value that contradicts another.
    let together = json!({"skipHostNamespaces": null, "skipPodsUsing": null,
        "restrictRuntimeClasses": null, "allowedRuntimeClasses": null});
    assert_eq!(read_settings(together.clone()), Ok(Settings::default()));
}

#[test]
fn log_decisions_is_a_boolean_off_by_default() {
    assert!(!Settings::default().log_decisions);
    let read = |v: Value| read_settings(v).map(|s| s.log_decisions);
    assert_eq!(read(json!({"logDecisions": true})), Ok(true));
    assert_eq!(read(json!({"logDecisions": false})), Ok(false));
    assert_eq!(
        read(json!({"logDecisions": "yes"})).unwrap_err(),
        "logDecisions must be true or false, got \"yes\""
    );
}

#[test]
fn empty_selector_means_every_node() {
    let s = read_settings(json!({"kataNodeSelector": "  "})).unwrap();
    assert_eq!(s.host_label_selector(), None);
}

#[test]
fn refusals_name_the_setting() {
    let cases = [
        (
            json!({"runtimeClass": "kata"}),
            "unknown setting \"runtimeClass\"",
        ),
        (json!({"runtimeClassName": ""}), "runtimeClassName"),
        (json!({"runtimeClassName": "Kata"}), "runtimeClassName"),
        (
            json!({"runtimeClassName": 5}),
            "runtimeClassName must be a string",
        ),
        (json!({"kataNodeSelector": "a in x"}), "kataNodeSelector"),
        (
            json!({"kataNodeSelector": true}),
            "kataNodeSelector must be a string",
        ),
        (json!({"noFeasibleNode": "deny"}), "noFeasibleNode must be"),
        (
            json!({"skipHostNamespaces": "yes"}),
            "skipHostNamespaces must be true or false",
        ),
        (
            json!({"checkVolumes": "false"}),
            "checkVolumes must be true or false, got \"false\"",
        ),
        (json!([]), "settings must be a JSON object"),
        (
            json!({"allowedRuntimeClasses": ["gvisor", "Runc"]}),
            "allowedRuntimeClasses: \"Runc\" is not a RuntimeClass name (a lowercase DNS subdomain such as \"gvisor\")",
        ),
        (
            json!({"allowedRuntimeClasses": [""]}),
            "allowedRuntimeClasses: \"\" is not a RuntimeClass name",
        ),
        (
            json!({"allowedRuntimeClasses": "gvisor"}),
            "allowedRuntimeClasses must be a list of strings",
        ),
        (
            json!({"skipPodsUsing": ["hostSocket"]}),
            "skipPodsUsing: unknown feature \"hostSocket\"; known features: hostNamespaces, userNamespaces, windows, privileged, hostSockets, hostDevices, mountPropagation, deviceResources, dynamicResources, imageVolumes, seccomp, appArmor, seLinux, subPath, memoryEmptyDirLimit",
        ),
        (
            json!({"skipPodsUsing": "privileged"}),
            "skipPodsUsing must be a list of strings",
        ),
        (
            json!({"hostSocketPaths": ["var/run"]}),
            "hostSocketPaths: \"var/run\" is not an absolute path",
        ),
        (
            json!({"hostSocketPaths": [""]}),
            "hostSocketPaths: \"\" is not an absolute path",
        ),
        (
            json!({"hostDeviceResources": ["gpu"]}),
            "hostDeviceResources: \"gpu\" is not an extended resource name",
        ),
        (
            json!({"hostDeviceResources": ["kubernetes.io/*"]}),
            "hostDeviceResources: \"kubernetes.io/*\" is not a resource group",
        ),
        (
            json!({"skipHostNamespaces": false, "skipPodsUsing": ["hostNamespaces"]}),
            "skipHostNamespaces: false contradicts skipPodsUsing, which lists \"hostNamespaces\"",
        ),
        (
            json!({"skipPodsUsing": ["privileged"], "skipHostNamespaces": true}),
            "skipHostNamespaces: true contradicts skipPodsUsing, which lacks \"hostNamespaces\"",
        ),
        (
            json!({"ignoredResources": "nvidia.com/gpu"}),
            "ignoredResources must be a list of strings",
        ),
        (
            json!({"ignoredResources": [1]}),
            "ignoredResources must be a list of strings, got the element 1",
        ),
        (
            json!({"ignoredResources": ["cpu"]}),
            "ignoredResources: \"cpu\" is not an extended resource name",
        ),
        (
            json!({"ignoredResources": ["kubernetes.io/batteries"]}),
            "is not an extended resource name",
        ),
        (
            json!({"ignoredResources": ["Nvidia_com/*"]}),
            "ignoredResources: \"Nvidia_com/*\" is not a resource group",
        ),
        (
            json!({"ignoredResources": ["example.com/"]}),
            "is not an extended resource name",
        ),
        (
            json!({"policyServerServiceAccount": "policy-server"}),
            "policyServerServiceAccount must be \"system:serviceaccount:<namespace>:<name>\"",
        ),
        (
            json!({"policyServerServiceAccount": "system:serviceaccount:kubewarden"}),
            "policyServerServiceAccount must be",
        ),
        (
            json!({"policyServerServiceAccount": "system:serviceaccount:Kube_warden:ps"}),
            "policyServerServiceAccount must be",
        ),
        (
            json!({"policyServerServiceAccount": "system:serviceaccount:kw:ps:x"}),
            "policyServerServiceAccount must be",
        ),
        (
            json!({"policyServerServiceAccount": 7}),
            "policyServerServiceAccount must be a string",
        ),
    ];
    for (input, want) in cases {
        let err = read_settings(input.clone()).unwrap_err();
        assert!(err.contains(want), "{input}: {err}");
    }
    assert!(
        Settings::from_json(b"{")
            .unwrap_err()
            .contains("not valid JSON")
    );
}

/// The message `from_value` gives for these settings, the required ones
/// added where absent.
fn refusal(settings: Value) -> String {
    read_settings(settings).unwrap_err()
}

#[test]
fn every_error_is_reported_at_once_in_key_order() {
    let selector = json!({"kataNodeSelector": "a in x"});
    let account = json!({"policyServerServiceAccount": "policy-server"});
    let unknown = json!({"runtimeClass": "kata"});
    let all = json!({
        "runtimeClass": "kata",
        "policyServerServiceAccount": "policy-server",
        "kataNodeSelector": "a in x",
        "checkVolumes": true
    });
    // Each one's own message, unchanged, in key order.
    let want = [refusal(selector), refusal(account), refusal(unknown)].join("; ");
    assert_eq!(refusal(all), want);
    assert!(want.starts_with("kataNodeSelector \"a in x\" is not a valid label selector"));
    assert!(want.contains(
        "; policyServerServiceAccount must be \"system:serviceaccount:<namespace>:<name>\""
    ));
    assert!(want.contains("; unknown setting \"runtimeClass\"; known settings: runtimeClassName"));
}

#[test]
fn settings_read_together_are_reported_after_the_others() {
    let err = refusal(json!({
        "skipHostNamespaces": false,
        "skipPodsUsing": ["hostNamespaces"],
        "restrictRuntimeClasses": false,
        "allowedRuntimeClasses": ["Runc"],
        "noFeasibleNode": "deny"
    }));
    assert_eq!(
        err,
        [
            refusal(json!({"allowedRuntimeClasses": ["Runc"]})),
            refusal(json!({"noFeasibleNode": "deny"})),
            refusal(json!({"skipHostNamespaces": false, "skipPodsUsing": ["hostNamespaces"]})),
            refusal(json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": ["gvisor"]}))
                .replace("[\"gvisor\"]", "[\"Runc\"]"),
        ]
        .join("; ")
    );
}

#[test]
fn the_known_settings_are_listed_once() {
    let err = refusal(json!({"a": 1, "b": 2}));
    let first = refusal(json!({"a": 1}));
    assert_eq!(err, format!("{first}; unknown setting \"b\""));
}

#[test]
fn typed_values_are_ready() {
    let s = read_settings(json!({
        "kataNodeSelector": " kata in (yes), !building ",
        "ignoredResources": ["example.com/foo", "nvidia.com/*"],
        "hostDeviceResources": ["xilinx.com/*"],
        "policyServerServiceAccount": "system:serviceaccount:kw:ps-2"
    }))
    .unwrap();
    let selector = &s.kata_node_selector;
    assert_eq!(selector.text(), " kata in (yes), !building ");
    assert_eq!(selector.host_selector(), Some("kata in (yes), !building"));
    assert_eq!(
        selector.requirements(),
        labels::parse_selector("kata in (yes), !building").unwrap()
    );
    let labels_of = |pairs: &'static [(&'static str, &'static str)]| {
        move |key: &str| pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
    };
    assert!(selector.matches(labels_of(&[("kata", "yes")])));
    assert!(!selector.matches(labels_of(&[("kata", "yes"), ("building", "")])));
    assert!(!selector.matches(labels_of(&[("kata", "no")])));
    assert!(!selector.matches(labels_of(&[])));

    assert!(s.ignored_resources.contains("example.com/foo"));
    assert!(s.ignored_resources.contains("nvidia.com/gpu"));
    assert!(!s.ignored_resources.contains("example.com/bar"));
    assert!(s.host_device_resources.contains("xilinx.com/u250"));
    assert!(
        !s.host_device_resources.contains("nvidia.com/gpu"),
        "replaced"
    );

    let account = &s.policy_server_service_account;
    assert_eq!(account.namespace(), "kw");
    assert_eq!(account.name(), "ps-2");
    assert_eq!(account.user(), "system:serviceaccount:kw:ps-2");
}

#[test]
fn the_built_defaults_equal_their_constants_parsed() {
    let d = Settings::default();
    assert_eq!(
        d.kata_node_selector,
        KataNodeSelector::parse(DEFAULT_KATA_NODE_SELECTOR).unwrap()
    );
    assert_eq!(
        Some(d.policy_server_service_account),
        ServiceAccount::parse("system:serviceaccount:kubewarden:policy-server")
    );
    assert!(!d.host_device_resources.is_empty());
    for name in ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915"] {
        assert!(d.host_device_resources.contains(name), "{name}");
    }
    // An empty selector selects every node.
    let every = KataNodeSelector::parse("").unwrap();
    assert_eq!(every.host_selector(), None);
    assert!(every.matches(|_| None));
}

#[test]
fn several_classes_are_read_in_order() {
    let s = read_settings(json!({
        "runtimeClassName": "kata-clh",
        "fallbackRuntimeClasses": ["kata-qemu-runtime-rs"],
        "runtimeClassesByResource": [{"resources": ["nvidia.com/pgpu", "example.com/*"],
            "runtimeClassNames": ["kata-qemu-nvidia-gpu"]}]}))
    .unwrap();
    assert_eq!(
        s.general_classes().collect::<Vec<_>>(),
        ["kata-clh", "kata-qemu-runtime-rs"]
    );
    assert_eq!(
        s.configured_classes(),
        ["kata-clh", "kata-qemu-runtime-rs", "kata-qemu-nvidia-gpu"]
    );
    let route = &s.runtime_classes_by_resource[0];
    assert!(
        route.resources.contains("nvidia.com/pgpu") && route.resources.contains("example.com/x")
    );
    // null and [] keep the one class.
    for empty in [json!(null), json!([])] {
        let s = read_settings(
            json!({"fallbackRuntimeClasses": empty, "runtimeClassesByResource": empty}),
        )
        .unwrap();
        assert_eq!(s, Settings::default());
    }
}

#[test]
fn several_classes_are_refused_with_the_fix() {
    let cases = [
        (
            json!({"fallbackRuntimeClasses": ["kata-clh", "kata-clh"]}),
            "fallbackRuntimeClasses: \"kata-clh\" is listed twice",
        ),
        (
            json!({"runtimeClassName": "kata-clh", "fallbackRuntimeClasses": ["kata-clh"]}),
            "fallbackRuntimeClasses: \"kata-clh\" is runtimeClassName already: list each class once",
        ),
        (
            json!({"fallbackRuntimeClasses": ["Kata_CLH"]}),
            "fallbackRuntimeClasses: \"Kata_CLH\" is not a RuntimeClass name (a lowercase DNS subdomain such as \"kata-clh\")",
        ),
        (
            json!({"fallbackRuntimeClasses": "kata-clh"}),
            "fallbackRuntimeClasses must be a list of strings, got \"kata-clh\"",
        ),
        (
            json!({"runtimeClassesByResource": [{"resources": ["nvidia.com/pgpu"]}]}),
            "runtimeClassesByResource[0].runtimeClassNames must name at least one RuntimeClass, such as \"kata-qemu-nvidia-gpu\"",
        ),
        (
            json!({"runtimeClassesByResource": [{"resources": ["cpu"], "runtimeClassNames": ["kata"]}]}),
            "runtimeClassesByResource[0].resources: \"cpu\" is not an extended resource name",
        ),
        (
            json!({"runtimeClassesByResource": [{"resources": [], "runtimeClassNames": ["kata"]}]}),
            "runtimeClassesByResource[0].resources must list extended resources",
        ),
        (
            json!({"runtimeClassesByResource": [{"resource": ["nvidia.com/pgpu"], "runtimeClassNames": ["kata"]}]}),
            "runtimeClassesByResource[0]: unknown field \"resource\" (known: resources, runtimeClassNames)",
        ),
        (
            json!({"runtimeClassesByResource": {"nvidia.com/pgpu": "kata"}}),
            "runtimeClassesByResource must be a list of {resources, runtimeClassNames}",
        ),
    ];
    for (settings, expected) in cases {
        let err = read_settings(settings.clone()).unwrap_err();
        assert!(err.starts_with(expected), "{settings}: {err}");
    }
    // A refused runtimeClassName is no class to compare with: the
    // placeholder in its place ("kata") must not be reported as listed twice.
    assert_eq!(
        read_settings(json!({"runtimeClassName": "Kata", "fallbackRuntimeClasses": ["kata"]}))
            .unwrap_err(),
        "runtimeClassName must name a RuntimeClass (a lowercase DNS subdomain such as \"kata-qemu\"), got \"Kata\""
    );
    assert_eq!(
        read_settings(json!({"runtimeClassName": 7, "fallbackRuntimeClasses": ["kata"]}))
            .unwrap_err(),
        "runtimeClassName must be a string, got 7"
    );
}

/// docs/settings.md, the reference of every setting.
const SETTINGS_DOC: &str = include_str!("../../docs/settings.md");

/// The rows of the first table under `heading` in docs/settings.md, each
/// as its cells, the header and the separator left out.
fn doc_table(heading: &str) -> Vec<Vec<String>> {
    let section = SETTINGS_DOC
        .split_once(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("docs/settings.md has no {heading:?}"))
        .1;
    let section = section.split("\n## ").next().unwrap_or_default();
    (section.lines())
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2)
        .map(|row| {
            // Cells split on " | ": a "|" inside code (`a \| b`) is escaped.
            (row.trim_matches('|').split(" | "))
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The `code` spans of a cell, in order.
fn code_spans(cell: &str) -> Vec<&str> {
    cell.split('`').skip(1).step_by(2).collect()
}

/// Every known setting has a row of its own in docs/settings.md's settings
/// table and is named in its invalid-settings table.
#[test]
fn docs_settings_md_names_every_known_setting_in_both_tables() {
    let settings = doc_table("## All settings");
    let invalid = doc_table("## Invalid settings");
    assert!(settings.len() > 18 && invalid.len() > 15);
    for name in known_names() {
        let code = format!("`{name}`");
        assert!(
            settings.iter().any(|row| row[0] == code),
            "docs/settings.md, All settings: no row for {name}"
        );
        assert!(
            invalid.iter().any(|row| row[0].contains(&code)),
            "docs/settings.md, Invalid settings: {name} is not named"
        );
    }
}

/// The default column of docs/settings.md's settings table says what the
/// code does: "required" for the required settings, and for the others the
/// value it writes first reads as no setting at all does. (Two write out
/// what policy-settings.json holds, which is not how absence reads:
/// restrictRuntimeClasses and allowedRuntimeClasses, whose cells say so.)
#[test]
fn docs_settings_md_defaults_are_the_code_defaults() {
    let rows = doc_table("## All settings");
    let mut checked = Vec::new();
    for row in &rows {
        let name = row[0].trim_matches('`');
        let default = &row[2];
        if is_required(name) {
            assert_eq!(default, "**required**", "{name}");
            checked.push(name);
            continue;
        }
        assert!(!default.contains("required"), "{name}: {default}");
        let Some(first) = code_spans(default).first().copied() else {
            continue; // skipHostNamespaces: deprecated, no default.
        };
        if default.contains("written out") {
            continue;
        }
        let value = serde_json::from_str(first).unwrap_or_else(|_| json!(first));
        assert_eq!(
            read_settings(json!({ name: value })),
            Ok(Settings::default()),
            "docs/settings.md says {name} defaults to {first}"
        );
        checked.push(name);
    }
    for name in [
        "runtimeClassName",
        "policyServerServiceAccount",
        "annotateDecision",
    ] {
        assert!(checked.contains(&name), "{name} not checked: {checked:?}");
    }
    assert!(checked.len() >= 15, "{checked:?}");
}
