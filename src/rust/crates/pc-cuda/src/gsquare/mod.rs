//! The G^2 backend: pcalg's `disCItest` / `binCItest` (G^2 on contingency tables) on a GPU.
//!
//! The codes go to the device once (n x p bytes, column-major, each column padded to a multiple of
//! 16 bytes so that a thread reads 16 samples at once; at most 255 levels per variable, as
//! `DiscreteData` enforces). Each level runs in rounds of per-edge windows (`pc_core::rounds::rank_windows`): the
//! host writes out the round's tests (x, y, S; level 0 by chunks of edges without windows,
//! `pc_core::rounds::level0`), `gsquare_tests` computes their G^2 and degrees of
//! freedom (one block per test; the table in shared memory when it fits, else in the block's slot
//! of global scratch, with fewer blocks when device memory would run short), `pchisq_points` their
//! p-values (one thread per test), and the host takes each edge's first success in canonical
//! order. Both of pcalg's orders work (the windows follow the plan's side
//! lists). Levels deeper than the kernel's MAXL (32; a table then has >= 2^32 strata, so no test
//! there is ever run) go to the CPU.
//!
//! The kernel repeats pc-core's `citest::discrete` and `citest::special` arithmetic, compiled
//! without FMA contraction; only the order of G^2's compensated sum over cells differs (per-thread
//! runs, then a fixed tree over the threads), so p-values agree with the CPU's to about 1e-13
//! relative and are identical from run to run.

pub mod batch;
mod params;

use std::time::Instant;

use cudarc::driver::{CudaSlice, LaunchConfig};
use pc_core::backend::{Backend, Control, Watch};
use pc_core::citest::{GSquareKind, GSquareTest};
use pc_core::cpu::ParallelCpu;
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::PcError;

use crate::runtime::device::DeviceInfo;
use crate::runtime::gpu::{cuda_err, guard, watched_level, Clock, Gpu, Kernel, Result};
use crate::runtime::inflight::{room, RoundBuffers};
use crate::runtime::memplan;
use crate::runtime::module;
use crate::runtime::timings::{Timings, LevelTimings};
use pc_core::rounds::level0::run_level0;
use pc_core::rounds::rank_windows::{run_pipelined, Batch, RoundEval, RoundOpts, DEFAULT_GROWTH};

/// The largest block `gsquare_tests` takes (its MAXBLOCK), and `pchisq_points`' block.
pub(crate) const BLOCK: u32 = 256;
/// Threads per block of `gsquare_tests` by default. On the H100, LINK's kernels took 0.081 s with
/// 256, 0.070 s with 128 and 0.105 s with 64; MUNIN's 0.52, 0.45 and 0.67 s (pcbench --block);
/// the parity suites (pcbench discrete --cases, --codes with --backend both) ran with 128.
const DEFAULT_BLOCK: u32 = 128;
/// Bytes a thread reads from a column at once: columns are padded to a multiple of this.
pub const CHUNK: usize = 16;
/// The kernel's deepest level.
pub const MAX_LEVEL: usize = 32;
/// Table words a block keeps in shared memory by default (16 KB; a larger table goes to the
/// block's slot of global scratch). On the H100 (`device-gsquare-kernels.sh` with OCC=1,
/// `occupancy/`), MUNIN's level-1 kernels took 0.320 s with 8192 words, 0.253 s with 4096 and
/// 0.254 s with 2048 (more blocks per multiprocessor); LINK's 0.040, 0.031 and 0.031 s. Capping
/// the registers at 48 or 64 as well changed them by 2% or less.
const SHARED_WORDS: u32 = 4096;
/// The most a block may take without asking the driver for more than 48 KB of shared memory.
const MAX_SHARED_WORDS: u32 = 8192;

/// The codes with each column padded with zeros to `stride` bytes (`stride >= n`).
pub fn padded_columns(codes: &[u8], n: usize, p: usize, stride: usize) -> std::borrow::Cow<'_, [u8]> {
    if stride == n {
        return std::borrow::Cow::Borrowed(codes);
    }
    let mut out = vec![0u8; stride * p];
    for (dst, src) in out.chunks_mut(stride).zip(codes.chunks(n)) {
        dst[..n].copy_from_slice(src);
    }
    std::borrow::Cow::Owned(out)
}

