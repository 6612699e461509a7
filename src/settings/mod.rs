//! Policy settings: defaults and the typed values the decision uses.
//!
//! Every setting is parsed once, when the settings are read ([`read`], with
//! a reader per kind of value in `values`): the selector, the resource names
//! and the service account are kept parsed, so nothing downstream parses
//! them again or handles an error that cannot happen.

mod legacy;
mod read;
#[cfg(test)]
mod tests;
mod values;

use std::borrow::Cow;

use crate::cluster::Subject;
use crate::incompatible::{FeatureSet, Rules};
use crate::labels::{self, Requirement, SelectorOp};
use crate::resources::ResourceNames;

/// What to do with the pod when the policy cannot give it Kata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Admit the pod unchanged, with a warning.
    Accept,
    /// Refuse the pod, with the same explanation.
    Reject,
}

/// How the nodes' own reports of their runtime handlers
/// (`status.runtimeHandlers`, kubelet ≥ 1.30) are used to tell Kata nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HandlerCheck {
    /// A node that reports handlers must list the RuntimeClass's handler; a
    /// node that reports none is judged by its labels.
    Auto,
    /// Every node must report the RuntimeClass's handler.
    Required,
    /// The field is not read.
    Off,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The RuntimeClass assigned to pods that a Kata node can run. Required.
    pub runtime_class_name: String,
    /// Label selector naming the nodes where Kata is installed ("" = all nodes).
    pub kata_node_selector: KataNodeSelector,
    pub no_feasible_node: Outcome,
    pub lookup_failure: Outcome,
    /// What to do with a pod that uses a feature in `skipPodsUsing`:
    /// admit it without Kata (`Accept`), or refuse it (`Reject`, for
    /// namespaces where every pod must run under Kata).
    pub incompatible_pod: Outcome,
    /// Pod features Kata cannot run: a pod using one is left unchanged.
    /// (The deprecated `skipHostNamespaces: false` removes `hostNamespaces`.)
    pub skip_pods_using: FeatureSet,
    /// Host paths under which sockets live (`hostSockets`), cleaned.
    /// (The defaults are borrowed: every admission without settings builds
    /// a `Settings`.)
    pub host_socket_paths: Vec<Cow<'static, str>>,
    /// Extended resources a device plugin hands over as host device nodes
    /// (`deviceResources`): names or `domain/*` groups.
    pub host_device_resources: ResourceNames,
    /// Extended resources (`vendor/name` or `vendor/*`) the resource-fit
    /// check skips, e.g. those served through DRA.
    pub ignored_resources: ResourceNames,
    /// The user policy-server runs as, asked about in `can_i` before the
    /// node list. Required.
    pub policy_server_service_account: ServiceAccount,
    /// The RuntimeClasses a pod may name itself besides `runtimeClassName`
    /// (`None`: any). A pod naming another is refused. Read from
    /// `restrictRuntimeClasses` and `allowedRuntimeClasses` together
    /// (`legacy::allowed_classes`).
    pub allowed_runtime_classes: Option<Vec<String>>,
    /// Judge the pod's PersistentVolumeClaims (VolumeBinding, VolumeZone);
    /// needs read access to claims, volumes and storage classes.
    pub check_volumes: bool,
    /// Judge pods with required inter-pod (anti-)affinity against the
    /// pods the cluster runs (InterPodAffinity); needs list/watch on pods
    /// and namespaces.
    pub check_pod_affinity: bool,
    /// Whether a node must report the RuntimeClass's runtime handler.
    pub runtime_handler_check: HandlerCheck,
    /// Write the decision on every evaluated pod the policy admits, as the
    /// annotation `kata-runtime-policy.kubewarden.io/decision`.
    pub annotate_decision: bool,
    /// Classes tried in order after `runtimeClassName`.
    pub fallback_runtime_classes: Vec<String>,
    /// Pods that request a listed resource take their classes from the
    /// first matching route only.
    pub runtime_classes_by_resource: Vec<ClassRoute>,
    /// One line per evaluated Pod CREATE in policy-server's log.
    pub log_decisions: bool,
    /// The ConfigMap holding the node shapes (`nodeShapes`), judged
    /// instead of the node list while it is fresh; `None`: the list.
    pub node_shapes: Option<ConfigMapRef>,
}

