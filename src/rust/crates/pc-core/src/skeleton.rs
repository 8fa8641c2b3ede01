//! The level loop: plan a level, let the backend evaluate it, apply pcalg's rules to the outcomes.
//! This is the only place that turns outcomes into sepsets, pMax, n.edgetests and max.ord.

use std::time::Instant;

use std::time::Duration;

use crate::backend::{run_watched_sized, Backend, Control, Watch, SMALL_WORK};
use crate::error::{PcError, Result};
use crate::dense::DenseLevelReport;
use crate::graph::{Adjacency, BitMatrix};
use crate::par::DisjointSlice;
use crate::plan::{na_map, plan_level_from_rows, EdgeOutcome, EdgeWork, LevelPlan, Order};
use rayon::prelude::*;

#[derive(Clone, Debug)]
pub struct SkeletonParams {
    pub alpha: f64,
    pub order: Order,
    /// Largest conditioning-set size; None is m.max = Inf.
    pub m_max: Option<usize>,
    pub na_delete: bool,
    /// The starting graph (pcalg's `!fixedGaps` without the diagonal).
    pub start: Adjacency,
    /// Edges never tested and never removed.
    pub fixed_edges: Adjacency,
    /// Threads for planning levels and applying their outcomes (0: every core); pcalg's
    /// `numCores`, so a user who asks for one core gets one.
    pub threads: usize,
}

/// A separating set as pcalg stores it: at `sepset[[x]][[y]]` (0-based here).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sepset {
    pub x: u32,
    pub y: u32,
    pub set: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct LevelStat {
    pub level: usize,
    pub edges_at_start: usize,
    pub tests: u64,
    pub removed: usize,
    /// Wall time of the whole level: planning + backend + applying the outcomes.
    pub seconds: f64,
    pub plan_seconds: f64,
    pub backend_seconds: f64,
}

#[derive(Clone, Debug)]
pub struct SkeletonResult {
    pub graph: Adjacency,
    /// The separating sets of levels >= 1 (but those in `sep1`).
    pub sepsets: Vec<Sepset>,
    /// Level 1's sets from a dense backend as flat (x, y, k) triples, `sepset[[x]][[y]] = k`,
    /// sorted by pair (see [`crate::dense::DenseLevelReport::singles`]).
    pub sep1: Vec<[u32; 3]>,
    /// Level 0's: bit (x, y) set means `sepset[[x]][[y]]` is the empty set.
    pub sep0: BitMatrix,
    /// p x p, column-major ([`run_skeleton`]; empty from [`run_skeleton_into`], which writes
    /// the caller's buffer).
    pub pmax: Vec<f64>,
    pub n_edgetests: Vec<f64>,
    pub max_ord: i32,
    pub levels: Vec<LevelStat>,
}

impl SkeletonResult {
    /// Every separating set, level 0's (from `sep0`, row by row) first.
    pub fn all_sepsets(&self) -> Vec<Sepset> {
        let p = self.sep0.p();
        let mut out: Vec<Sepset> = (0..p)
            .flat_map(|x| (0..p).filter(move |&y| self.sep0.has(x, y)).map(move |y| Sepset { x: x as u32, y: y as u32, set: Vec::new() }))
            .collect();
        out.extend(self.sep1.iter().map(|&[x, y, k]| Sepset { x, y, set: vec![k] }));
        out.extend(self.sepsets.iter().cloned());
        out
    }
}

struct State<'a> {
    /// Plans levels and applies outcomes (level 0 of p = 10000 has 5e7 edges).
    pool: crate::threads::KeptPool,
    graph: Adjacency,
    /// Per level and block, in plan order; flattened once in `finish`.
    sepsets: Vec<Vec<Sepset>>,
    sep0: BitMatrix,
    sep1: Vec<[u32; 3]>,
    pmax: &'a mut [f64],
    /// While a dense backend's pMax is still being copied into `pmax` (by a thread that holds
    /// it), the later levels' raises of pMax cells, per level and block: (cell, value), applied
    /// when the copy has landed (a raise is a max, so the order does not matter).
    pmax_raises: Option<Vec<Vec<(usize, f64)>>>,
    /// pMax's copy began before the deeper dense levels (`dense_pmax_now`), not at their end.
    pmax_early: bool,
    /// `graph`'s edges, kept as levels remove them (a count over the bits is 50 MB at p = 20000,
    /// and the loop asks twice a level).
    edges: usize,
    /// The next level's snapshot as rows, made from the last level's (`Rows::keeping`), where
    /// that is less work than reading every bit of the graph again.
    rows: Option<crate::plan::Rows>,
    n_edgetests: Vec<f64>,
    levels: Vec<LevelStat>,
}

