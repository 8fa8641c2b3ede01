//! The junction-tree entry points: a network from R (names, states, 0-based parents, CPTs in
//! bnlearn's array order) compiled into a `Plan` kept behind an external pointer, and queries
//! with a batch of evidence (hard states as a rows x n integer matrix with -1 for unobserved,
//! likelihoods as a rows x width matrix) on the CPU engine or the GPU.

use extendr_api::prelude::*;
use pc_core::{PcError, Watch};
use pc_jtree::engine::{Marginals, Mpe, Options};
use pc_jtree::{Evidence, Heuristic, JtError, Limits, Network, Plan};

use crate::watch::RWatch;

fn strings(x: &Robj, arg: &'static str) -> Result<Vec<String>, JtError> {
    x.as_string_vector().ok_or_else(|| JtError::invalid(arg, "must be a character vector"))
}

fn network(names: Robj, states: List, parents: List, cpts: List) -> Result<Network, JtError> {
    let names = strings(&names, "x")?;
    let states = states.values().map(|s| strings(&s, "x")).collect::<Result<Vec<_>, _>>()?;
    let parents = parents
        .values()
        .map(|p| match p.as_integer_slice() {
            Some(s) => Ok(s.iter().map(|&i| i as usize).collect()),
            None if p.is_null() || p.len() == 0 => Ok(Vec::new()),
            None => Err(JtError::invalid("x", "parents must be integer vectors")),
        })
        .collect::<Result<Vec<Vec<usize>>, _>>()?;
    let cpts = cpts
        .values()
        .map(|c| c.as_real_slice().map(|s| s.to_vec()).ok_or_else(|| JtError::invalid("x", "CPTs must be numeric")))
        .collect::<Result<Vec<_>, _>>()?;
    Network::new(names, states, parents, cpts)
}

/// Compiles a network; returns list(ptr, stats), or the error list of `rerror.rs`.
#[extendr]
fn gpupc_jt_compile(names: Robj, states: List, parents: List, cpts: List, triangulation: &str, max_cells: f64, threads: i32) -> Robj {
    let r = (|| -> Result<Robj, JtError> {
        let net = network(names, states, parents, cpts)?;
        let h = Heuristic::parse(triangulation)?;
        let limits = Limits { max_total_cells: max_cells.max(1.0) as u64, ..Limits::default() };
        let t = std::time::Instant::now();
        let plan = Plan::compile(&net, h, limits, threads.max(0) as usize)?;
        let s = plan.stats.clone();
        let stats = list!(
            cliques = s.cliques as i32,
            trees = s.trees as i32,
            depth = s.depth as i32,
            max_clique_vars = s.max_clique_vars as i32,
            max_clique_cells = s.max_clique_cells as f64,
            total_clique_cells = s.total_clique_cells as f64,
            total_separator_cells = s.total_separator_cells as f64,
            bytes_per_evidence_set = s.bytes_per_evidence_set as f64,
            compile_s = t.elapsed().as_secs_f64()
        );
        let offsets: Vec<i32> = plan.marg.iter().map(|p| p.out as i32).collect();
        let ptr: Robj = ExternalPtr::new(plan).into();
        Ok(list!(ptr = ptr, stats = stats, offsets = offsets).into_robj())
    })();
    r.unwrap_or_else(|e| crate::rerror::from_jt(&e, "x"))
}

fn evidence(plan: &Plan, hard: Robj, soft_col: Robj, soft: Robj, rows: i32) -> Result<Evidence, JtError> {
    let n = plan.n_vars();
    let rows = rows.max(0) as usize;
    // R's matrices are column-major rows x n: transpose to row-major
    let h = hard.as_integer_slice().ok_or_else(|| JtError::invalid("evidence", "internal: states must be integers"))?;
    if h.len() != rows * n {
        return Err(JtError::invalid("evidence", "internal: wrong number of states"));
    }
    let mut ev = Evidence::empty(n, rows);
    for r in 0..rows {
        for v in 0..n {
            ev.hard[r * n + v] = h[r + v * rows];
        }
    }
    let sc = soft_col.as_integer_slice().ok_or_else(|| JtError::invalid("evidence", "internal: likelihood columns"))?;
    ev.soft_col = sc.to_vec();
    let s = soft.as_real_slice().unwrap_or(&[]);
    let w = if rows == 0 { 0 } else { s.len() / rows };
    ev.soft_width = w;
    ev.soft = vec![1.0; rows * w];
    for r in 0..rows {
        for j in 0..w {
            ev.soft[r * w + j] = s[r + j * rows];
        }
    }
    ev.check(&plan.card)?;
    Ok(ev)
}

