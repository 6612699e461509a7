//! The pod features `skipPodsUsing` can name, and sets of them.

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
