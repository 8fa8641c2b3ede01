//! Propagation on the CPU, level by level as the GPU does it: the arithmetic of every value
//! (the order of each sum, product and comparison) is the one the CUDA kernels repeat, so the two
//! agree to rounding and are identical from run to run. A chunk of B evidence sets propagates
//! together (value (cell, row) at cell * B + row); the work of one level is spread over a rayon
//! pool built for the call.
//!
//! Hugin architecture: collect (for each depth from the deepest: every clique of that depth
//! marginalises onto its separator, then every parent multiplies in its children's messages, in
//! child order), distribute (for each depth from the root: every child receives its parent's
//! marginal onto their separator divided by the message it sent, 0/0 = 0), then each variable's
//! marginal from its home clique. A root marginalised onto no variable gives its tree's
//! normalising constant; their product is P(evidence). Max-product replaces the sums by maxima,
//! stops after collect and decodes the MPE from the roots down.

use rayon::prelude::*;

use crate::error::{try_filled, JtError, Result};
use crate::evidence::Evidence;
pub use crate::marginals::{MargSink, Marginals, NO_ANSWER};
use crate::plan::{Plan, Projection, REDUCE_SPLIT};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Sum,
    Max,
}

/// The most probable explanation per row (rows x n_vars states, -1 where the evidence is
/// impossible) and P(mpe, evidence).
#[derive(Clone, Debug)]
pub struct Mpe {
    pub rows: usize,
    pub states: Vec<i32>,
    pub prob: Vec<f64>,
}

impl Mpe {
    /// The answers of consecutive blocks of one batch, as the batch's (the blocks in order).
    pub fn concat(parts: Vec<Mpe>) -> Option<Mpe> {
        let mut it = parts.into_iter();
        let mut all = it.next()?;
        for m in it {
            all.rows += m.rows;
            all.states.extend(m.states);
            all.prob.extend(m.prob);
        }
        Some(all)
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Threads of the pool built for the call (0: all cores).
    pub threads: usize,
    /// Bytes the tables of one chunk of evidence sets may take.
    pub memory_bytes: u64,
}

impl Default for Options {
    fn default() -> Self {
        Options { threads: 0, memory_bytes: 4 << 30 }
    }
}

pub fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| JtError::Other(format!("could not start {threads} threads: {e}")))
}

/// Rows per chunk so that a chunk's tables fit `memory_bytes`; an error when not even one does.
pub fn chunk_rows(plan: &Plan, rows: usize, memory_bytes: u64) -> Result<usize> {
    let per = plan.stats.bytes_per_evidence_set.max(1);
    if per > memory_bytes {
        return Err(JtError::TooLarge(format!(
            "one evidence set needs {:.2} GB of tables, the memory limit is {:.2} GB",
            per as f64 / 1e9,
            memory_bytes as f64 / 1e9
        )));
    }
    Ok(((memory_bytes / per) as usize).clamp(1, rows.max(1)))
}

/// Index of the last start <= g (starts ascending, starts[0] <= g).
#[inline]
pub fn find(starts: &[u64], g: u64) -> usize {
    starts.partition_point(|&s| s <= g) - 1
}

/// `acc` (B rows) combined with `x`: a sum, or a maximum (values are non-negative).
#[inline]
fn fold(acc: &mut [f64], x: &[f64], mode: Mode) {
    match mode {
        Mode::Sum => acc.iter_mut().zip(x).for_each(|(a, x)| *a += *x),
        Mode::Max => acc.iter_mut().zip(x).for_each(|(a, x)| {
            if *x > *a {
                *a = *x
            }
        }),
    }
}

/// Configurations t0..t1 of one subset cell of a chunk of one row (clique cells base + off[t]),
/// summed (or maxed) in t order from 0.
#[inline]
fn run_one(tables: &[f64], base: u64, p: &Projection, t0: usize, t1: usize, mode: Mode) -> f64 {
    let cells = &tables[base as usize..];
    let mut a = 0.0;
    let mut take = |x: f64| match mode {
        Mode::Sum => a += x,
        Mode::Max => {
            if x > a {
                a = x
            }
        }
    };
    if p.off.is_empty() {
        cells[t0..t1].iter().for_each(|&x| take(x));
    } else {
        p.off[t0..t1].iter().for_each(|&o| take(cells[o as usize]));
    }
    a
}

