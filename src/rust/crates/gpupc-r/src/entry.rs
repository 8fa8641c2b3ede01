//! The functions R calls (`.Call(wrap__gpupc_...)`). Each returns either its result or
//! the error list of `rerror.rs`, which the R layer raises as a classed R error; a
//! panic that slips through is still caught by extendr and becomes an R error.

use extendr_api::prelude::*;
use pc_core::citest::GSquareKind;
use pc_core::cpu::ParallelCpu;
use std::time::Instant;

use pc_core::{run_skeleton_into, Backend, Order, PcError, SkeletonParams};

use crate::convert::{alloc_pmax, doubles_mut, gauss_input, gauss_test, gsquare_test, result_to_r, scan_correlation, CoreResult, GaussInput};
use crate::params::skeleton_params;
use crate::watch::RWatch;

pub(crate) struct Run<'a> {
    pub(crate) params: SkeletonParams,
    /// pMax's cells: R's matrix, written in place by the level loop.
    pmax: &'a mut [f64],
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
        let res = run_skeleton_into(&self.params, b, &mut self.watch, self.pmax)?;
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

fn skeleton_impl(test: &str, data: List, args: List, backend: &str, hooks: List) -> CoreResult<Robj> {
    let t_input = Instant::now();
    let params = skeleton_params(&args)?;
    let (p, order) = (params.start.p(), params.order);
    let pmax_r = alloc_pmax(p)?;
    // SAFETY: pmax_r is a fresh p x p double matrix, kept alive (and protected) by this frame
    // until result_to_r takes it; nothing else touches its cells meanwhile.
    let pmax = unsafe { doubles_mut(&pmax_r, p * p) };
    let mut run = Run {
        params,
        pmax,
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
        "gauss" if run.backend == "cuda" => {
            // C is read in place: one parallel check, then the upload (no copy in Rust)
            let t0 = Instant::now();
            let devices = crate::multi::devices_of(&data)?;
            let input = gauss_input(&data, p)?;
            // the kernels are compiled (or read from the disk cache) while C is scanned and uploaded
            let from_data = matches!(input, GaussInput::Data { .. });
            pc_cuda::runtime::module::prefetch(devices[0], &pc_cuda::gauss::first_families(order, from_data));
            match input {
                GaussInput::C(c, n) => {
                    let pool = pc_core::threads::call_pool(run.params.threads, "scan")?;
                    let scan = pool.install(|| scan_correlation(&c, p))?;
                    drop(pool);
                    input_s += t0.elapsed().as_secs_f64();
                    // stable.fast's dense levels run on one device (its level 0 writes raw
                    // p-values into pMax, which the devices' max-merge is not made for)
                    if devices.len() > 1 && order == Order::Stable {
                        crate::multi::cuda_gauss(&mut run, &c, p, n, &scan, &devices)?
                    } else {
                        cuda_gauss(&mut run, p, n, |p, n| pc_cuda::CudaGauss::new_scanned_on(devices[0], &c, p, n, scan.exact, scan.has_nan))?
                    }
                }
                // C computed from the data on one device (the first chosen): several devices
                // take C itself
                GaussInput::Data { x, rows, n } => {
                    let z = crate::convert::standardized(x, rows, p, run.params.threads)?;
                    input_s += t0.elapsed().as_secs_f64();
                    cuda_gauss(&mut run, p, n, |p, n| pc_cuda::CudaGauss::from_standardized_on(devices[0], &z, rows, p, n))?
                }
            }
        }
        "gauss" => {
            let t0 = Instant::now();
            let t = gauss_test(&data, p, order, run.params.threads)?;
            input_s += t0.elapsed().as_secs_f64();
            run.cpu(&t)?
        }
        "dis" | "bin" => {
            let kind = if test == "dis" { GSquareKind::Dis } else { GSquareKind::Bin };
            let t0 = Instant::now();
            let t = gsquare_test(&data, p, kind)?;
            input_s += t0.elapsed().as_secs_f64();
            let out = match run.backend {
                "cuda" => match crate::multi::devices_of(&data)?.as_slice() {
                    [one] => cuda_gsquare(&mut run, &t, *one)?,
                    many => crate::multi::cuda_gsquare(&mut run, &t, many)?,
                },
                _ => run.cpu(&t)?,
            };
            // pcalg warns for each test it answers p = 1 because n < n.min; R raises one warning
            let (small, n_min) = t.small_n_tests();
            if small > 0 {
                run.extra = list!(small_n_tests = small as f64, small_n_min = n_min as f64, n = t.data.n as f64);
            }
            out
        }
        "cmiknn" => {
            let t0 = Instant::now();
            let t = crate::cmiknn::cmiknn_test(&data, p)?;
            input_s += t0.elapsed().as_secs_f64();
            if run.backend == "cuda" {
                match crate::multi::devices_of(&data)?.as_slice() {
                    [one] => crate::cmiknn::cuda_cmiknn(&mut run, &t, *one)?,
                    many => crate::multi::cuda_cmiknn(&mut run, &t, many)?,
                }
            } else {
                run.cpu(&t)?
            }
        }
        other => return Err(PcError::invalid("indepTest", format!("unknown native test \"{other}\""))),
    };
    if run.watch.interrupted {
        return Err(PcError::Interrupted);
    }
    let phases = list!(input_s = input_s, setup_s = run.setup_s, search_s = run.search_s);
    result_to_r(res, pmax_r, order, &name, run.extra, phases, run.params.threads)
}

