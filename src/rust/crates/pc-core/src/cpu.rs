//! CPU backends: every edge's canonical sequence run in order, edges in parallel on a rayon pool
//! ([`ParallelCpu`]) or one after the other on the calling thread ([`SequentialCpu`], for tests
//! that must run there, such as an R function).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::backend::{run_watched, Backend, Control, Watch};
use crate::citest::CiTest;
use crate::combinations::next_subset;
use crate::error::{PcError, Result};
use crate::plan::{decides, EdgeOutcome, EdgeWork, LevelPlan, Order};

/// Per-thread buffers for walking one edge's sequence.
#[derive(Default)]
pub struct EdgeScratch<S> {
    list: Vec<u32>,
    pos: Vec<u32>,
    set: Vec<u32>,
    test: S,
}

/// Runs the canonical sequence of `edge` up to its first success. `keep_going` is asked before
/// every test; a `false` abandons the edge with `Interrupted`.
pub fn eval_edge<T: CiTest + ?Sized>(
    plan: &LevelPlan,
    test: &T,
    sc: &mut EdgeScratch<T::Scratch>,
    edge: &EdgeWork,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<EdgeOutcome> {
    let mut max_fail = f64::NEG_INFINITY;
    for si in 0..2u8 {
        if let Some(o) = eval_side(plan, test, sc, edge, si, &mut max_fail, keep_going)? {
            return Ok(o);
        }
    }
    Ok(EdgeOutcome { best: None, p_best: f64::NAN, max_fail })
}

/// Runs side `si` of `edge` (if it has one) up to its first success, which it returns as the
/// edge's outcome; failures raise `max_fail`, which carries over from the edge's earlier side.
pub fn eval_side<T: CiTest + ?Sized>(
    plan: &LevelPlan,
    test: &T,
    sc: &mut EdgeScratch<T::Scratch>,
    edge: &EdgeWork,
    si: u8,
    max_fail: &mut f64,
    keep_going: &mut dyn FnMut() -> bool,
) -> Result<Option<EdgeOutcome>> {
    let l = plan.level;
    let Some(side) = &edge.sides[si as usize] else { return Ok(None) };
    // level 0 draws no set from the list: skip copying the whole row for every edge
    if l > 0 {
        plan.side_list(side, &mut sc.list);
    }
    sc.pos.clear();
    sc.pos.extend(0..l as u32);
    for rank in 0..side.n_ranks {
        if !keep_going() {
            return Err(PcError::Interrupted);
        }
        sc.set.clear();
        sc.set.extend(sc.pos.iter().map(|&q| sc.list[q as usize]));
        let p = test.p_value(&mut sc.test, side.x, side.y, &sc.set)?;
        if decides(p, plan.alpha, plan.na_value, max_fail) {
            return Ok(Some(EdgeOutcome { best: Some((si, rank)), p_best: p, max_fail: *max_fail }));
        }
        if rank + 1 < side.n_ranks {
            next_subset(side.len, &mut sc.pos);
        }
    }
    Ok(None)
}

pub struct ParallelCpu<'a, T> {
    test: &'a T,
    pool: rayon::ThreadPool,
}

impl<'a, T: CiTest + Sync> ParallelCpu<'a, T> {
    /// `threads == 0` uses every core.
    pub fn new(test: &'a T, threads: usize) -> Result<Self> {
        let pool = crate::threads::call_pool(threads, "cpu")?;
        Ok(ParallelCpu { test, pool })
    }

    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    pub fn test(&self) -> &'a T {
        self.test
    }

    pub fn pool(&self) -> &rayon::ThreadPool {
        &self.pool
    }
}

