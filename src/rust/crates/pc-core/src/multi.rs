//! One level's work over several devices, and how their results merge.
//!
//! Every device starts a level from the same snapshot and owns a disjoint share of its pairs, so
//! each pair's outcome is what one device would have found; the merge only has to combine what
//! the shares wrote:
//! - the graph: a device clears the bits of the pairs it removed (both (i, j) and (j, i)), so the
//!   merged graph is the AND of the devices' copies ([`and_into`]);
//! - pMax: a device raises only the two cells of its own pairs, from a copy that started equal, so
//!   the merged pMax is the cell-wise maximum ([`max_into`]);
//! - level 0's sepset bits: set by the pair's owner only, merged by OR ([`or_into`]);
//! - counts add up, "not done" is an OR, and level 1's sepsets are the union of the lists.
//!
//! None of these depends on the order the shares are merged in, so k devices give one device's
//! result in every slot. The dense levels split statically (level 0 by rows, balanced by pairs:
//! [`row_ranges`]; level 1 by contiguous edge blocks: [`even_ranges`]); from level 2 on, where the
//! work per edge is uneven, [`split_level`] hands out edge blocks to whichever device is free,
//! or, for backends by rounds, edges as each device's rounds make room ([`EdgeFeed`]).
//! The CUDA backends use the same ranges and the same rules (peer copies and reduction kernels);
//! `DenseCpu::with_devices` and [`Split`] over CPU backends are their twins in CI.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use crate::backend::{run_watched, Backend, Control, Watch};
use crate::error::{PcError, Result};
use crate::plan::{EdgeOutcome, LevelPlan};
use crate::rounds::feed::EdgeFeed;
use crate::rounds::rank_windows::GROUPS;

/// Blocks per device at levels >= 2: enough for the fast device to take over the slow one's
/// tail, few enough that each block still fills a GPU.
pub const BLOCKS_PER_DEVICE: usize = 4;

/// The first level whose edges devices by rounds take from one feed ([`EdgeFeed`]): from level 2
/// on an edge's work ranges from one test to hundreds, and blocks dealt in advance leave one device
/// the other's tail; at level 1 each edge holds a few dozen tests at most and blocks balance
/// (CMI-kNN, p = 100, two H200s: level 2 in 8.0, 8.0 and 9.0 s fed against 8.6, 9.1 and 8.8 s in
/// blocks over three calls; level 1 in 40.5 s fed against 37.1 s).
pub const FED_FROM_LEVEL: usize = 2;

/// [`BLOCKS_PER_DEVICE`], or `GPUPC_BLOCKS_PER_DEVICE` (at least 1) to measure another cut: each
/// block's last rounds hold few tests, so more blocks pay that tail more often, fewer balance
/// the devices less.
fn blocks_per_device() -> usize {
    std::env::var("GPUPC_BLOCKS_PER_DEVICE").ok().and_then(|v| v.trim().parse::<usize>().ok()).map_or(BLOCKS_PER_DEVICE, |b| b.max(1))
}

/// `k` row ranges of 0..p holding about equal numbers of pairs i < j (row i holds p - 1 - i).
pub fn row_ranges(p: usize, k: usize) -> Vec<Range<usize>> {
    let k = k.max(1);
    let total = (p as u128) * (p.saturating_sub(1) as u128) / 2;
    let mut out = Vec::with_capacity(k);
    let (mut start, mut acc) = (0usize, 0u128);
    for d in 0..k {
        let goal = total * (d as u128 + 1) / k as u128;
        let mut end = start;
        while end < p && (acc < goal || d + 1 == k) {
            acc += (p - 1 - end) as u128;
            end += 1;
        }
        out.push(start..end);
        start = end;
    }
    out
}

/// `k` contiguous ranges of 0..n of sizes differing by at most one.
pub fn even_ranges(n: usize, k: usize) -> Vec<Range<usize>> {
    let k = k.max(1);
    (0..k).map(|d| n * d / k..n * (d + 1) / k).collect()
}

