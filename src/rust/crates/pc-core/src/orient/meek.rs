//! Rules 1-3 of `udag2pdagRelaxed`, as sequential sweeps in pcalg's order.
//!
//! Each rule is one sweep over the ordered pairs (a, b) that its `ind` lists at the sweep's
//! start: `which(..., arr.ind = TRUE)`, i.e. by column b, then row a; here by b ascending and a
//! along b's sorted neighbour list. pcalg reads the candidate conditions from `search.pdag`:
//! without `solve.confl` that is the live pdag (rules 1 and 2 copy it back after every pair,
//! rule 3 after every orientation, which is the same thing), with `solve.confl` the sweep's start
//! (never refreshed). Writes always go to the live pdag. Rule 1 -> 2 -> 3 repeats until a whole
//! round changes no mark.
//!
//! A sweep costs O(sum of deg^2) over neighbour lists, not pcalg's O(p^2) matrix copies.

use super::pdag::{try_filled, Pdag, ABSENT, CONFLICT, PRESENT};
use crate::error::Result;
use super::sepsets::Unfaithful;

/// Which marks the candidate conditions read.
#[inline]
fn search<'a>(g: &'a Pdag, snap: &'a [u8], solve_confl: bool) -> &'a [u8] {
    if solve_confl {
        snap
    } else {
        &g.mark
    }
}

/// `pdag[a, b]` and `pdag[b, a]` as one pair, read through slot k = (b, a).
#[inline]
fn pair_at(m: &[u8], g: &Pdag, k_ba: usize) -> (u8, u8) {
    (m[g.rev(k_ba)], m[k_ba])
}

/// The `solve.confl` write: an undirected a - b becomes a -> b, b -> a becomes the conflict
/// code, anything else stays. `k_ab` is the slot (a, b).
#[inline]
fn orient_or_conflict(g: &mut Pdag, k_ab: usize) {
    let (ab, ba) = (g.mark[k_ab], g.mark[g.rev(k_ab)]);
    if ab == PRESENT && ba == PRESENT {
        g.set_pair(k_ab, PRESENT, ABSENT);
    } else if ab == ABSENT && ba == PRESENT {
        g.set_pair(k_ab, CONFLICT, CONFLICT);
    }
}

/// The rules' write to a - b (slot k = (a, b)): a -> b, or with `solve.confl` as
/// [`orient_or_conflict`].
#[inline]
fn write_directed(g: &mut Pdag, k_ab: usize, solve_confl: bool) {
    if solve_confl {
        orient_or_conflict(g, k_ab);
    } else {
        g.set_pair(k_ab, PRESENT, ABSENT);
    }
}

/// Rule 1: a -> b - c with a, c not adjacent gives b -> c (with `solve.confl`, c -> b gives the
/// conflict code); unfaithful triples (a, b, c) are skipped.
pub fn rule1(g: &mut Pdag, snap: &mut Vec<u8>, unf: &Unfaithful, solve_confl: bool) {
    snap.clone_from(&g.mark);
    for b in 0..g.p() {
        for k in g.slots(b) {
            // k = (b, a); (a, b) is in `ind` when a -> b at the sweep's start
            if pair_at(snap, g, k) != (PRESENT, ABSENT) {
                continue;
            }
            let a = g.nbr_at(k);
            for kc in g.slots(b) {
                let c = g.nbr_at(kc);
                let s = search(g, snap, solve_confl);
                // isC: b - c undirected in search.pdag, and a, c not adjacent (adjacency never
                // changes, so the skeleton says it); c != a since a -> b there
                if s[kc] != PRESENT || s[g.rev(kc)] != PRESENT || g.adjacent(a, c) {
                    continue;
                }
                if !unf.contains(a, b as u32, c) {
                    write_directed(g, kc, solve_confl);
                }
            }
        }
    }
}

/// Marks b's neighbours in `stamp` (slot + 1 of (b, c) at index c) for the column's pairs.
#[inline]
fn stamp_column(g: &Pdag, b: usize, stamp: &mut [u32]) {
    for k in g.slots(b) {
        stamp[g.nbr_at(k) as usize] = k as u32 + 1;
    }
}

#[inline]
fn unstamp_column(g: &Pdag, b: usize, stamp: &mut [u32]) {
    for &c in g.neighbours(b) {
        stamp[c as usize] = 0;
    }
}

