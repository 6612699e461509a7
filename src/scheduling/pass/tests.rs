use std::collections::BTreeMap;

use super::*;
use crate::kubelet::{CriNeeds, HandlerNeeds, KubeletNeeds};

fn plain() -> Constraints {
    Constraints::new(None, &BTreeMap::new(), None, Vec::new())
}

fn selecting(key: &str) -> Constraints {
    let selector = BTreeMap::from([(key.to_string(), String::new())]);
    Constraints::new(None, &selector, None, Vec::new())
}

fn open_scan<'n>(c: &Constraints, list: &'n str) -> Result<Feasibility<'n>, String> {
    Pass::new(c, Open, Stop::FirstFit).scan(list.as_bytes())
}

#[test]
fn the_pass_stops_at_the_first_fit_and_diagnoses_otherwise() {
    let list = |tail: &str| {
        format!(
            r#"{{"kind":"NodeList","items":[
            {{"metadata":{{"name":"master","labels":{{"node-role.kubernetes.io/master":""}}}},
              "spec":{{"taints":[{{"key":"node-role.kubernetes.io/master","effect":"NoSchedule"}}]}}}},
            {{"metadata":{{"name":"w1"}}}},
            {{"metadata":{{"name":"w2"}}}}{tail}"#
        )
    };
    let complete = list("]}");
    assert_eq!(
        open_scan(&plain(), &complete),
        Ok(Feasibility::Fits { broken: None })
    );
    // Parsing stops at w1: what follows it is never read.
    let truncated = list(", garbage");
    assert_eq!(
        open_scan(&plain(), &truncated),
        Ok(Feasibility::Fits { broken: None })
    );
    let pinned = selecting("node-role.kubernetes.io/master");
    let Ok(Feasibility::NoneFits { diagnosis, met: 0 }) = open_scan(&pinned, &complete) else {
        panic!("expected no fit")
    };
    assert_eq!(
        diagnosis.to_string(),
        "0/3 kata nodes can run this pod: 2 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) had untolerated taint {node-role.kubernetes.io/master: }"
    );
    // Without a fit, the whole list must be valid.
    assert!(open_scan(&pinned, &truncated).is_err());
}

const HANDLERS: &str = r#"{"kind":"NodeList","items":[
    {"metadata":{"name":"old-kubelet"}},
    {"metadata":{"name":"good"},"status":{"runtimeHandlers":[{"name":"kata-qemu"}]}},
    {"metadata":{"name":"k3s"},"status":{"runtimeHandlers":[{"name":"runc"}]}},
    {"metadata":{"name":"cordoned"},"spec":{"unschedulable":true},"status":{"runtimeHandlers":[]}}]}"#;

fn required_handler() -> KubeletNeeds {
    KubeletNeeds::of(
        Some(HandlerNeeds {
            handler: "kata-qemu".into(),
            required: true,
            features: Default::default(),
        }),
        CriNeeds::default(),
    )
}

#[test]
fn broken_nodes_are_counted_by_reason_and_named_in_order() {
    let needs = required_handler();
    let c = plain();
    let Ok(Feasibility::Fits {
        broken: Some(broken),
    }) = Pass::new(&c, &needs, needs.stop()).scan(HANDLERS.as_bytes())
    else {
        panic!("expected a fit with broken nodes")
    };
    assert_eq!(
        broken.to_string(),
        "2 of 3 kata nodes that can take this pod cannot start it: 1 node(s) do not report runtime \
         handler \"kata-qemu\", 1 node(s) report no runtime handlers (k3s, old-kubelet)"
    );
    // With a gate the pass reads the whole list; without, it stops at the
    // first fit, as before.
    let truncated = &HANDLERS[..HANDLERS.find("{\"metadata\":{\"name\":\"k3s\"").unwrap()];
    assert!(
        Pass::new(&c, &needs, needs.stop())
            .scan(truncated.as_bytes())
            .is_err(),
        "reads the whole list"
    );
    let off = KubeletNeeds::default();
    assert_eq!(
        Pass::new(&c, &off, off.stop()).scan(truncated.as_bytes()),
        Ok(Feasibility::Fits { broken: None })
    );
}

