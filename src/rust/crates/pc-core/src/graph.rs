//! Symmetric adjacency of p variables as one bit row per variable: p = 20000 takes 50 MB, where a
//! p x p bool matrix would take 400 MB.

use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Adjacency {
    p: usize,
    words: usize,
    bits: Vec<u64>,
}

impl Adjacency {
    pub fn empty(p: usize) -> Self {
        let words = p.div_ceil(64);
        Adjacency { p, words, bits: vec![0; words * p] }
    }

    /// Complete graph without self loops (whole words at a time: bit by bit took a second at
    /// p = 20000).
    pub fn complete(p: usize) -> Self {
        let mut a = Self::empty(p);
        let words = a.words;
        let tail = if p % 64 == 0 { !0u64 } else { (1u64 << (p % 64)) - 1 };
        for (i, row) in a.bits.chunks_mut(words.max(1)).enumerate().take(p) {
            row.fill(!0u64);
            row[words - 1] = tail;
            row[i / 64] &= !(1u64 << (i % 64));
        }
        a
    }

    /// From a column-major p x p logical matrix (as R stores it); only i != j entries are read.
    pub fn from_dense(p: usize, m: &[bool]) -> Self {
        assert_eq!(m.len(), p * p);
        Self::from_column_major(p, |k| m[k])
    }

    /// From `at(i + j p)`, the entry (i, j) of a column-major p x p matrix; only i != j is read.
    /// Blocks of 64 rows are filled in parallel, each reading every column's 64 entries at once
    /// (entry by entry, a row's bits came from p different cache lines).
    pub fn from_column_major(p: usize, at: impl Fn(usize) -> bool + Sync) -> Self {
        use rayon::prelude::*;
        let mut a = Self::empty(p);
        let words = a.words;
        if words == 0 {
            return a;
        }
        a.bits.par_chunks_mut(64 * words).enumerate().for_each(|(blk, rows)| {
            let i0 = blk * 64;
            let n_rows = rows.len() / words;
            for j in 0..p {
                let (w, bit) = (j / 64, 1u64 << (j % 64));
                for r in 0..n_rows {
                    let i = i0 + r;
                    if i != j && at(i + j * p) {
                        rows[r * words + w] |= bit;
                    }
                }
            }
        });
        a
    }

    pub fn p(&self) -> usize {
        self.p
    }

    #[inline]
    fn set_bit(&mut self, i: usize, j: usize) {
        self.bits[i * self.words + j / 64] |= 1u64 << (j % 64);
    }

    #[inline]
    fn clear_bit(&mut self, i: usize, j: usize) {
        self.bits[i * self.words + j / 64] &= !(1u64 << (j % 64));
    }

    #[inline]
    pub fn has(&self, i: usize, j: usize) -> bool {
        self.bits[i * self.words + j / 64] >> (j % 64) & 1 == 1
    }

    pub fn add_edge(&mut self, i: usize, j: usize) {
        self.set_bit(i, j);
        self.set_bit(j, i);
    }

    pub fn remove_edge(&mut self, i: usize, j: usize) {
        self.clear_bit(i, j);
        self.clear_bit(j, i);
    }

    /// A handle through which several threads remove edges at once (level 0 removes nearly
    /// every pair, and an edge's two bits lie in rows other threads are writing).
    pub fn concurrent_removal(&mut self) -> ConcurrentRemoval<'_> {
        const _: () = assert!(std::mem::align_of::<AtomicU64>() == std::mem::align_of::<u64>());
        let words = self.words;
        let bits: &mut [u64] = &mut self.bits;
        // SAFETY: AtomicU64 has u64's size and bit validity and (checked above) its alignment;
        // the exclusive borrow of `self.bits` lasts as long as the returned handle.
        let bits = unsafe { &*(bits as *mut [u64] as *const [AtomicU64]) };
        ConcurrentRemoval { words, bits }
    }

    pub fn row(&self, i: usize) -> &[u64] {
        &self.bits[i * self.words..(i + 1) * self.words]
    }

    /// All rows, `p.div_ceil(64)` words each (what a GPU backend uploads).
    pub fn words(&self) -> &[u64] {
        &self.bits
    }

    /// From rows of `p.div_ceil(64)` words each; the caller guarantees symmetry and an empty
    /// diagonal (a GPU backend's copy of a graph that came from here).
    pub fn from_words(p: usize, bits: Vec<u64>) -> Self {
        let words = p.div_ceil(64);
        assert_eq!(bits.len(), words * p, "an adjacency of {p} rows needs {} words", words * p);
        Adjacency { p, words, bits }
    }

    pub fn degree(&self, i: usize) -> usize {
        self.row(i).iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Neighbours of i in ascending order.
    pub fn neighbours(&self, i: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.degree(i));
        for (w, &word) in self.row(i).iter().enumerate() {
            let mut b = word;
            while b != 0 {
                let t = b.trailing_zeros() as usize;
                out.push((w * 64 + t) as u32);
                b &= b - 1;
            }
        }
        out
    }

    /// Edges {i, j} with i < j, in row-major order.
    pub fn edges(&self) -> Vec<(u32, u32)> {
        let mut out = Vec::new();
        for i in 0..self.p {
            for j in self.neighbours(i) {
                if (j as usize) > i {
                    out.push((i as u32, j));
                }
            }
        }
        out
    }

    pub fn n_edges(&self) -> usize {
        (0..self.p).map(|i| self.degree(i)).sum::<usize>() / 2
    }

    /// Column-major dense logical matrix, as R wants it.
    pub fn to_dense(&self) -> Vec<bool> {
        let mut m = vec![false; self.p * self.p];
        for i in 0..self.p {
            for j in self.neighbours(i) {
                m[i + j as usize * self.p] = true;
            }
        }
        m
    }
}

