//! Reading a JSON object into [`Settings`].
//!
//! Parsed by hand rather than with `#[derive(Deserialize)]` so that every
//! refusal names the setting at fault and the fix; serde's own messages
//! ("invalid type: integer, expected a string at line 1 column 25") do not.
//! Every error is collected, so one `validate_settings` answer lists all that
//! is wrong.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::legacy::{allowed_classes, skipped_features};
use super::{ClassRoute, HandlerCheck, NodeSelector, Outcome, ServiceAccount, Settings};
use crate::incompatible::{self, Feature, FeatureSet};
use crate::labels;
use crate::resources::ResourceNames;

/// Settings being read, with the values only read together at the end.
struct Draft {
    settings: Settings,
    skip_pods_using: Option<FeatureSet>,
    skip_host_namespaces: Option<bool>,
    restrict_classes: Option<bool>,
    listed_classes: Option<Vec<String>>,
    /// `runtimeClassName` was given and refused: the default in its place
    /// is no class the user named, so nothing is compared with it.
    class_name_refused: bool,
}

/// Reads one setting's value into the draft; the error names the setting.
type Reader = fn(&mut Draft, &str, &Value) -> Result<(), String>;

/// A known setting.
struct Known {
    name: &'static str,
    deprecated: bool,
    read: Reader,
}

const fn known(name: &'static str, read: Reader) -> Known {
    Known {
        name,
        deprecated: false,
        read,
    }
}

/// Every setting, in the order the unknown-setting message lists them: the
/// one list both the reader and that message use, so they cannot disagree.
/// A `null` list keeps the default, like an absent key (Helm renders unset
/// values as null); `[]` empties it.
const KNOWN: [Known; 19] = [
    known("runtimeClassName", |d, key, value| {
        d.class_name_refused = true;
        let name = string(key, value)?;
        if !labels::is_dns_subdomain(&name) {
            return Err(format!(
                "{key} must name a RuntimeClass (a lowercase DNS subdomain such as \"kata-qemu\"), got {name:?}"
            ));
        }
        d.settings.runtime_class_name = name;
        d.class_name_refused = false;
        Ok(())
    }),
    known("fallbackRuntimeClasses", |d, key, value| {
        d.settings.fallback_runtime_classes = class_names(key, value)?;
        Ok(())
    }),
    known("runtimeClassesByResource", |d, key, value| {
        d.settings.runtime_classes_by_resource = routes(key, value)?;
        Ok(())
    }),
    known("kataNodeSelector", |d, key, value| {
        let text = string(key, value)?;
        d.settings.kata_node_selector = NodeSelector::parse(&text).map_err(|e| {
            format!(
                "{key} {text:?} is not a valid label selector: {e} (example: \"katacontainers.io/kata-runtime=true\")"
            )
        })?;
        Ok(())
    }),
    known("noFeasibleNode", |d, key, value| {
        d.settings.no_feasible_node = outcome(key, value)?;
        Ok(())
    }),
    known("lookupFailure", |d, key, value| {
        d.settings.lookup_failure = outcome(key, value)?;
        Ok(())
    }),
    known("incompatiblePod", |d, key, value| {
        d.settings.incompatible_pod = outcome(key, value)?;
        Ok(())
    }),
    known("skipPodsUsing", |d, key, value| {
        if !value.is_null() {
            d.skip_pods_using = Some(features(key, value)?);
        }
        Ok(())
    }),
    known("hostSocketPaths", |d, key, value| {
        if !value.is_null() {
            d.settings.host_socket_paths = socket_paths(key, value)?;
        }
        Ok(())
    }),
    known("hostDeviceResources", |d, key, value| {
        if !value.is_null() {
            d.settings.host_device_resources = resource_names(key, value)?;
        }
        Ok(())
    }),
    Known {
        name: "skipHostNamespaces",
        deprecated: true,
        read: |d, key, value| {
            d.skip_host_namespaces = Some(boolean(key, value)?);
            Ok(())
        },
    },
    known("ignoredResources", |d, key, value| {
        d.settings.ignored_resources = resource_names(key, value)?;
        Ok(())
    }),
    known("policyServerServiceAccount", |d, key, value| {
        let text = string(key, value)?;
        d.settings.policy_server_service_account = ServiceAccount::parse(&text).ok_or_else(|| {
            format!(
                "{key} must be \"system:serviceaccount:<namespace>:<name>\" with a namespace and a name that are DNS labels, got {text:?}"
            )
        })?;
        Ok(())
    }),
    known("checkVolumes", |d, key, value| {
        d.settings.check_volumes = boolean(key, value)?;
        Ok(())
    }),
    known("restrictRuntimeClasses", |d, key, value| {
        d.restrict_classes = Some(boolean(key, value)?);
        Ok(())
    }),
    known("allowedRuntimeClasses", |d, key, value| {
        if value.is_null() {
            return Ok(());
        }
        let list = strings(key, value)?;
        // Kept even with a bad name, so that a contradiction with
        // restrictRuntimeClasses is reported too.
        let bad = list.iter().find(|c| !labels::is_dns_subdomain(c)).cloned();
        d.listed_classes = Some(list);
        match bad {
            Some(bad) => Err(format!(
                "{key}: {bad:?} is not a RuntimeClass name (a lowercase DNS subdomain such as \"gvisor\")"
            )),
            None => Ok(()),
        }
    }),
    known("runtimeHandlerCheck", |d, key, value| {
        d.settings.runtime_handler_check = handler_check(key, value)?;
        Ok(())
    }),
    known("annotateDecision", |d, key, value| {
        d.settings.annotate_decision = boolean(key, value)?;
        Ok(())
    }),
    known("logDecisions", |d, key, value| {
        d.settings.log_decisions = boolean(key, value)?;
        Ok(())
    }),
];

