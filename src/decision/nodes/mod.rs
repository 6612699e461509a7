//! Where the candidate nodes come from, each path a peer with one entry,
//! `feasible(&NodeCtx, …)`, feeding the one filter pass
//! (`scheduling::Pass`):
//! - `listed.rs`: the kata NodeList;
//! - `pinned.rs`: the few nodes a pod names, read by name;
//! - `probed.rs`: the list without handlers, its candidates read by name
//!   with them;
//! - `shaped.rs`: the node shapes a controller wrote, when they answer as
//!   the list would.

mod ctx;
pub mod listed;
pub mod pinned;
pub mod probed;
pub mod shaped;

pub use ctx::{Feasible, NodeCtx};
