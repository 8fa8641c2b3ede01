//! FCI's stages after the skeleton that run tests. Possible-D-SEP (`pc_core::fci::pdsep`): the
//! skeleton's edges, sepsets and pMax in, what pcalg's `pdsep()` changes out (removed edges with
//! their sets, raised pMax cells, allPdsep, max.ord, n.edgetests), for R to write into its own
//! objects. The conservative / majority-rule triple checks (`pc_core::orient::check_triples`,
//! pcalg's `pc.cons.intern()` with fci()'s `version.unf`): the graph and sepsets in, `unfTripl`
//! and the rewritten sepsets out. The tests run on the skeleton's kept test
//! (`data$test_handle`), which Possible-D-SEP hands on to the checks, on the CPU or on the
//! skeleton's first GPU (CMI-kNN's on the CPU).

use std::collections::HashSet;
use std::time::Instant;

use extendr_api::prelude::*;
use pc_core::fci::{pdsep, BiCC, PdsepParams, PdsepResult};
use pc_core::orient::{BatchEvaluator, ParallelBatch, Pdag, TripleRule, UnfVersion};
use pc_core::PcError;

use crate::convert::CoreResult;
use crate::kept::{gauss_gpu_batch, gsquare_gpu_batch, later_cmiknn, later_gauss, later_gsquare, KeptTest};
use crate::orient::{int_rows, int_vectors, kept_test, native_checks, read_sepsets, CheckSettings};
use crate::watch::RWatch;

fn invalid(arg: &'static str, msg: impl Into<String>) -> PcError {
    PcError::invalid(arg, msg)
}

/// What the stage reads besides its test, gathered once so that a GPU failure can rerun it on the
/// CPU from the same start.
struct Input {
    adj: Vec<Vec<u32>>,
    sep: pc_core::orient::PairSepsets,
    fixed: HashSet<(u32, u32)>,
    pmax: Vec<f64>,
    p: usize,
    params: PdsepParams,
}

impl Input {
    fn run(&self, pool: &rayon::ThreadPool, eval: &mut dyn BatchEvaluator, watch: &mut RWatch) -> CoreResult<PdsepResult> {
        let p = self.p;
        let sep = &self.sep;
        let sep_has = |a: u32, b: u32, c: u32| sep.get(a, c).contains(&b) || sep.get(c, a).contains(&b);
        let fixed = |x: u32, y: u32| self.fixed.contains(&(x, y));
        let pmax0 = |x: u32, y: u32| self.pmax[x as usize + y as usize * p];
        pdsep(self.adj.clone(), sep_has, fixed, pmax0, self.params, pool, eval, watch)
    }
}

