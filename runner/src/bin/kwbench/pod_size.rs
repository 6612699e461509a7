//! Cost against pod size (`--pod-sizes`): a tenant chooses the pod's shape,
//! up to the API server's request limit, so every shape must cost time
//! linear in its elements. Each shape is timed at each size against a pod
//! of the same size made of emptyDir volumes (the reference: what every
//! pod of that size costs to read), paired call by call, on one kata node.

use serde_json::{Value, json};

use super::*;

/// A pod shape of `n` elements, the decision it must get, and its host calls.
struct Shape {
    id: &'static str,
    what: &'static str,
    spec: fn(usize) -> Value,
    expect: &'static str,
    calls: Calls,
}

fn mounted(volume: fn(usize) -> Value, n: usize) -> Value {
    json!({
        "containers": [{"name": "c", "image": "registry.example.com/app:v1",
            "volumeMounts": (0..n).rev()
                .map(|i| json!({"name": format!("v{i}"), "mountPath": format!("/m/{i}")}))
                .collect::<Vec<_>>()}],
        "volumes": (0..n).map(volume).collect::<Vec<_>>(),
    })
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            id: "E",
            what: "emptyDir volumes, one container mounting each in reverse order (the reference)",
            spec: |n| mounted(|i| json!({"name": format!("v{i}"), "emptyDir": {}}), n),
            expect: "mutated",
            calls: Calls::RuntimeClassAndNodes,
        },
        Shape {
            id: "H",
            what: "hostPath socket volumes, one container mounting each in reverse order",
            spec: |n| {
                mounted(
                    |i| json!({"name": format!("v{i}"), "hostPath": {"path": format!("/var/run/app{i}.sock")}}),
                    n,
                )
            },
            expect: "unchanged",
            calls: Calls::None,
        },
        Shape {
            id: "D",
            what: "hostPath volumes and as many mounts naming none of them",
            spec: |n| {
                json!({
                    "containers": [{"name": "c", "image": "registry.example.com/app:v1",
                        "volumeMounts": (0..n)
                            .map(|i| json!({"name": format!("dangling{i}"), "mountPath": format!("/m/{i}")}))
                            .collect::<Vec<_>>()}],
                    "volumes": (0..n)
                        .map(|i| json!({"name": format!("v{i}"), "hostPath": {"path": format!("/srv/data{i}")}}))
                        .collect::<Vec<_>>(),
                })
            },
            expect: "mutated",
            calls: Calls::RuntimeClassAndNodes,
        },
        Shape {
            id: "P",
            what: "hostPath volumes, each mounted with Bidirectional propagation in reverse order",
            spec: |n| {
                let mut pod = mounted(
                    |i| json!({"name": format!("v{i}"), "hostPath": {"path": format!("/srv/data{i}")}}),
                    n,
                );
                for m in pod["containers"][0]["volumeMounts"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    m["mountPropagation"] = json!("Bidirectional");
                }
                pod
            },
            expect: "unchanged",
            calls: Calls::None,
        },
        Shape {
            id: "R",
            what: "DRA claims, one container naming all of them in reverse order",
            spec: |n| {
                json!({
                    "containers": [{"name": "c", "image": "registry.example.com/app:v1",
                        "resources": {"claims": (0..n).rev()
                            .map(|i| json!({"name": format!("claim{i}")}))
                            .collect::<Vec<_>>()}}],
                    "resourceClaims": (0..n)
                        .map(|i| json!({"name": format!("claim{i}"), "resourceClaimTemplateName": "gpu"}))
                        .collect::<Vec<_>>(),
                })
            },
            expect: "unchanged",
            calls: Calls::None,
        },
        Shape {
            id: "C",
            what: "containers, each with a memory request",
            spec: |n| {
                json!({"containers": (0..n)
                    .map(|i| json!({"name": format!("c{i}"), "image": "registry.example.com/app:v1",
                        "resources": {"requests": {"memory": "1Ki"}}}))
                    .collect::<Vec<_>>()})
            },
            expect: "mutated",
            calls: Calls::RuntimeClassAndNodes,
        },
        Shape {
            id: "V",
            what: "env variables and ports, in one container",
            spec: |n| {
                json!({"containers": [{"name": "c", "image": "registry.example.com/app:v1",
                    "env": (0..n / 2).map(|i| json!({"name": format!("E{i}"), "value": "x"})).collect::<Vec<_>>(),
                    "ports": (0..n / 2).map(|i| json!({"containerPort": 1024 + i})).collect::<Vec<_>>()}]})
            },
            expect: "mutated",
            calls: Calls::RuntimeClassAndNodes,
        },
    ]
}

