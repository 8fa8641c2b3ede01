//! Levels 0 and 1 of the Gaussian backend without host plans (pc-core's `DenseLevels`), for
//! both of pcalg's orders (`fast`: stable.fast, with its C++ test's arithmetic).
//!
//! The graph lives on the device as a bit matrix for the whole of these levels, with pMax and
//! level 0's empty sepsets: level 0 is one launch over all pairs (`gauss_dense_level0`), level 1
//! compacts the graph into neighbour lists on the device (`dense_degrees`, `dense_fill_rows`; only
//! per-row offsets pass through the host) and runs a warp per edge (`gauss_dense_level1`), each
//! applying pcalg's rules itself. What comes back per level is three counters and level 1's
//! separating sets; the graph, pMax and the level-0 bits come back once, in `dense_end`.

use std::time::Instant;

use cudarc::driver::{CudaSlice, LaunchConfig};
use pc_core::backend::{run_watched, Control, Watch};
use pc_core::dense::{DenseLevelReport, DenseLevels, PmaxCopy};
use pc_core::multi;
use pc_core::plan::Order;
use pc_core::{Adjacency, BitMatrix, PcError};

use crate::gauss::{params, CudaGauss, DenseKernels};
use crate::runtime::gpu::{cuda_err, guard, Clock, Gpu, Result};
use crate::runtime::timings::LevelTimings;

/// Edges per level-1 launch (a warp each; 12 bytes of sepset slot each).
const LEVEL1_CHUNK: usize = 1 << 22;

/// The device copies of the graph that levels 0 and 1 work on.
pub(crate) struct DenseState {
    pub(super) p: usize,
    pub(super) words: usize,
    pub(super) adj: CudaSlice<u64>,
    fixed: Option<CudaSlice<u64>>,
    pub(super) pmax: CudaSlice<f64>,
    pub(super) sep0: CudaSlice<u64>,
    alpha: f64,
    na_value: f64,
    /// stable.fast's rules (pc-core's dense.rs) instead of stable's.
    fast: bool,
}

/// Device bytes the dense levels hold besides C: pMax, graph, snapshot, level-0 bits, fixed edges.
pub fn dense_bytes(p: usize, fixed: bool) -> usize {
    let bits = p * p.div_ceil(64) * 8;
    8 * p * p + bits * (3 + fixed as usize)
}

