//! The functions R calls (`.Call(wrap__gpupc_...)`). Each returns either its result or
//! the error list of `rerror.rs`, which the R layer raises as a classed R error; a
//! panic that slips through is still caught by extendr and becomes an R error.

use extendr_api::prelude::*;
use pc_core::citest::GSquareKind;
use pc_core::cpu::ParallelCpu;
use std::time::Instant;

use pc_core::{run_skeleton_into, Backend, PcError, SkeletonParams};

use crate::convert::{alloc_pmax, doubles_mut, gauss_input, gauss_test, gsquare_test, result_to_r, scan_correlation, CoreResult, GaussInput};
use pc_cuda::open::GaussSource;

use crate::kept::{KeptGSquare, KeptTest};
use crate::params::skeleton_params;
use crate::watch::RWatch;

pub(crate) struct Run<'a> {
    pub(crate) params: SkeletonParams,
    /// pMax's cells: R's matrix, written in place by the level loop.
    pmax: &'a mut [f64],
    watch: RWatch,
    /// Backend-specific details for `gpupc_last_run()` (CUDA timings).
    pub(crate) extra: List,
    /// Seconds reading the input, opening the backend (CUDA: device, NVRTC, upload) and in the
    /// level loop.
    input_s: f64,
    pub(crate) setup_s: f64,
    search_s: f64,
    /// One rank of several (`cluster = "mpi"`): the level loop runs through `pc_core::ranks`.
    cluster: Option<&'a mut crate::cluster::RTransport>,
    rank_levels: Vec<pc_core::ranks::RankLevel>,
    /// Whether levels 0 and 1 ran whole on every rank, and the seconds of their check.
    rank_dense: (bool, f64),
    /// pcalg's sepset list, made by R's thread while the level loop runs on another
    /// (`beside.rs`), where R asked for the list.
    rows: Option<crate::beside::SepsetRows>,
}

