//! Rounds of per-edge rank windows: how a backend that evaluates a flat list of tests at once
//! (the discrete GPU kernel: one block per test) still reports every edge's *first* success in
//! canonical order.
//!
//! Each round takes, for each undecided edge, the next `width` keys of its canonical sequence
//! (side 0's ranks, then side 1's), with their conditioning sets written out; the backend returns
//! one p-value per test; [`Windows::absorb`] then walks each edge's window in key order exactly
//! as [`crate::cpu::eval_edge`] walks the sequence, so the outcome (first success, its raw p,
//! the largest mapped p of the failures before it) is the CPU's. An edge's window doubles from
//! round to round (bounded by the round's budget), so at most about half of the tests run past
//! a success are wasted, and no key below a success is ever skipped.
//!
//! The edges are dealt into two groups with windows of their own, and [`run_pipelined`] alternates
//! between them: while the GPU evaluates one group's round, the host takes the other group's
//! p-values and writes its next round. An edge's outcome depends only on its own tests, so the
//! grouping changes when a test runs, never which tests decide an edge. With several devices,
//! each device's loop ([`run_fed`]) starts with no edges and takes them from one
//! [`EdgeFeed`] before each round it writes, for the same reason.

use std::ops::Range;

use crate::combinations::{next_subset, unrank};
use crate::plan::{pack_key, unpack_key, EdgeOutcome, LevelPlan, SideKind};
use crate::rows::NO_KEY;
use crate::rounds::feed::{EdgeFeed, Handed};
use crate::PcError;
use rayon::prelude::*;

/// The first window of an edge at levels >= 1 (level 0 has one or two tests per edge).
const FIRST_WIDTH: u64 = 4;
/// The cursor side of an edge handed over to another loop (2: decided here).
const GIVEN: u8 = 3;
const MAX_WIDTH: u64 = 1 << 16;
/// How much an edge's window grows from round to round, in percent (see [`RoundOpts::growth`]).
/// On the H100 (`pcbench discrete --codes --growth`), MUNIN's level 1 ran 15.4, 13.9
/// and 12.9 million tests (11.6 million needed) with 200, 150 and 125, and the whole run took
/// 0.66-0.74, 0.63-0.71 and 0.58-0.62 s; LINK 0.15-0.17 s with each.
pub const DEFAULT_GROWTH: u64 = 125;
/// The windows' growth of [`run_rounds`], whose tests (CMI-kNN's) are few and costly per round.
pub const ROUNDS_GROWTH: u64 = 200;
/// Windows a worker thread writes at a time: most are a few tests, but each first rebuilds its
/// side's candidate list (a scan of a row of hundreds), which is what made writing a round slow.
const SPANS_PER_TASK: usize = 64;

/// The tests of one round: test t is x[t] _||_ y[t] | s[t * level .. (t + 1) * level], written
/// out unless the round's evaluator unranks them itself ([`run_keyed`]: then x, y and s stay
/// empty and the spans say which keys the round holds).
#[derive(Default, Debug)]
pub struct Batch {
    pub x: Vec<u32>,
    pub y: Vec<u32>,
    pub s: Vec<u32>,
    /// The largest `RoundOpts::words` of the batch's tests (0 without a `words`).
    pub max_words: u64,
    spans: Vec<Span>,
    /// The round's tests when they are not written out (0 when they are).
    unwritten: usize,
}

impl Batch {
    pub fn len(&self) -> usize {
        self.x.len() + self.unwritten
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The batch's windows, one per edge, in test order: window w holds tests
    /// `first .. first + count`, the keys of its edge's sequence from `start` on.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    fn clear(&mut self) {
        self.x.clear();
        self.y.clear();
        self.s.clear();
        self.spans.clear();
        self.max_words = 0;
        self.unwritten = 0;
    }
}

/// How rounds are made.
#[derive(Clone, Copy)]
pub struct RoundOpts<'p> {
    /// Tests per round (about; a round always holds at least one window).
    pub budget: usize,
    /// An edge's next window is this many percent of its last (at least one test more), up to
    /// MAX_WIDTH. Smaller wastes fewer tests past a success and needs more rounds.
    pub growth: u64,
    /// Writes out the rounds' tests on its threads (None: on the level's own thread).
    pub pool: Option<&'p rayon::ThreadPool>,
    /// A size per test (x, y, S) whose largest value per batch goes into `Batch::max_words`,
    /// computed while the tests are written (the G^2 kernel's table words).
    pub words: Option<&'p (dyn Fn(u32, u32, &[u32]) -> u64 + Sync)>,
}

impl RoundOpts<'_> {
    pub fn new(budget: usize) -> Self {
        RoundOpts { budget, growth: DEFAULT_GROWTH, pool: None, words: None }
    }
}

/// Evaluates rounds in two steps, so that the host can work while the device computes. `R` is
/// what a round gives back: p-values (the default), or each window's keys ([`WindowKeys`]).
pub trait RoundEval<R: RoundResult = Vec<f64>> {
    /// Starts evaluating `b` (uploads and launches; need not wait).
    fn launch(&mut self, b: &Batch) -> Result<(), PcError>;
    /// Waits for the oldest batch launched and not yet finished (`b`) and puts its results into
    /// `p`: one p-value per test, or one entry per window.
    fn finish(&mut self, b: &Batch, p: &mut R) -> Result<(), PcError>;
    /// How many launched batches it holds at once: with 2, [`run_pipelined`] launches a round
    /// before it waits for the previous one, so the device never waits for the host between them.
    fn in_flight(&self) -> usize {
        1
    }
}

/// The tests of one edge in a batch: `count` keys from `start` on, at positions `first..` (a
/// window may run from the end of side 0 into side 1).
#[derive(Clone, Copy, Debug)]
pub struct Span {
    /// The edge's index in the plan.
    pub edge: u32,
    pub first: usize,
    pub count: u64,
    pub start: Cursor,
}

/// A key of an edge's sequence.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub side: u8,
    pub rank: u64,
}

