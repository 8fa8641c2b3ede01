//! The Gaussian backend: pcalg's `gaussCItest` for `skeleton(method = "stable")` and
//! `"stable.fast"` (its C++ test) on a GPU.
//!
//! C is uploaded once and stays on the device. Per level:
//! - level 0: one thread per edge (`gauss_level0`), r = C[x, y];
//! - level 1: one warp per edge (`gauss_level1`), the closed form; the warp walks the canonical
//!   ranks 32 at a time and stops at the first round with a success;
//! - levels 2..=32: the cuPC-S shape (`gauss_sets_l*`): one thread per (row x, l-subset S of
//!   row(x)), C[S, S] factored once and reused for every y in row(x) \ S, the key of each test
//!   (side, rank of S within row(x) \ {y}) kept per edge by atomicMin, in rounds sized by the work
//!   left, rows whose edges are all decided dropped between rounds; then the winning test of
//!   each deleted edge is evaluated again (`gauss_pbest_l*`) for its p-value;
//! - stable.fast: levels 0 and 1 dense with its own rules (`dense.rs`), levels >= 2 by
//!   rounds of per-edge rank windows (`stable_fast.rs`), since its side order is not cuPC-S's:
//!   the device unranks each window's sets (`gauss_ranked_l*`) and keeps each window's first
//!   success and largest failure;
//! - deeper levels (never seen in practice), and levels >= 2 when C holds NaN (where pcalg's
//!   pseudo-inverse stops with an error that the CPU test reproduces), run on the CPU with C
//!   copied back once.
//!
//! The kernels repeat pc-core's Gaussian arithmetic (`citest::gauss`, `citest::linalg`,
//! `citest::special`) operation for operation, compiled without FMA contraction, so r agrees
//! with the CPU to the last bit and p to an ulp or two of exp/log1p; a change there must be
//! mirrored in `gauss.cu`.
//!
//! Every CUDA error becomes `PcError::Cuda`; every call into cudarc runs inside `catch_unwind`.

pub mod batch;
pub(crate) mod corr;
pub(crate) mod dense;
pub mod host;
pub mod multi;
mod params;
mod rows;
mod stable_fast;

use std::sync::atomic::Ordering;
use std::time::Instant;

use cudarc::driver::{result as dres, CudaSlice, DevicePtrMut, LaunchConfig};
use pc_core::backend::{Backend, Control, Watch};
use pc_core::citest::{GaussFlavour, GaussTest};
use pc_core::cpu::ParallelCpu;
use pc_core::plan::{unpack_key, EdgeOutcome, EdgeWork, LevelPlan, Order};
use pc_core::PcError;

use crate::runtime::device::DeviceInfo;
use crate::runtime::gpu::{append, cuda_err, guard, watched_level, Clock, Gpu, Kernel, Result};
use crate::runtime::memplan;
use crate::runtime::timings::{Timings, LevelTimings};
use host::{BLOCK, NO_KEY, SET_KERNEL_VARIANTS};
use pc_core::par::{par_collect, symmetry_and_nan};
use pc_core::rounds::level0::level0_outcome;
use pc_core::rounds::row_sets;
// a row-split level's keys and the board its devices (or ranks) post them to: the same words as
// the kernels' (NO_KEY, the max-fail word)
use pc_core::rows::{KeyBoard, RowKeys};
use crate::runtime::module::{self, Family};

/// The Cholesky fast path is taken when ||L^-1||_F^2 * PD_MARGIN * m * trace(M) * eps < 1 (and
/// every pivot is positive), else the pseudo-inverse; the same rule and constant as pc-core's
/// `citest::linalg` (`PD_MARGIN`), so both backends take the same path on every test.
pub const PD_MARGIN: f64 = 1024.0;

/// Kernels the backend loads (the set kernels once per variant in `host::SET_KERNEL_VARIANTS`).
pub const KERNEL_NAMES: [&str; 15] = [
    "gauss_level0",
    "gauss_level1",
    "rows_live",
    "gauss_sets_l",
    "gauss_pbest_l",
    "dense_pmax_init",
    "dense_degrees",
    "dense_fill_rows",
    "dense_row_offsets",
    "gauss_dense_deep_l",
    "gauss_dense_level0",
    "gauss_dense_level1",
    "gauss_listed_l",
    "gauss_ranked_l",
    "gauss_ranked_pbest_l",
];
const LEVEL0_CHUNK: usize = 1 << 24;
const LEVEL1_CHUNK: usize = 1 << 20;

/// The kernel families a run in `order` needs first: levels 0 and 1, the set variants of the
/// levels most runs reach (up to 16), and the correlation kernel when C is computed from the
/// data. Start them with [`module::prefetch`] before opening the backend: NVRTC makes them in
/// parallel while C is uploaded and the first levels run (each takes 1-2 s on an empty cache,
/// and a level waits for its variant only while it is still being made). The deepest variant is
/// started when the one before it is first used.
pub fn first_families(order: Order, from_data: bool) -> Vec<Family> {
    let mut f = vec![Family::GaussBase];
    for &m in SET_KERNEL_VARIANTS.iter().filter(|&&m| m <= 16) {
        f.push(if order == Order::Stable { Family::GaussSets(m) } else { Family::GaussListed(m) });
    }
    if from_data {
        f.push(Family::Corr);
    }
    f
}

struct Fns {
    level0: Kernel,
    level1: Kernel,
    rows_live: Kernel,
    /// (max level, sets kernel, p-best kernel), each variant loaded when a level first needs it
    sets: Vec<(usize, Kernel, Kernel)>,
    /// (max level, its kernels) for stable.fast's planned levels, likewise
    listed: Vec<(usize, ListedKernels)>,
}

/// A variant's kernels of stable.fast's levels >= 2: planned (`stable_fast.rs`), the tests
/// written out by the host or unranked on the device from each window's keys, or run on the
/// dense levels' graph (`dense.rs`, `deep`).
struct ListedKernels {
    listed: Kernel,
    ranked: Kernel,
    ranked_pbest: Kernel,
    deep: Kernel,
}

