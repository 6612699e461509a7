//! Cases translated from kube-scheduler's `noderesources/fit_test.go` (test
//! and case names cited). Upstream nodes there often hold a pod already; as
//! a static check sees an empty node, each case's allocatable here is the
//! upstream allocatable minus that pod's usage, which keeps the verdict.
//! Upstream units: cpu "10" means 10m, memory "20" means 20 bytes.

use super::*;
use crate::quantity::Quantity;
use crate::resources::{ContainerResources, PodResources};
use crate::scheduling::test_support::node;
use serde_json::json;

fn list(entries: &[(&str, &str)]) -> ResourceList {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), Quantity::parse(v).unwrap()))
        .collect()
}

fn c(requests: &[(&str, &str)]) -> ContainerResources {
    ContainerResources {
        requests: list(requests),
        limits: ResourceList::new(),
    }
}

/// `cpu` in milli, `memory` in bytes, as upstream's `makeResources`.
fn cm(cpu: u32, memory: u32) -> Vec<(&'static str, String)> {
    vec![("cpu", format!("{cpu}m")), ("memory", memory.to_string())]
}

fn r(base: Vec<(&'static str, String)>, more: &[(&'static str, &str)]) -> ContainerResources {
    let mut entries: Vec<(&str, &str)> = base.iter().map(|(k, v)| (*k, v.as_str())).collect();
    entries.extend_from_slice(more);
    c(&entries)
}

const A: &str = "example.com/aaa";
const B: &str = "example.com/bbb";
const K: &str = "kubernetes.io/something";
const K2: &str = "subdomain.kubernetes.io/something";
const HP: &str = "hugepages-2Mi";

/// Node allocatable: cpu (milli), memory (bytes), pods, then extra entries.
fn alloc(cpu: i64, memory: i64, more: &[(&str, i64)]) -> serde_json::Value {
    let mut a = json!({"cpu": format!("{cpu}m"), "memory": memory.to_string(), "pods": "31"});
    for (k, v) in more {
        a[*k] = json!(v.to_string());
    }
    a
}

struct Case {
    name: &'static str,
    containers: Vec<ContainerResources>,
    init: Vec<(ContainerResources, bool)>,
    pod_level: ContainerResources,
    overhead: ResourceList,
    allocatable: serde_json::Value,
    ignored: &'static [&'static str],
    want: &'static [&'static str],
}

impl Default for Case {
    fn default() -> Self {
        Case {
            name: "",
            containers: vec![],
            init: vec![],
            pod_level: ContainerResources::default(),
            overhead: ResourceList::new(),
            allocatable: alloc(10, 20, &[(A, 5), ("ephemeral-storage", 20), (HP, 5)]),
            ignored: &[],
            want: &[],
        }
    }
}

fn run(case: &Case) -> Vec<String> {
    let pod = PodResources {
        containers: case.containers.clone(),
        init_containers: case.init.clone(),
        pod_level: case.pod_level.clone(),
    };
    let ignored = ResourceNames::parse(case.ignored.iter().copied()).unwrap();
    let fit = ResourceFit::new(&pod.requests(&case.overhead), &ignored);
    let n = node(json!({"name": "n", "allocatable": case.allocatable}));
    all(fit.shortfalls(&n, false))
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Every reason of a `shortfalls` answer that is not an error.
fn all<'n>(answer: Result<Option<Unfit<'n>>, String>) -> Vec<Reason<'n>> {
    answer
        .unwrap()
        .map(|u| u.reasons().cloned().collect())
        .unwrap_or_default()
}

fn init(c: ContainerResources) -> (ContainerResources, bool) {
    (c, false)
}

