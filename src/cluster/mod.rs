//! What the policy asks the cluster, behind a trait so that the
//! decision stays pure and testable without a host.
//!
//! Answers are raw JSON bytes: parsing belongs to the decision, where a
//! malformed answer is one more documented outcome.
//!
//! - `api.rs`: the trait and the words it speaks (queries, answers, errors);
//! - `host.rs`: the trait over Kubewarden's host capabilities;
//! - `memo.rs`: one admission's answers, each asked once;
//! - `fake.rs`: a cluster in memory, for tests (feature `testing`).

mod api;
#[cfg(any(test, feature = "testing"))]
pub mod fake;
mod host;
mod memo;

pub use api::{
    Access, Cluster, LookupError, LookupErrorKind, NAMESPACE_FIELD_MASKS, NAMESPACES,
    NODE_FIELD_MASKS, NODE_HANDLER_FEATURE_MASKS, NODE_HANDLER_NAME_MASKS, NODES, NodeList,
    NodeMasks, POD_FIELD_MASKS, POD_FIELD_SELECTOR, PODS, PV_FIELD_MASKS, PVC_FIELD_MASKS,
    REPLAY_MISS, Resource, Subject, VolumeKind,
};
pub use host::{
    DISABLE_CACHE, HostCluster, access_request, can_i_request, config_map_request,
    kata_nodes_request, namespaces_request, node_request, object_request, objects_request,
    parse_access, pods_request, runtime_class_request,
};
pub(crate) use memo::Memo;

#[cfg(any(test, feature = "testing"))]
pub use fake::{Call, FakeCluster};

#[cfg(test)]
mod tests;
