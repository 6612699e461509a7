//! `annotateDecision`: the decision written on the pod itself, as the
//! annotation [`DECISION_ANNOTATION`], so that whoever looks at a pod (a
//! Deployment's, whose admission warning went to the controller) sees
//! whether it got Kata and why.
//!
//! The value is `<verdict>: <reason>`: `mutated: <explanation>`, or
//! `unchanged: <explanation>` without its leading "kata runtime not
//! assigned: " and trailing "; left unchanged". It is added with the raw
//! JSON splice of [`mutation`], on top of the class for a mutated pod.

use crate::decision::{Decision, NOT_ASSIGNED};
use crate::mutation;

/// The annotation key on the pod.
pub const DECISION_ANNOTATION: &str = "kata-runtime-policy.kubewarden.io/decision";

/// The longest value, in bytes: enough for the first findings of any
/// explanation, small next to the API server's 256 KiB for all annotations.
pub const MAX_VALUE_BYTES: usize = 512;

/// `decision` with its annotation on the pod: `object` is the request's
/// raw object. A refusal is returned as it is.
pub fn annotate(decision: Decision, object: &str) -> Decision {
    let Some(value) = value(&decision) else {
        return decision;
    };
    // A failed insertion (the object's metadata or annotations not JSON
    // objects) leaves the decision without the annotation, on purpose:
    // the annotation only reports, and annotateDecision must never change
    // whether or how the pod is admitted. No request reaches here that way:
    // the pod's reader (pod.rs) already refuses such an object with 400.
    match decision {
        Decision::Mutate {
            object: mutated,
            explanation,
            warn,
            note,
        } => Decision::Mutate {
            object: match mutation::set_annotation(&mutated, DECISION_ANNOTATION, &value) {
                Ok(annotated) => annotated,
                Err(_) => mutated,
            },
            explanation,
            warn,
            note,
        },
        Decision::Unchanged {
            explanation, warn, ..
        } => Decision::Unchanged {
            object: mutation::set_annotation(object, DECISION_ANNOTATION, &value).ok(),
            explanation,
            warn,
        },
        reject @ Decision::Reject { .. } => reject,
    }
}

/// The annotation's value for a decision that admits the pod, bounded to
/// [`MAX_VALUE_BYTES`]; `None` for a refusal.
pub fn value(decision: &Decision) -> Option<String> {
    let text = match decision {
        Decision::Mutate { .. } => format!("mutated: {}", decision.reason()),
        Decision::Unchanged { explanation, .. } => {
            let reason = explanation
                .strip_prefix(NOT_ASSIGNED)
                .unwrap_or(explanation);
            let reason = reason.strip_suffix("; left unchanged").unwrap_or(reason);
            format!("unchanged: {reason}")
        }
        Decision::Reject { .. } => return None,
    };
    Some(bounded(&text))
}

/// `text` cut to at most [`MAX_VALUE_BYTES`]: whole findings (the pieces
/// between `; `) are kept from the start, then `; and N more` says how many
/// were left out; a first piece too long on its own is cut on a character
/// boundary and marked with `...`.
pub fn bounded(text: &str) -> String {
    if text.len() <= MAX_VALUE_BYTES {
        return text.to_string();
    }
    let pieces: Vec<&str> = text.split("; ").collect();
    let mut out = String::with_capacity(MAX_VALUE_BYTES);
    for (i, piece) in pieces.iter().enumerate() {
        let separator = if i == 0 { "" } else { "; " };
        // Room is kept for the count of the pieces after this one, so that
        // stopping at the next piece always fits.
        let after = pieces.len() - i - 1;
        if out.len() + separator.len() + piece.len() + more(after).len() <= MAX_VALUE_BYTES {
            out.push_str(separator);
            out.push_str(piece);
            continue;
        }
        if i == 0 {
            let tail = more(after);
            let room = MAX_VALUE_BYTES.saturating_sub(tail.len() + "...".len());
            return format!("{}...{tail}", cut(piece, room));
        }
        out.push_str(&more(pieces.len() - i));
        return out;
    }
    // Not reached: every piece fitting would make `text` itself fit.
    out
}

