//! Device memory: what each GPU backend holds, as pure functions of p, n, the level's sizes and
//! the launch's block counts, checked against the free memory before anything is allocated. They
//! take no device, so CI tests them; the backends call them with `Gpu::free_bytes()`. A run that
//! does not fit stops with `PcError::DeviceOutOfMemory` naming the argument that makes it large
//! and the bytes (R raises it as an error naming that argument; `backend = "auto"` then runs
//! on the CPU).

use pc_core::PcError;

/// Bytes of a cudarc allocation of `len` values of `T` (the backends allocate at least one).
pub fn bytes<T>(len: usize) -> u64 {
    (len.max(1) as u64).saturating_mul(std::mem::size_of::<T>() as u64)
}

/// `Ok(need)` when `need` bytes plus `margin` fit in `free`, else the error naming `arg`.
pub fn fits(need: u64, margin: u64, free: u64, arg: &'static str, what: impl FnOnce() -> String) -> Result<u64, PcError> {
    if need.saturating_add(margin) > free {
        return Err(PcError::DeviceOutOfMemory { arg, what: what(), bytes: need.saturating_add(margin), free });
    }
    Ok(need)
}

/// What the Gaussian backend holds for a whole run: C (8 p^2 bytes) plus room for a level's
/// lists and the kernels' local memory.
pub fn gauss_c_bytes(p: usize) -> u64 {
    8u64.saturating_mul(p as u64).saturating_mul(p as u64)
}

pub fn gauss_reserve(p: usize) -> u64 {
    (512u64 << 20).min(gauss_c_bytes(p) / 4 + (64 << 20))
}

/// The Gaussian backend's start: an error when C and its reserve do not fit; else whether the
/// dense levels (pMax and the graph beside C, [`crate::gauss::dense::dense_bytes`]) fit too
/// (their grid's y dimension holds p / 8 blocks, at most 65535).
pub fn gauss_setup(p: usize, free: u64) -> Result<bool, PcError> {
    let need = fits(gauss_c_bytes(p), gauss_reserve(p), free, "suffStat$C", || format!("the correlation matrix (p = {p})"))?;
    let dense = crate::gauss::dense::dense_bytes(p, true) as u64;
    Ok(p / 8 < 65535 && need + gauss_reserve(p) + dense <= free)
}

/// Margin kept free beside a level's buffers (the kernels' stacks, the driver's own).
pub const LEVEL_MARGIN: u64 = 32 << 20;

/// Level 0 of the planned Gaussian path: row offsets and flags (`rows` entries: 8 + 4 + 8
/// bytes), the neighbour lists (`cols` u32) and a chunk of results (two f64 per edge).
pub fn gauss_level0_bytes(rows: usize, cols: usize, chunk: usize) -> u64 {
    (rows as u64) * 20 + (cols as u64) * 4 + (chunk as u64) * 16
}

/// Level 1: offsets (u64), lists (u32) and per edge of a chunk its key, p, max p and flags.
pub fn gauss_level1_bytes(offsets: usize, cols: usize, chunk: usize) -> u64 {
    (offsets as u64) * 8 + (cols as u64) * 4 + (chunk as u64) * 41
}

/// Levels >= 2: offsets, lists with the edge lookup (u32 + u32), per edge (i, j, best key,
/// max p: 32 bytes), the binomial table (u64) and per row its task (30 bytes).
pub fn gauss_sets_bytes(offsets: usize, cols: usize, edges: usize, table: usize, rows: usize) -> u64 {
    (offsets as u64) * 8 + (cols as u64) * 8 + (edges as u64) * 32 + (table as u64) * 8 + (rows as u64) * 30
}

/// stable.fast's keyed levels: the members of the side lists (u32), the binomial table (u64), and
/// per window of a round two pieces (44 bytes each) and its keys (24 bytes).
pub fn gauss_ranked_bytes(members: usize, table: usize, windows: usize) -> u64 {
    (members as u64) * 4 + (table as u64) * 8 + (windows as u64 + 1) * 112
}

/// The G^2 backend's codes: n bytes per column padded to `chunk` bytes, the levels (u32),
/// and 64 MB for the first rounds.
pub fn gsquare_data_bytes(n: usize, p: usize, chunk: usize) -> u64 {
    (n.next_multiple_of(chunk) as u64).saturating_mul(p as u64) + 4 * p as u64 + (64 << 20)
}

