//! The kubelet's gates on the pod's runtime handler. The scheduler
//! never reads `status.runtimeHandlers`, so a node that fails here is one it
//! may still pick: the pod is then placed and never starts.
//!
//! - The sandbox needs the RuntimeClass's `handler` in the node's CRI,
//!   whatever the node's labels say (`FailedCreatePodSandBox … no runtime
//!   for "kata-qemu" is configured`). The kubelet's `RuntimeHandlers`
//!   node-status setter publishes what the CRI `Status` call reports
//!   (Kubernetes ≥ 1.30; containerd 2.x, CRI-O).
//! - `hostUsers: false`: kubelet `HandlerSupportsUserNamespaces(handler)` is
//!   false when the node reports no handlers, does not list this one, or
//!   lists it without `features.userNamespaces: true`.
//! - A `recursiveReadOnly: Enabled` mount: kubelet
//!   `runtimeHandlerSupportsRecursiveReadOnlyMounts` asks the same of
//!   `features.recursiveReadOnlyMounts`, or `makeMounts` fails.

use std::sync::Arc;

use crate::node::{HandlerFeatures, HandlerReport, Node};
use crate::scheduling::Lack;

/// What the pod needs of the node's runtime, compiled once per pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandlerNeeds {
    /// The RuntimeClass's `handler` (not its name: class `kata` may point to
    /// handler `kata-qemu`).
    pub handler: Arc<str>,
    /// `runtimeHandlerCheck: required`: a node that reports no handlers
    /// does not count.
    pub required: bool,
    /// The handler features the pod's start depends on.
    pub features: HandlerFeatures,
}

impl HandlerNeeds {
    /// Whether the pod's start depends on a handler feature, which only the
    /// whole entries (not their names) tell.
    pub fn needs_features(&self) -> bool {
        !self.features.is_empty()
    }

