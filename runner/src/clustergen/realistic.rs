//! The realistic node shape ([`super::Shape::Realistic`]): nodes as an EKS
//! cluster with node-feature-discovery (NFD) and kata-deploy stores them,
//! about 93 labels and 9 KB of JSON each, in pools.
//!
//! Why pools: a real cluster is a few node groups of identical instances,
//! so most of a node's metadata repeats across its pool (and a policy that
//! caches or compares nodes sees that repetition). Node `i`'s pool, zone
//! and per-node state (cordoned, NotReady) are drawn from a hash of the
//! seed and `i` alone, so node `i` is the same node whatever the count
//! (`kwbench nodes --from I` prints any slice of a cluster). Within a pool
//! every node has the same labels but `kubernetes.io/hostname` and the
//! `topology.k8s.aws/network-node-layer-*` ones (shared by a few nodes:
//! the network spine under them), the same taints, allocatable and
//! runtime handlers (in the order containerd's map gives them: per node).

use serde_json::{Map, Value, json};

use super::{KATA_DEPLOY_HANDLERS, Rng, Runtime, View, handlers_in, node_name};

/// One node group: what every node of it shares.
pub struct Pool {
    pub name: &'static str,
    pub instance: &'static str,
    pub arch: Arch,
    /// Allocatable cpu, memory (Ki), and the capacity cpu and memory.
    pub cpu: &'static str,
    pub memory: &'static str,
    pub capacity_cpu: &'static str,
    pub capacity_memory: &'static str,
    /// `nvidia.com/pgpu` per node (VFIO passthrough, as Kata takes GPUs).
    pub gpus: u32,
    /// The pool's taint, `key=value:Effect`.
    pub taint: Option<(&'static str, &'static str, &'static str)>,
    pub spot: bool,
    /// Share of the nodes, in percent.
    pub weight: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    Intel,
    Amd,
    Graviton,
}

/// Ten pools in three zones: 30 pool×zone groups at 10,000 nodes.
/// Metal instances (Kata needs /dev/kvm), allocatable as EKS's kubelet
/// reservations leave it.
pub const POOLS: [Pool; 10] = [
    pool(
        "kata-general-m6i",
        "m6i.metal",
        Arch::Intel,
        ("127610m", "518418000Ki"),
        ("128", "527419500Ki"),
        20,
    ),
    pool(
        "kata-general-m7i",
        "m7i.metal-24xl",
        Arch::Intel,
        ("95690m", "386312000Ki"),
        ("96", "395313800Ki"),
        18,
    ),
    pool(
        "kata-large-m7i",
        "m7i.metal-48xl",
        Arch::Intel,
        ("191450m", "782538000Ki"),
        ("192", "791539700Ki"),
        6,
    ),
    pool(
        "kata-compute-c6i",
        "c6i.metal",
        Arch::Intel,
        ("127610m", "255300000Ki"),
        ("128", "264301700Ki"),
        12,
    ),
    Pool {
        spot: true,
        ..pool(
            "kata-spot-c6i",
            "c6i.metal",
            Arch::Intel,
            ("127610m", "255300000Ki"),
            ("128", "264301700Ki"),
            8,
        )
    },
    pool(
        "kata-arm-m7g",
        "m7g.metal",
        Arch::Graviton,
        ("63770m", "255500000Ki"),
        ("64", "264501800Ki"),
        12,
    ),
    Pool {
        spot: true,
        ..pool(
            "kata-spot-m7g",
            "m7g.metal",
            Arch::Graviton,
            ("63770m", "255500000Ki"),
            ("64", "264501800Ki"),
            5,
        )
    },
    pool(
        "kata-sev-m6a",
        "m6a.metal",
        Arch::Amd,
        ("191450m", "782538000Ki"),
        ("192", "791539700Ki"),
        7,
    ),
    Pool {
        taint: Some(("dedicated", "db", "NoSchedule")),
        ..pool(
            "kata-db-r6i",
            "r6i.metal",
            Arch::Intel,
            ("127610m", "1046410000Ki"),
            ("128", "1055411700Ki"),
            7,
        )
    },
    // 4 GPUs: the bench's case (f) asks for 8 and must fit no node.
    Pool {
        gpus: 4,
        taint: Some(("nvidia.com/gpu", "present", "NoSchedule")),
        ..pool(
            "kata-gpu-g4dn",
            "g4dn.12xlarge",
            Arch::Intel,
            ("47810m", "186398000Ki"),
            ("48", "195399700Ki"),
            5,
        )
    },
];

const fn pool(
    name: &'static str,
    instance: &'static str,
    arch: Arch,
    (cpu, memory): (&'static str, &'static str),
    (capacity_cpu, capacity_memory): (&'static str, &'static str),
    weight: u64,
) -> Pool {
    Pool {
        name,
        instance,
        arch,
        cpu,
        memory,
        capacity_cpu,
        capacity_memory,
        gpus: 0,
        taint: None,
        spot: false,
        weight,
    }
}

const ZONES: [(&str, &str); 3] = [
    ("eu-west-1a", "euw1-az1"),
    ("eu-west-1b", "euw1-az2"),
    ("eu-west-1c", "euw1-az3"),
];

/// splitmix64's finalizer: a well-mixed hash of a few words.
fn mix(words: &[u64]) -> u64 {
    let mut rng = Rng::new(0x7265_616c_6973_7469);
    let mut h = 0;
    for w in words {
        rng.0 ^= w.wrapping_add(h);
        h = rng.next_u64();
    }
    h
}

/// Per-node state besides its pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Ready,
    /// `kubectl cordon`: about 1 %.
    Cordoned,
    /// The kubelet stopped posting status: about 1 %.
    NotReady,
}

