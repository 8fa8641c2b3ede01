//! stable.fast's planned levels on the GPU, where the dense levels (`dense.rs`: every level on
//! one GPU's graph) do not fit or a level declines there. Its side 1 lists j's neighbours that
//! are not adjacent to i first and skips the sets made only of common neighbours, an order the
//! cuPC-S kernels (one set of a row shared by every edge of the row) do not have. Its levels go through
//! rounds of per-edge rank windows (`pc_core::rounds::rank_windows`), each edge's first success
//! taken in canonical order.
//!
//! Levels >= 2 run the rounds keyed (`run_keyed`): a round sends its windows, the device unranks
//! each window's sets from the sides' lists (`gauss_ranked_l*`) and posts each window's smallest
//! success key and largest failing p, and the round brings back three numbers a window. The
//! level's lists go up once: the level's rows (a plain side is row(x) without y) and each
//! common-last side's own list. Levels 0 and 1, which normally run dense (`dense.rs`) and come
//! here only when pMax and the graph do not fit on the device, and a level whose lists do not
//! fit, write each round's tests out instead (`gauss_listed_l*`, `run_rounds`).

use std::sync::atomic::Ordering;
use std::time::Instant;

use cudarc::driver::{result as dres, CudaSlice, DevicePtrMut, LaunchConfig};
use pc_core::backend::Control;
use pc_core::plan::{pack_key, EdgeOutcome, LevelPlan, SideKind};
use pc_core::rounds::rank_windows::{run_keyed, run_rounds, AtOnce, Batch, RoundOpts, Span, WindowKeys};
use pc_core::rounds::row_sets::binomial_table;
use pc_core::PcError;
use rayon::prelude::*;

use crate::gauss::host::{self, BLOCK, NO_KEY};
use crate::gauss::{params, CudaGauss, ListedKernels, PD_MARGIN};
use crate::runtime::gpu::{cuda_err, Clock, Result};
use crate::runtime::memplan;
use crate::runtime::timings::LevelTimings;

/// Tests per round of written-out tests: enough to fill the device several times over (24 bytes
/// of lists and 8 of result per test at |S| = 4).
const ROUND_TESTS: usize = 1 << 22;
/// Tests per keyed round: a test costs no memory there, only a thread.
const RANKED_ROUND_TESTS: usize = 1 << 24;
/// An edge's first keyed window, and how its windows grow (percent). A keyed test costs the
/// device about 0.2 ns (p = 20000, level 2 on one H200: 33.8 million tests in 5.8 ms of
/// kernels), while a round costs the host a pass over the live edges and the device a few
/// launches and copies (that level's 8 rounds took 0.13 s): wider windows that grow faster trade
/// a few wasted tests for fewer rounds.
const RANKED_FIRST_WIDTH: u64 = 32;
const RANKED_GROWTH: u64 = 400;
/// `skip` of a side whose list is its own (no member to pass over).
const NO_SKIP: u32 = u32::MAX;

impl CudaGauss {
    /// One stable.fast level by rounds; `zfac` is the C++ test's factor for the level (finite:
    /// the caller sends a level whose test stops with an error to the CPU).
    pub(crate) fn level_listed(&self, plan: &LevelPlan, zfac: f64, ctl: &Control, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        self.gpu.ctx.bind_to_thread().map_err(cuda_err("binding the GPU context"))?;
        let l = plan.level;
        let variant = host::set_kernel_variant(l.max(1)).ok_or_else(|| PcError::Internal(format!("no listed-test kernel for level {l}")))?;
        let k = &self.f.listed.iter().find(|(m, _)| *m == variant).ok_or_else(|| PcError::Internal(format!("listed-test kernel {variant} not loaded")))?.1;
        let mut clock = Clock::default();
        let t = Instant::now();
        // the call's own pool: rayon's global one has no threads in a forked child
        let pool = pc_core::threads::call_pool(0, "stable.fast rounds")?;
        let lists = (l >= 2).then(|| pool.install(|| SideLists::of(plan))).transpose()?;
        clock.host += t.elapsed().as_secs_f64();
        if let Some(sl) = &lists {
            pc_core::trace::mark(|| format!("stable.fast level {l}: side lists, {} members, in {:.4} s", sl.own.len(), t.elapsed().as_secs_f64()));
        }
        let out = match lists {
            Some(lists) if self.ranked_fits(plan, &lists)? => self.level_ranked(plan, zfac, k, &lists, ctl, &mut clock, lt),
            _ => self.level_written(plan, zfac, k, &pool, ctl, &mut clock, lt),
        };
        lt.kernel_s += clock.kernel;
        lt.transfer_s += clock.transfer;
        lt.launches += clock.launches;
        lt.host_s += clock.host;
        out
    }