/// A ConfigMap, by namespace and name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigMapRef {
    pub namespace: String,
    pub name: String,
}

impl ConfigMapRef {
    /// `namespace/name`, each as the API server accepts it.
    pub fn parse(text: &str) -> Option<ConfigMapRef> {
        let (namespace, name) = text.split_once('/')?;
        (crate::labels::is_dns_label(namespace) && crate::labels::is_dns_subdomain(name)).then(
            || ConfigMapRef {
                namespace: namespace.to_string(),
                name: name.to_string(),
            },
        )
    }
}

/// One entry of `runtimeClassesByResource`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClassRoute {
    /// Extended resource names or `domain/*` groups.
    pub resources: ResourceNames,
    /// The classes such a pod may get, in order.
    pub classes: Vec<String>,
}

/// The label kata-deploy sets on nodes once Kata is installed and ready.
pub const DEFAULT_KATA_NODE_SELECTOR: &str = "katacontainers.io/kata-runtime=true";

/// Where container runtimes, kubelet plugins and device plugins keep their
/// sockets.
pub const DEFAULT_HOST_SOCKET_PATHS: [&str; 6] = [
    "/run",
    "/var/run",
    "/var/lib/kubelet/plugins",
    "/var/lib/kubelet/plugins_registry",
    "/var/lib/kubelet/device-plugins",
    "/var/lib/kubelet/pod-resources",
];
/// Device-plugin resources handed over as device nodes, not through VFIO.
pub const DEFAULT_HOST_DEVICE_RESOURCES: [&str; 3] =
    ["nvidia.com/gpu", "amd.com/gpu", "gpu.intel.com/*"];

/// The defaults of every setting that has one. `runtimeClassName` and
/// `policyServerServiceAccount` have none: reading settings refuses them
/// missing (`read::REQUIRED` says why), so no read ever gives the two values
/// here. They are placeholders, replaced by what the settings say, and the
/// values the tests' recorded sessions (test_data/sessions/) were made with:
/// the class `kata`, asked about for kubewarden-defaults' PolicyServer.
impl Default for Settings {
    fn default() -> Self {
        Settings {
            runtime_class_name: "kata".to_string(),
            kata_node_selector: KataNodeSelector::kata_default(),
            no_feasible_node: Outcome::Accept,
            lookup_failure: Outcome::Accept,
            incompatible_pod: Outcome::Accept,
            skip_pods_using: FeatureSet::default_set(),
            host_socket_paths: DEFAULT_HOST_SOCKET_PATHS.map(Cow::Borrowed).to_vec(),
            // The constant is valid (a test holds it to that), so the
            // fallback is never taken.
            host_device_resources: ResourceNames::parse(DEFAULT_HOST_DEVICE_RESOURCES)
                .unwrap_or_default(),
            ignored_resources: ResourceNames::default(),
            policy_server_service_account: ServiceAccount::new("kubewarden", "policy-server"),
            check_volumes: true,
            check_pod_affinity: true,
            allowed_runtime_classes: None,
            runtime_handler_check: HandlerCheck::Auto,
            // On: "why did my pod not get Kata?" is answered on the pod.
            annotate_decision: true,
            fallback_runtime_classes: Vec::new(),
            runtime_classes_by_resource: Vec::new(),
            log_decisions: false,
            node_shapes: None,
        }
    }
}