/// Tests per round: about 2^32 sample visits, at least 4096 tests, at most 2^20.
pub fn round_budget(n: usize) -> usize {
    ((1usize << 32) / n.max(1)).clamp(4096, 1 << 20)
}

/// Words of table a test needs (the kernel's `table_words`), or None when the test is not run
/// (n < 10 df: p = 1 without a table). `lev` are the levels as the test counts them.
pub fn test_words(n: usize, lev: &[u32], bin: bool, x: u32, y: u32, s: &[u32]) -> Option<u64> {
    let (lx, ly) = (lev[x as usize] as u64, lev[y as usize] as u64);
    let strata_f: f64 = s.iter().map(|&k| lev[k as usize] as f64).product();
    let df = if bin { 2f64.powi(s.len() as i32) } else { (lx as f64 - 1.0) * (ly as f64 - 1.0) * strata_f };
    if (n as f64) < 10.0 * df {
        return None;
    }
    let ns = strata_f as u64;
    Some(lx * ly * ns + (lx + ly + 1) * ns)
}

/// The fewest tests a level needs to be split over several devices, for data of `n` rows: a
/// G^2 test reads its columns once per row, so the work is about tests x n sample visits; below
/// 1e12 of them (MUNIN at n = 20000: no gain from a second H100 on any level) one device
/// finishes first.
pub fn min_split_tests(n: usize) -> u64 {
    (1e12 / n.max(1) as f64).ceil() as u64
}

/// The CUDA G^2 backend; see the module docs.
pub struct CudaGSquare<'a> {
    test: &'a GSquareTest,
    gpu: Gpu,
    f: Kernel,
    f_p: Kernel,
    /// Whether tables of fewer than 65536 cells are counted by `count_table_packed` (two samples
    /// per multiply-add, no runs, each thread's first cell in a register) rather than by runs.
    packed: bool,
    /// Table words a block keeps in shared memory (a larger table goes to the block's slot of
    /// global scratch).
    shared_words: u32,
    data: CudaSlice<u8>,
    /// Bytes from one column's start to the next (n rounded up to a multiple of CHUNK).
    stride: usize,
    block: u32,
    lev_d: CudaSlice<u32>,
    lev: Vec<u32>,
    timings: Timings,
    budget: usize,
    /// An edge's window growth from round to round, in percent (`rank_windows::RoundOpts::growth`).
    growth: u64,
    /// Writes out each round's tests (see `rank_windows`); None: on the level's own thread.
    pool: Option<rayon::ThreadPool>,
}

impl<'a> CudaGSquare<'a> {
    /// Opens the GPU, compiles the kernel (once per process) and uploads the codes.
    pub fn new(test: &'a GSquareTest) -> Result<Self> {
        Self::new_on(test, crate::runtime::device::device_ordinal())
    }

    /// [`CudaGSquare::new`] on device `ordinal` (one of several: `pc_core::multi::Split`).
    pub fn new_on(test: &'a GSquareTest, ordinal: usize) -> Result<Self> {
        let d = &test.data;
        let (n, p) = (d.n, d.p);
        if d.codes.len() != n * p || d.nlev.len() != p || n == 0 {
            return Err(PcError::invalid("suffStat$dm", "inconsistent dimensions"));
        }
        if n > (u32::MAX as usize) {
            return Err(PcError::invalid("suffStat$dm", "the GPU backend takes at most 2^32 - 1 rows"));
        }
        let bin = test.kind == GSquareKind::Bin;
        let lev: Vec<u32> = if bin { vec![2; p] } else { d.nlev.clone() };
        guard("opening the GPU", || {
            let gpu = Gpu::open_on(ordinal)?;
            let stride = n.next_multiple_of(CHUNK);
            memplan::gsquare_setup(n, p, CHUNK, gpu.free_bytes()? as u64)?;
            let compiled = module::module_for(&gpu, module::Family::GSquare).map_err(PcError::Cuda)?;
            let f = compiled.function("gsquare_tests").map_err(PcError::Cuda)?;
            let f_p = compiled.function("pchisq_points").map_err(PcError::Cuda)?;
            let t = Instant::now();
            let codes = padded_columns(&d.codes, n, p, stride);
            let data = gpu.stream.clone_htod(&codes[..]).map_err(cuda_err("could not upload the data"))?;
            let lev_d = gpu.stream.clone_htod(&lev).map_err(cuda_err("could not upload the levels"))?;
            gpu.stream.synchronize().map_err(cuda_err("could not upload the data"))?;
            let timings = Timings {
                compile_s: compiled.compile_seconds,
                compile_cached: compiled.from_cache,
                target: compiled.target.clone(),
                upload_s: t.elapsed().as_secs_f64(),
                ..Default::default()
            };
            Ok(CudaGSquare { test, gpu, f, f_p, packed: true, shared_words: SHARED_WORDS, data, stride, block: DEFAULT_BLOCK, lev_d, lev, timings, budget: round_budget(n), growth: DEFAULT_GROWTH, pool: None })
        })
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.gpu.info
    }

