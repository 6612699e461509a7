//! The pod and namespace lists (inter-pod affinity) as fuzz input, split at
//! the first NUL byte, for a pod with required affinity and anti-affinity
//! terms, one of them selecting namespaces by label; the second half also
//! answers every node read by name (the nodes the matching pods run on).
#![no_main]

use fuzz_support::{check_response, split_at_nul};
use kata_runtime_policy::admission::validate;
use kata_runtime_policy::cluster::FakeCluster;
use libfuzzer_sys::fuzz_target;
use serde_json::json;

const AFFINE: &str = r#"{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"shop","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"api","labels":{"app":"api","rev":"2"}},"spec":{"containers":[{"name":"c","image":"nginx"}],"affinity":{"podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"db"}},"namespaceSelector":{"matchExpressions":[{"key":"team","operator":"NotIn","values":["x"]}]},"topologyKey":"zone"}]},"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["api"]}]},"matchLabelKeys":["rev"],"topologyKey":"kubernetes.io/hostname"}]}}}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server","annotateDecision":true}}"#;

fuzz_target!(|data: &[u8]| {
    let (pods, namespaces) = split_at_nul(data);
    let node = |name: &str, zone: &str| {
        json!({"metadata": {"name": name, "labels": {"katacontainers.io/kata-runtime": "true",
            "kubernetes.io/hostname": name, "zone": zone}}})
    };
    let cluster = FakeCluster::new(vec![node("w1", "a"), node("w2", "b")])
        .pods_answer(Ok(pods.to_vec()))
        .namespaces_answer(Ok(namespaces.to_vec()))
        .every_read(Ok(Some(namespaces.to_vec())));
    check_response(&validate(AFFINE.as_bytes(), &cluster), &[pods, namespaces]);
});
