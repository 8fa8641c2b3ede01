//! CPU backends: every edge's canonical sequence run in order, edges in parallel on a rayon pool
//! ([`ParallelCpu`]) or one after the other on the calling thread ([`SequentialCpu`], for tests
//! that must run there, such as an R function).

use std::time::{Duration, Instant};

use rayon::prelude::*;

use crate::backend::{run_watched, Backend, Control, Watch};
use crate::citest::CiTest;
use crate::combinations::next_subset;
use crate::error::{PcError, Result};
use crate::plan::{EdgeOutcome, EdgeWork, LevelPlan};

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
    let l = plan.level;
    let mut max_fail = f64::NEG_INFINITY;
    for (si, side) in edge.sides.iter().enumerate() {
        let Some(side) = side else { continue };
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
            let mapped = if p.is_nan() { plan.na_value } else { p };
            if mapped >= plan.alpha {
                return Ok(EdgeOutcome { best: Some((si as u8, rank)), p_best: p, max_fail });
            }
            max_fail = max_fail.max(mapped);
            if rank + 1 < side.n_ranks {
                next_subset(side.len, &mut sc.pos);
            }
        }
    }
    Ok(EdgeOutcome { best: None, p_best: f64::NAN, max_fail })
}

pub struct ParallelCpu<'a, T> {
    test: &'a T,
    pool: rayon::ThreadPool,
}

impl<'a, T: CiTest + Sync> ParallelCpu<'a, T> {
    /// `threads == 0` uses every core.
    pub fn new(test: &'a T, threads: usize) -> Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("gpupc-cpu-{i}"))
            .build()
            .map_err(|e| PcError::Internal(format!("could not start CPU threads: {e}")))?;
        Ok(ParallelCpu { test, pool })
    }

    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }
}

impl<T: CiTest + Sync> Backend for ParallelCpu<'_, T> {
    fn name(&self) -> String {
        format!("cpu ({} threads)", self.threads())
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
                let mut out: Vec<EdgeOutcome> = Vec::with_capacity(n);
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

pub struct SequentialCpu<'a, T> {
    test: &'a T,
}

impl<'a, T: CiTest> SequentialCpu<'a, T> {
    pub fn new(test: &'a T) -> Self {
        SequentialCpu { test }
    }
}

impl<T: CiTest> Backend for SequentialCpu<'_, T> {
    fn name(&self) -> String {
        "cpu (1 thread, R callback)".to_string()
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let mut sc = EdgeScratch::<T::Scratch>::default();
        let mut out = Vec::with_capacity(plan.edges.len());
        let total = plan.edges.len() as u64;
        let mut last = Instant::now();
        for (k, e) in plan.edges.iter().enumerate() {
            let done = k as u64;
            let mut keep_going = || {
                if last.elapsed() < Duration::from_millis(100) {
                    return true;
                }
                last = Instant::now();
                watch.tick(done, total)
            };
            out.push(eval_edge(plan, self.test, &mut sc, e, &mut keep_going)?);
        }
        Ok(out)
    }
}