/// One sweep of rule 2 or 3: every pair (a, b) undirected at the sweep's start, by column b
/// (whose neighbours are stamped), gets a -> b written when `fires(g, search, stamp, a, b)`.
fn sweep_undirected(g: &mut Pdag, snap: &mut Vec<u8>, stamp: &mut [u32], solve_confl: bool, mut fires: impl FnMut(&Pdag, &[u8], &[u32], usize, usize) -> bool) {
    snap.clone_from(&g.mark);
    for b in 0..g.p() {
        stamp_column(g, b, stamp);
        for k in g.slots(b) {
            if pair_at(snap, g, k) != (PRESENT, PRESENT) {
                continue;
            }
            let a = g.nbr_at(k) as usize;
            if fires(g, search(g, snap, solve_confl), stamp, a, b) {
                write_directed(g, g.rev(k), solve_confl);
            }
        }
        unstamp_column(g, b, stamp);
    }
}

/// Rule 2: a -> c -> b with a - b gives a -> b (with `solve.confl`, b -> a gives the conflict code).
pub fn rule2(g: &mut Pdag, snap: &mut Vec<u8>, stamp: &mut [u32], solve_confl: bool) {
    sweep_undirected(g, snap, stamp, solve_confl, |g, s, stamp, a, _b| {
        g.slots(a).any(|ka| {
            // a -> c, then c -> b through b's stamped slot (b, c)
            let kb = stamp[g.nbr_at(ka) as usize];
            s[ka] == PRESENT && s[g.rev(ka)] == ABSENT && kb != 0 && {
                let kbc = kb as usize - 1;
                s[g.rev(kbc)] == PRESENT && s[kbc] == ABSENT
            }
        })
    });
}

/// Rule 3: a - c1 -> b and a - c2 -> b with c1, c2 not adjacent and a - b gives a -> b (with
/// `solve.confl`, b -> a gives the conflict code); unfaithful triples (c1, a, c2) are skipped.
/// pcalg stops at the first pair that writes; which pair that is never changes the write.
pub fn rule3(g: &mut Pdag, snap: &mut Vec<u8>, stamp: &mut [u32], cs: &mut Vec<u32>, unf: &Unfaithful, solve_confl: bool) {
    sweep_undirected(g, snap, stamp, solve_confl, |g, s, stamp, a, _b| {
        cs.clear();
        for ka in g.slots(a) {
            let c = g.nbr_at(ka);
            let kb = stamp[c as usize];
            if kb == 0 || s[ka] != PRESENT || s[g.rev(ka)] != PRESENT {
                continue;
            }
            let kbc = kb as usize - 1;
            if s[g.rev(kbc)] == PRESENT && s[kbc] == ABSENT {
                cs.push(c);
            }
        }
        cs.len() >= 2 && cs.iter().enumerate().any(|(i, &c1)| cs[i + 1..].iter().any(|&c2| !g.adjacent(c1, c2) && !unf.contains(c1, a as u32, c2)))
    });
}

/// Rounds of rule 1, 2, 3 until a round changes nothing; returns the number of rounds.
/// `keep_going` is asked between rules (a `false` stops early and is reported by the caller).
pub fn apply_rules(g: &mut Pdag, unf: &Unfaithful, solve_confl: bool, keep_going: &mut dyn FnMut() -> bool) -> Result<usize> {
    let mut snap = try_filled(g.mark.len(), ABSENT, "the rules' snapshot")?;
    let mut old = try_filled(g.mark.len(), ABSENT, "the rules' snapshot")?;
    let mut stamp = try_filled(g.p(), 0u32, "the rules' neighbour marks")?;
    let mut cs = Vec::new();
    let mut rounds = 0;
    loop {
        rounds += 1;
        old.clone_from(&g.mark);
        rule1(g, &mut snap, unf, solve_confl);
        if !keep_going() {
            break;
        }
        rule2(g, &mut snap, &mut stamp, solve_confl);
        if !keep_going() {
            break;
        }
        rule3(g, &mut snap, &mut stamp, &mut cs, unf, solve_confl);
        if old == g.mark || !keep_going() {
            break;
        }
    }
    Ok(rounds)
}
