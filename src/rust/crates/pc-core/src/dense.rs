//! Levels 0 and 1 run whole by a backend that keeps the graph itself.
//!
//! Level 0 tests every pair and level 1 every pair against every neighbour: as per-edge plans
//! (`plan.rs`) they took 56 bytes per pair on the host (11 GB at p = 20000) and most of a GPU
//! run's time. A backend that implements [`DenseLevels`] gets the start graph once, runs these
//! levels over its own copy (the GPU: a bit matrix and compacted neighbour lists on the device),
//! applies pcalg's rules to every pair itself, and hands back only the level's counts and the
//! level-1 separating sets; the graph, pMax and level 0's empty sets come back once, at the end.
//!
//! Both of pcalg's orders run this way. "stable" (R's loop) tests both directions at level 0 and
//! raises pMax[i, j] and pMax[j, i]; "stable.fast" (the C++ loop) tests each pair once at level 0
//! with its own rule ([`level0_fast`]), lists at level 1 only j's neighbours that are not
//! adjacent to i on side 1 (the common ones were tested from side 0), writes pMax[i, j] (i < j)
//! only, stores every sepset at [[larger]][[smaller]], and reports how many edges qualified
//! (it stops when none does).
//!
//! The rules per pair are the functions below ([`level0_pair`], [`level0_fast`],
//! [`Level1Walk`]); the CUDA kernels repeat them, and [`DenseCpu`] is their CPU twin, which the
//! level-loop tests check against literal transcriptions of pcalg.

use rayon::prelude::*;

use crate::backend::{run_watched, Control, Watch};
use crate::citest::CiTest;
use crate::error::{PcError, Result};
use crate::graph::{Adjacency, BitMatrix};
use crate::multi;
use crate::par::DisjointSlice;
use crate::plan::{decides, na_map, Order, Rows};

/// What one dense level did.
#[derive(Clone, Debug, Default)]
pub struct DenseLevelReport {
    /// Tests pcalg runs at this level (its `n.edgetests[level + 1]`).
    pub tests: u64,
    pub removed: usize,
    /// pcalg R's "not done": some side it processed had more than `level` neighbours.
    pub not_done: bool,
    /// Level 1's separating sets, each of one variable: (x, y, k) for `sepset[[x]][[y]] = k`
    /// (0-based), in any order; level 0's are the bits of `sep0`. Flat triples, not [`crate::skeleton::Sepset`]s
    /// with a vector each: level 1 removed 2e8 edges at p = 55,572, n = 3189.
    pub singles: Vec<[u32; 3]>,
    /// Edges that qualified for the level (stable.fast runs a level only when some edge does).
    pub qualifying: u64,
    /// A deeper level's separating sets (stable.fast, level >= 2): `level + 2` numbers each, x,
    /// y and the set in its side list's order, for `sepset[[x]][[y]]` (0-based), in any order.
    pub sets: Vec<u32>,
    /// A deeper level's raises of pMax, (cell, value): (column-major cell, NA-mapped p), applied
    /// as maxima once pMax is back on the host. Deeper levels never write pMax themselves, so
    /// that its copy may run beside them ([`DenseLevels::dense_pmax_now`]).
    pub raises: Vec<(usize, f64)>,
    /// The backend did not run this level (an edge's tests too many for its way of running
    /// them): the loop ends the dense levels and plans this one.
    pub declined: bool,
}

/// The copy of a dense backend's pMax into the loop's p x p buffer, run on another thread.
pub type PmaxCopy = Box<dyn FnOnce(&mut [f64]) -> Result<()> + Send>;