/// Marginalises the clique tables onto `ps` (outputs contiguous from ps[0].out). A run longer
/// than `REDUCE_SPLIT` is summed in parts of that length, then the parts in order (as the GPU
/// gives each part its own thread).
fn reduce(ps: &[Projection], tables: &[f64], out: &mut [f64], b: usize, mode: Mode) {
    if ps.is_empty() {
        return;
    }
    let lo = ps[0].out;
    let starts: Vec<u64> = ps.iter().map(|p| p.out - lo).collect();
    let end = ps.last().map(|p| p.out + p.base.len() as u64).unwrap();
    out[lo as usize * b..end as usize * b].par_chunks_mut(b).with_min_len(64.max(1024 / b)).enumerate().for_each(|(g, acc)| {
        let p = &ps[find(&starts, g as u64)];
        let j = g - (p.out - lo) as usize;
        let base = p.table + p.base[j] as u64;
        let run = |t0: u64, t1: u64, acc: &mut [f64]| {
            if b == 1 {
                // one row (the large networks): the same sum or maximum, in a register
                acc[0] = run_one(tables, base, p, t0 as usize, t1 as usize, mode);
                return;
            }
            acc.iter_mut().for_each(|a| *a = 0.0);
            for t in t0..t1 {
                fold(acc, &tables[(base + p.off_at(t as usize)) as usize * b..][..b], mode);
            }
        };
        let parts = p.parts();
        if parts == 1 {
            run(0, p.len, acc);
            return;
        }
        acc.iter_mut().for_each(|a| *a = 0.0);
        let mut part = vec![0.0; b];
        for k in 0..parts {
            run(k * REDUCE_SPLIT, ((k + 1) * REDUCE_SPLIT).min(p.len), &mut part);
            fold(acc, &part, mode);
        }
    });
}

/// A clique's cell as its variables' states (by the clique's variable order), carried from one
/// cell to the next by additions, and the separator cells of some of the clique's projections
/// (`seps`: out + subset cell) carried along by one addition each: the engine's index work
/// without a division or a sum over digits per cell.
struct Odometer<'a> {
    states: Vec<u32>,
    seps: Vec<u64>,
    radix: &'a Radix,
}

/// A clique's digits: its variables' positions by increasing stride (the first varies fastest),
/// each position's cardinality, and per followed projection the change of its separator cell
/// when a carry stops at digit k (`steps[q][k]`, k = 0..=digits: the k digits below went from
/// their last state back to 0, digit k went up by one).
struct Radix {
    order: Vec<usize>,
    card: Vec<u32>,
    steps: Vec<Vec<i64>>,
}

impl Radix {
    fn of(plan: &Plan, c: usize, seps: &[Projection]) -> Radix {
        let cl = &plan.cliques[c];
        let mut order: Vec<usize> = (0..cl.vars.len()).collect();
        order.sort_by_key(|&i| cl.strides[i]);
        let card: Vec<u32> = cl.vars.iter().map(|&v| plan.card[v] as u32).collect();
        let steps = seps
            .iter()
            .map(|p| {
                // each clique position's stride in the subset (0: not in it)
                let mut ss = vec![0i64; cl.vars.len()];
                for (&i, &(_, _, _, s)) in p.pos.iter().zip(&p.digits) {
                    ss[i as usize] = s as i64;
                }
                let mut below = 0i64;
                let mut st = Vec::with_capacity(order.len() + 1);
                for &i in &order {
                    st.push(ss[i] - below);
                    below += (card[i] as i64 - 1) * ss[i];
                }
                st.push(-below);
                st
            })
            .collect();
        Radix { order, card, steps }
    }
}

