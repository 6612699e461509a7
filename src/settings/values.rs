//! Readers of one setting's value: each checks the JSON type and the
//! value, and its error names the setting (`key`) and what it takes.

use std::borrow::Cow;

use serde_json::Value;

use super::{ClassRoute, HandlerCheck, Outcome};
use crate::incompatible::{self, FeatureSet, PodFeature};
use crate::labels;
use crate::resources::ResourceNames;

pub(super) fn outcome(key: &str, value: &Value) -> Result<Outcome, String> {
    match value.as_str() {
        Some("accept") => Ok(Outcome::Accept),
        Some("reject") => Ok(Outcome::Reject),
        _ => Err(format!(
            "{key} must be \"accept\" or \"reject\", got {value}"
        )),
    }
}

pub(super) fn handler_check(key: &str, value: &Value) -> Result<HandlerCheck, String> {
    match value.as_str() {
        Some("auto") => Ok(HandlerCheck::Auto),
        Some("required") => Ok(HandlerCheck::Required),
        Some("off") => Ok(HandlerCheck::Off),
        _ => Err(format!(
            "{key} must be \"auto\", \"required\" or \"off\", got {value}"
        )),
    }
}

pub(super) fn features(key: &str, value: &Value) -> Result<FeatureSet, String> {
    let names = strings(key, value)?;
    let mut set = Vec::new();
    for name in &names {
        let feature = PodFeature::from_name(name).ok_or_else(|| {
            format!(
                "{key}: unknown feature {name:?}; known features: {}",
                PodFeature::known_names()
            )
        })?;
        set.push(feature);
    }
    Ok(FeatureSet::of(set))
}

/// `hostSocketPaths`: absolute paths, stored cleaned.
pub(super) fn socket_paths(key: &str, value: &Value) -> Result<Vec<Cow<'static, str>>, String> {
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
pub(super) fn resource_names(key: &str, value: &Value) -> Result<ResourceNames, String> {
    let entries = strings(key, value)?;
    ResourceNames::parse(entries.iter().map(String::as_str)).map_err(|e| format!("{key}: {e}"))
}

/// RuntimeClass names, each once.
pub(super) fn class_names(key: &str, value: &Value) -> Result<Vec<String>, String> {
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
pub(super) fn routes(key: &str, value: &Value) -> Result<Vec<ClassRoute>, String> {
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

pub(super) fn strings(key: &str, value: &Value) -> Result<Vec<String>, String> {
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

pub(super) fn boolean(key: &str, value: &Value) -> Result<bool, String> {
    value
        .as_bool()
        .ok_or_else(|| format!("{key} must be true or false, got {value}"))
}

pub(super) fn string(key: &str, value: &Value) -> Result<String, String> {
    value
        .as_str()
        .map(str::to_string)
        .ok_or_else(|| format!("{key} must be a string, got {value}"))
}