/// What an evaluator that unranks a round's tests itself reports ([`run_keyed`]), one entry per
/// window of the batch ([`Batch::spans`]): the smallest key of a success (`pack_key`, `NO_KEY`
/// when none), that test's raw p-value, and the largest NA-mapped p-value of the failures it
/// ran (-Inf when none; failures after the success may be folded in: they are below alpha, so
/// the level's pMax is the same).
#[derive(Default, Debug, Clone)]
pub struct WindowKeys {
    pub best: Vec<u64>,
    pub p_best: Vec<f64>,
    pub max_fail: Vec<f64>,
}

/// What a round's evaluator hands back, and how the windows take it.
pub trait RoundResult: Default {
    /// Whether the round's tests are written out for the evaluator (x, y, s).
    const WRITTEN: bool;
    fn absorb_into(&self, w: &mut Windows, g: usize, b: &Batch) -> Result<(), PcError>;
}

/// One p-value per test, in batch order.
impl RoundResult for Vec<f64> {
    const WRITTEN: bool = true;
    fn absorb_into(&self, w: &mut Windows, g: usize, b: &Batch) -> Result<(), PcError> {
        w.absorb(g, b, self)
    }
}

impl RoundResult for WindowKeys {
    const WRITTEN: bool = false;
    fn absorb_into(&self, w: &mut Windows, g: usize, b: &Batch) -> Result<(), PcError> {
        w.absorb_keys(g, b, self)
    }
}

pub struct Windows<'a> {
    plan: &'a LevelPlan,
    cursor: Vec<Cursor>,
    width: Vec<u64>,
    /// Undecided edges of each group, in plan order.
    live: Vec<Vec<u32>>,
    /// Where each group's next round starts in its `live` (rounds go round, so every edge gets
    /// its turn).
    next: Vec<usize>,
    /// The next `live` of a group being rebuilt (kept, so rounds allocate nothing new).
    spare: Vec<u32>,
    out: Vec<EdgeOutcome>,
    growth: u64,
    /// The edges taken from a feed, in the order taken (None: every edge of the plan is here).
    taken: Option<Vec<u32>>,
    /// Edges handed over to another device's loop (their outcomes are its to report).
    given: usize,
}

impl<'a> Windows<'a> {
    /// Windows over all edges of the plan, dealt into `groups` groups (edge k in group
    /// k % groups) whose rounds are made separately.
    pub fn new(plan: &'a LevelPlan, groups: usize, growth: u64) -> Self {
        let ne = plan.edges.len();
        let groups = groups.max(1);
        let first_side = |k: usize| if plan.edges[k].sides[0].is_some() { 0 } else { 1 };
        Windows {
            plan,
            cursor: (0..ne).map(|k| Cursor { side: first_side(k), rank: 0 }).collect(),
            width: vec![FIRST_WIDTH; ne],
            live: (0..groups).map(|g| (g as u32..ne as u32).step_by(groups).collect()).collect(),
            next: vec![0; groups],
            spare: Vec::new(),
            out: vec![EdgeOutcome::NONE; ne],
            growth: growth.max(100),
            taken: None,
            given: 0,
        }
    }

    /// Windows with no edge yet: [`Windows::admit`] adds the edges taken from a feed.
    pub fn fed(plan: &'a LevelPlan, groups: usize, growth: u64) -> Self {
        let mut w = Windows::new(plan, groups, growth);
        w.live.iter_mut().for_each(Vec::clear);
        w.taken = Some(Vec::new());
        w
    }

    /// Adds `edges` (fresh ones, taken from a feed) to group `g`'s live edges.
    pub fn admit(&mut self, g: usize, edges: Range<u32>) {
        self.live[g].extend(edges.clone());
        if let Some(t) = &mut self.taken {
            t.extend(edges);
        }
    }

    /// Undecided edges of group `g`.
    pub fn live(&self, g: usize) -> usize {
        self.live[g].len()
    }

    pub fn groups(&self) -> usize {
        self.live.len()
    }

    /// Whether group `g` has no undecided edge left.
    pub fn is_done(&self, g: usize) -> bool {
        self.live[g].is_empty()
    }

    /// Edges decided so far.
    pub fn decided(&self) -> usize {
        self.taken.as_ref().map_or(self.out.len(), Vec::len) - self.given - self.live_total()
    }

    /// Undecided edges of every group.
    pub fn live_total(&self) -> usize {
        self.live.iter().map(Vec::len).sum()
    }

    /// Takes the last `n` undecided edges of group `g` out of these windows, with where each
    /// stands, for another loop to go on with.
    pub fn give(&mut self, g: usize, n: usize) -> Vec<Handed> {
        let keep = self.live[g].len().saturating_sub(n);
        let gone: Vec<u32> = self.live[g].split_off(keep);
        if self.next[g] >= keep {
            self.next[g] = 0;
        }
        self.given += gone.len();
        gone.into_iter()
            .map(|e| {
                let k = e as usize;
                let h = Handed { edge: e, cursor: self.cursor[k], width: self.width[k], out: self.out[k] };
                self.cursor[k] = Cursor { side: GIVEN, rank: 0 };
                h
            })
            .collect()
    }

    /// Adds edges another loop handed over to group `g`, each going on where it stood.
    pub fn admit_handed(&mut self, g: usize, edges: &[Handed]) {
        for h in edges {
            let k = h.edge as usize;
            if self.cursor[k].side == GIVEN {
                // handed back: listed as taken already
                self.given -= 1;
            } else if let Some(t) = &mut self.taken {
                t.push(h.edge);
            }
            (self.cursor[k], self.width[k], self.out[k]) = (h.cursor, h.width, h.out);
            self.live[g].push(h.edge);
        }
    }

    /// Keys left in edge `e`'s sequence from `c` on.
    fn remaining(&self, e: usize, c: Cursor) -> u64 {
        let sides = &self.plan.edges[e].sides;
        let here = sides[c.side as usize].map_or(0, |s| s.n_ranks - c.rank);
        let later = if c.side == 0 { sides[1].map_or(0, |s| s.n_ranks) } else { 0 };
        here.saturating_add(later)
    }

    /// Fills `batch` with the next round's tests, about `budget` of them (at least one edge's
    /// window, so every round makes progress). The windows are chosen here, in order; their tests
    /// are written out on `pool`'s threads when one is given (each window its own part of the
    /// batch, so the result is the same either way).
    pub fn next_batch(&mut self, g: usize, opts: &RoundOpts, batch: &mut Batch) {
        self.next_round(g, opts, batch, true)
    }

