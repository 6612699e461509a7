//! One rule per feature: each adds a finding's detail per use. The rules
//! on the pod as a whole are here; those on hostPath volumes, on devices
//! and on security contexts have their own files, and what they all share
//! (the lookups by name, the step counter) is in `shared`.

mod devices;
mod host_paths;
mod security;
mod shared;

use super::facts::RuntimeFacts;
use crate::printable::quoted_if_unsafe;
use shared::{first_by_name, labels, step};

pub(super) use devices::{device_resources, dynamic_resources};
pub(super) use host_paths::{host_devices, host_sockets, mount_propagation};
pub(super) use security::{app_armor, privileged, se_linux, seccomp};
pub(super) use shared::Lookups;

#[cfg(test)]
pub(super) use devices::DEVICE_CLASS_RESOURCE_PREFIX;
#[cfg(test)]
pub(super) use shared::work;

pub(super) fn host_namespaces(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    if !pod.host_namespaces.is_empty() {
        add(format!(
            "the pod uses {}, which Kata Containers cannot provide",
            pod.host_namespaces.join(", ")
        ));
    }
}

pub(super) fn user_namespaces(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    if pod.host_users == Some(false) {
        add(
            "the pod sets hostUsers: false (a user namespace), which the Kata runtime handler \
             does not support: the kubelet would not start it"
                .into(),
        );
    }
}

pub(super) fn windows(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    if pod.os_name.as_deref() == Some("windows") {
        add("the pod's spec.os.name is windows, and Kata runs Linux guests".into());
    }
}

pub(super) fn image_volumes(lookups: &Lookups, add: &mut impl FnMut(String)) {
    let pod = lookups.pod;
    // Only mounted volumes count: an image volume no container mounts is
    // pulled but never reaches the VM. Volumes by name, once per pod.
    let images = first_by_name(
        (pod.volumes.iter()).filter_map(|v| Some((v.name.as_str(), v.image.as_deref()?))),
    );
    if images.is_empty() {
        return;
    }
    for (name, users) in &lookups.mounts().entries {
        step();
        let image = match images.get(name) {
            None => continue,
            Some(reference) if !reference.is_empty() => format!(" (image {reference:?})"),
            Some(_) => String::new(),
        };
        add(format!(
            "image volume {name:?}{image}, mounted by {}, is an OCI image that Kata cannot mount inside its VM",
            labels(users)
        ));
    }
}

pub(super) fn sub_path(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    for c in &pod.containers {
        for m in &c.mounts {
            if let Some(field) = m.sub_path {
                add(format!(
                    "{} mounts volume {:?} with {field}, which is unreliable under Kata",
                    c.label(),
                    m.volume
                ));
            }
        }
    }
}

pub(super) fn memory_empty_dir_limit(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    for v in &pod.volumes {
        if let Some(limit) = &v.memory_size_limit {
            add(format!(
                "emptyDir volume {:?} has medium Memory with sizeLimit {}, which Kata does not enforce",
                v.name,
                quoted_if_unsafe(limit)
            ));
        }
    }
}
