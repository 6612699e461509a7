//! Reading a JSON object into [`Settings`].
//!
//! Parsed by hand rather than with `#[derive(Deserialize)]` so that every
//! refusal names the setting at fault and the fix; serde's own messages
//! ("invalid type: integer, expected a string at line 1 column 25") do not.
//! Every error is collected, so one `validate_settings` answer lists all that
//! is wrong.

use serde_json::{Map, Value};

use super::legacy::{allowed_classes, skipped_features};
use super::values::{
    boolean, class_names, features, handler_check, outcome, resource_names, routes, socket_paths,
    string, strings,
};
use super::{ConfigMapRef, KataNodeSelector, ServiceAccount, Settings};
use crate::incompatible::FeatureSet;
use crate::labels;

/// Settings being read, with the values only read together at the end.
struct Draft {
    settings: Settings,
    skip_pods_using: Option<FeatureSet>,
    skip_host_namespaces: Option<bool>,
    restrict_classes: Option<bool>,
    listed_classes: Option<Vec<String>>,
    /// `runtimeClassName` was read. Otherwise (missing, or refused) the
    /// placeholder in its place is no class the user named, so nothing is
    /// compared with it.
    class_name_read: bool,
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
const KNOWN: [Known; 21] = [
    known("runtimeClassName", |d, key, value| {
        let name = string(key, value)?;
        if !labels::is_dns_subdomain(&name) {
            return Err(format!(
                "{key} must name a RuntimeClass (a lowercase DNS subdomain such as \"kata-qemu\"), got {name:?}"
            ));
        }
        d.settings.runtime_class_name = name;
        d.class_name_read = true;
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
        d.settings.kata_node_selector = KataNodeSelector::parse(&text).map_err(|e| {
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
    known("checkPodAffinity", |d, key, value| {
        d.settings.check_pod_affinity = boolean(key, value)?;
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
    known("nodeShapes", |d, key, value| {
        let text = if value.is_null() {
            String::new()
        } else {
            string(key, value)?
        };
        d.settings.node_shapes = match text.as_str() {
            "" => None,
            _ => Some(ConfigMapRef::parse(&text).ok_or_else(|| {
                format!(
                    "{key} must be \"<namespace>/<name>\" of a ConfigMap (a DNS label and a DNS subdomain), or \"\" for none, got {text:?}"
                )
            })?),
        };
        Ok(())
    }),
];

/// The settings without a default, each with the message that refuses it
/// when it is missing (absent, `null` or `""`): what to set, and how to
/// find it. No default can be right for every cluster:
///
/// - `runtimeClassName`: kata-deploy 4.x, the usual installer, creates one
///   class per shim (`kata-qemu-runtime-rs` for its default shim since 4.0,
///   `kata-qemu`, `kata-clh`, `kata-fc`, `kata-dragonball`,
///   `kata-qemu-nvidia-gpu`, ...) and a class named `kata` only with
///   `runtimeClasses.createDefault=true`, off by default. The old default
///   `kata` named no class on a default install: every pod was left
///   unchanged, with only a warning to its creator, and the settings were
///   accepted.
/// - `policyServerServiceAccount`: the policy cannot see which account its
///   PolicyServer runs as. The old default, kubewarden-defaults'
///   PolicyServer (`system:serviceaccount:kubewarden:policy-server`), is not
///   the dedicated PolicyServer the README recommends, and with a wrong
///   account the access check (`kubernetes/can_i`) answers for the wrong
///   account.
pub(super) const REQUIRED: [(&str, &str); 2] = [
    (
        "runtimeClassName",
        "the Kata RuntimeClass to assign (kata-deploy 4.x creates kata-qemu-runtime-rs for its \
         default shim, and kata-qemu, kata-clh, ... for the others; list yours with \
         kubectl get runtimeclass)",
    ),
    (
        "policyServerServiceAccount",
        "the ServiceAccount the policy's PolicyServer runs as, as \
         \"system:serviceaccount:<namespace>:<name>\" (kubectl get policyserver <policyserver> \
         -o jsonpath='{.spec.serviceAccountName}'; the kubewarden-defaults chart's PolicyServer \
         runs as system:serviceaccount:kubewarden:policy-server)",
    ),
];

/// Whether a required setting is missing: absent, `null` (what Helm renders
/// for an unset value) or the empty string.
fn missing(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(_) => false,
    }
}

/// The message refusing a missing required setting.
fn required(name: &str, what: &str) -> String {
    format!("{name} is required: {what}")
}

impl Settings {
    /// Parses and validates settings JSON. `null` and `{}` are refused: they
    /// lack the required settings.
    pub fn from_json(bytes: &[u8]) -> Result<Settings, String> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| format!("settings are not valid JSON: {e}"))?;
        Settings::from_value(&value)
    }

    /// Reads every setting; on failure, every error, joined by `"; "`: one
    /// per missing required setting, then one per bad key in the map's key
    /// order (serde_json's `Map` sorts keys), then those of settings read
    /// together. `null` reads as `{}`.
    pub fn from_value(value: &Value) -> Result<Settings, String> {
        match value {
            Value::Null => from_map(&Map::new()).map_err(|errors| errors.join("; ")),
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
        class_name_read: false,
    };
    // The required settings first: what to set before anything else.
    let mut errors: Vec<String> = (REQUIRED.iter())
        .filter(|(name, _)| missing(map.get(*name)))
        .map(|(name, what)| required(name, what))
        .collect();
    let mut known_listed = false;
    for (key, value) in map {
        let read = match KNOWN.iter().find(|k| k.name == key) {
            // Helm renders an unset value as null: the default, as absent
            // (a required setting has none: refused above).
            Some(_) if value.is_null() => Ok(()),
            // A required setting set to "": refused above, as missing.
            Some(_) if REQUIRED.iter().any(|(name, _)| name == key) && missing(Some(value)) => {
                Ok(())
            }
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
        class_name_read,
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
        .find(|c| class_name_read && **c == settings.runtime_class_name);
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
