//! A level's edges shared by several devices' round loops, each taking edges as its rounds make
//! room ([`crate::rounds::rank_windows::run_fed`]).
//!
//! Blocks of edges dealt before a level starts ([`crate::multi::split_level`]'s) balance only as
//! well as their weights guess the work, and an edge's work is unknown until it runs: one removed
//! by its first test costs one test, one that stays costs its whole sequence. Each block also ends
//! in its own tail of rounds that hold a few undecided edges. Fed from one queue, every device
//! keeps its rounds full while edges are left, and the level ends when the last rounds of the
//! devices' live edges do (CMI-kNN at p = 100 on two H200s, three calls: level 2 in 8.0, 8.0 and
//! 9.0 s fed, 8.6, 9.1 and 8.8 s in blocks). Levels 0 and 1 stay in blocks
//! ([`crate::multi::FED_FROM_LEVEL`]).
//!
//! The queue is the plan's edges in plan order: neighbouring edges share x and their first sets,
//! so a round of them shares the (x, S) groups whose permutations CMI-kNN makes once per group
//! (level 1 at p = 100 on two H200s, fed longest first: 44.6 s; in plan order: 40.5 s). A group
//! takes edges until it holds [`EdgeFeed::share`] live ones, and never more than the untaken
//! edges over the consumers at once, so that the last edges spread over the devices. Which device runs an edge changes when its tests run, never which
//! tests decide it: an edge's outcome depends only on its own tests.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::plan::LevelPlan;

pub struct EdgeFeed {
    total: usize,
    next: AtomicUsize,
    consumers: usize,
    share: usize,
}

impl EdgeFeed {
    /// The edges of `plan` for `consumers` round groups (devices times each device's groups).
    pub fn new(plan: &LevelPlan, consumers: usize) -> Self {
        let consumers = consumers.max(1);
        // half a fair share live at once, so that the other half is left to even out the ends
        let share = plan.edges.len().div_ceil(2 * consumers).max(1);
        EdgeFeed { total: plan.edges.len(), next: AtomicUsize::new(0), consumers, share }
    }

    /// Edges a group keeps live while the queue lasts.
    pub fn share(&self) -> usize {
        self.share
    }

    /// Takes up to `want` edges (indices into the plan's edges), none once the queue is empty.
    pub fn take(&self, want: usize) -> Range<u32> {
        let total = self.total;
        let mut at = self.next.load(Ordering::Relaxed);
        loop {
            if at >= total || want == 0 {
                return 0..0;
            }
            let n = want.min((total - at).div_ceil(self.consumers));
            match self.next.compare_exchange_weak(at, at + n, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => return at as u32..(at + n) as u32,
                Err(now) => at = now,
            }
        }
    }

    /// Edges not yet taken.
    pub fn left(&self) -> usize {
        self.total.saturating_sub(self.next.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::Adjacency;
    use crate::plan::{plan_level, Order};
    use crate::rounds::rank_windows::tests::{random_graph, Lcg};

    // every edge is taken exactly once however many threads take at once, in plan order
    #[test]
    fn every_edge_is_taken_once() {
        let mut r = Lcg(3);
        let p = 40;
        let adj = random_graph(p, 40, &mut r);
        let plan = plan_level(Order::Stable, 2, &adj, &Adjacency::empty(p), 0.05, 1.0).unwrap();
        let feed = EdgeFeed::new(&plan, 4);
        let feed = &feed;
        let taken: Vec<Vec<u32>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4).map(|k| s.spawn(move || {
                let mut mine = Vec::new();
                loop {
                    let got = feed.take(1 + k);
                    if got.is_empty() {
                        return mine;
                    }
                    mine.extend(got);
                }
            })).collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all: Vec<u32> = taken.concat();
        all.sort_unstable();
        assert_eq!(all, (0..plan.edges.len() as u32).collect::<Vec<_>>());
        assert_eq!(feed.left(), 0);
        let single = EdgeFeed::new(&plan, 1);
        assert_eq!(single.take(usize::MAX), 0..plan.edges.len() as u32);
        // the last edges go a few at a time
        let two = EdgeFeed::new(&plan, 2);
        assert_eq!(two.take(usize::MAX).len(), plan.edges.len().div_ceil(2));
        assert!(two.take(0).is_empty());
    }
}
