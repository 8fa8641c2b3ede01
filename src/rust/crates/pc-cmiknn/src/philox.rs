//! Philox4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as easy as 1, 2, 3",
//! SC 2011), written from the paper's definition so that pc-cuda's `cmiknn/cmiknn.cu` produces the same
//! words. A counter-based generator: the words of a permutation depend only on (key, counter),
//! never on which thread asked first.

const M0: u32 = 0xD251_1F53;
const M1: u32 = 0xCD9E_8D57;
const W0: u32 = 0x9E37_79B9;
const W1: u32 = 0xBB67_AE85;

#[inline]
fn mulhilo(a: u32, b: u32) -> (u32, u32) {
    let p = a as u64 * b as u64;
    ((p >> 32) as u32, p as u32)
}

/// The four output words for counter `c` under key `k`.
#[inline]
pub fn philox4x32_10(mut c: [u32; 4], mut k: [u32; 2]) -> [u32; 4] {
    for round in 0..10 {
        if round > 0 {
            k[0] = k[0].wrapping_add(W0);
            k[1] = k[1].wrapping_add(W1);
        }
        let (hi0, lo0) = mulhilo(M0, c[0]);
        let (hi1, lo1) = mulhilo(M1, c[2]);
        c = [hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0];
    }
    c
}

/// What a stream of words is for; the fourth counter word, so streams never overlap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Purpose {
    /// Shuffling sample `i`'s list of Z-neighbours (stream = i).
    NeighbourShuffle = 0,
    /// The random order in which samples claim a neighbour (stream = 0).
    VisitOrder = 1,
    /// The full permutation used when there is no Z (stream = 0).
    FullPermutation = 2,
}

/// Sequential words of the stream (key, permutation `b`, `stream`, `purpose`): word w comes from
/// counter (b, stream, w / 4, purpose), lane w % 4.
pub struct Stream {
    key: [u32; 2],
    ctr: [u32; 4],
    buf: [u32; 4],
    lane: usize,
}

impl Stream {
    pub fn new(key: [u32; 2], b: u32, stream: u32, purpose: Purpose) -> Self {
        Stream { key, ctr: [b, stream, 0, purpose as u32], buf: [0; 4], lane: 4 }
    }

    #[inline]
    pub fn next_word(&mut self) -> u32 {
        if self.lane == 4 {
            self.buf = philox4x32_10(self.ctr, self.key);
            self.ctr[2] = self.ctr[2].wrapping_add(1);
            self.lane = 0;
        }
        let w = self.buf[self.lane];
        self.lane += 1;
        w
    }

    /// An integer in [0, m) as floor(word * m / 2^32) (one word, no rejection: the bias is below
    /// m / 2^32, under 3e-6 for n <= 10^4, and the rule is trivial to repeat in CUDA).
    #[inline]
    pub fn below(&mut self, m: u32) -> u32 {
        ((self.next_word() as u64 * m as u64) >> 32) as u32
    }

    /// Fisher-Yates from the back: for j = len-1 down to 1 swap v[j] with v[below(j + 1)].
    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        for j in (1..v.len()).rev() {
            let r = self.below(j as u32 + 1) as usize;
            v.swap(j, r);
        }
    }
}

/// splitmix64's finaliser: a bijective mix of 64 bits.
#[inline]
pub fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The Philox key of one (seed, x, S) group: the seed, the fixed variable x and the sorted
/// conditioning set, chained through splitmix64. Sorting makes the key independent of the
/// order in which a caller lists S.
pub fn group_key(seed: u64, x: u32, s_sorted: &[u32]) -> [u32; 2] {
    let mut h = mix64(seed ^ 0x6a09_e667_f3bc_c909);
    h = mix64(h ^ (x as u64 + 1));
    h = mix64(h ^ (s_sorted.len() as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    for &v in s_sorted {
        h = mix64(h.wrapping_add(v as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    }
    [h as u32, (h >> 32) as u32]
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known-answer vectors of Random123's kat_vectors for philox4x32 with 10 rounds.
    #[test]
    fn known_answers() {
        assert_eq!(philox4x32_10([0; 4], [0; 2]), [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]);
        assert_eq!(
            philox4x32_10([0xffffffff; 4], [0xffffffff; 2]),
            [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]
        );
        assert_eq!(
            philox4x32_10([0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344], [0xa4093822, 0x299f31d0]),
            [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1]
        );
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let k = group_key(1, 3, &[4, 7]);
        let mut a = Stream::new(k, 5, 2, Purpose::NeighbourShuffle);
        let mut b = Stream::new(k, 5, 2, Purpose::NeighbourShuffle);
        let mut c = Stream::new(k, 5, 2, Purpose::VisitOrder);
        let wa: Vec<u32> = (0..9).map(|_| a.next_word()).collect();
        let wb: Vec<u32> = (0..9).map(|_| b.next_word()).collect();
        let wc: Vec<u32> = (0..9).map(|_| c.next_word()).collect();
        assert_eq!(wa, wb);
        assert_ne!(wa, wc);
        assert_ne!(group_key(1, 3, &[4, 7]), group_key(2, 3, &[4, 7]));
        assert_ne!(group_key(1, 3, &[4, 7]), group_key(1, 4, &[4, 7]));
        assert_ne!(group_key(1, 3, &[4, 7]), group_key(1, 3, &[4, 8]));
    }

    #[test]
    fn shuffle_is_a_permutation_and_uniform_enough() {
        let k = group_key(9, 0, &[]);
        let mut counts = [[0u32; 4]; 4];
        for b in 0..4000 {
            let mut v = [0usize, 1, 2, 3];
            Stream::new(k, b, 0, Purpose::FullPermutation).shuffle(&mut v);
            let mut s = v;
            s.sort();
            assert_eq!(s, [0, 1, 2, 3]);
            for (pos, &e) in v.iter().enumerate() {
                counts[pos][e] += 1;
            }
        }
        // each cell expects 1000; 6 sd is about 165
        for row in counts {
            for c in row {
                assert!((835..1165).contains(&c), "{counts:?}");
            }
        }
    }
}
