//! What every CUDA backend of this crate does the same way: opening the device on one stream,
//! copies and allocations that book their time, waiting for a launch with a readable error, free
//! memory checks, and turning cudarc's errors and panics into `PcError::Cuda`.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, DeviceRepr, DriverError, LaunchArgs, ValidAsZeroBits};
use pc_core::backend::{panic_message, run_watched_sized, Control, Watch};
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::PcError;

use crate::runtime::device::{self, gb, DeviceInfo};

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
/// answers Ctrl-C; a panic inside cudarc becomes `PcError::Cuda`. A level of at most
/// `inline_tests` planned tests runs on the calling thread instead: a test kind whose level of
/// that many tests takes the device about a millisecond passes that many (a watcher thread costs
/// a good part of it); one whose tests take milliseconds each passes 0, so that its levels show
/// progress and answer Ctrl-C.
pub(crate) fn watched_level<T: Send>(
    plan: &LevelPlan,
    watch: &mut dyn Watch,
    inline_tests: u64,
    stats: &mut T,
    work: impl FnOnce(&Control, &mut T) -> Result<Vec<EdgeOutcome>> + Send,
) -> Result<Vec<EdgeOutcome>> {
    let size = if inline_tests > 0 && plan.total_tests() <= inline_tests { 0 } else { u64::MAX };
    run_watched_sized(size, plan.edges.len() as u64, watch, std::time::Duration::from_millis(100), move |ctl| {
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

/// Which opened device a handle belongs to: the ordinal, and a number no other [`Gpu`] of the
/// process has (two handles on one card's primary context are two owners, so code that mixes
/// them up fails on one card as it would on two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct DeviceId {
    pub ordinal: usize,
    handle: u64,
}

impl DeviceId {
    fn fresh(ordinal: usize) -> DeviceId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        DeviceId { ordinal, handle: NEXT.fetch_add(1, Ordering::Relaxed) }
    }
}

/// Refuses a handle of device `owner` used on device `user` (a module loaded in one context is
/// an invalid handle in another's).
pub(crate) fn check_owner(owner: DeviceId, user: DeviceId, what: &str) -> Result<()> {
    if owner == user {
        return Ok(());
    }
    Err(PcError::Internal(format!("{what} belongs to GPU {} (handle {}) but was used on GPU {} (handle {})", owner.ordinal, owner.handle, user.ordinal, user.handle)))
}

/// `GPUPC_FAIL_DEVICE=k` makes every launch on GPU k fail as a broken device's would: how the
/// device suites check that a run goes on without it (a real failure cannot be had on demand).
fn injected_failure(ordinal: usize) -> bool {
    std::env::var("GPUPC_FAIL_DEVICE").is_ok_and(|v| v.split(',').any(|d| d.trim().parse() == Ok(ordinal)))
}

/// A kernel of one device's module; only that device's [`Gpu::launch`] launches it.
#[derive(Clone)]
pub(crate) struct Kernel {
    f: CudaFunction,
    owner: DeviceId,
    name: String,
}

impl Kernel {
    pub(crate) fn new(f: CudaFunction, owner: DeviceId, name: &str) -> Kernel {
        Kernel { f, owner, name: name.to_string() }
    }

    /// Blocks of this kernel one multiprocessor holds at once (the driver's occupancy answer).
    pub fn occupancy_max_active_blocks_per_multiprocessor(&self, block: u32, shared_bytes: usize) -> std::result::Result<u32, DriverError> {
        self.f.occupancy_max_active_blocks_per_multiprocessor(block, shared_bytes, None)
    }
}

/// The device, its context and the one stream every launch and copy of a backend goes to.
pub(crate) struct Gpu {
    pub ctx: Arc<CudaContext>,
    pub stream: Arc<CudaStream>,
    pub info: DeviceInfo,
    id: DeviceId,
}

/// The error of a kernel (`what`) that failed, an out-of-memory one named as such.
pub fn kernel_failed(what: &str) -> impl Fn(DriverError) -> PcError + '_ {
    move |e| {
        PcError::Cuda(if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
            format!("{what}: out of GPU memory (for its per-thread local memory, say): {e}")
        } else {
            format!("{what} failed: {e}")
        })
    }
}

