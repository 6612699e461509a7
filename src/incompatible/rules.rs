//! One rule per feature: each adds a finding's detail per use.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::collections::BTreeMap;

use super::facts::*;
use super::paths::is_within;
use crate::printable::quoted_if_unsafe;
use crate::resources::ResourceNames;

/// Counts the rules' steps in tests, so that a test can check that the
/// work grows linearly with the pod (never wall time).
#[cfg(test)]
pub(super) mod work {
    use std::cell::Cell;

    thread_local!(static STEPS: Cell<usize> = const { Cell::new(0) });

    pub fn step() {
        STEPS.with(|s| s.set(s.get() + 1));
    }

    /// The steps `f` takes.
    pub fn count(f: impl FnOnce()) -> usize {
        let before = STEPS.with(Cell::get);
        f();
        STEPS.with(Cell::get) - before
    }
}

#[cfg(not(test))]
mod work {
    #[inline(always)]
    pub fn step() {}
}

use work::step;

/// What several rules look up by name, indexed once per pod, on first use:
/// the volumes' users (mounts by volume) and the volumes themselves.
pub(super) struct Lookups<'a> {
    pub pod: &'a RuntimeFacts,
    mounts: OnceCell<Grouped<'a>>,
    volumes: OnceCell<BTreeMap<&'a str, &'a Volume>>,
}

impl<'a> Lookups<'a> {
    pub fn new(pod: &'a RuntimeFacts) -> Self {
        Lookups {
            pod,
            mounts: OnceCell::new(),
            volumes: OnceCell::new(),
        }
    }

    /// Every mounted volume name with the containers that mount it.
    fn mounts(&self) -> &Grouped<'a> {
        self.mounts.get_or_init(|| Grouped::mounts(self.pod))
    }

    /// The first volume of each name.
    fn volumes(&self) -> &BTreeMap<&'a str, &'a Volume> {
        (self.volumes)
            .get_or_init(|| first_by_name(self.pod.volumes.iter().map(|v| (v.name.as_str(), v))))
    }
}

/// The first entry of each name: what a lookup by name finds, as a list
/// scanned from the start would (the API server refuses duplicate names,
/// but the webhook sees the pod first).
fn first_by_name<'a, T>(items: impl IntoIterator<Item = (&'a str, T)>) -> BTreeMap<&'a str, T> {
    let mut index = BTreeMap::new();
    for (name, item) in items {
        step();
        index.entry(name).or_insert(item);
    }
    index
}

impl Container {
    /// `container "x"` or `init container "x"`, for messages.
    fn label(&self) -> String {
        let kind = if self.init {
            "init container"
        } else {
            "container"
        };
        format!("{kind} {:?}", self.name)
    }
}

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

pub(super) fn privileged(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    for c in pod.containers.iter().filter(|c| c.security.privileged) {
        add(format!(
            "{} is privileged, and a privileged container under Kata gets the VM's devices, not the host's",
            c.label()
        ));
    }
}

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

pub(super) fn host_sockets(
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

pub(super) fn host_devices(lookups: &Lookups, add: &mut impl FnMut(String)) {
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

pub(super) fn mount_propagation(lookups: &Lookups, add: &mut impl FnMut(String)) {
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

pub(super) fn device_resources(
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

pub(super) fn dynamic_resources(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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

/// The implicit extended resource of every DeviceClass:
/// `deviceclass.resource.kubernetes.io/<class>`.
pub const DEVICE_CLASS_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// Names with the containers that use each (each container once), in
/// order of first use: one lookup per use, so linear in the pod however a
/// tenant shapes it.
#[derive(Default)]
struct Grouped<'a> {
    index: BTreeMap<&'a str, usize>,
    entries: Vec<(&'a str, Vec<&'a Container>)>,
}

impl<'a> Grouped<'a> {
    /// The volumes the pod's containers mount.
    fn mounts(pod: &'a RuntimeFacts) -> Self {
        let mut mounts = Grouped::default();
        for c in &pod.containers {
            for m in &c.mounts {
                step();
                mounts.add(&m.volume, c);
            }
        }
        mounts
    }

    /// Records that container `c` uses `name`, once per container.
    fn add(&mut self, name: &'a str, c: &'a Container) {
        let at = *self.index.entry(name).or_insert_with(|| {
            self.entries.push((name, Vec::new()));
            self.entries.len() - 1
        });
        if let Some((_, users)) = self.entries.get_mut(at)
            && !users.last().is_some_and(|last| std::ptr::eq(*last, c))
        {
            users.push(c);
        }
    }

    /// The containers that use `name`, in container order.
    fn users(&self, name: &str) -> &[&'a Container] {
        (self.index.get(name))
            .and_then(|at| self.entries.get(*at))
            .map_or(&[], |(_, users)| users.as_slice())
    }
}

/// `container "a", init container "b"`.
fn labels(users: &[&Container]) -> String {
    let labels: Vec<String> = users.iter().map(|c| c.label()).collect();
    labels.join(", ")
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

/// Profile types that ask the runtime to confine the container.
fn confines(profile: Option<&str>) -> Option<&str> {
    profile.filter(|p| matches!(*p, "RuntimeDefault" | "Localhost"))
}

pub(super) fn seccomp(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // A container's own profile replaces the pod's.
    for c in &pod.containers {
        let (profile, from) = match &c.security.seccomp {
            Some(own) => (own.as_str(), ""),
            None => match &pod.security.seccomp {
                Some(inherited) => (inherited.as_str(), " (from the pod's securityContext)"),
                None => continue,
            },
        };
        if let Some(profile) = confines(Some(profile)) {
            add(format!(
                "{} has seccompProfile {profile}{from}, which the Kata guest does not enforce",
                c.label()
            ));
        }
    }
}

pub(super) fn app_armor(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // The container's field, then its annotation, then the pod's field: the
    // kubelet's order.
    let annotations = first_by_name(
        (pod.app_armor_annotations.iter()).map(|(name, value)| (name.as_str(), value.as_str())),
    );
    for c in &pod.containers {
        step();
        let annotation = annotations.get(c.name.as_str()).copied();
        let (profile, from) = if let Some(own) = &c.security.app_armor {
            (confines(Some(own)), String::new())
        } else if let Some(value) = annotation {
            let confined = (value != "unconfined").then_some(value);
            (confined, " (annotation)".to_string())
        } else if let Some(inherited) = &pod.security.app_armor {
            let from = " (from the pod's securityContext)".to_string();
            (confines(Some(inherited)), from)
        } else {
            continue;
        };
        if let Some(profile) = profile {
            add(format!(
                "{} has AppArmor profile {profile}{from}, which the Kata guest does not support",
                c.label()
            ));
        }
    }
}

pub(super) fn se_linux(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // Pod and container options merge field by field: any field set counts.
    if pod.security.se_linux {
        add("the pod sets seLinuxOptions, which Kata applies to the VM process, not inside the guest".into());
    }
    for c in pod.containers.iter().filter(|c| c.security.se_linux) {
        add(format!(
            "{} sets seLinuxOptions, which Kata applies to the VM process, not inside the guest",
            c.label()
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