fn pdsep_impl(edges: Robj, sepset: Robj, pmax: Robj, fixed: Robj, test: &str, data: List, settings: List) -> CoreResult<Robj> {
    let t0 = Instant::now();
    let a = crate::convert::Named(&settings);
    let p = a.p_at_least(1)?;
    let params = PdsepParams { alpha: a.real("alpha")?, m_max: a.real("m_max")?, pdsep_max: a.real("pdsep_max")?, na_delete: a.logical("na_delete")?, bicc: match a.string("bicc")?.as_str() {
        "off" => BiCC::Off,
        "components" => BiCC::Components,
        "none" => BiCC::NoComponent,
        other => return Err(PcError::Internal(format!("unknown biCC mode \"{other}\""))),
    } };
    let (threads, backend, fallback) = (a.int("threads")?, a.string("backend")?, a.logical("fallback")?);
    // the triple checks come next: the test goes on to them
    let keep_test = a.logical("keep_test")?;
    let edge_list: Vec<(u32, u32)> = int_rows(&edges, 2, p, "edges")?.into_iter().map(|r| (r[0], r[1])).collect();
    let g = Pdag::from_edges(p, &edge_list)?;
    let adj: Vec<Vec<u32>> = (0..p).map(|i| g.neighbours(i).to_vec()).collect();
    let sep = read_sepsets(&sepset, &g)?;
    let fixed: HashSet<(u32, u32)> = int_rows(&fixed, 2, p, "fixedEdges")?.into_iter().map(|r| (r[0], r[1])).collect();
    let pmax = pmax.as_real_slice().ok_or_else(|| invalid("pMax", "must be a numeric matrix"))?;
    if pmax.len() != p * p {
        return Err(invalid("pMax", format!("must be a {p} x {p} matrix")));
    }
    let input = Input { adj, sep, fixed, pmax: pmax.to_vec(), p, params };
    let pool = pc_core::threads::call_pool(threads.max(0) as usize, "pdsep")?;
    let mut watch = RWatch::new(&a.get("hooks")?.as_list().unwrap_or_default());
    let input_s = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let kept = kept_test(&data)?;
    let on_gpu = backend == "cuda";
    let mut gpu_failed = Robj::from(());
    let failed = |_: &mut _, e: &PcError| gpu_failed = crate::rerror::from_pc(e);
    let mut evaluator = String::new();
    let kept_after;
    let res = match test {
        "gauss" => {
            // pcalg's pdsep() calls R's gaussCItest, whichever order built the skeleton
            let (t, device_c) = later_gauss(kept, &data, p, threads.max(0) as usize)?;
            let gpu = |(w, name): &mut (&mut RWatch, &mut String)| {
                let mut eval = gauss_gpu_batch(device_c, &t, &pool, &data)?;
                **name = eval.name();
                input.run(&pool, &mut eval, w)
            };
            let cpu = |(w, name): &mut (&mut RWatch, &mut String)| {
                let mut eval = ParallelBatch::new(&t, &pool);
                **name = eval.name();
                input.run(&pool, &mut eval, w)
            };
            let res = pc_cuda::open::or_cpu(&mut (&mut watch, &mut evaluator), on_gpu, fallback, gpu, cpu, failed)?;
            // the device's C went with the GPU evaluator; the host test (R's arithmetic) is kept
            kept_after = Some(KeptTest::Gauss(t));
            res
        }
        "dis" | "bin" => {
            let mut holder = later_gsquare(kept, &data, p, test)?;
            let (t, kept_backend) = holder.parts();
            let gpu = |(w, name): &mut (&mut RWatch, &mut String)| {
                let mut eval = gsquare_gpu_batch(kept_backend, t, &pool, &data)?;
                **name = eval.name();
                input.run(&pool, &mut eval, w)
            };
            let cpu = |(w, name): &mut (&mut RWatch, &mut String)| {
                t.take_small_n_tests();
                let mut eval = ParallelBatch::new(t, &pool);
                **name = eval.name();
                input.run(&pool, &mut eval, w)
            };
            let res = pc_cuda::open::or_cpu(&mut (&mut watch, &mut evaluator), on_gpu, fallback, gpu, cpu, failed)?;
            kept_after = Some(KeptTest::GSquare(holder));
            res
        }
        // CMI-kNN's tests on the CPU: its GPU backend runs a skeleton's levels, not listed tests
        "cmiknn" => {
            let t = later_cmiknn(kept, &data, p)?;
            let mut eval = ParallelBatch::new(&t, &pool);
            evaluator = eval.name();
            let res = input.run(&pool, &mut eval, &mut watch)?;
            kept_after = Some(KeptTest::CmiKnn(t));
            res
        }
        other => return Err(invalid("indepTest", format!("unknown native test \"{other}\""))),
    };
    let search_s = t1.elapsed().as_secs_f64();
    let handle = match kept_after {
        Some(t) if keep_test => ExternalPtr::new(Some(t)).into(),
        _ => Robj::from(()),
    };

    let removed = RMatrix::<i32>::new_matrix(res.removed.len(), 2, |r, c| if c == 0 { res.removed[r].x as i32 + 1 } else { res.removed[r].y as i32 + 1 });
    let ords: Vec<i32> = res.removed.iter().map(|r| r.ord as i32).collect();
    let sets = List::from_values(res.removed.iter().map(|r| r.set.iter().map(|&v| v as i32 + 1).collect::<Vec<i32>>()));
    let cells = RMatrix::<i32>::new_matrix(res.pmax.len(), 2, |r, c| if c == 0 { res.pmax[r].0 as i32 + 1 } else { res.pmax[r].1 as i32 + 1 });
    let vals: Vec<f64> = res.pmax.iter().map(|c| c.2).collect();
    let all = List::from_values(res.all_pdsep.iter().map(|s| match s {
        Some(v) => Robj::from(v.iter().map(|&k| k as i32 + 1).collect::<Vec<i32>>()),
        None => Robj::from(()),
    }));
    let out = List::from_names_and_values(
        ["removed", "ord", "sets", "pmax_cells", "pmax_values", "all_pdsep", "max_ord", "n_edgetests", "tests", "evaluator", "seconds", "gpu_failed", "test_handle"],
        [
            removed.into_robj(),
            Robj::from(ords),
            sets.into_robj(),
            cells.into_robj(),
            Robj::from(vals),
            all.into_robj(),
            Robj::from(res.max_ord as i32),
            Robj::from(res.n_edgetests.clone()),
            Robj::from(res.tests as f64),
            Robj::from(evaluator),
            list!(pdsep_input_s = input_s, pdsep_tests_s = search_s).into_robj(),
            gpu_failed,
            handle,
        ],
    )
    .map_err(|e| PcError::Internal(e.to_string()))?;
    Ok(out.into_robj())
}