/// The kernels of the dense levels' graph (`dense.rs`): levels 0 and 1, and the lists of
/// stable.fast's deeper levels.
struct DenseKernels {
    scan_c: Kernel,
    pmax_init: Kernel,
    degrees: Kernel,
    fill_rows: Kernel,
    row_offsets: Kernel,
    level0: Kernel,
    level1: Kernel,
}

/// How often a device of a row-split level exchanges its keys with the others, in milliseconds (a
/// round of the set kernels takes well under a millisecond at deep levels; an exchange moves 8
/// bytes per edge each way). `GPUPC_KEY_EXCHANGE_MS` overrides it (0: after every round, how the
/// parity suites exercise it on small cases).
const KEY_EXCHANGE_MS: u64 = 10;

/// A level's rows on one device: CSR offsets and columns and the binomial table up to the
/// longest row, uploaded once and read by the set kernels and the winners' p-values.
pub(super) struct DeviceRows {
    off: CudaSlice<u64>,
    cols: CudaSlice<u32>,
    binom: CudaSlice<u64>,
}

fn key_exchange_every() -> std::time::Duration {
    let ms = std::env::var("GPUPC_KEY_EXCHANGE_MS").ok().and_then(|v| v.parse().ok()).unwrap_or(KEY_EXCHANGE_MS);
    std::time::Duration::from_millis(ms)
}

/// Each row's work at level `l`, by which the devices and the ranks split a level: its sets, each
/// tested against the row's other entries.
pub(super) fn row_weights(li: &row_sets::LevelInputs, rows: &[row_sets::RowWork], l: usize) -> Vec<u64> {
    rows.iter().map(|r| r.total.saturating_mul(li.off[r.row as usize + 1] - li.off[r.row as usize] - l as u64).max(1)).collect()
}

