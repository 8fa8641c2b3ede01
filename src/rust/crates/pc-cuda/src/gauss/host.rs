//! What the host and the Gaussian kernels agree on: the key that means "no success", the
//! max-fail word, R's z factor, the compiled set-kernel variants and the block size.

/// Threads per block of the Gaussian kernels (their `__launch_bounds__`, `-DBLOCK`).
pub const BLOCK: u32 = 256;

/// `key` value meaning "no success" (the kernels' NO_KEY), and the kernels' max-fail word (0:
/// none, else the bits of a non-negative double + 1): pc-core's, which the row splits share.
pub use pc_core::rows::{decode_fail_word as decode_max_fail, NO_KEY};

/// sqrt(n - l - 3) * 0.5, as R evaluates the first factors of `zStat` (NaN when n - l - 3 < 0).
pub fn z_factor(n: f64, l: usize) -> f64 {
    (n - l as f64 - 3.0).sqrt() * 0.5
}

/// The smallest compiled set-kernel variant (maximum level) that holds level `l`, if any.
pub fn set_kernel_variant(l: usize) -> Option<usize> {
    SET_KERNEL_VARIANTS.iter().copied().find(|&m| l <= m)
}

/// Maximum levels of the compiled `gauss_sets_l*` / `gauss_pbest_l*` kernels.
pub const SET_KERNEL_VARIANTS: [usize; 4] = [4, 8, 16, 32];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_fail_words_decode() {
        assert_eq!(decode_max_fail(0), f64::NEG_INFINITY);
        for v in [0.0, 1e-300, 0.0049, 0.5, 1.0] {
            assert_eq!(decode_max_fail(f64::to_bits(v) + 1), v);
        }
        // bit order is value order for non-negative doubles, so atomicMax on the words is max
        assert!(f64::to_bits(0.3) + 1 > f64::to_bits(0.2) + 1);
        assert!(z_factor(3.0, 2).is_nan());
        assert_eq!(z_factor(6.0, 3), 0.0);
        assert_eq!(set_kernel_variant(2), Some(4));
        assert_eq!(set_kernel_variant(9), Some(16));
        assert_eq!(set_kernel_variant(33), None);
    }
}
