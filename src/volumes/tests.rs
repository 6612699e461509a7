//! The volume check end to end below the decision: cluster objects in,
//! per-node verdicts (or the pod-level refusal) out. Cases translated from
//! upstream cite their test function and case name; where the static
//! question answers differently from the scheduler at one instant (an
//! unbound Immediate claim), the case says so.

use serde_json::{Value, json};

use super::*;
use crate::cluster::FakeCluster;
use crate::node::Node;
use crate::scheduling::test_support::node;

const NS: &str = "default";
const H: &str = "kubernetes.io/hostname";
const ZONE: &str = "topology.kubernetes.io/zone";
const REGION: &str = "topology.kubernetes.io/region";
const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";

/// A cluster of volume objects alone, recording the calls it gets.
fn cluster_of(items: Vec<Value>) -> FakeCluster {
    FakeCluster::new(Vec::new())
        .volume_objects(items)
        .volumes_only()
}

// Builders in the manner of upstream's test_utils.go.

fn pvc(name: &str, class: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"storageClassName": class, "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": "Pending"}})
}

fn bound_to(mut claim: Value, pv: &str) -> Value {
    claim["spec"]["volumeName"] = json!(pv);
    claim["metadata"]["annotations"] = json!({objects::ANN_BIND_COMPLETED: "yes"});
    claim["status"]["phase"] = json!("Bound");
    claim
}

fn requesting(mut claim: Value, size: &str) -> Value {
    claim["spec"]["resources"] = json!({"requests": {"storage": size}});
    claim
}

fn pv(name: &str, class: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"storageClassName": class, "capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]},
        "status": {"phase": "Available"}})
}

fn sized(mut volume: Value, size: &str) -> Value {
    volume["spec"]["capacity"]["storage"] = json!(size);
    volume
}

/// One term, one `In` expression per pair (`withNodeAffinity`).
fn pinned(mut volume: Value, pairs: &[(&str, &[&str])]) -> Value {
    let exprs: Vec<Value> = pairs
        .iter()
        .map(|(k, vs)| json!({"key": k, "operator": "In", "values": vs}))
        .collect();
    volume["spec"]["nodeAffinity"] =
        json!({"required": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}});
    volume
}

fn labelled(mut object: Value, labels: Value) -> Value {
    object["metadata"]["labels"] = labels;
    object
}

fn class(name: &str, mode: &str, provisioner: &str) -> Value {
    json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": name},
        "provisioner": provisioner, "volumeBindingMode": mode})
}

fn allowed(mut sc: Value, key: &str, values: &[&str]) -> Value {
    sc["allowedTopologies"] = json!([{"matchLabelExpressions": [{"key": key, "values": values}]}]);
    sc
}

fn wait(name: &str) -> Value {
    class(name, "WaitForFirstConsumer", "kubernetes.io/no-provisioner")
}

fn claims(names: &[&str]) -> Vec<PodVolume> {
    names
        .iter()
        .map(|n| PodVolume {
            name: format!("vol-{n}"),
            source: ClaimSource::Claim(n.to_string()),
        })
        .collect()
}

fn host(name: &str, labels: Value) -> Node<'static> {
    let mut labels = labels;
    labels[H] = json!(name);
    node(json!({"name": name, "labels": labels}))
}

fn subject() -> Subject<'static> {
    Subject {
        user: "system:serviceaccount:kubewarden:policy-server",
        groups: Vec::new(),
    }
}

