//! Rounds of listed tests, for backends that evaluate a flat list of (x, y, S) at once (the GPU
//! kernels): which tests a round holds and how their p-values decide the edges, in canonical
//! order, with no device in sight; each is tested against the CPU backend ([`crate::cpu`]).
//!
//! [`rank_windows`]: rounds of per-edge rank windows (levels >= 1 of the G^2 and CMI-kNN backends,
//! stable.fast's Gaussian levels >= 2); [`level0`]: level 0 by chunks of edges; [`listed`]: the
//! triple checks' batches by conditioning-set size; [`row_sets`]: the set kernels' rows, ranks
//! and launch rounds; [`feed`]: a level's edges shared by several devices' round loops.

pub mod feed;
pub mod level0;
pub mod listed;
pub mod rank_windows;
pub mod row_sets;
