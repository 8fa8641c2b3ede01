//! RFCI after the skeleton, as pcalg 2.7-12's `rfci()` computes it: `find.unsh.triple()`,
//! `rfci.vStruc()` (with `dep.triple()` and, for the conservative and majority rules,
//! `checkTriple()`), then `udag2apag()` (`apag.rs`: `pag/`'s rules), whose rule 4 runs
//! `checkEdges()` here. The graph is `pag/`'s `Pag`, pcalg's mark matrix.
//!
//! Every test depends on the edges and sepsets that earlier tests changed, so the tests run one
//! at a time in pcalg's order, on the calling thread (a native test answers in microseconds; a
//! GPU round trip per test would cost more than the test).
//!
//! pcalg's quirks that change results, all kept:
//! * `dep.triple()` walks only the triples it started with; the triples it appends (new
//!   unshielded triples after an edge is removed) are oriented by `rfci.vStruc()` but not
//!   checked for dependence.
//! * The triples it disqualifies are found by `triple2numb()` keys, the first match only.
//! * `checkEdges()` runs `rfci.vStruc()` with its own defaults (`version.unf = c(2, 1)`, no
//!   majority rule), conservative exactly when `udag2apag()` was given unfaithful triples, and
//!   returns only the unfaithful triples of that call.
//! * Sets are kept in R's order (`unique(c(sepset[[x]][[z]], sepset[[z]][[x]]))`), which is also
//!   the order the conditioning sets are built from (`combn()`), and written back as R writes
//!   them: every set `checkTriple()` returns goes through `as.integer()`, so a NULL becomes
//!   `integer(0)`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::pag::{Pag, UnfTriples, ARROW, CIRCLE, NONE};
use crate::backend::Watch;
use crate::error::{PcError, Result};
use crate::orient::sepsets::PairSepsets;
use crate::orient::triples::{decide, Decision, TripleRule, UnfVersion};

/// R's `which(f(k))` over k = 1..p, ascending.
fn which(pag: &Pag, f: impl Fn(u32) -> bool) -> Vec<u32> {
    (0..pag.p() as u32).filter(|&k| f(k)).collect()
}

/// pcalg's `triple2numb(p, i, j, k)` of 0-based vertices, in R's double arithmetic.
#[inline]
pub fn triple_key(p: usize, i: u32, j: u32, k: u32) -> f64 {
    let pf = p as f64;
    (k as f64 + 1.0) + pf * ((j as f64 + 1.0) + pf * (i as f64 + 1.0))
}

/// (x, y, z) or (z, y, x) in a list of triples (pcalg's `any(unfTripl == triple2numb(...))` of
/// both orders).
fn listed(list: &[[u32; 3]], x: u32, y: u32, z: u32) -> bool {
    list.iter().any(|t| *t == [x, y, z] || *t == [z, y, x])
}

/// `sepset[[x]][[z]]` as the stage reads and writes it: the skeleton's sets of the pairs it
/// reads, the stage's own writes over them, and those writes in order, for R to repeat on its
/// list.
#[derive(Debug, Default)]
pub struct SepsetLog {
    base: PairSepsets,
    over: HashMap<(u32, u32), Vec<u32>>,
    /// (x, z, set): `sepset[[x]][[z]] <- as.integer(set)`, in pcalg's order.
    pub writes: Vec<(u32, u32, Vec<u32>)>,
}

impl SepsetLog {
    pub fn new(base: PairSepsets) -> Self {
        SepsetLog { base, over: HashMap::new(), writes: Vec::new() }
    }

    pub fn get(&self, x: u32, z: u32) -> &[u32] {
        match self.over.get(&(x, z)) {
            Some(s) => s,
            None => self.base.get(x, z),
        }
    }

    pub fn set(&mut self, x: u32, z: u32, s: &[u32]) {
        self.over.insert((x, z), s.to_vec());
        self.writes.push((x, z, s.to_vec()));
    }

