//! A double matrix that R reads as any other while Rust owns its cells (an ALTREP class): pMax,
//! and the junction tree's marginals.
//!
//! pcalg's pMax is p x p doubles (21.6 MB at p = 1643, 3.2 GB at p = 20000). Allocated by R, it
//! counts toward the heap size at which R's collector runs, and with pcalg loaded a full
//! collection costs about 0.1 s: at p = 1643 about every other gpu_pc() call set one off, which
//! was most of such a call. Held here, its bytes are not R's to count; the collector frees them
//! (the finalizer of the vector's external pointer) when the vector goes. R reads and writes the
//! cells through the class's data pointer, copies them where it duplicates the vector, and
//! `saveRDS()` writes them as a plain double vector (the class has no serialized state), so
//! nothing outside this file can tell the two apart but `.Internal(inspect())`.

use std::ffi::c_void;
use std::sync::OnceLock;

use extendr_api::prelude::*;
use extendr_ffi::{
    R_ExternalPtrAddr, R_MakeExternalPtr, R_NilValue, R_RegisterCFinalizerEx, R_altrep_class_t, R_altrep_data1,
    R_make_altreal_class, R_new_altrep, R_set_altrep_Length_method, R_set_altvec_Dataptr_method,
    R_set_altvec_Dataptr_or_null_method, R_xlen_t, Rboolean, SEXP,
};
use pc_core::PcError;

/// The class, made on R's thread at first use (R keeps it for the process; forked children
/// inherit it).
struct Class(R_altrep_class_t);
// SAFETY: the class object is only read, and only on R's thread.
unsafe impl Send for Class {}
unsafe impl Sync for Class {}

fn class() -> R_altrep_class_t {
    static CLASS: OnceLock<Class> = OnceLock::new();
    CLASS
        .get_or_init(|| unsafe {
            let cls = R_make_altreal_class(c"gpupc_doubles".as_ptr(), c"gpupc".as_ptr(), std::ptr::null_mut());
            R_set_altrep_Length_method(cls, Some(length));
            R_set_altvec_Dataptr_method(cls, Some(dataptr));
            R_set_altvec_Dataptr_or_null_method(cls, Some(dataptr_or_null));
            Class(cls)
        })
        .0
}

/// The cells of one vector of the class.
///
/// # Safety
/// `x` is a vector of the class, alive.
unsafe fn cells<'a>(x: SEXP) -> &'a mut Vec<f64> {
    &mut *(R_ExternalPtrAddr(R_altrep_data1(x)) as *mut Vec<f64>)
}

unsafe extern "C" fn length(x: SEXP) -> R_xlen_t {
    cells(x).len() as R_xlen_t
}

unsafe extern "C" fn dataptr(x: SEXP, _writeable: Rboolean) -> *mut c_void {
    cells(x).as_mut_ptr() as *mut c_void
}

unsafe extern "C" fn dataptr_or_null(x: SEXP) -> *const c_void {
    cells(x).as_ptr() as *const c_void
}

unsafe extern "C" fn finalize(ptr: SEXP) {
    let v = R_ExternalPtrAddr(ptr) as *mut Vec<f64>;
    if !v.is_null() {
        drop(Box::from_raw(v));
        extendr_ffi::R_ClearExternalPtr(ptr);
    }
}

/// `len` doubles for the search to write, every one of them, before R reads any. Not zeroed:
/// glibc serves a request of pMax's size again from the memory the last one freed, whose pages
/// are already mapped; zeroed memory comes fresh from the kernel instead, and its page faults made
/// pMax's copy from the GPU five times as slow at p = 1643. An allocation refused is an error
/// naming `what` and the argument `arg` that sized it.
fn unwritten(len: usize, what: &str, arg: &'static str) -> Result<Vec<f64>, PcError> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let refused = || PcError::OutOfMemory { arg, what: what.to_string(), bytes: (len as u64).saturating_mul(8), available: None };
    let layout = std::alloc::Layout::array::<f64>(len).map_err(|_| refused())?;
    // SAFETY: a non-zero layout, and the Vec takes the allocation with the layout it was made
    // with. Its cells are written before they are read (the level loop fills or overwrites all
    // of pMax first), as R's own uninitialised matrix was before.
    unsafe {
        let ptr = std::alloc::alloc(layout) as *mut f64;
        if ptr.is_null() {
            return Err(refused());
        }
        Ok(Vec::from_raw_parts(ptr, len, len))
    }
}

/// The `nrow` x `ncol` matrix holding `cells` (column-major, R's order); `arg` sized it.
pub fn matrix(cells: Vec<f64>, nrow: usize, ncol: usize, arg: &'static str) -> Result<Robj, PcError> {
    if cells.len() != nrow * ncol {
        return Err(PcError::Internal(format!("{} cells for a {nrow} x {ncol} matrix", cells.len())));
    }
    let dims = [i32::try_from(nrow), i32::try_from(ncol)];
    let [Ok(nr), Ok(nc)] = dims else {
        return Err(PcError::invalid(arg, "is too large for an R matrix"));
    };
    let boxed = Box::into_raw(Box::new(cells)) as usize;
    // set once the external pointer (and its finalizer) holds the cells; an R allocation refused
    // before that is an R error (not a jump out of Rust), and the cells are dropped here
    let held = std::sync::atomic::AtomicBool::new(false);
    let held_ref = &held;
    let made = extendr_api::catch_r_error(move || unsafe {
        let ptr = extendr_ffi::Rf_protect(R_MakeExternalPtr(std::ptr::null_mut(), R_NilValue, R_NilValue));
        R_RegisterCFinalizerEx(ptr, Some(finalize), Rboolean::FALSE);
        extendr_ffi::R_SetExternalPtrAddr(ptr, boxed as *mut c_void);
        held_ref.store(true, std::sync::atomic::Ordering::Relaxed);
        let x = extendr_ffi::Rf_protect(R_new_altrep(class(), ptr, R_NilValue));
        let dim = extendr_ffi::Rf_protect(extendr_ffi::Rf_allocVector(extendr_ffi::SEXPTYPE::INTSXP, 2));
        *extendr_ffi::INTEGER(dim) = nr;
        *extendr_ffi::INTEGER(dim).add(1) = nc;
        extendr_ffi::Rf_setAttrib(x, extendr_ffi::R_DimSymbol, dim);
        extendr_ffi::Rf_unprotect(3);
        x
    });
    match made {
        // SAFETY: `from_sexp` protects the fresh vector before any other R allocation.
        Ok(x) => Ok(unsafe { Robj::from_sexp(x) }),
        Err(_) => {
            if !held.load(std::sync::atomic::Ordering::Relaxed) {
                // SAFETY: no R object took the cells; this is the only owner
                drop(unsafe { Box::from_raw(boxed as *mut Vec<f64>) });
            }
            Err(PcError::invalid(arg, format!("R could not make the {nrow} x {ncol} matrix's header")))
        }
    }
}

/// A `nrow` x `ncol` matrix held by Rust whose cells the caller writes before R reads them;
/// `what` and `arg` name it in an allocation error.
pub fn unwritten_matrix(nrow: usize, ncol: usize, what: &str, arg: &'static str) -> Result<Robj, PcError> {
    matrix(unwritten(nrow.saturating_mul(ncol), what, arg)?, nrow, ncol, arg)
}
