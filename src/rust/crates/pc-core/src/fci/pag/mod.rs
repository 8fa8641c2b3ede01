//! FCI's orientation, pcalg's `udag2pag()` (2.7-12, whose R code is the specification): the JCI
//! assumptions, the colliders from the separating sets (rule 0), then rules 1-4, 5-7 and 8-10,
//! each group repeated until a whole pass changes no mark. `marks.rs` holds the matrix,
//! `unf.rs` pcalg's `unfVect`, `paths.rs` the path searches and `rules.rs` one function per
//! rule, reusable by RFCI's `udag2apag()` (its rule 4 decides through [`Discriminate`]).
//!
//! pcalg's quirks are kept: each rule walks the cells its `which()` found when it started, in
//! column-major order; `faith.check` skips the cyclic triple (last, first, second); the path of
//! `minDiscrPath` keeps only its last step; rule 10's test `length(indX >= 2)` passes with one
//! candidate; rule 0 tests adjacency of x and z by `amat[x, z]` alone, as rule 10 tests the
//! second nodes by `amat[first, second]`.

pub mod marks;
pub mod paths;
pub mod rules;
pub mod unf;

#[cfg(test)]
mod tests;

pub use marks::{Pag, ARROW, CIRCLE, NONE, TAIL};
pub use rules::{BySepsets, Discriminate, PathVerdict, Rule10Paths};
pub use unf::{numb2triple, UnfTriples};

use crate::backend::Watch;
use crate::error::{PcError, Result};
use crate::orient::PairSepsets;

/// pcalg's `jci`: which JCI assumptions hold for the context variables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jci {
    /// "0": none.
    Off,
    /// "1": no system variable causes a context variable (context *-> system).
    One,
    /// "12": and no system variable confounds one (context -> system).
    OneTwo,
    /// "123": and the context variables are all adjacent, with arrowheads at each other, and
    /// are never the middle of a collider found from the separating sets.
    OneTwoThree,
}

impl Jci {
    pub fn from_r(s: &str) -> Option<Self> {
        Some(match s {
            "0" => Jci::Off,
            "1" => Jci::One,
            "12" => Jci::OneTwo,
            "123" => Jci::OneTwoThree,
            _ => return None,
        })
    }
}

#[derive(Clone, Copy, Debug)]
pub struct PagOptions {
    /// pcalg's `rules`: rule k runs when `rules[k - 1]`.
    pub rules: [bool; 10],
    pub jci: Jci,
    /// pcalg's `orientCollider`: rule 0 runs.
    pub orient_collider: bool,
}

impl Default for PagOptions {
    fn default() -> Self {
        PagOptions { rules: [true; 10], jci: Jci::Off, orient_collider: true }
    }
}

/// The JCI assumptions' marks (before rule 0). `context[v]`: v is a context variable (empty:
/// none, as pcalg's NULL). pcalg skips them, as everything else, on a graph without edges.
pub fn apply_jci(pag: &mut Pag, context: &[bool], jci: Jci) {
    if jci == Jci::Off || context.is_empty() || !pag.has_edges() {
        return;
    }
    let p = pag.p() as u32;
    let ctx: Vec<u32> = (0..p).filter(|&v| context[v as usize]).collect();
    for &x in &ctx {
        for y in 0..p {
            if jci == Jci::OneTwoThree && x != y && context[y as usize] {
                pag.set(x, y, ARROW);
            }
            if pag.get(x, y) != NONE && !context[y as usize] {
                if jci == Jci::One {
                    pag.set(x, y, ARROW);
                } else {
                    pag.set(y, x, TAIL);
                    pag.set(x, y, ARROW);
                }
            }
        }
    }
}

/// Rule 0 and the rules, on a graph that [`apply_jci`] has seen. `sep` needs the separating sets
/// of [`Pag::sepset_pairs`] (taken after `apply_jci`); `watch` may stop the work between passes.
pub fn orient(pag: &mut Pag, sep: &PairSepsets, unf: &mut UnfTriples, context: &[bool], opts: &PagOptions, watch: &mut dyn Watch) -> Result<()> {
    if !pag.has_edges() {
        return Ok(());
    }
    if context.len() != pag.p() && !context.is_empty() {
        return Err(PcError::invalid("contextVars", format!("must be given for the {} variables", pag.p())));
    }
    let ctx = |v: u32| !context.is_empty() && context[v as usize];
    let r = &opts.rules;
    if opts.orient_collider {
        let jci3 = opts.jci == Jci::OneTwoThree;
        rules::rule0(pag, sep, unf, |y| jci3 && ctx(y));
    }
    let keep_tail = opts.jci != Jci::Off;
    let mut decide = BySepsets(sep);
    let mut pass = |pag: &mut Pag, unf: &mut UnfTriples, group: u8| -> Result<()> {
        match group {
            0 => {
                if r[0] {
                    rules::rule1(pag, unf);
                }
                if r[1] {
                    rules::rule2(pag);
                }
                if r[2] {
                    rules::rule3(pag, unf);
                }
                if r[3] {
                    rules::rule4(pag, unf, &mut decide, keep_tail)?;
                }
            }
            1 => {
                if r[4] {
                    rules::rule5(pag, unf);
                }
                if r[5] {
                    rules::rule6(pag);
                }
                if r[6] {
                    rules::rule7(pag, unf);
                }
            }
            _ => {
                if r[7] {
                    rules::rule8(pag);
                }
                if r[8] {
                    rules::rule9(pag, unf);
                }
                if r[9] {
                    rules::rule10(pag, unf, Rule10Paths::EdgeWhenAdjacent);
                }
            }
        }
        Ok(())
    };
    for group in 0..3 {
        loop {
            if !watch.keep_going() {
                return Err(PcError::Interrupted);
            }
            pag.take_changed();
            pass(pag, unf, group)?;
            if !pag.take_changed() {
                break;
            }
        }
    }
    Ok(())
}

/// pcalg's `udag2pag(pag, sepset, rules, unfVect, jci, contextVars, orientCollider)`.
pub fn udag2pag(pag: &mut Pag, sep: &PairSepsets, unf: &mut UnfTriples, context: &[bool], opts: &PagOptions, watch: &mut dyn Watch) -> Result<()> {
    if !pag.has_edges() {
        return Ok(());
    }
    apply_jci(pag, context, opts.jci);
    orient(pag, sep, unf, context, opts, watch)
}
