//! Level 0 of a flat-list backend (the discrete GPU kernel) without per-edge windows.
//!
//! At level 0 an edge's canonical sequence is at most two tests, x _||_ y and y _||_ x with S
//! empty (one in stable.fast's order), so the windows of [`super::rank_windows`] buy nothing there and
//! cost most of the level: at MUNIN (541,320 pairs) the host made and took 541,320 windows one by
//! one, 0.08-0.18 s against 0.022 s of kernels (H100, through per-edge windows). Here the edges are cut into
//! contiguous chunks, each chunk's tests are written at fixed places (edge k's side s at
//! k * sides + s) by the pool's threads, and each edge's outcome is read off its own p-values in
//! parallel, exactly as [`super::rank_windows::Windows::absorb`] walks a window: the first test in
//! side order with an NA-mapped p >= alpha decides the edge. While the device runs one chunk, the
//! host writes the next, and with an evaluator that holds two (the discrete `Rounds`) queues it
//! behind the running one before it waits (as [`super::rank_windows::run_pipelined`]).

use crate::plan::{EdgeOutcome, EdgeWork, LevelPlan};
use crate::PcError;
use rayon::prelude::*;

use crate::rounds::rank_windows::{run_pipelined, Batch, RoundEval, RoundOpts};

/// Edges a worker thread writes or decides at a time.
const EDGES_PER_TASK: usize = 4096;

/// Sides every edge of a level-0 plan has (1 or 2), when all have the same and each side is one
/// test; None otherwise (then the windows run the level).
fn uniform_sides(plan: &LevelPlan) -> Option<usize> {
    let shape = |e: &EdgeWork| match e.sides {
        [Some(a), None] if a.n_ranks == 1 => Some(1),
        [Some(a), Some(b)] if a.n_ranks == 1 && b.n_ranks == 1 => Some(2),
        _ => None,
    };
    let k = shape(plan.edges.first()?)?;
    (plan.level == 0 && plan.edges.par_iter().all(|e| shape(e) == Some(k))).then_some(k)
}

/// A level-0 edge's outcome from its sides' raw p-values in side order (None: a side the plan
/// does not test), as [`super::rank_windows::Windows::absorb`] takes one window.
#[inline]
pub fn level0_outcome(p: impl IntoIterator<Item = Option<f64>>, alpha: f64, na_value: f64) -> EdgeOutcome {
    let mut o = EdgeOutcome::NONE;
    for (side, pv) in p.into_iter().enumerate() {
        if let Some(pv) = pv {
            if o.record(side as u8, 0, pv, alpha, na_value) {
                break;
            }
        }
    }
    o
}

/// Writes the tests of `edges` (`k` sides each) into `b`, with their largest `words`.
fn write_chunk(edges: &[EdgeWork], k: usize, words: Option<&(dyn Fn(u32, u32, &[u32]) -> u64 + Sync)>, b: &mut Batch) {
    let m = edges.len() * k;
    b.x.resize(m, 0);
    b.y.resize(m, 0);
    b.s.clear();
    b.max_words = b
        .x
        .par_chunks_mut(EDGES_PER_TASK * k)
        .zip(b.y.par_chunks_mut(EDGES_PER_TASK * k))
        .zip(edges.par_chunks(EDGES_PER_TASK))
        .map(|((xs, ys), es)| {
            let mut top = 0u64;
            for (t, e) in es.iter().enumerate() {
                for (s, side) in e.sides.iter().flatten().enumerate() {
                    xs[t * k + s] = side.x;
                    ys[t * k + s] = side.y;
                    if let Some(f) = words {
                        top = top.max(f(side.x, side.y, &[]));
                    }
                }
            }
            top
        })
        .max()
        .unwrap_or(0);
}

