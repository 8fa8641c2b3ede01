//! RFCI's stages after the skeleton (`pc_core::fci::rfci_orient`): the skeleton's edges and
//! sepset list in; the graph `udag2apag()` returns and the sepset writes in pcalg's order out,
//! for R to repeat on its list. The tests run one at a time on the skeleton's kept test, on the
//! CPU: each depends on the edges and sets the previous ones changed, so there is no batch to
//! give a GPU.

use std::time::Instant;

use extendr_api::prelude::*;
use pc_core::fci::{rfci_orient, RfciParams};
use pc_core::orient::Pdag;
use pc_core::{CiTest, PcError};

use crate::convert::CoreResult;
use crate::kept::{later_gauss, later_gsquare};
use crate::orient::{int_rows, kept_test, read_sepsets};
use crate::watch::RWatch;

fn invalid(arg: &'static str, msg: impl Into<String>) -> PcError {
    PcError::invalid(arg, msg)
}

/// A native test as the sequential stages call it: one scratch, reused.
fn caller<T: CiTest>(t: &T) -> impl FnMut(u32, u32, &[u32]) -> pc_core::error::Result<f64> + '_ {
    let mut sc = T::Scratch::default();
    move |x, y, s| t.p_value(&mut sc, x, y, s)
}

fn rfci_impl(edges: Robj, sepset: Robj, test: &str, data: List, settings: List) -> CoreResult<Robj> {
    let t0 = Instant::now();
    let a = crate::convert::Named(&settings);
    let p = a.p_at_least(1)?;
    let rules_r = a.get("rules")?;
    let rules_v = rules_r.as_logical_vector().ok_or_else(|| invalid("rules", "must be 10 TRUE or FALSE values"))?;
    if rules_v.len() != 10 || rules_v.iter().any(|r| r.is_na()) {
        return Err(invalid("rules", "must be 10 TRUE or FALSE values"));
    }
    let mut rules = [false; 10];
    for (k, r) in rules_v.iter().enumerate() {
        rules[k] = r.is_true();
    }
    let params = RfciParams { alpha: a.real("alpha")?, conservative: a.logical("conservative")?, maj_rule: a.logical("maj_rule")?, rules };
    let threads = a.int("threads")?;
    let edge_list: Vec<(u32, u32)> = int_rows(&edges, 2, p, "edges")?.into_iter().map(|r| (r[0], r[1])).collect();
    let g = Pdag::from_edges(p, &edge_list)?;
    let sep = read_sepsets(&sepset, &g)?;
    drop(g);
    let mut watch = RWatch::new(&a.get("hooks")?.as_list().unwrap_or_default());
    let input_s = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let kept = kept_test(&data)?;
    let mut small_n = [0.0; 3];
    let (res, evaluator) = match test {
        "gauss" => {
            // pcalg's stages call R's gaussCItest, whichever order built the skeleton; C left on
            // a GPU by the skeleton is freed here
            let (t, _device_c) = later_gauss(kept, &data, p, threads.max(0) as usize)?;
            let res = rfci_orient(p, &edge_list, sep, params, &mut caller(&t), &mut watch)?;
            (res, "cpu (1 thread)")
        }
        "dis" | "bin" => {
            let mut holder = later_gsquare(kept, &data, p, test)?;
            let (t, kept_backend) = holder.parts();
            drop(kept_backend);
            t.take_small_n_tests();
            let res = rfci_orient(p, &edge_list, sep, params, &mut caller(t), &mut watch)?;
            let (k, n_min) = t.small_n_tests();
            small_n = [k as f64, n_min as f64, t.data.n as f64];
            (res, "cpu (1 thread)")
        }
        "cmiknn" => {
            let t = crate::cmiknn::cmiknn_test(&data, p)?;
            let res = rfci_orient(p, &edge_list, sep, params, &mut caller(&t), &mut watch)?;
            (res, "cpu (1 thread)")
        }
        other => return Err(invalid("indepTest", format!("unknown native test \"{other}\""))),
    };
    let orient_s = t1.elapsed().as_secs_f64();

    let marks = res.pag.marks();
    let amat = RMatrix::<f64>::new_matrix(p, p, |r, c| marks[r + c * p] as f64);
    let w = &res.sepset_writes;
    let wx: Vec<i32> = w.iter().map(|s| s.0 as i32 + 1).collect();
    let wz: Vec<i32> = w.iter().map(|s| s.1 as i32 + 1).collect();
    let sets = List::from_values(w.iter().map(|s| s.2.iter().map(|&v| v as i32 + 1).collect::<Vec<i32>>()));
    let out = List::from_names_and_values(
        ["amat", "sep_x", "sep_z", "sep_sets", "tests_vstruc", "tests_rules", "unfaithful", "evaluator", "seconds", "small_n"],
        [
            amat.into_robj(),
            Robj::from(wx),
            Robj::from(wz),
            sets.into_robj(),
            Robj::from(res.tests_vstruc as f64),
            Robj::from(res.tests_rules as f64),
            Robj::from(res.unfaithful as f64),
            Robj::from(evaluator),
            list!(rfci_input_s = input_s, rfci_orient_s = orient_s).into_robj(),
            Robj::from(small_n.to_vec()),
        ],
    )
    .map_err(|e| PcError::Internal(e.to_string()))?;
    Ok(out.into_robj())
}

/// pcalg's `rfci()` after its skeleton: `find.unsh.triple()`, `rfci.vStruc()` and `udag2apag()`
/// (`pc_core::fci::rfci_orient`). `edges`: the skeleton's edges (m x 2 integer, 1-based);
/// `sepset`: its sepset list (the sets of non-adjacent pairs with a common neighbour are read);
/// `test`, `data`: a native test as for `gpupc_orient` (`data$test_handle`: the skeleton's kept
/// test, taken over). `settings` (built by `native_rfci()` in R/gpu_fci.R): `p`, `alpha`,
/// `conservative` (`conservative || maj.rule`), `maj_rule`, `rules` (10 logicals), `threads`,
/// `hooks` (Ctrl-C between tests). Returns the graph (`amat`), the sepset writes in order
/// (`sep_x`, `sep_z`, `sep_sets`: `sepset[[x]][[z]] <- set`), the tests run, and the n < n.min
/// count of a G^2 test (`small_n`).
#[extendr]
fn gpupc_rfci(edges: Robj, sepset: Robj, test: &str, data: List, settings: List) -> Robj {
    match rfci_impl(edges, sepset, test, data, settings) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

extendr_module! {
    mod rfci;
    fn gpupc_rfci;
}
