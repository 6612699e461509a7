//! `make bench`: the policy's cost per admission over generated clusters,
//! measured through the real `.wasm` in the waPC host.
//!
//! For each cluster size it times, after a warm-up, many `validate` calls per
//! pod case, each interleaved with a floor: a bench-only guest function that
//! makes the same node query (the same field masks) and only validates the
//! answer as JSON. Reported as medians, spread (p10–p90) and ratios of the
//! paired calls, which survive a noisy machine better than absolute times.
//! Every case runs twice: in replay (the host copies a ready answer) and
//! under the policy-server cost model (the host clones its cached nodes and
//! serializes them on every call).
//!
//! Usage: kwbench BENCH_GUEST.wasm [SHIPPED_POLICY.wasm] [--sizes 10,100,1000,10000]
//!                [--seconds S per case] [--cases 0,k,a,b,c,f,v,d,g,e,m,h,n,a2,a4,x2,x4,p1,p2,p3,r,A,C]
//!                [--modes replay,model] [--handler-check auto|required|off]
//!                [--masks plain|names] [--baseline OTHER_GUEST.wasm
//!                [--baseline-check auto|required|off] [--baseline-masks plain|names]
//!                [--baseline-annotate]] [--annotate] [--pod-sizes 1000,4000,16000]
//!                [--shape lean|realistic]
//!        kwbench nodes [--shape lean|realistic] [--count N] [--from I]
//!
//! `--shape` is the node shape of every case (`clustergen::Shape`): `lean`
//! (default; every earlier figure) or `realistic` (NFD-labelled EKS nodes
//! in pools, ~9 KB each). `kwbench nodes` prints nodes I..I+N of the bench's
//! cluster as a v1 List of whole Nodes as a client creates them (status
//! included, no uid or resourceVersion): what
//! `scripts/bench-policy-server.sh` creates with `SHAPE=realistic`.
//! `--handler-check` is the policy's `runtimeHandlerCheck` setting (the
//! node queries follow it: `off` asks no handler). `--baseline` times another
//! guest's run of each case interleaved with this one (a before/after of a
//! change); `--masks plain` / `--baseline-masks plain` answer the default
//! settings with the masks of a guest older than the handler check (its
//! cases about handlers are left out). `--annotate` / `--baseline-annotate`
//! set `annotateDecision: true` (the decision annotation on every admitted
//! pod): the same guest as its own baseline measures what it costs.
//! `--pod-sizes` times pod shapes a tenant may send (hostPath volumes ×
//! mounts, DRA claims × container claims, dangling mounts, many
//! containers, env and ports) at those element counts, against a pod of
//! emptyDir volumes of the same size, instead of the node cases.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use kwrun::clustergen::{self, Runtime, Shape, View};
use kwrun::{CallbackRequest, Exchange, Policy, Response, Session};
use serde_json::{Value, json};

#[path = "kwbench/pod_size.rs"]
mod pod_size;

/// Counts live heap bytes while [`COUNTING`] is set: the size of the
/// host-side cache of parsed nodes. Off, it costs one relaxed load.
struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static BLOCKS: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
            BLOCKS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
            BLOCKS.fetch_sub(1, Ordering::Relaxed);
        }
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            LIVE.fetch_add(
                new_size as isize - layout.size() as isize,
                Ordering::Relaxed,
            );
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// What `make` leaves allocated: the value, the heap bytes it holds and
/// in how many blocks (each one a `malloc` when the host clones it).
fn heap_bytes<T>(make: impl FnOnce() -> T) -> (T, isize, isize) {
    LIVE.store(0, Ordering::Relaxed);
    BLOCKS.store(0, Ordering::Relaxed);
    COUNTING.store(true, Ordering::Relaxed);
    let value = make();
    COUNTING.store(false, Ordering::Relaxed);
    (
        value,
        LIVE.load(Ordering::Relaxed),
        BLOCKS.load(Ordering::Relaxed),
    )
}

const SELECTOR: &str = "katacontainers.io/kata-runtime=true";
const SEED: u64 = 0x6b61_7461;
/// The handler of the bench's RuntimeClass `kata` (a class may name another
/// handler than itself): one of kata-deploy's, on every node of the
/// standard cluster.
const HANDLER: &str = "kata-qemu";
/// Nodes at the start of the list that lack the handler in case (h): read
/// by name before the first that has it (fewer than the 3 misses after
/// which the list with the handlers answers).
const MISSING_HEAD: usize = 2;

fn runtime_class_request(name: &str) -> CallbackRequest {
    CallbackRequest::KubernetesGetResource {
        api_version: "node.k8s.io/v1".into(),
        kind: "RuntimeClass".into(),
        name: name.into(),
        namespace: None,
        disable_cache: true,
        field_masks: None,
    }
}

fn masks(view: View) -> Option<std::collections::BTreeSet<String>> {
    view.field_masks()
        .map(|masks| masks.iter().map(|m| m.to_string()).collect())
}

fn nodes_request(view: View) -> CallbackRequest {
    CallbackRequest::KubernetesListResourceAll {
        api_version: "v1".into(),
        kind: "Node".into(),
        label_selector: Some(SELECTOR.into()),
        field_selector: None,
        field_masks: masks(view),
    }
}

/// The policy's one pod query (`cluster::pods_request`).
fn pods_request() -> CallbackRequest {
    CallbackRequest::KubernetesListResourceAll {
        api_version: "v1".into(),
        kind: "Pod".into(),
        label_selector: None,
        field_selector: Some("spec.nodeName!=,status.phase!=Succeeded,status.phase!=Failed".into()),
        field_masks: Some(
            [
                "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution",
                "spec.nodeName",
            ]
            .iter()
            .map(|m| m.to_string())
            .collect(),
        ),
    }
}

/// `count` existing pods as policy-server masks them (metadata whole, the
/// node): 20 apps in Deployments' shapes, as `PODS=N
/// scripts/bench-policy-server.sh` creates them; app-7's pods (one in 20)
/// run on `host`, the others elsewhere. Built once per count and host.
fn existing_pods(count: usize, host: &str) -> Objects {
    thread_local! {
        static BUILT: std::cell::RefCell<HashMap<(usize, String), Objects>> =
            std::cell::RefCell::default();
    }
    BUILT.with(|built| {
        (built.borrow_mut().entry((count, host.to_string())))
            .or_insert_with(|| {
                Arc::new(
                    (0..count)
                        .map(|i| {
                            let app = format!("app-{}", i % 20);
                            let node = match i % 20 {
                                7 => host.to_string(),
                                _ => format!("elsewhere-{}", i % 500),
                            };
                            json!({"apiVersion": "v1", "kind": "Pod",
                              "metadata": {"name": format!("pod-{i}"), "namespace": "default",
                                "uid": format!("6f1c2a7e-0000-4000-8000-{i:012}"),
                                "resourceVersion": format!("{}", 100_000 + i),
                                "creationTimestamp": "2026-12-01T10:00:00Z",
                                "labels": {"app": app, "app.kubernetes.io/name": app,
                                  "app.kubernetes.io/part-of": "shop", "app.kubernetes.io/version": "1.4.2",
                                  "pod-template-hash": "7c9d8f6b5d"},
                                "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-12-01T10:00:00Z",
                                  "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                                  "name": format!("{app}-7c9d8f6b5d"), "uid": "0c7d6e2a-5b1f-4c0e-9a57-1d0f3e2b8c41",
                                  "controller": true, "blockOwnerDeletion": true}]},
                              "spec": {"nodeName": node}})
                        })
                        .collect(),
                )
            })
            .clone()
    })
}

