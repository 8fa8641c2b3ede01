//! Listed Gaussian tests on the GPU: the conservative / majority-rule triple checks
//! (`pc_core::orient::check_triples`) hand over batches of (x, y, S) and get one p-value each.
//! [`CudaGaussBatch`] is their `BatchEvaluator` when the skeleton ran on the GPU: C taken over
//! from the skeleton's backend ([`DeviceC`]) or uploaded once per call, one thread per test
//! (`gauss_batch_l*`, the same arithmetic as pc-core's R-flavoured `GaussTest`, so the p-values
//! are the CPU twin's, `pc_core::orient::ParallelBatch`).
//! Tests the kernels do not take (|S| above the largest variant, or any test when C holds NaN,
//! where pcalg's pseudo-inverse stops with an error that the CPU test reproduces) run on the
//! CPU twin.

use std::time::Instant;

use cudarc::driver::{CudaSlice, LaunchConfig};
use pc_core::backend::Watch;
use pc_core::citest::{GaussFlavour, GaussTest};
use pc_core::orient::{BatchEvaluator, ParallelBatch, TestBatch};
use pc_core::rounds::listed::{gather, split_tests};
use pc_core::PcError;

use crate::gauss::host::{self, SET_KERNEL_VARIANTS};
use crate::gauss::{params, PD_MARGIN};
use crate::runtime::gpu::{cuda_err, guard, Clock, Gpu, Kernel, Result};
use crate::runtime::module::{self, Family};
use crate::runtime::timings::Timings;

use crate::gauss::host::BLOCK;
/// Tests per launch (about 100 MB of lists at |S| = 16).
const CHUNK: usize = 1 << 21;


/// C on the device of a finished GPU skeleton ([`crate::CudaGauss::into_device_c`]), with the
/// device handle its buffer belongs to, kept for the triple checks; dropping it frees C.
pub struct DeviceC {
    pub(crate) gpu: Gpu,
    pub(crate) c: CudaSlice<f64>,
    pub(crate) p: usize,
}

/// R's `gaussCItest` on listed tests, on the GPU; see the module docs.
pub struct CudaGaussBatch<'a> {
    gpu: Gpu,
    c: CudaSlice<f64>,
    /// One per variant of `SET_KERNEL_VARIANTS`, loaded when a launch first needs it.
    fns: Vec<Option<Kernel>>,
    zfac: CudaSlice<f64>,
    cpu: ParallelBatch<'a, GaussTest>,
    test: &'a GaussTest,
    timings: Timings,
}

impl<'a> CudaGaussBatch<'a> {
    /// Opens the GPU, gets the kernels (compiled once per process) and uploads `test`'s C;
    /// `pool` runs the tests the kernels do not take.
    pub fn new(test: &'a GaussTest, pool: &'a rayon::ThreadPool) -> Result<Self> {
        Self::new_on(test, pool, crate::runtime::device::device_ordinal())
    }

    /// [`CudaGaussBatch::new`] on device `ordinal`.
    pub fn new_on(test: &'a GaussTest, pool: &'a rayon::ThreadPool, ordinal: usize) -> Result<Self> {
        let t0 = Instant::now();
        let p = test.p;
        guard("opening the GPU", || {
            let gpu = Gpu::open_on(ordinal)?;
            gpu.ensure_free(8 * p * p, "the correlation matrix")?;
            // SAFETY: every element is written by the upload below before any kernel reads it.
            let mut c = unsafe { gpu.stream.alloc::<f64>(p * p) }.map_err(cuda_err("could not allocate C"))?;
            gpu.upload_staged(&test.c, &mut c, "could not upload C")?;
            Self::with_c(gpu, c, test, pool, t0)
        })
    }

    /// [`CudaGaussBatch::new`] on the C a GPU skeleton left on its device (the same matrix as
    /// `test`'s): nothing is opened or uploaded but the z factors.
    pub fn from_device_c(kept: DeviceC, test: &'a GaussTest, pool: &'a rayon::ThreadPool) -> Result<Self> {
        let t0 = Instant::now();
        if kept.p != test.p {
            return Err(PcError::Internal(format!("the kept C is for {} variables, not {}", kept.p, test.p)));
        }
        guard("reusing the skeleton's GPU", || {
            kept.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
            // the skeleton's dense buffers, freed with its backend, back to the device
            kept.gpu.release_freed()?;
            Self::with_c(kept.gpu, kept.c, test, pool, t0)
        })
    }

    fn with_c(gpu: Gpu, c: CudaSlice<f64>, test: &'a GaussTest, pool: &'a rayon::ThreadPool, t0: Instant) -> Result<Self> {
        if test.flavour != GaussFlavour::R {
            return Err(PcError::Internal("the triple checks use R's gaussCItest arithmetic".into()));
        }
        gpu.check_buffer(&c, "C")?;
        let fns = SET_KERNEL_VARIANTS.iter().map(|_| None).collect();
        let lmax = *SET_KERNEL_VARIANTS.last().unwrap_or(&0);
        let z: Vec<f64> = (0..=lmax).map(|l| host::z_factor(test.n, l)).collect();
        let zfac = gpu.stream.clone_htod(&z).map_err(cuda_err("could not upload z factors"))?;
        let timings = Timings { setup_s: t0.elapsed().as_secs_f64(), ..Default::default() };
        Ok(CudaGaussBatch { gpu, c, fns, zfac, cpu: ParallelBatch::new(test, pool), test, timings })
    }