impl<'a> Odometer<'a> {
    fn at(plan: &Plan, c: usize, radix: &'a Radix, seps: &[Projection], r: u64) -> Odometer<'a> {
        let states: Vec<u32> = plan.cliques[c].strides.iter().zip(&radix.card).map(|(&st, &cd)| ((r / st) % cd as u64) as u32).collect();
        let seps = seps.iter().map(|p| p.out + p.subset_cell_at(&states)).collect();
        Odometer { states, seps, radix }
    }

    #[inline]
    fn next(&mut self) {
        let mut k = self.radix.order.len();
        for (at, &i) in self.radix.order.iter().enumerate() {
            self.states[i] += 1;
            if self.states[i] < self.radix.card[i] {
                k = at;
                break;
            }
            self.states[i] = 0;
        }
        for (s, st) in self.seps.iter_mut().zip(&self.radix.steps) {
            *s = s.wrapping_add_signed(st[k]);
        }
    }
}

/// Cells of one task of [`for_cells`]: enough that a block's start (its states found by division)
/// is a small part of it.
const CELL_BLOCK: usize = 256;

/// Cliques c0..c1 (contiguous tables): `f(clique, cell in clique, the cell's states by the clique's
/// variable order, the cell's separator cells in the clique's projections `seps(clique)`, values
/// of the B rows)`, in blocks of consecutive cells.
fn for_cells<'p>(
    plan: &Plan,
    c0: usize,
    c1: usize,
    tables: &mut [f64],
    b: usize,
    seps: impl Fn(usize) -> &'p [Projection] + Sync,
    f: impl Fn(usize, u64, &[u32], &[u64], &mut [f64]) + Sync,
) {
    if c0 >= c1 {
        return;
    }
    let lo = plan.cliques[c0].offset;
    let hi = plan.cliques[c1 - 1].offset + plan.cliques[c1 - 1].cells;
    let starts: Vec<u64> = plan.cliques[c0..c1].iter().map(|c| c.offset - lo).collect();
    let radix: Vec<Radix> = (c0..c1).map(|c| Radix::of(plan, c, seps(c))).collect();
    let per = (1024 / b.max(1)).clamp(1, CELL_BLOCK);
    tables[lo as usize * b..hi as usize * b].par_chunks_mut(b * per).with_min_len(4).enumerate().for_each(|(k, block)| {
        let g0 = (k * per) as u64;
        let mut i = find(&starts, g0);
        let mut r = g0 - starts[i];
        let mut od = Odometer::at(plan, c0 + i, &radix[i], seps(c0 + i), r);
        for v in block.chunks_mut(b) {
            if r == plan.cliques[c0 + i].cells {
                i += 1;
                r = 0;
                od = Odometer::at(plan, c0 + i, &radix[i], seps(c0 + i), 0);
            }
            f(c0 + i, r, &od.states, &od.seps, v);
            r += 1;
            od.next();
        }
    });
}

/// The potentials times the evidence of rows r0..r0+b.
fn init(plan: &Plan, ev: &Evidence, r0: usize, tables: &mut [f64], b: usize) {
    let n = plan.n_vars();
    for_cells(plan, 0, plan.cliques.len(), tables, b, |_| &[], |c, r, states, _, v| {
        let cl = &plan.cliques[c];
        let x0 = plan.base[(cl.offset + r) as usize];
        for (k, x) in v.iter_mut().enumerate() {
            let row = r0 + k;
            let mut y = x0;
            for (&(var, _, _), &at) in cl.homed.iter().zip(&cl.homed_pos) {
                let s = states[at as usize] as i32;
                let h = ev.hard[row * n + var as usize];
                if h >= 0 && h != s {
                    y = 0.0;
                }
                let col = ev.soft_col[var as usize];
                if col >= 0 {
                    y *= ev.soft[row * ev.soft_width + col as usize + s as usize];
                }
            }
            *x = y;
        }
    });
}