/// Contiguous blocks of items with about equal total weight, at most `blocks` of them, none empty.
pub fn weighted_blocks(weights: &[u64], blocks: usize) -> Vec<Range<usize>> {
    let n = weights.len();
    if n == 0 {
        return Vec::new();
    }
    let blocks = blocks.clamp(1, n);
    let total: u128 = weights.iter().map(|&w| w as u128).sum::<u128>().max(1);
    let mut out = Vec::with_capacity(blocks);
    let (mut start, mut acc) = (0usize, 0u128);
    for (k, &w) in weights.iter().enumerate() {
        acc += w as u128;
        let goal = total * (out.len() as u128 + 1) / blocks as u128;
        if acc >= goal && out.len() + 1 < blocks {
            out.push(start..k + 1);
            start = k + 1;
        }
    }
    if start < n {
        out.push(start..n);
    }
    out
}

/// `dst &= src` (graph bits: a pair removed by any device is removed).
pub fn and_into(dst: &mut [u64], src: &[u64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d &= *s);
}

/// `dst |= src` (level 0's sepset bits).
pub fn or_into(dst: &mut [u64], src: &[u64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| *d |= *s);
}

/// `dst = max(dst, src)` cell by cell (pMax; never NaN).
pub fn max_into(dst: &mut [f64], src: &[f64]) {
    dst.iter_mut().zip(src).for_each(|(d, s)| {
        if *s > *d {
            *d = *s
        }
    });
}

/// What a device's own level sees of the whole call's watch: only whether to go on (the calling
/// thread alone may talk to R), and, from a fed level's loop, how many of its edges are decided.
struct DeviceWatch<'a> {
    ctl: &'a Control,
    stop: &'a AtomicBool,
    /// Whether `tick` counts the device's decided edges into `ctl` (a fed level's); a block's
    /// edges are counted when it ends.
    counts: bool,
    counted: u64,
}

impl<'a> DeviceWatch<'a> {
    fn new(ctl: &'a Control, stop: &'a AtomicBool, counts: bool) -> Self {
        DeviceWatch { ctl, stop, counts, counted: 0 }
    }
}

impl Watch for DeviceWatch<'_> {
    fn tick(&mut self, done: u64, _total: u64) -> bool {
        if self.counts && done > self.counted {
            self.ctl.edges_done.fetch_add(done - self.counted, Ordering::Relaxed);
            self.counted = done;
        }
        self.keep_going()
    }
    fn keep_going(&mut self) -> bool {
        !self.ctl.cancelled() && !self.stop.load(Ordering::Relaxed)
    }
}

/// Keeps the first device error (named by its device) and stops the others. An interrupt is
/// what a device stopped by another's error returns, so any other error replaces it, whichever
/// lands first; one that the watch asked for is not an error of the device.
fn device_failed(index: usize, label: &str, e: PcError, ctl: &Control, stop: &AtomicBool, first_err: &Mutex<Option<PcError>>) {
    stop.store(true, Ordering::Relaxed);
    let interrupted = matches!(e, PcError::Interrupted);
    let mut fe = first_err.lock().unwrap_or_else(|e| e.into_inner());
    let keep = match &*fe {
        None => !(interrupted && ctl.cancelled()),
        Some(PcError::Interrupted) => !interrupted,
        Some(_) => false,
    };
    if keep {
        *fe = Some(label_error(index, label, e));
    }
}

/// The level's end for the calling thread: the first device error, else an interrupt, else the
/// outcomes `collect` assembles.
fn level_result(ctl: &Control, first_err: &Mutex<Option<PcError>>, collect: impl FnOnce() -> Result<Vec<EdgeOutcome>>) -> Result<Vec<EdgeOutcome>> {
    if let Some(e) = first_err.lock().unwrap_or_else(|e| e.into_inner()).take() {
        return Err(e);
    }
    if ctl.cancelled() {
        return Err(PcError::Interrupted);
    }
    collect()
}

