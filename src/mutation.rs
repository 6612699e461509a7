//! Adds `spec.runtimeClassName` to the raw JSON text of a Pod and changes
//! nothing else: the result is the input with one member inserted, so fields
//! unknown to any Kubernetes library, number spellings and key order survive.

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::node::Str;

#[derive(Deserialize)]
struct Top<'a> {
    #[serde(borrow, default)]
    spec: Option<&'a RawValue>,
}

/// The members of `spec`, in document order, as raw values. A visitor
/// rather than a map type, which would lose the order.
fn members(spec: &str) -> Result<Vec<(Str<'_>, &RawValue)>, String> {
    use serde::de::{MapAccess, Visitor};
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Vec<(Str<'de>, &'de RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(spec);
    serde::Deserializer::deserialize_map(&mut de, V)
        .map_err(|e| format!("spec is not a JSON object: {e}"))
}

/// Returns `object` with `spec.runtimeClassName` set to `name`.
pub fn set_runtime_class(object: &str, name: &str) -> Result<String, String> {
    let top: Top = serde_json::from_str(object)
        .map_err(|e| format!("the object is not a JSON object: {e}"))?;
    let spec = top.spec.ok_or("the pod has no spec")?.get();
    let start = (spec.as_ptr() as usize).wrapping_sub(object.as_ptr() as usize);
    let end = start.wrapping_add(spec.len());
    // RawValue borrows from `object`; check rather than trust the offsets.
    if object.get(start..end) != Some(spec) || !spec.ends_with('}') {
        return Err("spec is not a JSON object".to_string());
    }
    let entries = members(spec)?;
    let value = serde_json::to_string(name).map_err(|e| e.to_string())?;
    let new_spec = if entries
        .iter()
        .any(|(k, _)| k.as_str() == "runtimeClassName")
    {
        // Present but null or empty: rewrite spec's members, replacing that one.
        let mut out = String::with_capacity(spec.len() + value.len());
        out.push('{');
        for (i, (key, raw)) in entries.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push_str(&serde_json::to_string(key.as_str()).map_err(|e| e.to_string())?);
            out.push(':');
            out.push_str(if key.as_str() == "runtimeClassName" {
                &value
            } else {
                raw.get()
            });
        }
        out.push('}');
        out
    } else {
        let body = spec.get(..spec.len() - 1).unwrap_or_default();
        let comma = if entries.is_empty() { "" } else { "," };
        format!("{body}{comma}\"runtimeClassName\":{value}}}")
    };
    let mut out = String::with_capacity(object.len() + new_spec.len() - spec.len());
    out.push_str(object.get(..start).unwrap_or_default());
    out.push_str(&new_spec);
    out.push_str(object.get(end..).unwrap_or_default());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn inserts_one_member_and_keeps_every_other_byte() {
        let object = r#"{"kind":"Pod", "spec" : { "containers":[{"name":"c","image":"nginx"}], "x-unknown": {"big": 123456789012345678901234567890, "f": 1.50} } , "status":{}}"#;
        let out = set_runtime_class(object, "kata").unwrap();
        assert_eq!(
            out,
            r#"{"kind":"Pod", "spec" : { "containers":[{"name":"c","image":"nginx"}], "x-unknown": {"big": 123456789012345678901234567890, "f": 1.50} ,"runtimeClassName":"kata"} , "status":{}}"#
        );
    }

    #[test]
    fn empty_spec() {
        assert_eq!(
            set_runtime_class(r#"{"spec":{}}"#, "kata").unwrap(),
            r#"{"spec":{"runtimeClassName":"kata"}}"#
        );
        assert_eq!(
            set_runtime_class(r#"{"spec":{ }}"#, "kata").unwrap(),
            r#"{"spec":{ "runtimeClassName":"kata"}}"#
        );
    }

    #[test]
    fn replaces_a_null_or_empty_runtime_class() {
        for object in [
            r#"{"spec":{"a":1,"runtimeClassName":null,"b":[2]}}"#,
            r#"{"spec":{"a":1,"runtimeClassName":"","b":[2]}}"#,
        ] {
            let out: Value =
                serde_json::from_str(&set_runtime_class(object, "kata").unwrap()).unwrap();
            assert_eq!(
                out,
                json!({"spec": {"a": 1, "runtimeClassName": "kata", "b": [2]}})
            );
        }
    }

    #[test]
    fn the_spec_key_inside_other_objects_is_not_touched() {
        let object =
            r#"{"metadata":{"annotations":{"spec":"{}"}},"extra":{"spec":{}},"spec":{"a":1}}"#;
        let out = set_runtime_class(object, "kata").unwrap();
        assert_eq!(
            out,
            r#"{"metadata":{"annotations":{"spec":"{}"}},"extra":{"spec":{}},"spec":{"a":1,"runtimeClassName":"kata"}}"#
        );
    }

    #[test]
    fn errors_instead_of_guessing() {
        assert!(
            set_runtime_class(r#"{"metadata":{}}"#, "kata")
                .unwrap_err()
                .contains("no spec")
        );
        assert!(set_runtime_class(r#"{"spec":[]}"#, "kata").is_err());
        assert!(set_runtime_class(r#"{"spec":"x"}"#, "kata").is_err());
        assert!(set_runtime_class(r#"[]"#, "kata").is_err());
    }
}