    /// [`Windows::next_batch`] without writing the tests out (`write` false): the spans alone.
    fn next_round(&mut self, g: usize, opts: &RoundOpts, batch: &mut Batch, write: bool) {
        let budget = opts.budget.max(1);
        batch.clear();
        let l = self.plan.level;
        let live = &self.live[g];
        let nl = live.len();
        let mut total = 0usize;
        let from = self.next[g];
        let mut next_at = 0; // unless the round ends before the last live edge
        for step in 0..nl {
            let e = live[(from + step) % nl] as usize;
            let left = budget.saturating_sub(total) as u64;
            if left == 0 {
                next_at = (from + step) % nl;
                break;
            }
            let want = if l == 0 { 2 } else { self.width[e] };
            let count = want.min(self.remaining(e, self.cursor[e])).min(if total == 0 { u64::MAX } else { left });
            if count == 0 {
                next_at = (from + step) % nl;
                break;
            }
            batch.spans.push(Span { edge: e as u32, first: total, count, start: self.cursor[e] });
            total += count as usize;
        }
        self.next[g] = next_at;
        if !write {
            batch.unwritten = total;
            return;
        }
        batch.x.resize(total, 0);
        batch.y.resize(total, 0);
        batch.s.resize(total * l, 0);
        // each task's own slices of the batch: SPANS_PER_TASK windows, in order
        let mut parts = Vec::with_capacity(batch.spans.len().div_ceil(SPANS_PER_TASK));
        let (mut xs, mut ys, mut ss) = (&mut batch.x[..], &mut batch.y[..], &mut batch.s[..]);
        for spans in batch.spans.chunks(SPANS_PER_TASK) {
            let k = spans.iter().map(|s| s.count as usize).sum::<usize>();
            let (x, xr) = std::mem::take(&mut xs).split_at_mut(k);
            let (y, yr) = std::mem::take(&mut ys).split_at_mut(k);
            let (s, sr) = std::mem::take(&mut ss).split_at_mut(k * l);
            (xs, ys, ss) = (xr, yr, sr);
            parts.push((spans, x, y, s));
        }
        let plan = self.plan;
        let words = opts.words;
        let write = |(list, pos): &mut (Vec<u32>, Vec<u32>), (spans, x, y, s): (&[Span], &mut [u32], &mut [u32], &mut [u32])| {
            let mut at = 0;
            for span in spans {
                let k = span.count as usize;
                let r = at..at + k;
                write_tests(plan, span, &mut x[r.clone()], &mut y[r.clone()], &mut s[r.start * l..r.end * l], list, pos);
                at += k;
            }
            words.map_or(0, |f| (0..x.len()).map(|t| f(x[t], y[t], &s[t * l..(t + 1) * l])).max().unwrap_or(0))
        };
        batch.max_words = match opts.pool {
            Some(pool) if parts.len() > 1 => {
                pool.install(|| parts.into_par_iter().map_init(|| (Vec::new(), Vec::new()), write).max().unwrap_or(0))
            }
            _ => {
                let mut scratch = (Vec::new(), Vec::new());
                parts.into_iter().map(|part| write(&mut scratch, part)).max().unwrap_or(0)
            }
        };
    }

    /// Takes the p-values of `batch` (one per test, in batch order).
    pub fn absorb(&mut self, g: usize, batch: &Batch, p: &[f64]) -> Result<(), PcError> {
        if p.len() != batch.len() {
            return Err(PcError::Internal(format!("{} p-values for {} tests", p.len(), batch.len())));
        }
        let (alpha, na) = (self.plan.alpha, self.plan.na_value);
        let mut decided = false;
        for span in &batch.spans {
            let e = span.edge as usize;
            let mut c = span.start;
            let mut next = Some(c);
            let mut done = false;
            for t in 0..span.count as usize {
                c = next.ok_or_else(|| PcError::Internal("a window ran past its edge's tests".into()))?;
                if self.out[e].record(c.side, c.rank, p[span.first + t], alpha, na) {
                    done = true;
                    break;
                }
                next = self.skip(e, c, 1);
            }
            decided |= self.move_on(e, if done { None } else { next });
        }
        if decided {
            self.prune(g);
        }
        Ok(())
    }

    /// Takes each window's keys ([`WindowKeys`]), as [`Windows::absorb`] takes its p-values.
    pub fn absorb_keys(&mut self, g: usize, batch: &Batch, k: &WindowKeys) -> Result<(), PcError> {
        let n = batch.spans.len();
        if k.best.len() != n || k.p_best.len() != n || k.max_fail.len() != n {
            return Err(PcError::Internal(format!("keys of {}/{}/{} windows for {n}", k.best.len(), k.p_best.len(), k.max_fail.len())));
        }
        let mut decided = false;
        for (w, span) in batch.spans.iter().enumerate() {
            let e = span.edge as usize;
            self.out[e].max_fail = self.out[e].max_fail.max(k.max_fail[w]);
            let next = if k.best[w] == NO_KEY {
                self.skip(e, span.start, span.count)
            } else {
                let last = self.skip(e, span.start, span.count.saturating_sub(1));
                let inside = span.count > 0
                    && k.best[w] >= pack_key(span.start.side, span.start.rank)
                    && last.is_some_and(|h| k.best[w] <= pack_key(h.side, h.rank));
                if !inside {
                    return Err(PcError::Internal(format!("a success key {:#x} outside its window", k.best[w])));
                }
                let o = &mut self.out[e];
                o.best = Some(unpack_key(k.best[w]));
                o.p_best = k.p_best[w];
                None
            };
            decided |= self.move_on(e, next);
        }
        if decided {
            self.prune(g);
        }
        Ok(())
    }

    /// The key `n` keys after `c` in edge `e`'s sequence, or None past its end.
    fn skip(&self, e: usize, c: Cursor, n: u64) -> Option<Cursor> {
        let sides = &self.plan.edges[e].sides;
        let here = sides[c.side as usize].map_or(0, |s| s.n_ranks);
        if c.rank + n < here {
            return Some(Cursor { side: c.side, rank: c.rank + n });
        }
        let rest = c.rank + n - here;
        match sides[1] {
            Some(s) if c.side == 0 && rest < s.n_ranks => Some(Cursor { side: 1, rank: rest }),
            _ => None,
        }
    }

