//! pc-jtree: exact inference on discrete Bayesian networks by junction tree, batched over
//! evidence sets. Pure Rust (no R, no CUDA): the network ([`network`], [`bif`]), compilation to
//! a junction forest ([`compile`]), its flat layout shared with the CUDA kernels ([`plan`]), and
//! the CPU engine ([`engine`]) whose arithmetic the kernels repeat.

pub mod bif;
pub mod compile;
pub mod engine;
pub mod error;
pub mod evidence;
pub mod marginals;
pub mod network;
pub mod plan;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use compile::{Heuristic, Limits, TreeStats};
pub use engine::{marginals_cpu, marginals_cpu_into, marginals_cpu_watched, mpe_cpu, mpe_cpu_watched, Mode, Mpe, Options, Progress};
pub use error::{JtError, Result};
pub use evidence::Evidence;
pub use marginals::{MargSink, Marginals, NO_ANSWER};
pub use network::Network;
pub use plan::Plan;
