use serde_json::{Value, json};

use super::*;
use crate::pod::PodFacts;
use crate::settings::Settings;

/// The findings for a pod `spec` (and optional metadata), as messages.
fn findings_with(spec: Value, metadata: Value, settings: Value) -> Vec<String> {
    // The compatibility settings under test, with the required ones.
    let mut settings = settings;
    settings["runtimeClassName"] = json!("kata");
    settings["policyServerServiceAccount"] =
        json!("system:serviceaccount:kubewarden:policy-server");
    let settings = Settings::from_value(&settings).unwrap();
    let pod = json!({"metadata": metadata, "spec": spec}).to_string();
    let facts = PodFacts::from_json(&pod).unwrap();
    check(&facts.runtime, &settings.incompatible_rules())
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn findings(spec: Value) -> Vec<String> {
    findings_with(spec, json!({}), json!({}))
}

fn enabled(spec: Value, features: &[&str]) -> Vec<String> {
    findings_with(spec, json!({}), json!({"skipPodsUsing": features}))
}

fn container(name: &str, extra: Value) -> Value {
    let mut c = json!({"name": name, "image": "busybox"});
    if let (Some(c), Some(extra)) = (c.as_object_mut(), extra.as_object()) {
        c.extend(extra.clone());
    }
    c
}

/// A pod whose one container `agent` mounts the hostPath volume `v`.
fn host_path_pod(path: &str, kind: Option<&str>) -> Value {
    let mut host_path = json!({"path": path});
    if let Some(kind) = kind {
        host_path["type"] = json!(kind);
    }
    json!({
        "containers": [container("agent", json!({"volumeMounts": [{"name": "v", "mountPath": "/h"}]}))],
        "volumes": [{"name": "v", "hostPath": host_path}]
    })
}

fn plain() -> Value {
    json!({"containers": [container("app", json!({}))]})
}

#[test]
fn a_plain_pod_uses_nothing() {
    assert!(findings(plain()).is_empty());
    let every: Vec<&str> = PodFeature::ALL.iter().map(|f| f.name()).collect();
    assert!(enabled(plain(), &every).is_empty());
}

#[test]
fn paths_are_cleaned_as_go_cleans_them() {
    for (input, want) in [
        ("", "."),
        ("/", "/"),
        ("//var//run/", "/var/run"),
        ("/var/./run/.", "/var/run"),
        ("/var/run/../lib", "/var/lib"),
        ("/..", "/"),
        ("/../../run", "/run"),
        ("a/../..", ".."),
        ("../a/..", ".."),
        ("./x/", "x"),
        ("var/run", "var/run"),
        ("/run/x/../../runtime", "/runtime"),
    ] {
        assert_eq!(clean(input), want, "{input:?}");
    }
}

#[test]
fn within_compares_whole_elements() {
    assert!(is_within("/run", "/run"));
    assert!(is_within("/run/x", "/run"));
    assert!(!is_within("/runtime", "/run"));
    assert!(!is_within("/ru", "/run"));
    assert!(is_within("/anything", "/"));
    assert!(is_within("/", "/"));
}

#[test]
fn host_namespaces_as_before() {
    let spec = json!({"hostNetwork": true, "hostPID": true, "hostIPC": false,
        "containers": [container("a", json!({}))]});
    assert_eq!(
        findings(spec.clone()),
        [
            "the pod uses hostNetwork, hostPID, which Kata Containers cannot provide (skipPodsUsing: hostNamespaces)"
        ]
    );
    let off = findings_with(
        spec.clone(),
        json!({}),
        json!({"skipHostNamespaces": false}),
    );
    assert!(off.is_empty(), "{off:?}");
    assert!(enabled(spec, &[]).is_empty(), "[] turns every check off");
}

#[test]
fn user_namespaces() {
    let mut spec = plain();
    spec["hostUsers"] = json!(false);
    let found = findings(spec.clone());
    assert_eq!(found.len(), 1);
    assert!(found[0].starts_with("the pod sets hostUsers: false"));
    assert!(found[0].ends_with("(skipPodsUsing: userNamespaces)"));
    spec["hostUsers"] = json!(true);
    assert!(findings(spec).is_empty());
}

#[test]
fn windows() {
    let mut spec = plain();
    spec["os"] = json!({"name": "windows"});
    assert_eq!(
        findings(spec.clone()),
        ["the pod's spec.os.name is windows, and Kata runs Linux guests (skipPodsUsing: windows)"]
    );
    spec["os"] = json!({"name": "linux"});
    assert!(findings(spec).is_empty());
}

#[test]
fn privileged_in_containers_init_containers_and_sidecars() {
    let p = json!({"securityContext": {"privileged": true}});
    let spec = json!({
        "containers": [container("app", json!({})), container("csi", p.clone())],
        "initContainers": [
            container("setup", p.clone()),
            container("proxy", json!({"restartPolicy": "Always", "securityContext": {"privileged": true}})),
            container("quiet", json!({"securityContext": {"privileged": false}}))
        ]
    });
    assert!(findings(spec.clone()).is_empty(), "opt-in");
    let found = enabled(spec, &["privileged"]);
    let subjects: Vec<&str> = found
        .iter()
        .map(|f| f.split(" is privileged").next().unwrap())
        .collect();
    assert_eq!(
        subjects,
        [
            "container \"csi\"",
            "init container \"setup\"",
            "init container \"proxy\""
        ]
    );
    assert!(found[0].ends_with("(skipPodsUsing: privileged)"));
}

#[test]
fn the_docker_socket_agent() {
    let spec = json!({
        "containers": [container("agent", json!({"volumeMounts": [{"name": "docker", "mountPath": "/var/run/docker.sock"}]}))],
        "volumes": [{"name": "docker", "hostPath": {"path": "/var/run/docker.sock"}}]
    });
    assert_eq!(
        findings(spec),
        [
            "container \"agent\" mounts host socket /var/run/docker.sock (hostPath volume \"docker\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
        ]
    );
}

fn socket_findings(path: &str, kind: Option<&str>) -> Vec<String> {
    enabled(host_path_pod(path, kind), &["hostSockets"])
}

#[test]
fn host_sockets_by_type_name_and_place() {
    // By type, anywhere.
    assert_eq!(
        socket_findings("/opt/agent/api", Some("Socket")),
        [
            "container \"agent\" mounts host socket /opt/agent/api (hostPath volume \"v\"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
        ]
    );
    // By name, anywhere, after cleaning.
    for path in [
        "/opt/containerd.sock",
        "/srv/x/../spire/agent.socket",
        "//tmp//a.sock/",
    ] {
        let found = socket_findings(path, None);
        assert!(
            found.len() == 1 && found[0].contains("host socket /"),
            "{path}: {found:?}"
        );
    }
    // By place: whole elements of a cleaned path.
    for (path, under) in [
        ("/run", "/run"),
        ("/run/containerd", "/run"),
        ("/var/run", "/var/run"),
        ("//var//run/", "/var/run"),
        (
            "/var/lib/kubelet/plugins/csi.example.com/",
            "/var/lib/kubelet/plugins",
        ),
        (
            "/var/lib/kubelet/plugins_registry",
            "/var/lib/kubelet/plugins_registry",
        ),
        (
            "/var/lib/kubelet/device-plugins",
            "/var/lib/kubelet/device-plugins",
        ),
        (
            "/var/lib/kubelet/pod-resources/",
            "/var/lib/kubelet/pod-resources",
        ),
        ("/opt/../run/spire", "/run"),
    ] {
        let found = socket_findings(path, Some("Directory"));
        assert_eq!(found.len(), 1, "{path}");
        let place = if clean(path) == under {
            "(in hostSocketPaths)".to_string()
        } else {
            format!("(under {under})")
        };
        assert!(found[0].contains(&place), "{path}: {found:?}");
    }
    for path in [
        "/runtime",
        "/var/runner",
        "/var/lib/kubelet",
        "/var/lib/kubelet/pods",
        "/var/lib/kubelet/pluginsX",
        "/run/../etc",
        "/var/log",
        "/sockets",
        "/opt/app.sock.d",
    ] {
        assert!(socket_findings(path, None).is_empty(), "{path}");
    }
}

#[test]
fn host_socket_paths_are_a_setting() {
    let pod = host_path_pod("/var/lib/spire/agent", None);
    assert!(findings(pod.clone()).is_empty());
    let custom = json!({"hostSocketPaths": ["/var/lib/spire/"]});
    let found = findings_with(pod, json!({}), custom);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("(under /var/lib/spire)"), "{found:?}");
    // Replacing the list drops the defaults.
    let only_spire = json!({"hostSocketPaths": ["/var/lib/spire"]});
    assert!(findings_with(host_path_pod("/run/x", None), json!({}), only_spire).is_empty());
}

