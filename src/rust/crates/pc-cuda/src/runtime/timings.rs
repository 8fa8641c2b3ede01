//! Where a backend's time went, as the R package and pcbench report it: the level loop's
//! backends (Gaussian, G^2) per level, the triple checks' listed tests per batch.

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

/// Where the backend's time went.
#[derive(Clone, Debug, Default)]
pub struct CudaTimings {
    /// Seconds spent compiling the kernels this backend used, or reading them from the disk cache
    /// (0 for those this process already had).
    pub compile_s: f64,
    /// No kernel was compiled: each came from this process or the disk cache.
    pub compile_cached: bool,
    /// What was compiled: "sm_90 (cubin)", say.
    pub target: String,
    /// Uploading C.
    pub upload_c_s: f64,
    /// Dense levels: uploading the graph and initialising pMax; copying graph, pMax and level
    /// 0's sepsets back.
    pub dense_setup_s: f64,
    pub dense_results_s: f64,
    pub kernel_s: f64,
    pub transfer_s: f64,
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

impl CudaTimings {
    /// Books the compile (or cache read) of a module loaded after the backend opened.
    pub(crate) fn add_compile(&mut self, c: &module::Compiled) {
        self.compile_s += c.compile_seconds;
        self.compile_cached &= c.from_cache;
    }

    /// Books a finished level (started at `t0`).
    pub(crate) fn record(&mut self, mut lt: LevelTimings, t0: Instant) {
        lt.total_s = t0.elapsed().as_secs_f64();
        self.kernel_s += lt.kernel_s;
        self.transfer_s += lt.transfer_s;
        self.levels.push(lt);
    }
}

/// Seconds and counts of the GPU evaluator.
#[derive(Clone, Debug, Default)]
pub struct BatchTimings {
    pub setup_s: f64,
    pub kernel_s: f64,
    pub transfer_s: f64,
    pub launches: u64,
    pub gpu_tests: u64,
    pub cpu_tests: u64,
}

/// The figures of several devices' backends as one: compile and upload times the slowest
/// device's (they ran in parallel), kernel and copy time summed, every device's levels.
pub fn combined_timings<'a>(ts: impl IntoIterator<Item = &'a CudaTimings>) -> CudaTimings {
    let mut out = CudaTimings::default();
    for (k, t) in ts.into_iter().enumerate() {
        if k == 0 {
            out.target = t.target.clone();
            out.compile_cached = true;
        }
        out.compile_s = out.compile_s.max(t.compile_s);
        out.compile_cached &= t.compile_cached;
        out.upload_c_s = out.upload_c_s.max(t.upload_c_s);
        out.dense_setup_s = out.dense_setup_s.max(t.dense_setup_s);
        out.dense_results_s = out.dense_results_s.max(t.dense_results_s);
        out.kernel_s += t.kernel_s;
        out.transfer_s += t.transfer_s;
        out.levels.extend(t.levels.iter().cloned());
    }
    out
}

