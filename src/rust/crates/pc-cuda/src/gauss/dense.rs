//! Levels 0 and 1 of the Gaussian backend without host plans (pc-core's `DenseLevels`), for
//! both of pcalg's orders (`fast`: stable.fast, with its C++ test's arithmetic).
//!
//! The graph lives on the device as a bit matrix for the whole of these levels, with pMax and
//! level 0's empty sepsets: level 0 is one launch over all pairs (`gauss_dense_level0`), level 1
//! compacts the graph into neighbour lists on the device (`dense_degrees`, `dense_fill_rows`; only
//! per-row offsets pass through the host) and runs a warp per edge (`gauss_dense_level1`), each
//! applying pcalg's rules itself. What comes back per level is three counters and level 1's
//! separating sets; the graph, pMax and the level-0 bits come back once, in `dense_end`.
//!
//! stable.fast's deeper levels run here too (`dense_deep`), on one device: the same lists, a warp
//! per edge walking its sides' sets 32 at a time (`gauss_dense_deep_l*`), and back come the
//! counters and the removed edges' sets. A level declines (and runs planned) where a side holds
//! more than `DEEP_SIDE_TESTS` tests or its buffers do not fit.

use std::time::Instant;

use cudarc::driver::{CudaSlice, LaunchConfig};
use pc_core::backend::{run_watched, Control, Watch};
use pc_core::dense::{DenseLevelReport, DenseLevels, PmaxCopy};
use pc_core::multi;
use pc_core::plan::Order;
use pc_core::{Adjacency, BitMatrix, PcError};

use crate::gauss::host::{self, BLOCK};
use crate::gauss::{params, CudaGauss, DenseKernels, PD_MARGIN};
use crate::runtime::gpu::{cuda_err, guard, Clock, Gpu, Result};
use crate::runtime::memplan;
use crate::runtime::timings::LevelTimings;

/// Edges per level-1 launch (a warp each; 12 bytes of sepset slot each).
const LEVEL1_CHUNK: usize = 1 << 22;
/// Edges per launch of a deeper level (Ctrl-C is answered between launches).
const DEEP_CHUNK: usize = 1 << 22;
/// The most tests a side may hold at a deeper level run dense: a warp walks an edge's tests 32 at
/// a time, so an edge with many more would hold its warp long after the others end. A level
/// with such an edge runs planned instead, where rounds spread an edge's tests over the device.
const DEEP_SIDE_TESTS: u64 = 1 << 20;

/// The device copies of the graph that levels 0 and 1 work on.
pub(crate) struct DenseState {
    pub(super) p: usize,
    pub(super) words: usize,
    pub(super) adj: CudaSlice<u64>,
    fixed: Option<CudaSlice<u64>>,
    /// None once handed back before the deeper levels (`dense_pmax_now`).
    pmax: Option<CudaSlice<f64>>,
    pub(super) sep0: CudaSlice<u64>,
    alpha: f64,
    na_value: f64,
    /// stable.fast's rules (pc-core's dense.rs) instead of stable's.
    fast: bool,
    /// The last level's snapshot: its neighbour-list entries and largest degree, bounds of the
    /// next level's (edges only go), by which a deeper level sizes its buffers without asking.
    bounds: Option<(usize, usize)>,
}

impl DenseState {
    pub(super) fn pmax(&self) -> Result<&CudaSlice<f64>> {
        self.pmax.as_ref().ok_or_else(pmax_gone)
    }
}

fn pmax_gone() -> PcError {
    PcError::Internal("the dense levels' pMax was handed back already".into())
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
        let DenseState { adj, pmax, sep0, .. } = st;
        let args = params::DenseLevel0 {
            C: c, p: pu, snap: &snap, adj, fixed, has_fixed, words: wu, deg: &deg, zfac, both, alpha, na_value: na,
            pmax: pmax.as_mut().ok_or_else(pmax_gone)?, sep0, counters: &mut counters, i0, i1, fast,
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
        let LevelRows { off: off_d, cols, upper: upper_d, ebase: ebase_d, ne } = level_rows(gpu, f, st, LEVEL1_CHUNK * 12, "level 1's neighbour lists", clock)?;
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
                words: wu, zfac, alpha, na_value: na, adj: &mut st.adj, pmax: st.pmax.as_mut().ok_or_else(pmax_gone)?, sep_out: &mut sep_out,
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
        Ok(DenseLevelReport { tests: cnt[0], removed: cnt[1] as usize, not_done: cnt[2] != 0, singles: sepsets, qualifying: cnt[3], ..Default::default() })
    }
}

