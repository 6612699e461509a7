//! `make bench`: the policy's cost per admission over generated clusters,
//! measured through the real `.wasm` in the waPC host.
//!
//! For each cluster size it times, after a warm-up, many `validate` calls per
//! pod case, and a floor in the same run: a bench-only guest function that
//! makes the same node query and only validates the answer as JSON. Reported
//! as medians, spread (p10–p90) and ratios, which survive a noisy machine
//! better than absolute times.
//!
//! Usage: kwbench BENCH_GUEST.wasm [SHIPPED_POLICY.wasm] [--sizes 10,100,1000,10000]
//!                [--seconds S per case] [--cases 0,a,b,c,f,v,d,g,e]

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use kwrun::{CallbackRequest, Exchange, Policy, Response, Session, clustergen};
use serde_json::{Value, json};

const SELECTOR: &str = "katacontainers.io/kata-runtime=true";
const SEED: u64 = 0x6b61_7461;

fn runtime_class_request() -> CallbackRequest {
    CallbackRequest::KubernetesGetResource {
        api_version: "node.k8s.io/v1".into(),
        kind: "RuntimeClass".into(),
        name: "kata".into(),
        namespace: None,
        disable_cache: false,
        field_masks: None,
    }
}

fn nodes_request() -> CallbackRequest {
    CallbackRequest::KubernetesListResourceAll {
        api_version: "v1".into(),
        kind: "Node".into(),
        label_selector: Some(SELECTOR.into()),
        field_selector: None,
        field_masks: Some(
            ["spec.taints", "spec.unschedulable", "status.allocatable"]
                .map(String::from)
                .into(),
        ),
    }
}

const RUNTIME_CLASS: &str = r#"{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"kata"},"handler":"kata","overhead":{"podFixed":{"cpu":"250m","memory":"160Mi"}},"scheduling":{"nodeSelector":{"katacontainers.io/kata-runtime":"true"}}}"#;

/// Which host calls a case makes: the session must answer exactly those.
#[derive(Clone, Copy, PartialEq)]
enum Calls {
    None,
    RuntimeClassAndNodes,
    NodesOnly,
    /// The RuntimeClass, then the middle node read by name (pinned pods).
    RuntimeClassAndMiddleNode,
    /// The RuntimeClass, the pod's claim and its volume by name, then the nodes.
    RuntimeClassClaimAndNodes,
}

/// A StatefulSet claim bound to a zonal EBS disk, and its PersistentVolume,
/// as policy-server answers the policy's masked reads (metadata whole,
/// `managedFields` emptied; spec and status pruned to the masks).
const CLAIM: &str = r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","namespace":"default","uid":"3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10","resourceVersion":"48151623","creationTimestamp":"2026-11-02T10:21:07Z","labels":{"app":"web"},"annotations":{"pv.kubernetes.io/bind-completed":"yes","pv.kubernetes.io/bound-by-controller":"yes","volume.beta.kubernetes.io/storage-provisioner":"ebs.csi.aws.com","volume.kubernetes.io/selected-node":"ip-10-0-1-17.eu-west-1.compute.internal","volume.kubernetes.io/storage-provisioner":"ebs.csi.aws.com"},"finalizers":["kubernetes.io/pvc-protection"]},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"20Gi"}},"storageClassName":"gp3","volumeMode":"Filesystem","volumeName":"pvc-3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10"},"status":{"phase":"Bound"}}"#;
const VOLUME: &str = r#"{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pvc-3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10","uid":"f0e4a1b2-7c55-4d2e-8b0a-2d9e6c1f3a44","resourceVersion":"48151620","creationTimestamp":"2026-11-02T10:21:09Z","labels":{"topology.kubernetes.io/zone":"eu-west-1b"},"annotations":{"pv.kubernetes.io/provisioned-by":"ebs.csi.aws.com","volume.kubernetes.io/provisioner-deletion-secret-name":"","volume.kubernetes.io/provisioner-deletion-secret-namespace":""},"finalizers":["kubernetes.io/pv-protection","external-attacher/ebs-csi-aws-com"]},"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"20Gi"},"claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data-web-0","namespace":"default","resourceVersion":"48151598","uid":"3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10"},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["eu-west-1b"]}]}]}},"storageClassName":"gp3","volumeMode":"Filesystem"},"status":{"phase":"Bound"}}"#;

