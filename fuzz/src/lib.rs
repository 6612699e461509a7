//! Shared by the fuzz targets: the policy's fake cluster set up with the
//! fuzzed answers, and strict JSON helpers for the invariants.

use std::fmt;

use kata_runtime_policy::cluster::{FakeCluster, VolumeKind};
// What the node-reader oracle takes from its parent module.
use kata_runtime_policy::node::{
    HandlerFeature, HandlerFeatures, HandlerReport, KeyFilter, Node, Scan, Str, scan_node_list,
};
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

/// The serde node-list reader that the unit tests compare the shipped
/// reader with (test code, included from the policy's test tree).
#[path = "../../src/node/tests/serde_oracle.rs"]
pub mod node_oracle;

/// A kata-deploy-like RuntimeClass with scheduling constraints and overhead,
/// so that the merge and overhead paths run.
pub const RUNTIME_CLASS: &str = r#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata","labels":{"app.kubernetes.io/managed-by":"kata-deploy"}},"handler":"kata","overhead":{"podFixed":{"cpu":"250m","memory":"160Mi"}},"scheduling":{"nodeSelector":{"katacontainers.io/kata-runtime":"true"},"tolerations":[{"key":"kata.example.com/dedicated","operator":"Exists","effect":"NoSchedule"}]}}"#;

/// Three nodes: a tainted control plane without Kata, a Kata worker with the
/// taint the RuntimeClass tolerates, and a cordoned Kata worker.
pub const NODE_LIST: &str = r#"{"apiVersion":"v1","kind":"NodeList","metadata":{},"items":[{"metadata":{"name":"master","labels":{"kubernetes.io/hostname":"master","kubernetes.io/os":"linux","node-role.kubernetes.io/master":"","node-role.kubernetes.io/control-plane":""}},"spec":{"taints":[{"key":"node-role.kubernetes.io/master","effect":"NoSchedule"}]}},{"metadata":{"name":"worker-1","labels":{"kubernetes.io/hostname":"worker-1","kubernetes.io/os":"linux","katacontainers.io/kata-runtime":"true","zone":"a","cores":"8"}},"spec":{"taints":[{"key":"kata.example.com/dedicated","value":"true","effect":"NoSchedule"}]}},{"metadata":{"name":"worker-2","labels":{"kubernetes.io/hostname":"worker-2","katacontainers.io/kata-runtime":"true","zone":"b","cores":"2"}},"spec":{"taints":[{"key":"node.kubernetes.io/unschedulable","effect":"NoSchedule"}],"unschedulable":true}}]}"#;

/// A cluster that answers every lookup with fixed bytes, as they are: the
/// RuntimeClass whatever its name, the node list, and (for every read by
/// name, so that pinned pods drive the single-node reader with them) the
/// same node bytes. `volumes` are the volume lookups' answers, by position:
/// a claim, a volume, a storage class (every read by name of that kind gets
/// it), the volume list, the storage class list. Missing ones read as "not
/// found" (by name) or an empty list.
pub fn fake_cluster(runtime_class: &[u8], nodes: &[u8], volumes: &[&[u8]]) -> FakeCluster {
    let mut cluster = FakeCluster::new(Vec::new())
        .unmasked()
        .class_bytes(runtime_class.to_vec())
        .list_bytes(nodes.to_vec())
        .every_read(Ok(Some(nodes.to_vec())));
    let by_name = [
        VolumeKind::PersistentVolumeClaim,
        VolumeKind::PersistentVolume,
        VolumeKind::StorageClass,
    ];
    for (kind, answer) in by_name.into_iter().zip(volumes) {
        cluster = cluster.volume_answer(kind, answer.to_vec());
    }
    let listed = [
        (VolumeKind::PersistentVolumeClaim, 3),
        (VolumeKind::PersistentVolume, 3),
        (VolumeKind::StorageClass, 4),
    ];
    for (kind, at) in listed {
        let answer = volumes.get(at).copied().unwrap_or(br#"{"items":[]}"#);
        cluster = cluster.volume_list(kind, answer.to_vec());
    }
    cluster
}

/// [`fake_cluster`] with [`RUNTIME_CLASS`], [`NODE_LIST`] and no volume.
pub fn fixed_cluster() -> FakeCluster {
    fake_cluster(RUNTIME_CLASS.as_bytes(), NODE_LIST.as_bytes(), &[])
}

/// Whether serde_json (and so policy-server, which builds every payload
/// from a `serde_json::Value`) reads `text` as JSON. The policy passes raw
/// text through, so input policy-server could never send, such as a number
/// beyond f64 (`1e400`), may come back out unreadable: that is no bug.
pub fn serde_json_reads(text: &[u8]) -> bool {
    serde_json::from_slice::<Value>(text).is_ok()
}

/// Checks that a rendered `ValidationResponse` is JSON with a boolean
/// `accepted`, and returns it. `inputs` are what the response was computed
/// from: a response serde_json cannot read is only a failure when it could
/// read all of them.
pub fn check_response(rendered: &[u8], inputs: &[&[u8]]) -> Option<Value> {
    let v: Value = match serde_json::from_slice(rendered) {
        Ok(v) => v,
        Err(_) if !inputs.iter().all(|i| serde_json_reads(i)) => return None,
        Err(e) => panic!(
            "render() produced invalid JSON ({e}): {}",
            String::from_utf8_lossy(rendered)
        ),
    };
    assert!(
        v.get("accepted").is_some_and(Value::is_boolean),
        "response without a boolean `accepted`: {v}"
    );
    Some(v)
}

/// A JSON value parsed like `serde_json::Value`, but refusing any object
/// with a duplicate key (where `Value` silently keeps the last one).
struct Strict(Value);

impl<'de> Deserialize<'de> for Strict {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(StrictVisitor).map(Strict)
    }
}

