//! Helpers shared by the integration tests: locate or build `policy.wasm`,
//! and load the fixtures of test_data/.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kwrun::{CallbackRequest, Exchange, Policy, Response, Session, load_request};
use serde_json::Value;

pub fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
}

/// The policy module's bytes, located or built once for the whole test binary.
pub fn wasm() -> &'static [u8] {
    static WASM: OnceLock<Vec<u8>> = OnceLock::new();
    WASM.get_or_init(|| {
        let built = root().join("target/wasm32-wasip1/release/kata_runtime_policy.wasm");
        let candidates: Vec<PathBuf> = std::env::var_os("POLICY_WASM")
            .map(PathBuf::from)
            .into_iter()
            .chain([root().join("policy.wasm"), built.clone()])
            .collect();
        if let Some(found) = candidates.iter().find(|p| p.exists()) {
            return std::fs::read(found).expect("read policy wasm");
        }
        let status = Command::new(env!("CARGO"))
            .current_dir(root())
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip1",
                "-p",
                "kata-runtime-policy",
            ])
            .status()
            .expect("run cargo build for the policy");
        assert!(status.success(), "building policy.wasm failed");
        std::fs::read(built).expect("read built policy wasm")
    })
}

pub fn policy() -> Policy {
    Policy::from_bytes(wasm()).expect("load policy.wasm")
}

pub fn session(name: &str) -> Session {
    Session::load(root().join("test_data/sessions").join(name)).expect("load session")
}

/// Whether the policy may leave `exchange` unasked: a candidate node read
/// by name, or the node list with the handlers. The runtime-handler check
/// reads candidates in list order until one can start the pod, and the
/// list with the handlers only after three that cannot, so a session
/// records them all and a pod asks for a prefix.
pub fn is_optional(exchange: &Exchange) -> bool {
    match &exchange.request {
        CallbackRequest::KubernetesGetResource {
            kind, field_masks, ..
        }
        | CallbackRequest::KubernetesListResourceAll {
            kind, field_masks, ..
        } => {
            kind == "Node"
                && (field_masks.iter().flatten()).any(|m| m.starts_with("status.runtimeHandlers"))
        }
        _ => false,
    }
}

/// How many exchanges the policy left unasked that it had to ask: zero
/// when every query a session records for the pod was made.
pub fn required_left(session: &Session) -> usize {
    session.pending().filter(|e| !is_optional(e)).count()
}

/// `session_file` with `change` applied to every node it answers with,
/// listed or read by name.
pub fn with_nodes(session_file: &str, change: impl Fn(&mut Value)) -> Session {
    let mut exchanges: Vec<Exchange> = session(session_file).pending().cloned().collect();
    for exchange in &mut exchanges {
        let (list, kind) = match &exchange.request {
            CallbackRequest::KubernetesGetResource { kind, .. } => (false, kind),
            CallbackRequest::KubernetesListResourceAll { kind, .. } => (true, kind),
            _ => continue,
        };
        let Response::Success { payload } = &exchange.response else {
            continue;
        };
        if kind != "Node" {
            continue;
        }
        let mut answer: Value = serde_json::from_str(payload).unwrap();
        match list {
            true => answer["items"]
                .as_array_mut()
                .expect("items")
                .iter_mut()
                .for_each(&change),
            false => change(&mut answer),
        }
        exchange.response = Response::Success {
            payload: answer.to_string(),
        };
    }
    Session::from_exchanges(exchanges)
}

pub fn request(name: &str) -> Value {
    load_request(root().join("test_data").join(name)).expect("load request")
}

/// The Kata-mandatory refusals: `incompatiblePod`, `noFeasibleNode` and
/// `lookupFailure` reject, `allowedRuntimeClasses` empty.
pub fn kata_mandatory() -> Value {
    serde_json::json!({
        "incompatiblePod": "reject",
        "noFeasibleNode": "reject",
        "allowedRuntimeClasses": [],
        "lookupFailure": "reject"
    })
}

/// `settings` completed where they say nothing (a key absent; `null` is
/// kept, and reads as missing) with what the tests assume: the required
/// settings as the recorded sessions have them (their can_i questions are
/// asked for kubewarden-defaults' PolicyServer, the class they record is
/// `kata`), and `annotateDecision: false`, so that a patch is the class
/// alone. A test of the annotation, or of a missing setting, says so.
pub fn test_settings(settings: &Value) -> Value {
    let mut settings = settings.clone();
    if let Some(map) = settings.as_object_mut() {
        for (key, value) in [
            ("runtimeClassName", Value::from("kata")),
            (
                "policyServerServiceAccount",
                Value::from("system:serviceaccount:kubewarden:policy-server"),
            ),
            ("annotateDecision", Value::from(false)),
        ] {
            map.entry(key).or_insert(value);
        }
    }
    settings
}

/// policy.wasm whose `validate` and `evaluate` run with the settings
/// completed by [`test_settings`]; everything else is [`Policy`]'s
/// (`policy.0` runs with the settings exactly as given).
pub struct TestPolicy(pub Policy);

impl std::ops::Deref for TestPolicy {
    type Target = Policy;
    fn deref(&self) -> &Policy {
        &self.0
    }
}

impl TestPolicy {
    pub fn validate(
        &self,
        request: &Value,
        settings: &Value,
        session: Session,
    ) -> anyhow::Result<Value> {
        self.0.validate(request, &test_settings(settings), session)
    }

    pub fn evaluate(
        &self,
        request: &Value,
        settings: &Value,
        session: Session,
    ) -> kwrun::AdmissionResponse {
        self.0.evaluate(request, &test_settings(settings), session)
    }
}

pub fn test_policy() -> TestPolicy {
    TestPolicy(policy())
}
