//! The `sepset` slot as compact rows (class `gpupc_sepset_row`, methods in R/sepset_rows.R), for
//! large p: pcalg's p lists of p pointers are 8 p^2 bytes (25 GB at p = 55,572) and took R seconds
//! to fill at p = 20000, while a skeleton's non-NULL, non-empty sets number about the edges.
//!
//! Row x is `list(p = p, bits = <raw, bit y set: sepset[[x]][[y]] is integer(0)>, idx = <y's with
//! a set of their own>, sets = <those sets>, idx1 = <y's whose set is one variable>, k1 = <that
//! variable>)`; every other entry is NULL. `sepset[[x]][[y]]` reads the same through the row's
//! `[[` method as through pcalg's list. Level 0's empty sets are level 0's bit matrix row for row
//! (p^2 / 8 bytes in all), level 1's sets of a dense backend two integer vectors (no R object per
//! set: 2e8 of them at p = 55,572, n = 3189), the later levels' sets are listed.

use extendr_api::prelude::*;
use extendr_ffi::{Rf_allocVector, Rf_setAttrib, R_ClassSymbol, R_NamesSymbol, INTEGER, MARK_NOT_MUTABLE, RAW, SET_STRING_ELT, SET_VECTOR_ELT, SEXP, SEXPTYPE, TYPEOF, VECTOR_ELT};

use crate::convert::{CoreResult, SepParts};

/// The class of a compact row, as R/sepset_rows.R defines it.
pub const ROW_CLASS: &str = "gpupc_sepset_row";
const FIELDS: [&str; 6] = ["p", "bits", "idx", "sets", "idx1", "k1"];

/// A character vector made with R's C API, marked not mutable so that every row can share it.
///
/// # Safety
/// On R's main thread; the result is unprotected: store it before the next R allocation.
unsafe fn shared_strings(items: &[&str]) -> SEXP {
    let v = Rf_allocVector(SEXPTYPE::STRSXP, items.len() as isize);
    // protected by `keep` while the CHARSXPs are made
    let keep = Robj::from_sexp(v);
    for (i, s) in items.iter().enumerate() {
        let c = extendr_ffi::Rf_mkCharLenCE(s.as_ptr() as *const std::ffi::c_char, s.len() as i32, extendr_ffi::cetype_t::CE_UTF8);
        SET_STRING_ELT(v, i as isize, c);
    }
    MARK_NOT_MUTABLE(v);
    let out = keep.get();
    drop(keep);
    out
}