/// Resolves the pod's claims against `objects` and checks every node:
/// `Err(message)` for a pod-level refusal, else each node's reasons
/// (empty: it passes).
fn verdicts(
    objects: Vec<Value>,
    volumes: &[PodVolume],
    nodes: &[Node<'static>],
) -> Result<Vec<Vec<String>>, String> {
    let cluster = cluster_of(objects);
    let pod = PodRef {
        name: Some("test-pod"),
        namespace: NS,
        claims: volumes,
    };
    let check = match resolve(&pod, &subject(), &cluster) {
        Ok(check) => check,
        Err(Unresolved::Pod(why)) => return Err(why),
        Err(other) => panic!("not a pod-level refusal: {other:?}"),
    };
    Ok(nodes
        .iter()
        .map(|n| match check.check(n) {
            Ok(()) => Vec::new(),
            Err(unfit) => unfit.reasons().map(|r| r.to_string()).collect(),
        })
        .collect())
}

const BIND: &str = "node(s) didn't find available persistent volumes to bind";
const AFFINITY: &str = "node(s) didn't match PersistentVolume's node affinity";
const NO_ZONE: &str = "node(s) had no available volume zone";

fn pass() -> Vec<String> {
    Vec::new()
}

fn fail(reasons: &[&str]) -> Vec<String> {
    reasons.iter().map(|r| r.to_string()).collect()
}

/// `volume_binding_test.go`, `TestVolumeBinding`.
#[test]
fn upstream_volume_binding_cases() {
    let node_a = || vec![host("node-a", json!({}))];
    let wait_sc = wait("wait-sc");
    let immediate_sc = class("immediate-sc", "Immediate", "");
    type Case = (
        &'static str,
        Vec<Value>,
        Vec<&'static str>,
        Vec<Node<'static>>,
        Result<Vec<Vec<String>>, String>,
    );
    let cases: Vec<Case> = vec![
        (
            "all bound",
            vec![
                wait_sc.clone(),
                bound_to(pvc("pvc-a", "wait-sc"), "pv-a"),
                pv("pv-a", "wait-sc"),
            ],
            vec!["pvc-a"],
            node_a(),
            Ok(vec![pass()]),
        ),
        (
            "all bound with local volumes",
            vec![
                wait_sc.clone(),
                bound_to(pvc("pvc-a", "wait-sc"), "pv-a"),
                bound_to(pvc("pvc-b", "wait-sc"), "pv-b"),
                pinned(pv("pv-a", "wait-sc"), &[(H, &["node-a"])]),
                pinned(pv("pv-b", "wait-sc"), &[(H, &["node-a"])]),
            ],
            vec!["pvc-a", "pvc-b"],
            vec![host("node-a", json!({})), host("node-b", json!({}))],
            Ok(vec![pass(), fail(&[AFFINITY])]),
        ),
        (
            "PVC does not exist",
            vec![],
            vec!["pvc-a"],
            node_a(),
            Err("persistentvolumeclaim \"pvc-a\" not found".into()),
        ),
        (
            "Part of PVCs do not exist",
            vec![
                wait_sc.clone(),
                bound_to(pvc("pvc-a", "wait-sc"), "pv-a"),
                pv("pv-a", "wait-sc"),
            ],
            vec!["pvc-a", "pvc-b"],
            node_a(),
            Err("persistentvolumeclaim \"pvc-b\" not found".into()),
        ),
        // Upstream refuses the pod until the claim is bound; statically, an
        // Immediate class without a provisioner and no Available PV can
        // never bind it: no node.
        (
            "immediate claims not bound",
            vec![immediate_sc.clone(), pvc("pvc-a", "immediate-sc")],
            vec!["pvc-a"],
            node_a(),
            Ok(vec![fail(&[BIND])]),
        ),
        (
            "unbound claims no matches",
            vec![wait_sc.clone(), pvc("pvc-a", "wait-sc")],
            vec!["pvc-a"],
            node_a(),
            Ok(vec![fail(&[BIND])]),
        ),
        (
            "bound and unbound unsatisfied",
            vec![
                wait_sc.clone(),
                bound_to(pvc("pvc-a", "wait-sc"), "pv-a"),
                pvc("pvc-b", "wait-sc"),
                pinned(pv("pv-a", "wait-sc"), &[("foo", &["bar"])]),
            ],
            vec!["pvc-a", "pvc-b"],
            vec![host("node-a", json!({"foo": "barbar"}))],
            Ok(vec![fail(&[AFFINITY, BIND])]),
        ),
        // Upstream: every node fails (PVNotExist); no node ever can.
        (
            "pv not found",
            vec![wait_sc.clone(), bound_to(pvc("pvc-a", "wait-sc"), "pv-a")],
            vec!["pvc-a"],
            node_a(),
            Err("persistentvolume \"pv-a\" not found".into()),
        ),
        (
            "pv not found claim lost",
            vec![wait_sc.clone(), {
                let mut c = bound_to(pvc("pvc-a", "wait-sc"), "pv-a");
                c["status"]["phase"] = json!("Lost");
                c
            }],
            vec!["pvc-a"],
            node_a(),
            Err(
                "persistentvolumeclaim \"pvc-a\" bound to non-existent persistentvolume \"pv-a\""
                    .into(),
            ),
        ),
        (
            "local volumes with close capacity are preferred",
            vec![
                wait_sc.clone(),
                requesting(pvc("pvc-a", "wait-sc"), "50Gi"),
                pinned(sized(pv("pv-a-0", "wait-sc"), "200Gi"), &[(H, &["node-a"])]),
                pinned(sized(pv("pv-a-1", "wait-sc"), "200Gi"), &[(H, &["node-a"])]),
                pinned(sized(pv("pv-b-0", "wait-sc"), "100Gi"), &[(H, &["node-b"])]),
                pinned(sized(pv("pv-b-1", "wait-sc"), "100Gi"), &[(H, &["node-b"])]),
            ],
            vec!["pvc-a"],
            vec![
                host("node-a", json!({})),
                host("node-b", json!({})),
                host("node-c", json!({})),
            ],
            Ok(vec![pass(), pass(), fail(&[BIND])]),
        ),
        (
            "local volumes with close capacity are preferred (multiple pvcs)",
            vec![
                wait_sc.clone(),
                wait("wait-hdd-sc"),
                requesting(pvc("pvc-0", "wait-sc"), "50Gi"),
                requesting(pvc("pvc-1", "wait-hdd-sc"), "100Gi"),
                pinned(sized(pv("pv-a-0", "wait-sc"), "200Gi"), &[(H, &["node-a"])]),
                pinned(
                    sized(pv("pv-a-2", "wait-hdd-sc"), "200Gi"),
                    &[(H, &["node-a"])],
                ),
                pinned(sized(pv("pv-b-0", "wait-sc"), "100Gi"), &[(H, &["node-b"])]),
                pinned(
                    sized(pv("pv-b-2", "wait-hdd-sc"), "100Gi"),
                    &[(H, &["node-b"])],
                ),
            ],
            vec!["pvc-0", "pvc-1"],
            vec![
                host("node-a", json!({})),
                host("node-b", json!({})),
                host("node-c", json!({})),
            ],
            Ok(vec![pass(), pass(), fail(&[BIND])]),
        ),
        (
            "zonal volumes with close capacity are preferred",
            vec![
                wait_sc.clone(),
                requesting(pvc("pvc-a", "wait-sc"), "50Gi"),
                pinned(
                    sized(pv("pv-a-0", "wait-sc"), "200Gi"),
                    &[(REGION, &["region-a"]), (ZONE, &["zone-a"])],
                ),
                pinned(
                    sized(pv("pv-b-0", "wait-sc"), "100Gi"),
                    &[(REGION, &["region-b"]), (ZONE, &["zone-b"])],
                ),
            ],
            vec!["pvc-a"],
            vec![
                host("zone-a-node-a", json!({REGION: "region-a", ZONE: "zone-a"})),
                host("zone-b-node-a", json!({REGION: "region-b", ZONE: "zone-b"})),
                host("zone-c-node-a", json!({REGION: "region-c", ZONE: "zone-c"})),
            ],
            Ok(vec![pass(), pass(), fail(&[BIND])]),
        ),
    ];
    for (name, objects, names, nodes, expected) in cases {
        assert_eq!(
            verdicts(objects, &claims(&names), &nodes),
            expected,
            "{name}"
        );
    }
}

/// `binder_test.go`, `TestFindPodVolumesWithoutProvisioning` and
/// `TestFindPodVolumesWithProvisioning`, on upstream's node `node1`
/// (`nodeKey: node1`).
#[test]
fn upstream_binder_cases() {
    const KEY: &str = "nodeKey";
    let node1 = || vec![node(json!({"name": "node1", "labels": {KEY: "node1"}}))];
    let wait_sc = wait("waitClass");
    let provisioner = allowed(
        class(
            "waitClassWithProvisioner",
            "WaitForFirstConsumer",
            "test-provisioner",
        ),
        KEY,
        &["node1", "reference-value"],
    );
    let topo_mismatch = allowed(
        class(
            "topoMismatchClass",
            "WaitForFirstConsumer",
            "test-provisioner",
        ),
        KEY,
        &["reference-value"],
    );
    let unbound = || requesting(pvc("unbound-pvc", "waitClass"), "1G");
    let unbound2 = || requesting(pvc("unbound-pvc2", "waitClass"), "5G");
    let pv_node1a = || {
        pinned(
            sized(pv("pv-node1a", "waitClass"), "5G"),
            &[(KEY, &["node1"])],
        )
    };
    let pv_node1b = || {
        pinned(
            sized(pv("pv-node1b", "waitClass"), "10G"),
            &[(KEY, &["node1"])],
        )
    };
    let pv_node2 = || {
        pinned(
            sized(pv("pv-node2", "waitClass"), "1G"),
            &[(KEY, &["node2"])],
        )
    };
    let bound_pvc = || bound_to(pvc("bound-pvc", "waitClass"), "pv-bound");
    let pv_bound = || {
        let mut v = pinned(pv("pv-bound", "waitClass"), &[(KEY, &["node1"])]);
        v["spec"]["claimRef"] = json!({"name": "bound-pvc", "namespace": NS});
        v["status"]["phase"] = json!("Bound");
        v
    };
    type Case = (
        &'static str,
        Vec<Value>,
        Vec<&'static str>,
        Result<Vec<Vec<String>>, String>,
    );
    let cases: Vec<Case> = vec![
        ("no-pvcs", vec![], vec![], Ok(vec![pass()])),
        (
            "pvc-not-found",
            vec![],
            vec!["bound-pvc"],
            Err("persistentvolumeclaim \"bound-pvc\" not found".into()),
        ),
        (
            "bound-pvc",
            vec![wait_sc.clone(), bound_pvc(), pv_bound()],
            vec!["bound-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "bound-pvc,pv-not-exists",
            vec![wait_sc.clone(), bound_pvc()],
            vec!["bound-pvc"],
            Err("persistentvolume \"pv-bound\" not found".into()),
        ),
        (
            "unbound-pvc,pv-same-node",
            vec![
                wait_sc.clone(),
                unbound(),
                pv_node2(),
                pv_node1a(),
                pv_node1b(),
            ],
            vec!["unbound-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "unbound-pvc,pv-different-node",
            vec![wait_sc.clone(), unbound(), pv_node2()],
            vec!["unbound-pvc"],
            Ok(vec![fail(&[BIND])]),
        ),
        (
            "two-unbound-pvcs",
            vec![
                wait_sc.clone(),
                unbound(),
                unbound2(),
                pv_node1a(),
                pv_node1b(),
            ],
            vec!["unbound-pvc", "unbound-pvc2"],
            Ok(vec![pass()]),
        ),
        (
            "two-unbound-pvcs,order-by-size",
            vec![
                wait_sc.clone(),
                unbound(),
                unbound2(),
                pv_node1a(),
                pv_node1b(),
            ],
            vec!["unbound-pvc2", "unbound-pvc"],
            Ok(vec![pass()]),
        ),
        // One PV for two claims: each PV binds once.
        (
            "two-unbound-pvcs,partial-match",
            vec![wait_sc.clone(), unbound(), unbound2(), pv_node1a()],
            vec!["unbound-pvc", "unbound-pvc2"],
            Ok(vec![fail(&[BIND])]),
        ),
        (
            "one-bound,one-unbound",
            vec![
                wait_sc.clone(),
                unbound(),
                bound_pvc(),
                pv_bound(),
                pv_node1a(),
            ],
            vec!["unbound-pvc", "bound-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "one-bound,one-unbound,no-match",
            vec![
                wait_sc.clone(),
                unbound(),
                bound_pvc(),
                pv_bound(),
                pv_node2(),
            ],
            vec!["unbound-pvc", "bound-pvc"],
            Ok(vec![fail(&[BIND])]),
        ),
        (
            "immediate-bound-pvc-wrong-node",
            vec![
                class("immediateClass", "Immediate", ""),
                bound_to(
                    pvc("immediate-bound-pvc", "immediateClass"),
                    "pv-bound-immediate",
                ),
                pinned(
                    pv("pv-bound-immediate", "immediateClass"),
                    &[(KEY, &["node2"])],
                ),
            ],
            vec!["immediate-bound-pvc"],
            Ok(vec![fail(&[AFFINITY])]),
        ),
        // A pre-bound claim whose PV names it binds there: treated as bound.
        (
            "prebound-pvc",
            vec![
                wait_sc.clone(),
                {
                    let mut c = pvc("prebound-pvc", "waitClass");
                    c["spec"]["volumeName"] = json!("pv-node1a");
                    c
                },
                {
                    let mut v = pv_node1a();
                    v["spec"]["claimRef"] = json!({"name": "prebound-pvc", "namespace": NS});
                    v
                },
            ],
            vec!["prebound-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "one-provisioned",
            vec![
                provisioner.clone(),
                requesting(pvc("provisioned-pvc", "waitClassWithProvisioner"), "1G"),
            ],
            vec!["provisioned-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "two-unbound-pvcs,one-matched,one-provisioned",
            vec![
                wait_sc.clone(),
                provisioner.clone(),
                unbound(),
                pv_node1a(),
                requesting(pvc("provisioned-pvc", "waitClassWithProvisioner"), "1G"),
            ],
            vec!["unbound-pvc", "provisioned-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "one-binding,one-selected-node",
            vec![
                wait_sc.clone(),
                provisioner.clone(),
                bound_pvc(),
                pv_bound(),
                {
                    let mut c =
                        requesting(pvc("provisioned-pvc", "waitClassWithProvisioner"), "1G");
                    c["metadata"]["annotations"] = json!({objects::ANN_SELECTED_NODE: "node1"});
                    c
                },
            ],
            vec!["bound-pvc", "provisioned-pvc"],
            Ok(vec![pass()]),
        ),
        (
            "invalid-provisioner",
            vec![wait_sc.clone(), pvc("no-provisioner-pvc", "waitClass")],
            vec!["no-provisioner-pvc"],
            Ok(vec![fail(&[BIND])]),
        ),
        (
            "volume-topology-unsatisfied",
            vec![topo_mismatch, pvc("topo-mismatch-pvc", "topoMismatchClass")],
            vec!["topo-mismatch-pvc"],
            Ok(vec![fail(&[BIND])]),
        ),
    ];
    for (name, objects, names, expected) in cases {
        assert_eq!(
            verdicts(objects, &claims(&names), &node1()),
            expected,
            "{name}"
        );
    }
}

/// Bound `persistentVolumeClaim` volumes go through VolumeZone after
/// VolumeBinding (`volume_zone_test.go`, `TestWithBinding`, statically).
#[test]
fn bound_zonal_volumes_need_a_node_in_their_zone() {
    let claim = bound_to(pvc("data-0", "standard"), "pv-b");
    let disk = labelled(pv("pv-b", "standard"), json!({ZONE: "zone-b", REGION: "r"}));
    let nodes = [
        host("a", json!({ZONE: "zone-a", REGION: "r"})),
        host("b", json!({ZONE: "zone-b", REGION: "r"})),
        host("plain", json!({})),
    ];
    assert_eq!(
        verdicts(
            vec![claim.clone(), disk.clone()],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![fail(&[NO_ZONE]), pass(), pass()])
    );
    // Beta label on the PV, GA on the node: falls back; and a multi-zone disk.
    let beta = labelled(pv("pv-b", "standard"), json!({BETA_ZONE: "zone-c__zone-b"}));
    assert_eq!(
        verdicts(vec![claim.clone(), beta], &claims(&["data-0"]), &nodes),
        Ok(vec![fail(&[NO_ZONE]), pass(), pass()])
    );
    // Several claims with conflicting zones: no node has both.
    let other = bound_to(pvc("data-1", "standard"), "pv-a");
    let disk_a = labelled(pv("pv-a", "standard"), json!({ZONE: "zone-a"}));
    assert_eq!(
        verdicts(
            vec![claim, disk, other, disk_a],
            &claims(&["data-0", "data-1"]),
            &nodes
        ),
        Ok(vec![fail(&[NO_ZONE]), fail(&[NO_ZONE]), pass()])
    );
}

/// VolumeBinding comes first: a node with a node-affinity conflict does not
/// also report the zone.
#[test]
fn the_binding_reason_comes_before_the_zone_reason() {
    let claim = bound_to(pvc("data-0", "standard"), "pv-b");
    let disk = labelled(
        pinned(pv("pv-b", "standard"), &[(ZONE, &["zone-b"])]),
        json!({ZONE: "zone-b"}),
    );
    let nodes = [host("a", json!({ZONE: "zone-a"}))];
    assert_eq!(
        verdicts(vec![claim, disk], &claims(&["data-0"]), &nodes),
        Ok(vec![fail(&[AFFINITY])])
    );
}

#[test]
fn matchfields_never_constrain_a_volume() {
    let claim = bound_to(pvc("data-0", "standard"), "pv");
    let mut disk = pv("pv", "standard");
    disk["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}]}});
    let nodes = [host("a", json!({}))];
    assert_eq!(
        verdicts(
            vec![claim.clone(), disk.clone()],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![pass()])
    );
    // With a label expression, the fields are dropped and the labels decide.
    disk["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"] =
        json!([{"key": ZONE, "operator": "In", "values": ["zone-b"]}]);
    assert_eq!(
        verdicts(vec![claim, disk], &claims(&["data-0"]), &nodes),
        Ok(vec![fail(&[AFFINITY])])
    );
}

/// Local PVs (`kubernetes.io/no-provisioner`, WaitForFirstConsumer): a node
/// passes only with an Available PV of the class that fits the claim.
#[test]
fn local_volumes_bind_where_they_are() {
    let local = wait("local-storage");
    let claim = requesting(pvc("data-0", "local-storage"), "100Gi");
    let on = |node: &str, size: &str| {
        pinned(
            sized(pv(&format!("local-{node}-{size}"), "local-storage"), size),
            &[(H, &[node])],
        )
    };
    let taken = {
        let mut v = on("b", "500Gi");
        v["spec"]["claimRef"] = json!({"name": "someone-else", "namespace": NS});
        v["status"]["phase"] = json!("Bound");
        v
    };
    let nodes = [
        host("a", json!({})),
        host("b", json!({})),
        host("c", json!({})),
    ];
    assert_eq!(
        verdicts(
            vec![local, claim, on("a", "200Gi"), taken, on("c", "50Gi")],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![pass(), fail(&[BIND]), fail(&[BIND])]),
        "a is big enough, b's PV is taken, c's is too small"
    );
}

#[test]
fn candidate_volumes_must_match_mode_access_class_and_selector() {
    let nodes = [host("a", json!({}))];
    let base = || requesting(pvc("data-0", "local"), "1Gi");
    let disk = || pv("pv", "local");
    let run = |claim: Value, volume: Value| {
        verdicts(
            vec![wait("local"), claim, volume],
            &claims(&["data-0"]),
            &nodes,
        )
    };
    assert_eq!(run(base(), disk()), Ok(vec![pass()]));
    let mut block = base();
    block["spec"]["volumeMode"] = json!("Block");
    assert_eq!(run(block, disk()), Ok(vec![fail(&[BIND])]), "volumeMode");
    let mut many = base();
    many["spec"]["accessModes"] = json!(["ReadWriteMany"]);
    assert_eq!(run(many, disk()), Ok(vec![fail(&[BIND])]), "access modes");
    assert_eq!(
        run(base(), pv("pv", "other")),
        Ok(vec![fail(&[BIND])]),
        "class"
    );
    let mut released = disk();
    released["status"]["phase"] = json!("Released");
    assert_eq!(
        run(base(), released),
        Ok(vec![fail(&[BIND])]),
        "not Available"
    );
    let mut picky = base();
    picky["spec"]["selector"] = json!({"matchLabels": {"tier": "fast"}});
    assert_eq!(
        run(picky.clone(), disk()),
        Ok(vec![fail(&[BIND])]),
        "selector"
    );
    assert_eq!(
        run(picky, labelled(disk(), json!({"tier": "fast"}))),
        Ok(vec![pass()])
    );
}

/// WaitForFirstConsumer with a provisioner: `allowedTopologies` decide,
/// keys as written (no beta/GA translation).
#[test]
fn provisioning_follows_allowed_topologies() {
    let nodes = [
        host("a", json!({ZONE: "zone-a"})),
        host("b", json!({ZONE: "zone-b"})),
        host("beta-b", json!({BETA_ZONE: "zone-b"})),
    ];
    let zonal = allowed(
        class("zonal", "WaitForFirstConsumer", "ebs.csi.aws.com"),
        ZONE,
        &["zone-b"],
    );
    assert_eq!(
        verdicts(
            vec![zonal, pvc("data-0", "zonal")],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![fail(&[BIND]), pass(), fail(&[BIND])])
    );
    let anywhere = class("anywhere", "WaitForFirstConsumer", "ebs.csi.aws.com");
    assert_eq!(
        verdicts(
            vec![anywhere, pvc("data-0", "anywhere")],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![pass(), pass(), pass()])
    );
}

#[test]
fn a_selected_node_restricts_the_claim_to_it() {
    let nodes = [host("a", json!({})), host("b", json!({}))];
    let sc = class("fast", "WaitForFirstConsumer", "ebs.csi.aws.com");
    let mut claim = pvc("data-0", "fast");
    claim["metadata"]["annotations"] = json!({objects::ANN_SELECTED_NODE: "b"});
    assert_eq!(
        verdicts(vec![sc, claim], &claims(&["data-0"]), &nodes),
        Ok(vec![fail(&[BIND]), pass()])
    );
}

/// An unbound Immediate claim: binding is in flight; a node passes if one
/// possible outcome works there, checked as a bound volume (zone included).
#[test]
fn immediate_claims_pass_where_a_possible_volume_works() {
    let nodes = [
        host("a", json!({ZONE: "zone-a"})),
        host("b", json!({ZONE: "zone-b"})),
    ];
    let sc = class("manual", "Immediate", "");
    let disk = labelled(pv("pv-b", "manual"), json!({ZONE: "zone-b"}));
    assert_eq!(
        verdicts(
            vec![sc.clone(), pvc("data-0", "manual"), disk],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![fail(&[BIND]), pass()])
    );
    // A class that does not exist: only an Available PV of that name's class.
    let disk = labelled(pv("pv-b", "ghost"), json!({ZONE: "zone-b"}));
    assert_eq!(
        verdicts(
            vec![pvc("data-0", "ghost"), disk],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![fail(&[BIND]), pass()])
    );
    // An Immediate class that provisions anywhere: every node.
    let dynamic = class("gp3", "Immediate", "ebs.csi.aws.com");
    assert_eq!(
        verdicts(
            vec![dynamic, pvc("data-0", "gp3")],
            &claims(&["data-0"]),
            &nodes
        ),
        Ok(vec![pass(), pass()])
    );
}

#[test]
fn pod_level_failures_name_the_claim() {
    let nodes = [host("a", json!({}))];
    let mut deleting = pvc("data-0", "standard");
    deleting["metadata"]["deletionTimestamp"] = json!("2026-11-29T00:00:00Z");
    assert_eq!(
        verdicts(vec![deleting], &claims(&["data-0"]), &nodes),
        Err("persistentvolumeclaim \"data-0\" is being deleted".into())
    );
    // Pre-bound to a PV that is gone, or that is bound to another claim.
    let mut pre = pvc("data-0", "standard");
    pre["spec"]["volumeName"] = json!("pv-x");
    let expected = Err("pod has unbound immediate PersistentVolumeClaims".to_string());
    assert_eq!(
        verdicts(vec![pre.clone()], &claims(&["data-0"]), &nodes),
        expected
    );
    let mut other = pv("pv-x", "standard");
    other["spec"]["claimRef"] = json!({"name": "other", "namespace": NS});
    assert_eq!(
        verdicts(vec![pre.clone(), other], &claims(&["data-0"]), &nodes),
        expected
    );
    // Pre-bound to a free PV that satisfies it: it binds there.
    let free = pinned(pv("pv-x", "standard"), &[(H, &["b"])]);
    assert_eq!(
        verdicts(vec![pre, free], &claims(&["data-0"]), &nodes),
        Ok(vec![fail(&[AFFINITY])])
    );
}

/// A free PV that one claim is pre-bound to is not a candidate for another.
#[test]
fn a_volume_a_pre_bound_claim_takes_is_no_candidate_for_another() {
    let nodes = [host("a", json!({}))];
    let mut pre = pvc("data-0", "local");
    pre["spec"]["volumeName"] = json!("only");
    let objects = vec![
        wait("local"),
        pre,
        pvc("data-1", "local"),
        pv("only", "local"),
    ];
    assert_eq!(
        verdicts(objects.clone(), &claims(&["data-0"]), &nodes),
        Ok(vec![pass()])
    );
    assert_eq!(
        verdicts(objects.clone(), &claims(&["data-1"]), &nodes),
        Ok(vec![pass()])
    );
    // Either order: the unbound claim is matched after the pre-bound one.
    for order in [["data-0", "data-1"], ["data-1", "data-0"]] {
        assert_eq!(
            verdicts(objects.clone(), &claims(&order), &nodes),
            Ok(vec![fail(&[BIND])]),
            "{order:?}"
        );
    }
}

fn ephemeral(volume: &str, spec: Value) -> PodVolume {
    PodVolume {
        name: volume.into(),
        source: ClaimSource::Ephemeral(Box::new(
            serde_json::from_value(json!({"spec": spec})).unwrap(),
        )),
    }
}

/// Generic ephemeral volumes are judged as the claim their controller will
/// create: an unbound claim of the template's class, or the default class.
#[test]
fn ephemeral_volumes_use_their_template() {
    let nodes = [
        host("a", json!({ZONE: "zone-a"})),
        host("b", json!({ZONE: "zone-b"})),
    ];
    let zonal = |name: &str, default: bool, created: &str| {
        let mut sc = allowed(
            class(name, "WaitForFirstConsumer", "ebs.csi.aws.com"),
            ZONE,
            &["zone-b"],
        );
        sc["metadata"]["creationTimestamp"] = json!(created);
        if default {
            sc["metadata"]["annotations"] = json!({objects::ANN_DEFAULT_CLASS: "true"});
        }
        sc
    };
    let named = ephemeral(
        "scratch",
        json!({"storageClassName": "zonal", "accessModes": ["ReadWriteOnce"]}),
    );
    assert_eq!(
        verdicts(
            vec![zonal("zonal", false, "2026-01-01T00:00:00Z")],
            &[named],
            &nodes
        ),
        Ok(vec![fail(&[BIND]), pass()])
    );
    // No class: the newest default class.
    let unnamed = ephemeral("scratch", json!({"accessModes": ["ReadWriteOnce"]}));
    let everywhere = {
        let mut sc = class("old-default", "WaitForFirstConsumer", "ebs.csi.aws.com");
        sc["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
        sc["metadata"]["annotations"] = json!({objects::ANN_DEFAULT_CLASS: "true"});
        sc
    };
    assert_eq!(
        verdicts(
            vec![
                everywhere.clone(),
                zonal("new-default", true, "2026-01-01T00:00:00Z")
            ],
            std::slice::from_ref(&unnamed),
            &nodes
        ),
        Ok(vec![fail(&[BIND]), pass()])
    );
    // No default class: class "", which only a class-less Available PV serves.
    assert_eq!(
        verdicts(
            vec![zonal("zonal", false, "2026-01-01T00:00:00Z")],
            std::slice::from_ref(&unnamed),
            &nodes
        ),
        Ok(vec![fail(&[BIND]), fail(&[BIND])])
    );
    assert_eq!(
        verdicts(
            vec![pinned(pv("manual", ""), &[(ZONE, &["zone-a"])])],
            &[unnamed],
            &nodes
        ),
        Ok(vec![pass(), fail(&[BIND])])
    );
}

/// `binder_test.go` `generic-ephemeral,wrong-pvc`: the claim name is taken
/// by a claim the pod does not own.
#[test]
fn an_ephemeral_claim_name_taken_by_another_claim_fails_the_pod() {
    let nodes = [host("a", json!({}))];
    let spec = json!({"storageClassName": "standard"});
    let mut taken = pvc("test-pod-scratch", "standard");
    taken["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": "someone-else", "uid": "u", "controller": true}]);
    assert_eq!(
        verdicts(vec![taken.clone()], &[ephemeral("scratch", spec.clone())], &nodes),
        Err("PVC default/test-pod-scratch was not created for pod default/test-pod (pod is not owner)".into())
    );
    // Owned by an earlier pod of this name: it goes with that pod.
    taken["metadata"]["ownerReferences"][0]["name"] = json!("test-pod");
    let sc = class("standard", "WaitForFirstConsumer", "ebs.csi.aws.com");
    assert_eq!(
        verdicts(vec![taken, sc], &[ephemeral("scratch", spec)], &nodes),
        Ok(vec![pass()])
    );
}

/// A node in zone-a and one in zone-b.
fn zones_a_and_b() -> [Node<'static>; 2] {
    [
        host("a", json!({ZONE: "zone-a"})),
        host("b", json!({ZONE: "zone-b"})),
    ]
}

/// A zonal provisioner that only provisions in zone-b, on first consumer.
fn zonal_b_class() -> Value {
    allowed(
        class("zonal-b", "WaitForFirstConsumer", "ebs.csi.aws.com"),
        ZONE,
        &["zone-b"],
    )
}

/// A StatefulSet claim deleted and created again: its old PV, Released in
/// zone a, still names it, with the old claim's UID. The scheduler never
/// binds the new claim there: it provisions in zone b, where no kata node is.
#[test]
fn a_recreated_claim_never_inherits_its_namesakes_disk() {
    let nodes = zones_a_and_b();
    let zonal_b = zonal_b_class();
    let mut claim = pvc("data-web-0", "zonal-b");
    claim["metadata"]["uid"] = json!("uid-new");
    let old = |claim_ref: Value| {
        let mut v = pinned(pv("pv-old", "zonal-b"), &[(ZONE, &["zone-a"])]);
        v["spec"]["claimRef"] = claim_ref;
        v["status"]["phase"] = json!("Released");
        v
    };
    let run = |claim_ref: Value| {
        verdicts(
            vec![zonal_b.clone(), claim.clone(), old(claim_ref)],
            &claims(&["data-web-0"]),
            &nodes,
        )
    };
    let named = |uid: Option<&str>| {
        let mut r = json!({"kind": "PersistentVolumeClaim", "name": "data-web-0", "namespace": NS});
        if let Some(uid) = uid {
            r["uid"] = json!(uid);
        }
        r
    };
    // The old claim's UID: not this claim; only zone b can serve it.
    assert_eq!(run(named(Some("uid-old"))), Ok(vec![fail(&[BIND]), pass()]));
    // Pre-bound by UID to this very claim: usable in zone a (zone b can
    // still provision, as the scheduler's FindPodVolumes sees it).
    let both = Ok(vec![pass(), pass()]);
    assert_eq!(run(named(Some("uid-new"))), both);
    // A claimRef without a UID (or an empty one) names the claim by name.
    assert_eq!(run(named(None)), both);
    assert_eq!(run(named(Some(""))), both);
    // Another namespace never names it.
    let mut elsewhere = named(Some("uid-new"));
    elsewhere["namespace"] = json!("other");
    assert_eq!(run(elsewhere), Ok(vec![fail(&[BIND]), pass()]));
}

/// A claim pre-bound by `volumeName` to a PV whose claimRef names an
/// earlier claim of the same name never binds (`syncUnboundClaim`); one
/// whose claimRef carries this claim's UID does.
#[test]
fn a_pre_bound_claim_binds_only_to_a_volume_that_names_it_by_uid() {
    let nodes = [host("a", json!({ZONE: "zone-a"}))];
    let mut pre = pvc("data-0", "standard");
    pre["spec"]["volumeName"] = json!("pv-x");
    pre["metadata"]["uid"] = json!("uid-2");
    let run = |uid: &str| {
        let mut v = pinned(pv("pv-x", "standard"), &[(ZONE, &["zone-a"])]);
        v["spec"]["claimRef"] = json!({"name": "data-0", "namespace": NS, "uid": uid});
        verdicts(vec![pre.clone(), v], &claims(&["data-0"]), &nodes)
    };
    assert_eq!(
        run("uid-1"),
        Err("pod has unbound immediate PersistentVolumeClaims".into())
    );
    assert_eq!(run("uid-2"), Ok(vec![pass()]));
}

/// A pod created again with the same name while its previous ephemeral
/// claim is still being garbage-collected: the template is judged (the
/// claim will be created again), and the stale claim's PV, which names the
/// stale claim's UID, is no candidate for it.
#[test]
fn a_stale_ephemeral_claims_volume_is_not_pre_bound_to_the_template() {
    let nodes = zones_a_and_b();
    let zonal_b = zonal_b_class();
    let mut stale = bound_to(pvc("test-pod-scratch", "zonal-b"), "pv-stale");
    stale["metadata"]["uid"] = json!("uid-stale");
    stale["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod",
        "name": "test-pod", "uid": "uid-old-pod", "controller": true}]);
    let mut stale_pv = pinned(pv("pv-stale", "zonal-b"), &[(ZONE, &["zone-a"])]);
    stale_pv["spec"]["claimRef"] =
        json!({"name": "test-pod-scratch", "namespace": NS, "uid": "uid-stale"});
    stale_pv["status"]["phase"] = json!("Bound");
    let spec = json!({"storageClassName": "zonal-b", "accessModes": ["ReadWriteOnce"]});
    assert_eq!(
        verdicts(
            vec![zonal_b.clone(), stale.clone(), stale_pv.clone()],
            &[ephemeral("scratch", spec.clone())],
            &nodes
        ),
        Ok(vec![fail(&[BIND]), pass()])
    );
    // A template that carries a UID gets none: the controller's claim is new.
    let mut with_uid = spec;
    with_uid["metadata"] = json!({"uid": "uid-stale"});
    let template: Claim = serde_json::from_value(json!({"metadata": {"uid": "uid-stale"},
        "spec": with_uid}))
    .unwrap();
    let volume = PodVolume {
        name: "scratch".into(),
        source: ClaimSource::Ephemeral(Box::new(template)),
    };
    assert_eq!(
        verdicts(vec![zonal_b, stale, stale_pv], &[volume], &nodes),
        Ok(vec![fail(&[BIND]), pass()])
    );
}

/// Each object is read once, lists only when needed, and each list is
/// asked about first.
#[test]
fn host_calls_are_few_and_lists_are_asked_about_first() {
    let run = |objects: Vec<Value>, names: &[&str]| {
        let cluster = cluster_of(objects);
        let volumes = claims(names);
        let pod = PodRef {
            name: Some("p"),
            namespace: NS,
            claims: &volumes,
        };
        let _ = resolve(&pod, &subject(), &cluster);
        cluster.take_queries()
    };
    // A bound claim: the claim and its volume, nothing else.
    assert_eq!(
        run(
            vec![bound_to(pvc("data-0", "gp3"), "pv"), pv("pv", "gp3")],
            &["data-0"]
        ),
        vec![
            "Get PersistentVolumeClaim default/data-0",
            "Get PersistentVolume pv"
        ]
    );
    // A class that provisions anywhere: no PV list.
    assert_eq!(
        run(
            vec![
                class("gp3", "WaitForFirstConsumer", "ebs.csi.aws.com"),
                pvc("a", "gp3"),
                pvc("b", "gp3")
            ],
            &["a", "b"]
        ),
        vec![
            "Get PersistentVolumeClaim default/a",
            "Get PersistentVolumeClaim default/b",
            "Get StorageClass gp3"
        ]
    );
    // Local volumes: one PV list for both claims, after can_i.
    assert_eq!(
        run(
            vec![wait("local"), pvc("a", "local"), pvc("b", "local")],
            &["a", "b"]
        ),
        vec![
            "Get PersistentVolumeClaim default/a",
            "Get PersistentVolumeClaim default/b",
            "Get StorageClass local",
            "CanI list persistentvolumes as system:serviceaccount:kubewarden:policy-server []",
            "CanI watch persistentvolumes as system:serviceaccount:kubewarden:policy-server []",
            "List PersistentVolume",
        ]
    );
}

#[test]
fn a_list_policy_server_may_not_make_is_never_made() {
    let cluster = cluster_of(vec![wait("local"), pvc("a", "local")]).deny("*", "persistentvolumes");
    let volumes = claims(&["a"]);
    let pod = PodRef {
        name: Some("p"),
        namespace: NS,
        claims: &volumes,
    };
    let refusal = resolve(&pod, &subject(), &cluster).unwrap_err();
    assert_eq!(
        refusal,
        Unresolved::Denied {
            resource: "persistentvolumes".into(),
            verbs: vec!["list", "watch"]
        }
    );
    assert!(
        !cluster
            .take_queries()
            .contains(&"List PersistentVolume".to_string())
    );
}

#[test]
fn malformed_answers_are_refusals_not_panics() {
    let nodes = [host("a", json!({}))];
    for bad in [
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": NS}, "spec": {"accessModes": "RWO"}}),
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": NS},
            "spec": {"storageClassName": "x", "resources": {"requests": {"storage": "lots"}}}}),
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": NS,
            "annotations": {objects::ANN_SELECTED_NODE: 7}}}),
    ] {
        let cluster = cluster_of(vec![bad]);
        let volumes = claims(&["data-0"]);
        let pod = PodRef {
            name: None,
            namespace: NS,
            claims: &volumes,
        };
        let refusal = resolve(&pod, &subject(), &cluster);
        assert!(
            matches!(refusal, Err(Unresolved::Invalid(_))),
            "{refusal:?}"
        );
    }
    // Annotations the check does not read are skipped unread, whatever they hold.
    let mut claim = bound_to(pvc("data-0", "gp3"), "pv");
    claim["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] =
        json!({"not": ["a", "string"]});
    assert_eq!(
        verdicts(vec![claim, pv("pv", "gp3")], &claims(&["data-0"]), &nodes),
        Ok(vec![pass()])
    );
    // An answer of another kind than asked for.
    let wrong = br#"{"kind":"PersistentVolume","metadata":{"name":"data-0"}}"#;
    let err = objects::parse::<Claim>(wrong, "PersistentVolumeClaim").unwrap_err();
    assert_eq!(
        err,
        "the PersistentVolumeClaim from the cluster is not valid: kind is \"PersistentVolume\""
    );
}

mod property {
    use proptest::prelude::*;

    use super::*;

    const ZONES: [&str; 3] = ["a", "b", "c"];

    /// One claim and the objects behind it, of one of the shapes the checks
    /// tell apart: a bound zonal disk, a local PV, a zonal provisioner, a
    /// manual (Immediate) PV, a selected node.
    fn claim_objects(i: usize, shape: u8, zone: usize, node: usize) -> Vec<Value> {
        let name = format!("c{i}");
        let z = ZONES[zone % 3];
        let host_name = format!("n{node}");
        match shape % 5 {
            0 => vec![
                bound_to(pvc(&name, "gp3"), &format!("pv{i}")),
                labelled(
                    pinned(pv(&format!("pv{i}"), "gp3"), &[(ZONE, &[z])]),
                    json!({ZONE: z}),
                ),
            ],
            1 => vec![
                wait("local"),
                pvc(&name, "local"),
                pinned(
                    pv(&format!("pv{i}"), "local"),
                    &[(H, &[host_name.as_str()])],
                ),
            ],
            2 => vec![
                allowed(
                    class(&format!("zonal-{z}"), "WaitForFirstConsumer", "csi"),
                    ZONE,
                    &[z],
                ),
                pvc(&name, &format!("zonal-{z}")),
            ],
            3 => vec![
                class("manual", "Immediate", ""),
                pvc(&name, "manual"),
                labelled(pv(&format!("pv{i}"), "manual"), json!({ZONE: z})),
            ],
            _ => {
                let mut c = pvc(&name, "any");
                c["metadata"]["annotations"] = json!({objects::ANN_SELECTED_NODE: host_name});
                vec![class("any", "WaitForFirstConsumer", "csi"), c]
            }
        }
    }

    fn nodes() -> Vec<Node<'static>> {
        (0..4)
            .map(|n| host(&format!("n{n}"), json!({ZONE: ZONES[n % 3]})))
            .collect()
    }

    fn objects_of(shapes: &[(u8, usize, usize)]) -> Vec<Value> {
        let mut objects = Vec::new();
        for (i, (shape, zone, node)) in shapes.iter().enumerate() {
            for o in claim_objects(i, *shape, *zone, *node) {
                if !objects.contains(&o) {
                    objects.push(o);
                }
            }
        }
        objects
    }

    fn run(objects: Vec<Value>, count: usize) -> Result<Vec<Vec<String>>, String> {
        let names: Vec<String> = (0..count).map(|i| format!("c{i}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        verdicts(objects, &claims(&names), &nodes())
    }

    fn fits(shapes: &[(u8, usize, usize)]) -> Vec<bool> {
        match run(objects_of(shapes), shapes.len()) {
            Ok(per_node) => per_node.iter().map(Vec::is_empty).collect(),
            Err(_) => vec![false; 4],
        }
    }

    /// The claims of `shapes`, each with a UID, plus a PV `pv-ref` in
    /// `zone` whose claimRef names claim `k` with `uid` (no PV when `None`);
    /// `pre_bind` sets an unbound claim's `volumeName` to it.
    fn with_ref(
        shapes: &[(u8, usize, usize)],
        (k, zone, pre_bind): (usize, usize, bool),
        uid: Option<&str>,
    ) -> Vec<Value> {
        let k = k % shapes.len();
        let name = format!("c{k}");
        let mut objects = objects_of(shapes);
        let mut class = String::new();
        for o in objects
            .iter_mut()
            .filter(|o| o["kind"] == "PersistentVolumeClaim")
        {
            let n = o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            o["metadata"]["uid"] = json!(format!("uid-{n}"));
            if n == name {
                class = o["spec"]["storageClassName"]
                    .as_str()
                    .unwrap_or_default()
                    .into();
                if pre_bind && o["spec"]["volumeName"].is_null() {
                    o["spec"]["volumeName"] = json!("pv-ref");
                }
            }
        }
        if let Some(uid) = uid {
            let z = ZONES[zone % 3];
            let mut v = labelled(
                pinned(pv("pv-ref", &class), &[(ZONE, &[z])]),
                json!({ZONE: z}),
            );
            v["spec"]["claimRef"] = json!({"name": name, "namespace": NS, "uid": uid});
            v["status"]["phase"] = json!("Released");
            objects.push(v);
        }
        objects
    }

    proptest! {
        /// Adding a claim never makes a node that could not run the pod
        /// able to run it.
        #[test]
        fn adding_a_claim_never_makes_a_node_fit(
            shapes in proptest::collection::vec((0u8..5, 0usize..3, 0usize..4), 0..4),
            extra in (0u8..5, 0usize..3, 0usize..4),
        ) {
            let before = fits(&shapes);
            let mut more = shapes.clone();
            more.push(extra);
            let after = fits(&more);
            for (node, (b, a)) in before.iter().zip(&after).enumerate() {
                prop_assert!(*b || !*a, "node n{} fits only with the extra claim {:?}", node, extra);
            }
        }

        /// A PV whose claimRef names a claim with another UID (an earlier
        /// claim of that name) is, for the pod, exactly a PV that does not
        /// exist: its disk never counts, whatever the claim's shape. (So
        /// changing the UID away from the claim's can only make a node fit
        /// through the claim's other options, as the scheduler would.)
        #[test]
        fn a_volume_that_names_another_uid_is_as_good_as_absent(
            shapes in proptest::collection::vec((0u8..5, 0usize..3, 0usize..4), 1..4),
            reference in (0usize..4, 0usize..3, any::<bool>()),
        ) {
            let stale = run(with_ref(&shapes, reference, Some("uid-earlier")), shapes.len());
            let absent = run(with_ref(&shapes, reference, None), shapes.len());
            prop_assert_eq!(stale, absent);
        }

        /// For a claim pre-bound by `volumeName`, changing the PV's claimRef
        /// UID away from the claim's never turns "does not fit" into "fits".
        #[test]
        fn changing_the_uid_away_never_makes_a_pre_bound_claim_fit(
            shapes in proptest::collection::vec((0u8..5, 0usize..3, 0usize..4), 1..4),
            (k, zone) in (0usize..4, 0usize..3),
        ) {
            let own = format!("uid-c{}", k % shapes.len());
            let fit = |uid: &str| match run(with_ref(&shapes, (k, zone, true), Some(uid)), shapes.len()) {
                Ok(per_node) => per_node.iter().map(Vec::is_empty).collect(),
                Err(_) => vec![false; 4],
            };
            let before = fit(&own);
            let after = fit("uid-earlier");
            for (node, (b, a)) in before.iter().zip(&after).enumerate() {
                prop_assert!(*b || !*a, "node n{} fits only once the UID changed", node);
            }
        }
    }
}