    /// The device this backend runs on (the triple checks' evaluator reuses it).
    pub(crate) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    /// Tests per round (see [`CudaGSquare::set_round_budget`]).
    pub(crate) fn round_budget(&self) -> usize {
        self.budget
    }

    /// Kernel, copy and host times per level (`upload_s` is the data's upload).
    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    /// Tests per round (default [`round_budget`]); for tuning.
    pub fn set_round_budget(&mut self, tests: Option<usize>) {
        self.budget = tests.unwrap_or_else(|| round_budget(self.test.data.n));
    }

    /// An edge's window growth from round to round in percent (default
    /// `rank_windows::DEFAULT_GROWTH`, at least 100); for tuning.
    pub fn set_window_growth(&mut self, percent: Option<u64>) {
        self.growth = percent.unwrap_or(DEFAULT_GROWTH).max(100);
    }

    /// CPU threads that write out the rounds' tests (numCores; 0: all cores, 1: the level's own
    /// thread).
    pub fn set_threads(&mut self, threads: usize) -> Result<()> {
        self.pool = match threads {
            1 => None,
            t => Some(
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .thread_name(|i| format!("gpupc-rounds-{i}"))
                    .build()
                    .map_err(|e| PcError::Internal(format!("could not start CPU threads: {e}")))?,
            ),
        };
        Ok(())
    }

    /// Whether small tables are counted packed (the default) or by runs; for comparing them (the
    /// tables, and so every statistic, are the same).
    pub fn set_packed(&mut self, on: bool) {
        self.packed = on;
    }

    /// Table words a block keeps in shared memory (default 4096, at most 8192); for tuning.
    pub fn set_shared_words(&mut self, words: Option<u32>) -> Result<()> {
        let w = words.unwrap_or(SHARED_WORDS);
        if !(256..=MAX_SHARED_WORDS).contains(&w) {
            return Err(PcError::invalid("shared_words", format!("must be from 256 to {MAX_SHARED_WORDS}, not {w}")));
        }
        self.shared_words = w;
        Ok(())
    }

    /// Threads per block of `gsquare_tests` (default 128; a multiple of 32 from 32 to 256); for
    /// tuning.
    pub fn set_block(&mut self, threads: Option<u32>) -> Result<()> {
        let b = threads.unwrap_or(DEFAULT_BLOCK);
        if b == 0 || b % 32 != 0 || b > BLOCK {
            return Err(PcError::invalid("block", format!("must be a multiple of 32 from 32 to {BLOCK}, not {b}")));
        }
        self.block = b;
        Ok(())
    }

    /// The kernel's largest table per test (words), or 0 when its table fits in shared memory
    /// or the test is not run.
    pub(crate) fn global_words(&self, x: u32, y: u32, s: &[u32]) -> u64 {
        let n = self.test.data.n;
        let bin = self.test.kind == GSquareKind::Bin;
        test_words(n, &self.lev, bin, x, y, s).filter(|&w| w > self.shared_words as u64).unwrap_or(0)
    }

