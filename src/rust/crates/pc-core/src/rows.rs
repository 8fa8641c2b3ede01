//! A "stable" level >= 2 split by rows between workers that post their successes to each other
//! while they run: the devices of one process, or the ranks of an MPI job ([`crate::ranks`]).
//!
//! An edge {i, j} is tested from row i (sets drawn from adj(i) \ {j}) and from row j. A GPU
//! enumerates a row's sets once and tests each against every edge of the row (the cuPC-S shape),
//! so a worker that holds only some edges of a row still pays for all of its sets: splitting a
//! level's edges between K ranks left every rank most rows' set work (at p = 55,572, 4 ranks ran
//! a level in about half one GPU's time, where 4 devices splitting rows ran it in a quarter). Split
//! by rows instead, an edge's two sides may run on different workers, and a side whose edge the
//! other side already removed would enumerate its sets to the end; so workers keep every edge's
//! smallest success key on a [`KeyBoard`], post to it and read from it between rounds, and skip
//! what a smaller key already decides. Keys are (side, rank) packed so that u64 order is pcalg's
//! order ([`crate::plan::pack_key`]): the board's minimum is the edge's first success, whoever
//! found it. Failures only raise an edge's largest failing p-value (a word per edge, merged by
//! max); a worker that ran a test past the first success only adds failures, which every success
//! dominates ([`crate::plan::EdgeOutcome`]).
//!
//! [`RowSplit`] is what a backend offers for this; the CUDA Gaussian backend runs its set kernels
//! under it, and [`ParallelCpu`] has a twin (each side of a row run in canonical order, the board
//! read before every test) that the ranks' tests use where there is no GPU.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use crate::backend::Control;
use crate::citest::CiTest;
use crate::combinations::unrank;
use crate::cpu::ParallelCpu;
use crate::error::{PcError, Result};
use crate::plan::{decides, pack_key, unpack_key, EdgeOutcome, LevelPlan, Order};

/// No success found (yet): larger than every key.
pub const NO_KEY: u64 = u64::MAX;

/// A largest failing p-value as a word that u64 order ranks like the value (0: no failure): the
/// bits of a non-negative double rise with it.
#[inline]
pub fn fail_word(p: f64) -> u64 {
    if p == f64::NEG_INFINITY {
        0
    } else {
        p.to_bits() + 1
    }
}

#[inline]
pub fn decode_fail_word(v: u64) -> f64 {
    if v == 0 {
        f64::NEG_INFINITY
    } else {
        f64::from_bits(v - 1)
    }
}

/// Every edge's smallest success key as far as any worker has posted it.
pub struct KeyBoard {
    best: Vec<AtomicU64>,
}

impl KeyBoard {
    pub fn new(ne: usize) -> Result<Self> {
        let mut best = crate::mem::try_vec::<AtomicU64>(ne, "suffStat", "the level's shared keys")?;
        best.extend((0..ne).map(|_| AtomicU64::new(NO_KEY)));
        Ok(KeyBoard { best })
    }

    pub fn len(&self) -> usize {
        self.best.len()
    }

    pub fn is_empty(&self) -> bool {
        self.best.is_empty()
    }

    #[inline]
    pub fn get(&self, k: usize) -> u64 {
        self.best[k].load(Ordering::Relaxed)
    }

    #[inline]
    pub fn lower(&self, k: usize, key: u64) {
        self.best[k].fetch_min(key, Ordering::Relaxed);
    }

    /// Lowers the board to `mine` where smaller, and `mine` to the board. On threads of its own
    /// (scoped), not rayon's global pool, which a forked R child may inherit broken.
    pub fn exchange(&self, mine: &mut [u64]) {
        let chunk = mine.len().div_ceil(8).max(1 << 16);
        std::thread::scope(|sc| {
            for (m, s) in mine.chunks_mut(chunk).zip(self.best.chunks(chunk)) {
                sc.spawn(move || {
                    for (a, b) in m.iter_mut().zip(s) {
                        *a = b.fetch_min(*a, Ordering::Relaxed).min(*a);
                    }
                });
            }
        });
    }

    pub fn snapshot(&self) -> Vec<u64> {
        self.best.iter().map(|b| b.load(Ordering::Relaxed)).collect()
    }
}

/// A level's keys from some of its rows: per edge the smallest success key found and the largest
/// failing p-value's word (its encoding is the backend's; words of one kind merge by max).
#[derive(Clone, Debug, PartialEq)]
pub struct RowKeys {
    pub best: Vec<u64>,
    pub maxfail: Vec<u64>,
    pub tests: u64,
    pub fallbacks: u64,
}

impl RowKeys {
    /// Another share's keys of the same level: the smaller key, the larger failure.
    pub fn merge(&mut self, o: &RowKeys) {
        for (a, b) in self.best.iter_mut().zip(&o.best) {
            *a = (*a).min(*b);
        }
        self.merge_maxfail(&o.maxfail);
        self.tests += o.tests;
        self.fallbacks += o.fallbacks;
    }

