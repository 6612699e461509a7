//! Feasibility of one pod on kata nodes, as kube-scheduler (or, for pods that
//! name their node, the kubelet's admission) decides it. Pure: no I/O, no
//! allocation per node on the success path.
//!
//! - `reason.rs`: the words of a verdict on one node;
//! - `constraints.rs`: the pod's constraints, matched against one node by
//!   the filters, one file each (`node_affinity.rs`, `taint_toleration.rs`,
//!   …), in the scheduler's order;
//!   (`inter_pod_affinity.rs` judges the pods the cluster already runs,
//!   counted by `pod_affinity`);
//! - `pass.rs`: the one pass over candidate nodes, with the kubelet's gate;
//! - `diagnosis.rs`: why no node can run the pod, as the scheduler says it.

mod constraints;
mod diagnosis;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_name;
pub mod node_resources_fit;
pub mod node_unschedulable;
mod pass;
pub mod pod_topology_spread;
mod reason;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_zone;

#[cfg(test)]
pub(crate) mod test_support;

pub use constraints::{Constraints, MAX_PINNED};
pub use diagnosis::Diagnosis;
pub use pass::{Feasibility, Gate, Open, Pass, Stop, Verdict};
pub use reason::{Broken, Lack, Reason, Unfit};