/// The policy's field masks for claims and volumes (`src/cluster.rs`): a
/// difference fails the replay, and so the case.
const PVC_MASKS: [&str; 8] = [
    "spec.accessModes",
    "spec.resources",
    "spec.selector",
    "spec.storageClassName",
    "spec.volumeAttributesClassName",
    "spec.volumeMode",
    "spec.volumeName",
    "status.phase",
];
const PV_MASKS: [&str; 8] = [
    "spec.accessModes",
    "spec.capacity",
    "spec.claimRef",
    "spec.nodeAffinity",
    "spec.storageClassName",
    "spec.volumeAttributesClassName",
    "spec.volumeMode",
    "status.phase",
];

fn object_request(
    kind: &str,
    namespace: Option<&str>,
    name: &str,
    masks: &[&str],
) -> CallbackRequest {
    CallbackRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.map(String::from),
        disable_cache: false,
        field_masks: Some(masks.iter().map(|m| m.to_string()).collect()),
    }
}

/// What the host answers from, for one cluster size.
struct Answers<'a> {
    /// The masked NodeList.
    nodes: &'a str,
    /// The middle node, by name, and its masked JSON.
    middle: (&'a str, &'a str),
    /// The policy-server cost model: the same objects, parsed once, cloned
    /// and serialized on every call (list, middle node).
    model: Option<(Objects, Objects)>,
}

/// Parsed Nodes, shared by every session of a run.
type Objects = Arc<Vec<Value>>;

fn node_request(name: &str) -> CallbackRequest {
    CallbackRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: name.into(),
        namespace: None,
        disable_cache: false,
        field_masks: Some(
            ["spec.taints", "spec.unschedulable", "status.allocatable"]
                .map(String::from)
                .into(),
        ),
    }
}

struct Case {
    id: &'static str,
    what: &'static str,
    pod_spec: Value,
    calls: Calls,
    /// The decision the case must produce, so that a broken fixture is not
    /// silently measured as an error path.
    expect: &'static str,
}

fn containers() -> Value {
    json!([{"name": "app", "image": "registry.example.com/app:v1", "resources": {"requests": {"cpu": "100m"}}}])
}

fn cases(size: usize) -> Vec<Case> {
    let last = clustergen::node_name(size - 1);
    let middle = clustergen::node_name(size / 2);
    let tolerate_all = json!([{"operator": "Exists"}]);
    vec![
        Case {
            id: "0",
            what: "already names a runtimeClassName (skip)",
            pod_spec: json!({"containers": containers(), "runtimeClassName": "gvisor"}),
            calls: Calls::None,
            expect: "unchanged",
        },
        Case {
            id: "k",
            what: "mounts /var/run/docker.sock: Kata cannot run it (skip)",
            pod_spec: json!({"containers": [{"name": "agent", "image": "registry.example.com/agent:v1",
                "resources": {"requests": {"cpu": "100m"}},
                "volumeMounts": [{"name": "docker", "mountPath": "/var/run/docker.sock"}]}],
                "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]}),
            calls: Calls::None,
            expect: "unchanged",
        },
        Case {
            id: "a",
            what: "plain pod, fits most nodes",
            pod_spec: json!({"containers": containers()}),
            calls: Calls::RuntimeClassAndNodes,
            expect: "mutated",
        },
        Case {
            id: "b",
            what: "fits only the last node",
            pod_spec: json!({"containers": containers(), "nodeSelector": {"kubernetes.io/hostname": last},
                             "tolerations": tolerate_all}),
            calls: Calls::RuntimeClassAndNodes,
            expect: "mutated",
        },
        Case {
            id: "c",
            what: "fits no node (full diagnosis)",
            pod_spec: json!({"containers": containers(), "nodeSelector": {"topology.kubernetes.io/zone": "eu-west-1z"}}),
            calls: Calls::RuntimeClassAndNodes,
            expect: "unchanged",
        },
        Case {
            id: "f",
            what: "fits no node, on resources only (8 GPUs, every node checked to the end)",
            pod_spec: json!({"containers": [{"name": "train", "image": "registry.example.com/train:v1",
                "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"nvidia.com/pgpu": "8"}}}],
                "tolerations": tolerate_all}),
            calls: Calls::RuntimeClassAndNodes,
            expect: "unchanged",
        },
        Case {
            id: "v",
            what: "StatefulSet pod, one claim bound to a zonal disk (claim and volume read by name)",
            pod_spec: json!({"containers": containers(),
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]}),
            calls: Calls::RuntimeClassClaimAndNodes,
            expect: "mutated",
        },
        Case {
            id: "d",
            what: "DaemonSet pod pinned by matchFields (middle node, read by name)",
            pod_spec: json!({"containers": containers(), "tolerations": tolerate_all,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
                    [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [middle]}]}]}}}}),
            calls: Calls::RuntimeClassAndMiddleNode,
            expect: "mutated",
        },
        Case {
            id: "g",
            what: "DaemonSet-like pod pinned to 9 nodes from the middle on (over the cap of 8: lists)",
            pod_spec: json!({"containers": containers(), "tolerations": tolerate_all,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
                    (0..9).map(|k| json!({"matchFields": [{"key": "metadata.name", "operator": "In",
                        "values": [clustergen::node_name(size / 2 + k)]}]})).collect::<Vec<_>>()}}}}),
            calls: Calls::RuntimeClassAndNodes,
            expect: "mutated",
        },
        Case {
            id: "e",
            what: "bound by nodeName (middle node, read by name)",
            pod_spec: json!({"containers": containers(), "nodeName": middle, "tolerations": tolerate_all}),
            calls: Calls::RuntimeClassAndMiddleNode,
            expect: "mutated",
        },
    ]
}