/// A backend that runs levels 0 and 1 on its own copy of the graph.
pub trait DenseLevels {
    /// Whether this backend runs the dense levels in `order` (else the loop plans them).
    fn dense_order_ok(&self, order: Order) -> bool {
        order == Order::Stable
    }
    /// Whether this backend may run level `level` >= 2 of `order` on its own graph too (it may
    /// still decline it, [`DenseLevelReport::declined`]); levels 0 and 1 run where
    /// [`DenseLevels::dense_order_ok`] says.
    fn dense_level_ok(&self, _order: Order, level: usize) -> bool {
        level <= 1
    }
    /// The engine that computes the levels, by kind and model only (no thread count, no device
    /// ordinal): ranks of a search run the dense levels each on its own only where every rank
    /// names the same engine, which then rounds every p-value alike.
    fn dense_kind(&self) -> String;
    /// Takes the order, the start graph and the fixed edges (never tested) for a run.
    fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<()>;
    /// Runs level 0 or 1 with pcalg's rules. pMax and level 0's sepset bits may be written into
    /// `pmax` / `sep0` as they are found or kept until `dense_end`.
    fn dense_level(&mut self, level: usize, pmax: &mut [f64], sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport>;
    /// Hands back the graph after the dense levels and writes what was kept: all of pMax (p x p,
    /// column-major) and the level-0 sepset bits.
    fn dense_end(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<()>;
    /// [`DenseLevels::dense_end`], with pMax's copy handed back as a job rather than done: the
    /// graph and level 0's bits are written now, and the loop runs the job on a thread of its
    /// own while the next levels run (a GPU's pMax is 3.2 GB at p = 20000), keeping their raises
    /// of pMax cells until it is done. `None`: pMax was written, as by `dense_end`.
    fn dense_end_deferred(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> Result<Option<PmaxCopy>> {
        self.dense_end(graph, pmax, sep0).map(|()| None)
    }
    /// pMax as levels 0 and 1 left it, handed back as a job before the deeper levels run (which
    /// report raises instead of writing it): the loop runs the job on a thread of its own beside
    /// them, and `dense_end` then gets an empty `pmax` and writes none. `None`: pMax comes back
    /// at `dense_end`, as without deeper levels.
    fn dense_pmax_now(&mut self) -> Result<Option<PmaxCopy>> {
        Ok(None)
    }
    /// `dense_end` writes every cell of pMax (a GPU's copy), so the loop need not fill it first.
    /// Such a backend writes pMax nowhere else: its `dense_level` may get an empty `pmax` while
    /// the loop faults the buffer's pages in.
    fn writes_whole_pmax(&self) -> bool {
        false
    }
}

/// The outcome of one pair at level 0 (both sides exist at level 0).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairOutcome {
    /// The side that removed the pair: 0 (x = i) or 1 (x = j).
    pub removed_by: Option<u8>,
    pub tests: u64,
    /// What pMax[i, j] and pMax[j, i] are raised to (NA-mapped, never NaN).
    pub level_p: f64,
    pub not_done: bool,
}

/// Level 0 of pair i < j: `p0` = test(i, j), `p1` = test(j, i) (the same value when C is
/// symmetric; only read when side 0 keeps the edge); `deg_*` are the snapshot degrees.
#[inline]
pub fn level0_pair(p0: f64, p1: impl FnOnce() -> f64, deg_i: usize, deg_j: usize, alpha: f64, na_value: f64) -> PairOutcome {
    let m0 = na_map(p0, na_value);
    if m0 >= alpha {
        return PairOutcome { removed_by: Some(0), tests: 1, level_p: m0, not_done: deg_i > 1 };
    }
    let m1 = na_map(p1(), na_value);
    let not_done = deg_i > 1 || deg_j > 1;
    PairOutcome { removed_by: (m1 >= alpha).then_some(1), tests: 2, level_p: m0.max(m1), not_done }
}

/// stable.fast's level 0 of a pair i < j, tested once (x = i) with p-value `p`: (removed, with a
/// sepset). pcalg's C++ keeps the edge only when p < alpha, so a NaN p removes it whatever
/// NAdelete says, and then leaves no sepset; pMax[i, j] takes the raw p either way.
#[inline]
pub fn level0_fast(p: f64, alpha: f64) -> (bool, bool) {
    let removed = !(p < alpha);
    (removed, removed && !p.is_nan())
}

/// One edge's canonical sequence at level 1 (S = {k}, k running over row(x) \ {y}), fed test by
/// test; the GPU folds in failures past the first success as well, which changes nothing (they
/// lie below alpha <= the success's p).
#[derive(Clone, Debug)]
pub struct Level1Walk {
    pub tests: u64,
    pub max_fail: f64,
    /// (side, rank, raw p) of the first success.
    pub best: Option<(u8, u64, f64)>,
}

impl Level1Walk {
    pub fn new() -> Self {
        Level1Walk { tests: 0, max_fail: f64::NEG_INFINITY, best: None }
    }

    /// Records test `rank` of `side` with p-value `p`; true when it removes the edge.
    #[inline]
    pub fn push(&mut self, side: u8, rank: u64, p: f64, alpha: f64, na_value: f64) -> bool {
        self.tests += 1;
        let d = decides(p, alpha, na_value, &mut self.max_fail);
        if d {
            self.best = Some((side, rank, p));
        }
        d
    }

    /// What pMax is raised to.
    pub fn level_p(&self, na_value: f64) -> f64 {
        match self.best {
            Some((_, _, p)) => self.max_fail.max(na_map(p, na_value)),
            None => self.max_fail,
        }
    }

    /// pcalg R's "not done" for this edge: side lengths are deg - 1.
    pub fn not_done(&self, deg_i: usize, deg_j: usize) -> bool {
        deg_i > 2 || (!matches!(self.best, Some((0, _, _))) && deg_j > 2)
    }
}

impl Default for Level1Walk {
    fn default() -> Self {
        Self::new()
    }
}

/// Raises pMax[i, j] and pMax[j, i] to `v` (pcalg's `if (pMax[x, y] < pval)`).
///
/// # Safety
/// No other thread may touch the cells (i, j) and (j, i) meanwhile.
#[inline]
unsafe fn raise(pmax: &DisjointSlice<f64>, p: usize, i: usize, j: usize, v: f64) {
    for k in [i + j * p, j + i * p] {
        if pmax.get(k) < v {
            pmax.set(k, v);
        }
    }
}

/// The CPU twin of a dense GPU backend: the same rules per pair, on a rayon pool.
pub struct DenseCpu<'a, T> {
    pool: rayon::ThreadPool,
    st: CpuState<'a, T>,
    /// Simulated devices: each level split and merged as over that many GPUs (`multi.rs`).
    devices: usize,
    /// stable.fast's levels >= 2 run here too, as one GPU runs them (`with_deep_levels`), up to
    /// this one; deeper ones decline, as a GPU's may.
    deep: Option<usize>,
}

struct CpuState<'a, T> {
    test: &'a T,
    graph: Adjacency,
    fixed: Adjacency,
    order: Order,
    alpha: f64,
    na_value: f64,
}

