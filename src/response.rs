//! [`Decision`] → Kubewarden `ValidationResponse` JSON (the shape of
//! `kubewarden_policy_sdk::response::ValidationResponse`), with the mutated
//! object passed through as raw JSON rather than a rebuilt tree.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::decision::Decision;

/// The API server may truncate longer warnings.
pub const MAX_WARNING_BYTES: usize = 255;

/// Audit annotation keys; the API server prefixes them with the webhook name.
pub const DECISION_KEY: &str = "decision";
pub const REASON_KEY: &str = "reason";

#[derive(Serialize)]
struct ValidationResponse<'a> {
    accepted: bool,
    message: Option<&'a str>,
    code: Option<u16>,
    mutated_object: Option<Box<RawValue>>,
    audit_annotations: BTreeMap<&'static str, &'a str>,
    warnings: Option<Vec<String>>,
}

/// Cuts a message to at most `MAX_WARNING_BYTES` bytes on a character
/// boundary, marking the cut with "...".
pub fn warning(text: &str) -> String {
    if text.len() <= MAX_WARNING_BYTES {
        return text.to_string();
    }
    let mut end = MAX_WARNING_BYTES - 3;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", text.get(..end).unwrap_or_default())
}

pub fn render(decision: Decision) -> Vec<u8> {
    let explanation = decision.explanation().to_string();
    let reason = decision.reason().into_owned();
    // An unchanged pod has an object too when it carries the decision
    // annotation (annotateDecision); the verdict stays "unchanged".
    let (verdict, accepted, code, object, warn, note) = match decision {
        Decision::Mutate {
            object, warn, note, ..
        } => ("mutated", true, None, Some(object), warn, note),
        Decision::Unchanged { object, warn, .. } => ("unchanged", true, None, object, warn, None),
        Decision::Reject { code, .. } => ("rejected", false, code, None, true, None),
    };
    let mutated = match object.map(RawValue::from_string).transpose() {
        Ok(raw) => raw,
        // Cannot happen for a valid request object; refuse rather than guess.
        Err(_) => {
            return render(Decision::Reject {
                explanation: "internal error: the mutated Pod is not valid JSON".into(),
                code: Some(500),
            });
        }
    };
    let response = ValidationResponse {
        accepted,
        message: (!accepted).then_some(explanation.as_str()),
        code,
        mutated_object: mutated,
        audit_annotations: BTreeMap::from([(DECISION_KEY, verdict), (REASON_KEY, reason.as_str())]),
        // The note (a gated pod) is a warning of its own, so that a long
        // explanation never cuts it off.
        warnings: {
            let warnings: Vec<String> = (warn.then_some(explanation.as_str()).into_iter())
                .chain(note.as_deref())
                .map(warning)
                .collect();
            (!warnings.is_empty()).then_some(warnings)
        },
    };
    serde_json::to_vec(&response).unwrap_or_else(|_| {
        br#"{"accepted":false,"message":"internal error: cannot encode the response","code":500}"#.to_vec()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn rendered(d: Decision) -> Value {
        serde_json::from_slice(&render(d)).unwrap()
    }

    #[test]
    fn mutate_passes_the_object_through_and_does_not_warn() {
        let v = rendered(Decision::Mutate {
            object: r#"{"spec":{"runtimeClassName":"kata"},"n":1.50}"#.into(),
            explanation: "ok".into(),
            warn: false,
            note: None,
        });
        assert_eq!(v["accepted"], true);
        assert_eq!(
            v["mutated_object"],
            json!({"spec": {"runtimeClassName": "kata"}, "n": 1.5})
        );
        assert_eq!(
            v["audit_annotations"],
            json!({"decision": "mutated", "reason": "ok"})
        );
        assert_eq!(v["warnings"], Value::Null);
        assert!(
            String::from_utf8(render(Decision::Mutate {
                object: r#"{"n":1.50}"#.into(),
                explanation: String::new(),
                warn: false,
                note: None,
            }))
            .unwrap()
            .contains(r#""mutated_object":{"n":1.50}"#),
            "raw, not re-serialized"
        );
    }

    #[test]
    fn a_mutation_with_broken_nodes_warns() {
        let v = rendered(Decision::Mutate {
            object: r#"{"spec":{"runtimeClassName":"kata"}}"#.into(),
            explanation: "kata runtime assigned, but".into(),
            warn: true,
            note: None,
        });
        assert_eq!(v["audit_annotations"]["decision"], "mutated");
        assert_eq!(v["warnings"], json!(["kata runtime assigned, but"]));
        assert_eq!(
            v["mutated_object"],
            json!({"spec": {"runtimeClassName": "kata"}})
        );
    }

    #[test]
    fn leave_and_reject() {
        let v = rendered(Decision::Unchanged {
            explanation: "why".into(),
            warn: true,
            object: None,
        });
        assert_eq!(
            (v["accepted"].clone(), v["warnings"].clone()),
            (json!(true), json!(["why"]))
        );
        assert_eq!(v["mutated_object"], Value::Null);
        let quiet = rendered(Decision::Unchanged {
            explanation: "why".into(),
            warn: false,
            object: None,
        });
        assert_eq!(quiet["warnings"], Value::Null);
        assert_eq!(quiet["audit_annotations"]["decision"], "unchanged");
        let r = rendered(Decision::Reject {
            explanation: "no".into(),
            code: Some(400),
        });
        assert_eq!(
            (
                r["accepted"].clone(),
                r["message"].clone(),
                r["code"].clone()
            ),
            (json!(false), json!("no"), json!(400))
        );
        assert_eq!(r["audit_annotations"]["decision"], "rejected");
    }

    /// annotateDecision: an unchanged pod with the annotation is passed
    /// through raw too, still "unchanged", with its warning.
    #[test]
    fn an_annotated_unchanged_pod_passes_its_object_through() {
        let out = render(Decision::Unchanged {
            explanation: "why".into(),
            warn: true,
            object: Some(r#"{"metadata":{"annotations":{"k":"unchanged: why"}},"n":1.50}"#.into()),
        });
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains(
                r#""mutated_object":{"metadata":{"annotations":{"k":"unchanged: why"}},"n":1.50}"#
            ),
            "{text}"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["accepted"], true);
        assert_eq!(
            v["audit_annotations"],
            json!({"decision": "unchanged", "reason": "why"})
        );
        assert_eq!(v["warnings"], json!(["why"]));
        let broken = rendered(Decision::Unchanged {
            explanation: "why".into(),
            warn: false,
            object: Some("{".into()),
        });
        assert_eq!(
            (broken["accepted"].clone(), broken["code"].clone()),
            (json!(false), json!(500))
        );
    }

    #[test]
    fn warnings_stay_under_256_bytes() {
        assert_eq!(warning("short"), "short");
        for text in [
            "x".repeat(300),
            "é".repeat(200),
            format!("{}{}", "a".repeat(251), "€€€"),
        ] {
            let w = warning(&text);
            assert!(
                w.len() <= MAX_WARNING_BYTES && w.ends_with("..."),
                "{} bytes",
                w.len()
            );
        }
        assert_eq!(warning(&"y".repeat(255)).len(), 255);
    }
}
