//! `PodRequests` cases translated from component-helpers'
//! `resource/helpers_test.go` (test and case names cited), plus the API
//! server's defaulting (`pkg/apis/core/v1/defaults.go`).

use super::*;

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

fn cpu(v: &str) -> ContainerResources {
    c(&[("cpu", v)])
}

fn init(r: ContainerResources) -> (ContainerResources, bool) {
    (r, false)
}

fn sidecar(r: ContainerResources) -> (ContainerResources, bool) {
    (r, true)
}

fn pod(
    containers: Vec<ContainerResources>,
    inits: Vec<(ContainerResources, bool)>,
) -> PodResources {
    PodResources {
        containers,
        init_containers: inits,
        pod_level: ContainerResources::default(),
    }
}

#[test]
fn containers_sum_and_init_containers_take_the_max() {
    // TestPodResourceRequests "nil options, larger init container".
    assert_eq!(
        pod(vec![cpu("1")], vec![init(cpu("4"))]).requests(&ResourceList::new()),
        list(&[("cpu", "4")])
    );
    // "nil options, larger containers".
    assert_eq!(
        pod(vec![cpu("2"), cpu("3")], vec![init(cpu("2"))]).requests(&ResourceList::new()),
        list(&[("cpu", "5")])
    );
    // TestPodRequestsAndLimitsWithoutOverhead "two container with overhead,
    // massive init - should just be the largest init", overhead included as
    // the scheduler counts it.
    let p = pod(
        vec![
            c(&[("cpu", "1"), ("memory", "5")]),
            c(&[("cpu", "4"), ("memory", "12")]),
        ],
        vec![
            init(c(&[("cpu", "1"), ("memory", "5")])),
            init(c(&[("cpu", "40"), ("memory", "120")])),
        ],
    );
    assert_eq!(
        p.requests(&list(&[("cpu", "3"), ("memory", "8")])),
        list(&[("cpu", "43"), ("memory", "128")])
    );
}

#[test]
fn overhead_is_added_to_every_key() {
    // TestPodRequestsAndLimits "just-overhead" and "req-and-overhead".
    let overhead = list(&[("cpu", "5"), ("memory", "5")]);
    assert_eq!(pod(vec![], vec![]).requests(&overhead), overhead);
    let one = || c(&[("cpu", "1"), ("memory", "10")]);
    assert_eq!(
        pod(vec![one()], vec![init(one())]).requests(&overhead),
        list(&[("cpu", "6"), ("memory", "15")])
    );
    // TestPodResourceRequests "pod overhead included": memory only in the overhead.
    assert_eq!(
        pod(vec![cpu("2"), cpu("3")], vec![init(cpu("2"))])
            .requests(&list(&[("cpu", "1"), ("memory", "1Gi")])),
        list(&[("cpu", "6"), ("memory", "1Gi")])
    );
}

#[test]
fn sidecars_run_next_to_everything_after_them() {
    // TestPodResourceRequests "restartable init container".
    assert_eq!(
        pod(vec![cpu("1")], vec![sidecar(cpu("1"))]).requests(&ResourceList::new()),
        list(&[("cpu", "2")])
    );
    // "multiple restartable init containers".
    assert_eq!(
        pod(
            vec![cpu("1")],
            vec![
                init(cpu("5")),
                sidecar(cpu("1")),
                sidecar(cpu("2")),
                sidecar(cpu("3"))
            ]
        )
        .requests(&ResourceList::new()),
        list(&[("cpu", "7")])
    );
    // "multiple restartable and regular init containers": init-2 runs next
    // to sc-1 and sc-2 (5 + 3 = 8), more than the steady state (1+1+2+3 = 7).
    assert_eq!(
        pod(
            vec![cpu("1")],
            vec![
                init(cpu("5")),
                sidecar(cpu("1")),
                sidecar(cpu("2")),
                init(cpu("5")),
                sidecar(cpu("3"))
            ]
        )
        .requests(&ResourceList::new()),
        list(&[("cpu", "8")])
    );
    // "restartable-init, init and regular".
    assert_eq!(
        pod(vec![cpu("100")], vec![sidecar(cpu("10")), init(cpu("200"))])
            .requests(&ResourceList::new()),
        list(&[("cpu", "210")])
    );
    // TestAggregateContainerRequestsAndLimits "regular, init and sidecar
    // containers with requests": the init container after the sidecar.
    assert_eq!(
        pod(vec![cpu("9")], vec![sidecar(cpu("8")), init(cpu("6"))]).requests(&ResourceList::new()),
        list(&[("cpu", "17")])
    );
    // Order matters: the same init container before the sidecar runs alone.
    assert_eq!(
        pod(vec![cpu("1")], vec![init(cpu("6")), sidecar(cpu("8"))]).requests(&ResourceList::new()),
        list(&[("cpu", "9")])
    );
}

fn with_pod_level(
    mut p: PodResources,
    requests: &[(&str, &str)],
    limits: &[(&str, &str)],
) -> PodResources {
    p.pod_level = ContainerResources {
        requests: list(requests),
        limits: list(limits),
    };
    p
}

