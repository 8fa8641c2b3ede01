//! The orientation entry point: the skeleton's edges and sepsets in, pcalg's pdag out (and, for
//! conservative / majority-rule PC, the rewritten sepsets). Only the sepsets of non-adjacent
//! pairs with a common neighbour are read, and only those written back: from and to the skeleton's
//! `SepParts` (the handle `gpupc_skeleton` returned) when R passes that, else R's p x p list.

use std::time::Instant;

use extendr_api::prelude::*;
use extendr_ffi::{Rf_allocVector, Rf_xlength, INTEGER, REAL, SET_VECTOR_ELT, SEXP, SEXPTYPE, TYPEOF, VECTOR_ELT};
use pc_core::orient::{check_triples, orient_relaxed, unshielded_pairs, BatchEvaluator, ConsOutcome, PairSepsets, ParallelBatch, Pdag, TripleRule, Unfaithful, UnfVersion, PARALLEL_COLLIDER_EDGES};
use pc_core::{CiTest, PcError};

use crate::convert::{CoreResult, SepParts};
use crate::kept::{gauss_gpu_batch, gsquare_gpu_batch, later_cmiknn, later_gauss, later_gsquare, KeptTest};
use crate::watch::RWatch;

fn invalid(arg: &'static str, msg: impl Into<String>) -> PcError {
    PcError::invalid(arg, msg)
}

/// An m x 2 integer matrix of 1-based pairs (or an m x 3 one for triples), read row by row.
pub(crate) fn int_rows(x: &Robj, cols: usize, p: usize, arg: &'static str) -> CoreResult<Vec<Vec<u32>>> {
    if x.is_null() {
        return Ok(Vec::new());
    }
    let v = x.as_integer_slice().ok_or_else(|| invalid(arg, "must be an integer matrix"))?;
    if v.len() % cols != 0 {
        return Err(invalid(arg, format!("must have {cols} columns")));
    }
    let m = v.len() / cols;
    (0..m)
        .map(|r| {
            (0..cols)
                .map(|c| {
                    let e = v[r + c * m];
                    if e < 1 || e as usize > p {
                        Err(invalid(arg, format!("holds {e}, not a variable in 1..{p}")))
                    } else {
                        Ok(e as u32 - 1)
                    }
                })
                .collect()
        })
        .collect()
}

/// `sepset[[x + 1]][[z + 1]]` as 0-based members into `buf` (cleared first); false for NULL.
///
/// SAFETY of the raw reads: `list` is a protected R object on the main thread; every element is
/// type- and length-checked before it is read.
fn sepset_entry(list: SEXP, p: usize, x: u32, z: u32, buf: &mut Vec<u32>) -> CoreResult<bool> {
    let bad = |what: String| invalid("sepset", what);
    buf.clear();
    let member = |v: f64| -> CoreResult<u32> {
        if v >= 1.0 && v <= p as f64 && v.fract() == 0.0 {
            Ok(v as u32 - 1)
        } else {
            Err(bad(format!("sepset[[{}]][[{}]] holds {v}, not a variable in 1..{p}", x + 1, z + 1)))
        }
    };
    unsafe {
        let row = VECTOR_ELT(list, x as isize);
        use crate::sepset_rows::{compact_entry, RowEntry};
        let s = match compact_entry(row, z) {
            RowEntry::Set(s) => s,
            RowEntry::Single(k) => {
                buf.push(member(k as f64)?);
                return Ok(true);
            }
            RowEntry::Empty => return Ok(false),
            RowEntry::NotCompact if TYPEOF(row) != SEXPTYPE::VECSXP || Rf_xlength(row) as usize != p => {
                return Err(bad(format!("sepset[[{}]] must be a list of {p} entries", x + 1)));
            }
            RowEntry::NotCompact => VECTOR_ELT(row, z as isize),
        };
        let n = Rf_xlength(s) as usize;
        match TYPEOF(s) {
            SEXPTYPE::NILSXP => return Ok(false),
            SEXPTYPE::INTSXP => {
                for &v in std::slice::from_raw_parts(INTEGER(s), n) {
                    buf.push(member(if v == i32::MIN { f64::NAN } else { v as f64 })?);
                }
            }
            SEXPTYPE::REALSXP => {
                for &v in std::slice::from_raw_parts(REAL(s), n) {
                    buf.push(member(v)?);
                }
            }
            _ => return Err(bad(format!("sepset[[{}]][[{}]] must be NULL or a vector of variable indices", x + 1, z + 1))),
        }
    }
    Ok(true)
}