    pub fn merge_maxfail(&mut self, o: &[u64]) {
        for (a, b) in self.maxfail.iter_mut().zip(o) {
            *a = (*a).max(*b);
        }
    }
}

/// A backend whose "stable" levels >= 2 can be split by rows (see the module's text).
pub trait RowSplit {
    /// Whether it runs `plan` split by rows; the same answer on every worker of one kind for the
    /// same plan and data.
    fn splits(&self, plan: &LevelPlan) -> bool;
    /// Whether a split by rows beats a split by edges on this backend (a GPU's shared set work),
    /// so that ranks choose it by default.
    fn pays(&self) -> bool;
    /// The level's rows ready to run (`splits(plan)` holds).
    fn row_level<'a>(&'a mut self, plan: &'a LevelPlan) -> Result<Box<dyn RowLevel + 'a>>;
    /// Folds a row-split level's figures into the backend's own (its per-level timings).
    fn row_level_done(&mut self, _level: usize, _stats: RowLevelStats, _seconds: f64) {}
}

/// What a row-split level cost a backend, for its per-level timings.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RowLevelStats {
    pub kernel_s: f64,
    pub transfer_s: f64,
    pub host_s: f64,
    pub collect_s: f64,
    pub launches: u64,
    pub tests: u64,
    pub fallbacks: u64,
}

/// One level's rows on one backend.
pub trait RowLevel: Sync {
    /// The work of each of the level's rows, in an order fixed by the plan alone (every worker
    /// cuts the same list).
    fn weights(&self) -> &[u64];
    /// Runs the rows `picked` (indices into `weights`), posting its successes to `board` and
    /// skipping what the board's keys decide; `ctl.edges_done` counts progress in edges.
    fn run(&self, picked: &[usize], board: &KeyBoard, ctl: &Control) -> Result<RowKeys>;
    /// The level's outcomes from every worker's keys merged.
    fn outcomes(&self, keys: &RowKeys) -> Result<Vec<EdgeOutcome>>;
    /// Its costs so far.
    fn stats(&self) -> RowLevelStats {
        RowLevelStats::default()
    }
}

/// The CPU twin: a row is the sides whose sets come from that variable's adjacency.
struct CpuRows<'a, 'c, T> {
    cpu: &'a ParallelCpu<'c, T>,
    plan: &'a LevelPlan,
    /// (edge, side) of each row, rows in variable order
    sides: Vec<Vec<(u32, u8)>>,
    weights: Vec<u64>,
}

impl<'c, T: CiTest + Sync> RowSplit for ParallelCpu<'c, T> {
    fn splits(&self, plan: &LevelPlan) -> bool {
        plan.order == Order::Stable && plan.level >= 2 && !plan.edges.is_empty()
    }

    fn pays(&self) -> bool {
        false
    }

    fn row_level<'a>(&'a mut self, plan: &'a LevelPlan) -> Result<Box<dyn RowLevel + 'a>> {
        let mut rows: std::collections::BTreeMap<u32, Vec<(u32, u8)>> = Default::default();
        for (k, e) in plan.edges.iter().enumerate() {
            for (si, s) in e.sides.iter().enumerate() {
                if let Some(s) = s {
                    rows.entry(s.x).or_default().push((k as u32, si as u8));
                }
            }
        }
        let sides: Vec<Vec<(u32, u8)>> = rows.into_values().collect();
        let weights = sides
            .iter()
            .map(|r| r.iter().map(|&(k, si)| plan.edges[k as usize].sides[si as usize].map_or(0, |s| s.n_ranks)).sum::<u64>().max(1))
            .collect();
        Ok(Box::new(CpuRows { cpu: &*self, plan, sides, weights }))
    }
}

impl<T: CiTest + Sync> RowLevel for CpuRows<'_, '_, T> {
    fn weights(&self) -> &[u64] {
        &self.weights
    }

