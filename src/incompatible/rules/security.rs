//! The rules on security contexts: privileged containers, and the seccomp,
//! AppArmor and SELinux confinement the Kata guest does not apply.

use super::shared::{first_by_name, step};
use crate::incompatible::facts::RuntimeFacts;

pub(in crate::incompatible) fn privileged(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
    for c in pod.containers.iter().filter(|c| c.security.privileged) {
        add(format!(
            "{} is privileged, and a privileged container under Kata gets the VM's devices, not the host's",
            c.label()
        ));
    }
}

/// Profile types that ask the runtime to confine the container.
fn confines(profile: Option<&str>) -> Option<&str> {
    profile.filter(|p| matches!(*p, "RuntimeDefault" | "Localhost"))
}

pub(in crate::incompatible) fn seccomp(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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

pub(in crate::incompatible) fn app_armor(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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

pub(in crate::incompatible) fn se_linux(pod: &RuntimeFacts, add: &mut impl FnMut(String)) {
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
