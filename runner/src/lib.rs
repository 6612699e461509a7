//! `kwrun`: a native test host for Kubewarden waPC policies.
//!
//! It runs a policy `.wasm` on the stack policy-server uses (wapc +
//! wasmtime-provider with WASI) and answers the policy's host calls from a
//! kwctl `--replay-host-capabilities-interactions` session, so tests and
//! benchmarks get `kwctl run`'s behaviour without kwctl, a cluster or a
//! network. The output of [`Policy::evaluate`] is the line `kwctl run` prints.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! use kwrun::{Policy, Session, load_request};
//!
//! let policy = Policy::load("target/wasm32-wasip1/release/policy.wasm")?;
//! let request = load_request("test_data/pod-plain.json")?;
//! let session = Session::load("test_data/sessions/kata-workers.yml")?;
//! let response = policy.evaluate(&request, &serde_json::json!({}), session);
//! assert!(response.allowed);
//! assert_eq!(policy.take_session().remaining(), 0);
//! # Ok(()) }
//! ```

pub mod clustergen;
mod host;
mod output;
mod request;
mod session;

pub use host::{Policy, host_call};
pub use output::{
    AdmissionResponse, AdmissionResponseStatus, ValidationResponse, admission_response,
    admission_response_from,
};
pub use request::{admission_request, load_request, load_settings, parse_settings_json};
pub use session::{
    CallbackRequest, Exchange, ReplayError, ResourceAttributes, Response, Session,
    SubjectAccessReview,
};
