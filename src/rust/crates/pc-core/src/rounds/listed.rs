//! The triple checks' listed tests on a backend that takes one |S| per launch (the G^2
//! kernel): a batch (`orient::TestBatch`) mixes sizes, so [`plan_launches`] groups the tests by
//! |S| (each group in batch order) and cuts the groups into launches of at most a round's
//! budget, and [`run_launches`] writes each launch's tests while the previous one runs (one in
//! flight, as level 0 does, or two where the evaluator holds them) and puts every p-value back
//! at its test's place. Tests with |S| above the kernel's deepest go to the CPU.
//! [`split_tests`] and [`gather`] do the same for a kernel of several variants that takes every
//! |S| up to its deepest in one launch (the Gaussian one).

use crate::error::{PcError, Result};
use crate::orient::TestBatch;
use crate::rounds::rank_windows::Batch;

/// A size per test (x, y, S): the kernel's global table words.
pub type TestWords<'w> = &'w dyn Fn(u32, u32, &[u32]) -> u64;

/// One launch of `gsquare_tests`: its |S| and its tests (indices into the batch, in batch order).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Launch {
    pub level: usize,
    pub tests: Vec<usize>,
}

/// Where the tests of a batch run: `launches` on the GPU (by |S| ascending, each |S| cut into
/// launches of at most the budget), `cpu` the rest (|S| above `max_level`), in batch order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ListedPlan {
    pub launches: Vec<Launch>,
    pub cpu: Vec<usize>,
}

impl ListedPlan {
    /// The tests the GPU runs, launch by launch.
    pub fn gpu_tests(&self) -> impl Iterator<Item = usize> + '_ {
        self.launches.iter().flat_map(|l| l.tests.iter().copied())
    }
}

/// Groups `batch`'s tests by |S| and cuts each group into launches of at most `budget` tests;
/// tests with |S| > `max_level` go to the CPU.
pub fn plan_launches(batch: &TestBatch, max_level: usize, budget: usize) -> ListedPlan {
    let budget = budget.max(1);
    let mut by_level: Vec<Vec<usize>> = Vec::new();
    let mut out = ListedPlan::default();
    for t in 0..batch.len() {
        let l = batch.set(t).len();
        if l > max_level {
            out.cpu.push(t);
            continue;
        }
        if by_level.len() <= l {
            by_level.resize_with(l + 1, Vec::new);
        }
        by_level[l].push(t);
    }
    for (level, tests) in by_level.into_iter().enumerate() {
        for part in tests.chunks(budget) {
            out.launches.push(Launch { level, tests: part.to_vec() });
        }
    }
    out
}

/// Writes `launch`'s tests into `b` (x, y and the sets, `level` members each), with their
/// largest `words` (the kernel's global table words, 0 where the table fits in shared memory).
pub fn fill(batch: &TestBatch, launch: &Launch, words: Option<TestWords>, b: &mut Batch) -> Result<()> {
    let m = launch.tests.len();
    b.x.clear();
    b.y.clear();
    b.s.clear();
    b.max_words = 0;
    let room = |e| PcError::Internal(format!("out of memory for a launch of {m} tests: {e}"));
    b.x.try_reserve(m).map_err(room)?;
    b.y.try_reserve(m).map_err(room)?;
    b.s.try_reserve(m * launch.level).map_err(room)?;
    for &t in &launch.tests {
        let s = batch.set(t);
        if s.len() != launch.level {
            return Err(PcError::Internal(format!("test {t} has {} conditioning variables in a launch of {}", s.len(), launch.level)));
        }
        b.x.push(batch.x[t]);
        b.y.push(batch.y[t]);
        b.s.extend_from_slice(s);
        if let Some(f) = words {
            b.max_words = b.max_words.max(f(batch.x[t], batch.y[t], s));
        }
    }
    Ok(())
}

/// A device that evaluates launches of one |S| each, in two steps (the host writes the next
/// launch while one runs): the G^2 backend's `Rounds`, or a CPU twin in tests.
pub trait LevelRounds {
    /// Starts evaluating `b`, whose tests have `level` conditioning variables each.
    fn launch_level(&mut self, level: usize, b: &Batch) -> Result<()>;
    /// Waits for the oldest launch not yet finished (`b`) and puts its p-values into `p`, one per
    /// test.
    fn finish(&mut self, b: &Batch, p: &mut Vec<f64>) -> Result<()>;
    /// How many launches it holds at once (2: the next one is queued before the host waits).
    fn in_flight(&self) -> usize {
        1
    }
}

