//! Seeded generator of realistic NodeList payloads, as policy-server returns
//! them for the policy's queries: full `metadata` (labels, annotations; the
//! host never prunes metadata but empties `managedFields`), and what the
//! query's field masks keep of `spec` and `status` ([`View`]): the taints,
//! `unschedulable`, `status.allocatable` and, unless the handler check is
//! off, `status.runtimeHandlers` (each entry pruned to its `name`, or
//! whole); or the whole Node (unmasked, what a host without field masks
//! sends). Allocatable follows the instance type; one node group in seven
//! has GPUs. The runtime handlers are what a containerd 2.x node with
//! kata-deploy 4.x's shims reports, in containerd's map order (shuffled per
//! node), or ([`Runtime::ContainerdOnly`]) only containerd's own.
//!
//! Same seed, same bytes: benchmark runs are comparable. The
//! [`View::Plain`] payload is byte for byte the one of the generator before
//! runtime handlers, so older measurements stay comparable.
//!
//! Two node shapes ([`Shape`]): the lean one above (20 labels, 10
//! annotations, no pools), which every figure
//! before the realistic shape was measured on and which stays byte for
//! byte as it was; and the realistic one ([`realistic`]): pools of
//! identical nodes as an EKS cluster with node-feature-discovery stores
//! them, ~93 labels and ~9 KB each.

use serde_json::{Value, json};

pub mod realistic;

/// Which nodes the generator makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// The original synthetic nodes (every earlier figure).
    Lean,
    /// Real-cluster weight: NFD labels, CSI and NFD annotations, pools.
    Realistic,
}

impl std::str::FromStr for Shape {
    type Err = String;

    fn from_str(text: &str) -> Result<Shape, String> {
        match text {
            "lean" => Ok(Shape::Lean),
            "realistic" => Ok(Shape::Realistic),
            other => Err(format!("the shape is lean or realistic, got {other:?}")),
        }
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Shape::Lean => "lean",
            Shape::Realistic => "realistic",
        })
    }
}

/// splitmix64: tiny, seedable, good enough to vary realistic fields.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    fn hex(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from_digit(self.below(16) as u32, 16).unwrap_or('0'))
            .collect()
    }
}

/// The name of node `i`, as EC2-style private DNS names look.
pub fn node_name(i: usize) -> String {
    format!(
        "ip-10-0-{}-{}.eu-west-1.compute.internal",
        i / 250,
        i % 250 + 2
    )
}

const ZONES: [&str; 3] = ["eu-west-1a", "eu-west-1b", "eu-west-1c"];
/// Instance type, allocatable cpu, memory (Ki) and hugepages-2Mi, as
/// kubelets on such instances report them (capacity minus reservations).
const INSTANCE_TYPES: [(&str, &str, &str, &str); 4] = [
    ("m5.2xlarge", "7910m", "31615432Ki", "0"),
    ("m5.4xlarge", "15890m", "63909284Ki", "0"),
    ("c5.metal", "95690m", "192552980Ki", "1Gi"),
    ("m6i.8xlarge", "31850m", "128926156Ki", "0"),
];
/// The GPU node group: 4 GPUs per node, passed through with VFIO as Kata
/// takes them (`nvidia.com/pgpu`).
const GPU_INSTANCE: (&str, &str, &str, &str) = ("p3.8xlarge", "31850m", "249264312Ki", "0");

fn is_gpu_group(i: usize) -> bool {
    i % 7 == 6
}

fn instance(rng: &mut Rng, i: usize) -> (&'static str, &'static str, &'static str, &'static str) {
    if is_gpu_group(i) {
        GPU_INSTANCE
    } else {
        *rng.pick(&INSTANCE_TYPES)
    }
}

/// `status.allocatable` for an instance type.
fn allocatable(i: usize, (_, cpu, memory, hugepages): (&str, &str, &str, &str)) -> Value {
    let mut a = json!({"cpu": cpu, "ephemeral-storage": "95551679124", "hugepages-1Gi": "0",
                       "hugepages-2Mi": hugepages, "memory": memory, "pods": "110"});
    if is_gpu_group(i) {
        a["nvidia.com/pgpu"] = json!("4");
    }
    a
}

