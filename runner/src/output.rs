//! The AdmissionResponse that `kwctl run` prints, built from the guest's
//! ValidationResponse with policy-evaluator's rules.
//!
//! The response is a typed struct rather than a `serde_json::Value` so that
//! its key order is kwctl's without enabling serde_json's `preserve_order`
//! (a feature that would leak into every crate of the workspace).

use std::collections::BTreeMap;
use std::fmt;

use anyhow::{Context, Result};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a Kubewarden policy returns from its `validate` operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ValidationResponse {
    pub accepted: bool,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub code: Option<u16>,
    #[serde(default)]
    pub mutated_object: Option<Value>,
    #[serde(default)]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

/// `status` of an [`AdmissionResponse`]; each key only when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionResponseStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
}

/// The line `kwctl run` prints. Field order is the serialized key order.
///
/// `auditAnnotations` and `warnings` are always present (possibly `null`);
/// `patchType`, `patch` and `status` only when set, as in kwctl.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    pub uid: String,
    pub allowed: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch_type: Option<String>,
    /// Base64 (standard alphabet) of the JSONPatch text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<AdmissionResponseStatus>,
    #[serde(default)]
    pub audit_annotations: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub warnings: Option<Vec<String>>,
}

/// The request's `uid`, or `""` like kwctl when it has none.
fn uid_of(request: &Value) -> String {
    request
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

impl AdmissionResponse {
    /// A rejection with a message and HTTP-like code.
    pub fn reject(request: &Value, message: impl Into<String>, code: u16) -> Self {
        Self {
            uid: uid_of(request),
            allowed: false,
            status: Some(AdmissionResponseStatus {
                message: Some(message.into()),
                code: Some(code),
            }),
            ..Self::default()
        }
    }

    /// kwctl's answer when evaluating the policy itself failed (trap, waPC
    /// error, unparsable response).
    pub fn internal_server_error(request: &Value, error: &str) -> Self {
        Self::reject(request, format!("internal server error: {error}"), 500)
    }

    /// The compact one-line JSON that `kwctl run` prints.
    pub fn to_json(&self) -> String {
        self.to_string()
    }

    /// The decoded JSONPatch operations, if there is a patch. Convenient for
    /// tests that assert on the mutation rather than on base64 text.
    pub fn patch_operations(&self) -> Result<Option<Value>> {
        let Some(patch) = &self.patch else {
            return Ok(None);
        };
        let text = STANDARD
            .decode(patch)
            .context("patch is not valid base64")?;
        serde_json::from_slice(&text)
            .context("patch is not valid JSON")
            .map(Some)
    }
}

impl fmt::Display for AdmissionResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Cannot fail: every map key is a string.
        f.write_str(&serde_json::to_string(self).map_err(|_| fmt::Error)?)
    }
}

/// Builds what `kwctl run` prints from the AdmissionRequest and the guest's
/// ValidationResponse JSON, following policy-evaluator:
///
/// * `patch` is the base64 of `json_patch::diff(request.object, mutated_object)`,
///   omitted when there is no mutated object or the diff is empty;
/// * a mutation of a request without an object (DELETE) is rejected;
/// * `status` is present when the policy set a message or a code.
pub fn admission_response(
    request: &Value,
    validation_response: &Value,
) -> Result<AdmissionResponse> {
    let verdict = ValidationResponse::deserialize(validation_response)
        .context("the policy returned an invalid ValidationResponse")?;
    admission_response_from(request, &verdict)
}

