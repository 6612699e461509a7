//! Replay of recorded host-capability sessions.
//!
//! `kwctl run --replay-host-capabilities-interactions FILE` answers the
//! policy's host calls from a file instead of a live cluster. This module reads
//! the same file format and applies the same replay rules, so a session file
//! behaves identically here and under kwctl:
//!
//! * exchanges are consumed strictly in order, one per host call;
//! * the incoming call must be structurally equal to the recorded request
//!   (every field, `field_masks` included), otherwise the call fails;
//! * a recorded `Error` response fails the call with the recorded message.

use std::collections::{BTreeSet, VecDeque};
use std::fmt;
use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

/// A host-capability request, as kwctl records it.
///
/// The variant and field names (and their order) mirror policy-evaluator's
/// `CallbackRequestType`, for two reasons: the recorded YAML uses the variant
/// name as its tag (`!KubernetesGetResource`), and kwctl prints mismatches with
/// `{:?}`, so keeping the shape keeps the error text identical.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum CallbackRequest {
    /// `kubernetes/get_resource`.
    KubernetesGetResource {
        api_version: String,
        kind: String,
        name: String,
        namespace: Option<String>,
        disable_cache: bool,
        field_masks: Option<BTreeSet<String>>,
    },
    /// `kubernetes/list_resources_all`.
    KubernetesListResourceAll {
        api_version: String,
        kind: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    /// `kubernetes/list_resources_by_namespace`.
    KubernetesListResourceNamespace {
        api_version: String,
        kind: String,
        namespace: String,
        label_selector: Option<String>,
        field_selector: Option<String>,
        field_masks: Option<BTreeSet<String>>,
    },
    /// `kubernetes/can_i`: a SubjectAccessReview.
    KubernetesCanI {
        request: SubjectAccessReview,
        disable_cache: bool,
    },
}

/// Mirrors the SDK's `host_capabilities::kubernetes::SubjectAccessReview`
/// (names, field order and types: kwctl prints mismatches with `{:?}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectAccessReview {
    pub groups: Option<Vec<String>>,
    pub resource_attributes: ResourceAttributes,
    pub user: String,
}

/// Mirrors the SDK's `host_capabilities::kubernetes::ResourceAttributes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResourceAttributes {
    pub group: Option<String>,
    pub name: Option<String>,
    pub namespace: Option<String>,
    pub resource: String,
    pub subresource: Option<String>,
    pub verb: String,
    pub version: Option<String>,
}

impl CallbackRequest {
    /// The access question the policy asks before listing nodes, with the
    /// default `policyServerServiceAccount`: may it `verb` nodes?
    pub fn default_nodes_access(verb: &str) -> CallbackRequest {
        CallbackRequest::default_access(verb, "nodes")
    }

    /// The access question the policy asks before listing `resource` (a
    /// core kind), with the default `policyServerServiceAccount`.
    pub fn default_access(verb: &str, resource: &str) -> CallbackRequest {
        const NAMESPACE: &str = "kubewarden";
        CallbackRequest::KubernetesCanI {
            request: SubjectAccessReview {
                groups: Some(vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{NAMESPACE}"),
                    "system:authenticated".into(),
                ]),
                resource_attributes: ResourceAttributes {
                    group: Some(String::new()),
                    name: None,
                    namespace: None,
                    resource: resource.into(),
                    subresource: None,
                    verb: verb.into(),
                    version: None,
                },
                user: format!("system:serviceaccount:{NAMESPACE}:policy-server"),
            },
            disable_cache: true,
        }
    }

    /// Parses the request string stored in a session file: YAML whose tag
    /// (`!KubernetesListResourceAll`) names the variant.
    pub fn from_recorded_yaml(text: &str) -> Result<Self> {
        serde_yaml::from_str(text)
            .context("recorded request is not a known host-capability request")
    }
}

/// The recorded outcome of one host call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum Response {
    /// The host answered; `payload` is the JSON text handed to the guest.
    Success { payload: String },
    /// The host failed (e.g. the API server said "Forbidden").
    Error { message: String },
    /// Answered the way policy-server answers from its watch cache: on
    /// every call the cached objects are cloned and serialized, a list of
    /// their kind (a NodeList unless they say otherwise) when `list`, else
    /// the one object. For `make bench`'s cost model; never
    /// read from or written to a session file.
    #[serde(skip)]
    Serialized {
        objects: std::sync::Arc<Vec<serde_json::Value>>,
        list: bool,
    },
}