fn cuda_gauss(run: &mut Run, p: usize, n: f64, open: impl FnOnce(usize, f64) -> CoreResult<pc_cuda::CudaGauss>) -> CoreResult<(pc_core::SkeletonResult, String)> {
    if run.params.order == Order::StableFast {
        pc_core::citest::GaussTest::check_n(n, pc_core::citest::GaussFlavour::Cpp)?;
    }
    let t0 = Instant::now();
    let mut b = open(p, n)?;
    if !(b.dense_available() && pc_core::dense::DenseLevels::dense_order_ok(&b, run.params.order)) {
        // R planned host memory for the dense levels; levels 0 and 1 planned edge by edge hold
        // tens of bytes per pair instead (86 GB at p = 55,572): stop here if that cannot fit
        crate::params::check_planned_levels(&run.params, p)?;
    }
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    run.extra = cuda_details(b.timings());
    Ok(out)
}

fn cuda_gsquare(run: &mut Run, t: &pc_core::citest::GSquareTest, device: usize) -> CoreResult<(pc_core::SkeletonResult, String)> {
    let t0 = Instant::now();
    let mut b = pc_cuda::CudaGSquare::new_on(t, device)?;
    b.set_threads(run.params.threads)?;
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    run.extra = cuda_details(b.timings());
    Ok(out)
}

/// The CUDA backend's figures for `gpupc_last_run()$details` (`upload_s`: C or the data).
pub(crate) fn cuda_details(tm: &pc_cuda::CudaTimings) -> List {
    list!(
        nvrtc_compile_s = tm.compile_s,
        nvrtc_cached = tm.compile_cached,
        nvrtc_target = tm.target.clone(),
        upload_s = tm.upload_c_s,
        dense_setup_s = tm.dense_setup_s,
        dense_results_s = tm.dense_results_s,
        kernel_s = tm.kernel_s,
        transfer_s = tm.transfer_s,
        launches = tm.levels.iter().map(|l| l.launches as f64).sum::<f64>(),
        gpu_tests = tm.levels.iter().map(|l| l.gpu_tests as f64).sum::<f64>(),
        pinv_fallbacks = tm.levels.iter().map(|l| l.fallbacks as f64).sum::<f64>()
    )
}

/// Runs the skeleton search. `test` is "gauss", "dis", "bin" or "rfun" (then `rtest` is an R
/// function(x, y, S)); `start` is !fixedGaps; `m_max` may be Inf; `threads` 0 means all cores.
/// A native-test skeleton: `args` is R's `skeleton_args()` list (converted in `params.rs`).
#[extendr]
fn gpupc_skeleton(test: &str, data: List, args: List, backend: &str, hooks: List) -> Robj {
    match skeleton_impl(test, data, args, backend, hooks) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

/// The `sepset` list of a result whose handle `gpupc_skeleton` returned (once: the parts are
/// freed as the list is made): pcalg's p lists of p, or with `compact` p compact rows
/// (`sepset_rows.rs`).
#[extendr]
fn gpupc_sepsets(handle: Robj, compact: bool) -> Robj {
    let made = (|| -> CoreResult<Robj> {
        let mut h: ExternalPtr<Option<crate::convert::SepParts>> =
            handle.try_into().map_err(|_| PcError::Internal("not a sepset handle".into()))?;
        let parts = h.take().ok_or_else(|| PcError::Internal("the sepsets were taken already".into()))?;
        if compact {
            crate::sepset_rows::sepsets_to_rows(&parts)
        } else {
            crate::convert::sepsets_to_r(&parts)
        }
    })();
    made.unwrap_or_else(|e| crate::rerror::from_pc(&e))
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
            reason = "",
            devices = crate::multi::devices_table()
        )
        .into_robj(),
        Err(reason) => list!(usable = false, reason = reason).into_robj(),
    }
}

/// The cores this process may use (asking rayon would start its global pool, which a fork breaks).
#[extendr]
fn gpupc_cpu_threads() -> i32 {
    pc_core::threads::available_cores() as i32
}

/// An R-function indepTest: the level loop runs as a coroutine of R's loop (see `rdriver.rs`).
#[extendr]
fn gpupc_rfun_start(args: List) -> Robj {
    let res = skeleton_params(&args).and_then(crate::rdriver::start);
    res.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

#[extendr]
fn gpupc_rfun_step(handle: Robj, answer: Robj) -> Robj {
    crate::rdriver::step(handle, answer).unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

#[extendr]
fn gpupc_rfun_stop(handle: Robj) -> Robj {
    crate::rdriver::stop(handle).map(|_| Robj::from(())).unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

/// Peak host bytes of a run and the bytes available (see `params::memory_plan`).
#[extendr]
fn gpupc_memory_plan(p: f64, test_bytes: f64, start_edges: f64, dense_levels: bool, sepset_rows: bool) -> Robj {
    crate::params::memory_plan(p, test_bytes, start_edges, dense_levels, sepset_rows)
}

/// The GPU backend's start for `test` on `p` variables and `n` rows against `free` device bytes
/// (pc-cuda's `memplan`, no device needed): list(need, dense) or the error list R raises.
#[extendr]
fn gpupc_device_plan(test: &str, p: f64, n: f64, free: f64) -> Robj {
    match crate::params::device_plan(test, p, n, free) {
        Ok(l) => l,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

extendr_module! {
    mod entry;
    fn gpupc_skeleton;
    fn gpupc_sepsets;
    fn gpupc_gpu_info;
    fn gpupc_cpu_threads;
    fn gpupc_rfun_start;
    fn gpupc_rfun_step;
    fn gpupc_rfun_stop;
    fn gpupc_memory_plan;
    fn gpupc_device_plan;
}
