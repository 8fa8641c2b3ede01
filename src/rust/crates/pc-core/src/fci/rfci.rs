//! RFCI after the skeleton, as pcalg 2.7-12's `rfci()` computes it: `find.unsh.triple()`,
//! `rfci.vStruc()` (with `dep.triple()` and, for the conservative and majority rules,
//! `checkTriple()`), then `udag2apag()` (`apag.rs`), whose rule 4 runs `checkEdges()` here.
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

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::backend::Watch;
use crate::error::{PcError, Result};
use crate::orient::sepsets::PairSepsets;
use crate::orient::triples::{decide, Decision, TripleRule};

/// A PAG's marks as R's p x p matrix (column-major): 0 no edge, 1 circle, 2 arrowhead, 3 tail;
/// `get(i, j)` is `amat[i, j]`, the mark at j of the edge i - j.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Amat {
    p: usize,
    m: Vec<u8>,
}

impl Amat {
    /// The skeleton: marks 1 at both ends of every edge (0-based, either order).
    pub fn from_edges(p: usize, edges: &[(u32, u32)]) -> Result<Self> {
        let mut m = crate::mem::try_filled(p.checked_mul(p).ok_or_else(|| PcError::Internal("p * p overflows".into()))?, 0u8, "p", "the RFCI graph")?;
        for &(a, b) in edges {
            let (a, b) = (a as usize, b as usize);
            if a >= p || b >= p || a == b {
                return Err(PcError::Internal(format!("edge {} - {} is not one of {p} variables", a + 1, b + 1)));
            }
            m[a + b * p] = 1;
            m[b + a * p] = 1;
        }
        Ok(Amat { p, m })
    }

    pub fn p(&self) -> usize {
        self.p
    }

    #[inline]
    pub fn get(&self, i: u32, j: u32) -> u8 {
        self.m[i as usize + j as usize * self.p]
    }

    #[inline]
    pub fn set(&mut self, i: u32, j: u32, v: u8) {
        self.m[i as usize + j as usize * self.p] = v;
    }

    /// R's `which(f(i, j), arr.ind = TRUE)`: the cells in column-major order.
    pub fn cells(&self, f: impl Fn(u8, u8) -> bool) -> Vec<(u32, u32)> {
        let p = self.p as u32;
        let mut out = Vec::new();
        for j in 0..p {
            for i in 0..p {
                if f(self.get(i, j), self.get(j, i)) {
                    out.push((i, j));
                }
            }
        }
        out
    }

    /// R's `which(f(k))` over k = 1..p, ascending.
    pub fn which(&self, f: impl Fn(u32) -> bool) -> Vec<u32> {
        (0..self.p as u32).filter(|&k| f(k)).collect()
    }

    /// The marks, column-major, as R's matrix holds them.
    pub fn marks(&self) -> &[u8] {
        &self.m
    }
}

/// pcalg's `triple2numb(p, i, j, k)` of 0-based vertices, in R's double arithmetic.
#[inline]
pub fn triple_key(p: usize, i: u32, j: u32, k: u32) -> f64 {
    let pf = p as f64;
    (k as f64 + 1.0) + pf * ((j as f64 + 1.0) + pf * (i as f64 + 1.0))
}

/// pcalg's `unfVect`: `triple2numb()` keys of triples judged unfaithful, looked up as
/// `any(unfVect == key)`.
#[derive(Clone, Debug, Default)]
pub struct UnfaithfulKeys {
    keys: Vec<f64>,
    set: HashSet<u64>,
}

impl UnfaithfulKeys {
    pub fn push(&mut self, key: f64) {
        self.keys.push(key);
        self.set.insert(key.to_bits());
    }

    pub fn extend(&mut self, keys: &[f64]) {
        for &k in keys {
            self.push(k);
        }
    }

    #[inline]
    pub fn has(&self, key: f64) -> bool {
        self.set.contains(&key.to_bits())
    }

