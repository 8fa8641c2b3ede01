//! Junction-tree propagation on the GPU for a batch of evidence sets: pc-jtree's schedule and
//! arithmetic (`jtree.cu`), so results equal the CPU engine's to rounding and are
//! identical from run to run (no atomics; every sum runs in one thread in a fixed order).
//!
//! The plan's flat arrays and the potentials go up once; each chunk of rows (sized from free
//! device memory) runs: per tree depth from the deepest one `jt_collect` (the depth's cliques
//! build their tables, potentials times evidence times their children's messages, the CPU
//! engine's init and absorb value for value, store them and marginalise them onto their
//! separators in the same pass; runs longer than `REDUCE_SPLIT` in parts, then `jt_combine` adds
//! the parts in order, as the CPU engine does); for marginals per depth from the root one `jt_reduce` (parents onto separators:
//! each child's distribute factor), then one `jt_reduce` for every variable's marginal, both reading
//! a non-root clique's collected values times its distribute factor as they are read (the products
//! the CPU engine's scatter writes into its tables, so no table is written after collect; a
//! root's projections, at depth 0, take the plain `jt_reduce`); for the MPE one
//! `jt_decode` (a thread per row). The host normalises with pc-jtree's own code, for one chunk
//! while the GPU runs the next.
//!
//! Launch shape (`Shape`): groups of W lanes (W the smallest power of two >= the chunk's rows, at
//! most 32) each take one cell or item and its rows, or in the reductions after collect a slice
//! of W rows (grid y: what a launch gathers at one time is then one slice's rows, which stay in
//! L2), so the index arithmetic of a cell is shared by its rows or its slice's. Evidence goes up
//! by variable (`hard[var * B + row]`) so the lanes of a group read it coalesced.
//! `CudaJtree::set_profile(true)` synchronises after every launch and books its time and the
//! table bytes it must move per (phase, depth): `CudaJtree::profile`.

mod params;

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::time::Instant;

use cudarc::driver::{CudaSlice, DeviceRepr, LaunchConfig, ValidAsZeroBits};
use pc_core::PcError;
use pc_jtree::engine::{finish_mpe, MargSink, Marginals, Mpe, Progress};
use pc_jtree::plan::{Projection, REDUCE_SPLIT};
use pc_jtree::{Evidence, Plan};

use crate::runtime::timings::Timings;
use crate::runtime::gpu::{cuda_err, guard, Clock, Gpu, Kernel, Result};
use crate::runtime::module;

const BLOCK: u32 = 256;

/// A projection as the kernels read it (`struct Proj` of jtree.cu).
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
struct Proj {
    table: u64,
    out: u64,
    base: u64,
    off: u64,
    len: u64,
    nbase: u32,
    off_ident: u32,
    dig: u32,
    ndig: u32,
}
// SAFETY: plain old data with C layout, as the kernel declares it.
unsafe impl DeviceRepr for Proj {}
unsafe impl ValidAsZeroBits for Proj {}

/// Rows per chunk at most. Chunks of this size let one chunk's copies and host work overlap the
/// next chunk's launches: on one H200, 10,000 evidence sets took andes 0.095 s against 0.206 s
/// in one chunk, pigs 0.24 s against 0.41-0.51 s, diabetes 1.30 s against 1.72 s in chunks of
/// 1,248 rows (bench/suites/jtree/jtree-chunks.sh). `GPUPC_JT_CHUNK_ROWS` overrides it (0: the
/// memory plan's chunk alone).
const CHUNK_ROWS_MAX: usize = 256;

fn chunk_cap() -> usize {
    std::env::var("GPUPC_JT_CHUNK_ROWS").ok().and_then(|v| v.trim().parse().ok()).unwrap_or(CHUNK_ROWS_MAX)
}

/// How the last call was cut, and the cell maps' place (its times are in [`Timings`]).
#[derive(Clone, Debug, Default)]
pub struct JtLayout {
    pub chunks: usize,
    pub rows_per_chunk: usize,
    /// Whether the cell maps are on the device (`jt_maps`), and their bytes.
    pub maps: bool,
    pub map_bytes: u64,
}

/// One row of the launch profile (`CudaJtree::set_profile`): a phase at one depth, over all chunks.
#[derive(Clone, Debug, Default)]
pub struct ProfileRow {
    pub phase: &'static str,
    pub depth: usize,
    pub launches: u64,
    pub seconds: f64,
    /// Table and message bytes the launches must read and write (each value once).
    pub bytes: f64,
}

/// Launch geometry: grid (x groups of blocks, y row slices), lanes per group 2^lw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub grid_x: u32,
    pub grid_y: u32,
    pub lw: u32,
}

/// The launch shape for `units` cells (or items) of `b` rows on `sms` multiprocessors, blocks of
/// `BLOCK` threads: W = 2^lw lanes per unit; at most 32 blocks per multiprocessor per row slice
/// (grid y; the kernels loop grid-stride). `sliced` (the reductions after collect): a slice per W
/// rows. The blocks run slice by slice (x varies fastest), so the factors and tables a launch
/// gathers at one time are one slice's rows, which stay in L2 from one item to the next: 1.3x
/// (diabetes) to 3.3x (andes) faster than one slice over all rows in distribute. Else (collect,
/// which was slower so, and the combination of parts) only as many slices as it takes to give
/// the device about 2048 threads per multiprocessor, so a cell's index work is shared by all
/// its rows.
pub fn shape(units: u64, b: usize, sms: u32, sliced: bool) -> Shape {
    let w = (b.max(1) as u64).next_power_of_two().min(32);
    let lw = w.trailing_zeros();
    let gpb = BLOCK as u64 / w;
    let sms = sms.max(1) as u64;
    let max_slices = (b.max(1) as u64).div_ceil(w).min(65_535);
    let slices = if sliced { max_slices } else { (sms * 2048 / w).div_ceil(units.max(1)).clamp(1, max_slices) };
    let cap = (sms * 32 / slices).max(1);
    let grid_x = units.div_ceil(gpb).clamp(1, cap) as u32;
    Shape { grid_x, grid_y: slices as u32, lw }
}

/// Where each clique's cells start in the cell maps (1 + children + homed variables entries per
/// cell), and the number of entries.
pub fn map_offsets(plan: &Plan) -> (Vec<u64>, u64) {
    let mut offs = Vec::with_capacity(plan.cliques.len());
    let mut e = 0u64;
    for c in &plan.cliques {
        offs.push(e);
        e += c.cells * (1 + c.n_child + c.homed.len()) as u64;
    }
    (offs, e)
}