    /// Moves edge `e` on to the key `next` after its window (its window grows), or marks it
    /// decided (None: a success, or the end of its sequence); true when decided.
    fn move_on(&mut self, e: usize, next: Option<Cursor>) -> bool {
        match next {
            Some(n) => {
                self.cursor[e] = n;
                let w = self.width[e];
                self.width[e] = (w * self.growth / 100).max(w + 1).min(MAX_WIDTH);
                false
            }
            None => {
                self.cursor[e] = Cursor { side: 2, rank: 0 };
                true
            }
        }
    }

    /// Drops group `g`'s decided edges from its live list.
    fn prune(&mut self, g: usize) {
        let cursor = &self.cursor;
        let keep_from = self.next[g];
        // keep the rotation point on the same edge (or the first live one after it)
        let mut new_next = 0;
        let mut kept = std::mem::take(&mut self.spare);
        kept.clear();
        for (k, &e) in self.live[g].iter().enumerate() {
            if cursor[e as usize].side < 2 {
                if k < keep_from {
                    new_next += 1;
                }
                kept.push(e);
            }
        }
        self.spare = std::mem::replace(&mut self.live[g], kept);
        let nl = self.live[g].len();
        self.next[g] = if nl == 0 { 0 } else { new_next % nl };
    }

    pub fn into_outcomes(self) -> Vec<EdgeOutcome> {
        self.out
    }

    /// Each edge taken from the feed (or handed over by another loop) with its outcome, less the
    /// edges this loop handed over and did not get back (every edge of the plan without a feed).
    pub fn into_taken(self) -> Vec<(u32, EdgeOutcome)> {
        let taken = self.taken.unwrap_or_else(|| (0..self.out.len() as u32).collect());
        taken.into_iter().filter(|&e| self.cursor[e as usize].side != GIVEN).map(|e| (e, self.out[e as usize])).collect()
    }
}

/// Writes the tests of one window (`span`) into its slices of a batch: x, y and the sets.
fn write_tests(plan: &LevelPlan, span: &Span, x: &mut [u32], y: &mut [u32], s: &mut [u32], list: &mut Vec<u32>, pos: &mut Vec<u32>) {
    let l = plan.level;
    let edge = &plan.edges[span.edge as usize];
    let mut c = span.start;
    let mut written = 0usize;
    let count = span.count as usize;
    while written < count {
        let side = edge.sides[c.side as usize].expect("cursor on an existing side");
        // A plain side's list is row(x) without y, so its q-th member is read from the row
        // directly; a CommonLast list is built (its order needs a scan of both rows).
        let row = plan.rows.row(side.x);
        let skip = match side.kind {
            _ if l == 0 => 0,
            SideKind::Plain => {
                let py = row.partition_point(|&a| a < side.y);
                if row.get(py) == Some(&side.y) { py } else { usize::MAX }
            }
            SideKind::CommonLast => {
                if l > 0 {
                    plan.side_list(&side, list);
                }
                0
            }
        };
        let member = |q: u32| -> u32 {
            let q = q as usize;
            match side.kind {
                SideKind::Plain => row[q + (q >= skip) as usize],
                SideKind::CommonLast => list[q],
            }
        };
        if l > 0 {
            pos.resize(l, 0);
            unrank(side.len, c.rank, pos);
        }
        // the ranks of this side that the window holds
        let here = ((side.n_ranks - c.rank) as usize).min(count - written);
        for k in 0..here {
            let t = written + k;
            x[t] = side.x;
            y[t] = side.y;
            for (d, &q) in s[t * l..(t + 1) * l].iter_mut().zip(pos.iter()) {
                *d = member(q);
            }
            if k + 1 < here {
                next_subset(side.len, pos);
            }
        }
        written += here;
        if written < count {
            c = Cursor { side: 1, rank: 0 };
        }
    }
}

/// A [`RoundEval`] from a function that computes a batch's results at once (p-values, or each
/// window's keys), one round at a time.
pub struct AtOnce<F, R = Vec<f64>> {
    f: F,
    held: Option<R>,
}

impl<R: RoundResult, F: FnMut(&Batch) -> Result<R, PcError>> AtOnce<F, R> {
    pub fn new(f: F) -> Self {
        AtOnce { f, held: None }
    }
}

impl<R: RoundResult, F: FnMut(&Batch) -> Result<R, PcError>> RoundEval<R> for AtOnce<F, R> {
    fn launch(&mut self, b: &Batch) -> Result<(), PcError> {
        self.held = Some((self.f)(b)?);
        Ok(())
    }
    fn finish(&mut self, _b: &Batch, p: &mut R) -> Result<(), PcError> {
        *p = self.held.take().ok_or_else(|| PcError::Internal("finish without a launch".into()))?;
        Ok(())
    }
}

/// [`run_pipelined`] for an `eval` that computes a batch's p-values at once, with windows that
/// double (stable.fast's Gaussian levels).
pub fn run_rounds(
    plan: &LevelPlan,
    budget: usize,
    pool: Option<&rayon::ThreadPool>,
    eval: impl FnMut(&Batch) -> Result<Vec<f64>, PcError>,
    keep_going: impl FnMut(usize) -> bool,
) -> Result<Vec<EdgeOutcome>, PcError> {
    let opts = RoundOpts { budget, growth: ROUNDS_GROWTH, pool, words: None };
    run_pipelined(plan, &opts, &mut AtOnce::new(eval), keep_going)
}

/// Round groups of a level's rounds: while the device evaluates one group's round, the host
/// writes the other's next.
pub const GROUPS: usize = 2;

/// Runs a whole level by rounds (see the module docs): `eval` evaluates the batches;
/// `keep_going` is asked between rounds, with the number of edges decided.
pub fn run_pipelined(
    plan: &LevelPlan,
    opts: &RoundOpts,
    eval: &mut dyn RoundEval,
    keep_going: impl FnMut(usize) -> bool,
) -> Result<Vec<EdgeOutcome>, PcError> {
    // two groups (edges dealt alternately, so both have long and short edges) when there are two
    // edges to deal
    let groups = if plan.edges.len() >= 2 { GROUPS } else { 1 };
    Ok(drive(Windows::new(plan, groups, opts.growth), None, opts, eval, keep_going)?.into_outcomes())
}

