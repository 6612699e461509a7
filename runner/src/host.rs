//! The waPC host: loads the policy with the same stack policy-server uses
//! (wapc + wasmtime-provider, WASI enabled) and answers its host calls from a
//! replayed [`Session`].

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use anyhow::{Context, Result, anyhow};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::output::{AdmissionResponse, admission_response};
use crate::session::{CallbackRequest, Session};

type HostResult = Result<Vec<u8>, Box<dyn std::error::Error + Send + Sync>>;

/// Payload of `kubernetes/get_resource`, as the Kubewarden SDK sends it.
#[derive(Deserialize)]
struct GetResourcePayload {
    api_version: String,
    kind: String,
    name: String,
    namespace: Option<String>,
    disable_cache: bool,
    field_masks: Option<BTreeSet<String>>,
}

/// Payload of `kubernetes/list_resources_all`.
#[derive(Deserialize)]
struct ListAllPayload {
    api_version: String,
    kind: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    field_masks: Option<BTreeSet<String>>,
}

/// Payload of `kubernetes/list_resources_by_namespace`.
#[derive(Deserialize)]
struct ListNamespacePayload {
    api_version: String,
    kind: String,
    namespace: String,
    label_selector: Option<String>,
    field_selector: Option<String>,
    field_masks: Option<BTreeSet<String>>,
}

/// Turns a guest host call into the request kwctl would have recorded.
///
/// Unknown bindings/namespaces/operations get policy-evaluator's messages.
/// Payload of `kubernetes/can_i` (the SDK's `CanIRequest`).
#[derive(Deserialize)]
struct CanIPayload {
    subject_access_review: crate::session::SubjectAccessReview,
    disable_cache: bool,
}

fn parse_host_call(
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<CallbackRequest, String> {
    if binding != "kubewarden" {
        return Err(format!("unknown binding: {binding}"));
    }
    if namespace != "kubernetes" {
        return Err(format!("unknown namespace: {namespace}"));
    }
    let invalid = |e: serde_json::Error| format!("invalid {namespace}/{operation} payload: {e}");
    Ok(match operation {
        "get_resource" => {
            let p: GetResourcePayload = serde_json::from_slice(payload).map_err(invalid)?;
            CallbackRequest::KubernetesGetResource {
                api_version: p.api_version,
                kind: p.kind,
                name: p.name,
                namespace: p.namespace,
                disable_cache: p.disable_cache,
                field_masks: p.field_masks,
            }
        }
        "list_resources_all" => {
            let p: ListAllPayload = serde_json::from_slice(payload).map_err(invalid)?;
            CallbackRequest::KubernetesListResourceAll {
                api_version: p.api_version,
                kind: p.kind,
                label_selector: p.label_selector,
                field_selector: p.field_selector,
                field_masks: p.field_masks,
            }
        }
        "list_resources_by_namespace" => {
            let p: ListNamespacePayload = serde_json::from_slice(payload).map_err(invalid)?;
            CallbackRequest::KubernetesListResourceNamespace {
                api_version: p.api_version,
                kind: p.kind,
                namespace: p.namespace,
                label_selector: p.label_selector,
                field_selector: p.field_selector,
                field_masks: p.field_masks,
            }
        }
        "can_i" => {
            let p: CanIPayload = serde_json::from_slice(payload).map_err(invalid)?;
            CallbackRequest::KubernetesCanI {
                request: p.subject_access_review,
                disable_cache: p.disable_cache,
            }
        }
        _ => return Err(format!("unknown operation: {operation}")),
    })
}

/// Answers one waPC host call from `session`.
///
/// Guest logging (`kubewarden/tracing/log`) always succeeds and goes to
/// stderr, one line per event (its level and message), as kwctl prints a
/// policy's log: it is not a host capability and is never recorded. Every replay
/// failure is wrapped as policy-evaluator does (`Callback evaluation
/// failure: ...`), so the guest sees the same text as under kwctl.
pub fn host_call(
    session: &mut Session,
    binding: &str,
    namespace: &str,
    operation: &str,
    payload: &[u8],
) -> Result<Vec<u8>, String> {
    if binding == "kubewarden" && namespace == "tracing" {
        return match operation {
            "log" => {
                let event: serde_json::Value = serde_json::from_slice(payload).unwrap_or_default();
                eprintln!(
                    "{} policy log: {}",
                    event["level"].as_str().unwrap_or("info").to_uppercase(),
                    event["message"].as_str().unwrap_or_default()
                );
                Ok(Vec::new())
            }
            _ => Err(format!("unknown operation: {operation}")),
        };
    }
    let request = parse_host_call(binding, namespace, operation, payload)?;
    session
        .replay(&request)
        .map_err(|e| format!("Callback evaluation failure: {e}"))
}

/// A loaded policy, ready to be evaluated many times.
///
/// One `WapcHost` (one wasm instance) is reused across calls, as
/// policy-server does; only the replay session is swapped per evaluation,
/// through the shared slot the host callback reads.
pub struct Policy {
    host: wapc::WapcHost,
    session: Arc<Mutex<Session>>,
}

impl std::fmt::Debug for Policy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Policy")
            .field("host_id", &self.host.id())
            .finish()
    }
}