#[test]
fn nodes_that_fail_the_gate_count_in_the_diagnosis_until_one_fits() {
    let needs = required_handler();
    let list = r#"{"kind":"NodeList","items":[
        {"metadata":{"name":"k3s"},"status":{"runtimeHandlers":[{"name":"runc"}]}},
        {"metadata":{"name":"cordoned"},"spec":{"unschedulable":true}}]}"#;
    let Ok(Feasibility::NoneFits { diagnosis, met: 1 }) =
        Pass::new(&plain(), &needs, needs.stop()).scan(list.as_bytes())
    else {
        panic!("expected no fit")
    };
    assert_eq!(
        diagnosis.to_string(),
        "0/2 kata nodes can run this pod: 1 node(s) do not report runtime handler \"kata-qemu\", \
         1 node(s) were unschedulable"
    );
}

/// A gate that answers from a script, for the verdicts a probe gives.
struct Scripted(Vec<Verdict>);

impl<'n> Gate<'n> for Scripted {
    fn admit(&mut self, _: &Node<'n>) -> Verdict {
        self.0.remove(0)
    }
}

#[test]
fn a_gate_may_skip_a_candidate_or_give_up() {
    let list = r#"{"kind":"NodeList","items":[
        {"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"}}]}"#;
    let c = plain();
    let skipped = Pass::new(
        &c,
        Scripted(vec![Verdict::Skip, Verdict::Skip, Verdict::Starts]),
        Stop::FirstFit,
    )
    .scan(list.as_bytes());
    assert_eq!(skipped, Ok(Feasibility::Fits { broken: None }));
    let gave_up = Pass::new(
        &c,
        Scripted(vec![Verdict::Skip, Verdict::GiveUp]),
        Stop::FirstFit,
    )
    .scan(list.as_bytes());
    assert_eq!(gave_up, Ok(Feasibility::GaveUp));
    // Every candidate met, none verified: the caller knows some were met.
    let Ok(Feasibility::NoneFits { met: 3, .. }) =
        Pass::new(&c, Scripted(vec![Verdict::Skip; 3]), Stop::FirstFit).scan(list.as_bytes())
    else {
        panic!("expected no fit with 3 candidates met")
    };
    // A probe's broken nodes are those it met: not the whole list.
    let lacking = Verdict::Lacks(Lack::NothingReported);
    let Ok(Feasibility::Fits {
        broken: Some(broken),
    }) = Pass::new(&c, Scripted(vec![lacking, Verdict::Starts]), Stop::FirstFit)
        .scan(list.as_bytes())
    else {
        panic!("expected a fit with a broken node")
    };
    assert!(!broken.whole);
    assert_eq!(
        broken.to_string(),
        "at least 1 kata node(s) that can take this pod report no runtime handlers (a)"
    );
}

#[test]
fn an_unreadable_node_breaks_the_answer() {
    let list = r#"{"kind":"NodeList","items":[
        {"metadata":{"name":"a"},"status":{"allocatable":{"cpu":"lots"}}}]}"#;
    let fit = crate::scheduling::node_resources_fit::ResourceFit::new(
        &crate::resources::ResourceList::from([(
            "cpu".to_string(),
            crate::quantity::Quantity::parse("1").unwrap(),
        )]),
        &Default::default(),
    );
    let c = plain().with_resources(fit);
    let answer = Pass::new(&c, Open, Stop::FirstFit).scan(list.as_bytes());
    assert!(
        matches!(&answer, Err(why) if why.starts_with("the node list from the cluster is not a valid NodeList: node \"a\"")),
        "{answer:?}"
    );
}