/// [`run_pipelined`] for an evaluator that unranks each window's tests itself and reports each
/// window's keys (stable.fast's Gaussian levels on the GPU): a round sends its windows, not
/// its tests, and takes back three numbers a window instead of a p-value a test. An edge's
/// first window holds `first_width` keys.
pub fn run_keyed(
    plan: &LevelPlan,
    opts: &RoundOpts,
    first_width: u64,
    eval: &mut dyn RoundEval<WindowKeys>,
    keep_going: impl FnMut(usize) -> bool,
) -> Result<Vec<EdgeOutcome>, PcError> {
    let groups = if plan.edges.len() >= 2 { GROUPS } else { 1 };
    let mut w = Windows::new(plan, groups, opts.growth);
    w.width.iter_mut().for_each(|x| *x = first_width.clamp(1, MAX_WIDTH));
    Ok(drive(w, None, opts, eval, keep_going)?.into_outcomes())
}

/// [`run_pipelined`] over the edges this loop takes from `feed`, which other devices' loops
/// share: before each round is written its group takes edges up to the feed's share. Returns
/// each edge it took with its outcome.
pub fn run_fed(
    plan: &LevelPlan,
    feed: &EdgeFeed,
    opts: &RoundOpts,
    eval: &mut dyn RoundEval,
    keep_going: impl FnMut(usize) -> bool,
) -> Result<Vec<(u32, EdgeOutcome)>, PcError> {
    Ok(drive(Windows::fed(plan, GROUPS, opts.growth), Some(feed), opts, eval, keep_going)?.into_taken())
}

fn drive<'a, R: RoundResult>(
    mut w: Windows<'a>,
    feed: Option<&EdgeFeed>,
    opts: &RoundOpts,
    eval: &mut dyn RoundEval<R>,
    mut keep_going: impl FnMut(usize) -> bool,
) -> Result<Windows<'a>, PcError> {
    let groups = w.groups();
    let mut batches: Vec<Batch> = (0..groups).map(|_| Batch::default()).collect();
    let mut p = R::default();
    let mut pending: Option<usize> = None;
    let mut turn = 0;
    // the next round queued behind the pending one, or launched once that one is finished
    let queued = eval.in_flight() >= 2;
    loop {
        if !keep_going(w.decided()) {
            return Err(PcError::Interrupted);
        }
        if let Some(feed) = feed {
            for k in (0..groups).filter(|&k| Some(k) != pending) {
                let got = feed.take(feed.share().saturating_sub(w.live(k)));
                feed.hold(got.len());
                w.admit(k, got);
            }
            // with nothing left here, go on with edges another device hands over until no edge
            // is left anywhere
            if pending.is_none() && w.live_total() == 0 && !wait_for_handed(&mut w, feed, &mut keep_going)? {
                break;
            }
        }
        // the group whose next round is written now, while the pending one runs
        let g = (0..groups).map(|k| (turn + k) % groups).find(|&k| Some(k) != pending && !w.is_done(k));
        if let Some(g) = g {
            w.next_round(g, opts, &mut batches[g], R::WRITTEN);
        }
        let done = pending.take();
        if let (Some(g), true) = (g, queued) {
            eval.launch(&batches[g])?;
        }
        if let Some(q) = done {
            eval.finish(&batches[q], &mut p)?;
        }
        if let Some(g) = g {
            if !queued {
                eval.launch(&batches[g])?;
            }
            pending = Some(g);
            turn = g + 1;
        }
        match done {
            Some(q) => {
                let live = w.live_total();
                p.absorb_into(&mut w, q, &batches[q])?;
                if let Some(feed) = feed {
                    feed.release(live - w.live_total());
                    // a device is idle and the queue empty: hand it up to half the live edges,
                    // from the group just taken back (not in flight)
                    if feed.left() == 0 && feed.waiting() > 0 {
                        let n = w.live(q).min(w.live_total() / 2);
                        if n > 0 {
                            feed.hand_over(w.give(q, n));
                        }
                    }
                }
            }
            None if pending.is_none() => break,
            None => {}
        }
    }
    Ok(w)
}

