//! Answers of a fake cluster holding volume objects as JSON, shared by the
//! volume and decision tests.

use serde_json::{Value, json};

use crate::cluster::VolumeKind;

/// The object `name` of `kind` in `namespace`, as a read by name answers it.
pub(crate) fn read(
    objects: &[Value],
    kind: VolumeKind,
    namespace: Option<&str>,
    name: &str,
) -> Option<Vec<u8>> {
    objects
        .iter()
        .find(|o| {
            o["kind"] == kind.kind()
                && o["metadata"]["name"] == name
                && o["metadata"]["namespace"].as_str() == namespace
        })
        .map(|o| o.to_string().into_bytes())
}

/// Every object of `kind`, as a `<kind>List`.
pub(crate) fn list(objects: &[Value], kind: VolumeKind) -> Vec<u8> {
    let items: Vec<&Value> = objects
        .iter()
        .filter(|o| o["kind"] == kind.kind())
        .collect();
    json!({"kind": format!("{}List", kind.kind()), "items": items})
        .to_string()
        .into_bytes()
}