pub fn gsquare_setup(n: usize, p: usize, chunk: usize, free: u64) -> Result<u64, PcError> {
    fits(gsquare_data_bytes(n, p, chunk), 0, free, "suffStat$dm", || format!("the data ({n} rows x {p} variables, one byte each)"))
}

/// One round (or listed launch) of `gsquare_tests`: per test x, y (u32), `level` set members
/// (u32), G^2, df and p (f64), as the rounds' buffers allocate them (a quarter more than asked).
pub fn gsquare_round_bytes(tests: usize, level: usize) -> u64 {
    let per = 4 * (2 + level as u64) + 3 * 8;
    (tests as u64).saturating_mul(per).saturating_mul(5) / 4
}

/// Blocks of `gsquare_tests` whose tables of `slot_words` u32 cells fit in half the free memory
/// (`have_words` of scratch already held count as free), at most `grid`; an error when not even
/// one does (a table grows with the rows of `suffStat$dm`).
pub fn gsquare_table_slots(free: u64, have_words: u64, slot_words: u64, grid: u64) -> Result<u64, PcError> {
    let slot = slot_words.saturating_mul(4).max(1);
    let room = free.saturating_add(have_words.saturating_mul(4));
    fits(slot, 0, room / 2, "suffStat$dm", || format!("a contingency table of {slot_words} cells (half the free memory)"))?;
    Ok((room / 2 / slot).min(grid))
}

/// CMI-kNN's launches take at most a quarter of the free memory and 1 GiB.
pub fn cmiknn_budget(free: u64) -> u64 {
    (free / 4).min(1 << 30)
}

/// One (x, S) group of CMI-kNN tests: `b` permutations of `n` samples (u32) and, per test, the
/// partial sums of `b + 1` estimates over the 256-sample chunks plus its indices.
pub fn cmiknn_group_bytes(b: usize, n: usize, tests: usize, lanes: usize, max_level: usize) -> u64 {
    let perm = (b as u64).saturating_mul(n as u64).saturating_mul(4);
    let per_test = ((b + 1) as u64) * (n.div_ceil(lanes) as u64) * 8 + 5 * 4 + (max_level as u64) * 4;
    perm.saturating_add((tests as u64).saturating_mul(per_test))
}