/// Raises pMax[i, j] (and pMax[j, i]) to `v` as pcalg's `if (pMax[x, y] < pval) pMax[x, y] <- pval`:
/// false for NaN, so NaN never overwrites (stable.fast's level 0 stores its raw NaN by assignment
/// instead, in `apply_outcomes`).
///
/// # Safety
/// No other thread may touch the cells (i, j) and (j, i) meanwhile: each edge's own cells.
unsafe fn pmax_raise(pmax: &DisjointSlice<f64>, p: usize, i: u32, j: u32, v: f64, symmetric: bool) {
    let (i, j) = (i as usize, j as usize);
    if pmax.get(i + j * p) < v {
        pmax.set(i + j * p, v);
    }
    if symmetric && pmax.get(j + i * p) < v {
        pmax.set(j + i * p, v);
    }
}

/// Number of tests the canonical sequence runs up to its first success (all when none).
pub fn tests_in_prefix(edge: &EdgeWork, o: &EdgeOutcome) -> u64 {
    let n0 = edge.sides[0].map_or(0, |s| s.n_ranks);
    match o.best {
        Some((0, r)) => r + 1,
        Some((_, r)) => n0 + r + 1,
        None => edge.n_tests(),
    }
}

/// The skeleton search, with pMax in a vector of its own.
pub fn run_skeleton(params: &SkeletonParams, backend: &mut dyn Backend, watch: &mut dyn Watch) -> Result<SkeletonResult> {
    let p = params.start.p();
    // written by the pool's threads: one thread faulting in p^2 fresh cells took most of a
    // second per GB (17 s at p = 55,572)
    let pool = crate::threads::kept_pool(params.threads, "host")?;
    let mut pmax = pool.install(|| crate::mem::try_filled::<f64>(p * p, 0.0, "labels", "pMax"))?;
    let mut res = run_skeleton_into(params, backend, watch, &mut pmax)?;
    res.pmax = pmax;
    Ok(res)
}

/// The skeleton search, writing pMax (p x p, column-major, any initial content) into `pmax`, so
/// that a caller can hand over the memory the result lives in (R's matrix) instead of a copy.
pub fn run_skeleton_into(params: &SkeletonParams, backend: &mut dyn Backend, watch: &mut dyn Watch, pmax: &mut [f64]) -> Result<SkeletonResult> {
    let p = params.start.p();
    if pmax.len() != p * p {
        return Err(PcError::Internal(format!("pMax buffer of {} cells for p = {p}", pmax.len())));
    }
    if params.fixed_edges.p() != p {
        return Err(PcError::invalid("fixedEdges", "must have the same size as the graph"));
    }
    if !(params.alpha > 0.0 && params.alpha <= 1.0) {
        return Err(PcError::invalid("alpha", format!("must lie in (0, 1], not {}", params.alpha)));
    }
    crate::trace::mark(|| format!("search: start, p = {p}"));
    let fast = params.order == Order::StableFast;
    let pool = crate::threads::kept_pool(params.threads, "host")?;
    // levels 0 and 1 on a backend's own graph, where it offers them for this order
    let use_dense = backend.dense().is_some_and(|d| d.dense_order_ok(params.order));
    // a dense backend writes every cell of pMax at its end (a pass over 3.2 GB at p = 20000)
    let dense = use_dense && backend.dense().is_some_and(|d| d.writes_whole_pmax());
    if !dense {
        let fill = if fast { -1.0 } else { f64::NEG_INFINITY };
        pool.install(|| pmax.par_chunks_mut(1 << 16).for_each(|c| c.fill(fill)));
        if !fast {
            for i in 0..p {
                pmax[i + i * p] = 1.0;
            }
        }
    }
    let mut graph = params.start.clone();
    if fast {
        // pcalg's C++ adds every fixed edge to the start graph, even where fixedGaps removed it
        // (its R code leaves such a pair out)
        for (i, j) in params.fixed_edges.edges() {
            graph.add_edge(i as usize, j as usize);
        }
    }
    let edges = pool.install(|| (0..p).into_par_iter().map(|i| graph.degree(i)).sum::<usize>() / 2);
    let mut st = State { pool, graph, sepsets: Vec::new(), sep0: BitMatrix::empty(p), sep1: Vec::new(), pmax, pmax_raises: None, pmax_early: false, edges, rows: None, n_edgetests: Vec::new(), levels: Vec::new() };
    crate::trace::mark(|| "search: pMax and the start graph ready".into());
    // pMax may come back from a dense backend while the later levels run (`dense_end`): its copy
    // runs on a thread of this scope, and lands before the result is made
    std::thread::scope(|scope| {
        let mut copy = None;
        if dense && st.pmax.len() >= PREFAULT_CELLS {
            // the caller's buffer (R's fresh matrix) is faulted in on a pool of its own while the
            // dense levels run, so that their pMax copy only copies: at p = 20000, 3.2 GB took
            // the copy a third of a second, longer than levels 2-13
            let (pmax, threads) = (std::mem::take(&mut st.pmax), params.threads);
            copy = Some(scope.spawn(move || {
                // a pool of its own: on the level loop's, the levels' host work would wait behind it
                let filled = crate::threads::kept_pool(threads, "pmax").map(|pool| pool.install(|| pmax.par_chunks_mut(1 << 16).for_each(|c| c.fill(0.0))));
                crate::trace::mark(|| "pMax's pages faulted in".into());
                (filled, pmax)
            }));
        }
        let levels = run_levels(params, backend, watch, &mut st, scope, &mut copy);
        crate::trace::mark(|| "search: levels done".into());
        let landed = land_pmax(&mut st, copy).and_then(|()| apply_raises(&mut st));
        crate::trace::mark(|| "search: pMax landed".into());
        let max_ord = levels?;
        landed?;
        let out = finish(st, max_ord);
        crate::trace::mark(|| "search: result made".into());
        Ok(out)
    })
}

