//! What Kata Containers cannot run, even on a Kata node: a pure check over
//! the pod's own facts, one rule per feature, findings as data.
//!
//! It runs before any host call. A pod that uses an enabled feature is left
//! on the default runtime: scheduling it onto a Kata node would give a pod
//! that never starts, or one that starts broken. The sources of every rule
//! are in docs/kata-compatibility.md.

use std::borrow::Cow;
use std::fmt;

use crate::resources::entry_matches;

/// A pod feature the `skipPodsUsing` setting can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    HostNamespaces,
    UserNamespaces,
    Windows,
    Privileged,
    HostSockets,
    HostDevices,
    MountPropagation,
    DeviceResources,
    DynamicResources,
    ImageVolumes,
    Seccomp,
    AppArmor,
    SeLinux,
    SubPath,
    MemoryEmptyDirLimit,
}

impl Feature {
    /// Every feature, in the order findings are reported.
    pub const ALL: [Feature; 15] = [
        Feature::HostNamespaces,
        Feature::UserNamespaces,
        Feature::Windows,
        Feature::Privileged,
        Feature::HostSockets,
        Feature::HostDevices,
        Feature::MountPropagation,
        Feature::DeviceResources,
        Feature::DynamicResources,
        Feature::ImageVolumes,
        Feature::Seccomp,
        Feature::AppArmor,
        Feature::SeLinux,
        Feature::SubPath,
        Feature::MemoryEmptyDirLimit,
    ];

    /// The features checked by default: those that make a pod fail or
    /// break under Kata. The others are opt-in: Kata weakens them, but most
    /// pods that set them (every Pod Security `restricted` pod sets seccomp)
    /// run fine. `privileged` is opt-in too: kata-deploy runs privileged
    /// containers with `privileged_without_host_devices = true`, so a plain
    /// privileged pod runs inside the VM, and skipping it would make it root
    /// on the node instead; the privileged pods that need the host are
    /// caught by hostSockets, hostDevices, mountPropagation and
    /// hostNamespaces.
    pub const DEFAULT: [Feature; 9] = [
        Feature::HostNamespaces,
        Feature::UserNamespaces,
        Feature::Windows,
        Feature::HostSockets,
        Feature::HostDevices,
        Feature::MountPropagation,
        Feature::DeviceResources,
        Feature::DynamicResources,
        Feature::ImageVolumes,
    ];

    /// The name used in `skipPodsUsing`.
    pub fn name(self) -> &'static str {
        match self {
            Feature::HostNamespaces => "hostNamespaces",
            Feature::UserNamespaces => "userNamespaces",
            Feature::Windows => "windows",
            Feature::Privileged => "privileged",
            Feature::HostSockets => "hostSockets",
            Feature::HostDevices => "hostDevices",
            Feature::MountPropagation => "mountPropagation",
            Feature::DeviceResources => "deviceResources",
            Feature::DynamicResources => "dynamicResources",
            Feature::Seccomp => "seccomp",
            Feature::AppArmor => "appArmor",
            Feature::SeLinux => "seLinux",
            Feature::SubPath => "subPath",
            Feature::MemoryEmptyDirLimit => "memoryEmptyDirLimit",
            Feature::ImageVolumes => "imageVolumes",
        }
    }

    pub fn from_name(name: &str) -> Option<Feature> {
        Feature::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The known names, comma-separated, for messages.
    pub fn known_names() -> String {
        let names: Vec<&str> = Feature::ALL.iter().map(|f| f.name()).collect();
        names.join(", ")
    }

    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// A set of features (the parsed `skipPodsUsing`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FeatureSet(u16);

impl FeatureSet {
    pub fn of(features: impl IntoIterator<Item = Feature>) -> FeatureSet {
        features
            .into_iter()
            .fold(FeatureSet(0), |set, f| FeatureSet(set.0 | f.bit()))
    }

    pub fn default_set() -> FeatureSet {
        FeatureSet::of(Feature::DEFAULT)
    }

    pub fn contains(self, feature: Feature) -> bool {
        self.0 & feature.bit() != 0
    }

    pub fn without(self, feature: Feature) -> FeatureSet {
        FeatureSet(self.0 & !feature.bit())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The features in the set, in report order.
    pub fn iter(self) -> impl Iterator<Item = Feature> {
        Feature::ALL.into_iter().filter(move |f| self.contains(*f))
    }
}

/// What the check is told by the settings.
#[derive(Debug, Clone, Copy)]
pub struct CompatSettings<'a> {
    pub features: FeatureSet,
    /// Cleaned absolute paths (`hostSocketPaths`).
    pub socket_paths: &'a [Cow<'static, str>],
    /// `hostDeviceResources`, validated (names or `group/*`).
    pub device_resources: &'a [Cow<'static, str>],
}

