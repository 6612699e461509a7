//! The compiled policy never traps: random bytes, and valid requests with
//! random damage, always get a well-formed response from `validate` and
//! `validate_settings`, never a waPC error.

mod common;

use common::{kata_mandatory, request, root, session, test_policy, test_settings};
use std::str::FromStr;

use kwrun::{Response, Session};
use serde_json::{Value, json};

/// xorshift64*: seeded, so a failure is reproducible from the printed case.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// The policy's bound on a reason and a refusal's message, in bytes.
const MAX_REASON_BYTES: usize = 4096;

/// `got` is `full`, or, when `full` is longer than the bound, its first
/// whole findings (`; `-separated) then `; and N more` for the rest.
fn assert_bounded(got: &str, full: &str, context: &str) {
    if full.len() <= MAX_REASON_BYTES {
        assert_eq!(got, full, "{context}");
        return;
    }
    assert!(
        got.len() <= MAX_REASON_BYTES,
        "{context}: {} bytes",
        got.len()
    );
    let (kept, more) = got.rsplit_once("; and ").expect("a count of the rest");
    let left: usize = more.strip_suffix(" more").unwrap().parse().unwrap();
    let whole = kept.split("; ").count();
    assert_eq!(whole + left, full.split("; ").count(), "{context}");
    assert!(full.starts_with(&format!("{kept}; ")), "{context}");
}

/// Random bytes, or a real payload with bytes flipped, inserted, cut off.
fn damaged(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    if rng.below(4) == 0 {
        return (0..rng.below(512)).map(|_| rng.next() as u8).collect();
    }
    let mut bytes = seeds[rng.below(seeds.len())].clone();
    for _ in 0..=rng.below(4) {
        if bytes.is_empty() {
            break;
        }
        let at = rng.below(bytes.len());
        match rng.below(4) {
            0 => bytes[at] = rng.next() as u8,
            1 => {
                const JSON_BYTES: &[u8] = b"{}[]\",:\\0-9en";
                bytes.insert(at, JSON_BYTES[rng.below(JSON_BYTES.len())]);
            }
            2 => {
                bytes.remove(at);
            }
            _ => bytes.truncate(at),
        }
    }
    bytes
}

fn assert_well_formed(response: &[u8], key: &str, case: &[u8]) {
    let v: Value = serde_json::from_slice(response).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}) for input {:?}",
            String::from_utf8_lossy(case)
        )
    });
    assert!(
        v[key].is_boolean(),
        "no boolean {key:?} in {v} for input {:?}",
        String::from_utf8_lossy(case)
    );
}

#[test]
fn validate_never_traps() {
    let p = test_policy();
    let seeds: Vec<Vec<u8>> = std::fs::read_dir(root().join("test_data"))
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .flat_map(|path| {
            let req = request(path.file_name().unwrap().to_str().unwrap());
            // The defaults, the Kata-mandatory settings (refusals), and
            // the decision annotation (a patch on every admitted pod), each
            // with the required settings; and no settings (refused, 400).
            [
                test_settings(&json!({})),
                test_settings(&kata_mandatory()),
                test_settings(&json!({"annotateDecision": true})),
                Value::Null,
            ]
            .map(|settings| {
                serde_json::to_vec(&json!({"request": req, "settings": settings})).unwrap()
            })
        })
        .collect();
    let mut rng = Rng(0x005e_ed0f_ca7a);
    for i in 0..3000 {
        let payload = damaged(&mut rng, &seeds);
        // Alternate: no cluster at all, and a cluster that answers.
        let s = if i % 2 == 0 {
            Session::none()
        } else {
            session("kata-workers.yml")
        };
        let out = p.call_raw("validate", &payload, s).unwrap_or_else(|e| {
            panic!(
                "trap: {e:#} for input {:?}",
                String::from_utf8_lossy(&payload)
            )
        });
        assert_well_formed(&out, "accepted", &payload);
    }
}