/// pMax buffers of at least this many cells are faulted in while a dense backend's levels run.
const PREFAULT_CELLS: usize = 1 << 22;

/// A pMax copy (or the faulting in of its pages) running on a thread of the search's scope; it
/// hands the buffer back.
type PmaxCopying<'scope, 'a> = Option<std::thread::ScopedJoinHandle<'scope, (Result<()>, &'a mut [f64])>>;

/// The levels of [`run_skeleton_into`] for its order; returns max.ord.
fn run_levels<'scope, 'a: 'scope>(
    params: &SkeletonParams,
    backend: &mut dyn Backend,
    watch: &mut dyn Watch,
    st: &mut State<'a>,
    scope: &'scope std::thread::Scope<'scope, '_>,
    copy: &mut PmaxCopying<'scope, 'a>,
) -> Result<i32> {
    let p = params.start.p();
    let na_value = if params.na_delete { 1.0 } else { 0.0 };
    let use_dense = backend.dense().is_some_and(|d| d.dense_order_ok(params.order));
    let within_m_max = |l: usize| params.m_max.is_none_or(|m| l <= m);
    match params.order {
        Order::Stable => {
            // while (!done && any(G) && ord <= m.max), as pcalg's R skeleton()
            let mut level = 0usize;
            let mut done = false;
            // levels 0 and 1 on a backend's own graph: the host then tracks only the edge count
            let mut dense_edges = None;
            if use_dense {
                let d = backend.dense().expect("the backend offered dense levels");
                d.dense_begin(Order::Stable, &st.graph, &params.fixed_edges, params.alpha, na_value)?;
                crate::trace::mark(|| "dense levels begun".into());
                dense_edges = Some(st.edges);
            }
            loop {
                let n_edges = dense_edges.unwrap_or(st.edges);
                if done || n_edges == 0 || !within_m_max(level) {
                    break;
                }
                if let Some(edges) = dense_edges {
                    if level <= 1 {
                        let d = backend.dense().expect("the backend offered dense levels");
                        let rep = dense_level(st, d, level, edges, Order::Stable, watch)?;
                        done = !rep.not_done;
                        dense_edges = Some(edges - rep.removed);
                        level += 1;
                        continue;
                    }
                    dense_end(st, backend, scope, copy)?;
                    st.edges = edges;
                    debug_assert_eq!(st.edges, st.graph.n_edges());
                    dense_edges = None;
                }
                let t0 = Instant::now();
                let plan = plan_watched(st, Order::Stable, level, params, na_value, watch)?;
                land_if_copied(st, copy)?;
                done = !run_one_level(st, &plan, t0, backend, watch, Order::Stable)?;
                level += 1;
            }
            if let Some(edges) = dense_edges {
                dense_end(st, backend, scope, copy)?;
                st.edges = edges;
                debug_assert_eq!(st.edges, st.graph.n_edges());
            }
            if st.n_edgetests.is_empty() {
                st.n_edgetests.push(0.0); // pcalg's numeric(1)
            }
            let max_ord = level as i32 - 1;
            Ok(max_ord)
        }
        Order::StableFast => {
            // level 0 always runs; then while some edge qualifies and condSize <= m.max (m.max = Inf
            // is passed to C++ as p)
            let m_max = params.m_max.unwrap_or(p);
            let mut level = 0usize;
            if use_dense {
                // levels 0 and 1 on the backend's graph (the edge count is tracked there), and the
                // deeper ones where it runs them
                let d = backend.dense().expect("the backend offered dense levels");
                d.dense_begin(Order::StableFast, &st.graph, &params.fixed_edges, params.alpha, na_value)?;
                crate::trace::mark(|| "dense levels begun".into());
                let mut edges = st.edges;
                let mut ended = false;
                loop {
                    let d = backend.dense().expect("the backend offered dense levels");
                    if !d.dense_level_ok(Order::StableFast, level) {
                        break;
                    }
                    if level == 2 {
                        // pMax as levels 0 and 1 left it comes back beside the deeper levels
                        land_pmax(st, copy.take())?; // the buffer's pages were faulted in meanwhile
                        if let Some(job) = d.dense_pmax_now()? {
                            start_pmax_copy(st, job, scope, copy);
                            st.pmax_early = true;
                            crate::trace::mark(|| "pMax copied beside the deeper dense levels".into());
                        }
                    }
                    let rep = dense_level(st, d, level, edges, Order::StableFast, watch)?;
                    if rep.declined {
                        break;
                    }
                    if level > 0 && rep.qualifying == 0 {
                        ended = true; // booked nothing: C++ stops before a level no edge qualifies for
                        break;
                    }
                    edges -= rep.removed;
                    level += 1;
                    if level > m_max {
                        ended = true;
                        break;
                    }
                }
                dense_end(st, backend, scope, copy)?;
                st.edges = edges;
                debug_assert_eq!(st.edges, st.graph.n_edges());
                if ended {
                    let max_ord = st.n_edgetests.len() as i32 - 2;
                    return Ok(max_ord);
                }
            }
            loop {
                // C++ level 0 keeps an edge only when p < alpha, so NaN deletes it whatever
                // NAdelete says (and leaves no sepset; see run_one_level)
                let na = if level == 0 { 1.0 } else { na_value };
                let t0 = Instant::now();
                let plan = plan_watched(st, Order::StableFast, level, params, na, watch)?;
                if level > 0 && plan.qualifying == 0 {
                    break;
                }
                land_if_copied(st, copy)?;
                run_one_level(st, &plan, t0, backend, watch, Order::StableFast)?;
                level += 1;
                if level > m_max {
                    break;
                }
            }
            // pcalg: ord <- length(n.edgetests) - 1; max.ord <- ord - 1
            let max_ord = st.n_edgetests.len() as i32 - 2;
            Ok(max_ord)
        }
    }
}