/// One request/response pair of a session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub request: CallbackRequest,
    pub response: Response,
}

/// The on-disk form of an exchange; the request is a YAML document inside a
/// string, parsed in a second step.
#[derive(Deserialize)]
struct RawExchange {
    #[serde(rename = "type")]
    kind: Option<String>,
    request: String,
    response: Response,
}

/// Why a replayed host call failed.
///
/// The `Display` texts are kwctl's, so guests (and tests asserting on the
/// messages they surface) see the same wording under both hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayError {
    /// No session file was given, so host capabilities are unavailable.
    NoSession,
    /// Every recorded exchange has already been used.
    Exhausted,
    /// The policy asked for something other than the next recorded request.
    Mismatch {
        expected: Box<CallbackRequest>,
        actual: Box<CallbackRequest>,
    },
    /// The recorded response is an error.
    Recorded(String),
}

impl fmt::Display for ReplayError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReplayError::NoSession => write!(
                f,
                "host capabilities are not available: no session was given \
                 (use --replay-host-capabilities-interactions)"
            ),
            ReplayError::Exhausted => write!(f, "the list of recorded responses is empty"),
            ReplayError::Mismatch { expected, actual } => write!(
                f,
                "Replay error: unexpected request. Was expecting {expected:?}, got {actual:?} instead"
            ),
            ReplayError::Recorded(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for ReplayError {}

/// An ordered queue of recorded exchanges, consumed one per host call.
///
/// `Session::none()` (also the `Default`) stands for "no session file": every
/// host call fails with a message saying so, rather than the misleading
/// "the list of recorded responses is empty" of an empty file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Session {
    exchanges: Option<VecDeque<Exchange>>,
    /// Answers to calls that the queue's next exchange does not match,
    /// given as often as asked and in any order: for benchmarks whose
    /// guests read nodes by name in an order that depends on the nodes.
    /// Never from a recording (kwctl has no such thing).
    standing: Vec<Exchange>,
    /// Calls that neither the queue nor a standing answer matched.
    unmatched: usize,
}

impl Session {
    /// No recording: host calls fail with [`ReplayError::NoSession`].
    pub fn none() -> Self {
        Self::default()
    }

    /// A session built in code, e.g. for tests.
    pub fn from_exchanges(exchanges: impl IntoIterator<Item = Exchange>) -> Self {
        Self {
            exchanges: Some(exchanges.into_iter().collect()),
            ..Self::default()
        }
    }

    /// This session, answering `standing` whenever the next recorded
    /// exchange does not match a call (as often as asked, never consumed).
    pub fn with_standing(mut self, standing: impl IntoIterator<Item = Exchange>) -> Self {
        self.standing.extend(standing);
        self
    }

    /// How many calls neither the queue nor a standing answer matched.
    pub fn unmatched(&self) -> usize {
        self.unmatched
    }