struct Flat {
    pj: Vec<Proj>,
    outs: Vec<u64>,
    /// Per projection its first (part) item, all projections in order (one more at the end).
    istart: Vec<u64>,
    bpool: Vec<u32>,
    opool: Vec<u32>,
    dig: Vec<u32>,
    cl_off: Vec<u64>,
    cl_child: Vec<u32>,
    homed_start: Vec<u32>,
    homed: Vec<u32>,
    vars_start: Vec<u32>,
    vars: Vec<u32>,
    /// Per projection: the clique whose table it reads, + 1, where that clique is calibrated by
    /// its distribute factor (a parent or home projection of a non-root clique); else 0.
    fac: Vec<u32>,
    /// Beside `bpool`, per base of such a projection the clique's up separator cell of the base
    /// (its `out` added; 0 elsewhere), read with the base.
    fa: Vec<u64>,
    /// Per projection, where its offsets' up separator cells start in `fb`.
    fb_off: Vec<u64>,
    fb: Vec<u32>,
}

fn flatten(plan: &Plan) -> Result<Flat> {
    let mut f = Flat {
        pj: Vec::new(),
        outs: Vec::new(),
        istart: vec![0],
        bpool: Vec::new(),
        opool: Vec::new(),
        dig: Vec::new(),
        cl_off: Vec::new(),
        cl_child: Vec::new(),
        homed_start: vec![0],
        homed: Vec::new(),
        vars_start: vec![0],
        vars: Vec::new(),
        fac: Vec::new(),
        fa: Vec::new(),
        fb_off: Vec::new(),
        fb: Vec::new(),
    };
    let mut add = |p: &Projection| -> Result<()> {
        let ident = p.off.is_empty();
        f.pj.push(Proj {
            table: p.table,
            out: p.out,
            base: f.bpool.len() as u64,
            off: f.opool.len() as u64,
            len: p.len,
            nbase: p.base.len() as u32,
            off_ident: ident as u32,
            dig: (f.dig.len() / 4) as u32,
            ndig: p.digits.len() as u32,
        });
        f.outs.push(p.out);
        f.istart.push(f.istart.last().unwrap() + p.base.len() as u64 * p.parts());
        for (pool, v) in [(&mut f.bpool, &p.base), (&mut f.opool, &p.off)] {
            pool.try_reserve(v.len()).map_err(|_| PcError::Cuda("out of host memory for the projections".into()))?;
            pool.extend_from_slice(v);
        }
        for &(a, b, c, d) in &p.digits {
            f.dig.extend_from_slice(&[a, b, c, d]);
        }
        Ok(())
    };
    for p in plan.up.iter().chain(&plan.down).chain(&plan.marg) {
        add(p)?;
    }
    factor_cells(plan, &mut f)?;
    for c in &plan.cliques {
        f.cl_off.push(c.offset);
        f.cl_child.extend_from_slice(&[c.first_child as u32, c.n_child as u32]);
        for &(v, s, cd) in &c.homed {
            f.homed.extend_from_slice(&[v, s, cd]);
        }
        f.homed_start.push((f.homed.len() / 3) as u32);
        for (i, &v) in c.vars.iter().enumerate() {
            f.vars.extend_from_slice(&[v as u32, c.strides[i] as u32, plan.card[v] as u32]);
        }
        f.vars_start.push((f.vars.len() / 3) as u32);
    }
    f.cl_off.push(plan.total_cells);
    Ok(f)
}

/// The distribute factors' cells of the projections that read a non-root clique's table (`Flat::fac`).
/// Their bases' cells (`fa`: 7.2 million for Munin, a division per digit each, 0.14 s on one
/// thread, made for every query) are made on a kept pool.
fn factor_cells(plan: &Plan, f: &mut Flat) -> Result<()> {
    use rayon::prelude::*;
    let by_offset: BTreeMap<u64, usize> = plan.cliques.iter().enumerate().map(|(c, cl)| (cl.offset, c)).collect();
    let oom = || PcError::Cuda("out of host memory for the distribute factors' cells".into());
    f.fac = vec![0; plan.up.len()];
    f.fb_off = vec![0; plan.up.len()];
    let ups: usize = plan.up.iter().map(|p| p.base.len()).sum();
    f.fa.try_reserve_exact(f.bpool.len() + 1).map_err(|_| oom())?;
    f.fa.resize(f.bpool.len(), 0);
    // per projection after the up ones: its bases' place in fa, and the clique it calibrates
    let mut work: Vec<(&Projection, usize)> = Vec::new();
    let mut rest = &mut f.fa[ups..];
    let mut slices: Vec<&mut [u64]> = Vec::new();
    for p in plan.down.iter().chain(&plan.marg) {
        f.fb_off.push(f.fb.len() as u64);
        let (mine, after) = std::mem::take(&mut rest).split_at_mut(p.base.len());
        rest = after;
        let c = match by_offset.get(&p.table) {
            Some(&c) if plan.cliques[c].parent.is_some() && !p.base.is_empty() => c,
            _ => {
                f.fac.push(0);
                continue;
            }
        };
        f.fac.push(c as u32 + 1);
        let up = &plan.up[c];
        f.fb.try_reserve(p.len as usize).map_err(|_| oom())?;
        // a clique has fewer than 2^32 cells, so has its separator
        f.fb.extend((0..p.len as usize).map(|t| up.subset_cell(p.off_at(t)) as u32));
        work.push((p, c));
        slices.push(mine);
    }
    debug_assert!(rest.is_empty());
    pc_core::threads::kept_pool(0, "host")?.install(|| {
        slices.into_par_iter().zip(work).for_each(|(out, (p, c))| {
            let up = &plan.up[c];
            for (x, &b) in out.iter_mut().zip(&p.base) {
                *x = up.out + up.subset_cell(b as u64);
            }
        })
    });
    // kernels may not take empty buffers
    f.fa.push(0);
    f.fb.push(0);
    Ok(())
}