/// Marginals (`what` "marginal") or the MPE (`what` "mpe") of a batch; returns
/// list(values = rows x width matrix, pe) / list(states = rows x n matrix, prob), or an error list.
/// `ev`: the evidence as R/jtree.R reads it (`hard`, `soft_col`, `soft`, `rows`); `query`: `what`,
/// `backend`, `threads`, `memory_gb`, `devices`, `nodes` (the 0-based nodes whose marginals
/// come back, NULL for all) and `dimnames` (per wanted node its matrix's dimnames, or NULL);
/// `hooks`: `tick(done, total)` with the evidence sets done, between chunks (`RWatch`; Ctrl-C or
/// a FALSE from it stops the batch as R's interrupt).
#[extendr]
fn gpupc_jt_query(ptr: Robj, ev: List, query: List, hooks: List) -> Robj {
    let plan: &ExternalPtr<Plan> = match (&ptr).try_into() {
        Ok(p) => p,
        Err(_) => return crate::rerror::r_error("invalid", "is not a compiled junction tree (was it saved and reloaded?)", Some("jt")),
    };
    let plan: &Plan = plan;
    let (e, q) = (crate::convert::Named(&ev), crate::convert::Named(&query));
    let settings = (|| -> Result<_, PcError> {
        let ev_parts = (e.get("hard")?, e.get("soft_col")?, e.get("soft")?, e.int("rows")?);
        let q_parts = (q.string("what")?, q.string("backend")?, q.int("threads")?, q.real("memory_gb")?, q.get("devices")?, q.get("nodes")?);
        Ok((ev_parts, q_parts, q.get("dimnames")?))
    })();
    let ((hard, soft_col, soft, rows), (what, backend, threads, memory_gb, devices, nodes), dimnames) = match settings {
        Ok(s) => s,
        Err(e) => return crate::rerror::from_pc(&e),
    };
    let (what, backend) = (what.as_str(), backend.as_str());
    let ev = match evidence(plan, hard, soft_col, soft, rows) {
        Ok(e) => e,
        Err(e) => return crate::rerror::from_jt(&e, "evidence"),
    };
    let opts = Options { threads: threads.max(0) as usize, memory_bytes: (memory_gb.max(0.001) * 1e9) as u64 };
    let n = plan.n_vars();
    let mut watch = RWatch::new(&hooks);
    let t = std::time::Instant::now();
    let (marg, mpe) = match (what, backend) {
        ("marginal", "cpu") => match pc_jtree::marginals_cpu_watched(plan, &ev, opts, &mut |done, total| watch.tick(done as u64, total as u64)) {
            Ok(m) => (Some(m), None),
            Err(e) => return crate::rerror::from_jt(&e, "evidence"),
        },
        ("mpe", "cpu") => match pc_jtree::mpe_cpu_watched(plan, &ev, opts, &mut |done, total| watch.tick(done as u64, total as u64)) {
            Ok(m) => (None, Some(m)),
            Err(e) => return crate::rerror::from_jt(&e, "evidence"),
        },
        (w, "cuda") => {
            let r = crate::multi::ordinals(&devices).and_then(|d| cuda_query(plan, &ev, w == "mpe", &d, &mut watch));
            match r {
                Ok(x) => x,
                Err(e) => return crate::rerror::from_pc(&e),
            }
        }
        _ => return crate::rerror::r_error("internal", "unknown query", None),
    };
    let secs = t.elapsed().as_secs_f64();
    let rows = ev.rows;
    if let Some(m) = marg {
        let wanted = match node_indices(&nodes, n) {
            Ok(w) => w,
            Err(e) => return crate::rerror::from_jt(&e, "nodes"),
        };
        let t = std::time::Instant::now();
        let values = match node_matrices(plan, &m, &wanted, &dimnames, opts.threads) {
            Ok(v) => v,
            Err(e) => return crate::rerror::from_jt(&e, "evidence"),
        };
        let results = t.elapsed().as_secs_f64();
        return list!(values = values, pe = m.pe, seconds = secs, results_seconds = results).into_robj();
    }
    let m = mpe.expect("one of the two");
    let mut col = vec![0i32; rows * n];
    for r in 0..rows {
        for v in 0..n {
            let s = m.states[r * n + v];
            col[r + v * rows] = if s < 0 { i32::MIN } else { s + 1 };
        }
    }
    let mut states: Robj = col.into();
    let _ = states.set_attrib("dim", [rows as i32, n as i32]);
    list!(states = states, prob = m.prob, seconds = secs).into_robj()
}

