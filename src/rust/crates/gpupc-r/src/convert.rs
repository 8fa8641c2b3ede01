//! The one module that turns R values into core inputs and core results into R values.

use extendr_api::prelude::*;
use pc_core::citest::{DiscreteData, GSquareKind, GSquareTest, GaussFlavour, GaussTest};
use pc_core::{Adjacency, Order, PcError, SkeletonResult};

pub type CoreResult<T> = std::result::Result<T, PcError>;

fn invalid(arg: &'static str, msg: impl Into<String>) -> PcError {
    PcError::invalid(arg, msg)
}

/// A square logical matrix (NA counts as FALSE; the R layer has already rejected NA), or
/// `when_null(p)` for NULL: R passes NULL for "no fixedGaps" / "no fixedEdges" rather than a
/// p x p matrix (1.6 GB at p = 20000).
pub fn logical_matrix(x: &Robj, p: usize, arg: &'static str, when_null: fn(usize) -> Adjacency, pool: &rayon::ThreadPool) -> CoreResult<Adjacency> {
    if x.is_null() {
        return Ok(when_null(p));
    }
    let v = x.as_logical_slice().ok_or_else(|| invalid(arg, "must be a logical matrix"))?;
    if v.len() != p * p {
        return Err(invalid(arg, format!("must be a {p} x {p} matrix")));
    }
    Ok(pool.install(|| Adjacency::from_column_major(p, |k| v[k].is_true())))
}

pub fn double_vec(x: &Robj, arg: &'static str) -> CoreResult<Vec<f64>> {
    if let Some(s) = x.as_real_slice() {
        return Ok(s.to_vec());
    }
    if let Some(s) = x.as_integer_slice() {
        return Ok(s.iter().map(|&v| if v == i32::MIN { f64::NAN } else { v as f64 }).collect());
    }
    Err(invalid(arg, "must be numeric"))
}

pub fn scalar_f64(x: &Robj, arg: &'static str) -> CoreResult<f64> {
    let v = double_vec(x, arg)?;
    match v.as_slice() {
        [one] => Ok(*one),
        _ => Err(invalid(arg, "must be a single number")),
    }
}

fn list_elt(data: &List, name: &str, arg: &'static str) -> CoreResult<Robj> {
    data.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| invalid(arg, "is missing"))
}

/// C must be a symmetric matrix of correlations (NA is rejected in R before this point).
fn check_correlation(c: &[f64], p: usize) -> CoreResult<()> {
    pc_core::par::try_upper_pairs_tiled(p, |i, j| {
        let (a, b) = (c[i + j * p], c[j + i * p]);
        if (a - b).abs() > 1e-10 * (1.0 + a.abs().max(b.abs())) {
            return Err(invalid("suffStat$C", format!("must be symmetric: C[{}, {}] = {a} but C[{}, {}] = {b}", i + 1, j + 1, j + 1, i + 1)));
        }
        Ok(())
    })?;
    if let Some(k) = c.iter().position(|v| v.abs() > 1.0 + 1e-12) {
        return Err(invalid("suffStat$C", format!("must hold correlations in [-1, 1]; C[{}, {}] = {}", k % p + 1, k / p + 1, c[k])));
    }
    Ok(())
}

pub fn gauss_test(data: &List, p: usize, order: Order) -> CoreResult<GaussTest> {
    let c = double_vec(&list_elt(data, "C", "suffStat$C")?, "suffStat$C")?;
    if c.len() != p * p {
        return Err(invalid("suffStat$C", format!("must be a {p} x {p} matrix")));
    }
    check_correlation(&c, p)?;
    let n = scalar_f64(&list_elt(data, "n", "suffStat$n")?, "suffStat$n")?;
    let flavour = match order {
        Order::Stable => GaussFlavour::R,
        Order::StableFast => GaussFlavour::Cpp,
    };
    GaussTest::new(c, p, n, flavour)
}

pub fn gsquare_test(data: &List, p: usize, kind: GSquareKind) -> CoreResult<GSquareTest> {
    let dm = list_elt(data, "dm", "suffStat$dm")?;
    let codes = dm.as_integer_slice().ok_or_else(|| invalid("suffStat$dm", "must be an integer matrix of codes"))?;
    if p == 0 || codes.len() % p != 0 {
        return Err(invalid("suffStat$dm", format!("must have {p} columns")));
    }
    let n = codes.len() / p;
    let mut bytes = Vec::with_capacity(codes.len());
    let mut min = u8::MAX;
    for &v in codes {
        if !(0..=254).contains(&v) {
            return Err(invalid("suffStat$dm", format!("codes must be whole numbers in 0..254, found {}", if v == i32::MIN { "NA".to_string() } else { v.to_string() })));
        }
        min = min.min(v as u8);
        bytes.push(v as u8);
    }
    if min != 0 {
        return Err(invalid("suffStat$dm", "must have values in {0,1,..} with at least one 0 value"));
    }
    let nlev_r = list_elt(data, "nlev", "suffStat$nlev")?;
    let nlev: Vec<u32> = nlev_r
        .as_integer_slice()
        .ok_or_else(|| invalid("suffStat$nlev", "must be an integer vector"))?
        .iter()
        .map(|&v| v.max(0) as u32)
        .collect();
    let adapt_df = list_elt(data, "adaptDF", "suffStat$adaptDF")?.as_bool().unwrap_or(false);
    let data = DiscreteData::new(n, p, bytes, nlev)?;
    GSquareTest::new(data, kind, adapt_df)
}