/// Runs a planned level over `devs`: the edges cut into blocks of about equal test counts
/// ([`BLOCKS_PER_DEVICE`] per device), each device's thread taking the next block when it is
/// free; the outcomes land at their edges' places, so the result is the plan's order whatever
/// device ran what. The first device error stops the others and is returned with the device's
/// label (`labels[d]`).
pub fn split_level<B: Backend + Send>(devs: &mut [B], labels: &[String], plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
    if devs.len() <= 1 || plan.edges.len() < 2 {
        return match devs.first_mut() {
            Some(d) => d.run_level(plan, watch),
            None => Err(PcError::Internal("no device to run the level on".into())),
        };
    }
    if plan.level >= FED_FROM_LEVEL && devs.iter().all(|d| d.feeds_rounds()) {
        return fed_level(devs, labels, plan, watch);
    }
    let weights: Vec<u64> = plan.edges.iter().map(|e| e.n_tests().max(1)).collect();
    let blocks = weighted_blocks(&weights, devs.len() * blocks_per_device());
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let first_err: Mutex<Option<PcError>> = Mutex::new(None);
    let slots: Vec<Mutex<Option<Vec<EdgeOutcome>>>> = blocks.iter().map(|_| Mutex::new(None)).collect();
    let (blocks, slots, next, stop, first_err) = (&blocks, &slots, &next, &stop, &first_err);
    run_watched(plan.edges.len() as u64, watch, Duration::from_millis(100), |ctl| {
        std::thread::scope(|s| {
            for (index, (dev, label)) in devs.iter_mut().zip(labels).enumerate() {
                s.spawn(move || {
                    let mut sub = plan.with_edges(Vec::new());
                    let mut w = DeviceWatch::new(ctl, stop, false);
                    loop {
                        if ctl.cancelled() || stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let b = next.fetch_add(1, Ordering::Relaxed);
                        let Some(range) = blocks.get(b) else { return };
                        sub.edges.clear();
                        sub.edges.extend_from_slice(&plan.edges[range.clone()]);
                        let r = dev.run_level(&sub, &mut w).and_then(|out| {
                            if out.len() == sub.edges.len() {
                                Ok(out)
                            } else {
                                Err(PcError::Internal(format!("returned {} outcomes for {} edges", out.len(), sub.edges.len())))
                            }
                        });
                        match r {
                            Ok(out) => {
                                ctl.edges_done.fetch_add(out.len() as u64, Ordering::Relaxed);
                                *slots[b].lock().unwrap_or_else(|e| e.into_inner()) = Some(out);
                            }
                            Err(e) => return device_failed(index, label, e, ctl, stop, first_err),
                        }
                    }
                });
            }
        });
        level_result(ctl, first_err, || {
            let mut out = crate::mem::try_vec::<EdgeOutcome>(plan.edges.len(), "p", "the level's outcomes")?;
            for slot in slots {
                let part = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
                out.extend(part.ok_or_else(|| PcError::Internal("a block of the level was not run".into()))?);
            }
            Ok(out)
        })
    })
}

/// [`split_level`] over devices that take the level's edges from one queue as their rounds make
/// room ([`EdgeFeed`]); each edge's outcome lands at its place in the plan.
fn fed_level<B: Backend + Send>(devs: &mut [B], labels: &[String], plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
    let feed = EdgeFeed::new(plan, devs.len() * GROUPS);
    let stop = AtomicBool::new(false);
    let first_err: Mutex<Option<PcError>> = Mutex::new(None);
    let parts: Vec<Mutex<Vec<(u32, EdgeOutcome)>>> = devs.iter().map(|_| Mutex::new(Vec::new())).collect();
    let (feed, parts, stop, first_err) = (&feed, &parts, &stop, &first_err);
    run_watched(plan.edges.len() as u64, watch, Duration::from_millis(100), |ctl| {
        std::thread::scope(|s| {
            for (index, (dev, label)) in devs.iter_mut().zip(labels).enumerate() {
                s.spawn(move || {
                    let mut w = DeviceWatch::new(ctl, stop, true);
                    match dev.run_fed(plan, feed, &mut w) {
                        Ok(out) => *parts[index].lock().unwrap_or_else(|e| e.into_inner()) = out,
                        Err(e) => device_failed(index, label, e, ctl, stop, first_err),
                    }
                });
            }
        });
        level_result(ctl, first_err, || {
            let mut out = crate::mem::try_vec::<Option<EdgeOutcome>>(plan.edges.len(), "p", "the level's outcomes")?;
            out.resize(plan.edges.len(), None);
            for part in parts {
                for (e, o) in std::mem::take(&mut *part.lock().unwrap_or_else(|e| e.into_inner())) {
                    let slot = out.get_mut(e as usize).ok_or_else(|| PcError::Internal(format!("an outcome for edge {e} of {}", plan.edges.len())))?;
                    if slot.replace(o).is_some() {
                        return Err(PcError::Internal(format!("edge {e} of the level was run twice")));
                    }
                }
            }
            out.into_iter().map(|o| o.ok_or_else(|| PcError::Internal("an edge of the level was not run".into()))).collect()
        })
    })
}