impl<'a, T: CiTest + Sync> DenseCpu<'a, T> {
    /// `threads == 0` uses every core.
    pub fn new(test: &'a T, threads: usize) -> Result<Self> {
        let pool = crate::threads::call_pool(threads, "dense")?;
        Ok(DenseCpu { pool, st: CpuState { test, graph: Adjacency::empty(0), fixed: Adjacency::empty(0), order: Order::Stable, alpha: 0.0, na_value: 1.0 }, devices: 1, deep: None })
    }

    /// The twin of one GPU running stable.fast's levels >= 2 on its graph too
    /// ([`CpuState::level_deep`]), on one device only.
    pub fn with_deep_levels(self) -> Self {
        self.with_deep_levels_up_to(usize::MAX)
    }

    /// [`DenseCpu::with_deep_levels`] declining every level past `last` (which then runs planned).
    pub fn with_deep_levels_up_to(mut self, last: usize) -> Self {
        self.deep = Some(last);
        self
    }

    /// The twin of the multi-GPU dense levels: every level runs as `devices` shares of the same
    /// snapshot (level 0 by [`crate::multi::row_ranges`], level 1 by
    /// [`crate::multi::even_ranges`] of its edges), each on its own copy of the graph, pMax and
    /// the level-0 bits, merged as the GPUs merge them.
    pub fn with_devices(test: &'a T, threads: usize, devices: usize) -> Result<Self> {
        let mut d = Self::new(test, threads)?;
        d.devices = devices.max(1);
        Ok(d)
    }
}