/// A directed p x p bit matrix: which `sepset[[x]][[y]]` hold the empty set of level 0 (level 0
/// removes nearly every pair: 2e8 at p = 20000, where a `Sepset` each took 32 bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BitMatrix {
    p: usize,
    words: usize,
    bits: Vec<u64>,
}

impl BitMatrix {
    pub fn empty(p: usize) -> Self {
        let words = p.div_ceil(64);
        BitMatrix { p, words, bits: vec![0; words * p] }
    }

    /// From rows of `p.div_ceil(64)` words each, as a GPU backend keeps them.
    pub fn from_words(p: usize, bits: Vec<u64>) -> Self {
        let words = p.div_ceil(64);
        assert_eq!(bits.len(), words * p, "a bit matrix of {p} rows needs {} words", words * p);
        BitMatrix { p, words, bits }
    }

    pub fn p(&self) -> usize {
        self.p
    }

    pub fn words_per_row(&self) -> usize {
        self.words
    }

    #[inline]
    pub fn has(&self, x: usize, y: usize) -> bool {
        self.bits[x * self.words + y / 64] >> (y % 64) & 1 == 1
    }

    #[inline]
    pub fn set(&mut self, x: usize, y: usize) {
        self.bits[x * self.words + y / 64] |= 1u64 << (y % 64);
    }

    #[inline]
    pub fn clear(&mut self, x: usize, y: usize) {
        self.bits[x * self.words + y / 64] &= !(1u64 << (y % 64));
    }

    pub fn row(&self, x: usize) -> &[u64] {
        &self.bits[x * self.words..(x + 1) * self.words]
    }

    pub fn words(&self) -> &[u64] {
        &self.bits
    }

    pub fn words_mut(&mut self) -> &mut [u64] {
        &mut self.bits
    }

    pub fn count(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// A handle through which several threads set bits at once.
    pub fn concurrent(&mut self) -> ConcurrentBits<'_> {
        let words = self.words;
        let bits: &mut [u64] = &mut self.bits;
        // SAFETY: as in `Adjacency::concurrent_removal`: AtomicU64 has u64's layout, and the
        // exclusive borrow lasts as long as the handle.
        let bits = unsafe { &*(bits as *mut [u64] as *const [AtomicU64]) };
        ConcurrentBits { words, bits }
    }
}

pub struct ConcurrentBits<'a> {
    words: usize,
    bits: &'a [AtomicU64],
}

impl ConcurrentBits<'_> {
    #[inline]
    pub fn set(&self, x: usize, y: usize) {
        self.bits[x * self.words + y / 64].fetch_or(1u64 << (y % 64), Ordering::Relaxed);
    }
}

pub struct ConcurrentRemoval<'a> {
    words: usize,
    bits: &'a [AtomicU64],
}

impl ConcurrentRemoval<'_> {
    #[inline]
    pub fn remove_edge(&self, i: usize, j: usize) {
        self.bits[i * self.words + j / 64].fetch_and(!(1u64 << (j % 64)), Ordering::Relaxed);
        self.bits[j * self.words + i / 64].fetch_and(!(1u64 << (i % 64)), Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_roundtrip_and_neighbours() {
        let p = 70; // spans two words per row
        let mut a = Adjacency::empty(p);
        a.add_edge(0, 69);
        a.add_edge(3, 64);
        a.add_edge(3, 5);
        assert_eq!(a.neighbours(3), vec![5, 64]);
        assert_eq!(a.degree(69), 1);
        assert_eq!(a.edges(), vec![(0, 69), (3, 5), (3, 64)]);
        let b = Adjacency::from_dense(p, &a.to_dense());
        assert_eq!(a, b);
        // one-sided entries and the diagonal: exactly (i, j) with i != j, as given
        let p = 130;
        let m: Vec<bool> = (0..p * p).map(|k| (k * 7919) % 13 == 0).collect();
        let c = Adjacency::from_dense(p, &m);
        for j in 0..p {
            for i in 0..p {
                assert_eq!(c.has(i, j), i != j && m[i + j * p], "({i}, {j})");
            }
        }
        a.remove_edge(64, 3);
        assert!(!a.has(3, 64) && !a.has(64, 3));
        let mut d = a.clone();
        d.concurrent_removal().remove_edge(69, 0);
        assert!(!d.has(0, 69) && !d.has(69, 0) && d.has(3, 5) && d.n_edges() == a.n_edges() - 1);
        assert_eq!(Adjacency::complete(4).n_edges(), 6);
        for p in [1usize, 2, 63, 64, 65, 130] {
            let c = Adjacency::complete(p);
            for i in 0..p {
                for j in 0..p {
                    assert_eq!(c.has(i, j), i != j, "p {p} ({i}, {j})");
                }
                assert_eq!(c.degree(i), p - 1);
            }
        }
    }
}
