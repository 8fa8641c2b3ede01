//! pcalg's "n < n.min" warning on a backend that computes tests past an edge's first success:
//! `GSquareTest::count_small_n` (what the GPU discrete backend calls with each level's plan and
//! outcomes) must count exactly what the CPU's `p_value` counts while it walks the canonical
//! prefixes, which is what pcalg runs (tests/testthat/test-robust.R compares the CPU with pcalg).

use pc_core::backend::{Backend, NullWatch, Watch};
use pc_core::citest::{DiscreteData, GSquareKind, GSquareScratch, GSquareTest};
use pc_core::combinations::next_subset;
use pc_core::cpu::ParallelCpu;
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::{run_skeleton, Adjacency, CiTest, Order, SkeletonParams};

/// The CPU's outcomes; `twin` counts from them, `all` runs every test of every edge (what a
/// backend that never stops at the first success computes).
struct Counting<'a> {
    cpu: ParallelCpu<'a, GSquareTest>,
    twin: &'a GSquareTest,
    all: &'a GSquareTest,
    /// The twin's threads (None: the calling thread).
    pool: Option<rayon::ThreadPool>,
}

impl Backend for Counting<'_> {
    fn name(&self) -> String {
        "counting".into()
    }
    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> pc_core::error::Result<Vec<EdgeOutcome>> {
        let out = self.cpu.run_level(plan, watch)?;
        self.twin.count_small_n(plan, &out, self.pool.as_ref())?;
        let (mut sc, mut list, mut pos) = (GSquareScratch::default(), Vec::new(), Vec::new());
        for e in &plan.edges {
            for side in e.sides.iter().flatten() {
                plan.side_list(side, &mut list);
                pos.clear();
                pos.extend(0..plan.level as u32);
                for r in 0..side.n_ranks {
                    let s: Vec<u32> = pos.iter().map(|&q| list[q as usize]).collect();
                    self.all.p_value(&mut sc, side.x, side.y, &s)?;
                    if r + 1 < side.n_ranks {
                        next_subset(side.len, &mut pos);
                    }
                }
            }
        }
        Ok(out)
    }
}

fn lcg(state: &mut u64) -> u64 {
    *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    *state >> 33
}

/// n x p codes where each column copies an earlier one for about 70% of its rows (so edges
/// survive into the levels where df grows).
fn data(seed: u64, n: usize, p: usize, bin: bool) -> (Vec<u8>, Vec<u32>) {
    let mut st = seed.wrapping_add(0x9e37_79b9);
    let nlev: Vec<u32> = (0..p).map(|_| if bin { 2 } else { 2 + (lcg(&mut st) % 3) as u32 }).collect();
    let mut codes = vec![0u8; n * p];
    for j in 0..p {
        let parent = if j > 0 { Some((lcg(&mut st) as usize) % j) } else { None };
        for i in 0..n {
            let own = (lcg(&mut st) % nlev[j] as u64) as u8;
            codes[j * n + i] = match parent {
                Some(q) if lcg(&mut st) % 10 < 7 => codes[q * n + i] % nlev[j] as u8,
                _ => own,
            };
        }
        codes[j * n] = 0; // every level seen is not needed: nlev is given
    }
    (codes, nlev)
}

#[test]
fn small_n_counts_from_outcomes_equal_the_cpus() {
    let mut beyond = 0;
    let mut with_small = 0;
    for seed in 0..48u64 {
        let p = 4 + (seed % 5) as usize;
        let n = [12, 25, 40, 70, 120, 300][(seed / 5 % 6) as usize];
        let bin = seed % 3 == 0;
        let kind = if bin { GSquareKind::Bin } else { GSquareKind::Dis };
        let (codes, nlev) = data(seed, n, p, bin);
        let make = || GSquareTest::new(DiscreteData::new(n, p, codes.clone(), nlev.clone()).unwrap(), kind, seed % 4 == 1).unwrap();
        for order in [Order::Stable, Order::StableFast] {
            let (cpu_t, twin, all) = (make(), make(), make());
            let full: Vec<bool> = (0..p * p).map(|k| k / p != k % p).collect();
            let params = SkeletonParams {
                alpha: [0.01, 0.05, 0.3][(seed % 3) as usize],
                order,
                m_max: None,
                na_delete: true,
                start: Adjacency::from_dense(p, &full),
                fixed_edges: Adjacency::from_dense(p, &vec![false; p * p]),
                threads: 1,
            };
            let pool = (seed % 2 == 1).then(|| pc_core::threads::call_pool(3, "test").unwrap());
            let mut b = Counting { cpu: ParallelCpu::new(&cpu_t, 1).unwrap(), twin: &twin, all: &all, pool };
            run_skeleton(&params, &mut b, &mut NullWatch).unwrap();
            let (want, got) = (cpu_t.small_n_tests(), twin.small_n_tests());
            assert_eq!(got, want, "seed {seed}, {order:?}: (tests, smallest n.min) from the outcomes vs the CPU's");
            with_small += (want.0 > 0) as u32;
            beyond += (all.small_n_tests().0 > want.0) as u32;
        }
    }
    // the inputs exercise the rule: small-n tests occur, and counting every computed test
    // (not only pcalg's prefixes) would differ
    assert!(with_small >= 20, "{with_small}");
    assert!(beyond >= 5, "{beyond}");
}

/// `count_small_n_listed` (the GPU's triple-check evaluator counts its tests with it) counts what
/// `p_value` counts when it runs the same listed tests: mixed |S| from 0 to 5, Dis and Bin.
#[test]
fn small_n_counts_of_listed_tests_equal_p_values() {
    let mut with_small = 0;
    let mut without = 0;
    for seed in 0..30u64 {
        let p = 8;
        let n = [15, 30, 60, 150, 400][(seed % 5) as usize];
        let bin = seed % 3 == 0;
        let kind = if bin { GSquareKind::Bin } else { GSquareKind::Dis };
        let (codes, nlev) = data(seed + 100, n, p, bin);
        let make = || GSquareTest::new(DiscreteData::new(n, p, codes.clone(), nlev.clone()).unwrap(), kind, seed % 2 == 1).unwrap();
        let (cpu_t, listed) = (make(), make());
        let mut st = seed;
        let tests: Vec<(u32, u32, Vec<u32>)> = (0..40)
            .map(|_| {
                let x = (lcg(&mut st) % p as u64) as u32;
                let y = (x + 1 + (lcg(&mut st) % (p as u64 - 1)) as u32) % p as u32;
                let l = (lcg(&mut st) % 6) as usize;
                let s: Vec<u32> = (0..p as u32).filter(|&v| v != x && v != y).take(l).collect();
                (x, y, s)
            })
            .collect();
        let mut sc = GSquareScratch::default();
        for (x, y, s) in &tests {
            cpu_t.p_value(&mut sc, *x, *y, s).unwrap();
        }
        let k = listed.count_small_n_listed(tests.iter().map(|(x, y, s)| (*x, *y, s.as_slice())));
        assert_eq!(listed.small_n_tests(), cpu_t.small_n_tests(), "seed {seed}");
        assert_eq!(k, cpu_t.small_n_tests().0);
        if k > 0 && k < tests.len() as u64 {
            with_small += 1;
        } else {
            without += 1;
        }
    }
    assert!(with_small >= 10, "{with_small}");
    assert!(without >= 1, "{without}");
}
