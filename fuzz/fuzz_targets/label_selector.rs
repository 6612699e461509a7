//! The kataNodeSelector label-selector parser.
#![no_main]

use kata_runtime_policy::labels::{SelectorOp, is_label_value, is_qualified_name, parse_selector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(requirements) = parse_selector(s) else {
        return;
    };
    for r in &requirements {
        assert!(
            is_qualified_name(&r.key),
            "selector {s:?} gave a requirement with an invalid key {:?}",
            r.key
        );
        assert!(
            r.values.iter().all(|v| is_label_value(v)),
            "selector {s:?} gave invalid values in {r:?}"
        );
        match r.op {
            SelectorOp::Exists | SelectorOp::DoesNotExist => assert!(r.values.is_empty(), "{r:?}"),
            SelectorOp::Equals | SelectorOp::NotEquals => assert_eq!(r.values.len(), 1, "{r:?}"),
            SelectorOp::In | SelectorOp::NotIn => assert!(!r.values.is_empty(), "{r:?}"),
            SelectorOp::GreaterThan | SelectorOp::LessThan => assert!(
                r.values.len() == 1 && r.values[0].parse::<i64>().is_ok(),
                "{r:?}"
            ),
        }
    }
});