const POLL: Duration = Duration::from_millis(100);

/// Runs a dense level (0 or 1) on the backend's graph and books it like a planned one
/// (stable.fast's level 1 with no qualifying edge is not booked: C++ would not have run it).
fn dense_level(st: &mut State, d: &mut dyn crate::dense::DenseLevels, level: usize, edges_at_start: usize, order: Order, watch: &mut dyn Watch) -> Result<DenseLevelReport> {
    let t0 = Instant::now();
    // stable.fast learns only from the level itself whether it runs at all
    let deferred = order == Order::StableFast && level > 0;
    if !deferred {
        watch.level_start(level, edges_at_start, 0);
    }
    let mut rep = d.dense_level(level, st.pmax, &mut st.sep0, watch)?;
    if rep.declined {
        return Ok(rep);
    }
    if !rep.raises.is_empty() {
        st.pmax_raises.get_or_insert_with(Vec::new).push(std::mem::take(&mut rep.raises));
    }
    // a GPU appends a level's sets in whatever order its threads finish: the plan's order instead
    let mut sets = Vec::new();
    {
        use rayon::slice::ParallelSliceMut;
        let singles = &mut rep.singles;
        st.pool.install(|| singles.par_sort_unstable_by_key(|s| (s[0].min(s[1]), s[0].max(s[1]))));
        if !rep.sets.is_empty() {
            let stride = level + 2;
            if level < 2 || rep.sets.len() % stride != 0 {
                return Err(PcError::Internal(format!("dense level {level} handed back {} numbers of sets", rep.sets.len())));
            }
            let flat = &rep.sets;
            sets = st.pool.install(|| {
                let mut v: Vec<Sepset> = flat.par_chunks_exact(stride).map(|r| Sepset { x: r[0], y: r[1], set: r[2..].to_vec() }).collect();
                v.par_sort_unstable_by_key(|s| (s.x.min(s.y), s.x.max(s.y)));
                v
            });
            rep.sets = Vec::new();
        }
    }
    let seconds = t0.elapsed().as_secs_f64();
    crate::trace::mark(|| format!("dense level {level}: {} tests, {} removed", rep.tests, rep.removed));
    if deferred {
        if rep.qualifying == 0 {
            return Ok(rep);
        }
        watch.level_start(level, edges_at_start, 0);
    }
    st.n_edgetests.push(rep.tests as f64);
    if st.sep1.is_empty() {
        st.sep1 = std::mem::take(&mut rep.singles); // 2 million sets at p = 20000: moved, not copied
    } else {
        st.sep1.append(&mut rep.singles);
    }
    if !sets.is_empty() {
        st.sepsets.push(sets);
    }
    watch.level_end(level, rep.tests, rep.removed, seconds);
    st.levels.push(LevelStat { level, edges_at_start, tests: rep.tests, removed: rep.removed, seconds, plan_seconds: 0.0, backend_seconds: seconds });
    Ok(rep)
}

