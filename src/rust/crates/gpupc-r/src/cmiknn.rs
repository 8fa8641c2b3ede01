//! CMI-kNN's R side: the suffStat list (already checked in `R/cmiknn.R`) to a `CmiKnn`, and the
//! single test behind `cmiknnCItest()`.

use extendr_api::prelude::*;
use pc_cmiknn::{key_of, CmiKnn, CmiKnnParams, Knn, Permute, RankData};
use pc_core::PcError;

use crate::convert::{double_vec, scalar_f64, CoreResult};

fn elt(data: &List, name: &str, arg: &'static str) -> CoreResult<Robj> {
    data.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| PcError::invalid(arg, "is missing"))
}

/// The parameters R wrote into `data` (knn, shuffle_neighbors, sig_samples, permute, seed).
fn params(data: &List) -> CoreResult<CmiKnnParams> {
    let knn = scalar_f64(&elt(data, "knn", "suffStat$knn")?, "suffStat$knn")?;
    let count = |name: &str, arg: &'static str| -> CoreResult<usize> {
        let v = scalar_f64(&elt(data, name, arg)?, arg)?;
        if !(v >= 1.0 && v <= u32::MAX as f64 && v == v.round()) {
            return Err(PcError::invalid(arg, "must be a whole number >= 1"));
        }
        Ok(v as usize)
    };
    let permute = match elt(data, "permute", "suffStat$permute")?.as_str() {
        Some("X") => Permute::X,
        Some("Y") => Permute::Y,
        _ => return Err(PcError::invalid("suffStat$permute", "must be \"X\" or \"Y\"")),
    };
    let seed = scalar_f64(&elt(data, "seed", "suffStat$seed")?, "suffStat$seed")?;
    Ok(CmiKnnParams {
        knn: if knn < 1.0 { Knn::Fraction(knn) } else { Knn::Count(knn as usize) },
        shuffle_neighbors: count("shuffle_neighbors", "suffStat$shuffle_neighbors")?,
        sig_samples: count("sig_samples", "suffStat$sig_samples")?,
        permute,
        seed: seed as i64 as u64,
    })
}

/// The test over the n x p matrix `data$data` (column-major doubles).
pub fn cmiknn_test(data: &List, p: usize) -> CoreResult<CmiKnn> {
    let m = elt(data, "data", "suffStat$data")?;
    let v = m.as_real_slice().ok_or_else(|| PcError::invalid("suffStat$data", "must be a numeric matrix"))?;
    if p == 0 || v.len() % p != 0 {
        return Err(PcError::invalid("suffStat$data", format!("must have {p} columns")));
    }
    CmiKnn::new(RankData::from_columns(v, v.len() / p, p)?, params(data)?)
}

fn single(data: List, vars: Robj, threads: i32) -> CoreResult<Robj> {
    let vars: Vec<u32> = double_vec(&vars, "vars")?.iter().map(|&v| v as u32).collect();
    if vars.len() < 2 {
        return Err(PcError::Internal("cmiknn: fewer than two variables".into()));
    }
    let t = cmiknn_test(&data, vars.len())?;
    let key = key_of(t.params().seed, vars[0], &vars[2..]);
    let s: Vec<u32> = (2..vars.len() as u32).collect();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(0) as usize)
        .build()
        .map_err(|e| PcError::Internal(format!("could not start CPU threads: {e}")))?;
    let out = pool.install(|| t.run_keyed(0, 1, &s, key))?;
    Ok(list!(statistic = out.statistic, p_value = out.p_value, null = out.null).into_robj())
}

/// One CMI-kNN test: `data$data` holds the columns x, y, S (in that order), `vars` their
/// 0-based indices in the user's data (the permutations' key). Returns list(statistic, p_value,
/// null), or the error list of `rerror.rs`.
#[extendr]
fn gpupc_cmiknn_test(data: List, vars: Robj, threads: i32) -> Robj {
    match single(data, vars, threads) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

extendr_module! {
    mod cmiknn;
    fn gpupc_cmiknn_test;
}
