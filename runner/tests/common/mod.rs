//! Helpers shared by the integration tests: locate or build `policy.wasm`,
//! and load the fixtures of test_data/.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use kwrun::{Policy, Session, load_request};
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