/// Waits for `ctx`'s device and gives what its stream-ordered pool holds unused back to it.
pub(crate) fn trim_pool(ctx: &Arc<CudaContext>) -> Result<()> {
    ctx.synchronize().map_err(cuda_err("synchronising the GPU"))?;
    let mut pool = std::ptr::null_mut();
    // SAFETY: plain driver calls on this context's device with a valid out-pointer; trimming
    // only returns unused pool memory.
    unsafe {
        use cudarc::driver::sys;
        if sys::cuDeviceGetDefaultMemPool(&mut pool, ctx.cu_device()) == sys::CUresult::CUDA_SUCCESS {
            let _ = sys::cuMemPoolTrimTo(pool, 0);
        }
    }
    Ok(())
}

impl Gpu {
    /// Probes and opens the device (call inside [`guard`]).
    pub fn open() -> Result<Gpu> {
        Self::open_on(device::device_ordinal())
    }

    /// Probes and opens device `ordinal` (call inside [`guard`]). Opening the same ordinal twice
    /// gives two handles on its primary context: how one card stands in for several devices.
    pub fn open_on(ordinal: usize) -> Result<Gpu> {
        let info = device::probe_device(ordinal).map_err(PcError::Cuda)?;
        let ctx = device::context(info.ordinal).map_err(cuda_err("could not open the GPU"))?;
        // One stream, used in order: cudarc's cross-stream event tracking is not needed.
        // SAFETY: every launch and copy of a backend goes to `stream`, so ordering holds.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Gpu { id: DeviceId::fresh(info.ordinal), ctx, stream, info })
    }

    /// This handle's identity: what its modules, kernels and buffers are tagged with.
    pub fn id(&self) -> DeviceId {
        self.id
    }

    /// A launch of `k` on this device's stream; a kernel of another device is refused. Its
    /// arguments come from the kernel's parameter struct (`runtime/launch.rs`).
    pub fn launch<'a>(&'a self, k: &'a Kernel) -> Result<LaunchArgs<'a>> {
        check_owner(k.owner, self.id, &format!("kernel {}", k.name))?;
        if injected_failure(self.info.ordinal) {
            return Err(PcError::Cuda(format!("launching {}: a failure injected by GPUPC_FAIL_DEVICE", k.name)));
        }
        Ok(self.stream.launch_builder(&k.f))
    }

    /// Refuses a buffer allocated through another context handle (peer copies name both sides).
    pub fn check_buffer<T>(&self, s: &CudaSlice<T>, what: &str) -> Result<()> {
        if Arc::ptr_eq(s.context(), &self.ctx) {
            return Ok(());
        }
        Err(PcError::Internal(format!("{what}: a buffer of GPU {} was used as one of GPU {}", s.context().ordinal(), self.info.ordinal)))
    }

    /// The same device and context with a stream of its own, for a copy that runs beside this
    /// handle's launches.
    pub fn with_own_stream(&self) -> Result<Gpu> {
        let stream = self.ctx.new_stream().map_err(cuda_err("making a copy stream"))?;
        Ok(Gpu { ctx: self.ctx.clone(), stream, info: self.info.clone(), id: self.id })
    }

    /// Free device memory, after what an engine held for its next call there (`held`) was given
    /// back.
    pub fn free_bytes(&self) -> Result<usize> {
        if super::held::release(self.info.ordinal) {
            self.release_freed()?;
        }
        let (free, _) = self.ctx.mem_get_info().map_err(cuda_err("could not read free GPU memory"))?;
        Ok(free)
    }

    /// Gives the memory a previous run freed back to the device, and what an engine held there
    /// for its next call (`held`): cudarc frees with cuMemFreeAsync, and the stream-ordered pool
    /// keeps what it freed until a synchronisation (a second p = 55,572 run of one process found
    /// 50 GB still held and lost its dense levels).
    pub fn release_freed(&self) -> Result<()> {
        super::held::release(self.info.ordinal);
        trim_pool(&self.ctx)
    }

