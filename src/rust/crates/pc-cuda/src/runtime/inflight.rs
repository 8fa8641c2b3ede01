//! Two rounds of listed tests in flight on one stream (the G^2 backend's `Rounds`): each round copies its tests into page-locked
//! memory of its own slot, so their upload is asynchronous, and its p-values come back into the
//! slot's page-locked buffer by a copy queued right after its kernels. The device buffers (tests,
//! p-values) are shared by both rounds: everything runs in stream order, so a round's upload waits
//! for the kernels of the round before it, and its kernels for that round's p-value download.
//! What a round still needs from the host while it is in flight lives in its slot, so the host
//! writes the next round and queues it behind the running one (`pc_core::rounds::rank_windows::RoundEval::in_flight`).

use std::collections::VecDeque;
use std::time::Instant;

use cudarc::driver::{CudaEvent, CudaSlice, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use pc_core::PcError;

use crate::runtime::gpu::{cuda_err, Clock, Gpu, Result};
use pc_core::rounds::rank_windows::Batch;

/// How many rounds may be in flight at once.
pub(crate) const SLOTS: usize = 2;

/// One round in flight: its tests (x, then y, then the sets) and its p-values in page-locked
/// memory, and events around its kernels and after its download.
struct Slot {
    up: Option<PinnedHostSlice<u32>>,
    down: Option<PinnedHostSlice<f64>>,
    start: CudaEvent,
    end: CudaEvent,
    copied: CudaEvent,
}

/// The device buffers of a level's rounds and the slots of the rounds in flight.
pub(crate) struct RoundBuffers {
    pub(crate) tx: Option<CudaSlice<u32>>,
    pub(crate) ty: Option<CudaSlice<u32>>,
    pub(crate) ts: Option<CudaSlice<u32>>,
    pub(crate) p: Option<CudaSlice<f64>>,
    slots: [Slot; SLOTS],
    /// The rounds in flight, oldest first: (slot, tests).
    queue: VecDeque<(usize, usize)>,
    next: usize,
}

/// `buf` with room for at least `len` values (its contents are not kept), a quarter more than
/// asked for, so that slowly growing rounds do not reallocate each time.
pub(crate) fn room<T: DeviceRepr>(gpu: &Gpu, buf: &mut Option<CudaSlice<T>>, len: usize, what: &str) -> Result<()> {
    if buf.as_ref().is_none_or(|b| b.len() < len) {
        *buf = None; // free the smaller one first (stream-ordered: after the kernels that read it)
        let cap = len.max(1).saturating_add(len / 4);
        // SAFETY: the rounds' buffers are written (uploads, kernels) before they are read.
        *buf = Some(unsafe { gpu.stream.alloc::<T>(cap) }.map_err(cuda_err(what))?);
    }
    Ok(())
}

/// [`room`] in page-locked host memory.
fn pinned_room<T: DeviceRepr + ValidAsZeroBits>(gpu: &Gpu, buf: &mut Option<PinnedHostSlice<T>>, len: usize, what: &str) -> Result<()> {
    if buf.as_ref().is_none_or(|b| b.len() < len) {
        *buf = None;
        let cap = len.max(1).saturating_add(len / 4);
        // SAFETY: written (by the host, or by a copy from the device) before it is read.
        *buf = Some(unsafe { gpu.ctx.alloc_pinned_with_flags::<T>(cap, 0) }.map_err(cuda_err(what))?);
    }
    Ok(())
}

impl RoundBuffers {
    pub(crate) fn new(gpu: &Gpu) -> Result<Self> {
        let timed = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let ev = || gpu.ctx.new_event(timed).map_err(cuda_err("creating a GPU event"));
        let slot = || -> Result<Slot> { Ok(Slot { up: None, down: None, start: ev()?, end: ev()?, copied: ev()? }) };
        Ok(RoundBuffers { tx: None, ty: None, ts: None, p: None, slots: [slot()?, slot()?], queue: VecDeque::new(), next: 0 })
    }

    /// Starts round `b` (`l` set members per test): the device buffers grown to it, its tests
    /// copied into the next slot's page-locked buffer and their upload queued, the slot's start
    /// event recorded (the caller's kernels follow, then [`RoundBuffers::end`]). Returns the slot.
    pub(crate) fn begin(&mut self, gpu: &Gpu, b: &Batch, l: usize, clock: &mut Clock) -> Result<usize> {
        let m = b.len();
        if self.queue.len() >= SLOTS {
            return Err(PcError::Internal("a third round launched before the first was finished".into()));
        }
        let t = Instant::now();
        room(gpu, &mut self.tx, m, "round tests")?;
        room(gpu, &mut self.ty, m, "round tests")?;
        room(gpu, &mut self.ts, m * l, "round tests")?;
        room(gpu, &mut self.p, m, "round p-values")?;
        let k = self.next;
        let slot = &mut self.slots[k];
        pinned_room(gpu, &mut slot.up, 2 * m + m * l, "round tests")?;
        pinned_room(gpu, &mut slot.down, m, "round p-values")?;
        // the slot's last round was finished: nothing of it is in flight
        let host = slot.up.as_mut().map(|u| u.as_mut_slice()).transpose().map_err(cuda_err("round tests"))?.unwrap_or_default();
        let (hx, rest) = host.split_at_mut(m);
        let (hy, rest) = rest.split_at_mut(m);
        let hs = &mut rest[..m * l];
        hx.copy_from_slice(&b.x);
        hy.copy_from_slice(&b.y);
        hs.copy_from_slice(&b.s);
        let (Some(tx), Some(ty), Some(ts)) = (&mut self.tx, &mut self.ty, &mut self.ts) else {
            return Err(PcError::Internal("round buffers missing".into()));
        };
        for (src, dst) in [(&*hx, tx), (&*hy, ty), (&*hs, ts)] {
            if !src.is_empty() {
                gpu.stream.memcpy_htod(src, dst).map_err(cuda_err("round tests"))?;
            }
        }
        slot.start.record(&gpu.stream).map_err(cuda_err("recording a GPU event"))?;
        clock.transfer += t.elapsed().as_secs_f64();
        Ok(k)
    }

    /// After slot `k`'s kernels (which wrote `p[..m]`): its end event, then its p-values' download
    /// into the slot, queued before any later round's kernels can overwrite them.
    pub(crate) fn end(&mut self, gpu: &Gpu, k: usize, m: usize) -> Result<()> {
        let slot = &mut self.slots[k];
        slot.end.record(&gpu.stream).map_err(cuda_err("recording a GPU event"))?;
        let p = self.p.as_ref().ok_or_else(|| PcError::Internal("round buffers missing".into()))?;
        let down = slot.down.as_mut().map(|d| d.as_mut_slice()).transpose().map_err(cuda_err("round p-values"))?.unwrap_or_default();
        // exactly m values: cudarc copies as many as the destination holds
        gpu.stream.memcpy_dtoh(&p.slice(0..m), &mut down[..m]).map_err(cuda_err("round p-values"))?;
        slot.copied.record(&gpu.stream).map_err(cuda_err("recording a GPU event"))?;
        self.queue.push_back((k, m));
        self.next = (k + 1) % SLOTS;
        Ok(())
    }

    /// Waits for the oldest round in flight (of `m` tests) and appends its p-values to `out`; the
    /// wait goes to `clock.transfer`, its kernels' device time to `clock.kernel`. `kernel` names
    /// the kernels in an error.
    pub(crate) fn finish(&mut self, m: usize, out: &mut Vec<f64>, clock: &mut Clock, kernel: &str) -> Result<()> {
        let (k, launched) = self.queue.pop_front().ok_or_else(|| PcError::Internal("finish before launch".into()))?;
        if launched != m {
            return Err(PcError::Internal(format!("finish of a round of {m} tests, the oldest in flight has {launched}")));
        }
        let slot = &mut self.slots[k];
        let t = Instant::now();
        slot.copied.synchronize().map_err(|e| PcError::Cuda(format!("kernel {kernel} failed: {e}")))?;
        clock.transfer += t.elapsed().as_secs_f64();
        clock.kernel += slot.start.elapsed_ms(&slot.end).map_err(cuda_err("reading a GPU event"))? as f64 / 1e3;
        let down = slot.down.as_mut().map(|d| d.as_mut_slice()).transpose().map_err(cuda_err("round p-values"))?.unwrap_or_default();
        out.extend_from_slice(&down[..m]);
        Ok(())
    }
}
