//! The pod's volumes, as the two checks that read them see them: the
//! claims the volume check resolves, and the hostPath, memory-backed
//! emptyDir and image volumes the runtime-compatibility check judges.

use super::raw::RawVolume;
use crate::incompatible;
use crate::volumes::{ClaimSource, PodVolume};

/// The volumes that use PersistentVolumeClaims, in spec order (a generic
/// ephemeral volume without a claim template uses none).
pub(super) fn claims(volumes: Option<Vec<RawVolume>>) -> Vec<PodVolume> {
    volumes
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let source = match (v.persistent_volume_claim, v.ephemeral) {
                (Some(pvc), _) => ClaimSource::Claim(pvc.claim_name),
                (None, Some(e)) => ClaimSource::Ephemeral(Box::new(e.volume_claim_template?)),
                (None, None) => return None,
            };
            Some(PodVolume {
                name: v.name,
                source,
            })
        })
        .collect()
}

/// The volumes the runtime-compatibility check judges, in spec order.
pub(super) fn runtime_volumes(volumes: Option<&[RawVolume]>) -> Vec<incompatible::Volume> {
    (volumes.into_iter().flatten())
        .filter(|v| v.host_path.is_some() || v.empty_dir.is_some() || v.image.is_some())
        .map(|v| incompatible::Volume {
            name: v.name.clone(),
            host_path: v.host_path.as_ref().map(|h| incompatible::HostPath {
                path: incompatible::clean(h.path.as_deref().unwrap_or_default()),
                kind: h.kind.clone().unwrap_or_default(),
            }),
            memory_size_limit: (v.empty_dir.as_ref())
                .filter(|e| e.medium.as_deref() == Some("Memory"))
                .and_then(|e| e.size_limit.as_ref())
                .map(|q| q.get().trim_matches('"').to_string())
                .filter(|q| q != "null"),
            image: (v.image.as_ref()).map(|i| i.reference.clone().unwrap_or_default()),
        })
        .collect()
}
