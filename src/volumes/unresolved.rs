//! Why the volume check gives no `VolumeCheck`: the one answer that both
//! the walk over the claims (`mod.rs`) and the host calls (`reader`) give.
//! Apart from `mod.rs` so that `reader` takes it from beside itself.

use crate::cluster::LookupError;

/// Why the volume check gives no
/// [`VolumeCheck`](crate::scheduling::volume_binding::VolumeCheck).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unresolved {
    /// No node can ever run the pod, with or without Kata (upstream's words).
    Pod(String),
    /// A read failed or was refused: the `lookupFailure` outcome.
    Lookup { what: String, error: LookupError },
    /// policy-server may not list a kind (`can_i` said no).
    Denied {
        resource: String,
        verbs: Vec<&'static str>,
    },
    /// An answer that does not parse.
    Invalid(String),
}