/// The CUDA Gaussian backend; see the module docs.
pub struct CudaGauss {
    gpu: Gpu,
    f: Fns,
    dense_kernels: DenseKernels,
    c: CudaSlice<f64>,
    p: usize,
    n: f64,
    timings: Timings,
    /// Levels 0 and 1 run dense (pMax and the graph fit beside C on the device).
    dense_fits: bool,
    planned_only: bool,
    dense: Option<dense::DenseState>,
    round_budget: Option<u64>,
    nvrtc_log: String,
    /// C copied back, with the flavour of the levels that ran on the CPU.
    cpu_test: Option<GaussTest>,
    /// C is exactly symmetric (else levels >= 2 always take the pseudo-inverse, as on the CPU).
    symmetric: bool,
    /// C holds a NaN: levels >= 2 then run on the CPU, which reproduces pcalg's error there.
    has_nan: bool,
    /// Nanoseconds of pMax's copies that ran beside the levels (`dense_end_deferred`), part of
    /// the results' seconds.
    pmax_copy_ns: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl CudaGauss {
    /// Opens the GPU, compiles the kernels (once per process) and uploads C (p x p, column-major,
    /// symmetric) for data of `n` observations.
    pub fn new(c: &[f64], p: usize, n: f64) -> Result<Self> {
        if c.iter().any(|v| v.is_infinite()) {
            return Err(PcError::invalid("suffStat$C", "entries must be finite (NA is allowed)"));
        }
        if c.len() == p * p {
            let (symmetric, has_nan) = symmetry_and_nan(c, p);
            return Self::new_scanned(c, p, n, symmetric, has_nan);
        }
        Self::new_scanned(c, p, n, false, false)
    }

    /// [`CudaGauss::new`] for a C already scanned (`pc_core::par::scan_symmetric`, in parallel):
    /// `symmetric` is exact mirror equality, `has_nan` any NaN; the caller has refused infinite
    /// entries.
    pub fn new_scanned(c: &[f64], p: usize, n: f64, symmetric: bool, has_nan: bool) -> Result<Self> {
        Self::new_scanned_on(crate::runtime::device::device_ordinal(), c, p, n, symmetric, has_nan)
    }

    /// [`CudaGauss::new_scanned`] on device `ordinal`.
    pub fn new_scanned_on(ordinal: usize, c: &[f64], p: usize, n: f64, symmetric: bool, has_nan: bool) -> Result<Self> {
        if p == 0 || c.len() != p * p {
            return Err(PcError::invalid("C", format!("must be a {p} x {p} matrix ({} values given)", c.len())));
        }
        Self::open(ordinal, p, n, symmetric, has_nan, 0, |gpu, dc| gpu.upload_staged(c, dc, "could not upload C"))
    }

    /// [`CudaGauss::new`] for C computed on the device from `z`, the n x p standardised data of
    /// `pc_core::corr::standardize` (`suffStat = list(data = X)`): C is never on the host, and is
    /// the same bit for bit as `pc_core::corr::correlation` (`corr.cu`).
    pub fn from_standardized(z: &[f64], rows: usize, p: usize, n: f64) -> Result<Self> {
        if rows == 0 || z.len() != rows * p {
            return Err(PcError::invalid("suffStat$data", format!("must be an n x {p} matrix")));
        }
        Self::from_standardized_on(crate::runtime::device::device_ordinal(), z, rows, p, n)
    }

    /// [`CudaGauss::from_standardized`] on device `ordinal`.
    pub fn from_standardized_on(ordinal: usize, z: &[f64], rows: usize, p: usize, n: f64) -> Result<Self> {
        if rows == 0 || z.len() != rows * p {
            return Err(PcError::invalid("suffStat$data", format!("must be an n x {p} matrix")));
        }
        Self::open(ordinal, p, n, true, false, 8 * rows * p, |gpu, dc| crate::gauss::corr::correlation_into(gpu, z, rows, p, dc))
    }

    /// Opens the GPU, compiles the kernels, allocates C and has `fill` write it; `extra` device
    /// bytes are needed besides C while `fill` runs.
    #[allow(clippy::too_many_arguments)]
    fn open(ordinal: usize, p: usize, n: f64, symmetric: bool, has_nan: bool, extra: usize, fill: impl FnOnce(&Gpu, &mut CudaSlice<f64>) -> Result<()>) -> Result<Self> {
        if p == 0 {
            return Err(PcError::invalid("C", "must have at least one variable"));
        }
        if p > u32::MAX as usize / 2 {
            return Err(PcError::invalid("C", "too many variables for the GPU backend"));
        }
        if !(n.is_finite() && n >= 0.0) {
            return Err(PcError::invalid("suffStat$n", format!("must be a finite number >= 0, got {n}")));
        }
        guard("opening the GPU", || {
            let gpu = Gpu::open_on(ordinal)?;
            gpu.release_freed()?;
            // C plus room for a level's lists, and whether pMax and the graph fit beside it;
            // `extra` (the data C is computed from) is held while C is made
            let dense_fits = memplan::gauss_setup(p, (gpu.free_bytes()? as u64).saturating_sub(extra as u64))?;
            let compiled = module::module_for(&gpu, Family::GaussBase).map_err(PcError::Cuda)?;
            let get = |name: &str| compiled.function(name).map_err(PcError::Cuda);
            let f = Fns { level0: get("gauss_level0")?, level1: get("gauss_level1")?, rows_live: get("gauss_rows_live")?, sets: Vec::new(), listed: Vec::new() };
            let dense_kernels = DenseKernels {
                scan_c: get("gauss_scan_c")?,
                pmax_init: get("dense_pmax_init")?,
                degrees: get("dense_degrees")?,
                fill_rows: get("dense_fill_rows")?,
                row_offsets: get("dense_row_offsets")?,
                level0: get("gauss_dense_level0")?,
                level1: get("gauss_dense_level1")?,
            };
            let t = Instant::now();
            // SAFETY: every element is written by `fill` before any kernel reads it.
            let mut dc = unsafe { gpu.stream.alloc::<f64>(p * p) }.map_err(cuda_err("could not allocate C"))?;
            fill(&gpu, &mut dc)?;
            let upload_s = t.elapsed().as_secs_f64();
            let timings = Timings {
                compile_s: compiled.compile_seconds,
                compile_cached: compiled.from_cache,
                target: compiled.target.clone(),
                upload_s,
                ..Default::default()
            };
            Ok(CudaGauss {
                gpu,
                f,
                dense_kernels,
                dense_fits,
                planned_only: false,
                dense: None,
                c: dc,
                p,
                n,
                timings,
                round_budget: None,
                nvrtc_log: compiled.log.clone(),
                cpu_test: None,
                symmetric,
                has_nan,
                pmax_copy_ns: Default::default(),
            })
        })
    }

    /// C left on the device for the triple checks ([`batch::CudaGaussBatch::from_device_c`]); the
    /// rest of the backend (its dense levels' buffers above all) is freed here.
    pub fn into_device_c(self) -> batch::DeviceC {
        batch::DeviceC { gpu: self.gpu, c: self.c, p: self.p }
    }

    /// Levels 0 and 1 will run on the device (C, pMax and the graph fit there together); else
    /// they are planned on the host, edge by edge.
    pub fn dense_available(&self) -> bool {
        self.dense_fits && !self.planned_only
    }

    pub fn info(&self) -> &DeviceInfo {
        &self.gpu.info
    }

    /// sqrt(n - l - 3) / 2 as the order's test forms it (stable.fast: pcalg's C++, with n an
    /// unsigned int; NaN where that test stops with an error).
    fn z_factor(&self, order: Order, l: usize) -> f64 {
        match order {
            Order::Stable => host::z_factor(self.n, l),
            Order::StableFast => pc_core::citest::cpp_z_factor(self.n, l),
        }
    }

    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    /// C's checks (pc-core's `par::scan_symmetric`) made on the device after the upload: sets
    /// whether C is exactly symmetric and holds a NaN, and says whether C passed, that is holds
    /// no value beyond a correlation's range and no pair asymmetric beyond the tolerance (the
    /// host's scan then names the cell). `None`: p too large for the kernel's grid, C unchecked.
    /// At p = 20000 the host's pass over 3.2 GB took 0.14 s on 16 threads.
    pub fn check_c_on_device(&mut self) -> Result<Option<bool>> {
        let p = self.p;
        if p.div_ceil(8) > 65535 {
            return Ok(None);
        }
        let t0 = Instant::now();
        let (gpu, k, c) = (&self.gpu, &self.dense_kernels.scan_c, &self.c);
        let flags = guard("checking C on the GPU", || {
            gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            let mut flags = gpu.stream.alloc_zeros::<u32>(4).map_err(cuda_err("checking C"))?;
            let cfg = LaunchConfig { grid_dim: (p.div_ceil(32) as u32, p.div_ceil(8) as u32, 1), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
            let args = params::ScanC { C: c, p: p as u64, tol: pc_core::par::C_SYMMETRY_TOL, bound: pc_core::par::C_BOUND, flags: &mut flags };
            // SAFETY: C holds p x p values; the grid covers them; flags holds 4 words.
            unsafe { args.launch(gpu, k, cfg, "gauss_scan_c") }?;
            let f = gpu.stream.clone_dtoh(&flags).map_err(cuda_err("checking C"))?;
            gpu.stream.synchronize().map_err(cuda_err("checking C"))?;
            Ok(f)
        })?;
        self.has_nan = flags[0] != 0;
        self.symmetric = flags[2] == 0;
        self.timings.setup_s += t0.elapsed().as_secs_f64();
        pc_core::trace::mark(|| "C checked on the GPU".into());
        Ok(Some(flags[1] == 0 && flags[3] == 0))
    }

    /// The timings with the seconds of pMax's copies beside the levels in `results_s`.
    pub fn timings_all(&self) -> Timings {
        let mut t = self.timings.clone();
        t.results_s += self.pmax_copy_ns.load(std::sync::atomic::Ordering::Relaxed) as f64 * 1e-9;
        t
    }

    /// NVRTC's log from compiling the kernels (resource usage with GPUPC_NVRTC_VERBOSE=1).
    pub fn nvrtc_log(&self) -> &str {
        &self.nvrtc_log
    }

    /// Runs levels 0 and 1 through host plans as before the dense levels existed (for comparing
    /// the two paths).
    pub fn set_planned_only(&mut self, yes: bool) {
        self.planned_only = yes;
    }

    /// Threads per launch at levels >= 2 (default: about 2^23 / l^2); for tuning.
    pub fn set_round_budget(&mut self, threads: Option<u64>) {
        self.round_budget = threads;
    }

    fn budget(&self, l: usize) -> u64 {
        self.round_budget.unwrap_or(((1u64 << 23) / (l * l) as u64).max(1 << 16))
    }

    fn level0(&self, plan: &LevelPlan, ctl: &Control, clock: &mut Clock) -> Result<Vec<EdgeOutcome>> {
        let t = Instant::now();
        let rows = row_sets::level0_rows(plan);
        clock.host += t.elapsed().as_secs_f64();
        let ne = plan.edges.len();
        let both = !self.symmetric;
        let zfac = host::z_factor(self.n, 0);
        let (pu, n_rows, flag) = (self.p as u64, self.p as u32, both as i32);
        let cols_h: &[u32] = rows.cols.as_deref().unwrap_or(&plan.rows.cols);
        let chunk = LEVEL0_CHUNK.min(ne);
        self.gpu.ensure_room("suffStat$C", memplan::gauss_level0_bytes(rows.off.len(), cols_h.len(), chunk), "level 0")?;
        let off = self.gpu.up(clock, &rows.off, "level 0 rows")?;
        let cols = self.gpu.up(clock, cols_h, "level 0 rows")?;
        let upper = self.gpu.up(clock, &rows.upper, "level 0 rows")?;
        let ebase = self.gpu.up(clock, &rows.ebase, "level 0 rows")?;
        let mut p0_d = self.gpu.alloc::<f64>(chunk, "level 0 results")?;
        let mut p1_d = self.gpu.alloc::<f64>(if both { chunk } else { 1 }, "level 0 results")?;
        let mut p0 = vec![0.0f64; 0];
        let mut p1 = vec![0.0f64; 0];
        for start in (0..ne).step_by(LEVEL0_CHUNK) {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let m = ne.min(start + LEVEL0_CHUNK) - start;
            let (e0, mu) = (start as u64, m as u64);
            let cfg = LaunchConfig { grid_dim: ((m as u32).div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            let t = Instant::now();
            let args = params::Level0 { C: &self.c, p: pu, off: &off, cols: &cols, upper: &upper, ebase: &ebase, n_rows, e0, m: mu, zfac, both: flag, p0_out: &mut p0_d, p1_out: &mut p1_d };
            // SAFETY: edges start..start + m exist in the row lists (ebase[p] = number of plan
            // edges), the result buffers hold >= m entries.
            unsafe { args.launch(&self.gpu, &self.f.level0, cfg, "gauss_level0") }?;
            self.gpu.finish_launch(clock, t, "gauss_level0")?;
            append(&mut p0, self.gpu.down(clock, &p0_d, m, "level 0 results")?);
            if both {
                append(&mut p1, self.gpu.down(clock, &p1_d, m, "level 0 results")?);
            }
            ctl.edges_done.fetch_add(m as u64, Ordering::Relaxed);
        }
        let t = Instant::now();
        let (alpha, na) = (plan.alpha, plan.na_value);
        let out = par_collect(ne, |k| {
            let sides = [p0[k], if both { p1[k] } else { p0[k] }];
            Ok(level0_outcome(plan.edges[k].sides.iter().zip(sides).map(|(s, p)| s.map(|_| p)), alpha, na))
        });
        clock.collect += t.elapsed().as_secs_f64();
        out
    }

    fn level1(&self, plan: &LevelPlan, ctl: &Control, clock: &mut Clock) -> Result<Vec<EdgeOutcome>> {
        let t = Instant::now();
        let li = row_sets::level_inputs(plan, true)?;
        clock.host += t.elapsed().as_secs_f64();
        let ne = plan.edges.len();
        let (mut keys, mut pbs, mut mfs) = (Vec::new(), Vec::new(), Vec::new());
        let zfac = host::z_factor(self.n, 1);
        let (pu, alpha, na) = (self.p as u64, plan.alpha, plan.na_value);
        self.gpu.ensure_room("suffStat$C", memplan::gauss_level1_bytes(li.off.len(), li.cols.len(), LEVEL1_CHUNK.min(ne)), "level 1")?;
        let off = self.gpu.up(clock, &li.off, "level 1 adjacency")?;
        let cols = self.gpu.up(clock, &li.cols, "level 1 adjacency")?;
        for start in (0..ne).step_by(LEVEL1_CHUNK) {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let end = ne.min(start + LEVEL1_CHUNK);
            let m = end - start;
            let ei = self.gpu.up(clock, &li.ei[start..end], "level 1 edges")?;
            let ej = self.gpu.up(clock, &li.ej[start..end], "level 1 edges")?;
            let qi = self.gpu.up(clock, &li.qi[start..end], "level 1 edges")?;
            let qj = self.gpu.up(clock, &li.qj[start..end], "level 1 edges")?;
            let sides = self.gpu.up(clock, &li.sides[start..end], "level 1 edges")?;
            let mut key = self.gpu.alloc::<u64>(m, "level 1 results")?;
            let mut pbest = self.gpu.alloc::<f64>(m, "level 1 results")?;
            let mut mf = self.gpu.alloc::<f64>(m, "level 1 results")?;
            let mu = m as u64;
            let threads = m as u64 * 32;
            let cfg = LaunchConfig {
                grid_dim: (threads.div_ceil(BLOCK as u64) as u32, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let t = Instant::now();
            let args = params::Level1 {
                C: &self.c, p: pu, off: &off, cols: &cols, ei: &ei, ej: &ej, qi: &qi, qj: &qj, sides: &sides, n_edges: mu,
                zfac, alpha, na_value: na, key_out: &mut key, pbest_out: &mut pbest, maxfail_out: &mut mf,
            };
            // SAFETY: per-edge buffers hold m entries, off / cols are the level's CSR.
            unsafe { args.launch(&self.gpu, &self.f.level1, cfg, "gauss_level1") }?;
            self.gpu.finish_launch(clock, t, "gauss_level1")?;
            append(&mut keys, self.gpu.down(clock, &key, m, "level 1 results")?);
            append(&mut pbs, self.gpu.down(clock, &pbest, m, "level 1 results")?);
            append(&mut mfs, self.gpu.down(clock, &mf, m, "level 1 results")?);
            ctl.edges_done.fetch_add(m as u64, Ordering::Relaxed);
        }
        let t = Instant::now();
        let out = par_collect(ne, |k| outcome_of(&plan.edges[k], keys[k], pbs[k], mfs[k]));
        clock.collect += t.elapsed().as_secs_f64();
        out
    }

    /// The set and p-best kernels of level `l` (loaded by `load_level_kernels`).
    fn set_kernels(&self, l: usize) -> Result<(usize, &Kernel, &Kernel)> {
        let variant = host::set_kernel_variant(l);
        self.f
            .sets
            .iter()
            .find(|(m, _, _)| Some(*m) == variant)
            .map(|(m, a, b)| (*m, a, b))
            .ok_or_else(|| PcError::Internal(format!("no set kernel loaded for level {l}")))
    }

    fn level_sets(&self, plan: &LevelPlan, ctl: &Control, clock: &mut Clock, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        let t = Instant::now();
        let li = row_sets::level_inputs(plan, true)?;
        let rows = row_sets::work_rows(&li, plan.level)?;
        let total_sets: u128 = rows.iter().map(|r| r.total as u128).sum();
        clock.host += t.elapsed().as_secs_f64();
        // the rows go up once for the sets and the winners' p-values
        let dr = self.upload_rows(&li, plan.level, clock)?;
        pc_core::trace::mark(|| format!("level {}: rows on the GPU", plan.level));
        let (keys, best_d) = self.sets_keys_on(&dr, plan, &li, rows, total_sets, None, ctl, clock)?;
        pc_core::trace::mark(|| format!("level {}: keys back", plan.level));
        lt.gpu_tests += keys.tests;
        lt.fallbacks += keys.fallbacks;
        let p_best = self.sets_pbest_on(&dr, plan, &li, &keys.best, Some(&best_d), clock)?;
        pc_core::trace::mark(|| format!("level {}: winners' p-values back", plan.level));
        let t = Instant::now();
        let out = par_collect(plan.edges.len(), |k| outcome_of(&plan.edges[k], keys.best[k], p_best[k], host::decode_max_fail(keys.maxfail[k])));
        clock.collect += t.elapsed().as_secs_f64();
        ctl.edges_done.store(plan.edges.len() as u64, Ordering::Relaxed);
        out
    }

    /// Level >= 2's tests of the subsets of `rows` (every row with work on one device; a share of
    /// them on each of several): per plan edge the smallest key of a success and the largest
    /// failing p of the tests these rows ran. Several devices' keys merge by min and max
    /// (`RowKeys::merge`), since a success ends an edge at its smallest key and every failure
    /// before it is below alpha. `total_sets`: the sets of the whole level, for the progress.
    /// `shared`: the keys of the devices that split the level with this one.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sets_keys(&self, plan: &LevelPlan, li: &row_sets::LevelInputs, rows: Vec<row_sets::RowWork>, total_sets: u128, shared: Option<&KeyBoard>, ctl: &Control, clock: &mut Clock) -> Result<RowKeys> {
        let dr = self.upload_rows(li, plan.level, clock)?;
        self.sets_keys_on(&dr, plan, li, rows, total_sets, shared, ctl, clock).map(|(keys, _)| keys)
    }

    /// A level's rows on this device (`DeviceRows`).
    fn upload_rows(&self, li: &row_sets::LevelInputs, l: usize, clock: &mut Clock) -> Result<DeviceRows> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let t = Instant::now();
        let max_d = li.off.windows(2).map(|w| (w[1] - w[0]) as usize).max().unwrap_or(0);
        let table = row_sets::binomial_table(max_d, l);
        clock.host += t.elapsed().as_secs_f64();
        self.gpu.ensure_room("suffStat$C", memplan::gauss_sets_bytes(li.off.len(), li.cols.len(), li.ei.len(), table.len(), li.off.len()), &format!("level {l}"))?;
        Ok(DeviceRows { off: self.gpu.up(clock, &li.off, "adjacency")?, cols: self.gpu.up(clock, &li.cols, "adjacency")?, binom: self.gpu.up(clock, &table, "binomial table")? })
    }

    /// [`CudaGauss::sets_keys`] on rows already on the device; also hands back the keys' device
    /// buffer, which the winners' p-values read.
    #[allow(clippy::too_many_arguments)]
    fn sets_keys_on(&self, dr: &DeviceRows, plan: &LevelPlan, li: &row_sets::LevelInputs, mut rows: Vec<row_sets::RowWork>, total_sets: u128, shared: Option<&KeyBoard>, ctl: &Control, clock: &mut Clock) -> Result<(RowKeys, CudaSlice<u64>)> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let l = plan.level;
        let (_, sets_fn, _) = self.set_kernels(l)?;
        let ne = plan.edges.len();
        let budget = self.budget(l);
        let nr = rows.len();
        let (off, cols, binom) = (&dr.off, &dr.cols, &dr.binom);
        let edge_of = self.gpu.up(clock, &li.edge_of, "edge lookup")?;
        // SAFETY: every key is written below (a snapshot, or 0xFF bytes) before a kernel reads it.
        let mut best = unsafe { self.gpu.stream.alloc::<u64>(ne.max(1)) }.map_err(cuda_err("per-edge best keys"))?;
        match shared {
            Some(sh) if ne > 0 => {
                let now = sh.snapshot();
                clock.copy(|| self.gpu.stream.memcpy_htod(&now, &mut best).map_err(cuda_err("uploading keys")))?;
            }
            _ => {
                let (ptr, _sync) = best.device_ptr_mut(&self.gpu.stream);
                // SAFETY: ptr addresses the ne (>= 1) u64 of `best`; 0xFF bytes make NO_KEY.
                unsafe { dres::memset_d8_async(ptr, 0xFF, ne.max(1) * 8, self.gpu.stream.cu_stream()) }.map_err(cuda_err("initialising keys"))?;
            }
        }
        let (mut exchanged, every) = (Instant::now(), key_exchange_every());
        let mut maxfail = self.gpu.alloc::<u64>(ne, "per-edge max p")?;
        let mut stats = self.gpu.alloc::<u64>(2, "counters")?;
        // the rows' list and flags only once a level takes a second round
        let mut live_rows: Option<(CudaSlice<u32>, CudaSlice<u8>)> = None;
        let mut task_row = self.gpu.alloc::<u32>(nr, "tasks")?;
        let mut task_t0 = self.gpu.alloc::<u64>(nr, "tasks")?;
        let mut task_prefix = self.gpu.alloc::<u64>(nr + 1, "tasks")?;

        let (pu, li_, zfac, alpha, na) = (self.p as u64, l as i32, host::z_factor(self.n, l), plan.alpha, plan.na_value);
        let (margin, sym) = (PD_MARGIN, self.symmetric as i32);
        let mut live = vec![true; nr];
        let mut done_sets: u128 = 0;
        loop {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let round = row_sets::plan_round(&mut rows, &live, budget, 32);
            if round.n_tasks() == 0 {
                break;
            }
            clock.copy(|| {
                self.gpu.stream.memcpy_htod(&round.task_row, &mut task_row).map_err(cuda_err("uploading tasks"))?;
                self.gpu.stream.memcpy_htod(&round.task_t0, &mut task_t0).map_err(cuda_err("uploading tasks"))?;
                self.gpu.stream.memcpy_htod(&round.task_prefix, &mut task_prefix).map_err(cuda_err("uploading tasks"))
            })?;
            let threads = round.threads();
            let n_tasks = round.n_tasks() as u32;
            let cfg = LaunchConfig {
                grid_dim: (threads.div_ceil(BLOCK as u64) as u32, 1, 1),
                block_dim: (BLOCK, 1, 1),
                shared_mem_bytes: 0,
            };
            let t = Instant::now();
            let args = params::Sets {
                C: &self.c, p: pu, off, cols, edge_of: &edge_of, task_row: &task_row, task_t0: &task_t0,
                task_prefix: &task_prefix, n_tasks, total: threads, binom, l: li_, zfac, alpha, na_value: na,
                pd_margin: margin, symmetric: sym, best: &mut best, maxfail: &mut maxfail, stats: &mut stats,
            };
            // SAFETY: the task arrays hold n_tasks (+ 1) entries whose ranks lie below each row's
            // C(d, l); l <= the kernel's maximum.
            unsafe { args.launch(&self.gpu, sets_fn, cfg, "gauss_sets") }?;
            self.gpu.finish_launch(clock, t, "gauss_sets")?;
            // this share's part of the level's progress
            let told = (done_sets * ne as u128).checked_div(total_sets).unwrap_or(0);
            done_sets += threads as u128;
            let now = (done_sets * ne as u128).checked_div(total_sets).unwrap_or(0);
            ctl.edges_done.fetch_add((now - told) as u64, Ordering::Relaxed);
            if rows.iter().all(|r| r.next >= r.total) {
                break;
            }
            if let Some(sh) = shared.filter(|_| exchanged.elapsed() >= every) {
                let mut mine = self.gpu.down(clock, &best, ne, "keys")?;
                let t = Instant::now();
                sh.exchange(&mut mine);
                clock.host += t.elapsed().as_secs_f64();
                clock.copy(|| self.gpu.stream.memcpy_htod(&mine, &mut best).map_err(cuda_err("uploading keys")))?;
                exchanged = Instant::now();
            }
            // drop the rows whose every edge is decided
            if live_rows.is_none() {
                let row_ids: Vec<u32> = rows.iter().map(|r| r.row).collect();
                live_rows = Some((self.gpu.up(clock, &row_ids, "row list")?, self.gpu.alloc::<u8>(nr, "row flags")?));
            }
            let (row_list, live_d) = live_rows.as_mut().expect("made above");
            let nru = nr as u32;
            let cfg = LaunchConfig { grid_dim: (nru.div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            let t = Instant::now();
            let args = params::RowsLive { off, cols, edge_of: &edge_of, rows: row_list, n_rows: nru, best: &best, live: live_d };
            // SAFETY: row_list and live_d hold nr entries.
            unsafe { args.launch(&self.gpu, &self.f.rows_live, cfg, "rows_live") }?;
            self.gpu.finish_launch(clock, t, "rows_live")?;
            let flags = self.gpu.down(clock, live_d, nr, "row flags")?;
            for (a, f) in live.iter_mut().zip(flags) {
                *a = *a && f != 0;
            }
        }
        // the three results in one wait
        let (mut best_h, mut maxfail_h, mut st) = (vec![0u64; ne], vec![0u64; ne], [0u64; 2]);
        clock.copy(|| {
            let s = &self.gpu.stream;
            if ne > 0 {
                s.memcpy_dtoh(&best.slice(0..ne), &mut best_h).map_err(cuda_err("keys"))?;
                s.memcpy_dtoh(&maxfail.slice(0..ne), &mut maxfail_h).map_err(cuda_err("max p"))?;
            }
            s.memcpy_dtoh(&stats, &mut st).map_err(cuda_err("counters"))?;
            s.synchronize().map_err(cuda_err("counters"))
        })?;
        if let Some(sh) = shared {
            sh.exchange(&mut best_h); // the blocks that start later see this block's successes
        }
        Ok((RowKeys { best: best_h, maxfail: maxfail_h, tests: st[0], fallbacks: st[1] }, best))
    }

    /// The p-value of each edge's winning test (`best`, NaN where none), recomputed by the same
    /// device functions as the tests.
    pub(super) fn sets_pbest(&self, plan: &LevelPlan, li: &row_sets::LevelInputs, best_h: &[u64], clock: &mut Clock) -> Result<Vec<f64>> {
        if best_h.iter().all(|&k| k == NO_KEY) {
            return Ok(vec![f64::NAN; plan.edges.len()]);
        }
        let dr = self.upload_rows(li, plan.level, clock)?;
        self.sets_pbest_on(&dr, plan, li, best_h, None, clock)
    }

    /// [`CudaGauss::sets_pbest`] on rows already on the device, with the keys' device buffer
    /// when it holds `best_h` already.
    fn sets_pbest_on(&self, dr: &DeviceRows, plan: &LevelPlan, li: &row_sets::LevelInputs, best_h: &[u64], best_d: Option<&CudaSlice<u64>>, clock: &mut Clock) -> Result<Vec<f64>> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let l = plan.level;
        let (_, _, pbest_fn) = self.set_kernels(l)?;
        let ne = plan.edges.len();
        let items: Vec<u32> = (0..ne as u32).filter(|&k| best_h[k as usize] != NO_KEY).collect();
        let mut p_best = vec![f64::NAN; ne];
        if items.is_empty() {
            return Ok(p_best);
        }
        let (off, cols, binom) = (&dr.off, &dr.cols, &dr.binom);
        let ei = self.gpu.up(clock, &li.ei, "edges")?;
        let ej = self.gpu.up(clock, &li.ej, "edges")?;
        let uploaded;
        let best = match best_d {
            Some(b) => b,
            None => {
                uploaded = self.gpu.up(clock, best_h, "keys")?;
                &uploaded
            }
        };
        let n_items = items.len() as u32;
        let items_d = self.gpu.up(clock, &items, "winning tests")?;
        let mut pb = self.gpu.alloc::<f64>(items.len(), "winning p-values")?;
        let cfg = LaunchConfig { grid_dim: (n_items.div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let t = Instant::now();
        let args = params::Pbest {
            C: &self.c, p: self.p as u64, off, cols, ei: &ei, ej: &ej, items: &items_d, n_items, binom, l: l as i32,
            zfac: host::z_factor(self.n, l), pd_margin: PD_MARGIN, symmetric: self.symmetric as i32, best, pbest_out: &mut pb,
        };
        // SAFETY: items index edges with a key.
        unsafe { args.launch(&self.gpu, pbest_fn, cfg, "gauss_pbest") }?;
        self.gpu.finish_launch(clock, t, "gauss_pbest")?;
        let pb = self.gpu.down(clock, &pb, items.len(), "winning p-values")?;
        for (k, v) in items.iter().zip(pb) {
            p_best[*k as usize] = v;
        }
        Ok(p_best)
    }

    fn level_gpu(&self, plan: &LevelPlan, ctl: &Control, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let mut clock = Clock::default();
        let r = match plan.level {
            0 => self.level0(plan, ctl, &mut clock),
            1 => self.level1(plan, ctl, &mut clock),
            _ => self.level_sets(plan, ctl, &mut clock, lt),
        };
        lt.kernel_s += clock.kernel;
        lt.transfer_s += clock.transfer;
        lt.launches += clock.launches;
        lt.host_s += clock.host;
        lt.collect_s += clock.collect;
        r
    }

    /// Loads the set (stable) or listed-test (stable.fast) kernels of the variant that holds
    /// level `l`, compiling them the first time a level needs them; the time goes to the
    /// compile figure.
    fn load_level_kernels(&mut self, l: usize, fast: bool) -> Result<()> {
        let Some(m) = host::set_kernel_variant(l.max(1)) else { return Ok(()) };
        let next = SET_KERNEL_VARIANTS.iter().copied().find(|&v| v > m);
        if fast && self.f.listed.iter().all(|(v, _)| *v != m) {
            // the next variant is made while this one's levels run
            if let Some(v) = next {
                module::prefetch(self.gpu.info.ordinal, &[Family::GaussListed(v)]);
            }
            let c = module::module_for(&self.gpu, Family::GaussListed(m)).map_err(PcError::Cuda)?;
            let get = |name: String| c.function(&name).map_err(PcError::Cuda);
            let k = ListedKernels {
                listed: get(format!("gauss_listed_l{m}"))?,
                ranked: get(format!("gauss_ranked_l{m}"))?,
                ranked_pbest: get(format!("gauss_ranked_pbest_l{m}"))?,
                deep: get(format!("gauss_dense_deep_l{m}"))?,
            };
            self.f.listed.push((m, k));
            self.timings.add_compile(&c);
        } else if !fast && self.f.sets.iter().all(|(v, _, _)| *v != m) {
            if let Some(v) = next {
                module::prefetch(self.gpu.info.ordinal, &[Family::GaussSets(v)]);
            }
            let c = module::module_for(&self.gpu, Family::GaussSets(m)).map_err(PcError::Cuda)?;
            let get = |name: String| c.function(&name).map_err(PcError::Cuda);
            self.f.sets.push((m, get(format!("gauss_sets_l{m}"))?, get(format!("gauss_pbest_l{m}"))?));
            self.timings.add_compile(&c);
        }
        Ok(())
    }

    fn level_on_cpu(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let flavour = match plan.order {
            Order::Stable => GaussFlavour::R,
            Order::StableFast => GaussFlavour::Cpp,
        };
        if self.cpu_test.as_ref().is_none_or(|t| t.flavour != flavour) {
            let c = match self.cpu_test.take() {
                Some(t) => t.c,
                None => guard("copying C back", || {
                    let v = self.gpu.stream.clone_dtoh(&self.c).map_err(cuda_err("copying C back"))?;
                    self.gpu.stream.synchronize().map_err(cuda_err("copying C back"))?;
                    Ok(v)
                })?,
            };
            self.cpu_test = Some(GaussTest::new(c, self.p, self.n, flavour)?);
        }
        let test = self.cpu_test.as_ref().expect("set above");
        ParallelCpu::new(test, 0)?.run_level(plan, watch)
    }
}

fn outcome_of(e: &EdgeWork, key: u64, p_best: f64, max_fail: f64) -> Result<EdgeOutcome> {
    if key == NO_KEY {
        return Ok(EdgeOutcome { best: None, p_best: f64::NAN, max_fail });
    }
    let (side, rank) = unpack_key(key);
    match e.sides[side as usize] {
        Some(s) if rank < s.n_ranks => Ok(EdgeOutcome { best: Some((side, rank)), p_best, max_fail }),
        _ => Err(PcError::Internal(format!(
            "the GPU reported test (side {side}, rank {rank}) for edge {}-{}, which the plan does not hold",
            e.i, e.j
        ))),
    }
}

impl Backend for CudaGauss {
    fn name(&self) -> String {
        format!("cuda ({})", self.gpu.info.name)
    }

    fn dense(&mut self) -> Option<&mut dyn pc_core::dense::DenseLevels> {
        if self.dense_fits && !self.planned_only {
            Some(self)
        } else {
            None
        }
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let fast = plan.order == Order::StableFast;
        if !fast {
            row_sets::check_stable_plan(plan)?;
        }
        let t0 = Instant::now();
        let mut lt = LevelTimings { level: plan.level, ..Default::default() };
        let zfac = self.z_factor(plan.order, plan.level);
        // the CPU reproduces what the kernels leave out: levels deeper than they hold, and a C
        // with NaN (at levels >= 2 pcalg's pseudo-inverse stops there; stable.fast's C++ test has
        // a NaN rule at every level) or, for stable.fast, an n at which its test stops with an error
        let on_cpu = if fast {
            self.has_nan || !zfac.is_finite() || host::set_kernel_variant(plan.level.max(1)).is_none()
        } else {
            plan.level >= 2 && (self.has_nan || host::set_kernel_variant(plan.level).is_none())
        };
        let out = if plan.edges.is_empty() {
            Ok(Vec::new())
        } else if on_cpu {
            lt.on_cpu = true;
            self.level_on_cpu(plan, watch)
        } else {
            if plan.level >= 2 || fast {
                self.load_level_kernels(plan.level, fast)?;
            }
            let me = &*self;
            // a Gaussian test costs the device about a nanosecond
            watched_level(plan, watch, 1 << 20, &mut lt, |ctl, lt| if fast { me.level_listed(plan, zfac, ctl, lt) } else { me.level_gpu(plan, ctl, lt) })
        };
        self.timings.record(lt, t0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // several devices' shares of a level: the smallest success and the largest failure win, and
    // the counts add up, whatever the order of the shares
    #[test]
    fn set_keys_merge_by_min_and_max() {
        let a = RowKeys { best: vec![NO_KEY, 7, 1 << 63, 3], maxfail: vec![0, 5, 9, 2], tests: 10, fallbacks: 1 };
        let b = RowKeys { best: vec![4, NO_KEY, 12, 3], maxfail: vec![6, 0, 1, 8], tests: 5, fallbacks: 0 };
        for (x, y) in [(&a, &b), (&b, &a)] {
            let mut m = RowKeys { best: x.best.clone(), maxfail: x.maxfail.clone(), tests: x.tests, fallbacks: x.fallbacks };
            m.merge(y);
            assert_eq!(m.best, vec![4, 7, 12, 3]);
            assert_eq!(m.maxfail, vec![6, 5, 9, 8]);
            assert_eq!((m.tests, m.fallbacks), (15, 1));
        }
    }

    // devices posting their keys in any order end with the smallest key of each edge, each device
    // taking back at least what was posted before it
    #[test]
    fn shared_keys_keep_the_smallest_success() {
        let sh = KeyBoard::new(4).unwrap();
        let mut a = vec![NO_KEY, 7, 1 << 63, 3];
        sh.exchange(&mut a);
        assert_eq!(a, vec![NO_KEY, 7, 1 << 63, 3]);
        let mut b = vec![4, NO_KEY, 12, 5];
        sh.exchange(&mut b);
        assert_eq!(b, vec![4, 7, 12, 3]);
        assert_eq!(sh.snapshot(), vec![4, 7, 12, 3]);
        let mut a2 = vec![NO_KEY, 2, 1 << 63, 3];
        sh.exchange(&mut a2);
        assert_eq!(a2, vec![4, 2, 12, 3]);
        assert_eq!(sh.snapshot(), vec![4, 2, 12, 3]);
        // as many keys as a level holds edges, in parallel chunks
        let n = 100_000;
        let sh = KeyBoard::new(n).unwrap();
        let mut x: Vec<u64> = (0..n as u64).collect();
        let mut y: Vec<u64> = (0..n as u64).rev().collect();
        sh.exchange(&mut x);
        sh.exchange(&mut y);
        assert!(y.iter().enumerate().all(|(i, &v)| v == (i as u64).min((n - 1 - i) as u64)));
    }

    #[test]
    fn new_fails_cleanly_without_a_gpu_or_with_bad_input() {
        // bad shapes and values are refused before the GPU is touched
        assert!(matches!(CudaGauss::new(&[1.0; 3], 2, 10.0), Err(PcError::InvalidArgument { .. })));
        assert!(matches!(CudaGauss::new(&[1.0, f64::INFINITY, 0.0, 1.0], 2, 10.0), Err(PcError::InvalidArgument { .. })));
        assert!(matches!(CudaGauss::new(&[1.0, 0.0, 0.0, 1.0], 2, f64::NAN), Err(PcError::InvalidArgument { .. })));
        // without a GPU (CI) a Cuda error, never a panic; with one, a working backend
        match CudaGauss::new(&[1.0, 0.5, 0.5, 1.0], 2, 10.0) {
            Ok(g) => assert!(g.name().starts_with("cuda")),
            Err(PcError::Cuda(msg)) => assert!(!msg.is_empty()),
            Err(e) => panic!("unexpected error {e:?}"),
        }
    }
}
