//! The seam between the level loop and whatever evaluates tests (CPU threads, R callbacks, a GPU).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{PcError, Result};
use crate::dense::DenseLevels;
use crate::rows::RowSplit;
use crate::plan::{EdgeOutcome, LevelPlan};
use crate::rounds::feed::EdgeFeed;

/// Evaluates the tests of one level. The returned outcomes are indexed like `plan.edges` and must
/// be what the canonical sequence would give (see [`EdgeOutcome`]).
pub trait Backend {
    fn name(&self) -> String;
    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>>;
    /// A backend that runs levels 0 and 1 of the "stable" order on its own graph (no plans);
    /// the level loop then hands it those levels (see `dense.rs`).
    fn dense(&mut self) -> Option<&mut dyn DenseLevels> {
        None
    }
    /// A backend whose "stable" levels >= 2 can be split by rows between ranks that post their
    /// successes to each other while they run (see `rows.rs`).
    fn row_split(&mut self) -> Option<&mut dyn RowSplit> {
        None
    }
    /// Whether this backend runs a level best in one call: a GPU's rounds end every call with a
    /// tail of a few undecided edges that leaves the device mostly idle, so cutting a level into
    /// batches (MPI ranks moving slices as they run, `ranks.rs`) costs it more than the balance
    /// gains (CMI-kNN on two H200s' ranks: 2-3 s a run slower, in three runs of 56-61 s).
    fn whole_levels(&self) -> bool {
        false
    }
    /// Whether several devices of this backend run a level best from one shared queue of edges
    /// ([`Backend::run_fed`]) rather than from blocks dealt in advance (`multi::split_level`).
    fn feeds_rounds(&self) -> bool {
        false
    }
    /// Runs the edges it takes from `feed` (which other devices share) and returns each with its
    /// outcome. This default runs them as sub-plans, a take at a time; a backend by rounds takes
    /// edges as its rounds make room ([`crate::rounds::rank_windows::run_fed`]). `watch.tick`
    /// hears the edges decided so far.
    fn run_fed(&mut self, plan: &LevelPlan, feed: &EdgeFeed, watch: &mut dyn Watch) -> Result<Vec<(u32, EdgeOutcome)>> {
        run_fed_by_subplans(self, plan, feed, watch)
    }
}

/// [`Backend::run_fed`] by sub-plans of the edges taken, a share at a time.
pub fn run_fed_by_subplans<B: Backend + ?Sized>(b: &mut B, plan: &LevelPlan, feed: &EdgeFeed, watch: &mut dyn Watch) -> Result<Vec<(u32, EdgeOutcome)>> {
    let mut out = Vec::new();
    let mut sub = plan.with_edges(Vec::new());
    loop {
        if !watch.tick(out.len() as u64, plan.edges.len() as u64) {
            return Err(PcError::Interrupted);
        }
        let got = feed.take(feed.share());
        if got.is_empty() {
            return Ok(out);
        }
        sub.edges.clear();
        sub.edges.extend_from_slice(&plan.edges[got.start as usize..got.end as usize]);
        let res = b.run_level(&sub, &mut NullWatch)?;
        if res.len() != sub.edges.len() {
            return Err(PcError::Internal(format!("returned {} outcomes for {} edges", res.len(), sub.edges.len())));
        }
        out.extend(got.zip(res));
    }
}

/// A borrowed backend is one too, so a wrapper ([`crate::ranks::Ranks`]) can hold whatever backend
/// the caller made, `&mut dyn Backend` included.
impl<B: Backend + ?Sized> Backend for &mut B {
    fn name(&self) -> String {
        (**self).name()
    }
    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        (**self).run_level(plan, watch)
    }
    fn dense(&mut self) -> Option<&mut dyn DenseLevels> {
        (**self).dense()
    }
    fn row_split(&mut self) -> Option<&mut dyn RowSplit> {
        (**self).row_split()
    }
    fn whole_levels(&self) -> bool {
        (**self).whole_levels()
    }
    fn feeds_rounds(&self) -> bool {
        (**self).feeds_rounds()
    }
    fn run_fed(&mut self, plan: &LevelPlan, feed: &EdgeFeed, watch: &mut dyn Watch) -> Result<Vec<(u32, EdgeOutcome)>> {
        (**self).run_fed(plan, feed, watch)
    }
}