    /// `unique(c(sepset[[x]][[z]], sepset[[z]][[x]]))`.
    pub fn union(&self, x: u32, z: u32) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for &v in self.get(x, z).iter().chain(self.get(z, x)) {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// y in `sepset[[x]][[z]]` or in `sepset[[z]][[x]]`.
    pub fn separates(&self, x: u32, z: u32, y: u32) -> bool {
        self.get(x, z).contains(&y) || self.get(z, x).contains(&y)
    }
}

/// A native CI test called one test at a time, counted; `p >= alpha` as pcalg compares.
pub struct Tests<'a> {
    test: &'a mut dyn FnMut(u32, u32, &[u32]) -> Result<f64>,
    watch: &'a mut dyn Watch,
    alpha: f64,
    last: Instant,
    /// Tests run.
    pub count: u64,
}

impl<'a> Tests<'a> {
    pub fn new(test: &'a mut dyn FnMut(u32, u32, &[u32]) -> Result<f64>, alpha: f64, watch: &'a mut dyn Watch) -> Self {
        Tests { test, watch, alpha, last: Instant::now(), count: 0 }
    }

    /// `indepTest(x, y, S) >= alpha`. pcalg compares in `if ()`, which stops with an error on NA.
    fn independent(&mut self, x: u32, y: u32, s: &[u32], stage: &str) -> Result<bool> {
        if self.last.elapsed() >= Duration::from_millis(100) {
            self.last = Instant::now();
            if !self.watch.keep_going() {
                return Err(PcError::Interrupted);
            }
        }
        let pv = (self.test)(x, y, s)?;
        self.count += 1;
        if pv.is_nan() {
            return Err(PcError::Test(format!(
                "indepTest returned NA for x = {}, y = {}, S = {:?} in {stage} (pcalg's rfci() stops there too: missing value where TRUE/FALSE needed)",
                x + 1,
                y + 1,
                s.iter().map(|v| v + 1).collect::<Vec<_>>()
            )));
        }
        Ok(pv >= self.alpha)
    }
}

