//! Policy settings: defaults, parsing and validation.
//!
//! Parsed by hand from a JSON object rather than with `#[derive(Deserialize)]`
//! so that every refusal names the setting at fault and the fix; serde's own
//! messages ("invalid type: integer, expected a string at line 1 column 25")
//! do not.

use serde_json::{Map, Value};

use crate::cluster::Subject;
use crate::labels;
use crate::resources::IgnoredResources;

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The RuntimeClass assigned to pods that a Kata node can run.
    pub runtime_class_name: String,
    /// Label selector naming the nodes where Kata is installed ("" = all nodes).
    pub kata_node_selector: String,
    pub no_feasible_node: Outcome,
    pub lookup_failure: Outcome,
    /// Never give Kata to pods with hostNetwork, hostPID or hostIPC.
    pub skip_host_namespaces: bool,
    /// Extended resources (`vendor/name` or `vendor/*`) the resource-fit
    /// check skips, e.g. those served through DRA.
    pub ignored_resources: Vec<String>,
    /// The user policy-server runs as, asked about in `can_i` before the
    /// node list: `system:serviceaccount:<namespace>:<name>`.
    pub policy_server_service_account: String,
    /// Judge the pod's PersistentVolumeClaims (VolumeBinding, VolumeZone);
    /// needs read access to claims, volumes and storage classes.
    pub check_volumes: bool,
}

pub const DEFAULT_RUNTIME_CLASS: &str = "kata";
/// The label kata-deploy sets on nodes once Kata is installed and ready.
pub const DEFAULT_KATA_NODE_SELECTOR: &str = "katacontainers.io/kata-runtime=true";
/// The service account of the default PolicyServer (kubewarden-defaults chart).
pub const DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT: &str =
    "system:serviceaccount:kubewarden:policy-server";

const KNOWN: &str = "runtimeClassName, kataNodeSelector, noFeasibleNode, lookupFailure, skipHostNamespaces, ignoredResources, policyServerServiceAccount, checkVolumes";

impl Default for Settings {
    fn default() -> Self {
        Settings {
            runtime_class_name: DEFAULT_RUNTIME_CLASS.to_string(),
            kata_node_selector: DEFAULT_KATA_NODE_SELECTOR.to_string(),
            no_feasible_node: Outcome::Accept,
            lookup_failure: Outcome::Accept,
            skip_host_namespaces: true,
            ignored_resources: Vec::new(),
            policy_server_service_account: DEFAULT_POLICY_SERVER_SERVICE_ACCOUNT.to_string(),
            check_volumes: true,
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
        for (key, value) in map {
            match key.as_str() {
                "runtimeClassName" => s.runtime_class_name = string(key, value)?,
                "kataNodeSelector" => s.kata_node_selector = string(key, value)?,
                "noFeasibleNode" => s.no_feasible_node = Outcome::parse(key, value)?,
                "lookupFailure" => s.lookup_failure = Outcome::parse(key, value)?,
                "skipHostNamespaces" => {
                    s.skip_host_namespaces = value.as_bool().ok_or_else(|| {
                        format!("skipHostNamespaces must be true or false, got {value}")
                    })?
                }
                "ignoredResources" => s.ignored_resources = strings(key, value)?,
                "checkVolumes" => {
                    s.check_volumes = value
                        .as_bool()
                        .ok_or_else(|| format!("checkVolumes must be true or false, got {value}"))?
                }
                "policyServerServiceAccount" => {
                    s.policy_server_service_account = string(key, value)?
                }
                _ => return Err(format!("unknown setting {key:?}; known settings: {KNOWN}")),
            }
        }
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
    pub fn ignored(&self) -> Result<IgnoredResources, String> {
        IgnoredResources::parse(self.ignored_resources.iter().map(String::as_str))
            .map_err(|e| format!("ignoredResources: {e}"))
    }

    /// The selector as sent to the host: `None` when every node is a kata node.
    pub fn host_label_selector(&self) -> Option<&str> {
        let trimmed = self.kata_node_selector.trim();
        (!trimmed.is_empty()).then_some(trimmed)
    }
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
        assert!(d.skip_host_namespaces);
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
        assert!(ignored.ignores("example.com/foo") && ignored.ignores("nvidia.com/gpu"));
        assert!(!ignored.ignores("example.com/bar"));
        assert_eq!(s.runtime_class_name, "kata-qemu");
        assert_eq!(s.host_label_selector(), Some("kata in (yes), !building"));
        assert_eq!(s.no_feasible_node, Outcome::Reject);
        assert_eq!(s.lookup_failure, Outcome::Reject);
        assert!(!s.skip_host_namespaces);
        assert!(Settings::default().check_volumes, "on by default");
        assert!(
            !Settings::from_value(&json!({"checkVolumes": false}))
                .unwrap()
                .check_volumes
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
