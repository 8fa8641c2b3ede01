//! The junction-tree entry points: a network from R (names, states, 0-based parents, CPTs in
//! bnlearn's array order) compiled into a `Plan` kept behind an external pointer, and queries
//! with a batch of evidence (hard states as a rows x n integer matrix with -1 for unobserved,
//! likelihoods as a rows x width matrix) on the CPU engine or the GPU.

use extendr_api::prelude::*;
use pc_core::{PcError, Watch};
use pc_jtree::engine::{MargSink, Mpe, Options};
use pc_jtree::{Evidence, Heuristic, JtError, Limits, Network, Plan};

use crate::jtree_kept::{Compiled, KEPT};
use crate::watch::RWatch;
use pc_cuda::jtree::CudaJtree;

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
        let ptr: Robj = ExternalPtr::new(Compiled::new(plan)).into();
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
/// list(values = per wanted node a rows x states matrix, pe) / list(states = rows x n matrix,
/// prob), or an error list.
/// `ev`: the evidence as R/jtree.R reads it (`hard`, `soft_col`, `soft`, `rows`); `query`: `what`,
/// `backend`, `threads`, `memory_gb`, `devices`, `nodes` (the 0-based nodes whose marginals
/// come back, NULL for all) and `dimnames` (per wanted node its matrix's dimnames, or NULL);
/// `hooks`: `tick(done, total)` with the evidence sets done, between chunks (`RWatch`; Ctrl-C or
/// a FALSE from it stops the batch as R's interrupt).
#[extendr]
fn gpupc_jt_query(ptr: Robj, ev: List, query: List, hooks: List) -> Robj {
    let compiled: &ExternalPtr<Compiled> = match (&ptr).try_into() {
        Ok(p) => p,
        Err(_) => return crate::rerror::r_error("invalid", "is not a compiled junction tree (was it saved and reloaded?)", Some("jt")),
    };
    let (plan, key): (&Plan, u64) = (&compiled.plan, compiled.key);
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
    let rows = ev.rows;
    if what == "marginal" {
        // R's matrices first: each chunk is normalised straight into them
        let t = std::time::Instant::now();
        let made = node_indices(&nodes, n).and_then(|w| node_matrices(plan, rows, &w).map(|m| (w, m)));
        let (wanted, (mats, pe)) = match made {
            Ok(x) => x,
            Err(e) => return crate::rerror::from_jt(&e, "evidence"),
        };
        let mut cells = vec![std::ptr::null_mut(); n];
        for (x, &v) in mats.iter().zip(&wanted) {
            // SAFETY: a double matrix, alive in `mats`
            cells[v] = unsafe { extendr_ffi::REAL(x.get()) };
        }
        // SAFETY: each matrix holds rows x card[v] doubles and `pe` rows; their cells do not move
        // (Rust's buffers, R's vector), `mats` and `pe` keep them alive, and only the propagation
        // writes them until they are returned.
        let sink = unsafe { MargSink::from_raw(plan, rows, cells, extendr_ffi::REAL(pe.get())) };
        let mut results = t.elapsed().as_secs_f64();
        pc_core::trace::mark(|| format!("junction tree query: {rows} evidence sets read, their {} matrices made", mats.len()));
        let t = std::time::Instant::now();
        let done = match backend {
            "cpu" => pc_jtree::marginals_cpu_into(plan, &ev, opts, &mut |done, total| watch.tick(done as u64, total as u64), &sink).map_err(|e| crate::rerror::from_jt(&e, "evidence")),
            "cuda" => crate::multi::ordinals(&devices)
                .and_then(|d| on_devices(&ev, &d, &mut watch, |block, dev, first, progress| on_kept(plan, key, dev, |t| t.marginals_into(block, None, progress, &sink.from_row(first)))))
                .map(|_| ())
                .map_err(|e| crate::rerror::from_pc(&e)),
            _ => Err(crate::rerror::r_error("internal", "unknown query", None)),
        };
        if let Err(e) = done {
            return e;
        }
        drop(sink);
        let secs = t.elapsed().as_secs_f64();
        let t = std::time::Instant::now();
        let values = match named(mats, &dimnames) {
            Ok(v) => v,
            Err(e) => return crate::rerror::from_jt(&e, "nodes"),
        };
        results += t.elapsed().as_secs_f64();
        return list!(values = values, pe = pe, seconds = secs, results_seconds = results).into_robj();
    }
    let t = std::time::Instant::now();
    let m = match backend {
        "cpu" => match pc_jtree::mpe_cpu_watched(plan, &ev, opts, &mut |done, total| watch.tick(done as u64, total as u64)) {
            Ok(m) => m,
            Err(e) => return crate::rerror::from_jt(&e, "evidence"),
        },
        "cuda" => {
            let r = crate::multi::ordinals(&devices)
                .and_then(|d| on_devices(&ev, &d, &mut watch, |block, dev, _, progress| on_kept(plan, key, dev, |t| t.mpe(block, None, progress))));
            match r {
                Ok(parts) => Mpe::concat(parts).expect("at least one block"),
                Err(e) => return crate::rerror::from_pc(&e),
            }
        }
        _ => return crate::rerror::r_error("internal", "unknown query", None),
    };
    let secs = t.elapsed().as_secs_f64();
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

/// Per wanted node a matrix for its marginals (evidence sets x states), and P(evidence) per
/// set, unwritten: the propagation normalises into them. The matrices' cells are Rust's
/// (`owned_doubles`, as pMax's): allocated by R, 10,000 Munin sets' 450 MB set off a full
/// collection of R's heap in the first call of a process (0.65 s on the GPU machine, with the
/// evidence's data frame alive). A node wanted twice is refused (its second matrix would stay
/// unwritten).
fn node_matrices(plan: &Plan, rows: usize, wanted: &[usize]) -> Result<(Vec<Robj>, Robj), JtError> {
    let mut seen = vec![false; plan.n_vars()];
    for &v in wanted {
        if std::mem::replace(&mut seen[v], true) {
            return Err(JtError::invalid("nodes", "names a node twice"));
        }
    }
    let what = format!("the marginals of {rows} evidence sets");
    let refused = |e: PcError| JtError::OutOfMemory(e.to_string());
    let mats = wanted.iter().map(|&v| crate::owned_doubles::unwritten_matrix(rows, plan.card[v], &what, "evidence").map_err(refused)).collect::<Result<Vec<_>, _>>()?;
    let pe = extendr_api::catch_r_error(move || unsafe { extendr_ffi::Rf_allocVector(extendr_ffi::SEXPTYPE::REALSXP, rows as extendr_ffi::R_xlen_t) })
        // SAFETY: `from_sexp` protects the fresh vector before any other R allocation.
        .map(|sexp| unsafe { Robj::from_sexp(sexp) })
        .map_err(|_| JtError::OutOfMemory(format!("R could not allocate P(evidence) of {rows} evidence sets")))?;
    Ok((mats, pe))
}

/// The written matrices as R's list, each named by its `dimnames` entry (NULL: unnamed). Named
/// here: R's `dimnames<-` on a matrix that the list still referred to copied it (450 MB for
/// 10,000 Munin sets).
fn named(mut mats: Vec<Robj>, dimnames: &Robj) -> Result<List, JtError> {
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

/// `run` on tree `key`'s device part on GPU `dev`: the one its last query there kept, else
/// opened; kept again after a query that worked.
fn on_kept<T>(plan: &Plan, key: u64, dev: usize, run: impl FnOnce(&mut CudaJtree) -> Result<T, PcError>) -> Result<T, PcError> {
    let mut t = match KEPT.take(key, dev).and_then(|k| CudaJtree::resume(plan, key, k)) {
        Some(t) => {
            pc_core::trace::mark(|| format!("junction tree on GPU {dev}: kept from the last query"));
            t
        }
        None => {
            let mut t = CudaJtree::new_on(plan, dev)?;
            t.hold_buffers_under(key);
            t
        }
    };
    let r = run(&mut t)?;
    KEPT.put(t.keep(key));
    Ok(r)
}

/// A batch on the GPUs `devices`: the evidence sets split into one contiguous block per device,
/// each propagated by `run(block, device, its first row, progress)` on its own device at once;
/// the blocks' answers in the batch's order. One device reports its chunks to `watch` itself;
/// several add theirs to a count that this (R's) thread reports while they run, and stop at
/// their next chunk once the watch says so.
fn on_devices<T: Send>(
    ev: &Evidence,
    devices: &[usize],
    watch: &mut RWatch,
    run: impl Fn(&Evidence, usize, usize, pc_jtree::Progress) -> Result<T, PcError> + Sync,
) -> Result<Vec<T>, PcError> {
    let k = devices.len().min(ev.rows).max(1);
    if k == 1 {
        let d = devices.first().copied().unwrap_or_else(pc_cuda::device_ordinal);
        return run(ev, d, 0, &mut |done, total| watch.tick(done as u64, total as u64)).map(|x| vec![x]);
    }
    let labels = pc_cuda::device_labels(devices);
    let parts = pc_core::multi::even_ranges(ev.rows, k);
    let run = &run;
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
                    s.spawn(move || run(&ev.rows_slice(r.clone()), d, r.start, &mut progress))
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|e| Err(PcError::Cuda(pc_core::backend::panic_message(&*e))))).collect::<Vec<_>>()
        }))
    })?;
    results.into_iter().zip(&labels).enumerate().map(|(i, (r, label))| r.map_err(|e| pc_core::multi::label_error(i, label, e))).collect()
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
