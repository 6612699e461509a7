//! Adds members to the raw JSON text of a Pod and changes nothing else: the
//! result is the input with one member inserted (or one value replaced), so
//! fields unknown to any Kubernetes library, number spellings, whitespace
//! and key order survive. Two members are ever set: `spec.runtimeClassName`
//! and, with `annotateDecision`, one key of `metadata.annotations`.

use std::ops::Range;

use serde::Deserialize;
use serde_json::value::RawValue;

use crate::json::Str;

#[derive(Deserialize)]
struct Top<'a> {
    #[serde(borrow, default)]
    spec: Option<&'a RawValue>,
}

/// The members of the JSON object `text`, in document order, as raw values
/// borrowed from `text`. A visitor rather than a map type, which would lose
/// the order. `name` names `text` in the error.
fn members<'a>(text: &'a str, name: &str) -> Result<Vec<(Str<'a>, &'a RawValue)>, String> {
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
    let mut de = serde_json::Deserializer::from_str(text);
    serde::Deserializer::deserialize_map(&mut de, V)
        .and_then(|entries| de.end().map(|()| entries))
        .map_err(|e| format!("{name} is not a JSON object: {e}"))
}

/// Where `inner`, a slice borrowed from `outer`, lies in it. Checked rather
/// than trusted: `None` when it is not there.
fn span(outer: &str, inner: &str) -> Option<Range<usize>> {
    let start = (inner.as_ptr() as usize).wrapping_sub(outer.as_ptr() as usize);
    let end = start.wrapping_add(inner.len());
    (outer.get(start..end) == Some(inner)).then_some(start..end)
}

fn json_string(text: &str) -> Result<String, String> {
    serde_json::to_string(text).map_err(|e| e.to_string())
}

/// `value` nested under `path`: `{"a":{"b":value}}` for `["a", "b"]`.
fn nested(path: &[&str], value: &str) -> Result<String, String> {
    let mut out = value.to_string();
    for key in path.iter().rev() {
        out = format!("{{{}:{out}}}", json_string(key)?);
    }
    Ok(out)
}

/// Returns `object`, the text of a JSON object, with the member at `path`
/// set to the JSON text `value`. An object on the way that is absent or
/// null is created; a member that is there is replaced in place, every
/// occurrence of a duplicated key alike (readers disagree on which one
/// wins); anything else on the way that is not an object is an error.
/// `at` is where `object` is, dotted (`metadata.annotations`; "" for the
/// whole object), for errors.
fn set_path(object: &str, at: &str, path: &[&str], value: &str) -> Result<String, String> {
    let Some((key, rest)) = path.split_first() else {
        return Ok(value.to_string());
    };
    let name = if at.is_empty() { "the object" } else { at };
    let entries = members(object, name)?;
    let found: Vec<&str> = (entries.iter())
        .filter(|(k, _)| k.as_str() == *key)
        .map(|(_, raw)| raw.get())
        .collect();
    if found.is_empty() {
        // Inserted before the closing brace: `{ }` becomes `{ "key":value}`.
        let trimmed = object.trim_end();
        let body = trimmed
            .strip_suffix('}')
            .ok_or_else(|| format!("{name} is not a JSON object"))?;
        let comma = if entries.is_empty() { "" } else { "," };
        let after = object.get(trimmed.len()..).unwrap_or_default();
        return Ok(format!(
            "{body}{comma}{}:{}}}{after}",
            json_string(key)?,
            nested(rest, value)?
        ));
    }
    let inner = if at.is_empty() {
        (*key).to_string()
    } else {
        format!("{at}.{key}")
    };
    let mut out = String::with_capacity(object.len() + value.len());
    let mut copied = 0;
    for raw in found {
        let range = span(object, raw).ok_or_else(|| format!("{name} is not a JSON object"))?;
        let new = match raw {
            _ if rest.is_empty() => value.to_string(),
            "null" => nested(rest, value)?,
            _ => set_path(raw, &inner, rest, value)?,
        };
        out.push_str(object.get(copied..range.start).unwrap_or_default());
        out.push_str(&new);
        copied = range.end;
    }
    out.push_str(object.get(copied..).unwrap_or_default());
    Ok(out)
}