fn node_request(name: &str, view: View) -> CallbackRequest {
    CallbackRequest::KubernetesGetResource {
        api_version: "v1".into(),
        kind: "Node".into(),
        name: name.into(),
        namespace: None,
        disable_cache: true,
        field_masks: masks(view),
    }
}

/// kata-deploy-like: `scheduling.nodeSelector` on the kata label, the qemu
/// shim's overhead (kata-deploy 4.x), the handler [`HANDLER`].
fn runtime_class() -> String {
    kata_class(
        "kata",
        HANDLER,
        json!({"katacontainers.io/kata-runtime": "true"}),
    )
}

fn kata_class(name: &str, handler: &str, node_selector: Value) -> String {
    json!({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name},
           "handler": handler, "overhead": {"podFixed": {"cpu": "250m", "memory": "320Mi"}},
           "scheduling": {"nodeSelector": node_selector}})
    .to_string()
}

/// Classes tried before `kata` (`runtimeClassName`, then
/// `fallbackRuntimeClasses` ending with `kata`), none of which a node can
/// run the pod with: the cost of each class passed over.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Passed {
    /// Each selects a label no node has (a TEE class on nodes without the
    /// TEE): no candidate, every node diagnosed on the plain list.
    Scheduling(usize),
    /// Each names a handler no node reports (s390x's `kata-qemu-se`): every
    /// node a candidate, 3 read by name, then the list with the handlers
    /// and a full diagnosis, as in case (n).
    Handler(usize),
}

impl Passed {
    fn classes(self) -> Vec<String> {
        let n = match self {
            Passed::Scheduling(n) | Passed::Handler(n) => n,
        };
        (1..=n).map(|k| format!("pass-{k}")).collect()
    }

    fn runtime_class(self, name: &str) -> String {
        let kata = json!({"katacontainers.io/kata-runtime": "true"});
        match self {
            Passed::Scheduling(_) => kata_class(
                name,
                "kata-qemu-snp",
                json!({"katacontainers.io/kata-runtime": "true", "example.com/tee": "snp"}),
            ),
            Passed::Handler(_) => kata_class(name, "kata-qemu-se", kata),
        }
    }

    /// The guest's settings with these classes first, `kata` last.
    fn settings(self, base: &Value) -> Value {
        let mut settings = base.clone();
        let mut classes = self.classes();
        classes.push("kata".into());
        settings["runtimeClassName"] = json!(classes[0]);
        settings["fallbackRuntimeClasses"] = json!(classes[1..]);
        settings
    }

    /// What the assignment says of the first class passed over.
    fn says(size: usize) -> String {
        format!(
            "runtimeClassName \\\"kata\\\" assigned (pass-1: 0/{size} kata nodes can run this pod: "
        )
    }
}

/// Which host calls a case makes: the session must answer exactly those.
#[derive(Clone, Copy, PartialEq)]
enum Calls {
    None,
    RuntimeClassAndNodes,
    NodesOnly,
    /// The RuntimeClass, then the middle node read by name (pinned pods).
    RuntimeClassAndMiddleNode,
    /// The RuntimeClass alone, which does not exist: one host call.
    MissingRuntimeClass,
    /// The RuntimeClass, the pod's claim and its volume by name, then the nodes.
    RuntimeClassClaimAndNodes,
    /// The classes passed over, each read when tried, then `kata`; one
    /// node list for them all.
    PassedThenNodes(Passed),
    /// The RuntimeClass, the pod list of this many pods (inter-pod
    /// affinity), the first candidate read by name for its labels (the
    /// matching pods run there), then the nodes.
    RuntimeClassPodsAndNodes(usize),
}

impl Calls {
    /// Whether the case lists the nodes.
    fn lists(self) -> bool {
        matches!(
            self,
            Calls::RuntimeClassAndNodes
                | Calls::RuntimeClassClaimAndNodes
                | Calls::PassedThenNodes(_)
                | Calls::RuntimeClassPodsAndNodes(_)
        )
    }

    /// The guest's settings for the case.
    fn settings(self, base: &Value) -> Value {
        match self {
            Calls::PassedThenNodes(passed) => passed.settings(base),
            _ => base.clone(),
        }
    }
}

/// A StatefulSet claim bound to a zonal EBS disk, and its PersistentVolume,
/// as policy-server answers the policy's masked reads (metadata whole,
/// `managedFields` emptied; spec and status pruned to the masks).
const CLAIM: &str = r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data-web-0","namespace":"default","uid":"3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10","resourceVersion":"48151623","creationTimestamp":"2026-11-02T10:21:07Z","labels":{"app":"web"},"annotations":{"pv.kubernetes.io/bind-completed":"yes","pv.kubernetes.io/bound-by-controller":"yes","volume.beta.kubernetes.io/storage-provisioner":"ebs.csi.aws.com","volume.kubernetes.io/selected-node":"ip-10-0-1-17.eu-west-1.compute.internal","volume.kubernetes.io/storage-provisioner":"ebs.csi.aws.com"},"finalizers":["kubernetes.io/pvc-protection"]},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"20Gi"}},"storageClassName":"gp3","volumeMode":"Filesystem","volumeName":"pvc-3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10"},"status":{"phase":"Bound"}}"#;
const VOLUME: &str = r#"{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pvc-3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10","uid":"f0e4a1b2-7c55-4d2e-8b0a-2d9e6c1f3a44","resourceVersion":"48151620","creationTimestamp":"2026-11-02T10:21:09Z","labels":{"topology.kubernetes.io/zone":"eu-west-1b"},"annotations":{"pv.kubernetes.io/provisioned-by":"ebs.csi.aws.com","volume.kubernetes.io/provisioner-deletion-secret-name":"","volume.kubernetes.io/provisioner-deletion-secret-namespace":""},"finalizers":["kubernetes.io/pv-protection","external-attacher/ebs-csi-aws-com"]},"spec":{"accessModes":["ReadWriteOnce"],"capacity":{"storage":"20Gi"},"claimRef":{"apiVersion":"v1","kind":"PersistentVolumeClaim","name":"data-web-0","namespace":"default","resourceVersion":"48151598","uid":"3c1d5e2a-0c0e-4f7b-9d61-5b0f2f7f6a10"},"nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"topology.kubernetes.io/zone","operator":"In","values":["eu-west-1b"]}]}]}},"storageClassName":"gp3","volumeMode":"Filesystem"},"status":{"phase":"Bound"}}"#;

/// The policy's field masks for claims and volumes (`src/cluster/`): a
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
        disable_cache: true,
        field_masks: Some(masks.iter().map(|m| m.to_string()).collect()),
    }
}

/// The cluster a case runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Nodes {
    /// Every node runs kata-deploy's shims.
    KataDeploy,
    /// … but the first [`MISSING_HEAD`] nodes' containerd did not load them.
    MissingHead,
    /// No node's containerd loaded them (kata-deploy on k3s).
    ContainerdOnly,
}

impl Nodes {
    fn runtime(self) -> impl Fn(usize) -> Runtime {
        move |i| match self {
            Nodes::KataDeploy => Runtime::KataDeploy,
            Nodes::MissingHead if i >= MISSING_HEAD => Runtime::KataDeploy,
            Nodes::MissingHead | Nodes::ContainerdOnly => Runtime::ContainerdOnly,
        }
    }
}

