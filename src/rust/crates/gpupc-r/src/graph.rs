//! The pieces of a graphNEL that grow with the edges (R/graph.R, R/orient.R): its `edgeL` and the
//! names of its `edgeData`, made with as few R objects as R's own code would leave behind. At
//! p = 20000 R's `split()` + `lapply()` and `paste()` made several objects per node and edge, and
//! the collections they set off were most of the graph's time.

use extendr_api::prelude::*;
use extendr_ffi::{Rf_allocVector, Rf_mkCharLenCE, Rf_setAttrib, R_NamesSymbol, INTEGER, MARK_NOT_MUTABLE, SET_STRING_ELT, SET_VECTOR_ELT, SEXP, SEXPTYPE, STRING_ELT};

use crate::convert::CoreResult;
use pc_core::PcError;

fn internal(msg: &str) -> PcError {
    PcError::Internal(format!("graph pieces: {msg}"))
}

/// The 1-based node numbers of `x` (an integer vector), each checked to lie in 1..=p.
fn nodes<'a>(x: &'a Robj, p: usize, what: &str) -> CoreResult<&'a [i32]> {
    let v = x.as_integer_slice().ok_or_else(|| internal(&format!("`{what}` must be an integer vector")))?;
    if v.iter().any(|&k| k < 1 || k as usize > p) {
        return Err(internal(&format!("`{what}` holds a node outside 1..{p}")));
    }
    Ok(v)
}

/// p (the labels' count) and the edges' two ends, checked against each other.
fn edge_ends<'a>(from: &'a Robj, to: &'a Robj, labels: &Robj) -> CoreResult<(usize, &'a [i32], &'a [i32])> {
    let p = labels.len();
    if labels.rtype() != Rtype::Strings {
        return Err(internal("`labels` must be a character vector"));
    }
    let (from, to) = (nodes(from, p, "from")?, nodes(to, p, "to")?);
    if from.len() != to.len() {
        return Err(internal("`from` and `to` differ in length"));
    }
    Ok((p, from, to))
}

/// `edgeL`: for node i (1..p, named by `labels`), `list(edges = to[from == i])` in the order
/// given, as R/graph.R's `edge_lists()` made it with `split()` (an empty integer vector for a
/// node without edges). Every node's list shares one not-mutable `"edges"` names vector, and
/// every node without edges one not-mutable `integer(0)`: R copies either before changing it,
/// and `identical()` and serialisation see values, not sharing.
fn edge_lists(from: &Robj, to: &Robj, labels: &Robj) -> CoreResult<Robj> {
    let (p, from, to) = edge_ends(from, to, labels)?;
    // the edges by node (a counting sort keeps each node's order)
    let mut start = vec![0usize; p + 1];
    for &f in from {
        start[f as usize] += 1;
    }
    for i in 0..p {
        start[i + 1] += start[i];
    }
    let mut next = start.clone();
    let mut by_node = vec![0i32; to.len()];
    for (&f, &t) in from.iter().zip(to) {
        let k = &mut next[f as usize - 1];
        by_node[*k] = t;
        *k += 1;
    }
    let outer = List::new(p);
    let edges_name = Robj::from("edges");
    let empty = Robj::from(Vec::<i32>::new());
    // SAFETY: on R's main thread. `outer`, `edges_name` and `empty` are protected; every vector
    // allocated below is stored into a protected list right after its allocation, before the next
    // R allocation, and `Rf_setAttrib` protects its arguments itself. An allocation R refuses is
    // an error, not a jump out of Rust.
    let (o, names, none, labels) = unsafe { (outer.get(), edges_name.get(), empty.get(), labels.get()) };
    let (start, by_node) = (&start, &by_node);
    extendr_api::catch_r_error(move || unsafe {
        MARK_NOT_MUTABLE(names);
        MARK_NOT_MUTABLE(none);
        for i in 0..p {
            let node = Rf_allocVector(SEXPTYPE::VECSXP, 1);
            SET_VECTOR_ELT(o, i as isize, node);
            let mine = &by_node[start[i]..start[i + 1]];
            let e = if mine.is_empty() {
                none
            } else {
                let e = Rf_allocVector(SEXPTYPE::INTSXP, mine.len() as isize);
                std::slice::from_raw_parts_mut(INTEGER(e), mine.len()).copy_from_slice(mine);
                e
            };
            SET_VECTOR_ELT(node, 0, e);
            Rf_setAttrib(node, R_NamesSymbol, names);
        }
        Rf_setAttrib(o, R_NamesSymbol, labels);
        o
    })
    .map_err(|_| PcError::invalid("p", format!("the graph's edge lists ({p} nodes) could not be allocated by R")))?;
    Ok(outer.into_robj())
}

/// `paste(labels[from], labels[to], sep = "|")`, the names of `edgeData`; `None` where a label is
/// NA or not ASCII (R's paste() then decides the result's encoding).
fn edge_keys(from: &Robj, to: &Robj, labels: &Robj) -> CoreResult<Option<Robj>> {
    let (p, from, to) = edge_ends(from, to, labels)?;
    // SAFETY: `labels` is a live character vector; its CHARSXPs live as long as it does.
    let names: Vec<&[u8]> = unsafe {
        let l = labels.get();
        let mut names = Vec::with_capacity(p);
        for i in 0..p {
            let c = STRING_ELT(l, i as isize);
            if c == extendr_ffi::R_NaString {
                return Ok(None);
            }
            let b = std::ffi::CStr::from_ptr(extendr_ffi::R_CHAR(c)).to_bytes();
            if !b.is_ascii() {
                return Ok(None);
            }
            names.push(b);
        }
        names
    };
    let out = Robj::from(Strings::new(from.len()));
    // SAFETY: on R's main thread; `out` is protected, and each CHARSXP is stored into it right
    // after it is made.
    let o: SEXP = unsafe { out.get() };
    let names = &names;
    extendr_api::catch_r_error(move || unsafe {
        let mut buf: Vec<u8> = Vec::new();
        for (k, (&f, &t)) in from.iter().zip(to).enumerate() {
            buf.clear();
            buf.extend_from_slice(names[f as usize - 1]);
            buf.push(b'|');
            buf.extend_from_slice(names[t as usize - 1]);
            let c = Rf_mkCharLenCE(buf.as_ptr() as *const std::ffi::c_char, buf.len() as i32, extendr_ffi::cetype_t::CE_NATIVE);
            SET_STRING_ELT(o, k as isize, c);
        }
        o
    })
    .map_err(|_| PcError::invalid("p", format!("the graph's {} edge names could not be allocated by R", from.len())))?;
    Ok(Some(out))
}

/// `list(edgeL, keys)` of a graphNEL with the edges from -> to (1-based node numbers, integer
/// vectors) over `labels`; `keys` (the edgeData names) only when asked for, and NULL when R must
/// paste them itself (a label NA or not ASCII).
#[extendr]
fn gpupc_graph_parts(from: Robj, to: Robj, labels: Robj, keys: bool) -> Robj {
    let made = (|| -> CoreResult<Robj> {
        let edge_l = edge_lists(&from, &to, &labels)?;
        let k = if keys { edge_keys(&from, &to, &labels)?.unwrap_or_else(|| Robj::from(())) } else { Robj::from(()) };
        List::from_names_and_values(["edgeL", "keys"], [edge_l, k]).map(|l| l.into_robj()).map_err(|e| internal(&e.to_string()))
    })();
    made.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

extendr_module! {
    mod graph;
    fn gpupc_graph_parts;
}