    fn level_gpu(&self, plan: &LevelPlan, ctl: &Control, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let ne = plan.edges.len() as u64;
        let t = Instant::now();
        let words = |x: u32, y: u32, s: &[u32]| self.global_words(x, y, s);
        let opts = RoundOpts { budget: self.budget, growth: self.growth, pool: self.pool.as_ref(), words: Some(&words) };
        let mut rounds = Rounds::new(self, plan.level)?;
        let progress = |decided: usize| {
            ctl.edges_done.store((decided as u64).min(ne), std::sync::atomic::Ordering::Relaxed);
            !ctl.cancelled()
        };
        // level 0 (one or two tests per edge) in chunks without windows
        let r = if plan.level == 0 { run_level0(plan, &opts, &mut rounds, progress) } else { run_pipelined(plan, &opts, &mut rounds, progress) };
        let clock = &rounds.clock;
        // what is not kernel waits or copies is writing out the tests and taking the outcomes,
        // most of it while the other group's round runs on the device
        lt.kernel_s += clock.kernel;
        lt.transfer_s += clock.transfer;
        lt.launches += clock.launches;
        lt.host_s += (t.elapsed().as_secs_f64() - clock.transfer).max(0.0);
        lt.gpu_tests += rounds.tests;
        r
    }
}

/// The device side of a level's rounds: buffers that grow to the largest round and are reused
/// (none is zeroed: the kernels write every value they read), and the launch and the wait of a
/// round apart, so that the host writes the next round while the device computes; two rounds in
/// flight ([`RoundBuffers`]).
pub(crate) struct Rounds<'g, 'a> {
    b: &'g CudaGSquare<'a>,
    l: usize,
    bufs: RoundBuffers,
    stat: Option<CudaSlice<f64>>,
    df: Option<CudaSlice<f64>>,
    scratch: Option<CudaSlice<u32>>,
    pub(crate) clock: Clock,
    pub(crate) tests: u64,
}

impl<'g, 'a> Rounds<'g, 'a> {
    pub(crate) fn new(b: &'g CudaGSquare<'a>, l: usize) -> Result<Self> {
        Ok(Rounds { b, l, bufs: RoundBuffers::new(&b.gpu)?, stat: None, df: None, scratch: None, clock: Clock::default(), tests: 0 })
    }

    /// The level (|S|) of the batches launched from now on (listed tests of several sizes:
    /// `batch.rs`); `finish` does not depend on it.
    pub(crate) fn set_level(&mut self, l: usize) {
        self.l = l;
    }
}

