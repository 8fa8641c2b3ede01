//! pcalg's orientation rules as `udag2pag()` runs them, one function each. Every rule starts
//! from pcalg's `which(..., arr.ind = TRUE)` over the whole matrix, taken once when the rule
//! starts (column-major), and then walks those cells in order against the current marks without
//! testing the cell's own condition again: where the graph is not a faithful PAG, one cell's
//! orientation changes what a later one finds, so the order is part of the result.
//!
//! With a non-empty `unfVect` pcalg takes a second branch in rules 1, 3, 5, 7 and 10 (and in the
//! path searches), which skips the listed triples; rules 1 and 3 then also walk their candidates
//! in another way, which gives the same marks.

use super::marks::{Pag, ARROW, CIRCLE, NONE, TAIL};
use super::paths::{min_discr_path, min_uncov_circ_path, min_uncov_pd_path, potentially_directed};
use super::unf::UnfTriples;
use crate::error::Result;
use crate::orient::PairSepsets;

/// The nodes j of `v`'s list with `f(j)`, ascending (pcalg's `which()` over a row or column).
fn nodes_where(pag: &Pag, v: u32, f: impl Fn(u32) -> bool) -> Vec<u32> {
    pag.neighbours(v).iter().copied().filter(|&j| f(j)).collect()
}

/// Rule 0, the colliders: x *-> y <-* z for every x *-o y (a circle at y) and z adjacent to y
/// (by `amat[y, z]`), z not adjacent to x (by `amat[x, z]`), y in neither separating set of x
/// and z, and the triple not listed in `unfVect`. `skip(y)`: JCI assumption 3 leaves context
/// variables out as y.
pub fn rule0(pag: &mut Pag, sep: &PairSepsets, unf: &UnfTriples, skip: impl Fn(u32) -> bool) {
    for (x, y) in pag.cells(|v, _| v == CIRCLE) {
        let all_z = nodes_where(pag, y, |z| z != x && pag.get(y, z) != NONE);
        if skip(y) {
            continue;
        }
        for z in all_z {
            if pag.get(x, z) == NONE && !sep.separates(x, z, y) && !(unf.listed() && unf.contains(x, y, z)) {
                pag.set(x, y, ARROW);
                pag.set(z, y, ARROW);
            }
        }
    }
}

/// Rule 1: a *-> b o-* c, a and c not adjacent: b -> c.
pub fn rule1(pag: &mut Pag, unf: &UnfTriples) {
    for (a, b) in pag.cells(|v, t| v == ARROW && t != NONE) {
        let ind_c = nodes_where(pag, b, |c| {
            pag.get(b, c) != NONE && pag.get(c, b) == CIRCLE && pag.get(a, c) == NONE && pag.get(c, a) == NONE && c != a
        });
        for c in ind_c {
            if !unf.listed() || !unf.contains(a, b, c) {
                pag.set(b, c, ARROW);
                pag.set(c, b, TAIL);
            }
        }
    }
}

/// Rule 2: a -> b *-> c or a *-> b -> c, with a *-o c: a *-> c.
pub fn rule2(pag: &mut Pag) {
    for (a, c) in pag.cells(|v, t| v == CIRCLE && t != NONE) {
        let found = pag.neighbours(a).iter().any(|&b| {
            let (ab, ba, cb, bc) = (pag.get(a, b), pag.get(b, a), pag.get(c, b), pag.get(b, c));
            (ab == ARROW && ba == TAIL && cb != NONE && bc == ARROW) || (ab == ARROW && ba != NONE && cb == TAIL && bc == ARROW)
        });
        if found {
            pag.set(a, c, ARROW);
        }
    }
}

/// Rule 3: a *-> b <-* c, a *-o d o-* c, a and c not adjacent, d *-o b: d *-> b.
pub fn rule3(pag: &mut Pag, unf: &UnfTriples) {
    for (b, d) in pag.cells(|v, t| v != NONE && t == CIRCLE) {
        let ac = nodes_where(pag, b, |j| pag.get(b, j) != NONE && pag.get(j, b) == ARROW && pag.get(j, d) == CIRCLE && pag.get(d, j) != NONE);
        // each pair in combn()'s order; pcalg's first branch stops at the first orientation,
        // the second (with unfVect) sets the same mark again, which changes nothing
        'pairs: for i in 0..ac.len() {
            for k in i + 1..ac.len() {
                if pag.get(d, b) == ARROW && !unf.listed() {
                    break 'pairs;
                }
                let (a, c) = (ac[i], ac[k]);
                if pag.get(a, c) == NONE && pag.get(c, a) == NONE && (!unf.listed() || !unf.contains(a, d, c)) {
                    pag.set(d, b, ARROW);
                }
            }
        }
    }
}

/// Rule 4's verdict on a discriminating path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PathVerdict {
    /// b is a non-collider on the path: b -> c.
    NonCollider,
    /// b is a collider: a <-> b <-> c.
    Collider,
    /// The graph changed (RFCI removes edges found independent): look for a path again.
    Again,
}