impl<T: CiTest + Sync> Backend for ParallelCpu<'_, T> {
    fn name(&self) -> String {
        format!("cpu ({} threads)", self.threads())
    }

    fn row_split(&mut self) -> Option<&mut dyn crate::rows::RowSplit> {
        Some(self)
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let test = self.test;
        let pool = &self.pool;
        // Chunks small enough to balance uneven edges (a hub's sets dwarf a leaf's), large enough
        // that scheduling and the shared progress counter cost nothing per edge.
        let chunk = (plan.edges.len() / (self.threads() * 64)).clamp(1, 512);
        run_watched(plan.edges.len() as u64, watch, Duration::from_millis(100), |ctl: &Control| {
            pool.install(|| {
                // outcomes written in place: per-chunk vectors joined afterwards were a second
                // allocation and copy of level 0's 1.6 GB at p = 10000
                let n = plan.edges.len();
                let mut out: Vec<EdgeOutcome> = crate::mem::try_vec(n, "labels", "the level's test outcomes")?;
                out.spare_capacity_mut()[..n]
                    .par_chunks_mut(chunk)
                    .zip(plan.edges.par_chunks(chunk))
                    .try_for_each_init(EdgeScratch::<T::Scratch>::default, |sc, (dst, edges)| -> Result<()> {
                        for (d, e) in dst.iter_mut().zip(edges) {
                            d.write(eval_edge(plan, test, sc, e, &mut || !ctl.cancelled())?);
                        }
                        ctl.edges_done.fetch_add(edges.len() as u64, std::sync::atomic::Ordering::Relaxed);
                        Ok(())
                    })?;
                // SAFETY: the chunks tile out[..n] and every slot was written (an error returned above).
                unsafe { out.set_len(n) };
                Ok(out)
            })
        })
    }
}

/// Runs every test on the calling thread, in the order pcalg calls its `indepTest`, so a test
/// with state or random numbers (a permutation test after `set.seed()`) gives pcalg's graph.
/// pcalg's R `stable` walks the directed pairs (x, y) by x, then y, and tests the pair while the
/// edge is still there: the side (j, i) of an edge {i, j} comes when row j is reached, long after
/// the side (i, j). pcalg's C++ `stable.fast` tests an edge's sides back to back, in plan order.
pub struct SequentialCpu<'a, T> {
    test: &'a T,
    order: Order,
}

impl<'a, T: CiTest> SequentialCpu<'a, T> {
    pub fn new(test: &'a T, order: Order) -> Self {
        SequentialCpu { test, order }
    }
}

/// (edge index, side) in pcalg R's call order: by x, then y.
fn stable_call_order(plan: &LevelPlan) -> Result<Vec<(usize, u8)>> {
    let n = plan.edges.iter().map(|e| e.sides.iter().flatten().count()).sum();
    let mut calls: Vec<(usize, u8)> = crate::mem::try_vec(n, "labels", "the level's call order")?;
    for (k, e) in plan.edges.iter().enumerate() {
        for (si, s) in e.sides.iter().enumerate() {
            if s.is_some() {
                calls.push((k, si as u8));
            }
        }
    }
    let side = |&(k, si): &(usize, u8)| plan.edges[k].sides[si as usize].map(|s| (s.x, s.y));
    calls.sort_by_key(side);
    Ok(calls)
}

impl<T: CiTest> Backend for SequentialCpu<'_, T> {
    fn name(&self) -> String {
        "cpu (1 thread, R callback)".to_string()
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let mut sc = EdgeScratch::<T::Scratch>::default();
        let n = plan.edges.len();
        let mut out: Vec<EdgeOutcome> = crate::mem::try_vec(n, "labels", "the level's test outcomes")?;
        out.resize(n, EdgeOutcome::NONE);
        let mut decided: Vec<bool> = vec![false; n];
        let calls: Vec<(usize, u8)> = match self.order {
            Order::Stable => stable_call_order(plan)?,
            Order::StableFast => (0..n).flat_map(|k| [(k, 0u8), (k, 1u8)]).collect(),
        };
        let total = calls.len() as u64;
        let mut last = Instant::now();
        let mut done = 0u64;
        for (k, si) in calls {
            if decided[k] {
                continue; // pcalg: G[y, x] is FALSE once the edge's other side removed it
            }
            let mut keep_going = || {
                if last.elapsed() < Duration::from_millis(100) {
                    return true;
                }
                last = Instant::now();
                watch.tick(done, total)
            };
            let e = &plan.edges[k];
            let mut max_fail = out[k].max_fail;
            let hit = eval_side(plan, self.test, &mut sc, e, si, &mut max_fail, &mut keep_going)?;
            out[k] = hit.unwrap_or(EdgeOutcome { best: None, p_best: f64::NAN, max_fail });
            decided[k] = hit.is_some();
            done += 1;
        }
        Ok(out)
    }
}
