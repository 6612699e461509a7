//! `logDecisions`: one line per evaluated Pod CREATE in policy-server's
//! log, where the audit log is out of reach (most managed clusters) and
//! monitor mode writes no annotation. The line is built here; the host
//! writes it ([`Cluster::log_info`](crate::cluster::Cluster::log_info),
//! the SDK's logging host call).

use crate::annotation;
use crate::pod::PodFacts;
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
        let namespace = (request.namespace.as_ref())
            .map(|n| n.as_str().to_string())
            .filter(|n| !n.is_empty())
            .or_else(|| pod.namespace.clone())
            .unwrap_or_default();
        let name = match (&pod.name, &pod.generate_name) {
            (Some(name), _) => name.clone(),
            (None, Some(prefix)) => format!("{prefix}*"),
            (None, None) => String::new(),
        };
        let decision = review.decision.verdict();
        let reasons = review.decision.reasons();
        Entry {
            namespace: printable(&namespace),
            pod: printable(&name),
            decision,
            summary: printable(&annotation::bounded(&format!("{decision}: "), &reasons)),
        }
    }

    /// The message: `namespace/pod: verdict: reasons`, which `grep` finds
    /// by any of them.
    pub fn message(&self) -> String {
        format!("{}/{}: {}", self.namespace, self.pod, self.summary)
    }
}

/// `text` on one line: control characters (a tenant's pod reaches the
/// policy before the API server validates it) escaped, so that one
/// admission is one log line.
fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_default().to_string(),
            false => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decision::{Decision, Reasons, Unchanged};

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
        let review = Review::of(Decision::Unchanged(Unchanged::NotAssigned(Reasons::one(
            "0/2 kata nodes can run this pod",
        ))));
        let entry = Entry::of(&pod, &request, &review);
        assert_eq!(
            entry.message(),
            "tenant/web-7d9f-*: unchanged: 0/2 kata nodes can run this pod"
        );
        assert_eq!(entry.decision, "unchanged");
    }

    #[test]
    fn a_tenant_cannot_break_the_line() {
        let pod =
            PodFacts::from_json(r#"{"metadata":{"name":"a\nb","namespace":"x\r\ny"},"spec":{}}"#)
                .unwrap();
        let request: AdmissionRequest = serde_json::from_str(r#"{"kind":{"kind":"Pod"}}"#).unwrap();
        let review = Review::of(Decision::Unchanged(Unchanged::NotAssigned(Reasons::one(
            "path /var/run/\nfake: line",
        ))));
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
}
