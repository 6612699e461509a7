//! What Kata Containers cannot run, even on a Kata node: a pure check over
//! the pod's own facts, one rule per feature, findings as data.
//!
//! It runs before any host call. A pod that uses an enabled feature is left
//! on the default runtime: scheduling it onto a Kata node would give a pod
//! that never starts, or one that starts broken. The sources of every rule
//! are in docs/kata-compatibility.md.

mod facts;
mod features;
mod paths;
mod rules;

use std::borrow::Cow;
use std::fmt;

pub use facts::{Container, HostPath, Mount, ResourceClaim, RuntimeFacts, Security, Volume};
pub use features::{FeatureSet, PodFeature};
pub use paths::{clean, is_within};

use crate::resources::ResourceNames;

/// What the check is told by the settings.
#[derive(Debug, Clone, Copy)]
pub struct Rules<'a> {
    pub features: FeatureSet,
    /// Cleaned absolute paths (`hostSocketPaths`).
    pub socket_paths: &'a [Cow<'static, str>],
    /// `hostDeviceResources` (names or `group/*`).
    pub device_resources: &'a ResourceNames,
}

/// One use of a feature that Kata cannot provide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub feature: PodFeature,
    /// What the pod does and why Kata cannot run it, without the setting.
    pub detail: String,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (skipPodsUsing: {})",
            self.detail,
            self.feature.name()
        )
    }
}

/// Every use of an enabled feature, in feature order, then pod order.
pub fn check(pod: &RuntimeFacts, settings: &Rules) -> Vec<Finding> {
    let mut findings = Vec::new();
    let lookups = rules::Lookups::new(pod);
    for feature in settings.features.iter() {
        let mut add = |detail: String| findings.push(Finding { feature, detail });
        match feature {
            PodFeature::HostNamespaces => rules::host_namespaces(pod, &mut add),
            PodFeature::UserNamespaces => rules::user_namespaces(pod, &mut add),
            PodFeature::Windows => rules::windows(pod, &mut add),
            PodFeature::Privileged => rules::privileged(pod, &mut add),
            PodFeature::HostSockets => {
                rules::host_sockets(&lookups, settings.socket_paths, &mut add)
            }
            PodFeature::HostDevices => rules::host_devices(&lookups, &mut add),
            PodFeature::MountPropagation => rules::mount_propagation(&lookups, &mut add),
            PodFeature::DeviceResources => {
                rules::device_resources(pod, settings.device_resources, &mut add)
            }
            PodFeature::DynamicResources => rules::dynamic_resources(pod, &mut add),
            PodFeature::Seccomp => rules::seccomp(pod, &mut add),
            PodFeature::AppArmor => rules::app_armor(pod, &mut add),
            PodFeature::SeLinux => rules::se_linux(pod, &mut add),
            PodFeature::SubPath => rules::sub_path(pod, &mut add),
            PodFeature::MemoryEmptyDirLimit => rules::memory_empty_dir_limit(pod, &mut add),
            PodFeature::ImageVolumes => rules::image_volumes(&lookups, &mut add),
        }
    }
    findings
}

#[cfg(test)]
mod tests;
