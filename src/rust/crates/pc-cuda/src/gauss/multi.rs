//! The Gaussian backend over several GPUs of one host (`devices = c(0, 1, ...)`).
//!
//! Each device holds C and runs its share of a level from the same snapshot, with the kernels of
//! one device (`dense.rs`, `mod.rs`); how the shares are cut and merged is pc-core's
//! `multi.rs`, whose CPU twin CI tests:
//! - levels 0 and 1 (dense): level 0 by row ranges balanced by pairs, level 1 by contiguous
//!   blocks of the level's edge numbering; after each level the graphs are gathered on the first
//!   device by peer copies into a scratch buffer and ANDed there (`merge.cu`), and the merged
//!   graph is copied back to every device, so the next level starts from one snapshot everywhere.
//!   Level 0's sepset bits (OR) are merged the same way once, in `dense_end`; pMax there as a
//!   reduce-scatter: each device takes the maximum over its block of columns from every copy
//!   and downloads that block over its own link, all at once.
//! - levels >= 2 of "stable": split by rows ([`MultiGauss::split_sets`]): blocks of rows of about
//!   equal work handed to whichever device is free, each device testing its rows' subsets against
//!   every edge, the keys merged on the host (the smallest success, the largest failure). The
//!   devices post their successes to each other between rounds (`KeyBoard`): an edge's two
//!   rows may lie on two devices, and a row whose edges the other side decided stops early. Edge
//!   blocks would not divide the work: the subsets of row(x) serve every edge of x, so each
//!   device would enumerate them for nearly every row.
//! - stable.fast's levels >= 2 (listed tests, one per edge and set): `multi::split_level`, edge
//!   blocks handed to whichever device is free.
//!
//! With the devices chosen by the work (`devices = NULL`) the backend grows instead
//! ([`MultiGauss::growing`]): the first device runs every level alone, the dense ones with its own
//! code, and the other devices join at the first level >= 2 of at least [`GROW_MIN_TESTS`] tests,
//! each with a copy of the first device's C (peer or staged, so C is read from R or computed from
//! the data once). At p = 20000 no level is that large and nothing else is opened; at p = 55,572
//! the levels of 1e10 tests that take most of a full run are split.
//!
//! Every device owns its modules (the merge kernels are loaded on each), streams and buffers;
//! `Gpu::launch` refuses a kernel of another device. Peer copies (`cuMemcpyPeerAsync`) move the
//! bulk data between two devices where `cuDeviceCanAccessPeer` allows it (peer access is then
//! enabled); otherwise, or with `GPUPC_PEER=0`, the data are staged through host memory. The
//! same ordinal given twice opens its primary context twice, as two owners: one card then stands
//! in for several devices on the same code path, which is how the split is tested on a machine
//! with one GPU.

use std::time::Instant;