fn validate_payload(pod_spec: &Value) -> Vec<u8> {
    let request = json!({
        "uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE", "namespace": "default", "name": "bench",
        "userInfo": {"username": "bench"},
        "object": {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "bench", "namespace": "default", "labels": {"app": "bench"}},
                   "spec": pod_spec},
    });
    serde_json::to_vec(&json!({"request": request, "settings": {}})).unwrap_or_default()
}

fn session(calls: Calls, answers: &Answers) -> Session {
    let nodes = answers.nodes;
    let list_answer = || match &answers.model {
        Some((list, _)) => Response::Serialized {
            objects: list.clone(),
            list: true,
        },
        None => Response::Success {
            payload: nodes.to_string(),
        },
    };
    let middle_answer = || match &answers.model {
        Some((_, middle)) => Response::Serialized {
            objects: middle.clone(),
            list: false,
        },
        None => Response::Success {
            payload: answers.middle.1.to_string(),
        },
    };
    let success = |payload: &str| Response::Success {
        payload: payload.to_string(),
    };
    // Under the model, objects read by name are cloned and serialized too.
    let object = |text: &str| match &answers.model {
        Some(_) => Response::Serialized {
            objects: Arc::new(vec![serde_json::from_str(text).unwrap_or_default()]),
            list: false,
        },
        None => success(text),
    };
    let runtime_class = || Exchange {
        request: runtime_class_request(),
        response: success(RUNTIME_CLASS),
    };
    // The access questions, then the node list: every case that lists.
    let listing = || {
        let access = |verb: &str| Exchange {
            request: CallbackRequest::default_nodes_access(verb),
            response: success(r#"{"allowed":true}"#),
        };
        let list = Exchange {
            request: nodes_request(),
            response: list_answer(),
        };
        [access("list"), access("watch"), list]
    };
    let exchanges: Vec<Exchange> = match calls {
        Calls::None => vec![],
        Calls::RuntimeClassAndNodes => std::iter::once(runtime_class()).chain(listing()).collect(),
        Calls::RuntimeClassClaimAndNodes => [
            runtime_class(),
            Exchange {
                request: object_request(
                    "PersistentVolumeClaim",
                    Some("default"),
                    "data-web-0",
                    &PVC_MASKS,
                ),
                response: object(CLAIM),
            },
            Exchange {
                request: object_request(
                    "PersistentVolume",
                    None,
                    "pvc-3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10",
                    &PV_MASKS,
                ),
                response: object(VOLUME),
            },
        ]
        .into_iter()
        .chain(listing())
        .collect(),
        Calls::NodesOnly => vec![Exchange {
            request: nodes_request(),
            response: list_answer(),
        }],
        Calls::RuntimeClassAndMiddleNode => vec![
            runtime_class(),
            Exchange {
                request: node_request(answers.middle.0),
                response: middle_answer(),
            },
        ],
    };
    Session::from_exchanges(exchanges)
}

struct Stats {
    median: Duration,
    p10: Duration,
    p90: Duration,
    runs: usize,
}

/// Times `op` on a fresh instance: warm-up, then until `budget` is spent
/// (at least 15, at most 400 runs). The session is built outside the timed
/// region; the host's copy of the answer into the guest is inside it.
fn measure(
    policy: &Policy,
    op: &str,
    payload: &[u8],
    calls: Calls,
    answers: &Answers,
    budget: Duration,
) -> Result<(Stats, Vec<u8>)> {
    let mut last = Vec::new();
    for _ in 0..3 {
        last = policy.call_raw(op, payload, session(calls, answers))?;
    }
    let mut times = Vec::new();
    let started = Instant::now();
    while times.len() < 15 || (started.elapsed() < budget && times.len() < 400) {
        let s = session(calls, answers);
        let t = Instant::now();
        last = policy.call_raw(op, payload, s)?;
        times.push(t.elapsed());
    }
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q).round() as usize];
    Ok((
        Stats {
            median: at(0.5),
            p10: at(0.1),
            p90: at(0.9),
            runs: times.len(),
        },
        last,
    ))
}

