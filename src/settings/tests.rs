use serde_json::{Value, json};

use super::*;
use crate::incompatible::Feature;

#[test]
fn defaults_for_null_and_empty() {
    assert_eq!(Settings::from_json(b"null"), Ok(Settings::default()));
    assert_eq!(Settings::from_json(b"{}"), Ok(Settings::default()));
    let d = Settings::default();
    assert_eq!(d.runtime_class_name, "kata");
    assert_eq!(
        d.kata_node_selector.text(),
        "katacontainers.io/kata-runtime=true"
    );
    assert_eq!(d.no_feasible_node, Outcome::Accept);
    assert_eq!(d.lookup_failure, Outcome::Accept);
    assert_eq!(d.skip_pods_using, FeatureSet::default_set());
}

#[test]
fn reads_every_setting() {
    let s = Settings::from_value(&json!({
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
    assert!(!s.skip_pods_using.contains(Feature::HostNamespaces));
    assert!(s.skip_pods_using.contains(Feature::DynamicResources));
    assert!(!s.skip_pods_using.contains(Feature::Privileged), "opt-in");
    assert!(Settings::default().check_volumes, "on by default");
    assert!(
        !Settings::from_value(&json!({"checkVolumes": false}))
            .unwrap()
            .check_volumes
    );
}

#[test]
fn incompatible_pod_is_accept_or_reject() {
    assert_eq!(Settings::default().incompatible_pod, Outcome::Accept);
    let s = Settings::from_value(&json!({"incompatiblePod": "reject"})).unwrap();
    assert_eq!(s.incompatible_pod, Outcome::Reject);
    for bad in [json!("Reject"), json!(false), json!(["reject"]), json!(1)] {
        assert_eq!(
            Settings::from_value(&json!({ "incompatiblePod": bad })).unwrap_err(),
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
        let s = Settings::from_value(&json!({ "runtimeHandlerCheck": text })).unwrap();
        assert_eq!(s.runtime_handler_check, check);
    }
    for bad in [json!("Auto"), json!(true), json!(["auto"]), json!("")] {
        let e = Settings::from_value(&json!({ "runtimeHandlerCheck": bad })).unwrap_err();
        assert_eq!(
            e,
            format!("runtimeHandlerCheck must be \"auto\", \"required\" or \"off\", got {bad}")
        );
    }
}

#[test]
fn runtime_compatibility_settings() {
    let d = Settings::default();
    let names: Vec<&str> = d.skip_pods_using.iter().map(Feature::name).collect();
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
    let s = Settings::from_value(&json!({
        "skipPodsUsing": ["seccomp", "hostSockets", "seccomp"],
        "hostSocketPaths": ["//var/lib/spire/./agent/"],
        "hostDeviceResources": ["example.com/fpga", "xilinx.com/*"]
    }))
    .unwrap();
    assert_eq!(
        s.skip_pods_using,
        FeatureSet::of([Feature::Seccomp, Feature::HostSockets])
    );
    assert_eq!(s.host_socket_paths, ["/var/lib/spire/agent"]);
    assert!(s.host_device_resources.contains("xilinx.com/u250"));
    // [] turns every check off; null keeps the default.
    let none = Settings::from_value(&json!({"skipPodsUsing": []})).unwrap();
    assert!(none.skip_pods_using.is_empty());
    let null = json!({"skipPodsUsing": null, "hostSocketPaths": null, "hostDeviceResources": null});
    assert_eq!(Settings::from_value(&null).unwrap(), d);
    // The deprecated skipHostNamespaces.
    let old = Settings::from_value(&json!({"skipHostNamespaces": false})).unwrap();
    assert_eq!(
        old.skip_pods_using,
        FeatureSet::default_set().without(Feature::HostNamespaces)
    );
    assert_eq!(
        Settings::from_value(&json!({"skipHostNamespaces": true})).unwrap(),
        d
    );
    for agreeing in [
        json!({"skipHostNamespaces": true, "skipPodsUsing": ["hostNamespaces"]}),
        json!({"skipHostNamespaces": false, "skipPodsUsing": ["privileged"]}),
    ] {
        assert!(Settings::from_value(&agreeing).is_ok(), "{agreeing}");
    }
}

#[test]
fn allowed_runtime_classes_absent_null_empty_or_listed() {
    assert_eq!(Settings::default().allowed_runtime_classes, None);
    let read = |v: Value| Settings::from_value(&v).unwrap().allowed_runtime_classes;
    assert_eq!(read(json!({"allowedRuntimeClasses": null})), None);
    assert_eq!(read(json!({"allowedRuntimeClasses": []})), Some(vec![]));
    assert_eq!(
        read(json!({"allowedRuntimeClasses": ["gvisor", "kata-clh"]})),
        Some(vec!["gvisor".to_string(), "kata-clh".to_string()])
    );
}

#[test]
fn annotate_decision_is_a_boolean_off_by_default() {
    assert!(!Settings::default().annotate_decision);
    let read = |v: Value| Settings::from_value(&v).map(|s| s.annotate_decision);
    assert_eq!(read(json!({"annotateDecision": true})), Ok(true));
    assert_eq!(read(json!({"annotateDecision": false})), Ok(false));
    // Nothing else changes with it.
    let on = Settings::from_value(&json!({"annotateDecision": true})).unwrap();
    assert_eq!(
        Settings {
            annotate_decision: false,
            ..on
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
        let s = Settings::from_value(&settings).unwrap_or_else(|e| panic!("{settings}: {e}"));
        assert_eq!(s.allowed_runtime_classes, allowed, "{settings}");
    }
    // The shipped defaults: off, as with no setting at all.
    let shipped = json!({"restrictRuntimeClasses": false, "allowedRuntimeClasses": []});
    assert_eq!(Settings::from_value(&shipped).unwrap(), Settings::default());
}

#[test]
fn restrict_runtime_classes_false_with_a_list_is_refused() {
    let refused = |v: Value| Settings::from_value(&v).unwrap_err();
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
        Settings::from_value(&json!({"annotateDecisions": true})).unwrap_err(),
        "unknown setting \"annotateDecisions\"; known settings: runtimeClassName, fallbackRuntimeClasses, \
         runtimeClassesByResource, kataNodeSelector, \
         noFeasibleNode, lookupFailure, incompatiblePod, skipPodsUsing, hostSocketPaths, \
         hostDeviceResources, skipHostNamespaces (deprecated), ignoredResources, \
         policyServerServiceAccount, checkVolumes, restrictRuntimeClasses, allowedRuntimeClasses, \
         runtimeHandlerCheck, annotateDecision, logDecisions"
    );
}

#[test]
fn null_is_the_default_for_every_setting() {
    let names = super::read::known_names();
    let names: Vec<&str> = names
        .split(", ")
        .map(|n| n.trim_end_matches(" (deprecated)"))
        .collect();
    assert!(names.len() > 18, "{names:?}");
    for name in names {
        assert_eq!(
            Settings::from_value(&json!({ name: null })),
            Ok(Settings::default()),
            "{name}: null"
        );
    }
    // Together, too: null never counts as a value that contradicts another.
    let together = json!({"skipHostNamespaces": null, "skipPodsUsing": null,
        "restrictRuntimeClasses": null, "allowedRuntimeClasses": null});
    assert_eq!(Settings::from_value(&together), Ok(Settings::default()));
}

#[test]
fn log_decisions_is_a_boolean_off_by_default() {
    assert!(!Settings::default().log_decisions);
    let read = |v: Value| Settings::from_value(&v).map(|s| s.log_decisions);
    assert_eq!(read(json!({"logDecisions": true})), Ok(true));
    assert_eq!(read(json!({"logDecisions": false})), Ok(false));
    assert_eq!(
        read(json!({"logDecisions": "yes"})).unwrap_err(),
        "logDecisions must be true or false, got \"yes\""
    );
}

#[test]
fn empty_selector_means_every_node() {
    let s = Settings::from_value(&json!({"kataNodeSelector": "  "})).unwrap();
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
        let err = Settings::from_value(&input).unwrap_err();
        assert!(err.contains(want), "{input}: {err}");
    }
    assert!(
        Settings::from_json(b"{")
            .unwrap_err()
            .contains("not valid JSON")
    );
}

/// The message `from_value` gives for these settings.
fn refusal(settings: Value) -> String {
    Settings::from_value(&settings).unwrap_err()
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
    let s = Settings::from_value(&json!({
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
        NodeSelector::parse(DEFAULT_KATA_NODE_SELECTOR).unwrap()
    );
    assert_eq!(
        Some(d.policy_server_service_account),
        ServiceAccount::parse(DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT)
    );
    assert!(!d.host_device_resources.is_empty());
    for name in ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/i915"] {
        assert!(d.host_device_resources.contains(name), "{name}");
    }
    // An empty selector selects every node.
    let every = NodeSelector::parse("").unwrap();
    assert_eq!(every.host_selector(), None);
    assert!(every.matches(|_| None));
}

#[test]
fn several_classes_are_read_in_order() {
    let s = Settings::from_value(&json!({
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
        let s = Settings::from_value(
            &json!({"fallbackRuntimeClasses": empty, "runtimeClassesByResource": empty}),
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
        let err = Settings::from_value(&settings).unwrap_err();
        assert!(err.starts_with(expected), "{settings}: {err}");
    }
    // A refused runtimeClassName is no class to compare with: its default
    // ("kata") must not be reported as listed twice.
    assert_eq!(
        Settings::from_value(
            &json!({"runtimeClassName": "Kata", "fallbackRuntimeClasses": ["kata"]})
        )
        .unwrap_err(),
        "runtimeClassName must name a RuntimeClass (a lowercase DNS subdomain such as \"kata-qemu\"), got \"Kata\""
    );
    assert_eq!(
        Settings::from_value(&json!({"runtimeClassName": 7, "fallbackRuntimeClasses": ["kata"]}))
            .unwrap_err(),
        "runtimeClassName must be a string, got 7"
    );
}