impl<T: CiTest + Sync> CpuState<'_, T> {
    fn level0(&mut self, pmax: &mut [f64], sep0: &mut BitMatrix, ctl: &Control, rows: std::ops::Range<usize>) -> Result<DenseLevelReport> {
        let p = self.graph.p();
        let snap = self.graph.clone();
        let (test, fixed, alpha, na, fast) = (self.test, &self.fixed, self.alpha, self.na_value, self.order == Order::StableFast);
        let removal = self.graph.concurrent_removal();
        let bits = sep0.concurrent();
        let pm = DisjointSlice::new(pmax);
        // every pair asks for both ends' degrees: counted once here, not once a pair (a pass over
        // the row's words each time was a third of level 0's time at p = 1643 on one thread)
        let degree: Vec<usize> = if fast { Vec::new() } else { (0..p).into_par_iter().map(|i| snap.degree(i)).collect() };
        let rows = rows.into_par_iter().map_init(T::Scratch::default, |sc, i| -> Result<(u64, usize, bool)> {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let (mut tests, mut removed, mut not_done) = (0u64, 0usize, false);
            for j in snap.neighbours(i).into_iter().map(|j| j as usize).filter(|&j| j > i) {
                if fixed.has(i, j) {
                    continue;
                }
                let p0 = test.p_value(sc, i as u32, j as u32, &[])?;
                if fast {
                    tests += 1;
                    // SAFETY: pair {i, j} is visited once, and only it touches this cell.
                    unsafe { pm.set(i + j * p, p0) };
                    let (gone, with_sepset) = level0_fast(p0, alpha);
                    if gone {
                        removed += 1;
                        removal.remove_edge(i, j);
                        if with_sepset {
                            bits.set(j, i);
                        }
                    }
                    continue;
                }
                let mut err = None;
                let o = level0_pair(p0, || test.p_value(sc, j as u32, i as u32, &[]).unwrap_or_else(|e| {
                    err = Some(e);
                    f64::NAN
                }), degree[i], degree[j], alpha, na);
                if let Some(e) = err {
                    return Err(e);
                }
                tests += o.tests;
                not_done |= o.not_done;
                // SAFETY: pair {i, j} is visited once (from its smaller end), and only it touches
                // these two cells.
                unsafe { raise(&pm, p, i, j, o.level_p) };
                if let Some(side) = o.removed_by {
                    removed += 1;
                    removal.remove_edge(i, j);
                    if side == 0 { bits.set(i, j) } else { bits.set(j, i) }
                }
            }
            ctl.edge_done();
            Ok((tests, removed, not_done))
        });
        let parts: Vec<Result<_>> = rows.collect();
        let mut rep = DenseLevelReport::default();
        for part in parts {
            let (t, r, nd) = part?;
            rep.tests += t;
            rep.removed += r;
            rep.not_done |= nd;
        }
        Ok(rep)
    }

    /// Level 1 over the edges `edges` of the level's numbering: edge e is the (e - ebase[i])-th
    /// neighbour above i (fixed edges hold a number too), as the GPU numbers them.
    fn level1(&mut self, pmax: &mut [f64], ctl: &Control, edges: Option<std::ops::Range<usize>>) -> Result<DenseLevelReport> {
        let p = self.graph.p();
        let rows = Rows::from_adjacency(&self.graph)?;
        let mut ebase = crate::mem::try_vec::<usize>(p + 1, "p", "level 1's edge numbers")?;
        ebase.push(0);
        for i in 0..p as u32 {
            let above = rows.row(i).iter().filter(|&&j| j > i).count();
            ebase.push(ebase[i as usize] + above);
        }
        let edges = edges.unwrap_or(0..ebase[p]);
        let ebase = &ebase;
        let (test, fixed, alpha, na, fast) = (self.test, &self.fixed, self.alpha, self.na_value, self.order == Order::StableFast);
        let removal = self.graph.concurrent_removal();
        let pm = DisjointSlice::new(pmax);
        let rows = &rows;
        let per_row = (0..p as u32).into_par_iter().map_init(T::Scratch::default, |sc, i| -> Result<(u64, usize, bool, Vec<[u32; 3]>, u64)> {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let (mut tests, mut removed, mut not_done, mut seps, mut qualifying) = (0u64, 0usize, false, Vec::new(), 0u64);
            let ri = rows.row(i);
            for (t, &j) in ri.iter().filter(|&&j| j > i).enumerate() {
                if !edges.contains(&(ebase[i as usize] + t)) || fixed.has(i as usize, j as usize) {
                    continue;
                }
                let rj = rows.row(j);
                let mut walk = Level1Walk::new();
                'sides: for (side, (x, y, row)) in [(i, j, ri), (j, i, rj)].into_iter().enumerate() {
                    if row.len() < 2 {
                        continue; // |row(x) \ {y}| < 1
                    }
                    // stable.fast's side 1 skips the neighbours common to both ends
                    let listed = |&&k: &&u32| k != y && !(fast && side == 1 && rows.contains(i, k));
                    for (rank, &k) in row.iter().filter(listed).enumerate() {
                        let pv = test.p_value(sc, x, y, &[k])?;
                        if walk.push(side as u8, rank as u64, pv, alpha, na) {
                            // C++ stores at [[larger]][[smaller]], R at [[x]][[y]]
                            seps.push(if fast { [j, i, k] } else { [x, y, k] });
                            break 'sides;
                        }
                    }
                }
                if ri.len() < 2 && rj.len() < 2 {
                    continue; // no side qualifies: pcalg tests nothing and keeps "done"
                }
                qualifying += 1;
                tests += walk.tests;
                not_done |= walk.not_done(ri.len(), rj.len());
                if fast {
                    let k = i as usize + j as usize * p;
                    // SAFETY: pair {i, j} is visited once, and only it touches this cell.
                    unsafe {
                        if pm.get(k) < walk.level_p(na) {
                            pm.set(k, walk.level_p(na));
                        }
                    }
                } else {
                    // SAFETY: pair {i, j} is visited once (from its smaller end), and only it
                    // touches these two cells.
                    unsafe { raise(&pm, p, i as usize, j as usize, walk.level_p(na)) };
                }
                if walk.best.is_some() {
                    removed += 1;
                    removal.remove_edge(i as usize, j as usize);
                }
            }
            ctl.edge_done();
            Ok((tests, removed, not_done, seps, qualifying))
        });
        let parts: Vec<Result<_>> = per_row.collect();
        let mut rep = DenseLevelReport::default();
        for part in parts {
            let (t, r, nd, s, q) = part?;
            rep.tests += t;
            rep.removed += r;
            rep.not_done |= nd;
            rep.qualifying += q;
            rep.singles.extend(s);
        }
        Ok(rep)
    }
}