#[test]
fn an_unmounted_host_path_is_still_named() {
    let spec = json!({
        "containers": [container("app", json!({}))],
        "volumes": [{"name": "sock", "hostPath": {"path": "/run/x.sock"}}]
    });
    assert_eq!(
        findings(spec),
        [
            "hostPath volume \"sock\" (mounted by no container) is host socket /run/x.sock, which a Kata VM cannot reach (skipPodsUsing: hostSockets)"
        ]
    );
}

#[test]
fn every_container_that_mounts_is_named() {
    let mount = json!({"volumeMounts": [{"name": "v", "mountPath": "/a"}, {"name": "v", "mountPath": "/b"}]});
    let spec = json!({
        "containers": [container("a", mount.clone()), container("b", json!({}))],
        "initContainers": [container("c", mount)],
        "volumes": [{"name": "v", "hostPath": {"path": "/var/run/docker.sock"}}]
    });
    let found = findings(spec);
    assert_eq!(
        found.len(),
        2,
        "one per container, not per mount: {found:?}"
    );
    assert!(found[0].starts_with("container \"a\""));
    assert!(found[1].starts_with("init container \"c\""));
}

fn device_findings(path: &str, kind: Option<&str>) -> Vec<String> {
    enabled(host_path_pod(path, kind), &["hostDevices"])
}