/// Which node query a case makes, and what the host answers it with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Query {
    /// The query of a pod that needs no handler feature: the handlers'
    /// names (nothing of them with `runtimeHandlerCheck: off`).
    Pod,
    /// The query of a pod that needs a handler feature: whole entries.
    Features,
    /// The one-query design: the pod's query answered with whole entries,
    /// as if the policy asked for them for every pod.
    FeaturesForEveryPod,
}

/// The run's settings and the views they ask for.
#[derive(Clone, Copy)]
struct Config {
    check: &'static str,
    /// The view a pod that needs no feature asks for.
    pod_view: View,
    /// `annotateDecision: true`.
    annotate: bool,
}

impl Config {
    fn settings(&self) -> Value {
        // The two required settings (0.4.0), and the annotation written out:
        // its default changed with them.
        let mut settings = json!({
            "runtimeClassName": "kata",
            "policyServerServiceAccount": "system:serviceaccount:kubewarden:policy-server",
            "annotateDecision": self.annotate,
        });
        if self.check != "auto" {
            settings["runtimeHandlerCheck"] = json!(self.check);
        }
        settings
    }

    /// Whether the guest reads handlers at all.
    fn reads_handlers(&self) -> bool {
        self.pod_view != View::Plain
    }

    /// (asked, answered) for a query.
    fn views(&self, query: Query) -> (View, View) {
        match query {
            Query::Pod => (self.pod_view, self.pod_view),
            Query::Features if self.reads_handlers() => {
                (View::HandlerFeatures, View::HandlerFeatures)
            }
            Query::Features => (View::Plain, View::Plain),
            Query::FeaturesForEveryPod => (self.pod_view, View::HandlerFeatures),
        }
    }
}

/// One cluster under one view, in both host forms.
struct Answer {
    /// The NodeList text (replay).
    list: String,
    /// The middle node, by name, and its JSON.
    middle: (String, String),
    /// The policy-server cost model: the same objects, parsed once, cloned
    /// and serialized on every call (list, middle node).
    objects: Objects,
    middle_object: Objects,
    /// The same cluster without handlers (what `runtimeHandlerCheck: off`
    /// lists, and what the check lists before it reads the candidates by
    /// name), when this view has them: text and objects.
    plain: Option<(String, Objects)>,
    /// The nodes a guest may read by name as candidates: the first ones, a
    /// few from the middle, the last ones. Name, text, object.
    reads: Vec<(String, String, Objects)>,
}

/// Parsed Nodes, shared by every session of a run.
type Objects = Arc<Vec<Value>>;

impl Answer {
    fn new(shape: Shape, size: usize, nodes: Nodes, view: View) -> Answer {
        let items = clustergen::shaped_nodes(shape, size, view, SEED, nodes.runtime());
        let middle = items[size / 2].clone();
        let plain = (view != View::Plain).then(|| {
            let items = clustergen::shaped_nodes(shape, size, View::Plain, SEED, nodes.runtime());
            (
                clustergen::list_of(items.clone()).to_string(),
                Arc::new(items),
            )
        });
        let mut read: Vec<usize> = (0..16)
            .chain(size / 2..size / 2 + 12)
            .chain(size.saturating_sub(3)..size)
            .collect();
        read.retain(|&i| i < size);
        read.sort_unstable();
        read.dedup();
        let reads = read
            .into_iter()
            .map(|i| {
                let node = items[i].clone();
                (
                    clustergen::node_name(i),
                    node.to_string(),
                    Arc::new(vec![node]),
                )
            })
            .collect();
        Answer {
            list: clustergen::list_of(items.clone()).to_string(),
            middle: (clustergen::node_name(size / 2), middle.to_string()),
            objects: Arc::new(items),
            middle_object: Arc::new(vec![middle]),
            plain,
            reads,
        }
    }
}

/// The answers of one cluster size, built on first use.
struct Answers {
    shape: Shape,
    size: usize,
    built: HashMap<(Nodes, View), Answer>,
}

impl Answers {
    fn get(&mut self, nodes: Nodes, view: View) -> &Answer {
        let (shape, size) = (self.shape, self.size);
        self.built
            .entry((nodes, view))
            .or_insert_with(|| Answer::new(shape, size, nodes, view))
    }
}

struct Case {
    id: &'static str,
    what: &'static str,
    pod_spec: Value,
    calls: Calls,
    nodes: Nodes,
    query: Query,
    /// The decision the case must produce, so that a broken fixture is not
    /// silently measured as an error path.
    expect: &'static str,
    /// Text the response must contain (the reason the case is about).
    says: Option<String>,
    /// A case to time alongside this one, for a paired ratio.
    versus: Option<&'static str>,
}

impl Case {
    fn new(id: &'static str, what: &'static str, pod_spec: Value, calls: Calls) -> Case {
        Case {
            id,
            what,
            pod_spec,
            calls,
            nodes: Nodes::KataDeploy,
            query: Query::Pod,
            expect: "mutated",
            says: None,
            versus: None,
        }
    }

    fn expect(self, expect: &'static str) -> Case {
        Case { expect, ..self }
    }

    fn on(self, nodes: Nodes, query: Query) -> Case {
        Case {
            nodes,
            query,
            ..self
        }
    }

    fn versus(self, id: &'static str) -> Case {
        Case {
            versus: Some(id),
            ..self
        }
    }

    fn says(self, text: String) -> Case {
        Case {
            says: Some(text),
            ..self
        }
    }

    /// Whether the case is about the handler check (left out when the
    /// guest reads no handler).
    fn needs_handlers(&self) -> bool {
        self.nodes != Nodes::KataDeploy
            || self.query != Query::Pod
            || self.calls == Calls::PassedThenNodes(Passed::Handler(self.calls_passed()))
    }

    fn calls_passed(&self) -> usize {
        match self.calls {
            Calls::PassedThenNodes(Passed::Handler(n) | Passed::Scheduling(n)) => n,
            _ => 0,
        }
    }
}

fn containers() -> Value {
    json!([{"name": "app", "image": "registry.example.com/app:v1", "resources": {"requests": {"cpu": "100m"}}}])
}

