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
use pc_core::mem::try_vec;
use pc_core::PcError;

/// The samples in ascending order of the first Z column (ties by row), and each sample's place
/// in it: a sample's nearest neighbours in the max-norm lie near it in that order, so the search
/// scans outward from it and stops where the first column alone is farther than its `kp`-th
/// nearest so far.
pub struct ZOrder {
    order: Vec<u32>,
    pos: Vec<u32>,
}

impl ZOrder {
    pub fn new(z0: &[u32]) -> Result<Self, PcError> {
        let n = z0.len();
        let mut order = try_vec::<u32>(n, "suffStat$data", "the Z-neighbour search's order")?;
        order.extend(0..n as u32);
        order.sort_unstable_by_key(|&r| (z0[r as usize], r));
        let mut pos = try_vec::<u32>(n, "suffStat$data", "the Z-neighbour search's order")?;
        pos.resize(n, 0);
        for (k, &r) in order.iter().enumerate() {
            pos[r as usize] = k as u32;
        }
        Ok(ZOrder { order, pos })
    }
}

/// Each sample's `kp` nearest neighbours in Z, row-major n x kp, sorted by (distance, row)
/// (distance: the max-norm of the rank differences; a sample is its own first neighbour).
/// `zs` are the Z rank columns (at least one). `keys` is scratch.
pub fn z_neighbours(zs: &[&[u32]], n: usize, kp: usize, out: &mut [u32], keys: &mut Vec<u64>) -> Result<(), PcError> {
    z_neighbours_from(zs, &ZOrder::new(zs[0])?, n, kp, 0, out, keys);
    Ok(())
}

