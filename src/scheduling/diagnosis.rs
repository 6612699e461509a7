//! Why no kata node can run a pod: a histogram of first-failure reasons,
//! rendered like kube-scheduler's FitError.

use std::collections::BTreeMap;
use std::fmt;

use super::reason::{Reason, Unfit};

#[derive(Debug, Default, Clone)]
pub struct Diagnosis<'n> {
    total: usize,
    // A handful of distinct reasons: ordered comparisons beat hashing them.
    reasons: BTreeMap<Reason<'n>, usize>,
    /// The current run of identical reasons, not yet in `reasons`: in a
    /// node list, neighbours mostly fail for the same reason.
    run: Option<(Reason<'n>, usize)>,
}

impl PartialEq for Diagnosis<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.total == other.total && self.sorted() == other.sorted()
    }
}

impl Eq for Diagnosis<'_> {}

impl<'n> Diagnosis<'n> {
    /// Records one node that cannot run the pod, with each of its reasons.
    pub fn record(&mut self, unfit: Unfit<'n>) {
        self.record_times(unfit, 1);
    }

    /// Records `times` nodes that cannot run the pod for the same reasons
    /// (the members of a node shape).
    pub fn record_times(&mut self, unfit: Unfit<'n>, times: usize) {
        self.total += times;
        self.count(unfit.first, times);
        for reason in unfit.more {
            self.count(reason, times);
        }
    }

    fn count(&mut self, reason: Reason<'n>, times: usize) {
        match &mut self.run {
            Some((current, count)) if *current == reason => *count += times,
            run => {
                if let Some((done, count)) = run.replace((reason, times)) {
                    *self.reasons.entry(done).or_default() += count;
                }
            }
        }
    }

    pub fn total(&self) -> usize {
        self.total
    }

    /// `(count, reason)`, most frequent first, then by text, so that the
    /// message is the same whatever the order of the node list.
    fn sorted(&self) -> Vec<(usize, String)> {
        let mut counts = self.reasons.clone();
        if let Some((reason, count)) = &self.run {
            *counts.entry(reason.clone()).or_default() += count;
        }
        let mut entries: Vec<(usize, String)> =
            counts.iter().map(|(r, n)| (*n, r.to_string())).collect();
        entries.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        entries
    }
}

impl fmt::Display for Diagnosis<'_> {
    /// `0/3 kata nodes can run this pod: 2 node(s) didn't match ..., 1 node(s) had ...`
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} kata nodes can run this pod", self.total)?;
        for (i, (count, reason)) in self.sorted().iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { ", " })?;
            write!(f, "{count} {reason}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_frequent_first_then_alphabetical() {
        let mut d = Diagnosis::default();
        d.record(Reason::taint("b", "1").into());
        for _ in 0..10 {
            d.record(Reason::NodeAffinity.into());
        }
        d.record(Reason::Unschedulable.into());
        d.record(Reason::taint("a", "").into());
        d.record(Reason::taint("b", "1").into());
        assert_eq!(d.total(), 14);
        assert_eq!(
            d.to_string(),
            "0/14 kata nodes can run this pod: 10 node(s) didn't match Pod's node affinity/selector, \
             2 node(s) had untolerated taint {b: 1}, 1 node(s) had untolerated taint {a: }, \
             1 node(s) were unschedulable"
        );
        assert_eq!(
            Diagnosis::default().to_string(),
            "0/0 kata nodes can run this pod"
        );
    }

    /// As the scheduler prints them: a node short of two resources counts
    /// once in the total and once under each reason.
    #[test]
    fn a_node_short_of_several_resources_counts_under_each() {
        let cpu = || Reason::Insufficient("cpu".into());
        let gpu = || Reason::Insufficient("nvidia.com/gpu".into());
        let mut d = Diagnosis::default();
        d.record(Unfit {
            first: cpu(),
            more: vec![gpu()],
        });
        d.record(gpu().into());
        d.record(Reason::TooManyPods.into());
        assert_eq!(d.total(), 3);
        assert_eq!(
            d.to_string(),
            "0/3 kata nodes can run this pod: 2 Insufficient nvidia.com/gpu, 1 Insufficient cpu, 1 Too many pods"
        );
    }
}