#[test]
fn validate_settings_never_traps() {
    let p = test_policy();
    let seeds = vec![
        std::fs::read(root().join("policy-settings.json")).unwrap(),
        br#"{"kataNodeSelector":"a in (b, c), !d, e>5","noFeasibleNode":"reject"}"#.to_vec(),
        test_settings(&kata_mandatory()).to_string().into_bytes(),
        b"{}".to_vec(),
        br#"{"incompatiblePod":"Reject"}"#.to_vec(),
        br#"{"annotateDecision":true,"restrictRuntimeClasses":true,"allowedRuntimeClasses":["gvisor"]}"#
            .to_vec(),
        br#"{"restrictRuntimeClasses":false,"allowedRuntimeClasses":["gvisor"]}"#.to_vec(),
        b"null".to_vec(),
    ];
    let mut rng = Rng(0xdead_beef);
    for _ in 0..3000 {
        let payload = damaged(&mut rng, &seeds);
        let out = p
            .call_raw("validate_settings", &payload, Session::none())
            .unwrap_or_else(|e| {
                panic!(
                    "trap: {e:#} for input {:?}",
                    String::from_utf8_lossy(&payload)
                )
            });
        assert_well_formed(&out, "valid", &payload);
    }
}

/// `session_file` with every node it answers with reporting `handlers` as
/// its `status.runtimeHandlers`.
fn with_handlers(session_file: &str, handlers: &Value) -> Session {
    common::with_nodes(session_file, |node| {
        node["status"]["runtimeHandlers"] = handlers.clone()
    })
}

/// Hostile `status.runtimeHandlers` shapes through the compiled policy: a
/// malformed list reports nothing (the labels decide under auto), a malformed
/// entry is ignored, a feature that is not `true` is not supported; the
/// answer is always a well-formed verdict.
#[test]
fn hostile_runtime_handlers_never_trap() {
    let p = test_policy();
    let plain = request("pod-plain.json");
    let not_reported = "kata runtime not assigned: 0/2 kata nodes can run this pod: \
                        2 node(s) do not report runtime handler \"kata-qemu\"";
    let nothing = "kata runtime not assigned: 0/2 kata nodes can run this pod: \
                   2 node(s) report no runtime handlers";
    let nested = Value::from_str(&format!("{}{}", "[".repeat(60), "]".repeat(60))).unwrap();
    let mut long: Vec<Value> = (0..5000)
        .map(|i| json!({"name": format!("kata-qemu-{i}"), "features": {"userNamespaces": true}}))
        .collect();
    let long_without = Value::from(long.clone());
    long.push(json!({"name": "kata-qemu"}));
    let long_with = Value::from(long);
    // (shape, decision under auto, under required: None = mutated, Some = the reason)
    let cases: Vec<(Value, Option<&str>, Option<&str>)> = vec![
        // Not a list: reports nothing.
        (json!("kata-qemu"), None, Some(nothing)),
        (json!({"name": "kata-qemu"}), None, Some(nothing)),
        (json!(7), None, Some(nothing)),
        (json!(true), None, Some(nothing)),
        (json!(null), None, Some(nothing)),
        (json!([]), None, Some(nothing)),
        // Entries without a name, or a name that is not a string: ignored.
        (
            json!([{"features": {"userNamespaces": true}}, {"name": 3}, {"name": ["kata-qemu"]}]),
            Some(not_reported),
            Some(not_reported),
        ),
        (
            json!([1, null, "kata-qemu", [], {"name": null}, {"name": "kata-qemu"}]),
            None,
            None,
        ),
        // Features that are not booleans, or not an object: the name counts.
        (
            json!([{"name": "kata-qemu", "features": {"userNamespaces": "true", "recursiveReadOnlyMounts": 1}}]),
            None,
            None,
        ),
        (
            json!([{"name": "kata-qemu", "features": [true, true]}]),
            None,
            None,
        ),
        (
            json!([{"name": "kata-qemu", "features": "all"}]),
            None,
            None,
        ),
        // Nested junk around the entry.
        (
            json!([nested.clone(), {"name": {"name": "kata-qemu"}}, {"x": nested.clone()}]),
            Some(not_reported),
            Some(not_reported),
        ),
        (
            json!([{"name": "kata-qemu", "features": {"userNamespaces": nested.clone()}}]),
            None,
            None,
        ),
        // A very long list, with and without the handler at its end.
        (long_without, Some(not_reported), Some(not_reported)),
        (long_with, None, None),
    ];
    for (shape, auto, required) in &cases {
        for (settings, expected) in [
            (json!({}), auto),
            (json!({"runtimeHandlerCheck": "required"}), required),
        ] {
            let verdict = p
                .validate(&plain, &settings, with_handlers("handlers-k3s.yml", shape))
                .unwrap_or_else(|e| panic!("trap: {e:#} for {shape} {settings}"));
            let shape_text: String = shape.to_string().chars().take(200).collect();
            let context = format!("{shape_text} {settings}: {verdict}");
            assert_eq!(verdict["accepted"], true, "{context}");
            match expected {
                None => {
                    assert_eq!(
                        verdict["audit_annotations"]["decision"], "mutated",
                        "{context}"
                    );
                    assert_eq!(
                        verdict["mutated_object"]["spec"]["runtimeClassName"], "kata",
                        "{context}"
                    );
                }
                Some(reason) => {
                    assert_eq!(
                        verdict["audit_annotations"]["decision"], "unchanged",
                        "{context}"
                    );
                    assert_eq!(verdict["audit_annotations"]["reason"], *reason, "{context}");
                    assert_eq!(verdict["mutated_object"], Value::Null, "{context}");
                }
            }
        }
    }

    // The features a hostUsers: false pod needs: only `true` supports one.
    let userns = request("pod-user-namespace.json");
    // The default skipPodsUsing without userNamespaces.
    let settings = json!({"skipPodsUsing": ["hostNamespaces", "windows", "hostSockets",
        "hostDevices", "mountPropagation", "deviceResources", "dynamicResources", "imageVolumes"]});
    let unsupported = "kata runtime not assigned: 0/2 kata nodes can run this pod: 2 node(s) \
                       report runtime handler \"kata-qemu\" without features.userNamespaces \
                       (the pod sets hostUsers: false)";
    for features in [
        json!({"userNamespaces": "true"}),
        json!({"userNamespaces": 1}),
        json!({"userNamespaces": null}),
        json!({"userNamespaces": {"enabled": true}}),
        json!({"userNamespaces": [true]}),
        json!([{"userNamespaces": true}]),
        json!("userNamespaces"),
        json!({}),
    ] {
        let shape = json!([{"name": "runc", "features": {"userNamespaces": true}},
            {"name": "kata-qemu", "features": features}]);
        let verdict = p
            .validate(
                &userns,
                &settings,
                with_handlers("handlers-userns-supported.yml", &shape),
            )
            .unwrap_or_else(|e| panic!("trap: {e:#} for {shape}"));
        assert_eq!(verdict["accepted"], true, "{shape}: {verdict}");
        assert_eq!(
            verdict["audit_annotations"]["reason"], unsupported,
            "{shape}: {verdict}"
        );
    }
    // The same session as recorded: the feature is `true`.
    let verdict = p
        .validate(&userns, &settings, session("handlers-userns-supported.yml"))
        .unwrap();
    assert_eq!(
        verdict["audit_annotations"]["decision"], "mutated",
        "{verdict}"
    );
}

