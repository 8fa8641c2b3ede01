//! The PAG as pcalg holds it: a p x p matrix of edge marks, `amat[a, b]` the mark at b on the
//! edge a - b, with pcalg's codes. The rules read single cells and scan the rows and columns of
//! one node, so the matrix is dense (one byte a cell, column-major as R's) and each node keeps the
//! sorted list of the nodes it shares a non-zero cell with: a scan of R's whole row or column is
//! a walk over that list, in R's ascending order.

use crate::error::{PcError, Result};

/// No edge (pcalg's 0).
pub const NONE: u8 = 0;
/// A circle (pcalg's 1).
pub const CIRCLE: u8 = 1;
/// An arrowhead (pcalg's 2).
pub const ARROW: u8 = 2;
/// A tail (pcalg's 3).
pub const TAIL: u8 = 3;

#[derive(Clone, Debug)]
pub struct Pag {
    p: usize,
    /// `m[a + b * p]` = `amat[a, b]`.
    m: Vec<u8>,
    /// Ascending: every u with `amat[u, v]` or `amat[v, u]` non-zero (v itself when `amat[v, v]`
    /// is), and possibly nodes whose cells were set to 0 since: a superset, which is enough
    /// because every scan tests its cells.
    nb: Vec<Vec<u32>>,
    /// A cell changed value since the last `take_changed()`.
    changed: bool,
    /// Some cell was assigned (R turns an integer matrix into a double one on any assignment).
    wrote: bool,
}

impl Pag {
    /// The matrix `marks` (p x p, column-major) of pcalg's codes 0 to 3.
    pub fn from_marks(p: usize, marks: Vec<u8>) -> Result<Self> {
        if p.checked_mul(p) != Some(marks.len()) {
            return Err(PcError::invalid("pag", format!("must be a {p} x {p} matrix")));
        }
        if let Some(k) = marks.iter().position(|&v| v > TAIL) {
            return Err(PcError::invalid("pag", format!("holds {} at [{}, {}]; the marks are 0 (none), 1 (circle), 2 (arrowhead) and 3 (tail)", marks[k], k % p + 1, k / p + 1)));
        }
        let mut nb: Vec<Vec<u32>> = vec![Vec::new(); p];
        for b in 0..p {
            for (a, &v) in marks[b * p..(b + 1) * p].iter().enumerate() {
                if v != NONE {
                    nb[b].push(a as u32);
                    if a != b {
                        nb[a].push(b as u32);
                    }
                }
            }
        }
        for l in &mut nb {
            l.sort_unstable();
            l.dedup();
        }
        Ok(Pag { p, m: marks, nb, changed: false, wrote: false })
    }

    /// A p x p PAG from 0-based `(a, b, mark at b, mark at a)` edges, the other cells 0.
    pub fn from_edges(p: usize, edges: &[(u32, u32, u8, u8)]) -> Result<Self> {
        let mut m = vec![NONE; p * p];
        for &(a, b, at_b, at_a) in edges {
            if a as usize >= p || b as usize >= p {
                return Err(PcError::invalid("pag", format!("edge {a} - {b} outside 0..{p}")));
            }
            m[a as usize + b as usize * p] = at_b;
            m[b as usize + a as usize * p] = at_a;
        }
        Self::from_marks(p, m)
    }

    #[inline]
    pub fn p(&self) -> usize {
        self.p
    }

    /// `amat[a, b]`: the mark at b on the edge a - b.
    #[inline]
    pub fn get(&self, a: u32, b: u32) -> u8 {
        self.m[a as usize + b as usize * self.p]
    }

    /// `amat[a, b] <- v`.
    #[inline]
    pub fn set(&mut self, a: u32, b: u32, v: u8) {
        self.wrote = true;
        let k = a as usize + b as usize * self.p;
        let old = self.m[k];
        if old == v {
            return;
        }
        self.changed = true;
        if old == NONE && self.get(b, a) == NONE {
            self.connect(a, b);
        }
        self.m[k] = v;
    }

    fn connect(&mut self, a: u32, b: u32) {
        for (u, v) in [(a, b), (b, a)] {
            let l = &mut self.nb[u as usize];
            if let Err(k) = l.binary_search(&v) {
                l.insert(k, v);
            }
        }
    }

    /// The nodes v shares a cell with, ascending (a superset: see `nb`).
    #[inline]
    pub fn neighbours(&self, v: u32) -> &[u32] {
        &self.nb[v as usize]
    }

    /// pcalg's `which(f(amat, t(amat)), arr.ind = TRUE)`: the cells (a, b) with
    /// `cond(amat[a, b], amat[b, a])`, column by column, rows ascending. `cond(0, 0)` must be
    /// false (only cells of adjacent pairs are visited).
    pub fn cells(&self, cond: impl Fn(u8, u8) -> bool) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for b in 0..self.p as u32 {
            for &a in &self.nb[b as usize] {
                if cond(self.get(a, b), self.get(b, a)) {
                    out.push((a, b));
                }
            }
        }
        out
    }

    /// `amat[a, b]` or `amat[b, a]` non-zero.
    #[inline]
    pub fn adjacent(&self, a: u32, b: u32) -> bool {
        self.get(a, b) != NONE || self.get(b, a) != NONE
    }

    /// Some cell is non-zero (pcalg's `any(pag != 0)`).
    pub fn has_edges(&self) -> bool {
        self.nb.iter().any(|l| !l.is_empty())
    }

    /// Whether a cell changed value since the last call (pcalg's `any(old_pag1 != pag)`: a mark
    /// only ever moves from circle to tail or arrowhead, or from tail to arrowhead, so a cell
    /// that changed never returns to its old value within a pass), and clears it.
    pub fn take_changed(&mut self) -> bool {
        std::mem::replace(&mut self.changed, false)
    }

    /// Some cell was assigned, even to its own value.
    pub fn wrote(&self) -> bool {
        self.wrote
    }

    /// The matrix, column-major.
    pub fn marks(&self) -> &[u8] {
        &self.m
    }

    /// The pairs x < z that orientation may look up a separating set of: not adjacent in both
    /// directions, with a common neighbour (the ends of a collider candidate, or of a
    /// discriminating path, whose second node is adjacent to both).
    pub fn sepset_pairs(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for y in 0..self.p as u32 {
            let n = &self.nb[y as usize];
            for (i, &x) in n.iter().enumerate() {
                if x == y {
                    continue;
                }
                for &z in &n[i + 1..] {
                    if z != y && (self.get(x, z) == NONE || self.get(z, x) == NONE) {
                        out.push((x, z));
                    }
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}