    pub fn timings(&self) -> &Timings {
        &self.timings
    }

    fn launch(&mut self, v: usize, batch: &TestBatch, idx: &[usize], out: &mut [f64]) -> Result<()> {
        if self.fns[v].is_none() {
            let t = Instant::now();
            let m = SET_KERNEL_VARIANTS[v];
            let c = module::module_for(&self.gpu, Family::GaussBatch(m)).map_err(PcError::Cuda)?;
            self.fns[v] = Some(c.function(&format!("gauss_batch_l{m}")).map_err(PcError::Cuda)?);
            self.timings.setup_s += t.elapsed().as_secs_f64();
        }
        let mut clock = Clock::default();
        let (x, y, start, s) = gather(batch, idx);
        let n = idx.len();
        self.gpu.ensure_free(n * 24 + s.len() * 4, "the triple checks' tests")?;
        let xd = self.gpu.up(&mut clock, &x, "the tests")?;
        let yd = self.gpu.up(&mut clock, &y, "the tests")?;
        let sd0 = self.gpu.up(&mut clock, &start, "the tests")?;
        let sd = self.gpu.up(&mut clock, &s, "the tests")?;
        let mut pd = self.gpu.alloc::<f64>(n, "the p-values")?;
        let (pu, nu, margin, sym) = (self.test.p as u64, n as u64, PD_MARGIN, self.test.is_symmetric() as i32);
        let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let t = Instant::now();
        let f = self.fns[v].as_ref().expect("loaded above");
        let args = params::Batch { C: &self.c, p: pu, tx: &xd, ty: &yd, s_start: &sd0, s: &sd, n_tests: nu, zfac: &self.zfac, pd_margin: margin, symmetric: sym, p_out: &mut pd };
        // SAFETY: tests 0..n have x, y < p, S offsets in s (start has n + 1 entries), |S| <= the
        // variant's maximum (split_tests) and zfac covers 0..=that; p_out holds n entries.
        unsafe { args.launch(&self.gpu, f, cfg, "gauss_batch") }?;
        self.gpu.finish_launch(&mut clock, t, "gauss_batch")?;
        let pv = self.gpu.down(&mut clock, &pd, n, "the p-values")?;
        for (k, &t) in idx.iter().enumerate() {
            out[t] = pv[k];
        }
        self.timings.kernel_s += clock.kernel;
        self.timings.transfer_s += clock.transfer;
        self.timings.launches += clock.launches;
        self.timings.gpu_tests += n as u64;
        Ok(())
    }
}

impl BatchEvaluator for CudaGaussBatch<'_> {
    fn name(&self) -> String {
        format!("cuda ({})", self.gpu.info.name)
    }

    fn shares_results(&self) -> bool {
        true
    }

    fn p_values(&mut self, batch: &TestBatch, out: &mut Vec<f64>, watch: &mut dyn Watch) -> pc_core::error::Result<()> {
        nan_filled(out, batch.len())?;
        let split = split_tests(batch, &SET_KERNEL_VARIANTS, !self.test.has_nan());
        for (v, idx) in split.gpu.iter().enumerate() {
            for part in idx.chunks(CHUNK) {
                if !watch.keep_going() {
                    return Err(PcError::Interrupted);
                }
                guard("running the triple checks on the GPU", || self.launch(v, batch, part, out))?;
            }
        }
        if !split.cpu.is_empty() {
            on_cpu(&mut self.cpu, batch, &split.cpu, out, watch)?;
            self.timings.cpu_tests += split.cpu.len() as u64;
        }
        Ok(())
    }
}

/// Makes `out` n NaNs (one p-value slot per test of a batch), allocated fallibly.
pub(crate) fn nan_filled(out: &mut Vec<f64>, n: usize) -> pc_core::error::Result<()> {
    out.clear();
    out.try_reserve_exact(n).map_err(|_| PcError::Internal(format!("out of memory for {n} p-values")))?;
    out.resize(n, f64::NAN);
    Ok(())
}

/// Evaluates tests `idx` of `batch` on `cpu` (the tests a GPU evaluator leaves to its CPU twin)
/// and writes their p-values to their places in `out`.
pub(crate) fn on_cpu(cpu: &mut dyn BatchEvaluator, batch: &TestBatch, idx: &[usize], out: &mut [f64], watch: &mut dyn Watch) -> pc_core::error::Result<()> {
    let mut sub = TestBatch::default();
    for &t in idx {
        sub.push(batch.x[t], batch.y[t], batch.set(t).iter().copied());
    }
    let mut pv = Vec::new();
    cpu.p_values(&sub, &mut pv, watch)?;
    for (k, &t) in idx.iter().enumerate() {
        out[t] = pv[k];
    }
    Ok(())
}
