//! [`Decision`] → Kubewarden `ValidationResponse` JSON (the shape of
//! `kubewarden_policy_sdk::response::ValidationResponse`), with the mutated
//! object passed through as raw JSON rather than a rebuilt tree.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::value::RawValue;

use crate::decision::{Decision, Refusal};
use crate::review::Review;

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
    crate::printable::bounded(text, MAX_WARNING_BYTES).into_owned()
}

pub fn render(review: Review) -> Vec<u8> {
    let Review {
        decision,
        object,
        audit_note,
    } = review;
    let explanation = decision.explanation();
    let reason = match &audit_note {
        Some(note) => format!("{}; {note}", decision.audit_reason()),
        None => decision.audit_reason(),
    };
    let accepted = !matches!(decision, Decision::Reject(_));
    // An unchanged pod has an object too when it carries the decision
    // annotation (annotateDecision); the verdict stays "unchanged".
    let mutated = match object.map(RawValue::from_string).transpose() {
        Ok(raw) => raw,
        // Cannot happen for a valid request object; refuse rather than guess.
        Err(_) => {
            return render(Review::of(Decision::Reject(Refusal::Internal(
                "internal error: the mutated Pod is not valid JSON".into(),
            ))));
        }
    };
    let response = ValidationResponse {
        accepted,
        message: (!accepted).then_some(explanation.as_str()),
        code: decision.code(),
        mutated_object: mutated,
        audit_annotations: BTreeMap::from([
            (DECISION_KEY, decision.verdict()),
            (REASON_KEY, reason.as_str()),
        ]),
        // The note (a gated pod) is a warning of its own, so that a long
        // explanation never cuts it off.
        warnings: {
            let warnings: Vec<String> = (decision.warns().then_some(explanation.clone()))
                .into_iter()
                .chain(decision.note())
                .map(|w| warning(&w))
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
    use crate::decision::{Cause, Findings, Left, Unchanged};
    use crate::scheduling::Broken;
    use serde_json::{Value, json};

    fn rendered(a: Review) -> Value {
        serde_json::from_slice(&render(a)).unwrap()
    }

    fn mutated(object: &str, broken: Option<Broken<'static>>) -> Review {
        Review {
            object: Some(object.into()),
            ..Review::of(Decision::Mutate {
                class: "kata".into(),
                broken,
                gates: Vec::new(),
                passed: Vec::new(),
                ranked: false,
            })
        }
    }

    fn left(why: &str) -> Decision {
        Decision::Unchanged(Unchanged::NotAssigned(
            Left::Because(Cause::NoFeasibleNode),
            Findings::one(why),
        ))
    }

    #[test]
    fn mutate_passes_the_object_through_and_does_not_warn() {
        let v = rendered(mutated(
            r#"{"spec":{"runtimeClassName":"kata"},"n":1.50}"#,
            None,
        ));
        assert_eq!(v["accepted"], true);
        assert_eq!(
            v["mutated_object"],
            json!({"spec": {"runtimeClassName": "kata"}, "n": 1.5})
        );
        assert_eq!(
            v["audit_annotations"],
            json!({"decision": "mutated", "reason": "runtimeClassName \"kata\" assigned: a kata node can run this pod"})
        );
        assert_eq!(v["warnings"], Value::Null);
        assert!(
            String::from_utf8(render(mutated(r#"{"n":1.50}"#, None)))
                .unwrap()
                .contains(r#""mutated_object":{"n":1.50}"#),
            "raw, not re-serialized"
        );
    }

    #[test]
    fn a_mutation_with_broken_nodes_warns() {
        let mut broken = Broken {
            pickable: 2,
            whole: true,
            ..Broken::default()
        };
        broken
            .lacks
            .insert(crate::scheduling::Lack::NotReported("kata".into()), 1);
        broken.names.push("n1".into());
        let v = rendered(mutated(
            r#"{"spec":{"runtimeClassName":"kata"}}"#,
            Some(broken),
        ));
        assert_eq!(v["audit_annotations"]["decision"], "mutated");
        assert_eq!(
            v["warnings"],
            json!([
                "kata runtime assigned, but 1 of 2 kata nodes that can take this pod do not report runtime handler \"kata\" (n1): if the scheduler picks one, the pod will not start"
            ])
        );
        assert_eq!(
            v["mutated_object"],
            json!({"spec": {"runtimeClassName": "kata"}})
        );
    }

    #[test]
    fn leave_and_reject() {
        let v = rendered(Review::of(left("why")));
        assert_eq!(
            (v["accepted"].clone(), v["warnings"].clone()),
            (json!(true), json!(["kata runtime not assigned: why"]))
        );
        assert_eq!(v["mutated_object"], Value::Null);
        let quiet = rendered(Review::of(Decision::Unchanged(Unchanged::NotEvaluated(
            "apps/Deployment CREATE".into(),
        ))));
        assert_eq!(quiet["warnings"], Value::Null);
        assert_eq!(quiet["audit_annotations"]["decision"], "unchanged");
        let r = rendered(Review::of(Decision::bad_request("no")));
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
    /// through raw too, still "unchanged", with its warning; an annotation
    /// left out is said in the audit reason.
    #[test]
    fn an_annotated_unchanged_pod_passes_its_object_through() {
        let out = render(Review {
            object: Some(r#"{"metadata":{"annotations":{"k":"unchanged: why"}},"n":1.50}"#.into()),
            ..Review::of(left("why"))
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
            json!({"decision": "unchanged", "reason": "kata runtime not assigned: why"})
        );
        assert_eq!(v["warnings"], json!(["kata runtime not assigned: why"]));
        let omitted = rendered(Review {
            audit_note: Some("decision annotation omitted: too big".into()),
            ..Review::of(left("why"))
        });
        assert_eq!(
            omitted["audit_annotations"]["reason"],
            "kata runtime not assigned: why; decision annotation omitted: too big"
        );
        assert_eq!(
            omitted["warnings"],
            json!(["kata runtime not assigned: why"])
        );
        let broken = rendered(Review {
            object: Some("{".into()),
            ..Review::of(left("why"))
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
