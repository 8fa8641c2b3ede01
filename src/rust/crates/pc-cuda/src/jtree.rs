//! Junction-tree propagation on the GPU for a batch of evidence sets: pc-jtree's schedule and
//! arithmetic (`kernels/jtree.cu`), so results equal the CPU engine's to rounding and are
//! identical from run to run (no atomics; every sum runs in one thread in a fixed order).
//!
//! The plan's flat arrays and the potentials go up once; each chunk of rows (sized from free
//! device memory) runs: one `jt_init`, then per tree depth from the deepest one `jt_reduce`
//! (cliques onto their separators; runs longer than `REDUCE_SPLIT` in parts, then `jt_combine`
//! adds the parts in order, as the CPU engine does) and one `jt_absorb` (parents multiply in their children's
//! messages); for marginals per depth from the root one `jt_reduce` (parents onto separators) and
//! one `jt_scatter`, then one `jt_reduce` for every variable's marginal; for the MPE one
//! `jt_decode` (a thread per row). The host normalises with pc-jtree's own code.

use std::time::Instant;

use cudarc::driver::{CudaFunction, CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits};
use pc_core::PcError;
use pc_jtree::engine::{finish_marginals, finish_mpe, Marginals, Mpe};
use pc_jtree::plan::{Projection, REDUCE_SPLIT};
use pc_jtree::{Evidence, Plan};

use crate::gpu::{cuda_err, guard, Clock, Gpu, Result};
use crate::module;

pub const JTREE_SRC: &str = include_str!("kernels/jtree.cu");
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

/// Timings of the last call.
#[derive(Clone, Debug, Default)]
pub struct JtTimings {
    pub compile_s: f64,
    pub target: String,
    pub upload_s: f64,
    pub kernel_s: f64,
    pub transfer_s: f64,
    pub launches: u64,
    pub chunks: usize,
    pub rows_per_chunk: usize,
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
    base: CudaSlice<f64>,
}

/// A compiled tree resident on the GPU.
pub struct CudaJtree<'a> {
    plan: &'a Plan,
    gpu: Gpu,
    f: [CudaFunction; 6],
    d: Dev,
    istart: Vec<u64>,
    static_bytes: usize,
    pub timings: JtTimings,
}

impl<'a> CudaJtree<'a> {
    /// Opens the GPU, compiles the kernels and uploads the plan and the potentials.
    pub fn new(plan: &'a Plan) -> Result<CudaJtree<'a>> {
        guard("setting up the junction tree on the GPU", || {
            let gpu = Gpu::open()?;
            let m = module::module_for(&gpu.ctx, "jtree.cu", JTREE_SRC).map_err(PcError::Cuda)?;
            let get = |n: &str| m.function(n).map_err(PcError::Cuda);
            let f = [get("jt_reduce")?, get("jt_init")?, get("jt_absorb")?, get("jt_scatter")?, get("jt_decode")?, get("jt_combine")?];
            let mut timings = JtTimings { compile_s: m.compile_seconds, target: m.target.clone(), ..Default::default() };
            let fl = flatten(plan)?;
            let static_bytes = 8 * plan.base.len() + 4 * (fl.bpool.len() + fl.opool.len()) + std::mem::size_of::<Proj>() * fl.pj.len();
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
                base: gpu.up(&mut clock, &plan.base, "uploading the potentials")?,
            };
            gpu.stream.synchronize().map_err(cuda_err("uploading the tree"))?;
            timings.upload_s = clock.transfer;
            Ok(CudaJtree { plan, gpu, f, d, static_bytes, timings, istart: fl.istart })
        })
    }

    pub fn device_name(&self) -> &str {
        &self.gpu.info.name
    }

    fn chunk_rows(&self, rows: usize, memory_bytes: Option<u64>) -> Result<usize> {
        let free = self.gpu.free_bytes()? as u64;
        // the MPE's states (n ints per row) fit in the margin left beside the tables
        let budget = crate::memplan::jtree_budget(free, memory_bytes, rows, self.plan.n_vars());
        pc_jtree::engine::chunk_rows(self.plan, rows, budget)
            .map_err(|e| PcError::Cuda(format!("{e} (free GPU memory)")))
    }