#[test]
fn host_devices() {
    assert_eq!(
        device_findings("/dev/fuse", None),
        [
            "container \"agent\" mounts host device path /dev/fuse (hostPath volume \"v\"), but Kata gives it the VM's device node, not the host's (skipPodsUsing: hostDevices)"
        ]
    );
    for (path, kind) in [
        ("/dev", None),
        ("/dev/", Some("Directory")),
        ("/dev/./kvm", Some("")),
        ("//dev//net/tun", Some("CharDevice")),
        ("/opt/null", Some("CharDevice")),
        ("/sys/../dev/mem", Some("File")),
    ] {
        assert_eq!(device_findings(path, kind).len(), 1, "{path} {kind:?}");
    }
    for (path, kind) in [
        ("/dev/sdb", Some("BlockDevice")),
        ("/dev/nvme0n1", Some("BlockDevice")),
        ("/devices", None),
        ("/dev/../etc", None),
        ("/opt/disk", Some("BlockDevice")),
        ("/sys/class", None),
    ] {
        assert!(device_findings(path, kind).is_empty(), "{path} {kind:?}");
    }
}

#[test]
fn mount_propagation_only_for_host_paths() {
    let spec = |mode: &str, volume: Value| {
        json!({
            "containers": [container("csi", json!({"volumeMounts": [
                {"name": "v", "mountPath": "/var/lib/kubelet", "mountPropagation": mode}]}))],
            "volumes": [volume]
        })
    };
    let host = json!({"name": "v", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}});
    assert_eq!(
        enabled(spec("Bidirectional", host.clone()), &["mountPropagation"]),
        [
            "container \"csi\" mounts hostPath volume \"v\" (/var/lib/kubelet) with mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)"
        ]
    );
    assert_eq!(
        enabled(spec("HostToContainer", host.clone()), &["mountPropagation"]).len(),
        1
    );
    assert!(enabled(spec("None", host), &["mountPropagation"]).is_empty());
    // A tenant cannot leave Kata through an emptyDir or a claim.
    for volume in [
        json!({"name": "v", "emptyDir": {}}),
        json!({"name": "v", "persistentVolumeClaim": {"claimName": "c"}}),
    ] {
        assert!(findings(spec("HostToContainer", volume.clone())).is_empty());
        assert!(findings(spec("Bidirectional", volume)).is_empty());
    }
}

fn gpu_pod(resources: Value) -> Value {
    json!({"containers": [container("cuda", json!({"resources": resources}))]})
}

#[test]
fn device_resources() {
    assert_eq!(
        findings(gpu_pod(json!({"limits": {"nvidia.com/gpu": "1"}}))),
        [
            "container \"cuda\" asks for nvidia.com/gpu, a device plugin's host device that Kata does not pass into its VM (Kata passes VFIO devices) (skipPodsUsing: deviceResources)"
        ]
    );
    for resources in [
        json!({"requests": {"amd.com/gpu": "1"}, "limits": {"amd.com/gpu": "1"}}),
        json!({"limits": {"gpu.intel.com/i915": "1"}}),
        json!({"requests": {"nvidia.com/gpu": "0"}, "limits": {"nvidia.com/gpu": "2"}}),
        json!({"requests": {"nvidia.com/gpu": "500m"}}),
    ] {
        assert_eq!(findings(gpu_pod(resources.clone())).len(), 1, "{resources}");
    }
    for resources in [
        json!({"limits": {"nvidia.com/gpu": "0"}}),
        json!({"requests": {"nvidia.com/gpu": "0"}}),
        json!({"limits": {"nvidia.com/pgpu": "1"}}),
        json!({"limits": {"gpu.intel.com.example/x": "1"}}),
        json!({"requests": {"cpu": "1", "memory": "1Gi"}}),
    ] {
        assert!(
            findings(gpu_pod(resources.clone())).is_empty(),
            "{resources}"
        );
    }
    // Init containers and sidecars too.
    let spec = json!({
        "containers": [container("app", json!({}))],
        "initContainers": [container("warmup", json!({"restartPolicy": "Always",
            "resources": {"limits": {"nvidia.com/gpu": "1"}}}))]
    });
    assert!(findings(spec)[0].starts_with("init container \"warmup\" asks for nvidia.com/gpu"));
    // The list is a setting.
    let custom = json!({"hostDeviceResources": ["example.com/*"]});
    let pod = gpu_pod(json!({"limits": {"example.com/fpga": "1", "nvidia.com/gpu": "1"}}));
    let found = findings_with(pod, json!({}), custom);
    assert_eq!(found.len(), 1);
    assert!(found[0].contains("asks for example.com/fpga"));
}

