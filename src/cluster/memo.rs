//! One admission's answers, kept for the next class tried: with several
//! Kata classes, each class is judged with the same node list, the same
//! nodes read by name and the same access answers, so the cost per
//! admission stays one node list whatever the number of classes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hash;

use super::api::{
    Access, Cluster, LookupError, NodeList, NodeMasks, Resource, Subject, VolumeKind,
};

type Answer = Result<Option<Vec<u8>>, LookupError>;
/// Shared, not copied, on every hit: a list is the biggest answer.
type Listed = Result<NodeList, LookupError>;
type Cache<K, V> = RefCell<HashMap<K, V>>;

pub(crate) struct Memo<'c, C> {
    cluster: &'c C,
    lists: Cache<(Option<String>, NodeMasks), Listed>,
    nodes: Cache<(String, NodeMasks), Answer>,
    access: Cache<(String, Resource), Result<Access, LookupError>>,
    objects: Cache<(VolumeKind, Option<String>, String), Answer>,
    kinds: Cache<VolumeKind, Result<Vec<u8>, LookupError>>,
    config_maps: Cache<(String, String), Answer>,
}

impl<'c, C: Cluster> Memo<'c, C> {
    pub(crate) fn new(cluster: &'c C) -> Self {
        Memo {
            cluster,
            lists: RefCell::default(),
            nodes: RefCell::default(),
            access: RefCell::default(),
            objects: RefCell::default(),
            kinds: RefCell::default(),
            config_maps: RefCell::default(),
        }
    }
}

/// The answer `cache` keeps for `key`, or else `ask`'s, kept for next time.
fn kept<K: Eq + Hash, V: Clone>(cache: &Cache<K, V>, key: K, ask: impl FnOnce() -> V) -> V {
    if let Some(answer) = cache.borrow().get(&key) {
        return answer.clone();
    }
    let answer = ask();
    cache.borrow_mut().insert(key, answer.clone());
    answer
}

impl<C: Cluster> Cluster for Memo<'_, C> {
    fn runtime_class(&self, name: &str) -> Answer {
        self.cluster.runtime_class(name)
    }

    fn config_map(&self, namespace: &str, name: &str) -> Answer {
        let key = (namespace.to_string(), name.to_string());
        kept(&self.config_maps, key, || {
            self.cluster.config_map(namespace, name)
        })
    }

    fn now(&self) -> Option<i64> {
        self.cluster.now()
    }

    fn kata_nodes(&self, selector: Option<&str>, masks: NodeMasks) -> Listed {
        let key = (selector.map(str::to_string), masks);
        kept(&self.lists, key, || {
            self.cluster.kata_nodes(selector, masks)
        })
    }

    fn node(&self, name: &str, masks: NodeMasks) -> Answer {
        kept(&self.nodes, (name.to_string(), masks), || {
            self.cluster.node(name, masks)
        })
    }

    fn may(
        &self,
        subject: &Subject,
        verb: &str,
        resource: Resource,
    ) -> Result<Access, LookupError> {
        // One subject per admission (the settings'): the verb and the
        // resource tell the questions apart.
        kept(&self.access, (verb.to_string(), resource), || {
            self.cluster.may(subject, verb, resource)
        })
    }

    fn object(&self, kind: VolumeKind, namespace: Option<&str>, name: &str) -> Answer {
        let key = (kind, namespace.map(str::to_string), name.to_string());
        kept(&self.objects, key, || {
            self.cluster.object(kind, namespace, name)
        })
    }

    fn objects(&self, kind: VolumeKind) -> Result<Vec<u8>, LookupError> {
        kept(&self.kinds, kind, || self.cluster.objects(kind))
    }

    // Read once per admission whatever the number of classes (the
    // decision keeps what it made of them): not kept here.
    fn pods(&self) -> Result<Vec<u8>, LookupError> {
        self.cluster.pods()
    }

    fn namespaces(&self) -> Result<Vec<u8>, LookupError> {
        self.cluster.namespaces()
    }
}
