//! Conditional-independence tests, each computed exactly as pcalg computes it.
//!
//! Indices are 0-based here; the glue adds 1 where R sees them.

pub mod discrete;
pub mod gauss;
pub(crate) mod linalg;
pub mod small_n;
pub mod special;

use crate::error::Result;

pub use discrete::{DiscreteData, GSquareKind, GSquareScratch, GSquareTest};
pub use gauss::{cpp_z_factor, GaussFlavour, GaussScratch, GaussTest};

/// p-value of X_x independent of X_y given X_S. NaN is allowed (the level loop maps it by
/// NAdelete, as pcalg does). `Scratch` is per-thread working memory, so a hot loop allocates
/// nothing.
pub trait CiTest {
    type Scratch: Default;
    fn p_value(&self, scratch: &mut Self::Scratch, x: u32, y: u32, s: &[u32]) -> Result<f64>;
}
