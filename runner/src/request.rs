//! Reading the request and settings inputs the way `kwctl run` does.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::Value;

/// Extracts the AdmissionRequest to evaluate from a request document.
///
/// kwctl accepts either a full AdmissionReview (`{"kind": "AdmissionReview",
/// "request": {...}}`), whose `.request` is evaluated, or a bare
/// AdmissionRequest, evaluated as is.
pub fn admission_request(document: Value) -> Result<Value> {
    match document {
        Value::Object(mut map) => {
            if map.get("kind").and_then(Value::as_str) == Some("AdmissionReview") {
                match map.remove("request") {
                    Some(request @ Value::Object(_)) => Ok(request),
                    _ => bail!("invalid admission review object: no \"request\" object"),
                }
            } else {
                Ok(Value::Object(map))
            }
        }
        _ => bail!("request to evaluate is invalid: not a JSON object"),
    }
}

/// Reads a request file (JSON) and extracts its AdmissionRequest.
pub fn load_request(path: impl AsRef<Path>) -> Result<Value> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read request {}", path.display()))?;
    let document: Value = serde_json::from_str(&text)
        .with_context(|| format!("request {} is not valid JSON", path.display()))?;
    admission_request(document).with_context(|| format!("invalid request {}", path.display()))
}

/// Reads a settings file. Like kwctl, YAML is accepted (JSON is YAML too);
/// an empty file means no settings, i.e. `{}`.
pub fn load_settings(path: impl AsRef<Path>) -> Result<Value> {
    let path = path.as_ref();
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read settings {}", path.display()))?;
    let settings: Option<Value> = serde_yaml::from_str(&text)
        .with_context(|| format!("settings {} are not valid YAML/JSON", path.display()))?;
    Ok(settings
        .filter(|s| !s.is_null())
        .unwrap_or_else(|| Value::Object(Default::default())))
}

/// Parses `--settings-json`.
pub fn parse_settings_json(text: &str) -> Result<Value> {
    serde_json::from_str(text).context("--settings-json is not valid JSON")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn review_is_unwrapped_and_bare_request_kept() {
        let req = json!({"uid": "u", "object": {}});
        let review =
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req});
        assert_eq!(admission_request(review).unwrap(), req);
        assert_eq!(admission_request(req.clone()).unwrap(), req);
        assert!(admission_request(json!({"kind": "AdmissionReview"})).is_err());
        assert!(admission_request(json!([1])).is_err());
    }

    #[test]
    fn project_requests_load() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../test_data");
        let req = load_request(format!("{dir}/pod-plain.json")).unwrap();
        assert!(
            req.get("object").is_some(),
            "pod-plain.json should yield an AdmissionRequest"
        );
    }
}
