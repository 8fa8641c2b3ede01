//! The one module that turns R values into core inputs and core results into R values.

use std::borrow::Cow;

use extendr_api::prelude::*;
use pc_core::citest::{DiscreteData, GSquareKind, GSquareTest, GaussFlavour, GaussTest};
use pc_core::par::SymScan;
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

/// The elements of a named list that R's own code builds for one call (`skeleton_args()`, the
/// orientation's and the junction-tree query's settings): a missing or mistyped element is an
/// internal error, not the user's (R checked the user's values before building the list).
pub(crate) struct Named<'a>(pub(crate) &'a List);

impl Named<'_> {
    pub(crate) fn get(&self, name: &str) -> CoreResult<Robj> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| PcError::Internal(format!("the call's settings lack `{name}`")))
    }

    fn typed<T>(&self, name: &str, what: &str, f: impl FnOnce(&Robj) -> Option<T>) -> CoreResult<T> {
        f(&self.get(name)?).ok_or_else(|| PcError::Internal(format!("the call's setting `{name}` must be {what}")))
    }

    /// The number of variables, `p`, of at least `min` (the user's argument when it is less).
    pub(crate) fn p_at_least(&self, min: i32) -> CoreResult<usize> {
        let p = self.int("p")?;
        if p < min {
            return Err(PcError::invalid("p", format!("must be at least {min}")));
        }
        Ok(p as usize)
    }

    /// An integer, or a whole number stored as a double (as extendr's `i32` arguments take it).
    pub(crate) fn int(&self, name: &str) -> CoreResult<i32> {
        let whole = |v: f64| (v.fract() == 0.0 && v.abs() <= i32::MAX as f64).then_some(v as i32);
        self.typed(name, "an integer", |x| x.as_integer().or_else(|| x.as_real().and_then(whole)))
    }

    pub(crate) fn real(&self, name: &str) -> CoreResult<f64> {
        self.typed(name, "a number", |x| x.as_real())
    }

    pub(crate) fn logical(&self, name: &str) -> CoreResult<bool> {
        self.typed(name, "TRUE or FALSE", |x| x.as_bool())
    }

    pub(crate) fn string(&self, name: &str) -> CoreResult<String> {
        self.typed(name, "a string", |x| x.as_str().map(str::to_string))
    }
}

fn list_elt(data: &List, name: &str, arg: &'static str) -> CoreResult<Robj> {
    data.iter().find(|(n, _)| *n == name).map(|(_, v)| v).ok_or_else(|| invalid(arg, "is missing"))
}

/// The Gaussian test's input: C as R holds it (no copy when it is a double matrix, the usual
/// case: 3.2 GB at p = 20000) and n; or the data matrix (`suffStat = list(data = X)`), from which
/// the backend computes C itself (`pc_core::corr`).
pub enum GaussInput<'a> {
    C(Cow<'a, [f64]>, f64),
    Data { x: &'a [f64], rows: usize, n: f64 },
}

pub fn gauss_input(data: &List, p: usize) -> CoreResult<GaussInput<'_>> {
    let n = scalar_f64(&list_elt(data, "n", "suffStat$n")?, "suffStat$n")?;
    if let Ok(x_r) = list_elt(data, "data", "suffStat$data") {
        let x = x_r.as_real_slice().ok_or_else(|| invalid("suffStat$data", "must be a double matrix"))?;
        if p == 0 || x.len() % p != 0 {
            return Err(invalid("suffStat$data", format!("must have {p} columns")));
        }
        // SAFETY of the lifetime: `data` (borrowed for the returned lifetime) keeps X alive.
        let x = unsafe { std::slice::from_raw_parts(x.as_ptr(), x.len()) };
        return Ok(GaussInput::Data { x, rows: x.len() / p, n });
    }
    let c_r = list_elt(data, "C", "suffStat$C")?;
    let c: Cow<[f64]> = match c_r.as_real_slice() {
        // SAFETY of the lifetime: `data` (borrowed for the returned lifetime) keeps C alive.
        Some(s) => Cow::Borrowed(unsafe { std::slice::from_raw_parts(s.as_ptr(), s.len()) }),
        None => Cow::Owned(double_vec(&c_r, "suffStat$C")?),
    };
    if c.len() != p * p {
        return Err(invalid("suffStat$C", format!("must be a {p} x {p} matrix")));
    }
    Ok(GaussInput::C(c, n))
}