fn secured(pod: Value, container: Value) -> Value {
    json!({"securityContext": pod, "containers": [
        {"name": "app", "securityContext": container},
        {"name": "other"}
    ]})
}

#[test]
fn opt_in_features_are_off_by_default() {
    let spec = json!({
        "securityContext": {"seccompProfile": {"type": "RuntimeDefault"},
            "appArmorProfile": {"type": "RuntimeDefault"}, "seLinuxOptions": {"level": "s0:c1,c2"}},
        "containers": [container("app", json!({"volumeMounts": [{"name": "m", "mountPath": "/m", "subPath": "x"}]}))],
        "volumes": [{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}}]
    });
    let meta = json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"}});
    assert!(findings_with(spec.clone(), meta.clone(), json!({})).is_empty());
    let opt_in = json!({"skipPodsUsing": ["seccomp", "appArmor", "seLinux", "subPath", "memoryEmptyDirLimit"]});
    let found = findings_with(spec, meta, opt_in);
    let features: Vec<&str> = found
        .iter()
        .map(|f| f.rsplit("skipPodsUsing: ").next().unwrap())
        .collect();
    assert_eq!(
        features,
        [
            "seccomp)",
            "appArmor)",
            "seLinux)",
            "subPath)",
            "memoryEmptyDirLimit)"
        ],
        "{found:#?}"
    );
}

#[test]
fn seccomp_as_the_kubelet_resolves_it() {
    let on = |pod: Value, c: Value| enabled(secured(pod, c), &["seccomp"]);
    let rd = json!({"seccompProfile": {"type": "RuntimeDefault"}});
    let local = json!({"seccompProfile": {"type": "Localhost", "localhostProfile": "p.json"}});
    let unconfined = json!({"seccompProfile": {"type": "Unconfined"}});
    assert_eq!(
        on(json!({}), rd.clone()),
        [
            "container \"app\" has seccompProfile RuntimeDefault, which the Kata guest does not enforce (skipPodsUsing: seccomp)"
        ]
    );
    assert_eq!(on(json!({}), local).len(), 1);
    // The pod's profile reaches every container that does not set its own.
    let inherited = on(rd.clone(), json!({}));
    assert_eq!(inherited.len(), 2);
    assert!(
        inherited[1].contains(
            "\"other\" has seccompProfile RuntimeDefault (from the pod's securityContext)"
        )
    );
    assert_eq!(on(rd, unconfined.clone()).len(), 1, "app opts out");
    assert!(on(unconfined, json!({})).is_empty());
}

#[test]
fn app_armor_fields_and_annotations() {
    let on = |spec: Value, annotations: Value| {
        findings_with(
            spec,
            json!({"annotations": annotations}),
            json!({"skipPodsUsing": ["appArmor"]}),
        )
    };
    let rd = json!({"appArmorProfile": {"type": "RuntimeDefault"}});
    let unconfined = json!({"appArmorProfile": {"type": "Unconfined"}});
    assert_eq!(on(secured(json!({}), rd.clone()), json!({})).len(), 1);
    assert_eq!(on(secured(rd.clone(), json!({})), json!({})).len(), 2);
    assert_eq!(on(secured(rd, unconfined.clone()), json!({})).len(), 1);
    let key = "container.apparmor.security.beta.kubernetes.io/other";
    let found = on(
        secured(json!({}), json!({})),
        json!({key: "localhost/k8s-nginx"}),
    );
    assert_eq!(
        found,
        [
            "container \"other\" has AppArmor profile localhost/k8s-nginx (annotation), which the Kata guest does not support (skipPodsUsing: appArmor)"
        ]
    );
    assert!(on(secured(json!({}), json!({})), json!({key: "unconfined"})).is_empty());
    // The container's field wins over its annotation.
    assert!(
        on(
            secured(json!({}), unconfined),
            json!({"container.apparmor.security.beta.kubernetes.io/app": "runtime/default"})
        )
        .is_empty()
    );
}

#[test]
fn se_linux_any_field_set() {
    let on = |pod: Value, c: Value| enabled(secured(pod, c), &["seLinux"]);
    assert_eq!(
        on(json!({"seLinuxOptions": {"level": "s0:c1"}}), json!({})).len(),
        1
    );
    assert_eq!(
        on(json!({}), json!({"seLinuxOptions": {"type": "spc_t"}})).len(),
        1
    );
    assert!(
        on(
            json!({"seLinuxOptions": {}}),
            json!({"seLinuxOptions": {"user": ""}})
        )
        .is_empty()
    );
}

