//! Conservative and majority-rule PC and FCI: pcalg's `pc.cons.intern()` with `version.unf =
//! c(2, 1)` (what `pc()` passes, and `fci()` without Possible-D-SEP) or `c(1, 1)` (`fci()` after
//! Possible-D-SEP), whose `checkTriple()` tests every unshielded triple a - b - c (a < c) given
//! every subset of adj(a), then every subset of adj(c).
//!
//! With `version.unf[2] = 1` a triple's decision depends only on its tests, never on the sepsets
//! that earlier triples rewrote, so the tests of all triples can run at once; the sepset updates
//! are then replayed in pcalg's triple order. Let n be the number of tests with p >= alpha and k
//! the number of those whose S holds b:
//! * n = 0: b leaves both sepsets; the triple is unfaithful only with `version.unf[1] = 2`;
//! * k = n: b joins both sepsets (appended where missing); k = 0: b leaves both;
//! * otherwise ambiguous (unfaithful) for the conservative rule; for the majority rule k / n
//!   below, above or at 1/2 decides as k = 0, k = n or ambiguous.
//!
//! Every triple's pair gets both sepsets written back (pcalg's `as.integer()` turns NULL into
//! `integer(0)`), which the caller reproduces for [`ConsOutcome::pairs`].

use super::batch::{BatchEvaluator, TestBatch};
use super::pdag::Pdag;
use super::sepsets::{PairSepsets, Unfaithful};
use std::time::{Duration, Instant};

use crate::backend::Watch;
use crate::error::{PcError, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TripleRule {
    Conservative,
    Majority,
}

/// pc.cons.intern's `version.unf[1]`: which triples its `unfTripl` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnfVersion {
    /// 1 (`fci()` after Possible-D-SEP): the ambiguous triples only.
    Ambiguous,
    /// 2 (`pc()`, `fci()` without Possible-D-SEP): also those that no test found independent.
    AmbiguousOrDependent,
}

/// `checkTriple()`'s `decision`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// 1: b is not in the separating sets (a v-structure).
    NotInSepset,
    /// 2: b is in them.
    InSepset,
    /// 3: ambiguous.
    Ambiguous,
}

/// The decision and whether pc.cons.intern lists the triple in `unfTripl`.
pub fn decide(n_indep: u64, with_b: u64, rule: TripleRule, version: UnfVersion) -> (Decision, bool) {
    if n_indep == 0 {
        return (Decision::NotInSepset, version == UnfVersion::AmbiguousOrDependent);
    }
    let d = if with_b == n_indep {
        Decision::InSepset
    } else if with_b == 0 {
        Decision::NotInSepset
    } else {
        match rule {
            TripleRule::Conservative => Decision::Ambiguous,
            // sum(tmp) / length(tmp) against 0.5, exactly: 2k against n
            TripleRule::Majority => match (2 * with_b).cmp(&n_indep) {
                std::cmp::Ordering::Less => Decision::NotInSepset,
                std::cmp::Ordering::Greater => Decision::InSepset,
                std::cmp::Ordering::Equal => Decision::Ambiguous,
            },
        }
    };
    (d, d == Decision::Ambiguous)
}

/// pc.cons.intern's `tripleMatrix` after `deleteDupl`: (a, b, c) with a < c, by b, then a, then c.
pub fn unshielded_triples(g: &Pdag) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    for b in 0..g.p() {
        let n = g.neighbours(b);
        for &a in n {
            for &c in n {
                if c > a && !g.adjacent(a, c) {
                    out.push((a, b as u32, c));
                }
            }
        }
    }
    out
}

/// At most this many subsets on one side: 2^40 tests would run for days on any machine (pcalg
/// would run them one by one).
pub const MAX_SIDE: usize = 40;

/// Tests per batch handed to the evaluator (bounds the batch's memory).
const BATCH_TESTS: usize = 1 << 16;

