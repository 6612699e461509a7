//! The two host answers (RuntimeClass, NodeList) as fuzz input, split at the
//! first NUL byte, for fixed Pod CREATE requests; plus the two parsers alone,
//! the node reader compared with its serde oracle.
#![no_main]

use std::ops::ControlFlow;

use fuzz_support::{check_response, fake_cluster, node_oracle, split_at_nul, strict_json};
use kata_runtime_policy::admission::validate;
use kata_runtime_policy::node::{KeyFilter, scan_node_list};
use libfuzzer_sys::fuzz_target;

/// test_data/pod-plain.json as a validate payload (the object only; the
/// admission-review fields the policy ignores are left out).
const PLAIN: &str = r#"{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nginx","namespace":"default"},"spec":{"containers":[{"name":"nginx","image":"nginx","command":["sleep","100000"]}]}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}}"#;

/// A pod that uses every scheduling input: nodeSelector, required node
/// affinity (matchExpressions with every operator, matchFields), tolerations,
/// overhead, requests (a sidecar, a GPU limit) and topology spread, with "reject" outcomes and a selector-less settings.
const RICH: &str = r#"{"request":{"uid":"2","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"500m","memory":"1Gi"},"limits":{"nvidia.com/pgpu":"1"}}}],"initContainers":[{"name":"s","image":"envoy","restartPolicy":"Always","resources":{"requests":{"cpu":"100m","hugepages-2Mi":"2Mi"}}}],"topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule"}],"nodeSelector":{"kubernetes.io/os":"linux"},"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a","b"]},{"key":"cores","operator":"Gt","values":["4"]},{"key":"cores","operator":"Lt","values":["64"]},{"key":"gpu","operator":"DoesNotExist"},{"key":"kubernetes.io/hostname","operator":"Exists"},{"key":"zone","operator":"NotIn","values":["c"]}]},{"matchFields":[{"key":"metadata.name","operator":"In","values":["worker-2"]}]}]}}},"tolerations":[{"key":"kata.example.com/dedicated","operator":"Equal","value":"true","effect":"NoSchedule"},{"operator":"Exists","effect":"NoExecute"}],"overhead":{"cpu":"250m","memory":"160Mi"}}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server","kataNodeSelector":"","noFeasibleNode":"reject","lookupFailure":"reject"}}"#;

/// A pod bound by nodeName: its node is read by name, so the fuzzed node
/// answer goes through the single-node reader.
const BOUND: &str = r#"{"request":{"uid":"3","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"b"},"spec":{"nodeName":"worker-1","containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"1","example.com/dongle":"1"}}}]}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}}"#;

/// A gated pod with `supplementalGroupsPolicy: Strict`: the node answer's
/// `status.features` decides, and a mutation carries the gate note.
const STRICT_GATED: &str = r#"{"request":{"uid":"4","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"s"},"spec":{"securityContext":{"runAsUser":1000,"supplementalGroupsPolicy":"Strict"},"schedulingGates":[{"name":"kueue.x-k8s.io/admission"}],"containers":[{"name":"c","image":"nginx"}]}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server","annotateDecision":true}}"#;

fuzz_target!(|data: &[u8]| {
    let (runtime_class, nodes) = split_at_nul(data);
    let cluster = fake_cluster(runtime_class, nodes, &[]);
    for payload in [PLAIN, RICH, BOUND, STRICT_GATED] {
        check_response(
            &validate(payload.as_bytes(), &cluster),
            &[runtime_class, nodes],
        );
    }

    // The parsers alone, on the whole input and on each half.
    for bytes in [data, runtime_class, nodes] {
        let mut seen = 0usize;
        let _ = scan_node_list(bytes, KeyFilter::All, |node| {
            seen += node.name().len();
            ControlFlow::Continue(())
        });
        let _ = kata_runtime_policy::runtime_class::parse(bytes);
        // The shipped reader against the serde oracle, on documents where
        // serde's own leniencies cannot differ (no duplicate keys, no
        // nesting past serde's limit, valid escapes and numbers).
        if strict_json(bytes).is_some() {
            let keep = ["zone".to_string(), "cpu".to_string()];
            for (keep, stop_after) in [(None, usize::MAX), (Some(&keep[..]), 1)] {
                assert_eq!(
                    node_oracle::with_reader(bytes, keep, stop_after),
                    node_oracle::with_serde(bytes, keep, stop_after),
                );
            }
        }
    }
});
