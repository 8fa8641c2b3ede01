//! pcalg's `disCItest` / `binCItest` answer p = 1 and warn "n=.. is too small (n < n.min = ..)"
//! for every test they run with n < 10 df. The CPU backends run exactly each edge's canonical
//! prefix (up to its first success), so [`GSquareTest::p_value`] counts as it goes. A backend that
//! also computes tests past the first success (the GPU's rounds of windows) must not count those,
//! pcalg never ran them: it calls [`GSquareTest::count_small_n`] with the level's plan and
//! outcomes instead, so that the warning appears exactly when pcalg's does.

use crate::citest::{GSquareKind, GSquareTest};
use crate::combinations::next_subset;
use crate::error::{PcError, Result};
use crate::plan::{EdgeOutcome, EdgeWork, LevelPlan};

/// The ranks of each side that the canonical sequence runs: every rank of a side before the
/// first success, the ranks up to and including it on its side, none after it.
pub fn prefix_ranks(edge: &EdgeWork, o: &EdgeOutcome) -> [u64; 2] {
    let all = |si: usize| edge.sides[si].map_or(0, |s| s.n_ranks);
    match o.best {
        Some((0, r)) => [r + 1, 0],
        Some((_, r)) => [all(0), r + 1],
        None => [all(0), all(1)],
    }
}

impl GSquareTest {
    /// Adds to [`GSquareTest::small_n_tests`] the tests with n < 10 df among those pcalg runs
    /// at this level: the prefixes of `outcomes` (indexed like `plan.edges`), walked by the
    /// threads of `pool` when given (a deep level lists millions), else on the calling thread.
    pub fn count_small_n(&self, plan: &LevelPlan, outcomes: &[EdgeOutcome], pool: Option<&rayon::ThreadPool>) -> Result<()> {
        if outcomes.len() != plan.edges.len() {
            return Err(PcError::Internal(format!("{} outcomes for {} edges", outcomes.len(), plan.edges.len())));
        }
        let (n, l) = (self.data.n as f64, plan.level);
        // the level's largest df: when even that test runs, no test of the level is small
        let max_df = match self.kind {
            GSquareKind::Bin => 2f64.powi(l as i32),
            GSquareKind::Dis => {
                let m = self.data.nlev.iter().copied().max().unwrap_or(2) as f64;
                (m - 1.0) * (m - 1.0) * m.powi(l as i32)
            }
        };
        if n >= 10.0 * max_df {
            return Ok(());
        }
        let (count, min_df) = match pool {
            Some(pool) => pool.install(|| {
                use rayon::prelude::*;
                plan.edges
                    .par_chunks(4096)
                    .zip(outcomes.par_chunks(4096))
                    .map(|(e, o)| self.small_n_in(plan, e, o, max_df))
                    .reduce(|| (0, f64::INFINITY), |a, b| (a.0 + b.0, a.1.min(b.1)))
            }),
            None => self.small_n_in(plan, &plan.edges, outcomes, max_df),
        };
        self.note_small_n(count, min_df);
        Ok(())
    }

    /// Adds to [`GSquareTest::small_n_tests`] the tests among `tests` (x, y, S) with n < 10 df:
    /// for an evaluator of listed tests that computes them elsewhere (the GPU) and runs each
    /// test exactly once, as [`GSquareTest::p_value`] would have counted them. Returns the count.
    pub fn count_small_n_listed<'s>(&self, tests: impl IntoIterator<Item = (u32, u32, &'s [u32])>) -> u64 {
        let n = self.data.n as f64;
        let (mut count, mut min_df) = (0u64, f64::INFINITY);
        for (x, y, s) in tests {
            let (df, _) = self.df_strata(x as usize, y as usize, s);
            if n < 10.0 * df {
                count += 1;
                min_df = min_df.min(df);
            }
        }
        self.note_small_n(count, min_df);
        count
    }

    /// (small-n tests, their smallest df) in the prefixes of `edges` (level-wide bound `max_df`).
    fn small_n_in(&self, plan: &LevelPlan, edges: &[EdgeWork], outcomes: &[EdgeOutcome], max_df: f64) -> (u64, f64) {
        let (n, l) = (self.data.n as f64, plan.level);
        let (mut count, mut min_df) = (0u64, f64::INFINITY);
        let (mut list, mut pos, mut set) = (Vec::new(), Vec::new(), Vec::new());
        for (e, o) in edges.iter().zip(outcomes) {
            let run = prefix_ranks(e, o);
            for (si, side) in e.sides.iter().enumerate() {
                let Some(side) = side else { continue };
                if run[si] == 0 {
                    continue;
                }
                if self.kind == GSquareKind::Bin {
                    // df = 2^l for every test, and n < 10 * 2^l (above)
                    count += run[si];
                    min_df = min_df.min(max_df);
                    continue;
                }
                if l > 0 {
                    plan.side_list(side, &mut list);
                }
                pos.clear();
                pos.extend(0..l as u32);
                for r in 0..run[si] {
                    set.clear();
                    set.extend(pos.iter().map(|&q| list[q as usize]));
                    let (df, _) = self.df_strata(side.x as usize, side.y as usize, &set);
                    if n < 10.0 * df {
                        count += 1;
                        min_df = min_df.min(df);
                    }
                    if r + 1 < run[si] {
                        next_subset(side.len, &mut pos);
                    }
                }
            }
        }
        (count, min_df)
    }
}
