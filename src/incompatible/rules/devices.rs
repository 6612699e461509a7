//! The rules on devices a pod asks for: device plugins' resources
//! (`hostDeviceResources`) and DRA claims and DeviceClasses.

use super::shared::{Grouped, labels, step};
use crate::incompatible::facts::RuntimeFacts;
use crate::resources::ResourceNames;

/// The implicit extended resource of every DeviceClass:
/// `deviceclass.resource.kubernetes.io/<class>`.
pub const DEVICE_CLASS_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

pub(in crate::incompatible) fn device_resources(
    pod: &RuntimeFacts,
    devices: &ResourceNames,
    add: &mut impl FnMut(String),
) {
    for c in &pod.containers {
        let listed = |r: &&String| devices.contains(r);
        for name in c.resources.iter().filter(listed) {
            add(format!(
                "{} asks for {name}, a device plugin's host device that Kata does not pass into its VM (Kata passes VFIO devices)",
                c.label()
            ));
        }
    }
}

pub(in crate::incompatible) fn dynamic_resources(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // Every claim counts, used by a container or not: the scheduler places
    // the pod only where its devices are, and the kubelet prepares them.
    let mut claimed = Grouped::default();
    if !pod.resource_claims.is_empty() {
        for c in &pod.containers {
            for name in &c.claims {
                step();
                claimed.add(name, c);
            }
        }
    }
    for claim in &pod.resource_claims {
        step();
        let source = match &claim.source {
            Some((kind, name)) => format!(" ({kind} {name:?})"),
            None => String::new(),
        };
        let users: Vec<String> = (claimed.users(&claim.name).iter())
            .map(|c| c.label())
            .collect();
        let used_by = match users.is_empty() {
            true => "used by no container".to_string(),
            false => format!("used by {}", users.join(", ")),
        };
        add(format!(
            "claim {:?}{source}, {used_by}, asks for DRA-allocated devices, which Kata does not pass into its VM",
            claim.name
        ));
    }
    // KEP-5004 (beta, on by default in 1.36): every DeviceClass also answers
    // to this extended resource, which the scheduler allocates through DRA,
    // never from the node's allocatable.
    let mut classes = Grouped::default();
    for c in &pod.containers {
        for name in &c.resources {
            step();
            if let Some(class) = name.strip_prefix(DEVICE_CLASS_RESOURCE_PREFIX) {
                classes.add(class, c);
            }
        }
    }
    for (class, users) in classes.entries {
        add(format!(
            "DeviceClass {class:?} (extended resource {DEVICE_CLASS_RESOURCE_PREFIX}{class}), asked for by {}, \
             is served by DRA-allocated devices, which Kata does not pass into its VM",
            labels(&users)
        ));
    }
}