fn cases(size: usize) -> Vec<Case> {
    let last = clustergen::node_name(size - 1);
    let middle = clustergen::node_name(size / 2);
    let tolerate_all = json!([{"operator": "Exists"}]);
    let plain = json!({"containers": containers()});
    let affine = json!({"containers": containers(), "affinity": {"podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "app-7"}}, "topologyKey": "kubernetes.io/hostname"}]}}});
    let no_zone = json!({"containers": containers(), "nodeSelector": {"topology.kubernetes.io/zone": "eu-west-1z"}});
    let not_reported = format!("do not report runtime handler \\\"{HANDLER}\\\"");
    use Calls::{RuntimeClassAndMiddleNode, RuntimeClassAndNodes, RuntimeClassClaimAndNodes};
    vec![
        Case::new("0", "already names a runtimeClassName (skip)",
            json!({"containers": containers(), "runtimeClassName": "gvisor"}), Calls::None)
            .expect("unchanged"),
        Case::new("k", "mounts /var/run/docker.sock: Kata cannot run it (skip)",
            json!({"containers": [{"name": "agent", "image": "registry.example.com/agent:v1",
                "resources": {"requests": {"cpu": "100m"}},
                "volumeMounts": [{"name": "docker", "mountPath": "/var/run/docker.sock"}]}],
                "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]}), Calls::None)
            .expect("unchanged"),
        Case::new("a", "plain pod, fits most nodes", plain.clone(), RuntimeClassAndNodes),
        Case::new("b", "fits only the last node",
            json!({"containers": containers(), "nodeSelector": {"kubernetes.io/hostname": last},
                   "tolerations": tolerate_all}), RuntimeClassAndNodes),
        Case::new("c", "fits no node (full diagnosis)", no_zone.clone(), RuntimeClassAndNodes)
            .expect("unchanged"),
        Case::new("f", "fits no node, on resources only (8 GPUs, every node checked to the end)",
            json!({"containers": [{"name": "train", "image": "registry.example.com/train:v1",
                "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"nvidia.com/pgpu": "8"}}}],
                "tolerations": tolerate_all}), RuntimeClassAndNodes)
            .expect("unchanged"),
        Case::new("v", "StatefulSet pod, one claim bound to a zonal disk (claim and volume read by name)",
            json!({"containers": containers(),
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}}]}),
            RuntimeClassClaimAndNodes),
        Case::new("d", "DaemonSet pod pinned by matchFields (middle node, read by name)",
            json!({"containers": containers(), "tolerations": tolerate_all,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
                    [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [middle]}]}]}}}}),
            RuntimeClassAndMiddleNode),
        Case::new("g", "DaemonSet-like pod pinned to 9 nodes from the middle on (over the cap of 8: lists)",
            json!({"containers": containers(), "tolerations": tolerate_all,
                "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms":
                    (0..9).map(|k| json!({"matchFields": [{"key": "metadata.name", "operator": "In",
                        "values": [clustergen::node_name(size / 2 + k)]}]})).collect::<Vec<_>>()}}}}),
            RuntimeClassAndNodes),
        Case::new("e", "bound by nodeName (middle node, read by name)",
            json!({"containers": containers(), "nodeName": middle, "tolerations": tolerate_all}),
            RuntimeClassAndMiddleNode),
        Case::new("m", "(e) where the RuntimeClass does not exist: one host call, nothing parsed",
            json!({"containers": containers(), "nodeName": middle, "tolerations": tolerate_all}),
            Calls::MissingRuntimeClass)
            .expect("unchanged"),
        Case::new("h", "every node passes the filters, the first 2 lack the handler (mutated, warns: 3 read by name)",
            json!({"containers": containers(), "tolerations": tolerate_all}), RuntimeClassAndNodes)
            .on(Nodes::MissingHead, Query::Pod)
            .says(format!("at least {MISSING_HEAD} kata node(s) that can take this pod {not_reported}")),
        Case::new("n", "no node reports the handler (k3s-like; every node passes the other filters: full diagnosis)",
            json!({"containers": containers(), "tolerations": tolerate_all}), RuntimeClassAndNodes)
            .on(Nodes::ContainerdOnly, Query::Pod)
            .expect("unchanged")
            .says(format!("0/{size} kata nodes can run this pod: {size} node(s) {not_reported}")),
        Case::new("a2", "(a) after 1 class passed over: it selects a TEE label no node has",
            plain.clone(), Calls::PassedThenNodes(Passed::Scheduling(1)))
            .says(Passed::says(size))
            .versus("a"),
        Case::new("a4", "(a) after 3 classes passed over: each selects a TEE label no node has",
            plain.clone(), Calls::PassedThenNodes(Passed::Scheduling(3)))
            .says(Passed::says(size))
            .versus("a"),
        Case::new("x2", "(n)'s pod after 1 class passed over: its handler is on no node (full diagnosis, as (n)), then kata",
            json!({"containers": containers(), "tolerations": tolerate_all}), Calls::PassedThenNodes(Passed::Handler(1)))
            .says(Passed::says(size))
            .versus("a"),
        Case::new("x4", "(n)'s pod after 3 classes passed over: each one's handler is on no node",
            json!({"containers": containers(), "tolerations": tolerate_all}), Calls::PassedThenNodes(Passed::Handler(3)))
            .says(Passed::says(size))
            .versus("a"),
        Case::new("p1", "required pod affinity to app-7, 1,000 existing pods (the pod list, then the nodes)",
            affine.clone(), Calls::RuntimeClassPodsAndNodes(1_000))
            .versus("a"),
        Case::new("p2", "(p1) with 10,000 existing pods", affine.clone(),
            Calls::RuntimeClassPodsAndNodes(10_000))
            .versus("a"),
        Case::new("p3", "(p1) with 100,000 existing pods", affine,
            Calls::RuntimeClassPodsAndNodes(100_000))
            .versus("a"),
        Case::new("r", "a recursiveReadOnly: Enabled mount (asks for whole handler entries)",
            json!({"containers": [{"name": "app", "image": "registry.example.com/app:v1",
                "resources": {"requests": {"cpu": "100m"}},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/app", "readOnly": true,
                                  "recursiveReadOnly": "Enabled"}]}],
                "volumes": [{"name": "config", "configMap": {"name": "app"}}]}), RuntimeClassAndNodes)
            .on(Nodes::KataDeploy, Query::Features)
            .versus("a"),
        Case::new("A", "(a) answered with whole handler entries (one query for every pod)", plain,
            RuntimeClassAndNodes)
            .on(Nodes::KataDeploy, Query::FeaturesForEveryPod)
            .versus("a"),
        Case::new("C", "(c) answered with whole handler entries (one query for every pod)", no_zone,
            RuntimeClassAndNodes)
            .on(Nodes::KataDeploy, Query::FeaturesForEveryPod)
            .expect("unchanged")
            .versus("c"),
    ]
}

fn validate_payload(pod_spec: &Value, settings: &Value) -> Vec<u8> {
    let request = json!({
        "uid": "bench", "kind": {"group": "", "version": "v1", "kind": "Pod"},
        "resource": {"group": "", "version": "v1", "resource": "pods"},
        "operation": "CREATE", "namespace": "default", "name": "bench",
        "userInfo": {"username": "bench"},
        "object": {"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "bench", "namespace": "default", "labels": {"app": "bench"}},
                   "spec": pod_spec},
    });
    serde_json::to_vec(&json!({"request": request, "settings": settings})).unwrap_or_default()
}