/// The table of `--pod-sizes`: per shape and size, the median time, the
/// time per element, the ratio to the emptyDir pod of that size, and the
/// growth from the size before; with `baseline`, that guest's ratio too.
pub fn run(
    guest: &Guest,
    baseline: Option<&Guest>,
    sizes: &[usize],
    budget: Duration,
    node_shape: clustergen::Shape,
) -> Result<()> {
    println!(
        "| elements | shape | request bytes | median µs | per element ns | × emptyDir pod | × previous size |{}",
        if baseline.is_some() {
            " × baseline |"
        } else {
            ""
        }
    );
    println!(
        "|---:|---|---:|---:|---:|---:|---:|{}",
        if baseline.is_some() { "---:|" } else { "" }
    );
    let (asked, answered) = guest.config.views(Query::Pod);
    let answer = Answer::new(node_shape, 1, Nodes::KataDeploy, answered);
    let base_answer = baseline.map(|b| {
        Answer::new(
            node_shape,
            1,
            Nodes::KataDeploy,
            b.config.views(Query::Pod).1,
        )
    });
    let shapes = shapes();
    let mut previous: HashMap<&str, Duration> = HashMap::new();
    for &n in sizes {
        let payload =
            |shape: &Shape, settings: &Value| validate_payload(&(shape.spec)(n), settings);
        let reference = &shapes[0];
        let reference_payload = payload(reference, &guest.settings);
        for shape in &shapes {
            let shape_payload = payload(shape, &guest.settings);
            let run = Run {
                op: "validate",
                payload: &shape_payload,
                calls: shape.calls,
                asked,
                answer: &answer,
                model: false,
            };
            let reference_run = Run {
                payload: &reference_payload,
                calls: reference.calls,
                ..run
            };
            let base_payload = baseline.map(|b| payload(shape, &b.settings));
            let mut runs = vec![(guest.instance()?, run), (guest.instance()?, reference_run)];
            if let (Some(b), Some(p), Some(a)) = (baseline, &base_payload, &base_answer) {
                let (asked, _) = b.config.views(Query::Pod);
                runs.push((
                    b.instance()?,
                    Run {
                        op: "validate",
                        payload: p,
                        calls: shape.calls,
                        asked,
                        answer: a,
                        model: false,
                    },
                ));
            }
            let refs: Vec<(&Policy, &Run)> = runs.iter().map(|(p, r)| (p, r)).collect();
            let measured = measure(&refs, budget)?;
            let (stats, response) = &measured[0];
            let response: Value = serde_json::from_slice(response)?;
            let decision = response["audit_annotations"]["decision"]
                .as_str()
                .unwrap_or_default();
            if decision != shape.expect {
                bail!(
                    "shape {} at {n}: expected {}, got {response}",
                    shape.id,
                    shape.expect
                );
            }
            let growth = previous
                .insert(shape.id, stats.median)
                .map(|before| format!("{:.2}", ratio(stats.median, before)))
                .unwrap_or_default();
            let base = measured
                .get(2)
                .map(|(b, _)| {
                    format!(
                        " {:.2} (baseline {:.0} µs) |",
                        stats.paired(b),
                        us(b.median)
                    )
                })
                .unwrap_or_default();
            println!(
                "| {n} | ({}) {} | {} | {:.0} | {:.0} | {:.2} | {growth} |{base}",
                shape.id,
                shape.what,
                shape_payload.len(),
                us(stats.median),
                stats.median.as_secs_f64() * 1e9 / n as f64,
                stats.paired(&measured[1].0),
            );
        }
    }
    Ok(())
}