/// The standardised data of `suffStat$data` (see `pc_core::corr`), on `threads` threads.
pub fn standardized(x: &[f64], rows: usize, p: usize, threads: usize) -> CoreResult<Vec<f64>> {
    let pool = pc_core::threads::call_pool(threads, "standardize")?;
    pc_core::corr::standardize(x, rows, p, "suffStat$data", &pool)
}

/// C must be a symmetric matrix of correlations, checked in one parallel pass (on the caller's
/// pool) that also says whether C is exactly symmetric and holds NaN; infinite entries are
/// refused.
pub fn scan_correlation(c: &[f64], p: usize) -> CoreResult<SymScan> {
    let s = pc_core::par::scan_symmetric(c, p, pc_core::par::C_SYMMETRY_TOL, pc_core::par::C_BOUND);
    if let Some((i, j)) = s.asymmetric {
        let (a, b) = (c[i + j * p], c[j + i * p]);
        return Err(invalid("suffStat$C", format!("must be symmetric: C[{}, {}] = {a} but C[{}, {}] = {b}", i + 1, j + 1, j + 1, i + 1)));
    }
    if let Some(k) = s.out_of_bound {
        if c[k].is_infinite() {
            return Err(invalid("suffStat$C", "entries must be finite (NA is allowed)"));
        }
        return Err(invalid("suffStat$C", format!("must hold correlations in [-1, 1]; C[{}, {}] = {}", k % p + 1, k / p + 1, c[k])));
    }
    Ok(s)
}

