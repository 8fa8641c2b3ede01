//! How many threads a call gets, and the pools it builds: never more than the machine's cores
//! (a user's `numCores = 1e6` once started threads until the machine stalled), and never rayon's
//! global pool, whose threads do not exist in a forked child (`parallel::mclapply`), so a child
//! that used it waited for good.

use crate::error::{PcError, Result};

/// The cores this process may run on (affinity and cgroup quotas included), at least 1.
pub fn available_cores() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// `requested` threads (0: every core), capped at the cores there are.
pub fn effective_threads(requested: usize) -> usize {
    let cores = available_cores();
    if requested == 0 { cores } else { requested.min(cores) }
}

/// A pool of `effective_threads(requested)` threads for one call.
pub fn call_pool(requested: usize, name: &'static str) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(effective_threads(requested))
        .thread_name(move |i| format!("gpupc-{name}-{i}"))
        .build()
        .map_err(|e| PcError::Internal(format!("could not start CPU threads: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_never_exceed_the_cores() {
        let cores = available_cores();
        assert_eq!(effective_threads(0), cores);
        assert_eq!(effective_threads(1), 1);
        assert_eq!(effective_threads(1_000_000), cores);
        assert_eq!(call_pool(usize::MAX, "t").unwrap().current_num_threads(), cores);
    }
}
