//! The partially directed graph that orientation works on: the skeleton's neighbour lists (CSR,
//! sorted) with one amat mark per ordered pair, so `pdag[i, j]` of pcalg's dense matrix is one
//! byte next to j in i's list.

use crate::error::{PcError, Result};

/// `pdag[i, j]` codes, as pcalg's `udag2pdagRelaxed` writes them: an edge i - j is undirected
/// when both marks are [`PRESENT`], i -> j when `pdag[i, j]` is [`PRESENT`] and `pdag[j, i]` is
/// [`ABSENT`], and a conflict (`solve.confl`'s bidirected edge, printed i <-> j) when both are
/// [`CONFLICT`]. No other combination ever arises, and no edge of the skeleton ever loses both
/// marks, so adjacency never changes.
pub const ABSENT: u8 = 0;
pub const PRESENT: u8 = 1;
pub const CONFLICT: u8 = 2;

/// A `Vec` with `len` copies of `v`, allocated fallibly (the graph's size comes from the user).
pub(crate) fn try_filled<T: Clone>(len: usize, v: T, what: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| PcError::Internal(format!("out of memory allocating {len} entries for {what}")))?;
    out.resize(len, v);
    Ok(out)
}

#[derive(Clone, Debug)]
pub struct Pdag {
    p: usize,
    /// `off[i]..off[i + 1]`: the slots of i's neighbours.
    off: Vec<usize>,
    /// Neighbours, ascending within each vertex.
    nbr: Vec<u32>,
    /// `rev[k]`: the slot of the mirror pair (j, i) of slot k = (i, j).
    rev: Vec<u32>,
    /// `mark[k]` = `pdag[i, j]` for slot k = (i, j).
    pub(crate) mark: Vec<u8>,
}

impl Pdag {
    /// The undirected skeleton on p vertices with the edges {i, j} (0-based, each once, in any
    /// order): every mark [`PRESENT`].
    pub fn from_edges(p: usize, edges: &[(u32, u32)]) -> Result<Self> {
        if p > u32::MAX as usize / 2 {
            return Err(PcError::invalid("p", "too many variables"));
        }
        let m2 = edges.len().checked_mul(2).filter(|&v| v < u32::MAX as usize).ok_or_else(|| PcError::invalid("edges", "too many edges"))?;
        let mut deg = try_filled(p + 1, 0usize, "the neighbour lists")?;
        for &(i, j) in edges {
            if i as usize >= p || j as usize >= p || i == j {
                return Err(PcError::invalid("edges", format!("edge {} - {} is not a pair of distinct variables in 1..{p}", i + 1, j + 1)));
            }
            deg[i as usize] += 1;
            deg[j as usize] += 1;
        }
        let mut off = try_filled(p + 1, 0usize, "the neighbour lists")?;
        for i in 0..p {
            off[i + 1] = off[i] + deg[i];
        }
        let mut fill = off.clone();
        let mut nbr = try_filled(m2, 0u32, "the neighbour lists")?;
        for &(i, j) in edges {
            nbr[fill[i as usize]] = j;
            fill[i as usize] += 1;
            nbr[fill[j as usize]] = i;
            fill[j as usize] += 1;
        }
        for i in 0..p {
            let l = &mut nbr[off[i]..off[i + 1]];
            l.sort_unstable();
            if l.windows(2).any(|w| w[0] == w[1]) {
                let j = l.windows(2).find(|w| w[0] == w[1]).map(|w| w[0]).unwrap_or(0);
                return Err(PcError::invalid("edges", format!("edge {} - {} is listed twice", i + 1, j + 1)));
            }
        }
        let mut g = Pdag { p, off, nbr, rev: try_filled(m2, 0u32, "the neighbour lists")?, mark: try_filled(m2, PRESENT, "the edge marks")? };
        for i in 0..p {
            for k in g.slots(i) {
                let j = g.nbr[k] as usize;
                // lists are sorted, so the mirror is found by binary search once per slot
                g.rev[k] = g.slot(j, i as u32).expect("mirror slot") as u32;
            }
        }
        Ok(g)
    }

    pub fn p(&self) -> usize {
        self.p
    }

    /// Number of edges of the skeleton.
    pub fn n_edges(&self) -> usize {
        self.nbr.len() / 2
    }

    #[inline]
    pub fn slots(&self, i: usize) -> std::ops::Range<usize> {
        self.off[i]..self.off[i + 1]
    }

    #[inline]
    pub fn neighbours(&self, i: usize) -> &[u32] {
        &self.nbr[self.off[i]..self.off[i + 1]]
    }

    #[inline]
    pub fn nbr_at(&self, k: usize) -> u32 {
        self.nbr[k]
    }

    #[inline]
    pub fn rev(&self, k: usize) -> usize {
        self.rev[k] as usize
    }

    /// The slot of (i, j), if i and j are adjacent.
    #[inline]
    pub fn slot(&self, i: usize, j: u32) -> Option<usize> {
        let r = self.slots(i);
        self.nbr[r.clone()].binary_search(&j).ok().map(|q| r.start + q)
    }

    #[inline]
    pub fn adjacent(&self, i: u32, j: u32) -> bool {
        // the shorter list is searched: hubs have thousands of neighbours in learned graphs
        let (a, b) = if self.off[i as usize + 1] - self.off[i as usize] <= self.off[j as usize + 1] - self.off[j as usize] { (i, j) } else { (j, i) };
        self.neighbours(a as usize).binary_search(&b).is_ok()
    }

    /// `pdag[i, j]`.
    #[inline]
    pub fn mark(&self, i: usize, j: u32) -> u8 {
        self.slot(i, j).map_or(ABSENT, |k| self.mark[k])
    }

    pub fn marks(&self) -> &[u8] {
        &self.mark
    }

    /// The non-zero entries (i, j, pdag[i, j]) in row-major order (i, then j ascending): the
    /// order of a graphNEL's edge list.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32, u8)> + '_ {
        (0..self.p).flat_map(move |i| self.slots(i).filter(|&k| self.mark[k] != ABSENT).map(move |k| (i as u32, self.nbr[k], self.mark[k])))
    }

    /// True when some edge is directed (pdag is not symmetric): a graphNEL of this pdag is
    /// then "directed", else "undirected".
    pub fn any_directed(&self) -> bool {
        (0..self.mark.len()).any(|k| self.mark[k] != self.mark[self.rev[k] as usize])
    }

    /// Sets `pdag[a, b]` and `pdag[b, a]` through the slot k = (a, b).
    #[inline]
    pub(crate) fn set_pair(&mut self, k: usize, ab: u8, ba: u8) {
        self.mark[k] = ab;
        let r = self.rev[k] as usize;
        self.mark[r] = ba;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csr_and_mirrors() {
        let g = Pdag::from_edges(4, &[(2, 0), (0, 1), (3, 2)]).unwrap();
        assert_eq!(g.neighbours(0), &[1, 2]);
        assert_eq!(g.neighbours(2), &[0, 3]);
        for i in 0..4 {
            for k in g.slots(i) {
                let j = g.nbr_at(k) as usize;
                assert_eq!(g.nbr_at(g.rev(k)) as usize, i);
                assert_eq!(g.slot(j, i as u32), Some(g.rev(k)));
            }
        }
        assert!(g.adjacent(3, 2) && !g.adjacent(0, 3));
        assert!(!g.any_directed());
        assert!(Pdag::from_edges(3, &[(0, 1), (1, 0)]).is_err());
        assert!(Pdag::from_edges(3, &[(0, 0)]).is_err());
        assert!(Pdag::from_edges(3, &[(0, 3)]).is_err());
    }
}