/// `sepset[[x]][[y]]`: a list of p lists of p entries, NULL or 1-based integer vectors.
///
/// At level 0 nearly every pair is removed with an empty set: 14 million of them at p = 5361.
/// Going through extendr's `Robj` for each (GC-protection bookkeeping per object) took longer
/// than the whole search, so the vectors are made with R's C API and stored at once into a
/// protected parent; the empty sets share one `integer(0)` (R copies on modification).
fn sepsets_to_r(res: &SkeletonResult, p: usize) -> CoreResult<Robj> {
    use extendr_ffi::{Rf_allocVector, INTEGER, SET_VECTOR_ELT, SEXPTYPE};
    let rows: Vec<List> = (0..p).map(|_| List::new(p)).collect();
    let empty = Robj::from(Vec::<i32>::new());
    // SAFETY: every SEXP written here is stored into a row list that `rows` keeps protected,
    // right after its allocation and before any other R allocation; all on R's main thread.
    unsafe {
        let empty_sexp = empty.get();
        for s in &res.sepsets {
            let row = rows[s.x as usize].get();
            if s.set.is_empty() {
                SET_VECTOR_ELT(row, s.y as isize, empty_sexp);
                continue;
            }
            let v = Rf_allocVector(SEXPTYPE::INTSXP, s.set.len() as isize);
            let dst = std::slice::from_raw_parts_mut(INTEGER(v), s.set.len());
            for (d, &x) in dst.iter_mut().zip(&s.set) {
                *d = x as i32 + 1;
            }
            SET_VECTOR_ELT(row, s.y as isize, v);
        }
    }
    let mut outer = List::new(p);
    for (i, row) in rows.into_iter().enumerate() {
        outer.set_elt(i, row.into_robj()).map_err(|e| PcError::Internal(e.to_string()))?;
    }
    Ok(outer.into_robj())
}

/// A p x p double matrix holding `values` (column-major), filled with one copy: building it
/// through extendr's element-by-element constructor took a second at p = 8000.
fn real_matrix(values: &[f64], p: usize) -> Robj {
    use extendr_ffi::{Rf_allocMatrix, REAL, SEXPTYPE};
    assert_eq!(values.len(), p * p);
    // SAFETY: the matrix is protected by `from_sexp` right after its allocation, before any other
    // R allocation; REAL points at its p * p doubles; all on R's main thread.
    unsafe {
        let m = Robj::from_sexp(Rf_allocMatrix(SEXPTYPE::REALSXP, p as i32, p as i32));
        std::slice::from_raw_parts_mut(REAL(m.get()), p * p).copy_from_slice(values);
        m
    }
}

/// `phases`: seconds of the call's parts (`gpupc_last_run()$phases`).
pub fn result_to_r(res: &SkeletonResult, order: Order, backend: &str, extra: List, phases: List) -> CoreResult<Robj> {
    let p = res.graph.p();
    // the edges {i, j}, i < j, 1-based, one row each: R builds the graphNEL from these (a dense
    // p x p G would be 400 MB at p = 10000, and R's which() over it took seconds)
    let e = res.graph.edges();
    let edges = RMatrix::<i32>::new_matrix(e.len(), 2, |r, c| if c == 0 { e[r].0 as i32 + 1 } else { e[r].1 as i32 + 1 });
    let pmax = real_matrix(&res.pmax, p);
    let n_edgetests: Robj = match order {
        Order::Stable => res.n_edgetests.clone().into(),
        Order::StableFast => res.n_edgetests.iter().map(|&v| v as i32).collect::<Vec<i32>>().into(),
    };
    let lv = &res.levels;
    let levels = List::from_names_and_values(
        ["level", "edges", "tests", "removed", "seconds", "plan_seconds", "backend_seconds"],
        [
            Robj::from(lv.iter().map(|l| l.level as i32).collect::<Vec<_>>()),
            Robj::from(lv.iter().map(|l| l.edges_at_start as f64).collect::<Vec<_>>()),
            Robj::from(lv.iter().map(|l| l.tests as f64).collect::<Vec<_>>()),
            Robj::from(lv.iter().map(|l| l.removed as f64).collect::<Vec<_>>()),
            Robj::from(lv.iter().map(|l| l.seconds).collect::<Vec<_>>()),
            Robj::from(lv.iter().map(|l| l.plan_seconds).collect::<Vec<_>>()),
            Robj::from(lv.iter().map(|l| l.backend_seconds).collect::<Vec<_>>()),
        ],
    )
    .map_err(|e| PcError::Internal(e.to_string()))?;
    let out = List::from_names_and_values(
        ["edges", "sepset", "pMax", "n.edgetests", "max.ord", "backend", "levels", "extra", "phases"],
        [
            edges.into_robj(),
            sepsets_to_r(res, p)?,
            pmax,
            n_edgetests,
            Robj::from(res.max_ord),
            Robj::from(backend),
            levels.into_robj(),
            extra.into_robj(),
            phases.into_robj(),
        ],
    )
    .map_err(|e| PcError::Internal(e.to_string()))?;
    Ok(out.into_robj())
}
