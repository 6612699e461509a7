//! Policy settings: defaults, parsing and validation.
//!
//! Parsed by hand from a JSON object rather than with `#[derive(Deserialize)]`
//! so that every refusal names the setting at fault and the fix; serde's own
//! messages ("invalid type: integer, expected a string at line 1 column 25")
//! do not.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::cluster::Subject;
use crate::incompatible::{self, Feature, FeatureSet, Rules};
use crate::labels;
use crate::resources::ResourceNames;

/// What to do with the pod when the policy cannot give it Kata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Admit the pod unchanged, with a warning.
    Accept,
    /// Refuse the pod, with the same explanation.
    Reject,
}

impl Outcome {
    fn parse(setting: &str, value: &Value) -> Result<Self, String> {
        match value.as_str() {
            Some("accept") => Ok(Outcome::Accept),
            Some("reject") => Ok(Outcome::Reject),
            _ => Err(format!(
                "{setting} must be \"accept\" or \"reject\", got {value}"
            )),
        }
    }
}

/// How the nodes' own reports of their runtime handlers
/// (`status.runtimeHandlers`, kubelet ≥ 1.30) are used to tell Kata nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerCheck {
    /// A node that reports handlers must list the RuntimeClass's handler; a
    /// node that reports none is judged by its labels.
    Auto,
    /// Every node must report the RuntimeClass's handler.
    Required,
    /// The field is not read.
    Off,
}