/// Runs level 0 of `plan` through `eval` in chunks of about `opts.budget` tests (see the module
/// docs); any other plan goes to [`run_pipelined`]. `keep_going` is asked between chunks, with the
/// number of edges decided.
pub fn run_level0(
    plan: &LevelPlan,
    opts: &RoundOpts,
    eval: &mut dyn RoundEval,
    mut keep_going: impl FnMut(usize) -> bool,
) -> Result<Vec<EdgeOutcome>, PcError> {
    let single;
    let pool = match opts.pool {
        Some(pool) => pool,
        None => {
            single = rayon::ThreadPoolBuilder::new()
                .num_threads(1)
                .build()
                .map_err(|e| PcError::Internal(format!("could not start a CPU thread: {e}")))?;
            &single
        }
    };
    let Some(k) = pool.install(|| uniform_sides(plan)) else {
        return run_pipelined(plan, opts, eval, keep_going);
    };
    let ne = plan.edges.len();
    let per_chunk = (opts.budget / k).max(1);
    let mut out = crate::mem::try_vec::<EdgeOutcome>(ne, "labels", "the level's outcomes")?;
    out.resize(ne, EdgeOutcome::NONE);
    let (alpha, na) = (plan.alpha, plan.na_value);
    let chunks: Vec<(usize, usize)> = (0..ne).step_by(per_chunk).map(|a| (a, (a + per_chunk).min(ne))).collect();
    let mut batches = [Batch::default(), Batch::default()];
    let mut p = Vec::new();
    let mut pending: Option<usize> = None; // the chunk in flight (in batches[c % 2])
    let mut decided = 0;
    // with two in flight, chunk c is queued behind chunk c - 1 before the host waits for that one
    let queued = eval.in_flight() >= 2;
    for c in 0..=chunks.len() {
        if !keep_going(decided) {
            return Err(PcError::Interrupted);
        }
        if let Some(&(a, b)) = chunks.get(c) {
            pool.install(|| write_chunk(&plan.edges[a..b], k, opts.words, &mut batches[c % 2]));
        }
        if queued && c < chunks.len() {
            eval.launch(&batches[c % 2])?;
        }
        if let Some(q) = pending.take() {
            eval.finish(&batches[q % 2], &mut p)?;
        }
        if !queued && c < chunks.len() {
            eval.launch(&batches[c % 2])?;
        }
        if c > 0 {
            let q = c - 1;
            let (a, b) = chunks[q];
            if p.len() != (b - a) * k {
                return Err(PcError::Internal(format!("{} p-values for {} tests", p.len(), (b - a) * k)));
            }
            let pv = &p;
            pool.install(|| {
                out[a..b].par_chunks_mut(EDGES_PER_TASK).zip(pv.par_chunks(EDGES_PER_TASK * k)).for_each(|(os, ps)| {
                    for (o, pe) in os.iter_mut().zip(ps.chunks_exact(k)) {
                        *o = level0_outcome(pe.iter().map(|&v| Some(v)), alpha, na);
                    }
                })
            });
            decided = b;
        }
        if c < chunks.len() {
            pending = Some(c);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citest::{CiTest, GSquareKind, GSquareScratch, GSquareTest};
    use crate::cpu::{eval_edge, EdgeScratch};
    use crate::graph::Adjacency;
    use crate::plan::{plan_level, Order};
    use crate::rounds::rank_windows::tests::{chain_data, random_graph, same, Eager, Lcg};

    /// Level 0 by chunks gives exactly eval_edge's outcomes (the CPU's walk of the canonical
    /// sequence), in both orders, for chunks of one edge to all edges, on the level's thread or a
    /// pool; every batch holds at most the budget (or one edge), and
    /// its largest size is its tests' largest.
    #[test]
    fn level0_chunks_match_the_sequential_walk() {
        let mut r = Lcg(11);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for case in 0..12u64 {
            let p = 5 + r.next(40) as usize;
            let data = chain_data(200 + 100 * r.next(5) as usize, p, case + 3);
            let test = GSquareTest::new(data, GSquareKind::Dis, case % 3 == 0).unwrap();
            let adj = random_graph(p, 20 + r.next(80), &mut r);
            let mut fixed = Adjacency::empty(p);
            if case % 4 == 1 {
                fixed.add_edge(0, 1);
            }
            let alpha = [0.01, 0.05, 0.2, 0.5][case as usize % 4];
            let na = if case % 2 == 0 { 1.0 } else { 0.0 }; // the data give no NaN (see below)
            let words = |x: u32, y: u32, _s: &[u32]| (x as u64 * 7 + y as u64 * 3) % 97;
            for order in [Order::Stable, Order::StableFast] {
                let plan = plan_level(order, 0, &adj, &fixed, alpha, na).unwrap();
                let mut sc = EdgeScratch::<GSquareScratch>::default();
                let want: Vec<EdgeOutcome> =
                    plan.edges.iter().map(|e| eval_edge(&plan, &test, &mut sc, e, &mut || true).unwrap()).collect();
                // every pair's p-value once (the batches look them up: CI's debug build is slow)
                let mut tsc = GSquareScratch::default();
                let pv: Vec<f64> = (0..p * p).map(|k| test.p_value(&mut tsc, (k % p) as u32, (k / p) as u32, &[]).unwrap()).collect();
                for (budget, pool, depth) in
                    [(1, None, 1), (2, Some(&pool), 2), (7, None, 1), (7, None, 2), (50, Some(&pool), 1), (1 << 20, None, 2)]
                {
                    let opts = RoundOpts { budget, growth: 125, pool, words: Some(&words) };
                    let mut tests = 0usize;
                    let check = |b: &Batch| {
                        assert!(b.s.is_empty());
                        assert!(b.len() <= budget.max(2), "a batch of {} tests for budget {budget}", b.len());
                        assert_eq!(b.max_words, (0..b.len()).map(|t| words(b.x[t], b.y[t], &[])).max().unwrap_or(0));
                        tests += b.len();
                        (0..b.len()).map(|t| pv[b.x[t] as usize + b.y[t] as usize * p]).collect()
                    };
                    let mut eval = if depth == 1 { Eager::new(check) } else { Eager::queued(check) };
                    let got = run_level0(&plan, &opts, &mut eval, |_| true).unwrap();
                    drop(eval);
                    assert_eq!(tests as u64, plan.edges.iter().map(|e| e.n_tests()).sum::<u64>());
                    assert_eq!(got.len(), want.len());
                    for (e, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert!(same(g, w), "case {case} {order:?} budget {budget} depth {depth} edge {e}: {g:?} vs {w:?}");
                    }
                }
            }
        }
    }

    /// NA p-values count as `na_value` (NAdelete) and are kept raw as the deciding p, as the CPU's
    /// walk (`eval_edge`) does.
    #[test]
    fn na_p_values_follow_nadelete() {
        let nan = f64::NAN;
        let o = level0_outcome([nan, 0.5].map(Some), 0.05, 1.0);
        assert_eq!(o.best, Some((0, 0)));
        assert!(o.p_best.is_nan() && o.max_fail == f64::NEG_INFINITY);
        let o = level0_outcome([nan, 0.5].map(Some), 0.05, 0.0);
        assert_eq!((o.best, o.p_best, o.max_fail), (Some((1, 0)), 0.5, 0.0));
        let o = level0_outcome([0.01, nan].map(Some), 0.05, 0.0);
        assert_eq!((o.best, o.max_fail), (None, 0.01));
        let o = level0_outcome([0.03].map(Some), 0.05, 1.0);
        assert_eq!((o.best, o.max_fail), (None, 0.03));
        assert_eq!(level0_outcome([0.05, 0.9].map(Some), 0.05, 1.0).best, Some((0, 0)));
    }

    /// A plan that is not level 0 goes through the windows; an interrupt between chunks stops it.
    #[test]
    fn other_levels_and_interrupts() {
        let data = chain_data(400, 12, 5);
        let test = GSquareTest::new(data, GSquareKind::Dis, false).unwrap();
        let adj = Adjacency::complete(12);
        let plan1 = plan_level(Order::Stable, 1, &adj, &Adjacency::empty(12), 0.05, 1.0).unwrap();
        let mut sc = EdgeScratch::<GSquareScratch>::default();
        let want: Vec<EdgeOutcome> = plan1.edges.iter().map(|e| eval_edge(&plan1, &test, &mut sc, e, &mut || true).unwrap()).collect();
        let mut tsc = GSquareScratch::default();
        let mut eval = Eager::new(|b: &Batch| (0..b.len()).map(|t| test.p_value(&mut tsc, b.x[t], b.y[t], &b.s[t..t + 1]).unwrap()).collect());
        let got = run_level0(&plan1, &RoundOpts::new(9), &mut eval, |_| true).unwrap();
        assert!(got.iter().zip(&want).all(|(g, w)| same(g, w)));
        let plan0 = plan_level(Order::Stable, 0, &adj, &Adjacency::empty(12), 0.05, 1.0).unwrap();
        let mut eval = Eager::new(|b: &Batch| vec![0.0; b.len()]);
        let mut asked = 0;
        let err = run_level0(&plan0, &RoundOpts::new(10), &mut eval, |_| {
            asked += 1;
            asked < 3
        })
        .unwrap_err();
        assert!(matches!(err, PcError::Interrupted));
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use crate::graph::Adjacency;
    use crate::plan::{plan_level, Order};

    /// Host time of level 0 at MUNIN's size (p = 1041, 541,320 pairs) without a device, by chunks
    /// and by windows (cargo test --release -p pc-core -- --ignored --nocapture level0_host).
    #[test]
    #[ignore]
    fn level0_host_time() {
        let p = 1041;
        let plan = plan_level(Order::Stable, 0, &Adjacency::complete(p), &Adjacency::empty(p), 0.01, 1.0).unwrap();
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let words = |x: u32, y: u32, _s: &[u32]| (x + y) as u64 % 7;
        let opts = RoundOpts { budget: 214_748, growth: 125, pool: Some(&pool), words: Some(&words) };
        struct Fake(usize);
        impl RoundEval for Fake {
            fn launch(&mut self, b: &Batch) -> Result<(), PcError> {
                self.0 = b.len();
                Ok(())
            }
            fn finish(&mut self, _b: &Batch, p: &mut Vec<f64>) -> Result<(), PcError> {
                p.clear();
                p.extend((0..self.0).map(|t| if t % 3 == 0 { 0.5 } else { 0.001 }));
                Ok(())
            }
        }
        // CPU seconds of the process (utime + stime, in 1/100 s): the wall time of a loaded
        // machine says little
        let cpu = || {
            let s = std::fs::read_to_string("/proc/self/stat").unwrap();
            let f: Vec<&str> = s[s.rfind(')').unwrap() + 2..].split(' ').collect();
            (f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap()) / 100.0
        };
        for _ in 0..2 {
            let (t, c) = (std::time::Instant::now(), cpu());
            let mut n = 0;
            for _ in 0..5 {
                n = run_level0(&plan, &opts, &mut Fake(0), |_| true).unwrap().len();
            }
            let chunks = (t.elapsed().as_secs_f64() / 5.0, (cpu() - c) / 5.0);
            let (t, c) = (std::time::Instant::now(), cpu());
            for _ in 0..5 {
                run_pipelined(&plan, &opts, &mut Fake(0), |_| true).unwrap();
            }
            let windows = (t.elapsed().as_secs_f64() / 5.0, (cpu() - c) / 5.0);
            println!("level 0, {n} edges, wall / CPU seconds per run: chunks {:.3} / {:.3}, windows {:.3} / {:.3}", chunks.0, chunks.1, windows.0, windows.1);
        }
    }
}

