//! The null distribution's permutations: tigramite's restricted ("local") permutation when there
//! is a Z, a full random permutation otherwise.
//!
//! With Z (and shuffle_neighbors < n), as `CMIknn.get_shuffle_significance` does:
//! 1. each sample's `shuffle_neighbors` nearest neighbours in Z (max norm on the Z ranks, the
//!    sample itself included at distance 0; equal distances are ordered by row, where tigramite
//!    takes cKDTree's order);
//! 2. per permutation b: every sample's list shuffled, and a random order of the samples;
//! 3. in that order each sample takes the first entry of its list no earlier sample took, or the
//!    last entry when all were taken (`get_restricted_permutation`);
//! 4. the permuted variable (tigramite's `permute`, Y by default) at sample a becomes its value at
//!    that entry.
//!
//! Without Z tigramite falls back to its block shuffle for time series (blocks sized from the
//! autocorrelation); for the i.i.d. samples of a PC run a full random permutation is the exact
//! null, so that is what is used (also when shuffle_neighbors >= n).
//!
//! Every random word comes from Philox keyed by the test's group and the permutation index, so a
//! permutation is the same whichever thread or device makes it.

use crate::philox::{Purpose, Stream};

/// Each sample's `kp` nearest neighbours in Z, row-major n x kp, sorted by (distance, row).
/// `zs` are the Z rank columns (at least one). `keys` is scratch.
pub fn z_neighbours(zs: &[&[u32]], n: usize, kp: usize, out: &mut [u32], keys: &mut Vec<u64>) {
    z_neighbours_from(zs, n, kp, 0, out, keys)
}

/// [`z_neighbours`] of the samples `first..first + out.len() / kp` (for splitting the work).
pub fn z_neighbours_from(zs: &[&[u32]], n: usize, kp: usize, first: usize, out: &mut [u32], keys: &mut Vec<u64>) {
    debug_assert!(kp >= 1 && kp <= n && out.len() % kp == 0);
    for (row, a) in (first..first + out.len() / kp).enumerate() {
        keys.clear();
        for b in 0..n {
            let mut m = 0u32;
            for z in zs {
                m = m.max(z[a].abs_diff(z[b]));
            }
            keys.push(((m as u64) << 32) | b as u64);
        }
        if kp < n {
            keys.select_nth_unstable(kp - 1);
        }
        let top = &mut keys[..kp];
        top.sort_unstable();
        for (o, &kv) in out[row * kp..(row + 1) * kp].iter_mut().zip(top.iter()) {
            *o = kv as u32;
        }
    }
}

/// tigramite's greedy claim: samples in `order`, each taking the first entry of its (already
/// shuffled) list that is not yet used, else the list's last entry. `used` is scratch.
pub fn greedy_claim(order: &[u32], lists: &[u32], kp: usize, used: &mut Vec<bool>, out: &mut [u32]) {
    let n = order.len();
    used.clear();
    used.resize(n, false);
    for &a in order {
        let list = &lists[a as usize * kp..(a as usize + 1) * kp];
        let pick = list.iter().copied().find(|&c| !used[c as usize]).unwrap_or(list[kp - 1]);
        out[a as usize] = pick;
        used[pick as usize] = true;
    }
}

/// Scratch of one permutation.
#[derive(Default)]
pub struct PermScratch {
    lists: Vec<u32>,
    order: Vec<u32>,
    used: Vec<bool>,
}

/// Restricted permutation number `b` of the group with Philox key `key`: `out[a]` is the row
/// whose value sample a receives. `neighbours` is [`z_neighbours`]'s output.
pub fn restricted_permutation(key: [u32; 2], b: u32, neighbours: &[u32], n: usize, kp: usize, sc: &mut PermScratch, out: &mut [u32]) {
    sc.lists.clear();
    sc.lists.extend_from_slice(neighbours);
    for a in 0..n {
        Stream::new(key, b, a as u32, Purpose::NeighbourShuffle).shuffle(&mut sc.lists[a * kp..(a + 1) * kp]);
    }
    sc.order.clear();
    sc.order.extend(0..n as u32);
    Stream::new(key, b, 0, Purpose::VisitOrder).shuffle(&mut sc.order);
    greedy_claim(&sc.order, &sc.lists, kp, &mut sc.used, out);
}

/// Full random permutation number `b` (no Z): Fisher-Yates of the identity.
pub fn full_permutation(key: [u32; 2], b: u32, n: usize, out: &mut [u32]) {
    for (i, o) in out.iter_mut().enumerate().take(n) {
        *o = i as u32;
    }
    Stream::new(key, b, 0, Purpose::FullPermutation).shuffle(&mut out[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::philox::group_key;

    #[test]
    fn neighbours_include_self_first() {
        let z: Vec<u32> = vec![0, 5, 1, 4, 2, 3];
        let mut out = vec![0; 6 * 3];
        z_neighbours(&[&z], 6, 3, &mut out, &mut Vec::new());
        // row 0 (rank 0): itself, rank 1 (row 2), rank 2 (row 4)
        assert_eq!(&out[0..3], &[0, 2, 4]);
        // row 5 (rank 3): itself, then rank 2 (row 4) and rank 4 (row 3) at distance 1, by row
        assert_eq!(&out[15..18], &[5, 3, 4]);
    }

    #[test]
    fn claim_rule() {
        // sample 1 goes first and takes 2; sample 0 finds 2 used and takes 1; sample 2's list is
        // all used, so it takes its last entry (a duplicate)
        let lists = [2, 1, 2, 0, 2, 1];
        let mut out = [9; 3];
        greedy_claim(&[1, 0, 2], &lists, 2, &mut Vec::new(), &mut out);
        assert_eq!(out, [1, 2, 1]);
    }

    #[test]
    fn permutations_are_deterministic_and_local() {
        let n = 50;
        let z: Vec<u32> = (0..n as u32).map(|i| (i * 17) % n as u32).collect();
        let kp = 5;
        let mut nb = vec![0; n * kp];
        z_neighbours(&[&z], n, kp, &mut nb, &mut Vec::new());
        let key = group_key(3, 1, &[2]);
        let (mut a, mut b) = (vec![0; n], vec![0; n]);
        restricted_permutation(key, 7, &nb, n, kp, &mut PermScratch::default(), &mut a);
        restricted_permutation(key, 7, &nb, n, kp, &mut PermScratch::default(), &mut b);
        assert_eq!(a, b);
        for s in 0..n {
            assert!(nb[s * kp..(s + 1) * kp].contains(&a[s]));
        }
        restricted_permutation(key, 8, &nb, n, kp, &mut PermScratch::default(), &mut b);
        assert_ne!(a, b);
        full_permutation(key, 0, n, &mut a);
        let mut s = a.clone();
        s.sort();
        assert_eq!(s, (0..n as u32).collect::<Vec<_>>());
    }
}