    /// `Ok` when the node's runtime can start the pod, as far as the node
    /// reports it.
    pub fn passes(&self, node: &Node) -> Result<(), Lack> {
        match node.runtime_handlers.report(&self.handler) {
            // An older kubelet or CRI says nothing: the labels decide,
            // unless a handler or a feature must be seen.
            HandlerReport::Nothing if self.required || self.needs_features() => {
                Err(Lack::NothingReported)
            }
            HandlerReport::Nothing => Ok(()),
            HandlerReport::NotListed => Err(Lack::NotReported(self.handler.clone())),
            HandlerReport::Listed(reported) => match self.features.first_missing(reported) {
                Some(feature) => Err(Lack::HandlerFeature(self.handler.clone(), feature)),
                None => Ok(()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::HandlerFeature;
    use crate::node::{KeyFilter, parse_node};
    use serde_json::{Value, json};

    fn node(handlers: Option<Value>) -> Node<'static> {
        let mut n = json!({"metadata": {"name": "n"}, "status": {}});
        if let Some(h) = handlers {
            n["status"]["runtimeHandlers"] = h;
        }
        let text: &'static str = Box::leak(n.to_string().into_boxed_str());
        parse_node(text.as_bytes(), KeyFilter::All).unwrap()
    }

    fn needs(required: bool, userns: bool, rro: bool) -> HandlerNeeds {
        HandlerNeeds {
            handler: "kata-qemu".into(),
            required,
            features: HandlerFeatures::default()
                .with(HandlerFeature::UserNamespaces, userns)
                .with(HandlerFeature::RecursiveReadOnlyMounts, rro),
        }
    }

    /// kata-deploy 4.x on a containerd 2.x node: one entry per shim, plus
    /// the default handler "" and runc.
    fn kata_deploy_node(userns: bool) -> Node<'static> {
        node(Some(json!([
            {"name": "", "features": {"userNamespaces": true, "recursiveReadOnlyMounts": true}},
            {"name": "kata-clh", "features": {"userNamespaces": false, "recursiveReadOnlyMounts": true}},
            {"name": "kata-qemu", "features": {"userNamespaces": userns, "recursiveReadOnlyMounts": true}},
            {"name": "kata-qemu-runtime-rs", "features": {}},
            {"name": "runc", "features": {"userNamespaces": true, "recursiveReadOnlyMounts": true}}
        ])))
    }

    #[test]
    fn a_labelled_node_whose_runtime_never_loaded_kata_does_not_count() {
        // The k3s story: the label says Kata, containerd reports runc only.
        let k3s = node(Some(json!([{"name": "runc"}, {"name": ""}])));
        assert_eq!(
            needs(false, false, false).passes(&k3s),
            Err(Lack::NotReported("kata-qemu".into()))
        );
        assert_eq!(
            needs(false, false, false).passes(&kata_deploy_node(false)),
            Ok(())
        );
    }

    #[test]
    fn the_handler_name_is_compared_exactly() {
        for near in ["kata", "kata-qemu-runtime-rs", "Kata-qemu", "kata-qemu "] {
            let n = node(Some(json!([{ "name": near }])));
            assert_eq!(
                needs(false, false, false).passes(&n),
                Err(Lack::NotReported("kata-qemu".into())),
                "{near:?} is not kata-qemu"
            );
        }
        let text =
            r#"{"metadata":{"name":"n"},"status":{"runtimeHandlers":[{"name":"kata\u002dqemu"}]}}"#;
        let escaped = parse_node(text.as_bytes(), KeyFilter::All).unwrap();
        assert_eq!(
            needs(false, false, false).passes(&escaped),
            Ok(()),
            "an escaped name is decoded"
        );
    }

    #[test]
    fn a_node_that_reports_nothing_counts_by_its_labels_unless_required() {
        for silent in [None, Some(json!(null)), Some(json!([]))] {
            let n = node(silent.clone());
            assert_eq!(needs(false, false, false).passes(&n), Ok(()), "{silent:?}");
            assert_eq!(
                needs(true, false, false).passes(&n),
                Err(Lack::NothingReported),
                "{silent:?}"
            );
        }
    }

    #[test]
    fn features_need_the_handler_to_report_them() {
        assert_eq!(
            needs(false, true, false).passes(&kata_deploy_node(true)),
            Ok(())
        );
        assert_eq!(
            needs(false, true, false).passes(&kata_deploy_node(false)),
            Err(Lack::HandlerFeature(
                "kata-qemu".into(),
                HandlerFeature::UserNamespaces
            ))
        );
        // Another handler's features do not count (runc has them all).
        let qemu_rs_only = node(Some(json!([
            {"name": "runc", "features": {"userNamespaces": true, "recursiveReadOnlyMounts": true}},
            {"name": "kata-qemu", "features": {}}
        ])));
        assert_eq!(
            needs(false, false, true).passes(&qemu_rs_only),
            Err(Lack::HandlerFeature(
                "kata-qemu".into(),
                HandlerFeature::RecursiveReadOnlyMounts
            ))
        );
        // The kubelet says no when the node reports nothing, even in auto.
        assert_eq!(
            needs(false, true, false).passes(&node(None)),
            Err(Lack::NothingReported)
        );
        assert_eq!(
            needs(false, false, true).passes(&node(Some(json!([])))),
            Err(Lack::NothingReported)
        );
    }

    #[test]
    fn hostile_shapes_are_ignored_never_trusted() {
        // Not a list: reports nothing.
        for shape in [
            json!("kata-qemu"),
            json!({"name": "kata-qemu"}),
            json!(7),
            json!(true),
        ] {
            let n = node(Some(shape.clone()));
            assert_eq!(needs(false, false, false).passes(&n), Ok(()), "{shape}");
            assert_eq!(
                needs(true, false, false).passes(&n),
                Err(Lack::NothingReported)
            );
        }
        // Malformed entries are ignored; the list still reports handlers.
        let junk = node(Some(
            json!([1, null, "kata-qemu", {"name": 3}, {"features": {}}, []]),
        ));
        assert_eq!(
            needs(false, false, false).passes(&junk),
            Err(Lack::NotReported("kata-qemu".into()))
        );
        let after_junk = node(Some(json!([{"name": null}, {"name": "kata-qemu"}])));
        assert_eq!(needs(false, false, false).passes(&after_junk), Ok(()));
        // Features that are not booleans are not supported.
        for odd in [
            json!("true"),
            json!(1),
            json!(null),
            json!({"v": true}),
            json!([true]),
        ] {
            let n = node(Some(json!([{"name": "kata-qemu",
                "features": {"userNamespaces": odd, "recursiveReadOnlyMounts": odd}}])));
            assert_eq!(
                needs(false, true, false).passes(&n),
                Err(Lack::HandlerFeature(
                    "kata-qemu".into(),
                    HandlerFeature::UserNamespaces
                )),
                "{odd}"
            );
            assert_eq!(needs(false, false, false).passes(&n), Ok(()));
        }
        let features_not_an_object = node(Some(json!([{"name": "kata-qemu", "features": [true]}])));
        assert_eq!(
            needs(false, false, true).passes(&features_not_an_object),
            Err(Lack::HandlerFeature(
                "kata-qemu".into(),
                HandlerFeature::RecursiveReadOnlyMounts
            ))
        );
    }

    #[test]
    fn reasons_name_the_handler_and_the_feature() {
        assert_eq!(
            Lack::NotReported("kata-qemu".into()).to_string(),
            "do not report runtime handler \"kata-qemu\""
        );
        assert_eq!(
            Lack::NothingReported.to_string(),
            "report no runtime handlers"
        );
        assert_eq!(
            Lack::HandlerFeature("kata-qemu".into(), HandlerFeature::UserNamespaces).to_string(),
            "report runtime handler \"kata-qemu\" without features.userNamespaces (the pod sets hostUsers: false)"
        );
        assert_eq!(
            Lack::HandlerFeature("kata-clh".into(), HandlerFeature::RecursiveReadOnlyMounts)
                .to_string(),
            "report runtime handler \"kata-clh\" without features.recursiveReadOnlyMounts \
             (the pod sets recursiveReadOnly: Enabled)"
        );
    }
}