/// The p compact rows of a result's sepsets (see the module docs).
pub fn sepsets_to_rows(res: &SepParts) -> CoreResult<Robj> {
    let p = res.sep0.p();
    let p_i32 = i32::try_from(p).map_err(|_| pc_core::PcError::invalid("p", "is too large for R"))?;
    let bytes = p.div_ceil(8);
    // the later levels' sets by row, in list order (a later entry for the same pair wins, as
    // the list's SET_VECTOR_ELT sequence does)
    // every buffer here grows with the result (2e8 triples at p = 55,572): allocated fallibly,
    // so a result too large for the memory left is an R error, not an abort
    fn grow<T>(n: usize) -> CoreResult<Vec<T>> {
        pc_core::mem::try_vec(n, "labels", "the compact sepset rows")
    }
    let mut by_row: Vec<u32> = grow(res.sepsets.len())?;
    by_row.extend(0..res.sepsets.len() as u32);
    by_row.sort_by_key(|&k| res.sepsets[k as usize].x);
    // level 1's triples by row (a counting sort: 2e8 of them at p = 55,572)
    let mut start1: Vec<usize> = grow(p + 1)?;
    start1.resize(p + 1, 0);
    for t in &res.sep1 {
        start1[t[0] as usize + 1] += 1;
    }
    for x in 0..p {
        start1[x + 1] += start1[x];
    }
    let mut fill: Vec<usize> = grow(p + 1)?;
    fill.extend_from_slice(&start1);
    let mut single: Vec<[i32; 2]> = grow(res.sep1.len())?;
    single.resize(res.sep1.len(), [0, 0]);
    for t in &res.sep1 {
        let at = &mut fill[t[0] as usize];
        single[*at] = [t[1] as i32 + 1, t[2] as i32 + 1];
        *at += 1;
    }
    let outer = List::new(p);
    // SAFETY: all on R's main thread. `outer`, `names`, `class` and the shared fields are
    // protected (Robj) for the whole loop; every vector made for a row is stored into the row, and the row into `outer`,
    // before the next R allocation, so nothing is ever unprotected across an allocation.
    unsafe {
        let names = Robj::from_sexp(shared_strings(&FIELDS));
        let class = Robj::from_sexp(shared_strings(&[ROW_CLASS]));
        // `p`, and a row's empty fields (most rows have no set of a later level), one object each
        // for every row, not mutable (the rows' methods replace a field, R copies before any
        // change in place): fewer objects for R's collector to make and walk
        let shared_p = Robj::from(p_i32);
        let no_ints = Robj::from(Vec::<i32>::new());
        let no_sets = Robj::from(List::new(0));
        for v in [&shared_p, &no_ints, &no_sets] {
            MARK_NOT_MUTABLE(v.get());
        }
        let ints_or_shared = |n: usize| if n == 0 { no_ints.get() } else { Rf_allocVector(SEXPTYPE::INTSXP, n as isize) };
        let o = outer.get();
        let mut k = 0usize;
        for x in 0..p {
            let row = Rf_allocVector(SEXPTYPE::VECSXP, FIELDS.len() as isize);
            SET_VECTOR_ELT(o, x as isize, row);
            Rf_setAttrib(row, R_NamesSymbol, names.get());
            Rf_setAttrib(row, R_ClassSymbol, class.get());
            SET_VECTOR_ELT(row, 0, shared_p.get());
            let bits = Rf_allocVector(SEXPTYPE::RAWSXP, bytes as isize);
            SET_VECTOR_ELT(row, 1, bits);
            let dst = std::slice::from_raw_parts_mut(RAW(bits), bytes);
            for (d, w) in dst.chunks_mut(8).zip(res.sep0.row(x)) {
                d.copy_from_slice(&w.to_le_bytes()[..d.len()]);
            }
            // this row's listed sets, the last one per y kept
            let start = k;
            while k < by_row.len() && res.sepsets[by_row[k] as usize].x as usize == x {
                k += 1;
            }
            let mut mine: Vec<&pc_core::skeleton::Sepset> = by_row[start..k].iter().map(|&j| &res.sepsets[j as usize]).collect();
            mine.reverse();
            mine.sort_by_key(|s| s.y); // stable: the last written comes first per y
            mine.dedup_by_key(|s| s.y);
            let idx = ints_or_shared(mine.len());
            SET_VECTOR_ELT(row, 2, idx);
            if !mine.is_empty() {
                let iv = std::slice::from_raw_parts_mut(INTEGER(idx), mine.len());
                for (d, s) in iv.iter_mut().zip(&mine) {
                    *d = s.y as i32 + 1;
                }
            }
            let sets = if mine.is_empty() { no_sets.get() } else { Rf_allocVector(SEXPTYPE::VECSXP, mine.len() as isize) };
            SET_VECTOR_ELT(row, 3, sets);
            for (i, s) in mine.iter().enumerate() {
                let v = Rf_allocVector(SEXPTYPE::INTSXP, s.set.len() as isize);
                SET_VECTOR_ELT(sets, i as isize, v);
                let dst = std::slice::from_raw_parts_mut(INTEGER(v), s.set.len());
                for (d, &m) in dst.iter_mut().zip(&s.set) {
                    *d = m as i32 + 1;
                }
            }
            let mine1 = &single[start1[x]..start1[x + 1]];
            let idx1 = ints_or_shared(mine1.len());
            SET_VECTOR_ELT(row, 4, idx1);
            let k1 = ints_or_shared(mine1.len());
            SET_VECTOR_ELT(row, 5, k1);
            if !mine1.is_empty() {
                let (iv, kv) = (std::slice::from_raw_parts_mut(INTEGER(idx1), mine1.len()), std::slice::from_raw_parts_mut(INTEGER(k1), mine1.len()));
                for ((i, k), s) in iv.iter_mut().zip(kv.iter_mut()).zip(mine1) {
                    *i = s[0];
                    *k = s[1];
                }
            }
        }
    }
    Ok(outer.into_robj())
}

/// What a compact row holds for one y (orientation reads NULL and integer(0) alike).
pub enum RowEntry {
    /// `row` is not a compact row.
    NotCompact,
    /// NULL or integer(0).
    Empty,
    /// A listed set (an R vector).
    Set(SEXP),
    /// A one-variable set of `idx1`/`k1` (1-based).
    Single(i32),
}

/// Entry `y` (0-based) of `row`, if it is a compact row.
///
/// # Safety
/// `row` is a live R object; on R's main thread.
pub unsafe fn compact_entry(row: SEXP, y: u32) -> RowEntry {
    if TYPEOF(row) != SEXPTYPE::VECSXP || extendr_ffi::Rf_xlength(row) != FIELDS.len() as isize || !is_compact_row(row) {
        return RowEntry::NotCompact;
    }
    let want = y as i32 + 1;
    let ints = |k: isize| {
        let v = VECTOR_ELT(row, k);
        if TYPEOF(v) == SEXPTYPE::INTSXP {
            std::slice::from_raw_parts(INTEGER(v), extendr_ffi::Rf_xlength(v) as usize)
        } else {
            &[]
        }
    };
    let sets = VECTOR_ELT(row, 3);
    if let Some(k) = ints(2).iter().position(|&v| v == want) {
        if TYPEOF(sets) == SEXPTYPE::VECSXP && (k as isize) < extendr_ffi::Rf_xlength(sets) {
            return RowEntry::Set(VECTOR_ELT(sets, k as isize));
        }
    }
    let (idx1, k1) = (ints(4), ints(5));
    match idx1.iter().position(|&v| v == want) {
        Some(k) if k < k1.len() => RowEntry::Single(k1[k]),
        _ => RowEntry::Empty,
    }
}

unsafe fn is_compact_row(row: SEXP) -> bool {
    let cls = extendr_ffi::Rf_getAttrib(row, R_ClassSymbol);
    if TYPEOF(cls) != SEXPTYPE::STRSXP {
        return false;
    }
    (0..extendr_ffi::Rf_xlength(cls)).any(|i| {
        let c = extendr_ffi::STRING_ELT(cls, i);
        std::ffi::CStr::from_ptr(extendr_ffi::R_CHAR(c)).to_bytes() == ROW_CLASS.as_bytes()
    })
}