/// Every clique of depth d - 1 multiplies in its children's messages.
fn absorb(plan: &Plan, d: usize, tables: &mut [f64], msg: &[f64], b: usize) {
    let (c0, c1) = (plan.depth_start[d - 1], plan.depth_start[d]);
    let kids = |p: usize| &plan.down[plan.cliques[p].first_child..plan.cliques[p].first_child + plan.cliques[p].n_child];
    for_cells(plan, c0, c1, tables, b, kids, |_, _, _, seps, v| {
        for &j in seps {
            let m = &msg[j as usize * b..][..b];
            v.iter_mut().zip(m).for_each(|(x, y)| *x *= *y);
        }
    });
}

/// Every clique of depth d + 1 takes its parent's separator marginal over its own message.
fn scatter(plan: &Plan, d: usize, tables: &mut [f64], msg: &[f64], dmsg: &[f64], b: usize) {
    let (c0, c1) = (plan.depth_start[d + 1], plan.depth_start[d + 2]);
    for_cells(plan, c0, c1, tables, b, |c| &plan.up[c..c + 1], |_, _, _, seps, v| {
        let k = seps[0] as usize * b;
        for (i, x) in v.iter_mut().enumerate() {
            let old = msg[k + i];
            *x *= if old == 0.0 { 0.0 } else { dmsg[k + i] / old };
        }
    });
}

/// A chunk's tables, messages and marginals, made for a batch's first (largest) chunk and used
/// again by the next ones: every value a chunk reads it has written before (init writes every
/// table cell, collect every message up, distribute the messages down that scatter reads), and
/// fresh memory costs a page fault per 4 KB.
struct Work {
    tables: Vec<f64>,
    msg: Vec<f64>,
    dmsg: Vec<f64>,
    marg: Vec<f64>,
}

impl Work {
    fn new(plan: &Plan, b: usize, mode: Mode) -> Result<Work> {
        let sum = mode == Mode::Sum;
        let or_none = |len: usize, what: &str| if sum { try_filled(len, 0.0, what) } else { Ok(Vec::new()) };
        Ok(Work {
            tables: try_filled(plan.total_cells as usize * b, 0.0, "the clique tables of a chunk")?,
            msg: try_filled(plan.sep_cells as usize * b, 0.0, "the separator messages")?,
            dmsg: or_none(plan.sep_cells as usize * b, "the separator messages")?,
            marg: or_none(plan.marg_cells as usize * b, "the marginals")?,
        })
    }

    /// The buffers of a batch's chunk of `b` rows (made on its first chunk).
    fn of<'w>(work: &'w mut Option<Work>, plan: &Plan, b: usize, mode: Mode) -> Result<&'w mut Work> {
        if work.is_none() {
            *work = Some(Work::new(plan, b, mode)?);
        }
        Ok(work.as_mut().expect("made above"))
    }
}

/// The tree-depth schedule of one chunk of `b` rows in `w` (the first cells x b values of each
/// buffer): init, collect, and in `Mode::Sum` distribute and the variables' marginals.
fn propagate(plan: &Plan, ev: &Evidence, r0: usize, b: usize, mode: Mode, w: &mut Work) {
    let tables = &mut w.tables[..plan.total_cells as usize * b];
    let msg = &mut w.msg[..plan.sep_cells as usize * b];
    init(plan, ev, r0, tables, b);
    for d in (0..=plan.max_depth()).rev() {
        reduce(&plan.up[plan.depth_start[d]..plan.depth_start[d + 1]], tables, msg, b, mode);
        if d > 0 {
            absorb(plan, d, tables, msg, b);
        }
    }
    if mode == Mode::Max {
        return;
    }
    let dmsg = &mut w.dmsg[..plan.sep_cells as usize * b];
    for d in 0..plan.max_depth() {
        reduce(&plan.down[plan.depth_start[d + 1]..plan.depth_start[d + 2]], tables, dmsg, b, mode);
        scatter(plan, d, tables, msg, dmsg, b);
    }
    reduce(&plan.marg, tables, &mut w.marg[..plan.marg_cells as usize * b], b, mode);
}