fn labels(rng: &mut Rng, i: usize, name: &str, instance: &str) -> Value {
    let zone = *rng.pick(&ZONES);
    let arch = if rng.below(5) == 0 { "arm64" } else { "amd64" };
    let capacity = if rng.below(3) == 0 {
        "SPOT"
    } else {
        "ON_DEMAND"
    };
    json!({
        "beta.kubernetes.io/arch": arch,
        "beta.kubernetes.io/instance-type": instance,
        "beta.kubernetes.io/os": "linux",
        "eks.amazonaws.com/capacityType": capacity,
        "eks.amazonaws.com/nodegroup": format!("kata-ng-{}", i % 7),
        "eks.amazonaws.com/nodegroup-image": format!("ami-0{}", rng.hex(16)),
        "failure-domain.beta.kubernetes.io/region": "eu-west-1",
        "failure-domain.beta.kubernetes.io/zone": zone,
        "feature.node.kubernetes.io/cpu-cpuid.VMX": "true",
        "feature.node.kubernetes.io/kernel-version.full": "6.1.115-126.197.amzn2023.x86_64",
        "k8s.io/cloud-provider-aws": rng.hex(32),
        "katacontainers.io/kata-runtime": "true",
        "kubernetes.io/arch": arch,
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node-role.kubernetes.io/worker": "",
        "node.kubernetes.io/instance-type": instance,
        "topology.ebs.csi.aws.com/zone": zone,
        "topology.kubernetes.io/region": "eu-west-1",
        "topology.kubernetes.io/zone": zone,
    })
}

fn annotations(rng: &mut Rng, i: usize) -> Value {
    let ip = format!("10.0.{}.{}", i / 250, i % 250 + 2);
    json!({
        "alpha.kubernetes.io/provided-node-ip": ip,
        "csi.volume.kubernetes.io/nodeid": format!("{{\"ebs.csi.aws.com\":\"i-0{}\"}}", rng.hex(16)),
        "kata-deploy.katacontainers.io/installed-version": "3.11.0",
        "kubeadm.alpha.kubernetes.io/cri-socket": "unix:///run/containerd/containerd.sock",
        "nfd.node.kubernetes.io/extended-resources": "",
        "nfd.node.kubernetes.io/feature-labels": "cpu-cpuid.ADX,cpu-cpuid.AESNI,cpu-cpuid.AVX,cpu-cpuid.AVX2,cpu-cpuid.AVX512BW,cpu-cpuid.FMA3,cpu-cpuid.VMX,cpu-hardware_multithreading,kernel-version.full",
        "node.alpha.kubernetes.io/ttl": "0",
        "projectcalico.org/IPv4Address": format!("{ip}/20"),
        "projectcalico.org/IPv4VXLANTunnelAddr": format!("192.168.{}.{}", rng.below(255), rng.below(255)),
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    })
}

/// 0–3 taints; about one node in five has one that blocks a plain pod.
fn taints(rng: &mut Rng) -> (Vec<Value>, bool) {
    let mut taints = Vec::new();
    let mut unschedulable = false;
    match rng.below(20) {
        0 => {
            unschedulable = true;
            taints.push(json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-20T08:00:00Z"}));
        }
        1 | 2 => taints.push(json!({"key": "dedicated", "value": "gpu", "effect": "NoSchedule"})),
        3 => taints.push(json!({"key": "example.com/maintenance", "value": "true", "effect": "NoExecute", "timeAdded": "2026-11-28T10:00:00Z"})),
        4..=6 => taints.push(json!({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})),
        7 => {
            taints.push(json!({"key": "spot", "value": "true", "effect": "PreferNoSchedule"}));
            taints.push(json!({"key": "sla", "value": "900", "effect": "NoSchedule"}));
            taints.push(json!({"key": "team", "value": "ml", "effect": "NoSchedule"}));
        }
        _ => {}
    }
    (taints, unschedulable)
}

fn status(rng: &mut Rng, i: usize, allocatable: Value) -> Value {
    let images: Vec<Value> = (0..50)
        .map(|k| {
            json!({
                "names": [
                    format!("registry.example.com/team-{}/service-{k}@sha256:{}", k % 9, rng.hex(64)),
                    format!("registry.example.com/team-{}/service-{k}:v1.{}.{}", k % 9, rng.below(30), rng.below(10)),
                ],
                "sizeBytes": 10_000_000 + rng.below(900_000_000),
            })
        })
        .collect();
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "lastHeartbeatTime": "2026-11-29T10:00:00Z",
               "lastTransitionTime": "2026-11-01T10:00:00Z", "reason": reason, "message": message})
    };
    json!({
        "capacity": {"cpu": "16", "ephemeral-storage": "104845292Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0", "memory": "64929188Ki", "pods": "110"},
        "allocatable": allocatable,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
        ],
        "addresses": [
            {"type": "InternalIP", "address": format!("10.0.{}.{}", i / 250, i % 250 + 2)},
            {"type": "Hostname", "address": node_name(i)},
            {"type": "InternalDNS", "address": node_name(i)},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": rng.hex(32), "systemUUID": rng.hex(32), "bootID": rng.hex(32),
                      "kernelVersion": "6.1.115-126.197.amzn2023.x86_64", "osImage": "Amazon Linux 2023",
                      "containerRuntimeVersion": "containerd://1.7.23", "kubeletVersion": "v1.34.2",
                      "kubeProxyVersion": "v1.34.2", "operatingSystem": "linux", "architecture": "amd64"},
        "images": images,
    })
}