/// Locks the session slot; a poisoned lock still holds a usable session.
fn lock(slot: &Mutex<Session>) -> MutexGuard<'_, Session> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Policy {
    /// Reads and compiles a policy `.wasm` file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read policy {}", path.display()))?;
        Self::from_bytes(&bytes).with_context(|| format!("cannot load policy {}", path.display()))
    }

    /// Compiles a policy module and instantiates it with WASI enabled
    /// (no arguments, environment or preopened directories).
    pub fn from_bytes(wasm: &[u8]) -> Result<Self> {
        let engine = wasmtime_provider::WasmtimeEngineProviderBuilder::new()
            .module_bytes(wasm)
            .wasi_params(wapc::WasiParams::default())
            .build()
            .map_err(|e| anyhow!("cannot build the wasmtime engine: {e}"))?;

        let session = Arc::new(Mutex::new(Session::none()));
        let slot = Arc::clone(&session);
        let callback = move |_id: u64,
                             binding: &str,
                             namespace: &str,
                             operation: &str,
                             payload: &[u8]|
              -> HostResult {
            host_call(&mut lock(&slot), binding, namespace, operation, payload).map_err(Into::into)
        };
        let host = wapc::WapcHost::new(Box::new(engine), Some(Box::new(callback)))
            .map_err(|e| anyhow!("cannot initialize the waPC host: {e}"))?;
        Ok(Self { host, session })
    }

    /// Installs `session` for the next guest call and returns the previous one.
    pub fn set_session(&self, session: Session) -> Session {
        std::mem::replace(&mut lock(&self.session), session)
    }

    /// Takes back what is left of the current session (leaving none), e.g. to
    /// assert that an evaluation consumed every recorded exchange.
    pub fn take_session(&self) -> Session {
        self.set_session(Session::none())
    }

    /// Calls a guest operation. The error text is the waPC error's, which is
    /// what kwctl embeds in its "internal server error" responses.
    fn call(&self, operation: &str, payload: &[u8]) -> Result<Vec<u8>, wapc::errors::Error> {
        self.host.call(operation, payload)
    }

    /// Calls any guest operation with a raw payload and `session` answering
    /// its host calls: what the benchmark times.
    pub fn call_raw(&self, operation: &str, payload: &[u8], session: Session) -> Result<Vec<u8>> {
        self.set_session(session);
        self.call(operation, payload)
            .map_err(|e| anyhow!("guest operation {operation} failed: {e}"))
    }

    /// Runs the guest's `validate_settings` on raw settings JSON, with no
    /// session installed. Returns the guest's `{"valid": bool, "message": ...}`.
    pub fn validate_settings(&self, settings_json: &[u8]) -> Result<Value> {
        self.set_session(Session::none());
        let raw = self
            .call("validate_settings", settings_json)
            .map_err(|e| anyhow!("settings validation failed: {e}"))?;
        let response: Value = serde_json::from_slice(&raw)
            .context("the policy returned an invalid settings validation response")?;
        if !response.get("valid").is_some_and(Value::is_boolean) {
            return Err(anyhow!(
                "the policy returned a settings validation response without a boolean \"valid\": {response}"
            ));
        }
        Ok(response)
    }

    /// Runs the guest's `validate` on an AdmissionRequest (not a review) with
    /// `session` answering its host calls. Returns the guest's
    /// ValidationResponse JSON (`accepted`, `message`, `code`,
    /// `mutated_object`, `audit_annotations`, `warnings`).
    ///
    /// What is left of `session` afterwards is available via
    /// [`Policy::take_session`].
    pub fn validate(&self, request: &Value, settings: &Value, session: Session) -> Result<Value> {
        let payload = serde_json::to_vec(&json!({ "request": request, "settings": settings }))
            .context("cannot serialize the validation request")?;
        self.set_session(session);
        let raw = self.call("validate", &payload).map_err(|e| anyhow!(e))?;
        serde_json::from_slice(&raw).context("the policy returned invalid JSON")
    }

    /// What `kwctl run` prints for `request`: the guest's verdict turned into
    /// an AdmissionResponse, or a 500 rejection when the guest call fails.
    pub fn evaluate(
        &self,
        request: &Value,
        settings: &Value,
        session: Session,
    ) -> AdmissionResponse {
        self.validate(request, settings, session)
            .and_then(|verdict| admission_response(request, &verdict))
            .unwrap_or_else(|err| {
                AdmissionResponse::internal_server_error(request, &format!("{err:#}"))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSION: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../test_data/sessions/forbidden.yml"
    );

    const GET_RUNTIME_CLASS: &str = r#"{"api_version":"node.k8s.io/v1","kind":"RuntimeClass","name":"kata","namespace":null,"disable_cache":true,"field_masks":null}"#;
    const CAN_I: &str = r#"{"subject_access_review":{"groups":["system:serviceaccounts","system:serviceaccounts:kubewarden","system:authenticated"],"resource_attributes":{"group":"","name":null,"namespace":null,"resource":"nodes","subresource":null,"verb":"VERB","version":null},"user":"system:serviceaccount:kubewarden:policy-server"},"disable_cache":true}"#;
    const LIST_NODES: &str = r#"{"api_version":"v1","kind":"Node","label_selector":"katacontainers.io/kata-runtime=true","field_masks":["spec.unschedulable","spec.taints","status.allocatable"]}"#;

    fn call(
        session: &mut Session,
        namespace: &str,
        operation: &str,
        payload: &str,
    ) -> Result<Vec<u8>, String> {
        host_call(
            session,
            "kubewarden",
            namespace,
            operation,
            payload.as_bytes(),
        )
    }

    #[test]
    fn guest_payloads_match_recorded_requests() {
        let mut session = Session::load(SESSION).unwrap();
        let body = call(
            &mut session,
            "kubernetes",
            "get_resource",
            GET_RUNTIME_CLASS,
        )
        .unwrap();
        assert!(String::from_utf8(body).unwrap().contains("RuntimeClass"));
        // The SDK's CanIRequest, as the policy sends it.
        for verb in ["list", "watch"] {
            let can_i = CAN_I.replace("VERB", verb);
            let body = call(&mut session, "kubernetes", "can_i", &can_i).unwrap();
            assert!(
                String::from_utf8(body)
                    .unwrap()
                    .starts_with("{\"allowed\":true")
            );
        }
        // Absent field_selector == null; field_masks is a set, order-free.
        let err = call(&mut session, "kubernetes", "list_resources_all", LIST_NODES).unwrap_err();
        assert!(
            err.starts_with("Callback evaluation failure: ApiError: nodes is forbidden"),
            "{err}"
        );
        let err = call(&mut session, "kubernetes", "list_resources_all", LIST_NODES).unwrap_err();
        assert_eq!(
            err,
            "Callback evaluation failure: the list of recorded responses is empty"
        );
    }

    #[test]
    fn mismatch_is_reported_to_the_guest() {
        let mut session = Session::load(SESSION).unwrap();
        let err = call(&mut session, "kubernetes", "list_resources_all", LIST_NODES).unwrap_err();
        assert!(
            err.starts_with("Callback evaluation failure: Replay error: unexpected request. Was expecting KubernetesGetResource {"),
            "{err}"
        );
        assert!(err.ends_with("} instead"), "{err}");
    }

    #[test]
    fn unknown_calls_fail_clearly() {
        let mut session = Session::load(SESSION).unwrap();
        assert_eq!(
            host_call(&mut session, "other", "kubernetes", "get_resource", b"{}"),
            Err("unknown binding: other".into())
        );
        assert_eq!(
            call(&mut session, "oci", "v1/verify", "{}"),
            Err("unknown namespace: oci".into())
        );
        assert_eq!(
            call(&mut session, "kubernetes", "delete_resource", "{}"),
            Err("unknown operation: delete_resource".into())
        );
        let err = call(&mut session, "kubernetes", "can_i", "{}").unwrap_err();
        assert!(
            err.starts_with(
                "invalid kubernetes/can_i payload: missing field `subject_access_review`"
            ),
            "{err}"
        );
        let err = call(&mut session, "kubernetes", "get_resource", "{\"kind\":1}").unwrap_err();
        assert!(
            err.starts_with("invalid kubernetes/get_resource payload"),
            "{err}"
        );
        // None of these consumed an exchange.
        assert_eq!(session.remaining(), 4);
    }

    #[test]
    fn guest_logging_is_accepted_and_not_replayed() {
        let mut session = Session::none();
        assert_eq!(
            call(&mut session, "tracing", "log", "{\"msg\":\"hi\"}"),
            Ok(Vec::new())
        );
    }
}