pub struct ConsOutcome {
    pub unfaithful: Unfaithful,
    /// The same triples in pcalg's order: its `unfTripl` (as `triple2numb()` numbers).
    pub listed: Vec<(u32, u32, u32)>,
    /// Every triple's pair (a, c), a < c, once, in pcalg's order of first write: their two
    /// sepsets are what R must write back.
    pub pairs: Vec<(u32, u32)>,
    pub decisions: Vec<((u32, u32, u32), Decision)>,
    pub triples: usize,
    pub tests: u64,
    pub ambiguous: usize,
}

/// One group of triples sharing (a, c): they share every test.
struct Group {
    a: u32,
    c: u32,
    /// indices into the triple list
    members: Vec<usize>,
    n_indep: u64,
}

/// The checks' progress as tests done of all of them, whichever batch runs: an evaluator ticks
/// its own batch's tests, or only asks whether to go on. Ticks go on at most every 100 ms (a GPU
/// evaluator asks at every launch, and R's progress bar costs more than asking).
struct AllTests<'a> {
    watch: &'a mut dyn Watch,
    before: u64,
    total: u64,
    last: &'a mut Instant,
}

impl AllTests<'_> {
    fn report(&mut self, done: u64) -> bool {
        if self.last.elapsed() < Duration::from_millis(100) {
            return self.watch.keep_going();
        }
        *self.last = Instant::now();
        self.watch.tick(done, self.total)
    }
}

impl Watch for AllTests<'_> {
    fn tick(&mut self, done: u64, _: u64) -> bool {
        self.report(self.before + done)
    }

    fn keep_going(&mut self) -> bool {
        self.report(self.before)
    }
}