    pub fn ensure_free(&self, bytes: usize, what: &str) -> Result<()> {
        let free = self.free_bytes()?;
        if bytes + (32 << 20) > free {
            return Err(PcError::Cuda(format!("{what} needs {:.2} GB of GPU memory, {:.2} GB free", gb(bytes), gb(free))));
        }
        Ok(())
    }

    /// `bytes` (`memplan`'s sizes) and a margin fit in the free memory, else the error naming
    /// `arg`.
    pub fn ensure_room(&self, arg: &'static str, bytes: u64, what: &str) -> Result<()> {
        let free = self.free_bytes()? as u64;
        crate::runtime::memplan::fits(bytes, crate::runtime::memplan::LEVEL_MARGIN, free, arg, || what.to_string()).map(|_| ())
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
        self.stream.synchronize().map_err(kernel_failed(&format!("kernel {name}")))?;
        clock.kernel += t.elapsed().as_secs_f64();
        clock.launches += 1;
        Ok(())
    }
}

#[cfg(test)]
mod owner_tests {
    use super::*;

    #[test]
    fn a_handle_is_refused_on_another_device_and_on_another_context_of_the_same_card() {
        let (a, b, c) = (DeviceId::fresh(0), DeviceId::fresh(1), DeviceId::fresh(0));
        assert!(check_owner(a, a, "kernel k").is_ok());
        let e = check_owner(a, b, "kernel merge_max_f64").unwrap_err().to_string();
        assert!(e.contains("merge_max_f64") && e.contains("GPU 0") && e.contains("GPU 1"), "{e}");
        assert!(check_owner(a, c, "kernel k").is_err(), "two handles on one card are two owners");
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

/// Bytes of each pinned staging buffer for large copies.
const STAGE_BYTES: usize = 64 << 20;

/// The two pinned staging buffers of a device, made on its first large copy and kept for the
/// process: pinning 2 x 64 MB took tens of milliseconds per copy, most of a warm p = 5361 run's
/// upload and result copies.
pub(crate) struct Stage {
    bufs: [cudarc::driver::PinnedHostSlice<u8>; 2],
}

impl Stage {
    /// The buffers as `len` values of `T` each.
    fn typed<T: Copy>(&mut self, len: usize, what: &str) -> Result<[&mut [T]; 2]> {
        let [a, b] = &mut self.bufs;
        let view = |s: &mut cudarc::driver::PinnedHostSlice<u8>| -> Result<&mut [T]> {
            let bytes = s.len();
            let ptr = s.as_mut_ptr().map_err(cuda_err(what))?;
            assert!(len * std::mem::size_of::<T>() <= bytes && (ptr as usize) % std::mem::align_of::<T>() == 0);
            // SAFETY: page-aligned pinned memory of at least len values, borrowed mutably with
            // `self`; T is plain data (Copy, DeviceRepr), every bit pattern written before read.
            Ok(unsafe { std::slice::from_raw_parts_mut(ptr as *mut T, len) })
        };
        Ok([view(a)?, view(b)?])
    }
}

/// Each device's staging buffers, large and small (`(ordinal, small)`).
fn stages() -> &'static std::sync::Mutex<std::collections::HashMap<(usize, bool), Arc<std::sync::Mutex<Stage>>>> {
    static STAGES: std::sync::OnceLock<std::sync::Mutex<std::collections::HashMap<(usize, bool), Arc<std::sync::Mutex<Stage>>>>> = std::sync::OnceLock::new();
    STAGES.get_or_init(Default::default)
}

/// Copies of at least this many bytes go through staging buffers.
const STAGE_MIN_BYTES: usize = 1 << 20;

/// Bytes of each small pinned staging buffer, for copies of up to eight of them: pinning the
/// large ones took 60 ms, which the first p = 1643 call of a process paid for its 21.6 MB copies.
const STAGE_SMALL_BYTES: usize = 4 << 20;

/// How a copy of `n` values of `T` is staged: None for one direct copy, else the values per
/// piece (about an eighth of the copy) and whether the small buffers hold them. A copy of under
/// 64 MB in one pageable piece ran on one thread, faulting in every page of a fresh destination
/// (R's pMax at p = 1643, 21.6 MB: up to 20 ms); in pieces the DMA of one overlaps the host
/// threads' copy of the other.
fn stage_chunk<T>(n: usize) -> Option<(usize, bool)> {
    let size = std::mem::size_of::<T>().max(1);
    let bytes = n.saturating_mul(size);
    if bytes < STAGE_MIN_BYTES {
        return None;
    }
    let small = bytes <= 8 * STAGE_SMALL_BYTES;
    let max = if small { STAGE_SMALL_BYTES } else { STAGE_BYTES };
    Some((n.div_ceil(8).clamp((STAGE_MIN_BYTES / size).max(1), (max / size).max(1)), small))
}

/// Copies `src` into `dst[k..]` of memory split over `threads` threads of a kept pool (a single
/// memcpy of pageable memory runs at a few GB/s; pMax is 3.2 GB at p = 20000; threads started
/// for each piece cost a p = 1643 call's C about a millisecond). The pool's tasks only copy.
fn par_copy<T: Copy + Send + Sync>(src: &[T], dst: &mut [T], threads: usize) -> Result<()> {
    use rayon::prelude::*;
    let n = src.len();
    let per = n.div_ceil(threads.max(1)).max(1 << 16);
    let pool = pc_core::threads::kept_pool(threads, "copy")?;
    pool.install(|| dst[..n].par_chunks_mut(per).zip(src.par_chunks(per)).for_each(|(d, c)| d.copy_from_slice(c)));
    Ok(())
}

fn copy_threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get()).min(16)
}

