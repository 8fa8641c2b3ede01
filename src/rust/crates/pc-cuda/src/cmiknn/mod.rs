//! `CudaCmiKnn`: tigramite's CMI-kNN test on the GPU, many tests per launch.
//!
//! The ranks and the digamma table are uploaded once. A batch of tests is grouped by (x, S): the
//! permutations of a group (pc-cmiknn's Philox-keyed restricted permutations, made on the host's
//! pool by the same code the CPU test runs) are uploaded once and read by every y of the group.
//! One launch of `cmiknn_partials` evaluates every test's original statistic and all its
//! surrogates; the host adds each estimate's chunk sums in the CPU's order, so statistic, null
//! and p-value equal `pc_cmiknn::CmiKnn::run` bit for bit. As a backend of the level loop the
//! tests of a level go through `pc_core::rounds::rank_windows::run_pipelined`, which keeps pcalg's first-success
//! order, two rounds at a time; several devices take a level's edges from one feed (`run_fed`).
//!
//! Device memory is planned before each batch: the groups' permutations (B n 4 bytes each) and
//! the partial sums ((B + 1) ceil(n / 256) 8 bytes per test) are split into launches that fit in
//! a quarter of the free memory and 1 GiB (the host holds the same permutations).

mod params;

use std::collections::HashMap;
use std::time::Instant;

use cudarc::driver::{CudaSlice, LaunchConfig};
use pc_cmiknn::estimator::{cmi_from_sum, sum_of_chunks, LANES};
use pc_cmiknn::permute::PermScratch;
use pc_cmiknn::{p_value, CmiKnn, Outcome};
use pc_core::backend::{run_fed_by_subplans, Backend, Control, Watch};
use pc_core::cpu::ParallelCpu;
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::PcError;
use rayon::prelude::*;

use crate::runtime::timings::Timings;
use crate::runtime::gpu::{cuda_err, guard, watched_level, Clock, Gpu, Kernel, Result};
use crate::runtime::module;
use pc_core::rounds::feed::EdgeFeed;
use pc_core::rounds::rank_windows::{run_fed, run_pipelined, AtOnce, Batch, RoundEval, RoundOpts, ROUNDS_GROWTH};

/// The kernel's MAXL: larger conditioning sets run on the CPU.
pub const MAX_LEVEL: usize = 8;
/// Tests of one launch at most (grid z).
const MAX_TESTS_PER_LAUNCH: usize = 65_535;
/// Tests per round of the level loop (each is (B + 1) ceil(n / 256) blocks).
const ROUND_TESTS: usize = 2048;

pub struct CudaCmiKnn<'a> {
    test: &'a CmiKnn,
    gpu: Gpu,
    f: Kernel,
    ranks: CudaSlice<u32>,
    psi: CudaSlice<f64>,
    /// The host's threads for the permutations; several devices of one call share one pool (see
    /// [`CudaCmiKnn::new_shared`]).
    pool: std::sync::Arc<rayon::ThreadPool>,
    timings: std::sync::Mutex<Timings>,
}

/// One test: x _||_ y | s.
#[derive(Clone, Debug)]
pub struct CmiCase {
    pub x: u32,
    pub y: u32,
    pub s: Vec<u32>,
}

/// Every group's `sig_samples` permutations, group after group (n rows each), made on `pool`.
///
/// A conditioning set's Z-neighbours (an O(n^2 |S|) search, most of the host's work at levels
/// >= 1) serve every x tested with that set: one search per distinct S of the groups, shared by
/// its groups, where a search per group repeated it for each x (at level 1 every x adjacent to z
/// shares S = {z}).
pub fn group_permutations(test: &CmiKnn, groups: &[(u32, Vec<u32>)], pool: &rayon::ThreadPool) -> Result<Vec<u32>> {
    let n = test.n();
    let b = test.params().sig_samples;
    let mut perms: Vec<u32> = Vec::new();
    perms
        .try_reserve_exact(groups.len() * b * n)
        .map_err(|_| PcError::Cuda(format!("not enough host memory for {} groups' permutations", groups.len())))?;
    perms.resize(groups.len() * b * n, 0);
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_by(|&a, &c| groups[a].1.cmp(&groups[c].1));
    let mut slots: Vec<Option<&mut [u32]>> = perms.chunks_mut((b * n).max(1)).map(Some).collect();
    let buckets: Vec<Vec<(usize, &mut [u32])>> = order
        .chunk_by(|&a, &c| groups[a].1 == groups[c].1)
        .map(|ids| ids.iter().filter_map(|&g| Some((g, slots.get_mut(g)?.take()?))).collect())
        .collect();
    pool.install(|| {
        buckets.into_par_iter().try_for_each(|bucket| -> Result<()> {
            let Some(&(first, _)) = bucket.first() else { return Ok(()) };
            let s = &groups[first].1;
            let nb = test.neighbours(s)?;
            bucket.into_par_iter().for_each(|(g, dst)| {
                let key = test.key(groups[g].0, s);
                dst.par_chunks_mut(n).enumerate().for_each_init(PermScratch::default, |sc, (e, row)| {
                    test.permutation(key, e as u32, nb.as_deref(), sc, row);
                });
            });
            Ok(())
        })
    })?;
    Ok(perms)
}

