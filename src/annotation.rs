//! `annotateDecision`: the decision written on the pod itself, as the
//! annotation [`DECISION_ANNOTATION`], so that whoever looks at a pod (a
//! Deployment's, whose admission warning went to the controller) sees
//! whether it got Kata and why.
//!
//! The value is `<verdict>: <reasons>`: `mutated: <assignment>[; <note>]`,
//! or `unchanged: <findings>`, bounded as whole findings. It is added with
//! the raw JSON splice of [`mutation`], on top of the class for a mutated
//! pod, and only when the pod's annotations stay within the API server's
//! limit: the annotation only reports, and must never change whether the
//! pod is admitted.

use std::collections::BTreeMap;

use crate::decision::{Decision, Findings};
use crate::mutation;
use crate::review::Review;

/// The annotation key on the pod.
pub const DECISION_ANNOTATION: &str = "kata-runtime-policy.kubewarden.io/decision";

/// The longest value, in bytes: enough for the first findings of any
/// explanation, small next to the API server's 256 KiB for all annotations.
pub const MAX_VALUE_BYTES: usize = 512;

/// The API server's limit on an object's annotations, keys plus values
/// (`TotalAnnotationSizeLimitB`, checked by `ValidateAnnotationsSize`).
pub const MAX_ANNOTATIONS_BYTES: usize = 256 * 1024;

/// `review` with the decision annotation on its object (the mutated pod,
/// or else the request's raw `object`, whose `metadata.annotations` the pod
/// reader read as `annotations`). A refusal is returned as it is; a pod
/// whose annotations would then exceed the API server's limit is admitted
/// without it, and the audit reason says so.
pub fn annotate(review: Review, object: &str, annotations: &BTreeMap<String, String>) -> Review {
    let Some(value) = value(&review.decision) else {
        return review;
    };
    if let Err(why) = room_for(annotations, &value) {
        return Review {
            audit_note: Some(format!("decision annotation omitted: {why}")),
            ..review
        };
    }
    // A failed insertion (the object's metadata or annotations not JSON
    // objects) leaves the review without the annotation, on purpose.
    // No request reaches here that way: the pod's reader (pod.rs) already
    // refuses such an object with 400.
    let target = review.object.as_deref().unwrap_or(object);
    match mutation::set_annotation(target, DECISION_ANNOTATION, &value) {
        Ok(annotated) => Review {
            object: Some(annotated),
            ..review
        },
        Err(_) => review,
    }
}

/// The annotation's value for a decision that admits the pod, bounded to
/// [`MAX_VALUE_BYTES`]; `None` for a refusal.
pub fn value(decision: &Decision) -> Option<String> {
    let verdict = match decision {
        Decision::Mutate { .. } => "mutated: ",
        Decision::Unchanged(_) => "unchanged: ",
        Decision::Reject(_) => return None,
    };
    Some(bounded(verdict, &decision.findings()))
}

/// `start` then the reasons, at most [`MAX_VALUE_BYTES`] in all
/// ([`Findings::bounded`]: whole reasons, then `; and N more`).
pub fn bounded(start: &str, findings: &Findings) -> String {
    findings.bounded(start, MAX_VALUE_BYTES)
}

