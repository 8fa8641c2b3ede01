//! Timestamps of a search's steps on standard error when `GPUPC_TRACE` is set: where the time
//! goes between the phases that `gpupc_last_run()` reports (for profiling on the GPU machine).

use std::sync::OnceLock;
use std::time::Instant;

fn origin() -> Option<Instant> {
    static ORIGIN: OnceLock<Option<Instant>> = OnceLock::new();
    *ORIGIN.get_or_init(|| std::env::var_os("GPUPC_TRACE").map(|_| Instant::now()))
}

/// Whether steps are traced in this process.
pub fn on() -> bool {
    origin().is_some()
}

/// Prints the seconds since the first traced step and `what()`, when tracing is on.
pub fn mark(what: impl FnOnce() -> String) {
    if let Some(t0) = origin() {
        eprintln!("gpupc trace {:9.4} s  {}", t0.elapsed().as_secs_f64(), what());
    }
}
