//! Orientation of a skeleton into pcalg's pdag, mark for mark: `udag2pdagRelaxed()` (with and
//! without `solve.confl`, with the unfaithful triples of conservative / majority-rule PC) and the
//! triple checks of `pc.cons.intern()`. pcalg's R code is the specification; ARCHITECTURE.md
//! lists the rules and their order, and `tests/orient_rules.rs` checks every step against a
//! literal transcription of pcalg's dense-matrix loops.

pub mod batch;
pub mod collider;
pub mod meek;
pub mod pdag;
pub mod sepsets;
pub mod triples;

pub use batch::{BatchEvaluator, ParallelBatch, SequentialBatch, TestBatch};
pub use pdag::{Pdag, ABSENT, CONFLICT, PRESENT};
pub use sepsets::{unshielded_pairs, PairSepsets, Unfaithful};
pub use triples::{check_triples, ConsOutcome, Decision, TripleRule, UnfVersion};

use crate::backend::Watch;
use crate::error::{PcError, Result};

#[derive(Clone, Copy, Debug, Default)]
pub struct OrientStats {
    /// Edges that the collider step directed (or marked as conflicts).
    pub colliders: usize,
    /// Rounds of rules 1-3 (the last one changed nothing).
    pub rounds: usize,
}

/// Below this many edges the collider step runs on the calling thread: starting a pool's
/// threads costs more than the step (about 1 ms against 0.1 ms at p = 1643).
pub const PARALLEL_COLLIDER_EDGES: usize = 50_000;

/// `udag2pdagRelaxed(skel, unfVect, solve.confl)` on `g` (all marks [`PRESENT`] on entry). The
/// collider step runs on `pool` when one is given; the rules run on the calling thread, which
/// `watch` may stop.
pub fn orient_relaxed(
    g: &mut Pdag,
    sep: &PairSepsets,
    unf: &Unfaithful,
    solve_confl: bool,
    pool: Option<&rayon::ThreadPool>,
    watch: &mut dyn Watch,
) -> Result<OrientStats> {
    let colliders = collider::orient_colliders(g, sep, unf, solve_confl, pool);
    if !watch.keep_going() {
        return Err(PcError::Interrupted);
    }
    let mut stopped = false;
    let rounds = meek::apply_rules(g, unf, solve_confl, &mut || {
        let go = watch.keep_going();
        stopped |= !go;
        go
    })?;
    if stopped {
        return Err(PcError::Interrupted);
    }
    Ok(OrientStats { colliders, rounds })
}