/// A device's error with the device named: the `index`-th of the call's devices, `label`. A GPU
/// failure (`Cuda`, `DeviceOutOfMemory`) or an internal error becomes [`PcError::OnDevice`]; an
/// error already named, an invalid argument or an interrupt stays as it is.
pub fn label_error(index: usize, label: &str, e: PcError) -> PcError {
    match e {
        e @ (PcError::Cuda(_) | PcError::Internal(_) | PcError::DeviceOutOfMemory { .. }) => PcError::OnDevice { index, label: label.to_string(), error: Box::new(e) },
        other => other,
    }
}

/// The tests a level's plan holds (every edge's full sequence, both sides).
pub fn level_tests(plan: &LevelPlan) -> u64 {
    plan.edges.iter().map(|e| e.n_tests()).sum()
}

/// A Gaussian level's work in tests of order 2: a test of order m costs about 0.15 + 0.01 m^2 ns
/// on one H200 (the partial correlation's pseudo-inverse grows with m; at p = 55,572, one
/// device: 0.22 ns a test at level 2, 0.78 at 9, 2.1 at 13, 4.5 at 17, 7.7 at 19), so a level of
/// 1e9 tests of order 17 is as much work as 1.6e10 of order 2. Counting tests alone kept the
/// deep levels, seconds each, on one device.
pub fn gauss_level_work(level: usize, tests: u64) -> u64 {
    let m = level as f64;
    (tests as f64 * (15.0 + m * m) / 19.0).round() as u64
}

