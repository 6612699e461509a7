//! A node's `status`: `allocatable`, kept raw until a filter reads it, the
//! runtime handlers' text, and the CRI's `features`.

use super::handlers::RuntimeHandlers;
use crate::json_scan::Cursor;

/// `status.allocatable`, kept as the raw text of its JSON object (already
/// checked as JSON) and read only when a filter reaches the node: most nodes
/// of a long list fail an earlier filter, and reading the entries was most
/// of what this map cost (BENCHMARKS.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allocatable<'a> {
    raw: Option<&'a [u8]>,
}

impl<'a> Allocatable<'a> {
    /// Whether the node reports `status.allocatable` at all: a node that
    /// does not is not judged on resources (nothing is known about it).
    pub fn listed(&self) -> bool {
        self.raw.is_some()
    }

    /// The text of the `allocatable` object, if the node lists one.
    pub fn raw(&self) -> Option<&'a [u8]> {
        self.raw
    }

    /// Calls `entry` with the name (as bytes) and the quantity text of each
    /// resource `wanted` accepts, in document order; the other values are
    /// skipped unread. Values read must be strings, as the API server
    /// writes them.
    pub fn for_each(
        &self,
        wanted: impl Fn(&[u8]) -> bool,
        mut entry: impl FnMut(&[u8], &str) -> Result<(), String>,
    ) -> Result<(), String> {
        let Some(raw) = self.raw else {
            return Ok(());
        };
        Cursor::new(raw).object(|c, key| {
            if wanted(key.as_bytes()) {
                entry(key.as_bytes(), &c.string()?)
            } else {
                c.skip_value()
            }
        })
    }
}

/// `status.features`: what the node's container runtime (its CRI, not one
/// handler) supports, as the kubelet reports it. A field that is absent,
/// null or not `true` is not supported, as in the kubelet; a value that is
/// not an object reports nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CriFeatures {
    /// `supplementalGroupsPolicy: true`: the CRI honours `Strict`.
    pub supplemental_groups_policy: bool,
}

/// A field of `status.features` that a pod's admission depends on, named
/// as the kubelet's refusal names what the pod asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CriFeature {
    SupplementalGroupsPolicy,
}

impl std::fmt::Display for CriFeature {
    /// What the pod asks for, as the kubelet's refusal names it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CriFeature::SupplementalGroupsPolicy => f.write_str("supplementalGroupsPolicy: Strict"),
        }
    }
}

/// Reads `status` into a node's three status fields, keeping the text of
/// `allocatable` and `runtimeHandlers`, and reading `features`. A repeated
/// key overrides the earlier one, as in serde_json.
pub(super) fn read_status<'de>(
    c: &mut Cursor<'de>,
    allocatable: &mut Allocatable<'de>,
    runtime_handlers: &mut RuntimeHandlers<'de>,
    features: &mut CriFeatures,
) -> Result<(), String> {
    c.object(|c, key| {
        match key.as_bytes() {
            b"allocatable" if !c.eat_null()? => allocatable.raw = Some(c.raw_object()?),
            b"allocatable" => allocatable.raw = None,
            // Any JSON value: a list that is not one reports nothing.
            b"runtimeHandlers" => {
                *runtime_handlers = RuntimeHandlers::from_raw(Some(c.raw_value()?))
            }
            b"features" => *features = read_features(c)?,
            _ => c.skip_value()?,
        }
        Ok(())
    })
}

/// Reads `status.features`; any value that is not an object reports nothing.
fn read_features(c: &mut Cursor<'_>) -> Result<CriFeatures, String> {
    let mut features = CriFeatures::default();
    if !c.peek_is(b'{') {
        c.skip_value()?;
        return Ok(features);
    }
    c.object(|c, key| match key.as_bytes() {
        b"supplementalGroupsPolicy" => {
            let on = c.peek_is(b't') && c.boolean()?;
            if !on {
                c.skip_value()?;
            }
            features.supplemental_groups_policy = on;
            Ok(())
        }
        _ => c.skip_value(),
    })?;
    Ok(features)
}