/// [`admission_response`] for an already-typed ValidationResponse.
pub fn admission_response_from(
    request: &Value,
    verdict: &ValidationResponse,
) -> Result<AdmissionResponse> {
    let object = request.get("object").filter(|o| !o.is_null());

    let patch = match (&verdict.mutated_object, object) {
        (None, _) => None,
        (Some(_), None) => {
            return Ok(AdmissionResponse {
                uid: uid_of(request),
                allowed: false,
                status: Some(AdmissionResponseStatus {
                    message: Some(
                        "Incoming object is null, which happens only with DELETE operations, \
                         but the policy is attempting a mutation. This is not allowed"
                            .to_owned(),
                    ),
                    code: None,
                }),
                ..AdmissionResponse::default()
            });
        }
        (Some(mutated), Some(object)) => {
            let diff = json_patch::diff(object, mutated);
            if diff.0.is_empty() {
                None
            } else {
                let text =
                    serde_json::to_string(&diff).context("cannot serialize the JSONPatch")?;
                Some(STANDARD.encode(text))
            }
        }
    };

    let status =
        (verdict.message.is_some() || verdict.code.is_some()).then(|| AdmissionResponseStatus {
            message: verdict.message.clone(),
            code: verdict.code,
        });

    Ok(AdmissionResponse {
        uid: uid_of(request),
        allowed: verdict.accepted,
        patch_type: patch.as_ref().map(|_| "JSONPatch".to_owned()),
        patch,
        status,
        audit_annotations: verdict.audit_annotations.clone(),
        warnings: verdict.warnings.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request() -> Value {
        json!({
            "uid": "abc-123",
            "operation": "CREATE",
            "object": {"kind": "Pod", "spec": {"containers": [{"name": "c"}]}}
        })
    }

    #[test]
    fn mutation_becomes_a_base64_json_patch_in_kwctl_key_order() {
        let mut mutated = request()["object"].clone();
        mutated["spec"]["runtimeClassName"] = json!("kata");
        let verdict = json!({"accepted": true, "mutated_object": mutated, "message": null, "code": null,
                             "audit_annotations": null, "warnings": null});
        let response = admission_response(&request(), &verdict).unwrap();

        let patch = r#"[{"op":"add","path":"/spec/runtimeClassName","value":"kata"}]"#;
        let expected = format!(
            r#"{{"uid":"abc-123","allowed":true,"patchType":"JSONPatch","patch":"{}","auditAnnotations":null,"warnings":null}}"#,
            STANDARD.encode(patch)
        );
        assert_eq!(response.to_json(), expected);
        assert_eq!(
            response.patch_operations().unwrap(),
            Some(json!([{"op": "add", "path": "/spec/runtimeClassName", "value": "kata"}]))
        );
    }

    #[test]
    fn unchanged_mutated_object_gives_no_patch() {
        let verdict = json!({"accepted": true, "mutated_object": request()["object"]});
        let response = admission_response(&request(), &verdict).unwrap();
        assert_eq!(response.patch, None);
        assert_eq!(response.patch_type, None);
        assert_eq!(response.patch_operations().unwrap(), None);
    }

    #[test]
    fn status_warnings_and_annotations() {
        let verdict = json!({"accepted": false, "message": "no Kata node", "code": 400,
                             "warnings": ["w1"], "audit_annotations": {"k": "v"}});
        let response = admission_response(&request(), &verdict).unwrap();
        assert_eq!(
            response.to_json(),
            r#"{"uid":"abc-123","allowed":false,"status":{"message":"no Kata node","code":400},"auditAnnotations":{"k":"v"},"warnings":["w1"]}"#
        );

        let only_message = json!({"accepted": true, "message": "hi"});
        let response = admission_response(&json!({}), &only_message).unwrap();
        assert_eq!(
            response.to_json(),
            r#"{"uid":"","allowed":true,"status":{"message":"hi"},"auditAnnotations":null,"warnings":null}"#
        );
    }

    #[test]
    fn internal_server_error_shape() {
        let response =
            AdmissionResponse::internal_server_error(&request(), "Guest call failure: boom");
        assert_eq!(
            response.to_json(),
            r#"{"uid":"abc-123","allowed":false,"status":{"message":"internal server error: Guest call failure: boom","code":500},"auditAnnotations":null,"warnings":null}"#
        );
    }

    #[test]
    fn mutating_a_delete_is_rejected() {
        let delete = json!({"uid": "d", "operation": "DELETE", "object": null});
        let verdict = json!({"accepted": true, "mutated_object": {"kind": "Pod"}});
        let response = admission_response(&delete, &verdict).unwrap();
        assert!(!response.allowed);
        assert!(response.patch.is_none());
        assert_eq!(response.status.unwrap().code, None);
    }

    #[test]
    fn invalid_validation_response_is_an_error() {
        assert!(admission_response(&request(), &json!({"message": "no accepted"})).is_err());
        assert!(admission_response(&request(), &json!("nope")).is_err());
    }

    #[test]
    fn printed_line_round_trips() {
        let verdict = json!({"accepted": false, "message": "m", "warnings": ["w"]});
        let response = admission_response(&request(), &verdict).unwrap();
        let parsed: AdmissionResponse = serde_json::from_str(&response.to_json()).unwrap();
        assert_eq!(parsed, response);
    }
}
