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
//! edges over the consumers at once, so that the last edges spread over the devices. Once the
//! queue is empty a device left without live edges waits, and the next device to take a round
//! back hands it up to half its live edges, each with where its sequence stands (the next key,
//! the window's width, the largest failure so far): an edge taken late can hold most of a level's
//! remaining tests (CMI-kNN level 2 at p = 100 on two H200s: one device ended 2.6 s before the
//! other). Which device runs an edge changes when its tests run, never which tests decide it: an
//! edge's outcome depends only on its own tests.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use crate::plan::{EdgeOutcome, LevelPlan};
use crate::rounds::rank_windows::Cursor;

pub struct EdgeFeed {
    total: usize,
    next: AtomicUsize,
    consumers: usize,
    share: usize,
    /// Live edges one device handed over for another to go on with, once the queue is empty.
    handed: Mutex<Vec<Handed>>,
    /// Edges taken and not yet decided (live in a device's rounds, or handed over).
    held: AtomicUsize,
    /// Devices with no live edge, waiting for handed ones.
    waiting: AtomicUsize,
    /// Edges handed over so far.
    moved: AtomicUsize,
}

/// An undecided edge with where its sequence stands: the next key, the next window's width and
/// its outcome so far (the largest failure).
#[derive(Clone, Copy, Debug)]
pub struct Handed {
    pub edge: u32,
    pub cursor: Cursor,
    pub width: u64,
    pub out: EdgeOutcome,
}

impl EdgeFeed {
    /// The edges of `plan` for `consumers` round groups (devices times each device's groups).
    pub fn new(plan: &LevelPlan, consumers: usize) -> Self {
        let consumers = consumers.max(1);
        // half a fair share live at once, so that the other half is left to even out the ends
        let share = plan.edges.len().div_ceil(2 * consumers).max(1);
        EdgeFeed {
            total: plan.edges.len(),
            next: AtomicUsize::new(0),
            consumers,
            share,
            handed: Mutex::new(Vec::new()),
            held: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            moved: AtomicUsize::new(0),
        }
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

    /// Counts `n` edges taken by a round loop (which then reports each decided one).
    pub(crate) fn hold(&self, n: usize) {
        self.held.fetch_add(n, Ordering::AcqRel);
    }

    /// Counts `n` held edges decided.
    pub(crate) fn release(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::AcqRel);
    }

    /// Whether no edge is left anywhere: none untaken, none live or handed over.
    pub(crate) fn drained(&self) -> bool {
        self.left() == 0 && self.held.load(Ordering::Acquire) == 0
    }

    /// Devices waiting for handed edges.
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Acquire)
    }

    pub(crate) fn set_waiting(&self, on: bool) {
        if on {
            self.waiting.fetch_add(1, Ordering::AcqRel);
        } else {
            self.waiting.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// Hands live edges over to a waiting device (they stay held).
    pub(crate) fn hand_over(&self, edges: Vec<Handed>) {
        self.moved.fetch_add(edges.len(), Ordering::Relaxed);
        self.handed.lock().unwrap_or_else(|e| e.into_inner()).extend(edges);
    }

    /// Takes the edges handed over so far.
    pub(crate) fn take_handed(&self) -> Vec<Handed> {
        std::mem::take(&mut *self.handed.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Edges that went from one device to another during the level.
    pub fn moved(&self) -> usize {
        self.moved.load(Ordering::Relaxed)
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