/// Takes the graph, pMax and level 0's sepsets back from a dense backend. A backend that copies
/// pMax on a thread of its own (`dense_end_deferred`) gets the buffer on a thread of `scope`,
/// while the later levels run; their raises of pMax cells wait in `st.pmax_raises`.
fn dense_end<'scope, 'a: 'scope>(st: &mut State<'a>, backend: &mut dyn Backend, scope: &'scope std::thread::Scope<'scope, '_>, copy: &mut PmaxCopying<'scope, 'a>) -> Result<()> {
    if !st.pmax_early {
        // the buffer's pages were being faulted in meanwhile
        land_pmax(st, copy.take())?;
    }
    let d = backend.dense().expect("the backend offered dense levels");
    let deferred = d.dense_end_deferred(&mut st.graph, st.pmax, &mut st.sep0)?;
    let how = if st.pmax_early { "on its way since level 2" } else if deferred.is_some() { "copied beside the next levels" } else { "back" };
    crate::trace::mark(|| format!("dense levels ended, pMax {how}"));
    if let Some(job) = deferred {
        if st.pmax_early {
            return Err(PcError::Internal("a dense backend copied pMax back twice".into()));
        }
        start_pmax_copy(st, job, scope, copy);
    }
    Ok(())
}

/// Runs a dense backend's pMax copy on a thread of `scope` with the loop's buffer; raises of
/// pMax cells wait in `st.pmax_raises` until it lands.
fn start_pmax_copy<'scope, 'a: 'scope>(st: &mut State<'a>, job: crate::dense::PmaxCopy, scope: &'scope std::thread::Scope<'scope, '_>, copy: &mut PmaxCopying<'scope, 'a>) {
    let pmax = std::mem::take(&mut st.pmax);
    st.pmax_raises.get_or_insert_with(Vec::new);
    *copy = Some(scope.spawn(move || (job(pmax), pmax)));
}

/// Lands a pMax copy that has finished, so that the next levels raise their cells directly.
fn land_if_copied<'a>(st: &mut State<'a>, copy: &mut PmaxCopying<'_, 'a>) -> Result<()> {
    if copy.as_ref().is_some_and(|h| h.is_finished()) {
        land_pmax(st, copy.take())?;
        apply_raises(st)?;
        crate::trace::mark(|| "pMax landed".into());
    }
    Ok(())
}