/// The junction tree's table budget on the device: `memory_bytes` when given, else 85% of the
/// free memory, never within 256 MB of it, less the MPE's states (one u32 per row and node).
pub fn jtree_budget(free: u64, memory_bytes: Option<u64>, rows: usize, nodes: usize) -> u64 {
    let budget = memory_bytes.unwrap_or((free as f64 * 0.85) as u64).min(free.saturating_sub(256 << 20));
    budget.saturating_sub(4 * rows as u64 * nodes as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const GB: u64 = 1 << 30;

    fn arg_of(e: PcError) -> (&'static str, u64, u64) {
        match e {
            PcError::DeviceOutOfMemory { arg, bytes, free, .. } => (arg, bytes, free),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn gaussian_setup_plans_c_its_reserve_and_the_dense_levels() {
        // p = 20000: C is 3.2 GB, the reserve 512 MB; the dense levels another 3.2 GB + bits
        assert_eq!(gauss_c_bytes(20_000), 3_200_000_000);
        assert_eq!(gauss_reserve(20_000), 512 << 20);
        assert_eq!(gauss_reserve(1000), 8_000_000 / 4 + (64 << 20));
        assert_eq!(crate::gauss::dense::dense_bytes(20_000, true), 3_200_000_000 + 4 * 20_000 * 313 * 8);
        assert_eq!(crate::gauss::dense::dense_bytes(64, false), 8 * 64 * 64 + 3 * 64 * 8);
        assert!(gauss_setup(20_000, 80 * GB).unwrap());
        // C fits, the dense levels do not: the planned path
        assert!(!gauss_setup(20_000, 4 * GB).unwrap());
        let need = 3_200_000_000 + (512 << 20);
        assert!(gauss_setup(20_000, need).is_ok());
        let (arg, bytes, free) = arg_of(gauss_setup(20_000, need - 1).unwrap_err());
        assert_eq!((arg, bytes, free), ("suffStat$C", need, need - 1));
        // p = 55,572 (the largest benchmark shape) needs 24.7 GB for C: fits an H100, not a 16 GB card
        assert!(gauss_setup(55_572, 78 * GB).is_ok());
        assert!(gauss_setup(55_572, 16 * GB).is_err());
        // the dense grid's y dimension caps p below 8 * 65535
        assert!(!gauss_setup(524_280, u64::MAX / 2).unwrap());
        // no overflow at absurd p
        assert!(gauss_setup(usize::MAX / 2, 80 * GB).is_err());
    }

    #[test]
    fn gaussian_level_buffers() {
        assert_eq!(gauss_level0_bytes(1001, 10_000, 500), 20_020 + 40_000 + 8_000);
        assert_eq!(gauss_level1_bytes(1001, 10_000, 100), 8_008 + 40_000 + 4_100);
        assert_eq!(gauss_sets_bytes(1001, 10_000, 5_000, 64, 900), 8_008 + 80_000 + 160_000 + 512 + 27_000);
        let e = fits(gauss_level1_bytes(1, 1 << 30, 1), LEVEL_MARGIN, 2 * GB, "suffStat$C", || "level 1".into()).unwrap_err();
        assert_eq!(arg_of(e).0, "suffStat$C");
        assert!(e_display_names_bytes());
    }

    fn e_display_names_bytes() -> bool {
        let e = fits(10 * GB, 0, GB, "suffStat$dm", || "the data".into()).unwrap_err();
        let s = e.to_string();
        s.contains("10.0 Gb") && s.contains("1.0 Gb") && s.contains("suffStat$dm") && s.contains("GPU")
    }

    #[test]
    fn discrete_data_and_table_slots() {
        // 20000 rows x 724 variables (LINK): columns padded to 16 bytes
        assert_eq!(gsquare_data_bytes(20_000, 724, 16), 20_000 * 724 + 4 * 724 + (64 << 20));
        assert_eq!(gsquare_data_bytes(20_001, 2, 16), 20_016 * 2 + 8 + (64 << 20));
        assert!(gsquare_setup(20_000, 724, 16, GB).is_ok());
        let (arg, _, _) = arg_of(gsquare_setup(1 << 30, 20_000, 16, 80 * GB).unwrap_err());
        assert_eq!(arg, "suffStat$dm");
        // slots: half the free memory (plus scratch held) per slot of 4-byte words, at most grid
        assert_eq!(gsquare_table_slots(GB, 0, 1 << 20, 1000).unwrap(), 128);
        assert_eq!(gsquare_table_slots(GB, 1 << 28, 1 << 20, 1000).unwrap(), 256);
        assert_eq!(gsquare_table_slots(80 * GB, 0, 10_000, 792).unwrap(), 792);
        // a listed launch of 65,536 tests at |S| = 32 (the triple checks' largest): 12.8 MB
        assert_eq!(gsquare_round_bytes(65_536, 32), 65_536 * (4 * 34 + 24) * 5 / 4);
        assert_eq!(gsquare_round_bytes(4, 0), 4 * 32 * 5 / 4);
        let (arg, bytes, free) = arg_of(gsquare_table_slots(GB, 0, 1 << 28, 10).unwrap_err());
        assert_eq!((arg, bytes, free), ("suffStat$dm", GB, GB / 2));
    }

    #[test]
    fn cmiknn_and_jtree_budgets() {
        assert_eq!(cmiknn_budget(2 * GB), GB / 2);
        assert_eq!(cmiknn_budget(80 * GB), GB);
        // 100 permutations of 1000 samples, 3 tests: 400 kB + 3 * (101 * 4 chunks * 8 + 20 + 128)
        assert_eq!(cmiknn_group_bytes(100, 1000, 3, 256, 32), 400_000 + 3 * (101 * 4 * 8 + 20 + 128));
        assert_eq!(jtree_budget(10 * GB, None, 0, 0), (10.0 * GB as f64 * 0.85) as u64);
        assert_eq!(jtree_budget(GB, Some(10 * GB), 0, 0), GB - (256 << 20));
        assert_eq!(jtree_budget(GB, Some(1 << 20), 1000, 100), (1 << 20) - 400_000);
        assert_eq!(jtree_budget(100 << 20, None, 10, 10), 0);
    }
}
