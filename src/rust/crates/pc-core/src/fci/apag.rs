//! pcalg 2.7-12's `udag2apag()`: RFCI's rules 1-10 (`pag/rules.rs`, shared with FCI's
//! `udag2pag()`) in one loop until a whole pass leaves the matrix as it found it.
//!
//! Where `udag2apag()` differs from `udag2pag()`: no JCI and no rule 0; one loop over all ten
//! rules (not three groups); rule 4 decides a discriminating path by `checkEdges()`'s tests
//! (`Rfci::check_edges`), which may remove an edge (then the path is looked for again) and add
//! unfaithful triples to `unfVect`, and otherwise by the end points' sepsets as they are after
//! those tests; rule 10 searches for its paths even where the path's second node is its end.

use super::pag::rules::{self, PathVerdict, Rule10Paths};
use super::pag::{Pag, UnfTriples};
use super::rfci::Rfci;
use crate::error::Result;

/// pcalg's `udag2apag(apag, ..., rules, unfVect)` on `pag`, with `st`'s sepsets and tests; `unf`
/// is `unfVect`, which rule 4's edge checks extend.
pub fn udag2apag(st: &mut Rfci, pag: &mut Pag, rules: [bool; 10], unf: &mut UnfTriples) -> Result<()> {
    if !pag.has_edges() {
        return Ok(());
    }
    // pcalg compares the whole matrix with the one the pass started from (its first
    // "previous" matrix is all zeros, so the rules run at least once)
    loop {
        let before = pag.marks().to_vec();
        if rules[0] {
            rules::rule1(pag, unf);
        }
        if rules[1] {
            rules::rule2(pag);
        }
        if rules[2] {
            rules::rule3(pag, unf);
        }
        if rules[3] {
            let mut by_tests = |pag: &mut Pag, unf: &mut UnfTriples, path: &[u32]| -> Result<PathVerdict> {
                // checkEdges() is conservative when udag2apag() holds unfaithful triples
                let (deleted, found) = st.check_edges(pag, path, unf.listed())?;
                for [x, y, z] in found {
                    unf.insert(x, y, z);
                }
                if deleted {
                    return Ok(PathVerdict::Again);
                }
                let n = path.len();
                Ok(if st.sep.separates(path[0], path[n - 1], path[n - 2]) { PathVerdict::NonCollider } else { PathVerdict::Collider })
            };
            rules::rule4(pag, unf, &mut by_tests, false)?;
        }
        if rules[4] {
            rules::rule5(pag, unf);
        }
        if rules[5] {
            rules::rule6(pag);
        }
        if rules[6] {
            rules::rule7(pag, unf);
        }
        if rules[7] {
            rules::rule8(pag);
        }
        if rules[8] {
            rules::rule9(pag, unf);
        }
        if rules[9] {
            rules::rule10(pag, unf, Rule10Paths::AlwaysSearch);
        }
        if pag.marks() == &before[..] {
            return Ok(());
        }
    }
}
