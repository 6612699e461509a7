//! What the rules share: the lookups by name that several of them make,
//! indexed once per pod ([`Lookups`], [`Grouped`]), the containers' labels
//! in messages, and the step counter the tests read. Apart from `rules.rs`
//! so that every rule file, `rules.rs` among them, takes them from beside
//! itself.

use std::cell::OnceCell;
use std::collections::BTreeMap;

use crate::incompatible::facts::{Container, RuntimeFacts, Volume};

/// Counts the rules' steps in tests, so that a test can check that the
/// work grows linearly with the pod (never wall time).
#[cfg(test)]
pub mod work {
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

pub use work::step;

/// What several rules look up by name, indexed once per pod, on first use:
/// the volumes' users (mounts by volume) and the volumes themselves.
pub struct Lookups<'a> {
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
    pub fn mounts(&self) -> &Grouped<'a> {
        self.mounts.get_or_init(|| Grouped::mounts(self.pod))
    }

    /// The first volume of each name.
    pub fn volumes(&self) -> &BTreeMap<&'a str, &'a Volume> {
        (self.volumes)
            .get_or_init(|| first_by_name(self.pod.volumes.iter().map(|v| (v.name.as_str(), v))))
    }
}

/// The first entry of each name: what a lookup by name finds, as a list
/// scanned from the start would (the API server refuses duplicate names,
/// but the webhook sees the pod first).
pub fn first_by_name<'a, T>(items: impl IntoIterator<Item = (&'a str, T)>) -> BTreeMap<&'a str, T> {
    let mut index = BTreeMap::new();
    for (name, item) in items {
        step();
        index.entry(name).or_insert(item);
    }
    index
}

impl Container {
    /// `container "x"` or `init container "x"`, for messages.
    pub fn label(&self) -> String {
        let kind = if self.init {
            "init container"
        } else {
            "container"
        };
        format!("{kind} {:?}", self.name)
    }
}

/// Names with the containers that use each (each container once), in
/// order of first use: one lookup per use, so linear in the pod however a
/// tenant shapes it.
#[derive(Default)]
pub struct Grouped<'a> {
    index: BTreeMap<&'a str, usize>,
    pub entries: Vec<(&'a str, Vec<&'a Container>)>,
}

impl<'a> Grouped<'a> {
    /// The volumes the pod's containers mount.
    pub fn mounts(pod: &'a RuntimeFacts) -> Self {
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
    pub fn add(&mut self, name: &'a str, c: &'a Container) {
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
    pub fn users(&self, name: &str) -> &[&'a Container] {
        (self.index.get(name))
            .and_then(|at| self.entries.get(*at))
            .map_or(&[], |(_, users)| users.as_slice())
    }
}

/// `container "a", init container "b"`.
pub fn labels(users: &[&Container]) -> String {
    let labels: Vec<String> = users.iter().map(|c| c.label()).collect();
    labels.join(", ")
}