/// Waits for a pMax copy (or the faulting in of its pages) and gives its buffer back to `st`.
fn land_pmax<'a>(st: &mut State<'a>, copy: PmaxCopying<'_, 'a>) -> Result<()> {
    let Some(h) = copy else { return Ok(()) };
    let (done, pmax) = h.join().map_err(|e| PcError::Internal(crate::backend::panic_message(&*e)))?;
    st.pmax = pmax;
    done
}

/// Applies the raises of pMax that waited for its copy (or for the dense levels' end), once
/// pMax is whole on the host.
fn apply_raises(st: &mut State<'_>) -> Result<()> {
    let Some(raises) = st.pmax_raises.take() else { return Ok(()) };
    let p2 = st.pmax.len();
    let all: Vec<&[(usize, f64)]> = raises.iter().map(Vec::as_slice).collect();
    let n: usize = all.iter().map(|r| r.len()).sum();
    if all.iter().flat_map(|r| r.iter()).any(|&(cell, _)| cell >= p2) {
        return Err(PcError::Internal("a pMax raise outside the matrix".into()));
    }
    // each share of the cells (blocks of 4096) on a thread of its own: the raises of the deeper
    // dense levels are a cell per tested edge per level, each a cache and TLB miss in p^2 cells
    let shares = if n < 1 << 14 { 1 } else { st.pool.current_num_threads().max(1) };
    let pm = DisjointSlice::new(st.pmax);
    st.pool.install(|| {
        (0..shares).into_par_iter().for_each(|t| {
            for &(cell, v) in all.iter().flat_map(|r| r.iter()).filter(|&&(cell, _)| (cell >> 12) % shares == t) {
                // SAFETY: share t alone touches the cells whose block number is t modulo shares.
                unsafe {
                    if pm.get(cell) < v {
                        pm.set(cell, v);
                    }
                }
            }
        })
    });
    Ok(())
}

/// Plans a level on a worker thread while the caller's thread keeps answering Ctrl-C; a small
/// level (the last level's rows hold few entries) on the caller's thread.
fn plan_watched(st: &mut State<'_>, order: Order, level: usize, params: &SkeletonParams, na: f64, watch: &mut dyn Watch) -> Result<LevelPlan> {
    let rows = st.rows.take();
    let (pool, graph) = (&st.pool, &st.graph);
    // the rows' entries, or the graph's words and its edges' entries when the rows come from it
    let p = graph.p() as u64;
    let size = rows.as_ref().map_or(p * p.div_ceil(64) + 2 * st.edges as u64, |r| (r.cols.len() + r.offsets.len()) as u64);
    let here = size <= SMALL_WORK;
    run_watched_sized(size, 0, watch, POLL, |ctl: &Control| {
        let plan = |rows| plan_level_from_rows(order, level, rows, &params.fixed_edges, params.alpha, na, &|| ctl.cancelled(), here);
        let rows = || match rows {
            Some(r) => Ok(r),
            None => crate::plan::Rows::from_adjacency_on(graph, here),
        };
        if here {
            plan(rows()?)
        } else {
            pool.install(|| plan(rows()?))
        }
    })
}