use cudarc::driver::{sys as dsys, CudaSlice, DevicePtr, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use pc_core::backend::{run_watched, Backend, Watch};
use pc_core::dense::{DenseLevelReport, DenseLevels, PmaxCopy};
use pc_core::multi::{self, label_error};
use pc_core::plan::{EdgeOutcome, LevelPlan, Order};
use pc_core::{Adjacency, BitMatrix, PcError};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::gauss::host;
use crate::gauss::{outcome_of, params, CudaGauss};
use pc_core::rows::{KeyBoard, RowKeys};
use pc_core::par::par_collect;
use pc_core::rounds::row_sets;
use crate::runtime::launch::DeviceAddr;
use crate::runtime::device::device_labels;
use crate::runtime::gpu::{cuda_err, guard, Clock, Gpu, Kernel, Result};
use crate::runtime::module;
use crate::runtime::timings::{Timings, LevelTimings};

/// Levels >= 2 of less work, in tests of order 2 (`multi::gauss_level_work`), run on the first
/// device alone: about 0.2 s of one device's work. A split level cost about 20-40 ms more than one
/// device's at p = 20000 (levels of 4e7-7e7 tests: 0.061 s on one H100, 0.081 s split over two;
/// bench's multigpu-r.R gauss).
const MIN_SPLIT_TESTS: u64 = 1_000_000_000;

/// Levels >= 2 of at least this many tests make a growing backend open its other devices (about
/// 2-4 s of one H100's work: opening a device and copying C, 24.7 GB at p = 55,572, takes about
/// a second). `GPUPC_GROW_MIN_TESTS` overrides it (0: they join at level 2, how the parity suites
/// exercise the growth on small cases).
pub const GROW_MIN_TESTS: u64 = 4_000_000_000;

fn grow_min_tests() -> u64 {
    std::env::var("GPUPC_GROW_MIN_TESTS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(GROW_MIN_TESTS)
}

/// Doubles per copy of C to a device that joins (256 MB; staged copies hold one on the host).
const C_CHUNK: usize = 1 << 25;

/// Doubles per peer copy of pMax into the first device's scratch buffer (256 MB).
const PMAX_CHUNK: usize = 1 << 25;
const BLOCK: u32 = 256;

/// One device's merge kernels (each device loads its own).
struct MergeFns {
    and: Kernel,
    or: Kernel,
    max: Kernel,
}

/// The Gaussian backend on several devices; see the module docs. One device is [`CudaGauss`]
/// itself (callers use that directly).
pub struct MultiGauss {
    devs: Vec<CudaGauss>,
    labels: Vec<String>,
    /// Per device, its own merge kernels.
    merge: Vec<MergeFns>,
    /// `peer[a][b]`: device a's copies from / to device b go directly (peer access enabled).
    peer: Vec<Vec<bool>>,
    /// On the first device: one bit matrix, for gathering the others' graphs and sepset bits.
    scratch: Option<CudaSlice<u64>>,
    timings: Timings,
    /// Seconds merging (peer copies and reductions), all levels.
    merge_s: f64,
    /// A growing backend's devices not opened yet (`labels` names them after `devs`).
    spare: Vec<usize>,
    /// A growing backend: the first device ran the dense levels with its own code.
    dense_alone: bool,
    /// The level at which the spare devices joined, and the seconds opening them took.
    joined: Option<(usize, f64)>,
}

/// Copies `len` elements `src[src_off..]` (on `from`) to `dst[dst_off..]` (on `to`), in `to`'s
/// stream; the caller synchronises. Both devices' earlier work has finished (each level ends
/// with a synchronising download). `direct`: a peer copy; otherwise staged through the host.
#[allow(clippy::too_many_arguments)]
fn peer_copy<T: DeviceRepr + ValidAsZeroBits + Default + Clone>(to: &Gpu, dst: &CudaSlice<T>, dst_off: usize, from: &Gpu, src: &CudaSlice<T>, src_off: usize, len: usize, direct: bool, what: &str) -> Result<()> {
    if len == 0 {
        return Ok(());
    }
    if dst_off + len > dst.len() || src_off + len > src.len() {
        return Err(PcError::Internal(format!("peer copy of {what} out of bounds")));
    }
    to.check_buffer(dst, what)?;
    from.check_buffer(src, what)?;
    if !direct {
        let mut host = vec![T::default(); len];
        from.stream.memcpy_dtoh(&src.slice(src_off..src_off + len), &mut host).map_err(cuda_err(what))?;
        from.stream.synchronize().map_err(cuda_err(what))?;
        // the raw copy below runs in the thread's current context, which must be the destination's
        to.ctx.bind_to_thread().map_err(cuda_err(what))?;
        // SAFETY: dst[dst_off..dst_off + len] lies inside dst (checked above) and is written by
        // this copy alone; the host vector outlives the synchronisation below.
        let (d, _gd) = dst.device_ptr(&to.stream);
        unsafe { cudarc::driver::result::memcpy_htod_async(d + (dst_off * std::mem::size_of::<T>()) as u64, &host, to.stream.cu_stream()) }.map_err(cuda_err(what))?;
        return to.stream.synchronize().map_err(cuda_err(what));
    }
    let sz = std::mem::size_of::<T>() as u64;
    let (d, _gd) = dst.device_ptr(&to.stream);
    let (s, _gs) = src.device_ptr(&from.stream);
    // SAFETY: both ranges lie inside their allocations (checked above); the contexts own them.
    unsafe { dsys::cuMemcpyPeerAsync(d + dst_off as u64 * sz, to.ctx.cu_ctx(), s + src_off as u64 * sz, from.ctx.cu_ctx(), len * sz as usize, to.stream.cu_stream()) }
        .result()
        .map_err(cuda_err(what))
}

/// Whether peer copies may be used at all (`GPUPC_PEER=0` stages every copy through the host).
fn peer_allowed() -> bool {
    !std::env::var("GPUPC_PEER").is_ok_and(|v| v == "0")
}

/// Enables access from `a`'s context to `b`'s memory where the hardware allows it (peer copies
/// then go over NVLink / PCIe directly instead of being staged by the driver).
fn enable_peer(a: &Gpu, b: &Gpu) -> Result<bool> {
    if a.ctx.cu_ctx() == b.ctx.cu_ctx() {
        return Ok(true);
    }
    let mut can: std::ffi::c_int = 0;
    // SAFETY: writes one int; both are valid device handles.
    unsafe { dsys::cuDeviceCanAccessPeer(&mut can, a.ctx.cu_device(), b.ctx.cu_device()) }.result().map_err(cuda_err("asking for peer access"))?;
    if can == 0 {
        return Ok(false);
    }
    a.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
    // SAFETY: b's context is alive (held by its Gpu); flags must be 0.
    let r = unsafe { dsys::cuCtxEnablePeerAccess(b.ctx.cu_ctx(), 0) };
    match r {
        dsys::CUresult::CUDA_SUCCESS | dsys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(true),
        e => Err(PcError::Cuda(format!("enabling peer access: {e:?}"))),
    }
}

/// Device `ordinal` opened with a copy of `first`'s C, by peer copies where both directions are
/// allowed (the flag returned), else staged through the host, in chunks of [`C_CHUNK`].
fn replica(ordinal: usize, first: &CudaGauss) -> Result<(CudaGauss, bool)> {
    let (p, n) = (first.p, first.n);
    let mut direct = false;
    let dev = CudaGauss::open(ordinal, p, n, first.symmetric, first.has_nan, 0, |gpu, dc| {
        let src = first.gpu();
        direct = peer_allowed() && enable_peer(gpu, src)? && enable_peer(src, gpu)?;
        gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let len = p * p;
        for off in (0..len).step_by(C_CHUNK) {
            let m = C_CHUNK.min(len - off);
            peer_copy(gpu, dc, off, src, &first.c, off, m, direct, "copying C to a device that joins")?;
        }
        gpu.stream.synchronize().map_err(cuda_err("copying C to a device that joins"))
    })?;
    Ok((dev, direct))
}

fn grid_for(n: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: ((n as u64).div_ceil(BLOCK as u64).clamp(1, 1 << 16) as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
}

/// `dst[..n] op= src[..n]` on the first device.
fn reduce(g: &Gpu, f: &Kernel, dst: cudarc::driver::CudaViewMut<'_, u64>, src: &CudaSlice<u64>, n: usize, name: &'static str) -> Result<()> {
    // SAFETY: both hold >= n elements.
    unsafe { params::MergeU64 { dst, src, n: n as u64 }.launch(g, f, grid_for(n), name) }
}

impl MultiGauss {
    /// Opens every device of `ordinals` (in parallel: each uploads C) and checks each one's
    /// memory as [`CudaGauss::new_scanned_on`] does.
    pub fn new_scanned_on(ordinals: &[usize], c: &[f64], p: usize, n: f64, symmetric: bool, has_nan: bool) -> Result<Self> {
        if ordinals.is_empty() {
            return Err(PcError::invalid("devices", "must name at least one GPU"));
        }
        let labels = device_labels(ordinals);
        let opened: Vec<Result<CudaGauss>> = std::thread::scope(|s| {
            let hs: Vec<_> = ordinals.iter().map(|&o| s.spawn(move || CudaGauss::new_scanned_on(o, c, p, n, symmetric, has_nan))).collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect()
        });
        let mut devs = Vec::with_capacity(opened.len());
        for (i, (r, label)) in opened.into_iter().zip(&labels).enumerate() {
            devs.push(r.map_err(|e| label_error(i, label, e))?);
        }
        let (merge, peer) = guard("loading the merge kernels", || {
            let mut merge = Vec::with_capacity(devs.len());
            for d in &devs {
                let g = d.gpu();
                g.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
                let m = module::module_for(g, module::Family::Merge).map_err(PcError::Cuda)?;
                let get = |name: &str| m.function(name).map_err(PcError::Cuda);
                merge.push(MergeFns { and: get("merge_and_u64")?, or: get("merge_or_u64")?, max: get("merge_max_f64")? });
            }
            let k = devs.len();
            let mut enabled = vec![vec![true; k]; k];
            for a in 0..k {
                for b in (0..k).filter(|&b| b != a) {
                    enabled[a][b] = peer_allowed() && enable_peer(devs[a].gpu(), devs[b].gpu())?;
                }
            }
            // a copy between a and b goes direct only where both directions are enabled
            let peer = (0..k).map(|a| (0..k).map(|b| enabled[a][b] && enabled[b][a]).collect()).collect();
            Ok((merge, peer))
        })?;
        let t0 = devs[0].timings();
        let timings = Timings {
            compile_s: devs.iter().map(|d| d.timings().compile_s).fold(0.0, f64::max),
            compile_cached: devs.iter().all(|d| d.timings().compile_cached),
            target: t0.target.clone(),
            upload_s: devs.iter().map(|d| d.timings().upload_s).fold(0.0, f64::max),
            ..Default::default()
        };
        Ok(MultiGauss { devs, labels, merge, peer, scratch: None, timings, merge_s: 0.0, spare: Vec::new(), dense_alone: false, joined: None })
    }

    /// A backend on `first` (device `ordinals[0]`) that the other `ordinals` join when a level is
    /// large enough; see the module docs. Nothing is opened on them until then.
    pub fn growing(first: CudaGauss, ordinals: &[usize]) -> Result<Self> {
        if ordinals.is_empty() || ordinals[0] != first.gpu().info.ordinal {
            return Err(PcError::Internal("a growing backend starts on the first of its devices".into()));
        }
        let timings = Timings { compile_s: first.timings().compile_s, compile_cached: first.timings().compile_cached, target: first.timings().target.clone(), upload_s: first.timings().upload_s, ..Default::default() };
        Ok(MultiGauss {
            devs: vec![first],
            labels: device_labels(ordinals),
            merge: Vec::new(),
            peer: vec![vec![true]],
            scratch: None,
            timings,
            merge_s: 0.0,
            spare: ordinals[1..].to_vec(),
            dense_alone: true,
            joined: None,
        })
    }

    /// Opens the spare devices, each with a copy of the first device's C (in parallel).
    fn grow(&mut self, level: usize) -> Result<()> {
        let t0 = Instant::now();
        let first = &self.devs[0];
        let base = self.devs.len();
        let opened: Vec<Result<(CudaGauss, bool)>> = std::thread::scope(|s| {
            let hs: Vec<_> = self.spare.iter().map(|&o| s.spawn(move || guard("opening a device that joins the run", || replica(o, first)))).collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect()
        });
        let mut direct = vec![true];
        for (i, r) in opened.into_iter().enumerate() {
            let (mut d, peer) = r.map_err(|e| label_error(base + i, &self.labels[base + i], e))?;
            // the settings the first device was given
            d.set_round_budget(self.devs[0].round_budget);
            self.devs.push(d);
            direct.push(peer);
        }
        self.spare.clear();
        // how C reached each device from the first (the joined devices copy nothing between them)
        let k = self.devs.len();
        self.peer = (0..k).map(|a| (0..k).map(|b| a == b || (a == 0 && direct[b]) || (b == 0 && direct[a])).collect()).collect();
        let s = t0.elapsed().as_secs_f64();
        self.joined = Some((level, s));
        self.timings.upload_s += s;
        Ok(())
    }

    /// The level at which a growing backend's other devices joined (None: they were not needed),
    /// and the seconds that took.
    pub fn joined(&self) -> Option<(usize, f64)> {
        self.joined
    }

    /// The devices that ran (the spare ones of a growing backend that never joined left out).
    pub fn devices_used(&self) -> usize {
        self.devs.len()
    }

    /// The first device alone, with C still on it (the triple checks run there); the others are
    /// closed.
    pub fn into_first(self) -> CudaGauss {
        self.devs.into_iter().next().expect("a MultiGauss has a first device")
    }

    pub fn devices(&self) -> usize {
        self.devs.len()
    }

    pub fn labels(&self) -> &[String] {
        &self.labels
    }

    /// The whole run's figures: per level the wall time, with kernel and copy time summed over
    /// the devices (the merges count as copies). A growing backend's dense levels are the first
    /// device's own figures.
    pub fn timings(&self) -> Timings {
        if !self.dense_alone {
            return self.timings.clone();
        }
        let d0 = self.devs[0].timings();
        let planned_from = self.timings.levels.first().map_or(usize::MAX, |l| l.level);
        let mut t = self.timings.clone();
        let dense: Vec<_> = d0.levels.iter().filter(|l| l.level < planned_from).cloned().collect();
        for l in &dense {
            t.add_level_sums(l);
        }
        t.setup_s = d0.setup_s;
        t.results_s = d0.results_s;
        t.compile_s = t.compile_s.max(d0.compile_s);
        t.compile_cached &= d0.compile_cached;
        t.levels = dense.into_iter().chain(t.levels).collect();
        t
    }

    /// Seconds spent merging the devices' results (peer copies and reductions).
    pub fn merge_seconds(&self) -> f64 {
        self.merge_s
    }

    /// Per device pair whether copies between them go direct (peer access) or through the host.
    pub fn peer_matrix(&self) -> &[Vec<bool>] {
        &self.peer
    }

    pub fn set_planned_only(&mut self, yes: bool) {
        self.devs.iter_mut().for_each(|d| d.set_planned_only(yes));
    }

    pub fn set_round_budget(&mut self, threads: Option<u64>) {
        self.devs.iter_mut().for_each(|d| d.set_round_budget(threads));
    }

    fn sums(&self) -> (f64, f64, u64, u64, u64) {
        self.devs.iter().flat_map(|d| d.timings().levels.iter()).fold((0.0, 0.0, 0, 0, 0), |a, l| (a.0 + l.kernel_s, a.1 + l.transfer_s, a.2 + l.launches, a.3 + l.gpu_tests, a.4 + l.fallbacks))
    }

    /// ANDs every device's graph into the first's and copies the result back to each.
    fn merge_graphs(&mut self) -> Result<()> {
        let (first, rest) = self.devs.split_at_mut(1);
        let (g0, st0) = first[0].gpu_and_dense_mut()?;
        let scratch = self.scratch.as_mut().ok_or_else(|| PcError::Internal("merge without a scratch buffer".into()))?;
        let n = st0.p * st0.words;
        g0.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        for (i, d) in rest.iter().enumerate() {
            peer_copy(g0, scratch, 0, d.gpu(), &d.dense_state()?.adj, 0, n, self.peer[0][i + 1], "gathering a device's graph")?;
            reduce(g0, &self.merge[0].and, st0.adj.slice_mut(0..n), scratch, n, "merge_and_u64")?;
        }
        for (i, d) in rest.iter_mut().enumerate() {
            let (g, sd) = d.gpu_and_dense_mut()?;
            peer_copy(g, &sd.adj, 0, g0, &st0.adj, 0, n, self.peer[i + 1][0], "sending the merged graph")?;
        }
        g0.stream.synchronize().map_err(cuda_err("merging the devices' graphs"))?;
        for d in rest.iter() {
            d.gpu().stream.synchronize().map_err(cuda_err("merging the devices' graphs"))?;
        }
        Ok(())
    }

    /// ORs every device's level-0 bits into the first's (p^2 / 8 bytes each).
    fn merge_sep0(&mut self) -> Result<()> {
        let (first, rest) = self.devs.split_at_mut(1);
        let (g0, st0) = first[0].gpu_and_dense_mut()?;
        let scratch = self.scratch.as_mut().ok_or_else(|| PcError::Internal("merge without a scratch buffer".into()))?;
        g0.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let nb = st0.p * st0.words;
        for (i, d) in rest.iter().enumerate() {
            peer_copy(g0, scratch, 0, d.gpu(), &d.dense_state()?.sep0, 0, nb, self.peer[0][i + 1], "gathering level 0's sepsets")?;
            reduce(g0, &self.merge[0].or, st0.sep0.slice_mut(0..nb), scratch, nb, "merge_or_u64")?;
        }
        g0.stream.synchronize().map_err(cuda_err("merging level 0's sepsets"))
    }

    /// pMax as a reduce-scatter: device d takes the maximum of every device's copy over its
    /// block of columns (`even_ranges(p, k)`, contiguous in column-major order) and downloads
    /// that block into `pmax` over its own link, all devices at once (24.7 GB at p = 55,572
    /// would otherwise pass through one device's link).
    fn pmax_reduce_scatter(devs: &[CudaGauss], labels: &[String], merge: &[MergeFns], peer: &[Vec<bool>], pmax: &mut [f64]) -> Result<()> {
        let k = devs.len();
        let p = devs[0].dense_state()?.p;
        let blocks = multi::even_ranges(p, k);
        let mut parts = Vec::with_capacity(k);
        let mut rest = pmax;
        for b in &blocks {
            let (a, r) = rest.split_at_mut(b.len() * p);
            parts.push(a);
            rest = r;
        }
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = parts
                .into_iter()
                .zip(&blocks)
                .enumerate()
                .map(|(d, (part, b))| {
                    s.spawn(move || {
                        guard("merging pMax of the devices", || {
                            let dev = &devs[d];
                            let g = dev.gpu();
                            let max_fn = &merge[d].max;
                            g.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
                            let st = dev.dense_state()?;
                            let (a, e) = (b.start * p, b.end * p);
                            if e > a {
                                let chunk = PMAX_CHUNK.min(e - a);
                                g.ensure_free(chunk * 8, "merging pMax of the devices")?;
                                let buf = g.alloc::<f64>(chunk, "merging pMax")?;
                                let (base, _sync) = st.pmax()?.device_ptr(&g.stream);
                                for (o, other) in devs.iter().enumerate().filter(|&(o, _)| o != d) {
                                    let so = other.dense_state().map_err(|e| label_error(o, &labels[o], e))?;
                                    for off in (a..e).step_by(chunk) {
                                        let m = chunk.min(e - off);
                                        peer_copy(g, &buf, 0, other.gpu(), so.pmax()?, off, m, peer[d][o], "gathering pMax")?;
                                        let (dst, mu) = (base + off as u64 * 8, m as u64);
                                        let args = params::MergeMax { dst: DeviceAddr::new(dst), src: &buf, n: mu };
                                        // SAFETY: dst is the device address of this device's
                                        // pMax[off..off + m] (inside its allocation), written by
                                        // this thread only; other threads read other column blocks
                                        // of it. buf holds >= m doubles.
                                        unsafe { args.launch(g, max_fn, grid_for(m), "merge_max_f64") }?;
                                    }
                                }
                                g.stream.synchronize().map_err(cuda_err("merging pMax of the devices"))?;
                                drop(buf);
                            }
                            g.download_staged_at(st.pmax()?, a, part, "pMax")
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect()
        });
        for (i, (r, label)) in results.into_iter().zip(labels).enumerate() {
            r.map_err(|e| label_error(i, label, e))?;
        }
        Ok(())
    }

    /// Each device's share of dense level `level`, in one thread per device.
    fn run_shares(devs: &mut [CudaGauss], labels: &[String], level: usize, ctl: &pc_core::Control) -> Result<(DenseLevelReport, Clock)> {
        let k = devs.len();
        let results: Vec<Result<(DenseLevelReport, Clock)>> = std::thread::scope(|s| {
            let hs: Vec<_> = devs
                .iter_mut()
                .enumerate()
                .map(|(d, dev)| {
                    s.spawn(move || {
                        guard("running a level on the GPU", || {
                            let mut clock = Clock::default();
                            // the devices' max-merge of pMax is made for stable's test only
                            let rep = dev.dense_share(Order::Stable, level, ctl, (d, k), &mut clock)?;
                            Ok((rep, clock))
                        })
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect()
        });
        let mut rep = DenseLevelReport::default();
        let mut clock = Clock::default();
        for (i, (r, label)) in results.into_iter().zip(labels).enumerate() {
            let (r, c) = r.map_err(|e| label_error(i, label, e))?;
            rep.tests += r.tests;
            rep.removed += r.removed;
            rep.not_done |= r.not_done;
            rep.singles.extend(r.singles);
            clock.kernel += c.kernel;
            clock.transfer += c.transfer;
            clock.launches += c.launches;
            clock.host += c.host;
        }
        Ok((rep, clock))
    }
}

impl MultiGauss {
    /// A "stable" level >= 2 split by rows (see the module docs): the outcomes, the devices'
    /// clocks summed, and the tests and pseudo-inverse fallbacks they ran.
    fn split_sets(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<(Vec<EdgeOutcome>, Clock, (u64, u64))> {
        let l = plan.level;
        for (i, d) in self.devs.iter_mut().enumerate() {
            d.load_level_kernels(l, false).map_err(|e| label_error(i, &self.labels[i], e))?;
        }
        let t = Instant::now();
        let li = row_sets::level_inputs(plan, true)?;
        let rows = row_sets::work_rows(&li, l)?;
        let total: u128 = rows.iter().map(|r| r.total as u128).sum();
        let weights = super::row_weights(&li, &rows, l);
        let blocks = multi::weighted_blocks(&weights, self.devs.len() * multi::BLOCKS_PER_DEVICE);
        let shared = KeyBoard::new(plan.edges.len())?;
        let host_s = t.elapsed().as_secs_f64();
        let next = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let (devs, labels) = (&self.devs, &self.labels);
        let (li, rows, blocks, next, stop, shared) = (&li, &rows, &blocks, &next, &stop, &shared);
        let shares = run_watched(plan.edges.len() as u64, watch, std::time::Duration::from_millis(100), |ctl| {
            let per: Vec<Result<(Option<RowKeys>, Clock)>> = std::thread::scope(|s| {
                let hs: Vec<_> = devs
                    .iter()
                    .enumerate()
                    .map(|(i, d)| {
                        s.spawn(move || {
                            let run = || {
                                let mut clock = Clock::default();
                                let mut acc: Option<RowKeys> = None;
                                while !stop.load(Ordering::Relaxed) {
                                    let Some(r) = blocks.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                                    let k = d.sets_keys(plan, li, rows[r.clone()].to_vec(), total, Some(shared), ctl, &mut clock)?;
                                    match &mut acc {
                                        Some(a) => a.merge(&k),
                                        None => acc = Some(k),
                                    }
                                }
                                Ok((acc, clock))
                            };
                            let r = guard("running a level on the GPU", run).map_err(|e| label_error(i, &labels[i], e));
                            if r.is_err() {
                                stop.store(true, Ordering::Relaxed);
                            }
                            r
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect()
            });
            per.into_iter().collect::<Result<Vec<_>>>()
        })?;
        let ne = plan.edges.len();
        let mut keys = RowKeys { best: vec![host::NO_KEY; ne], maxfail: vec![0; ne], tests: 0, fallbacks: 0 };
        let mut clock = Clock { host: host_s, ..Default::default() };
        for (k, c) in shares {
            if let Some(k) = k {
                keys.merge(&k);
            }
            clock.kernel += c.kernel;
            clock.transfer += c.transfer;
            clock.launches += c.launches;
            clock.host += c.host;
        }
        let p_best = guard("running a level on the GPU", || self.devs[0].sets_pbest(plan, li, &keys.best, &mut clock)).map_err(|e| label_error(0, &self.labels[0], e))?;
        let t = Instant::now();
        let out = par_collect(ne, |k| outcome_of(&plan.edges[k], keys.best[k], p_best[k], host::decode_max_fail(keys.maxfail[k])))?;
        clock.collect += t.elapsed().as_secs_f64();
        Ok((out, clock, (keys.tests, keys.fallbacks)))
    }
}

impl DenseLevels for MultiGauss {
    /// Split over the devices: "stable" only (stable.fast's level 0 writes raw (NaN) p-values into
    /// pMax, which the devices' max-merge is not made for; its levels are planned and split).
    /// A growing backend's first device runs them alone, in whichever order it runs.
    fn dense_order_ok(&self, order: Order) -> bool {
        if self.dense_alone {
            return self.devs[0].dense_order_ok(order);
        }
        order == Order::Stable
    }

    /// A growing backend's first device runs stable.fast's deeper levels too, alone.
    fn dense_level_ok(&self, order: Order, level: usize) -> bool {
        if self.dense_alone {
            return self.devs[0].dense_level_ok(order, level);
        }
        level <= 1
    }

    fn dense_pmax_now(&mut self) -> Result<Option<PmaxCopy>> {
        if self.dense_alone {
            return self.devs[0].dense_pmax_now().map_err(|e| label_error(0, &self.labels[0], e));
        }
        Ok(None)
    }

    /// The devices' merge gives one device's result, so the first device's model names it.
    fn dense_kind(&self) -> String {
        self.devs[0].dense_kind()
    }

    fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<()> {
        if self.dense_alone {
            return self.devs[0].dense_begin(order, start, fixed, alpha, na_value).map_err(|e| label_error(0, &self.labels[0], e));
        }
        let t0 = Instant::now();
        let labels = &self.labels;
        let results: Vec<Result<()>> = std::thread::scope(|s| {
            let hs: Vec<_> = self.devs.iter_mut().map(|d| s.spawn(move || d.dense_begin(order, start, fixed, alpha, na_value))).collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect()
        });
        for (i, (r, label)) in results.into_iter().zip(labels).enumerate() {
            r.map_err(|e| label_error(i, label, e))?;
        }
        let g0 = self.devs[0].gpu();
        let words = start.p().div_ceil(64);
        self.scratch = Some(guard("allocating the merge buffer", || {
            g0.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            g0.ensure_free(start.p() * words * 8, "the buffer merging the devices' graphs")?;
            g0.alloc::<u64>(start.p() * words, "the merge buffer")
        })?);
        self.timings.setup_s += t0.elapsed().as_secs_f64();
        Ok(())
    }

    fn dense_level(&mut self, level: usize, pmax: &mut [f64], sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
        if self.dense_alone {
            return self.devs[0].dense_level(level, pmax, sep0, watch).map_err(|e| label_error(0, &self.labels[0], e));
        }
        if level > 1 {
            return Err(PcError::Internal(format!("dense level {level} does not exist")));
        }
        let t0 = Instant::now();
        let (rep, clock, merge_s) = run_watched(0, watch, std::time::Duration::from_millis(100), |ctl| {
            let (rep, clock) = Self::run_shares(&mut self.devs, &self.labels, level, ctl)?;
            let t = Instant::now();
            guard("merging the devices' graphs", || self.merge_graphs())?;
            Ok((rep, clock, t.elapsed().as_secs_f64()))
        })?;
        self.merge_s += merge_s;
        let lt = LevelTimings::dense(level, &clock, merge_s, rep.tests);
        self.timings.record(lt, t0);
        Ok(rep)
    }

    fn writes_whole_pmax(&self) -> bool {
        !self.dense_alone || self.devs[0].writes_whole_pmax()
    }

    fn dense_end(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<()> {
        if self.dense_alone {
            return self.devs[0].dense_end(graph, pmax, sep0).map_err(|e| label_error(0, &self.labels[0], e));
        }
        let t0 = Instant::now();
        let p = self.devs[0].dense_state()?.p;
        if pmax.len() != p * p || sep0.p() != p {
            return Err(PcError::Internal("dense_end: result buffers of the wrong size".into()));
        }
        guard("merging level 0's sepsets", || self.merge_sep0())?;
        Self::pmax_reduce_scatter(&self.devs, &self.labels, &self.merge, &self.peer, pmax)?;
        // the graphs are equal on every device since the last merge; the bits were ORed above
        let (g0, st0) = (self.devs[0].gpu(), self.devs[0].dense_state()?);
        let (g, s0) = guard("copying the results back", || {
            g0.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            let g = g0.stream.clone_dtoh(&st0.adj).map_err(cuda_err("copying the graph back"))?;
            let s0 = g0.stream.clone_dtoh(&st0.sep0).map_err(cuda_err("copying the level-0 sepsets back"))?;
            g0.stream.synchronize().map_err(cuda_err("copying the results back"))?;
            Ok((g, s0))
        })
        .map_err(|e| label_error(0, &self.labels[0], e))?;
        *graph = Adjacency::from_words(p, g);
        *sep0 = BitMatrix::from_words(p, s0);
        self.scratch = None;
        for d in self.devs.iter_mut() {
            d.drop_dense();
        }
        self.timings.results_s += t0.elapsed().as_secs_f64();
        Ok(())
    }
}

impl Backend for MultiGauss {
    fn name(&self) -> String {
        if self.devs.len() == 1 {
            return self.devs[0].name();
        }
        format!("cuda ({} x {})", self.devs.len(), self.devs[0].info().name)
    }

    fn dense(&mut self) -> Option<&mut dyn DenseLevels> {
        if self.dense_alone {
            // the first device's own dense levels, its errors named by this backend
            return if self.devs[0].dense().is_some() { Some(self) } else { None };
        }
        if self.devs.iter().all(|d| d.dense_available()) {
            Some(self)
        } else {
            None
        }
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        let t0 = Instant::now();
        // deeper than the set kernels, or C with NaN: one device runs it (on the CPU)
        let one = plan.level >= 2 && (self.devs[0].has_nan() || host::set_kernel_variant(plan.level).is_none());
        if !self.spare.is_empty() && plan.level >= 2 && !one && multi::level_tests(plan) >= grow_min_tests() {
            self.grow(plan.level)?;
        }
        let before = self.sums();
        // a level of less work than MIN_SPLIT_TESTS: one device finishes it before a split pays
        let work = multi::gauss_level_work(plan.level, multi::level_tests(plan));
        let alone = !multi::worth_splitting(self.devs.len(), work, MIN_SPLIT_TESTS);
        let mut rows_split = None;
        let out = if one || alone {
            self.devs[0].run_level(plan, watch).map_err(|e| label_error(0, &self.labels[0], e))
        } else if plan.order == Order::Stable && plan.level >= 2 {
            self.split_sets(plan, watch).map(|(out, clock, keys)| {
                rows_split = Some((clock, keys));
                out
            })
        } else {
            multi::split_level(&mut self.devs, &self.labels, plan, watch)
        };
        let after = self.sums();
        let mut lt = LevelTimings {
            level: plan.level,
            kernel_s: after.0 - before.0,
            transfer_s: after.1 - before.1,
            launches: after.2 - before.2,
            gpu_tests: after.3 - before.3,
            fallbacks: after.4 - before.4,
            on_cpu: one,
            ..Default::default()
        };
        if let Some((c, (tests, fallbacks))) = rows_split {
            lt.kernel_s += c.kernel;
            lt.transfer_s += c.transfer;
            lt.launches += c.launches;
            lt.host_s += c.host;
            lt.collect_s += c.collect;
            lt.gpu_tests += tests;
            lt.fallbacks += fallbacks;
        }
        self.timings.record(lt, t0);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pc_core::backend::NullWatch;
    use pc_core::skeleton::{run_skeleton, SkeletonParams};
    use pc_core::Order;

    /// A chain-and-skip correlation structure from n pseudo-random rows.
    fn cor(p: usize, n: usize, seed: u64) -> Vec<f64> {
        let mut h = seed | 1;
        let mut u = || {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            (h >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut x = vec![0.0; n * p];
        for r in 0..n {
            for j in 0..p {
                let mut v = u();
                if j >= 1 {
                    v += 0.6 * x[r * p + j - 1];
                }
                if j >= 3 {
                    v -= 0.4 * x[r * p + j - 3];
                }
                x[r * p + j] = v;
            }
        }
        let mut c = vec![0.0; p * p];
        let (mean, sd): (Vec<f64>, Vec<f64>) = (0..p)
            .map(|j| {
                let m = (0..n).map(|r| x[r * p + j]).sum::<f64>() / n as f64;
                (m, (0..n).map(|r| (x[r * p + j] - m).powi(2)).sum::<f64>().sqrt())
            })
            .unzip();
        for a in 0..p {
            for b in 0..p {
                c[a + b * p] = (0..n).map(|r| (x[r * p + a] - mean[a]) * (x[r * p + b] - mean[b])).sum::<f64>() / (sd[a] * sd[b]);
            }
        }
        c
    }

    // On a machine with a GPU: two (and three) contexts on device 0 give one device's result in
    // every slot, through the dense levels and the planned ones; without a GPU (CI) it has
    // nothing to run (pc-core's level_loop.rs tests the same split on the CPU).
    #[test]
    fn several_contexts_equal_one_device() {
        if crate::runtime::device::probe_device(0).is_err() {
            return;
        }
        // every level split, however small (the product splits only large ones)
        std::env::set_var("GPUPC_SPLIT_MIN_TESTS", "0");
        for (p, n, seed, alpha) in [(70usize, 300usize, 3u64, 0.05), (130, 120, 7, 0.01)] {
            let c = cor(p, n, seed);
            let prm = SkeletonParams { alpha, order: Order::Stable, m_max: None, na_delete: true, start: Adjacency::complete(p), fixed_edges: Adjacency::empty(p), threads: 0 };
            let (sym, nan) = pc_core::par::symmetry_and_nan(&c, p);
            let mut one = CudaGauss::new_scanned_on(0, &c, p, n as f64, sym, nan).unwrap();
            let want = run_skeleton(&prm, &mut one, &mut NullWatch).unwrap();
            for k in [2usize, 3] {
                let mut m = MultiGauss::new_scanned_on(&vec![0; k], &c, p, n as f64, sym, nan).unwrap();
                assert!(m.dense().is_some());
                let got = run_skeleton(&prm, &mut m, &mut NullWatch).unwrap();
                assert_eq!(got.graph, want.graph, "graph, k = {k}");
                assert!(got.pmax.iter().zip(&want.pmax).all(|(a, b)| a.to_bits() == b.to_bits()), "pMax, k = {k}");
                let key = |r: &pc_core::SkeletonResult| {
                    let mut s: Vec<_> = r.all_sepsets().into_iter().map(|s| (s.x, s.y, s.set)).collect();
                    s.sort();
                    s
                };
                assert_eq!(key(&got), key(&want), "sepsets, k = {k}");
                assert_eq!(got.n_edgetests, want.n_edgetests, "n.edgetests, k = {k}");
                assert_eq!(got.max_ord, want.max_ord);
            }
        }
    }
}
