//! Settings kept for configurations written before their replacements:
//! `skipHostNamespaces` (now part of `skipPodsUsing`) and a bare
//! `allowedRuntimeClasses` (now switched on by `restrictRuntimeClasses`).
//!
//! There is no such reading for the defaults `runtimeClassName` and
//! `policyServerServiceAccount` used to have: settings written for them are
//! refused until both are set (`read::REQUIRED` says why), and the classes
//! allowed here are always added to the configured ones, which then come
//! from the settings.

use crate::incompatible::{FeatureSet, PodFeature};

/// `skipPodsUsing`, with the deprecated `skipHostNamespaces` folded in.
pub(super) fn skipped_features(
    explicit: Option<FeatureSet>,
    skip_host_namespaces: Option<bool>,
) -> Result<FeatureSet, String> {
    let host = PodFeature::HostNamespaces;
    match (explicit, skip_host_namespaces) {
        (None, Some(false)) => Ok(FeatureSet::default_set().without(host)),
        (None, _) => Ok(FeatureSet::default_set()),
        (Some(set), None) => Ok(set),
        (Some(set), Some(skip)) if set.contains(host) == skip => Ok(set),
        (Some(_), Some(skip)) => Err(format!(
            "skipHostNamespaces: {skip} contradicts skipPodsUsing, which {} \"hostNamespaces\"; \
             skipHostNamespaces is deprecated: remove it and keep skipPodsUsing",
            if skip { "lacks" } else { "lists" }
        )),
    }
}

/// Which classes a pod may name itself besides `runtimeClassName` (`None`:
/// any), from `restrictRuntimeClasses` and `allowedRuntimeClasses` (null
/// reads as absent). `restrictRuntimeClasses` says whether the restriction
/// is on; absent, a list turns it on, the rule from before the setting
/// existed, kept for the settings written then.
pub(super) fn allowed_classes(
    restrict: Option<bool>,
    listed: Option<Vec<String>>,
) -> Result<Option<Vec<String>>, String> {
    match (restrict, listed) {
        (None, listed) => Ok(listed),
        (Some(true), listed) => Ok(Some(listed.unwrap_or_default())),
        (Some(false), Some(list)) if !list.is_empty() => Err(format!(
            "restrictRuntimeClasses: false contradicts allowedRuntimeClasses {list:?}: \
             set restrictRuntimeClasses: true, or remove the list"
        )),
        (Some(false), _) => Ok(None),
    }
}