pub(crate) fn read_sepsets(sepset: &Robj, g: &Pdag) -> CoreResult<PairSepsets> {
    read_pair_sepsets(sepset, g.p(), &unshielded_pairs(g))
}

/// `sepset[[x]][[z]]` and `sepset[[z]][[x]]` of each pair (x, z) of `pairs`, from R's list of p
/// lists (NULL and integer(0) read alike).
pub(crate) fn read_pair_sepsets(sepset: &Robj, p: usize, pairs: &[(u32, u32)]) -> CoreResult<PairSepsets> {
    if sepset.rtype() != Rtype::List || sepset.len() != p {
        return Err(invalid("sepset", format!("must be a list of {p} lists")));
    }
    let list = unsafe { sepset.get() };
    let mut out = PairSepsets::with_capacity(pairs.len())?;
    let mut buf = Vec::new();
    for &(x, z) in pairs {
        for (a, b) in [(x, z), (z, x)] {
            // NULL and integer(0) read alike; only a non-empty set is stored
            if sepset_entry(list, p, a, b, &mut buf)? && !buf.is_empty() {
                out.insert(a, b, &buf);
            }
        }
    }
    Ok(out)
}

/// The sepsets orientation reads, from the skeleton's parts kept in Rust (no p x p list): level
/// 0's sets are all empty, which orientation reads like NULL, so only the later levels' sets of
/// unshielded pairs are taken.
fn parts_sepsets(parts: &SepParts, g: &Pdag) -> CoreResult<PairSepsets> {
    let p = g.p();
    if parts.sep0.p() != p {
        return Err(invalid("sepset", format!("the skeleton's sepsets are for {} variables, not {p}", parts.sep0.p())));
    }
    let pairs = unshielded_pairs(g);
    let mut out = PairSepsets::with_capacity(pairs.len())?;
    let key = |x: u32, y: u32| (x.min(y), x.max(y));
    let unshielded = |x: u32, y: u32| pairs.binary_search(&key(x, y)).is_ok();
    // level 1's one-variable sets of a dense backend, then the rest (each cell is in one of them).
    // A dense backend lists level 1's sets by pair, as `pairs` is sorted: one walk along both
    // (a binary search per set was most of the orientation's time at p = 1643: 31272 sets)
    if parts.sep1.is_sorted_by_key(|&[x, y, _]| key(x, y)) {
        let mut at = 0;
        for &[x, y, k] in &parts.sep1 {
            let want = key(x, y);
            while pairs.get(at).is_some_and(|&q| q < want) {
                at += 1;
            }
            if pairs.get(at) == Some(&want) {
                out.insert(x, y, &[k]);
            }
        }
    } else {
        for &[x, y, k] in &parts.sep1 {
            if unshielded(x, y) {
                out.insert(x, y, &[k]);
            }
        }
    }
    for s in &parts.sepsets {
        if !s.set.is_empty() && unshielded(s.x, s.y) {
            out.insert(s.x, s.y, &s.set);
        }
    }
    Ok(out)
}

