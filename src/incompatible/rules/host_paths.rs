//! The rules on hostPath volumes: host sockets, host devices and mount
//! propagation, each per container that mounts the volume.

use std::borrow::Cow;

use super::shared::{Lookups, step};
use crate::incompatible::facts::{Container, HostPath, Volume};
use crate::incompatible::paths::is_within;
use crate::printable::quoted_if_unsafe;

/// Each hostPath volume with the containers that mount it; a volume no
/// container mounts is reported once, without a container.
fn host_path_uses<'a>(
    lookups: &Lookups<'a>,
    mut visit: impl FnMut(&'a Volume, &'a HostPath, Option<&'a Container>),
) {
    let pod = lookups.pod;
    if !pod.volumes.iter().any(|v| v.host_path.is_some()) {
        return;
    }
    let mounts = lookups.mounts();
    for volume in &pod.volumes {
        step();
        let Some(host_path) = &volume.host_path else {
            continue;
        };
        match mounts.users(&volume.name) {
            [] => visit(volume, host_path, None),
            users => {
                for c in users {
                    step();
                    visit(volume, host_path, Some(c));
                }
            }
        }
    }
}

/// `container "x" mounts <what> (hostPath volume "v")`, or for a volume no
/// container mounts, `hostPath volume "v" (mounted by no container) is <what>`.
fn describe(container: Option<&Container>, volume: &Volume, what: &str) -> String {
    match container {
        Some(c) => format!(
            "{} mounts {what} (hostPath volume {:?})",
            c.label(),
            volume.name
        ),
        None => format!(
            "hostPath volume {:?} (mounted by no container) is {what}",
            volume.name
        ),
    }
}

pub(in crate::incompatible) fn host_sockets(
    lookups: &Lookups,
    socket_paths: &[Cow<'static, str>],
    add: &mut impl FnMut(String),
) {
    host_path_uses(lookups, |volume, host_path, container| {
        let path = &host_path.path;
        let shown = quoted_if_unsafe(path);
        let what = if host_path.kind == "Socket" || is_socket_name(path) {
            format!("host socket {shown}")
        } else if let Some(dir) = socket_paths.iter().find(|dir| is_within(path, dir)) {
            if path == dir.as_ref() {
                format!("host socket path {shown} (in hostSocketPaths)")
            } else {
                format!("host socket path {shown} (under {dir})")
            }
        } else {
            return;
        };
        add(format!(
            "{}, which a Kata VM cannot reach",
            describe(container, volume, &what)
        ));
    });
}

fn is_socket_name(path: &str) -> bool {
    let last = path.rsplit('/').next().unwrap_or_default();
    last.ends_with(".sock") || last.ends_with(".socket")
}

pub(in crate::incompatible) fn host_devices(lookups: &Lookups, add: &mut impl FnMut(String)) {
    host_path_uses(lookups, |volume, host_path, container| {
        let path = &host_path.path;
        // Block devices are hot-plugged into the guest and work.
        let device = host_path.kind == "CharDevice"
            || (host_path.kind != "BlockDevice" && is_within(path, "/dev"));
        if device {
            let what = format!("host device path {}", quoted_if_unsafe(path));
            add(format!(
                "{}, but Kata gives it the VM's device node, not the host's",
                describe(container, volume, &what)
            ));
        }
    });
}

pub(in crate::incompatible) fn mount_propagation(lookups: &Lookups, add: &mut impl FnMut(String)) {
    let pod = lookups.pod;
    // Only hostPath mounts: propagation means nothing for other volumes, and
    // Pod Security Admission (baseline) already forbids hostPath, so no
    // tenant can leave Kata by adding HostToContainer to an emptyDir.
    for c in &pod.containers {
        for m in &c.mounts {
            step();
            let Some(mode) = m.propagation.as_deref() else {
                continue;
            };
            if !matches!(mode, "HostToContainer" | "Bidirectional") {
                continue;
            }
            let host_path =
                (lookups.volumes().get(m.volume.as_str())).and_then(|v| v.host_path.as_ref());
            if let Some(host_path) = host_path {
                add(format!(
                    "{} mounts hostPath volume {:?} ({}) with mountPropagation {mode}, which does not cross the Kata VM boundary",
                    c.label(),
                    m.volume,
                    quoted_if_unsafe(&host_path.path)
                ));
            }
        }
    }
}