struct Dev {
    pj: CudaSlice<Proj>,
    outs: CudaSlice<u64>,
    istart: CudaSlice<u64>,
    bpool: CudaSlice<u32>,
    opool: CudaSlice<u32>,
    dig: CudaSlice<u32>,
    cl_off: CudaSlice<u64>,
    cl_child: CudaSlice<u32>,
    homed_start: CudaSlice<u32>,
    homed: CudaSlice<u32>,
    vars_start: CudaSlice<u32>,
    vars: CudaSlice<u32>,
    fac: CudaSlice<u32>,
    fa: CudaSlice<u64>,
    fb_off: CudaSlice<u64>,
    fb: CudaSlice<u32>,
    base: CudaSlice<f64>,
    /// The cell maps (per clique its first entry; the entries), where they fit.
    maps: Option<(CudaSlice<u64>, CudaSlice<u32>)>,
}

/// A tree's part on one GPU: its kernels, projections, potentials and cell maps.
struct OnDevice {
    gpu: Gpu,
    f: [Kernel; 6],
    d: Dev,
    istart: Vec<u64>,
    /// `Flat::fac`: which projections read calibrated values (those launches take jt_reduce_cal).
    fac: Vec<u32>,
    static_bytes: usize,
}

/// A compiled tree resident on the GPU.
pub struct CudaJtree<'a> {
    plan: &'a Plan,
    on: OnDevice,
    /// Under which key a batch's buffers are held for the next query of the same tree (`held`).
    hold_key: Option<u64>,
    /// Of the last call: times (`setup_s` the cell maps, `host_s` normalising the chunks'
    /// results, overlapped with the next chunk's kernels) and how it was cut.
    pub timings: Timings,
    pub layout: JtLayout,
    prof: Option<RefCell<BTreeMap<(usize, &'static str, usize), ProfileRow>>>,
}

/// A tree's device part, kept between the queries of one compiled plan: opening it again took
/// 0.12-0.29 s of every Munin query (laying out the projections, allocating and uploading
/// 0.6 GB, making the maps), where one evidence set propagates in milliseconds. Made by
/// [`CudaJtree::keep`] under the caller's `key`, which must name the plan (and nothing else) for
/// the process's life; taken back by [`CudaJtree::resume`] with the same plan and key. Dropped in
/// a process other than the one that made it (a forked child), it lets its device memory go
/// unfreed: CUDA cannot be called there.
pub struct KeptTree {
    key: u64,
    ordinal: usize,
    pid: u32,
    on: Option<OnDevice>,
    layout: JtLayout,
    /// What its kernels were compiled for.
    target: String,
}

impl KeptTree {
    /// The key it was kept under.
    pub fn key(&self) -> u64 {
        self.key
    }

    /// The GPU it lives on.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }
}

impl Drop for KeptTree {
    fn drop(&mut self) {
        if std::process::id() != self.pid {
            std::mem::forget(self.on.take());
        } else if let Some(on) = self.on.take() {
            // its memory back to the device, not left in the stream-ordered pool
            let ctx = on.gpu.ctx.clone();
            drop(on);
            let _ = crate::runtime::gpu::trim_pool(&ctx);
        }
    }
}

impl<'a> CudaJtree<'a> {
    /// Holds each batch's buffers under `key` for the next batch of the same tree on this
    /// device (a tree [`CudaJtree::resume`]d holds them under its key). They are held only where
    /// they take at most [`HELD_SHARE_MAX`] of the device's memory, and let go as soon as any
    /// engine plans memory on the device (`runtime::held`) or [`release_held`] is called.
    pub fn hold_buffers_under(&mut self, key: u64) {
        self.hold_key = Some(key);
    }

    /// The device part, kept under `key` (see [`KeptTree`]).
    pub fn keep(self, key: u64) -> KeptTree {
        let ordinal = self.on.gpu.info.ordinal;
        KeptTree { key, ordinal, pid: std::process::id(), on: Some(self.on), layout: self.layout, target: self.timings.target }
    }

