//! Seeded generator of realistic NodeList payloads, as policy-server returns
//! them for the policy's query: full `metadata` (labels, annotations; the host
//! never prunes metadata but empties `managedFields`), and either only
//! `spec.taints` / `spec.unschedulable` / `status.allocatable` (masked) or the
//! whole Node with its `status` (unmasked, what a host without field masks
//! sends). Allocatable follows the instance type; one node group in seven
//! has GPUs.
//!
//! Same seed, same bytes: benchmark runs are comparable.

use serde_json::{Value, json};

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

/// A NodeList of `count` kata nodes. `masked`: only `spec.taints`,
/// `spec.unschedulable` and `status.allocatable` besides metadata, as under
/// the policy's field masks.
pub fn node_list(count: usize, masked: bool, seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let items: Vec<Value> = (0..count)
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
            if masked {
                node["status"] = json!({ "allocatable": allocatable });
            } else {
                node["spec"]["podCIDR"] = json!(format!("192.168.{}.0/24", i % 256));
                node["spec"]["providerID"] = json!(format!("aws:///eu-west-1a/i-0{}", rng.hex(16)));
                node["status"] = status(&mut rng, i, allocatable);
            }
            node
        })
        .collect();
    json!({"apiVersion": "v1", "kind": "NodeList", "metadata": {}, "items": items}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_and_realistic() {
        let a = node_list(50, true, 7);
        assert_eq!(a, node_list(50, true, 7), "same seed, same bytes");
        assert_ne!(a, node_list(50, true, 8));
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
            status.len() == 1 && status["allocatable"]["pods"] == "110"
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
        let unmasked = node_list(50, false, 7);
        assert!(
            unmasked.len() > 5 * a.len(),
            "the full status dominates: {} vs {}",
            unmasked.len(),
            a.len()
        );
    }
}