/// Waits, as an idle device, for edges another device hands over (true: some were added to the
/// windows' groups) or for every edge of the level to be decided (false).
fn wait_for_handed(w: &mut Windows, feed: &EdgeFeed, keep_going: &mut impl FnMut(usize) -> bool) -> Result<bool, PcError> {
    feed.set_waiting(true);
    let r = loop {
        if !keep_going(w.decided()) {
            break Err(PcError::Interrupted);
        }
        let got = feed.take_handed();
        if !got.is_empty() {
            let groups = w.groups();
            for k in 0..groups {
                let mine: Vec<Handed> = got.iter().skip(k).step_by(groups).copied().collect();
                w.admit_handed(k, &mine);
            }
            break Ok(true);
        }
        if feed.drained() {
            break Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    };
    feed.set_waiting(false);
    r
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::citest::{CiTest, DiscreteData, GSquareKind, GSquareScratch, GSquareTest};
    use crate::cpu::{eval_edge, EdgeScratch};
    use crate::graph::Adjacency;
    use crate::plan::{plan_level, Order};

    pub(crate) struct Lcg(pub(crate) u64);
    impl Lcg {
        pub(crate) fn next(&mut self, m: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % m
        }
    }

    /// Data where variable j copies a random earlier one with some noise, so that every level
    /// mixes successes and failures.
    pub(crate) fn chain_data(n: usize, p: usize, seed: u64) -> DiscreteData {
        let mut r = Lcg(seed);
        let nlev: Vec<u32> = (0..p).map(|_| 2 + r.next(3) as u32).collect();
        let mut codes = vec![0u8; n * p];
        for j in 0..p {
            let parent = if j > 0 { Some(r.next(j as u64) as usize) } else { None };
            for s in 0..n {
                let v = match parent {
                    Some(q) if r.next(10) < 7 => codes[q * n + s] as u32 % nlev[j],
                    _ => r.next(nlev[j] as u64) as u32,
                };
                codes[j * n + s] = v as u8;
            }
        }
        DiscreteData::new(n, p, codes, nlev).unwrap()
    }

    pub(crate) fn random_graph(p: usize, prob: u64, r: &mut Lcg) -> Adjacency {
        let mut a = Adjacency::empty(p);
        for i in 0..p {
            for j in i + 1..p {
                if r.next(100) < prob {
                    a.add_edge(i, j);
                }
            }
        }
        a
    }

    pub(crate) fn same(a: &EdgeOutcome, b: &EdgeOutcome) -> bool {
        a.best == b.best && a.p_best.to_bits() == b.p_best.to_bits() && a.max_fail.to_bits() == b.max_fail.to_bits()
    }

    /// A RoundEval from a function of a batch: computed at launch, handed back at finish; with
    /// `depth` 2 it holds two launches at once (as the G^2 backend's `Rounds`).
    pub(crate) struct Eager<F: FnMut(&Batch) -> Vec<f64>> {
        f: F,
        held: std::collections::VecDeque<Vec<f64>>,
        depth: usize,
        /// Batches launched so far.
        pub(crate) rounds: usize,
    }

    impl<F: FnMut(&Batch) -> Vec<f64>> Eager<F> {
        pub(crate) fn new(f: F) -> Self {
            Eager { f, held: Default::default(), depth: 1, rounds: 0 }
        }

        pub(crate) fn queued(f: F) -> Self {
            Eager { depth: 2, ..Eager::new(f) }
        }
    }

    impl<F: FnMut(&Batch) -> Vec<f64>> RoundEval for Eager<F> {
        fn launch(&mut self, b: &Batch) -> Result<(), PcError> {
            assert!(self.held.len() < self.depth, "more batches launched than it holds");
            self.rounds += 1;
            let p = (self.f)(b);
            self.held.push_back(p);
            Ok(())
        }
        fn finish(&mut self, b: &Batch, p: &mut Vec<f64>) -> Result<(), PcError> {
            *p = self.held.pop_front().expect("finish without a launch");
            assert_eq!(p.len(), b.len(), "finish was given another batch than the oldest launched");
            Ok(())
        }
        fn in_flight(&self) -> usize {
            self.depth
        }
    }

    /// The rounds give exactly eval_edge's outcomes, whatever the budget and growth, in both
    /// orders, with the tests written on the level's thread or on a pool (the later cases have
    /// hundreds of windows per round, so the pool splits them), and the batches' largest size is
    /// the largest of their tests'.
    #[test]
    fn rounds_match_the_sequential_walk() {
        let mut r = Lcg(7);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        for case in 0..30u64 {
            let p = if case < 24 { 6 + r.next(10) as usize } else { 40 + r.next(30) as usize };
            let data = chain_data(300 + 100 * r.next(5) as usize, p, case + 1);
            let test = GSquareTest::new(data, GSquareKind::Dis, case % 2 == 0).unwrap();
            let adj = random_graph(p, 30 + r.next(60), &mut r);
            let fixed = Adjacency::empty(p);
            let alpha = [0.01, 0.05, 0.2, 0.5][case as usize % 4];
            let words = |x: u32, y: u32, s: &[u32]| (x as u64 + 1) * 1000 + y as u64 + s.iter().map(|&v| v as u64).sum::<u64>();
            for order in [Order::Stable, Order::StableFast] {
                for level in 0..4 {
                    let plan = plan_level(order, level, &adj, &fixed, alpha, 1.0).unwrap();
                    let mut sc = EdgeScratch::<GSquareScratch>::default();
                    let want: Vec<EdgeOutcome> =
                        plan.edges.iter().map(|e| eval_edge(&plan, &test, &mut sc, e, &mut || true).unwrap()).collect();
                    for ((budget, growth, pool), depth) in
                        [(1, 200, None), (3, 125, Some(&pool)), (17, 200, None), (1000, 150, None), (1000, 200, Some(&pool))]
                            .into_iter()
                            .enumerate()
                            .flat_map(|(k, c)| if k % 2 == 1 { vec![(c, 1), (c, 2)] } else { vec![(c, 1)] })
                    {
                        let opts = RoundOpts { budget, growth, pool, words: Some(&words) };
                        let mut tsc = GSquareScratch::default();
                        let eval_batch = |b: &Batch| {
                            let sizes = (0..b.len()).map(|t| words(b.x[t], b.y[t], &b.s[t * level..(t + 1) * level]));
                            assert_eq!(b.max_words, sizes.max().unwrap_or(0));
                            (0..b.len()).map(|t| test.p_value(&mut tsc, b.x[t], b.y[t], &b.s[t * level..(t + 1) * level]).unwrap()).collect()
                        };
                        let mut eval = if depth == 1 { Eager::new(eval_batch) } else { Eager::queued(eval_batch) };
                        let got = run_pipelined(&plan, &opts, &mut eval, |_| true).unwrap();
                        assert_eq!(got.len(), want.len());
                        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                            assert!(
                                same(g, w),
                                "case {case} {order:?} level {level} budget {budget} growth {growth} pool {} depth {depth} edge {k}: {g:?} vs {w:?}",
                                pool.is_some()
                            );
                        }
                        if budget == 1 {
                            // one test per round at most, except a round's first window
                            assert!(eval.rounds >= plan.edges.len().min(1));
                        }
                    }
                }
            }
        }
    }

    /// Each window's keys computed as a device that unranks its tests does: every key of the
    /// window evaluated (failures after a success folded in too), its set unranked from the side's
    /// list.
    pub(crate) fn window_keys(plan: &LevelPlan, b: &Batch, mut p_of: impl FnMut(u32, u32, &[u32]) -> f64) -> WindowKeys {
        let mut k = WindowKeys::default();
        let (mut list, mut pos, mut set) = (Vec::new(), vec![0u32; plan.level], vec![0u32; plan.level]);
        for span in b.spans() {
            let edge = &plan.edges[span.edge as usize];
            let (mut best, mut p_best, mut max_fail) = (NO_KEY, f64::NAN, f64::NEG_INFINITY);
            let mut c = span.start;
            for t in 0..span.count {
                let side = edge.sides[c.side as usize].unwrap();
                plan.side_list(&side, &mut list);
                unrank(side.len, c.rank, &mut pos);
                for (d, &q) in set.iter_mut().zip(&pos) {
                    *d = list[q as usize];
                }
                let p = p_of(side.x, side.y, &set);
                let mapped = crate::plan::na_map(p, plan.na_value);
                if mapped >= plan.alpha {
                    if best == NO_KEY {
                        (best, p_best) = (pack_key(c.side, c.rank), p);
                    }
                } else {
                    max_fail = max_fail.max(mapped);
                }
                if t + 1 < span.count {
                    c = if c.rank + 1 < side.n_ranks { Cursor { side: c.side, rank: c.rank + 1 } } else { Cursor { side: 1, rank: 0 } };
                }
            }
            k.best.push(best);
            k.p_best.push(p_best);
            k.max_fail.push(max_fail);
        }
        k
    }

    /// An evaluator of keyed rounds from [`window_keys`], holding `depth` launches at once.
    struct KeyedEager<'t, F: FnMut(&Batch) -> WindowKeys + 't> {
        f: F,
        held: std::collections::VecDeque<WindowKeys>,
        depth: usize,
        _t: std::marker::PhantomData<&'t ()>,
    }

    impl<'t, F: FnMut(&Batch) -> WindowKeys + 't> RoundEval<WindowKeys> for KeyedEager<'t, F> {
        fn launch(&mut self, b: &Batch) -> Result<(), PcError> {
            assert!(self.held.len() < self.depth);
            assert!(b.x.is_empty() && b.s.is_empty(), "a keyed round's tests are not written out");
            assert_eq!(b.len() as u64, b.spans().iter().map(|s| s.count).sum::<u64>());
            let k = (self.f)(b);
            self.held.push_back(k);
            Ok(())
        }
        fn finish(&mut self, b: &Batch, k: &mut WindowKeys) -> Result<(), PcError> {
            *k = self.held.pop_front().expect("finish without a launch");
            assert_eq!(k.best.len(), b.spans().len());
            Ok(())
        }
        fn in_flight(&self) -> usize {
            self.depth
        }
    }

    /// What the level makes of an outcome: the success, its raw p, and the edge's pMax.
    fn level_view(o: &EdgeOutcome, na_value: f64) -> (Option<(u8, u64)>, u64, u64) {
        let pmax = match o.best {
            Some(_) => o.max_fail.max(crate::plan::na_map(o.p_best, na_value)),
            None => o.max_fail,
        };
        (o.best, o.p_best.to_bits(), pmax.to_bits())
    }

    /// Keyed rounds (windows sent, each window's keys back) decide every edge as the sequential
    /// walk does, in both orders, whatever the budget, growth and depth: the same success, its p
    /// bit for bit, and the same pMax (a window's failures after its success may be folded in).
    #[test]
    fn keyed_rounds_match_the_sequential_walk() {
        let mut r = Lcg(11);
        for case in 0..24u64 {
            let p = 6 + r.next(12) as usize;
            let data = chain_data(300 + 100 * r.next(5) as usize, p, case + 3);
            let test = GSquareTest::new(data, GSquareKind::Dis, case % 2 == 0).unwrap();
            let adj = random_graph(p, 30 + r.next(60), &mut r);
            let fixed = Adjacency::empty(p);
            let alpha = [0.01, 0.05, 0.2, 0.5][case as usize % 4];
            for order in [Order::Stable, Order::StableFast] {
                for level in 1..4 {
                    let plan = plan_level(order, level, &adj, &fixed, alpha, 1.0).unwrap();
                    let mut sc = EdgeScratch::<GSquareScratch>::default();
                    let want: Vec<EdgeOutcome> =
                        plan.edges.iter().map(|e| eval_edge(&plan, &test, &mut sc, e, &mut || true).unwrap()).collect();
                    for (budget, growth, depth) in [(1, 200, 1), (3, 125, 2), (17, 400, 1), (1000, 150, 2)] {
                        let mut tsc = GSquareScratch::default();
                        let f = |b: &Batch| window_keys(&plan, b, |x, y, s| test.p_value(&mut tsc, x, y, s).unwrap());
                        let mut eval = KeyedEager { f, held: Default::default(), depth, _t: Default::default() };
                        let opts = RoundOpts { budget, growth, pool: None, words: None };
                        let got = run_keyed(&plan, &opts, [1, 4, 32][case as usize % 3], &mut eval, |_| true).unwrap();
                        assert_eq!(got.len(), want.len());
                        for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                            assert_eq!(
                                level_view(g, plan.na_value),
                                level_view(w, plan.na_value),
                                "case {case} {order:?} level {level} budget {budget} growth {growth} depth {depth} edge {k}: {g:?} vs {w:?}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// Devices fed from one queue, one of them slow: once the queue is empty the fast one waits
    /// and the slow one hands it live edges, which it goes on with where they stood; every edge
    /// is reported once, by one device, with the sequential walk's outcome, in both orders and
    /// with one or two rounds in flight.
    #[test]
    fn an_idle_device_goes_on_with_edges_handed_over() {
        let mut r = Lcg(21);
        let mut moved = 0;
        for case in 0..8u64 {
            let p = 25 + r.next(15) as usize;
            let data = chain_data(400, p, case + 5);
            let test = GSquareTest::new(data, GSquareKind::Dis, true).unwrap();
            let adj = random_graph(p, 50 + r.next(40), &mut r);
            let order = if case % 2 == 0 { Order::Stable } else { Order::StableFast };
            let plan = plan_level(order, 2, &adj, &Adjacency::empty(p), [0.01, 0.2][case as usize % 2], 1.0).unwrap();
            let mut sc = EdgeScratch::<GSquareScratch>::default();
            let want: Vec<EdgeOutcome> = plan.edges.iter().map(|e| eval_edge(&plan, &test, &mut sc, e, &mut || true).unwrap()).collect();
            let feed = EdgeFeed::new(&plan, 2 * GROUPS);
            let (plan, test, feed) = (&plan, &test, &feed);
            let parts: Vec<Vec<(u32, EdgeOutcome)>> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..2)
                    .map(|d| {
                        s.spawn(move || {
                            let mut tsc = GSquareScratch::default();
                            let eval_batch = |b: &Batch| -> Vec<f64> {
                                if d == 1 {
                                    std::thread::sleep(std::time::Duration::from_millis(2));
                                }
                                (0..b.len()).map(|t| test.p_value(&mut tsc, b.x[t], b.y[t], &b.s[t * 2..(t + 1) * 2]).unwrap()).collect()
                            };
                            let mut eval = if case % 4 < 2 { Eager::new(eval_batch) } else { Eager::queued(eval_batch) };
                            let opts = RoundOpts { budget: 8, growth: 200, pool: None, words: None };
                            run_fed(plan, feed, &opts, &mut eval, |_| true).unwrap()
                        })
                    })
                    .collect();
                hs.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut got: Vec<Option<EdgeOutcome>> = vec![None; plan.edges.len()];
            for (e, o) in parts.concat() {
                assert!(got[e as usize].replace(o).is_none(), "case {case}: edge {e} reported twice");
            }
            for (k, (g, w)) in got.iter().zip(&want).enumerate() {
                let g = g.unwrap_or_else(|| panic!("case {case}: edge {k} not reported"));
                assert!(same(&g, w), "case {case} {order:?} edge {k}: {g:?} vs {w:?}");
            }
            assert!(feed.drained());
            moved += feed.moved();
        }
        assert!(moved > 0, "no edge was handed over");
    }

    /// Level 2 of a star: 0 and 1 joined to each other and to 2..9 (stable order).
    fn star_plan() -> LevelPlan {
        let mut a = Adjacency::empty(10);
        for j in 1..10 {
            a.add_edge(0, j);
            a.add_edge(1, j);
        }
        plan_level(Order::Stable, 2, &a, &Adjacency::empty(10), 0.05, 1.0).unwrap()
    }

    /// A success key outside the window it was reported for is an error, not an outcome.
    #[test]
    fn a_key_outside_its_window_is_refused() {
        let plan = star_plan();
        let mut w = Windows::new(&plan, 1, 200);
        let mut b = Batch::default();
        w.next_round(0, &RoundOpts::new(1 << 20), &mut b, false);
        let n = b.spans().len();
        let mut k = WindowKeys { best: vec![NO_KEY; n], p_best: vec![f64::NAN; n], max_fail: vec![0.0; n] };
        let s0 = b.spans()[0];
        k.best[0] = pack_key(s0.start.side, s0.start.rank + s0.count);
        let e = w.absorb_keys(0, &b, &k).unwrap_err().to_string();
        assert!(e.contains("outside its window"), "{e}");
        k.best[0] = pack_key(s0.start.side, s0.start.rank + s0.count - 1);
        w.absorb_keys(0, &b, &k).unwrap();
        assert_eq!(w.out[s0.edge as usize].best, Some((s0.start.side, s0.start.rank + s0.count - 1)));
    }

    #[test]
    fn windows_never_skip_a_key_and_stop_at_the_end() {
        // edge 0-1 with 8 candidates on each side at level 2: 2 * C(8, 2) = 56 keys
        let plan = star_plan();
        let k01 = plan.edges.iter().position(|e| (e.i, e.j) == (0, 1)).unwrap();
        let total = plan.edges[k01].n_tests();
        let mut seen = 0u64;
        // all failures: every key is evaluated once, then the edge is decided without success
        let mut eval = Eager::new(|b: &Batch| {
            seen += b.spans.iter().filter(|s| s.edge as usize == k01).map(|s| s.count).sum::<u64>();
            vec![0.0; b.len()]
        });
        let out = run_pipelined(&plan, &RoundOpts::new(5), &mut eval, |_| true).unwrap();
        assert_eq!(seen, total);
        // the same through the closure form (the CMIknn backend's)
        let again = run_rounds(&plan, 5, None, |b| Ok(vec![0.0; b.len()]), |_| true).unwrap();
        assert!(again.iter().zip(&out).all(|(a, b)| same(a, b)));
        assert!(out[k01].best.is_none());
        assert_eq!(out[k01].max_fail, 0.0);
        // an interrupt between rounds
        let mut eval = Eager::new(|b: &Batch| vec![0.0; b.len()]);
        let err = run_pipelined(&plan, &RoundOpts::new(5), &mut eval, |_| false).unwrap_err();
        assert!(matches!(err, PcError::Interrupted));
    }
}

#[cfg(test)]
mod timing {
    use super::*;
    use crate::graph::Adjacency;
    use crate::plan::{plan_level, Order};

    /// Host time of a level's rounds without a device (cargo test --release -- --ignored --nocapture).
    #[test]
    #[ignore]
    fn host_time_of_rounds() {
        let p = 1041;
        let mut a = Adjacency::empty(p);
        for i in 0..p {
            for j in i + 1..p {
                if level_edge(i, j) {
                    a.add_edge(i, j);
                }
            }
        }
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
        for level in [0usize, 1] {
            let g = if level == 0 { Adjacency::complete(p) } else { a.clone() };
            let plan = plan_level(Order::Stable, level, &g, &Adjacency::empty(p), 0.01, 1.0).unwrap();
            let words = |_x: u32, _y: u32, s: &[u32]| s.len() as u64;
            let opts = RoundOpts { budget: 214_748, growth: 125, pool: Some(&pool), words: Some(&words) };
            struct Fake(Option<usize>, u64);
            impl RoundEval for Fake {
                fn launch(&mut self, b: &Batch) -> Result<(), PcError> {
                    self.0 = Some(b.len());
                    Ok(())
                }
                fn finish(&mut self, b: &Batch, p: &mut Vec<f64>) -> Result<(), PcError> {
                    // an edge succeeds at about its 70th test
                    self.1 += b.len() as u64;
                    p.clear();
                    p.extend((0..b.len()).map(|t| if (t as u64 * 2654435761 + self.1) % 70 == 0 { 0.5 } else { 0.0 }));
                    Ok(())
                }
            }
            let t = std::time::Instant::now();
            let mut f = Fake(None, 0);
            let out = run_pipelined(&plan, &opts, &mut f, |_| true).unwrap();
            println!("level {level}: {} edges, {} tests, {:.3} s", out.len(), f.1, t.elapsed().as_secs_f64());
        }
    }

    fn level_edge(i: usize, j: usize) -> bool {
        (i * 7919 + j * 104729) % 1000 < 280
    }
}