impl HandlerCheck {
    fn parse(setting: &str, value: &Value) -> Result<Self, String> {
        match value.as_str() {
            Some("auto") => Ok(HandlerCheck::Auto),
            Some("required") => Ok(HandlerCheck::Required),
            Some("off") => Ok(HandlerCheck::Off),
            _ => Err(format!(
                "{setting} must be \"auto\", \"required\" or \"off\", got {value}"
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The RuntimeClass assigned to pods that a Kata node can run.
    pub runtime_class_name: String,
    /// Label selector naming the nodes where Kata is installed ("" = all nodes).
    pub kata_node_selector: String,
    pub no_feasible_node: Outcome,
    pub lookup_failure: Outcome,
    /// What to do with a pod that uses a feature in `skipPodsUsing`:
    /// admit it without Kata (`Accept`), or refuse it (`Reject`, for
    /// namespaces where every pod must run under Kata).
    pub incompatible_pod: Outcome,
    /// Pod features Kata cannot run: a pod using one is left unchanged.
    /// (The deprecated `skipHostNamespaces: false` removes `hostNamespaces`.)
    pub skip_pods_using: FeatureSet,
    /// Host paths under which sockets live (`hostSockets`), cleaned.
    /// (The defaults are borrowed: every admission without settings builds
    /// a `Settings`.)
    pub host_socket_paths: Vec<Cow<'static, str>>,
    /// Extended resources a device plugin hands over as host device nodes
    /// (`deviceResources`): names or `domain/*` groups.
    pub host_device_resources: Vec<Cow<'static, str>>,
    /// Extended resources (`vendor/name` or `vendor/*`) the resource-fit
    /// check skips, e.g. those served through DRA.
    pub ignored_resources: Vec<String>,
    /// The user policy-server runs as, asked about in `can_i` before the
    /// node list: `system:serviceaccount:<namespace>:<name>`.
    pub policy_server_service_account: String,
    /// The RuntimeClasses a pod may name itself besides `runtimeClassName`
    /// (`None`: any). A pod naming another is refused. Read from
    /// `restrictRuntimeClasses` and `allowedRuntimeClasses` together
    /// ([`allowed_classes`]).
    pub allowed_runtime_classes: Option<Vec<String>>,
    /// Judge the pod's PersistentVolumeClaims (VolumeBinding, VolumeZone);
    /// needs read access to claims, volumes and storage classes.
    pub check_volumes: bool,
    /// Whether a node must report the RuntimeClass's runtime handler.
    pub runtime_handler_check: HandlerCheck,
    /// Write the decision on every evaluated pod the policy admits, as the
    /// annotation `kata-runtime-policy.kubewarden.io/decision`.
    pub annotate_decision: bool,
}

pub const DEFAULT_RUNTIME_CLASS: &str = "kata";
/// The label kata-deploy sets on nodes once Kata is installed and ready.
pub const DEFAULT_KATA_NODE_SELECTOR: &str = "katacontainers.io/kata-runtime=true";
/// The service account of the default PolicyServer (kubewarden-defaults chart).
pub const DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT: &str =
    "system:serviceaccount:kubewarden:policy-server";

/// Where container runtimes, kubelet plugins and device plugins keep their
/// sockets.
pub const DEFAULT_HOST_SOCKET_PATHS: [&str; 6] = [
    "/run",
    "/var/run",
    "/var/lib/kubelet/plugins",
    "/var/lib/kubelet/plugins_registry",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/pod-resources",
];
/// Device-plugin resources handed over as device nodes, not through VFIO.
pub const DEFAULT_HOST_DEVICE_RESOURCES: [&str; 3] =
    ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/*"];

const KNOWN: &str = "runtimeClassName, kataNodeSelector, noFeasibleNode, lookupFailure, incompatiblePod, skipPodsUsing, hostSocketPaths, hostDeviceResources, skipHostNamespaces (deprecated), ignoredResources, policyServerServiceAccount, checkVolumes, restrictRuntimeClasses, allowedRuntimeClasses, runtimeHandlerCheck, annotateDecision";

impl Default for Settings {
    fn default() -> Self {
        Settings {
            runtime_class_name: DEFAULT_RUNTIME_CLASS.to_string(),
            kata_node_selector: DEFAULT_KATA_NODE_SELECTOR.to_string(),
            no_feasible_node: Outcome::Accept,
            lookup_failure: Outcome::Accept,
            incompatible_pod: Outcome::Accept,
            skip_pods_using: FeatureSet::default_set(),
            host_socket_paths: DEFAULT_HOST_SOCKET_PATHS.map(Cow::Borrowed).to_vec(),
            host_device_resources: DEFAULT_HOST_DEVICE_RESOURCES.map(Cow::Borrowed).to_vec(),
            ignored_resources: Vec::new(),
            policy_server_service_account: DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT.to_string(),
            check_volumes: true,
            allowed_runtime_classes: None,
            runtime_handler_check: HandlerCheck::Auto,
            annotate_decision: false,
        }
    }
}

impl Settings {
    /// Parses and validates settings JSON. `null` and `{}` give the defaults.
    pub fn from_json(bytes: &[u8]) -> Result<Settings, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("settings are not valid JSON: {e}"))?;
        Settings::from_value(&value)
    }

    pub fn from_value(value: &Value) -> Result<Settings, String> {
        let map = match value {
            Value::Null => return Ok(Settings::default()),
            Value::Object(map) => map,
            other => return Err(format!("settings must be a JSON object, got {other}")),
        };
        let settings = Settings::from_map(map)?;
        settings.validate()?;
        Ok(settings)
    }

    fn from_map(map: &Map<String, Value>) -> Result<Settings, String> {
        let mut s = Settings::default();
        let mut skip_pods_using = None;
        let mut skip_host_namespaces = None;
        let mut restrict_classes = None;
        let mut listed_classes = None;
        for (key, value) in map {
            match key.as_str() {
                "runtimeClassName" => s.runtime_class_name = string(key, value)?,
                "kataNodeSelector" => s.kata_node_selector = string(key, value)?,
                "noFeasibleNode" => s.no_feasible_node = Outcome::parse(key, value)?,
                "lookupFailure" => s.lookup_failure = Outcome::parse(key, value)?,
                "incompatiblePod" => s.incompatible_pod = Outcome::parse(key, value)?,
                "runtimeHandlerCheck" => s.runtime_handler_check = HandlerCheck::parse(key, value)?,
                "skipHostNamespaces" => skip_host_namespaces = Some(boolean(key, value)?),
                // null, like an absent key, keeps the default (Helm renders
                // unset values as null); [] turns every check off.
                "skipPodsUsing" if value.is_null() => {}
                "skipPodsUsing" => skip_pods_using = Some(features(key, value)?),
                "hostSocketPaths" if value.is_null() => {}
                "hostSocketPaths" => s.host_socket_paths = socket_paths(key, value)?,
                "restrictRuntimeClasses" => restrict_classes = Some(boolean(key, value)?),
                "allowedRuntimeClasses" if value.is_null() => {}
                "allowedRuntimeClasses" => listed_classes = Some(strings(key, value)?),
                "hostDeviceResources" if value.is_null() => {}
                "hostDeviceResources" => {
                    s.host_device_resources =
                        strings(key, value)?.into_iter().map(Cow::Owned).collect()
                }
                "ignoredResources" => s.ignored_resources = strings(key, value)?,
                "checkVolumes" => s.check_volumes = boolean(key, value)?,
                "annotateDecision" => s.annotate_decision = boolean(key, value)?,
                "policyServerServiceAccount" => {
                    s.policy_server_service_account = string(key, value)?
                }
                _ => return Err(format!("unknown setting {key:?}; known settings: {KNOWN}")),
            }
        }
        s.skip_pods_using = skipped_features(skip_pods_using, skip_host_namespaces)?;
        s.allowed_runtime_classes = allowed_classes(restrict_classes, listed_classes)?;
        Ok(s)
    }

    pub fn validate(&self) -> Result<(), String> {
        if !labels::is_dns_subdomain(&self.runtime_class_name) {
            return Err(format!(
                "runtimeClassName must name a RuntimeClass (a lowercase DNS subdomain such as \"kata-qemu\"), got {:?}",
                self.runtime_class_name
            ));
        }
        labels::parse_selector(&self.kata_node_selector).map_err(|e| {
            format!(
                "kataNodeSelector {:?} is not a valid label selector: {e} (example: \"katacontainers.io/kata-runtime=true\")",
                self.kata_node_selector
            )
        })?;
        self.ignored()?;
        self.device_resources()?;
        if let Some(bad) =
            (self.allowed_runtime_classes.iter().flatten()).find(|c| !labels::is_dns_subdomain(c))
        {
            return Err(format!(
                "allowedRuntimeClasses: {bad:?} is not a RuntimeClass name (a lowercase DNS subdomain such as \"gvisor\")"
            ));
        }
        if let Some(p) = self.host_socket_paths.iter().find(|p| !p.starts_with('/')) {
            return Err(format!(
                "hostSocketPaths: {p:?} is not an absolute path (example: \"/var/run\")"
            ));
        }
        self.policy_server_namespace().ok_or_else(|| {
            format!(
                "policyServerServiceAccount must be \"system:serviceaccount:<namespace>:<name>\" with a namespace and a name that are DNS labels, got {:?}",
                self.policy_server_service_account
            )
        })?;
        Ok(())
    }

    /// The namespace of `policyServerServiceAccount`, if it is well formed.
    fn policy_server_namespace(&self) -> Option<&str> {
        let rest = self
            .policy_server_service_account
            .strip_prefix("system:serviceaccount:")?;
        let (namespace, name) = rest.split_once(':')?;
        (labels::is_dns_label(namespace) && labels::is_dns_label(name)).then_some(namespace)
    }

    /// The subject of the `can_i` questions: the service account with the
    /// groups the API server gives every service account.
    pub fn policy_server_subject(&self) -> Subject<'_> {
        let namespace = self.policy_server_namespace().unwrap_or_default();
        Subject {
            user: &self.policy_server_service_account,
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{namespace}"),
                "system:authenticated".to_string(),
            ],
        }
    }

    /// `ignoredResources`, parsed.
    pub fn ignored(&self) -> Result<ResourceNames, String> {
        ResourceNames::parse(self.ignored_resources.iter().map(String::as_str))
            .map_err(|e| format!("ignoredResources: {e}"))
    }

    /// `hostDeviceResources`, parsed.
    pub fn device_resources(&self) -> Result<ResourceNames, String> {
        ResourceNames::parse(self.host_device_resources.iter().map(|r| r.as_ref()))
            .map_err(|e| format!("hostDeviceResources: {e}"))
    }

    /// What the runtime-compatibility check needs.
    pub fn incompatible_rules(&self) -> Rules<'_> {
        Rules {
            features: self.skip_pods_using,
            socket_paths: &self.host_socket_paths,
            device_resources: &self.host_device_resources,
        }
    }

    /// The selector as sent to the host: `None` when every node is a kata node.
    pub fn host_label_selector(&self) -> Option<&str> {
        let trimmed = self.kata_node_selector.trim();
        (!trimmed.is_empty()).then_some(trimmed)
    }
}

/// `skipPodsUsing`, with the deprecated `skipHostNamespaces` folded in.
fn skipped_features(
    explicit: Option<FeatureSet>,
    skip_host_namespaces: Option<bool>,
) -> Result<FeatureSet, String> {
    let host = Feature::HostNamespaces;
    match (explicit, skip_host_namespaces) {
        (None, Some(false)) => Ok(FeatureSet::default_set().without(host)),
        (None, _) => Ok(FeatureSet::default_set()),
        (Some(set), None) => Ok(set),
        (Some(set), Some(skip)) if set.contains(host) == skip => Ok(set),
        (Some(_), Some(skip)) => Err(format!(
            "skipHostNamespaces: {skip} contradicts skipPodsUsing, which {} \"hostNamespaces\"; \
             skipHostNamespaces is deprecated: remove it and keep skipPodsUsing",
            if skip { "lacks" } else { "lists" }
        )),
    }
}

/// Which classes a pod may name itself besides `runtimeClassName` (`None`:
/// any), from `restrictRuntimeClasses` and `allowedRuntimeClasses` (null
/// reads as absent). `restrictRuntimeClasses` says whether the restriction
/// is on; absent, a list turns it on, the rule from before the setting
/// existed, kept for the settings written then.
fn allowed_classes(
    restrict: Option<bool>,
    listed: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, String> {
    match (restrict, listed) {
        (None, listed) => Ok(listed),
        (Some(true), listed) => Ok(Some(listed.unwrap_or_default())),
        (Some(false), Some(list)) if !list.is_empty() => Err(format!(
            "restrictRuntimeClasses: false contradicts allowedRuntimeClasses {list:?}: \
             set restrictRuntimeClasses: true, or remove the list"
        )),
        (Some(false), _) => Ok(None),
    }
}

fn features(key: &str, value: &Value) -> Result<FeatureSet, String> {
    let names = strings(key, value)?;
    let mut set = Vec::new();
    for name in &names {
        let feature = Feature::from_name(name).ok_or_else(|| {
            format!(
                "{key}: unknown feature {name:?}; known features: {}",
                Feature::known_names()
            )
        })?;
        set.push(feature);
    }
    Ok(FeatureSet::of(set))
}

/// `hostSocketPaths`: absolute paths, stored cleaned.
fn socket_paths(key: &str, value: &Value) -> Result<Vec<Cow<'static, str>>, String> {
    let paths = strings(key, value)?;
    paths
        .iter()
        .map(|p| {
            if p.starts_with('/') {
                Ok(Cow::Owned(incompatible::clean(p)))
            } else {
                Err(format!(
                    "{key}: {p:?} is not an absolute path (example: \"/var/run\")"
                ))
            }
        })
        .collect()
}

fn strings(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let list = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(list) => list,
        other => return Err(format!("{key} must be a list of strings, got {other}")),
    };
    list.iter()
        .map(|v| {
            v.as_str()
                .map(str::to_string)
                .ok_or_else(|| format!("{key} must be a list of strings, got the element {v}"))
        })
        .collect()
}

fn boolean(key: &str, value: &Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("{key} must be true or false, got {value}"))
}

fn string(key: &str, value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key} must be a string, got {value}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_for_null_and_empty() {
        assert_eq!(Settings::from_json(b"null"), Ok(Settings::default()));
        assert_eq!(Settings::from_json(b"{}"), Ok(Settings::default()));
        let d = Settings::default();
        assert_eq!(d.runtime_class_name, "kata");
        assert_eq!(d.kata_node_selector, "katacontainers.io/kata-runtime=true");
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
        assert_eq!(s.ignored_resources, ["example.com/foo", "nvidia.com/*"]);
        let ignored = s.ignored().unwrap();
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
        for bad in [
            json!("Reject"),
            json!(false),
            json!(null),
            json!(["reject"]),
            json!(1),
        ] {
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
        for bad in [
            json!("Auto"),
            json!(true),
            json!(null),
            json!(["auto"]),
            json!(""),
        ] {
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
        assert_eq!(d.host_device_resources, DEFAULT_HOST_DEVICE_RESOURCES);
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
        assert!(s.device_resources().unwrap().contains("xilinx.com/u250"));
        // [] turns every check off; null keeps the default.
        let none = Settings::from_value(&json!({"skipPodsUsing": []})).unwrap();
        assert!(none.skip_pods_using.is_empty());
        let null =
            json!({"skipPodsUsing": null, "hostSocketPaths": null, "hostDeviceResources": null});
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
            (json!(null), "null"),
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
        for (bad, shown) in [
            (json!("false"), "\"false\""),
            (json!(0), "0"),
            (json!(null), "null"),
        ] {
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
            "unknown setting \"annotateDecisions\"; known settings: runtimeClassName, kataNodeSelector, \
             noFeasibleNode, lookupFailure, incompatiblePod, skipPodsUsing, hostSocketPaths, \
             hostDeviceResources, skipHostNamespaces (deprecated), ignoredResources, \
             policyServerServiceAccount, checkVolumes, restrictRuntimeClasses, allowedRuntimeClasses, \
             runtimeHandlerCheck, annotateDecision"
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
            (json!({"lookupFailure": null}), "lookupFailure must be"),
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
}