/// How a hostile `spec.resourceClaims` or `resources.claims` is judged.
enum Outcome {
    /// Judged on scheduling: the kata workers fit.
    Mutated,
    /// Left alone before any query, with this reason.
    Unchanged(String),
    /// Refused as not a valid Pod (the API server never sends one).
    Invalid,
}

/// Odd shapes of DRA claims through the compiled policy: a well-formed
/// verdict every time, and no query to the cluster for a pod with a claim.
#[test]
fn hostile_resource_claims_never_trap() {
    let p = test_policy();
    let template = request("pod-dra-template.json");
    let finding = |claim: &str, used_by: &str| {
        format!(
            "claim {claim}, used by {used_by}, asks for DRA-allocated devices, which Kata does not \
             pass into its VM (skipPodsUsing: dynamicResources)"
        )
    };
    let both = "container \"cuda\", init container \"gpu-metrics\"";
    let unchanged = |findings: &[String]| {
        Outcome::Unchanged(format!(
            "kata runtime not assigned: {}",
            findings.join("; ")
        ))
    };
    let nested = Value::from_str(&format!("{}{}", "[".repeat(60), "]".repeat(60))).unwrap();
    let many: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("c{i}"), "resourceClaimName": "x"}))
        .collect();
    // (JSON pointer in the pod spec, value there, outcome)
    let cases: Vec<(&str, Value, Outcome)> = vec![
        // Not a list: not a Pod.
        ("/resourceClaims", json!({"name": "gpu"}), Outcome::Invalid),
        ("/resourceClaims", json!("gpu"), Outcome::Invalid),
        ("/resourceClaims", json!(1), Outcome::Invalid),
        ("/resourceClaims", json!([null]), Outcome::Invalid),
        ("/resourceClaims", json!([{"name": 7}]), Outcome::Invalid),
        (
            "/resourceClaims",
            json!([{"name": "gpu", "resourceClaimName": ["x"]}]),
            Outcome::Invalid,
        ),
        // No claim.
        ("/resourceClaims", json!(null), Outcome::Mutated),
        ("/resourceClaims", json!([]), Outcome::Mutated),
        // A claim without a name: no container uses it.
        (
            "/resourceClaims",
            json!([{"resourceClaimTemplateName": "one-gpu"}]),
            unchanged(&[finding(
                "\"\" (ResourceClaimTemplate \"one-gpu\")",
                "no container",
            )]),
        ),
        // Neither source (the API server refuses it): the claim alone.
        (
            "/resourceClaims",
            json!([{"name": "gpu"}]),
            unchanged(&[finding("\"gpu\"", both)]),
        ),
        (
            "/resourceClaims",
            json!([{"name": "gpu", "resourceClaimName": null, "resourceClaimTemplateName": ""}]),
            unchanged(&[finding("\"gpu\"", both)]),
        ),
        // Both sources set (the API server refuses it): the template is named.
        (
            "/resourceClaims",
            json!([{"name": "gpu", "resourceClaimName": "shared", "resourceClaimTemplateName": "one-gpu"}]),
            unchanged(&[finding("\"gpu\" (ResourceClaimTemplate \"one-gpu\")", both)]),
        ),
        // An empty template name does not hide the claim's name.
        (
            "/resourceClaims",
            json!([{"name": "gpu", "resourceClaimName": "shared", "resourceClaimTemplateName": ""}]),
            unchanged(&[finding("\"gpu\" (ResourceClaim \"shared\")", both)]),
        ),
        // Unknown fields and nested junk are ignored.
        (
            "/resourceClaims",
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu", "x": nested.clone()}]),
            unchanged(&[finding("\"gpu\" (ResourceClaimTemplate \"one-gpu\")", both)]),
        ),
        // Control characters are escaped, never written raw.
        (
            "/resourceClaims",
            json!([{"name": "\u{7}\"gpu", "resourceClaimTemplateName": "a\nb"}]),
            unchanged(&[finding(
                "\"\\u{7}\\\"gpu\" (ResourceClaimTemplate \"a\\nb\")",
                "no container",
            )]),
        ),
        // Two claims of the same name: both named, both used.
        (
            "/resourceClaims",
            json!([{"name": "gpu", "resourceClaimTemplateName": "one-gpu"},
                   {"name": "gpu", "resourceClaimName": "dup"}]),
            unchanged(&[
                finding("\"gpu\" (ResourceClaimTemplate \"one-gpu\")", both),
                finding("\"gpu\" (ResourceClaim \"dup\")", both),
            ]),
        ),
        // A thousand claims: every one in the reason.
        (
            "/resourceClaims",
            Value::from(many),
            unchanged(
                &(0..1000)
                    .map(|i| finding(&format!("\"c{i}\" (ResourceClaim \"x\")"), "no container"))
                    .collect::<Vec<_>>(),
            ),
        ),
        // resources.claims not a list, or an entry that is not an object.
        (
            "/containers/0/resources/claims",
            json!({"name": "gpu"}),
            Outcome::Invalid,
        ),
        (
            "/initContainers/0/resources/claims",
            json!("gpu"),
            Outcome::Invalid,
        ),
        (
            "/containers/0/resources/claims",
            json!([null]),
            Outcome::Invalid,
        ),
        // A use without a name, or of another claim, names no claim.
        (
            "/containers/0/resources/claims",
            json!([{}, {"name": "other"}, {"name": "gpu", "request": "a", "x": nested}]),
            unchanged(&[finding("\"gpu\" (ResourceClaimTemplate \"one-gpu\")", both)]),
        ),
        (
            "/containers/0/resources/claims",
            json!([{}, {"name": "other"}]),
            unchanged(&[finding(
                "\"gpu\" (ResourceClaimTemplate \"one-gpu\")",
                "init container \"gpu-metrics\"",
            )]),
        ),
        (
            "/initContainers/0/resources/claims",
            json!(null),
            unchanged(&[finding(
                "\"gpu\" (ResourceClaimTemplate \"one-gpu\")",
                "container \"cuda\"",
            )]),
        ),
    ];
    for (pointer, value, outcome) in cases {
        let mut pod = template.clone();
        *pod["object"]["spec"]
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}")) = value.clone();
        let s = match outcome {
            Outcome::Mutated => session("kata-workers.yml"),
            _ => Session::from_exchanges([]),
        };
        let verdict = p
            .validate(&pod, &json!({}), s)
            .unwrap_or_else(|e| panic!("trap: {e:#} for {pointer} = {value}"));
        let value_text: String = value.to_string().chars().take(200).collect();
        let context = format!("{pointer} = {value_text}: {verdict}");
        let warning = verdict["warnings"][0].as_str().unwrap_or_default();
        assert!(warning.len() <= 255 && !warning.contains('\n'), "{context}");
        match outcome {
            Outcome::Mutated => {
                assert_eq!(verdict["accepted"], true, "{context}");
                assert_eq!(
                    verdict["mutated_object"]["spec"]["runtimeClassName"], "kata",
                    "{context}"
                );
                assert_eq!(common::required_left(&p.take_session()), 0, "{context}");
            }
            Outcome::Unchanged(reason) => {
                assert_eq!(verdict["accepted"], true, "{context}");
                assert_eq!(verdict["mutated_object"], Value::Null, "{context}");
                assert_eq!(
                    verdict["audit_annotations"]["decision"], "unchanged",
                    "{context}"
                );
                let got = verdict["audit_annotations"]["reason"].as_str().unwrap();
                assert_bounded(got, &reason, &context);
                assert!(
                    reason.starts_with(warning.trim_end_matches("...")),
                    "{context}"
                );
            }
            Outcome::Invalid => {
                assert_eq!(verdict["accepted"], false, "{context}");
                assert_eq!(verdict["code"], 400, "{context}");
                assert!(
                    verdict["message"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with("the object is not a valid Pod: "),
                    "{context}"
                );
            }
        }
    }
}