/// Advances `idx` (k positions into n, ascending) to R's next `combn()` column; false after the
/// last.
fn next_combination(idx: &mut [usize], n: usize) -> bool {
    let k = idx.len();
    let mut i = k;
    while i > 0 {
        i -= 1;
        if idx[i] < n - k + i {
            idx[i] += 1;
            for j in i + 1..k {
                idx[j] = idx[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

/// The unshielded triples (x, y, z) of pcalg's list with their `triple2numb()` keys.
#[derive(Clone, Debug, Default)]
pub struct Triples {
    pub t: Vec<[u32; 3]>,
    pub key: Vec<f64>,
}

impl Triples {
    pub fn push(&mut self, p: usize, x: u32, y: u32, z: u32) {
        self.t.push([x, y, z]);
        self.key.push(triple_key(p, x, y, z));
    }

    pub fn len(&self) -> usize {
        self.t.len()
    }

    pub fn is_empty(&self) -> bool {
        self.t.is_empty()
    }

    /// `which.max(unshVect == key)` when any matches.
    fn first(&self, key: f64) -> Option<usize> {
        self.key.iter().position(|&k| k == key)
    }
}

/// pcalg's `find.unsh.triple(g)`: for each edge cell (x, y) with `g[x, y] == 1` in column-major
/// order, each z adjacent to y (ascending, z != x) with x and z not adjacent, keeping x < z.
pub fn find_unshielded_triples(g: &Pag) -> Triples {
    let p = g.p();
    let mut out = Triples::default();
    for (x, y) in g.cells(|v, _| v == CIRCLE) {
        for z in which(g, |k| g.get(y, k) == CIRCLE) {
            if z != x && g.get(x, z) == NONE && g.get(z, x) == NONE && x < z {
                out.push(p, x, y, z);
            }
        }
    }
    out
}

/// How `rfci.vStruc()` decides a triple's orientation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VStrucRule {
    pub conservative: bool,
    pub maj_rule: bool,
    /// `version.unf[1] == 2`: a triple none of whose tests found independence is unfaithful.
    pub unf_when_none: bool,
}

/// The sepsets and the tests that RFCI's stages after the skeleton share (the graph is passed
/// along, as `pag/`'s rule 4 holds it while it asks for a verdict).
pub struct Rfci<'a> {
    pub sep: SepsetLog,
    pub tests: Tests<'a>,
}

impl<'a> Rfci<'a> {
    pub fn new(sep: SepsetLog, tests: Tests<'a>) -> Self {
        Rfci { sep, tests }
    }

    fn remove_edge(&mut self, g: &mut Pag, x: u32, y: u32, s: &[u32]) {
        g.set(x, y, NONE);
        g.set(y, x, NONE);
        self.sep.set(x, y, s);
        self.sep.set(y, x, s);
    }

    /// `sepSet`'s subsets of size 1, 2, ... in `combn()` order, testing x and y given each; the
    /// first independence removes the edge and sets both sepsets. True when one was found.
    fn remove_by_subsets(&mut self, g: &mut Pag, x: u32, y: u32, sep_set: &[u32], stage: &str) -> Result<bool> {
        let n = sep_set.len();
        let mut s = Vec::with_capacity(n);
        for ord in 1..=n {
            let mut idx: Vec<usize> = (0..ord).collect();
            loop {
                s.clear();
                s.extend(idx.iter().map(|&i| sep_set[i]));
                if self.tests.independent(x, y, &s, stage)? {
                    self.remove_edge(g, x, y, &s);
                    return Ok(true);
                }
                if !next_combination(&mut idx, n) {
                    break;
                }
            }
        }
        Ok(false)
    }

    /// One side of `dep.triple()`'s check of triple (x, y, z): `a` is x or z, `c` the other.
    /// After the subsets' tests, new triples and disqualified ones are listed as pcalg does.
    #[allow(clippy::too_many_arguments)]
    fn dep_side(&mut self, g: &mut Pag, a: u32, y: u32, x: u32, z: u32, sep_set: &[u32], list: &mut Triples, true_v: &mut Vec<bool>) -> Result<()> {
        let p = g.p();
        self.remove_by_subsets(g, a, y, sep_set, "the unshielded-triple check (dep.triple)")?;
        let g = &*g;
        let circ = |u: u32, k: u32| g.get(u, k) == CIRCLE && g.get(k, u) == CIRCLE;
        let gap = |u: u32, k: u32| g.get(u, k) == NONE && g.get(k, u) == NONE;
        let not_xyz = |k: u32| k != x && k != y && k != z;
        let (lo, hi) = (a.min(y), a.max(y));
        let ind_m = which(g, |k| circ(a, k) && circ(y, k) && not_xyz(k));
        let ind_q = which(g, |k| circ(a, k) && gap(y, k) && not_xyz(k));
        let ind_r = which(g, |k| gap(a, k) && circ(y, k) && not_xyz(k));
        for m in ind_m {
            list.push(p, lo, m, hi);
            true_v.push(true);
        }
        for q in ind_q {
            let key = if q < y { triple_key(p, q, a, y) } else { triple_key(p, y, a, q) };
            if let Some(i) = list.first(key) {
                true_v[i] = false;
            }
        }
        for r in ind_r {
            let key = if r < a { triple_key(p, r, y, a) } else { triple_key(p, a, y, r) };
            if let Some(i) = list.first(key) {
                true_v[i] = false;
            }
        }
        Ok(())
    }

    /// pcalg's `dep.triple()` over the triples listed when it starts.
    fn dep_triple(&mut self, g: &mut Pag, list: &mut Triples, true_v: &mut Vec<bool>) -> Result<()> {
        let n0 = list.len();
        for k in 0..n0 {
            if !true_v[k] {
                continue;
            }
            let [x, y, z] = list.t[k];
            let mut sep_set = self.sep.union(x, z);
            sep_set.retain(|&v| v != y);
            if sep_set.is_empty() {
                continue;
            }
            let stage = "the unshielded-triple check (dep.triple)";
            let del1 = self.tests.independent(x, y, &sep_set, stage)?;
            if del1 {
                self.dep_side(g, x, y, x, z, &sep_set, list, true_v)?;
            }
            let del2 = self.tests.independent(z, y, &sep_set, stage)?;
            if del2 {
                self.dep_side(g, z, y, x, z, &sep_set, list, true_v)?;
            }
            if del1 || del2 {
                true_v[k] = false;
            }
        }
        Ok(())
    }

    /// pcalg's `checkTriple(x, y, z, nbrsX, nbrsZ, ...)` with `version.unf[2] = 1`: the decision,
    /// whether no test found independence, and both sepsets as it returns them.
    fn check_triple(&mut self, x: u32, y: u32, z: u32, nbrs_x: &[u32], nbrs_z: &[u32], maj_rule: bool) -> Result<(Decision, bool, Vec<u32>, Vec<u32>)> {
        let mut n_indep = 0u64;
        let mut with_y = 0u64;
        let mut s = Vec::new();
        for nbrs in [nbrs_x, nbrs_z] {
            let nn = nbrs.len();
            if nn == 0 {
                continue;
            }
            if nn >= 63 {
                return Err(PcError::Test(format!(
                    "the conservative check of triple {} - {} - {} would test all 2^{nn} subsets of a neighbourhood",
                    x + 1,
                    y + 1,
                    z + 1
                )));
            }
            // expand.grid's rows: the first neighbour's bit changes fastest
            for mask in 0..(1u64 << nn) {
                s.clear();
                s.extend((0..nn).filter(|&j| mask >> j & 1 == 1).map(|j| nbrs[j]));
                if self.tests.independent(x, z, &s, "the conservative v-structure check (checkTriple)")? {
                    n_indep += 1;
                    if s.contains(&y) {
                        with_y += 1;
                    }
                }
            }
        }
        let rule = if maj_rule { TripleRule::Majority } else { TripleRule::Conservative };
        // rfci() calls rfci.vStruc() with version.unf = c(1, 1); the version changes only the flag
        let (d, _) = decide(n_indep, with_y, rule, UnfVersion::Ambiguous);
        let mut sa = self.sep.get(x, z).to_vec();
        let mut sc = self.sep.get(z, x).to_vec();
        match d {
            Decision::InSepset => {
                for s in [&mut sa, &mut sc] {
                    if !s.contains(&y) {
                        s.push(y);
                    }
                }
            }
            Decision::NotInSepset => {
                for s in [&mut sa, &mut sc] {
                    // setdiff() also drops repeats
                    let mut kept: Vec<u32> = Vec::with_capacity(s.len());
                    for &v in s.iter() {
                        if v != y && !kept.contains(&v) {
                            kept.push(v);
                        }
                    }
                    *s = kept;
                }
            }
            Decision::Ambiguous => {}
        }
        Ok((d, n_indep == 0, sa, sc))
    }

    /// pcalg's `rfci.vStruc()` on the listed triples; returns its `unfTripl`.
    pub fn v_structures(&mut self, g: &mut Pag, mut list: Triples, rule: VStrucRule) -> Result<Vec<[u32; 3]>> {
        let mut unf: Vec<[u32; 3]> = Vec::new();
        if list.is_empty() {
            return Ok(unf);
        }
        let mut true_v = vec![true; list.len()];
        self.dep_triple(g, &mut list, &mut true_v)?;
        if !true_v.iter().any(|&t| t) {
            return Ok(unf);
        }
        for i in 0..list.len() {
            if !true_v[i] {
                continue;
            }
            let [x, y, z] = list.t[i];
            if !rule.conservative {
                if g.get(x, z) == NONE && g.get(x, y) != NONE && g.get(z, y) != NONE && !self.sep.separates(x, z, y) {
                    g.set(x, y, ARROW);
                    g.set(z, y, ARROW);
                }
                continue;
            }
            let nbrs_x = which(g, |k| g.get(k, x) != NONE);
            let nbrs_z = which(g, |k| g.get(k, z) != NONE);
            let (d, none, sa, sc) = self.check_triple(x, y, z, &nbrs_x, &nbrs_z, rule.maj_rule)?;
            if d == Decision::Ambiguous || (rule.unf_when_none && none) {
                unf.push([x, y, z]);
            }
            self.sep.set(x, z, &sa);
            self.sep.set(z, x, &sc);
            if g.get(x, z) == NONE && g.get(x, y) != NONE && g.get(z, y) != NONE && !self.sep.separates(x, z, y) && !listed(&unf, x, y, z) {
                g.set(x, y, ARROW);
                g.set(z, y, ARROW);
            }
        }
        Ok(unf)
    }

    /// pcalg's `checkEdges()` on a discriminating path (as `minDiscrPath()` returned it): each
    /// edge of the path tested given the subsets of the end points' sepset (less the edge's own
    /// ends) until one is independent; then that edge is removed and the new unshielded triples
    /// of its ends are run through `rfci.vStruc()`. Returns whether an edge was removed and that
    /// call's unfaithful triples.
    pub fn check_edges(&mut self, g: &mut Pag, path: &[u32], conservative: bool) -> Result<(bool, Vec<[u32; 3]>)> {
        let p = g.p();
        let n = path.len();
        let total = self.sep.union(path[0], path[n - 1]);
        let mut unf = Vec::new();
        if total.is_empty() {
            return Ok((false, unf));
        }
        for i in 0..n - 1 {
            let (x, y) = (path[i], path[i + 1]);
            let sep_set: Vec<u32> = total.iter().copied().filter(|&v| v != x && v != y).collect();
            if sep_set.is_empty() {
                continue;
            }
            if !self.remove_by_subsets(g, x, y, &sep_set, "the discriminating-path check (checkEdges)")? {
                continue;
            }
            let (lo, hi) = (x.min(y), x.max(y));
            let ind_m = which(g, |k| k != x && k != y && g.get(x, k) != NONE && g.get(k, x) != NONE && g.get(y, k) != NONE && g.get(k, y) != NONE);
            if !ind_m.is_empty() {
                let mut list = Triples::default();
                for m in ind_m {
                    list.push(p, lo, m, hi);
                }
                unf = self.v_structures(g, list, VStrucRule { conservative, maj_rule: false, unf_when_none: true })?;
            }
            return Ok((true, unf));
        }
        Ok((false, unf))
    }
}

#[derive(Clone, Copy, Debug)]
pub struct RfciParams {
    pub alpha: f64,
    /// `conservative || maj.rule`, as `rfci()` passes it to `rfci.vStruc()`.
    pub conservative: bool,
    pub maj_rule: bool,
    pub rules: [bool; 10],
}

#[derive(Debug)]
pub struct RfciOutcome {
    /// `udag2apag()`'s graph.
    pub pag: Pag,
    /// `sepset[[x]][[z]] <- set`, in pcalg's order, for R to repeat on the skeleton's list.
    pub sepset_writes: Vec<(u32, u32, Vec<u32>)>,
    /// Tests run by the v-structure stage, then by rule 4.
    pub tests_vstruc: u64,
    pub tests_rules: u64,
    /// Triples judged unfaithful by the v-structure stage (rule 4's checks may add more).
    pub unfaithful: usize,
}

/// `rfci()` after `skeleton()`: `find.unsh.triple()`, `rfci.vStruc()` (`version.unf = c(1, 1)`)
/// and `udag2apag()`. `edges`: the skeleton's (0-based); `sepsets`: its sets of the non-adjacent
/// pairs with a common neighbour (the only ones the stages read before writing them); `test`:
/// the p-value of (x, y, S), S in the order given.
pub fn rfci_orient(p: usize, edges: &[(u32, u32)], sepsets: PairSepsets, params: RfciParams, test: &mut dyn FnMut(u32, u32, &[u32]) -> Result<f64>, watch: &mut dyn Watch) -> Result<RfciOutcome> {
    let both: Vec<(u32, u32, u8, u8)> = edges.iter().map(|&(a, b)| (a, b, CIRCLE, CIRCLE)).collect();
    let mut pag = Pag::from_edges(p, &both)?;
    let triples = find_unshielded_triples(&pag);
    let mut st = Rfci::new(SepsetLog::new(sepsets), Tests::new(test, params.alpha, watch));
    let rule = VStrucRule { conservative: params.conservative, maj_rule: params.maj_rule, unf_when_none: false };
    let unf_triples = st.v_structures(&mut pag, triples, rule)?;
    let tests_vstruc = st.tests.count;
    let mut unf = UnfTriples::none();
    for &[x, y, z] in &unf_triples {
        unf.insert(x, y, z);
    }
    super::apag::udag2apag(&mut st, &mut pag, params.rules, &mut unf)?;
    Ok(RfciOutcome { tests_vstruc, tests_rules: st.tests.count - tests_vstruc, unfaithful: unf_triples.len(), pag, sepset_writes: st.sep.writes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_follow_combn() {
        let mut idx = vec![0, 1];
        let mut seen = vec![idx.clone()];
        while next_combination(&mut idx, 4) {
            seen.push(idx.clone());
        }
        assert_eq!(seen, vec![vec![0, 1], vec![0, 2], vec![0, 3], vec![1, 2], vec![1, 3], vec![2, 3]]);
        let mut one = vec![0];
        assert!(!next_combination(&mut one, 1));
    }

    #[test]
    fn unshielded_triples_in_pcalg_order() {
        // 1 - 2 - 3, 2 - 4 (0-based 0 - 1 - 2, 1 - 3): triples (1,2,3), (1,2,4), (3,2,4)
        let g = Pag::from_edges(4, &[(0, 1, CIRCLE, CIRCLE), (1, 2, CIRCLE, CIRCLE), (1, 3, CIRCLE, CIRCLE)]).unwrap();
        let t = find_unshielded_triples(&g);
        assert_eq!(t.t, vec![[0, 1, 2], [0, 1, 3], [2, 1, 3]]);
        assert_eq!(t.key[0], 3.0 + 4.0 * (2.0 + 4.0 * 1.0));
    }

    #[test]
    fn dependence_check_removes_an_edge_with_pcalgs_tests() {
        // 1 - 2 - 3 (0-based 0 - 1 - 2) with sepset[[1]][[3]] = 4: 1 and 2 are independent given
        // {4}, 3 and 2 are not
        let mut sep = PairSepsets::new();
        sep.insert(0, 2, &[3]);
        let mut calls: Vec<(u32, u32, Vec<u32>)> = Vec::new();
        let mut test = |x: u32, y: u32, s: &[u32]| -> Result<f64> {
            calls.push((x, y, s.to_vec()));
            Ok(if (x, y) == (0, 1) { 0.5 } else { 0.001 })
        };
        let params = RfciParams { alpha: 0.05, conservative: false, maj_rule: false, rules: [true; 10] };
        let out = rfci_orient(4, &[(0, 1), (1, 2)], sep, params, &mut test, &mut crate::backend::NullWatch).unwrap();
        // the whole set, then its subsets of size 1 (the same set), then the other side
        assert_eq!(calls, vec![(0, 1, vec![3]), (0, 1, vec![3]), (2, 1, vec![3])]);
        assert_eq!(out.tests_vstruc, 3);
        assert_eq!(out.tests_rules, 0);
        assert_eq!(out.sepset_writes, vec![(0, 1, vec![3]), (1, 0, vec![3])]);
        let m = out.pag.marks();
        assert_eq!((m[0 + 1 * 4], m[1 + 0 * 4]), (0, 0));
        assert_eq!((m[1 + 2 * 4], m[2 + 1 * 4]), (CIRCLE, CIRCLE));
    }
}
