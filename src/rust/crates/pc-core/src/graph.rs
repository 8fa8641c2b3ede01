//! Symmetric adjacency of p variables as one bit row per variable: p = 20000 takes 50 MB, where a
//! p x p bool matrix would take 400 MB.

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

    /// Complete graph without self loops.
    pub fn complete(p: usize) -> Self {
        let mut a = Self::empty(p);
        for i in 0..p {
            for j in 0..p {
                if i != j {
                    a.set_bit(i, j);
                }
            }
        }
        a
    }

    /// From a column-major p x p logical matrix (as R stores it); only i != j entries are read.
    pub fn from_dense(p: usize, m: &[bool]) -> Self {
        assert_eq!(m.len(), p * p);
        let mut a = Self::empty(p);
        for j in 0..p {
            for i in 0..p {
                if i != j && m[i + j * p] {
                    a.set_bit(i, j);
                }
            }
        }
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

    pub fn row(&self, i: usize) -> &[u64] {
        &self.bits[i * self.words..(i + 1) * self.words]
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
        a.remove_edge(64, 3);
        assert!(!a.has(3, 64) && !a.has(64, 3));
        assert_eq!(Adjacency::complete(4).n_edges(), 6);
    }
}