/// Returns `object` with `spec.runtimeClassName` set to `name`. A pod
/// without a spec (absent or null) is an error: nothing to give a class.
pub fn set_runtime_class(object: &str, name: &str) -> Result<String, String> {
    let top: Top = serde_json::from_str(object)
        .map_err(|e| format!("the object is not a JSON object: {e}"))?;
    top.spec.ok_or("the pod has no spec")?;
    set_path(
        object,
        "",
        &["spec", "runtimeClassName"],
        &json_string(name)?,
    )
}

/// Returns `object` with `metadata.annotations[key]` set to `value`,
/// creating `annotations`, or `metadata`, when absent or null, and replacing
/// a value the object already has for `key`.
pub fn set_annotation(object: &str, key: &str, value: &str) -> Result<String, String> {
    set_path(
        object,
        "",
        &["metadata", "annotations", key],
        &json_string(value)?,
    )
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
    fn replaces_a_null_or_empty_runtime_class_in_place() {
        for (object, expected) in [
            (
                r#"{"spec":{"a":1,"runtimeClassName":null, "b":[2]}}"#,
                r#"{"spec":{"a":1,"runtimeClassName":"kata", "b":[2]}}"#,
            ),
            (
                r#"{"spec":{"a":1.0, "runtimeClassName" : "","b":[2]}}"#,
                r#"{"spec":{"a":1.0, "runtimeClassName" : "kata","b":[2]}}"#,
            ),
            // A duplicated key: every occurrence, whichever a reader keeps.
            (
                r#"{"spec":{"runtimeClassName":"","runtimeClassName":null}}"#,
                r#"{"spec":{"runtimeClassName":"kata","runtimeClassName":"kata"}}"#,
            ),
        ] {
            assert_eq!(set_runtime_class(object, "kata").unwrap(), expected);
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
        assert!(
            set_runtime_class(r#"{"spec":null}"#, "kata")
                .unwrap_err()
                .contains("no spec")
        );
        assert!(
            set_runtime_class(r#"{"spec":[]}"#, "kata")
                .unwrap_err()
                .starts_with("spec is not a JSON object: ")
        );
        assert!(set_runtime_class(r#"{"spec":"x"}"#, "kata").is_err());
        assert!(set_runtime_class(r#"[]"#, "kata").is_err());
    }

    const KEY: &str = "kata-runtime-policy.kubewarden.io/decision";

    /// Every shape `metadata.annotations` can take on the way, and the
    /// exact text that comes out.
    #[test]
    fn set_annotation_inserts_one_member_and_keeps_every_other_byte() {
        let v = "mutated: ok";
        for (object, expected) in [
            // No metadata: created, after the last member.
            (
                r#"{"spec":{}}"#,
                r#"{"spec":{},"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}}}"#,
            ),
            (
                r#"{}"#,
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}}}"#,
            ),
            (
                " { }\n",
                " { \"metadata\":{\"annotations\":{\"kata-runtime-policy.kubewarden.io/decision\":\"mutated: ok\"}}}\n",
            ),
            // metadata null: replaced by an object.
            (
                r#"{"metadata":null,"spec":{}}"#,
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}},"spec":{}}"#,
            ),
            // metadata without annotations.
            (
                r#"{"metadata": {"name":"p", "x-unknown": 1.50e1 }, "spec":{}}"#,
                r#"{"metadata": {"name":"p", "x-unknown": 1.50e1 ,"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}}, "spec":{}}"#,
            ),
            (
                r#"{"metadata":{}}"#,
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}}}"#,
            ),
            // annotations null.
            (
                r#"{"metadata":{"annotations":null,"name":"p"}}"#,
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"},"name":"p"}}"#,
            ),
            // annotations present, empty or not.
            (
                r#"{"metadata":{"annotations":{}}}"#,
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}}}"#,
            ),
            (
                r#"{"metadata":{"annotations":{"z":"1", "a" : "2"}},"spec":{"n":100000000000000000000000}}"#,
                r#"{"metadata":{"annotations":{"z":"1", "a" : "2","kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}},"spec":{"n":100000000000000000000000}}"#,
            ),
            // The key already there (a user cannot preset the decision):
            // replaced where it stands.
            (
                r#"{"metadata":{"annotations":{"a":"1","kata-runtime-policy.kubewarden.io/decision":"mutated: trust me", "b":"2"}}}"#,
                r#"{"metadata":{"annotations":{"a":"1","kata-runtime-policy.kubewarden.io/decision":"mutated: ok", "b":"2"}}}"#,
            ),
            // Written with an escape: the same key to every JSON reader.
            (
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io\/decision":"x"}}}"#,
                r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io\/decision":"mutated: ok"}}}"#,
            ),
            // Keys named like ours elsewhere are not touched.
            (
                r#"{"spec":{"metadata":{"annotations":{}}},"metadata":{"labels":{"annotations":"x"}}}"#,
                r#"{"spec":{"metadata":{"annotations":{}}},"metadata":{"labels":{"annotations":"x"},"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}}}"#,
            ),
        ] {
            assert_eq!(
                set_annotation(object, KEY, v).unwrap(),
                expected,
                "{object}"
            );
        }
    }

    #[test]
    fn the_annotation_value_is_escaped_as_json() {
        let out = set_annotation(r#"{"metadata":{}}"#, KEY, "unchanged: \"é\"\n\\ \u{1}").unwrap();
        let v: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(
            v["metadata"]["annotations"][KEY],
            json!("unchanged: \"é\"\n\\ \u{1}")
        );
    }

    #[test]
    fn with_the_runtime_class_both_members_and_nothing_else() {
        let object = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-7d4b9c-","labels":{"pod-template-hash":"7d4b9c"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c","uid":"u","controller":true}]},"spec":{"containers":[{"name":"c","image":"i"}]}}"#;
        let out = set_runtime_class(object, "kata").unwrap();
        let out = set_annotation(&out, KEY, "mutated: ok").unwrap();
        assert_eq!(
            out,
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-7d4b9c-","labels":{"pod-template-hash":"7d4b9c"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d4b9c","uid":"u","controller":true}],"annotations":{"kata-runtime-policy.kubewarden.io/decision":"mutated: ok"}},"spec":{"containers":[{"name":"c","image":"i"}],"runtimeClassName":"kata"}}"#
        );
    }

    #[test]
    fn set_annotation_refuses_what_is_not_an_object_on_the_way() {
        for (object, error) in [
            (r#"[]"#, "the object is not a JSON object"),
            (r#""x""#, "the object is not a JSON object"),
            (r#"{"a":1"#, "the object is not a JSON object"),
            (r#"{"a":1}}"#, "the object is not a JSON object"),
            (r#"{"a":1} x"#, "the object is not a JSON object"),
            (r#"{"metadata":"x"}"#, "metadata is not a JSON object"),
            (r#"{"metadata":[]}"#, "metadata is not a JSON object"),
            (
                r#"{"metadata":{"annotations":[]}}"#,
                "metadata.annotations is not a JSON object",
            ),
            (
                r#"{"metadata":{"annotations":5}}"#,
                "metadata.annotations is not a JSON object",
            ),
        ] {
            let e = set_annotation(object, KEY, "v").unwrap_err();
            assert!(e.starts_with(error), "{object}: {e}");
        }
    }

    /// Duplicated keys on the way: every occurrence gets the member, so the
    /// result is the same whichever one a reader keeps.
    #[test]
    fn duplicated_keys_all_get_the_member() {
        let out = set_annotation(
            r#"{"metadata":{"annotations":null},"metadata":{"annotations":{"a":"b"}}}"#,
            KEY,
            "v",
        )
        .unwrap();
        assert_eq!(
            out,
            r#"{"metadata":{"annotations":{"kata-runtime-policy.kubewarden.io/decision":"v"}},"metadata":{"annotations":{"a":"b","kata-runtime-policy.kubewarden.io/decision":"v"}}}"#
        );
    }
}