impl Run<'_> {
    pub(crate) fn go(&mut self, b: &mut (dyn Backend + Send)) -> CoreResult<(pc_core::SkeletonResult, String)> {
        let t = Instant::now();
        if let Some(tr) = self.cluster.as_deref_mut() {
            let kind = pc_core::ranks::dense_kind(b, self.params.order, tr.rows);
            // once per call (a GPU that fails under "auto" reruns the loop on the CPU, one rank
            // alone: with several, a failure reaches every rank through an exchange and none reruns)
            if !tr.started {
                tr.started = true;
                let moves = !b.whole_levels() || tr.move_whole_levels;
                let start = pc_core::ranks::start_search(tr, None, kind.as_deref(), moves)?;
                (tr.dense_every_rank, tr.edges_move) = (start.dense_every_rank, start.edges_move);
            } else if pc_core::ranks::Transport::size(&*tr) == 1 {
                tr.dense_every_rank = kind.is_some();
            }
            let (fail, perturb, dense, slices, rows, moving, edges_move) = (tr.fail_at_level, tr.perturb_dense, tr.dense_every_rank, tr.slices_per_rank, tr.rows, tr.moving, tr.edges_move);
            let mut r = pc_core::ranks::Ranks::new(b, tr)?;
            if let Some(k) = slices {
                r.slices_per_rank = k;
            }
            r.fail_at_level = fail;
            r.rows = rows;
            r.moving = moving;
            r.edges_move = edges_move;
            r.perturb_dense = perturb;
            r.dense_every_rank = dense;
            r.threads = self.params.threads;
            if kind.is_some() && !dense {
                // R planned host memory for the dense levels, which this rank would have run; the
                // ranks' engines differ, so levels 0 and 1 are planned edge by edge after all: a
                // rank that cannot hold them says so at the first level's exchange, where every
                // rank meets
                r.pending = crate::params::check_planned_levels(self.params.start.n_edges() as u64, self.params.start.p()).err();
            }
            let res = run_skeleton_into(&self.params, &mut r, &mut self.watch, self.pmax);
            self.rank_levels = std::mem::take(&mut r.levels);
            self.rank_dense = (r.dense_ran, r.dense_check_seconds);
            self.search_s = t.elapsed().as_secs_f64();
            return Ok((res?, r.name()));
        }
        let res = match self.rows.as_mut() {
            Some(rows) => crate::beside::search_beside(&self.params, b, &mut self.watch, self.pmax, rows)?,
            None => run_skeleton_into(&self.params, b, &mut self.watch, self.pmax)?,
        };
        self.search_s = t.elapsed().as_secs_f64();
        // after the run: devices that joined it are named
        Ok((res, b.name()))
    }

    fn cpu<T: pc_core::CiTest + Sync>(&mut self, test: &T) -> CoreResult<(pc_core::SkeletonResult, String)> {
        let t = Instant::now();
        let mut b = ParallelCpu::new(test, self.params.threads)?;
        self.setup_s = t.elapsed().as_secs_f64();
        self.extra = List::new(0);
        self.go(&mut b)
    }

    /// [`Run::cpu`] with levels 0 and 1 run whole over the graph (`pc_core::dense::DenseCpu`, the
    /// GPU dense levels' twin) rather than planned edge by edge: the same results with no
    /// per-pair plan (gaussCItest at p = 1643 on 2 cores: levels 0-1 in about half the time).
    fn cpu_dense<T: pc_core::CiTest + Sync>(&mut self, test: &T) -> CoreResult<(pc_core::SkeletonResult, String)> {
        let t = Instant::now();
        let threads = self.params.threads;
        let mut b = pc_core::dense::WithDense { planned: ParallelCpu::new(test, threads)?, dense: pc_core::dense::DenseCpu::new(test, threads)? };
        self.setup_s = t.elapsed().as_secs_f64();
        self.extra = List::new(0);
        let (res, _) = self.go(&mut b)?;
        Ok((res, b.planned.name()))
    }

    /// The level loop on the engine `open` makes (its seconds are the setup's), its figures kept.
    fn cuda<'e>(&mut self, open: impl FnOnce() -> CoreResult<pc_cuda::Engine<'e>> + Send) -> CoreResult<(pc_core::SkeletonResult, String)> {
        self.cuda_kept(open).map(|(out, _)| out)
    }

    /// [`Run::cuda`], the engine handed back (for the triple checks). Where R's sepset rows are
    /// made beside the search, the engine is opened (C uploaded) on the search's thread too.
    fn cuda_kept<'e>(&mut self, open: impl FnOnce() -> CoreResult<pc_cuda::Engine<'e>> + Send) -> CoreResult<(Ran, pc_cuda::Engine<'e>)> {
        let t0 = Instant::now();
        if let (Some(rows), None) = (self.rows.as_mut(), self.cluster.as_ref()) {
            let (params, pmax) = (&self.params, &mut *self.pmax);
            let (res, b, setup_s) = crate::beside::beside(&mut self.watch, rows, |relay| {
                let mut b = open()?;
                let setup_s = t0.elapsed().as_secs_f64();
                pc_core::trace::mark(|| "setup: GPU engine open".into());
                let res = run_skeleton_into(params, &mut b, relay, pmax)?;
                Ok((res, b, setup_s))
            })?;
            // the search's seconds include R's rows (and R's collections) that outlasted it
            (self.setup_s, self.search_s) = (setup_s, t0.elapsed().as_secs_f64() - setup_s);
            self.extra = engine_details(&b.details());
            let name = b.name();
            return Ok(((res, name), b));
        }
        let mut b = open()?;
        self.setup_s = t0.elapsed().as_secs_f64();
        pc_core::trace::mark(|| "setup: GPU engine open".into());
        let out = self.go(&mut b)?;
        self.extra = engine_details(&b.details());
        Ok((out, b))
    }

    /// Times `read` as input.
    fn read<T>(&mut self, read: impl FnOnce() -> CoreResult<T>) -> CoreResult<T> {
        let t0 = Instant::now();
        let out = read();
        self.input_s += t0.elapsed().as_secs_f64();
        out
    }
}

type Ran = (pc_core::SkeletonResult, String);