/// Where node `i` sits: pool, zone (index into [`ZONES`]) and state.
pub fn placement(seed: u64, i: usize) -> (&'static Pool, usize, State) {
    let h = mix(&[seed, i as u64, 1]);
    let total: u64 = POOLS.iter().map(|p| p.weight).sum();
    let mut at = h % total;
    let pool = POOLS
        .iter()
        .find(|p| {
            let here = at < p.weight;
            at = at.saturating_sub(p.weight);
            here
        })
        .unwrap_or(&POOLS[0]);
    let zone = ((h >> 20) % 3) as usize;
    let state = match (h >> 32) % 100 {
        0 => State::Cordoned,
        1 => State::NotReady,
        _ => State::Ready,
    };
    (pool, zone, state)
}

/// FNV-1a of a name: a pool's identity in the hashes.
fn name_hash(name: &str) -> u64 {
    (name.bytes()).fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// A fixed-length hex string drawn from a hash (AMI ids, launch template
/// ids, network node ids: stable per whatever the words name).
fn hex_of(words: &[u64], len: usize) -> String {
    let mut rng = Rng::new(mix(words));
    rng.hex(len)
}

/// The NFD feature labels of an architecture (without the
/// `feature.node.kubernetes.io/` prefix), sorted, with their values: what
/// NFD 0.17's default sources find on such a metal instance.
fn features(arch: Arch) -> Vec<(String, &'static str)> {
    #[rustfmt::skip]
    const X86_CPUID: [&str; 44] = [
        "ADX", "AESNI", "AMXBF16", "AMXINT8", "AMXTILE", "AVX", "AVX2", "AVX512BF16",
        "AVX512BITALG", "AVX512BW", "AVX512CD", "AVX512DQ", "AVX512F", "AVX512FP16", "AVX512IFMA",
        "AVX512VBMI", "AVX512VBMI2", "AVX512VL", "AVX512VNNI", "AVX512VPOPCNTDQ", "AVXVNNI",
        "CETIBT", "CETSS", "CMPXCHG8", "FMA3", "FSRM", "FXSR", "FXSROPT", "GFNI", "IBPB", "LAHF",
        "MOVBE", "MOVDIR64B", "MOVDIRI", "OSXSAVE", "SERIALIZE", "SHA", "STIBP", "SYSCALL", "SYSEE",
        "VAES", "VMX", "VPCLMULQDQ", "WAITPKG",
    ];
    #[rustfmt::skip]
    const ARM_CPUID: [&str; 41] = [
        "AES", "ASIMD", "ASIMDDP", "ASIMDFHM", "ASIMDHP", "ASIMDRDM", "ATOMICS", "BF16", "CPUID",
        "CRC32", "DCPODP", "DCPOP", "DGH", "DIT", "EVTSTRM", "FCMA", "FLAGM", "FLAGM2", "FP",
        "FPHP", "FRINT", "I8MM", "ILRCPC", "JSCVT", "LRCPC", "PACA", "PACG", "PMULL", "RNG", "SB",
        "SHA1", "SHA2", "SHA3", "SHA512", "SM3", "SM4", "SSBS", "SVE", "SVEBF16", "SVEI8MM",
        "USCAT",
    ];
    let (cpuid, model, kernel): (&[&str], [&'static str; 3], &'static str) = match arch {
        Arch::Intel => (
            &X86_CPUID[..],
            ["6", "143", "Intel"],
            "6.1.119-129.201.amzn2023.x86_64",
        ),
        Arch::Amd => (
            &X86_CPUID[..40],
            ["25", "1", "AMD"],
            "6.1.119-129.201.amzn2023.x86_64",
        ),
        Arch::Graviton => (
            &ARM_CPUID[..],
            ["0", "3329", "ARM"],
            "6.1.119-129.201.amzn2023.aarch64",
        ),
    };
    let mut out: Vec<(String, &'static str)> = cpuid
        .iter()
        .map(|f| (format!("cpu-cpuid.{f}"), "true"))
        .collect();
    let kernel_full: &'static str = kernel;
    out.extend([
        (
            "cpu-hardware_multithreading".into(),
            if arch == Arch::Graviton {
                "false"
            } else {
                "true"
            },
        ),
        ("cpu-model.family".into(), model[0]),
        ("cpu-model.id".into(), model[1]),
        ("cpu-model.vendor_id".into(), model[2]),
        ("cpu-rdt.RDTCMT".into(), "true"),
        ("cpu-rdt.RDTMBM".into(), "true"),
        ("kernel-config.NO_HZ".into(), "true"),
        ("kernel-config.NO_HZ_IDLE".into(), "true"),
        ("kernel-selinux.enabled".into(), "false"),
        ("kernel-version.full".into(), kernel_full),
        ("kernel-version.major".into(), "6"),
        ("kernel-version.minor".into(), "1"),
        ("kernel-version.revision".into(), "119"),
        ("memory-numa".into(), "true"),
        ("memory-nv.present".into(), "true"),
        ("pci-0200_1d0f.present".into(), "true"),
        ("pci-0200_1d0f.sriov.capable".into(), "true"),
        ("pci-0300_1d0f.present".into(), "true"),
        ("pci-0604_1d0f.present".into(), "true"),
        ("storage-nonrotationaldisk".into(), "true"),
        ("system-os_release.ID".into(), "amzn"),
        ("system-os_release.VERSION_ID".into(), "2023"),
        ("system-os_release.VERSION_ID.major".into(), "2023"),
        ("system-os_release.VERSION_ID.minor".into(), ""),
    ]);
    match arch {
        Arch::Amd => out.extend([
            ("cpu-cpuid.SEV".into(), "true"),
            ("cpu-security.sev.enabled".into(), "true"),
            ("cpu-security.sev.encrypted_state_cpuid".into(), "true"),
            ("cpu-security.sev.es.enabled".into(), "true"),
            ("cpu-security.sev.snp.enabled".into(), "true"),
        ]),
        Arch::Intel => out.extend([
            ("cpu-security.tdx.enabled".into(), "false"),
            ("cpu-pstate.status".into(), "active"),
            ("cpu-pstate.turbo".into(), "true"),
        ]),
        Arch::Graviton => out.extend([
            ("cpu-cpuid.SVE2".into(), "true"),
            ("cpu-cpuid.SVEAES".into(), "true"),
            ("cpu-cpuid.SVEPMULL".into(), "true"),
            ("cpu-cpuid.SVESHA3".into(), "true"),
            ("cpu-cpuid.SVESM4".into(), "true"),
            ("cpu-cpuid.SVEBITPERM".into(), "true"),
            ("cpu-cpuid.ASIMDFHM2".into(), "true"),
        ]),
    }
    out.sort();
    out
}

/// The labels of a node: the pool's, the zone's, and the per-node ones.
fn labels(seed: u64, i: usize, pool: &Pool, zone: usize, name: &str) -> Map<String, Value> {
    let (zone_name, zone_id) = ZONES[zone];
    let arch = match pool.arch {
        Arch::Graviton => "arm64",
        Arch::Intel | Arch::Amd => "amd64",
    };
    let pool_id = name_hash(pool.name);
    let mut labels = Map::new();
    let mut put = |k: &str, v: String| {
        labels.insert(k.to_string(), Value::String(v));
    };
    put("beta.kubernetes.io/arch", arch.into());
    put("beta.kubernetes.io/instance-type", pool.instance.into());
    put("beta.kubernetes.io/os", "linux".into());
    put(
        "eks.amazonaws.com/capacityType",
        if pool.spot { "SPOT" } else { "ON_DEMAND" }.into(),
    );
    put("eks.amazonaws.com/nodegroup", pool.name.into());
    put(
        "eks.amazonaws.com/nodegroup-image",
        format!("ami-0{}", hex_of(&[seed, pool_id, 2], 16)),
    );
    put(
        "failure-domain.beta.kubernetes.io/region",
        "eu-west-1".into(),
    );
    put("failure-domain.beta.kubernetes.io/zone", zone_name.into());
    put("k8s.io/cloud-provider-aws", hex_of(&[seed, 3], 32));
    put("katacontainers.io/kata-runtime", "true".into());
    put("kubernetes.io/arch", arch.into());
    put("kubernetes.io/hostname", name.into());
    put("kubernetes.io/os", "linux".into());
    put("node.kubernetes.io/instance-type", pool.instance.into());
    put("topology.ebs.csi.aws.com/zone", zone_name.into());
    put("topology.k8s.aws/zone-id", zone_id.into());
    put("topology.kubernetes.io/region", "eu-west-1".into());
    put("topology.kubernetes.io/zone", zone_name.into());
    // The network spine: layer 1 shared by ~1000 nodes of a zone, layer 2
    // by ~100, layer 3 by ~8 (consecutive indices share a rack here).
    for (layer, span) in [(1u64, 1024usize), (2, 128), (3, 8)] {
        put(
            &format!("topology.k8s.aws/network-node-layer-{layer}"),
            format!(
                "nn-{}",
                hex_of(&[seed, zone as u64, layer, (i / span) as u64], 17)
            ),
        );
    }
    for (feature, value) in features(pool.arch) {
        put(
            &format!("feature.node.kubernetes.io/{feature}"),
            value.into(),
        );
    }
    labels
}

/// NFD's, the CSI drivers', the kubelet's: per pool but for the node's IP
/// and instance id.
fn annotations(i: usize, pool: &Pool, instance_id: &str) -> Value {
    let feature_labels: Vec<String> = features(pool.arch).into_iter().map(|(f, _)| f).collect();
    json!({
        "alpha.kubernetes.io/provided-node-ip": ip(i),
        "csi.volume.kubernetes.io/nodeid": json!({"ebs.csi.aws.com": instance_id, "efs.csi.aws.com": instance_id}).to_string(),
        "nfd.node.kubernetes.io/extended-resources": "",
        "nfd.node.kubernetes.io/feature-labels": feature_labels.join(","),
        "nfd.node.kubernetes.io/worker.version": "v0.17.3",
        "node.alpha.kubernetes.io/ttl": "0",
        "volumes.kubernetes.io/controller-managed-attach-detach": "true",
    })
}

fn ip(i: usize) -> String {
    format!("10.0.{}.{}", i / 250, i % 250 + 2)
}

/// The pool's taint, then the node's own state's.
fn taints(pool: &Pool, state: State) -> Vec<Value> {
    let mut taints: Vec<Value> = pool
        .taint
        .iter()
        .map(|(key, value, effect)| json!({"key": key, "value": value, "effect": effect}))
        .collect();
    match state {
        State::Ready => {}
        State::Cordoned => taints.push(json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-20T08:00:00Z"})),
        State::NotReady => {
            taints.push(json!({"key": "node.kubernetes.io/unreachable", "effect": "NoSchedule", "timeAdded": "2026-11-28T10:00:00Z"}));
            taints.push(json!({"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule", "timeAdded": "2026-11-28T10:00:00Z"}));
            taints.push(json!({"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-11-28T10:05:00Z"}));
        }
    }
    taints
}

fn allocatable(pool: &Pool) -> Value {
    let mut a = json!({"cpu": pool.cpu, "ephemeral-storage": "95551679124", "hugepages-1Gi": "0",
                       "hugepages-2Mi": "0", "memory": pool.memory, "pods": "737"});
    if pool.gpus > 0 {
        a["nvidia.com/pgpu"] = json!(pool.gpus.to_string());
    }
    a
}

/// kata-deploy 4.x's shims on arm64: no TEE, no GPU, no Firecracker.
const ARM_HANDLERS: [&str; 4] = [
    "kata-clh",
    "kata-dragonball",
    "kata-qemu",
    "kata-qemu-runtime-rs",
];

/// As [`super::runtime_handlers`], with the arch's set of shims.
fn runtime_handlers(rng: &mut Rng, runtime: Runtime, arch: Arch) -> Value {
    let mut names: Vec<&str> = vec!["runc"];
    if runtime == Runtime::KataDeploy {
        names.extend(match arch {
            Arch::Graviton => &ARM_HANDLERS[..],
            Arch::Intel | Arch::Amd => &KATA_DEPLOY_HANDLERS[..],
        });
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

/// The whole `status` (unmasked): what the kubelet posts. No `images`: the
/// reference node (9.2 KB as stored, managedFields left out) is all labels,
/// annotations, conditions and handlers.
fn status(rng: &mut Rng, i: usize, pool: &Pool, state: State, allocatable: Value) -> Value {
    let (arch, kernel) = match pool.arch {
        Arch::Graviton => ("arm64", "6.1.119-129.201.amzn2023.aarch64"),
        Arch::Intel | Arch::Amd => ("amd64", "6.1.119-129.201.amzn2023.x86_64"),
    };
    let condition = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "lastHeartbeatTime": "2026-11-29T10:00:00Z",
               "lastTransitionTime": "2026-11-01T10:00:00Z", "reason": reason, "message": message})
    };
    let ready = match state {
        State::NotReady => condition(
            "Ready",
            "Unknown",
            "NodeStatusUnknown",
            "Kubelet stopped posting node status.",
        ),
        _ => condition(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status",
        ),
    };
    let mut capacity = allocatable.clone();
    capacity["cpu"] = json!(pool.capacity_cpu);
    capacity["memory"] = json!(pool.capacity_memory);
    capacity["ephemeral-storage"] = json!("104845292Ki");
    json!({
        "capacity": capacity,
        "allocatable": allocatable,
        "conditions": [
            condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
            condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            condition("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
            ready,
        ],
        "addresses": [
            {"type": "InternalIP", "address": ip(i)},
            {"type": "InternalDNS", "address": node_name(i)},
            {"type": "Hostname", "address": node_name(i)},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {"machineID": rng.hex(32), "systemUUID": format!("ec2{}", rng.hex(29)), "bootID": rng.hex(32),
                      "kernelVersion": kernel, "osImage": "Amazon Linux 2023.6.20250115",
                      "containerRuntimeVersion": "containerd://2.0.5", "kubeletVersion": "v1.34.2-eks-1a2b3c4",
                      "kubeProxyVersion": "v1.34.2-eks-1a2b3c4", "operatingSystem": "linux", "architecture": arch},
    })
}

/// Node `i` of the realistic cluster `seed` under `view`.
pub fn node(i: usize, view: View, seed: u64, runtime: Runtime) -> Value {
    let (pool, zone, state) = placement(seed, i);
    // Separate streams, so that every view of node `i` is the same node.
    let mut meta = Rng::new(mix(&[seed, i as u64, 2]));
    let mut order = Rng::new(mix(&[seed, i as u64, 3]));
    let mut extra = Rng::new(mix(&[seed, i as u64, 4]));
    let name = node_name(i);
    let instance_id = format!("i-0{}", meta.hex(16));
    let mut spec = json!({});
    let taints = taints(pool, state);
    if !taints.is_empty() {
        spec["taints"] = Value::Array(taints);
    }
    if state == State::Cordoned {
        spec["unschedulable"] = json!(true);
    }
    let mut node = json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": format!("{}-{}-{}-{}-{}", meta.hex(8), meta.hex(4), meta.hex(4), meta.hex(4), meta.hex(12)),
            "resourceVersion": (1_000_000 + meta.below(9_000_000)).to_string(),
            "creationTimestamp": "2026-11-01T10:00:00Z",
            "labels": labels(seed, i, pool, zone, &name),
            "annotations": annotations(i, pool, &instance_id),
        },
        "spec": spec,
    });
    let allocatable = allocatable(pool);
    let handlers = runtime_handlers(&mut order, runtime, pool.arch);
    if view == View::Unmasked {
        node["spec"]["providerID"] = json!(format!("aws:///{}/{instance_id}", ZONES[zone].0));
        node["status"] = status(&mut extra, i, pool, state, allocatable);
    } else {
        node["status"] = json!({ "allocatable": allocatable });
    }
    if let Some(handlers) = handlers_in(view, &handlers) {
        node["status"]["runtimeHandlers"] = handlers;
    }
    if matches!(view, View::HandlerFeatures | View::Unmasked) {
        node["status"]["features"] = json!({"supplementalGroupsPolicy": true});
    }
    node
}

#[cfg(test)]
mod tests;