/// pcalg's `pdsep()` with the tests in batches (`pc_core::fci::pdsep`). `edges`: the skeleton's
/// edges (m x 2 integer, 1-based); `sepset`: the skeleton's sepset list (the collider marks read
/// the sets of unshielded pairs); `pmax`: its p x p pMax; `fixed`: NULL or the k x 2 integer
/// cells of fixedEdges; `test`, `data`: a native test as for `gpupc_orient` (`data$test_handle`:
/// the skeleton's kept test, taken over). `settings` (built by `native_pdsep()` in R/gpu_fci.R):
/// `p`, `alpha`, `m_max`, `pdsep_max`, `na_delete`, `bicc` ("off", "components", or "none": no edge's component is found), `threads`, `backend` ("cuda": the
/// tests on the GPU), `fallback` (a GPU failure reruns them on the CPU; `gpu_failed` says so),
/// `hooks` (`tick` and Ctrl-C between rounds), `keep_test` (the result's `test_handle` holds the
/// test for the triple checks: the host test, the device's data having gone with the stage's GPU
/// evaluator; else NULL).
#[extendr]
fn gpupc_pdsep(edges: Robj, sepset: Robj, pmax: Robj, fixed: Robj, test: &str, data: List, settings: List) -> Robj {
    match pdsep_impl(edges, sepset, pmax, fixed, test, data, settings) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

/// pcalg's `triple2numb(p, a, b, c)` of 0-based a, b, c, with R's double arithmetic.
fn triple_number(p: usize, (a, b, c): (u32, u32, u32)) -> f64 {
    let p = p as f64;
    (c + 1) as f64 + p * ((b + 1) as f64 + p * (a + 1) as f64)
}

fn triples_impl(edges: Robj, sepset: Robj, test: &str, data: List, settings: List) -> CoreResult<Robj> {
    let t0 = Instant::now();
    let a = crate::convert::Named(&settings);
    let p = a.p_at_least(1)?;
    let rule = match a.string("rule")?.as_str() {
        "conservative" => TripleRule::Conservative,
        "majority" => TripleRule::Majority,
        other => return Err(PcError::Internal(format!("unknown rule \"{other}\""))),
    };
    let version = match a.int("version")? {
        1 => UnfVersion::Ambiguous,
        2 => UnfVersion::AmbiguousOrDependent,
        other => return Err(PcError::Internal(format!("version.unf[1] must be 1 or 2, not {other}"))),
    };
    let threads = a.int("threads")?.max(0) as usize;
    let s = CheckSettings { alpha: a.real("alpha")?, rule, version, threads, on_gpu: a.string("backend")? == "cuda", fallback: a.logical("fallback")? };
    let edge_list: Vec<(u32, u32)> = int_rows(&edges, 2, p, "edges")?.into_iter().map(|r| (r[0], r[1])).collect();
    let g = Pdag::from_edges(p, &edge_list)?;
    let mut sep = read_sepsets(&sepset, &g)?;
    let pool = pc_core::threads::call_pool(threads, "triples")?;
    let mut watch = crate::watch::RWatch::new(&a.get("hooks")?.as_list().unwrap_or_default());
    let input_s = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let c = native_checks(test, &data, &g, &mut sep, p, &s, &pool, &mut watch)?;
    let checks_s = t1.elapsed().as_secs_f64();

    let out = &c.out;
    let unf: Vec<f64> = out.listed.iter().map(|&t| triple_number(p, t)).collect();
    let pairs = &out.pairs;
    let pair_m = RMatrix::<i32>::new_matrix(pairs.len(), 2, |r, k| if k == 0 { pairs[r].0 as i32 + 1 } else { pairs[r].1 as i32 + 1 });
    let sep_ac = int_vectors(pairs.iter().map(|&(x, z)| sep.get(x, z).to_vec()).collect::<Vec<_>>().into_iter());
    let sep_ca = int_vectors(pairs.iter().map(|&(x, z)| sep.get(z, x).to_vec()).collect::<Vec<_>>().into_iter());
    let stats = list!(
        triples = out.triples as f64,
        tests = out.tests as f64,
        ambiguous = out.ambiguous as f64,
        unfaithful = out.listed.len() as f64,
        evaluator = c.evaluator.as_str(),
        data_reused = c.reused
    );
    let res = List::from_names_and_values(
        ["unf", "pairs", "sep_ac", "sep_ca", "stats", "seconds", "small_n", "gpu_failed"],
        [
            Robj::from(unf),
            pair_m.into_robj(),
            sep_ac,
            sep_ca,
            stats.into_robj(),
            list!(triples_input_s = input_s, triples_tests_s = checks_s).into_robj(),
            Robj::from(c.small_n.to_vec()),
            c.gpu_failed,
        ],
    )
    .map_err(|e| PcError::Internal(e.to_string()))?;
    Ok(res.into_robj())
}

/// pcalg's `pc.cons.intern()` as `fci()` calls it, with a native test: `edges`, the graph's edges
/// (m x 2 integer, 1-based: after Possible-D-SEP, or the skeleton's); `sepset`, R's sepset list;
/// `test`, `data` as for `gpupc_orient` (`data$test_handle`: the kept test, taken over).
/// `settings` (built by `native_fci_checks()` in R/gpu_fci.R): `p`, `alpha`, `rule`
/// ("conservative" or "majority"), `version` (`version.unf[1]`: 1 after Possible-D-SEP, 2
/// without), `threads`, `backend` ("cuda": the tests on the GPU), `fallback`, `hooks`. Returns
/// `unf` (pcalg's `unfTripl`: `triple2numb()` numbers in its order), `pairs` (k x 2) with their
/// rewritten `sep_ac` / `sep_ca` (`sepset[[a]][[c]]`, `sepset[[c]][[a]]`), `stats`, `seconds`,
/// `small_n` (count, n.min, n of G^2 tests answered p = 1), `gpu_failed`.
#[extendr]
fn gpupc_fci_triples(edges: Robj, sepset: Robj, test: &str, data: List, settings: List) -> Robj {
    match triples_impl(edges, sepset, test, data, settings) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

extendr_module! {
    mod fci;
    fn gpupc_pdsep;
    fn gpupc_fci_triples;
}
