//! The volume lookups' answers as fuzz input, split at NUL bytes into a
//! claim, a volume, a storage class, the volume list and the class list
//! (every read of a kind gets that part), for fixed pods whose claims take
//! each path: a bound or unbound claim, an ephemeral volume of a named pod,
//! one without a class.
#![no_main]

use fuzz_support::{RUNTIME_CLASS, check_response, fake_cluster};
use kata_runtime_policy::admission::validate;
use libfuzzer_sys::fuzz_target;

const CLAIM: &str = r#"{"request":{"uid":"1","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"default","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}],"volumes":[{"name":"data","persistentVolumeClaim":{"claimName":"data-web-0"}},{"name":"logs","persistentVolumeClaim":{"claimName":"logs-web-0"}}]}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}}"#;

const EPHEMERAL: &str = r#"{"request":{"uid":"2","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"default","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"scratch","namespace":"default"},"spec":{"containers":[{"name":"c","image":"nginx"}],"volumes":[{"name":"a","ephemeral":{"volumeClaimTemplate":{"spec":{"storageClassName":"zonal","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}}},{"name":"b","ephemeral":{"volumeClaimTemplate":{"metadata":{"annotations":{"volume.beta.kubernetes.io/storage-class":"x"}},"spec":{"selector":{"matchExpressions":[{"key":"tier","operator":"In","values":["fast"]}]}}}}}]}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server","noFeasibleNode":"reject"}}"#;

const UNNAMED: &str = r#"{"request":{"uid":"3","kind":{"group":"","version":"v1","kind":"Pod"},"operation":"CREATE","namespace":"default","object":{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"job-"},"spec":{"containers":[{"name":"c","image":"nginx"}],"volumes":[{"name":"tmp","ephemeral":{"volumeClaimTemplate":{"spec":{"accessModes":["ReadWriteOnce"]}}}}]}}},"settings":{"runtimeClassName":"kata","policyServerServiceAccount":"system:serviceaccount:kubewarden:policy-server"}}"#;

fuzz_target!(|data: &[u8]| {
    let volumes: Vec<&[u8]> = data.split(|&b| b == 0).collect();
    let cluster = fake_cluster(
        RUNTIME_CLASS.as_bytes(),
        fuzz_support::NODE_LIST.as_bytes(),
        &volumes,
    );
    for payload in [CLAIM, EPHEMERAL, UNNAMED] {
        check_response(&validate(payload.as_bytes(), &cluster), &volumes);
    }
});