/// What decides rule 4 on a discriminating path `(d, pred, b, c)` (see [`min_discr_path`]):
/// FCI reads the separating set of d and c; RFCI runs tests, may remove edges and add triples to
/// `unfVect`.
pub trait Discriminate {
    fn decide(&mut self, pag: &mut Pag, unf: &mut UnfTriples, path: &[u32]) -> Result<PathVerdict>;
}

impl<F: FnMut(&mut Pag, &mut UnfTriples, &[u32]) -> Result<PathVerdict>> Discriminate for F {
    fn decide(&mut self, pag: &mut Pag, unf: &mut UnfTriples, path: &[u32]) -> Result<PathVerdict> {
        self(pag, unf, path)
    }
}

/// FCI's rule 4: b is a non-collider when it is in `sepset[[d]][[c]]` or `sepset[[c]][[d]]`.
pub struct BySepsets<'a>(pub &'a PairSepsets);

impl Discriminate for BySepsets<'_> {
    fn decide(&mut self, _: &mut Pag, _: &mut UnfTriples, path: &[u32]) -> Result<PathVerdict> {
        let n = path.len();
        Ok(if self.0.separates(path[0], path[n - 1], path[n - 2]) { PathVerdict::NonCollider } else { PathVerdict::Collider })
    }
}

/// Rule 4, the discriminating paths: for b *-o c (a circle at b) and each a with b *-> a -> c,
/// the first discriminating path through a decides b. `keep_tail`: a collider leaves a tail at b
/// on a - b as it is (pcalg's JCI; otherwise the arrowhead overwrites it).
pub fn rule4(pag: &mut Pag, unf: &mut UnfTriples, decide: &mut dyn Discriminate, keep_tail: bool) -> Result<()> {
    for (b, c) in pag.cells(|v, t| v != NONE && t == CIRCLE) {
        let ind_a = nodes_where(pag, b, |j| pag.get(b, j) == ARROW && pag.get(j, b) != NONE && pag.get(c, j) == TAIL && pag.get(j, c) == ARROW);
        for a in ind_a {
            if pag.get(c, b) != CIRCLE {
                break;
            }
            while pag.get(a, b) != NONE && pag.get(a, c) != NONE && pag.get(b, c) != NONE {
                let Some(path) = min_discr_path(pag, a, b, c) else { break };
                match decide.decide(pag, unf, &path)? {
                    PathVerdict::NonCollider => {
                        pag.set(b, c, ARROW);
                        pag.set(c, b, TAIL);
                    }
                    PathVerdict::Collider => {
                        pag.set(b, c, ARROW);
                        pag.set(c, b, ARROW);
                        if !(keep_tail && pag.get(a, b) == TAIL) {
                            pag.set(a, b, ARROW);
                        }
                    }
                    PathVerdict::Again => continue,
                }
                break;
            }
        }
    }
    Ok(())
}

/// Rule 5: a o-o b closed into an uncovered circle path a o-o c o-o ... o-o d o-o b: every edge
/// of the cycle becomes a tail-tail edge.
pub fn rule5(pag: &mut Pag, unf: &UnfTriples) {
    let circ = |pag: &Pag, u: u32, v: u32| pag.get(u, v) == CIRCLE && pag.get(v, u) == CIRCLE;
    let undirect = |pag: &mut Pag, u: u32, v: u32| {
        pag.set(u, v, TAIL);
        pag.set(v, u, TAIL);
    };
    for (a, b) in pag.cells(|v, t| v == CIRCLE && t == CIRCLE) {
        let ind_c = nodes_where(pag, a, |j| circ(pag, a, j) && pag.get(b, j) == NONE && pag.get(j, b) == NONE && j != b);
        let ind_d = nodes_where(pag, b, |j| circ(pag, b, j) && pag.get(a, j) == NONE && pag.get(j, a) == NONE && j != a);
        if ind_c.is_empty() || ind_d.is_empty() {
            continue;
        }
        'c: for &c in &ind_c {
            for &d in &ind_d {
                if pag.get(a, b) != CIRCLE {
                    break 'c;
                }
                if circ(pag, c, d) {
                    if !unf.listed() || unf.faithful(&[a, c, d, b]) {
                        undirect(pag, a, b);
                        undirect(pag, a, c);
                        undirect(pag, c, d);
                        undirect(pag, d, b);
                    }
                } else if let Some(ucp) = min_uncov_circ_path(pag, unf, [a, c, d, b]) {
                    let n = ucp.len();
                    undirect(pag, ucp[0], ucp[n - 1]);
                    for w in ucp.windows(2) {
                        undirect(pag, w[0], w[1]);
                    }
                }
            }
        }
    }
}

