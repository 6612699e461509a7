//! The pod features `skipPodsUsing` can name, and sets of them.

/// A pod feature the `skipPodsUsing` setting can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodFeature {
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

impl PodFeature {
    /// Every feature, in the order findings are reported.
    pub const ALL: [PodFeature; 15] = [
        PodFeature::HostNamespaces,
        PodFeature::UserNamespaces,
        PodFeature::Windows,
        PodFeature::Privileged,
        PodFeature::HostSockets,
        PodFeature::HostDevices,
        PodFeature::MountPropagation,
        PodFeature::DeviceResources,
        PodFeature::DynamicResources,
        PodFeature::ImageVolumes,
        PodFeature::Seccomp,
        PodFeature::AppArmor,
        PodFeature::SeLinux,
        PodFeature::SubPath,
        PodFeature::MemoryEmptyDirLimit,
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
    pub const DEFAULT: [PodFeature; 9] = [
        PodFeature::HostNamespaces,
        PodFeature::UserNamespaces,
        PodFeature::Windows,
        PodFeature::HostSockets,
        PodFeature::HostDevices,
        PodFeature::MountPropagation,
        PodFeature::DeviceResources,
        PodFeature::DynamicResources,
        PodFeature::ImageVolumes,
    ];

    /// The name used in `skipPodsUsing`.
    pub fn name(self) -> &'static str {
        match self {
            PodFeature::HostNamespaces => "hostNamespaces",
            PodFeature::UserNamespaces => "userNamespaces",
            PodFeature::Windows => "windows",
            PodFeature::Privileged => "privileged",
            PodFeature::HostSockets => "hostSockets",
            PodFeature::HostDevices => "hostDevices",
            PodFeature::MountPropagation => "mountPropagation",
            PodFeature::DeviceResources => "deviceResources",
            PodFeature::DynamicResources => "dynamicResources",
            PodFeature::Seccomp => "seccomp",
            PodFeature::AppArmor => "appArmor",
            PodFeature::SeLinux => "seLinux",
            PodFeature::SubPath => "subPath",
            PodFeature::MemoryEmptyDirLimit => "memoryEmptyDirLimit",
            PodFeature::ImageVolumes => "imageVolumes",
        }
    }

    pub fn from_name(name: &str) -> Option<PodFeature> {
        PodFeature::ALL.into_iter().find(|f| f.name() == name)
    }

    /// The known names, comma-separated, for messages.
    pub fn known_names() -> String {
        let names: Vec<&str> = PodFeature::ALL.iter().map(|f| f.name()).collect();
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
    pub fn of(features: impl IntoIterator<Item = PodFeature>) -> FeatureSet {
        features
            .into_iter()
            .fold(FeatureSet(0), |set, f| FeatureSet(set.0 | f.bit()))
    }

    pub fn default_set() -> FeatureSet {
        FeatureSet::of(PodFeature::DEFAULT)
    }

    pub fn contains(self, feature: PodFeature) -> bool {
        self.0 & feature.bit() != 0
    }

    pub fn without(self, feature: PodFeature) -> FeatureSet {
        FeatureSet(self.0 & !feature.bit())
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The features in the set, in report order.
    pub fn iter(self) -> impl Iterator<Item = PodFeature> {
        PodFeature::ALL
            .into_iter()
            .filter(move |f| self.contains(*f))
    }
}