    /// Parses a kwctl `--replay-host-capabilities-interactions` document.
    ///
    /// Every recorded request is parsed up front, so a malformed file is
    /// reported at load time instead of in the middle of an evaluation.
    pub fn from_yaml(text: &str) -> Result<Self> {
        // An empty (or comments-only) file is an empty session, not an error.
        let raw: Option<Vec<RawExchange>> =
            serde_yaml::from_str(text).context("session is not a YAML list of exchanges")?;
        let exchanges = raw
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, raw)| {
                if let Some(kind) = raw.kind.as_deref()
                    && kind != "Exchange"
                {
                    bail!(
                        "exchange #{index}: unsupported entry type {kind:?} (expected \"Exchange\")"
                    );
                }
                let request = CallbackRequest::from_recorded_yaml(&raw.request)
                    .with_context(|| format!("exchange #{index}"))?;
                Ok(Exchange {
                    request,
                    response: raw.response,
                })
            })
            .collect::<Result<VecDeque<_>>>()?;
        Ok(Self {
            exchanges: Some(exchanges),
            ..Self::default()
        })
    }

    /// Reads and parses a session file.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read session file {}", path.display()))?;
        Self::from_yaml(&text).with_context(|| format!("invalid session file {}", path.display()))
    }

    /// Whether this session came from a recording (even an empty one).
    pub fn is_recorded(&self) -> bool {
        self.exchanges.is_some()
    }

    /// How many exchanges have not been replayed yet. A test can assert this
    /// is zero to check the policy made every call the recording expects.
    pub fn remaining(&self) -> usize {
        self.exchanges.as_ref().map_or(0, VecDeque::len)
    }

    /// The exchanges not replayed yet, in order.
    pub fn pending(&self) -> impl Iterator<Item = &Exchange> {
        self.exchanges.iter().flatten()
    }

    /// Answers one host call: consumes the next exchange whether or not it
    /// matches (as kwctl does), and returns the recorded payload bytes.
    pub fn replay(&mut self, actual: &CallbackRequest) -> Result<Vec<u8>, ReplayError> {
        let exchanges = self.exchanges.as_mut().ok_or(ReplayError::NoSession)?;
        if exchanges.front().is_none_or(|e| e.request != *actual)
            && let Some(standing) = self.standing.iter().find(|e| e.request == *actual)
        {
            return Self::answer(standing.response.clone());
        }
        let Some(exchange) = exchanges.pop_front() else {
            self.unmatched += 1;
            return Err(ReplayError::Exhausted);
        };
        if exchange.request != *actual {
            self.unmatched += 1;
            return Err(ReplayError::Mismatch {
                expected: Box::new(exchange.request),
                actual: Box::new(actual.clone()),
            });
        }
        Self::answer(exchange.response)
    }

    fn answer(response: Response) -> Result<Vec<u8>, ReplayError> {
        match response {
            Response::Success { payload } => Ok(payload.into_bytes()),
            Response::Error { message } => Err(ReplayError::Recorded(message)),
            Response::Serialized { objects, list } => {
                let objects: Vec<serde_json::Value> = objects.as_ref().clone();
                let answer = if list {
                    // The list of the objects' kind (a NodeList, a PodList).
                    let kind = (objects.first())
                        .and_then(|o| o["kind"].as_str())
                        .map_or("NodeList".to_string(), |k| format!("{k}List"));
                    serde_json::to_vec(&serde_json::json!({
                        "apiVersion": "v1", "kind": kind, "metadata": {}, "items": objects,
                    }))
                } else {
                    serde_json::to_vec(&objects.first())
                };
                answer.map_err(|e| ReplayError::Recorded(e.to_string()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SESSIONS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../test_data/sessions");

    fn get_runtime_class() -> CallbackRequest {
        CallbackRequest::KubernetesGetResource {
            api_version: "node.k8s.io/v1".into(),
            kind: "RuntimeClass".into(),
            name: "kata".into(),
            namespace: None,
            disable_cache: true,
            field_masks: None,
        }
    }

    fn can_i(verb: &str) -> CallbackRequest {
        CallbackRequest::default_nodes_access(verb)
    }

    const PLAIN_MASKS: [&str; 3] = ["spec.taints", "spec.unschedulable", "status.allocatable"];
    const NAMES_MASKS: [&str; 4] = [
        "spec.taints",
        "spec.unschedulable",
        "status.allocatable",
        "status.runtimeHandlers.name",
    ];

    /// The kata node list, as `runtimeHandlerCheck: off` and the first
    /// read of the check ask it.
    fn list_kata_nodes() -> CallbackRequest {
        list_kata_nodes_with(&PLAIN_MASKS)
    }

    fn list_kata_nodes_with(masks: &[&str]) -> CallbackRequest {
        CallbackRequest::KubernetesListResourceAll {
            api_version: "v1".into(),
            kind: "Node".into(),
            label_selector: Some("katacontainers.io/kata-runtime=true".into()),
            field_selector: None,
            field_masks: Some(masks.iter().map(|m| m.to_string()).collect()),
        }
    }

    /// A candidate read by name with the handlers' names.
    fn get_node(name: &str) -> CallbackRequest {
        CallbackRequest::KubernetesGetResource {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: name.into(),
            namespace: None,
            disable_cache: true,
            field_masks: Some(NAMES_MASKS.iter().map(|m| m.to_string()).collect()),
        }
    }

    #[test]
    fn every_project_session_parses() {
        let mut files: Vec<_> = std::fs::read_dir(SESSIONS)
            .expect("test_data/sessions exists")
            .map(|entry| entry.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yml" || e == "yaml"))
            .collect();
        files.sort();
        assert!(!files.is_empty());
        for file in files {
            let session =
                Session::load(&file).unwrap_or_else(|e| panic!("{}: {e:#}", file.display()));
            assert!(
                session.remaining() > 0,
                "{} has no exchanges",
                file.display()
            );
            // Every project session starts by fetching a RuntimeClass.
            assert!(matches!(
                &session.pending().next().unwrap().request,
                CallbackRequest::KubernetesGetResource { kind, .. } if kind == "RuntimeClass"
            ));
        }
    }

    #[test]
    fn recorded_request_fields_are_read() {
        let session = Session::load(format!("{SESSIONS}/kata-workers.yml")).unwrap();
        let requests: Vec<_> = session.pending().map(|e| e.request.clone()).collect();
        assert_eq!(
            requests,
            vec![
                get_runtime_class(),
                can_i("list"),
                can_i("watch"),
                list_kata_nodes(),
                get_node("worker-1"),
                get_node("worker-2"),
                list_kata_nodes_with(&NAMES_MASKS),
            ]
        );
    }

    #[test]
    fn recorded_error_response_is_read() {
        let session = Session::load(format!("{SESSIONS}/forbidden.yml")).unwrap();
        let last = session.pending().last().unwrap();
        assert!(
            matches!(&last.response, Response::Error { message } if message.contains("nodes is forbidden"))
        );
    }

    #[test]
    fn replays_in_order_then_reports_exhaustion() {
        let mut session = Session::load(format!("{SESSIONS}/kata-workers.yml")).unwrap();
        let runtime_class = session.replay(&get_runtime_class()).unwrap();
        assert!(
            String::from_utf8(runtime_class)
                .unwrap()
                .contains("\"handler\":\"kata\"")
        );
        for verb in ["list", "watch"] {
            let access = session.replay(&can_i(verb)).unwrap();
            assert!(
                String::from_utf8(access)
                    .unwrap()
                    .starts_with("{\"allowed\":true")
            );
        }
        let nodes = session.replay(&list_kata_nodes()).unwrap();
        assert!(String::from_utf8(nodes).unwrap().contains("worker-2"));
        assert_eq!(session.remaining(), 3);
        for name in ["worker-1", "worker-2"] {
            let node = session.replay(&get_node(name)).unwrap();
            assert!(String::from_utf8(node).unwrap().contains(name));
        }
        session.replay(&list_kata_nodes_with(&NAMES_MASKS)).unwrap();
        assert_eq!(session.remaining(), 0);
        let err = session.replay(&list_kata_nodes()).unwrap_err();
        assert_eq!(err.to_string(), "the list of recorded responses is empty");
    }

    #[test]
    fn mismatch_consumes_the_exchange_and_names_both_requests() {
        let mut session = Session::load(format!("{SESSIONS}/kata-workers.yml")).unwrap();
        let err = session.replay(&list_kata_nodes()).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "Replay error: unexpected request. Was expecting {:?}, got {:?} instead",
                get_runtime_class(),
                list_kata_nodes()
            )
        );
        assert!(err.to_string().starts_with(
            "Replay error: unexpected request. Was expecting KubernetesGetResource { api_version: \"node.k8s.io/v1\""
        ));
        assert_eq!(session.remaining(), 6);
    }

    #[test]
    fn standing_answers_serve_what_the_queue_does_not_match() {
        let answer = |payload: &str| Response::Success {
            payload: payload.into(),
        };
        let mut session = Session::from_exchanges([Exchange {
            request: list_kata_nodes(),
            response: answer("list"),
        }])
        .with_standing([Exchange {
            request: get_node("worker-2"),
            response: answer("worker-2"),
        }]);
        // Asked before, between and after the queue, as often as asked.
        assert_eq!(session.replay(&get_node("worker-2")).unwrap(), b"worker-2");
        assert_eq!(session.replay(&list_kata_nodes()).unwrap(), b"list");
        assert_eq!(session.replay(&get_node("worker-2")).unwrap(), b"worker-2");
        assert_eq!(session.unmatched(), 0);
        assert!(matches!(
            session.replay(&get_node("worker-1")),
            Err(ReplayError::Exhausted)
        ));
        assert_eq!(session.unmatched(), 1);
    }

    #[test]
    fn field_masks_take_part_in_matching() {
        let mut session = Session::from_exchanges([Exchange {
            request: list_kata_nodes(),
            response: Response::Success {
                payload: "{}".into(),
            },
        }]);
        let CallbackRequest::KubernetesListResourceAll {
            api_version,
            kind,
            label_selector,
            field_selector,
            ..
        } = list_kata_nodes()
        else {
            unreachable!()
        };
        let without_masks = CallbackRequest::KubernetesListResourceAll {
            api_version,
            kind,
            label_selector,
            field_selector,
            field_masks: None,
        };
        assert!(matches!(
            session.replay(&without_masks),
            Err(ReplayError::Mismatch { .. })
        ));
    }

    #[test]
    fn recorded_error_fails_the_call_with_its_message() {
        let mut session = Session::load(format!("{SESSIONS}/runtimeclass-missing.yml")).unwrap();
        let err = session.replay(&get_runtime_class()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Cannot find node.k8s.io/v1/RuntimeClass named 'kata' inside of namespace 'None'"
        );
    }

    #[test]
    fn absent_optional_fields_equal_null_ones_and_type_is_optional() {
        let session = Session::from_yaml(
            "- request: |\n    !KubernetesListResourceAll\n    api_version: v1\n    kind: Node\n  response:\n    type: Success\n    payload: '{}'\n\
             - request: |\n    !KubernetesListResourceNamespace\n    api_version: v1\n    kind: Pod\n    namespace: default\n    label_selector: null\n  response:\n    type: Error\n    message: boom\n",
        )
        .unwrap();
        let requests: Vec<_> = session.pending().map(|e| e.request.clone()).collect();
        assert_eq!(
            requests,
            vec![
                CallbackRequest::KubernetesListResourceAll {
                    api_version: "v1".into(),
                    kind: "Node".into(),
                    label_selector: None,
                    field_selector: None,
                    field_masks: None,
                },
                CallbackRequest::KubernetesListResourceNamespace {
                    api_version: "v1".into(),
                    kind: "Pod".into(),
                    namespace: "default".into(),
                    label_selector: None,
                    field_selector: None,
                    field_masks: None,
                },
            ]
        );
    }

    #[test]
    fn empty_document_is_an_empty_recording() {
        for text in ["", "# nothing recorded\n", "[]"] {
            let mut session = Session::from_yaml(text).unwrap();
            assert!(session.is_recorded());
            assert_eq!(
                session.replay(&get_runtime_class()),
                Err(ReplayError::Exhausted)
            );
        }
    }

    #[test]
    fn no_session_says_so() {
        let err = Session::none().replay(&get_runtime_class()).unwrap_err();
        assert_eq!(err, ReplayError::NoSession);
        assert!(
            err.to_string()
                .contains("--replay-host-capabilities-interactions")
        );
    }

    #[test]
    fn bad_files_are_errors_not_panics() {
        let cases = [
            ("not a list", "{a: 1}"),
            (
                "missing disable_cache",
                "- request: |\n    !KubernetesGetResource\n    api_version: v1\n    kind: Node\n    name: n\n  response: {type: Success, payload: '{}'}\n",
            ),
            (
                "unknown tag",
                "- request: '!OciManifest {image: x}'\n  response: {type: Success, payload: '{}'}\n",
            ),
            (
                "untagged request",
                "- request: 'api_version: v1'\n  response: {type: Success, payload: '{}'}\n",
            ),
            (
                "bad response type",
                "- request: |\n    !KubernetesListResourceAll\n    api_version: v1\n    kind: Node\n  response: {type: Maybe}\n",
            ),
            (
                "bad entry type",
                "- type: Record\n  request: |\n    !KubernetesListResourceAll\n    api_version: v1\n    kind: Node\n  response: {type: Success, payload: '{}'}\n",
            ),
        ];
        for (what, text) in cases {
            assert!(
                Session::from_yaml(text).is_err(),
                "{what} should be rejected"
            );
        }
        let err = Session::load("/nonexistent/session.yml").unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/session.yml"));
    }
}