impl CudaGauss {
    /// stable.fast's level `l` >= 2 on the dense graph; declined where a side of some edge could
    /// hold more than [`DEEP_SIDE_TESTS`] tests, where no kernel variant holds `l`, or where
    /// the level's buffers do not fit. The level's lists are made on the device (their sizes
    /// bounded by the last level's, `DenseState::bounds`), so a level asks the host nothing
    /// until its counters come back, with its sets and raises.
    fn dense_deep(&mut self, l: usize, ctl: &Control, clock: &mut Clock) -> Result<DenseLevelReport> {
        let declined = DenseLevelReport { declined: true, ..Default::default() };
        let Some(m) = host::set_kernel_variant(l) else { return Ok(declined) };
        // a level may run on a thread of its own (`run_watched`)
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        self.load_level_kernels(l, true)?;
        let zfac = self.z_factor(Order::StableFast, l);
        let (gpu, f, c, symmetric) = (&self.gpu, &self.dense_kernels, &self.c, self.symmetric as i32);
        let k = &self.f.listed.iter().find(|(v, _)| *v == m).ok_or_else(|| PcError::Internal(format!("listed-test kernel {m} not loaded")))?.1.deep;
        let st = self.dense.as_mut().ok_or_else(not_begun)?;
        let t0 = Instant::now();
        let Some((total_bound, deg_bound)) = st.bounds else { return Ok(declined) };
        let max_len = deg_bound.saturating_sub(1);
        if !pc_core::combinations::binomial(max_len as u64, l as u64).is_some_and(|n| n <= DEEP_SIDE_TESTS) {
            pc_core::trace::mark(|| format!("dense level {l} declined: a side of up to {max_len} neighbours"));
            return Ok(declined);
        }
        let (p, words) = (st.p, st.words);
        let (pu, wu, p32) = (p as u64, words as u64, p as u32);
        let ne_bound = total_bound / 2;
        let table = pc_core::rounds::row_sets::binomial_table(max_len, l);
        // a warp per resident slot, each with its own side-1 list of up to max_len members
        let per_sm = k.occupancy_max_active_blocks_per_multiprocessor(BLOCK, 0).map_err(cuda_err("sizing a level's launch"))?.max(1) as usize;
        let warps_per_block = BLOCK as usize / 32;
        let blocks = (gpu.info.multiprocessors.max(1) as usize * per_sm).min(ne_bound.div_ceil(warps_per_block)).max(1);
        let stride = max_len.max(1);
        let chunk = DEEP_CHUNK.min(ne_bound).max(1);
        let lists = p * 8 + (p + 1) * 16 + total_bound * 4;
        let need = (lists + blocks * warps_per_block * stride * 4 + chunk * (l + 2) * 4 + chunk * 16 + table.len() * 8) as u64;
        if need + memplan::LEVEL_MARGIN > gpu.free_bytes()? as u64 {
            pc_core::trace::mark(|| format!("dense level {l} declined: {need} bytes of buffers"));
            return Ok(declined);
        }
        // the level's lists: degrees, offsets, lists, each row's count below it, edge offsets
        let mut deg = gpu.alloc::<u32>(p, "degrees")?;
        let mut off = gpu.alloc::<u64>(p + 1, "offsets")?;
        let mut cols = gpu.alloc::<u32>(total_bound, "neighbour lists")?;
        let mut upper = gpu.alloc::<u32>(p, "neighbour lists")?;
        let mut ebase = gpu.alloc::<u64>(p + 1, "edge offsets")?;
        // [0, 4): tests, removed, not done, qualifying; [4], [5]: sets and raises taken; [6], [7]:
        // the level's edges and largest degree
        let mut counters = gpu.alloc::<u64>(8, "counters")?;
        let mut spare = gpu.alloc::<u64>(2, "counters")?;
        let rows_cfg = LaunchConfig { grid_dim: ((pu * 32).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let one_block = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
        let t = Instant::now();
        // SAFETY: adj holds p rows of `words` words; deg, upper p entries, off and ebase p + 1;
        // cols holds total_bound entries, at least this level's (edges only went since the last
        // level's lists were counted, checked below); one block of 1024 threads per scan.
        unsafe {
            params::Degrees { adj: &st.adj, words: wu, p: p32, deg: &mut deg }.launch(gpu, &f.degrees, rows_cfg, "dense_degrees")?;
            params::RowOffsets { deg: &deg, upper: &deg, has_upper: 0, p: p32, out: &mut off, stats: spare.slice_mut(0..2) }.launch(gpu, &f.row_offsets, one_block, "dense_row_offsets")?;
            params::FillRows { adj: &st.adj, words: wu, p: p32, off: &off, cols: &mut cols, upper: &mut upper }.launch(gpu, &f.fill_rows, rows_cfg, "dense_fill_rows")?;
            params::RowOffsets { deg: &deg, upper: &upper, has_upper: 1, p: p32, out: &mut ebase, stats: counters.slice_mut(6..8) }.launch(gpu, &f.row_offsets, one_block, "dense_row_offsets")?;
        }
        clock.launches += 4;
        clock.kernel += t.elapsed().as_secs_f64();
        let binom = gpu.up(clock, &table, "binomial table")?;
        let mut own = gpu.alloc::<u32>(blocks * warps_per_block * stride, "the level's side lists")?;
        let mut sep_out = gpu.alloc::<u32>(chunk * (l + 2), "sepsets")?;
        let mut raises = gpu.alloc::<u64>(2 * chunk, "pMax's raises")?;
        let mut next = gpu.alloc::<u64>(1, "the level's edge counter")?;
        let has_fixed = st.fixed.is_some() as i32;
        let (alpha, na) = (st.alpha, st.na_value);
        let (mut sets, mut raised) = (Vec::new(), Vec::new());
        let mut cnt = vec![0u64; 8];
        for start in (0..ne_bound.max(1)).step_by(chunk) {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            clock.copy(|| {
                if start > 0 {
                    gpu.stream.memset_zeros(&mut counters.slice_mut(4..6)).map_err(cuda_err("clearing a counter"))?;
                }
                gpu.stream.memcpy_htod(&[start as u64], &mut next).map_err(cuda_err("setting the level's edge counter"))
            })?;
            let cfg = LaunchConfig { grid_dim: (blocks as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
            let fixed = st.fixed.as_ref().unwrap_or(&st.sep0);
            let t = Instant::now();
            let args = params::DenseDeep {
                C: c, p: pu, off: &off, cols: &cols, upper: &upper, ebase: &ebase, n_rows: p32, end: (start + chunk) as u64,
                fixed, has_fixed, words: wu, binom: &binom, l: l as i32, zfac, alpha, na_value: na, pd_margin: PD_MARGIN, symmetric,
                adj: &mut st.adj, raises: &mut raises, own: &mut own, stride: stride as u64, sep_out: &mut sep_out,
                counters: &mut counters, next: &mut next,
            };
            // SAFETY: the kernel takes edges start.. below start + chunk and the level's last
            // (ebase[p]); every row's degree is at most max_len + 1, so a side list fits its
            // warp's `stride` slots and every binomial read lies in the table; sep_out holds
            // l + 2 numbers and raises 2 for each edge of the chunk; the variant holds l.
            unsafe { args.launch(gpu, k, cfg, "gauss_dense_deep") }?;
            gpu.finish_launch(clock, t, "gauss_dense_deep")?;
            cnt = gpu.down(clock, &counters, 8, "level counters")?;
            let (n, r) = (cnt[4] as usize, cnt[5] as usize);
            if n > chunk || r > chunk {
                return Err(PcError::Internal(format!("level {l} reported {n} sepsets and {r} raises of pMax for {chunk} edges")));
            }
            // host memory for what came back, taken fallibly: both grow with the level's edges
            let grow = |bytes: usize| pc_core::mem::out_of_memory("suffStat$C", "a level's separating sets and raises of pMax", bytes as u64);
            if n > 0 {
                sets.try_reserve(n * (l + 2)).map_err(|_| grow(n * (l + 2) * 4))?;
                sets.extend(gpu.down(clock, &sep_out, n * (l + 2), "sepsets")?);
            }
            if r > 0 {
                raised.try_reserve(r).map_err(|_| grow(r * 16))?;
                let t = Instant::now();
                let words = gpu.down(clock, &raises, 2 * r, "pMax's raises")?;
                raised.extend(words.chunks_exact(2).map(|w| (w[0] as usize, f64::from_bits(w[1]))));
                clock.host += t.elapsed().as_secs_f64();
            }
        }
        let (ne, top) = (cnt[6] as usize, cnt[7] as usize);
        if 2 * ne > total_bound || top > deg_bound {
            return Err(PcError::Internal(format!("level {l} grew past the last level's lists ({ne} edges, degree {top})")));
        }
        st.bounds = Some((2 * ne, top));
        pc_core::trace::mark(|| {
            format!(
                "dense level {l}: {ne} edges, sides of up to {}, in {:.4} s: kernels {:.4} s, copies {:.4} s, host {:.4} s",
                top.saturating_sub(1), t0.elapsed().as_secs_f64(), clock.kernel, clock.transfer, clock.host
            )
        });
        Ok(DenseLevelReport { tests: cnt[0], removed: cnt[1] as usize, qualifying: cnt[3], sets, raises: raised, ..Default::default() })
    }
}

/// A level's snapshot as neighbour lists on the device (CSR, ascending), each row's count of
/// neighbours below it, and the level's edge numbering: edge e is the (e - ebase[i])-th
/// neighbour of i above i (fixed edges hold a number too).
pub(super) struct LevelRows {
    pub(super) off: CudaSlice<u64>,
    pub(super) cols: CudaSlice<u32>,
    pub(super) upper: CudaSlice<u32>,
    pub(super) ebase: CudaSlice<u64>,
    pub(super) ne: usize,
}

/// [`LevelRows`] of the dense graph: degrees, offsets (host), lists (device); `extra` bytes the
/// level needs besides are planned with them. The snapshot's size becomes `st.bounds`.
fn level_rows(gpu: &Gpu, f: &DenseKernels, st: &mut DenseState, extra: usize, what: &str, clock: &mut Clock) -> Result<LevelRows> {
    let (p, words) = (st.p, st.words);
    let (wu, p32) = (words as u64, p as u32);
    let mut deg_d = gpu.alloc::<u32>(p, "degrees")?;
    let rows_cfg = LaunchConfig { grid_dim: ((p32 as u64 * 32).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let t = Instant::now();
    // SAFETY: adj holds p rows of `words` words; deg p entries.
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
    gpu.ensure_free(total * 4 + p * 28 + extra, what)?;
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
    st.bounds = Some((total, deg.iter().copied().max().unwrap_or(0) as usize));
    Ok(LevelRows { off: off_d, cols, upper: upper_d, ebase: ebase_d, ne })
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
            Ok(DenseLevelReport { tests, removed, not_done, ..Default::default() })
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

    /// stable.fast's deeper levels too, while its C++ test has a finite factor there.
    fn dense_level_ok(&self, order: Order, level: usize) -> bool {
        level <= 1 || (order == Order::StableFast && self.z_factor(Order::StableFast, level).is_finite())
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
            Ok(DenseState { p, words, adj, fixed, pmax: Some(pmax), sep0, alpha, na_value, fast, bounds: None })
        })?;
        self.dense = Some(st);
        self.timings.setup_s += t0.elapsed().as_secs_f64();
        Ok(())
    }

    fn dense_level(&mut self, level: usize, _pmax: &mut [f64], _sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
        let t0 = Instant::now();
        let fast = self.dense.as_ref().is_some_and(|st| st.fast);
        if level > 1 && !fast {
            return Err(PcError::Internal(format!("dense level {level} of the stable order does not exist")));
        }
        let order = if fast { Order::StableFast } else { Order::Stable };
        let mut clock = Clock::default();
        let (this, clk) = (&mut *self, &mut clock);
        let rep = run_watched(0, watch, std::time::Duration::from_millis(100), move |ctl| {
            guard("running a level on the GPU", || if level <= 1 { this.dense_share(order, level, ctl, (0, 1), clk) } else { this.dense_deep(level, ctl, clk) })
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

    /// stable.fast hands pMax back before its deeper levels, which then report raises: its copy
    /// (0.1 s at p = 20000 on an H200) runs on a stream of its own beside them.
    fn dense_pmax_now(&mut self) -> Result<Option<PmaxCopy>> {
        let Some(st) = self.dense.as_mut().filter(|st| st.fast) else { return Ok(None) };
        let Some(dpmax) = st.pmax.take() else { return Ok(None) };
        let job = self.pmax_job(dpmax)?;
        match job {
            Ok(job) => Ok(Some(job)),
            Err(dpmax) => {
                if let Some(st) = self.dense.as_mut() {
                    st.pmax = Some(dpmax);
                }
                Ok(None)
            }
        }
    }

    /// The graph and level 0's bits come back now; pMax (3.2 GB at p = 20000, a third of a
    /// second) on a stream of its own while the next levels run, where the device keeps room for
    /// them with pMax still on it.
    fn dense_end_deferred(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<Option<PmaxCopy>> {
        let st = self.dense.take().ok_or_else(|| PcError::Internal("dense_end before dense_begin".into()))?;
        let p = st.p;
        // pMax handed back already (`dense_pmax_now`) leaves `pmax` empty
        if (st.pmax.is_some() && pmax.len() != p * p) || sep0.p() != p {
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
        self.timings.results_s += t0.elapsed().as_secs_f64();
        let Some(dpmax) = dpmax else { return Ok(None) };
        match self.pmax_job(dpmax)? {
            Ok(job) => Ok(Some(job)),
            Err(dpmax) => copy_pmax(&self.gpu, dpmax, pmax, &self.pmax_copy_ns).map(|()| None),
        }
    }
}

impl CudaGauss {
    /// pMax's copy into the loop's buffer as a job on a stream of its own, where the device
    /// keeps room for the levels that run meanwhile with pMax still on it; else pMax back.
    fn pmax_job(&self, dpmax: CudaSlice<f64>) -> Result<std::result::Result<PmaxCopy, CudaSlice<f64>>> {
        let gpu = &self.gpu;
        let pmax_bytes = dpmax.len() * 8;
        let own = guard("copying pMax back", || {
            gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            let room = gpu.free_bytes()? >= pmax_bytes;
            if room { gpu.with_own_stream().map(Some) } else { Ok(None) }
        })?;
        let Some(own) = own else { return Ok(Err(dpmax)) };
        let spent = self.pmax_copy_ns.clone();
        Ok(Ok(Box::new(move |dst: &mut [f64]| copy_pmax(&own, dpmax, dst, &spent))))
    }
}

/// Copies pMax from the device into `dst` and frees it there; the seconds go to `spent`.
fn copy_pmax(gpu: &Gpu, dpmax: CudaSlice<f64>, dst: &mut [f64], spent: &std::sync::atomic::AtomicU64) -> Result<()> {
    let t = Instant::now();
    let r = guard("copying pMax back", || {
        gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        if dst.len() != dpmax.len() {
            return Err(PcError::Internal("pMax's copy into a buffer of the wrong size".into()));
        }
        gpu.download_staged(&dpmax, dst, "pMax")
    });
    drop(dpmax);
    pc_core::trace::mark(|| format!("pMax copied ({:.3} s)", t.elapsed().as_secs_f64()));
    spent.fetch_add(t.elapsed().as_nanos() as u64, std::sync::atomic::Ordering::Relaxed);
    r
}
