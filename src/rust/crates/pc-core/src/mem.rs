//! Host memory: what a run will need, planned before any large work, and the fallible
//! allocations of everything that grows with p, n or the number of edges.
//!
//! Rust's infallible allocations abort the process when the allocator says no, which kills the
//! user's R process. Every buffer whose size depends on the input is therefore made with
//! `try_reserve` ([`try_vec`], [`try_filled`]), and [`plan_run`] adds up the largest buffers a run
//! holds at once (level 0 is the peak: every pair is an edge) and compares the sum with the
//! memory the machine has left, so that a run that cannot fit stops before it starts with an
//! error naming the argument that makes it large, as pcalg's "cannot allocate vector of size".

use crate::error::{PcError, Result};

/// `len` elements of uninitialised capacity, or `OutOfMemory` naming `arg` and `what`.
pub fn try_vec<T>(len: usize, arg: &'static str, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| out_of_memory(arg, what, bytes_of::<T>(len)))?;
    Ok(v)
}

/// `len` zero words whose pages the system zeroes as they are first touched (`alloc_zeroed`: no
/// pass over them here, and none on whatever thread pool the caller is on), or `OutOfMemory`.
pub fn try_zeroed_words(len: usize, arg: &'static str, what: &str) -> Result<Vec<u64>> {
    if len == 0 {
        return Ok(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u64>(len).map_err(|_| out_of_memory(arg, what, bytes_of::<u64>(len)))?;
    // SAFETY: the layout has a non-zero size; a null pointer is the allocator's refusal.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) } as *mut u64;
    if ptr.is_null() {
        return Err(out_of_memory(arg, what, bytes_of::<u64>(len)));
    }
    // SAFETY: allocated by the global allocator for exactly `len` u64 (the vector's capacity),
    // all zero, which is a valid u64.
    Ok(unsafe { Vec::from_raw_parts(ptr, len, len) })
}

/// `vec![value; len]` made fallibly and written by the current rayon pool's threads (fresh
/// memory costs a page fault per 4 KB; one thread took most of a second per GB).
pub fn try_filled<T: Copy + Send + Sync>(len: usize, value: T, arg: &'static str, what: &str) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let mut v = try_vec::<T>(len, arg, what)?;
    v.spare_capacity_mut()[..len].par_chunks_mut(1 << 16).for_each(|c| {
        for x in c {
            x.write(value);
        }
    });
    // SAFETY: every one of the first `len` slots was written above.
    unsafe { v.set_len(len) };
    Ok(v)
}

/// A copy of `s` made fallibly, written by the current rayon pool's threads in blocks (as
/// [`try_filled`]: the fresh pages are faulted in in parallel).
pub fn try_copied<T: Copy + Send + Sync>(s: &[T], arg: &'static str, what: &str) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let len = s.len();
    let mut v = try_vec::<T>(len, arg, what)?;
    v.spare_capacity_mut()[..len].par_chunks_mut(1 << 16).zip(s.par_chunks(1 << 16)).for_each(|(d, s)| {
        for (x, y) in d.iter_mut().zip(s) {
            x.write(*y);
        }
    });
    // SAFETY: every element 0..len was written above.
    unsafe { v.set_len(len) };
    Ok(v)
}

pub fn bytes_of<T>(len: usize) -> u64 {
    (len as u64).saturating_mul(std::mem::size_of::<T>() as u64)
}

pub fn out_of_memory(arg: &'static str, what: &str, bytes: u64) -> PcError {
    PcError::OutOfMemory { arg, what: what.to_string(), bytes, available: available_bytes() }
}

/// Sizes as R prints them in "cannot allocate vector of size 9.3 Gb".
pub fn format_bytes(b: u64) -> String {
    let b = b as f64;
    const K: f64 = 1024.0;
    if b >= K * K * K * K {
        format!("{:.1} Tb", b / (K * K * K * K))
    } else if b >= K * K * K {
        format!("{:.1} Gb", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.1} Mb", b / (K * K))
    } else {
        format!("{:.1} Kb", b / K)
    }
}

/// Bytes this process may still allocate: the smaller of the kernel's MemAvailable plus free swap
/// and the cgroup's memory limit less its usage (containers), or None where neither is known.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| parse_meminfo(&s));
    let cgroup = cgroup_room();
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn parse_meminfo(s: &str) -> Option<u64> {
    let field = |name: &str| -> Option<u64> {
        let line = s.lines().find(|l| l.starts_with(name))?;
        let kb: u64 = line[name.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kb * 1024)
    };
    Some(field("MemAvailable:")? + field("SwapFree:").unwrap_or(0))
}

fn cgroup_room() -> Option<u64> {
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    // cgroup v2, then v1 (an unlimited v1 limit is a huge number, which min() ignores)
    let (limit, usage) = match (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current")) {
        (Some(l), Some(u)) => (l, u),
        _ => (read("/sys/fs/cgroup/memory/memory.limit_in_bytes")?, read("/sys/fs/cgroup/memory/memory.usage_in_bytes")?),
    };
    Some(limit.saturating_sub(usage))
}

/// The buffers of a run that grow with its size, for [`plan_run`].
#[derive(Clone, Copy, Debug)]
pub struct RunSize {
    pub p: usize,
    /// Bytes of the test's own data held in Rust (C: 8 p^2; codes: n p).
    pub test_bytes: u64,
    /// Pairs that start as edges (p (p - 1) / 2 without fixedGaps).
    pub start_edges: u64,
    /// Bytes per edge of one level's plan and of its outcomes (backend-specific).
    pub plan_bytes_per_edge: u64,
    pub outcome_bytes_per_edge: u64,
    /// Levels 0 and 1 run on the device (`DenseLevels`): no per-edge host structure there, and
    /// pMax is only R's matrix.
    pub dense_levels: bool,
    /// R's `sepset` is compact rows (p^2 / 8 bytes of bits) rather than p lists of p pointers.
    pub sepset_rows: bool,
}

/// The peak host bytes of a run: the test's data, three bit matrices (start, fixed edges, the
/// working graph), pMax, level 0's neighbour lists, plan, outcomes and sepsets (level 0 is the
/// largest level), and the R result (pMax again and the p x p sepset lists of pointers).
pub fn peak_bytes(s: &RunSize) -> u64 {
    let p = s.p as u64;
    let pp = p.saturating_mul(p);
    let bits = p.saturating_mul(p.div_ceil(64)).saturating_mul(8);
    let e = if s.dense_levels { 0 } else { s.start_edges };
    let sepset = std::mem::size_of::<crate::skeleton::Sepset>() as u64;
    [
        s.test_bytes,
        bits.saturating_mul(3),
        if s.dense_levels { 0 } else { pp.saturating_mul(8) }, // pMax in Rust
        e.saturating_mul(2 * 4),                 // neighbour lists (both directions, u32)
        e.saturating_mul(s.plan_bytes_per_edge), // the level's plan
        e.saturating_mul(s.outcome_bytes_per_edge),
        e.saturating_mul(sepset),                // level 0 may remove every edge
        pp.saturating_mul(8),                    // R's pMax
        if s.sepset_rows { bits } else { pp.saturating_mul(8) }, // R's sepset: bits or p lists of p pointers
        e.saturating_mul(8), // R's edge matrix (dense levels: the edges left, unknown before the run)
    ]
    .iter()
    .fold(0u64, |a, &b| a.saturating_add(b))
}

/// Stops a run that would not fit in the memory left (`available`, normally
/// [`available_bytes`]) before any large allocation; `arg` names what makes it large.
pub fn plan_run(s: &RunSize, arg: &'static str, available: Option<u64>) -> Result<u64> {
    let need = peak_bytes(s);
    match available {
        Some(room) if need > room => Err(PcError::OutOfMemory {
            arg,
            what: format!("a run on {} variables (pMax, sepsets, level 0's {} edges)", s.p, s.start_edges),
            bytes: need,
            available: Some(room),
        }),
        _ => Ok(need),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_copied_is_a_copy() {
        for n in [0usize, 1, 5, (1 << 16) - 1, 1 << 16, 3 * (1 << 16) + 7] {
            let s: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 - 3.0).collect();
            assert_eq!(try_copied(&s, "x", "a copy").unwrap(), s);
        }
    }

    fn size(p: usize) -> RunSize {
        let e = (p as u64) * (p as u64 - 1) / 2;
        RunSize { p, test_bytes: 0, start_edges: e, plan_bytes_per_edge: 56, outcome_bytes_per_edge: 32, dense_levels: false, sepset_rows: false }
    }

    #[test]
    fn gpu_dense_levels_and_compact_sepsets_plan_what_they_hold() {
        // p = 55,572 on the GPU with compact sepsets: R's pMax (24.7 GB) and bit matrices, not
        // the 86 GB of level-0 host plans and 25 GB of sepset pointers
        let p = 55_572u64;
        let s = RunSize { dense_levels: true, sepset_rows: true, ..size(p as usize) };
        let need = peak_bytes(&s);
        assert!(need > 8 * p * p && need < 8 * p * p + 2_000_000_000, "{need}");
        assert!(plan_run(&s, "labels", Some(48 << 30)).is_ok());
        assert!(plan_run(&size(p as usize), "labels", Some(48 << 30)).is_err());
        let list = RunSize { sepset_rows: false, ..s };
        assert_eq!(peak_bytes(&list) - need, 8 * p * p - p * p.div_ceil(64) * 8);
    }

    #[test]
    fn huge_requests_fail_instead_of_aborting() {
        let e = try_vec::<u64>(usize::MAX / 4, "labels", "pMax").unwrap_err();
        match e {
            PcError::OutOfMemory { arg, bytes, .. } => {
                assert_eq!(arg, "labels");
                assert!(bytes > 1 << 60);
            }
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("cannot allocate"));
        let v = try_filled(100_001, 3u8, "p", "x").unwrap();
        assert!(v.len() == 100_001 && v.iter().all(|&x| x == 3));
    }

    #[test]
    fn the_plan_grows_with_p_squared_and_stops_what_cannot_fit() {
        let small = peak_bytes(&size(1000));
        let big = peak_bytes(&size(50_000));
        assert!(small < 100 << 20, "{small}");
        // p = 50000: pMax alone is 20 GB, and R's copy of it another 20 GB
        assert!(big > 60_000_000_000, "{big}");
        assert!(plan_run(&size(50_000), "labels", Some(32 << 30)).is_err());
        assert!(plan_run(&size(1000), "labels", Some(32 << 30)).is_ok());
        assert!(plan_run(&size(50_000), "labels", None).is_ok());
        // p = 1e6 does not overflow
        assert!(peak_bytes(&size(1_000_000)) > 1 << 43);
        match plan_run(&size(1_000_000), "p", Some(1 << 40)).unwrap_err() {
            PcError::OutOfMemory { arg: "p", .. } => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn sizes_read_like_r() {
        assert_eq!(format_bytes(10_000_000_000), "9.3 Gb");
        assert_eq!(format_bytes(1536), "1.5 Kb");
        assert_eq!(parse_meminfo("MemTotal: 10 kB\nMemAvailable:    2048 kB\nSwapFree: 1024 kB\n"), Some(3 << 20));
    }
}