/// What the host leaves of each Node: the answer to one of the policy's
/// node queries, or to a query without field masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum View {
    /// `spec.taints`, `spec.unschedulable`, `status.allocatable`
    /// (`runtimeHandlerCheck: off`, and every release before the check).
    Plain,
    /// … and `status.runtimeHandlers.name`: policy-server's masks walk into
    /// arrays, so each entry keeps only its `name` (every pod, by default).
    HandlerNames,
    /// … and `status.runtimeHandlers` (the whole entries, features
    /// included) and `status.features` (pods with `hostUsers: false`, a
    /// `recursiveReadOnly: Enabled` mount, or `supplementalGroupsPolicy:
    /// Strict`).
    HandlerFeatures,
    /// No field masks: the whole Node, `status` with its images and conditions.
    Unmasked,
}

impl View {
    /// The field masks of the query this view answers, sorted as the
    /// policy sends them; `None` for [`View::Unmasked`].
    pub fn field_masks(self) -> Option<&'static [&'static str]> {
        const PLAIN: [&str; 3] = ["spec.taints", "spec.unschedulable", "status.allocatable"];
        const NAMES: [&str; 4] = [
            "spec.taints",
            "spec.unschedulable",
            "status.allocatable",
            "status.runtimeHandlers.name",
        ];
        const FEATURES: [&str; 5] = [
            "spec.taints",
            "spec.unschedulable",
            "status.allocatable",
            "status.features",
            "status.runtimeHandlers",
        ];
        match self {
            View::Plain => Some(&PLAIN),
            View::HandlerNames => Some(&NAMES),
            View::HandlerFeatures => Some(&FEATURES),
            View::Unmasked => None,
        }
    }
}

/// The container runtime of a node, as its `status.runtimeHandlers` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Runtime {
    /// containerd 2.x with kata-deploy 4.x's shims: [`KATA_DEPLOY_HANDLERS`]
    /// besides `runc` and the default handler `""`.
    KataDeploy,
    /// containerd that did not load kata-deploy's configuration (as on k3s,
    /// whose containerd reads its own template): `""` and `runc` only,
    /// whatever the node's kata label says.
    ContainerdOnly,
}

/// The RuntimeClass handlers kata-deploy 4.x installs on an amd64 node
/// (one per shim; each RuntimeClass is named as its handler).
pub const KATA_DEPLOY_HANDLERS: [&str; 10] = [
    "kata-clh",
    "kata-dragonball",
    "kata-fc",
    "kata-qemu",
    "kata-qemu-coco-dev",
    "kata-qemu-nvidia-gpu",
    "kata-qemu-nvidia-gpu-snp",
    "kata-qemu-runtime-rs",
    "kata-qemu-snp",
    "kata-qemu-tdx",
];