/// `session_file` with every node's `status.features` replaced by `raw`,
/// JSON text as the API server would send it (so a repeated key or an
/// escaped one reaches the policy as written).
fn with_features(session_file: &str, raw: &str) -> Session {
    const MARK: &str = "\"__features__\"";
    let marked = common::with_nodes(session_file, |node| {
        node["status"]["features"] = json!("__features__")
    });
    Session::from_exchanges(marked.pending().cloned().map(|mut exchange| {
        if let Response::Success { payload } = &exchange.response {
            exchange.response = Response::Success {
                payload: payload.replace(MARK, raw),
            };
        }
        exchange
    }))
}

/// Hostile `status.features` shapes through the compiled policy, for a
/// `supplementalGroupsPolicy: Strict` pod: only
/// `supplementalGroupsPolicy: true` in an object supports it; anything else
/// supports nothing, and the answer is always a well-formed verdict.
#[test]
fn hostile_node_features_never_trap() {
    let p = test_policy();
    let strict = request("pod-strict-supplemental-groups.json");
    let unsupported = "kata runtime not assigned: 0/2 kata nodes can run this pod: \
                       2 node(s) do not support supplementalGroupsPolicy: Strict";
    let nested = format!("{}{}", "[".repeat(60), "]".repeat(60));
    let many: String = (0..5000)
        .map(|i| format!("\"feature{i}\":true"))
        .collect::<Vec<_>>()
        .join(",");
    // (status.features as sent, whether it supports Strict)
    let cases: Vec<(String, bool)> = vec![
        (r#"{"supplementalGroupsPolicy":true}"#.into(), true),
        // Not an object: supports nothing.
        ("[true]".into(), false),
        (r#""supplementalGroupsPolicy""#.into(), false),
        ("true".into(), false),
        ("1".into(), false),
        ("null".into(), false),
        (r#"[{"supplementalGroupsPolicy":true}]"#.into(), false),
        (nested.clone(), false),
        // An object whose value is not `true`.
        ("{}".into(), false),
        (r#"{"supplementalGroupsPolicy":false}"#.into(), false),
        (r#"{"supplementalGroupsPolicy":null}"#.into(), false),
        (r#"{"supplementalGroupsPolicy":"true"}"#.into(), false),
        (r#"{"supplementalGroupsPolicy":1}"#.into(), false),
        (
            r#"{"supplementalGroupsPolicy":{"enabled":true}}"#.into(),
            false,
        ),
        (r#"{"supplementalGroupsPolicy":[true]}"#.into(), false),
        (format!(r#"{{"supplementalGroupsPolicy":{nested}}}"#), false),
        (r#"{"SupplementalGroupsPolicy":true}"#.into(), false),
        // Junk around the feature does not hide it.
        (
            format!(r#"{{"x":{nested},"supplementalGroupsPolicy":true,"y":{{"z":null}}}}"#),
            true,
        ),
        (
            format!(r#"{{{many},"supplementalGroupsPolicy":true}}"#),
            true,
        ),
        (format!(r#"{{{many}}}"#), false),
        // A repeated key: the last one counts, as in serde_json.
        (
            r#"{"supplementalGroupsPolicy":false,"supplementalGroupsPolicy":true}"#.into(),
            true,
        ),
        (
            r#"{"supplementalGroupsPolicy":true,"supplementalGroupsPolicy":false}"#.into(),
            false,
        ),
        (
            r#"{"supplementalGroupsPolicy":true,"supplementalGroupsPolicy":"x"}"#.into(),
            false,
        ),
        // An escaped key is decoded.
        (r#"{"supplementalGroups\u0050olicy":true}"#.into(), true),
    ];
    for (raw, supported) in &cases {
        for check in ["auto", "required", "off"] {
            let settings = json!({"runtimeHandlerCheck": check});
            let s = with_features("handlers-userns-supported.yml", raw);
            let raw_text: String = raw.chars().take(200).collect();
            let verdict = p
                .validate(&strict, &settings, s)
                .unwrap_or_else(|e| panic!("trap: {e:#} for {raw_text} {check}"));
            let context = format!("{raw_text} {check}: {verdict}");
            assert_eq!(verdict["accepted"], true, "{context}");
            assert_eq!(common::required_left(&p.take_session()), 0, "{context}");
            if *supported {
                assert_eq!(
                    verdict["audit_annotations"]["decision"], "mutated",
                    "{context}"
                );
                assert_eq!(verdict["warnings"], Value::Null, "{context}");
            } else {
                assert_eq!(
                    verdict["audit_annotations"]["reason"], unsupported,
                    "{context}"
                );
                assert_eq!(verdict["mutated_object"], Value::Null, "{context}");
            }
        }
    }
    // A pod that is not Strict never reads them: whatever the shape, the
    // hostUsers: false pod decides on its handler's features alone.
    let userns = request("pod-user-namespace.json");
    let settings = json!({"skipPodsUsing": ["hostNamespaces", "windows", "hostSockets",
        "hostDevices", "mountPropagation", "deviceResources", "dynamicResources", "imageVolumes"]});
    for (raw, _) in &cases {
        let verdict = p
            .validate(
                &userns,
                &settings,
                with_features("handlers-userns-supported.yml", raw),
            )
            .unwrap_or_else(|e| panic!("trap: {e:#} for {raw}"));
        assert_eq!(
            verdict["audit_annotations"]["decision"], "mutated",
            "{verdict}"
        );
        assert_eq!(verdict["warnings"], Value::Null, "{verdict}");
    }
}

/// How a hostile image volume, `supplementalGroupsPolicy` or
/// `schedulingGates` is judged.
enum Judged {
    /// Judged on scheduling: the kata workers fit, no warning.
    Mutated,
    /// Given kata, with this gate note: the only warning, and after the
    /// explanation in the audit reason.
    Gated(String),
    /// Left alone before any query, with this reason ("" for the thousand
    /// image volumes, checked one by one).
    Unchanged(String),
    /// Refused as not a valid Pod (the API server never sends one).
    Invalid,
}

/// Odd shapes of image volumes, `supplementalGroupsPolicy` and
/// `schedulingGates` through the compiled policy: a well-formed verdict
/// every time; a shape the API server would never send is not a Pod.
#[test]
fn hostile_image_volumes_policies_and_gates_never_trap() {
    let p = test_policy();
    let nested = Value::from_str(&format!("{}{}", "[".repeat(60), "]".repeat(60))).unwrap();
    let image = request("pod-image-volume.json");
    let strict = request("pod-strict-supplemental-groups.json");
    let gated = request("pod-gated.json");
    let finding = |name: &str, image: &str, by: &str| {
        format!(
            "image volume {name}{image}, mounted by {by}, is an OCI image that Kata cannot mount \
             inside its VM (skipPodsUsing: imageVolumes)"
        )
    };
    let tools = finding(
        "\"tools\"",
        " (image \"ghcr.io/example/agent-tools:1.4\")",
        "container \"agent\"",
    );
    let unchanged = |findings: &[String]| {
        Judged::Unchanged(format!(
            "kata runtime not assigned: {}",
            findings.join("; ")
        ))
    };
    let gate_note = |names: &str| {
        format!(
            "the pod has schedulingGates ({names}): node constraints added before it is ungated \
             are not checked, and it stays Pending if they exclude every kata node"
        )
    };
    let many_volumes: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("v{i}"), "image": {"reference": format!("r/{i}")}}))
        .collect();
    let many_mounts: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("v{i}"), "mountPath": format!("/m/{i}")}))
        .collect();
    let many_gates: Vec<Value> = (0..1000)
        .map(|i| json!({"name": format!("g{i}")}))
        .collect();
    // (request, JSON pointer in the pod spec, value there, session, outcome)
    let cases: Vec<(&Value, &str, Value, &str, Judged)> = vec![
        // image: not an object is not a Pod.
        (
            &image,
            "/volumes/0/image",
            json!("ghcr.io/x"),
            "",
            Judged::Invalid,
        ),
        (&image, "/volumes/0/image", json!(true), "", Judged::Invalid),
        (&image, "/volumes/0/image", json!(1), "", Judged::Invalid),
        (
            &image,
            "/volumes/0/image/reference",
            json!(3),
            "",
            Judged::Invalid,
        ),
        (
            &image,
            "/volumes/0/image/reference",
            json!(["x"]),
            "",
            Judged::Invalid,
        ),
        // image: null is no image volume; the pod is judged on scheduling.
        (
            &image,
            "/volumes/0/image",
            json!(null),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        // No reference, an empty one, a null one: still an image volume.
        (
            &image,
            "/volumes/0/image",
            json!({}),
            "",
            unchanged(&[finding("\"tools\"", "", "container \"agent\"")]),
        ),
        (
            &image,
            "/volumes/0/image",
            json!({"reference": "", "pullPolicy": nested.clone()}),
            "",
            unchanged(&[finding("\"tools\"", "", "container \"agent\"")]),
        ),
        (
            &image,
            "/volumes/0/image/reference",
            json!(null),
            "",
            unchanged(&[finding("\"tools\"", "", "container \"agent\"")]),
        ),
        // Control characters are escaped, never written raw.
        (
            &image,
            "/volumes/0/image/reference",
            json!("a\nb\u{7}"),
            "",
            unchanged(&[finding(
                "\"tools\"",
                " (image \"a\\nb\\u{7}\")",
                "container \"agent\"",
            )]),
        ),
        // A thousand image volumes, all mounted: every one named.
        (
            &image,
            "/volumes",
            Value::from(many_volumes.clone()),
            "",
            Judged::Unchanged(String::new()),
        ),
        // The same volumes, none mounted: no finding.
        (
            &image,
            "/containers/0/volumeMounts",
            Value::from(many_mounts.clone()),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        // Mounts that name no volume, with junk.
        (
            &image,
            "/containers/0/volumeMounts",
            json!([{"name": "other", "mountPath": "/x"}, {"mountPath": "/y", "x": nested.clone()}]),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        (
            &image,
            "/containers/0/volumeMounts",
            json!([{"name": "tools", "mountPath": "/a"}, {"name": "tools", "mountPath": "/b"}]),
            "",
            unchanged(std::slice::from_ref(&tools)),
        ),
        // supplementalGroupsPolicy: a string, or no Pod.
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!(1),
            "",
            Judged::Invalid,
        ),
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!(true),
            "",
            Judged::Invalid,
        ),
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!(["Strict"]),
            "",
            Judged::Invalid,
        ),
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!({"Strict": true}),
            "",
            Judged::Invalid,
        ),
        (
            &strict,
            "/securityContext",
            json!("Strict"),
            "",
            Judged::Invalid,
        ),
        // Not exactly Strict: nothing asked of the node.
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!(null),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!("strict"),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        (
            &strict,
            "/securityContext/supplementalGroupsPolicy",
            json!("Strict "),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        (
            &strict,
            "/securityContext",
            json!(null),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        // schedulingGates: a list of objects, or no Pod.
        (
            &gated,
            "/schedulingGates",
            json!({"name": "g"}),
            "",
            Judged::Invalid,
        ),
        (&gated, "/schedulingGates", json!("g"), "", Judged::Invalid),
        (
            &gated,
            "/schedulingGates",
            json!(["g"]),
            "",
            Judged::Invalid,
        ),
        (
            &gated,
            "/schedulingGates",
            json!([null]),
            "",
            Judged::Invalid,
        ),
        (
            &gated,
            "/schedulingGates",
            json!([{"name": 1}]),
            "",
            Judged::Invalid,
        ),
        (
            &gated,
            "/schedulingGates",
            json!([{"name": ["g"]}]),
            "",
            Judged::Invalid,
        ),
        (
            &gated,
            "/schedulingGates",
            nested.clone(),
            "",
            Judged::Invalid,
        ),
        // No gate.
        (
            &gated,
            "/schedulingGates",
            json!(null),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        (
            &gated,
            "/schedulingGates",
            json!([]),
            "kata-workers.yml",
            Judged::Mutated,
        ),
        // Odd gates are named as written, escaped; junk ignored.
        (
            &gated,
            "/schedulingGates",
            json!([{}, {"name": "a\"b\n", "x": nested.clone()}]),
            "kata-workers.yml",
            Judged::Gated(gate_note("\"\", \"a\\\"b\\n\"")),
        ),
        // A thousand gates: three named, the rest counted.
        (
            &gated,
            "/schedulingGates",
            Value::from(many_gates),
            "kata-workers.yml",
            Judged::Gated(gate_note("\"g0\", \"g1\", \"g2\", and 997 more")),
        ),
    ];
    for (req, pointer, value, session_file, outcome) in cases {
        let mut pod = req.clone();
        *pod["object"]["spec"]
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}")) = value.clone();
        // A thousand image volumes need a thousand mounts.
        if pointer == "/volumes" {
            pod["object"]["spec"]["containers"][0]["volumeMounts"] =
                Value::from(many_mounts.clone());
        }
        let s = if session_file.is_empty() {
            Session::from_exchanges([])
        } else {
            session(session_file)
        };
        let verdict = p
            .validate(&pod, &json!({}), s)
            .unwrap_or_else(|e| panic!("trap: {e:#} for {pointer} = {value}"));
        let value_text: String = value.to_string().chars().take(200).collect();
        let context = format!("{pointer} = {value_text}: {verdict}");
        let warning = verdict["warnings"][0].as_str().unwrap_or_default();
        for shown in verdict["warnings"].as_array().into_iter().flatten() {
            let shown = shown.as_str().unwrap_or_else(|| panic!("{context}"));
            assert!(shown.len() <= 255 && !shown.contains('\n'), "{context}");
        }
        match outcome {
            Judged::Mutated => {
                assert_eq!(verdict["accepted"], true, "{context}");
                assert_eq!(
                    verdict["mutated_object"]["spec"]["runtimeClassName"], "kata",
                    "{context}"
                );
                assert_eq!(verdict["warnings"], Value::Null, "{context}");
                assert_eq!(common::required_left(&p.take_session()), 0, "{context}");
            }
            Judged::Gated(note) => {
                assert_eq!(verdict["accepted"], true, "{context}");
                assert_eq!(
                    verdict["mutated_object"]["spec"]["runtimeClassName"], "kata",
                    "{context}"
                );
                assert_eq!(
                    verdict["audit_annotations"]["reason"],
                    format!(
                        "runtimeClassName \"kata\" assigned: a kata node can run this pod; {note}"
                    ),
                    "{context}"
                );
                assert_eq!(verdict["warnings"], json!([note]), "{context}");
                assert_eq!(common::required_left(&p.take_session()), 0, "{context}");
            }
            Judged::Unchanged(reason) => {
                assert_eq!(verdict["accepted"], true, "{context}");
                assert_eq!(verdict["mutated_object"], Value::Null, "{context}");
                assert_eq!(
                    verdict["audit_annotations"]["decision"], "unchanged",
                    "{context}"
                );
                let got = verdict["audit_annotations"]["reason"].as_str().unwrap();
                if reason.is_empty() {
                    // The thousand volumes: the first ones named in order,
                    // whole, then how many more.
                    let kept = got.matches("image volume ").count();
                    for i in [0, 1, kept - 1] {
                        let one = finding(
                            &format!("\"v{i}\""),
                            &format!(" (image \"r/{i}\")"),
                            "container \"agent\"",
                        );
                        assert!(got.contains(&one), "{context}");
                    }
                    assert!(kept > 10 && got.len() <= MAX_REASON_BYTES, "{context}");
                    assert!(
                        got.ends_with(&format!("; and {} more", 1000 - kept)),
                        "{context}"
                    );
                } else {
                    assert_bounded(got, &reason, &context);
                }
                assert!(
                    got.starts_with(warning.trim_end_matches("...")),
                    "{context}"
                );
            }
            Judged::Invalid => {
                assert_eq!(verdict["accepted"], false, "{context}");
                assert_eq!(verdict["code"], 400, "{context}");
                assert!(
                    verdict["message"]
                        .as_str()
                        .unwrap_or_default()
                        .starts_with("the object is not a valid Pod: "),
                    "{context}"
                );
            }
        }
    }
}