/// The pod's facts the check reads, taken from the raw object by `pod.rs`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimeFacts {
    /// hostNetwork, hostPID, hostIPC: those set to true, in that order.
    pub host_namespaces: Vec<&'static str>,
    pub host_users: Option<bool>,
    pub os_name: Option<String>,
    /// `spec.securityContext`.
    pub security: Security,
    /// `containers`, then `initContainers` (restartable sidecars included).
    pub containers: Vec<Container>,
    pub volumes: Vec<Volume>,
    /// `container.apparmor.security.beta.kubernetes.io/<container>` annotations.
    pub app_armor_annotations: Vec<(String, String)>,
    /// `spec.resourceClaims` (Dynamic Resource Allocation), in spec order.
    pub resource_claims: Vec<ResourceClaim>,
}

/// One entry of `spec.resourceClaims`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceClaim {
    /// The name containers use in `resources.claims`.
    pub name: String,
    /// `("ResourceClaimTemplate", name)` or `("ResourceClaim", name)`; `None`
    /// when neither is set (the API server refuses that pod).
    pub source: Option<(&'static str, String)>,
}

/// The security settings the check reads, at pod or container level.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Security {
    pub privileged: bool,
    /// `seccompProfile.type`.
    pub seccomp: Option<String>,
    /// `appArmorProfile.type`.
    pub app_armor: Option<String>,
    /// `seLinuxOptions` sets at least one field.
    pub se_linux: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Container {
    pub name: String,
    pub init: bool,
    pub security: Security,
    pub mounts: Vec<Mount>,
    /// Resources requested or limited with a non-zero quantity.
    pub resources: Vec<String>,
    /// The pod's resource claims it uses (`resources.claims[].name`).
    pub claims: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mount {
    pub volume: String,
    pub propagation: Option<String>,
    /// `subPath` or `subPathExpr`, whichever is set (non-empty).
    pub sub_path: Option<&'static str>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Volume {
    pub name: String,
    pub host_path: Option<HostPath>,
    /// The `sizeLimit` of an `emptyDir` with `medium: Memory`.
    pub memory_size_limit: Option<String>,
    /// An image volume (`image`, KEP-4639): its `reference`, "" when unset.
    pub image: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostPath {
    /// Cleaned with [`clean`].
    pub path: String,
    /// `type` ("" when unset).
    pub kind: String,
}

/// One use of a feature that Kata cannot provide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub feature: Feature,
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
pub fn check(pod: &RuntimeFacts, settings: &CompatSettings) -> Vec<Finding> {
    let mut findings = Vec::new();
    for feature in settings.features.iter() {
        let mut add = |detail: String| findings.push(Finding { feature, detail });
        match feature {
            Feature::HostNamespaces => host_namespaces(pod, &mut add),
            Feature::UserNamespaces => user_namespaces(pod, &mut add),
            Feature::Windows => windows(pod, &mut add),
            Feature::Privileged => privileged(pod, &mut add),
            Feature::HostSockets => host_sockets(pod, settings.socket_paths, &mut add),
            Feature::HostDevices => host_devices(pod, &mut add),
            Feature::MountPropagation => mount_propagation(pod, &mut add),
            Feature::DeviceResources => device_resources(pod, settings.device_resources, &mut add),
            Feature::DynamicResources => dynamic_resources(pod, &mut add),
            Feature::Seccomp => seccomp(pod, &mut add),
            Feature::AppArmor => app_armor(pod, &mut add),
            Feature::SeLinux => se_linux(pod, &mut add),
            Feature::SubPath => sub_path(pod, &mut add),
            Feature::MemoryEmptyDirLimit => memory_empty_dir_limit(pod, &mut add),
            Feature::ImageVolumes => image_volumes(pod, &mut add),
        }
    }
    findings
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

fn host_namespaces(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    if !pod.host_namespaces.is_empty() {
        add(format!(
            "the pod uses {}, which Kata Containers cannot provide",
            pod.host_namespaces.join(", ")
        ));
    }
}

fn user_namespaces(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    if pod.host_users == Some(false) {
        add(
            "the pod sets hostUsers: false (a user namespace), which the Kata runtime handler \
             does not support: the kubelet would not start it"
                .into(),
        );
    }
}

fn windows(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    if pod.os_name.as_deref() == Some("windows") {
        add("the pod's spec.os.name is windows, and Kata runs Linux guests".into());
    }
}

fn privileged(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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
    pod: &'a RuntimeFacts,
    mut visit: impl FnMut(&'a Volume, &'a HostPath, Option<&'a Container>),
) {
    for volume in &pod.volumes {
        let Some(host_path) = &volume.host_path else {
            continue;
        };
        let mut mounted = false;
        for c in &pod.containers {
            if c.mounts.iter().any(|m| m.volume == volume.name) {
                mounted = true;
                visit(volume, host_path, Some(c));
            }
        }
        if !mounted {
            visit(volume, host_path, None);
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

fn host_sockets(
    pod: &RuntimeFacts,
    socket_paths: &[Cow<'static, str>],
    add: &mut impl FnMut(String),
) {
    host_path_uses(pod, |volume, host_path, container| {
        let path = &host_path.path;
        let what = if host_path.kind == "Socket" || is_socket_name(path) {
            format!("host socket {path}")
        } else if let Some(dir) = socket_paths.iter().find(|dir| is_within(path, dir)) {
            if path == dir.as_ref() {
                format!("host socket path {path} (in hostSocketPaths)")
            } else {
                format!("host socket path {path} (under {dir})")
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

fn host_devices(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    host_path_uses(pod, |volume, host_path, container| {
        let path = &host_path.path;
        // Block devices are hot-plugged into the guest and work.
        let device = host_path.kind == "CharDevice"
            || (host_path.kind != "BlockDevice" && is_within(path, "/dev"));
        if device {
            let what = format!("host device path {path}");
            add(format!(
                "{}, but Kata gives it the VM's device node, not the host's",
                describe(container, volume, &what)
            ));
        }
    });
}

fn mount_propagation(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // Only hostPath mounts: propagation means nothing for other volumes, and
    // Pod Security Admission (baseline) already forbids hostPath, so no
    // tenant can leave Kata by adding HostToContainer to an emptyDir.
    for c in &pod.containers {
        for m in &c.mounts {
            let Some(mode) = m.propagation.as_deref() else {
                continue;
            };
            if !matches!(mode, "HostToContainer" | "Bidirectional") {
                continue;
            }
            let host_path = pod
                .volumes
                .iter()
                .find(|v| v.name == m.volume)
                .and_then(|v| v.host_path.as_ref());
            if let Some(host_path) = host_path {
                add(format!(
                    "{} mounts hostPath volume {:?} ({}) with mountPropagation {mode}, which does not cross the Kata VM boundary",
                    c.label(),
                    m.volume,
                    host_path.path
                ));
            }
        }
    }
}

fn device_resources(
    pod: &RuntimeFacts,
    devices: &[Cow<'static, str>],
    add: &mut impl FnMut(String),
) {
    for c in &pod.containers {
        let listed = |r: &&String| devices.iter().any(|d| entry_matches(d, r));
        for name in c.resources.iter().filter(listed) {
            add(format!(
                "{} asks for {name}, a device plugin's host device that Kata does not pass into its VM (Kata passes VFIO devices)",
                c.label()
            ));
        }
    }
}

fn dynamic_resources(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // Every claim counts, used by a container or not: the scheduler places
    // the pod only where its devices are, and the kubelet prepares them.
    for claim in &pod.resource_claims {
        let source = match &claim.source {
            Some((kind, name)) => format!(" ({kind} {name:?})"),
            None => String::new(),
        };
        let users: Vec<String> = (pod.containers.iter())
            .filter(|c| c.claims.contains(&claim.name))
            .map(Container::label)
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
            if let Some(class) = name.strip_prefix(DEVICE_CLASS_RESOURCE_PREFIX) {
                classes.add(class, c);
            }
        }
    }
    for (class, users) in classes.entries {
        add(format!(
            "DeviceClass {class:?} (extended resource {DEVICE_CLASS_RESOURCE_PREFIX}{class}), asked for by {}, \
             is served by DRA-allocated devices, which Kata does not pass into its VM",
            users.join(", ")
        ));
    }
}

/// The implicit extended resource of every DeviceClass:
/// `deviceclass.resource.kubernetes.io/<class>`.
pub const DEVICE_CLASS_RESOURCE_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// Names with the containers that use each, in order of first use; one
/// lookup per use, so linear in the pod however a tenant shapes it.
#[derive(Default)]
struct Grouped<'a> {
    index: std::collections::BTreeMap<&'a str, usize>,
    entries: Vec<(&'a str, Vec<String>)>,
}

impl<'a> Grouped<'a> {
    /// Records that container `c` uses `name`, once per container.
    fn add(&mut self, name: &'a str, c: &Container) {
        let at = *self.index.entry(name).or_insert_with(|| {
            self.entries.push((name, Vec::new()));
            self.entries.len() - 1
        });
        if let Some((_, users)) = self.entries.get_mut(at) {
            let label = c.label();
            if users.last() != Some(&label) {
                users.push(label);
            }
        }
    }
}

fn image_volumes(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // Only mounted volumes count: an image volume no container mounts is
    // pulled but never reaches the VM. Volumes by name, once per pod.
    let mut images = std::collections::BTreeMap::new();
    for v in &pod.volumes {
        if let Some(reference) = &v.image {
            images.entry(v.name.as_str()).or_insert(reference.as_str());
        }
    }
    if images.is_empty() {
        return;
    }
    let mut mounted = Grouped::default();
    for c in &pod.containers {
        for m in &c.mounts {
            if let Some((name, _)) = images.get_key_value(m.volume.as_str()) {
                mounted.add(name, c);
            }
        }
    }
    for (name, users) in mounted.entries {
        let image = match images.get(name) {
            Some(reference) if !reference.is_empty() => format!(" (image {reference:?})"),
            _ => String::new(),
        };
        add(format!(
            "image volume {name:?}{image}, mounted by {}, is an OCI image that Kata cannot mount inside its VM",
            users.join(", ")
        ));
    }
}

/// Profile types that ask the runtime to confine the container.
fn confines(profile: Option<&str>) -> Option<&str> {
    profile.filter(|p| matches!(*p, "RuntimeDefault" | "Localhost"))
}

fn seccomp(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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

fn app_armor(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    // The container's field, then its annotation, then the pod's field: the
    // kubelet's order.
    for c in &pod.containers {
        let annotation = pod
            .app_armor_annotations
            .iter()
            .find(|(name, _)| *name == c.name)
            .map(|(_, value)| value.as_str());
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

fn se_linux(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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

fn sub_path(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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

fn memory_empty_dir_limit(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    for v in &pod.volumes {
        if let Some(limit) = &v.memory_size_limit {
            add(format!(
                "emptyDir volume {:?} has medium Memory with sizeLimit {limit}, which Kata does not enforce",
                v.name
            ));
        }
    }
}

/// `path.Clean` of Go: `//` collapsed, `.` removed, `..` resolved, a
/// trailing `/` dropped; "" becomes ".".
pub fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut elements: Vec<&str> = Vec::new();
    for element in path.split('/') {
        match element {
            "" | "." => {}
            ".." => {
                if elements.last().is_some_and(|last| *last != "..") {
                    elements.pop();
                } else if !rooted {
                    elements.push("..");
                }
            }
            other => elements.push(other),
        }
    }
    let joined = elements.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

/// Whether the cleaned `path` is `dir` or lies under it, comparing whole
/// elements: `/run` covers `/run/x`, not `/runtime`.
pub fn is_within(path: &str, dir: &str) -> bool {
    match path.strip_prefix(dir) {
        Some(rest) => rest.is_empty() || rest.starts_with('/') || dir.ends_with('/'),
        None => false,
    }
}

#[cfg(test)]
mod tests;