#[test]
fn sub_path_and_memory_empty_dir_limit() {
    let spec = json!({
        "containers": [container("app", json!({"volumeMounts": [
            {"name": "a", "mountPath": "/a", "subPath": "x"},
            {"name": "b", "mountPath": "/b", "subPathExpr": "$(POD)"},
            {"name": "c", "mountPath": "/c", "subPath": ""}]}))],
        "volumes": [
            {"name": "a", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
            {"name": "b", "emptyDir": {"medium": "Memory"}},
            {"name": "c", "emptyDir": {"sizeLimit": "1Gi"}}
        ]
    });
    assert_eq!(
        enabled(spec.clone(), &["subPath"]),
        [
            "container \"app\" mounts volume \"a\" with subPath, which is unreliable under Kata (skipPodsUsing: subPath)",
            "container \"app\" mounts volume \"b\" with subPathExpr, which is unreliable under Kata (skipPodsUsing: subPath)"
        ]
    );
    assert_eq!(
        enabled(spec, &["memoryEmptyDirLimit"]),
        [
            "emptyDir volume \"a\" has medium Memory with sizeLimit 64Mi, which Kata does not enforce (skipPodsUsing: memoryEmptyDirLimit)"
        ]
    );
}

#[test]
fn the_csi_node_plugin_reports_every_feature_in_order() {
    let spec = json!({
        "hostNetwork": true,
        "containers": [
            container("registrar", json!({"volumeMounts": [
                {"name": "plugin-dir", "mountPath": "/csi"},
                {"name": "registration", "mountPath": "/registration"}]})),
            container("plugin", json!({"securityContext": {"privileged": true}, "volumeMounts": [
                {"name": "plugin-dir", "mountPath": "/csi"},
                {"name": "kubelet", "mountPath": "/var/lib/kubelet", "mountPropagation": "Bidirectional"},
                {"name": "dev", "mountPath": "/dev"}]}))
        ],
        "volumes": [
            {"name": "plugin-dir", "hostPath": {"path": "/var/lib/kubelet/plugins/csi.example.com/", "type": "DirectoryOrCreate"}},
            {"name": "registration", "hostPath": {"path": "/var/lib/kubelet/plugins_registry/", "type": "Directory"}},
            {"name": "kubelet", "hostPath": {"path": "/var/lib/kubelet", "type": "Directory"}},
            {"name": "dev", "hostPath": {"path": "/dev"}}
        ]
    });
    let features: Vec<String> = findings(spec)
        .iter()
        .map(|f| {
            f.rsplit("skipPodsUsing: ")
                .next()
                .unwrap()
                .trim_end_matches(')')
                .to_string()
        })
        .collect();
    assert_eq!(
        features,
        [
            "hostNamespaces",
            "hostSockets",
            "hostSockets",
            "hostSockets",
            "hostDevices",
            "mountPropagation"
        ]
    );
}

#[test]
fn feature_names_round_trip() {
    for f in PodFeature::ALL {
        assert_eq!(PodFeature::from_name(f.name()), Some(f));
    }
    assert_eq!(PodFeature::from_name("HostSockets"), None);
    let set = FeatureSet::default_set();
    assert_eq!(set.iter().collect::<Vec<_>>(), PodFeature::DEFAULT);
    assert!(!set.contains(PodFeature::Seccomp));
    assert!(FeatureSet::of([]).is_empty());
}

/// A DRA pod: a claim from a template used by a container and a sidecar, a
/// shared claim used by an init container, a claim no container uses.
fn dra_pod() -> Value {
    json!({
        "initContainers": [
            container("warmup", json!({"resources": {"claims": [{"name": "nic"}]}})),
            container("proxy", json!({"restartPolicy": "Always",
                "resources": {"claims": [{"name": "gpu", "request": "first"}]}}))
        ],
        "containers": [
            container("cuda", json!({"resources": {"claims": [{"name": "gpu"}], "limits": {"cpu": "1"}}})),
            container("idle", json!({}))
        ],
        "resourceClaims": [
            {"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
            {"name": "nic", "resourceClaimName": "shared-nic"},
            {"name": "spare", "resourceClaimName": "spare"}
        ]
    })
}

#[test]
fn dra_claims_name_the_claim_its_object_and_every_container_using_it() {
    assert_eq!(
        findings(dra_pod()),
        [
            "claim \"gpu\" (ResourceClaimTemplate \"one-gpu\"), used by container \"cuda\", init container \"proxy\", \
             asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)",
            "claim \"nic\" (ResourceClaim \"shared-nic\"), used by init container \"warmup\", \
             asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)",
            "claim \"spare\" (ResourceClaim \"spare\"), used by no container, \
             asks for DRA-allocated devices, which Kata does not pass into its VM (skipPodsUsing: dynamicResources)",
        ]
    );
}

#[test]
fn dra_claims_are_judged_as_before_when_dynamic_resources_is_removed() {
    assert!(enabled(dra_pod(), &["deviceResources", "privileged"]).is_empty());
    // No claims, no finding; an empty list is no claim.
    let mut none = dra_pod();
    none["resourceClaims"] = json!([]);
    assert!(findings(none).is_empty());
    // A claim with neither source (the API server refuses it) still counts.
    let bare =
        json!({"containers": [container("c", json!({}))], "resourceClaims": [{"name": "x"}]});
    assert_eq!(
        findings(bare),
        [
            "claim \"x\", used by no container, asks for DRA-allocated devices, which Kata does not pass into \
          its VM (skipPodsUsing: dynamicResources)"
        ]
    );
}

#[test]
fn a_plain_privileged_pod_runs_under_kata_by_default() {
    // Docker-in-Docker: privileged, nothing from the host.
    let dind = json!({"containers": [container("dind", json!({"securityContext": {"privileged": true}}))]});
    assert!(findings(dind.clone()).is_empty());
    assert!(!FeatureSet::default_set().contains(PodFeature::Privileged));
    // Opt-in still works.
    assert_eq!(
        enabled(dind, &["privileged"]),
        [
            "container \"dind\" is privileged, and a privileged container under Kata gets the VM's devices, \
          not the host's (skipPodsUsing: privileged)"
        ]
    );
    assert!(FeatureSet::default_set().contains(PodFeature::DynamicResources));
}

/// An agent sandbox: its tools come from an image volume, mounted by the
/// agent, an init container and a sidecar; a second image volume is
/// mounted by nobody; a volume *named* `image` is an emptyDir.
fn image_volume_pod() -> Value {
    let mount = |v: &str| json!({"volumeMounts": [{"name": v, "mountPath": format!("/{v}")}]});
    json!({
        "initContainers": [
            container("setup", mount("tools")),
            container("proxy", json!({"restartPolicy": "Always",
                "volumeMounts": [{"name": "tools", "mountPath": "/t"}, {"name": "image", "mountPath": "/i"}]}))
        ],
        "containers": [
            // Mounted twice by one container: named once.
            container("agent", json!({"volumeMounts": [
                {"name": "tools", "mountPath": "/a"}, {"name": "tools", "mountPath": "/b", "readOnly": true},
                {"name": "weights", "mountPath": "/w"}]})),
            container("idle", json!({}))
        ],
        "volumes": [
            {"name": "tools", "image": {"reference": "ghcr.io/example/tools:1.2", "pullPolicy": "IfNotPresent"}},
            {"name": "weights", "image": {}},
            {"name": "unused", "image": {"reference": "ghcr.io/example/unused:1"}},
            {"name": "image", "emptyDir": {}}
        ]
    })
}

#[test]
fn image_volumes_name_the_volume_its_image_and_every_container_mounting_it() {
    assert_eq!(
        findings(image_volume_pod()),
        [
            "image volume \"tools\" (image \"ghcr.io/example/tools:1.2\"), mounted by container \"agent\", \
             init container \"setup\", init container \"proxy\", is an OCI image that Kata cannot mount inside its VM \
             (skipPodsUsing: imageVolumes)",
            "image volume \"weights\", mounted by container \"agent\", is an OCI image that Kata cannot mount \
             inside its VM (skipPodsUsing: imageVolumes)",
        ]
    );
    assert!(FeatureSet::default_set().contains(PodFeature::ImageVolumes));
}

#[test]
fn only_a_mounted_image_volume_counts() {
    // Not mounted: pulled, never in the VM.
    let unmounted = json!({"containers": [container("c", json!({}))],
        "volumes": [{"name": "tools", "image": {"reference": "r"}}]});
    assert!(findings(unmounted).is_empty());
    // A volume named `image`, of another type, or `image: null`.
    for volume in [
        json!({"name": "image", "emptyDir": {}}),
        json!({"name": "image", "hostPath": {"path": "/srv/image"}}),
        json!({"name": "v", "image": null}),
    ] {
        let name = volume["name"].clone();
        let pod = json!({"containers": [container("c", json!({"volumeMounts": [{"name": name, "mountPath": "/m"}]}))],
            "volumes": [volume]});
        assert!(findings(pod.clone()).is_empty(), "{pod}");
    }
}

#[test]
fn image_volumes_get_kata_when_removed_from_the_skip_list() {
    assert!(enabled(image_volume_pod(), &["dynamicResources", "hostSockets"]).is_empty());
    assert_eq!(enabled(image_volume_pod(), &["imageVolumes"]).len(), 2);
}

#[test]
fn thousands_of_image_volumes_are_each_named_once_with_their_image() {
    // 20,000 image volumes, each mounted once, in reverse order: every
    // mount finds its own volume (the rule looks volumes up by name, once
    // per mount; its cost is measured by benchmarks, not here).
    let n = 20_000;
    let volumes: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("v{i}"), "image": {"reference": format!("r{i}")}}))
        .collect();
    let mounts: Vec<Value> = (0..n)
        .rev()
        .map(|i| json!({"name": format!("v{i}"), "mountPath": format!("/m{i}")}))
        .collect();
    let pod = json!({"containers": [container("c", json!({"volumeMounts": mounts}))], "volumes": volumes});
    let found = findings(pod);
    assert_eq!(found.len(), n);
    assert!(found[0].starts_with("image volume \"v19999\" (image \"r19999\")"));
}