/// The 0-based node numbers R asked for (NULL: every node).
fn node_indices(nodes: &Robj, n: usize) -> Result<Vec<usize>, JtError> {
    if nodes.is_null() {
        return Ok((0..n).collect());
    }
    let v = nodes.as_integer_slice().ok_or_else(|| JtError::invalid("nodes", "must be node numbers"))?;
    v.iter().map(|&i| if i >= 0 && (i as usize) < n { Ok(i as usize) } else { Err(JtError::invalid("nodes", "names a node the tree does not have")) }).collect()
}

/// Per wanted node its marginals as an R matrix (evidence sets x states; NaN, where the evidence
/// is impossible, as NA), written once from the row-major result: R then only names them (a
/// rows x all-states matrix for R to cut up took most of a large batch's time in R).
fn node_matrices(plan: &Plan, m: &Marginals, wanted: &[usize], dimnames: &Robj, threads: usize) -> Result<List, JtError> {
    let (rows, w) = (m.rows, m.width);
    let nrow = i32::try_from(rows).map_err(|_| JtError::invalid("evidence", "has too many rows for an R matrix"))?;
    // R's allocations can fail: caught, as an R error list, never a jump across these frames
    let mut mats: Vec<Robj> = wanted
        .iter()
        .map(|&v| {
            let ncol = plan.card[v] as i32;
            extendr_api::catch_r_error(move || unsafe { extendr_ffi::Rf_allocMatrix(extendr_ffi::SEXPTYPE::REALSXP, nrow, ncol) })
                // SAFETY: `from_sexp` protects the fresh matrix before any other R allocation.
                .map(|sexp| unsafe { Robj::from_sexp(sexp) })
                .map_err(|_| JtError::OutOfMemory(format!("R could not allocate the marginals of {rows} evidence sets")))
        })
        .collect::<Result<_, _>>()?;
    // SAFETY: each matrix is a fresh rows x card double matrix, kept alive by `mats`, written here only.
    let mut outs: Vec<&mut [f64]> = mats.iter().zip(wanted).map(|(x, &v)| unsafe { crate::convert::doubles_mut(x, rows * plan.card[v]) }).collect();
    let na = <f64 as CanBeNA>::na();
    // a node per task on the call's threads (no R API: the matrices' memory only), in blocks of
    // rows whose part of the result stays in cache while the node's columns are written
    const BLOCK: usize = 32;
    pc_jtree::engine::pool(threads)?.install(|| {
        use rayon::prelude::*;
        outs.par_iter_mut().zip(wanted.par_iter()).for_each(|(out, &v)| {
            let (off, card) = (plan.marg[v].out as usize, plan.card[v]);
            for r0 in (0..rows).step_by(BLOCK) {
                let r1 = (r0 + BLOCK).min(rows);
                for c in 0..card {
                    for r in r0..r1 {
                        let x = m.values[r * w + off + c];
                        out[r + c * rows] = if x.is_nan() { na } else { x };
                    }
                }
            }
        });
    });
    drop(outs);
    // named here: R's `dimnames<-` on a matrix that `mats`' list still referred to copied it
    // (450 MB for 10,000 Munin sets)
    if let Some(dn) = dimnames.as_list().filter(|_| !dimnames.is_null()) {
        if dn.len() != mats.len() {
            return Err(JtError::invalid("nodes", "internal: one dimnames per wanted node"));
        }
        for (x, d) in mats.iter_mut().zip(dn.values()) {
            x.set_attrib("dimnames", d).map_err(|_| JtError::invalid("nodes", "the marginals' dimnames do not fit"))?;
        }
    }
    Ok(List::from_values(mats))
}