/// Called on the thread that called the level loop (for R: the main thread, the only one that may
/// touch R), so it can print, update a progress bar and check for a user interrupt.
pub trait Watch {
    fn level_start(&mut self, _level: usize, _edges: usize, _planned_tests: u64) {}
    fn level_end(&mut self, _level: usize, _tests: u64, _removed: usize, _seconds: f64) {}
    /// Progress within a level; returning false asks the backend to stop as soon as it can.
    fn tick(&mut self, _edges_done: u64, _edges_total: u64) -> bool {
        true
    }
    /// Like `tick`, for work that reports no progress (planning, bookkeeping): only asks whether
    /// to go on, so Ctrl-C also lands between a level's tests.
    fn keep_going(&mut self) -> bool {
        true
    }
}

pub struct NullWatch;
impl Watch for NullWatch {}

/// The watch of work on a thread other than the watching one: it goes on until the watching
/// thread sets the control's `cancel`.
pub struct ControlWatch<'a>(pub &'a Control);
impl Watch for ControlWatch<'_> {
    fn tick(&mut self, _: u64, _: u64) -> bool {
        !self.0.cancelled()
    }
    fn keep_going(&mut self) -> bool {
        !self.0.cancelled()
    }
}

/// Shared between a backend's worker threads and the watching thread.
#[derive(Default)]
pub struct Control {
    pub cancel: AtomicBool,
    pub edges_done: AtomicU64,
}

impl Control {
    #[inline]
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }
    #[inline]
    pub fn edge_done(&self) {
        self.edges_done.fetch_add(1, Ordering::Relaxed);
    }
}

/// Work of at most this many items (a level's edges, its rows' entries) runs on the
/// calling thread: it ends within about a millisecond, while a watcher thread and waking a pool
/// cost a good part of that each time (the fixed cost of a p = 1643 run's small levels).
pub const SMALL_WORK: u64 = 1 << 16;

/// [`run_watched`] for work of `size` items: at most [`SMALL_WORK`] runs on the calling thread,
/// and the watch is asked once afterwards whether to go on (`keep_going`: Ctrl-C). No progress is
/// reported: the work is done, and R's first tick of a level makes a progress bar (a third of a
/// millisecond, as long as the device's part of a small level).
pub fn run_watched_sized<T: Send>(
    size: u64,
    total: u64,
    watch: &mut dyn Watch,
    every: Duration,
    work: impl FnOnce(&Control) -> Result<T> + Send,
) -> Result<T> {
    if size > SMALL_WORK {
        return run_watched(total, watch, every, work);
    }
    let ctl = Control::default();
    let res = work(&ctl);
    if !watch.keep_going() {
        return Err(PcError::Interrupted);
    }
    res
}

/// Runs `work` on a scoped worker thread while the calling thread ticks `watch` every `every`
/// (`keep_going` when `total` is 0: work without progress counts); a `false` from the watch sets
/// `cancel`, and the result is then `Interrupted`.
pub fn run_watched<T: Send>(
    total: u64,
    watch: &mut dyn Watch,
    every: Duration,
    work: impl FnOnce(&Control) -> Result<T> + Send,
) -> Result<T> {
    let ctl = Control::default();
    let ctl_ref = &ctl;
    // the worker flags its end and wakes the watcher, so a level never waits out a whole `every`
    let done = AtomicBool::new(false);
    let done_ref = &done;
    let watcher = std::thread::current();
    let out = std::thread::scope(|s| {
        let handle = s.spawn(move || {
            let r = work(ctl_ref);
            done_ref.store(true, Ordering::Release);
            watcher.unpark();
            r
        });
        while !done.load(Ordering::Acquire) && !handle.is_finished() {
            std::thread::park_timeout(every);
            let go_on = if total == 0 { watch.keep_going() } else { watch.tick(ctl.edges_done.load(Ordering::Relaxed), total) };
            if !ctl.cancelled() && !go_on {
                ctl.cancel.store(true, Ordering::Relaxed);
            }
        }
        handle.join()
    });
    let res = out.map_err(|e| PcError::Internal(panic_message(&e)))?;
    if ctl.cancelled() {
        return Err(PcError::Interrupted);
    }
    res
}

pub fn panic_message(e: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = e.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = e.downcast_ref::<String>() {
        s.clone()
    } else {
        "a worker thread panicked".to_string()
    }
}
