//! A whole `validate` call: payload → decision → response, against a fixed
//! cluster (a kata-deploy RuntimeClass and three nodes).
#![no_main]

use fuzz_support::{
    check_response, fixed_cluster, serde_json_reads, strict_json, strip_decision_annotation,
    strip_runtime_class,
};
use kata_runtime_policy::admission::review;
use kata_runtime_policy::decision::Decision;
use kata_runtime_policy::response::render;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let admission = review(data, &fixed_cluster());

    if let (Decision::Mutate { class, .. }, Some(object)) = (&admission.decision, &admission.object)
    {
        // A configured class: one the settings name (runtimeClassName is
        // required; "kata", the corpus's, may be written with escapes).
        assert!(
            class == "kata"
                || (!class.is_empty() && data.windows(class.len()).any(|w| w == class.as_bytes())),
            "assigned {class:?}, which the payload does not name"
        );
        let mut mutated: serde_json::Value = match serde_json::from_str(object) {
            Ok(v) => v,
            Err(_) if !serde_json_reads(data) => return,
            Err(e) => panic!("mutated object is not JSON ({e}): {object}"),
        };
        // The request's object, as a tree; skipped when the payload has a
        // duplicate key somewhere (then which object is "the" object is moot).
        if let Some(mut original) = strict_json(data)
            .and_then(|mut p| p.get_mut("request")?.get_mut("object").map(|o| o.take()))
        {
            assert_eq!(
                mutated["spec"]["runtimeClassName"],
                class.as_str(),
                "mutation did not set the class: {object}"
            );
            assert!(
                strip_decision_annotation(&mut mutated, &original),
                "the decision annotation changed other annotations: {object}"
            );
            assert!(
                strip_runtime_class(&mut mutated),
                "mutated spec is not an object"
            );
            assert!(
                strip_runtime_class(&mut original),
                "original spec is not an object"
            );
            assert_eq!(
                mutated, original,
                "the mutation changed more than spec.runtimeClassName"
            );
        }
    }

    // annotateDecision on an unchanged pod: the request's object plus the
    // annotation, nothing else.
    if let (Decision::Unchanged(_), Some(object)) = (&admission.decision, &admission.object) {
        let mut annotated: serde_json::Value = match serde_json::from_str(object) {
            Ok(v) => v,
            Err(_) if !serde_json_reads(data) => return,
            Err(e) => panic!("annotated object is not JSON ({e}): {object}"),
        };
        if let Some(original) = strict_json(data)
            .and_then(|mut p| p.get_mut("request")?.get_mut("object").map(|o| o.take()))
        {
            assert!(
                annotated["metadata"]["annotations"]
                    [kata_runtime_policy::annotation::DECISION_ANNOTATION]
                    .is_string(),
                "an unchanged pod with an object but no annotation: {object}"
            );
            assert!(
                strip_decision_annotation(&mut annotated, &original),
                "the decision annotation changed other annotations: {object}"
            );
            assert_eq!(annotated, original, "an unchanged pod was changed");
        }
    }

    check_response(&render(admission), &[data]);
});
