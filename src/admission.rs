//! One admission, start to end: the payload read (the request and the
//! settings, parsed once), the decision, what is done with it (the
//! mutation, then the decision annotation), and the response. The
//! decision only decides; the steps that report on it live here and after.

use crate::annotation;
use crate::cluster::Cluster;
use crate::decision::{self, Decision, Unchanged};
use crate::decision_log::Entry;
use crate::mutation;
use crate::pod::PodFacts;
use crate::request::{self, AdmissionRequest};
use crate::response;
use crate::review::Review;
use crate::settings::Settings;

/// The `validate` call: a raw payload to the response's JSON.
pub fn validate(payload: &[u8], cluster: &impl Cluster) -> Vec<u8> {
    response::render(review(payload, cluster))
}

/// The admission of a raw `validate` payload. Malformed input is refused
/// with 400.
pub fn review(payload: &[u8], cluster: &impl Cluster) -> Review {
    let payload = match request::parse(payload) {
        Ok(payload) => payload,
        Err(e) => return Review::of(Decision::bad_request(e)),
    };
    // No settings read as `{}`: refused, for want of the required ones
    // (policy-server and kwctl validate them first, so this is for callers
    // that do not).
    let settings = match payload.settings.map_or_else(
        || Settings::from_value(&serde_json::Value::Null),
        |raw| Settings::from_json(raw.get().as_bytes()),
    ) {
        Ok(settings) => settings,
        Err(e) => {
            return Review::of(Decision::bad_request(format!(
                "invalid policy settings: {e}"
            )));
        }
    };
    review_request(&payload.request, &settings, cluster)
}

/// The admission of a read request under read settings.
pub fn review_request(
    request: &AdmissionRequest,
    settings: &Settings,
    cluster: &impl Cluster,
) -> Review {
    if !request.is_pod_create() {
        return Review::of(Decision::Unchanged(Unchanged::NotEvaluated(
            request.describe(),
        )));
    }
    let Some(object) = request.object.map(|o| o.get()) else {
        return Review::of(Decision::bad_request(
            "the Pod CREATE request has no object",
        ));
    };
    let pod = match PodFacts::from_json(object) {
        Ok(pod) => pod,
        Err(e) => return Review::of(Decision::bad_request(e)),
    };
    let review = applied(decision::decide(&pod, request, settings, cluster), object);
    // Annotated: every pod the policy judged. Not a mirror pod (its object
    // is the kubelet's copy of a static pod, which the policy never
    // changes), nor a pod with runtimeClassName "" (left for the API server
    // to refuse).
    let judged = !pod.is_mirror && pod.runtime_class_name.as_deref() != Some("");
    let review = if settings.annotate_decision && judged {
        annotation::annotate(review, object, &pod.annotations)
    } else {
        review
    };
    if settings.log_decisions {
        let entry = Entry::of(&pod, request, &review);
        cluster.log_decision(
            &entry.message(),
            &entry.namespace,
            &entry.pod,
            entry.decision,
        );
    }
    review
}

/// The decision applied to the request's raw `object`: the class added to
/// the pod, every other byte kept.
fn applied(decision: Decision, object: &str) -> Review {
    let Decision::Mutate { class, .. } = &decision else {
        return Review::of(decision);
    };
    match mutation::set_runtime_class(object, class) {
        Ok(mutated) => Review {
            object: Some(mutated),
            ..Review::of(decision)
        },
        Err(e) => Review::of(Decision::bad_request(format!("cannot mutate the Pod: {e}"))),
    }
}