impl RoundEval for Rounds<'_, '_> {
    fn launch(&mut self, batch: &Batch) -> Result<()> {
        let m = batch.len();
        if m == 0 {
            return Ok(());
        }
        let (b, l) = (self.b, self.l);
        let gpu = &b.gpu;
        let n = b.test.data.n;
        let bin = b.test.kind == GSquareKind::Bin;
        let slot_words = batch.max_words;
        // the blocks that are resident at once
        let per_sm = b
            .f
            .occupancy_max_active_blocks_per_multiprocessor(b.block, b.shared_words as usize * 4)
            .map_err(cuda_err("reading gsquare_tests' occupancy"))?
            .max(1);
        let mut grid = (gpu.info.multiprocessors.max(1) as u32 * per_sm).min(m as u32);
        let t = Instant::now();
        room(gpu, &mut self.scratch, 0, "table scratch")?;
        if slot_words > 0 {
            let have = self.scratch.as_ref().map_or(0, |s| s.len()) as u64;
            if have < grid as u64 * slot_words {
                // fewer blocks when the slots would not fit in half the free memory
                let fit = memplan::gsquare_table_slots(gpu.free_bytes()? as u64, have, slot_words, grid as u64)?;
                let words = fit * slot_words;
                if words > have {
                    self.scratch = None;
                    // SAFETY: each block zeroes its table before counting into it.
                    let s = unsafe { gpu.stream.alloc::<u32>(words as usize) };
                    self.scratch = Some(s.map_err(cuda_err("table scratch"))?);
                }
            }
            let slots = self.scratch.as_ref().map_or(0, |s| s.len()) as u64 / slot_words;
            grid = grid.min(slots.min(u32::MAX as u64) as u32);
        }
        room(gpu, &mut self.stat, m, "round statistics")?;
        room(gpu, &mut self.df, m, "round statistics")?;
        self.clock.transfer += t.elapsed().as_secs_f64();
        let k = self.bufs.begin(gpu, batch, l, &mut self.clock)?;
        let bufs = &mut self.bufs;
        let (Some(tx), Some(ty), Some(ts), Some(p), Some(stat), Some(df), Some(scratch)) =
            (&bufs.tx, &bufs.ty, &bufs.ts, &mut bufs.p, &mut self.stat, &mut self.df, &mut self.scratch)
        else {
            return Err(PcError::Internal("round buffers missing".into()));
        };
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (b.block, 1, 1), shared_mem_bytes: b.shared_words * 4 };
        let (nu, stride, li, mu, binf, adapt, shw, packed) =
            (n as u64, b.stride as u64, l as i32, m as u32, bin as i32, b.test.adapt_df as i32, b.shared_words, b.packed as i32);
        let args = params::Tests {
            data: &b.data, n: nu, stride, lev: &b.lev_d, tx, ty, ts, l: li, n_tasks: mu, bin: binf, adapt_df: adapt, shared_words: shw,
            scratch: &mut *scratch, slot_words, stat_out: &mut *stat, df_out: &mut *df, packed,
        };
        // SAFETY: data holds p columns of `stride` bytes (a multiple of 16, from a 256-byte aligned
        // allocation); tx/ty hold at least m tests, ts m * l set members (all < p), scratch at
        // least grid * slot_words words, stat and df at least m doubles; l <= MAX_LEVEL; the block
        // size is a multiple of 32 up to the kernel's 256.
        unsafe { args.launch(gpu, &b.f, cfg, "gsquare_tests") }?;
        launch_pchisq_points(gpu, &b.f_p, stat, df, p, m)?;
        self.bufs.end(gpu, k, m)?;
        self.clock.launches += 2;
        self.tests += m as u64;
        Ok(())
    }

    fn in_flight(&self) -> usize {
        crate::runtime::inflight::SLOTS
    }

    fn finish(&mut self, batch: &Batch, out: &mut Vec<f64>) -> Result<()> {
        let m = batch.len();
        out.clear();
        if m == 0 {
            return Ok(());
        }
        // the host's wait for the device is booked with the copies (kernel time from the events);
        // into the level's one vector: a fresh one per round cost page faults
        self.bufs.finish(m, out, &mut self.clock, "gsquare_tests")
    }
}

impl Backend for CudaGSquare<'_> {
    fn name(&self) -> String {
        format!("cuda ({})", self.gpu.info.name)
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let t0 = Instant::now();
        let mut lt = LevelTimings { level: plan.level, ..Default::default() };
        let out = if plan.edges.is_empty() {
            Ok(Vec::new())
        } else if plan.level > MAX_LEVEL {
            lt.on_cpu = true;
            ParallelCpu::new(self.test, 0)?.run_level(plan, watch)
        } else {
            let me = &*self;
            // the rounds compute tests past an edge's first success too: pcalg's n < n.min
            // warning counts only the canonical prefixes (the CPU's p_value counts its own)
            // a G^2 test reads its n rows: no level runs without a watcher
            watched_level(plan, watch, 0, &mut lt, |ctl, lt| me.level_gpu(plan, ctl, lt))
                .and_then(|o| self.test.count_small_n(plan, &o, self.pool.as_ref()).map(|_| o))
        };
        self.timings.record(lt, t0);
        out
    }
}