/// The host calls of a case: `asked` is the node query's view, `answer`
/// what the host returns to it; `model` answers the way policy-server does.
fn session(calls: Calls, asked: View, answer: &Answer, model: bool) -> Session {
    let list_answer = || match model {
        true => Response::Serialized {
            objects: answer.objects.clone(),
            list: true,
        },
        false => Response::Success {
            payload: answer.list.clone(),
        },
    };
    let middle_answer = || match model {
        true => Response::Serialized {
            objects: answer.middle_object.clone(),
            list: false,
        },
        false => Response::Success {
            payload: answer.middle.1.clone(),
        },
    };
    let success = |payload: &str| Response::Success {
        payload: payload.to_string(),
    };
    // Under the model, objects read by name are cloned and serialized too.
    let object = |text: &str| match model {
        true => Response::Serialized {
            objects: Arc::new(vec![serde_json::from_str(text).unwrap_or_default()]),
            list: false,
        },
        false => success(text),
    };
    let runtime_class = || Exchange {
        request: runtime_class_request("kata"),
        response: success(&runtime_class()),
    };
    // The access questions, then the node list: every case that lists. A
    // guest that checks the handlers lists what `off` lists, then reads the
    // candidates by name with `asked` (standing answers, as the candidates
    // depend on the case), and falls back on the list with `asked`.
    let listing = || {
        let access = |verb: &str| Exchange {
            request: CallbackRequest::default_nodes_access(verb),
            response: success(r#"{"allowed":true}"#),
        };
        let list = match &answer.plain {
            Some((text, objects)) => Exchange {
                request: nodes_request(View::Plain),
                response: match model {
                    true => Response::Serialized {
                        objects: objects.clone(),
                        list: true,
                    },
                    false => success(text),
                },
            },
            None => Exchange {
                request: nodes_request(asked),
                response: list_answer(),
            },
        };
        [access("list"), access("watch"), list]
    };
    let standing = || -> Vec<Exchange> {
        if answer.plain.is_none() || !calls.lists() || calls == Calls::NodesOnly {
            return Vec::new();
        }
        (answer.reads.iter())
            .map(|(name, text, object)| Exchange {
                request: node_request(name, asked),
                response: match model {
                    true => Response::Serialized {
                        objects: object.clone(),
                        list: false,
                    },
                    false => success(text),
                },
            })
            .chain([Exchange {
                request: nodes_request(asked),
                response: list_answer(),
            }])
            .collect()
    };
    let exchanges: Vec<Exchange> = match calls {
        Calls::None => vec![],
        Calls::MissingRuntimeClass => vec![Exchange {
            request: runtime_class_request("kata"),
            response: Response::Error {
                message: "Cannot find node.k8s.io/v1/RuntimeClass named 'kata' inside of namespace 'None'"
                    .into(),
            },
        }],
        Calls::RuntimeClassAndNodes => std::iter::once(runtime_class()).chain(listing()).collect(),
        Calls::PassedThenNodes(passed) => {
            let mut read = (passed.classes().into_iter()).map(|name| Exchange {
                request: runtime_class_request(&name),
                response: success(&passed.runtime_class(&name)),
            });
            (read.next().into_iter())
                .chain(listing())
                .chain(read)
                .chain([runtime_class()])
                .collect()
        }
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
        Calls::RuntimeClassPodsAndNodes(count) => {
            let access = |verb: &str| Exchange {
                request: CallbackRequest::default_access(verb, "pods"),
                response: success(r#"{"allowed":true}"#),
            };
            let (host, host_text, host_object) = answer.reads.first().cloned().unwrap_or_default();
            let pods = existing_pods(count, &host);
            let pods = Exchange {
                request: pods_request(),
                response: match model {
                    true => Response::Serialized {
                        objects: pods.clone(),
                        list: true,
                    },
                    false => success(&serde_json::to_string(&clustergen::list_of(
                        pods.as_ref().clone(),
                    ))
                    .unwrap_or_default()
                    .replacen("\"NodeList\"", "\"PodList\"", 1)),
                },
            };
            let host = Exchange {
                request: node_request(&host, View::Plain),
                response: match model {
                    true => Response::Serialized {
                        objects: host_object,
                        list: false,
                    },
                    false => success(&host_text),
                },
            };
            [runtime_class(), access("list"), access("watch"), pods, host]
                .into_iter()
                .chain(listing())
                .collect()
        }
        Calls::NodesOnly => vec![Exchange {
            request: nodes_request(asked),
            response: list_answer(),
        }],
        Calls::RuntimeClassAndMiddleNode => vec![
            runtime_class(),
            Exchange {
                request: node_request(&answer.middle.0, asked),
                response: middle_answer(),
            },
        ],
    };
    Session::from_exchanges(exchanges).with_standing(standing())
}

/// What a timed run needs: the guest call, its payload and host answers.
struct Run<'a> {
    op: &'a str,
    payload: &'a [u8],
    calls: Calls,
    asked: View,
    answer: &'a Answer,
    model: bool,
}

struct Stats {
    median: Duration,
    p10: Duration,
    p90: Duration,
    runs: usize,
    /// Every timing, in call order (paired ratios).
    times: Vec<Duration>,
}

impl Stats {
    fn of(times: Vec<Duration>) -> Stats {
        let mut sorted = times.clone();
        sorted.sort();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        Stats {
            median: at(0.5),
            p10: at(0.1),
            p90: at(0.9),
            runs: sorted.len(),
            times,
        }
    }

    /// The median of the ratios of paired calls (call k of `self` against
    /// call k of `other`, made back to back): a load that drifts during
    /// the run weighs on both sides of each ratio.
    fn paired(&self, other: &Stats) -> f64 {
        let mut ratios: Vec<f64> = (self.times.iter().zip(&other.times))
            .map(|(a, b)| a.as_secs_f64() / b.as_secs_f64())
            .collect();
        ratios.sort_by(f64::total_cmp);
        ratios.get(ratios.len() / 2).copied().unwrap_or(f64::NAN)
    }
}

/// Times runs on fresh instances, interleaved: warm-up, then one call of
/// each in turn until `budget` is spent (at least 15, at most 400 rounds).
/// The session is built outside the timed region; the host's copy of the
/// answer into the guest (and, under the model, its clone and
/// serialization) is inside it. Returns each run's timings and last answer.
fn measure(runs: &[(&Policy, &Run)], budget: Duration) -> Result<Vec<(Stats, Vec<u8>)>> {
    let session = |run: &Run| session(run.calls, run.asked, run.answer, run.model);
    let mut last = vec![Vec::new(); runs.len()];
    for _ in 0..3 {
        for (k, (policy, run)) in runs.iter().enumerate() {
            last[k] = policy.call_raw(run.op, run.payload, session(run))?;
            // A call the session cannot answer would time an error path.
            let unmatched = policy.take_session().unmatched();
            ensure!(
                unmatched == 0,
                "{}: {unmatched} host call(s) the session cannot answer",
                run.op
            );
        }
    }
    let mut times = vec![Vec::new(); runs.len()];
    let started = Instant::now();
    while times[0].len() < 15 || (started.elapsed() < budget && times[0].len() < 400) {
        for (k, (policy, run)) in runs.iter().enumerate() {
            let s = session(run);
            let t = Instant::now();
            last[k] = policy.call_raw(run.op, run.payload, s)?;
            times[k].push(t.elapsed());
        }
    }
    Ok(times.into_iter().map(Stats::of).zip(last).collect())
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

fn mib(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

fn ratio(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() / b.as_secs_f64()
}

/// One measured row, for the summary.
struct Row {
    size: usize,
    model: bool,
    id: &'static str,
    median: Duration,
    /// Paired with the floor of the same query.
    per_floor: f64,
    /// Paired with the case it is compared with (`Case::versus`).
    per_versus: Option<f64>,
    /// Paired with the baseline guest's run of the same case.
    per_baseline: Option<(f64, Duration)>,
    memory: f64,
}

fn parse_view(text: &str) -> Result<View> {
    Ok(match text {
        "plain" => View::Plain,
        "names" => View::HandlerNames,
        other => bail!("--masks is plain or names, got {other:?}"),
    })
}

fn parse_check(text: Option<String>) -> Result<&'static str> {
    Ok(match text.as_deref() {
        Some("auto") => "auto",
        Some("required") => "required",
        Some("off") => "off",
        other => bail!("the handler check is auto, required or off, got {other:?}"),
    })
}

fn config(check: &'static str, masks: Option<View>, annotate: bool) -> Config {
    Config {
        check,
        annotate,
        pod_view: masks.unwrap_or(if check == "off" {
            View::Plain
        } else {
            View::HandlerNames
        }),
    }
}

/// A guest and the settings it runs with.
struct Guest {
    wasm: Vec<u8>,
    config: Config,
    settings: Value,
}

impl Guest {
    fn new(path: &str, config: Config) -> Result<Guest> {
        Ok(Guest {
            wasm: std::fs::read(path).with_context(|| format!("read {path}"))?,
            settings: config.settings(),
            config,
        })
    }

    /// A fresh instance.
    fn instance(&self) -> Result<Policy> {
        Policy::from_bytes(&self.wasm)
    }

    /// Whether the guest can run the case.
    fn runs(&self, case: &Case) -> bool {
        self.config.reads_handlers() || !case.needs_handlers()
    }
}

/// The view of the list a case's guest reads: what `off` lists when it
/// checks the handlers (it reads the candidates by name), else its query's.
fn floor_view(config: &Config, case: &Case) -> View {
    match config.reads_handlers() {
        true => View::Plain,
        false => config.views(case.query).1,
    }
}

/// The floor's guest function for the view it asks.
fn floor_op(view: View) -> &'static str {
    match view {
        View::HandlerFeatures => "bench_floor_features",
        _ => "bench_floor",
    }
}

/// `kwbench nodes`: nodes I..I+N of the bench's cluster (every node runs
/// kata-deploy's shims), whole, as a v1 List a client can create.
fn print_nodes(mut args: impl Iterator<Item = String>) -> Result<()> {
    let (mut shape, mut count, mut from) = (Shape::Lean, 1_000, 0);
    while let Some(arg) = args.next() {
        let mut value = |flag: &str| args.next().with_context(|| format!("{flag} needs a value"));
        match arg.as_str() {
            "--shape" => shape = value("--shape")?.parse().map_err(anyhow::Error::msg)?,
            "--count" => count = value("--count")?.parse()?,
            "--from" => from = value("--from")?.parse()?,
            other => bail!(
                "usage: kwbench nodes [--shape lean|realistic] [--count N] [--from I]; got {other:?}"
            ),
        }
    }
    let mut items = clustergen::shaped_range(
        shape,
        from..from + count,
        View::Unmasked,
        SEED,
        clustergen::kata_deploy,
    );
    // The API server sets these on create (and refuses a resourceVersion).
    for node in &mut items {
        if let Some(meta) = node["metadata"].as_object_mut() {
            for field in ["uid", "resourceVersion", "creationTimestamp"] {
                meta.remove(field);
            }
        }
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items});
    println!("{list}");
    Ok(())
}

