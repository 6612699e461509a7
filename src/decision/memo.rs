//! One admission's answers, kept for the next class tried: with several
//! Kata classes, each class is judged with the same node list, the same
//! nodes read by name and the same access answers, so the cost per
//! admission stays one node list whatever the number of classes.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::cluster::{
    Access, Cluster, LookupError, NodeList, NodeMasks, Resource, Subject, VolumeKind,
};

type Answer = Result<Option<Vec<u8>>, LookupError>;
/// Shared, not copied, on every hit: a list is the biggest answer.
type Listed = Result<NodeList, LookupError>;
type Cache<K, V> = RefCell<HashMap<K, V>>;

pub(super) struct Memo<'c, C> {
    cluster: &'c C,
    lists: Cache<(Option<String>, NodeMasks), Listed>,
    nodes: Cache<(String, NodeMasks), Answer>,
    access: Cache<(String, Resource), Result<Access, LookupError>>,
    objects: Cache<(VolumeKind, Option<String>, String), Answer>,
    kinds: Cache<VolumeKind, Result<Vec<u8>, LookupError>>,
}

impl<'c, C: Cluster> Memo<'c, C> {
    pub(super) fn new(cluster: &'c C) -> Self {
        Memo {
            cluster,
            lists: RefCell::default(),
            nodes: RefCell::default(),
            access: RefCell::default(),
            objects: RefCell::default(),
            kinds: RefCell::default(),
        }
    }
}

impl<C: Cluster> Cluster for Memo<'_, C> {
    fn runtime_class(&self, name: &str) -> Answer {
        self.cluster.runtime_class(name)
    }

    fn kata_nodes(&self, selector: Option<&str>, masks: NodeMasks) -> Listed {
        let key = (selector.map(str::to_string), masks);
        if let Some(answer) = self.lists.borrow().get(&key) {
            return answer.clone();
        }
        let answer = self.cluster.kata_nodes(selector, masks);
        self.lists.borrow_mut().insert(key, answer.clone());
        answer
    }

    fn node(&self, name: &str, masks: NodeMasks) -> Answer {
        let key = (name.to_string(), masks);
        if let Some(answer) = self.nodes.borrow().get(&key) {
            return answer.clone();
        }
        let answer = self.cluster.node(name, masks);
        self.nodes.borrow_mut().insert(key, answer.clone());
        answer
    }

    fn may(
        &self,
        subject: &Subject,
        verb: &str,
        resource: Resource,
    ) -> Result<Access, LookupError> {
        // One subject per admission (the settings'): the verb and the
        // resource tell the questions apart.
        let key = (verb.to_string(), resource);
        if let Some(answer) = self.access.borrow().get(&key) {
            return answer.clone();
        }
        let answer = self.cluster.may(subject, verb, resource);
        self.access.borrow_mut().insert(key, answer.clone());
        answer
    }

    fn object(&self, kind: VolumeKind, namespace: Option<&str>, name: &str) -> Answer {
        let key = (kind, namespace.map(str::to_string), name.to_string());
        if let Some(answer) = self.objects.borrow().get(&key) {
            return answer.clone();
        }
        let answer = self.cluster.object(kind, namespace, name);
        self.objects.borrow_mut().insert(key, answer.clone());
        answer
    }

    fn objects(&self, kind: VolumeKind) -> Result<Vec<u8>, LookupError> {
        if let Some(answer) = self.kinds.borrow().get(&kind) {
            return answer.clone();
        }
        let answer = self.cluster.objects(kind);
        self.kinds.borrow_mut().insert(kind, answer.clone());
        answer
    }
}