pub fn gauss_test(data: &List, p: usize, order: Order, threads: usize) -> CoreResult<GaussTest> {
    let flavour = match order {
        Order::Stable => GaussFlavour::R,
        Order::StableFast => GaussFlavour::Cpp,
    };
    let (c, n) = match gauss_input(data, p)? {
        GaussInput::Data { x, rows, n } => {
            let z = standardized(x, rows, p, threads)?;
            let pool = pc_core::threads::call_pool(threads, "correlation")?;
            (pc_core::corr::correlation(&z, rows, p, "suffStat$data", &pool)?, n)
        }
        GaussInput::C(c, n) => {
            // one parallel pass checks C and says what the test needs to know of it, then a
            // parallel copy (the test owns its C): the serial passes took 84-130 ms at p = 1643
            let pool = pc_core::threads::call_pool(threads, "scan")?;
            let scan = pool.install(|| scan_correlation(&c, p))?;
            let c = match c {
                Cow::Borrowed(s) => pool.install(|| pc_core::mem::try_copied(s, "suffStat$C", "the CPU test's copy of C"))?,
                Cow::Owned(v) => v,
            };
            return GaussTest::new_scanned(c, p, n, flavour, scan.exact, scan.has_nan);
        }
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
    let bytes = codes_to_bytes(codes)?;
    if !bytes.contains(&0) {
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

/// The codes as bytes, checked to lie in 0..=254 (R's NA is i32::MIN): one pass, in blocks whose
/// range is taken first (a loop the compiler vectorises), the offending value looked up only when
/// a block holds one. R no longer checks the codes for NA itself (a pass of its own over MUNIN's
/// 2e7 codes).
pub fn codes_to_bytes(codes: &[i32]) -> CoreResult<Vec<u8>> {
    let mut bytes = pc_core::mem::try_vec::<u8>(codes.len(), "suffStat$dm", "the codes as bytes")?;
    for block in codes.chunks(1 << 12) {
        let (lo, hi) = block.iter().fold((i32::MAX, i32::MIN), |(lo, hi), &v| (lo.min(v), hi.max(v)));
        if lo < 0 || hi > 254 {
            let v = block.iter().copied().find(|v| !(0..=254).contains(v)).unwrap_or(lo);
            return Err(if v == i32::MIN {
                invalid("suffStat$dm", "must not contain NA.")
            } else {
                invalid("suffStat$dm", format!("codes must be whole numbers in 0..254, found {v}"))
            });
        }
        bytes.extend(block.iter().map(|&v| v as u8));
    }
    Ok(bytes)
}

/// What the `sepset` list is made from, kept in Rust until R asks for it (`gpupc_sepsets`): R
/// builds the graph first, so that its allocations do not make R's collector walk the p^2 cells
/// of a list that already exists (0.65 s of graph building at p = 10000 went there).
pub struct SepParts {
    pub sep0: pc_core::BitMatrix,
    pub sepsets: Vec<pc_core::skeleton::Sepset>,
    /// Level 1's one-variable sets of a dense backend, (x, y, k).
    pub sep1: Vec<[u32; 3]>,
    /// Threads that write the level-0 entries.
    pub threads: usize,
}

/// `sepset[[x]][[y]]`: a list of p lists of p entries, NULL or 1-based integer vectors, made in
/// one pass from level 0's bits and the later levels' sets.
///
/// Every entry is a pointer stored straight into its row's cells by `threads` threads (R's
/// SET_VECTOR_ELT, one call per cell on R's thread, was most of the time: level 0 removes nearly
/// every pair with an empty set, 2e8 at p = 20000, and level 1's single-variable sets are tens of
/// thousands of scattered cells). Level 0's entries all point to one `integer(0)`, level 1's to
/// one `k` per variable (so the list adds at most p objects for R's collector to walk in every
/// later collection while the result lives: one collection during a later call took 0.19 s with
/// a vector per cell), every later set to a vector of its own; all are marked not mutable, so R
/// copies before any change (no reference count counts the cells).
///
/// The empty rows and the shared values come from `beside::SepsetRows` (`made`: made beside the
/// search; else made here the same way): the shared values are older than the rows, so a row
/// holding one needs nothing from R's write barrier; the longer sets' vectors are younger, so
/// their cells go through it (`SET_VECTOR_ELT` of what the threads wrote) once the threads are
/// done. No R allocation happens while the threads write.
pub fn sepsets_to_r(res: &SepParts, made: Option<&Robj>) -> CoreResult<Robj> {
    use extendr_ffi::{Rf_allocVector, Rf_xlength, DATAPTR, INTEGER, MARK_NOT_MUTABLE, SET_VECTOR_ELT, SEXP, SEXPTYPE, TYPEOF, VECTOR_ELT};
    use rayon::prelude::*;
    let (p, threads) = (res.sep0.p(), res.threads);
    // a one-variable set's member is its shared vector's index below
    let singles = || res.sep1.iter().map(|e| e[2]).chain(res.sepsets.iter().filter_map(|s| if let [k] = s.set[..] { Some(k) } else { None }));
    if singles().any(|k| k as usize >= p) {
        return Err(PcError::Internal(format!("a sepset holds a variable outside 1..{p}")));
    }
    let made_here;
    let made = match made {
        Some(m) => m,
        None => {
            let mut rows = crate::beside::SepsetRows::new(p);
            while !rows.step()? {}
            made_here = rows.into_list().ok_or_else(|| PcError::Internal("the sepset rows were not all made".into()))?;
            &made_here
        }
    };
    // the list's shape, checked before its cells are written
    let bad = || PcError::Internal("the sepset rows are not a p x p list".into());
    // SAFETY: types and lengths read before any element; all on R's thread
    let (o, shared) = unsafe {
        let m = made.get();
        if TYPEOF(m) != SEXPTYPE::VECSXP || Rf_xlength(m) != 2 {
            return Err(bad());
        }
        let (rows, shared) = (VECTOR_ELT(m, 0), VECTOR_ELT(m, 1));
        if TYPEOF(rows) != SEXPTYPE::VECSXP || Rf_xlength(rows) != p as isize || TYPEOF(shared) != SEXPTYPE::VECSXP || Rf_xlength(shared) != p as isize + 1 {
            return Err(bad());
        }
        if (0..p as isize).any(|x| TYPEOF(VECTOR_ELT(rows, x)) != SEXPTYPE::VECSXP || Rf_xlength(VECTOR_ELT(rows, x)) != p as isize) {
            return Err(bad());
        }
        (rows, shared)
    };
    // the values: `k` of variable k at [k], integer(0) at [p] (both `made`'s), every other set at
    // [p + 1 + its number] (one per longer set: a list R may refuse, an error here like the rows)
    let own_sets = res.sepsets.iter().filter(|s| s.set.len() != 1).count();
    let n_values = (p + 1 + own_sets) as isize;
    let vals = extendr_api::catch_r_error(move || unsafe { Rf_allocVector(SEXPTYPE::VECSXP, n_values) }).map_err(|_| sepset_memory(p))?;
    // SAFETY: a fresh list, protected by `values` from here on (no R allocation in between)
    let values = unsafe { Robj::from_sexp(vals) };
    let shared = shared as usize;
    // SAFETY: every vector allocated here is stored into the protected `values` right after its
    // allocation, before any other R allocation; `shared`'s are protected by `made`; all on R's
    // main thread.
    extendr_api::catch_r_error(move || unsafe {
        let vals = vals as SEXP;
        for k in 0..=p as isize {
            SET_VECTOR_ELT(vals, k, VECTOR_ELT(shared as SEXP, k));
        }
        let mut own = p as isize + 1;
        for s in res.sepsets.iter().filter(|s| s.set.len() != 1) {
            let v = Rf_allocVector(SEXPTYPE::INTSXP, s.set.len() as isize);
            SET_VECTOR_ELT(vals, own, v);
            let dst = std::slice::from_raw_parts_mut(INTEGER(v), s.set.len());
            for (d, &x) in dst.iter_mut().zip(&s.set) {
                *d = x as i32 + 1;
            }
            MARK_NOT_MUTABLE(v);
            own += 1;
        }
        vals
    })
    .map_err(|_| sepset_memory(p))?;
    // each row's entries, (y, value), in the order the sets are listed (a later one for a cell
    // wins, as one call after another would have it)
    let n = res.sep1.len() + res.sepsets.len();
    let pairs = || res.sep1.iter().map(|e| (e[0], e[1])).chain(res.sepsets.iter().map(|s| (s.x, s.y)));
    if pairs().any(|(x, y)| x as usize >= p || y as usize >= p) {
        return Err(PcError::Internal(format!("a sepset of a pair outside 1..{p}")));
    }
    let mut start = pc_core::mem::try_filled(p + 1, 0usize, "labels", "the sepsets' rows")?;
    for (x, _) in pairs() {
        start[x as usize + 1] += 1;
    }
    for x in 0..p {
        start[x + 1] += start[x];
    }
    let mut at = start.clone();
    let mut cells: Vec<(u32, usize)> = pc_core::mem::try_filled(n, (0u32, 0usize), "labels", "the sepsets' rows")?;
    // SAFETY: only the addresses of protected vectors (`values`' elements) are taken.
    let value = |k: isize| unsafe { VECTOR_ELT(vals, k) } as usize;
    let mut own = p as isize + 1;
    let mut put = |x: u32, y: u32, v: usize| {
        cells[at[x as usize]] = (y, v);
        at[x as usize] += 1;
    };
    for &[x, y, k] in &res.sep1 {
        put(x, y, value(k as isize));
    }
    for s in &res.sepsets {
        let v = if let [k] = s.set[..] {
            value(k as isize)
        } else {
            own += 1;
            value(own - 1)
        };
        put(s.x, s.y, v);
    }
    // SAFETY: every row of `o` was checked above; the rows' data pointers stay valid while `o`
    // lives (R does not move objects).
    let rows: Vec<usize> = unsafe { (0..p).map(|x| DATAPTR(VECTOR_ELT(o, x as isize)) as usize).collect() };
    let empty_cell = value(p as isize);
    let pool = pc_core::threads::kept_pool(threads, "host")?;
    pool.install(|| {
        rows.par_iter().enumerate().for_each(|(x, &row)| {
            let row = row as *mut SEXP;
            for (w, &word) in res.sep0.row(x).iter().enumerate() {
                let mut b = word;
                while b != 0 {
                    let y = w * 64 + b.trailing_zeros() as usize;
                    // SAFETY: y < p, the row's length; each row is written by one thread.
                    unsafe { *row.add(y) = empty_cell as SEXP };
                    b &= b - 1;
                }
            }
            for &(y, v) in &cells[start[x]..start[x + 1]] {
                // SAFETY: y < p (a sepset's pair); each row is written by one thread; v is a
                // vector of `values`, alive and protected.
                unsafe { *row.add(y as usize) = v as SEXP };
            }
        })
    });
    // the longer sets' vectors are younger than the rows: those cells again through R's write
    // barrier (the value the threads wrote, which may be a later entry's), so that R's collector
    // knows an older row holds a younger vector
    for s in res.sepsets.iter().filter(|s| s.set.len() != 1) {
        // SAFETY: s.x, s.y < p (checked above); no R allocation since the threads wrote
        unsafe {
            let row = VECTOR_ELT(o, s.x as isize);
            SET_VECTOR_ELT(row, s.y as isize, VECTOR_ELT(row, s.y as isize));
        }
    }
    drop(values);
    // SAFETY: `o` is the rows' list, held by `made`, alive here
    Ok(unsafe { Robj::from_sexp(o) })
}

pub(crate) fn sepset_memory(p: usize) -> PcError {
    invalid("p", format!("the sepset list (p x p entries, {:.1} GB of pointers) could not be allocated by R", (p * p * 8) as f64 / 1e9))
}

/// A p x p double matrix for pMax, which the level loop writes in place (no second p x p copy);
/// its cells are Rust's, outside R's heap ([`crate::owned_doubles`] says why). An allocation
/// refused is an error, not a jump out of Rust.
pub fn alloc_pmax(p: usize) -> CoreResult<Robj> {
    crate::owned_doubles::unwritten_matrix(p, p, "pMax (p x p doubles)", "p")
}

/// pMax of a result that kept its own vector (`run_skeleton`), as R's matrix (the vector moves).
pub fn pmax_to_r(res: &mut SkeletonResult) -> CoreResult<Robj> {
    let p = res.graph.p();
    crate::owned_doubles::matrix(std::mem::take(&mut res.pmax), p, p, "p")
}

/// The cells of a double matrix made by [`alloc_pmax`].
///
/// # Safety
/// `m` must be a REALSXP of `len` cells that outlives the slice and is not touched otherwise
/// meanwhile.
pub unsafe fn doubles_mut<'a>(m: &Robj, len: usize) -> &'a mut [f64] {
    std::slice::from_raw_parts_mut(extendr_ffi::REAL(m.get()), len)
}

/// `phases`: seconds of the call's parts (`gpupc_last_run()$phases`).
/// `pmax`: the matrix the level loop wrote ([`alloc_pmax`]).
/// The sepsets go into `sepset_handle` (an external pointer to [`SepParts`]), made into R's list
/// by `gpupc_sepsets`; `threads` will write its level-0 entries.
pub fn result_to_r(res: SkeletonResult, pmax: Robj, order: Order, backend: &str, extra: List, phases: List, threads: usize) -> CoreResult<Robj> {
    // the edges {i, j}, i < j, 1-based, one row each: R builds the graphNEL from these (a dense
    // p x p G would be 400 MB at p = 10000, and R's which() over it took seconds)
    let e = res.graph.edges();
    let edges = RMatrix::<i32>::new_matrix(e.len(), 2, |r, c| if c == 0 { e[r].0 as i32 + 1 } else { e[r].1 as i32 + 1 });
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
    let handle = ExternalPtr::new(Some(SepParts { sep0: res.sep0, sepsets: res.sepsets, sep1: res.sep1, threads }));
    let out = List::from_names_and_values(
        ["edges", "sepset_handle", "pMax", "n.edgetests", "max.ord", "backend", "levels", "extra", "phases"],
        [
            edges.into_robj(),
            handle.into(),
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