    /// `length(unfVect) == 0`, which switches pcalg's rules to their unconditional forms.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn keys(&self) -> &[f64] {
        &self.keys
    }

    /// (x, y, z) or (z, y, x) is listed.
    #[inline]
    pub fn either(&self, p: usize, x: u32, y: u32, z: u32) -> bool {
        !self.is_empty() && (self.has(triple_key(p, x, y, z)) || self.has(triple_key(p, z, y, x)))
    }
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
pub fn find_unshielded_triples(g: &Amat) -> Triples {
    let p = g.p();
    let mut out = Triples::default();
    for (x, y) in g.cells(|v, _| v == 1) {
        for z in g.which(|k| g.get(y, k) == 1) {
            if z != x && g.get(x, z) == 0 && g.get(z, x) == 0 && x <= z {
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

/// The graph, the sepsets and the tests that RFCI's stages after the skeleton share.
pub struct Rfci<'a> {
    pub amat: Amat,
    pub sep: SepsetLog,
    pub tests: Tests<'a>,
}

impl<'a> Rfci<'a> {
    pub fn new(amat: Amat, sep: SepsetLog, tests: Tests<'a>) -> Self {
        Rfci { amat, sep, tests }
    }

    fn p(&self) -> usize {
        self.amat.p()
    }

    fn remove_edge(&mut self, x: u32, y: u32, s: &[u32]) {
        self.amat.set(x, y, 0);
        self.amat.set(y, x, 0);
        self.sep.set(x, y, s);
        self.sep.set(y, x, s);
    }

    /// `sepSet`'s subsets of size 1, 2, ... in `combn()` order, testing x and y given each; the
    /// first independence removes the edge and sets both sepsets. True when one was found.
    fn remove_by_subsets(&mut self, x: u32, y: u32, sep_set: &[u32], stage: &str) -> Result<bool> {
        let n = sep_set.len();
        let mut s = Vec::with_capacity(n);
        for ord in 1..=n {
            let mut idx: Vec<usize> = (0..ord).collect();
            loop {
                s.clear();
                s.extend(idx.iter().map(|&i| sep_set[i]));
                if self.tests.independent(x, y, &s, stage)? {
                    self.remove_edge(x, y, &s);
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
    fn dep_side(&mut self, a: u32, y: u32, x: u32, z: u32, sep_set: &[u32], list: &mut Triples, true_v: &mut Vec<bool>) -> Result<()> {
        let p = self.p();
        self.remove_by_subsets(a, y, sep_set, "the unshielded-triple check (dep.triple)")?;
        let g = &self.amat;
        let circ = |u: u32, k: u32| g.get(u, k) == 1 && g.get(k, u) == 1;
        let gap = |u: u32, k: u32| g.get(u, k) == 0 && g.get(k, u) == 0;
        let not_xyz = |k: u32| k != x && k != y && k != z;
        let (lo, hi) = (a.min(y), a.max(y));
        let ind_m = g.which(|k| circ(a, k) && circ(y, k) && not_xyz(k));
        let ind_q = g.which(|k| circ(a, k) && gap(y, k) && not_xyz(k));
        let ind_r = g.which(|k| gap(a, k) && circ(y, k) && not_xyz(k));
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
    fn dep_triple(&mut self, list: &mut Triples, true_v: &mut Vec<bool>) -> Result<()> {
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
                self.dep_side(x, y, x, z, &sep_set, list, true_v)?;
            }
            let del2 = self.tests.independent(z, y, &sep_set, stage)?;
            if del2 {
                self.dep_side(z, y, x, z, &sep_set, list, true_v)?;
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
        let (d, _) = decide(n_indep, with_y, rule);
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

    /// pcalg's `rfci.vStruc()` on the listed triples; returns its `unfTripl` keys.
    pub fn v_structures(&mut self, mut list: Triples, rule: VStrucRule) -> Result<Vec<f64>> {
        let p = self.p();
        let mut unf: Vec<f64> = Vec::new();
        if list.is_empty() {
            return Ok(unf);
        }
        let mut true_v = vec![true; list.len()];
        self.dep_triple(&mut list, &mut true_v)?;
        if !true_v.iter().any(|&t| t) {
            return Ok(unf);
        }
        for i in 0..list.len() {
            if !true_v[i] {
                continue;
            }
            let [x, y, z] = list.t[i];
            if !rule.conservative {
                let a = &self.amat;
                if a.get(x, z) == 0 && a.get(x, y) != 0 && a.get(z, y) != 0 && !self.sep.separates(x, z, y) {
                    self.amat.set(x, y, 2);
                    self.amat.set(z, y, 2);
                }
                continue;
            }
            let nbrs_x = self.amat.which(|k| self.amat.get(k, x) != 0);
            let nbrs_z = self.amat.which(|k| self.amat.get(k, z) != 0);
            let (d, none, sa, sc) = self.check_triple(x, y, z, &nbrs_x, &nbrs_z, rule.maj_rule)?;
            if d == Decision::Ambiguous || (rule.unf_when_none && none) {
                unf.push(triple_key(p, x, y, z));
            }
            self.sep.set(x, z, &sa);
            self.sep.set(z, x, &sc);
            let a = &self.amat;
            let (kxyz, kzyx) = (triple_key(p, x, y, z), triple_key(p, z, y, x));
            if a.get(x, z) == 0 && a.get(x, y) != 0 && a.get(z, y) != 0 && !self.sep.separates(x, z, y) && !unf.contains(&kxyz) && !unf.contains(&kzyx) {
                self.amat.set(x, y, 2);
                self.amat.set(z, y, 2);
            }
        }
        Ok(unf)
    }

    /// pcalg's `checkEdges()` on a discriminating path (as `minDiscrPath()` returned it): each
    /// edge of the path tested given the subsets of the end points' sepset (less the edge's own
    /// ends) until one is independent; then that edge is removed and the new unshielded triples
    /// of its ends are run through `rfci.vStruc()`. Returns whether an edge was removed and that
    /// call's unfaithful triples.
    pub fn check_edges(&mut self, path: &[u32], conservative: bool) -> Result<(bool, Vec<f64>)> {
        let p = self.p();
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
            if !self.remove_by_subsets(x, y, &sep_set, "the discriminating-path check (checkEdges)")? {
                continue;
            }
            let (lo, hi) = (x.min(y), x.max(y));
            let g = &self.amat;
            let ind_m = g.which(|k| k != x && k != y && g.get(x, k) != 0 && g.get(k, x) != 0 && g.get(y, k) != 0 && g.get(k, y) != 0);
            if !ind_m.is_empty() {
                let mut list = Triples::default();
                for m in ind_m {
                    list.push(p, lo, m, hi);
                }
                unf = self.v_structures(list, VStrucRule { conservative, maj_rule: false, unf_when_none: true })?;
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
    pub amat: Amat,
    /// `sepset[[x]][[z]] <- set`, in pcalg's order, for R to repeat on the skeleton's list.
    pub sepset_writes: Vec<(u32, u32, Vec<u32>)>,
    /// Tests run by the v-structure stage, then by rule 4.
    pub tests_vstruc: u64,
    pub tests_rules: u64,
    /// Triples judged unfaithful (the v-structure stage's and rule 4's).
    pub unfaithful: usize,
}

/// `rfci()` after `skeleton()`: `find.unsh.triple()`, `rfci.vStruc()` (`version.unf = c(1, 1)`)
/// and `udag2apag()`. `edges`: the skeleton's (0-based); `sepsets`: its sets of the non-adjacent
/// pairs with a common neighbour (the only ones the stages read before writing them); `test`:
/// the p-value of (x, y, S), S in the order given.
pub fn rfci_orient(p: usize, edges: &[(u32, u32)], sepsets: PairSepsets, params: RfciParams, test: &mut dyn FnMut(u32, u32, &[u32]) -> Result<f64>, watch: &mut dyn Watch) -> Result<RfciOutcome> {
    let amat = Amat::from_edges(p, edges)?;
    let triples = find_unshielded_triples(&amat);
    let mut st = Rfci::new(amat, SepsetLog::new(sepsets), Tests::new(test, params.alpha, watch));
    let rule = VStrucRule { conservative: params.conservative, maj_rule: params.maj_rule, unf_when_none: false };
    let unf_keys = st.v_structures(triples, rule)?;
    let tests_vstruc = st.tests.count;
    let mut unf = UnfaithfulKeys::default();
    unf.extend(&unf_keys);
    st.udag2apag(params.rules, &mut unf)?;
    Ok(RfciOutcome { tests_vstruc, tests_rules: st.tests.count - tests_vstruc, unfaithful: unf.keys().len(), amat: st.amat, sepset_writes: st.sep.writes })
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
        let g = Amat::from_edges(4, &[(0, 1), (1, 2), (1, 3)]).unwrap();
        let t = find_unshielded_triples(&g);
        assert_eq!(t.t, vec![[0, 1, 2], [0, 1, 3], [2, 1, 3]]);
        assert_eq!(t.key[0], 3.0 + 4.0 * (2.0 + 4.0 * 1.0));
    }
}