/// Runs `plan`'s launches through `eval`, one in flight while the host writes the next, and puts
/// each p-value at its test's place in `out` (which holds one per test of `batch`; the CPU's
/// places are left alone). `keep_going` is asked before each launch.
pub fn run_launches(
    batch: &TestBatch,
    plan: &ListedPlan,
    words: Option<TestWords>,
    eval: &mut dyn LevelRounds,
    out: &mut [f64],
    mut keep_going: impl FnMut() -> bool,
) -> Result<()> {
    if out.len() != batch.len() {
        return Err(PcError::Internal(format!("{} places for {} tests", out.len(), batch.len())));
    }
    let k = plan.launches.len();
    let mut bufs = [Batch::default(), Batch::default()];
    let mut p = Vec::new();
    // with two in flight, launch c is queued behind launch c - 1 before the host waits for that one
    let queued = eval.in_flight() >= 2;
    for c in 0..=k {
        if c < k {
            if !keep_going() {
                return Err(PcError::Interrupted);
            }
            fill(batch, &plan.launches[c], words, &mut bufs[c % 2])?;
            if queued {
                eval.launch_level(plan.launches[c].level, &bufs[c % 2])?;
            }
        }
        if c > 0 {
            let q = c - 1;
            eval.finish(&bufs[q % 2], &mut p)?;
            let tests = &plan.launches[q].tests;
            if p.len() != tests.len() {
                return Err(PcError::Internal(format!("{} p-values for {} tests", p.len(), tests.len())));
            }
            for (&t, &v) in tests.iter().zip(&p) {
                out[t] = v;
            }
        }
        if c < k && !queued {
            eval.launch_level(plan.launches[c].level, &bufs[c % 2])?;
        }
    }
    Ok(())
}

/// Where the tests of a batch run on a kernel of several variants (the deepest |S| each holds):
/// `gpu[v]` the tests for variant `variants[v]` (the smallest that holds |S|), `cpu` the rest;
/// each in batch order.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Split {
    pub gpu: Vec<Vec<usize>>,
    pub cpu: Vec<usize>,
}

/// Splits `batch` by kernel variant (`variants` ascending); with `gpu_ok` false every test goes
/// to the CPU.
pub fn split_tests(batch: &TestBatch, variants: &[usize], gpu_ok: bool) -> Split {
    let mut out = Split { gpu: vec![Vec::new(); variants.len()], cpu: Vec::new() };
    for t in 0..batch.len() {
        let l = batch.set(t).len();
        match variants.iter().position(|&m| l <= m) {
            Some(v) if gpu_ok => out.gpu[v].push(t),
            _ => out.cpu.push(t),
        }
    }
    out
}