impl<T: CiTest + Sync> CpuState<'_, T> {
    /// stable.fast's level `l` >= 2 over the graph, as the GPU runs it (`gauss_dense_deep_l*`),
    /// pMax's raises reported rather than written:
    /// each edge {i, j}, i < j, walks side 0 (row(i) without j) and then, only when side 0 found
    /// no success, side 1 (j's neighbours that are not i's, then the common ones, its sets made
    /// only of common ones skipped), the sets of each side in lexicographic order of their list
    /// positions; the sides and their ranks are the plan's (`plan.rs`). A binomial too large
    /// fails as planning the level would, in the same row order.
    fn level_deep(&mut self, l: usize, ctl: &Control) -> Result<DenseLevelReport> {
        let p = self.graph.p();
        let rows = Rows::from_adjacency(&self.graph)?;
        let (test, fixed, alpha, na) = (self.test, &self.fixed, self.alpha, self.na_value);
        let removal = self.graph.concurrent_removal();
        let rows = &rows;
        let ranks = |n: usize| crate::combinations::binomial(n as u64, l as u64).ok_or(PcError::TooManySets { level: l, n });
        let per_row = (0..p as u32).into_par_iter().map_init(T::Scratch::default, |sc, i| -> Result<(u64, usize, Vec<u32>, u64, Vec<(usize, f64)>)> {
            if ctl.cancelled() {
                return Err(PcError::Interrupted);
            }
            let (mut tests, mut removed, mut sets, mut qualifying, mut raises) = (0u64, 0usize, Vec::new(), 0u64, Vec::new());
            let ri = rows.row(i);
            let (mut list, mut pos, mut set) = (Vec::new(), vec![0u32; l], vec![0u32; l]);
            for &j in ri.iter().filter(|&&j| j > i) {
                if fixed.has(i as usize, j as usize) {
                    continue;
                }
                let rj = rows.row(j);
                let (ni, nj) = (ri.len() - 1, rj.len() - 1);
                if ni.max(nj) < l {
                    continue;
                }
                qualifying += 1;
                let n0 = if ni >= l { ranks(ni)? } else { 0 };
                let all_j = if nj >= l { ranks(nj)? } else { 0 };
                let mut walk = Level1Walk::new();
                let mut won = false;
                for side in 0..2u8 {
                    let (x, y, n) = if side == 0 {
                        list.clear();
                        list.extend(ri.iter().copied().filter(|&a| a != j));
                        (i, j, n0)
                    } else {
                        if nj < l {
                            break;
                        }
                        list.clear();
                        list.extend(rj.iter().copied().filter(|&a| a != i && !rows.contains(i, a)));
                        let common = nj - list.len();
                        list.extend(rj.iter().copied().filter(|&a| a != i && rows.contains(i, a)));
                        (j, i, all_j - ranks(common)?)
                    };
                    for rank in 0..n {
                        crate::combinations::unrank(list.len() as u32, rank, &mut pos);
                        for (s, &q) in set.iter_mut().zip(&pos) {
                            *s = list[q as usize];
                        }
                        if walk.push(side, rank, test.p_value(sc, x, y, &set)?, alpha, na) {
                            won = true;
                            break;
                        }
                    }
                    if won {
                        break;
                    }
                }
                tests += walk.tests;
                if walk.tests > 0 {
                    raises.push((i as usize + j as usize * p, walk.level_p(na)));
                }
                if won {
                    removed += 1;
                    removal.remove_edge(i as usize, j as usize);
                    // C++ stores at [[larger]][[smaller]]
                    sets.extend([j, i]);
                    sets.extend_from_slice(&set);
                }
            }
            ctl.edge_done();
            Ok((tests, removed, sets, qualifying, raises))
        });
        let parts: Vec<Result<_>> = per_row.collect();
        let mut rep = DenseLevelReport::default();
        for part in parts {
            let (t, r, s, q, up) = part?;
            rep.tests += t;
            rep.removed += r;
            rep.qualifying += q;
            rep.sets.extend(s);
            rep.raises.extend(up);
        }
        Ok(rep)
    }
}