impl Gpu {
    /// This device's staging buffers (see [`Stage`]).
    fn stage(&self, small: bool, what: &str) -> Result<Arc<std::sync::Mutex<Stage>>> {
        let mut all = stages().lock().unwrap_or_else(|e| e.into_inner());
        let key = (self.ctx.ordinal(), small);
        if let Some(s) = all.get(&key) {
            return Ok(s.clone());
        }
        let bytes = if small { STAGE_SMALL_BYTES } else { STAGE_BYTES };
        // SAFETY: the buffers are written before they are read (the copies above).
        let alloc = || unsafe { self.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }.map_err(cuda_err(what));
        let s = Arc::new(std::sync::Mutex::new(Stage { bufs: [alloc()?, alloc()?] }));
        all.insert(key, s.clone());
        Ok(s)
    }

    /// An event per staging buffer: the backends disable cudarc's event tracking (one stream), and
    /// with it the events pinned buffers would otherwise record, so the waits are explicit here.
    fn stage_events(&self, what: &str) -> Result<[cudarc::driver::CudaEvent; 2]> {
        let e = || self.ctx.new_event(None).map_err(cuda_err(what));
        Ok([e()?, e()?])
    }

    /// Host -> device through two pinned buffers, the host copy into one overlapping the DMA
    /// out of the other (a pageable copy of C took 4.2 s at p = 20000).
    pub fn upload_staged<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync>(&self, src: &[T], dst: &mut CudaSlice<T>, what: &str) -> Result<()> {
        let Some((chunk, small)) = stage_chunk::<T>(src.len()) else {
            self.stream.memcpy_htod(src, &mut dst.slice_mut(0..src.len())).map_err(cuda_err(what))?;
            return self.stream.synchronize().map_err(cuda_err(what));
        };
        let stage = self.stage(small, what)?;
        let mut stage = stage.lock().unwrap_or_else(|e| e.into_inner());
        let bufs = stage.typed::<T>(chunk, what)?;
        let done = self.stage_events(what)?;
        let mut used = [false; 2];
        let threads = copy_threads();
        for (k, part) in src.chunks(chunk).enumerate() {
            let start = k * chunk;
            let b = k % 2;
            if used[b] {
                done[b].synchronize().map_err(cuda_err(what))?; // the buffer's previous DMA
            }
            let host = &mut bufs[b][..part.len()];
            par_copy(part, host, threads)?;
            // pinned memory: the DMA runs asynchronously, and the event below says when it is done
            self.stream.memcpy_htod(&*host, &mut dst.slice_mut(start..start + part.len())).map_err(cuda_err(what))?;
            done[b].record(&self.stream).map_err(cuda_err(what))?;
            used[b] = true;
        }
        self.stream.synchronize().map_err(cuda_err(what))
    }