/// `Ok` when the pod's `annotations`, with the decision annotation set to
/// `value`, stay within [`MAX_ANNOTATIONS_BYTES`] as the API server counts
/// them (keys plus values, an existing decision annotation replaced).
fn room_for(annotations: &BTreeMap<String, String>, value: &str) -> Result<(), String> {
    let existing: usize = (annotations.iter())
        .filter(|(key, _)| *key != DECISION_ANNOTATION)
        .map(|(key, value)| key.len() + value.len())
        .sum();
    let total = existing + DECISION_ANNOTATION.len() + value.len();
    if total <= MAX_ANNOTATIONS_BYTES {
        return Ok(());
    }
    Err(format!(
        "the pod's annotations take {existing} bytes, and with it would take {total}, over the API server's limit of {MAX_ANNOTATIONS_BYTES} bytes"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Cause, Left, Refusal, Unchanged};
    use serde_json::{Value, json};

    fn left(reasons: &[&str]) -> Decision {
        Decision::Unchanged(Unchanged::NotAssigned(
            Left::Because(Cause::NoFeasibleNode),
            Findings(reasons.iter().map(|r| r.to_string()).collect()),
        ))
    }

    fn mutated() -> Decision {
        Decision::Mutate {
            class: "kata".into(),
            broken: None,
            gates: Vec::new(),
            passed: Vec::new(),
            ranked: false,
        }
    }

    fn reasons(texts: &[String]) -> Findings {
        Findings(texts.to_vec())
    }

    #[test]
    fn the_value_is_the_verdict_and_the_reasons() {
        assert_eq!(
            value(&mutated()).unwrap(),
            "mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod"
        );
        assert_eq!(
            value(&left(&[
                "0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
            ]))
            .unwrap(),
            "unchanged: 0/2 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector"
        );
        let named = Decision::Unchanged(Unchanged::NamedClass {
            class: "runc".into(),
            ours: false,
        });
        assert_eq!(
            value(&named).unwrap(),
            "unchanged: pod already sets runtimeClassName \"runc\""
        );
        let refused = Decision::Reject(Refusal::BadRequest("no".into()));
        assert_eq!(value(&refused), None);
    }

    #[test]
    fn short_values_are_kept_whole() {
        assert_eq!(bounded("x: ", &Findings::default()), "x: ");
        let one = "a".repeat(MAX_VALUE_BYTES - 3);
        assert_eq!(
            bounded("x: ", &Findings::one(one.clone())),
            format!("x: {one}")
        );
        let five = vec!["f".repeat(100); 5];
        let out = bounded("", &reasons(&five));
        assert_eq!(out, five.join("; "));
        assert_eq!(out.len(), 508);
    }

    #[test]
    fn whole_reasons_then_how_many_more() {
        // Six reasons of 100 bytes: 610 bytes in all.
        let six: Vec<String> = (0..6).map(|i| format!("{i}").repeat(100)).collect();
        let out = bounded("", &reasons(&six));
        assert_eq!(
            out,
            format!("{}; and 2 more", six[..4].join("; ")),
            "four whole reasons (406 bytes) and the count"
        );
        // Room for the count is kept: 5 reasons would fit (508 bytes), but
        // not with "; and 1 more" after them.
        let seven: Vec<String> = (0..7).map(|i| format!("{i}").repeat(100)).collect();
        let out = bounded("", &reasons(&seven));
        assert!(out.ends_with("; and 3 more"), "{out}");
        assert!(out.len() <= MAX_VALUE_BYTES);
    }

    #[test]
    fn a_first_reason_too_long_is_cut_on_a_character_boundary() {
        let alone = format!("x{}", "é".repeat(400));
        let out = bounded("unchanged: ", &Findings::one(alone));
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
        // With reasons after it: cut, then the count.
        let three = ["x".repeat(600), "second".into(), "third".into()];
        let out = bounded("", &reasons(&three));
        assert_eq!(out, format!("{}...; and 2 more", "x".repeat(497)));
        assert_eq!(out.len(), MAX_VALUE_BYTES);
    }

    /// A "; " inside one finding (a host path, the can_i lookup message) is
    /// text, not a separator: the finding is kept whole or cut with "...",
    /// and never counted as more findings.
    #[test]
    fn a_separator_inside_a_finding_never_splits_it() {
        let path = format!(
            "hostPath volume \"sock\" (\"/srv/x; y/{}.sock\") is a host socket that Kata cannot share (skipPodsUsing: hostSockets)",
            "d".repeat(150)
        );
        let second = "the pod uses hostNetwork, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)";
        let out = bounded("unchanged: ", &reasons(&[path.clone(), second.into()]));
        assert_eq!(out, format!("unchanged: {path}; {second}"));
        // One long finding with "; " inside: cut with "...", no "and 1 more".
        let lookup = format!(
            "cannot check whether system:serviceaccount:kubewarden:policy-server may list nodes \
             (kubernetes/can_i; policy-server needs create on subjectaccessreviews.authorization.k8s.io): {}",
            "e".repeat(600)
        );
        let out = bounded("unchanged: ", &Findings::one(lookup.clone()));
        assert!(out.ends_with("..."), "{out}");
        assert!(!out.contains("more"), "{out}");
        assert!(
            out.contains("(kubernetes/can_i; policy-server needs create"),
            "{out}"
        );
        assert!(
            lookup.starts_with(
                out.strip_prefix("unchanged: ")
                    .unwrap()
                    .strip_suffix("...")
                    .unwrap()
            )
        );
    }

    #[test]
    fn every_bounded_value_fits_and_keeps_whole_reasons() {
        let pieces = [
            "é",
            "ab",
            "x; y",
            "€€€€€€€€€€€€€€€€€€€€€€€€€€€€€€",
            "; ",
            "z",
        ];
        for n in 0..200 {
            let texts: Vec<String> = (0..n % 17)
                .map(|i| pieces[(i * 7 + n) % pieces.len()].repeat(1 + (n * i) % 90))
                .collect();
            let out = bounded("unchanged: ", &reasons(&texts));
            assert!(out.len() <= MAX_VALUE_BYTES, "{n}: {} bytes", out.len());
            let whole = format!("unchanged: {}", texts.join("; "));
            if whole.len() <= MAX_VALUE_BYTES {
                assert_eq!(out, whole);
            }
        }
    }

    /// The object's annotations as the pod reader reads them (none when
    /// the object is not a pod).
    fn read(object: &str) -> BTreeMap<String, String> {
        crate::pod::PodFacts::from_json(object)
            .map(|pod| pod.annotations)
            .unwrap_or_default()
    }

    fn annotations(object: &str) -> Value {
        serde_json::from_str::<Value>(object).unwrap()["metadata"]["annotations"].clone()
    }

    #[test]
    fn annotate_adds_the_value_to_the_mutated_or_the_request_object() {
        let request = r#"{"metadata":{"name":"p"},"spec":{}}"#;
        let review = Review {
            object: Some(r#"{"metadata":{"name":"p"},"spec":{"runtimeClassName":"kata"}}"#.into()),
            ..Review::of(mutated())
        };
        let out = annotate(review, request, &read(request));
        assert_eq!(
            out.object.unwrap(),
            r#"{"metadata":{"name":"p","annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: runtimeClassName \"kata\" assigned: a kata node can run this pod"}},"spec":{"runtimeClassName":"kata"}}"#
        );
        assert_eq!(out.audit_note, None);
        let out = annotate(Review::of(left(&["why"])), request, &read(request));
        assert_eq!(
            out.object.as_deref(),
            Some(
                r#"{"metadata":{"name":"p","annotations":{"kata-runtime-policy.kubewarden.io/decision":"unchanged: why"}},"spec":{}}"#
            )
        );
        assert_eq!(
            annotations(&out.object.unwrap()),
            json!({DECISION_ANNOTATION: "unchanged: why"})
        );
        let refused = Review::of(Decision::Reject(Refusal::BadRequest("no".into())));
        assert_eq!(annotate(refused.clone(), request, &read(request)), refused);
    }

    /// An object the annotation cannot go into keeps the review as it
    /// is, without the annotation (never a refusal, never a panic).
    #[test]
    fn an_object_that_cannot_take_the_annotation_keeps_the_admission() {
        for object in [
            r#"{"metadata":"x"}"#,
            r#"{"metadata":{"annotations":[]}}"#,
            "[]",
        ] {
            let out = annotate(Review::of(left(&["why"])), object, &read(object));
            assert_eq!((out.decision, out.object), (left(&["why"]), None));
            let review = Review {
                object: Some(object.into()),
                ..Review::of(mutated())
            };
            let out = annotate(review.clone(), object, &read(object));
            assert_eq!((out.decision, out.object), (review.decision, review.object));
        }
    }

    /// A pod with annotations of `size` bytes (keys plus values) in one
    /// annotation, plus `extra` entries.
    fn pod_with_annotations(size: usize, extra: Value) -> String {
        let key = "example.com/big";
        let mut annotations = json!({ key: "v".repeat(size - key.len()) });
        annotations
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        json!({"metadata": {"name": "p", "annotations": annotations}, "spec": {}}).to_string()
    }

    /// ValidateAnnotationsSize: keys plus values ≤ 262,144 bytes. The
    /// annotation is added up to the byte, and left out (with an audit
    /// note) one byte past it, as the setting promises never to change
    /// whether the pod is admitted.
    #[test]
    fn the_annotation_never_pushes_the_pod_over_the_api_servers_limit() {
        let value = "unchanged: why";
        let ours = DECISION_ANNOTATION.len() + value.len();
        let at_limit = pod_with_annotations(MAX_ANNOTATIONS_BYTES - ours, json!({}));
        let out = annotate(Review::of(left(&["why"])), &at_limit, &read(&at_limit));
        let annotated = out.object.expect("fits exactly");
        let total: usize = annotations(&annotated)
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| k.len() + v.as_str().unwrap().len())
            .sum();
        assert_eq!(total, MAX_ANNOTATIONS_BYTES);
        assert_eq!(out.audit_note, None);

        let over = pod_with_annotations(MAX_ANNOTATIONS_BYTES - ours + 1, json!({}));
        let out = annotate(Review::of(left(&["why"])), &over, &read(&over));
        assert_eq!(out.object, None, "admitted exactly as with the setting off");
        assert_eq!(out.decision, left(&["why"]));
        let note = out.audit_note.unwrap();
        assert!(
            note.starts_with("decision annotation omitted: the pod's annotations take"),
            "{note}"
        );
        assert!(note.contains("262144"), "{note}");

        // A mutated pod over the limit keeps its class, without the annotation.
        let review = Review {
            object: Some(over.clone()),
            ..Review::of(mutated())
        };
        let out = annotate(review.clone(), &over, &read(&over));
        assert_eq!(out.object, review.object);
        assert!(out.audit_note.is_some());

        // A decision annotation the pod already carries is replaced, not added.
        let existing = pod_with_annotations(
            MAX_ANNOTATIONS_BYTES - ours,
            json!({ DECISION_ANNOTATION: "old" }),
        );
        let out = annotate(Review::of(left(&["why"])), &existing, &read(&existing));
        assert!(
            out.object.is_some() && out.audit_note.is_none(),
            "{:?}",
            out.audit_note
        );
    }
}