impl<T: CiTest + Sync> CpuState<'_, T> {
    /// One dense level as `k` devices run it: each share from the same snapshot on copies of the
    /// graph, pMax and level 0's bits, then the merge of `multi.rs`, share by share.
    fn level_split(&mut self, level: usize, k: usize, pmax: &mut [f64], sep0: &mut BitMatrix, ctl: &Control) -> Result<DenseLevelReport> {
        let p = self.graph.p();
        let snap = self.graph.clone();
        let mut merged = snap.words().to_vec();
        let mut rep = DenseLevelReport::default();
        let shares = if level == 0 { multi::row_ranges(p, k) } else { multi::even_ranges(snap.n_edges(), k) };
        let (pmax_in, sep0_in) = (pmax.to_vec(), sep0.clone());
        for share in shares {
            self.graph = snap.clone();
            let mut pm = pmax_in.clone();
            let mut s0 = sep0_in.clone();
            let r = if level == 0 { self.level0(&mut pm, &mut s0, ctl, share)? } else { self.level1(&mut pm, ctl, Some(share))? };
            multi::and_into(&mut merged, self.graph.words());
            multi::max_into(pmax, &pm);
            multi::or_into(sep0.words_mut(), s0.words_mut());
            rep.tests += r.tests;
            rep.removed += r.removed;
            rep.not_done |= r.not_done;
            rep.qualifying += r.qualifying;
            rep.singles.extend(r.singles);
        }
        self.graph = Adjacency::from_words(p, merged);
        Ok(rep)
    }
}

