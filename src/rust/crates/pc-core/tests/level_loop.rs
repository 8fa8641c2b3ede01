//! Property tests of the level loop: `run_skeleton` with the parallel CPU backend against
//! literal, sequential transcriptions of pcalg's two skeleton loops (R "stable" and C++
//! "stable.fast"), on random graphs, masks and p-values. The transcriptions walk ordered pairs
//! and neighbour lists the way pcalg does; they share no planning code with the core.

mod common;

use pc_core::cpu::{ParallelCpu, SequentialCpu};
use pc_core::dense::{DenseCpu, DenseLevelReport, DenseLevels, PmaxCopy, WithDense};
use pc_core::multi::Split;
use pc_core::rounds::feed::EdgeFeed;
use pc_core::rounds::rank_windows::{run_fed, run_pipelined, Batch, RoundEval, RoundOpts};
use pc_core::{Backend, EdgeOutcome, LevelPlan};
type PcResult<T> = pc_core::error::Result<T>;
use pc_core::{run_skeleton, Adjacency, BitMatrix, CiTest, NullWatch, Order, SkeletonParams, SkeletonResult, Watch};
use proptest::prelude::*;

/// A deterministic fake test: p-values from a hash of (x, y, S), NaN now and then; asymmetric
/// in x and y, so passing them in the wrong order shows.
struct HashTest {
    seed: u64,
    nan_every: u64,
    /// Every call (x, y, S), in order: the sequential backend must call an R test in pcalg's order.
    calls: std::sync::Mutex<Vec<(u32, u32, Vec<u32>)>>,
}

impl CiTest for HashTest {
    type Scratch = ();
    fn p_value(&self, _: &mut (), x: u32, y: u32, s: &[u32]) -> pc_core::error::Result<f64> {
        self.calls.lock().unwrap().push((x, y, s.to_vec()));
        let h = common::test_hash(self.seed, x, y, s);
        if self.nan_every > 0 && h % self.nan_every == 0 {
            return Ok(f64::NAN);
        }
        Ok((h >> 11) as f64 / (1u64 << 53) as f64)
    }
}

struct Reference {
    g: Vec<bool>,
    sepset: Vec<Option<Vec<u32>>>,
    pmax: Vec<f64>,
    n_edgetests: Vec<f64>,
    max_ord: i32,
}