/// Runs the checks, rewrites the sepsets of `sep` as pcalg does, and returns the unfaithful
/// triples for the orientation.
pub fn check_triples(
    g: &Pdag,
    sep: &mut PairSepsets,
    alpha: f64,
    rule: TripleRule,
    version: UnfVersion,
    eval: &mut dyn BatchEvaluator,
    watch: &mut dyn Watch,
) -> Result<ConsOutcome> {
    let triples = unshielded_triples(g);
    let mut groups: Vec<Group> = Vec::new();
    if eval.shares_results() {
        let mut idx: Vec<usize> = (0..triples.len()).collect();
        idx.sort_by_key(|&t| (triples[t].0, triples[t].2, t));
        for t in idx {
            let (a, _, c) = triples[t];
            match groups.last_mut() {
                Some(gr) if gr.a == a && gr.c == c => gr.members.push(t),
                _ => groups.push(Group { a, c, members: vec![t], n_indep: 0 }),
            }
        }
    } else {
        groups = triples.iter().enumerate().map(|(t, &(a, _, c))| Group { a, c, members: vec![t], n_indep: 0 }).collect();
    }
    // every test of the checks, for their progress
    let mut total = 0u64;
    for gr in &groups {
        for v in [gr.a, gr.c] {
            let d = g.neighbours(v as usize).len();
            if d > MAX_SIDE {
                return Err(PcError::invalid(
                    "conservative",
                    format!("the triple check of {} and {} tests all 2^{d} subsets of variable {}'s neighbours; more than 2^{MAX_SIDE} is not feasible", gr.a + 1, gr.c + 1, v + 1),
                ));
            }
            total = total.saturating_add(1 << d);
        }
    }
    if !watch.tick(0, total) {
        return Err(PcError::Interrupted);
    }
    let mut last = Instant::now();
    // with_b[t]: independent tests of triple t whose S holds its b
    let mut with_b = vec![0u64; triples.len()];
    let mut batch = TestBatch::default();
    // (group, side vertex, mask) of each test in the batch
    let mut meta: Vec<(u32, u32, u64)> = Vec::new();
    let mut pv = Vec::new();
    let mut tests = 0u64;
    let shares = eval.shares_results();
    let mut flush = |batch: &mut TestBatch, meta: &mut Vec<(u32, u32, u64)>, groups: &mut [Group], with_b: &mut [u64]| -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        eval.p_values(batch, &mut pv, &mut AllTests { watch: &mut *watch, before: tests, total, last: &mut last })?;
        if pv.len() != batch.len() {
            return Err(PcError::Internal(format!("{} p-values for {} tests", pv.len(), batch.len())));
        }
        for (t, &(gi, side, mask)) in meta.iter().enumerate() {
            let p = pv[t];
            if p.is_nan() {
                // pcalg's `if (pval >= alpha)` stops with an error on NA
                return Err(PcError::Test(format!(
                    "indepTest returned NA for x = {}, y = {}, S = {:?} in the conservative / majority-rule triple check",
                    batch.x[t] + 1,
                    batch.y[t] + 1,
                    batch.set(t).iter().map(|v| v + 1).collect::<Vec<_>>()
                )));
            }
            if p < alpha {
                continue;
            }
            let gr = &mut groups[gi as usize];
            gr.n_indep += 1;
            let nb = g.neighbours(side as usize);
            for &m in &gr.members {
                let b = triples[m].1;
                // b is adjacent to both ends, so it has a position in the side's list
                let pos = nb.binary_search(&b).expect("b adjacent to the side");
                if mask >> pos & 1 == 1 {
                    with_b[m] += 1;
                }
            }
        }
        tests += batch.len() as u64;
        batch.clear();
        meta.clear();
        Ok(())
    };
    for gi in 0..groups.len() {
        let (a, c) = (groups[gi].a, groups[gi].c);
        for side in [a, c] {
            let nb = g.neighbours(side as usize);
            for mask in 0..(1u64 << nb.len()) {
                batch.push(a, c, nb.iter().enumerate().filter(|(k, _)| mask >> k & 1 == 1).map(|(_, &v)| v));
                meta.push((gi as u32, side, mask));
                if batch.len() >= BATCH_TESTS {
                    flush(&mut batch, &mut meta, &mut groups, &mut with_b)?;
                }
            }
        }
        if !shares {
            // R callbacks: one batch per triple, in pcalg's order
            flush(&mut batch, &mut meta, &mut groups, &mut with_b)?;
        }
    }
    flush(&mut batch, &mut meta, &mut groups, &mut with_b)?;
    if !watch.tick(total, total) {
        return Err(PcError::Interrupted);
    }

    let mut group_of = vec![0usize; triples.len()];
    for (gi, gr) in groups.iter().enumerate() {
        for &m in &gr.members {
            group_of[m] = gi;
        }
    }
    let mut out = ConsOutcome { unfaithful: Unfaithful::new(), listed: Vec::new(), pairs: Vec::new(), decisions: Vec::with_capacity(triples.len()), triples: triples.len(), tests, ambiguous: 0 };
    let mut seen = std::collections::HashSet::new();
    for (t, &(a, b, c)) in triples.iter().enumerate() {
        let (d, unf) = decide(groups[group_of[t]].n_indep, with_b[t], rule, version);
        if unf {
            out.unfaithful.insert(a, b, c);
            out.listed.push((a, b, c));
        }
        if d == Decision::Ambiguous {
            out.ambiguous += 1;
        }
        for (x, z) in [(a, c), (c, a)] {
            let cur = sep.get(x, z);
            let new = match d {
                Decision::InSepset if !cur.contains(&b) => Some(cur.iter().copied().chain([b]).collect::<Vec<_>>()),
                // setdiff(): also drops repeated members
                Decision::NotInSepset => {
                    let mut v: Vec<u32> = Vec::with_capacity(cur.len());
                    for &s in cur {
                        if s != b && !v.contains(&s) {
                            v.push(s);
                        }
                    }
                    Some(v)
                }
                _ => None,
            };
            if let Some(v) = new {
                sep.insert(x, z, &v);
            }
        }
        if seen.insert((a, c)) {
            out.pairs.push((a, c));
        }
        out.decisions.push(((a, b, c), d));
    }
    Ok(out)
}
