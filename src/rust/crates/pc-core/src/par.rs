//! Helpers for the O(p^2) passes around the level loop (checks of C, the start graph, level 0's
//! tens of millions of edges): at p = 10000 those passes, not the tests, were most of a run.

use rayon::prelude::*;

/// Side of the square tiles the symmetric passes walk: two 64 x 64 tiles of f64 (64 KB) stay in
/// cache, where walking C[j, i] along a row of a column-major matrix missed the cache each time.
pub const TILE: usize = 64;

/// Calls `f(i, j)` for every pair i < j < p, tile by tile (j-tiles outer, i inner within a tile,
/// so both `m[i + j p]` and `m[j + i p]` are read from cached lines). Stops at the first error.
pub fn try_upper_pairs_tiled<E>(p: usize, mut f: impl FnMut(usize, usize) -> Result<(), E>) -> Result<(), E> {
    for j0 in (0..p).step_by(TILE) {
        let j1 = (j0 + TILE).min(p);
        for i0 in (0..j1).step_by(TILE) {
            let i1 = (i0 + TILE).min(j1);
            for j in j0..j1 {
                for i in i0..i1.min(j) {
                    f(i, j)?;
                }
            }
        }
    }
    Ok(())
}

/// A slice that worker threads write at indices no two of them share (pMax cells of distinct
/// edges). Reads and writes go through raw pointers; callers uphold the disjointness.
pub struct DisjointSlice<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: std::marker::PhantomData<&'a mut [T]>,
}

// SAFETY: access is only through `get`/`set`, whose callers guarantee that no index is used by
// two threads at once.
unsafe impl<T: Send> Sync for DisjointSlice<'_, T> {}
unsafe impl<T: Send> Send for DisjointSlice<'_, T> {}

impl<'a, T: Copy> DisjointSlice<'a, T> {
    pub fn new(s: &'a mut [T]) -> Self {
        DisjointSlice { ptr: s.as_mut_ptr(), len: s.len(), _life: std::marker::PhantomData }
    }

    /// # Safety
    /// No other thread may write index `k` while this runs.
    #[inline]
    pub unsafe fn get(&self, k: usize) -> T {
        assert!(k < self.len);
        *self.ptr.add(k)
    }

    /// # Safety
    /// No other thread may read or write index `k` while this runs.
    #[inline]
    pub unsafe fn set(&self, k: usize, v: T) {
        assert!(k < self.len);
        *self.ptr.add(k) = v;
    }
}

/// Threads for host-side loops over many edges (1 below 2^16 items).
pub fn host_threads(n: usize) -> usize {
    if n < 1 << 16 {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |t| t.get()).min(32)
    }
}

/// Runs `f(range)` over `host_threads(n)` disjoint ranges covering 0..n, in parallel; the first
/// error (in range order) wins.
/// `f` of 0..n in order, across the current pool, or on this thread when `here` (work too small
/// to wake a pool for; never rayon's global pool).
pub fn map_indices<T: Send>(n: usize, here: bool, f: impl Fn(usize) -> T + Sync + Send) -> Vec<T> {
    if here {
        (0..n).map(f).collect()
    } else {
        (0..n).into_par_iter().map(f).collect()
    }
}

/// `f` of each (index, item), across the current pool, or on this thread when `here`.
pub fn try_for_each_indexed<I: Send, E: Send>(items: Vec<I>, here: bool, f: impl Fn((usize, I)) -> Result<(), E> + Sync + Send) -> Result<(), E> {
    if here {
        items.into_iter().enumerate().try_for_each(f)
    } else {
        items.into_par_iter().enumerate().try_for_each(f)
    }
}

pub fn par_ranges<E: Send>(n: usize, f: impl Fn(std::ops::Range<usize>) -> Result<(), E> + Sync) -> Result<(), E> {
    let t = host_threads(n);
    if t == 1 {
        return f(0..n);
    }
    let chunk = n.div_ceil(t);
    let f = &f;
    let res: Vec<Result<(), E>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..t).map(|k| s.spawn(move || f(k * chunk..n.min((k + 1) * chunk)))).collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    res.into_iter().collect()
}