fn next_set(n: usize, s: &mut [usize]) -> bool {
    let k = s.len();
    for i in (0..k).rev() {
        if s[i] < n - (k - i) {
            s[i] += 1;
            for j in i + 1..k {
                s[j] = s[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

/// pcalg's R skeleton(method = "stable"), line by line.
fn reference_stable(t: &HashTest, p: usize, g0: &[bool], fixed: &[bool], alpha: f64, m_max: Option<usize>, na_delete: bool) -> Reference {
    let mut g = g0.to_vec();
    let mut sepset = vec![None; p * p];
    let mut pmax = vec![f64::NEG_INFINITY; p * p];
    for i in 0..p {
        pmax[i * p + i] = 1.0;
    }
    let mut n_edgetests: Vec<f64> = vec![0.0];
    let mut ord = 0usize;
    let mut done = false;
    while !done && g.iter().any(|&b| b) && m_max.is_none_or(|m| ord <= m) {
        if n_edgetests.len() <= ord {
            n_edgetests.push(0.0);
        }
        n_edgetests[ord] = 0.0;
        done = true;
        let snapshot = g.clone();
        let mut pairs = Vec::new();
        for x in 0..p {
            for y in 0..p {
                if g[x * p + y] {
                    pairs.push((x, y));
                }
            }
        }
        for (x, y) in pairs {
            if !(g[y * p + x] && !fixed[y * p + x]) {
                continue;
            }
            let nbrs: Vec<usize> = (0..p).filter(|&k| k != y && snapshot[k * p + x]).collect();
            if nbrs.len() < ord {
                continue;
            }
            if nbrs.len() > ord {
                done = false;
            }
            let mut s: Vec<usize> = (0..ord).collect();
            loop {
                n_edgetests[ord] += 1.0;
                let set: Vec<u32> = s.iter().map(|&k| nbrs[k] as u32).collect();
                let mut pval = t.p_value(&mut (), x as u32, y as u32, &set).unwrap();
                if pval.is_nan() {
                    pval = if na_delete { 1.0 } else { 0.0 };
                }
                if pmax[x * p + y] < pval {
                    pmax[x * p + y] = pval;
                }
                if pval >= alpha {
                    g[x * p + y] = false;
                    g[y * p + x] = false;
                    sepset[x * p + y] = Some(set);
                    break;
                }
                if !next_set(nbrs.len(), &mut s) {
                    break;
                }
            }
        }
        ord += 1;
    }
    for i in 0..p {
        for j in 0..p {
            let m = pmax[i * p + j].max(pmax[j * p + i]);
            pmax[i * p + j] = m;
            pmax[j * p + i] = m;
        }
    }
    Reference { g, sepset, pmax, n_edgetests, max_ord: ord as i32 - 1 }
}

/// pcalg's C++ estimateSkeleton + fitCondInd ("stable.fast"), step by step.
fn reference_fast(t: &HashTest, p: usize, g0: &[bool], fixed: &[bool], alpha: f64, m_max: Option<usize>, na_delete: bool) -> Reference {
    let mut sepset = vec![None; p * p];
    let mut pmax = vec![-1.0; p * p];
    let mut g = vec![false; p * p];
    let mut counts = vec![0.0];
    for i in 0..p {
        for j in i + 1..p {
            if g0[i * p + j] && !fixed[i * p + j] {
                let pv = t.p_value(&mut (), i as u32, j as u32, &[]).unwrap();
                pmax[i * p + j] = pv;
                if pv >= alpha {
                    sepset[j * p + i] = Some(vec![]);
                }
            }
        }
    }
    for i in 0..p {
        for j in i + 1..p {
            if fixed[i * p + j] || (g0[i * p + j] && {
                counts[0] += 1.0;
                pmax[i * p + j] < alpha
            }) {
                g[i * p + j] = true;
                g[j * p + i] = true;
            }
        }
    }
    let max_cond = m_max.unwrap_or(p);
    let mut cond = 1usize;
    while cond <= max_cond {
        let deg = |g: &Vec<bool>, v: usize| (0..p).filter(|&k| g[v * p + k]).count();
        let mut work = Vec::new();
        for u in 0..p {
            for v in u + 1..p {
                if g[u * p + v] && deg(&g, u).max(deg(&g, v)) > cond && !fixed[u * p + v] {
                    work.push((u, v));
                }
            }
        }
        if work.is_empty() {
            break;
        }
        let mut level_tests = 0.0;
        let mut delete = Vec::new();
        for &(u, v) in &work {
            let mut test_side = |x: usize, y: usize, list: &[usize], m: usize, counts_out: &mut f64| -> bool {
                let mut s: Vec<usize> = (0..cond).collect();
                loop {
                    let set: Vec<u32> = s.iter().map(|&k| list[k] as u32).collect();
                    let mut pv = t.p_value(&mut (), x as u32, y as u32, &set).unwrap();
                    *counts_out += 1.0;
                    if pv.is_nan() {
                        pv = if na_delete { 1.0 } else { 0.0 };
                    }
                    if pv > pmax[u * p + v] {
                        pmax[u * p + v] = pv;
                    }
                    if pv >= alpha {
                        sepset[v * p + u] = Some(set);
                        return true;
                    }
                    // the C++ stops the second side before its first element reaches a common neighbour
                    let mut k = cond as isize - 1;
                    while k >= 0 && s[k as usize] == list.len() - cond + k as usize {
                        k -= 1;
                    }
                    if m > 0 && k == 0 && s[0] == m - 1 {
                        return false;
                    }
                    if k < 0 {
                        return false;
                    }
                    let k = k as usize;
                    s[k] += 1;
                    for j in k + 1..cond {
                        s[j] = s[j - 1] + 1;
                    }
                }
            };
            let mut found = false;
            if deg(&g, u) > cond {
                let list: Vec<usize> = (0..p).filter(|&k| g[u * p + k] && k != v).collect();
                found = test_side(u, v, &list, 0, &mut level_tests);
            }
            if !found && deg(&g, v) > cond {
                let mut list: Vec<usize> = (0..p).filter(|&k| g[v * p + k] && k != u && !g[u * p + k]).collect();
                let m = list.len();
                list.extend((0..p).filter(|&k| g[v * p + k] && k != u && g[u * p + k]));
                if m > 0 {
                    found = test_side(v, u, &list, m, &mut level_tests);
                }
            }
            if found {
                delete.push((u, v));
            }
        }
        for (u, v) in delete {
            g[u * p + v] = false;
            g[v * p + u] = false;
        }
        counts.push(level_tests);
        cond += 1;
    }
    let max_ord = counts.len() as i32 - 2;
    Reference { g, sepset, pmax, n_edgetests: counts, max_ord }
}

fn random_mask(p: usize, density: f64, seed: u64) -> Vec<bool> {
    let mut m = vec![false; p * p];
    let mut h = seed.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1;
    for i in 0..p {
        for j in i + 1..p {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            let on = (h >> 11) as f64 / (1u64 << 53) as f64 * 1.0 < density;
            m[i * p + j] = on;
            m[j * p + i] = on;
        }
    }
    m
}

/// Dense levels whose pMax comes back as a job the loop runs on another thread while the later
/// levels run (as a GPU's copy does): pMax is kept in a buffer of its own until then, filled as
/// the loop would fill it.
struct LatePmax<D> {
    inner: D,
    held: Vec<f64>,
    /// How long the copy takes: 0 lands it before the next level runs, more keeps the later
    /// levels' raises waiting for it.
    delay: std::time::Duration,
}

impl<D: DenseLevels> DenseLevels for LatePmax<D> {
    fn dense_order_ok(&self, order: Order) -> bool {
        self.inner.dense_order_ok(order)
    }
    fn dense_kind(&self) -> String {
        self.inner.dense_kind()
    }
    fn dense_begin(&mut self, order: Order, start: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> PcResult<()> {
        let p = start.p();
        self.held = vec![if order == Order::StableFast { -1.0 } else { f64::NEG_INFINITY }; p * p];
        if order == Order::Stable {
            for i in 0..p {
                self.held[i + i * p] = 1.0;
            }
        }
        self.inner.dense_begin(order, start, fixed, alpha, na_value)
    }
    fn dense_level(&mut self, level: usize, _pmax: &mut [f64], sep0: &mut BitMatrix, watch: &mut dyn Watch) -> PcResult<DenseLevelReport> {
        self.inner.dense_level(level, &mut self.held, sep0, watch)
    }
    fn dense_end(&mut self, graph: &mut Adjacency, pmax: &mut [f64], sep0: &mut BitMatrix) -> PcResult<()> {
        self.inner.dense_end(graph, &mut self.held, sep0)?;
        pmax.copy_from_slice(&self.held);
        Ok(())
    }
    fn dense_end_deferred(&mut self, graph: &mut Adjacency, _pmax: &mut [f64], sep0: &mut BitMatrix) -> PcResult<Option<PmaxCopy>> {
        self.inner.dense_end(graph, &mut self.held, sep0)?;
        let (held, delay) = (std::mem::take(&mut self.held), self.delay);
        Ok(Some(Box::new(move |dst: &mut [f64]| {
            std::thread::sleep(delay);
            dst.copy_from_slice(&held);
            Ok(())
        })))
    }
    fn writes_whole_pmax(&self) -> bool {
        true
    }
}

/// A backend by rounds on the CPU, the twin of the CMI-kNN GPU backend: rounds of `budget` tests,
/// two in flight; several of them take a level's edges from one feed (`own_feed`), or run the
/// edges they take as sub-plans (the trait's default).
struct RoundsCpu<'t> {
    t: &'t HashTest,
    budget: usize,
    own_feed: bool,
}

struct HeldRounds<'t> {
    t: &'t HashTest,
    level: usize,
    held: std::collections::VecDeque<Vec<f64>>,
}

impl RoundEval for HeldRounds<'_> {
    fn launch(&mut self, b: &Batch) -> PcResult<()> {
        let l = self.level;
        let p = (0..b.len()).map(|k| self.t.p_value(&mut (), b.x[k], b.y[k], &b.s[k * l..(k + 1) * l])).collect::<PcResult<Vec<f64>>>()?;
        self.held.push_back(p);
        Ok(())
    }
    fn finish(&mut self, _b: &Batch, p: &mut Vec<f64>) -> PcResult<()> {
        *p = self.held.pop_front().expect("a round launched");
        Ok(())
    }
    fn in_flight(&self) -> usize {
        2
    }
}

impl RoundsCpu<'_> {
    fn rounds(&self, level: usize) -> (RoundOpts<'static>, HeldRounds<'_>) {
        (RoundOpts { growth: 200, ..RoundOpts::new(self.budget) }, HeldRounds { t: self.t, level, held: Default::default() })
    }
}

impl Backend for RoundsCpu<'_> {
    fn name(&self) -> String {
        "rounds on the CPU".into()
    }
    fn run_level(&mut self, plan: &LevelPlan, _watch: &mut dyn Watch) -> PcResult<Vec<EdgeOutcome>> {
        let (opts, mut eval) = self.rounds(plan.level);
        run_pipelined(plan, &opts, &mut eval, |_| true)
    }
    fn feeds_rounds(&self) -> bool {
        true
    }
    fn run_fed(&mut self, plan: &LevelPlan, feed: &EdgeFeed, watch: &mut dyn Watch) -> PcResult<Vec<(u32, EdgeOutcome)>> {
        if !self.own_feed {
            return pc_core::backend::run_fed_by_subplans(self, plan, feed, watch);
        }
        let (opts, mut eval) = self.rounds(plan.level);
        let total = plan.edges.len() as u64;
        run_fed(plan, feed, &opts, &mut eval, |decided| watch.tick(decided as u64, total))
    }
}

/// Every slot of a result against the reference loop's.
fn same_result(got: &SkeletonResult, want: &Reference, p: usize, how: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(got.graph.to_dense(), want.g.clone(), "graph ({})", how);
    let mut sep = vec![None; p * p];
    for s in &got.all_sepsets() {
        sep[s.x as usize * p + s.y as usize] = Some(s.set.clone());
    }
    prop_assert_eq!(&sep, &want.sepset, "sepsets ({})", how);
    for k in 0..p * p {
        let (a, b) = (got.pmax[(k % p) * p + k / p], want.pmax[k]);
        prop_assert!(a == b || (a.is_nan() && b.is_nan()), "pmax at {} ({}): {} vs {}", k, how, a, b);
    }
    prop_assert_eq!(&got.n_edgetests, &want.n_edgetests, "n.edgetests ({})", how);
    prop_assert_eq!(got.max_ord, want.max_ord, "max.ord ({})", how);
    Ok(())
}

fn check(order: Order, p: usize, seed: u64, alpha: f64, gap_density: f64, fixed_density: f64, m_max: Option<usize>, na_delete: bool, nan_every: u64) -> Result<(), TestCaseError> {
    let t = HashTest { seed, nan_every, calls: Default::default() };
    let gaps = random_mask(p, gap_density, seed ^ 1);
    let fixed = random_mask(p, fixed_density, seed ^ 2);
    let mut g0: Vec<bool> = gaps.iter().map(|&b| !b).collect();
    for i in 0..p {
        g0[i * p + i] = false;
    }
    let want = match order {
        Order::Stable => reference_stable(&t, p, &g0, &fixed, alpha, m_max, na_delete),
        Order::StableFast => reference_fast(&t, p, &g0, &fixed, alpha, m_max, na_delete),
    };
    let want_calls = std::mem::take(&mut *t.calls.lock().unwrap());
    let params = SkeletonParams {
        alpha,
        order,
        m_max,
        na_delete,
        start: Adjacency::from_dense(p, &g0),
        fixed_edges: Adjacency::from_dense(p, &fixed),
        threads: 1,
    };
    // the planned path, and levels 0 and 1 on the dense CPU twin; with `devices` > 1 every level
    // split over that many simulated devices and merged (multi.rs; "stable" only for the dense
    // levels, whose twin declines stable.fast's split and falls back to planned levels)
    // (devices 0: one device whose dense levels hand pMax back as a job, `LatePmax`, which takes
    // 3 ms with one thread and no time with two)
    let variants: &[(usize, bool, usize)] = if order == Order::Stable {
        &[(1, false, 1), (3, false, 1), (1, true, 1), (3, true, 1), (2, true, 2), (1, true, 3), (2, false, 4), (2, true, 0), (1, true, 0)]
    } else {
        &[(1, false, 1), (3, false, 1), (2, false, 3), (1, true, 1), (3, true, 1), (2, true, 2), (2, true, 0), (1, true, 0)]
    };
    for &(threads, dense_levels, devices) in variants {
        let params = SkeletonParams { threads, ..params.clone() };
        let planned = || {
            let devs = (0..devices.max(1)).map(|_| ParallelCpu::new(&t, threads).unwrap()).collect();
            Split::new(devs, (0..devices.max(1)).map(|d| format!("device {d}")).collect()).unwrap()
        };
        let got = if devices == 0 {
            let delay = std::time::Duration::from_millis(if threads == 1 { 3 } else { 0 });
            let late = LatePmax { inner: DenseCpu::new(&t, threads).unwrap(), held: Vec::new(), delay };
            let mut b = WithDense { planned: planned(), dense: late };
            run_skeleton(&params, &mut b, &mut NullWatch).unwrap()
        } else if dense_levels {
            let mut b = WithDense { planned: planned(), dense: DenseCpu::with_devices(&t, threads, devices).unwrap() };
            run_skeleton(&params, &mut b, &mut NullWatch).unwrap()
        } else {
            let mut b = planned();
            run_skeleton(&params, &mut b, &mut NullWatch).unwrap()
        };
        same_result(&got, &want, p, &format!("dense levels: {dense_levels}, devices: {devices}"))?;
    }
    // stable.fast's levels >= 2 on the dense twin too, as one GPU runs them, pMax handed back
    // before level 2; and a deeper level declined (planned instead) while that copy is out
    if order == Order::StableFast {
        for (threads, last) in [(1, usize::MAX), (3, usize::MAX), (2, 2), (1, 3)] {
            let params = SkeletonParams { threads, ..params.clone() };
            let mut b = WithDense { planned: ParallelCpu::new(&t, threads).unwrap(), dense: DenseCpu::new(&t, threads).unwrap().with_deep_levels_up_to(last) };
            let got = run_skeleton(&params, &mut b, &mut NullWatch).unwrap();
            same_result(&got, &want, p, &format!("dense levels up to {last}, {threads} threads"))?;
        }
    }
    // levels split over devices by rounds: the edges from one feed (rounds of 1 and 5 tests over
    // 2 and 3 devices), or as sub-plans of the edges taken
    for (devices, budget, own_feed) in [(2, 5, true), (3, 1, true), (2, 3, false)] {
        let devs = (0..devices).map(|_| RoundsCpu { t: &t, budget, own_feed }).collect();
        let mut b = Split::new(devs, (0..devices).map(|d| format!("device {d}")).collect()).unwrap();
        let got = run_skeleton(&params, &mut b, &mut NullWatch).unwrap();
        same_result(&got, &want, p, &format!("{devices} devices by rounds of {budget}, own feed {own_feed}"))?;
    }
    t.calls.lock().unwrap().clear();
    let mut seq = SequentialCpu::new(&t, order);
    let again = run_skeleton(&params, &mut seq, &mut NullWatch).unwrap();
    prop_assert_eq!(again.graph.to_dense(), want.g, "sequential backend graph");
    prop_assert_eq!(&again.n_edgetests, &want.n_edgetests, "sequential backend n.edgetests");
    prop_assert!(*t.calls.lock().unwrap() == want_calls, "the sequential backend calls the test in another order than pcalg");
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn stable_matches_pcalg_r_loop(p in 2usize..14, seed in any::<u64>(), alpha in prop::sample::select(vec![0.01, 0.05, 0.2, 0.5, 0.8]),
                                   gaps in prop::sample::select(vec![0.0, 0.2, 0.6]), fixed in prop::sample::select(vec![0.0, 0.1]),
                                   m_max in prop::option::of(0usize..4), na_delete in any::<bool>(), nan_every in prop::sample::select(vec![0u64, 7])) {
        check(Order::Stable, p, seed, alpha, gaps, fixed, m_max, na_delete, nan_every)?;
    }

    #[test]
    fn stable_fast_matches_pcalg_cpp_loop(p in 2usize..14, seed in any::<u64>(), alpha in prop::sample::select(vec![0.01, 0.05, 0.2, 0.5, 0.8]),
                                          gaps in prop::sample::select(vec![0.0, 0.2, 0.6]), fixed in prop::sample::select(vec![0.0, 0.1]),
                                          m_max in prop::option::of(0usize..4), na_delete in any::<bool>(), nan_every in prop::sample::select(vec![0u64, 7])) {
        check(Order::StableFast, p, seed, alpha, gaps, fixed, m_max, na_delete, nan_every)?;
    }
}

// Graphs past 64 variables: several row blocks and column tiles in `apply_outcomes`, whose joins
// (bits of one word, pMax cells of both triangles) the small cases above never reach.
#[test]
fn larger_graphs_match_both_loops() {
    for (k, &(p, alpha, gaps, fixed)) in [(130usize, 0.5, 0.0, 0.0), (150, 0.8, 0.2, 0.05), (200, 0.2, 0.6, 0.1)].iter().enumerate() {
        for order in [Order::Stable, Order::StableFast] {
            check(order, p, 1000 + k as u64, alpha, gaps, fixed, Some(2), k % 2 == 0, 7).unwrap();
        }
    }
}

// A pMax buffer large enough to be faulted in while the dense levels run (p^2 >= 2^22 cells),
// then handed to the late copy: the same result as the planned levels on the CPU, bit for bit.
#[test]
fn a_large_pmax_faulted_in_then_copied_late() {
    let p = 2100;
    let t = HashTest { seed: 5, nan_every: 0, calls: Default::default() };
    let gaps = random_mask(p, 0.995, 77);
    let mut g0: Vec<bool> = gaps.iter().map(|&b| !b).collect();
    for i in 0..p {
        g0[i * p + i] = false;
    }
    let params = SkeletonParams {
        alpha: 0.2,
        order: Order::Stable,
        m_max: None,
        na_delete: true,
        start: Adjacency::from_dense(p, &g0),
        fixed_edges: Adjacency::empty(p),
        threads: 2,
    };
    let mut plain = ParallelCpu::new(&t, 2).unwrap();
    let want = run_skeleton(&params, &mut plain, &mut NullWatch).unwrap();
    // the dense levels keep level 1's sets apart (`sep1`): compared as one sorted list
    let sorted = |r: &pc_core::SkeletonResult| {
        let mut v: Vec<_> = r.all_sepsets().into_iter().map(|s| (s.x, s.y, s.set)).collect();
        v.sort();
        v
    };
    for delay in [0, 3] {
        let late = LatePmax { inner: DenseCpu::new(&t, 2).unwrap(), held: Vec::new(), delay: std::time::Duration::from_millis(delay) };
        let mut b = WithDense { planned: ParallelCpu::new(&t, 2).unwrap(), dense: late };
        let got = run_skeleton(&params, &mut b, &mut NullWatch).unwrap();
        assert!(got.graph.to_dense() == want.graph.to_dense(), "graph differs");
        assert!(sorted(&got) == sorted(&want), "sepsets differ");
        assert_eq!(got.n_edgetests, want.n_edgetests);
        assert!(got.pmax.iter().zip(&want.pmax).all(|(a, b)| a.to_bits() == b.to_bits()), "pMax differs");
    }
}