    fn ranked_fits(&self, plan: &LevelPlan, lists: &SideLists) -> Result<bool> {
        let table = (lists.max_len + 1) * (plan.level + 1);
        let need = memplan::gauss_ranked_bytes(plan.rows.cols.len() + lists.own.len(), table, max_windows(plan));
        Ok(need.saturating_add(memplan::LEVEL_MARGIN) <= self.gpu.free_bytes()? as u64)
    }

    /// The level's rounds with every test written out on the host.
    #[allow(clippy::too_many_arguments)]
    fn level_written(&self, plan: &LevelPlan, zfac: f64, k: &ListedKernels, pool: &rayon::ThreadPool, ctl: &Control, clk: &mut Clock, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        let l = plan.level;
        let ne = plan.edges.len() as u64;
        let (pu, sym, cpp, li) = (self.p as u64, self.symmetric as i32, 1i32, l as i32);
        let gpu = &self.gpu;
        let mut tests = 0u64;
        // the rounds' tests are written out on every core (a level of millions of edges)
        let out = run_rounds(
            plan,
            ROUND_TESTS,
            Some(pool),
            |b: &Batch| {
                let n = b.len();
                if n == 0 {
                    return Ok(Vec::new());
                }
                gpu.ensure_free(n * (16 + 4 * l), "a round of stable.fast tests")?;
                let xd = gpu.up(clk, &b.x, "the tests")?;
                let yd = gpu.up(clk, &b.y, "the tests")?;
                // |S| = 0 has no members; the kernel still takes a valid pointer
                let sd = if b.s.is_empty() { gpu.alloc::<u32>(1, "the tests")? } else { gpu.up(clk, &b.s, "the tests")? };
                let mut pd = gpu.alloc::<f64>(n, "the p-values")?;
                let nu = n as u64;
                let cfg = LaunchConfig { grid_dim: ((n as u32).div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
                let t = Instant::now();
                let args = params::Listed { C: &self.c, p: pu, tx: &xd, ty: &yd, s: &sd, n_tests: nu, l: li, zfac, pd_margin: PD_MARGIN, symmetric: sym, cpp, p_out: &mut pd };
                // SAFETY: tests 0..n have x, y and their l members in s (rank_windows.rs writes l
                // per test) all < p; l <= the variant's maximum; p_out holds n entries.
                unsafe { args.launch(gpu, &k.listed, cfg, "gauss_listed") }?;
                gpu.finish_launch(clk, t, "gauss_listed")?;
                tests += n as u64;
                gpu.down(clk, &pd, n, "the p-values")
            },
            |decided| {
                ctl.edges_done.store((decided as u64).min(ne), Ordering::Relaxed);
                !ctl.cancelled()
            },
        );
        lt.gpu_tests += tests;
        out
    }

    /// The level's rounds keyed: windows up, each window's keys back.
    #[allow(clippy::too_many_arguments)]
    fn level_ranked(&self, plan: &LevelPlan, zfac: f64, k: &ListedKernels, lists: &SideLists, ctl: &Control, clk: &mut Clock, lt: &mut LevelTimings) -> Result<Vec<EdgeOutcome>> {
        let gpu = &self.gpu;
        let t = Instant::now();
        let table = binomial_table(lists.max_len, plan.level);
        clk.host += t.elapsed().as_secs_f64();
        let mut members = gpu.alloc::<u32>(plan.rows.cols.len() + lists.own.len(), "the level's side lists")?;
        clk.copy(|| {
            if !plan.rows.cols.is_empty() {
                gpu.stream.memcpy_htod(&plan.rows.cols, &mut members.slice_mut(0..plan.rows.cols.len())).map_err(cuda_err("uploading the level's rows"))?;
            }
            if !lists.own.is_empty() {
                let n = plan.rows.cols.len();
                gpu.stream.memcpy_htod(&lists.own, &mut members.slice_mut(n..n + lists.own.len())).map_err(cuda_err("uploading the side lists"))?;
            }
            Ok(())
        })?;
        let binom = gpu.up(clk, &table, "binomial table")?;
        let ne = plan.edges.len();
        let mut eval = Ranked {
            g: self,
            plan,
            k,
            lists,
            members,
            binom,
            dev: RoundBuffers::new(gpu, max_windows(plan))?,
            host: Pieces::default(),
            zfac,
            clock: std::mem::take(clk),
            tests: 0,
            rounds: 0,
            pieces_s: 0.0,
        };
        let opts = RoundOpts { budget: RANKED_ROUND_TESTS, growth: RANKED_GROWTH, pool: None, words: None };
        let out = run_keyed(plan, &opts, RANKED_FIRST_WIDTH, &mut AtOnce::new(|b: &Batch| eval.evaluate(b)), |decided| {
            ctl.edges_done.store((decided as u64).min(ne as u64), Ordering::Relaxed);
            !ctl.cancelled()
        });
        *clk = eval.clock;
        lt.gpu_tests += eval.tests;
        pc_core::trace::mark(|| {
            format!(
                "stable.fast level {}: {} rounds, {} tests in {:.4} s: kernels {:.4} s, copies {:.4} s, host {:.4} s (the rounds' pieces {:.4} s)",
                plan.level, eval.rounds, eval.tests, t.elapsed().as_secs_f64(), clk.kernel, clk.transfer, clk.host, eval.pieces_s
            )
        });
        out
    }
}

/// Where each side's list lies in the level's members (the rows, then each common-last side's
/// own list: its non-common members, then the common ones): per edge and side the list's first
/// member and the position of a member to pass over (y in row(x); `NO_SKIP` for an own list).
struct SideLists {
    own: Vec<u32>,
    at: Vec<[(u64, u32); 2]>,
    /// The longest side list of the level.
    max_len: usize,
}

impl SideLists {
    fn of(plan: &LevelPlan) -> Result<SideLists> {
        let n_rows = plan.rows.cols.len() as u64;
        let mut own_at: Vec<u64> = pc_core::mem::try_vec(plan.edges.len(), "suffStat$C", "the level's side lists")?;
        let mut total = 0u64;
        let mut max_len = 0usize;
        for e in &plan.edges {
            let own = e.sides[1].filter(|s| s.kind == SideKind::CommonLast);
            own_at.push(own.map_or(u64::MAX, |s| {
                let at = total;
                total += s.len as u64;
                at
            }));
            max_len = max_len.max(e.sides.iter().flatten().map(|s| s.len as usize).max().unwrap_or(0));
        }
        let mut own: Vec<u32> = pc_core::mem::try_vec(total as usize, "suffStat$C", "the level's side lists")?;
        own.resize(total as usize, 0);
        // each edge's list in its own slice, filled in parallel
        let mut slots: Vec<(usize, &mut [u32])> = Vec::new();
        let mut rest = &mut own[..];
        for (k, e) in plan.edges.iter().enumerate() {
            if let Some(s) = e.sides[1].filter(|s| s.kind == SideKind::CommonLast) {
                let (slot, tail) = std::mem::take(&mut rest).split_at_mut(s.len as usize);
                slots.push((k, slot));
                rest = tail;
            }
        }
        slots.into_par_iter().for_each_init(Vec::new, |list, (k, slot)| {
            let side = plan.edges[k].sides[1].expect("a common-last side");
            plan.side_list(&side, list);
            slot.copy_from_slice(list);
        });
        let mut at: Vec<[(u64, u32); 2]> = pc_core::mem::try_vec(plan.edges.len(), "suffStat$C", "the level's side lists")?;
        plan.edges
            .par_iter()
            .zip(own_at.par_iter())
            .map(|(e, &own)| {
                let place = |side: u8| match e.sides[side as usize] {
                    Some(s) if s.kind == SideKind::Plain => {
                        let row = plan.rows.row(s.x);
                        let q = row.partition_point(|&a| a < s.y);
                        (plan.rows.offsets[s.x as usize] as u64, if row.get(q) == Some(&s.y) { q as u32 } else { NO_SKIP })
                    }
                    Some(_) => (n_rows + own, NO_SKIP),
                    None => (0, NO_SKIP),
                };
                [place(0), place(1)]
            })
            .collect_into_vec(&mut at);
        Ok(SideLists { own, at, max_len })
    }
}

/// A round's pieces (a window's keys on one side of its edge) as the kernels take them: `w64`
/// holds first (n + 1), key0 and base (n each); `w32` skip, len, x, y and win (n each).
#[derive(Default)]
struct Pieces {
    w64: Vec<u64>,
    w32: Vec<u32>,
}

impl Pieces {
    fn n(&self) -> usize {
        self.w32.len() / 5
    }

    /// The pieces of batch `b`'s windows: one per side a window touches.
    fn of(&mut self, plan: &LevelPlan, lists: &SideLists, b: &Batch) -> Result<()> {
        let crosses = |span: &Span| span.start.side == 0 && plan.edges[span.edge as usize].sides[0].is_some_and(|s| span.start.rank + span.count > s.n_ranks);
        let n = b.spans().len() + b.spans().iter().filter(|s| crosses(s)).count();
        // written in place (the buffers are the level's, so a round touches no fresh page)
        grow(&mut self.w64, 3 * n + 1)?;
        grow(&mut self.w32, 5 * n)?;
        let (first, rest) = self.w64.split_at_mut(n + 1);
        let (key0, base) = rest.split_at_mut(n);
        let (skip, rest) = self.w32.split_at_mut(n);
        let (len, rest) = rest.split_at_mut(n);
        let (xs, rest) = rest.split_at_mut(n);
        let (ys, win) = rest.split_at_mut(n);
        let mut k = 0;
        for (w, span) in b.spans().iter().enumerate() {
            let e = &plan.edges[span.edge as usize];
            let (mut side, mut rank, mut at, mut left) = (span.start.side, span.start.rank, span.first as u64, span.count);
            while left > 0 {
                let s = e.sides[side as usize].expect("a window on an existing side");
                let here = (s.n_ranks - rank).min(left);
                (base[k], skip[k]) = lists.at[span.edge as usize][side as usize];
                (first[k], key0[k], len[k], xs[k], ys[k], win[k]) = (at, pack_key(side, rank), s.len, s.x, s.y, w as u32);
                k += 1;
                at += here;
                left -= here;
                (side, rank) = (1, 0);
            }
        }
        debug_assert_eq!(k, n);
        first[n] = b.len() as u64;
        Ok(())
    }
}

/// `v` resized to `len`, its memory reserved fallibly (a round's pieces grow with its windows).
fn grow<T: Copy + Default>(v: &mut Vec<T>, len: usize) -> Result<()> {
    v.try_reserve(len.saturating_sub(v.len())).map_err(|_| pc_core::mem::out_of_memory("suffStat$C", "a round of stable.fast windows", pc_core::mem::bytes_of::<T>(len)))?;
    v.resize(len, T::default());
    Ok(())
}

/// The most windows a keyed round of `plan` holds: one an edge, each of at least one test, so
/// at most a round's tests.
fn max_windows(plan: &LevelPlan) -> usize {
    plan.edges.len().min(RANKED_ROUND_TESTS).max(1)
}

/// The device side of a level's rounds, allocated once for its largest round: at most two
/// pieces a window.
struct RoundBuffers {
    w64: CudaSlice<u64>,
    w32: CudaSlice<u32>,
    /// Per window its key, its max-fail word and its success's p (bits).
    out: CudaSlice<u64>,
}

impl RoundBuffers {
    fn new(gpu: &crate::runtime::gpu::Gpu, windows: usize) -> Result<RoundBuffers> {
        let np = 2 * windows;
        let what = "a round of stable.fast windows";
        Ok(RoundBuffers { w64: gpu.alloc(3 * np + 1, what)?, w32: gpu.alloc(5 * np, what)?, out: gpu.alloc(3 * windows, what)? })
    }
}

/// Evaluates a level's keyed rounds one at a time: the host's share of a round is choosing its
/// windows and their pieces, small beside the kernel.
struct Ranked<'a> {
    g: &'a CudaGauss,
    plan: &'a LevelPlan,
    k: &'a ListedKernels,
    lists: &'a SideLists,
    members: CudaSlice<u32>,
    binom: CudaSlice<u64>,
    dev: RoundBuffers,
    host: Pieces,
    zfac: f64,
    clock: Clock,
    tests: u64,
    rounds: usize,
    /// Seconds making the rounds' pieces.
    pieces_s: f64,
}

impl Ranked<'_> {
    fn evaluate(&mut self, b: &Batch) -> Result<WindowKeys> {
        let nw = b.spans().len();
        if nw == 0 {
            return Ok(WindowKeys::default());
        }
        let t = Instant::now();
        self.host.of(self.plan, self.lists, b)?;
        self.pieces_s += t.elapsed().as_secs_f64();
        self.clock.host += t.elapsed().as_secs_f64();
        let (gpu, h, d) = (&self.g.gpu, &self.host, &mut self.dev);
        let np = h.n();
        self.clock.copy(|| {
            let up = cuda_err("uploading a round's windows");
            gpu.stream.memcpy_htod(&h.w64, &mut d.w64.slice_mut(0..h.w64.len())).map_err(&up)?;
            gpu.stream.memcpy_htod(&h.w32, &mut d.w32.slice_mut(0..h.w32.len())).map_err(&up)?;
            let init = cuda_err("initialising a round's keys");
            let (ptr, _sync) = d.out.device_ptr_mut(&gpu.stream);
            // SAFETY: ptr addresses `out`'s 3 max_windows >= 3 nw u64: the keys' 0xFF bytes make NO_KEY,
            // the max-fail words' 0 "no failure".
            unsafe { dres::memset_d8_async(ptr, 0xFF, nw * 8, gpu.stream.cu_stream()) }.map_err(&init)?;
            // SAFETY: likewise, the next nw words.
            unsafe { dres::memset_d8_async(ptr + (nw * 8) as u64, 0, nw * 8, gpu.stream.cu_stream()) }.map_err(&init)
        })?;
        let (pu, li, sym, cpp) = (self.g.p as u64, self.plan.level as i32, self.g.symmetric as i32, 1i32);
        let (npu, nwu) = (np as u32, nw as u32);
        let n = b.len() as u64;
        let cfg = LaunchConfig { grid_dim: (n.div_ceil(BLOCK as u64) as u32, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let t = Instant::now();
        let args = params::Ranked {
            C: &self.g.c, p: pu, w64: &d.w64, w32: &d.w32, n_pieces: npu, n_windows: nwu, members: &self.members, binom: &self.binom,
            l: li, zfac: self.zfac, alpha: self.plan.alpha, na_value: self.plan.na_value, pd_margin: PD_MARGIN, symmetric: sym, cpp,
            out: &mut d.out,
        };
        // SAFETY: w64 and w32 hold the np pieces' arrays (first np + 1 entries, its last the
        // round's tests); each piece's ranks lie below C(len, l) of its side (rank_windows.rs keeps
        // a window within its edge's keys), its members at base .. base + len (+ 1 past a skipped
        // y) of `members`, all < p; win < nw, and `out` holds 3 nw words; l <= the variant's
        // maximum.
        unsafe { args.launch(gpu, &self.k.ranked, cfg, "gauss_ranked") }?;
        let cfg = LaunchConfig { grid_dim: (npu.div_ceil(BLOCK), 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        let args = params::RankedPbest {
            C: &self.g.c, p: pu, w64: &d.w64, w32: &d.w32, n_pieces: npu, n_windows: nwu, members: &self.members, binom: &self.binom,
            l: li, zfac: self.zfac, pd_margin: PD_MARGIN, symmetric: sym, cpp, out: &mut d.out,
        };
        // SAFETY: as above; a piece recomputes a test only where its window's key lies within it.
        unsafe { args.launch(gpu, &self.k.ranked_pbest, cfg, "gauss_ranked_pbest") }?;
        self.g.gpu.finish_launch(&mut self.clock, t, "gauss_ranked")?;
        let out = gpu.down(&mut self.clock, &d.out, 3 * nw, "a round's keys")?;
        let best = out[..nw].to_vec();
        let max_fail = out[nw..2 * nw].iter().map(|&w| host::decode_max_fail(w)).collect();
        let p_best = out[2 * nw..].iter().zip(&best).map(|(&bits, &key)| if key == NO_KEY { f64::NAN } else { f64::from_bits(bits) }).collect();
        self.tests += n;
        self.rounds += 1;
        Ok(WindowKeys { best, p_best, max_fail })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pc_core::combinations::unrank;
    use pc_core::graph::Adjacency;
    use pc_core::plan::{plan_level, unpack_key, Order};
    use pc_core::rounds::rank_windows::Windows;

    /// What `gauss_ranked_l*` reads for test t of a round: its piece (by `first`), its key, and
    /// its set unranked from the members at the piece's base, past its skip.
    fn device_test(plan: &LevelPlan, lists: &SideLists, q: &Pieces, t: u64) -> (u32, u32, Vec<u32>, u32) {
        let n = q.n();
        let (first, key0, base) = (&q.w64[..n + 1], &q.w64[n + 1..2 * n + 1], &q.w64[2 * n + 1..]);
        let (skip, len, xs, ys, win) = (&q.w32[..n], &q.w32[n..2 * n], &q.w32[2 * n..3 * n], &q.w32[3 * n..4 * n], &q.w32[4 * n..]);
        let k = first[..n].partition_point(|&f| f <= t) - 1;
        let key = key0[k] + (t - first[k]);
        let members: Vec<u32> = plan.rows.cols.iter().chain(&lists.own).copied().collect();
        let mut pos = vec![0u32; plan.level];
        unrank(len[k], unpack_key(key).1, &mut pos);
        let set = pos.iter().map(|&p| members[(base[k] + p as u64 + (p >= skip[k]) as u64) as usize]).collect();
        (xs[k], ys[k], set, win[k])
    }

    /// The pieces and lists the device unranks from give every test of every round exactly the
    /// x, y and set the host writes out for it, in both orders' sides (a plain side read from the
    /// rows past y, a common-last side from its own list), windows crossing from side 0 to side 1
    /// included, over rounds with every edge failing so that the windows grow and run to the end.
    #[test]
    fn the_devices_inputs_make_the_written_tests() {
        let mut r = 99u64;
        let mut next = |m: u64| {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (r >> 33) % m
        };
        for case in 0..12 {
            let p = 8 + next(25) as usize;
            let mut a = Adjacency::empty(p);
            let dense = 20 + next(60);
            for i in 0..p {
                for j in i + 1..p {
                    if next(100) < dense {
                        a.add_edge(i, j);
                    }
                }
            }
            for (order, level) in [(Order::StableFast, 2), (Order::StableFast, 3), (Order::Stable, 2), (Order::StableFast, 1)] {
                let plan = plan_level(order, level, &a, &Adjacency::empty(p), 0.05, 1.0).unwrap();
                if plan.edges.is_empty() {
                    continue;
                }
                let lists = SideLists::of(&plan).unwrap();
                let mut w = Windows::new(&plan, 1, RANKED_GROWTH);
                let (mut b, mut q, mut rounds) = (Batch::default(), Pieces::default(), 0);
                while !w.is_done(0) {
                    w.next_batch(0, &RoundOpts::new(1 + next(40) as usize), &mut b);
                    q.of(&plan, &lists, &b).unwrap();
                    assert_eq!(q.w64[q.n()], b.len() as u64);
                    for t in 0..b.len() {
                        let (x, y, set, win) = device_test(&plan, &lists, &q, t as u64);
                        let want = (b.x[t], b.y[t], b.s[t * level..(t + 1) * level].to_vec());
                        assert_eq!((x, y, set), want, "case {case} {order:?} level {level} round {rounds} test {t}");
                        let span = b.spans()[win as usize];
                        assert!((span.first..span.first + span.count as usize).contains(&t));
                    }
                    w.absorb(0, &b, &vec![0.0; b.len()]).unwrap();
                    rounds += 1;
                }
                assert!(lists.max_len >= plan.edges.iter().flat_map(|e| e.sides).flatten().map(|s| s.len as usize).max().unwrap());
            }
        }
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use pc_core::graph::Adjacency;
    use pc_core::plan::{plan_level, Order};

    /// Host time of a level's side lists and pieces without a device (cargo test --release --
    /// --ignored --nocapture).
    #[test]
    #[ignore]
    fn host_time_of_lists_and_pieces() {
        let p = 20000;
        let mut a = Adjacency::empty(p);
        let mut r = 12345u64;
        for _ in 0..141_000 {
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let i = (r >> 33) as usize % p;
            r = r.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let j = (i + 1 + (r >> 33) as usize % 300) % p;
            a.add_edge(i.min(j), i.max(j));
        }
        let t = Instant::now();
        let plan = plan_level(Order::StableFast, 2, &a, &Adjacency::empty(p), 0.01, 1.0).unwrap();
        println!("plan: {} edges, {:.4} s", plan.edges.len(), t.elapsed().as_secs_f64());
        let t = Instant::now();
        let lists = SideLists::of(&plan).unwrap();
        println!("side lists: {} members, {:.4} s", lists.own.len(), t.elapsed().as_secs_f64());
        let mut w = pc_core::rounds::rank_windows::Windows::new(&plan, 1, RANKED_GROWTH);
        let mut b = Batch::default();
        let t = Instant::now();
        w.next_batch(0, &RoundOpts::new(RANKED_ROUND_TESTS), &mut b);
        println!("a round's windows, written: {} windows, {} tests, {:.4} s", b.spans().len(), b.len(), t.elapsed().as_secs_f64());
        let mut q = Pieces::default();
        for _ in 0..2 {
            let t = Instant::now();
            q.of(&plan, &lists, &b).unwrap();
            println!("its pieces: {}, {:.4} s", q.n(), t.elapsed().as_secs_f64());
        }
    }
}