/// `status.runtimeHandlers` as the kubelet publishes containerd 2.x's
/// introspection: one entry per configured runtime in Go map order (random:
/// shuffled here), and `""` for the default runtime (`runc`) right after
/// it. User namespaces are reported for runc-type runtimes only;
/// recursive read-only mounts for every runtime.
fn runtime_handlers(rng: &mut Rng, runtime: Runtime) -> Value {
    let mut names: Vec<&str> = vec!["runc"];
    if runtime == Runtime::KataDeploy {
        names.extend(KATA_DEPLOY_HANDLERS);
    }
    for k in (1..names.len()).rev() {
        names.swap(k, rng.below(k as u64 + 1) as usize);
    }
    let entry = |name: &str, runc: bool| json!({"name": name, "features": {"recursiveReadOnlyMounts": true, "userNamespaces": runc}});
    let mut entries = Vec::new();
    for name in names {
        entries.push(entry(name, name == "runc"));
        if name == "runc" {
            entries.push(entry("", true));
        }
    }
    Value::Array(entries)
}

/// `runtimeHandlers` under a view: absent, pruned to names, or whole.
fn handlers_in(view: View, handlers: &Value) -> Option<Value> {
    match view {
        View::Plain => None,
        View::HandlerNames => Some(Value::Array(
            handlers
                .as_array()
                .into_iter()
                .flatten()
                .map(|h| json!({"name": h["name"]}))
                .collect(),
        )),
        View::HandlerFeatures | View::Unmasked => Some(handlers.clone()),
    }
}

/// `count` kata nodes as the host returns them under `view`; node `i` runs
/// `runtime(i)`. Same arguments, same nodes.
pub fn nodes(
    count: usize,
    view: View,
    seed: u64,
    runtime: impl Fn(usize) -> Runtime,
) -> Vec<Value> {
    let mut rng = Rng::new(seed);
    // The fields only some views have draw from their own streams, so that
    // every view of node `i` is the same node.
    let mut extra = Rng::new(seed ^ 0x756e_6d61_736b_6564);
    let mut order = Rng::new(seed ^ 0x6861_6e64_6c65_7273);
    (0..count)
        .map(|i| {
            let name = node_name(i);
            let instance = instance(&mut rng, i);
            let (taints, unschedulable) = taints(&mut rng);
            let mut spec = json!({});
            if !taints.is_empty() {
                spec["taints"] = Value::Array(taints);
            }
            if unschedulable {
                spec["unschedulable"] = json!(true);
            }
            let mut node = json!({
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "uid": format!("{}-{}-{}-{}-{}", rng.hex(8), rng.hex(4), rng.hex(4), rng.hex(4), rng.hex(12)),
                    "resourceVersion": (1_000_000 + rng.below(9_000_000)).to_string(),
                    "creationTimestamp": "2026-11-01T10:00:00Z",
                    "labels": labels(&mut rng, i, &name, instance.0),
                    "annotations": annotations(&mut rng, i),
                },
                "spec": spec,
            });
            let allocatable = allocatable(i, instance);
            let handlers = runtime_handlers(&mut order, runtime(i));
            if view == View::Unmasked {
                node["spec"]["podCIDR"] = json!(format!("192.168.{}.0/24", i % 256));
                node["spec"]["providerID"] =
                    json!(format!("aws:///eu-west-1a/i-0{}", extra.hex(16)));
                node["status"] = status(&mut extra, i, allocatable);
            } else {
                node["status"] = json!({ "allocatable": allocatable });
            }
            if let Some(handlers) = handlers_in(view, &handlers) {
                node["status"]["runtimeHandlers"] = handlers;
            }
            // containerd 2.x reports the CRI's features (KEP-3619).
            if matches!(view, View::HandlerFeatures | View::Unmasked) {
                node["status"]["features"] = json!({"supplementalGroupsPolicy": true});
            }
            node
        })
        .collect()
}

/// A NodeList of `count` kata nodes ([`nodes`]), serialized as the host
/// hands it to the guest.
pub fn node_list(
    count: usize,
    view: View,
    seed: u64,
    runtime: impl Fn(usize) -> Runtime,
) -> String {
    list_of(nodes(count, view, seed, runtime)).to_string()
}

/// [`nodes`] of either shape: nodes `0..count`.
pub fn shaped_nodes(
    shape: Shape,
    count: usize,
    view: View,
    seed: u64,
    runtime: impl Fn(usize) -> Runtime,
) -> Vec<Value> {
    shaped_range(shape, 0..count, view, seed, runtime)
}