/// Puts the sepsets that the triple checks rewrote (both orders of each pair, as pcalg writes
/// them) into the skeleton's parts, so that the list R makes from them afterwards holds them: an
/// empty set as a level-0 bit (`integer(0)`), any other as a `Sepset`, never both for one cell.
fn write_back(parts: &mut SepParts, pairs: &[(u32, u32)], sep: &PairSepsets) -> CoreResult<()> {
    let mut cells: Vec<(u32, u32)> = pairs.iter().flat_map(|&(a, c)| [(a, c), (c, a)]).collect();
    cells.sort_unstable();
    cells.dedup();
    parts.sepsets.retain(|s| cells.binary_search(&(s.x, s.y)).is_err());
    parts.sep1.retain(|&[x, y, _]| cells.binary_search(&(x, y)).is_err());
    parts.sepsets.try_reserve(cells.len()).map_err(|_| PcError::Internal(format!("out of memory for {} rewritten sepsets", cells.len())))?;
    for (x, y) in cells {
        let set = sep.get(x, y);
        if set.is_empty() {
            parts.sep0.set(x as usize, y as usize);
        } else {
            parts.sep0.clear(x as usize, y as usize);
            parts.sepsets.push(pc_core::skeleton::Sepset { x, y, set: set.to_vec() });
        }
    }
    Ok(())
}

/// A list of integer vectors (1-based), made with R's C API (one per triple pair: tens of
/// thousands in a large graph).
pub(crate) fn int_vectors(sets: impl ExactSizeIterator<Item = Vec<u32>>) -> Robj {
    let out = List::new(sets.len());
    // SAFETY: each vector is stored into `out` (protected) right after its allocation, before
    // any other R allocation; all on R's main thread.
    unsafe {
        let o = out.get();
        for (i, s) in sets.enumerate() {
            let v = Rf_allocVector(SEXPTYPE::INTSXP, s.len() as isize);
            let dst = std::slice::from_raw_parts_mut(INTEGER(v), s.len());
            for (d, &x) in dst.iter_mut().zip(&s) {
                *d = x as i32 + 1;
            }
            SET_VECTOR_ELT(o, i as isize, v);
        }
    }
    out.into_robj()
}

/// The triple checks of a native test, with what R reports of them.
pub(crate) struct NativeChecks {
    pub(crate) out: ConsOutcome,
    pub(crate) evaluator: String,
    /// The GPU evaluator took over the skeleton's data on the device instead of uploading it.
    pub(crate) reused: bool,
    /// G^2 tests answered p = 1 for n < n.min (count, n.min, n), which pcalg's checkTriple warns of.
    pub(crate) small_n: [f64; 3],
    /// The GPU's error when the checks ran on the CPU instead (`backend = "auto"`), else NULL.
    pub(crate) gpu_failed: Robj,
}

/// What the triple checks are asked besides their graph, sepsets and test.
pub(crate) struct CheckSettings {
    pub(crate) alpha: f64,
    pub(crate) rule: TripleRule,
    pub(crate) version: UnfVersion,
    pub(crate) threads: usize,
    /// "cuda": the tests on the GPU (`data$devices[1]`, or the kept test's device).
    pub(crate) on_gpu: bool,
    /// A GPU failure runs them on the CPU instead.
    pub(crate) fallback: bool,
}

fn run_checks(g: &Pdag, sep: &mut PairSepsets, s: &CheckSettings, eval: &mut dyn BatchEvaluator, watch: &mut RWatch) -> CoreResult<(ConsOutcome, String)> {
    let name = eval.name();
    Ok((check_triples(g, sep, s.alpha, s.rule, s.version, eval, watch)?, name))
}

/// The kept test of `data$test_handle`, taken out of its handle (freed here, not at R's next GC).
pub(crate) fn kept_test(data: &List) -> CoreResult<Option<KeptTest>> {
    let Some((_, h)) = data.iter().find(|(n, _)| *n == "test_handle") else { return Ok(None) };
    let mut h: ExternalPtr<Option<KeptTest>> = h.try_into().map_err(|_| PcError::Internal("not a kept test's handle".into()))?;
    Ok(h.take())
}

fn native<T: CiTest + Sync>(t: &T, pool: &rayon::ThreadPool, g: &Pdag, sep: &mut PairSepsets, s: &CheckSettings, watch: &mut RWatch) -> CoreResult<(ConsOutcome, String)> {
    run_checks(g, sep, s, &mut ParallelBatch::new(t, pool), watch)
}

