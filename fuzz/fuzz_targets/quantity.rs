//! Quantities as pods, nodes and RuntimeClasses spell them, and allocatable
//! maps checked against a pod's requests: never a panic, and the algebra
//! that upstream's tests state holds for every accepted input.
#![no_main]

use kata_runtime_policy::quantity::{Amount, Quantity};
use kata_runtime_policy::resources::{ResourceList, ResourceNames};
use kata_runtime_policy::scheduling::Reason;
use kata_runtime_policy::scheduling::node_resources_fit::ResourceFit;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Quantity::from_json_text(text);
    if let Ok(q) = Quantity::parse(text) {
        // "-x" negates "x" and "+x" is "x" (TestQuantityParse), unless x
        // already has a sign.
        if !text.starts_with(['-', '+']) {
            let negated = Quantity::parse(&format!("-{text}")).expect("-x parses");
            assert_eq!(negated.saturating_add(q), Quantity::ZERO, "-{text}");
            assert_eq!(Quantity::parse(&format!("+{text}")), Ok(q), "+{text}");
        }
        // Rounding up: value and milli value bracket the quantity.
        let (v, m) = (q.value(), q.milli_value());
        if q >= Quantity::ZERO && v < i64::MAX / 1000 {
            assert!(m <= v.saturating_mul(1000), "{text}: {m} > {v}*1000");
            assert!(
                m > (v - 1).saturating_mul(1000),
                "{text}: {m} <= ({v}-1)*1000"
            );
        }
        assert_eq!(
            Amount::parse(text),
            Ok(Amount::from(q)),
            "{text}: fast path"
        );
        let milli = q.round_up_to_milli();
        assert!(
            milli.milli_value() == m,
            "{text}: rounding to milli changed MilliValue"
        );
    }

    // The text split into `name=value` lines: a pod's requests against a
    // node's allocatable made of the same lines, read as the node scan does.
    let mut requests = ResourceList::new();
    let mut allocatable = serde_json::Map::new();
    for line in text.lines() {
        if let Some((name, value)) = line.split_once('=') {
            if let Ok(q) = Quantity::parse(value) {
                requests.insert(name.to_string(), q);
            }
            allocatable.insert(name.to_string(), value.into());
        }
    }
    let fit = ResourceFit::new(&requests, &ResourceNames::default());
    let node = serde_json::json!({"kind": "NodeList", "items": [
        {"metadata": {"name": "n"}, "status": {"allocatable": allocatable}}]})
    .to_string();
    let keep = kata_runtime_policy::node::KeyFilter::All;
    let _ = kata_runtime_policy::node::scan_node_list(node.as_bytes(), keep, |n| {
        // A node offering exactly what is asked can only be short of pods.
        // Every value the fit reads parsed above, except perhaps `pods`.
        if let Ok(Some(unfit)) = fit.shortfalls(n, false) {
            for reason in unfit.reasons() {
                assert_eq!(reason, &Reason::TooManyPods, "{text:?}");
            }
        }
        std::ops::ControlFlow::Continue(())
    });
});
