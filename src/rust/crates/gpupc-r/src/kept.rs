//! What a `gpu_pc()` skeleton keeps for its triple checks (`data$test_handle`, taken over by
//! `orient.rs`): the host test of a CPU run, or the data a GPU run left on its device, so that
//! the checks neither read nor upload the data again. Dropping a kept test (orientation done,
//! an error, R's garbage collector) frees its device memory.

use std::ptr::NonNull;

use pc_core::citest::{GSquareTest, GaussTest};
use pc_cuda::{CudaGSquare, DeviceC};

pub(crate) enum KeptTest {
    Gauss(GaussTest),
    /// C on the device of a one-device GPU skeleton (the host test is read again in orientation
    /// for the CPU twin; C, read in place from R, was never copied on the host).
    GaussDevice(DeviceC),
    GSquare(KeptGSquare),
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
