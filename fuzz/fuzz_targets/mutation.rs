//! `set_runtime_class` on arbitrary text: it must return JSON that differs
//! from the input only in `spec.runtimeClassName`.
#![no_main]

use fuzz_support::{strict_json, strip_runtime_class};
use kata_runtime_policy::mutation::set_runtime_class;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
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