fn more(left_out: usize) -> String {
    match left_out {
        0 => String::new(),
        n => format!("; and {n} more"),
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a
/// character boundary.
fn cut(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn leave(explanation: &str) -> Decision {
        Decision::Unchanged {
            explanation: explanation.into(),
            warn: true,
            object: None,
        }
    }

    #[test]
    fn the_value_is_the_verdict_and_the_reason() {
        let mutated = Decision::Mutate {
            object: "{}".into(),
            explanation: "runtimeClassName \"kata\" assigned: a kata node can run this pod".into(),
            warn: false,
            note: None,
        };
        assert_eq!(
            value(&mutated).unwrap(),
            "mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod"
        );
        assert_eq!(
            value(&leave(
                "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
            ))
            .unwrap(),
            "unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
        );
        assert_eq!(
            value(&leave(
                "pod already sets runtimeClassName \"runc\"; left unchanged"
            ))
            .unwrap(),
            "unchanged: pod already sets runtimeClassName \"runc\""
        );
        let refused = Decision::Reject {
            explanation: "no".into(),
            code: None,
        };
        assert_eq!(value(&refused), None);
    }

    #[test]
    fn short_values_are_kept_whole() {
        for text in ["", "mutated: x", &"a".repeat(MAX_VALUE_BYTES)] {
            assert_eq!(bounded(text), text);
        }
        let findings = vec!["f".repeat(100); 5].join("; ");
        assert_eq!(findings.len(), 508);
        assert_eq!(bounded(&findings), findings);
    }

    #[test]
    fn whole_findings_then_how_many_more() {
        // Six findings of 100 bytes: 610 bytes in all.
        let findings: Vec<String> = (0..6).map(|i| format!("{i}").repeat(100)).collect();
        let text = findings.join("; ");
        let out = bounded(&text);
        assert_eq!(
            out,
            format!("{}; and 2 more", findings[..4].join("; ")),
            "four whole findings (406 bytes) and the count"
        );
        assert!(out.len() <= MAX_VALUE_BYTES);
        // Room for the count is kept: 5 findings would fit (508 bytes), but
        // not with "; and 1 more" after them.
        let seven: Vec<String> = (0..7).map(|i| format!("{i}").repeat(100)).collect();
        let out = bounded(&seven.join("; "));
        assert!(out.ends_with("; and 3 more"), "{out}");
        assert_eq!(out.split("; ").count(), 5);
    }

    #[test]
    fn a_first_piece_too_long_is_cut_on_a_character_boundary() {
        let alone = format!("unchanged: x{}", "é".repeat(400));
        let out = bounded(&alone);
        assert!(
            out.len() <= MAX_VALUE_BYTES && out.ends_with("..."),
            "{out}"
        );
        assert!(out.starts_with("unchanged: xéé"));
        assert_eq!(
            out.len(),
            MAX_VALUE_BYTES - 1,
            "the last 2-byte é does not fit"
        );
        // With findings after it: cut, then the count.
        let text = format!("{}; second; third", "x".repeat(600));
        let out = bounded(&text);
        assert_eq!(out, format!("{}...; and 2 more", "x".repeat(497)));
        assert_eq!(out.len(), MAX_VALUE_BYTES);
    }

    #[test]
    fn every_bounded_value_fits_and_starts_like_the_text() {
        let pieces = [
            "é",
            "ab",
            "x; y",
            "€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€",
            "; ",
            "z",
        ];
        for n in 0..400 {
            let text: String = (0..n)
                .map(|i| pieces[(i * 7 + n) % pieces.len()])
                .collect::<Vec<_>>()
                .concat();
            let out = bounded(&text);
            assert!(out.len() <= MAX_VALUE_BYTES, "{n}: {} bytes", out.len());
            if text.len() <= MAX_VALUE_BYTES {
                assert_eq!(out, text);
            } else {
                let kept = out.split("; and ").next().unwrap();
                let kept = kept.strip_suffix("...").unwrap_or(kept);
                assert!(text.starts_with(kept), "{n}: {out}");
            }
        }
    }

    fn annotations(object: &str) -> Value {
        serde_json::from_str::<Value>(object).unwrap()["metadata"]["annotations"].clone()
    }

    #[test]
    fn annotate_adds_the_value_to_the_mutated_or_the_request_object() {
        let request = r#"{"metadata":{"name":"p"},"spec":{}}"#;
        let mutated = Decision::Mutate {
            object: r#"{"metadata":{"name":"p"},"spec":{"runtimeClassName":"kata"}}"#.into(),
            explanation: "runtimeClassName \"kata\" assigned: a kata node can run this pod".into(),
            warn: false,
            note: None,
        };
        let Decision::Mutate { object, warn, .. } = annotate(mutated, request) else {
            panic!()
        };
        assert!(!warn);
        assert_eq!(
            object,
            r#"{"metadata":{"name":"p","annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod"}},"spec":{"runtimeClassName":"kata"}}"#
        );
        let left = annotate(leave("kata runtime not assigned: why"), request);
        assert_eq!(
            left,
            Decision::Unchanged {
                explanation: "kata runtime not assigned: why".into(),
                warn: true,
                object: Some(
                    r#"{"metadata":{"name":"p","annotations":{"kata-runtime-policy.kubewarden.io/decision":"unchanged: why"}},"spec":{}}"#
                        .into()
                ),
            }
        );
        let Decision::Unchanged {
            object: Some(object),
            ..
        } = left
        else {
            panic!()
        };
        assert_eq!(
            annotations(&object),
            json!({DECISION_ANNOTATION: "unchanged: why"})
        );
        let refused = Decision::Reject {
            explanation: "no".into(),
            code: None,
        };
        assert_eq!(annotate(refused.clone(), request), refused);
    }

    /// An object the annotation cannot go into keeps the decision as it
    /// is, without the annotation (never a refusal, never a panic).
    #[test]
    fn an_object_that_cannot_take_the_annotation_keeps_the_decision() {
        for object in [
            r#"{"metadata":"x"}"#,
            r#"{"metadata":{"annotations":[]}}"#,
            "[]",
        ] {
            assert_eq!(annotate(leave("why"), object), leave("why"));
            let mutated = Decision::Mutate {
                object: object.into(),
                explanation: "ok".into(),
                warn: true,
                note: None,
            };
            assert_eq!(annotate(mutated.clone(), object), mutated);
        }
    }
}