/// Whether a level of `tests` tests is worth splitting over `devices` devices: a split costs
/// each device a round of fixed work (a sub-plan, its launches, a synchronisation), so a level
/// smaller than `min_tests` runs on the first device alone. `GPUPC_SPLIT_MIN_TESTS` overrides
/// `min_tests` (0 splits every level: how the parity suites exercise the split on small cases).
pub fn worth_splitting(devices: usize, tests: u64, min_tests: u64) -> bool {
    let min = std::env::var("GPUPC_SPLIT_MIN_TESTS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(min_tests);
    devices > 1 && tests >= min
}

/// A planned backend per device; each level through [`split_level`] when it holds at least
/// `min_split_tests` tests, else on the first device. With one device it is that device's
/// backend unchanged.
pub struct Split<B> {
    pub devs: Vec<B>,
    pub labels: Vec<String>,
    pub min_split_tests: u64,
    /// Levels run on one device because they were small, and levels split.
    pub levels_alone: usize,
    pub levels_split: usize,
}

impl<B: Backend + Send> Split<B> {
    pub fn new(devs: Vec<B>, labels: Vec<String>) -> Result<Self> {
        if devs.is_empty() || devs.len() != labels.len() {
            return Err(PcError::Internal("a split backend needs one label per device, and a device".into()));
        }
        Ok(Split { devs, labels, min_split_tests: 0, levels_alone: 0, levels_split: 0 })
    }

    /// Levels of fewer tests run on the first device alone.
    pub fn with_min_split_tests(mut self, tests: u64) -> Self {
        self.min_split_tests = tests;
        self
    }
}

impl<B: Backend + Send> Backend for Split<B> {
    fn name(&self) -> String {
        let first = self.devs[0].name();
        if self.devs.len() == 1 {
            first
        } else {
            format!("{first} x {} devices", self.devs.len())
        }
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        if worth_splitting(self.devs.len(), level_tests(plan), self.min_split_tests) {
            self.levels_split += 1;
            split_level(&mut self.devs, &self.labels, plan, watch)
        } else {
            self.levels_alone += 1;
            self.devs[0].run_level(plan, watch).map_err(|e| label_error(0, &self.labels[0], e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_ranges_tile_and_balance() {
        for p in [0usize, 1, 2, 3, 10, 97, 1000] {
            for k in 1..6 {
                let r = row_ranges(p, k);
                assert_eq!(r.len(), k);
                assert_eq!(r[0].start, 0);
                assert_eq!(r[k - 1].end, p);
                for w in r.windows(2) {
                    assert_eq!(w[0].end, w[1].start);
                }
                if p >= 100 {
                    let pairs: Vec<usize> = r.iter().map(|r| r.clone().map(|i| p - 1 - i).sum()).collect();
                    let ideal = p * (p - 1) / 2 / k;
                    assert!(pairs.iter().all(|&n| n.abs_diff(ideal) <= p), "{p} {k} {pairs:?}");
                }
            }
        }
    }

    #[test]
    fn even_and_weighted_ranges_tile() {
        assert_eq!(even_ranges(10, 3), vec![0..3, 3..6, 6..10]);
        assert_eq!(even_ranges(1, 3), vec![0..0, 0..0, 0..1]);
        let w = [5u64, 1, 1, 1, 1, 1, 9, 1];
        for b in 1..10 {
            let r = weighted_blocks(&w, b);
            assert!(!r.is_empty() && r.len() <= b.min(w.len()));
            assert_eq!(r[0].start, 0);
            assert_eq!(r.last().unwrap().end, w.len());
            assert!(r.iter().all(|x| !x.is_empty()));
            for k in r.windows(2) {
                assert_eq!(k[0].end, k[1].start);
            }
        }
        assert!(weighted_blocks(&[], 4).is_empty());
    }

    /// A device that answers every edge with "no success", or fails on its `fail_at`-th block.
    struct FakeDevice {
        fail_at: Option<usize>,
        blocks: usize,
    }

    impl Backend for FakeDevice {
        fn name(&self) -> String {
            "fake".into()
        }
        fn run_level(&mut self, plan: &LevelPlan, _watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
            self.blocks += 1;
            // long enough that every device's thread takes a block
            std::thread::sleep(std::time::Duration::from_millis(20));
            if self.fail_at == Some(self.blocks) {
                return Err(PcError::Cuda("out of memory".into()));
            }
            Ok(plan.edges.iter().map(|e| EdgeOutcome { best: None, p_best: f64::NAN, max_fail: (e.i * 1000 + e.j) as f64 }).collect())
        }
    }

    fn plan_of(p: usize) -> LevelPlan {
        plan_at(p, 1)
    }

    fn plan_at(p: usize, level: usize) -> LevelPlan {
        let g = crate::graph::Adjacency::complete(p);
        let pool = crate::threads::call_pool(1, "test").unwrap();
        pool.install(|| crate::plan::plan_level(crate::plan::Order::Stable, level, &g, &crate::graph::Adjacency::empty(p), 0.05, 1.0)).unwrap()
    }

    /// A [`FakeDevice`] that takes a level's edges from one feed (as sub-plans: the trait's way).
    struct FedDevice(FakeDevice);

    impl Backend for FedDevice {
        fn name(&self) -> String {
            "fed fake".into()
        }
        fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
            self.0.run_level(plan, watch)
        }
        fn feeds_rounds(&self) -> bool {
            true
        }
    }

    // from level 2 on every edge comes from the feed once and lands at its place; a failing
    // device is named even though the others stop with an interrupt; level 1 keeps its blocks
    #[test]
    fn fed_levels_keep_plan_order_and_name_a_failing_device() {
        let plan = plan_at(40, 2);
        let labels: Vec<String> = (0..3).map(|d| format!("GPU {d}")).collect();
        let fed = |fail: Option<usize>| -> Vec<FedDevice> { (0..3).map(|d| FedDevice(FakeDevice { fail_at: (Some(d) == fail).then_some(1), blocks: 0 })).collect() };
        let mut devs = fed(None);
        let out = split_level(&mut devs, &labels, &plan, &mut crate::backend::NullWatch).unwrap();
        assert_eq!(out.len(), plan.edges.len());
        for (o, e) in out.iter().zip(&plan.edges) {
            assert_eq!(o.max_fail, (e.i * 1000 + e.j) as f64);
        }
        assert!(devs.iter().map(|d| d.0.blocks).sum::<usize>() > 3 * 2);
        for failing in 0..3 {
            let mut devs = fed(Some(failing));
            match split_level(&mut devs, &labels, &plan, &mut crate::backend::NullWatch) {
                Err(PcError::OnDevice { index, .. }) => assert_eq!(index, failing),
                other => panic!("expected device {failing}'s error, got {other:?}"),
            }
        }
        let level1 = plan_of(30);
        let mut devs = fed(None);
        split_level(&mut devs, &labels, &level1, &mut crate::backend::NullWatch).unwrap();
        assert_eq!(devs.iter().map(|d| d.0.blocks).sum::<usize>(), weighted_blocks(&vec![1; level1.edges.len()], 3 * BLOCKS_PER_DEVICE).len());
    }

    #[test]
    fn split_level_keeps_plan_order_and_names_a_failing_device() {
        let plan = plan_of(40);
        let labels: Vec<String> = (0..3).map(|d| format!("GPU {d}")).collect();
        let mut devs: Vec<FakeDevice> = (0..3).map(|_| FakeDevice { fail_at: None, blocks: 0 }).collect();
        let out = split_level(&mut devs, &labels, &plan, &mut crate::backend::NullWatch).unwrap();
        assert_eq!(out.len(), plan.edges.len());
        for (o, e) in out.iter().zip(&plan.edges) {
            assert_eq!(o.max_fail, (e.i * 1000 + e.j) as f64);
        }
        assert_eq!(devs.iter().map(|d| d.blocks).sum::<usize>(), weighted_blocks(&vec![1; plan.edges.len()], 3 * BLOCKS_PER_DEVICE).len());
        let mut devs: Vec<FakeDevice> = (0..3).map(|d| FakeDevice { fail_at: (d == 1).then_some(1), blocks: 0 }).collect();
        match split_level(&mut devs, &labels, &plan, &mut crate::backend::NullWatch) {
            Err(e @ PcError::OnDevice { index: 1, .. }) => {
                let m = e.to_string();
                assert!(m.starts_with("CUDA backend: GPU 1: ") && m.contains("out of memory") && e.is_gpu_failure(), "{m}");
            }
            other => panic!("expected the device's error, got {other:?}"),
        }
    }

    #[test]
    fn small_levels_run_on_the_first_device_alone() {
        let plan = plan_of(30);
        let tests = level_tests(&plan);
        assert_eq!(tests, plan.edges.iter().map(|e| e.n_tests()).sum::<u64>());
        assert!(tests > 0 && worth_splitting(2, tests, tests) && !worth_splitting(2, tests, tests + 1) && !worth_splitting(1, tests, 0));
        let labels: Vec<String> = (0..2).map(|d| format!("GPU {d}")).collect();
        let devs: Vec<FakeDevice> = (0..2).map(|_| FakeDevice { fail_at: None, blocks: 0 }).collect();
        let mut s = Split::new(devs, labels).unwrap().with_min_split_tests(tests + 1);
        let out = s.run_level(&plan, &mut crate::backend::NullWatch).unwrap();
        assert_eq!(out.len(), plan.edges.len());
        assert_eq!((s.devs[0].blocks, s.devs[1].blocks, s.levels_alone, s.levels_split), (1, 0, 1, 0));
        s.min_split_tests = tests;
        s.run_level(&plan, &mut crate::backend::NullWatch).unwrap();
        assert!(s.devs[1].blocks > 0 && s.levels_split == 1);
    }

    #[test]
    fn deep_gaussian_levels_weigh_more() {
        assert_eq!(gauss_level_work(2, 1000), 1000);
        let (shallow, deep) = (gauss_level_work(2, 990_000_000), gauss_level_work(17, 990_000_000));
        assert!(shallow < 1_000_000_000 && deep > 15_000_000_000, "{shallow} {deep}");
        for l in 2..40 {
            assert!(gauss_level_work(l + 1, 1_000_000) > gauss_level_work(l, 1_000_000));
        }
    }

    #[test]
    fn merges_are_and_or_max() {
        let mut a = vec![0b1111u64, 0b1010];
        and_into(&mut a, &[0b0111, 0b1110]);
        assert_eq!(a, vec![0b0111, 0b1010]);
        or_into(&mut a, &[0b1000, 0b0001]);
        assert_eq!(a, vec![0b1111, 0b1011]);
        let mut m = vec![f64::NEG_INFINITY, 0.5, 1.0];
        max_into(&mut m, &[0.1, 0.2, f64::NEG_INFINITY]);
        assert_eq!(m, vec![0.1, 0.5, 1.0]);
    }
}