/// gaussCItest on `devices`: C read in place (one parallel check, then the upload, no copy in
/// Rust), or the data standardised on the host and C computed on the device. `grow`: the devices
/// were chosen by the work, and those after the first join at a large level. With `keep`, C stays
/// on the first device for the triple checks.
fn gauss_cuda(run: &mut Run, data: &List, devices: &[usize], grow: bool, keep: bool) -> CoreResult<(Ran, Option<pc_cuda::DeviceC>)> {
    let (p, order) = (run.params.start.p(), run.params.order);
    let input = run.read(|| gauss_input(data, p))?;
    // the kernels are compiled (or read from the disk cache) while C is scanned and uploaded
    pc_cuda::open::prefetch_gauss(devices[0], order, matches!(input, GaussInput::Data { .. }));
    let (threads, edges) = (run.params.threads, run.params.start.n_edges() as u64);
    let open = |src, n| {
        let b = pc_cuda::open::gauss(devices, src, p, n, order, grow)?;
        if let pc_cuda::Engine::Gauss(g) = &b {
            if !(g.dense_available() && pc_core::dense::DenseLevels::dense_order_ok(g, order)) {
                // R planned host memory for the dense levels; levels 0 and 1 planned edge by edge
                // hold tens of bytes per pair instead (86 GB at p = 55,572): stop here if that
                // cannot fit
                crate::params::check_planned_levels(edges, p)?;
            }
        }
        Ok(b)
    };
    // the host's pass over C: its checks in pcalg's words, and whether it is exactly symmetric
    let host_scan = |c: &[f64]| pc_core::threads::call_pool(threads, "scan")?.install(|| scan_correlation(c, p));
    let (out, engine) = match &input {
        // one GPU checks C itself after the upload; where it finds a bad value, the host's scan
        // names it as before
        GaussInput::C(c, n) if devices.len() == 1 => run.cuda_kept(|| {
            let mut e = open(GaussSource::C { c, symmetric: true, has_nan: false }, *n)?;
            let passed = match &mut e {
                pc_cuda::Engine::Gauss(g) => g.check_c_on_device()?,
                _ => None,
            };
            match passed {
                Some(true) => Ok(e),
                Some(false) => {
                    drop(e);
                    host_scan(c)?;
                    Err(PcError::Internal("the GPU's check of suffStat$C found a bad value the host's did not".into()))
                }
                None => {
                    drop(e);
                    let scan = host_scan(c)?;
                    open(GaussSource::C { c, symmetric: scan.exact, has_nan: scan.has_nan }, *n)
                }
            }
        })?,
        GaussInput::C(c, n) => {
            pc_core::trace::mark(|| "input: C read".into());
            let scan = run.read(|| host_scan(c))?;
            pc_core::trace::mark(|| "input: C scanned".into());
            run.cuda_kept(|| open(GaussSource::C { c, symmetric: scan.exact, has_nan: scan.has_nan }, *n))?
        }
        GaussInput::Data { x, rows, n } => {
            let z = run.read(|| crate::convert::standardized(x, *rows, p, threads))?;
            run.cuda_kept(|| open(GaussSource::Standardized { z: &z, rows: *rows }, *n))?
        }
    };
    // the first device's C serves the triple checks (several devices' others are closed)
    let kept = match engine {
        pc_cuda::Engine::Gauss(g) if keep => Some(g.into_device_c()),
        pc_cuda::Engine::MultiGauss(m, _) if keep => Some(m.into_first().into_device_c()),
        _ => None,
    };
    Ok((out, kept))
}

fn skeleton_impl(test: &str, data: List, args: List, backend: &str, hooks: List) -> CoreResult<Robj> {
    let mut cluster = crate::cluster::RTransport::from_args(&args)?;
    match skeleton_run(test, data, args, backend, hooks, cluster.as_mut()) {
        // a rank that stops before its first level tells the others, which wait for it there
        Err(e) => match cluster {
            Some(mut tr) if !tr.started => Err(pc_core::ranks::start_search(&mut tr, Some(e), None, true).err().unwrap_or_else(|| PcError::Internal("a failed start was not reported".into()))),
            _ => Err(e),
        },
        ok => ok,
    }
}

