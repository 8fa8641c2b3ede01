//! The FCI stages that follow the skeleton and test: Possible-D-SEP (`pdsep()` of pcalg
//! 2.7-12, whose R code is the specification; `pdsep.rs` lists its rules and quirks), the
//! orientation into a PAG (`udag2pag()`; `pag/`), and RFCI's stages after its skeleton
//! (`rfci.rs`: unshielded triples, `rfci.vStruc()`, `checkEdges()`; `apag.rs`: `udag2apag()`,
//! `pag/`'s rules with rule 4 deciding by `checkEdges()`'s tests).

pub mod apag;
pub mod pag;
pub mod pdsep;
pub mod rfci;

pub use pdsep::{biconnected_components, collider_marks, BiCC, pdsep, qreach, EdgeComponents, PdsepParams, PdsepResult, Removed};
pub use rfci::{find_unshielded_triples, rfci_orient, RfciOutcome, RfciParams};