/// Runs one planned level and applies its outcomes; returns pcalg R's "not done" flag (some
/// processed side had more than `level` neighbours). `t0` is when planning the level began.
fn run_one_level(st: &mut State<'_>, plan: &LevelPlan, t0: Instant, backend: &mut dyn Backend, watch: &mut dyn Watch, order: Order) -> Result<bool> {
    let level = plan.level;
    let edges_at_start = st.edges;
    let plan_seconds = t0.elapsed().as_secs_f64();
    crate::trace::mark(|| format!("level {level}: planned, {} edges", plan.edges.len()));
    watch.level_start(level, edges_at_start, plan.total_tests());
    crate::trace::mark(|| format!("level {level}: started"));
    let t1 = Instant::now();
    let outcomes = backend.run_level(plan, watch)?;
    let backend_seconds = t1.elapsed().as_secs_f64();
    crate::trace::mark(|| format!("level {level}: run"));
    if outcomes.len() != plan.edges.len() {
        return Err(PcError::Internal(format!("backend returned {} outcomes for {} edges", outcomes.len(), plan.edges.len())));
    }
    // applying tens of millions of outcomes takes seconds: on a worker, so Ctrl-C is answered;
    // a few thousand on this thread
    let size = plan.edges.len() as u64;
    let here = size <= SMALL_WORK;
    let (tests, removed, not_done) = run_watched_sized(size, 0, watch, POLL, |ctl: &Control| {
        let pool = &st.pool;
        let (graph, pmax, sepsets, sep0) = (&mut st.graph, &mut *st.pmax, &mut st.sepsets, &mut st.sep0);
        let raises = st.pmax_raises.as_mut();
        let apply = || apply_outcomes(graph, pmax, raises, sepsets, sep0, plan, &outcomes, order, ctl, here);
        if here {
            apply()
        } else {
            pool.install(apply)
        }
    })?;
    crate::trace::mark(|| format!("level {level}: outcomes applied"));
    st.n_edgetests.push(tests as f64);
    st.edges -= removed;
    debug_assert_eq!(st.edges, st.graph.n_edges());
    // the next level's rows from this one's, where they hold fewer entries than the graph has
    // words; else the next plan reads the bits again
    st.rows = if plan.rows.cols.len() <= st.graph.p() * st.graph.p().div_ceil(64) {
        let (pool, rows, graph) = (&st.pool, &plan.rows, &st.graph);
        if (rows.cols.len() + rows.offsets.len()) as u64 <= SMALL_WORK {
            Some(rows.keeping_on(graph, true)?)
        } else {
            Some(pool.install(|| rows.keeping(graph))?)
        }
    } else {
        None
    };
    let seconds = t0.elapsed().as_secs_f64();
    crate::trace::mark(|| format!("level {level}: applied, {tests} tests, {removed} removed"));
    watch.level_end(level, tests, removed, seconds);
    crate::trace::mark(|| format!("level {level}: ended"));
    st.levels.push(LevelStat { level, edges_at_start, tests, removed, seconds, plan_seconds, backend_seconds });
    Ok(not_done)
}

