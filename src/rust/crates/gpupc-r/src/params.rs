//! The level loop's parameters from R's values, and the host-memory plan R checks before a run;
//! shared by the native entry point and the R-function driver.

use extendr_api::prelude::*;
use pc_core::mem::{available_bytes, peak_bytes, RunSize};
use pc_core::plan::{EdgeOutcome, EdgeWork};
use pc_core::{Adjacency, Order, PcError, SkeletonParams};

use crate::convert::{logical_matrix, CoreResult, Named};

pub fn parse_order(order: &str) -> CoreResult<Order> {
    match order {
        "stable" => Ok(Order::Stable),
        "stable.fast" => Ok(Order::StableFast),
        other => Err(PcError::invalid("skel.method", format!("must be \"stable\" or \"stable.fast\" here, not \"{other}\""))),
    }
}

/// The level loop's parameters from the one named list R sends (`skeleton_args()` in
/// R/gpu_skeleton.R), converted here and nowhere else: `start` is !fixedGaps (NULL: complete),
/// `fixed_edges` fixedEdges (NULL: none), `m_max` may be Inf, `threads` 0 means every core (and
/// is capped at the cores there are). R builds the list, so a missing or mistyped element is an
/// internal error, not the user's.
pub fn skeleton_params(args: &List) -> CoreResult<SkeletonParams> {
    let a = Named(args);
    let p = a.p_at_least(2)?;
    let threads = a.int("threads")?;
    let threads = pc_core::threads::effective_threads(threads.max(0) as usize);
    let m_max = a.real("m_max")?;
    // the bit matrices are built by row blocks in parallel: on a pool of this call's, never
    // rayon's global one (its threads are missing in a forked child, which then waits for good)
    let pool = pc_core::threads::kept_pool(threads, "host")?;
    Ok(SkeletonParams {
        alpha: a.real("alpha")?,
        order: parse_order(&a.string("order")?)?,
        m_max: if m_max.is_infinite() { None } else { Some(m_max.max(0.0).floor() as usize) },
        na_delete: a.logical("na_delete")?,
        start: logical_matrix(&a.get("start")?, p, "fixedGaps", Adjacency::complete, &pool)?,
        fixed_edges: logical_matrix(&a.get("fixed_edges")?, p, "fixedEdges", Adjacency::empty, &pool)?,
        threads,
    })
}

/// The peak host bytes of a run of `p` variables whose test holds `test_bytes` and which starts
/// with `start_edges` edges, and the bytes available (NA when unknown): R stops a run that cannot
/// fit before it converts anything, naming the argument that makes it large.
pub fn memory_plan(p: f64, test_bytes: f64, start_edges: f64, dense_levels: bool, sepset_rows: bool) -> Robj {
    let size = RunSize {
        p: p as usize,
        test_bytes: test_bytes as u64,
        start_edges: start_edges as u64,
        plan_bytes_per_edge: std::mem::size_of::<EdgeWork>() as u64,
        outcome_bytes_per_edge: std::mem::size_of::<EdgeOutcome>() as u64,
        dense_levels,
        sepset_rows,
    };
    let need = peak_bytes(&size) as f64;
    let avail = available_bytes().map_or(f64::NAN, |a| a as f64);
    list!(need = need, available = avail, need_text = pc_core::mem::format_bytes(need as u64)).into_robj()
}

/// The host memory of levels 0 and 1 planned edge by edge (a GPU backend whose dense levels do
/// not fit on the device), checked against what is left before the level loop starts: per
/// starting edge its neighbour-list entries, plan, outcome and a sepset (R's pMax exists already).
pub fn check_planned_levels(e: u64, p: usize) -> Result<(), PcError> {
    let per_edge = (2 * 4 + std::mem::size_of::<EdgeWork>() + std::mem::size_of::<EdgeOutcome>() + std::mem::size_of::<pc_core::skeleton::Sepset>()) as u64;
    let need = e.saturating_mul(per_edge);
    match available_bytes() {
        Some(room) if need > room => Err(PcError::OutOfMemory {
            arg: "suffStat",
            what: format!("levels 0 and 1 planned on the host for {e} edges, since C, pMax and the graph of {p} variables do not fit on the GPU together"),
            bytes: need,
            available: Some(room),
        }),
        _ => Ok(()),
    }
}

/// The device bytes the GPU backend for `test` ("gauss", "dis", "bin") takes at its start, and
/// (Gaussian) whether the dense levels fit beside C; the error naming the argument when `free`
/// is too small.
pub fn device_plan(test: &str, p: f64, n: f64, free: f64) -> Result<Robj, PcError> {
    use pc_cuda::runtime::memplan;
    let (p, n, free) = (p as usize, n as usize, free as u64);
    match test {
        "gauss" => {
            let dense = memplan::gauss_setup(p, free)?;
            Ok(list!(need = (memplan::gauss_c_bytes(p) + memplan::gauss_reserve(p)) as f64, dense = dense).into_robj())
        }
        "dis" | "bin" => {
            let need = memplan::gsquare_setup(n, p, pc_cuda::gsquare::CHUNK, free)?;
            Ok(list!(need = need as f64, dense = false).into_robj())
        }
        other => Err(PcError::invalid("indepTest", format!("no GPU plan for the test \"{other}\""))),
    }
}