    fn run(&self, picked: &[usize], board: &KeyBoard, ctl: &Control) -> Result<RowKeys> {
        let (plan, test) = (self.plan, self.cpu.test());
        let ne = plan.edges.len();
        let mut best = crate::mem::try_vec::<AtomicU64>(ne, "p", "this rank's keys of the level")?;
        best.extend((0..ne).map(|_| AtomicU64::new(NO_KEY)));
        let mut fail = crate::mem::try_vec::<AtomicU64>(ne, "p", "this rank's failures of the level")?;
        fail.extend((0..ne).map(|_| AtomicU64::new(0)));
        let tests = AtomicU64::new(0);
        let work: Vec<(u32, u8)> = picked.iter().flat_map(|&r| self.sides[r].iter().copied()).collect();
        self.cpu.pool().install(|| {
            work.par_iter().try_for_each_init(
                || (Vec::new(), Vec::new(), T::Scratch::default()),
                |(list, set, sc): &mut (Vec<u32>, Vec<u32>, T::Scratch), &(k, si)| -> Result<()> {
                    let (k, e) = (k as usize, &plan.edges[k as usize]);
                    let Some(side) = e.sides[si as usize] else { return Ok(()) };
                    plan.side_list(&side, list);
                    let mut pos: Vec<u32> = (0..plan.level as u32).collect();
                    let mut max_fail = f64::NEG_INFINITY;
                    for rank in 0..side.n_ranks {
                        if ctl.cancelled() {
                            return Err(PcError::Interrupted);
                        }
                        let key = pack_key(si, rank);
                        if board.get(k) < key {
                            break; // an earlier test of the edge succeeded
                        }
                        set.clear();
                        set.extend(pos.iter().map(|&q| list[q as usize]));
                        let p = test.p_value(sc, side.x, side.y, set)?;
                        tests.fetch_add(1, Ordering::Relaxed);
                        if decides(p, plan.alpha, plan.na_value, &mut max_fail) {
                            best[k].fetch_min(key, Ordering::Relaxed);
                            board.lower(k, key);
                            break;
                        }
                        if rank + 1 < side.n_ranks {
                            crate::combinations::next_subset(side.len, &mut pos);
                        }
                    }
                    fail[k].fetch_max(fail_word(max_fail), Ordering::Relaxed);
                    ctl.edge_done();
                    Ok(())
                },
            )
        })?;
        Ok(RowKeys {
            best: best.into_iter().map(|a| a.into_inner()).collect(),
            maxfail: fail.into_iter().map(|a| a.into_inner()).collect(),
            tests: tests.into_inner(),
            fallbacks: 0,
        })
    }

    fn outcomes(&self, keys: &RowKeys) -> Result<Vec<EdgeOutcome>> {
        let (plan, test) = (self.plan, self.cpu.test());
        self.cpu.pool().install(|| {
            plan.edges
                .par_iter()
                .enumerate()
                .map_init(
                    || (Vec::new(), Vec::new(), T::Scratch::default()),
                    |(list, set, sc): &mut (Vec<u32>, Vec<u32>, T::Scratch), (k, e)| -> Result<EdgeOutcome> {
                        let max_fail = decode_fail_word(keys.maxfail[k]);
                        if keys.best[k] == NO_KEY {
                            return Ok(EdgeOutcome { best: None, p_best: f64::NAN, max_fail });
                        }
                        let (si, rank) = unpack_key(keys.best[k]);
                        let side = e.sides[si as usize]
                            .filter(|s| rank < s.n_ranks)
                            .ok_or_else(|| PcError::Internal(format!("test (side {si}, rank {rank}) of edge {}-{} is not in the plan", e.i, e.j)))?;
                        plan.side_list(&side, list);
                        let mut pos = vec![0u32; plan.level];
                        unrank(side.len, rank, &mut pos);
                        set.clear();
                        set.extend(pos.iter().map(|&q| list[q as usize]));
                        let p = test.p_value(sc, side.x, side.y, set)?;
                        Ok(EdgeOutcome { best: Some((si, rank)), p_best: p, max_fail })
                    },
                )
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fail_words_order_like_their_values() {
        assert_eq!(fail_word(f64::NEG_INFINITY), 0);
        assert_eq!(decode_fail_word(0), f64::NEG_INFINITY);
        let ps = [0.0, 1e-300, 0.0049, 0.5, 1.0];
        for w in ps.windows(2) {
            assert!(fail_word(w[0]) < fail_word(w[1]));
        }
        for p in ps {
            assert_eq!(decode_fail_word(fail_word(p)), p);
        }
    }

    #[test]
    fn board_keeps_the_smallest_key() {
        let b = KeyBoard::new(3).unwrap();
        b.lower(1, 9);
        b.lower(1, 12);
        let mut mine = vec![5, NO_KEY, 7];
        b.exchange(&mut mine);
        assert_eq!(mine, vec![5, 9, 7]);
        assert_eq!(b.snapshot(), vec![5, 9, 7]);
    }

    #[test]
    fn unrank_walks_next_subset_order() {
        for n in 0..9u32 {
            for l in 1..4usize.min(n as usize + 1) {
                let mut pos: Vec<u32> = (0..l as u32).collect();
                let count = crate::combinations::binomial(n as u64, l as u64).unwrap();
                for r in 0..count {
                    let mut u = vec![0u32; l];
                    unrank(n, r, &mut u);
                    assert_eq!(u, pos, "n {n} l {l} rank {r}");
                    crate::combinations::next_subset(n, &mut pos);
                }
            }
        }
    }
}