fn main() -> Result<()> {
    if std::env::args().nth(1).as_deref() == Some("nodes") {
        return print_nodes(std::env::args().skip(2));
    }
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut sizes = vec![10, 100, 1_000, 10_000];
    let mut seconds = 1.5;
    let mut only: Option<Vec<String>> = None;
    let mut modes = vec!["replay".to_string(), "model".to_string()];
    let mut check = "auto";
    let mut masks = None;
    let mut baseline: Option<String> = None;
    let mut baseline_check = "auto";
    let mut baseline_masks = None;
    let mut annotate = false;
    let mut baseline_annotate = false;
    let mut pod_sizes: Option<Vec<usize>> = None;
    let mut shape = Shape::Lean;
    let list = |value: Option<String>, flag: &str| -> Result<Vec<String>> {
        Ok(value
            .with_context(|| format!("{flag} needs a value"))?
            .split(',')
            .map(String::from)
            .collect())
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--sizes" => {
                sizes = list(args.next(), "--sizes")?
                    .iter()
                    .map(|s| s.parse())
                    .collect::<Result<_, _>>()?
            }
            "--pod-sizes" => {
                pod_sizes = Some(
                    list(args.next(), "--pod-sizes")?
                        .iter()
                        .map(|s| s.parse())
                        .collect::<Result<_, _>>()?,
                )
            }
            "--seconds" => seconds = args.next().context("--seconds needs a value")?.parse()?,
            "--cases" => only = Some(list(args.next(), "--cases")?),
            "--modes" => modes = list(args.next(), "--modes")?,
            "--handler-check" => check = parse_check(args.next())?,
            "--masks" => masks = Some(parse_view(&args.next().context("--masks needs a value")?)?),
            "--baseline" => baseline = Some(args.next().context("--baseline needs a value")?),
            "--baseline-check" => baseline_check = parse_check(args.next())?,
            "--annotate" => annotate = true,
            "--shape" => {
                shape = (args.next().context("--shape needs a value")?)
                    .parse()
                    .map_err(anyhow::Error::msg)?
            }
            "--baseline-annotate" => baseline_annotate = true,
            "--baseline-masks" => {
                baseline_masks = Some(parse_view(
                    &args.next().context("--baseline-masks needs a value")?,
                )?)
            }
            _ => positional.push(arg),
        }
    }
    let Some(guest_path) = positional.first() else {
        bail!(
            "usage: kwbench BENCH_GUEST.wasm [SHIPPED_POLICY.wasm] [--sizes 10,100] [--seconds S] \
             [--cases 0,a,…] [--modes replay,model] [--handler-check auto|required|off] [--masks plain|names] \
             [--baseline OTHER_GUEST.wasm [--baseline-check auto|required|off] [--baseline-masks plain|names] \
             [--baseline-annotate]] [--annotate] [--pod-sizes 1000,4000,16000] [--shape lean|realistic]"
        );
    };
    let guest = Guest::new(guest_path, config(check, masks, annotate))?;
    let baseline_path = baseline.clone().unwrap_or_default();
    let baseline = baseline
        .map(|path| {
            Guest::new(
                &path,
                config(baseline_check, baseline_masks, baseline_annotate),
            )
        })
        .transpose()?;
    let config = guest.config;
    let budget = Duration::from_secs_f64(seconds);
    if let Some(pod_sizes) = pod_sizes {
        return pod_size::run(&guest, baseline.as_ref(), &pod_sizes, budget, shape);
    }
    let selected =
        |c: &Case| only.as_ref().is_none_or(|o| o.iter().any(|id| id == c.id)) && guest.runs(c);

    println!(
        "Settings: {}; a plain pod's node query: {:?}; node shape: {shape}.",
        guest.settings,
        config.pod_view.field_masks().unwrap_or_default()
    );
    if let Some(b) = &baseline {
        println!(
            "Baseline: {}, settings {}; a plain pod's node query: {:?}.",
            baseline_path,
            b.settings,
            b.config.pod_view.field_masks().unwrap_or_default()
        );
    }
    println!();
    println!(
        "| nodes | case | median µs | p10–p90 µs | runs | × floor | × skip (0) | guest memory MiB |{}",
        if baseline.is_some() {
            " × baseline |"
        } else {
            ""
        }
    );
    println!(
        "|---:|---|---:|---:|---:|---:|---:|---:|{}",
        if baseline.is_some() { "---:|" } else { "" }
    );
    let mut rows: Vec<Row> = Vec::new();
    let mut payload_bytes: HashMap<(usize, View), usize> = HashMap::new();
    for &size in &sizes {
        let mut answers = Answers {
            shape,
            size,
            built: HashMap::new(),
        };
        // What each view weighs: the text the guest receives, and the parsed
        // objects policy-server keeps per query (one cache per query).
        for view in [View::Plain, View::HandlerNames, View::HandlerFeatures] {
            let (items, heap, blocks) = heap_bytes(|| {
                clustergen::shaped_nodes(shape, size, view, SEED, clustergen::kata_deploy)
            });
            let bytes = clustergen::list_of(items).to_string().len();
            payload_bytes.insert((size, view), bytes);
            println!(
                "| {size} | payload {:?}: {} bytes ({} per node); parsed as the host caches it: {:.1} MiB in {} allocations ({} per node) | | | | | | |",
                view.field_masks().unwrap_or_default(),
                bytes,
                bytes / size,
                mib(heap as f64),
                blocks,
                blocks / size as isize
            );
        }
        let unmasked = clustergen::shaped_node_list(
            shape,
            size,
            View::Unmasked,
            SEED,
            clustergen::kata_deploy,
        );
        payload_bytes.insert((size, View::Unmasked), unmasked.len());
        let masked_bytes = payload_bytes[&(size, config.pod_view)];
        println!(
            "| {size} | payload bytes: masked {masked_bytes} / unmasked {} ({:.1}×) | | | | | | |",
            unmasked.len(),
            unmasked.len() as f64 / masked_bytes as f64
        );
        let cases: Vec<Case> = cases(size).into_iter().filter(selected).collect();
        // Every answer the runs below read, built before any is borrowed.
        let mut floor_keys = vec![(Nodes::KataDeploy, config.pod_view)];
        for case in &cases {
            answers.get(case.nodes, config.views(case.query).1);
            let key = (case.nodes, floor_view(&config, case));
            if case.calls.lists() && !floor_keys.contains(&key) {
                floor_keys.push(key);
            }
            if let Some(b) = baseline.as_ref().filter(|b| b.runs(case)) {
                let view = b.config.views(case.query).1;
                answers.get(case.nodes, view);
                answers.get(Nodes::KataDeploy, view);
            }
        }
        for &(nodes, view) in &floor_keys {
            answers.get(nodes, view);
        }
        let answers = answers;
        let answer = |nodes: Nodes, view: View| &answers.built[&(nodes, view)];
        let unmasked_answer = Answer {
            list: unmasked,
            middle: (String::new(), String::new()),
            objects: Arc::default(),
            middle_object: Arc::default(),
            plain: None,
            reads: Vec::new(),
        };

        for mode in &modes {
            let model = match mode.as_str() {
                "replay" => false,
                "model" => true,
                other => bail!("--modes is replay and/or model, got {other:?}"),
            };
            let prefix = if model { "[policy-server model] " } else { "" };
            let plain_pod = json!({"containers": containers()});
            let floor_payload = validate_payload(&plain_pod, &guest.settings);
            let probe_payload = {
                let mut probe: Value = serde_json::from_slice(&floor_payload)?;
                probe["handler"] = json!(HANDLER);
                serde_json::to_vec(&probe)?
            };
            // The list a guest that checks the handlers reads first is the
            // one `off` reads: its floor is asked under `off`.
            let plain_floor_payload = {
                let mut off = guest.settings.clone();
                off["runtimeHandlerCheck"] = json!("off");
                validate_payload(&plain_pod, &off)
            };
            // The floor of a view: a guest that makes the same query and
            // only validates its answer.
            let floor_run = |nodes: Nodes, view: View| Run {
                op: floor_op(view),
                payload: match view {
                    View::Plain => &plain_floor_payload,
                    _ => &floor_payload,
                },
                calls: Calls::NodesOnly,
                asked: view,
                answer: answer(nodes, view),
                model,
            };
            let mut floors: HashMap<(Nodes, View), Duration> = HashMap::new();
            for &(nodes, view) in &floor_keys {
                let policy = guest.instance()?;
                let [(floor, _)]: [_; 1] = measure(&[(&policy, &floor_run(nodes, view))], budget)?
                    .try_into()
                    .ok()
                    .context("one run")?;
                println!(
                    "| {size} | {prefix}floor {:?}{}: same query, answer only validated as JSON | {:.0} | {:.0}–{:.0} | {} | 1.00 | | |",
                    view.field_masks().unwrap_or_default(),
                    match nodes {
                        Nodes::KataDeploy => "",
                        Nodes::MissingHead => ", the cluster of (h)",
                        Nodes::ContainerdOnly => ", the cluster of (n)",
                    },
                    us(floor.median),
                    us(floor.p10),
                    us(floor.p90),
                    floor.runs
                );
                floors.insert((nodes, view), floor.median);
            }
            let plain_floor = floors[&(Nodes::KataDeploy, config.pod_view)];
            if !model {
                let transfer = Run {
                    op: "bench_transfer",
                    ..floor_run(Nodes::KataDeploy, config.pod_view)
                };
                let unmasked = Run {
                    answer: &unmasked_answer,
                    ..floor_run(Nodes::KataDeploy, config.pod_view)
                };
                let mut probes = vec![
                    (
                        "host transfer only: the query and the copy of its answer",
                        transfer,
                    ),
                    ("floor, unmasked Nodes (no field masks)", unmasked),
                ];
                // Where a full scan's time goes: the policy's reader alone,
                // then with each node's handler looked up.
                if config.reads_handlers() {
                    probes.push((
                        "the policy's node reader alone (every node read, no filter)",
                        Run {
                            op: "bench_scan",
                            payload: &probe_payload,
                            ..floor_run(Nodes::KataDeploy, config.pod_view)
                        },
                    ));
                    probes.push((
                        "the reader and each node's handler looked up",
                        Run {
                            op: "bench_scan_handlers",
                            payload: &probe_payload,
                            ..floor_run(Nodes::KataDeploy, config.pod_view)
                        },
                    ));
                }
                for (what, run) in probes {
                    let (policy, floor_policy) = (guest.instance()?, guest.instance()?);
                    let floor = floor_run(Nodes::KataDeploy, config.pod_view);
                    let measured = measure(&[(&policy, &run), (&floor_policy, &floor)], budget)?;
                    let (stats, floor) = (&measured[0].0, &measured[1].0);
                    println!(
                        "| {size} | {what} | {:.0} | {:.0}–{:.0} | {} | {:.2} | | |",
                        us(stats.median),
                        us(stats.p10),
                        us(stats.p90),
                        stats.runs,
                        stats.paired(floor)
                    );
                }
            }
            let mut skip = None;
            let payloads: Vec<Vec<u8>> = cases
                .iter()
                .map(|c| validate_payload(&c.pod_spec, &c.calls.settings(&guest.settings)))
                .collect();
            let case_run = |k: usize| {
                let case = &cases[k];
                let (asked, answered) = config.views(case.query);
                Run {
                    op: "validate",
                    payload: &payloads[k],
                    calls: case.calls,
                    asked,
                    answer: answer(case.nodes, answered),
                    model,
                }
            };
            for (k, case) in cases.iter().enumerate() {
                // The case, interleaved with the floor of its query, the
                // case it is compared with, and the baseline's run of it.
                let mut runs: Vec<(Policy, Run)> = vec![(guest.instance()?, case_run(k))];
                // Only a case that lists is timed against its floor: a small
                // call made right after a list pays the list's cache misses.
                if case.calls.lists() {
                    runs.push((
                        guest.instance()?,
                        floor_run(case.nodes, floor_view(&config, case)),
                    ));
                }
                let versus = case
                    .versus
                    .and_then(|id| cases.iter().position(|c| c.id == id));
                if let Some(v) = versus {
                    runs.push((guest.instance()?, case_run(v)));
                }
                let baseline_payload;
                // A guest older than fallbackRuntimeClasses refuses them.
                let baseline_runs =
                    |b: &&Guest| b.runs(case) && case.calls.settings(&json!({})) == json!({});
                if let Some(b) = baseline.as_ref().filter(baseline_runs) {
                    baseline_payload = validate_payload(&case.pod_spec, &b.settings);
                    let (asked, answered) = b.config.views(case.query);
                    runs.push((
                        b.instance()?,
                        Run {
                            op: "validate",
                            payload: &baseline_payload,
                            calls: case.calls,
                            asked,
                            answer: answer(case.nodes, answered),
                            model,
                        },
                    ));
                }
                let refs: Vec<(&Policy, &Run)> = runs.iter().map(|(p, r)| (p, r)).collect();
                let mut measured = measure(&refs, budget)?.into_iter();
                let (stats, response) = measured.next().context("the case")?;
                let floor = case
                    .calls
                    .lists()
                    .then(|| measured.next())
                    .flatten()
                    .map(|(s, _)| s);
                let versus = versus.and_then(|_| measured.next()).map(|(s, _)| s);
                let base = measured.next().map(|(s, _)| s);
                let text = String::from_utf8_lossy(&response);
                let response: Value = serde_json::from_slice(&response)?;
                let decision = response["audit_annotations"]["decision"]
                    .as_str()
                    .unwrap_or("?");
                let said = case.says.as_ref().is_none_or(|s| text.contains(s.as_str()));
                if (decision != case.expect || !said)
                    && std::env::var_os("KWBENCH_NO_CHECK").is_none()
                {
                    bail!(
                        "case ({}) at {size} nodes decided {decision}, expected {}{}: {response}",
                        case.id,
                        case.expect,
                        case.says
                            .as_ref()
                            .map(|s| format!(" saying {s:?}"))
                            .unwrap_or_default()
                    );
                }
                let memory = memory_mib(&runs[0].0)?;
                let skip_median = *skip.get_or_insert(stats.median);
                let per_floor = floor
                    .as_ref()
                    .map(|f| stats.paired(f))
                    .unwrap_or_else(|| ratio(stats.median, plain_floor));
                let per_baseline = base.as_ref().map(|b| (stats.paired(b), b.median));
                println!(
                    "| {size} | {prefix}({}) {} | {:.0} | {:.0}–{:.0} | {} | {:.2} | {:.1} | {} |{}",
                    case.id,
                    case.what,
                    us(stats.median),
                    us(stats.p10),
                    us(stats.p90),
                    stats.runs,
                    per_floor,
                    ratio(stats.median, skip_median),
                    if model {
                        String::new()
                    } else {
                        format!("{memory:.1}")
                    },
                    match (&baseline, per_baseline) {
                        (None, _) => String::new(),
                        (Some(_), None) => " |".into(),
                        (Some(_), Some((r, median))) =>
                            format!(" {r:.2} (baseline {:.0} µs) |", us(median)),
                    }
                );
                rows.push(Row {
                    size,
                    model,
                    id: case.id,
                    median: stats.median,
                    per_floor,
                    per_versus: versus.as_ref().map(|v| stats.paired(v)),
                    per_baseline,
                    memory,
                });
            }
        }
    }
    summary(&rows, &payload_bytes, &config, shape);
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

