//! `set_runtime_class` and `set_annotation` on arbitrary text: each must
//! return JSON that differs from the input only in `spec.runtimeClassName`,
//! or only in the one annotation.
#![no_main]

use fuzz_support::{strict_json, strip_decision_annotation, strip_runtime_class};
use kata_runtime_policy::annotation::DECISION_ANNOTATION;
use kata_runtime_policy::mutation::{set_annotation, set_runtime_class};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    check_annotation(input, data);
    let Ok(out) = set_runtime_class(input, "kata") else {
        return;
    };
    // "Valid JSON" as serde_json (and so policy-server) reads it: the raw
    // splice also accepts what serde_json's tree cannot hold, such as numbers
    // beyond f64 (`1e400`), and passes those through unchanged.
    let mutated: Result<Value, _> = serde_json::from_str(&out);
    let mut mutated = match mutated {
        Ok(v) => v,
        Err(_) if serde_json::from_str::<Value>(input).is_err() => return,
        Err(e) => panic!("output is not JSON ({e}) for input {input:?}: {out:?}"),
    };
    // Compare as trees only when the input is unambiguous JSON: no duplicate
    // keys anywhere, and an object whose spec is an object.
    let Some(mut original) = strict_json(data) else {
        return;
    };
    if !strip_runtime_class(&mut original) {
        return;
    }
    assert_eq!(
        mutated["spec"]["runtimeClassName"], "kata",
        "class not set for input {input:?}: {out:?}"
    );
    assert!(
        strip_runtime_class(&mut mutated),
        "output spec is not an object: {out:?}"
    );
    assert_eq!(
        mutated, original,
        "set_runtime_class changed more than spec.runtimeClassName; input {input:?}, output {out:?}"
    );
});

/// An object, absent or null: where `set_annotation` creates what it needs.
fn takes_members(v: Option<&Value>) -> bool {
    v.is_none_or(|v| v.is_null() || v.is_object())
}

fn check_annotation(input: &str, data: &[u8]) {
    let value = "unchanged: \"x\" é";
    let out = set_annotation(input, DECISION_ANNOTATION, value);
    let original = strict_json(data);
    // Unambiguous JSON whose metadata and annotations can take the member:
    // set_annotation must not refuse it.
    let fits = original.as_ref().is_some_and(|o| {
        o.is_object()
            && takes_members(o.get("metadata"))
            && takes_members(o.get("metadata").and_then(|m| m.get("annotations")))
    });
    let out = match out {
        Ok(out) => out,
        Err(e) if fits => panic!("set_annotation refused {input:?}: {e}"),
        Err(_) => return,
    };
    let mutated: Result<Value, _> = serde_json::from_str(&out);
    let mut mutated = match mutated {
        Ok(v) => v,
        Err(_) if serde_json::from_str::<Value>(input).is_err() => return,
        Err(e) => panic!("annotated output is not JSON ({e}) for input {input:?}: {out:?}"),
    };
    let (Some(original), true) = (original, fits) else {
        return;
    };
    assert_eq!(
        mutated["metadata"]["annotations"][DECISION_ANNOTATION], value,
        "annotation not set for input {input:?}: {out:?}"
    );
    assert!(
        strip_decision_annotation(&mut mutated, &original),
        "set_annotation changed other annotations; input {input:?}, output {out:?}"
    );
    assert_eq!(
        mutated, original,
        "set_annotation changed more than the annotation; input {input:?}, output {out:?}"
    );
}
