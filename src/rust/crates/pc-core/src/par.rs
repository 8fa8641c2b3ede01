//! Helpers for the O(p^2) passes around the level loop (checks of C, the start graph, level 0's
//! tens of millions of edges): at p = 10000 those passes, not the tests, were most of a run.


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

#[cfg(test)]
mod tests {
    use super::*;

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
}
