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

/// A pool kept for the rest of the process.
pub type KeptPool = std::sync::Arc<rayon::ThreadPool>;

/// A pool of `effective_threads(requested)` threads named `name`, kept for the process's later
/// calls, for work whose tasks wait on nothing but each other (copies, fills, passes over a
/// level or a result): starting 16 threads and letting them go again, several times a call, was
/// a good part of a small call's time. Keyed by the process too: a forked child finds its
/// parent's pools without their threads and starts its own (the parent's are never dropped
/// there).
pub fn kept_pool(requested: usize, name: &'static str) -> Result<KeptPool> {
    type Kept = Vec<(u32, &'static str, usize, KeptPool)>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(Vec::new());
    let (pid, n) = (std::process::id(), effective_threads(requested));
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((.., pool)) = kept.iter().find(|k| k.0 == pid && k.1 == name && k.2 == n) {
        return Ok(pool.clone());
    }
    let pool = std::sync::Arc::new(call_pool(n, name)?);
    kept.push((pid, name, n, pool.clone()));
    Ok(pool)
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

    #[test]
    fn a_kept_pool_is_the_same_for_the_same_name_and_threads() {
        let a = kept_pool(1, "kept-test").unwrap();
        assert!(std::sync::Arc::ptr_eq(&a, &kept_pool(1, "kept-test").unwrap()));
        assert!(!std::sync::Arc::ptr_eq(&a, &kept_pool(1, "kept-other").unwrap()));
        assert_eq!(a.install(|| rayon::current_num_threads()), 1);
    }
}