fn skeleton_run(test: &str, data: List, args: List, backend: &str, hooks: List, cluster: Option<&mut crate::cluster::RTransport>) -> CoreResult<Robj> {
    let t_input = Instant::now();
    let params = skeleton_params(&args)?;
    let (fallback, keep_test) = (crate::convert::Named(&args).logical("fallback")?, crate::convert::Named(&args).logical("keep_test")?);
    let (p, order) = (params.start.p(), params.order);
    pc_core::trace::mark(|| "call: start".into());
    let pmax_r = alloc_pmax(p)?;
    pc_core::trace::mark(|| "call: pMax allocated".into());
    // SAFETY: pmax_r is a fresh p x p double matrix, kept alive (and protected) by this frame
    // until result_to_r takes it; nothing else touches its cells meanwhile.
    let pmax = unsafe { doubles_mut(&pmax_r, p * p) };
    // pcalg's sepset list made beside the search (one rank of several: after it, as before)
    let beside = cluster.is_none() && crate::convert::Named(&args).get("sepset_rows_beside").ok().and_then(|x| x.as_bool()) == Some(true);
    let rows = beside.then(|| crate::beside::SepsetRows::new(p));
    let mut run = Run { params, pmax, watch: RWatch::new(&hooks), extra: List::new(0), input_s: 0.0, setup_s: 0.0, search_s: 0.0, cluster, rank_levels: Vec::new(), rank_dense: (false, 0.0), rows };
    run.input_s = t_input.elapsed().as_secs_f64(); // plus the test's data, below
    if run.cluster.as_deref().is_some_and(|t| t.fail_at_start) {
        return Err(PcError::Internal("a failure injected before the first level for the tests".into()));
    }
    let on_gpu = match backend {
        "cuda" => true,
        "cpu" => false,
        other => return Err(PcError::Internal(format!("unknown backend \"{other}\""))),
    };
    // a GPU that fails under backend = "auto": the run repeats on the other GPUs, or on the CPU
    // (the hooks hear of that: the levels' lines name the CPU); the result carries each error
    // and the GPUs the run went on with, for R's messages (a message from a hook would escape
    // the caller's handlers)
    let mut gpu_failed: Vec<(Robj, Vec<usize>)> = Vec::new();
    let failed = |_: &mut Run, e: &PcError, left: &[usize]| {
        if left.is_empty() {
            crate::watch::call_hook(&hooks, "gpu_failed");
        }
        gpu_failed.push((crate::rerror::from_pc(e), left.to_vec()));
    };
    let devices = if on_gpu { crate::multi::devices_of(&data)? } else { Vec::new() };
    // what the later stages take over (`keep_test`): the host test, or the data on the device
    // (the GPU's gaussCItest has no host test: C is read in place)
    let kept;
    let (res, name) = match test {
        "gauss" => {
            let (mut host, mut device_c) = (None, None);
            let grow = crate::multi::devices_grow(&data)?;
            let out = pc_cuda::open::on_gpus_or_cpu(&mut run, &devices, on_gpu, fallback, |run, devices| {
                let (out, c) = gauss_cuda(run, &data, devices, grow, keep_test)?;
                device_c = c;
                Ok(out)
            }, |run| {
                let threads = run.params.threads;
                let t = host.insert(run.read(|| gauss_test(&data, p, order, threads))?);
                run.cpu_dense(t)
            }, failed)?;
            kept = host.map(KeptTest::Gauss).or(device_c.map(KeptTest::GaussDevice));
            out
        }
        "dis" | "bin" => {
            let kind = if test == "dis" { GSquareKind::Dis } else { GSquareKind::Bin };
            let mut holder = KeptGSquare::new(run.read(|| gsquare_test(&data, p, kind))?);
            // declared after `holder`, so dropped before it
            let mut engine = None;
            // SAFETY: the one engine built on `t` is moved into `holder` or dropped before it
            let t = unsafe { holder.test_for_backend() };
            let out = pc_cuda::open::on_gpus_or_cpu(&mut run, &devices, on_gpu, fallback, |run, devices| {
                let threads = run.params.threads;
                // a failed try's tests are not pcalg's: its n < n.min count starts again
                t.take_small_n_tests();
                let (out, e) = run.cuda_kept(|| pc_cuda::open::gsquare(t, devices, threads))?;
                engine = Some(e);
                Ok(out)
            }, |run| {
                // after a GPU failure pcalg's n < n.min warning counts only the CPU's tests
                t.take_small_n_tests();
                run.cpu(t)
            }, failed)?;
            // pcalg warns for each test it answers p = 1 because n < n.min; R raises one warning
            let (small, n_min) = t.take_small_n_tests();
            if small > 0 {
                run.extra = list!(small_n_tests = small as f64, small_n_min = n_min as f64, n = t.data.n as f64);
            }
            // several devices (a Split) keep only the test: the triple checks upload to the first
            if let (Some(pc_cuda::Engine::GSquare(g)), true) = (engine, keep_test) {
                holder.keep(g);
            }
            kept = Some(KeptTest::GSquare(holder));
            out
        }
        "cmiknn" => {
            let t = run.read(|| crate::cmiknn::cmiknn_test(&data, p))?;
            let out = pc_cuda::open::on_gpus_or_cpu(&mut run, &devices, on_gpu, fallback, |run, devices| {
                let threads = run.params.threads;
                run.cuda(|| pc_cuda::open::cmiknn(&t, devices, threads))
            }, |run| run.cpu(&t), failed)?;
            kept = Some(KeptTest::CmiKnn(t));
            out
        }
        other => return Err(PcError::invalid("indepTest", format!("unknown native test \"{other}\""))),
    };
    if run.watch.interrupted {
        return Err(PcError::Interrupted);
    }
    let phases = list!(input_s = run.input_s, setup_s = run.setup_s, search_s = run.search_s);
    let mut out = result_to_r(res, pmax_r, order, &name, run.extra, phases, run.params.threads)?;
    if let Some(made) = run.rows.take().and_then(crate::beside::SepsetRows::into_list) {
        out = with_element(out, "sepset_made", made);
    }
    pc_core::trace::mark(|| "call: result for R made".into());
    if !gpu_failed.is_empty() {
        let left = gpu_failed.last().map(|(_, d)| d.iter().map(|&o| o as i32).collect::<Vec<_>>()).unwrap_or_default();
        let errs: Vec<Robj> = gpu_failed.into_iter().map(|(e, d)| list!(failure = e, devices = d.iter().map(|&o| o as i32).collect::<Vec<_>>()).into_robj()).collect();
        out = with_element(out, "gpu_failed", List::from_values(errs).into());
        out = with_element(out, "devices_left", if left.is_empty() { Robj::from(()) } else { left.into() });
    }
    if let Some(tr) = run.cluster.as_deref() {
        out = with_element(out, "ranks", crate::cluster::ranks_to_r(tr, &run.rank_levels, run.rank_dense));
    }
    if let (Some(t), true) = (kept, keep_test) {
        out = with_element(out, "test_handle", ExternalPtr::new(Some(t)).into());
    }
    Ok(out)
}