/// A batch on the GPUs `devices`: the evidence sets split into one contiguous block per device,
/// each propagated on its own device at once, the answers put back in the batch's order. One
/// device reports its chunks to `watch` itself; several add theirs to a count that this (R's)
/// thread reports while they run, and stop at their next chunk once the watch says so.
fn cuda_query(plan: &Plan, ev: &Evidence, mpe: bool, devices: &[usize], watch: &mut RWatch) -> Result<(Option<Marginals>, Option<Mpe>), PcError> {
    let run = |ev: &Evidence, d: usize, progress: pc_jtree::Progress| -> Result<(Option<Marginals>, Option<Mpe>), PcError> {
        let mut g = pc_cuda::jtree::CudaJtree::new_on(plan, d)?;
        if mpe {
            g.mpe(ev, None, progress).map(|m| (None, Some(m)))
        } else {
            g.marginals(ev, None, progress).map(|m| (Some(m), None))
        }
    };
    let k = devices.len().min(ev.rows).max(1);
    if k == 1 {
        return run(ev, devices.first().copied().unwrap_or_else(pc_cuda::device_ordinal), &mut |done, total| watch.tick(done as u64, total as u64));
    }
    let labels = pc_cuda::device_labels(devices);
    let parts = pc_core::multi::even_ranges(ev.rows, k);
    let results = pc_core::backend::run_watched(ev.rows as u64, watch, std::time::Duration::from_millis(100), |ctl| {
        Ok(std::thread::scope(|s| {
            let hs: Vec<_> = parts
                .iter()
                .zip(devices)
                .map(|(r, &d)| {
                    let mut told = 0;
                    let mut progress = move |done: usize, _: usize| {
                        ctl.edges_done.fetch_add((done - told) as u64, std::sync::atomic::Ordering::Relaxed);
                        told = done;
                        !ctl.cancelled()
                    };
                    s.spawn(move || run(&ev.rows_slice(r.clone()), d, &mut progress))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect::<Vec<_>>()
        }))
    })?;
    let (mut margs, mut mpes) = (Vec::with_capacity(k), Vec::with_capacity(k));
    for (i, (r, label)) in results.into_iter().zip(&labels).enumerate() {
        let (m, e) = r.map_err(|e| pc_core::multi::label_error(i, label, e))?;
        margs.extend(m);
        mpes.extend(e);
    }
    Ok((Marginals::concat(margs), Mpe::concat(mpes)))
}

/// Hard evidence from a data frame's character and factor columns, as R/jtree.R's `hard`: a
/// rows x n integer matrix of -1 (unobserved) whose column `nodes[j]` (0-based) holds column
/// `cols[[j]]` as the 0-based numbers of its values among the node's states, -1 for NA. A factor
/// column comes with `maps[[j]]`, its levels' state numbers (-2 for a level that is no state); a
/// character column with `states[[j]]`, its values matched by CHARSXP, the string R's cache holds
/// once per bytes and encoding. A value that matches no state is -2 and sets `redo[j]`, for R to
/// match that column again with match() (which knows encodings) and to name the value that is
/// no state. Returns list(hard, redo, seen): `seen[v]`, the sets in which node v has a state (so
/// that R need not scan the rows x n matrix for the nodes every set observes), or an error list.
#[extendr]
fn gpupc_jt_codes(cols: List, states: List, maps: List, nodes: Robj, rows: i32, n: i32) -> Robj {
    match hard_codes(&cols, &states, &maps, &nodes, rows, n) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_jt(&e, "evidence"),
    }
}

fn hard_codes(cols: &List, states: &List, maps: &List, nodes: &Robj, rows: i32, n: i32) -> Result<Robj, JtError> {
    use extendr_ffi::{Rf_allocMatrix, R_NaString, SEXPTYPE, INTEGER, STRING_PTR_RO, TYPEOF};
    use rayon::prelude::*;
    let internal = |what: &str| JtError::invalid("evidence", format!("internal: {what}"));
    let nodes = nodes.as_integer_slice().ok_or_else(|| internal("nodes must be integers"))?;
    let k = nodes.len();
    if cols.len() != k || states.len() != k || maps.len() != k || rows < 0 || n < 0 {
        return Err(internal("one column, states, map and node each"));
    }
    let (r, nn) = (rows as usize, n as usize);
    /// A node's column: absent (unobserved in every set), CHARSXP addresses with the states', or
    /// a factor's codes with its levels' state numbers. Plain memory, read on the pool's threads.
    enum Src<'a> {
        Absent,
        Strings(&'a [usize], &'a [usize]),
        Codes(&'a [i32], &'a [i32]),
    }
    let strings = |x: &Robj| unsafe { TYPEOF(x.get()) } == SEXPTYPE::STRSXP;
    let mut srcs: Vec<Src> = (0..nn).map(|_| Src::Absent).collect();
    let mut node_col = vec![usize::MAX; nn];
    for (j, ((col, st), map)) in cols.values().zip(states.values()).zip(maps.values()).enumerate() {
        let v = nodes[j];
        if col.len() != r || v < 0 || v as usize >= nn || node_col[v as usize] != usize::MAX {
            return Err(internal("a column of `rows` values per node, each node once"));
        }
        node_col[v as usize] = j;
        srcs[v as usize] = if strings(&col) && strings(&st) {
            // SAFETY: STRSXPs of col.len() and st.len() elements, read only; `cols` and `states`
            // keep them alive until this function returns. A SEXP is an address (usize-sized).
            unsafe { Src::Strings(std::slice::from_raw_parts(STRING_PTR_RO(col.get()) as *const usize, r), std::slice::from_raw_parts(STRING_PTR_RO(st.get()) as *const usize, st.len())) }
        } else if let (Some(cells), Some(map)) = (col.as_integer_slice(), map.as_integer_slice()) {
            // SAFETY: R's vectors, alive until this function returns; the slices only extend
            // their borrow to the pool's closures below, which end before it does.
            unsafe { Src::Codes(std::slice::from_raw_parts(cells.as_ptr(), cells.len()), std::slice::from_raw_parts(map.as_ptr(), map.len())) }
        } else {
            return Err(internal("a character column with its states, or a factor's codes with its map"));
        };
    }
    let m = extendr_api::catch_r_error(move || unsafe { Rf_allocMatrix(SEXPTYPE::INTSXP, rows, n) })
        // SAFETY: `from_sexp` protects the fresh matrix before any other R allocation.
        .map(|sexp| unsafe { Robj::from_sexp(sexp) })
        .map_err(|_| JtError::OutOfMemory(format!("R could not allocate the evidence of {r} sets")))?;
    // SAFETY: a fresh rows x n integer matrix, kept alive by `m`, written here only.
    let out = unsafe { std::slice::from_raw_parts_mut(INTEGER(m.get()), r * nn) };
    let na = unsafe { R_NaString } as usize;
    // a node's column per task (no R API: memory only), every cell written once; -2 marks a
    // value that is no state, for R to match again
    let column = |(dst, src): (&mut [i32], &Src)| -> (i32, bool) {
        let mut bad = false;
        let mut code = |x: Option<usize>| match x {
            Some(s) => s as i32,
            None => {
                bad = true;
                -2
            }
        };
        match src {
            Src::Absent => dst.fill(-1),
            Src::Strings(cells, sts) => {
                for (d, &c) in dst.iter_mut().zip(*cells) {
                    *d = if c == na { -1 } else { code(sts.iter().position(|&s| s == c)) };
                }
            }
            Src::Codes(cells, map) => {
                for (d, &c) in dst.iter_mut().zip(*cells) {
                    // a factor's codes are 1-based, NA is NA_integer_ (below 1)
                    *d = if c >= 1 { code(map.get(c as usize - 1).filter(|&&s| s >= 0).map(|&s| s as usize)) } else { -1 };
                }
            }
        }
        (dst.iter().filter(|&&d| d >= 0).count() as i32, bad)
    };
    // a small batch on R's thread alone (starting threads would cost more than it saves)
    let per_node: Vec<(i32, bool)> = if r == 0 {
        vec![(0, false); nn]
    } else if r * nn < 1 << 20 {
        out.chunks_mut(r.max(1)).zip(srcs.iter()).map(column).collect()
    } else {
        pc_core::threads::call_pool(0, "gpupc-evidence")
            .map_err(|e| JtError::Other(e.to_string()))?
            .install(|| out.par_chunks_mut(r.max(1)).zip(srcs.par_iter()).map(column).collect())
    };
    let seen: Vec<i32> = per_node.iter().map(|&(c, _)| c).collect();
    let mut redo = vec![false; k];
    for (v, &(_, bad)) in per_node.iter().enumerate() {
        if bad {
            redo[node_col[v]] = true;
        }
    }
    Ok(list!(hard = m, redo = redo, seen = seen).into_robj())
}

extendr_module! {
    mod jtree;
    fn gpupc_jt_compile;
    fn gpupc_jt_query;
    fn gpupc_jt_codes;
}
