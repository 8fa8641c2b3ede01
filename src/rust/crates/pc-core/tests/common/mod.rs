//! What the integration tests share.

/// A hash of (seed, x, y, S): the fake tests' p-values come from it (asymmetric in x and y, so
/// passing them in the wrong order shows).
pub fn test_hash(seed: u64, x: u32, y: u32, s: &[u32]) -> u64 {
    let mut h = seed ^ 0x9E37_79B9_7F4A_7C15;
    for v in [x, y].iter().chain(s) {
        h = (h ^ *v as u64).wrapping_mul(0x1000_0000_01B3).rotate_left(29);
    }
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^ (h >> 33)
}