fn memory_mib(policy: &Policy) -> Result<f64> {
    let raw = policy.call_raw("bench_memory_size", b"", Session::none())?;
    let bytes: f64 = String::from_utf8_lossy(&raw)
        .parse()
        .context("memory size")?;
    Ok(bytes / (1024.0 * 1024.0))
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut sizes = vec![10, 100, 1_000, 10_000];
    let mut seconds = 1.5;
    let mut only: Option<Vec<String>> = None;
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sizes" => {
                sizes = args
                    .next()
                    .context("--sizes needs a value")?
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()?
            }
            "--seconds" => seconds = args.next().context("--seconds needs a value")?.parse()?,
            "--cases" => {
                only = Some(
                    args.next()
                        .context("--cases needs a value")?
                        .split(',')
                        .map(String::from)
                        .collect(),
                )
            }
            _ => positional.push(arg),
        }
    }
    let Some(guest_path) = positional.first() else {
        bail!(
            "usage: kwbench BENCH_GUEST.wasm [SHIPPED_POLICY.wasm] [--sizes 10,100] [--seconds S]"
        );
    };
    let guest = std::fs::read(guest_path).with_context(|| format!("read {guest_path}"))?;
    let budget = Duration::from_secs_f64(seconds);

    println!(
        "| nodes | case | median µs | p10–p90 µs | runs | × floor | × skip (0) | guest memory MiB |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    let mut summary = Vec::new();
    let mut model_summary: Vec<(usize, &str, Duration, Duration)> = Vec::new();
    for &size in &sizes {
        let masked = clustergen::node_list(size, true, SEED);
        let unmasked = clustergen::node_list(size, false, SEED);
        let middle_name = clustergen::node_name(size / 2);
        let list: Value = serde_json::from_str(&masked)?;
        let middle_json = list["items"]
            .as_array()
            .and_then(|items| items.get(size / 2))
            .context("the middle node")?
            .to_string();
        let answers = Answers {
            nodes: &masked,
            middle: (&middle_name, &middle_json),
            model: None,
        };
        let unmasked_answers = Answers {
            nodes: &unmasked,
            middle: answers.middle,
            model: None,
        };
        let floor_payload = validate_payload(&json!({"containers": containers()}));
        let policy = Policy::from_bytes(&guest)?;
        let (floor, _) = measure(
            &policy,
            "bench_floor",
            &floor_payload,
            Calls::NodesOnly,
            &answers,
            budget,
        )?;
        let policy = Policy::from_bytes(&guest)?;
        let (transfer, _) = measure(
            &policy,
            "bench_transfer",
            &floor_payload,
            Calls::NodesOnly,
            &answers,
            budget,
        )?;
        let policy = Policy::from_bytes(&guest)?;
        let (floor_unmasked, _) = measure(
            &policy,
            "bench_floor",
            &floor_payload,
            Calls::NodesOnly,
            &unmasked_answers,
            budget,
        )?;
        println!(
            "| {size} | floor: same query, answer only validated as JSON | {:.0} | {:.0}–{:.0} | {} | 1.00 | | |",
            us(floor.median),
            us(floor.p10),
            us(floor.p90),
            floor.runs
        );
        println!(
            "| {size} | host transfer only: the query and the copy of its answer | {:.0} | {:.0}–{:.0} | {} | {:.2} | | |",
            us(transfer.median),
            us(transfer.p10),
            us(transfer.p90),
            transfer.runs,
            transfer.median.as_secs_f64() / floor.median.as_secs_f64()
        );
        let mut skip = None;
        for case in cases(size)
            .into_iter()
            .filter(|c| only.as_ref().is_none_or(|o| o.iter().any(|id| id == c.id)))
        {
            let policy = Policy::from_bytes(&guest)?;
            let payload = validate_payload(&case.pod_spec);
            let (stats, response) =
                measure(&policy, "validate", &payload, case.calls, &answers, budget)?;
            let response: Value = serde_json::from_slice(&response)?;
            let decision = response["audit_annotations"]["decision"]
                .as_str()
                .unwrap_or("?");
            if decision != case.expect && std::env::var_os("KWBENCH_NO_CHECK").is_none() {
                bail!(
                    "case ({}) at {size} nodes decided {decision}, expected {}: {response}",
                    case.id,
                    case.expect
                );
            }
            let memory = memory_mib(&policy)?;
            let skip_median = *skip.get_or_insert(stats.median);
            println!(
                "| {size} | ({}) {} | {:.0} | {:.0}–{:.0} | {} | {:.2} | {:.1} | {:.1} |",
                case.id,
                case.what,
                us(stats.median),
                us(stats.p10),
                us(stats.p90),
                stats.runs,
                stats.median.as_secs_f64() / floor.median.as_secs_f64(),
                stats.median.as_secs_f64() / skip_median.as_secs_f64(),
                memory,
            );
            summary.push((size, case.id, stats.median, floor.median, memory));
        }
        println!(
            "| {size} | floor, unmasked Nodes (no field masks) | {:.0} | {:.0}–{:.0} | {} | {:.2} | | |",
            us(floor_unmasked.median),
            us(floor_unmasked.p10),
            us(floor_unmasked.p90),
            floor_unmasked.runs,
            floor_unmasked.median.as_secs_f64() / floor.median.as_secs_f64()
        );
        println!(
            "| {size} | payload bytes: masked {} / unmasked {} ({:.1}×) | | | | | | |",
            masked.len(),
            unmasked.len(),
            unmasked.len() as f64 / masked.len() as f64
        );

        // The same cases with policy-server's host cost: the cached objects
        // cloned and the answer serialized on every call, inside the timing.
        let items: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
        let middle_item = items.get(size / 2).cloned().into_iter().collect();
        let modelled = Answers {
            model: Some((Arc::new(items), Arc::new(middle_item))),
            ..answers
        };
        let policy = Policy::from_bytes(&guest)?;
        let (model_floor, _) = measure(
            &policy,
            "bench_floor",
            &floor_payload,
            Calls::NodesOnly,
            &modelled,
            budget,
        )?;
        println!(
            "| {size} | [policy-server model] floor: same query, answer only validated as JSON | {:.0} | {:.0}–{:.0} | {} | 1.00 | | |",
            us(model_floor.median),
            us(model_floor.p10),
            us(model_floor.p90),
            model_floor.runs
        );
        let mut skip = None;
        for case in cases(size)
            .into_iter()
            .filter(|c| only.as_ref().is_none_or(|o| o.iter().any(|id| id == c.id)))
        {
            let policy = Policy::from_bytes(&guest)?;
            let payload = validate_payload(&case.pod_spec);
            let (stats, _) = measure(&policy, "validate", &payload, case.calls, &modelled, budget)?;
            let skip_median = *skip.get_or_insert(stats.median);
            println!(
                "| {size} | [policy-server model] ({}) {} | {:.0} | {:.0}–{:.0} | {} | {:.2} | {:.1} | |",
                case.id,
                case.what,
                us(stats.median),
                us(stats.p10),
                us(stats.p90),
                stats.runs,
                stats.median.as_secs_f64() / model_floor.median.as_secs_f64(),
                stats.median.as_secs_f64() / skip_median.as_secs_f64(),
            );
            model_summary.push((size, case.id, stats.median, model_floor.median));
        }
    }

    let find = |size: usize, id: &str| summary.iter().find(|s| s.0 == size && s.1 == id);
    println!();
    for size in [1_000, 10_000] {
        for id in ["c", "f"] {
            if let Some((_, _, t, floor, _)) = find(size, id) {
                println!(
                    "- ({id}) / floor at {size} nodes: {:.2} (target ≤ 1.6)",
                    t.as_secs_f64() / floor.as_secs_f64()
                );
            }
        }
    }
    if let (Some(a), Some(z)) = (find(1_000, "a"), find(1_000, "0")) {
        println!(
            "- (a) / (0) at 1000 nodes: {:.2} (target ≤ 3)",
            a.2.as_secs_f64() / z.2.as_secs_f64()
        );
    }
    for size in [1_000, 10_000] {
        if let (Some(v), Some(a)) = (find(size, "v"), find(size, "a")) {
            println!(
                "- (v) / (a) at {size} nodes: {:.2} (target ≤ 1.2 at 1000)",
                v.2.as_secs_f64() / a.2.as_secs_f64()
            );
        }
    }
    if let (Some(a), Some(c)) = (find(10_000, "a"), find(10_000, "c")) {
        println!(
            "- (a) / (c) at 10000 nodes: {:.2} (target well under 0.5)",
            a.2.as_secs_f64() / c.2.as_secs_f64()
        );
    }
    if let (Some(c1), Some(c10)) = (find(1_000, "c"), find(10_000, "c")) {
        println!(
            "- (c) 10000 / 1000 nodes: {:.2} (target ≤ 10.5)",
            c10.2.as_secs_f64() / c1.2.as_secs_f64()
        );
    }
    for id in ["c", "f"] {
        if let Some((_, _, _, _, memory)) = find(10_000, id) {
            let payload =
                clustergen::node_list(10_000, true, SEED).len() as f64 / (1024.0 * 1024.0);
            println!(
                "- guest memory after ({id}) at 10000 nodes: {memory:.1} MiB; payload {payload:.1} MiB + 4 MiB = {:.1} MiB",
                payload + 4.0
            );
        }
    }
    let model = |size: usize, id: &str| {
        model_summary
            .iter()
            .find(|s| s.0 == size && s.1 == id)
            .map(|s| (s.2, s.3))
    };
    println!();
    println!("Under the policy-server cost model:");
    for size in [1_000, 10_000] {
        for id in ["c", "f"] {
            if let Some((t, floor)) = model(size, id) {
                println!(
                    "- ({id}) / floor at {size} nodes: {:.2} (target ≤ 1.1); {:.1} ms",
                    t.as_secs_f64() / floor.as_secs_f64(),
                    t.as_secs_f64() * 1e3
                );
            }
        }
    }
    for size in [1_000, 10_000] {
        if let (Some((v, _)), Some((a, _))) = (model(size, "v"), model(size, "a")) {
            println!(
                "- (v) / (a) at {size} nodes: {:.2} (target ≤ 1.2 at 1000)",
                v.as_secs_f64() / a.as_secs_f64()
            );
        }
    }
    for id in ["d", "e"] {
        if let (Some((t, _)), Some((z, _))) = (model(10_000, id), model(10_000, "0")) {
            println!(
                "- ({id}) / skip (0) at 10000 nodes: {:.2} (target ≤ 3)",
                t.as_secs_f64() / z.as_secs_f64()
            );
        }
        if let (Some((big, _)), Some((small, _))) = (model(10_000, id), model(10, id)) {
            println!(
                "- ({id}) at 10000 / at 10 nodes: {:.2} (target ≤ 2)",
                big.as_secs_f64() / small.as_secs_f64()
            );
        }
    }
    if let (Some((listed, _)), Some((named, _))) = (model(1_000, "g"), model(1_000, "d")) {
        println!(
            "- a DaemonSet rollout over 1000 kata nodes (1000 pinned pods): {:.2} s of host + guest time when each lists (g), {:.3} s when each reads its node (d)",
            listed.as_secs_f64() * 1e3,
            named.as_secs_f64() * 1e3
        );
    }
    if let Some(shipped) = positional.get(1) {
        let bytes = std::fs::read(shipped).with_context(|| format!("read {shipped}"))?;
        let mut compile: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                Policy::from_bytes(&bytes).map(|_| t.elapsed())
            })
            .collect::<Result<_>>()?;
        compile.sort();
        println!(
            "- {shipped}: {} bytes ({:.0} KiB); compile + instantiate in the host: {:.0} ms (median of 5)",
            bytes.len(),
            bytes.len() as f64 / 1024.0,
            compile[2].as_secs_f64() * 1e3
        );
    }
    Ok(())
}
