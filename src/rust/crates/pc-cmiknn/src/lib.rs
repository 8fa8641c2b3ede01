//! pc-cmiknn: tigramite's `CMIknn` conditional-independence test (the Frenzel-Pompe CMI estimate
//! with a local-permutation null), reproducible: every permutation comes from Philox keyed by
//! (seed, x, S, permutation), so a test's p-value is the same on any thread count, in any order,
//! and on the GPU (`pc-cuda`'s CMI-kNN kernels use the same words and the same summation order).
//!
//! Module map: [`philox`] (the generator), [`digamma`] (psi at the integers), [`ranks`] (the
//! rank transform, once per column), [`estimator`] (the statistic), [`permute`] (the null's
//! permutations), [`test`] (parameters, one test, the `CiTest` for the level loop).

pub mod digamma;
pub mod estimator;
pub mod permute;
pub mod philox;
pub mod ranks;
pub mod test;

pub use ranks::RankData;
pub use test::{key_of, p_value, CmiKnn, CmiKnnParams, Knn, Outcome, Permute};