/// The ratios the targets are stated in.
fn summary(
    rows: &[Row],
    payload_bytes: &HashMap<(usize, View), usize>,
    config: &Config,
    shape: Shape,
) {
    println!();
    println!("Node shape: {shape}. Bytes per node of each payload:");
    let mut sizes: Vec<usize> = payload_bytes.keys().map(|(size, _)| *size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    for size in sizes {
        let per_node = [
            View::Plain,
            View::HandlerNames,
            View::HandlerFeatures,
            View::Unmasked,
        ]
        .iter()
        .filter_map(|view| {
            let bytes = payload_bytes.get(&(size, *view))?;
            let name = match view {
                View::Plain => "plain",
                View::HandlerNames => "handler names",
                View::HandlerFeatures => "whole handlers",
                View::Unmasked => "unmasked",
            };
            Some(format!("{name} {}", bytes / size))
        })
        .collect::<Vec<_>>();
        println!("- {size} nodes: {}", per_node.join(", "));
    }
    let find = |model: bool, size: usize, id: &str| {
        rows.iter()
            .find(|r| r.model == model && r.size == size && r.id == id)
    };
    for model in [false, true] {
        if !rows.iter().any(|r| r.model == model) {
            continue;
        }
        println!();
        println!(
            "{}",
            if model {
                "Under the policy-server cost model (ratios of paired calls):"
            } else {
                "In replay (ratios of paired calls):"
            }
        );
        for size in [1_000, 10_000] {
            for id in ["c", "f", "n", "h", "a"] {
                if let Some(r) = find(model, size, id) {
                    println!(
                        "- ({id}) / floor of the same query at {size} nodes: {:.2}{}; {:.1} ms",
                        r.per_floor,
                        if matches!(id, "c" | "f") {
                            " (target ≤ 1.7)"
                        } else {
                            ""
                        },
                        r.median.as_secs_f64() * 1e3
                    );
                }
            }
            for (id, tried) in [("a2", 2.0), ("a4", 4.0), ("x2", 2.0), ("x4", 4.0)] {
                if let Some(r) = find(model, size, id) {
                    println!(
                        "- ({id}) / floor at {size} nodes: {:.2}, {:.2} per class tried ({tried}; target ≤ 1.7)",
                        r.per_floor,
                        r.per_floor / tried
                    );
                }
            }
            for r in rows.iter().filter(|r| r.model == model && r.size == size) {
                if let Some(v) = r.per_versus {
                    println!(
                        "- ({}) / the case it is compared with at {size} nodes: {v:.2}",
                        r.id
                    );
                }
                if let Some((b, median)) = r.per_baseline {
                    println!(
                        "- ({}) / the baseline guest at {size} nodes: {b:.2} ({:.0} → {:.0} µs)",
                        r.id,
                        us(median),
                        us(r.median)
                    );
                }
            }
        }
        for id in ["d", "e"] {
            for size in [1_000, 10_000] {
                if let (Some(t), Some(z)) = (find(model, size, id), find(model, size, "0")) {
                    println!(
                        "- ({id}) / skip (0) at {size} nodes: {:.2} (target ≤ 3)",
                        ratio(t.median, z.median)
                    );
                }
            }
        }
        if let (Some(c1), Some(c10)) = (find(model, 1_000, "c"), find(model, 10_000, "c")) {
            println!(
                "- (c) 10000 / 1000 nodes: {:.2}",
                ratio(c10.median, c1.median)
            );
        }
        if !model {
            for id in ["c", "f", "n"] {
                if let (Some(r), Some(bytes)) = (
                    find(false, 10_000, id),
                    payload_bytes.get(&(10_000, config.pod_view)),
                ) {
                    let payload = mib(*bytes as f64);
                    println!(
                        "- guest memory after ({id}) at 10000 nodes: {:.1} MiB; payload {payload:.1} MiB + 4 MiB = {:.1} MiB",
                        r.memory,
                        payload + 4.0
                    );
                }
            }
        }
        if model
            && let (Some(listed), Some(named)) = (find(true, 1_000, "g"), find(true, 1_000, "d"))
        {
            println!(
                "- a DaemonSet rollout over 1000 kata nodes (1000 pinned pods): {:.2} s of host + guest time when each lists (g), {:.3} s when each reads its node (d)",
                listed.median.as_secs_f64() * 1e3,
                named.median.as_secs_f64() * 1e3
            );
        }
    }
    for size in [1_000, 10_000] {
        if let (Some(names), Some(full), Some(plain)) = (
            payload_bytes.get(&(size, View::HandlerNames)),
            payload_bytes.get(&(size, View::HandlerFeatures)),
            payload_bytes.get(&(size, View::Plain)),
        ) {
            println!(
                "- payload at {size} nodes: handler names add {} bytes per node, whole entries {} ({:.1}×)",
                (names - plain) / size,
                (full - plain) / size,
                (full - plain) as f64 / (names - plain) as f64
            );
        }
    }
}
