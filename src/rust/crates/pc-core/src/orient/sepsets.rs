//! What orientation reads besides the skeleton: the separating sets of non-adjacent pairs with a
//! common neighbour (the only ones pcalg's rules look at), and the triples marked unfaithful by
//! the conservative / majority-rule checks.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

use super::pdag::Pdag;

/// A multiplicative hash for keys of vertex indices: SipHash cost more than the lookups
/// themselves (the collider step and the rules look up every unshielded triple).
#[derive(Default, Clone, Copy)]
pub struct IndexHasher(u64);

impl Hasher for IndexHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    #[inline]
    fn write_u32(&mut self, v: u32) {
        self.write_u64(v as u64);
    }
    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    #[inline]
    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }
}

type IndexMap<K, V> = HashMap<K, V, BuildHasherDefault<IndexHasher>>;
type IndexSet<K> = HashSet<K, BuildHasherDefault<IndexHasher>>;

/// `sepset[[x]][[z]]` for the pairs orientation needs (0-based members, in the order R holds
/// them, which the conservative rule's updates keep). A pair not stored has NULL sepsets. The
/// sets live in one buffer (an allocation per set cost more than reading it from R).
#[derive(Clone, Debug, Default)]
pub struct PairSepsets {
    /// key (lo, hi), lo < hi: (start, len) in `members` of `[sepset[[lo]][[hi]], sepset[[hi]][[lo]]]`
    map: IndexMap<(u32, u32), [(u32, u32); 2]>,
    members: Vec<u32>,
}

impl PairSepsets {
    pub fn new() -> Self {
        Self::default()
    }

    /// Room for `pairs` pairs (fallible: their number grows with the squared degrees).
    pub fn with_capacity(pairs: usize) -> crate::error::Result<Self> {
        let mut map = IndexMap::default();
        map.try_reserve(pairs).map_err(|_| crate::error::PcError::Internal(format!("out of memory for the sepsets of {pairs} pairs")))?;
        Ok(PairSepsets { map, members: Vec::new() })
    }

    #[inline]
    fn key(x: u32, z: u32) -> ((u32, u32), usize) {
        if x < z {
            ((x, z), 0)
        } else {
            ((z, x), 1)
        }
    }

    /// Stores `sepset[[x]][[z]]` (a rewrite appends; the old set's room is not reused).
    pub fn insert(&mut self, x: u32, z: u32, set: &[u32]) {
        let (k, side) = Self::key(x, z);
        let start = self.members.len() as u32;
        self.members.extend_from_slice(set);
        self.map.entry(k).or_default()[side] = (start, set.len() as u32);
    }

    #[inline]
    fn slice(&self, r: (u32, u32)) -> &[u32] {
        &self.members[r.0 as usize..(r.0 + r.1) as usize]
    }

    /// `sepset[[x]][[z]]` (empty when NULL).
    pub fn get(&self, x: u32, z: u32) -> &[u32] {
        let (k, side) = Self::key(x, z);
        self.map.get(&k).map_or(&[][..], |s| self.slice(s[side]))
    }

    /// y in `sepset[[x]][[z]]` or in `sepset[[z]][[x]]`: pcalg's test for the collider x -> y <- z.
    #[inline]
    pub fn separates(&self, x: u32, z: u32, y: u32) -> bool {
        let (k, _) = Self::key(x, z);
        self.map.get(&k).is_some_and(|s| self.slice(s[0]).contains(&y) || self.slice(s[1]).contains(&y))
    }
}

/// The pairs x < z, not adjacent, with a common neighbour: the only sepsets orientation reads,
/// so the glue fetches these from R and leaves the rest of the p x p list alone.
pub fn unshielded_pairs(g: &Pdag) -> Vec<(u32, u32)> {
    let mut out = Vec::new();
    for y in 0..g.p() {
        let n = g.neighbours(y);
        for (i, &x) in n.iter().enumerate() {
            for &z in &n[i + 1..] {
                if !g.adjacent(x, z) {
                    out.push((x, z));
                }
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Triples (x, y, z) that pcalg skips (its `unfVect`), in either order of the ends.
#[derive(Clone, Debug, Default)]
pub struct Unfaithful {
    set: IndexSet<(u32, u32, u32)>,
}

impl Unfaithful {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn insert(&mut self, x: u32, y: u32, z: u32) {
        self.set.insert((x.min(z), y, x.max(z)));
    }

    /// (x, y, z) or (z, y, x) was marked: pcalg tests `triple2numb` of both orders.
    #[inline]
    pub fn contains(&self, x: u32, y: u32, z: u32) -> bool {
        !self.set.is_empty() && self.set.contains(&(x.min(z), y, x.max(z)))
    }

    pub fn len(&self) -> usize {
        self.set.len()
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty()
    }

    /// The triples (x < z), sorted.
    pub fn to_sorted_vec(&self) -> Vec<(u32, u32, u32)> {
        let mut v: Vec<_> = self.set.iter().copied().collect();
        v.sort_unstable();
        v
    }
}