/// pc.cons.intern's checks with a native `test` ("gauss", "dis", "bin", "cmiknn"; `data` as for
/// `gpupc_skeleton`), rewriting `sep`: on the kept test of `data$test_handle` (taken over) or
/// one read from `data`. pcalg calls R's `gaussCItest` here, so a stable.fast skeleton's test
/// runs with R's arithmetic. The GPU evaluators run on the skeleton's device data when it kept
/// them, else on data uploaded to `data$devices[1]`; CMI-kNN's tests run on the CPU.
pub(crate) fn native_checks(test: &str, data: &List, g: &Pdag, sep: &mut PairSepsets, p: usize, s: &CheckSettings, pool: &rayon::ThreadPool, watch: &mut RWatch) -> CoreResult<NativeChecks> {
    let kept = kept_test(data)?;
    let mut gpu_failed = Robj::from(());
    let failed = |_: &mut _, e: &PcError| gpu_failed = crate::rerror::from_pc(e);
    let mut small_n = [0.0; 3];
    let mut reused = false;
    let (out, evaluator) = match test {
        "gauss" => {
            let (t, device_c) = later_gauss(kept, data, p, s.threads)?;
            let gpu = |(sep, watch, reused): &mut (&mut PairSepsets, &mut RWatch, &mut bool)| {
                **reused = device_c.is_some();
                let mut eval = gauss_gpu_batch(device_c, &t, pool, data)?;
                run_checks(g, sep, s, &mut eval, watch)
            };
            let cpu = |(sep, watch, reused): &mut (&mut PairSepsets, &mut RWatch, &mut bool)| {
                **reused = false;
                native(&t, pool, g, sep, s, watch)
            };
            pc_cuda::open::or_cpu(&mut (sep, watch, &mut reused), s.on_gpu, s.fallback, gpu, cpu, failed)?
        }
        "dis" | "bin" => {
            let mut holder = later_gsquare(kept, data, p, test)?;
            let (t, kept_backend) = holder.parts();
            // pcalg's n < n.min warning counts only these checks' tests, of the run that finished
            let gpu = |(sep, watch, reused): &mut (&mut PairSepsets, &mut RWatch, &mut bool)| {
                t.take_small_n_tests();
                **reused = kept_backend.is_some();
                let mut eval = gsquare_gpu_batch(kept_backend, t, pool, data)?;
                run_checks(g, sep, s, &mut eval, watch)
            };
            let cpu = |(sep, watch, reused): &mut (&mut PairSepsets, &mut RWatch, &mut bool)| {
                t.take_small_n_tests();
                **reused = false;
                native(t, pool, g, sep, s, watch)
            };
            let out = pc_cuda::open::or_cpu(&mut (sep, watch, &mut reused), s.on_gpu, s.fallback, gpu, cpu, failed)?;
            let (k, n_min) = t.small_n_tests();
            small_n = [k as f64, n_min as f64, t.data.n as f64];
            out
        }
        // its GPU backend runs a skeleton's levels, not listed tests
        "cmiknn" => {
            let t = later_cmiknn(kept, data, p)?;
            native(&t, pool, g, sep, s, watch)?
        }
        other => return Err(invalid("indepTest", format!("unknown native test \"{other}\""))),
    };
    Ok(NativeChecks { out, evaluator, reused, small_n, gpu_failed })
}