#[test]
fn dra_extended_resources_name_the_device_class_and_the_containers() {
    let pod = json!({
        "initContainers": [container("warmup", json!({"resources": {"limits": {
            "deviceclass.resource.kubernetes.io/gpu.example.com": "1"}}}))],
        "containers": [
            container("cuda", json!({"resources": {
                "requests": {"deviceclass.resource.kubernetes.io/gpu.example.com": "2", "cpu": "1"},
                "limits": {"deviceclass.resource.kubernetes.io/gpu.example.com": "2",
                           "deviceclass.resource.kubernetes.io/nic.example.com": "1"}}})),
            // Zero asks for nothing; a name outside the group is not DRA.
            container("idle", json!({"resources": {"requests": {
                "deviceclass.resource.kubernetes.io/gpu.example.com": "0",
                "example.com/deviceclass.resource.kubernetes.io": "1"}}}))
        ]
    });
    let tail = "is served by DRA-allocated devices, which Kata does not pass into its VM \
                (skipPodsUsing: dynamicResources)";
    assert_eq!(
        findings(pod.clone()),
        [
            format!(
                "DeviceClass \"gpu.example.com\" (extended resource deviceclass.resource.kubernetes.io/gpu.example.com), \
                 asked for by container \"cuda\", init container \"warmup\", {tail}"
            ),
            format!(
                "DeviceClass \"nic.example.com\" (extended resource deviceclass.resource.kubernetes.io/nic.example.com), \
                 asked for by container \"cuda\", {tail}"
            ),
        ]
    );
    // Without dynamicResources, judged as before (as a resource).
    assert!(enabled(pod, &["deviceResources", "imageVolumes"]).is_empty());
}