/// The list `l` with one more element.
fn with_element(l: Robj, name: &str, value: Robj) -> Robj {
    let Ok(l) = List::try_from(l.clone()) else { return l };
    let mut names: Vec<String> = l.names().map(|n| n.map(str::to_string).collect()).unwrap_or_default();
    let mut vals: Vec<Robj> = l.values().collect();
    names.push(name.into());
    vals.push(value);
    List::from_names_and_values(names, vals).map(Robj::from).unwrap_or_else(|_| l.into())
}

/// An engine's figures as R's list (`upload_s`: C, the data or the ranks; `setup_s` and
/// `results_s`: the dense levels' graph and pMax; `host_s`: CMI-kNN's permutations and the
/// host's work between launches), then what several devices add.
fn engine_details(d: &pc_cuda::open::Details) -> List {
    let tm = &d.timings;
    let mut l: Vec<(&'static str, Robj)> = vec![
        ("nvrtc_compile_s", tm.compile_s.into()),
        ("nvrtc_cached", tm.compile_cached.into()),
        ("nvrtc_target", tm.target.clone().into()),
        ("upload_s", tm.upload_s.into()),
        ("setup_s", tm.setup_s.into()),
        ("results_s", tm.results_s.into()),
        ("kernel_s", tm.kernel_s.into()),
        ("transfer_s", tm.transfer_s.into()),
        ("host_s", tm.host_s.into()),
        ("launches", (tm.launches as f64).into()),
        ("gpu_tests", (tm.gpu_tests as f64).into()),
        ("pinv_fallbacks", (tm.fallbacks as f64).into()),
    ];
    if let Some(s) = &d.several {
        l.push(("devices", s.devices.iter().map(|&d| d as i32).collect::<Vec<_>>().into_robj()));
        l.push(("merge_s", s.merge_s.into()));
        if let Some((level, secs)) = s.joined {
            l.push(("devices_joined_level", (level as i32).into()));
            l.push(("devices_join_s", secs.into()));
        }
        if let Some((split, alone)) = s.split {
            l.push(("levels_split", (split as i32).into()));
            l.push(("levels_one_device", (alone as i32).into()));
        }
    }
    let (names, vals): (Vec<&str>, Vec<Robj>) = l.into_iter().unzip();
    List::from_names_and_values(names, vals).unwrap_or_default()
}