    /// The tree `kept` held, for `plan` again; `None` where it was kept under another key or
    /// made by another process (it is then dropped).
    pub fn resume(plan: &'a Plan, key: u64, mut kept: KeptTree) -> Option<CudaJtree<'a>> {
        if kept.key != key || kept.pid != std::process::id() {
            return None;
        }
        let on = kept.on.take()?;
        // nothing compiled, uploaded or made for this query
        let timings = Timings { compile_cached: true, target: std::mem::take(&mut kept.target), ..Default::default() };
        Some(CudaJtree { plan, on, hold_key: Some(key), timings, layout: std::mem::take(&mut kept.layout), prof: None })
    }

    /// Opens the GPU, compiles the kernels and uploads the plan and the potentials.
    pub fn new(plan: &'a Plan) -> Result<CudaJtree<'a>> {
        Self::new_on(plan, crate::runtime::device::device_ordinal())
    }

    /// [`CudaJtree::new`] on device `ordinal`.
    pub fn new_on(plan: &'a Plan, ordinal: usize) -> Result<CudaJtree<'a>> {
        guard("setting up the junction tree on the GPU", || {
            let gpu = Gpu::open_on(ordinal)?;
            let m = module::module_for(&gpu, module::Family::Jtree).map_err(PcError::Cuda)?;
            let get = |n: &str| m.function(n).map_err(PcError::Cuda);
            let f = [get("jt_reduce")?, get("jt_collect")?, get("jt_decode")?, get("jt_combine")?, get("jt_maps")?, get("jt_reduce_cal")?];
            let mut timings = Timings::opened(&m, 0.0);
            pc_core::trace::mark(|| format!("junction tree on GPU {ordinal}: device and kernels ready"));
            let fl = flatten(plan)?;
            pc_core::trace::mark(|| "junction tree: plan flattened".into());
            let static_bytes = 8 * (plan.base.len() + fl.fa.len()) + 4 * (fl.bpool.len() + fl.opool.len() + fl.fb.len()) + std::mem::size_of::<Proj>() * fl.pj.len();
            gpu.ensure_free(static_bytes, "the potentials and projections")?;
            let mut clock = Clock::default();
            let d = Dev {
                pj: gpu.up(&mut clock, &fl.pj, "uploading projections")?,
                outs: gpu.up(&mut clock, &fl.outs, "uploading projections")?,
                istart: gpu.up(&mut clock, &fl.istart, "uploading projections")?,
                bpool: gpu.up(&mut clock, &fl.bpool, "uploading projections")?,
                opool: gpu.up(&mut clock, &fl.opool, "uploading projections")?,
                dig: gpu.up(&mut clock, &fl.dig, "uploading projections")?,
                cl_off: gpu.up(&mut clock, &fl.cl_off, "uploading cliques")?,
                cl_child: gpu.up(&mut clock, &fl.cl_child, "uploading cliques")?,
                homed_start: gpu.up(&mut clock, &fl.homed_start, "uploading cliques")?,
                homed: gpu.up(&mut clock, &fl.homed, "uploading cliques")?,
                vars_start: gpu.up(&mut clock, &fl.vars_start, "uploading cliques")?,
                vars: gpu.up(&mut clock, &fl.vars, "uploading cliques")?,
                fac: gpu.up(&mut clock, &fl.fac, "uploading projections")?,
                fa: gpu.up(&mut clock, &fl.fa, "uploading projections")?,
                fb_off: gpu.up(&mut clock, &fl.fb_off, "uploading projections")?,
                fb: gpu.up(&mut clock, &fl.fb, "uploading projections")?,
                base: gpu.up(&mut clock, &plan.base, "uploading the potentials")?,
                maps: None,
            };
            gpu.stream.synchronize().map_err(cuda_err("uploading the tree"))?;
            timings.upload_s = clock.transfer;
            let on = OnDevice { gpu, f, d, static_bytes, istart: fl.istart, fac: fl.fac };
            let mut me = CudaJtree { plan, on, hold_key: None, timings, layout: JtLayout::default(), prof: None };
            me.make_maps()?;
            pc_core::trace::mark(|| format!("junction tree on GPU {ordinal}: plan uploaded ({:.4} s), cell maps made ({:.4} s)", me.timings.upload_s, me.timings.setup_s));
            Ok(me)
        })
    }

    /// The cell maps (`jt_maps`): per clique cell its up separator cell, its children's separator
    /// cells and its homed variables' states, so that collect reads them instead of
    /// dividing them out of the cell number for every row block. 4 bytes per entry, made on the
    /// device once per tree; only where they take at most a tenth of the free memory (the
    /// tables of the rows get the rest) and every separator cell has a 32-bit number.
    /// `GPUPC_JT_MAPS=0` leaves them out (the kernels then compute the same numbers).
    fn make_maps(&mut self) -> Result<()> {
        let plan = self.plan;
        let (offs, entries) = map_offsets(plan);
        let bytes = 4 * entries + 8 * offs.len() as u64;
        let off = std::env::var("GPUPC_JT_MAPS").is_ok_and(|v| v == "0");
        let free = self.on.gpu.free_bytes()? as u64;
        if off || plan.sep_cells > u32::MAX as u64 || bytes > free / 10 {
            return Ok(());
        }
        let t = Instant::now();
        let mut clock = Clock::default();
        let map_off = self.on.gpu.up(&mut clock, &offs, "uploading the cell maps' offsets")?;
        let mut map = self.on.gpu.alloc::<u32>(entries as usize, "allocating the cell maps")?;
        let (nc, cells, k32) = (plan.cliques.len() as u32, plan.total_cells, plan.cliques.len() as u32);
        let dev = &self.on.d;
        let args = params::Maps {
            cl_off: &dev.cl_off, nc, cells, pj: &dev.pj, k: k32, dig: &dev.dig, cl_child: &dev.cl_child, homed_start: &dev.homed_start,
            homed: &dev.homed, map_off: &map_off, map: &mut map,
        };
        // SAFETY: map holds the entries map_offsets counted.
        unsafe { args.launch(&self.on.gpu, &self.on.f[4], self.cfg(cells), "jt_maps") }?;
        self.on.gpu.stream.synchronize().map_err(cuda_err("making the cell maps"))?;
        self.on.d.maps = Some((map_off, map));
        self.on.static_bytes += bytes as usize;
        self.layout.maps = true;
        self.layout.map_bytes = bytes;
        self.timings.setup_s = t.elapsed().as_secs_f64();
        Ok(())
    }

    pub fn device_name(&self) -> &str {
        &self.on.gpu.info.name
    }

    /// Rows per chunk: what the memory plan allows, at most [`CHUNK_ROWS_MAX`].
    fn chunk_rows(&self, rows: usize, memory_bytes: Option<u64>) -> Result<usize> {
        let free = self.on.gpu.free_bytes()? as u64;
        // the MPE's states (n ints per row) fit in the margin left beside the tables
        let budget = crate::runtime::memplan::jtree_budget(free, memory_bytes, rows, self.plan.n_vars());
        // and the two slots a chunk's results wait in for their download (Slot)
        let p = self.plan;
        let slot_bytes = 2 * 8 * (p.marg_cells + p.roots.len() as u64 + p.n_vars() as u64) * rows.min(CHUNK_ROWS_MAX) as u64;
        let c = pc_jtree::engine::chunk_rows(self.plan, rows, budget.saturating_sub(slot_bytes)).map_err(|e| PcError::Cuda(format!("{e} (free GPU memory)")))?;
        let c = match chunk_cap() {
            0 => c,
            cap => c.min(cap),
        };
        // whole warps of rows (aligned rows of each cell) where the chunk is not the whole batch
        Ok(if c < rows && c >= 64 { c - c % 32 } else { c })
    }

    /// Profiling on (from empty) or off: on, every launch is waited for and booked.
    pub fn set_profile(&mut self, on: bool) {
        self.prof = on.then(|| RefCell::new(BTreeMap::new()));
    }

    /// The launch profile since `set_profile(true)`, phases in schedule order.
    pub fn profile(&self) -> Vec<ProfileRow> {
        self.prof.as_ref().map(|p| p.borrow().values().cloned().collect()).unwrap_or_default()
    }

    /// Profiling: waits for the launch just made and books it (order: position in the schedule).
    fn book(&self, order: usize, phase: &'static str, depth: usize, bytes: f64, t: Instant) -> Result<()> {
        if let Some(p) = &self.prof {
            self.on.gpu.stream.synchronize().map_err(cuda_err("profiling"))?;
            let mut p = p.borrow_mut();
            let row = p.entry((order, phase, depth)).or_insert_with(|| ProfileRow { phase, depth, ..Default::default() });
            row.launches += 1;
            row.seconds += t.elapsed().as_secs_f64();
            row.bytes += bytes;
        }
        Ok(())
    }

    fn shape(&self, units: u64, b: usize, sliced: bool) -> (LaunchConfig, u32) {
        let s = shape(units, b, self.on.gpu.info.multiprocessors.max(1) as u32, sliced);
        (LaunchConfig { grid_dim: (s.grid_x, s.grid_y, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }, s.lw)
    }

    fn cfg(&self, total: u64) -> LaunchConfig {
        let cap = (self.on.gpu.info.multiprocessors.max(1) as u64) * 32;
        let grid = total.div_ceil(BLOCK as u64).clamp(1, cap) as u32;
        LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    /// Projections p0..p0+np onto `out` (runs longer than `REDUCE_SPLIT` through `scratch` and
    /// `jt_combine`). With `collect` (the chunk's evidence, `p0..` a depth's up projections) the
    /// cliques' tables are built and stored in the same pass (`jt_collect`), else read (`jt_reduce`).
    #[allow(clippy::too_many_arguments)]
    fn reduce(&self, p0: usize, np: usize, b: usize, max: bool, collect: Option<&EvDev>, bufs: &mut Bufs, out: Out, launches: &mut u64, tag: (usize, &'static str, usize)) -> Result<()> {
        if np == 0 {
            return Ok(());
        }
        let items = self.on.istart[p0 + np] - self.on.istart[p0];
        let cells: u64 = (p0..p0 + np).map(|i| self.proj(i).base.len() as u64).sum();
        let read: u64 = (p0..p0 + np).map(|i| self.proj(i).base.len() as u64 * self.proj(i).len).sum();
        let split_any = items != cells;
        let (p0u, npu, mode, split, bu, k32) = (p0 as u32, np as u32, max as i32, REDUCE_SPLIT, b as u32, self.plan.cliques.len() as u32);
        let (cfg, lw) = self.shape(items, b, collect.is_none());
        let t = Instant::now();
        let Bufs { tables, msg, dmsg, marg, scratch, .. } = bufs;
        // distribute writes each child's factor: its sums over the messages sent up (msg)
        let ratio = matches!(out, Out::Dmsg) as i32;
        let dev = &self.on.d;
        let (map_off, map) = dev.maps.as_ref().map(|(o, m)| (o, m)).unzip();
        match (collect, out) {
            (None, Out::Dmsg | Out::Marg) if self.on.fac[p0..p0 + np].iter().any(|&c| c != 0) => {
                // distribute writes into dm, whose parents' cells it reads (disjoint cells)
                let out = if let Out::Marg = out { Some(&mut *marg) } else { None };
                let args = params::ReduceCal {
                    pj: &dev.pj, istart: &dev.istart, p0: p0u, np: npu, items, B: bu, lw, mode, split, bpool: &dev.bpool, opool: &dev.opool,
                    tables: &*tables, out, scratch: &mut *scratch, ratio, old: &*msg, fac: &dev.fac, fa: &dev.fa,
                    fb_off: &dev.fb_off, fb: &dev.fb, dm: &mut *dmsg,
                };
                // SAFETY: every index stays inside the plan's arrays; scratch holds the plan's
                // scratch_cells x b values.
                unsafe { args.launch(&self.on.gpu, &self.on.f[5], cfg, "jt_reduce_cal") }?;
            }
            (None, Out::Dmsg | Out::Marg) => {
                // the roots' projections (distribute at depth 0): their tables are calibrated
                let out = if let Out::Marg = out { &mut *marg } else { &mut *dmsg };
                let args = params::Reduce {
                    pj: &dev.pj, istart: &dev.istart, p0: p0u, np: npu, items, B: bu, lw, mode, split, bpool: &dev.bpool, opool: &dev.opool,
                    tables: &*tables, out, scratch: &mut *scratch, ratio, old: &*msg,
                };
                // SAFETY: as above.
                unsafe { args.launch(&self.on.gpu, &self.on.f[0], cfg, "jt_reduce") }?;
            }
            (None, Out::Msg) => return Err(PcError::Internal("the messages up are made by collect".into())),
            (Some(ev), _) => {
                let dst = match out {
                    Out::Msg => &mut *msg,
                    _ => return Err(PcError::Internal("collect writes the messages up".into())),
                };
                // the children's messages are read, this depth's written: msg is both (disjoint cells)
                let args = params::Collect {
                    pj: &dev.pj, istart: &dev.istart, p0: p0u, np: npu, items, B: bu, lw, mode, split, bpool: &dev.bpool, opool: &dev.opool,
                    dig: &dev.dig, k: k32, cl_child: &dev.cl_child, homed_start: &dev.homed_start, homed: &dev.homed, base: &dev.base,
                    hard: &ev.hard, soft_col: &ev.soft_col, soft: &ev.soft, tables: &mut *tables, msg: dst,
                    scratch: &mut *scratch, map_off, map,
                };
                // SAFETY: hard holds n x b, soft soft_width x b values; the messages read (children,
                // deeper) and written (this depth) are disjoint cells.
                unsafe { args.launch(&self.on.gpu, &self.on.f[1], cfg, "jt_collect") }?;
            }
        }
        *launches += 1;
        // jt_collect writes each table value once (and reads the small messages), jt_reduce reads it
        let moved = read + items;
        self.book(tag.0, tag.1, tag.2, 8.0 * moved as f64 * b as f64, t)?;
        if split_any {
            let (cfg, lw) = self.shape(cells, b, false);
            let t = Instant::now();
            // `old` is read only with `ratio` (distribute)
            let (dst, old) = match out {
                Out::Msg => (msg, &dev.base),
                Out::Dmsg => (dmsg, &*msg),
                Out::Marg => (marg, &*msg),
            };
            let args = params::Combine {
                pj: &dev.pj, outs: &dev.outs, istart: &dev.istart, p0: p0u, np: npu, cells, B: bu, lw, mode, split, scratch: &*scratch,
                out: dst, ratio, old,
            };
            // SAFETY: the same plan's arrays as the reduction's.
            unsafe { args.launch(&self.on.gpu, &self.on.f[3], cfg, "jt_combine") }?;
            *launches += 1;
            self.book(tag.0 + 1, "combine", tag.2, 8.0 * (items + cells) as f64 * b as f64, t)?;
        }
        Ok(())
    }

    fn proj(&self, i: usize) -> &Projection {
        let k = self.plan.cliques.len();
        if i < k {
            &self.plan.up[i]
        } else if i < 2 * k {
            &self.plan.down[i - k]
        } else {
            &self.plan.marg[i - 2 * k]
        }
    }

    /// Init and collect (and for marginals distribute and the variables' projections) of one chunk.
    fn run_chunk(&self, ev: &Evidence, r0: usize, b: usize, max: bool, bufs: &mut Bufs, launches: &mut u64) -> Result<()> {
        let plan = self.plan;
        let n = plan.n_vars();
        let k = plan.cliques.len();
        let mut clock = Clock::default();
        // evidence by variable: value (var, row) at var * b + row
        let mut hard_t = vec![-1i32; n * b];
        for r in 0..b {
            for (v, &h) in ev.hard[(r0 + r) * n..(r0 + r + 1) * n].iter().enumerate() {
                hard_t[v * b + r] = h;
            }
        }
        let sw = ev.soft_width;
        let mut soft_t = vec![0.0f64; sw * b];
        for r in 0..b {
            for (i, &x) in ev.soft[(r0 + r) * sw..(r0 + r + 1) * sw].iter().enumerate() {
                soft_t[i * b + r] = x;
            }
        }
        let ev_dev = EvDev {
            hard: self.on.gpu.up(&mut clock, &hard_t, "uploading evidence")?,
            soft_col: self.on.gpu.up(&mut clock, &ev.soft_col, "uploading evidence")?,
            soft: self.on.gpu.up(&mut clock, &soft_t, "uploading evidence")?,
        };
        let k32 = k as u32;
        let ds = &plan.depth_start;
        let md = plan.max_depth();
        // collect: per depth from the deepest, the cliques' tables built, stored and marginalised
        for d in (0..=md).rev() {
            self.reduce(ds[d], ds[d + 1] - ds[d], b, max, Some(&ev_dev), bufs, Out::Msg, launches, (10 + 10 * (md - d), "collect", d))?;
        }
        let o = 10 + 10 * (md + 1);
        if max {
            let bb = b as u64;
            let (nu, t) = (n as u32, Instant::now());
            let dev = &self.on.d;
            let args = params::Decode {
                cl_off: &dev.cl_off, k: k32, B: bb, pj: &dev.pj, bpool: &dev.bpool, opool: &dev.opool, dig: &dev.dig, vars_start: &dev.vars_start,
                vars: &dev.vars, n: nu, tables: &bufs.tables, x: &mut bufs.states,
            };
            // SAFETY: states holds b x n ints.
            unsafe { args.launch(&self.on.gpu, &self.on.f[2], self.cfg(bb), "jt_decode") }?;
            *launches += 1;
            self.book(o, "decode", 0, 0.0, t)?;
            return Ok(());
        }
        for d in 0..md {
            let o = o + 10 * d;
            self.reduce(k + ds[d + 1], ds[d + 2] - ds[d + 1], b, false, None, bufs, Out::Dmsg, launches, (o, "distribute", d))?;
        }
        self.reduce(2 * k, n, b, false, None, bufs, Out::Marg, launches, (10 + 10 * (2 * md + 2), "marginals", 0))
    }

    fn bufs(&self, chunk: usize, max: bool) -> Result<Bufs> {
        let p = self.plan;
        let b = chunk;
        Ok(Bufs {
            // SAFETY: collect writes every cell of every table (one (item, t) per cell) before
            // distribute, the marginals or the decoding read it; so the tables (Munin's 28 GB in
            // chunks of 256 rows) need no zeroing pass.
            tables: unsafe { self.on.gpu.stream.alloc::<f64>((p.total_cells as usize * b).max(1)) }.map_err(cuda_err("allocating clique tables"))?,
            msg: self.on.gpu.alloc(p.sep_cells as usize * b, "allocating messages")?,
            dmsg: self.on.gpu.alloc(if max { 1 } else { p.sep_cells as usize * b }, "allocating messages")?,
            marg: self.on.gpu.alloc(if max { 1 } else { p.marg_cells as usize * b }, "allocating marginals")?,
            states: self.on.gpu.alloc(if max { p.n_vars() * b } else { 1 }, "allocating states")?,
            scratch: self.on.gpu.alloc(p.stats.scratch_cells as usize * b, "allocating partial sums")?,
        })
    }

    /// A chunk's results (marginals or MPE states, and the roots' messages: P(evidence)) copied
    /// into `slot` on the device, in stream order after its kernels; returns the event that marks
    /// them there.
    fn stage(&self, bufs: &Bufs, slot: &mut Slot, b: usize, max: bool) -> Result<cudarc::driver::CudaEvent> {
        let p = self.plan;
        let st = &self.on.gpu.stream;
        let what = "keeping a chunk's results";
        let roots = p.roots.len() * b;
        st.memcpy_dtod(&bufs.msg.slice(0..roots), &mut slot.roots.slice_mut(0..roots)).map_err(cuda_err(what))?;
        if max {
            let n = p.n_vars() * b;
            st.memcpy_dtod(&bufs.states.slice(0..n), &mut slot.states.slice_mut(0..n)).map_err(cuda_err(what))?;
        } else {
            let m = p.marg_cells as usize * b;
            st.memcpy_dtod(&bufs.marg.slice(0..m), &mut slot.marg.slice_mut(0..m)).map_err(cuda_err(what))?;
        }
        st.record_event(None).map_err(cuda_err(what))
    }

    fn slot(&self, chunk: usize, max: bool) -> Result<Slot> {
        let p = self.plan;
        Ok(Slot {
            marg: self.on.gpu.alloc(if max { 1 } else { p.marg_cells as usize * chunk }, "allocating marginals")?,
            roots: self.on.gpu.alloc(p.roots.len() * chunk, "allocating P(evidence)")?,
            states: self.on.gpu.alloc(if max { p.n_vars() * chunk } else { 1 }, "allocating states")?,
        })
    }

    /// Every chunk: its kernels, its results staged into one of two slots, then `fetch`
    /// (downloads from that slot on a stream of their own) and `finish` (host work on what was
    /// fetched), both while the GPU propagates the next chunk, which is launched before them.
    /// `progress` as on the CPU: told before the first chunk and after each download, on the
    /// calling thread.
    fn run<T>(
        &mut self,
        ev: &Evidence,
        max: bool,
        memory_bytes: Option<u64>,
        progress: Progress,
        fetch: impl Fn(&Gpu, &Slot, usize, &mut Clock) -> Result<T>,
        mut finish: impl FnMut(T, usize, usize),
    ) -> Result<()> {
        ev.check(&self.plan.card).map_err(|e| PcError::Cuda(e.to_string()))?;
        let ordinal = self.on.gpu.info.ordinal;
        // the last batch's buffers, where this tree's last query here held them: no memory
        // is mapped again (Munin's 28 GB of tables took 0.04 s, and giving them back as much)
        let held = match (self.hold_key, memory_bytes) {
            (Some(k), None) => crate::runtime::held::take::<HeldBatch>(ordinal, k).filter(|h| {
                // as large a chunk as this batch would get (the cap, or its rows)
                let want = match chunk_cap() {
                    0 => ev.rows,
                    cap => ev.rows.min(cap),
                };
                h.max == max && h.chunk >= want
            }),
            _ => None,
        };
        let (chunk, reused) = match held {
            Some(h) => (h.chunk, Some(h)),
            None => {
                // what an earlier call freed goes back to the device first (the stream-ordered
                // pool keeps it otherwise, and the chunks would be sized from what is left)
                self.on.gpu.release_freed()?;
                (self.chunk_rows(ev.rows, memory_bytes)?, None)
            }
        };
        let _ = self.on.static_bytes;
        guard("propagating on the GPU", || {
            let ta = Instant::now();
            let (mut bufs, mut slots) = match reused {
                Some(h) => (h.bufs, h.slots),
                None => (self.bufs(chunk, max)?, [self.slot(chunk, max)?, self.slot(chunk, max)?]),
            };
            let copier = self.on.gpu.with_own_stream()?;
            if pc_core::trace::on() {
                self.on.gpu.stream.synchronize().map_err(cuda_err("allocating the tables"))?;
                pc_core::trace::mark(|| format!("junction tree: buffers for chunks of {chunk} rows in {:.4} s", ta.elapsed().as_secs_f64()));
            }
            let mut clock = Clock::default();
            let mut launches = 0u64;
            let mut chunks = 0;
            let (mut host, mut launching) = (0.0, 0.0);
            if !progress(0, ev.rows) {
                return Err(PcError::Interrupted);
            }
            // (first row, rows, slot, the event after its results were staged)
            let mut launch = |me: &Self, r0: usize, slot: usize, bufs: &mut Bufs, slots: &mut [Slot; 2], clock: &mut Clock| -> Result<Option<(usize, usize, usize, cudarc::driver::CudaEvent)>> {
                if r0 >= ev.rows {
                    return Ok(None);
                }
                let b = chunk.min(ev.rows - r0);
                let t = Instant::now();
                me.run_chunk(ev, r0, b, max, bufs, &mut launches)?;
                let done = me.stage(bufs, &mut slots[slot], b, max)?;
                let dt = t.elapsed().as_secs_f64();
                clock.kernel += dt;
                launching += dt;
                Ok(Some((r0, b, slot, done)))
            };
            let mut next = launch(self, 0, 0, &mut bufs, &mut slots, &mut clock)?;
            while let Some((r0, b, s, done)) = next.take() {
                // the next chunk is queued behind this one before this one's results are read
                next = launch(self, r0 + b, 1 - s, &mut bufs, &mut slots, &mut clock)?;
                let tw = Instant::now();
                done.synchronize().map_err(crate::runtime::gpu::kernel_failed("junction-tree propagation"))?;
                clock.kernel += tw.elapsed().as_secs_f64();
                copier.stream.wait(&done).map_err(cuda_err("ordering a download"))?;
                let data = fetch(&copier, &slots[s], b, &mut clock)?;
                let th = Instant::now();
                finish(data, r0, b);
                host += th.elapsed().as_secs_f64();
                chunks += 1;
                if !progress(r0 + b, ev.rows) {
                    return Err(PcError::Interrupted);
                }
            }
            self.on.gpu.stream.synchronize().map_err(cuda_err("junction-tree propagation"))?;
            if let Some(k) = self.hold_key {
                let bytes = chunk as u64 * self.plan.stats.bytes_per_evidence_set;
                if bytes as f64 <= HELD_SHARE_MAX * self.on.gpu.info.total_memory as f64 {
                    crate::runtime::held::hold(ordinal, k, HeldBatch { chunk, max, bufs, slots });
                }
            }
            clock.launches += chunks as u64;
            self.timings.kernel_s = clock.kernel;
            self.timings.transfer_s = clock.transfer;
            self.timings.launches = launches;
            self.layout.chunks = chunks;
            self.layout.rows_per_chunk = chunk;
            self.timings.host_s = host;
            pc_core::trace::mark(|| {
                format!(
                    "junction tree: {} rows in {chunks} chunks of {chunk} (kernels {:.4} s, transfers {:.4} s, host {host:.4} s; launching {launching:.4} s)",
                    ev.rows, clock.kernel, clock.transfer
                )
            });
            Ok(())
        })
    }

    /// All marginals and P(evidence) per row (`memory_bytes`: the chunks' budget; None: 85% of free).
    pub fn marginals(&mut self, ev: &Evidence, memory_bytes: Option<u64>, progress: Progress) -> Result<Marginals> {
        let plan = self.plan;
        let mut out = pc_core::threads::kept_pool(0, "host")?.install(|| Marginals::zeroed(plan, ev.rows)).map_err(|e| PcError::Cuda(e.to_string()))?;
        self.marginals_into(ev, memory_bytes, progress, &out.sink(self.plan))?;
        Ok(out)
    }

    /// [`CudaJtree::marginals`] into the matrices of `sink` (its rows from its first on): each
    /// chunk is normalised into them while the GPU propagates the next.
    pub fn marginals_into(&mut self, ev: &Evidence, memory_bytes: Option<u64>, progress: Progress, sink: &MargSink) -> Result<()> {
        let plan = self.plan;
        self.run(
            ev,
            false,
            memory_bytes,
            progress,
            |copier, slot, b, clock| {
                let marg = copier.down(clock, &slot.marg, plan.marg_cells as usize * b, "downloading marginals")?;
                let roots = copier.down(clock, &slot.roots, plan.roots.len() * b, "downloading P(evidence)")?;
                Ok((marg, roots))
            },
            |(marg, roots), r0, b| sink.write_chunk(plan, &marg, &roots, b, r0),
        )
    }

    /// The MPE per row.
    pub fn mpe(&mut self, ev: &Evidence, memory_bytes: Option<u64>, progress: Progress) -> Result<Mpe> {
        let plan = self.plan;
        let n = plan.n_vars();
        let mut out = Mpe { rows: ev.rows, states: vec![-1; ev.rows * n], prob: vec![0.0; ev.rows] };
        self.run(
            ev,
            true,
            memory_bytes,
            progress,
            |copier, slot, b, clock| {
                let st = copier.down(clock, &slot.states, n * b, "downloading the MPE")?;
                let roots = copier.down(clock, &slot.roots, plan.roots.len() * b, "downloading the MPE's probability")?;
                Ok((st, roots))
            },
            |(st, roots), r0, b| {
                out.states[r0 * n..(r0 + b) * n].copy_from_slice(&st);
                finish_mpe(plan, &roots, b, r0, &mut out);
            },
        )?;
        Ok(out)
    }
}

/// Where a reduction writes.
#[derive(Clone, Copy)]
enum Out {
    Msg,
    Dmsg,
    Marg,
}

/// A chunk's evidence on the device, by variable.
struct EvDev {
    hard: CudaSlice<i32>,
    soft_col: CudaSlice<i32>,
    soft: CudaSlice<f64>,
}

/// The most of a device's memory a batch's buffers may take and still be held for the next
/// query (`CudaJtree::hold_buffers_under`): beyond it, what they would keep from other engines
/// and processes on the device outweighs the 2-4% of a large batch they save.
pub const HELD_SHARE_MAX: f64 = 0.25;

/// A batch's buffers held for the next query of the same tree.
struct HeldBatch {
    chunk: usize,
    max: bool,
    bufs: Bufs,
    slots: [Slot; 2],
}

/// Lets go of the buffers held under `key` (a tree that is gone) and gives them back to their
/// devices.
pub fn release_held(key: u64) {
    for (_, batch) in crate::runtime::held::take_owner::<HeldBatch>(key) {
        let ctx = batch.bufs.tables.context().clone();
        drop(batch);
        let _ = crate::runtime::gpu::trim_pool(&ctx);
    }
}

/// Where a chunk's results wait for their download while the next chunk runs.
struct Slot {
    marg: CudaSlice<f64>,
    roots: CudaSlice<f64>,
    states: CudaSlice<i32>,
}

struct Bufs {
    tables: CudaSlice<f64>,
    msg: CudaSlice<f64>,
    dmsg: CudaSlice<f64>,
    marg: CudaSlice<f64>,
    states: CudaSlice<i32>,
    scratch: CudaSlice<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pc_jtree::testing::bundled_plan;

    #[test]
    fn kernel_source_declares_every_kernel_and_the_projection_layout() {
        for k in ["jt_reduce", "jt_reduce_cal", "jt_collect", "jt_decode", "jt_combine", "jt_maps"] {
            assert!(crate::runtime::module::JTREE_SRC.contains(&format!("__global__ void {k}(")), "{k}");
        }
        assert!(crate::runtime::module::JTREE_SRC.contains("u64 table, out, base, off, len;\n    u32 nbase, off_ident, dig, ndig;"));
        assert_eq!(std::mem::size_of::<Proj>(), 56);
    }

    #[test]
    fn a_distribute_factors_cell_is_its_bases_plus_its_offsets() {
        let mut roots = 0;
        for name in ["alarm", "andes", "pigs"] {
            let plan = bundled_plan(name);
            let f = flatten(&plan).unwrap();
            let k = plan.cliques.len();
            let mut calibrated = 0;
            for (i, p) in plan.up.iter().chain(&plan.down).chain(&plan.marg).enumerate() {
                if f.fac[i] == 0 {
                    // the up projections, a root's empty down projection, a root's variables
                    let root = plan.cliques.iter().any(|c| c.offset == p.table && c.parent.is_none());
                    assert!(i < k || p.base.is_empty() || root, "{name}: projection {i} reads a non-root table unscaled");
                    roots += (i >= 2 * k) as usize;
                    continue;
                }
                calibrated += 1;
                let c = f.fac[i] as usize - 1;
                assert_eq!(plan.cliques[c].offset, p.table);
                let up = &plan.up[c];
                for (j, &b) in p.base.iter().enumerate() {
                    for t in 0..p.len as usize {
                        let want = up.out + up.subset_cell(b as u64 + p.off_at(t));
                        let got = f.fa[f.pj[i].base as usize + j] + f.fb[f.fb_off[i] as usize + t] as u64;
                        assert_eq!(got, want, "{name}: projection {i}, base {j}, offset {t}");
                    }
                }
            }
            assert!(calibrated > k / 2, "{name}: {calibrated} calibrated projections");
        }
        assert!(roots > 0, "no variable homed in a root");
    }

    #[test]
    fn launch_shape_slices_rows_where_asked_and_else_shares_a_cells_index_work() {
        for sliced in [false, true] {
            // one row: a lane per cell, no slices
            assert_eq!(shape(27_000_000, 1, 132, sliced), Shape { grid_x: 132 * 32, grid_y: 1, lw: 0 });
            assert_eq!(shape(1_000_000, 1, 132, sliced).grid_x, 1_000_000u32.div_ceil(256));
            // 5 rows: groups of 8 lanes
            assert_eq!(shape(100, 5, 132, sliced).lw, 3);
            // few cells: a slice per 32 rows either way
            let s = shape(10, 244, 132, sliced);
            assert_eq!((s.lw, s.grid_y, s.grid_x), (5, 8, 2));
        }
        // hundreds of rows, many cells: warps of 32 rows, each group over all rows ...
        let s = shape(27_000_000, 244, 132, false);
        assert_eq!((s.lw, s.grid_y, s.grid_x), (5, 1, 132 * 32));
        let s = shape(1000, 10_000, 132, false);
        assert_eq!((s.grid_y, s.grid_x), (9, 125));
        // ... or a slice per warp of rows, 32 blocks per multiprocessor in all
        let s = shape(27_000_000, 244, 132, true);
        assert_eq!((s.lw, s.grid_y, s.grid_x), (5, 8, 132 * 32 / 8));
        let s = shape(1000, 10_000, 132, true);
        assert_eq!((s.grid_y, s.grid_x), (313, 13));
        assert_eq!(shape(1000, 10_000_000, 132, true).grid_y, 65_535);
        assert!(shape(0, 0, 0, false).grid_x >= 1 && shape(0, 0, 0, true).grid_x >= 1);
    }
}
