//! Lexicographic k-subsets of {0..n}: binomials, ranking, unranking and in-place stepping.
//!
//! Ranks are u64 and binomials are checked: a hub of 200 neighbours at level 5 already has
//! C(200, 5) > 2^31 sets (the overflow cuPC's 32-bit ranks hit).

/// C(n, k), or None when it does not fit in a u64.
pub fn binomial(n: u64, k: u64) -> Option<u64> {
    if k > n {
        return Some(0);
    }
    let k = k.min(n - k);
    let mut acc: u128 = 1;
    for i in 0..k {
        // acc * (n - i) / (i + 1) stays exact: acc is C(n, i) and C(n, i) * (n - i) is divisible by i + 1.
        acc = acc * (n - i) as u128 / (i + 1) as u128;
        if acc > u64::MAX as u128 {
            return None;
        }
    }
    Some(acc as u64)
}

/// Writes the `rank`-th (0-based, lexicographic) k-subset of {0..n} into `out` (ascending positions).
/// Requires rank < C(n, k) and out.len() == k.
pub fn unrank(n: u32, rank: u64, out: &mut [u32]) {
    let k = out.len() as u32;
    let mut r = rank;
    let mut next = 0u32;
    for (c, slot) in out.iter_mut().enumerate() {
        let remaining = k - c as u32 - 1;
        let mut v = next;
        loop {
            // number of subsets whose element at position c equals v
            let cnt = binomial((n - v - 1) as u64, remaining as u64).unwrap_or(u64::MAX);
            if r < cnt {
                break;
            }
            r -= cnt;
            v += 1;
        }
        *slot = v;
        next = v + 1;
    }
}

/// Rank (0-based, lexicographic) of an ascending k-subset of {0..n}; inverse of [`unrank`].
pub fn rank(n: u32, subset: &[u32]) -> u64 {
    let k = subset.len() as u32;
    let mut r = 0u64;
    let mut prev = 0u32;
    for (c, &v) in subset.iter().enumerate() {
        let remaining = k - c as u32 - 1;
        for u in prev..v {
            r += binomial((n - u - 1) as u64, remaining as u64).unwrap_or(u64::MAX);
        }
        prev = v + 1;
    }
    r
}

/// Steps `s` (ascending positions in {0..n}) to the next subset in lexicographic order, as pcalg's
/// `getNextSet` does; returns false when `s` was the last one.
pub fn next_subset(n: u32, s: &mut [u32]) -> bool {
    let k = s.len();
    let mut i = k;
    while i > 0 {
        i -= 1;
        if s[i] < n - (k - i) as u32 {
            s[i] += 1;
            for j in i + 1..k {
                s[j] = s[j - 1] + 1;
            }
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn binomial_small_and_overflow() {
        assert_eq!(binomial(5, 2), Some(10));
        assert_eq!(binomial(5, 0), Some(1));
        assert_eq!(binomial(3, 5), Some(0));
        assert_eq!(binomial(200, 5), Some(2_535_650_040));
        assert_eq!(binomial(67, 33), Some(14_226_520_737_620_288_370));
        assert_eq!(binomial(1000, 40), None);
    }

    #[test]
    fn stepping_matches_unranking_exhaustively() {
        for n in 0..=11u32 {
            for k in 0..=n {
                let total = binomial(n as u64, k as u64).unwrap();
                let mut s: Vec<u32> = (0..k).collect();
                let mut seen = 0u64;
                loop {
                    let mut u = vec![0u32; k as usize];
                    unrank(n, seen, &mut u);
                    assert_eq!(u, s, "n={n} k={k} rank={seen}");
                    assert_eq!(rank(n, &s), seen);
                    seen += 1;
                    if !next_subset(n, &mut s) {
                        break;
                    }
                }
                assert_eq!(seen, total.max(1), "n={n} k={k}");
            }
        }
    }

    proptest! {
        #[test]
        fn unrank_rank_roundtrip_large(n in 20u32..400, k in 1u32..7, frac in 0.0f64..1.0) {
            let total = binomial(n as u64, k as u64).unwrap();
            let r = ((total as f64) * frac) as u64 % total;
            let mut s = vec![0u32; k as usize];
            unrank(n, r, &mut s);
            prop_assert!(s.windows(2).all(|w| w[0] < w[1]));
            prop_assert!(*s.last().unwrap() < n);
            prop_assert_eq!(rank(n, &s), r);
        }
    }
}
