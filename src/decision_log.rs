//! `logDecisions`: one line per evaluated Pod CREATE in policy-server's
//! log, where the audit log is out of reach (most managed clusters) and
//! monitor mode writes no annotation. The line is built here; the host
//! writes it ([`Cluster::log_decision`](crate::cluster::Cluster::log_decision),
//! the SDK's logging host call).

use crate::annotation;
use crate::pod::{PodFacts, pod_namespace};
use crate::printable;
use crate::request::AdmissionRequest;
use crate::review::Review;

/// One admission's line: where, which pod, the verdict and its reasons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub namespace: String,
    /// The pod's name, or `<generateName>*` before the API server names it.
    pub pod: String,
    pub decision: &'static str,
    /// The verdict and whole reasons, bounded as the decision annotation is.
    pub summary: String,
}

impl Entry {
    pub fn of(pod: &PodFacts, request: &AdmissionRequest, review: &Review) -> Entry {
        let namespace = pod_namespace(request, pod);
        let name = match (&pod.name, &pod.generate_name) {
            (Some(name), _) => name.clone(),
            (None, Some(prefix)) => format!("{prefix}*"),
            (None, None) => String::new(),
        };
        let decision = review.decision.verdict();
        let findings = review.decision.findings();
        Entry {
            namespace: printable(namespace, MAX_NAMESPACE_BYTES),
            pod: printable(&name, MAX_NAME_BYTES),
            decision,
            summary: printable(
                &annotation::bounded(&format!("{decision}: "), &findings),
                MAX_SUMMARY_BYTES,
            ),
        }
    }

    /// The message: `namespace/pod: verdict: reasons`, which `grep` finds
    /// by any of them.
    pub fn message(&self) -> String {
        format!("{}/{}: {}", self.namespace, self.pod, self.summary)
    }
}

/// The longest pod name the API server accepts (a DNS subdomain), and the
/// longest namespace (a DNS label): a valid name is never cut.
const MAX_NAME_BYTES: usize = 253;
const MAX_NAMESPACE_BYTES: usize = 63;
/// The summary is the annotation's value (at most 512 bytes), escaped.
const MAX_SUMMARY_BYTES: usize = 1024;

/// `text` on one line and bounded: control characters, line separators and
/// bidirectional controls escaped (a tenant's pod reaches the policy before
/// the API server validates it), so that one admission is one log line of
/// bounded length whatever the pod's name.
fn printable(text: &str, max: usize) -> String {
    printable::bounded(&printable::escaped(text), max).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Cause, Decision, Findings, Left, Unchanged};

    fn request(raw: &str) -> serde_json::Value {
        serde_json::from_str(raw).unwrap()
    }

    #[test]
    fn a_line_names_the_namespace_the_pod_and_the_decision() {
        let pod =
            PodFacts::from_json(r#"{"metadata":{"generateName":"web-7d9f-"},"spec":{}}"#).unwrap();
        let raw = request(r#"{"namespace":"tenant","kind":{"kind":"Pod"},"operation":"CREATE"}"#)
            .to_string();
        let request: AdmissionRequest = serde_json::from_str(&raw).unwrap();
        let review = Review::of(Decision::Unchanged(Unchanged::NotAssigned(
            Left::Because(Cause::NoFeasibleNode),
            Findings::one("0/2 kata nodes can run this pod"),
        )));
        let entry = Entry::of(&pod, &request, &review);
        assert_eq!(
            entry.message(),
            "tenant/web-7d9f-*: unchanged: 0/2 kata nodes can run this pod"
        );
        assert_eq!(entry.decision, "unchanged");
    }

    #[test]
    fn a_pod_that_names_no_namespace_is_in_default() {
        let pod = PodFacts::from_json(r#"{"metadata":{"name":"p"},"spec":{}}"#).unwrap();
        let request: AdmissionRequest = serde_json::from_str(r#"{"kind":{"kind":"Pod"}}"#).unwrap();
        let review = Review::of(Decision::Unchanged(Unchanged::NotAssigned(
            Left::Because(Cause::NoFeasibleNode),
            Findings::one("r"),
        )));
        assert_eq!(Entry::of(&pod, &request, &review).namespace, "default");
    }

    #[test]
    fn a_tenant_cannot_break_the_line() {
        let pod =
            PodFacts::from_json(r#"{"metadata":{"name":"a\nb","namespace":"x\r\ny"},"spec":{}}"#)
                .unwrap();
        let request: AdmissionRequest = serde_json::from_str(r#"{"kind":{"kind":"Pod"}}"#).unwrap();
        let review = Review::of(Decision::Unchanged(Unchanged::NotAssigned(
            Left::Because(Cause::NoFeasibleNode),
            Findings::one("path /var/run/\nfake: line"),
        )));
        let message = Entry::of(&pod, &request, &review).message();
        assert!(
            !message.contains('\n') && !message.contains('\r'),
            "{message}"
        );
        assert_eq!(
            message,
            r"x\r\ny/a\nb: unchanged: path /var/run/\nfake: line"
        );
    }

    #[test]
    fn a_line_is_bounded_whatever_the_pod_name() {
        let name = "n".repeat(1_000_000);
        let pod = PodFacts::from_json(
            &serde_json::json!({"metadata": {"name": name, "namespace": "\u{2028}".repeat(5000)},
                "spec": {}})
            .to_string(),
        )
        .unwrap();
        let request: AdmissionRequest = serde_json::from_str(r#"{"kind":{"kind":"Pod"}}"#).unwrap();
        let review = Review::of(Decision::Unchanged(Unchanged::NotAssigned(
            Left::Because(Cause::NoFeasibleNode),
            Findings(vec!["r\u{202e}".repeat(400); 40]),
        )));
        let message = Entry::of(&pod, &request, &review).message();
        assert!(message.len() <= 63 + 253 + 1024 + 4, "{}", message.len());
        assert!(!message.chars().any(printable::is_unsafe));
        // A valid name is never cut.
        let pod = PodFacts::from_json(
            &serde_json::json!({"metadata": {"name": "w".repeat(253), "namespace": "t".repeat(63)}, "spec": {}})
                .to_string(),
        )
        .unwrap();
        let entry = Entry::of(&pod, &request, &review);
        assert_eq!((entry.pod.len(), entry.namespace.len()), (253, 63));
    }
}
