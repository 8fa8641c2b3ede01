//! Listed G^2 tests on the GPU: the conservative / majority-rule triple checks
//! (`pc_core::orient::check_triples`) of `disCItest` / `binCItest` hand over batches of (x, y, S)
//! and get one p-value each. [`CudaGSquareBatch`] is their `BatchEvaluator` when the skeleton ran
//! on the GPU: the G^2 backend ([`CudaGSquare`]: the codes uploaded once as bytes, the
//! kernels compiled once per process; the skeleton's own backend when it ran on one device)
//! evaluates them with its own kernels, `gsquare_tests` (one block per test, the contingency
//! table in shared memory or a planned global slot) and `pchisq_points`, through its rounds'
//! device buffers ([`crate::gsquare`]'s `Rounds`).
//!
//! `gsquare_tests` takes one |S| per launch, and a batch mixes sizes, so the host
//! ([`plan_launches`]) groups the tests by |S| (each group in batch order) and cuts the groups
//! into launches of at most the backend's round budget; [`run_launches`] writes each launch's
//! tests while the previous one runs on the device (one in flight, as level 0 does) and puts
//! every p-value back at its test's place. Tests with |S| above the kernel's 32 (a table of at
//! least 2^32 strata: never run, p = 1) go to the CPU twin, `ParallelBatch`.
//!
//! The p-values are the discrete skeleton kernels': pc-core's `GSquareTest` arithmetic without
//! FMA contraction, G^2's compensated sum in a fixed order of its own (equal to the CPU's to
//! about 1e-13 relative; a decision differs only for a p-value within that of alpha), and the
//! same df rules (adaptDF, n < 10 df gives p = 1). pcalg's "n < n.min" warning counts every test
//! that checkTriple runs; every listed test runs once here, so the tests the GPU took are
//! counted on the host ([`GSquareTest::count_small_n_listed`]), the CPU twin's by `p_value`, as
//! `ParallelBatch` alone would count them.

use std::time::Instant;

use pc_core::backend::Watch;
use pc_core::citest::GSquareTest;
use pc_core::orient::{BatchEvaluator, ParallelBatch, TestBatch};
use pc_core::rounds::listed::{plan_launches, run_launches, LevelRounds, ListedPlan};
use pc_core::rounds::rank_windows::{Batch, RoundEval};
use pc_core::PcError;

use crate::gsquare::{CudaGSquare, Rounds, MAX_LEVEL};
use crate::runtime::gpu::{cuda_err, guard, Result};
use crate::runtime::memplan;
use crate::runtime::timings::Timings;

impl LevelRounds for Rounds<'_, '_> {
    fn launch_level(&mut self, level: usize, b: &Batch) -> Result<()> {
        self.set_level(level);
        RoundEval::launch(self, b)
    }
    fn finish(&mut self, b: &Batch, p: &mut Vec<f64>) -> Result<()> {
        RoundEval::finish(self, b, p)
    }
    fn in_flight(&self) -> usize {
        RoundEval::in_flight(self)
    }
}

/// The largest launch's device bytes ([`memplan::gsquare_round_bytes`]).
fn largest_round_bytes(plan: &ListedPlan) -> u64 {
    plan.launches.iter().map(|l| memplan::gsquare_round_bytes(l.tests.len(), l.level)).max().unwrap_or(0)
}

/// pcalg's `disCItest` / `binCItest` on listed tests, on the GPU; see the module docs.
pub struct CudaGSquareBatch<'a> {
    g: CudaGSquare<'a>,
    cpu: ParallelBatch<'a, GSquareTest>,
    test: &'a GSquareTest,
    timings: Timings,
}

impl<'a> CudaGSquareBatch<'a> {
    /// Opens the GPU, gets the kernels (compiled once per process) and uploads `test`'s codes
    /// ([`CudaGSquare::new`], which plans their memory); `pool` runs the tests the kernel does
    /// not take.
    pub fn new(test: &'a GSquareTest, pool: &'a rayon::ThreadPool) -> Result<Self> {
        Self::new_on(test, pool, crate::runtime::device::device_ordinal())
    }

