//! What every CUDA backend of this crate does the same way: opening the device on one stream,
//! copies and allocations that book their time, waiting for a launch with a readable error, free
//! memory checks, and turning cudarc's errors and panics into `PcError::Cuda`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaSlice, CudaStream, DeviceRepr, DriverError, ValidAsZeroBits};
use pc_core::backend::{panic_message, run_watched, Control, Watch};
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::PcError;

use crate::device::{self, gb, DeviceInfo};

pub(crate) type Result<T> = std::result::Result<T, PcError>;

pub(crate) fn cuda_err(what: &str) -> impl Fn(DriverError) -> PcError + '_ {
    move |e| PcError::Cuda(format!("{what}: {e}"))
}

/// Runs `f`, turning a panic inside cudarc into `PcError::Cuda`.
pub(crate) fn guard<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => Err(PcError::Cuda(format!("{what}: the CUDA library panicked: {}", panic_message(&*e)))),
    }
}

/// Runs a level's GPU work on a worker thread while the calling (R) thread shows progress and
/// answers Ctrl-C; a panic inside cudarc becomes `PcError::Cuda`.
pub(crate) fn watched_level<T: Send>(
    plan: &LevelPlan,
    watch: &mut dyn Watch,
    stats: &mut T,
    work: impl FnOnce(&Control, &mut T) -> Result<Vec<EdgeOutcome>> + Send,
) -> Result<Vec<EdgeOutcome>> {
    run_watched(plan.edges.len() as u64, watch, std::time::Duration::from_millis(100), move |ctl| {
        guard("running a level on the GPU", || work(ctl, stats))
    })
}

/// Accumulates kernel and copy time of one level.
#[derive(Default)]
pub(crate) struct Clock {
    pub kernel: f64,
    pub transfer: f64,
    pub launches: u64,
    /// Host work before the first launch (lists, lookups) and after the last (outcomes).
    pub host: f64,
    pub collect: f64,
}

impl Clock {
    pub fn copy<T>(&mut self, f: impl FnOnce() -> Result<T>) -> Result<T> {
        let t = Instant::now();
        let r = f();
        self.transfer += t.elapsed().as_secs_f64();
        r
    }
}

/// The device, its context and the one stream every launch and copy of a backend goes to.
pub(crate) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: DeviceInfo,
}

impl Gpu {
    /// Probes and opens the device (call inside [`guard`]).
    pub fn open() -> Result<Gpu> {
        let info = device::probe().map_err(PcError::Cuda)?;
        let ctx = CudaContext::new(info.ordinal).map_err(cuda_err("could not open the GPU"))?;
        // One stream, used in order: cudarc's cross-stream event tracking is not needed.
        // SAFETY: every launch and copy of a backend goes to `stream`, so ordering holds.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Gpu { ctx, stream, info })
    }

    pub fn free_bytes(&self) -> Result<usize> {
        let (free, _) = self.ctx.mem_get_info().map_err(cuda_err("could not read free GPU memory"))?;
        Ok(free)
    }

    pub fn ensure_free(&self, bytes: usize, what: &str) -> Result<()> {
        let free = self.free_bytes()?;
        if bytes + (32 << 20) > free {
            return Err(PcError::Cuda(format!("{what} needs {:.2} GB of GPU memory, {:.2} GB free", gb(bytes), gb(free))));
        }
        Ok(())
    }

    pub fn up<T: DeviceRepr + ValidAsZeroBits>(&self, clock: &mut Clock, v: &[T], what: &str) -> Result<CudaSlice<T>> {
        clock.copy(|| {
            if v.is_empty() {
                // one zero element: kernels never read it, and no zero-byte allocation is made
                return self.stream.alloc_zeros::<T>(1).map_err(cuda_err(what));
            }
            self.stream.clone_htod(v).map_err(cuda_err(what))
        })
    }

    pub fn down<T: DeviceRepr + Default + Clone>(&self, clock: &mut Clock, s: &CudaSlice<T>, len: usize, what: &str) -> Result<Vec<T>> {
        clock.copy(|| {
            let mut v = vec![T::default(); len];
            if len > 0 {
                self.stream.memcpy_dtoh(&s.slice(0..len), &mut v).map_err(cuda_err(what))?;
            }
            self.stream.synchronize().map_err(cuda_err(what))?;
            Ok(v)
        })
    }

    pub fn alloc<T: DeviceRepr + ValidAsZeroBits>(&self, len: usize, what: &str) -> Result<CudaSlice<T>> {
        self.stream.alloc_zeros::<T>(len.max(1)).map_err(cuda_err(what))
    }

    /// Waits for the kernel just launched and books its time.
    pub fn finish_launch(&self, clock: &mut Clock, t: Instant, name: &str) -> Result<()> {
        self.stream.synchronize().map_err(|e| {
            PcError::Cuda(if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
                format!("kernel {name}: out of GPU memory (for its per-thread local memory, say): {e}")
            } else {
                format!("kernel {name} failed: {e}")
            })
        })?;
        clock.kernel += t.elapsed().as_secs_f64();
        clock.launches += 1;
        Ok(())
    }
}

/// Appends a chunk's results (the first chunk is moved, not copied).
pub(crate) fn append<T>(all: &mut Vec<T>, chunk: Vec<T>) {
    if all.is_empty() {
        *all = chunk;
    } else {
        all.extend(chunk);
    }
}
