//! What a skeleton keeps for the stages after it (`data$test_handle`: `gpu_pc()`'s triple checks
//! in `orient.rs`, `gpu_fci()`'s Possible-D-SEP stage and triple checks in `fci.rs`): the host
//! test of a CPU run, or the data a GPU run left on its device, so that the later stages neither
//! read nor upload the data again. Dropping a kept test (the stage done, an error, R's garbage
//! collector) frees its device memory.

use std::ptr::NonNull;

use extendr_api::prelude::*;
use pc_cmiknn::CmiKnn;
use pc_core::citest::{GSquareKind, GSquareTest, GaussFlavour, GaussTest};
use pc_core::Order;
use pc_cuda::{CudaGSquare, CudaGSquareBatch, CudaGaussBatch, DeviceC};

use crate::convert::{gauss_test, gsquare_test, CoreResult};

pub(crate) enum KeptTest {
    Gauss(GaussTest),
    /// C on the device of a one-device GPU skeleton (the host test is read again in orientation
    /// for the CPU twin; C, read in place from R, was never copied on the host).
    GaussDevice(DeviceC),
    GSquare(KeptGSquare),
    /// CMI-kNN's ranked data (its later stages run on the CPU).
    CmiKnn(CmiKnn),
}

/// A G^2 test and, after a GPU skeleton on one device, its backend (the codes on the device),
/// which borrows the test: the test lives at a fixed heap place, and the backend is freed first
/// and lent out only for a borrow of the holder.
pub(crate) struct KeptGSquare {
    backend: Option<CudaGSquare<'static>>,
    test: NonNull<GSquareTest>,
}

impl KeptGSquare {
    pub(crate) fn new(t: GSquareTest) -> Self {
        KeptGSquare { backend: None, test: NonNull::from(Box::leak(Box::new(t))) }
    }

    /// The test for a backend that is then handed to [`KeptGSquare::keep`].
    ///
    /// SAFETY: every value built on the returned reference must be dropped before this holder,
    /// or moved into it with `keep`.
    pub(crate) unsafe fn test_for_backend(&self) -> &'static GSquareTest {
        unsafe { &*self.test.as_ptr() }
    }

    pub(crate) fn keep(&mut self, b: CudaGSquare<'static>) {
        self.backend = Some(b);
    }

    /// The test and the kept backend, which is taken out (freed when the borrow's user drops it).
    pub(crate) fn parts(&mut self) -> (&GSquareTest, Option<CudaGSquare<'_>>) {
        let b = self.backend.take();
        // SAFETY: `test` is the box leaked in `new`, freed only in `drop`, never mutated; the
        // backend cannot outlive the borrow of `self`.
        (unsafe { self.test.as_ref() }, b)
    }
}

impl Drop for KeptGSquare {
    fn drop(&mut self) {
        // the backend borrows the test
        self.backend = None;
        // SAFETY: the box leaked in `new`, dropped once; no reference to it is left (see above).
        drop(unsafe { Box::from_raw(self.test.as_ptr()) });
    }
}

/// The Gaussian test of the stages after the skeleton, which pcalg runs with R's
/// `gaussCItest` (R's arithmetic, whichever order built the skeleton), and C on the device when
/// a one-device GPU skeleton kept it there.
pub(crate) fn later_gauss(kept: Option<KeptTest>, data: &List, p: usize, threads: usize) -> CoreResult<(GaussTest, Option<DeviceC>)> {
    Ok(match kept {
        Some(KeptTest::Gauss(mut t)) => {
            t.flavour = GaussFlavour::R;
            (t, None)
        }
        other => {
            let c = if let Some(KeptTest::GaussDevice(c)) = other { Some(c) } else { None };
            (gauss_test(data, p, Order::Stable, threads)?, c)
        }
    })
}

/// The GPU evaluator of those tests: on the skeleton's C when it kept it, else C uploaded to
/// the first of `data$devices`.
pub(crate) fn gauss_gpu_batch<'a>(device_c: Option<DeviceC>, t: &'a GaussTest, pool: &'a rayon::ThreadPool, data: &List) -> CoreResult<CudaGaussBatch<'a>> {
    match device_c {
        Some(c) => CudaGaussBatch::from_device_c(c, t, pool),
        None => CudaGaussBatch::new_on(t, pool, crate::multi::devices_of(data)?[0]),
    }
}

/// The G^2 test of the later stages: the skeleton's kept one, or one read from `data`
/// (`test`: "dis" or "bin").
pub(crate) fn later_gsquare(kept: Option<KeptTest>, data: &List, p: usize, test: &str) -> CoreResult<KeptGSquare> {
    Ok(match kept {
        Some(KeptTest::GSquare(h)) => h,
        _ => KeptGSquare::new(gsquare_test(data, p, if test == "dis" { GSquareKind::Dis } else { GSquareKind::Bin })?),
    })
}

/// The CMI-kNN test of the later stages: the kept one, or one read from `data`.
pub(crate) fn later_cmiknn(kept: Option<KeptTest>, data: &List, p: usize) -> CoreResult<CmiKnn> {
    match kept {
        Some(KeptTest::CmiKnn(t)) => Ok(t),
        _ => crate::cmiknn::cmiknn_test(data, p),
    }
}

/// The GPU evaluator of G^2 tests: on the skeleton's kept backend, else on the first of
/// `data$devices`.
pub(crate) fn gsquare_gpu_batch<'a>(kept: Option<CudaGSquare<'a>>, t: &'a GSquareTest, pool: &'a rayon::ThreadPool, data: &List) -> CoreResult<CudaGSquareBatch<'a>> {
    match kept {
        Some(b) => CudaGSquareBatch::from_backend(b, t, pool),
        None => CudaGSquareBatch::new_on(t, pool, crate::multi::devices_of(data)?[0]),
    }
}