/// The kernel's inputs for tests `idx` of `batch`: x, y, S offsets (u64, one more than tests)
/// and the S members.
pub fn gather(batch: &TestBatch, idx: &[usize]) -> (Vec<u32>, Vec<u32>, Vec<u64>, Vec<u32>) {
    let (mut x, mut y, mut start, mut s) = (Vec::with_capacity(idx.len()), Vec::with_capacity(idx.len()), Vec::with_capacity(idx.len() + 1), Vec::new());
    start.push(0u64);
    for &t in idx {
        x.push(batch.x[t]);
        y.push(batch.y[t]);
        s.extend_from_slice(batch.set(t));
        start.push(s.len() as u64);
    }
    (x, y, start, s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::citest::{CiTest, GSquareKind, GSquareScratch, GSquareTest};
    use crate::orient::{BatchEvaluator, ParallelBatch};
    use crate::rounds::rank_windows::tests::{chain_data, Eager, Lcg};
    use crate::rounds::rank_windows::RoundEval;
    use crate::NullWatch;

    /// Test t is (t, t + 1 | 100, 101, ...) with |S| = sizes[t].
    fn batch(sizes: &[usize]) -> TestBatch {
        let mut b = TestBatch::default();
        sizes.iter().enumerate().for_each(|(t, &l)| b.push(t as u32, t as u32 + 1, 100..100 + l as u32));
        b
    }

    #[test]
    fn tests_go_to_the_smallest_variant_that_holds_them_and_the_rest_to_the_cpu() {
        let b = batch(&[0, 1, 2, 4, 5, 8, 9, 16, 17, 32, 33, 3]);
        let s = split_tests(&b, &[4, 8, 16, 32], true);
        assert_eq!(s.gpu, vec![vec![0, 1, 2, 3, 11], vec![4, 5], vec![6, 7], vec![8, 9]]);
        assert_eq!(s.cpu, vec![10]);
        let s = split_tests(&b, &[4, 8, 16, 32], false);
        assert!(s.gpu.iter().all(|v| v.is_empty()));
        assert_eq!(s.cpu, (0..12).collect::<Vec<_>>());
    }

    #[test]
    fn gather_lists_the_chosen_tests_in_order() {
        let b = batch(&[2, 0, 3]);
        let (x, y, start, s) = gather(&b, &[2, 1, 0]);
        assert_eq!(x, vec![2, 1, 0]);
        assert_eq!(y, vec![3, 2, 1]);
        assert_eq!(start, vec![0, 3, 3, 5]);
        assert_eq!(s, vec![100, 101, 102, 100, 101]);
    }
    #[test]
    fn launches_group_by_set_size_in_batch_order_within_the_budget() {
        let b = batch(&[2, 0, 2, 1, 2, 40, 2, 0, 33, 2]);
        let plan = plan_launches(&b, 32, 2);
        let got: Vec<(usize, Vec<usize>)> = plan.launches.iter().map(|l| (l.level, l.tests.clone())).collect();
        assert_eq!(got, vec![(0, vec![1, 7]), (1, vec![3]), (2, vec![0, 2]), (2, vec![4, 6]), (2, vec![9])]);
        assert_eq!(plan.cpu, vec![5, 8]);
        assert_eq!(plan.gpu_tests().collect::<Vec<_>>(), vec![1, 7, 3, 0, 2, 4, 6, 9]);
        // every test once, in one place or the other
        let plan = plan_launches(&b, 1, 100);
        assert_eq!(plan.launches.len(), 2);
        assert_eq!(plan.cpu, vec![0, 2, 4, 5, 6, 8, 9]);
        assert!(plan_launches(&TestBatch::default(), 32, 10).launches.is_empty());
        assert_eq!(plan_launches(&b, 32, 0).launches.len(), 8, "a zero budget still makes progress");
    }

    #[test]
    fn fill_writes_a_launch_and_its_largest_table() {
        let b = batch(&[2, 0, 2]);
        let mut out = Batch::default();
        let words = |x: u32, y: u32, s: &[u32]| (x * 10 + y) as u64 + s.len() as u64;
        fill(&b, &Launch { level: 2, tests: vec![2, 0] }, Some(&words), &mut out).unwrap();
        assert_eq!((out.x.clone(), out.y.clone(), out.s.clone()), (vec![2, 0], vec![3, 1], vec![100, 101, 100, 101]));
        assert_eq!(out.max_words, 2 * 10 + 3 + 2);
        fill(&b, &Launch { level: 0, tests: vec![1] }, None, &mut out).unwrap();
        assert_eq!((out.x.clone(), out.s.len(), out.max_words), (vec![1], 0, 0));
        assert!(fill(&b, &Launch { level: 1, tests: vec![0] }, None, &mut out).is_err());
    }

    /// The windows' CPU twin (`Eager`) as the triple checks' evaluator: each launch is checked to
    /// hold `level` members per test, and computed at launch from the batch as the kernel reads it.
    impl<F: FnMut(&Batch) -> Vec<f64>> LevelRounds for Eager<F> {
        fn launch_level(&mut self, level: usize, b: &Batch) -> Result<()> {
            assert_eq!(b.s.len(), b.len() * level);
            RoundEval::launch(self, b)
        }
        fn finish(&mut self, b: &Batch, p: &mut Vec<f64>) -> Result<()> {
            RoundEval::finish(self, b, p)
        }
        fn in_flight(&self) -> usize {
            RoundEval::in_flight(self)
        }
    }

    /// G^2 p-values of a launch's tests, as the kernel reads them (x, y, |S| = s.len() / len
    /// members per test), for a launch of at most `budget` tests.
    fn cpu_launch(test: &GSquareTest, budget: usize) -> impl FnMut(&Batch) -> Vec<f64> + '_ {
        move |b: &Batch| {
            assert!(b.len() <= budget && !b.is_empty());
            let level = b.s.len() / b.len();
            let mut sc = GSquareScratch::default();
            (0..b.len()).map(|t| test.p_value(&mut sc, b.x[t], b.y[t], &b.s[t * level..(t + 1) * level]).unwrap()).collect()
        }
    }

    /// Random listed batches (mixed |S| 0..6, Dis and Bin, adaptDF on and off, small n so that
    /// the n < n.min rule fires): the launches through the CPU twin plus the CPU part give
    /// ParallelBatch's p-values bit for bit at every budget and kernel depth, and the small-n
    /// count and smallest n.min are ParallelBatch's.
    #[test]
    fn listed_launches_give_the_cpu_batchs_p_values_and_small_n_counts() {
        let mut r = Lcg(5);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        let (mut small, mut to_cpu) = (0, 0);
        for case in 0..16u64 {
            let p = 8 + r.next(6) as usize;
            let n = [40, 90, 200, 600][case as usize % 4];
            let data = chain_data(n, p, case + 1);
            let kind = if case % 3 == 0 { GSquareKind::Bin } else { GSquareKind::Dis };
            let data = if kind == GSquareKind::Bin {
                let codes = data.codes.iter().map(|&c| c % 2).collect();
                crate::citest::DiscreteData::new(n, p, codes, vec![2; p]).unwrap()
            } else {
                data
            };
            let make = || GSquareTest::new(crate::citest::DiscreteData::new(n, p, data.codes.clone(), data.nlev.clone()).unwrap(), kind, case % 2 == 0).unwrap();
            // the device twin computes with its own copy: a device counts nothing on the host
            let (t_cpu, t_gpu, t_dev) = (make(), make(), make());
            let mut b = TestBatch::default();
            for _ in 0..(20 + r.next(200)) {
                let x = r.next(p as u64) as u32;
                let y = (x + 1 + r.next(p as u64 - 1) as u32) % p as u32;
                let l = r.next(7) as usize;
                let mut s: Vec<u32> = (0..p as u32).filter(|&v| v != x && v != y).collect();
                // a random l-subset, in the order the triple checks list them (ascending)
                while s.len() > l {
                    s.remove(r.next(s.len() as u64) as usize);
                }
                b.push(x, y, s);
            }
            let mut want = Vec::new();
            ParallelBatch::new(&t_cpu, &pool).p_values(&b, &mut want, &mut NullWatch).unwrap();
            for (budget, max_level, depth) in [(1, 32, 1), (3, 4, 2), (17, 32, 1), (17, 32, 2), (1 << 20, 2, 2)] {
                let fresh = make();
                let t_gpu = if budget == 1 { &t_gpu } else { &fresh };
                let plan = plan_launches(&b, max_level, budget);
                let mut got = vec![f64::NAN; b.len()];
                let words = |x: u32, y: u32, s: &[u32]| (x + y) as u64 * s.len() as u64;
                let mut ev = if depth == 1 { Eager::new(cpu_launch(&t_dev, budget)) } else { Eager::queued(cpu_launch(&t_dev, budget)) };
                run_launches(&b, &plan, Some(&words), &mut ev, &mut got, || true).unwrap();
                assert_eq!(ev.rounds, plan.launches.len());
                t_gpu.count_small_n_listed(plan.gpu_tests().map(|t| (b.x[t], b.y[t], b.set(t))));
                // the CPU part as the evaluator runs it
                let mut sub = TestBatch::default();
                for &t in &plan.cpu {
                    sub.push(b.x[t], b.y[t], b.set(t).iter().copied());
                }
                let mut pv = Vec::new();
                ParallelBatch::new(t_gpu, &pool).p_values(&sub, &mut pv, &mut NullWatch).unwrap();
                for (k, &t) in plan.cpu.iter().enumerate() {
                    got[t] = pv[k];
                }
                to_cpu += !plan.cpu.is_empty() as u32;
                for t in 0..b.len() {
                    assert_eq!(got[t].to_bits(), want[t].to_bits(), "case {case} budget {budget} depth {depth} test {t}");
                }
                assert_eq!(t_gpu.small_n_tests(), t_cpu.small_n_tests(), "case {case} budget {budget}");
            }
            small += (t_cpu.small_n_tests().0 > 0) as u32;
        }
        assert!(small >= 6, "{small}");
        assert!(to_cpu >= 10, "{to_cpu}");
    }

    /// An interrupt before a launch stops the run.
    #[test]
    fn interrupts_stop_between_launches() {
        let data = chain_data(100, 6, 3);
        let t = GSquareTest::new(data, GSquareKind::Dis, false).unwrap();
        let mut b2 = TestBatch::default();
        for k in 0..4 {
            b2.push(k as u32 % 3, 3 + k as u32 % 3, []);
        }
        let plan = plan_launches(&b2, 32, 1);
        let mut ev = Eager::new(cpu_launch(&t, 1));
        let mut asked = 0;
        let mut out = vec![0.0; b2.len()];
        let e = run_launches(&b2, &plan, None, &mut ev, &mut out, || {
            asked += 1;
            asked < 3
        })
        .unwrap_err();
        assert!(matches!(e, PcError::Interrupted));
        assert_eq!(ev.rounds, 2);
    }
}
