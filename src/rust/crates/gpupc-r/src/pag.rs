//! FCI's orientation entry point (`pc_core::fci::pag`): pcalg's `udag2pag()` arguments in, the
//! PAG's marks out. Only the separating sets the rules can read are taken from R's list: those
//! of pairs not adjacent both ways with a common neighbour, after the JCI marks.

use extendr_api::prelude::*;
use pc_core::fci::pag::{apply_jci, orient, Jci, Pag, PagOptions, UnfTriples};
use pc_core::PcError;

use crate::convert::CoreResult;
use crate::orient::read_pair_sepsets;
use crate::watch::RWatch;

fn invalid(arg: &'static str, msg: impl Into<String>) -> PcError {
    PcError::invalid(arg, msg)
}

/// The p x p matrix of marks (R's double matrix, column-major).
fn read_marks(pag: &Robj, p: usize) -> CoreResult<Vec<u8>> {
    let v = pag.as_real_slice().ok_or_else(|| invalid("pag", "must be a numeric matrix"))?;
    if v.len() != p * p {
        return Err(invalid("pag", format!("must be a {p} x {p} matrix")));
    }
    v.iter()
        .enumerate()
        .map(|(k, &x)| match x {
            _ if x.is_nan() => Err(invalid("pag", format!("holds NA at [{}, {}]", k % p + 1, k / p + 1))),
            _ if x == 0.0 || x == 1.0 || x == 2.0 || x == 3.0 => Ok(x as u8),
            _ => Err(invalid("pag", format!("holds {x} at [{}, {}]; the marks are 0 (none), 1 (circle), 2 (arrowhead) and 3 (tail)", k % p + 1, k / p + 1))),
        })
        .collect()
}

/// `contextVars` as pcalg's `%in%` reads it: a node is a context variable when some value equals
/// its number (values that are no node's number are never matched); NULL: none.
fn read_context(x: &Robj, p: usize) -> CoreResult<Vec<bool>> {
    if x.is_null() {
        return Ok(Vec::new());
    }
    let vals: Vec<f64> = if let Some(s) = x.as_integer_slice() {
        s.iter().map(|&v| if v == i32::MIN { f64::NAN } else { v as f64 }).collect()
    } else if let Some(s) = x.as_real_slice() {
        s.to_vec()
    } else {
        return Err(invalid("contextVars", "must be NULL or a vector of variable numbers"));
    };
    let mut ctx = vec![false; p];
    for v in vals {
        if v >= 1.0 && v <= p as f64 && v.fract() == 0.0 {
            ctx[v as usize - 1] = true;
        }
    }
    Ok(ctx)
}

fn udag2pag_impl(pag: Robj, p: i32, sepset: Robj, rules: Robj, unf: Robj, jci: &str, context: Robj, orient_collider: bool) -> CoreResult<Robj> {
    if p < 0 {
        return Err(invalid("pag", "must be a square matrix"));
    }
    let p = p as usize;
    let r = rules.as_logical_slice().filter(|r| r.len() == 10 && r.iter().all(|v| !v.is_na())).ok_or_else(|| invalid("rules", "must be 10 TRUE or FALSE values"))?;
    let mut flags = [false; 10];
    for (f, v) in flags.iter_mut().zip(r) {
        *f = v.is_true();
    }
    let jci = Jci::from_r(jci).ok_or_else(|| invalid("jci", "must be one of \"0\", \"1\", \"12\", \"123\""))?;
    let numbers: Vec<f64> = if unf.is_null() {
        Vec::new()
    } else if let Some(s) = unf.as_real_slice() {
        s.to_vec()
    } else {
        return Err(invalid("unfVect", "must be NULL or a numeric vector of triple numbers"));
    };
    let context = read_context(&context, p)?;
    let mut g = Pag::from_marks(p, read_marks(&pag, p)?)?;
    if g.has_edges() {
        apply_jci(&mut g, &context, jci);
        let sep = read_pair_sepsets(&sepset, p, &g.sepset_pairs())?;
        let mut unf = UnfTriples::from_numbers(p, &numbers);
        let opts = PagOptions { rules: flags, jci, orient_collider };
        orient(&mut g, &sep, &mut unf, &context, &opts, &mut RWatch::new(&List::new(0)))?;
    }
    let marks: Vec<f64> = g.marks().iter().map(|&m| m as f64).collect();
    let out = List::from_names_and_values(["marks", "wrote"], [Robj::from(marks), Robj::from(g.wrote())]).map_err(|e| PcError::Internal(e.to_string()))?;
    Ok(out.into_robj())
}

/// pcalg's `udag2pag()` (`pc_core::fci::pag`): `pag`, the p x p double matrix of marks (0 to 3);
/// `sepset`, R's list of p lists; `rules`, 10 logicals; `unf`, NULL or the double `unfVect`;
/// `jci` ("0", "1", "12", "123"); `context`, NULL or contextVars; `orient_collider`. Returns
/// `marks` (the result, column-major doubles) and `wrote` (whether pcalg would have assigned to
/// the matrix, which turns an integer matrix into a double one).
#[extendr]
fn gpupc_udag2pag(pag: Robj, p: i32, sepset: Robj, rules: Robj, unf: Robj, jci: &str, context: Robj, orient_collider: bool) -> Robj {
    match udag2pag_impl(pag, p, sepset, rules, unf, jci, context, orient_collider) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

extendr_module! {
    mod pag;
    fn gpupc_udag2pag;
}
