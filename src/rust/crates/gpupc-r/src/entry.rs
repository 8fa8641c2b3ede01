//! The functions R calls (`.Call(wrap__gpupc_...)`). Each returns either its result or
//! `list(error = <message>, kind = <kind>)`, which the R layer raises as a classed R error; a
//! panic that slips through is still caught by extendr and becomes an R error.

use extendr_api::prelude::*;
use pc_core::citest::GSquareKind;
use pc_core::cpu::{ParallelCpu, SequentialCpu};
use std::time::Instant;

use pc_core::{run_skeleton, Adjacency, Backend, Order, PcError, SkeletonParams};

use crate::convert::{gauss_test, gsquare_test, logical_matrix, result_to_r, CoreResult};
use crate::rtest::RTest;
use crate::watch::RWatch;

pub(crate) fn error_list(e: &PcError) -> Robj {
    let kind = match e {
        PcError::InvalidArgument { .. } => "invalid",
        PcError::Test(_) => "test",
        PcError::Interrupted => "interrupt",
        PcError::TooManySets { .. } => "too_many_sets",
        PcError::Cuda(_) => "cuda",
        PcError::Internal(_) => "internal",
    };
    list!(error = e.to_string(), kind = kind).into_robj()
}

fn parse_order(order: &str) -> CoreResult<Order> {
    match order {
        "stable" => Ok(Order::Stable),
        "stable.fast" => Ok(Order::StableFast),
        other => Err(PcError::invalid("skel.method", format!("must be \"stable\" or \"stable.fast\" here, not \"{other}\""))),
    }
}

pub(crate) struct Run<'a> {
    pub(crate) params: SkeletonParams,
    watch: RWatch,
    backend: &'a str,
    /// Backend-specific details for `gpupc_last_run()` (CUDA timings).
    pub(crate) extra: List,
    /// Seconds opening the backend (CUDA: device, NVRTC, upload) and in the level loop.
    pub(crate) setup_s: f64,
    search_s: f64,
}

impl Run<'_> {
    pub(crate) fn go(&mut self, b: &mut dyn Backend) -> CoreResult<(pc_core::SkeletonResult, String)> {
        let name = b.name();
        let t = Instant::now();
        let res = run_skeleton(&self.params, b, &mut self.watch)?;
        self.search_s = t.elapsed().as_secs_f64();
        Ok((res, name))
    }

    fn cpu<T: pc_core::CiTest + Sync>(&mut self, test: &T) -> CoreResult<(pc_core::SkeletonResult, String)> {
        let t = Instant::now();
        let mut b = ParallelCpu::new(test, self.params.threads)?;
        self.setup_s = t.elapsed().as_secs_f64();
        self.go(&mut b)
    }
}

#[allow(clippy::too_many_arguments)]
fn skeleton_impl(
    test: &str,
    data: List,
    rtest: Robj,
    p: i32,
    alpha: f64,
    start: Robj,
    fixed_edges: Robj,
    na_delete: bool,
    m_max: f64,
    order: &str,
    backend: &str,
    threads: i32,
    hooks: List,
) -> CoreResult<Robj> {
    if p < 2 {
        return Err(PcError::invalid("p", "must be at least 2"));
    }
    let t_input = Instant::now();
    let p = p as usize;
    let order = parse_order(order)?;
    let params = SkeletonParams {
        alpha,
        order,
        m_max: if m_max.is_infinite() { None } else { Some(m_max.max(0.0).floor() as usize) },
        na_delete,
        start: logical_matrix(&start, p, "fixedGaps", Adjacency::complete)?,
        fixed_edges: logical_matrix(&fixed_edges, p, "fixedEdges", Adjacency::empty)?,
        threads: threads.max(0) as usize,
    };
    let mut run = Run {
        params,
        watch: RWatch::new(&hooks),
        backend,
        extra: List::new(0),
        setup_s: 0.0,
        search_s: 0.0,
    };
    let mut input_s = t_input.elapsed().as_secs_f64(); // plus the test's data, below
    if run.backend == "cuda" && test == "rfun" {
        return Err(PcError::Cuda("the GPU backend runs only gaussCItest, disCItest, binCItest and cmiknnCItest".into()));
    }
    let (res, name) = match test {
        "gauss" => {
            let t0 = Instant::now();
            let t = gauss_test(&data, p, order)?;
            input_s += t0.elapsed().as_secs_f64();
            if run.backend == "cuda" {
                crate::entry::cuda_gauss(&mut run, &t)?
            } else {
                run.cpu(&t)?
            }
        }
        "dis" | "bin" => {
            let kind = if test == "dis" { GSquareKind::Dis } else { GSquareKind::Bin };
            let t0 = Instant::now();
            let t = gsquare_test(&data, p, kind)?;
            input_s += t0.elapsed().as_secs_f64();
            if run.backend == "cuda" {
                cuda_gsquare(&mut run, &t)?
            } else {
                run.cpu(&t)?
            }
        }
        "cmiknn" => {
            let t0 = Instant::now();
            let t = crate::cmiknn::cmiknn_test(&data, p)?;
            input_s += t0.elapsed().as_secs_f64();
            if run.backend == "cuda" {
                crate::cmiknn::cuda_cmiknn(&mut run, &t)?
            } else {
                run.cpu(&t)?
            }
        }
        "rfun" => {
            let f = rtest.as_function().ok_or_else(|| PcError::invalid("indepTest", "must be a function"))?;
            let t = RTest::new(f);
            let mut b = SequentialCpu::new(&t);
            run.go(&mut b)?
        }
        other => return Err(PcError::invalid("indepTest", format!("unknown native test \"{other}\""))),
    };
    if run.watch.interrupted {
        return Err(PcError::Interrupted);
    }
    let phases = list!(input_s = input_s, setup_s = run.setup_s, search_s = run.search_s);
    result_to_r(&res, order, &name, run.extra, phases)
}