/// `(0..n).map(f).collect()` on several threads (first touch of the output in parallel too).
pub fn par_collect<T: Send, E: Send>(n: usize, f: impl Fn(usize) -> Result<T, E> + Sync) -> Result<Vec<T>, E> {
    let t = host_threads(n);
    if t == 1 {
        return (0..n).map(f).collect();
    }
    let mut v: Vec<T> = Vec::with_capacity(n);
    let chunk = n.div_ceil(t);
    let f = &f;
    let res: Vec<Result<(), E>> = std::thread::scope(|s| {
        let hs: Vec<_> = v.spare_capacity_mut()[..n]
            .chunks_mut(chunk)
            .enumerate()
            .map(|(k, part)| {
                s.spawn(move || {
                    for (i, slot) in part.iter_mut().enumerate() {
                        slot.write(f(k * chunk + i)?);
                    }
                    Ok(())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e))).collect()
    });
    res.into_iter().collect::<Result<(), E>>()?;
    // SAFETY: every slot 0..n was written above (each chunk in full, or an error returned).
    unsafe { v.set_len(n) };
    Ok(v)
}

/// Whether C (p x p, column-major) is exactly symmetric, as pc-core's Gaussian test decides it
/// (equal values or both NaN), and whether it holds a NaN.
pub fn symmetry_and_nan(c: &[f64], p: usize) -> (bool, bool) {
    let mut symmetric = true;
    let mut nan = false;
    for j in 0..p {
        for i in 0..p {
            let v = c[i + j * p];
            nan |= v.is_nan();
            if i < j {
                let w = c[j + i * p];
                if v != w && !(v.is_nan() && w.is_nan()) {
                    symmetric = false;
                }
            }
        }
    }
    (symmetric, nan)
}

#[cfg(test)]
mod tests {
    use super::*;


    #[test]
    fn scan_finds_asymmetry_nan_and_range() {
        let p = 150;
        let mut m = vec![0.5; p * p];
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let s = pool.install(|| scan_symmetric(&m, p, 1e-10, 1.0));
        assert!(s.exact && !s.has_nan && s.asymmetric.is_none() && s.out_of_bound.is_none());
        m[3 + 140 * p] = 0.5 + 1e-13; // within tolerance: not exact, not an error
        m[100 + 70 * p] = 0.7; // pair (70, 100): column 100
        m[5 + 120 * p] = 0.9;
        m[7 + 9 * p] = f64::NAN; // a NaN on one side is no asymmetry (NaN is dealt with apart)
        m[2 + 2 * p] = 1.5; // a diagonal cell out of range
        let s = pool.install(|| scan_symmetric(&m, p, 1e-10, 1.0));
        assert!(!s.exact && s.has_nan);
        assert_eq!(s.asymmetric, Some((70, 100)));
        assert_eq!(s.out_of_bound, Some(2 + 2 * p));
    }

    #[test]
    fn tiled_pairs_visit_each_upper_pair_once() {
        for p in [0usize, 1, 2, 63, 64, 65, 130, 200] {
            let mut seen = vec![0u8; p * p];
            try_upper_pairs_tiled::<()>(p, |i, j| {
                assert!(i < j);
                seen[i + j * p] += 1;
                Ok(())
            })
            .unwrap();
            for j in 0..p {
                for i in 0..p {
                    assert_eq!(seen[i + j * p], u8::from(i < j), "p {p} i {i} j {j}");
                }
            }
        }
        let mut n = 0;
        let r = try_upper_pairs_tiled(100, |_, _| {
            n += 1;
            if n == 10 { Err("stop") } else { Ok(()) }
        });
        assert_eq!((r, n), (Err("stop"), 10));
    }

    #[test]
    fn parallel_helpers_match_serial() {
        let n = 200_000;
        let v: Vec<u64> = par_collect(n, |i| Ok::<u64, ()>(i as u64 * 3)).unwrap();
        assert!(v.iter().enumerate().all(|(i, &x)| x == i as u64 * 3));
        let e = par_collect(n, |i| if i == 150_000 { Err(i) } else { Ok(i) });
        assert_eq!(e.unwrap_err(), 150_000);
        assert_eq!(par_ranges(n, |r| if r.contains(&7) { Err(7) } else { Ok(()) }), Err(7));
    }
}

/// How far C[i, j] and C[j, i] may differ (relative to 1 + the larger) before C counts as not
/// symmetric, and how far beyond 1 a correlation may lie: the checks of `suffStat$C`.
pub const C_SYMMETRY_TOL: f64 = 1e-10;
pub const C_BOUND: f64 = 1.0 + 1e-12;

/// What one pass over a p x p matrix found (see [`scan_symmetric`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SymScan {
    /// m[i, j] and m[j, i] are bit-identical (or both NaN) everywhere.
    pub exact: bool,
    pub has_nan: bool,
    /// The first pair i < j (column by column) with |m[i, j] - m[j, i]| > tol (1 + max |.|).
    pub asymmetric: Option<(usize, usize)>,
    /// The first cell (column-major) with |m| > bound.
    pub out_of_bound: Option<usize>,
}

/// One parallel pass over a column-major p x p matrix (on the caller's rayon pool): exact
/// symmetry, NaN, the first asymmetry beyond `tol` and the first |value| beyond `bound`. Column
/// tiles run in parallel; within one, the pairs go tile by tile as in [`try_upper_pairs_tiled`].
pub fn scan_symmetric(m: &[f64], p: usize, tol: f64, bound: f64) -> SymScan {
    assert_eq!(m.len(), p * p);
    let n_tiles = p.div_ceil(TILE);
    let parts: Vec<SymScan> = (0..n_tiles)
        .into_par_iter()
        .map(|jt| {
            let (j0, j1) = (jt * TILE, ((jt + 1) * TILE).min(p));
            let mut s = SymScan { exact: true, ..Default::default() };
            for j in j0..j1 {
                for (i, &v) in m[j * p..(j + 1) * p].iter().enumerate() {
                    if v.is_nan() {
                        s.has_nan = true;
                    }
                    if s.out_of_bound.is_none() && v.abs() > bound {
                        s.out_of_bound = Some(i + j * p);
                    }
                }
            }
            for i0 in (0..j1).step_by(TILE) {
                let i1 = (i0 + TILE).min(j1);
                for j in j0..j1 {
                    for i in i0..i1.min(j) {
                        let (a, b) = (m[i + j * p], m[j + i * p]);
                        if a.to_bits() != b.to_bits() && !(a.is_nan() && b.is_nan()) {
                            s.exact = false;
                            let bad = (a - b).abs() > tol * (1.0 + a.abs().max(b.abs()));
                            if bad && s.asymmetric.is_none_or(|(bi, bj)| (j, i) < (bj, bi)) {
                                s.asymmetric = Some((i, j));
                            }
                        }
                    }
                }
            }
            s
        })
        .collect();
    let mut out = SymScan { exact: true, ..Default::default() };
    for s in parts {
        out.exact &= s.exact;
        out.has_nan |= s.has_nan;
        if out.asymmetric.is_none() {
            out.asymmetric = s.asymmetric;
        }
        if out.out_of_bound.is_none() {
            out.out_of_bound = s.out_of_bound;
        }
    }
    out
}