/// [`z_neighbours`] of the samples `first..first + out.len() / kp` (for splitting the work), with
/// the first column's order `zo`.
///
/// Exact: every key (distance << 32 | row) that can be among the `kp` smallest is looked at. The
/// scan takes the nearer of the two sides in the first column each step, so once that column's
/// gap exceeds the `kp`-th smallest distance so far, every sample left has a larger distance
/// (its distance is at least its gap). At n = 2000 and |S| = 2 it looks at a few hundred samples
/// per row where comparing with all of them made the searches most of CMI-kNN's host work.
pub fn z_neighbours_from(zs: &[&[u32]], zo: &ZOrder, n: usize, kp: usize, first: usize, out: &mut [u32], keys: &mut Vec<u64>) {
    debug_assert!(kp >= 1 && kp <= n && out.len() % kp == 0 && zo.order.len() == n);
    let z0 = zs[0];
    let dist = |a: usize, b: usize| zs.iter().fold(0u32, |m, z| m.max(z[a].abs_diff(z[b])));
    for (row, a) in (first..first + out.len() / kp).enumerate() {
        // the kp smallest keys so far, ascending
        keys.clear();
        let offer = |key: u64, keys: &mut Vec<u64>| {
            if keys.len() == kp {
                if key >= keys[kp - 1] {
                    return;
                }
                keys.pop();
            }
            let at = keys.partition_point(|&k| k < key);
            keys.insert(at, key);
        };
        let p = zo.pos[a] as usize;
        offer(a as u64, keys);
        let (mut lo, mut hi) = (p, p + 1);
        loop {
            let below = (lo > 0).then(|| z0[a] - z0[zo.order[lo - 1] as usize]);
            let above = (hi < n).then(|| z0[zo.order[hi] as usize] - z0[a]);
            let (gap, b, down) = match (below, above) {
                (Some(g), Some(h)) if g <= h => (g, zo.order[lo - 1], true),
                (Some(g), None) => (g, zo.order[lo - 1], true),
                (_, Some(h)) => (h, zo.order[hi], false),
                (None, None) => break,
            };
            if keys.len() == kp && (gap as u64) > keys[kp - 1] >> 32 {
                break;
            }
            if down {
                lo -= 1;
            } else {
                hi += 1;
            }
            offer(((dist(a, b as usize) as u64) << 32) | b as u64, keys);
        }
        for (o, &kv) in out[row * kp..(row + 1) * kp].iter_mut().zip(keys.iter()) {
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

    /// Every sample compared with every other: what the windowed search must equal.
    fn brute_neighbours(zs: &[&[u32]], n: usize, kp: usize) -> Vec<u32> {
        let mut out = Vec::with_capacity(n * kp);
        for a in 0..n {
            let mut keys: Vec<u64> = (0..n).map(|b| ((zs.iter().map(|z| z[a].abs_diff(z[b])).max().unwrap() as u64) << 32) | b as u64).collect();
            keys.sort_unstable();
            out.extend(keys[..kp].iter().map(|&k| k as u32));
        }
        out
    }

    // the windowed search gives the full comparison's lists: rank columns (distinct values) and
    // columns with many ties, 1 to 4 columns, kp from 1 to n, rows split at any place
    #[test]
    fn windowed_search_equals_the_full_comparison() {
        let mut st = 11u64;
        let mut next = |m: u64| {
            st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (st >> 33) % m
        };
        for case in 0..300 {
            let n = 1 + next(if case < 200 { 40 } else { 400 }) as usize;
            let dims = 1 + next(4) as usize;
            let ties = case % 3 == 0;
            let cols: Vec<Vec<u32>> = (0..dims)
                .map(|_| {
                    if ties {
                        (0..n).map(|_| next(1 + n as u64 / 4) as u32).collect()
                    } else {
                        let mut c: Vec<u32> = (0..n as u32).collect();
                        for i in (1..n).rev() {
                            c.swap(i, next(i as u64 + 1) as usize);
                        }
                        c
                    }
                })
                .collect();
            let zs: Vec<&[u32]> = cols.iter().map(Vec::as_slice).collect();
            let kp = [1, 2, 5, n][case % 4].min(n);
            let want = brute_neighbours(&zs, n, kp);
            let mut got = vec![0; n * kp];
            z_neighbours(&zs, n, kp, &mut got, &mut Vec::new()).unwrap();
            assert_eq!(got, want, "case {case}: n {n}, dims {dims}, kp {kp}, ties {ties}");
            let split = next(n as u64) as usize;
            let zo = ZOrder::new(zs[0]).unwrap();
            let mut parts = vec![0; n * kp];
            let (head, tail) = parts.split_at_mut(split * kp);
            z_neighbours_from(&zs, &zo, n, kp, 0, head, &mut Vec::new());
            z_neighbours_from(&zs, &zo, n, kp, split, tail, &mut Vec::new());
            assert_eq!(parts, want, "case {case} split at {split}");
        }
    }

    /// The windowed search against the full comparison at the sizes of a CMI-kNN run
    /// (cargo test --release -p pc-cmiknn -- --ignored --nocapture).
    #[test]
    #[ignore]
    fn time_of_searches() {
        let n = 2000;
        let mut st = 5u64;
        let cols: Vec<Vec<u32>> = (0..4)
            .map(|_| {
                let mut c: Vec<u32> = (0..n as u32).collect();
                for i in (1..n).rev() {
                    st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    c.swap(i, ((st >> 33) % (i as u64 + 1)) as usize);
                }
                c
            })
            .collect();
        for dims in 1..=4 {
            let zs: Vec<&[u32]> = cols[..dims].iter().map(Vec::as_slice).collect();
            let t = std::time::Instant::now();
            let want = brute_neighbours(&zs, n, 5);
            let brute = t.elapsed().as_secs_f64();
            let mut got = vec![0; n * 5];
            let t = std::time::Instant::now();
            z_neighbours(&zs, n, 5, &mut got, &mut Vec::new()).unwrap();
            let windowed = t.elapsed().as_secs_f64();
            assert_eq!(got, want);
            println!("n {n}, |S| {dims}, kp 5: full comparison {:.1} ms, windowed {:.2} ms", brute * 1e3, windowed * 1e3);
        }
    }

    #[test]
    fn neighbours_include_self_first() {
        let z: Vec<u32> = vec![0, 5, 1, 4, 2, 3];
        let mut out = vec![0; 6 * 3];
        z_neighbours(&[&z], 6, 3, &mut out, &mut Vec::new()).unwrap();
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
        z_neighbours(&[&z], n, kp, &mut nb, &mut Vec::new()).unwrap();
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