impl Settings {
    /// The classes a pod without a routed resource may get, in order:
    /// `runtimeClassName`, then `fallbackRuntimeClasses`.
    pub fn general_classes(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.runtime_class_name.as_str())
            .chain(self.fallback_runtime_classes.iter().map(String::as_str))
    }

    /// Every class the policy assigns: the general ones, then the routed
    /// ones, each once.
    pub fn configured_classes(&self) -> Vec<&str> {
        let mut classes: Vec<&str> = self.general_classes().collect();
        for route in &self.runtime_classes_by_resource {
            for class in &route.classes {
                if !classes.contains(&class.as_str()) {
                    classes.push(class);
                }
            }
        }
        classes
    }

    /// The subject of the `can_i` questions: the service account with the
    /// groups the API server gives every service account.
    pub fn policy_server_subject(&self) -> Subject<'_> {
        let account = &self.policy_server_service_account;
        Subject {
            user: account.user(),
            groups: vec![
                "system:serviceaccounts".to_string(),
                format!("system:serviceaccounts:{}", account.namespace()),
                "system:authenticated".to_string(),
            ],
        }
    }

    /// What the runtime-compatibility check needs.
    pub fn incompatible_rules(&self) -> Rules<'_> {
        Rules {
            features: self.skip_pods_using,
            socket_paths: &self.host_socket_paths,
            device_resources: &self.host_device_resources,
        }
    }

    /// The selector as sent to the host: `None` when every node is a kata node.
    pub fn host_label_selector(&self) -> Option<&str> {
        self.kata_node_selector.host_selector()
    }
}

/// `kataNodeSelector`: the text as written (sent to the host, shown in
/// messages) and its requirements (matched against a node read by name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KataNodeSelector {
    text: String,
    requirements: Vec<Requirement>,
}

impl KataNodeSelector {
    /// Parses a label selector; the error is the parser's, without the key.
    pub fn parse(text: &str) -> Result<Self, String> {
        Ok(KataNodeSelector {
            requirements: labels::parse_selector(text)?,
            text: text.to_string(),
        })
    }

    /// [`DEFAULT_KATA_NODE_SELECTOR`], built rather than parsed so that
    /// `Settings::default` cannot fail (a test checks it equals the parse).
    fn kata_default() -> Self {
        KataNodeSelector {
            text: DEFAULT_KATA_NODE_SELECTOR.to_string(),
            requirements: vec![Requirement {
                key: "katacontainers.io/kata-runtime".to_string(),
                op: SelectorOp::Equals,
                values: vec!["true".to_string()],
            }],
        }
    }

    /// The selector as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// The selector as sent to the host, trimmed: `None` when it selects
    /// every node.
    pub fn host_selector(&self) -> Option<&str> {
        let trimmed = self.text.trim();
        (!trimmed.is_empty()).then_some(trimmed)
    }

    /// Whether a node with these labels is selected: every requirement
    /// matches, as on the API server.
    pub fn matches<'a>(&self, label: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.requirements.iter().all(|r| r.matches(&label))
    }
}

/// `policyServerServiceAccount`: `system:serviceaccount:<namespace>:<name>`,
/// kept whole (the `can_i` user) and in parts (its group names the namespace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceAccount {
    user: String,
    namespace: String,
    name: String,
}

impl ServiceAccount {
    const PREFIX: &'static str = "system:serviceaccount:";

    /// `None` unless the text is the prefix, a namespace and a name that are
    /// DNS labels.
    pub fn parse(user: &str) -> Option<Self> {
        let (namespace, name) = user.strip_prefix(Self::PREFIX)?.split_once(':')?;
        (labels::is_dns_label(namespace) && labels::is_dns_label(name))
            .then(|| ServiceAccount::new(namespace, name))
    }

    fn new(namespace: &str, name: &str) -> Self {
        ServiceAccount {
            user: format!("{}{namespace}:{name}", Self::PREFIX),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// `system:serviceaccount:<namespace>:<name>`.
    pub fn user(&self) -> &str {
        &self.user
    }

    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    pub fn name(&self) -> &str {
        &self.name
    }
}