fn orient_impl(edges: Robj, sepset: Robj, test: &str, data: List, unf: Robj, settings: List) -> CoreResult<Robj> {
    let t0 = Instant::now();
    let a = crate::convert::Named(&settings);
    let (p, solve_confl, rule, alpha, threads, backend) = (a.int("p")?, a.logical("solve_confl")?, a.string("rule")?, a.real("alpha")?, a.int("threads")?, a.string("backend")?);
    let fallback = a.logical("fallback")?;
    let mut gpu_failed = Robj::from(());
    let (rule, backend) = (rule.as_str(), backend.as_str());
    if p < 1 {
        return Err(invalid("p", "must be at least 1"));
    }
    let p = p as usize;
    let edge_list: Vec<(u32, u32)> = int_rows(&edges, 2, p, "edges")?.into_iter().map(|r| (r[0], r[1])).collect();
    let mut g = Pdag::from_edges(p, &edge_list)?;
    // the skeleton's own parts when R passes their handle (gpu_pc()), else R's list
    let mut handle: Option<ExternalPtr<Option<SepParts>>> = if sepset.rtype() == Rtype::ExternalPtr {
        Some(sepset.clone().try_into().map_err(|_| invalid("sepset", "must be a sepset list or a gpupc sepset handle"))?)
    } else {
        None
    };
    let taken = || PcError::Internal("the sepsets were taken already".into());
    let mut unfaithful = Unfaithful::new();
    for r in int_rows(&unf, 3, p, "unfTriples")? {
        unfaithful.insert(r[0], r[1], r[2]);
    }
    // threads only where they pay: the triple checks' tests, or a large collider step
    let pool = if rule != "none" || g.n_edges() >= PARALLEL_COLLIDER_EDGES { Some(pc_core::threads::call_pool(threads.max(0) as usize, "orient")?) } else { None };
    let mut watch = RWatch::new(&a.get("hooks")?.as_list().unwrap_or_default());
    // with no triple checks the skeleton's sepsets stay as they are, so R's list of them (made by
    // R's allocator, on this thread only) is made while another thread orients
    if rule == "none" && a.get("sepset_list").ok().and_then(|x| x.as_bool()) == Some(true) {
        if let Some(h) = handle.as_mut() {
            let parts = h.as_ref().as_ref().ok_or_else(taken)?;
            let input_s = t0.elapsed().as_secs_f64();
            let made = a.get("sepset_made").ok().filter(|m| !m.is_null());
            let (ost, list, list_s) = orient_beside_list(&mut g, parts, made.as_ref(), &unfaithful, solve_confl, pool.as_ref())?;
            // the list is made once, as from `gpupc_sepsets`: the parts go
            h.take();
            let phases = list!(orient_input_s = input_s, triples_s = 0.0, orient_s = t0.elapsed().as_secs_f64() - input_s, orient_output_s = 0.0, sepset_list_s = list_s);
            return orient_output(&g, &[], None, &unfaithful, &ost, (0, 0, 0, String::new(), false), phases, [0.0; 3], gpu_failed, Some(list));
        }
    }
    let mut sep = match &handle {
        Some(h) => parts_sepsets(h.as_ref().as_ref().ok_or_else(taken)?, &g)?,
        None => read_sepsets(&sepset, &g)?,
    };
    let input_s = t0.elapsed().as_secs_f64();

    let t1 = Instant::now();
    let rule = match rule {
        "none" => None,
        "conservative" => Some(TripleRule::Conservative),
        "majority" => Some(TripleRule::Majority),
        other => return Err(invalid("rule", format!("unknown rule \"{other}\""))),
    };
    let pool = || pool.as_ref().ok_or_else(|| PcError::Internal("no thread pool".into()));
    let mut pairs = Vec::new();
    let (mut triples, mut tests, mut ambiguous, mut evaluator, mut reused) = (0, 0, 0, String::new(), false);
    // G^2 tests of the triple checks answered p = 1 for n < n.min (pcalg's checkTriple warns)
    let mut small_n = [0.0; 3];
    if let Some(rule) = rule {
        let s = CheckSettings { alpha, rule, version: UnfVersion::AmbiguousOrDependent, threads: threads.max(0) as usize, on_gpu: backend == "cuda", fallback };
        let c = native_checks(test, &data, &g, &mut sep, p, &s, pool()?, &mut watch)?;
        for (a, b, c) in c.out.unfaithful.to_sorted_vec() {
            unfaithful.insert(a, b, c);
        }
        pairs = c.out.pairs;
        (triples, tests, ambiguous, evaluator, reused) = (c.out.triples, c.out.tests, c.out.ambiguous, c.evaluator, c.reused);
        small_n = c.small_n;
        gpu_failed = c.gpu_failed;
    }
    let triples_s = t1.elapsed().as_secs_f64();

    let t2 = Instant::now();
    let ost = orient_relaxed(&mut g, &sep, &unfaithful, solve_confl, pool().ok(), &mut watch)?;
    let orient_s = t2.elapsed().as_secs_f64();

    let t3 = Instant::now();
    if let Some(h) = handle.as_mut() {
        write_back(h.as_mut().as_mut().ok_or_else(taken)?, &pairs, &sep)?;
        // R has nothing to write back
        pairs.clear();
    }
    let output_s = t3.elapsed().as_secs_f64();
    let phases = list!(orient_input_s = input_s, triples_s = triples_s, orient_s = orient_s, orient_output_s = output_s);
    orient_output(&g, &pairs, Some(&sep), &unfaithful, &ost, (triples, tests, ambiguous, evaluator, reused), phases, small_n, gpu_failed, None)
}