impl<'a> CudaCmiKnn<'a> {
    /// Opens the device, compiles the kernel and uploads the ranks; `threads` (0: all cores) make
    /// the permutations.
    pub fn new(test: &'a CmiKnn, threads: usize) -> Result<Self> {
        Self::new_on(test, threads, crate::runtime::device::device_ordinal())
    }

    /// [`CudaCmiKnn::new`] on device `ordinal` (one of several: `pc_core::multi::Split`).
    pub fn new_on(test: &'a CmiKnn, threads: usize, ordinal: usize) -> Result<Self> {
        Self::new_shared(test, std::sync::Arc::new(Self::host_pool(threads)?), ordinal)
    }

    /// The host threads for [`CudaCmiKnn::new_shared`].
    pub fn host_pool(threads: usize) -> Result<rayon::ThreadPool> {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("gpupc-cmiknn-{i}"))
            .build()
            .map_err(|e| PcError::Internal(format!("could not start CPU threads: {e}")))
    }

    /// [`CudaCmiKnn::new_on`] with the host threads of `pool`, which the other devices of the
    /// call may share: a device's rounds alternate host work (the neighbours and permutations of
    /// its groups) with its kernel, so while one device waits for its kernel the other's host
    /// work can take every core, where a pool per device would leave it half of them (as two
    /// processes of one device each do: two MPI ranks ran CMI-kNN 1.79x faster than one GPU,
    /// one process on both GPUs with a pool per device 1.65x).
    pub fn new_shared(test: &'a CmiKnn, pool: std::sync::Arc<rayon::ThreadPool>, ordinal: usize) -> Result<Self> {
        guard("opening the GPU", || {
            let gpu = Gpu::open_on(ordinal)?;
            let d = test.data();
            gpu.ensure_free(d.as_slice().len() * 4 + test.psi().len() * 8, "the ranks")?;
            let compiled = module::module_for(&gpu, module::Family::CmiKnn).map_err(PcError::Cuda)?;
            let f = compiled.function("cmiknn_partials").map_err(PcError::Cuda)?;
            let t = Instant::now();
            let ranks = gpu.stream.clone_htod(d.as_slice()).map_err(cuda_err("could not upload the ranks"))?;
            let psi = gpu.stream.clone_htod(test.psi()).map_err(cuda_err("could not upload the digamma table"))?;
            gpu.stream.synchronize().map_err(cuda_err("could not upload the ranks"))?;
            let timings = Timings::opened(&compiled, t.elapsed().as_secs_f64());
            Ok(CudaCmiKnn { test, gpu, f, ranks, psi, pool, timings: std::sync::Mutex::new(timings) })
        })
    }

    pub fn device_name(&self) -> &str {
        &self.gpu.info.name
    }

    pub fn timings(&self) -> Timings {
        self.timings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn book(&self, f: impl FnOnce(&mut Timings)) {
        f(&mut self.timings.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// Statistic, null and p-value of every case, in the order given.
    pub fn run_tests(&self, cases: &[CmiCase]) -> Result<Vec<Outcome>> {
        let n = self.test.n();
        let b = self.test.params().sig_samples;
        for c in cases {
            if c.s.len() > MAX_LEVEL {
                return Err(PcError::Cuda(format!("CMI-kNN on the GPU takes at most {MAX_LEVEL} conditioning variables")));
            }
            // the CPU test's own checks (indices, distinct variables)
            if c.x == c.y || c.s.contains(&c.x) || c.s.contains(&c.y) || c.x as usize >= self.test.data().p() || c.y as usize >= self.test.data().p() {
                return Err(PcError::Test("CMI-kNN: x, y and S must be distinct variables in range".into()));
            }
        }
        if b + 1 > 65_535 {
            return Err(PcError::Cuda("CMI-kNN on the GPU takes at most 65534 permutations".into()));
        }
        // groups by (x, sorted S), in order of first appearance
        let mut group_of: HashMap<(u32, Vec<u32>), usize> = HashMap::new();
        let mut groups: Vec<(u32, Vec<u32>)> = Vec::new();
        let mut case_group = Vec::with_capacity(cases.len());
        for c in cases {
            let mut s = c.s.clone();
            s.sort_unstable();
            let key = (c.x, s);
            let g = *group_of.entry(key.clone()).or_insert_with(|| {
                groups.push(key);
                groups.len() - 1
            });
            case_group.push(g);
        }
        // a quarter of the free device memory, and at most 1 GiB of permutations on the host
        let budget = crate::runtime::memplan::cmiknn_budget(self.gpu.free_bytes()? as u64);
        let mut out: Vec<Option<Outcome>> = vec![None; cases.len()];
        // launches: consecutive groups while their permutations and tests fit the budget
        let mut g0 = 0;
        while g0 < groups.len() {
            let mut g1 = g0;
            let mut bytes = 0u64;
            let mut n_tests = 0usize;
            while g1 < groups.len() {
                let tests_g = case_group.iter().filter(|&&g| g == g1).count();
                let add = crate::runtime::memplan::cmiknn_group_bytes(b, n, tests_g, LANES, MAX_LEVEL);
                if g1 > g0 && (bytes + add > budget || n_tests + tests_g > MAX_TESTS_PER_LAUNCH) {
                    break;
                }
                bytes += add;
                n_tests += tests_g;
                g1 += 1;
            }
            // one group over the budget: its permutations grow with sig_samples x n
            crate::runtime::memplan::fits(bytes, 0, budget, "suffStat$sig_samples", || {
                format!("one CMI-kNN group ({b} permutations of {n} samples; a quarter of the free memory, at most 1 GiB)")
            })?;
            let idx: Vec<usize> = (0..cases.len()).filter(|&i| (g0..g1).contains(&case_group[i])).collect();
            let res = self.launch(cases, &idx, &case_group, &groups[g0..g1], g0)?;
            for (i, o) in idx.into_iter().zip(res) {
                out[i] = Some(o);
            }
            g0 = g1;
        }
        self.book(|t| t.gpu_tests += cases.len() as u64);
        Ok(out.into_iter().map(|o| o.expect("every case evaluated")).collect())
    }

    fn launch(&self, cases: &[CmiCase], idx: &[usize], case_group: &[usize], groups: &[(u32, Vec<u32>)], g_base: usize) -> Result<Vec<Outcome>> {
        let n = self.test.n();
        let b = self.test.params().sig_samples;
        let test = self.test;
        // permutations of every group, on the host's pool, into one buffer allocated fallibly
        let t = Instant::now();
        let perms = group_permutations(test, groups, &self.pool)?;
        let permute_s = t.elapsed().as_secs_f64();
        self.book(|tm| tm.host_s += permute_s);
        let m = idx.len();
        let (mut tx, mut ty, mut tl, mut ts, mut tperm) = (Vec::with_capacity(m), Vec::with_capacity(m), Vec::with_capacity(m), vec![0u32; m * MAX_LEVEL], Vec::with_capacity(m));
        for (j, &i) in idx.iter().enumerate() {
            let c = &cases[i];
            tx.push(c.x);
            ty.push(c.y);
            tl.push(c.s.len() as u32);
            ts[j * MAX_LEVEL..j * MAX_LEVEL + c.s.len()].copy_from_slice(&c.s);
            tperm.push(((case_group[i] - g_base) * b) as u32);
        }
        let chunks = n.div_ceil(LANES);
        let n_est = b + 1;
        let gpu = &self.gpu;
        let mut clock = Clock::default();
        let partial = guard("running CMI-kNN on the GPU", || {
            let d_perm = gpu.up(&mut clock, &perms, "the permutations")?;
            let d_tx = gpu.up(&mut clock, &tx, "the tests")?;
            let d_ty = gpu.up(&mut clock, &ty, "the tests")?;
            let d_tl = gpu.up(&mut clock, &tl, "the tests")?;
            let d_ts = gpu.up(&mut clock, &ts, "the tests")?;
            let d_tp = gpu.up(&mut clock, &tperm, "the tests")?;
            let mut d_part = gpu.alloc::<f64>(m * n_est * chunks, "the partial sums")?;
            let cfg = LaunchConfig { grid_dim: (chunks as u32, n_est as u32, m as u32), block_dim: (LANES as u32, 1, 1), shared_mem_bytes: 0 };
            let (nn, k, px, ne) = (n as u32, test.k() as u32, (test.params().permute == pc_cmiknn::Permute::X) as u32, n_est as u32);
            let t = Instant::now();
            let args = params::Partials {
                ranks: &self.ranks, n: nn, psi: &self.psi, k, tx: &d_tx, ty: &d_ty, tl: &d_tl, ts: &d_ts, tperm: &d_tp, perm: &d_perm,
                permute_x: px, n_est: ne, partial: &mut d_part,
            };
            // SAFETY: every test's x, y, S are columns of ranks (checked in run_tests), tperm[t] + B
            // rows lie inside d_perm, and d_part holds m (B + 1) chunks doubles, the grid's extent.
            unsafe { args.launch(gpu, &self.f, cfg, "cmiknn_partials") }?;
            gpu.finish_launch(&mut clock, t, "cmiknn_partials")?;
            gpu.down(&mut clock, &d_part, m * n_est * chunks, "the partial sums")
        })?;
        self.book(|tm| {
            tm.kernel_s += clock.kernel;
            tm.transfer_s += clock.transfer;
            tm.launches += clock.launches;
        });
        // where a level's time goes per device and round (GPUPC_TRACE)
        pc_core::trace::mark(|| {
            format!("cmiknn GPU {}: {m} tests, {} groups: permutations {permute_s:.4} s, kernel {:.4} s, copies {:.4} s", gpu.info.ordinal, groups.len(), clock.kernel, clock.transfer)
        });
        let psi = test.psi();
        let k = test.k();
        Ok((0..m)
            .map(|j| {
                let est = |e: usize| {
                    let off = (j * n_est + e) * chunks;
                    cmi_from_sum(psi, k, sum_of_chunks(&partial[off..off + chunks]), n)
                };
                let statistic = est(0);
                let null: Vec<f64> = (1..n_est).map(est).collect();
                Outcome { statistic, p_value: p_value(statistic, &null), null }
            })
            .collect())
    }

    fn level_gpu(&self, plan: &LevelPlan, ctl: &Control) -> Result<Vec<EdgeOutcome>> {
        let ne = plan.edges.len() as u64;
        let keep_going = |decided: usize| {
            ctl.edges_done.store((decided as u64).min(ne), std::sync::atomic::Ordering::Relaxed);
            !ctl.cancelled()
        };
        self.with_rounds(plan.level, |opts, eval| run_pipelined(plan, opts, eval, keep_going))
    }

    /// Runs `run` with this device's rounds: two at a time (see [`Overlapped`]) unless
    /// `GPUPC_CMIKNN_OVERLAP=0`, each of about ROUND_TESTS tests (enough to fill the device several
    /// times over).
    fn with_rounds<T>(&self, level: usize, run: impl FnOnce(&RoundOpts, &mut dyn RoundEval) -> Result<T>) -> Result<T> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let opts = RoundOpts { budget: ROUND_TESTS, growth: ROUNDS_GROWTH, pool: Some(&*self.pool), words: None };
        if !overlap_rounds() {
            return run(&opts, &mut AtOnce::new(|b: &Batch| self.p_values(&round_cases(b, level))));
        }
        std::thread::scope(|scope| run(&opts, &mut Overlapped { this: self, level, scope, running: std::collections::VecDeque::new() }))
    }

    /// The p-values of `cases`, in their order.
    fn p_values(&self, cases: &[CmiCase]) -> Result<Vec<f64>> {
        Ok(self.run_tests(cases)?.into_iter().map(|o| o.p_value).collect())
    }
}

fn round_cases(batch: &Batch, level: usize) -> Vec<CmiCase> {
    (0..batch.len()).map(|t| CmiCase { x: batch.x[t], y: batch.y[t], s: batch.s[t * level..(t + 1) * level].to_vec() }).collect()
}

/// Whether a level's rounds run two at a time (the default; `GPUPC_CMIKNN_OVERLAP=0` runs them one
/// at a time, for comparisons).
fn overlap_rounds() -> bool {
    std::env::var("GPUPC_CMIKNN_OVERLAP").ok().as_deref().map(str::trim) != Some("0")
}

/// Whether several devices take a level's edges from one feed (the default; `GPUPC_CMIKNN_FEED=0`
/// deals them blocks, for comparisons).
fn fed_levels() -> bool {
    std::env::var("GPUPC_CMIKNN_FEED").ok().as_deref().map(str::trim) != Some("0")
}

/// A level's rounds two at a time, each on a thread of its own: a round's host work (its groups'
/// Z-neighbour searches and permutations, 8 of a level's 101 s at p = 100 on one H200) runs while
/// the previous round's kernel does, where one round at a time leaves the device idle through it
/// (and two devices' host phases meet on the shared pool). The rounds share the device's stream,
/// so their transfers and kernels keep their order; outcomes are the same, since an edge's
/// outcome depends only on its own tests ([`run_pipelined`]).
struct Overlapped<'s, 'e, 'a> {
    this: &'e CudaCmiKnn<'a>,
    level: usize,
    scope: &'s std::thread::Scope<'s, 'e>,
    running: std::collections::VecDeque<std::thread::ScopedJoinHandle<'s, Result<Vec<f64>>>>,
}