impl<T: CiTest + Sync> DenseLevels for DenseCpu<'_, T> {
    /// Both orders on one device; stable.fast's level 0 writes raw (NaN) p-values into pMax,
    /// which the devices' max-merge is not made for, so the simulated split is "stable" only.
    fn dense_order_ok(&self, order: Order) -> bool {
        order == Order::Stable || self.devices == 1
    }

    fn dense_level_ok(&self, order: Order, level: usize) -> bool {
        level <= 1 || (self.deep.is_some() && self.devices == 1 && order == Order::StableFast)
    }

    /// With deeper levels, a job that leaves the loop's buffer as it is (levels 0 and 1 wrote
    /// pMax there): the twin of a GPU's copy beside those levels.
    fn dense_pmax_now(&mut self) -> Result<Option<PmaxCopy>> {
        Ok((self.deep.is_some() && self.st.order == Order::StableFast).then(|| Box::new(|_: &mut [f64]| Ok(())) as PmaxCopy))
    }

    fn dense_kind(&self) -> String {
        format!("cpu ({})", std::env::consts::ARCH)
    }

    fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<()> {
        self.st.order = order;
        self.st.graph = start.clone();
        self.st.fixed = fixed.clone();
        self.st.alpha = alpha;
        self.st.na_value = na_value;
        Ok(())
    }

    fn dense_level(&mut self, level: usize, pmax: &mut [f64], sep0: &mut BitMatrix, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
        let p = self.st.graph.p() as u64;
        let (pool, st) = (&self.pool, &mut self.st);
        let (devices, deep) = (self.devices, self.deep);
        run_watched(p, watch, std::time::Duration::from_millis(100), |ctl: &Control| {
            pool.install(|| match level {
                0 | 1 if devices > 1 => st.level_split(level, devices, pmax, sep0, ctl),
                0 => st.level0(pmax, sep0, ctl, 0..p as usize),
                1 => st.level1(pmax, ctl, None),
                _ if deep.is_some_and(|last| level > last) => Ok(DenseLevelReport { declined: true, ..Default::default() }),
                _ if deep.is_some() && devices == 1 && st.order == Order::StableFast => st.level_deep(level, ctl),
                _ => Err(PcError::Internal(format!("dense level {level} does not exist"))),
            })
        })
    }

    fn dense_end(&mut self, graph: &mut Adjacency, _pmax: &mut [f64], _sep0: &mut BitMatrix) -> Result<()> {
        *graph = std::mem::replace(&mut self.st.graph, Adjacency::empty(0));
        Ok(())
    }
}

/// A backend made of a planned one (every level) and a dense one (levels 0 and 1 of "stable"):
/// how the CPU twin runs through the level loop in tests.
pub struct WithDense<B, D> {
    pub planned: B,
    pub dense: D,
}

impl<B: crate::backend::Backend, D: DenseLevels> crate::backend::Backend for WithDense<B, D> {
    fn name(&self) -> String {
        format!("{} + dense levels", self.planned.name())
    }

    fn run_level(&mut self, plan: &crate::plan::LevelPlan, watch: &mut dyn Watch) -> Result<Vec<crate::plan::EdgeOutcome>> {
        self.planned.run_level(plan, watch)
    }

    fn dense(&mut self) -> Option<&mut dyn DenseLevels> {
        Some(&mut self.dense)
    }

    fn row_split(&mut self) -> Option<&mut dyn crate::rows::RowSplit> {
        self.planned.row_split()
    }

    fn whole_levels(&self) -> bool {
        self.planned.whole_levels()
    }
}