/// P(evidence) (or the MPE's probability) of row k of a chunk: the product of the roots' values.
pub fn root_product(plan: &Plan, msg: &[f64], b: usize, k: usize) -> f64 {
    plan.roots.iter().fold(1.0, |acc, &r| acc * msg[plan.up[r].out as usize * b + k])
}

/// The roots' cells of a chunk's separator buffer (roots x b).
pub fn roots_of(plan: &Plan, msg: &[f64], b: usize) -> Vec<f64> {
    let mut v = Vec::with_capacity(plan.roots.len() * b);
    for &r in &plan.roots {
        v.extend_from_slice(&msg[plan.up[r].out as usize * b..][..b]);
    }
    v
}

/// Decodes row k of a chunk after max-collect: cliques in order (parents first), in each the
/// largest cell consistent with the variables already fixed, ties to the lowest cell.
pub fn decode_row(plan: &Plan, tables: &[f64], b: usize, k: usize, x: &mut [i32]) {
    for (c, cl) in plan.cliques.iter().enumerate() {
        let p = &plan.up[c];
        let j: u64 = p.digits.iter().map(|&(v, _, _, ss)| x[v as usize] as u64 * ss as u64).sum();
        let mut best = (-1.0f64, 0u64);
        for t in 0..p.len as usize {
            let r = p.base[j as usize] as u64 + p.off_at(t);
            let val = tables[(cl.offset + r) as usize * b + k];
            if val > best.0 {
                best = (val, r);
            }
        }
        for (i, &v) in cl.vars.iter().enumerate() {
            x[v] = ((best.1 / cl.strides[i]) % plan.card[v] as u64) as i32;
        }
    }
}

/// Told (evidence sets done, total) on the calling thread before the first chunk and after each
/// one; `false` stops the batch with [`JtError::Interrupted`] (R's progress display and Ctrl-C).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize) -> bool;

/// Table bytes of one chunk at most, whatever the memory limit, so that a long batch reports
/// progress (and can stop) every fraction of a second: larger chunks gained nothing on the CPU.
const CHUNK_BYTES: u64 = 256 << 20;

/// `each(r0, b)` for the batch's chunks in order, each on `pool` (the call's: rayon's global pool
/// has no threads in a forked child), with `progress` told between them on the calling thread.
fn by_chunks(plan: &Plan, ev: &Evidence, opts: Options, pool: &rayon::ThreadPool, progress: Progress, mut each: impl FnMut(usize, usize) -> Result<()> + Send) -> Result<()> {
    ev.check(&plan.card)?;
    let chunk = chunk_rows(plan, ev.rows, opts.memory_bytes)?.min((CHUNK_BYTES / plan.stats.bytes_per_evidence_set.max(1)).max(1) as usize);
    let mut r0 = 0;
    loop {
        if !progress(r0, ev.rows) {
            return Err(JtError::Interrupted);
        }
        if r0 == ev.rows {
            return Ok(());
        }
        let b = chunk.min(ev.rows - r0);
        pool.install(|| each(r0, b))?;
        r0 += b;
    }
}

/// All marginals and P(evidence) for every row of `ev`, on the CPU.
pub fn marginals_cpu(plan: &Plan, ev: &Evidence, opts: Options) -> Result<Marginals> {
    marginals_cpu_watched(plan, ev, opts, &mut |_, _| true)
}

/// [`marginals_cpu`], telling `progress` between chunks.
pub fn marginals_cpu_watched(plan: &Plan, ev: &Evidence, opts: Options, progress: Progress) -> Result<Marginals> {
    let pool = pool(opts.threads)?;
    let mut out = pool.install(|| Marginals::zeroed(plan, ev.rows))?;
    marginals_on(plan, ev, opts, &pool, progress, &out.sink(plan))?;
    Ok(out)
}

/// [`marginals_cpu_watched`] into the matrices of `sink` (its rows from its first on).
pub fn marginals_cpu_into(plan: &Plan, ev: &Evidence, opts: Options, progress: Progress, sink: &MargSink) -> Result<()> {
    marginals_on(plan, ev, opts, &pool(opts.threads)?, progress, sink)
}