impl Settings {
    /// Parses and validates settings JSON. `null` and `{}` give the defaults.
    pub fn from_json(bytes: &[u8]) -> Result<Settings, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("settings are not valid JSON: {e}"))?;
        Settings::from_value(&value)
    }

    /// Reads every setting; on failure, every error, joined by `"; "`: one
    /// per bad key in the map's key order (serde_json's `Map` sorts keys),
    /// then those of settings read together.
    pub fn from_value(value: &Value) -> Result<Settings, String> {
        match value {
            Value::Null => Ok(Settings::default()),
            Value::Object(map) => from_map(map).map_err(|errors| errors.join("; ")),
            other => Err(format!("settings must be a JSON object, got {other}")),
        }
    }
}

fn from_map(map: &Map<String, Value>) -> Result<Settings, Vec<String>> {
    let mut draft = Draft {
        settings: Settings::default(),
        skip_pods_using: None,
        skip_host_namespaces: None,
        restrict_classes: None,
        listed_classes: None,
        class_name_refused: false,
    };
    let mut errors = Vec::new();
    let mut known_listed = false;
    for (key, value) in map {
        let read = match KNOWN.iter().find(|k| k.name == key) {
            // Helm renders an unset value as null: the default, as absent.
            Some(_) if value.is_null() => Ok(()),
            Some(known) => (known.read)(&mut draft, key, value),
            // The known settings are listed once, with the first unknown key.
            None if known_listed => Err(format!("unknown setting {key:?}")),
            None => {
                known_listed = true;
                Err(format!(
                    "unknown setting {key:?}; known settings: {}",
                    known_names()
                ))
            }
        };
        if let Err(e) = read {
            errors.push(e);
        }
    }
    let Draft {
        mut settings,
        skip_pods_using,
        skip_host_namespaces,
        restrict_classes,
        listed_classes,
        class_name_refused,
    } = draft;
    match skipped_features(skip_pods_using, skip_host_namespaces) {
        Ok(set) => settings.skip_pods_using = set,
        Err(e) => errors.push(e),
    }
    match allowed_classes(restrict_classes, listed_classes) {
        Ok(allowed) => settings.allowed_runtime_classes = allowed,
        Err(e) => errors.push(e),
    }
    let duplicate = (settings.fallback_runtime_classes.iter())
        .find(|c| !class_name_refused && **c == settings.runtime_class_name);
    if let Some(class) = duplicate {
        errors.push(format!(
            "fallbackRuntimeClasses: {class:?} is runtimeClassName already: list each class once"
        ));
    }
    if errors.is_empty() {
        Ok(settings)
    } else {
        Err(errors)
    }
}