#[test]
fn pod_level_requests_replace_the_aggregate_for_their_keys() {
    let none = ResourceList::new();
    // TestPodLevelResourceRequests "pod level memory and container level cpu
    // resources with SkipPodLevelResources false".
    assert_eq!(
        with_pod_level(pod(vec![cpu("2m")], vec![]), &[("memory", "2Mi")], &[]).requests(&none),
        list(&[("cpu", "2m"), ("memory", "2Mi")])
    );
    // "pod level unsupported resources set at both pod-level and container-level".
    assert_eq!(
        with_pod_level(
            pod(vec![c(&[("storage", "3Mi")])], vec![]),
            &[("storage", "2Mi")],
            &[]
        )
        .requests(&none),
        list(&[("storage", "3Mi")])
    );
    // "pod-level resources, container-level resources, init and sidecar container set".
    let p = pod(
        vec![c(&[("memory", "3Mi"), ("cpu", "2m")])],
        vec![
            sidecar(c(&[("memory", "5Mi"), ("cpu", "4m")])),
            init(c(&[("memory", "6Mi"), ("cpu", "8m")])),
        ],
    );
    assert_eq!(
        p.requests(&none),
        list(&[("memory", "11Mi"), ("cpu", "12m")])
    );
    assert_eq!(
        with_pod_level(p, &[("memory", "15Mi"), ("cpu", "18m")], &[]).requests(&none),
        list(&[("memory", "15Mi"), ("cpu", "18m")])
    );
    // "... multiple page sizes between pod-level and container-level".
    assert_eq!(
        with_pod_level(
            pod(
                vec![c(&[("memory", "4Mi"), ("hugepages-1Gi", "1Gi")])],
                vec![]
            ),
            &[("cpu", "1"), ("hugepages-2Mi", "10Mi")],
            &[]
        )
        .requests(&none),
        list(&[
            ("cpu", "1"),
            ("memory", "4Mi"),
            ("hugepages-2Mi", "10Mi"),
            ("hugepages-1Gi", "1Gi")
        ])
    );
    // Overhead is added after the pod-level override.
    assert_eq!(
        with_pod_level(pod(vec![cpu("1")], vec![]), &[("cpu", "2")], &[])
            .requests(&list(&[("cpu", "250m")])),
        list(&[("cpu", "2250m")])
    );
}

#[test]
fn pod_level_limits_default_the_missing_pod_level_requests() {
    let none = ResourceList::new();
    // defaultPodRequests: cpu from the containers, memory from the limit.
    assert_eq!(
        with_pod_level(
            pod(vec![cpu("500m")], vec![]),
            &[],
            &[("cpu", "2"), ("memory", "1Gi")]
        )
        .requests(&none),
        list(&[("cpu", "500m"), ("memory", "1Gi")])
    );
    // defaultHugePagePodLimits then defaultPodRequests: the container's
    // hugepage limit becomes the pod's.
    let container = ContainerResources {
        requests: ResourceList::new(),
        limits: list(&[("hugepages-2Mi", "4Mi")]),
    }
    .defaulted();
    assert_eq!(
        with_pod_level(pod(vec![container], vec![]), &[("memory", "1Gi")], &[]).requests(&none),
        list(&[("memory", "1Gi"), ("hugepages-2Mi", "4Mi")])
    );
    // Requests without limits are not defaulted.
    assert_eq!(
        with_pod_level(
            pod(vec![c(&[("memory", "1Mi")])], vec![]),
            &[("cpu", "1")],
            &[]
        )
        .requests(&none),
        list(&[("cpu", "1"), ("memory", "1Mi")])
    );
}

#[test]
fn container_limits_fill_missing_requests_key_by_key() {
    let r = ContainerResources {
        requests: list(&[("cpu", "0"), ("memory", "1Gi")]),
        limits: list(&[("cpu", "2"), ("memory", "4Gi"), ("nvidia.com/gpu", "1")]),
    }
    .defaulted();
    // An explicit request, even 0, wins; a missing one takes the limit.
    assert_eq!(
        r.requests,
        list(&[("cpu", "0"), ("memory", "1Gi"), ("nvidia.com/gpu", "1")])
    );
}

#[test]
fn resource_names_as_the_scheduler_classifies_them() {
    for extended in ["example.com/foo", "nvidia.com/gpu", "a.b/c_d"] {
        assert!(is_extended(extended), "{extended}");
        assert!(is_checked(extended), "{extended}");
    }
    for native in [
        "cpu",
        "kubernetes.io/something",
        "subdomain.kubernetes.io/x",
        "requests.a/b",
        "a/b/c",
        "/x",
    ] {
        assert!(!is_extended(native), "{native}");
    }
    for checked in [
        "cpu",
        "memory",
        "ephemeral-storage",
        "hugepages-2Mi",
        "kubernetes.io/something",
        "attachable-volumes-aws-ebs",
    ] {
        assert!(is_checked(checked), "{checked}");
    }
    for dropped in ["pods", "storage", "bogus"] {
        assert!(!is_checked(dropped), "{dropped}");
    }
}

#[test]
fn ignored_resources_match_names_and_groups_of_extended_resources() {
    let ignored = ResourceNames::parse(["example.com/bbb", "nvidia.com/*"]).unwrap();
    assert!(ignored.contains("example.com/bbb"));
    assert!(!ignored.contains("example.com/aaa"));
    assert!(ignored.contains("nvidia.com/gpu"));
    assert!(ignored.contains("nvidia.com/mig-1g.5gb"));
    assert!(!ignored.contains("gpu.nvidia.com/x"));
    assert!(ResourceNames::parse(["cpu"]).is_err());
    assert!(ResourceNames::parse(["kubernetes.io/*"]).is_err());
    assert!(ResourceNames::parse(["*"]).is_err());
    assert!(ResourceNames::parse(["a.com/b/*"]).is_err());
    assert!(ResourceNames::parse(Vec::<&str>::new()).unwrap().is_empty());
}
