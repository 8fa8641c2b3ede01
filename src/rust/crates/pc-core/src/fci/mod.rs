//! The FCI stages that follow the skeleton and test: Possible-D-SEP (`pdsep()` of pcalg
//! 2.7-12, whose R code is the specification; `pdsep.rs` lists its rules and quirks) and the
//! orientation into a PAG (`udag2pag()`; `pag/`).

pub mod pag;
pub mod pdsep;

pub use pdsep::{biconnected_components, collider_marks, BiCC, pdsep, qreach, EdgeComponents, PdsepParams, PdsepResult, Removed};