/// Queues `pchisq_points` (`f`): out[k] = pchisq_upper(q[k], df[k]) for every k < m, one thread
/// each.
fn launch_pchisq_points(gpu: &Gpu, f: &Kernel, q: &CudaSlice<f64>, df: &CudaSlice<f64>, out: &mut CudaSlice<f64>, m: usize) -> Result<()> {
    if q.len() < m || df.len() < m || out.len() < m || m > u32::MAX as usize {
        return Err(PcError::Internal(format!("pchisq_points: {} and {} inputs, {} outputs for {m} points", q.len(), df.len(), out.len())));
    }
    let m = m as u32;
    let cfg = LaunchConfig { grid_dim: (m.div_ceil(BLOCK).max(1), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: q, df and out hold at least m doubles (checked above).
    unsafe { params::PchisqPoints { q, df, m, out }.launch(gpu, f, cfg, "pchisq_points") }
}

/// `pchisq(q, df, lower.tail = FALSE)` computed by the kernel's own function on the GPU (for
/// checking the device's tail against R's and exact values).
pub fn device_pchisq(q: &[f64], df: &[f64]) -> Result<Vec<f64>> {
    if q.len() != df.len() {
        return Err(PcError::invalid("df", "must have as many values as q"));
    }
    guard("pchisq on the GPU", || {
        let gpu = Gpu::open()?;
        let compiled = module::module_for(&gpu, module::Family::GSquare).map_err(PcError::Cuda)?;
        let f = compiled.function("pchisq_points").map_err(PcError::Cuda)?;
        let mut clock = Clock::default();
        let (qd, dd) = (gpu.up(&mut clock, q, "points")?, gpu.up(&mut clock, df, "points")?);
        let mut out = gpu.alloc::<f64>(q.len(), "results")?;
        launch_pchisq_points(&gpu, &f, &qd, &dd, &mut out, q.len())?;
        gpu.finish_launch(&mut clock, Instant::now(), "pchisq_points")?;
        gpu.down(&mut clock, &out, q.len(), "results")
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pc_core::citest::DiscreteData;

    #[test]
    fn table_words_bound_and_skip_rule() {
        // 3 x 4 levels, S of levels 2 and 5: df = 2 * 3 * 10 = 60, runs from n = 600
        let lev = [3, 4, 2, 5];
        assert_eq!(test_words(599, &lev, false, 0, 1, &[2, 3]), None);
        let w = test_words(600, &lev, false, 0, 1, &[2, 3]).unwrap();
        assert_eq!(w, 12 * 10 + (3 + 4 + 1) * 10);
        // binary: df = 2^|S|
        assert_eq!(test_words(39, &[2; 4], true, 0, 1, &[2, 3]), None);
        assert_eq!(test_words(40, &[2; 4], true, 0, 1, &[2, 3]), Some(16 + 5 * 4));
        // whenever a test runs, its table is at most 0.9 n words (so a slot is O(n))
        for n in [20usize, 100, 1000, 100000] {
            for lx in 2..6u32 {
                for ls in 2..5u32 {
                    let lev = [lx, 3, ls, ls, ls];
                    for k in 0..=3 {
                        let s: Vec<u32> = (2..2 + k as u32).collect();
                        if let Some(w) = test_words(n, &lev, false, 0, 1, &s) {
                            assert!(w as f64 <= 0.9 * n as f64 + 1.0, "n {n} lx {lx} ls {ls} k {k}: {w}");
                        }
                    }
                }
            }
        }
        assert_eq!(round_budget(20000), (1usize << 32) / 20000);
        assert_eq!(round_budget(1_000_000), 4294);
        assert_eq!(round_budget(10), 1 << 20);
    }

    #[test]
    fn columns_are_padded_to_the_stride() {
        let codes: Vec<u8> = (1..=6).collect(); // n = 3, p = 2
        assert!(matches!(padded_columns(&codes, 3, 2, 3), std::borrow::Cow::Borrowed(_)));
        assert_eq!(&padded_columns(&codes, 3, 2, 16)[..], &[[1, 2, 3].as_slice(), &[0; 13], &[4, 5, 6], &[0; 13]].concat()[..]);
        assert_eq!(20usize.next_multiple_of(CHUNK), 32);
    }

    #[test]
    fn new_fails_cleanly_without_a_gpu() {
        let d = DiscreteData::new(4, 2, vec![0, 1, 0, 1, 1, 0, 1, 0], vec![2, 2]).unwrap();
        let t = GSquareTest::new(d, GSquareKind::Dis, false).unwrap();
        match CudaGSquare::new(&t) {
            Ok(g) => assert!(g.name().starts_with("cuda")),
            Err(PcError::Cuda(msg)) => assert!(!msg.is_empty()),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
}