    fn cfg(&self, total: u64) -> LaunchConfig {
        let cap = (self.gpu.info.multiprocessors.max(1) as u64) * 32;
        let grid = total.div_ceil(BLOCK as u64).clamp(1, cap) as u32;
        LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    fn reduce(&self, p0: usize, np: usize, b: u64, max: bool, tables: &CudaSlice<f64>, out: &mut CudaSlice<f64>, scratch: &mut CudaSlice<f64>, launches: &mut u64) -> Result<()> {
        if np == 0 {
            return Ok(());
        }
        let items = self.istart[p0 + np] - self.istart[p0];
        let cells: u64 = (p0..p0 + np).map(|i| self.proj(i).base.len() as u64).sum();
        let split_any = items != cells;
        let (p0u, npu, mode, split) = (p0 as u32, np as u32, max as i32, REDUCE_SPLIT);
        let mut lb = self.gpu.stream.launch_builder(&self.f[0]);
        lb.arg(&self.d.pj).arg(&self.d.istart).arg(&p0u).arg(&npu).arg(&items).arg(&b).arg(&mode).arg(&split);
        lb.arg(&self.d.bpool).arg(&self.d.opool).arg(tables).arg(&mut *out).arg(&mut *scratch);
        // SAFETY: argument list as jt_reduce declares it; every index stays inside the plan's
        // arrays; scratch holds the plan's scratch_cells x b values.
        unsafe { lb.launch(self.cfg(items * b)) }.map_err(cuda_err("launching jt_reduce"))?;
        *launches += 1;
        if split_any {
            let mut lb = self.gpu.stream.launch_builder(&self.f[5]);
            lb.arg(&self.d.pj).arg(&self.d.outs).arg(&self.d.istart).arg(&p0u).arg(&npu).arg(&cells).arg(&b).arg(&mode).arg(&split);
            lb.arg(&*scratch).arg(out);
            // SAFETY: as jt_combine declares.
            unsafe { lb.launch(self.cfg(cells * b)) }.map_err(cuda_err("launching jt_combine"))?;
            *launches += 1;
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

    fn cells(&self, c0: usize, c1: usize) -> u64 {
        let cl = &self.plan.cliques;
        cl[c1 - 1].offset + cl[c1 - 1].cells - cl[c0].offset
    }

    /// Init and collect (and for marginals distribute and the variables' projections) of one chunk.
    fn run_chunk(&self, ev: &Evidence, r0: usize, b: usize, max: bool, bufs: &mut Bufs, launches: &mut u64) -> Result<()> {
        let plan = self.plan;
        let n = plan.n_vars();
        let k = plan.cliques.len();
        let bb = b as u64;
        let mut clock = Clock::default();
        let hard = self.gpu.up(&mut clock, &ev.hard[r0 * n..(r0 + b) * n], "uploading evidence")?;
        let soft_col = self.gpu.up(&mut clock, &ev.soft_col, "uploading evidence")?;
        let soft = self.gpu.up(&mut clock, &ev.soft[r0 * ev.soft_width..(r0 + b) * ev.soft_width], "uploading evidence")?;
        let (nu, k32, sw) = (n as u32, k as u32, ev.soft_width as u64);
        {
            let (c0, nc, cells) = (0u32, k as u32, plan.total_cells);
            let mut lb = self.gpu.stream.launch_builder(&self.f[1]);
            lb.arg(&self.d.cl_off).arg(&c0).arg(&nc).arg(&cells).arg(&bb).arg(&self.d.homed_start).arg(&self.d.homed);
            lb.arg(&self.d.base).arg(&hard).arg(&nu).arg(&soft_col).arg(&sw).arg(&soft).arg(&mut bufs.tables);
            // SAFETY: as jt_init declares; hard/soft hold b rows.
            unsafe { lb.launch(self.cfg(cells * bb)) }.map_err(cuda_err("launching jt_init"))?;
            *launches += 1;
        }
        let ds = &plan.depth_start;
        for d in (0..=plan.max_depth()).rev() {
            self.reduce(ds[d], ds[d + 1] - ds[d], bb, max, &bufs.tables, &mut bufs.msg, &mut bufs.scratch, launches)?;
            if d > 0 {
                let (c0, nc) = (ds[d - 1] as u32, (ds[d] - ds[d - 1]) as u32);
                let cells = self.cells(ds[d - 1], ds[d]);
                let mut lb = self.gpu.stream.launch_builder(&self.f[2]);
                lb.arg(&self.d.cl_off).arg(&c0).arg(&nc).arg(&cells).arg(&bb).arg(&self.d.cl_child);
                lb.arg(&self.d.pj).arg(&k32).arg(&self.d.dig).arg(&bufs.msg).arg(&mut bufs.tables);
                // SAFETY: as jt_absorb declares.
                unsafe { lb.launch(self.cfg(cells * bb)) }.map_err(cuda_err("launching jt_absorb"))?;
                *launches += 1;
            }
        }
        if max {
            let mut lb = self.gpu.stream.launch_builder(&self.f[4]);
            lb.arg(&self.d.cl_off).arg(&k32).arg(&bb).arg(&self.d.pj).arg(&self.d.bpool).arg(&self.d.opool).arg(&self.d.dig);
            lb.arg(&self.d.vars_start).arg(&self.d.vars).arg(&nu).arg(&bufs.tables).arg(&mut bufs.states);
            // SAFETY: as jt_decode declares; states holds b x n ints.
            unsafe { lb.launch(self.cfg(bb)) }.map_err(cuda_err("launching jt_decode"))?;
            *launches += 1;
            return Ok(());
        }
        for d in 0..plan.max_depth() {
            self.reduce(k + ds[d + 1], ds[d + 2] - ds[d + 1], bb, false, &bufs.tables, &mut bufs.dmsg, &mut bufs.scratch, launches)?;
            let (c0, nc) = (ds[d + 1] as u32, (ds[d + 2] - ds[d + 1]) as u32);
            let cells = self.cells(ds[d + 1], ds[d + 2]);
            let mut lb = self.gpu.stream.launch_builder(&self.f[3]);
            lb.arg(&self.d.cl_off).arg(&c0).arg(&nc).arg(&cells).arg(&bb).arg(&self.d.pj).arg(&self.d.dig);
            lb.arg(&bufs.msg).arg(&bufs.dmsg).arg(&mut bufs.tables);
            // SAFETY: as jt_scatter declares.
            unsafe { lb.launch(self.cfg(cells * bb)) }.map_err(cuda_err("launching jt_scatter"))?;
            *launches += 1;
        }
        self.reduce(2 * k, n, bb, false, &bufs.tables, &mut bufs.marg, &mut bufs.scratch, launches)
    }

    fn bufs(&self, chunk: usize, max: bool) -> Result<Bufs> {
        let p = self.plan;
        let b = chunk;
        Ok(Bufs {
            tables: self.gpu.alloc(p.total_cells as usize * b, "allocating clique tables")?,
            msg: self.gpu.alloc(p.sep_cells as usize * b, "allocating messages")?,
            dmsg: self.gpu.alloc(if max { 1 } else { p.sep_cells as usize * b }, "allocating messages")?,
            marg: self.gpu.alloc(if max { 1 } else { p.marg_cells as usize * b }, "allocating marginals")?,
            states: self.gpu.alloc(if max { p.n_vars() * b } else { 1 }, "allocating states")?,
            scratch: self.gpu.alloc(p.stats.scratch_cells as usize * b, "allocating partial sums")?,
        })
    }

    fn run(&mut self, ev: &Evidence, max: bool, memory_bytes: Option<u64>, mut take: impl FnMut(&Self, &Bufs, usize, usize, &mut Clock) -> Result<()>) -> Result<()> {
        ev.check(&self.plan.card).map_err(|e| PcError::Cuda(e.to_string()))?;
        let chunk = self.chunk_rows(ev.rows, memory_bytes)?;
        let _ = self.static_bytes;
        guard("propagating on the GPU", || {
            let mut bufs = self.bufs(chunk, max)?;
            let mut clock = Clock::default();
            let mut launches = 0u64;
            let mut chunks = 0;
            let mut r0 = 0;
            while r0 < ev.rows {
                let b = chunk.min(ev.rows - r0);
                let t = Instant::now();
                self.run_chunk(ev, r0, b, max, &mut bufs, &mut launches)?;
                self.gpu.finish_launch(&mut clock, t, "junction-tree propagation")?;
                take(self, &bufs, r0, b, &mut clock)?;
                r0 += b;
                chunks += 1;
            }
            self.timings.kernel_s = clock.kernel;
            self.timings.transfer_s = clock.transfer;
            self.timings.launches = launches;
            self.timings.chunks = chunks;
            self.timings.rows_per_chunk = chunk;
            Ok(())
        })
    }

    /// All marginals and P(evidence) per row (`memory_bytes`: the chunks' budget; None: 85% of free).
    pub fn marginals(&mut self, ev: &Evidence, memory_bytes: Option<u64>) -> Result<Marginals> {
        let plan = self.plan;
        let width = plan.marg_cells as usize;
        let mut out = Marginals { rows: ev.rows, width, values: vec![0.0; ev.rows * width], pe: vec![0.0; ev.rows] };
        self.run(ev, false, memory_bytes, |me, bufs, r0, b, clock| {
            let marg = me.gpu.down(clock, &bufs.marg, plan.marg_cells as usize * b, "downloading marginals")?;
            let roots = me.gpu.down(clock, &bufs.msg, plan.roots.len() * b, "downloading P(evidence)")?;
            finish_marginals(plan, &marg, &roots, b, r0, &mut out);
            Ok(())
        })?;
        Ok(out)
    }

    /// The MPE per row.
    pub fn mpe(&mut self, ev: &Evidence, memory_bytes: Option<u64>) -> Result<Mpe> {
        let plan = self.plan;
        let n = plan.n_vars();
        let mut out = Mpe { rows: ev.rows, states: vec![-1; ev.rows * n], prob: vec![0.0; ev.rows] };
        self.run(ev, true, memory_bytes, |me, bufs, r0, b, clock| {
            let st = me.gpu.down(clock, &bufs.states, n * b, "downloading the MPE")?;
            out.states[r0 * n..(r0 + b) * n].copy_from_slice(&st);
            let roots = me.gpu.down(clock, &bufs.msg, plan.roots.len() * b, "downloading the MPE's probability")?;
            finish_mpe(plan, &roots, b, r0, &mut out);
            Ok(())
        })?;
        Ok(out)
    }
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

    #[test]
    fn kernel_source_declares_every_kernel_and_the_projection_layout() {
        for k in ["jt_reduce", "jt_init", "jt_absorb", "jt_scatter", "jt_decode", "jt_combine"] {
            assert!(JTREE_SRC.contains(&format!("__global__ void {k}(")), "{k}");
        }
        assert!(JTREE_SRC.contains("u64 table, out, base, off, len;\n    u32 nbase, off_ident, dig, ndig;"));
        assert_eq!(std::mem::size_of::<Proj>(), 56);
    }
}
