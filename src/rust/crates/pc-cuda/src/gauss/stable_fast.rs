//! stable.fast's planned levels on the GPU: its side 1 lists j's neighbours that are not
//! adjacent to i first and skips the sets made only of common neighbours, an order the cuPC-S
//! kernels (one set of a row shared by every edge of the row) do not have. Its levels go through
//! `pc_core::rounds::rank_windows::run_rounds` instead: rounds of per-edge rank windows written out as listed tests,
//! evaluated one thread each by `gauss_listed_l*` with pcalg's C++ arithmetic, and each edge's
//! first success taken in canonical order on the host. Levels 0 and 1 normally run dense
//! (`dense.rs`); they come here only when pMax and the graph do not fit on the device.

use std::sync::atomic::Ordering;
use std::time::Instant;

use cudarc::driver::LaunchConfig;
use pc_core::backend::Control;
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::PcError;

use crate::gauss::host::{self, BLOCK};
use crate::gauss::{params, CudaGauss, PD_MARGIN};
use crate::runtime::gpu::{cuda_err, Clock, Result};
use crate::runtime::timings::LevelTimings;
use pc_core::rounds::rank_windows::{run_rounds, Batch};

/// Tests per round: enough to fill the device several times over (24 bytes of lists and
/// 8 of result per test at |S| = 4).
const ROUND_TESTS: usize = 1 << 22;

impl CudaGauss {
    /// One stable.fast level by rounds of listed tests; `zfac` is the C++ test's factor for the
    /// level (finite: the caller sends a level whose test stops with an error to the CPU).
    pub(crate) fn level_listed(&self, plan: &LevelPlan, zfac: f64, ctl: &Control, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let l = plan.level;
        let variant = host::set_kernel_variant(l.max(1)).ok_or_else(|| PcError::Internal(format!("no listed-test kernel for level {l}")))?;
        let f = &self.f.listed.iter().find(|(m, _)| *m == variant).ok_or_else(|| PcError::Internal(format!("listed-test kernel {variant} not loaded")))?.1;
        let ne = plan.edges.len() as u64;
        let mut clock = Clock::default();
        let (pu, sym, cpp, li) = (self.p as u64, self.symmetric as i32, 1i32, l as i32);
        let gpu = &self.gpu;
        let clk = &mut clock;
        let mut tests = 0u64;
        // the rounds' tests are written out on every core (a level of millions of edges)
        let pool = pc_core::threads::call_pool(0, "stable.fast rounds")?;
        let out = run_rounds(
            plan,
            ROUND_TESTS,
            Some(&pool),
            |b: &Batch| {
                let n = b.len();
                if n == 0 {
                    return Ok(Vec::new());
                }
                gpu.ensure_free(n * (16 + 4 * l), "a round of stable.fast tests")?;
                let xd = gpu.up(clk, &b.x, "the tests")?;
                let yd = gpu.up(clk, &b.y, "the tests")?;
                // |S| = 0 has no members; the kernel still takes a valid pointer
                let sd = if b.s.is_empty() { gpu.alloc::<u32>(1, "the tests")? } else { gpu.up(clk, &b.s, "the tests")? };
                let mut pd = gpu.alloc::<f64>(n, "the p-values")?;
                let nu = n as u64;
                let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
                let t = Instant::now();
                let args = params::Listed { C: &self.c, p: pu, tx: &xd, ty: &yd, s: &sd, n_tests: nu, l: li, zfac, pd_margin: PD_MARGIN, symmetric: sym, cpp, p_out: &mut pd };
                // SAFETY: tests 0..n have x, y and their l members in s (rank_windows.rs writes l
                // per test) all < p; l <= the variant's maximum; p_out holds n entries.
                unsafe { args.launch(gpu, f, cfg, "gauss_listed") }?;
                gpu.finish_launch(clk, t, "gauss_listed")?;
                tests += n as u64;
                gpu.down(clk, &pd, n, "the p-values")
            },
            |decided| {
                ctl.edges_done.store((decided as u64).min(ne), Ordering::Relaxed);
                !ctl.cancelled()
            },
        );
        lt.kernel_s += clock.kernel;
        lt.transfer_s += clock.transfer;
        lt.launches += clock.launches;
        lt.host_s += clock.host;
        lt.gpu_tests += tests;
        out
    }
}