/// Orients `g` with the sepsets of `parts` on a thread of its own while this thread makes R's
/// sepset list of them (`sepsets_to_r`, into `made` when the rows were made beside the search);
/// then waits for the orientation, answering Ctrl-C. Gives
/// the orientation's figures, the list and the seconds the list took.
fn orient_beside_list(g: &mut Pdag, parts: &SepParts, made: Option<&Robj>, unf: &Unfaithful, solve_confl: bool, pool: Option<&rayon::ThreadPool>) -> CoreResult<(pc_core::orient::OrientStats, Robj, f64)> {
    let ctl = pc_core::backend::Control::default();
    std::thread::scope(|scope| {
        let (tx, rx) = std::sync::mpsc::channel();
        let ctl = &ctl;
        let worker = scope.spawn(move || {
            let r = parts_sepsets(parts, g).and_then(|sep| orient_relaxed(g, &sep, unf, solve_confl, pool, &mut pc_core::backend::ControlWatch(ctl)));
            let _ = tx.send(());
            r
        });
        let t = Instant::now();
        let list = crate::convert::sepsets_to_r(parts, made);
        let list_s = t.elapsed().as_secs_f64();
        if list.is_err() {
            ctl.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = rx.recv_timeout(std::time::Duration::from_millis(50)) {
            if crate::watch::user_interrupted() {
                ctl.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        let ost = worker.join().map_err(|e| PcError::Internal(pc_core::backend::panic_message(&*e)))?;
        Ok((ost?, list?, list_s))
    })
}

/// The orientation's answer to R: the pdag's marks (from, to, weight), the pairs whose sepsets
/// R rewrites (with `sep`, their sets both ways), the unfaithful triples, the figures, and, when
/// made beside the orientation, R's sepset list.
#[allow(clippy::too_many_arguments)]
fn orient_output(g: &Pdag, pairs: &[(u32, u32)], sep: Option<&PairSepsets>, unfaithful: &Unfaithful, ost: &pc_core::orient::OrientStats, checks: (usize, u64, usize, String, bool), phases: List, small_n: [f64; 3], gpu_failed: Robj, sepset_list: Option<Robj>) -> CoreResult<Robj> {
    let (triples, tests, ambiguous, evaluator, reused) = checks;
    let n = g.entries().count();
    let (mut from, mut to, mut weight) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for (i, j, m) in g.entries() {
        from.push(i as i32 + 1);
        to.push(j as i32 + 1);
        weight.push(m as f64);
    }
    let pair_m = RMatrix::<i32>::new_matrix(pairs.len(), 2, |r, c| if c == 0 { pairs[r].0 as i32 + 1 } else { pairs[r].1 as i32 + 1 });
    let sets = |a: u32, c: u32| sep.map_or_else(Vec::new, |s| s.get(a, c).to_vec());
    let sep_ac = int_vectors(pairs.iter().map(|&(a, c)| sets(a, c)).collect::<Vec<_>>().into_iter());
    let sep_ca = int_vectors(pairs.iter().map(|&(a, c)| sets(c, a)).collect::<Vec<_>>().into_iter());
    let unf_v = unfaithful.to_sorted_vec();
    let unf_m = RMatrix::<i32>::new_matrix(unf_v.len(), 3, |r, c| [unf_v[r].0, unf_v[r].1, unf_v[r].2][c] as i32 + 1);
    let stats_l = list!(
        colliders = ost.colliders as f64,
        rounds = ost.rounds as f64,
        triples = triples as f64,
        tests = tests as f64,
        ambiguous = ambiguous as f64,
        evaluator = evaluator,
        data_reused = reused
    );
    let out = List::from_names_and_values(
        ["from", "to", "weight", "directed", "pairs", "sep_ac", "sep_ca", "unf", "stats", "phases", "small_n", "gpu_failed", "sepset_list"],
        [
            Robj::from(from),
            Robj::from(to),
            Robj::from(weight),
            Robj::from(g.any_directed()),
            pair_m.into_robj(),
            sep_ac,
            sep_ca,
            unf_m.into_robj(),
            stats_l.into_robj(),
            phases.into_robj(),
            Robj::from(small_n.to_vec()),
            gpu_failed,
            sepset_list.unwrap_or_else(|| Robj::from(())),
        ],
    )
    .map_err(|e| PcError::Internal(e.to_string()))?;
    Ok(out.into_robj())
}

/// Orients a skeleton as `udag2pdagRelaxed()` does, after `pc.cons.intern()`'s triple checks
/// when the rule is "conservative" or "majority" (`test` "gauss", "dis" or "bin" and its `data`
/// as for `gpupc_skeleton`; R runs pcalg's own checks for any other test, so that R calls it).
/// `edges`: m x 2 integer matrix of the skeleton's edges (1-based); `unf`: NULL or a k x 3
/// integer matrix of triples to treat as unfaithful (pcalg's `unfVect`); `sepset`: R's list, or
/// the skeleton's sepset handle, which the rewrites then go into (and the result's `pairs` is
/// empty). `settings` (a named list built by `orient_pcalgo()` in R/orient.R): `p`, `solve_confl`, `rule`, `alpha`,
/// `threads`, `backend`: "cuda" runs the triple checks' tests on the GPU
/// (`pc_cuda::CudaGaussBatch`, `pc_cuda::CudaGSquareBatch`), anything else on the CPU, and
/// `fallback`: a GPU failure runs them on the CPU instead (`pc_cuda::open::or_cpu`; the result's
/// `gpu_failed` is then the error), and `hooks` (`RWatch`: `tick(tests done, tests)` of the
/// triple checks). `data$test_handle`: the skeleton's kept test, taken over.
#[extendr]
fn gpupc_orient(edges: Robj, sepset: Robj, test: &str, data: List, unf: Robj, settings: List) -> Robj {
    match orient_impl(edges, sepset, test, data, unf, settings) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

/// A sepset handle like `gpupc_skeleton`'s, made from R's p x p list (every cell read: for tests
/// of the handle path on lists made in R): `integer(0)` becomes a level-0 bit, a one-variable set
/// at an odd x + y a level-1 triple (as the GPU's dense levels keep them), any other set a
/// `Sepset`, NULL nothing.
#[extendr]
fn gpupc_sepset_handle(sepset: Robj) -> Robj {
    let made = (|| -> CoreResult<Robj> {
        let p = sepset.len();
        if sepset.rtype() != Rtype::List {
            return Err(invalid("sepset", "must be a list of lists"));
        }
        let list = unsafe { sepset.get() };
        let mut parts = SepParts { sep0: pc_core::BitMatrix::empty(p), sepsets: Vec::new(), sep1: Vec::new(), threads: 1 };
        let mut buf = Vec::new();
        for x in 0..p as u32 {
            for y in 0..p as u32 {
                if sepset_entry(list, p, x, y, &mut buf)? {
                    if buf.is_empty() {
                        parts.sep0.set(x as usize, y as usize);
                    } else if buf.len() == 1 && (x + y) % 2 == 1 {
                        // some one-variable sets as a dense backend's level 1 keeps them
                        parts.sep1.push([x, y, buf[0]]);
                    } else {
                        parts.sepsets.push(pc_core::skeleton::Sepset { x, y, set: buf.clone() });
                    }
                }
            }
        }
        Ok(ExternalPtr::new(Some(parts)).into())
    })();
    made.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

extendr_module! {
    mod orient;
    fn gpupc_orient;
    fn gpupc_sepset_handle;
}
