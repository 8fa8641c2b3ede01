//! The Gaussian set levels split by rows between MPI ranks (`pc_core::rows`, driven by
//! `pc_core::ranks`): each rank runs the set kernels on the rows dealt to it, posting its keys to
//! the level's board between rounds (as the devices of one process do, `multi.rs`), and every rank
//! then evaluates the winning tests of the merged keys again for their p-values.

use std::sync::Mutex;
use std::time::Instant;

use pc_core::backend::Control;
use pc_core::par::par_collect;
use pc_core::plan::{EdgeOutcome, LevelPlan, Order};
use pc_core::rounds::row_sets;
use pc_core::rows::{KeyBoard, RowKeys, RowLevel, RowLevelStats, RowSplit};

use super::{host, outcome_of, CudaGauss};
use crate::runtime::gpu::{guard, Clock};
use crate::runtime::timings::LevelTimings;

/// One level's rows on this device.
struct GaussRows<'a> {
    g: &'a CudaGauss,
    plan: &'a LevelPlan,
    li: row_sets::LevelInputs,
    rows: Vec<row_sets::RowWork>,
    /// Sets of the whole level (a share's progress is its part of them).
    total: u128,
    weights: Vec<u64>,
    clock: Mutex<Clock>,
    /// This rank's tests and pseudo-inverse fallbacks.
    counts: Mutex<(u64, u64)>,
}

impl RowSplit for CudaGauss {
    fn splits(&self, plan: &LevelPlan) -> bool {
        plan.order == Order::Stable && plan.level >= 2 && !plan.edges.is_empty() && !self.has_nan && host::set_kernel_variant(plan.level).is_some()
    }

    fn pays(&self) -> bool {
        true
    }

    fn row_level<'a>(&'a mut self, plan: &'a LevelPlan) -> pc_core::error::Result<Box<dyn RowLevel + 'a>> {
        row_sets::check_stable_plan(plan)?;
        self.load_level_kernels(plan.level, false)?;
        let t = Instant::now();
        let li = row_sets::level_inputs(plan, true)?;
        let rows = row_sets::work_rows(&li, plan.level)?;
        let total: u128 = rows.iter().map(|r| r.total as u128).sum();
        let weights = super::row_weights(&li, &rows, plan.level);
        let clock = Mutex::new(Clock { host: t.elapsed().as_secs_f64(), ..Default::default() });
        Ok(Box::new(GaussRows { g: &*self, plan, li, rows, total, weights, clock, counts: Mutex::new((0, 0)) }))
    }

    fn row_level_done(&mut self, level: usize, s: RowLevelStats, seconds: f64) {
        let lt = LevelTimings {
            level,
            total_s: seconds,
            kernel_s: s.kernel_s,
            transfer_s: s.transfer_s,
            launches: s.launches,
            host_s: s.host_s,
            collect_s: s.collect_s,
            gpu_tests: s.tests,
            fallbacks: s.fallbacks,
            on_cpu: false,
        };
        self.timings.add_level_sums(&lt);
        self.timings.levels.push(lt);
    }
}

impl GaussRows<'_> {
    fn add(&self, c: &Clock) {
        let mut m = self.clock.lock().unwrap_or_else(|e| e.into_inner());
        m.kernel += c.kernel;
        m.transfer += c.transfer;
        m.launches += c.launches;
        m.host += c.host;
        m.collect += c.collect;
    }
}

impl RowLevel for GaussRows<'_> {
    fn weights(&self) -> &[u64] {
        &self.weights
    }

    fn run(&self, picked: &[usize], board: &KeyBoard, ctl: &Control) -> pc_core::error::Result<RowKeys> {
        let ne = self.plan.edges.len();
        if picked.is_empty() {
            return Ok(RowKeys { best: vec![host::NO_KEY; ne], maxfail: vec![0; ne], tests: 0, fallbacks: 0 });
        }
        let rows: Vec<row_sets::RowWork> = picked.iter().map(|&r| self.rows[r].clone()).collect();
        let mut clock = Clock::default();
        let r = guard("running a level on the GPU", || self.g.sets_keys(self.plan, &self.li, rows, self.total, Some(board), ctl, &mut clock));
        self.add(&clock);
        if let Ok(k) = &r {
            let mut c = self.counts.lock().unwrap_or_else(|e| e.into_inner());
            c.0 += k.tests;
            c.1 += k.fallbacks;
        }
        r
    }

    fn outcomes(&self, keys: &RowKeys) -> pc_core::error::Result<Vec<EdgeOutcome>> {
        let mut clock = Clock::default();
        let p_best = guard("running a level on the GPU", || self.g.sets_pbest(self.plan, &self.li, &keys.best, &mut clock));
        self.add(&clock);
        let p_best = p_best?;
        let t = Instant::now();
        let out = par_collect(self.plan.edges.len(), |k| outcome_of(&self.plan.edges[k], keys.best[k], p_best[k], host::decode_max_fail(keys.maxfail[k])));
        self.clock.lock().unwrap_or_else(|e| e.into_inner()).collect += t.elapsed().as_secs_f64();
        out
    }

    fn stats(&self) -> RowLevelStats {
        let c = self.clock.lock().unwrap_or_else(|e| e.into_inner());
        let (tests, fallbacks) = *self.counts.lock().unwrap_or_else(|e| e.into_inner());
        RowLevelStats { kernel_s: c.kernel, transfer_s: c.transfer, host_s: c.host, collect_s: c.collect, launches: c.launches, tests, fallbacks }
    }
}