struct StrictVisitor;

impl<'de> Visitor<'de> for StrictVisitor {
    type Value = Value;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(v.into())
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(Strict(v)) = seq.next_element()? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let Strict(v) = map.next_value()?;
            if out.insert(key, v).is_some() {
                return Err(de::Error::custom("duplicate key"));
            }
        }
        Ok(Value::Object(out))
    }
}

/// The value of `text`, or `None` when it is not JSON or has a duplicate key
/// anywhere (then "the same object" is ambiguous and invariants are skipped).
pub fn strict_json(text: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Strict>(text).ok().map(|s| s.0)
}

/// Removes `spec.runtimeClassName`; `false` when `v` is not an object whose
/// `spec` is an object.
pub fn strip_runtime_class(v: &mut Value) -> bool {
    match v.get_mut("spec").and_then(Value::as_object_mut) {
        Some(spec) => {
            spec.remove("runtimeClassName");
            true
        }
        None => false,
    }
}

/// Takes the decision annotation (`annotateDecision`) out of `mutated`
/// again, with `metadata.annotations` and `metadata` put back as they are in
/// `original` (absent, null or an object). `false` when `mutated` differs
/// from `original` there in more than that one key. Without the annotation
/// `mutated` is left as it is.
pub fn strip_decision_annotation(mutated: &mut Value, original: &Value) -> bool {
    let key = kata_runtime_policy::annotation::DECISION_ANNOTATION;
    let Some(meta) = mutated.get_mut("metadata").and_then(Value::as_object_mut) else {
        return true;
    };
    let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) else {
        return true;
    };
    if annotations.remove(key).is_none() {
        return true;
    }
    let left = std::mem::take(annotations);
    let original_meta = original.get("metadata").filter(|m| !m.is_null());
    let original_annotations = original_meta.and_then(|m| m.get("annotations"));
    let mut original_left = original_annotations
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    original_left.remove(key);
    if left != original_left {
        return false;
    }
    match original_annotations {
        Some(a) => {
            meta.insert("annotations".into(), a.clone());
        }
        None => {
            meta.remove("annotations");
        }
    }
    if original_meta.is_none() {
        // metadata was created (or replaced a null) for the annotation alone.
        if !meta.is_empty() {
            return false;
        }
        match original.get("metadata") {
            Some(null) => mutated["metadata"] = null.clone(),
            None => {
                if let Some(top) = mutated.as_object_mut() {
                    top.remove("metadata");
                }
            }
        }
    }
    true
}

/// Splits a two-part input at its first NUL byte (never valid in JSON, so
/// both halves stay plain JSON text and mutations rarely move the split).
/// Without a NUL the whole input is the first part and the second is empty.
pub fn split_at_nul(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[]),
    }
}
