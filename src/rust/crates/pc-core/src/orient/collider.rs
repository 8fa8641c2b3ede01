//! The collider step of `udag2pdagRelaxed` (its `orientCollider` block).
//!
//! pcalg walks `which(g == 1, arr.ind = TRUE)`, i.e. pairs (x, y) by column y, then row x, and for
//! every z in adj(y) \ {x} not adjacent to x with y in neither `sepset[[x]][[z]]` nor
//! `sepset[[z]][[x]]` (and the triple not unfaithful) claims x -> y <- z. Every claim made at
//! middle y writes the edges at column y, so for an edge u - v (u < v) the claims at v come
//! last. Hence a closed form, with claims found for all middles in parallel:
//! * without `solve.confl`: u -> v if v claimed it, else v -> u if u claimed it (last write wins);
//! * with `solve.confl` (`orientConflictCollider`): a claim from both ends gives the conflict
//!   code on both marks, a claim from one end the direction.

use rayon::prelude::*;

use super::pdag::{Pdag, ABSENT, CONFLICT, PRESENT};
use super::sepsets::{PairSepsets, Unfaithful};

/// Whether some z makes x -> y <- z a v-structure at middle y, for each x in y's list.
fn claims_at(g: &Pdag, sep: &PairSepsets, unf: &Unfaithful, y: usize, dst: &mut [bool]) {
    let n = g.neighbours(y);
    let yy = y as u32;
    for (xi, &x) in n.iter().enumerate() {
        dst[xi] = n.iter().any(|&z| z != x && !g.adjacent(x, z) && !sep.separates(x, z, yy) && !unf.contains(x, yy, z));
    }
}

/// `claims[k]` for slot k = (y, x): the claim at middle y of x -> y. On `pool` one vertex per
/// task (the writes are disjoint, and a hub's pairs dominate the cost); without one, in order.
fn claims(g: &Pdag, sep: &PairSepsets, unf: &Unfaithful, pool: Option<&rayon::ThreadPool>) -> Vec<bool> {
    let mut out = vec![false; g.marks().len()];
    let mut parts: Vec<&mut [bool]> = Vec::with_capacity(g.p());
    let mut rest = &mut out[..];
    for y in 0..g.p() {
        let (a, b) = rest.split_at_mut(g.slots(y).len());
        parts.push(a);
        rest = b;
    }
    match pool {
        Some(pool) => pool.install(|| parts.into_par_iter().enumerate().for_each(|(y, dst)| claims_at(g, sep, unf, y, dst))),
        None => parts.into_iter().enumerate().for_each(|(y, dst)| claims_at(g, sep, unf, y, dst)),
    }
    out
}

/// Orients the v-structures; returns how many edges got a direction or the conflict code.
pub fn orient_colliders(g: &mut Pdag, sep: &PairSepsets, unf: &Unfaithful, solve_confl: bool, pool: Option<&rayon::ThreadPool>) -> usize {
    let c = claims(g, sep, unf, pool);
    let mut changed = 0;
    for u in 0..g.p() {
        for k in g.slots(u) {
            let v = g.nbr_at(k) as usize;
            if v <= u {
                continue;
            }
            // slot k = (u, v): claims[k] is the claim at middle u (v -> u); the mirror's is at v
            let (at_u, at_v) = (c[k], c[g.rev(k)]);
            let (uv, vu) = match (at_u, at_v, solve_confl) {
                (false, false, _) => continue,
                (true, true, true) => (CONFLICT, CONFLICT),
                (_, true, _) => (PRESENT, ABSENT),
                (true, false, _) => (ABSENT, PRESENT),
            };
            g.set_pair(k, uv, vu);
            changed += 1;
        }
    }
    changed
}
