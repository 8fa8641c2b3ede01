//! The FCI stages that follow the skeleton and test: Possible-D-SEP (`pdsep()` of pcalg
//! 2.7-12, whose R code is the specification; `pdsep.rs` lists its rules and quirks), and RFCI's
//! stages after its skeleton (`rfci.rs`: unshielded triples, `rfci.vStruc()`, `checkEdges()`;
//! `apag.rs`: `udag2apag()`'s rules).

pub mod apag;
pub mod pdsep;
pub mod rfci;

pub use pdsep::{biconnected_components, collider_marks, BiCC, pdsep, qreach, EdgeComponents, PdsepParams, PdsepResult, Removed};
pub use rfci::{find_unshielded_triples, rfci_orient, Amat, RfciOutcome, RfciParams};