/// The hostile shapes a tenant can send, `n` elements each: every rule must
/// do work linear in them (counted in steps, never timed): ×4 the input,
/// at most ×5 the steps. A rule that walks one list per element of another
/// takes ×16.
#[test]
fn work_is_linear_in_the_pod() {
    use super::rules::work;
    fn container(name: String, mounts: Vec<Mount>, claims: Vec<String>) -> Container {
        Container {
            name,
            mounts,
            claims,
            ..Container::default()
        }
    }
    fn mount(volume: String, propagation: Option<&str>) -> Mount {
        Mount {
            volume,
            propagation: propagation.map(str::to_string),
            sub_path: None,
        }
    }
    fn host_path(name: String) -> Volume {
        Volume {
            name,
            host_path: Some(HostPath {
                path: "/var/lib/data".into(),
                kind: String::new(),
            }),
            ..Volume::default()
        }
    }
    type Shape = (&'static str, fn(usize) -> RuntimeFacts);
    let shapes: [Shape; 7] = [
        (
            "hostPath volumes, one container mounting each in reverse order",
            |n| RuntimeFacts {
                volumes: (0..n).map(|i| host_path(format!("v{i}"))).collect(),
                containers: vec![container(
                    "c".into(),
                    (0..n).rev().map(|i| mount(format!("v{i}"), None)).collect(),
                    Vec::new(),
                )],
                ..RuntimeFacts::default()
            },
        ),
        (
            "hostPath volumes, and as many mounts naming none of them",
            |n| RuntimeFacts {
                volumes: (0..n).map(|i| host_path(format!("v{i}"))).collect(),
                containers: vec![container(
                    "c".into(),
                    (0..n)
                        .map(|i| mount(format!("dangling{i}"), None))
                        .collect(),
                    Vec::new(),
                )],
                ..RuntimeFacts::default()
            },
        ),
        (
            "hostPath volumes, each mounted with Bidirectional propagation in reverse order",
            |n| RuntimeFacts {
                volumes: (0..n).map(|i| host_path(format!("v{i}"))).collect(),
                containers: vec![container(
                    "c".into(),
                    (0..n)
                        .rev()
                        .map(|i| mount(format!("v{i}"), Some("Bidirectional")))
                        .collect(),
                    Vec::new(),
                )],
                ..RuntimeFacts::default()
            },
        ),
        ("DRA claims, one container naming all of them", |n| {
            RuntimeFacts {
                resource_claims: (0..n)
                    .map(|i| ResourceClaim {
                        name: format!("claim{i}"),
                        source: None,
                    })
                    .collect(),
                containers: vec![container(
                    "c".into(),
                    Vec::new(),
                    (0..n).rev().map(|i| format!("claim{i}")).collect(),
                )],
                ..RuntimeFacts::default()
            }
        }),
        (
            "image volumes, one container mounting each in reverse order",
            |n| RuntimeFacts {
                volumes: (0..n)
                    .map(|i| Volume {
                        name: format!("v{i}"),
                        image: Some("registry.example.com/x:1".into()),
                        ..Volume::default()
                    })
                    .collect(),
                containers: vec![container(
                    "c".into(),
                    (0..n).rev().map(|i| mount(format!("v{i}"), None)).collect(),
                    Vec::new(),
                )],
                ..RuntimeFacts::default()
            },
        ),
        (
            "containers, each with an AppArmor annotation, in reverse order",
            |n| RuntimeFacts {
                containers: (0..n)
                    .map(|i| container(format!("c{i}"), Vec::new(), Vec::new()))
                    .collect(),
                app_armor_annotations: (0..n)
                    .rev()
                    .map(|i| (format!("c{i}"), "runtime/default".to_string()))
                    .collect(),
                ..RuntimeFacts::default()
            },
        ),
        (
            "containers, each asking for a DeviceClass's extended resource",
            |n| RuntimeFacts {
                containers: (0..n)
                    .map(|i| Container {
                        resources: vec![format!(
                            "{}class{}",
                            super::rules::DEVICE_CLASS_RESOURCE_PREFIX,
                            i % 7
                        )],
                        ..container(format!("c{i}"), Vec::new(), Vec::new())
                    })
                    .collect(),
                ..RuntimeFacts::default()
            },
        ),
    ];
    let devices = ResourceNames::default();
    let rules = Rules {
        features: FeatureSet::of(PodFeature::ALL),
        socket_paths: &[],
        device_resources: &devices,
    };
    for (shape, pod) in shapes {
        let steps = |n: usize| {
            let pod = pod(n);
            work::count(|| {
                check(&pod, &rules);
            })
        };
        let (small, large) = (steps(500), steps(2000));
        assert!(
            small >= 500,
            "{shape}: {small} steps for 500 elements: not counted"
        );
        assert!(
            large <= 5 * small,
            "{shape}: {small} steps for 500 elements, {large} for 2,000"
        );
    }
}

#[test]
fn a_hostile_path_is_escaped_so_that_the_warning_is_not_dropped() {
    // apimachinery's NewWarningHeader refuses a warning with a control
    // character: a raw newline would make the user see nothing.
    let path = "/run/a\nb\u{1b}[2J\u{2028}\u{202e}.sock";
    let socket = enabled(host_path_pod(path, None), &["hostSockets"]);
    assert_eq!(
        socket,
        [
            r#"container "agent" mounts host socket "/run/a\nb\u{1b}[2J\u{2028}\u{202e}.sock" (hostPath volume "v"), which a Kata VM cannot reach (skipPodsUsing: hostSockets)"#
        ]
    );
    let device = enabled(host_path_pod("/dev/x\ty", None), &["hostDevices"]);
    assert_eq!(
        device,
        [
            r#"container "agent" mounts host device path "/dev/x\ty" (hostPath volume "v"), but Kata gives it the VM's device node, not the host's (skipPodsUsing: hostDevices)"#
        ]
    );
    let spec = json!({
        "containers": [container("csi", json!({"volumeMounts": [
            {"name": "v", "mountPath": "/k", "mountPropagation": "Bidirectional"}]}))],
        "volumes": [{"name": "v", "hostPath": {"path": "/var/lib/k\r\nubelet"}}]
    });
    let propagation = enabled(spec, &["mountPropagation"]);
    assert_eq!(
        propagation,
        [
            r#"container "csi" mounts hostPath volume "v" ("/var/lib/k\r\nubelet") with mountPropagation Bidirectional, which does not cross the Kata VM boundary (skipPodsUsing: mountPropagation)"#
        ]
    );
    let spec = json!({"containers": [container("app", json!({}))],
        "volumes": [{"name": "m", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi\u{2029}"}}]});
    let memory = enabled(spec, &["memoryEmptyDirLimit"]);
    assert_eq!(memory.len(), 1, "{memory:?}");
    for finding in socket
        .iter()
        .chain(&device)
        .chain(&propagation)
        .chain(&memory)
    {
        assert!(
            !finding.chars().any(crate::printable::is_unsafe),
            "{finding}"
        );
    }
}
