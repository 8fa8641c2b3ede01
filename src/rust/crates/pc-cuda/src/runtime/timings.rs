//! Where an engine's time went, as the R package and pcbench report it: one [`Timings`] for
//! every method, with the level loop's levels in [`LevelTimings`].

use std::time::Instant;

use crate::runtime::gpu::Clock;
use crate::runtime::module;

/// Time spent by one level.
#[derive(Clone, Debug, Default)]
pub struct LevelTimings {
    pub level: usize,
    /// Wall time of the level inside the backend.
    pub total_s: f64,
    /// Kernels (launch to completion) and host <-> device copies.
    pub kernel_s: f64,
    pub transfer_s: f64,
    pub launches: u64,
    /// Host work: building the level's lists before the launches, the outcomes after them.
    pub host_s: f64,
    pub collect_s: f64,
    /// Tests the GPU evaluated (levels >= 2: including those past an edge's first success that
    /// ran concurrently with it), and how many took the pseudo-inverse path.
    pub gpu_tests: u64,
    pub fallbacks: u64,
    /// The level ran on the CPU (deeper than the set kernels hold).
    pub on_cpu: bool,
}

/// Where a CUDA engine's time went, one type for every method: the level loop's backends
/// (Gaussian, G^2, CMI-kNN), the triple checks' batch evaluators and the junction tree, for
/// `gpupc_last_run()$details` and pcbench.
#[derive(Clone, Debug, Default)]
pub struct Timings {
    /// Seconds spent compiling the kernels this engine used, or reading them from the disk cache
    /// (0 for those this process already had).
    pub compile_s: f64,
    /// No kernel was compiled: each came from this process or the disk cache.
    pub compile_cached: bool,
    /// What was compiled: "sm_90 (cubin)", say.
    pub target: String,
    /// Uploading the input: C or the data, the ranks, a junction tree's tables.
    pub upload_s: f64,
    /// Device work set up besides the input: the dense levels' graph and pMax, a batch
    /// evaluator's buffers, a junction tree's cell maps.
    pub setup_s: f64,
    /// Whole results copied back: the dense levels' graph, pMax and level 0's sepsets.
    pub results_s: f64,
    pub kernel_s: f64,
    pub transfer_s: f64,
    /// Host work between the launches: CMI-kNN's permutations, a junction tree's normalising.
    pub host_s: f64,
    pub launches: u64,
    /// Tests evaluated on the GPU (levels >= 2: including those past an edge's first success
    /// that ran concurrently with it), and by a batch evaluator's CPU fallback.
    pub gpu_tests: u64,
    pub cpu_tests: u64,
    /// Tests that took the pseudo-inverse path (Gaussian).
    pub fallbacks: u64,
    /// The level loop's levels, one entry each (per device for several).
    pub levels: Vec<LevelTimings>,
}

impl LevelTimings {
    /// A dense level's figures from its clock; `extra_transfer` is time spent moving data
    /// between devices outside the clock (the multi-GPU merges).
    pub(crate) fn dense(level: usize, clock: &Clock, extra_transfer: f64, gpu_tests: u64) -> Self {
        LevelTimings {
            level,
            kernel_s: clock.kernel,
            transfer_s: clock.transfer + extra_transfer,
            launches: clock.launches,
            host_s: clock.host,
            gpu_tests,
            ..Default::default()
        }
    }
}

impl Timings {
    /// Opened after compiling (or reading) `c`, the input uploaded in `upload_s`.
    pub(crate) fn opened(c: &module::Compiled, upload_s: f64) -> Self {
        Timings { compile_s: c.compile_seconds, compile_cached: c.from_cache, target: c.target.clone(), upload_s, ..Default::default() }
    }

    /// Books the compile (or cache read) of a module loaded after the backend opened.
    pub(crate) fn add_compile(&mut self, c: &module::Compiled) {
        self.compile_s += c.compile_seconds;
        self.compile_cached &= c.from_cache;
    }

    /// Books a finished level (started at `t0`).
    pub(crate) fn record(&mut self, mut lt: LevelTimings, t0: Instant) {
        lt.total_s = t0.elapsed().as_secs_f64();
        self.add_level_sums(&lt);
        self.levels.push(lt);
    }

    /// Adds a level's time and counts to the whole run's (not to `levels`).
    pub(crate) fn add_level_sums(&mut self, lt: &LevelTimings) {
        self.kernel_s += lt.kernel_s;
        self.transfer_s += lt.transfer_s;
        self.host_s += lt.host_s + lt.collect_s;
        self.launches += lt.launches;
        self.gpu_tests += lt.gpu_tests;
        self.fallbacks += lt.fallbacks;
    }
}

/// The figures of several devices' engines as one: compile, upload, setup and results times the
/// slowest device's (they ran in parallel), kernel, copy and host time and the counts summed,
/// every device's levels.
pub fn combined_timings<'a>(ts: impl IntoIterator<Item = &'a Timings>) -> Timings {
    let mut out = Timings::default();
    for (k, t) in ts.into_iter().enumerate() {
        if k == 0 {
            out.target = t.target.clone();
            out.compile_cached = true;
        }
        out.compile_s = out.compile_s.max(t.compile_s);
        out.compile_cached &= t.compile_cached;
        out.upload_s = out.upload_s.max(t.upload_s);
        out.setup_s = out.setup_s.max(t.setup_s);
        out.results_s = out.results_s.max(t.results_s);
        out.kernel_s += t.kernel_s;
        out.transfer_s += t.transfer_s;
        out.host_s += t.host_s;
        out.launches += t.launches;
        out.gpu_tests += t.gpu_tests;
        out.cpu_tests += t.cpu_tests;
        out.fallbacks += t.fallbacks;
        out.levels.extend(t.levels.iter().cloned());
    }
    out
}