    /// [`CudaGSquareBatch::new`] on device `ordinal`.
    pub fn new_on(test: &'a GSquareTest, pool: &'a rayon::ThreadPool, ordinal: usize) -> Result<Self> {
        let t0 = Instant::now();
        let g = CudaGSquare::new_on(test, ordinal)?;
        let timings = Timings { setup_s: t0.elapsed().as_secs_f64(), ..Default::default() };
        Ok(CudaGSquareBatch { g, cpu: ParallelBatch::new(test, pool), test, timings })
    }

    /// [`CudaGSquareBatch::new`] on the backend a GPU skeleton ran on `test` (its codes already on
    /// the device, its kernels loaded): nothing is opened or uploaded.
    pub fn from_backend(g: CudaGSquare<'a>, test: &'a GSquareTest, pool: &'a rayon::ThreadPool) -> Result<Self> {
        if !std::ptr::eq(g.test, test) {
            return Err(PcError::Internal("the kept G^2 backend was made for another test".into()));
        }
        Ok(CudaGSquareBatch { g, cpu: ParallelBatch::new(test, pool), test, timings: Timings::default() })
    }

    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    fn run_gpu(&mut self, batch: &TestBatch, plan: &ListedPlan, out: &mut [f64], watch: &mut dyn Watch) -> Result<()> {
        let g = &self.g;
        let gpu = g.gpu();
        gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        // the launches' lists and results, planned before the rounds allocate them (the table
        // slots are planned by the rounds themselves, memplan::gsquare_table_slots)
        memplan::fits(largest_round_bytes(plan), memplan::LEVEL_MARGIN, gpu.free_bytes()? as u64, "suffStat$dm", || {
            "the triple checks' tests".to_string()
        })?;
        let words = |x: u32, y: u32, s: &[u32]| g.global_words(x, y, s);
        let mut rounds = Rounds::new(g, 0)?;
        run_launches(batch, plan, Some(&words), &mut rounds, out, || watch.keep_going())?;
        let t = &mut self.timings;
        t.kernel_s += rounds.clock.kernel;
        t.transfer_s += rounds.clock.transfer;
        t.launches += rounds.clock.launches;
        t.gpu_tests += rounds.tests;
        Ok(())
    }
}

impl BatchEvaluator for CudaGSquareBatch<'_> {
    fn name(&self) -> String {
        format!("cuda ({})", self.g.info().name)
    }

    fn shares_results(&self) -> bool {
        true
    }

    fn p_values(&mut self, batch: &TestBatch, out: &mut Vec<f64>, watch: &mut dyn Watch) -> pc_core::error::Result<()> {
        crate::gauss::batch::nan_filled(out, batch.len())?;
        let plan = plan_launches(batch, MAX_LEVEL, self.g.round_budget());
        if !plan.launches.is_empty() {
            guard("running the triple checks on the GPU", || self.run_gpu(batch, &plan, out, watch))?;
            self.test.count_small_n_listed(plan.gpu_tests().map(|t| (batch.x[t], batch.y[t], batch.set(t))));
        }
        if !plan.cpu.is_empty() {
            crate::gauss::batch::on_cpu(&mut self.cpu, batch, &plan.cpu, out, watch)?;
            self.timings.cpu_tests += plan.cpu.len() as u64;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pc_core::citest::GSquareKind;
    use pc_core::PcError;

    #[test]
    fn new_fails_cleanly_without_a_gpu() {
        let d = pc_core::citest::DiscreteData::new(4, 2, vec![0, 1, 0, 1, 1, 0, 1, 0], vec![2, 2]).unwrap();
        let t = GSquareTest::new(d, GSquareKind::Dis, false).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
        match CudaGSquareBatch::new(&t, &pool) {
            Ok(g) => assert!(g.name().starts_with("cuda")),
            Err(PcError::Cuda(msg)) => assert!(!msg.is_empty()),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
}