fn marginals_on(plan: &Plan, ev: &Evidence, opts: Options, pool: &rayon::ThreadPool, progress: Progress, sink: &MargSink) -> Result<()> {
    let mut work = None;
    by_chunks(plan, ev, opts, pool, progress, |r0, b| {
        let w = Work::of(&mut work, plan, b, Mode::Sum)?;
        propagate(plan, ev, r0, b, Mode::Sum, w);
        sink.write_chunk(plan, &w.marg, &roots_of(plan, &w.msg, b), b, r0);
        Ok(())
    })
}

/// The most probable explanation of every row of `ev`, on the CPU.
pub fn mpe_cpu(plan: &Plan, ev: &Evidence, opts: Options) -> Result<Mpe> {
    mpe_cpu_watched(plan, ev, opts, &mut |_, _| true)
}

/// [`mpe_cpu`], telling `progress` between chunks.
pub fn mpe_cpu_watched(plan: &Plan, ev: &Evidence, opts: Options, progress: Progress) -> Result<Mpe> {
    let n = plan.n_vars();
    let mut out = Mpe { rows: ev.rows, states: vec![-1; ev.rows * n], prob: vec![0.0; ev.rows] };
    let pool = pool(opts.threads)?;
    let mut work = None;
    by_chunks(plan, ev, opts, &pool, progress, |r0, b| {
        let w = Work::of(&mut work, plan, b, Mode::Max)?;
        propagate(plan, ev, r0, b, Mode::Max, w);
        out.states[r0 * n..(r0 + b) * n].par_chunks_mut(n).enumerate().for_each(|(k, x)| decode_row(plan, &w.tables, b, k, x));
        finish_mpe(plan, &roots_of(plan, &w.msg, b), b, r0, &mut out);
        Ok(())
    })?;
    Ok(out)
}

/// The MPE's probability per row of a chunk; rows with impossible evidence lose their states.
pub fn finish_mpe(plan: &Plan, msg_roots: &[f64], b: usize, r0: usize, out: &mut Mpe) {
    let n = plan.n_vars();
    for k in 0..b {
        let p = (0..plan.roots.len()).fold(1.0, |acc, i| acc * msg_roots[i * b + k]);
        out.prob[r0 + k] = p;
        if p <= 0.0 {
            out.states[(r0 + k) * n..(r0 + k + 1) * n].iter_mut().for_each(|s| *s = -1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::bundled_plan;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn the_odometer_carries_each_cells_separator_cells() {
        for name in ["alarm", "andes", "pigs"] {
            let plan = bundled_plan(name);
            let k = plan.cliques.len();
            for b in [1, 3] {
                let mut tables = vec![0.0; plan.total_cells as usize * b];
                let (cells, wrong) = (AtomicUsize::new(0), AtomicUsize::new(0));
                let kids = |c: usize| &plan.down[plan.cliques[c].first_child..plan.cliques[c].first_child + plan.cliques[c].n_child];
                for_cells(&plan, 0, k, &mut tables, b, kids, |c, r, states, seps, _| {
                    let want: Vec<u64> = kids(c).iter().map(|p| p.out + p.subset_cell(r)).collect();
                    let cl = &plan.cliques[c];
                    let mine = states.len() == cl.vars.len() && cl.vars.iter().enumerate().all(|(i, &v)| (r / cl.strides[i]) % plan.card[v] as u64 == states[i] as u64);
                    wrong.fetch_add((seps != want.as_slice() || !mine) as usize, Ordering::Relaxed);
                    cells.fetch_add(1, Ordering::Relaxed);
                });
                for_cells(&plan, 0, k, &mut tables, b, |c| &plan.up[c..c + 1], |c, r, _, seps, _| {
                    let p = &plan.up[c];
                    wrong.fetch_add((seps != [p.out + p.subset_cell(r)]) as usize, Ordering::Relaxed);
                });
                assert_eq!(cells.into_inner() as u64, plan.total_cells, "{name}");
                assert_eq!(wrong.into_inner(), 0, "{name}, {b} rows");
            }
        }
    }
}