    /// Device -> host through two pinned buffers (the DMA into one overlapping the host copy
    /// out of the other), into memory the caller owns (R's pMax matrix).
    pub fn download_staged<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync>(&self, src: &CudaSlice<T>, dst: &mut [T], what: &str) -> Result<()> {
        self.download_staged_at(src, 0, dst, what)
    }

    /// [`Gpu::download_staged`] of `src[offset..offset + dst.len()]` (one device's block of a
    /// result that several devices download in parallel).
    pub fn download_staged_at<T: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync>(&self, src: &CudaSlice<T>, offset: usize, dst: &mut [T], what: &str) -> Result<()> {
        let n = dst.len();
        if offset + n > src.len() {
            return Err(PcError::Internal(format!("{what}: download past the end of the device buffer")));
        }
        let src = &src.slice(offset..offset + n);
        let Some((chunk, small)) = stage_chunk::<T>(n) else {
            self.stream.memcpy_dtoh(&src.slice(0..n), dst).map_err(cuda_err(what))?;
            return self.stream.synchronize().map_err(cuda_err(what));
        };
        // a buffer is only read after the DMA into it completed (its event, below)
        let stage = self.stage(small, what)?;
        let mut stage = stage.lock().unwrap_or_else(|e| e.into_inner());
        let mut bufs = stage.typed::<T>(chunk, what)?;
        let done = self.stage_events(what)?;
        let threads = copy_threads();
        let parts = n.div_ceil(chunk);
        let range = |k: usize| k * chunk..((k + 1) * chunk).min(n);
        let issue = |k: usize, buf: &mut [T], ev: &cudarc::driver::CudaEvent| -> Result<()> {
            let r = range(k);
            self.stream.memcpy_dtoh(&src.slice(r.clone()), &mut buf[..r.len()]).map_err(cuda_err(what))?;
            ev.record(&self.stream).map_err(cuda_err(what))
        };
        issue(0, &mut bufs[0], &done[0])?;
        for k in 0..parts {
            if k + 1 < parts {
                // the other buffer was emptied (synchronously) in the previous round
                issue(k + 1, &mut bufs[(k + 1) % 2], &done[(k + 1) % 2])?;
            }
            done[k % 2].synchronize().map_err(cuda_err(what))?;
            let r = range(k);
            par_copy(&bufs[k % 2][..r.len()], &mut dst[r], threads)?;
        }
        self.stream.synchronize().map_err(cuda_err(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // small copies go in one piece; from 1 MB in about eight pieces of 1-64 MB, each within a
    // staging buffer, and the pieces cover the copy
    #[test]
    fn staged_pieces_fit_the_buffers() {
        assert_eq!(stage_chunk::<f64>(0), None);
        assert_eq!(stage_chunk::<f64>((STAGE_MIN_BYTES / 8) - 1), None);
        assert_eq!(stage_chunk::<f64>(STAGE_MIN_BYTES / 8), Some((STAGE_MIN_BYTES / 8, true)));
        let p1643 = 1643 * 1643;
        let (c, small) = stage_chunk::<f64>(p1643).unwrap();
        assert_eq!((p1643.div_ceil(c), small), (8, true));
        let p20000 = 20000 * 20000;
        assert_eq!(stage_chunk::<f64>(p20000), Some((STAGE_BYTES / 8, false)));
        for n in [STAGE_MIN_BYTES, 3 << 20, 32 << 20, (32 << 20) + 1, 100 << 20, 1 << 33] {
            let (c, small) = stage_chunk::<u8>(n).unwrap();
            let max = if small { STAGE_SMALL_BYTES } else { STAGE_BYTES };
            assert!((STAGE_MIN_BYTES..=max).contains(&c) && c * n.div_ceil(c) >= n && (!small || n.div_ceil(c) <= 8));
        }
    }
}