#[test]
fn upstream_fit_cases() {
    let cases = vec![
        Case {
            name: "TestEnoughRequests/no resources requested always fits",
            containers: vec![c(&[])],
            allocatable: alloc(0, 0, &[]),
            ..Default::default()
        },
        Case {
            name: "TestEnoughRequests/too many resources fails",
            containers: vec![r(cm(1, 1), &[])],
            allocatable: alloc(0, 0, &[]),
            want: &["Insufficient cpu", "Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "too many resources fails due to init container cpu",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(3, 1), &[]))],
            allocatable: alloc(2, 1, &[]),
            want: &["Insufficient cpu"],
            ..Default::default()
        },
        Case {
            name: "too many resources fails due to highest init container cpu",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(3, 1), &[])), init(r(cm(2, 1), &[]))],
            allocatable: alloc(2, 1, &[]),
            want: &["Insufficient cpu"],
            ..Default::default()
        },
        Case {
            name: "too many resources fails due to init container memory",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(1, 3), &[]))],
            allocatable: alloc(1, 1, &[]),
            want: &["Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "too many resources fails due to highest init container memory",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(1, 3), &[])), init(r(cm(1, 2), &[]))],
            allocatable: alloc(1, 1, &[]),
            want: &["Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "init container fits because it's the max, not sum, of containers and init containers",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(1, 1), &[]))],
            allocatable: alloc(1, 1, &[]),
            ..Default::default()
        },
        Case {
            name: "multiple init containers fit because it's the max, not sum, of containers and init containers",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(1, 1), &[])), init(r(cm(1, 1), &[]))],
            allocatable: alloc(1, 1, &[]),
            ..Default::default()
        },
        Case {
            name: "both resources fit",
            containers: vec![r(cm(1, 1), &[])],
            allocatable: alloc(5, 15, &[]),
            ..Default::default()
        },
        Case {
            name: "one resource memory fits",
            containers: vec![r(cm(2, 1), &[])],
            allocatable: alloc(1, 15, &[]),
            want: &["Insufficient cpu"],
            ..Default::default()
        },
        Case {
            name: "one resource cpu fits",
            containers: vec![r(cm(1, 2), &[])],
            allocatable: alloc(5, 1, &[]),
            want: &["Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "equal edge case",
            containers: vec![r(cm(5, 1), &[])],
            allocatable: alloc(5, 1, &[]),
            ..Default::default()
        },
        Case {
            name: "equal edge case for init container",
            containers: vec![r(cm(4, 1), &[])],
            init: vec![init(r(cm(5, 1), &[]))],
            allocatable: alloc(5, 1, &[]),
            ..Default::default()
        },
        Case {
            name: "extended resource fits",
            containers: vec![c(&[(A, "1")])],
            ..Default::default()
        },
        Case {
            name: "extended resource fits for init container",
            containers: vec![c(&[])],
            init: vec![init(c(&[(A, "1")]))],
            ..Default::default()
        },
        Case {
            name: "extended resource capacity enforced",
            containers: vec![r(cm(1, 1), &[(A, "10")])],
            want: &["Insufficient example.com/aaa"],
            ..Default::default()
        },
        Case {
            name: "extended resource capacity enforced for init container",
            containers: vec![c(&[])],
            init: vec![init(r(cm(1, 1), &[(A, "10")]))],
            want: &["Insufficient example.com/aaa"],
            ..Default::default()
        },
        Case {
            name: "extended resource allocatable enforced",
            containers: vec![r(cm(1, 1), &[(A, "1")])],
            allocatable: alloc(10, 20, &[(A, 0)]),
            want: &["Insufficient example.com/aaa"],
            ..Default::default()
        },
        Case {
            name: "extended resource allocatable enforced for multiple containers",
            containers: vec![r(cm(1, 1), &[(A, "3")]), r(cm(1, 1), &[(A, "3")])],
            allocatable: alloc(10, 20, &[(A, 5)]),
            want: &["Insufficient example.com/aaa"],
            ..Default::default()
        },
        Case {
            name: "extended resource allocatable admits multiple init containers",
            containers: vec![c(&[])],
            init: vec![
                init(r(cm(1, 1), &[(A, "3")])),
                init(r(cm(1, 1), &[(A, "3")])),
            ],
            allocatable: alloc(10, 20, &[(A, 3)]),
            ..Default::default()
        },
        Case {
            name: "extended resource allocatable enforced for multiple init containers",
            containers: vec![c(&[])],
            init: vec![
                init(r(cm(1, 1), &[(A, "6")])),
                init(r(cm(1, 1), &[(A, "3")])),
            ],
            allocatable: alloc(10, 20, &[(A, 3)]),
            want: &["Insufficient example.com/aaa"],
            ..Default::default()
        },
        Case {
            name: "extended resource allocatable enforced for unknown resource",
            containers: vec![r(cm(1, 1), &[(B, "1")])],
            want: &["Insufficient example.com/bbb"],
            ..Default::default()
        },
        Case {
            name: "extended resource allocatable enforced for unknown resource for init container",
            containers: vec![c(&[])],
            init: vec![init(r(cm(1, 1), &[(B, "1")]))],
            want: &["Insufficient example.com/bbb"],
            ..Default::default()
        },
        Case {
            name: "kubernetes.io resource capacity enforced",
            containers: vec![r(cm(1, 1), &[(K, "10")])],
            want: &["Insufficient kubernetes.io/something"],
            ..Default::default()
        },
        Case {
            name: "kubernetes.io resource capacity enforced for init container",
            containers: vec![c(&[])],
            init: vec![init(r(cm(1, 1), &[(K2, "10")]))],
            want: &["Insufficient subdomain.kubernetes.io/something"],
            ..Default::default()
        },
        Case {
            name: "hugepages resource capacity enforced",
            containers: vec![r(cm(1, 1), &[(HP, "10")])],
            want: &["Insufficient hugepages-2Mi"],
            ..Default::default()
        },
        Case {
            name: "hugepages resource capacity enforced for init container",
            containers: vec![c(&[])],
            init: vec![init(r(cm(1, 1), &[(HP, "10")]))],
            want: &["Insufficient hugepages-2Mi"],
            ..Default::default()
        },
        Case {
            name: "hugepages resource allocatable enforced for multiple containers",
            containers: vec![r(cm(1, 1), &[(HP, "3")]), r(cm(1, 1), &[(HP, "3")])],
            want: &["Insufficient hugepages-2Mi"],
            ..Default::default()
        },
        Case {
            name: "skip checking ignored extended resource",
            containers: vec![r(cm(1, 1), &[(B, "1")])],
            ignored: &[B],
            ..Default::default()
        },
        Case {
            name: "resources + pod overhead fits",
            containers: vec![r(cm(1, 1), &[])],
            overhead: list(&[("cpu", "3m"), ("memory", "13")]),
            allocatable: alloc(5, 15, &[]),
            ..Default::default()
        },
        Case {
            name: "requests + overhead does not fit for memory",
            containers: vec![r(cm(1, 1), &[])],
            overhead: list(&[("cpu", "1m"), ("memory", "15")]),
            allocatable: alloc(5, 15, &[]),
            want: &["Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "skip checking ignored extended resource via resource groups",
            containers: vec![r(cm(1, 1), &[(B, "1"), (K, "1")])],
            ignored: &["example.com/*"],
            want: &["Insufficient kubernetes.io/something"],
            ..Default::default()
        },
        Case {
            name: "skip checking extended resource request with quantity zero via resource groups",
            containers: vec![r(cm(1, 1), &[(A, "0")])],
            allocatable: alloc(10, 20, &[(A, 0)]),
            ..Default::default()
        },
        Case {
            name: "skip checking resource request with quantity zero",
            containers: vec![c(&[("cpu", "0"), ("memory", "0"), (A, "1")])],
            allocatable: alloc(0, 0, &[(A, 4)]),
            ..Default::default()
        },
        Case {
            name: "both pod-level and container-level resources fit",
            containers: vec![r(cm(1, 1), &[])],
            pod_level: c(&[("cpu", "1m"), ("memory", "2")]),
            allocatable: alloc(5, 15, &[]),
            ..Default::default()
        },
        Case {
            name: "pod-level cpu resource not fit",
            containers: vec![r(cm(1, 1), &[])],
            pod_level: c(&[("cpu", "7m"), ("memory", "2")]),
            allocatable: alloc(5, 15, &[]),
            want: &["Insufficient cpu"],
            ..Default::default()
        },
        Case {
            name: "pod-level memory resource not fit",
            containers: vec![r(cm(1, 1), &[])],
            pod_level: c(&[("cpu", "3m"), ("memory", "2")]),
            allocatable: alloc(5, 1, &[]),
            want: &["Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "pod-level hugepages resource fit",
            pod_level: c(&[("cpu", "3m"), ("memory", "2"), (HP, "5")]),
            ..Default::default()
        },
        Case {
            name: "both pod-level and container-level hugepages resource fit",
            containers: vec![r(cm(1, 1), &[(HP, "3")])],
            pod_level: c(&[("cpu", "3m"), ("memory", "2"), (HP, "5")]),
            ..Default::default()
        },
        Case {
            name: "pod-level hugepages resource not fit",
            pod_level: c(&[("cpu", "3m"), ("memory", "2"), (HP, "10")]),
            want: &["Insufficient hugepages-2Mi"],
            ..Default::default()
        },
        Case {
            name: "one pod-level cpu resource fits and all init and non-init containers resources fit",
            containers: vec![r(cm(1, 1), &[])],
            init: vec![init(r(cm(1, 1), &[]))],
            pod_level: c(&[("cpu", "3m"), ("memory", "2")]),
            allocatable: alloc(5, 1, &[]),
            want: &["Insufficient memory"],
            ..Default::default()
        },
        Case {
            name: "TestNotEnoughRequests/even without specified resources, predicate fails when there's no space for additional pod",
            containers: vec![c(&[])],
            allocatable: json!({"cpu": "10m", "memory": "20", "pods": "0"}),
            want: &["Too many pods"],
            ..Default::default()
        },
        Case {
            name: "TestNotEnoughRequests/even for equal edge case, predicate fails when there's no space for additional pod",
            containers: vec![r(cm(5, 1), &[])],
            allocatable: json!({"cpu": "5m", "memory": "1", "pods": "0"}),
            want: &["Too many pods"],
            ..Default::default()
        },
        Case {
            name: "TestStorageRequests/storage ephemeral local storage request exceeds allocatable",
            containers: vec![c(&[("ephemeral-storage", "25")])],
            allocatable: alloc(8, 18, &[("ephemeral-storage", 20)]),
            want: &["Insufficient ephemeral-storage"],
            ..Default::default()
        },
        Case {
            name: "TestStorageRequests/pod fits",
            containers: vec![c(&[("ephemeral-storage", "10")])],
            allocatable: alloc(8, 18, &[("ephemeral-storage", 20)]),
            ..Default::default()
        },
        Case {
            name: "TestRestartableInitContainers/allow pod if the total requested resources do not exceed the node's allocatable resources",
            containers: vec![c(&[("cpu", "1m")])],
            init: vec![(c(&[("cpu", "1m")]), true)],
            allocatable: json!({"cpu": "2m", "pods": "1"}),
            ..Default::default()
        },
        Case {
            name: "TestRestartableInitContainers/not allow pod if the total requested resources do exceed the node's allocatable resources",
            containers: vec![c(&[("cpu", "1m")])],
            init: vec![(c(&[("cpu", "2m")]), true)],
            allocatable: json!({"cpu": "2m", "pods": "1"}),
            want: &["Insufficient cpu"],
            ..Default::default()
        },
        // Not upstream: every shortfall, in the scheduler's order.
        Case {
            name: "pods, cpu, memory, ephemeral-storage, then scalars by name",
            containers: vec![c(&[
                (B, "1"),
                ("ephemeral-storage", "30"),
                ("cpu", "20m"),
                ("memory", "30"),
                (A, "6"),
            ])],
            allocatable: json!({"cpu": "10m", "memory": "20", "pods": "0", "ephemeral-storage": "20", A: "5"}),
            want: &[
                "Too many pods",
                "Insufficient cpu",
                "Insufficient memory",
                "Insufficient ephemeral-storage",
                "Insufficient example.com/aaa",
                "Insufficient example.com/bbb",
            ],
            ..Default::default()
        },
    ];
    for case in &cases {
        assert_eq!(run(case), case.want, "{}", case.name);
    }
}

#[test]
fn units_round_up_before_comparing() {
    // cpu in milli-units: 0.0001 cpu is 1m, more than 0 and equal to 1m.
    let one = |cpu: &str, alloc_cpu: &str| {
        let fit = ResourceFit::new(&list(&[("cpu", cpu)]), &ResourceNames::default());
        let n = node(json!({"name": "n", "allocatable": {"cpu": alloc_cpu}}));
        all(fit.shortfalls(&n, false)).len()
    };
    assert_eq!(one("100u", "1m"), 0);
    assert_eq!(one("100u", "0"), 1);
    assert_eq!(one("1001u", "1m"), 1);
    // Memory in units: 0.5 byte asks for 1 byte; the node's 1.5 bytes is 2.
    let mem = |request: &str, alloc: &str| {
        let fit = ResourceFit::new(&list(&[("memory", request)]), &ResourceNames::default());
        let n = node(json!({"name": "n", "allocatable": {"memory": alloc}}));
        all(fit.shortfalls(&n, false)).len()
    };
    assert_eq!(mem("500m", "1"), 0);
    assert_eq!(mem("1500m", "1"), 1);
    assert_eq!(mem("2", "1500m"), 0);
    assert_eq!(mem("64Gi", "68719476736"), 0, "equality fits");
    assert_eq!(mem("64Gi", "68719476735"), 1);
}

#[test]
fn a_node_without_allocatable_is_not_judged_and_pods_only_when_listed() {
    let fit = ResourceFit::new(&list(&[("nvidia.com/gpu", "1")]), &ResourceNames::default());
    assert!(all(fit.shortfalls(&node(json!({"name": "n"})), false)).is_empty());
    // Listed but without the GPU: it has none.
    let cpu_only = node(json!({"name": "n", "allocatable": {"cpu": "16"}}));
    assert_eq!(
        all(fit.shortfalls(&cpu_only, false)),
        vec![Reason::Insufficient("nvidia.com/gpu".into())]
    );
    // No `pods` entry: not judged on the count; `pods: 1` fits one pod.
    let none = ResourceFit::default();
    assert!(all(none.shortfalls(&cpu_only, false)).is_empty());
    let one = node(json!({"name": "n", "allocatable": {"pods": "1"}}));
    assert!(all(none.shortfalls(&one, false)).is_empty());
}

#[test]
fn the_kubelet_drops_extended_resources_the_node_does_not_list() {
    // removeMissingExtendedResources: the kubelet admits a pod bound by
    // nodeName with a request the node does not advertise at all; it
    // still refuses one the node lists with too little.
    let fit = ResourceFit::new(
        &list(&[("example.com/dongle", "1"), ("hugepages-2Mi", "2Mi")]),
        &ResourceNames::default(),
    );
    let n = node(json!({"name": "n", "allocatable": {"cpu": "4", "hugepages-2Mi": "0"}}));
    assert_eq!(
        all(fit.shortfalls(&n, true)),
        vec![Reason::Insufficient("hugepages-2Mi".into())]
    );
    assert_eq!(all(fit.shortfalls(&n, false)).len(), 2);
    let zero = node(
        json!({"name": "n", "allocatable": {"example.com/dongle": "0", "hugepages-2Mi": "2Mi"}}),
    );
    assert_eq!(
        all(fit.shortfalls(&zero, true)),
        vec![Reason::Insufficient("example.com/dongle".into())]
    );
}

#[test]
fn only_checked_names_are_read_from_the_node() {
    let fit = ResourceFit::new(
        &list(&[
            ("cpu", "1"),
            ("storage", "1Gi"),
            ("pods", "3"),
            ("nvidia.com/gpu", "0"),
        ]),
        &ResourceNames::default(),
    );
    // `storage` and `pods` are not container resources the filter knows; a
    // zero GPU request is never checked: none of their values is read.
    let n = node(json!({"name": "n", "allocatable": {
        "cpu": "1", "storage": "?", "nvidia.com/gpu": "?", "memory": "?", "pods": "110"}}));
    assert_eq!(fit.shortfalls(&n, false), Ok(None));
}

#[test]
fn an_allocatable_value_that_does_not_parse_names_the_node() {
    let fit = ResourceFit::new(&list(&[("cpu", "1")]), &ResourceNames::default());
    let n = node(json!({"name": "w1", "allocatable": {"cpu": "16 cores", "memory": "lots"}}));
    assert_eq!(
        fit.shortfalls(&n, false).unwrap_err(),
        "node \"w1\" has status.allocatable cpu: \"16 cores\", which is not a valid quantity \
         (quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$')"
    );
    // Memory is not asked for, so it is never read.
    let fine = node(json!({"name": "w1", "allocatable": {"cpu": "16", "memory": "lots"}}));
    assert_eq!(fit.shortfalls(&fine, false), Ok(None));
}

#[test]
fn the_memo_answers_as_a_fresh_check_would() {
    let fit = ResourceFit::new(
        &list(&[("cpu", "3"), ("memory", "4Gi"), ("example.com/aaa", "2")]),
        &ResourceNames::default(),
    );
    // 12 distinct allocatable texts (more than the memo holds), repeated in
    // an order that makes it evict and refill.
    let texts: Vec<serde_json::Value> = (0..12)
        .map(|i| {
            json!({"cpu": format!("{}", i % 5), "memory": format!("{}Gi", i % 7),
                        "example.com/aaa": format!("{}", i % 3), "pods": format!("{}", i % 2)})
        })
        .collect();
    for kubelet in [false, true] {
        let mut memo = FitAnswers::default();
        for round in 0..3 {
            for (i, a) in texts.iter().enumerate() {
                let a = if round == 1 { &texts[(i * 7) % 12] } else { a };
                let n = node(json!({"name": format!("n{i}"), "allocatable": a}));
                assert_eq!(
                    fit.shortfalls_with(&n, kubelet, &mut memo),
                    fit.shortfalls(&n, kubelet),
                    "{a}"
                );
            }
        }
    }
    // An error names its node: it is never remembered for another one.
    let mut memo = FitAnswers::default();
    let bad = json!({"cpu": "x"});
    let first = fit.shortfalls_with(
        &node(json!({"name": "a", "allocatable": bad})),
        false,
        &mut memo,
    );
    let second = fit.shortfalls_with(
        &node(json!({"name": "b", "allocatable": bad})),
        false,
        &mut memo,
    );
    assert!(first.unwrap_err().contains("node \"a\""));
    assert!(second.unwrap_err().contains("node \"b\""));
}