fn cuda_gauss(run: &mut Run, t: &pc_core::citest::GaussTest) -> CoreResult<(pc_core::SkeletonResult, String)> {
    let t0 = Instant::now();
    let mut b = pc_cuda::CudaGauss::new(&t.c, t.p, t.n)?;
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    run.extra = cuda_details(b.timings());
    Ok(out)
}

fn cuda_gsquare(run: &mut Run, t: &pc_core::citest::GSquareTest) -> CoreResult<(pc_core::SkeletonResult, String)> {
    let t0 = Instant::now();
    let mut b = pc_cuda::CudaGSquare::new(t)?;
    b.set_threads(run.params.threads)?;
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    run.extra = cuda_details(b.timings());
    Ok(out)
}

/// The CUDA backend's figures for `gpupc_last_run()$details` (`upload_s`: C or the data).
fn cuda_details(tm: &pc_cuda::CudaTimings) -> List {
    list!(
        nvrtc_compile_s = tm.compile_s,
        nvrtc_cached = tm.compile_cached,
        nvrtc_target = tm.target.clone(),
        upload_s = tm.upload_c_s,
        kernel_s = tm.kernel_s,
        transfer_s = tm.transfer_s,
        launches = tm.levels.iter().map(|l| l.launches as f64).sum::<f64>(),
        gpu_tests = tm.levels.iter().map(|l| l.gpu_tests as f64).sum::<f64>(),
        pinv_fallbacks = tm.levels.iter().map(|l| l.fallbacks as f64).sum::<f64>()
    )
}

/// Runs the skeleton search. `test` is "gauss", "dis", "bin" or "rfun" (then `rtest` is an R
/// function(x, y, S)); `start` is !fixedGaps; `m_max` may be Inf; `threads` 0 means all cores.
#[extendr]
#[allow(clippy::too_many_arguments)]
fn gpupc_skeleton(
    test: &str,
    data: List,
    rtest: Robj,
    p: i32,
    alpha: f64,
    start: Robj,
    fixed_edges: Robj,
    na_delete: bool,
    m_max: f64,
    order: &str,
    backend: &str,
    threads: i32,
    hooks: List,
) -> Robj {
    match skeleton_impl(test, data, rtest, p, alpha, start, fixed_edges, na_delete, m_max, order, backend, threads, hooks) {
        Ok(r) => r,
        Err(e) => error_list(&e),
    }
}

/// The CUDA devices, or why none is usable.
#[extendr]
fn gpupc_gpu_info() -> Robj {
    match pc_cuda::probe() {
        Ok(d) => list!(
            usable = true,
            name = d.name,
            memory_bytes = d.total_memory as f64,
            free_bytes = d.free_memory as f64,
            compute_capability = format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
            multiprocessors = d.multiprocessors,
            driver_cuda_version = format!("{}.{}", d.driver_version.0, d.driver_version.1),
            nvrtc_version = format!("{}.{}", d.nvrtc_version.0, d.nvrtc_version.1),
            reason = ""
        )
        .into_robj(),
        Err(reason) => list!(usable = false, reason = reason).into_robj(),
    }
}

/// Number of threads rayon would use by default (all cores).
#[extendr]
fn gpupc_cpu_threads() -> i32 {
    rayon::current_num_threads() as i32
}

extendr_module! {
    mod entry;
    fn gpupc_skeleton;
    fn gpupc_gpu_info;
    fn gpupc_cpu_threads;
}