impl RoundEval for Overlapped<'_, '_, '_> {
    fn launch(&mut self, b: &Batch) -> Result<()> {
        let (this, cases) = (self.this, round_cases(b, self.level));
        self.running.push_back(self.scope.spawn(move || {
            this.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            this.p_values(&cases)
        }));
        Ok(())
    }

    fn finish(&mut self, _b: &Batch, p: &mut Vec<f64>) -> Result<()> {
        let round = self.running.pop_front().ok_or_else(|| PcError::Internal("a round finished that was not launched".into()))?;
        *p = round.join().map_err(|e| PcError::Internal(pc_core::backend::panic_message(&*e)))??;
        Ok(())
    }

    fn in_flight(&self) -> usize {
        2
    }
}

impl Backend for CudaCmiKnn<'_> {
    fn name(&self) -> String {
        format!("cuda ({})", self.gpu.info.name)
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        if plan.edges.is_empty() {
            return Ok(Vec::new());
        }
        if plan.level > MAX_LEVEL {
            return ParallelCpu::new(self.test, 0)?.run_level(plan, watch);
        }
        let me = &*self;
        // a CMI-kNN test takes the device milliseconds: no level runs without a watcher
        watched_level(plan, watch, 0, &mut (), |ctl, _| me.level_gpu(plan, ctl))
    }

    fn feeds_rounds(&self) -> bool {
        fed_levels()
    }

    fn run_fed(&mut self, plan: &LevelPlan, feed: &EdgeFeed, watch: &mut dyn Watch) -> Result<Vec<(u32, EdgeOutcome)>> {
        if plan.level > MAX_LEVEL {
            return run_fed_by_subplans(self, plan, feed, watch);
        }
        let ne = plan.edges.len() as u64;
        let out = guard("running a level on the GPU", || {
            self.with_rounds(plan.level, |opts, eval| run_fed(plan, feed, opts, eval, |decided| watch.tick(decided as u64, ne)))
        });
        pc_core::trace::mark(|| {
            format!(
                "cmiknn GPU {}: level {} done, {} of the level's {ne} edges ({} handed between devices so far)",
                self.gpu.info.ordinal,
                plan.level,
                out.as_ref().map_or(0, Vec::len),
                feed.moved()
            )
        });
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pc_cmiknn::{CmiKnnParams, Knn, RankData};

    // the shared neighbour searches give every group the permutations of its own search, on any
    // number of threads, with groups of one S listed apart and an empty S among them
    #[test]
    fn group_permutations_equal_one_search_per_group() {
        let (n, p) = (60, 6);
        let mut st = 7u64;
        let v: Vec<f64> = (0..n * p)
            .map(|_| {
                st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (st >> 11) as f64
            })
            .collect();
        let params = CmiKnnParams { knn: Knn::Count(5), sig_samples: 4, seed: 11, ..Default::default() };
        let test = CmiKnn::new(RankData::from_columns(&v, n, p).unwrap(), params).unwrap();
        let groups: Vec<(u32, Vec<u32>)> = vec![(0, vec![2]), (3, vec![]), (1, vec![2]), (4, vec![2, 5]), (0, vec![2, 5]), (5, vec![2]), (1, vec![])];
        let b = 4;
        let mut want = vec![0u32; groups.len() * b * n];
        for (g, (x, s)) in groups.iter().enumerate() {
            let nb = test.neighbours(s).unwrap();
            for e in 0..b {
                let at = (g * b + e) * n;
                test.permutation(test.key(*x, s), e as u32, nb.as_deref(), &mut PermScratch::default(), &mut want[at..at + n]);
            }
        }
        for threads in [1, 3] {
            let pool = CudaCmiKnn::host_pool(threads).unwrap();
            assert_eq!(group_permutations(&test, &groups, &pool).unwrap(), want, "{threads} threads");
        }
        assert!(group_permutations(&test, &[], &CudaCmiKnn::host_pool(2).unwrap()).unwrap().is_empty());
    }
}