/// Nodes `range` of the cluster `seed` of `shape`: the same nodes as in
/// any longer list. A realistic node depends on its index alone; the lean
/// generator is one stream, so its prefix is made and dropped.
pub fn shaped_range(
    shape: Shape,
    range: std::ops::Range<usize>,
    view: View,
    seed: u64,
    runtime: impl Fn(usize) -> Runtime,
) -> Vec<Value> {
    match shape {
        Shape::Lean => {
            let start = range.start;
            let mut all = nodes(range.end, view, seed, runtime);
            all.drain(..start.min(all.len()));
            all
        }
        Shape::Realistic => range
            .map(|i| realistic::node(i, view, seed, runtime(i)))
            .collect(),
    }
}

/// [`node_list`] of either shape.
pub fn shaped_node_list(
    shape: Shape,
    count: usize,
    view: View,
    seed: u64,
    runtime: impl Fn(usize) -> Runtime,
) -> String {
    list_of(shaped_nodes(shape, count, view, seed, runtime)).to_string()
}

/// The NodeList around `items`.
pub fn list_of(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items})
}

/// Every node runs kata-deploy's shims.
pub fn kata_deploy(_: usize) -> Runtime {
    Runtime::KataDeploy
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_realistic() {
        let a = node_list(50, View::HandlerNames, 7, kata_deploy);
        assert_eq!(
            a,
            node_list(50, View::HandlerNames, 7, kata_deploy),
            "same seed, same bytes"
        );
        assert_ne!(a, node_list(50, View::HandlerNames, 8, kata_deploy));
        let v: Value = serde_json::from_str(&a).unwrap();
        let items = v["items"].as_array().unwrap();
        assert_eq!(items.len(), 50);
        assert_eq!(items[3]["metadata"]["name"], node_name(3));
        assert_eq!(
            items[0]["metadata"]["labels"].as_object().unwrap().len(),
            20
        );
        assert_eq!(
            items[0]["metadata"]["annotations"]
                .as_object()
                .unwrap()
                .len(),
            10
        );
        assert!(items.iter().all(|n| {
            let status = n["status"].as_object().unwrap();
            status.len() == 2 && status["allocatable"]["pods"] == "110"
        }));
        let gpus = items
            .iter()
            .filter(|n| n["status"]["allocatable"].get("nvidia.com/pgpu").is_some())
            .count();
        assert_eq!(gpus, 7, "one node group in seven");
        let tainted = items
            .iter()
            .filter(|n| n["spec"].get("taints").is_some())
            .count();
        assert!(tainted > 0 && tainted < 40, "{tainted}");
        let unmasked = node_list(50, View::Unmasked, 7, kata_deploy);
        assert!(
            unmasked.len() > 5 * a.len(),
            "the full status dominates: {} vs {}",
            unmasked.len(),
            a.len()
        );
    }

    /// FNV-1a: a fingerprint of the lean payloads as they were before the
    /// realistic shape, so that every earlier figure stays comparable.
    fn fingerprint(text: &str) -> (usize, u64) {
        let hash = (text.bytes()).fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        });
        (text.len(), hash)
    }

    #[test]
    fn the_lean_shape_is_byte_for_byte_what_it_was() {
        let got: Vec<(usize, u64)> = [
            View::Plain,
            View::HandlerNames,
            View::HandlerFeatures,
            View::Unmasked,
        ]
        .into_iter()
        .map(|view| fingerprint(&node_list(40, view, 0x6b61_7461, kata_deploy)))
        .collect();
        assert_eq!(got, LEAN_FINGERPRINTS);
        for view in [View::Plain, View::Unmasked] {
            assert_eq!(
                shaped_node_list(Shape::Lean, 40, view, 5, kata_deploy),
                node_list(40, view, 5, kata_deploy)
            );
            // A slice is the same nodes as in the whole list.
            assert_eq!(
                shaped_range(Shape::Lean, 10..40, view, 5, kata_deploy),
                nodes(40, view, 5, kata_deploy)[10..]
            );
        }
    }

    /// Recorded from the generator of commit 2932bf5 (before shapes).
    const LEAN_FINGERPRINTS: [(usize, u64); 4] = [
        (84806, 4535099259037524426),
        (97406, 13503617387937139786),
        (131286, 7406875280611285700),
        (589840, 9740992831526214814),
    ];

    #[test]
    fn nodes_report_kata_deploys_handlers_in_containerds_way() {
        let items = nodes(40, View::HandlerFeatures, 7, kata_deploy);
        let mut first_names = std::collections::BTreeSet::new();
        for node in &items {
            let handlers = node["status"]["runtimeHandlers"].as_array().unwrap();
            let names: Vec<&str> = handlers
                .iter()
                .map(|h| h["name"].as_str().unwrap())
                .collect();
            assert_eq!(handlers.len(), 12, "{names:?}");
            let runc = names.iter().position(|n| *n == "runc").unwrap();
            assert_eq!(
                names[runc + 1],
                "",
                "the default handler follows runc: {names:?}"
            );
            for kata in KATA_DEPLOY_HANDLERS {
                assert!(names.contains(&kata), "{kata} in {names:?}");
            }
            for h in handlers {
                let runc_type = h["name"] == "" || h["name"] == "runc";
                assert_eq!(
                    h["features"],
                    json!({"recursiveReadOnlyMounts": true, "userNamespaces": runc_type}),
                    "{h}"
                );
            }
            first_names.insert(names[0]);
        }
        assert!(
            first_names.len() > 3,
            "the order varies per node: {first_names:?}"
        );
        let k3s = nodes(3, View::HandlerNames, 7, |_| Runtime::ContainerdOnly);
        for node in &k3s {
            let names: Vec<&str> = node["status"]["runtimeHandlers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["runc", ""]);
        }
    }

    /// What policy-server's field masks leave of an unmasked node: `metadata`
    /// whole, each masked path kept, walking into arrays.
    fn apply_masks(node: &Value, masks: &[&str]) -> Value {
        fn keep(from: &Value, path: &[&str], into: &mut Value) {
            let Some((first, rest)) = path.split_first() else {
                *into = from.clone();
                return;
            };
            if let Some(items) = from.as_array() {
                if !into.is_array() {
                    *into = Value::Array(vec![json!({}); items.len()]);
                }
                for (item, out) in items.iter().zip(into.as_array_mut().unwrap()) {
                    keep(item, path, out);
                }
                return;
            }
            if let Some(value) = from.get(*first) {
                if into.get(*first).is_none() {
                    into[*first] = json!({});
                }
                keep(value, rest, &mut into[*first]);
            }
        }
        let mut out = json!({"apiVersion": node["apiVersion"], "kind": node["kind"],
                             "metadata": node["metadata"], "spec": {}, "status": {}});
        for mask in masks {
            let path: Vec<&str> = mask.split('.').collect();
            keep(node, &path, &mut out);
        }
        out
    }

    #[test]
    fn each_view_is_the_unmasked_node_under_its_masks() {
        let runtime = |i: usize| {
            if i.is_multiple_of(3) {
                Runtime::ContainerdOnly
            } else {
                Runtime::KataDeploy
            }
        };
        for shape in [Shape::Lean, Shape::Realistic] {
            let unmasked = shaped_nodes(shape, 300, View::Unmasked, 11, runtime);
            for view in [View::Plain, View::HandlerNames, View::HandlerFeatures] {
                let masks = view.field_masks().unwrap();
                let mut sorted = masks.to_vec();
                sorted.sort();
                assert_eq!(masks, sorted, "sent sorted");
                let masked = shaped_nodes(shape, 300, view, 11, runtime);
                for (masked, full) in masked.iter().zip(&unmasked) {
                    assert_eq!(*masked, apply_masks(full, masks), "{shape} {view:?}");
                }
            }
        }
        let names = nodes(2, View::HandlerNames, 11, kata_deploy);
        let entries = names[0]["status"]["runtimeHandlers"].as_array().unwrap();
        assert!(entries.iter().all(|e| e.as_object().unwrap().len() == 1));
        assert!(
            nodes(2, View::Plain, 11, kata_deploy)[0]["status"]
                .get("runtimeHandlers")
                .is_none()
        );
    }
}