impl CudaGauss {
    /// Level 0 over the pairs i < j with i in `rows` (all of 0..p on one device).
    #[allow(clippy::too_many_arguments)]
    fn dense_level0(gpu: &Gpu, f: &DenseKernels, c: &CudaSlice<f64>, st: &mut DenseState, zfac: f64, both: bool, rows: std::ops::Range<usize>, clock: &mut Clock) -> Result<(u64, usize, bool)> {
        let (p, words) = (st.p, st.words);
        let mut deg = gpu.alloc::<u32>(p, "degrees")?;
        let mut counters = gpu.alloc::<u64>(4, "counters")?;
        let snap = clock.copy(|| gpu.stream.clone_dtod(&st.adj).map_err(cuda_err("copying the graph")))?;
        let (pu, wu, p32) = (p as u64, words as u64, p as u32);
        let t = Instant::now();
        let cfg = LaunchConfig { grid_dim: ((p32 as u64 * 32).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: snap holds p rows of `words` words.
        unsafe { params::Degrees { adj: &snap, words: wu, p: p32, deg: &mut deg }.launch(gpu, &f.degrees, cfg, "dense_degrees") }?;
        gpu.finish_launch(clock, t, "dense_degrees")?;
        let has_fixed = st.fixed.is_some() as i32;
        let fixed = st.fixed.as_ref().unwrap_or(&snap);
        let (alpha, na, both, fast) = (st.alpha, st.na_value, both as i32, st.fast as i32);
        let (i0, i1) = (rows.start as u32, rows.end as u32);
        if i1 <= i0 {
            let cnt = gpu.down(clock, &counters, 3, "level 0 counters")?;
            return Ok((cnt[0], cnt[1] as usize, cnt[2] != 0));
        }
        let cfg = LaunchConfig { grid_dim: ((i1 - i0).div_ceil(32), p32.div_ceil(8), 1), block_dim: (32, 8, 1), shared_mem_bytes: 0 };
        let t = Instant::now();
        let args = params::DenseLevel0 {
            C: c, p: pu, snap: &snap, adj: &mut st.adj, fixed, has_fixed, words: wu, deg: &deg, zfac, both, alpha, na_value: na,
            pmax: &mut st.pmax, sep0: &mut st.sep0, counters: &mut counters, i0, i1, fast,
        };
        // SAFETY: every bit matrix holds p rows of `words` words, pMax p x p, deg p entries; the
        // grid covers rows i0..i1 x all of 0..p.
        unsafe { args.launch(gpu, &f.level0, cfg, "gauss_dense_level0") }?;
        gpu.finish_launch(clock, t, "gauss_dense_level0")?;
        let cnt = gpu.down(clock, &counters, 3, "level 0 counters")?;
        Ok((cnt[0], cnt[1] as usize, cnt[2] != 0))
    }

    /// Level 1 over share `d` of `k` of the level's edges (`pc_core::multi::even_ranges`; the
    /// whole level when k = 1).
    #[allow(clippy::too_many_arguments)]
    fn dense_level1(gpu: &Gpu, f: &DenseKernels, c: &CudaSlice<f64>, st: &mut DenseState, zfac: f64, ctl: &Control, (d, k): (usize, usize), clock: &mut Clock) -> Result<DenseLevelReport> {
        let (p, words) = (st.p, st.words);
        let (pu, wu, p32) = (p as u64, words as u64, p as u32);
        // the level's snapshot as neighbour lists: degrees, offsets (host), lists (device)
        let mut deg_d = gpu.alloc::<u32>(p, "degrees")?;
        let rows_cfg = LaunchConfig { grid_dim: ((p32 as u64 * 32).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let t = Instant::now();
        // SAFETY: as in level 0.
        unsafe { params::Degrees { adj: &st.adj, words: wu, p: p32, deg: &mut deg_d }.launch(gpu, &f.degrees, rows_cfg, "dense_degrees") }?;
        gpu.finish_launch(clock, t, "dense_degrees")?;
        let deg = gpu.down(clock, &deg_d, p, "degrees")?;
        let t = Instant::now();
        let mut off = Vec::with_capacity(p + 1);
        off.push(0u64);
        for &d in &deg {
            off.push(off[off.len() - 1] + d as u64);
        }
        let total = off[p] as usize;
        clock.host += t.elapsed().as_secs_f64();
        gpu.ensure_free(total * 4 + p * 28 + LEVEL1_CHUNK * 12, "level 1's neighbour lists")?;
        let off_d = gpu.up(clock, &off, "offsets")?;
        let mut cols = gpu.alloc::<u32>(total, "neighbour lists")?;
        let mut upper_d = gpu.alloc::<u32>(p, "neighbour lists")?;
        let t = Instant::now();
        let args = params::FillRows { adj: &st.adj, words: wu, p: p32, off: &off_d, cols: &mut cols, upper: &mut upper_d };
        // SAFETY: cols holds off[p] entries.
        unsafe { args.launch(gpu, &f.fill_rows, rows_cfg, "dense_fill_rows") }?;
        gpu.finish_launch(clock, t, "dense_fill_rows")?;
        let upper = gpu.down(clock, &upper_d, p, "neighbour lists")?;
        let t = Instant::now();
        let mut ebase = Vec::with_capacity(p + 1);
        ebase.push(0u64);
        for x in 0..p {
            ebase.push(ebase[x] + deg[x] as u64 - upper[x] as u64);
        }
        let ne = ebase[p] as usize;
        clock.host += t.elapsed().as_secs_f64();
        let ebase_d = gpu.up(clock, &ebase, "edge offsets")?;
        let mut counters = gpu.alloc::<u64>(4, "counters")?;
        let share = pc_core::multi::even_ranges(ne, k).swap_remove(d);
        let chunk = LEVEL1_CHUNK.min(share.len()).max(1);
        let mut sep_out = gpu.alloc::<u32>(3 * chunk, "sepsets")?;
        let mut sep_count = gpu.alloc::<u64>(1, "sepsets")?;
        let has_fixed = st.fixed.is_some() as i32;
        let (alpha, na, fast) = (st.alpha, st.na_value, st.fast as i32);
        let mut sepsets = Vec::new();
        for start in share.clone().step_by(chunk) {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let m = chunk.min(share.end - start);
            let (e0, mu) = (start as u64, m as u64);
            clock.copy(|| gpu.stream.memset_zeros(&mut sep_count).map_err(cuda_err("clearing a counter")))?;
            let cfg = LaunchConfig { grid_dim: ((mu * 32).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            let fixed = st.fixed.as_ref().unwrap_or(&st.sep0);
            let t = Instant::now();
            let args = params::DenseLevel1 {
                C: c, p: pu, off: &off_d, cols: &cols, upper: &upper_d, ebase: &ebase_d, n_rows: p32, e0, m: mu, fixed, has_fixed,
                words: wu, zfac, alpha, na_value: na, adj: &mut st.adj, pmax: &mut st.pmax, sep_out: &mut sep_out,
                sep_count: &mut sep_count, counters: &mut counters, fast,
            };
            // SAFETY: edges start..start + m exist (ebase[p] = ne); sep_out holds 3 * m slots, one
            // per edge at most.
            unsafe { args.launch(gpu, &f.level1, cfg, "gauss_dense_level1") }?;
            gpu.finish_launch(clock, t, "gauss_dense_level1")?;
            let n = gpu.down(clock, &sep_count, 1, "sepset count")?[0] as usize;
            if n > m {
                return Err(PcError::Internal(format!("level 1 reported {n} sepsets for {m} edges")));
            }
            let raw = gpu.down(clock, &sep_out, 3 * n, "sepsets")?;
            sepsets.extend(raw.chunks_exact(3).map(|s| [s[0], s[1], s[2]]));
        }
        let cnt = gpu.down(clock, &counters, 4, "level 1 counters")?;
        Ok(DenseLevelReport { tests: cnt[0], removed: cnt[1] as usize, not_done: cnt[2] != 0, singles: sepsets, qualifying: cnt[3] })
    }
}

/// What [`super::multi::MultiGauss`] asks of each device's backend.
impl CudaGauss {
    pub(super) fn gpu(&self) -> &Gpu {
        &self.gpu
    }

    pub(super) fn has_nan(&self) -> bool {
        self.has_nan
    }

    pub(super) fn dense_state(&self) -> Result<&DenseState> {
        self.dense.as_ref().ok_or_else(not_begun)
    }

    /// The device and its dense state, the state to be written.
    pub(super) fn gpu_and_dense_mut(&mut self) -> Result<(&Gpu, &mut DenseState)> {
        Ok((&self.gpu, self.dense.as_mut().ok_or_else(not_begun)?))
    }

    /// Frees pMax and the graph (the planned levels that follow need the room).
    pub(super) fn drop_dense(&mut self) {
        self.dense = None;
    }

    /// Share `d` of `k` of dense level `level`, with the z factor of `order`'s test: at level 0
    /// the pairs of its rows (`multi::row_ranges`), at level 1 its blocks of edges; share (0, 1)
    /// is the whole level.
    pub(super) fn dense_share(&mut self, order: Order, level: usize, ctl: &Control, (d, k): (usize, usize), clock: &mut Clock) -> Result<DenseLevelReport> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let zfac = self.z_factor(order, level);
        let both = !self.symmetric;
        let (gpu, f, c) = (&self.gpu, &self.dense_kernels, &self.c);
        let st = self.dense.as_mut().ok_or_else(not_begun)?;
        if level == 0 {
            let rows = multi::row_ranges(st.p, k).swap_remove(d);
            let (tests, removed, not_done) = Self::dense_level0(gpu, f, c, st, zfac, both, rows, clock)?;
            Ok(DenseLevelReport { tests, removed, not_done, singles: Vec::new(), qualifying: 0 })
        } else {
            Self::dense_level1(gpu, f, c, st, zfac, ctl, (d, k), clock)
        }
    }
}

fn not_begun() -> PcError {
    PcError::Internal("a dense level before dense_begin".into())
}

impl DenseLevels for CudaGauss {
    /// stable.fast too, except where its C++ test needs what only the CPU twin reproduces: a C
    /// with NaN (its NaN rule) or n so small that level 0 or 1 stops with an error.
    fn dense_order_ok(&self, order: Order) -> bool {
        order == Order::Stable || (!self.has_nan && (0..2).all(|l| self.z_factor(Order::StableFast, l).is_finite()))
    }

    fn dense_kind(&self) -> String {
        let (major, minor) = self.gpu.info.compute_capability;
        format!("cuda ({}, sm_{major}{minor})", self.gpu.info.name)
    }

    fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<()> {
        if !self.dense_order_ok(order) {
            return Err(PcError::Internal("dense levels asked for an order they do not run here".into()));
        }
        let fast = order == Order::StableFast;
        let p = self.p;
        if start.p() != p || fixed.p() != p {
            return Err(PcError::Internal("the graph's size is not C's".into()));
        }
        let has_fixed = fixed.words().iter().any(|&w| w != 0);
        let need = dense_bytes(p, has_fixed);
        let t0 = Instant::now();
        let (gpu, f) = (&self.gpu, &self.dense_kernels);
        let st = guard("starting the dense levels", || {
            gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            gpu.ensure_free(need, &format!("pMax and the graph on the GPU (p = {p})"))?;
            let words = p.div_ceil(64);
            let mut adj = gpu.alloc::<u64>(p * words, "the graph")?;
            gpu.upload_staged(start.words(), &mut adj, "the graph")?;
            pc_core::trace::mark(|| "dense begin: graph uploaded".into());
            let fixed = if has_fixed {
                let mut d = gpu.alloc::<u64>(p * words, "fixed edges")?;
                gpu.upload_staged(fixed.words(), &mut d, "fixed edges")?;
                Some(d)
            } else {
                None
            };
            let sep0 = gpu.alloc::<u64>(p * words, "level-0 sepsets")?;
            // SAFETY: every cell is written by dense_pmax_init before any read.
            let mut pmax = unsafe { gpu.stream.alloc::<f64>(p * p) }.map_err(cuda_err("allocating pMax"))?;
            let (pu, fast_i) = (p as u64, fast as i32);
            let cfg = LaunchConfig { grid_dim: (((p * p) as u64).div_ceil(256).min(1 << 20) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
            // SAFETY: pmax holds p * p cells.
            unsafe { params::PmaxInit { pmax: &mut pmax, p: pu, fast: fast_i }.launch(gpu, &f.pmax_init, cfg, "dense_pmax_init") }?;
            gpu.stream.synchronize().map_err(cuda_err("initialising pMax"))?;
            Ok(DenseState { p, words, adj, fixed, pmax, sep0, alpha, na_value, fast })
        })?;
        self.dense = Some(st);
        self.timings.setup_s += t0.elapsed().as_secs_f64();
        Ok(())
    }

    fn dense_level(&mut self, level: usize, _pmax: &mut [f64], _sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
        if level > 1 {
            return Err(PcError::Internal(format!("dense level {level} does not exist")));
        }
        let t0 = Instant::now();
        let fast = self.dense.as_ref().is_some_and(|st| st.fast);
        let order = if fast { Order::StableFast } else { Order::Stable };
        let mut clock = Clock::default();
        let (this, clk) = (&mut *self, &mut clock);
        let rep = run_watched(0, watch, std::time::Duration::from_millis(100), move |ctl| {
            guard("running a level on the GPU", || this.dense_share(order, level, ctl, (0, 1), clk))
        })?;
        let lt = LevelTimings::dense(level, &clock, 0.0, rep.tests);
        self.timings.record(lt, t0);
        Ok(rep)
    }

    fn writes_whole_pmax(&self) -> bool {
        true
    }

    fn dense_end(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<()> {
        match self.dense_end_deferred(graph, pmax, sep0)? {
            Some(copy) => copy(pmax),
            None => Ok(()),
        }
    }

    /// The graph and level 0's bits come back now; pMax (3.2 GB at p = 20000, a third of a
    /// second) on a stream of its own while the next levels run, where the device keeps room for
    /// them with pMax still on it.
    fn dense_end_deferred(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<Option<PmaxCopy>> {
        let st = self.dense.take().ok_or_else(|| PcError::Internal("dense_end before dense_begin".into()))?;
        let p = st.p;
        if pmax.len() != p * p || sep0.p() != p {
            return Err(PcError::Internal("dense_end: result buffers of the wrong size".into()));
        }
        let t0 = Instant::now();
        let gpu = &self.gpu;
        // the bit matrices through the staging buffers too (100 MB at p = 20000: 63 ms as two
        // pageable copies)
        let (g, s0) = guard("copying the results back", || {
            gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            gpu.stream.synchronize().map_err(cuda_err("copying the results back"))?;
            let back = |d: &CudaSlice<u64>, what: &str| -> Result<Vec<u64>> {
                let mut v = pc_core::mem::try_zeroed_words(d.len(), "labels", "the graph's bits")?;
                gpu.download_staged(d, &mut v, what)?;
                Ok(v)
            };
            Ok((back(&st.adj, "copying the graph back")?, back(&st.sep0, "copying the level-0 sepsets back")?))
        })?;
        *graph = Adjacency::from_words(p, g);
        *sep0 = BitMatrix::from_words(p, s0);
        pc_core::trace::mark(|| "dense end: graph and level-0 bits back".into());
        let DenseState { pmax: dpmax, .. } = st; // the bit matrices are freed here
        let pmax_bytes = dpmax.len() * 8;
        let own = guard("copying pMax back", || {
            let room = gpu.free_bytes()? >= pmax_bytes;
            if room { gpu.with_own_stream().map(Some) } else { Ok(None) }
        })?;
        self.timings.results_s += t0.elapsed().as_secs_f64();
        let spent = self.pmax_copy_ns.clone();
        let copy = move |own: &Gpu, dst: &mut [f64]| -> Result<()> {
            let t = Instant::now();
            let r = guard("copying pMax back", || {
                own.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
                own.download_staged(&dpmax, dst, "pMax")
            });
            drop(dpmax);
            pc_core::trace::mark(|| format!("pMax copied ({:.3} s)", t.elapsed().as_secs_f64()));
            spent.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
            r
        };
        match own {
            Some(own) => Ok(Some(Box::new(move |dst: &mut [f64]| copy(&own, dst)))),
            None => copy(&self.gpu, pmax).map(|()| None),
        }
    }
}