/// Rule 6: a - b o-* c (a tail-tail edge at b): b -* c.
pub fn rule6(pag: &mut Pag) {
    for (b, c) in pag.cells(|v, t| v != NONE && t == CIRCLE) {
        if pag.neighbours(b).iter().any(|&j| pag.get(b, j) == TAIL && pag.get(j, b) == TAIL) {
            pag.set(c, b, TAIL);
        }
    }
}

/// Rule 7: a -o b o-* c, a and c not adjacent: b -* c.
pub fn rule7(pag: &mut Pag, unf: &UnfTriples) {
    for (b, c) in pag.cells(|v, t| v != NONE && t == CIRCLE) {
        let ind_a = nodes_where(pag, b, |j| pag.get(b, j) == TAIL && pag.get(j, b) == CIRCLE && pag.get(c, j) == NONE && pag.get(j, c) == NONE && j != c);
        if ind_a.iter().any(|&a| !unf.listed() || !unf.contains(a, b, c)) {
            pag.set(c, b, TAIL);
        }
    }
}

/// Rule 8: a -> b -> c or a -o b -> c, with a o-> c: a -> c.
pub fn rule8(pag: &mut Pag) {
    for (a, c) in pag.cells(|v, t| v == ARROW && t == CIRCLE) {
        let found = pag.neighbours(a).iter().any(|&b| {
            pag.get(b, a) == TAIL && matches!(pag.get(a, b), ARROW | CIRCLE) && pag.get(c, b) == TAIL && pag.get(b, c) == ARROW
        });
        if found {
            pag.set(c, a, TAIL);
        }
    }
}

/// Rule 9: a o-> c and an uncovered potentially directed path a - b - ... - c, b not adjacent to
/// c: a -> c.
pub fn rule9(pag: &mut Pag, unf: &UnfTriples) {
    for (a, c) in pag.cells(|v, t| v == ARROW && t == CIRCLE) {
        let ind_b = nodes_where(pag, a, |j| potentially_directed(pag, a, j) && pag.get(c, j) == NONE && pag.get(j, c) == NONE && j != c);
        for b in ind_b {
            if pag.get(c, a) != CIRCLE {
                break;
            }
            if min_uncov_pd_path(pag, unf, a, b, c).is_some() {
                pag.set(c, a, TAIL);
            }
        }
    }
}

/// How rule 10 finds the paths from a to b and to d: `udag2pag()` takes the edge itself when
/// the path's second node is b (or d); `udag2apag()` searches in every case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rule10Paths {
    EdgeWhenAdjacent,
    AlwaysSearch,
}

/// Rule 10: a o-> c, b -> c <- d, and uncovered potentially directed paths a ... b and a ... d
/// whose second nodes are distinct and not adjacent (by the first's mark at the second): a -> c.
pub fn rule10(pag: &mut Pag, unf: &UnfTriples, form: Rule10Paths) {
    for (a, c) in pag.cells(|v, t| v == ARROW && t == CIRCLE) {
        let ind_b = nodes_where(pag, c, |j| pag.get(c, j) == TAIL && pag.get(j, c) == ARROW);
        if ind_b.len() < 2 {
            continue;
        }
        // the marks do not change until rule 10 orients a -> c, which ends the loops: the
        // candidates and each path search are the same every time they are asked for
        let mut ind_x: Option<Vec<u32>> = None;
        let mut found: std::collections::HashMap<(u32, u32), bool> = Default::default();
        'b: for &b in &ind_b {
            for &d in ind_b.iter().filter(|&&d| d != b) {
                if pag.get(c, a) != CIRCLE {
                    break 'b;
                }
                if potentially_directed(pag, a, b) && potentially_directed(pag, a, d) && pag.get(d, b) == NONE && pag.get(b, d) == NONE {
                    if !unf.listed() || !unf.contains(b, a, d) {
                        pag.set(c, a, TAIL);
                    }
                    continue;
                }
                let xs = ind_x.get_or_insert_with(|| nodes_where(pag, a, |j| potentially_directed(pag, a, j) && j != c));
                let mut path_to = |pag: &Pag, first: u32, to: u32| -> bool {
                    if form == Rule10Paths::EdgeWhenAdjacent && first == to {
                        return true;
                    }
                    *found.entry((first, to)).or_insert_with(|| min_uncov_pd_path(pag, unf, a, first, to).is_some())
                };
                'x: for &first in xs.iter() {
                    for &second in xs.iter().filter(|&&s| s != first) {
                        if pag.get(c, a) != CIRCLE {
                            break 'x;
                        }
                        let orient = match form {
                            Rule10Paths::EdgeWhenAdjacent => path_to(pag, first, b) && path_to(pag, second, d),
                            Rule10Paths::AlwaysSearch => {
                                let (t1, t2) = (path_to(pag, first, b), path_to(pag, second, d));
                                t1 && t2
                            }
                        } && pag.get(first, second) == NONE;
                        if orient && (!unf.listed() || !unf.contains(first, a, second)) {
                            pag.set(c, a, TAIL);
                        }
                    }
                }
            }
        }
    }
}
