//! pc-core: the PC-stable skeleton search with pcalg's exact semantics, free of R and CUDA.
//!
//! One level loop ([`skeleton::run_skeleton`]) serves every backend. Each level is *planned*
//! ([`plan`]) into the canonical test sequence of every edge; a [`backend::Backend`] evaluates the
//! plan in any order it likes and reports, per edge, the first success in canonical order
//! ([`plan::EdgeOutcome`]). Everything pcalg returns (sepsets, pMax, n.edgetests, max.ord) follows
//! from those outcomes, in one place.

pub mod backend;
pub mod citest;
pub mod combinations;
pub mod corr;
pub mod cpu;
pub mod deal;
pub mod dense;
pub mod error;
pub mod fci;
pub mod graph;
pub mod mem;
pub mod multi;
pub mod orient;
pub mod par;
pub mod plan;
pub mod ranks;
pub mod rounds;
pub mod rows;
pub mod skeleton;
pub mod threads;
pub mod trace;

pub use backend::{Backend, Control, NullWatch, Watch};
pub use citest::CiTest;
pub use error::PcError;
pub use graph::{Adjacency, BitMatrix};
pub use plan::{EdgeOutcome, LevelPlan, Order};
pub use skeleton::{run_skeleton, run_skeleton_into, SkeletonParams, SkeletonResult};