/// A native-test skeleton: `test` is "gauss", "dis", "bin" or "cmiknn", `backend` "cpu" or "cuda"
/// as `gpupc_choose_engine` chose (the GPUs in `data$devices`), `args` R's `skeleton_args()` list
/// (converted in `params.rs`; its `fallback`: a GPU failure reruns on the CPU, and the result's
/// `gpu_failed` holds the error).
#[extendr]
fn gpupc_skeleton(test: &str, data: List, args: List, backend: &str, hooks: List) -> Robj {
    match skeleton_impl(test, data, args, backend, hooks) {
        Ok(r) => r,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

/// The `sepset` list of a result whose handle `gpupc_skeleton` returned (once: the parts are
/// freed as the list is made): pcalg's p lists of p, or with `compact` p compact rows
/// (`sepset_rows.rs`). With an `object` (the `pcAlgo`), that object with the list as its
/// `sepset` slot instead (see [`with_sepset_slot`]). `made`: NULL, or the list made beside the
/// search (the skeleton's `sepset_made`), which the list is then written into.
#[extendr]
fn gpupc_sepsets(handle: Robj, compact: bool, object: Robj, made: Robj) -> Robj {
    let made = (|| -> CoreResult<Robj> {
        let mut h: ExternalPtr<Option<crate::convert::SepParts>> =
            handle.try_into().map_err(|_| PcError::Internal("not a sepset handle".into()))?;
        let parts = h.take().ok_or_else(|| PcError::Internal("the sepsets were taken already".into()))?;
        let made = (!made.is_null()).then_some(&made);
        let list = if compact { crate::sepset_rows::sepsets_to_rows(&parts)? } else { crate::convert::sepsets_to_r(&parts, made)? };
        drop(parts);
        if object.is_null() {
            Ok(list)
        } else {
            with_sepset_slot(&object, list)
        }
    })();
    made.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

/// The S4 `object` with `list`, the sepset list `gpupc_orient` made beside the orientation
/// (its `sepset_list`: nothing in it refers to any object), as its `sepset` slot (see
/// [`with_sepset_slot`]).
#[extendr]
fn gpupc_with_sepsets(object: Robj, list: Robj) -> Robj {
    let made = || -> CoreResult<Robj> {
        if list.rtype() != Rtype::List {
            return Err(PcError::Internal("the sepsets are not a list".into()));
        }
        with_sepset_slot(&object, list)
    };
    made().unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

/// A shallow copy of the S4 `object` with `list` as its `sepset` slot. R's `@<-` (and
/// `R_do_slot_assign`) checks a value that anything references for a cycle back to the object by
/// walking all of it: the p^2 cells of pcalg's list, 8-10 ms at p = 1643, about as long as making
/// the list. The copy's attribute cells are its own (a shallow duplicate copies the pairlist, not
/// the values), and the list is new and holds nothing of the object, so its cell takes the list
/// directly.
fn with_sepset_slot(object: &Robj, list: Robj) -> CoreResult<Robj> {
    use extendr_ffi::{R_NilValue, Rf_install, CDR, SEXP, TAG};
    // R's own functions on its SEXP pointers, as extendr-ffi declares its others
    #[allow(improper_ctypes)]
    extern "C" {
        fn Rf_shallow_duplicate(x: SEXP) -> SEXP;
        fn ATTRIB(x: SEXP) -> SEXP;
        fn SETCAR(x: SEXP, y: SEXP) -> SEXP;
    }
    if !object.is_s4() {
        return Err(PcError::Internal("the sepsets' object is not an S4 object".into()));
    }
    // SAFETY: `object` and `list` are protected by their Robj's for this call; the copy is
    // protected (by `kept`) before anything else allocates; all on R's thread, and an R error in
    // the duplicate is caught, not a jump out of Rust. SETCAR keeps R's write barrier.
    let (o, l) = unsafe { (object.get() as usize, list.get() as usize) };
    let copy = extendr_api::catch_r_error(move || unsafe { Rf_shallow_duplicate(o as SEXP) }).map_err(|_| slot_error())?;
    let kept = unsafe { Robj::from_sexp(copy) };
    unsafe {
        let sym = Rf_install(c"sepset".as_ptr());
        let mut a = ATTRIB(copy);
        while a != R_NilValue {
            if TAG(a) == sym {
                SETCAR(a, l as SEXP);
                return Ok(kept);
            }
            a = CDR(a);
        }
    }
    Err(PcError::Internal("the sepsets' object has no sepset slot".into()))
}

fn slot_error() -> PcError {
    PcError::Internal("setting the sepset slot failed".into())
}

/// The CUDA devices, or why none is usable.
#[extendr]
fn gpupc_gpu_info() -> Robj {
    match pc_cuda::probe() {
        Ok(d) => list!(
            usable = true,
            name = d.name,
            memory_bytes = d.total_memory as f64,
            free_bytes = d.free_memory as f64,
            compute_capability = format!("{}.{}", d.compute_capability.0, d.compute_capability.1),
            multiprocessors = d.multiprocessors,
            driver_cuda_version = format!("{}.{}", d.driver_version.0, d.driver_version.1),
            nvrtc_version = format!("{}.{}", d.nvrtc_version.0, d.nvrtc_version.1),
            reason = "",
            devices = crate::multi::devices_table()
        )
        .into_robj(),
        Err(reason) => list!(usable = false, reason = reason).into_robj(),
    }
}

/// The cores this process may use (asking rayon would start its global pool, which a fork breaks).
#[extendr]
fn gpupc_cpu_threads() -> i32 {
    pc_core::threads::available_cores() as i32
}

/// An R-function indepTest: the level loop runs as a coroutine of R's loop (see `rdriver.rs`).
#[extendr]
fn gpupc_rfun_start(args: List) -> Robj {
    let res = skeleton_params(&args).and_then(crate::rdriver::start);
    res.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

#[extendr]
fn gpupc_rfun_step(handle: Robj, answer: Robj) -> Robj {
    crate::rdriver::step(handle, answer).unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

#[extendr]
fn gpupc_rfun_stop(handle: Robj) -> Robj {
    crate::rdriver::stop(handle).map(|_| Robj::from(())).unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

/// Peak host bytes of a run and the bytes available (see `params::memory_plan`).
#[extendr]
fn gpupc_memory_plan(p: f64, test_bytes: f64, start_edges: f64, dense_levels: bool, sepset_rows: bool) -> Robj {
    crate::params::memory_plan(p, test_bytes, start_edges, dense_levels, sepset_rows)
}

/// The GPU backend's start for `test` on `p` variables and `n` rows against `free` device bytes
/// (pc-cuda's `memplan`, no device needed): list(need, dense) or the error list R raises.
#[extendr]
fn gpupc_device_plan(test: &str, p: f64, n: f64, free: f64) -> Robj {
    match crate::params::device_plan(test, p, n, free) {
        Ok(l) => l,
        Err(e) => crate::rerror::from_pc(&e),
    }
}

extendr_module! {
    mod entry;
    fn gpupc_skeleton;
    fn gpupc_sepsets;
    fn gpupc_with_sepsets;
    fn gpupc_gpu_info;
    fn gpupc_cpu_threads;
    fn gpupc_rfun_start;
    fn gpupc_rfun_step;
    fn gpupc_rfun_stop;
    fn gpupc_memory_plan;
    fn gpupc_device_plan;
}
