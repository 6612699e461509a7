//! kata-runtime-policy: a Kubewarden policy that sets a Pod's
//! `runtimeClassName` to the Kata RuntimeClass only when a node with Kata
//! installed can run that Pod. This file only wires the waPC entry points;
//! an admission runs through [`admission`], and the logic lives in
//! [`decision`].

// An admission policy must not trap on any input: no unwrap/expect/indexing
// that input could make panic, outside tests.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::unreachable,
        clippy::todo,
        clippy::unimplemented
    )
)]

pub mod admission;
pub mod annotation;
#[cfg(feature = "bench")]
mod bench;
pub mod cluster;
pub mod decision;
pub mod decision_log;
pub mod incompatible;
pub mod json;
pub mod json_scan;
pub mod kubelet;
pub mod labels;
pub mod mutation;
pub mod node;
pub mod pod;
pub mod pod_affinity;
pub mod printable;
pub mod quantity;
pub mod request;
pub mod resources;
pub mod response;
pub mod review;
pub mod runtime_class;
pub mod scheduling;
pub mod settings;
pub mod shapes;
pub mod volumes;

use kubewarden_policy_sdk::settings::SettingsValidationResponse;
use kubewarden_policy_sdk::wapc_guest::{self as guest, CallResult};

use crate::cluster::HostCluster;
use crate::settings::Settings;

#[unsafe(no_mangle)]
pub extern "C" fn wapc_init() {
    guest::register_function("validate", validate);
    guest::register_function("validate_settings", validate_settings);
    guest::register_function(
        "protocol_version",
        kubewarden_policy_sdk::protocol_version_guest,
    );
    #[cfg(feature = "bench")]
    bench::register();
}

fn validate(payload: &[u8]) -> CallResult {
    Ok(admission::validate(payload, &HostCluster))
}

/// Settings validation as policy-server calls it, with the raw settings JSON.
pub fn settings_response(payload: &[u8]) -> Vec<u8> {
    let response = match Settings::from_json(payload) {
        Ok(_) => SettingsValidationResponse {
            valid: true,
            message: None,
        },
        Err(message) => SettingsValidationResponse {
            valid: false,
            message: Some(message),
        },
    };
    serde_json::to_vec(&response)
        .unwrap_or_else(|_| br#"{"valid":false,"message":"internal error"}"#.to_vec())
}

fn validate_settings(payload: &[u8]) -> CallResult {
    Ok(settings_response(payload))
}