/// Applies a level's outcomes with pcalg's rules; returns (tests, removed edges, R's "not done"
/// flag). Edges are independent here (each writes its own pMax cells, bits and sepset), so blocks
/// of 64 rows run in parallel (on this thread when `here`). Within a block, edges go by tiles of 64 columns: pMax[j, i] and the
/// bit (j, i) of the rows' edges {i, j} then lie in a few cache lines, where walking one row's
/// edges touched a new line for each (level 0 of p = 8000 spent seconds on those misses).
#[allow(clippy::too_many_arguments)]
fn apply_outcomes(
    graph: &mut Adjacency,
    pmax: &mut [f64],
    mut raises: Option<&mut Vec<Vec<(usize, f64)>>>,
    sepsets: &mut Vec<Vec<Sepset>>,
    sep0: &mut BitMatrix,
    plan: &LevelPlan,
    outcomes: &[EdgeOutcome],
    order: Order,
    ctl: &Control,
    here: bool,
) -> Result<(u64, usize, bool)> {
    const ROWS: u32 = 64;
    const COLS: u32 = 64;
    let level = plan.level;
    let p = graph.p();
    let l = level as u32;
    let removal = graph.concurrent_removal();
    let sep0 = sep0.concurrent();
    let pmax = DisjointSlice::new(pmax);
    // pMax is being copied in: the raises are kept for later (`land_pmax`)
    let deferred = raises.is_some();
    if deferred && order == Order::StableFast && level == 0 {
        return Err(PcError::Internal("stable.fast's level 0 ran while pMax was being copied".into()));
    }
    // plan.edges are sorted by (i, j): a block is a run of edges with the same i / ROWS
    let mut starts = vec![0usize];
    starts.extend((1..plan.edges.len()).filter(|&k| plan.edges[k].i / ROWS != plan.edges[k - 1].i / ROWS));
    starts.push(plan.edges.len());
    let apply_block = |b: usize| -> Result<(u64, usize, bool, Vec<Sepset>, Vec<(usize, f64)>)> {
        if ctl.cancelled() {
            return Err(PcError::Interrupted);
        }
        let (lo, hi) = (starts[b], starts[b + 1]);
        // each row's run of edges within the block: [cursor, end)
        let mut runs: Vec<(usize, usize)> = Vec::with_capacity(ROWS as usize);
        let mut k = lo;
        while k < hi {
            let i = plan.edges[k].i;
            let end = k + plan.edges[k..hi].partition_point(|e| e.i == i);
            runs.push((k, end));
            k = end;
        }
        let (mut tests, mut removed, mut not_done, mut seps, mut later) = (0u64, 0usize, false, Vec::new(), Vec::new());
        if deferred {
            // two cells an edge at most
            later.try_reserve_exact(2 * (hi - lo)).map_err(|_| PcError::Internal(format!("out of memory for {} pMax raises", 2 * (hi - lo))))?;
        }
        let mut raise = |i: u32, j: u32, v: f64, symmetric: bool| {
            let (i, j) = (i as usize, j as usize);
            if deferred {
                later.push((i + j * p, v));
                if symmetric {
                    later.push((j + i * p, v));
                }
            } else {
                // SAFETY: a plan lists each edge {i, j} once, and only that edge touches the
                // cells (i, j) and (j, i).
                unsafe { pmax_raise(&pmax, p, i as u32, j as u32, v, symmetric) };
            }
        };
        let mut tile_end = 0u32;
        while runs.iter().any(|r| r.0 < r.1) {
            tile_end = tile_end.saturating_add(COLS);
            for run in runs.iter_mut() {
                while run.0 < run.1 && plan.edges[run.0].j < tile_end {
                    let (e, o) = (&plan.edges[run.0], &outcomes[run.0]);
                    run.0 += 1;
                    tests += tests_in_prefix(e, o);
                    let mapped_best = na_map(o.p_best, plan.na_value);
                    let level_p = match o.best {
                        Some(_) => o.max_fail.max(mapped_best),
                        None => o.max_fail,
                    };
                    match order {
                        Order::Stable => {
                            raise(e.i, e.j, level_p, true);
                            let side0_deleted = matches!(o.best, Some((0, _)));
                            not_done |= e.sides[0].is_some_and(|s| s.len > l) || (!side0_deleted && e.sides[1].is_some_and(|s| s.len > l));
                        }
                        Order::StableFast if level == 0 => {
                            // C++ assigns the raw p (NaN included) and deletes unless p < alpha;
                            // SAFETY: only this edge touches the cell (never while deferred)
                            unsafe { pmax.set(e.i as usize + e.j as usize * p, if o.best.is_some() { o.p_best } else { o.max_fail }) };
                        }
                        Order::StableFast => raise(e.i, e.j, level_p, false),
                    }
                    if let Some((side, rank)) = o.best {
                        removed += 1;
                        removal.remove_edge(e.i as usize, e.j as usize);
                        let s = e.sides[side as usize].expect("winning side exists");
                        if !(order == Order::StableFast && level == 0 && o.p_best.is_nan()) {
                            // R stores at [[x]][[y]] of the side that found it; C++ at [[larger]][[smaller]]
                            let (x, y) = match order {
                                Order::Stable => (s.x, s.y),
                                Order::StableFast => (e.j, e.i),
                            };
                            if level == 0 {
                                sep0.set(x as usize, y as usize);
                            } else {
                                seps.push(Sepset { x, y, set: plan.sepset(e, side, rank) });
                            }
                        }
                    }
                }
            }
        }
        Ok((tests, removed, not_done, seps, later))
    };
    let parts: Vec<Result<_>> = crate::par::map_indices(starts.len() - 1, here, apply_block);
    let (mut tests, mut removed, mut not_done) = (0u64, 0usize, false);
    for part in parts {
        let (t, r, nd, seps, later) = part?;
        tests += t;
        removed += r;
        not_done |= nd;
        sepsets.push(seps);
        if let Some(all) = raises.as_deref_mut() {
            all.push(later);
        }
    }
    Ok((tests, removed, not_done))
}

fn finish(st: State<'_>, max_ord: i32) -> SkeletonResult {
    // one move into a vector of the exact size (extending one vector block by block re-copied
    // level 0's tens of millions of sepsets at every doubling: seconds at p = 8000)
    let mut sepsets = Vec::with_capacity(st.sepsets.iter().map(Vec::len).sum());
    for part in st.sepsets {
        sepsets.extend(part);
    }
    SkeletonResult { graph: st.graph, sepsets, sep0: st.sep0, sep1: st.sep1, pmax: Vec::new(), n_edgetests: st.n_edgetests, max_ord, levels: st.levels }
}