/// The known settings as the unknown-setting message lists them.
pub(super) fn known_names() -> String {
    let names: Vec<String> = (KNOWN.iter())
        .map(|k| match k.deprecated {
            true => format!("{} (deprecated)", k.name),
            false => k.name.to_string(),
        })
        .collect();
    names.join(", ")
}

fn outcome(key: &str, value: &Value) -> Result<Outcome, String> {
    match value.as_str() {
        Some("accept") => Ok(Outcome::Accept),
        Some("reject") => Ok(Outcome::Reject),
        _ => Err(format!(
            "{key} must be \"accept\" or \"reject\", got {value}"
        )),
    }
}

fn handler_check(key: &str, value: &Value) -> Result<HandlerCheck, String> {
    match value.as_str() {
        Some("auto") => Ok(HandlerCheck::Auto),
        Some("required") => Ok(HandlerCheck::Required),
        Some("off") => Ok(HandlerCheck::Off),
        _ => Err(format!(
            "{key} must be \"auto\", \"required\" or \"off\", got {value}"
        )),
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
                Ok(incompatible::clean(p).into())
            } else {
                Err(format!(
                    "{key}: {p:?} is not an absolute path (example: \"/var/run\")"
                ))
            }
        })
        .collect()
}

/// `ignoredResources`, `hostDeviceResources`: extended resource names or
/// `domain/*` groups.
fn resource_names(key: &str, value: &Value) -> Result<ResourceNames, String> {
    let entries = strings(key, value)?;
    ResourceNames::parse(entries.iter().map(String::as_str)).map_err(|e| format!("{key}: {e}"))
}

/// RuntimeClass names, each once.
fn class_names(key: &str, value: &Value) -> Result<Vec<String>, String> {
    let names = strings(key, value)?;
    let mut seen = std::collections::BTreeSet::new();
    for name in &names {
        if !labels::is_dns_subdomain(name) {
            return Err(format!(
                "{key}: {name:?} is not a RuntimeClass name (a lowercase DNS subdomain such as \"kata-clh\")"
            ));
        }
        if !seen.insert(name) {
            return Err(format!("{key}: {name:?} is listed twice"));
        }
    }
    Ok(names)
}

/// `runtimeClassesByResource`: `{resources, runtimeClassNames}` entries.
fn routes(key: &str, value: &Value) -> Result<Vec<ClassRoute>, String> {
    let entries = match value {
        Value::Null => return Ok(Vec::new()),
        Value::Array(entries) => entries,
        other => {
            return Err(format!(
                "{key} must be a list of {{resources, runtimeClassNames}}, got {other}"
            ));
        }
    };
    let mut routes = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let at = format!("{key}[{i}]");
        let Value::Object(fields) = entry else {
            return Err(format!(
                "{at} must be an object with resources and runtimeClassNames, got {entry}"
            ));
        };
        if let Some(other) = fields
            .keys()
            .find(|k| *k != "resources" && *k != "runtimeClassNames")
        {
            return Err(format!(
                "{at}: unknown field {other:?} (known: resources, runtimeClassNames)"
            ));
        }
        let null = Value::Null;
        let resources = strings(
            &format!("{at}.resources"),
            fields.get("resources").unwrap_or(&null),
        )?;
        if resources.is_empty() {
            return Err(format!(
                "{at}.resources must list extended resources, such as \"nvidia.com/pgpu\""
            ));
        }
        let resources = ResourceNames::parse(resources.iter().map(String::as_str))
            .map_err(|e| format!("{at}.resources: {e}"))?;
        let classes = class_names(
            &format!("{at}.runtimeClassNames"),
            fields.get("runtimeClassNames").unwrap_or(&null),
        )?;
        if classes.is_empty() {
            return Err(format!(
                "{at}.runtimeClassNames must name at least one RuntimeClass, such as \"kata-qemu-nvidia-gpu\""
            ));
        }
        routes.push(ClassRoute { resources, classes });
    }
    Ok(routes)
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
