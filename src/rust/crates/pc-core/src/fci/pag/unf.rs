//! pcalg's `unfVect`: the triples that conservative / majority-rule FCI found ambiguous, as the
//! numbers `triple2numb(p, i, j, k) = k + p * (j + p * i)` of 1-based nodes. pcalg tests
//! `any(unfVect == triple2numb(...))` in double precision; with i, j, k in 1..p a number has at
//! most one triple, so the numbers are decoded once and a number of no triple (not an integer,
//! out of range, NA) never matches, as in R.

use crate::orient::Unfaithful;

#[derive(Clone, Debug, Default)]
pub struct UnfTriples {
    /// `length(unfVect) > 0`: pcalg then takes the conservative branch of every rule, even when
    /// no number is a triple of the graph.
    listed: bool,
    set: Unfaithful,
}

/// The 0-based (i, j, k) of `triple2numb(p, i + 1, j + 1, k + 1) == v`, if any.
pub fn numb2triple(p: usize, v: f64) -> Option<(u32, u32, u32)> {
    if p == 0 || !v.is_finite() || v.fract() != 0.0 || !(1.0..=9_007_199_254_740_992.0).contains(&v) {
        return None;
    }
    let (n, p) = (v as u64, p as u64);
    let k = (n - 1) % p + 1;
    let rest = (n - k) / p;
    if rest == 0 {
        return None;
    }
    let j = (rest - 1) % p + 1;
    let i = (rest - j) / p;
    if i < 1 || i > p {
        return None;
    }
    Some(((i - 1) as u32, (j - 1) as u32, (k - 1) as u32))
}

impl UnfTriples {
    /// An empty `unfVect` (NULL).
    pub fn none() -> Self {
        Self::default()
    }

    /// `unfVect` as R holds it (double), for a graph of p nodes.
    pub fn from_numbers(p: usize, numbers: &[f64]) -> Self {
        let mut set = Unfaithful::new();
        for &v in numbers {
            if let Some((i, j, k)) = numb2triple(p, v) {
                set.insert(i, j, k);
            }
        }
        UnfTriples { listed: !numbers.is_empty(), set }
    }

    /// `length(unfVect) > 0`.
    #[inline]
    pub fn listed(&self) -> bool {
        self.listed
    }

    /// Appends the triple (x, y, z) (RFCI's checks add triples while the rules run).
    pub fn insert(&mut self, x: u32, y: u32, z: u32) {
        self.listed = true;
        self.set.insert(x, y, z);
    }

    /// (x, y, z) or (z, y, x) is listed.
    #[inline]
    pub fn contains(&self, x: u32, y: u32, z: u32) -> bool {
        self.set.contains(x, y, z)
    }

    /// pcalg's `faith.check(path, unfVect, p)`: no listed triple among the path's consecutive
    /// triples, taken cyclically. pcalg's loop starts at index 0 of its index vectors, which
    /// selects nothing, so the triple (last, first, second) is never checked.
    pub fn faithful(&self, path: &[u32]) -> bool {
        let n = path.len();
        (0..n.saturating_sub(1)).all(|k| !self.contains(path[k % n], path[(k + 1) % n], path[(k + 2) % n]))
    }
}
