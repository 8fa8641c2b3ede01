//! The Frenzel-Pompe / Vejmelka-Palus estimate of I(X; Y | Z) on rank data, as tigramite's
//! `CMIknn.get_dependence_measure` computes it:
//!
//! * eps_a: the max-norm distance from sample a to its k-th nearest neighbour in (x, y, z),
//!   a itself not counted (tigramite queries k + 1 points, a among them);
//! * k_xz, k_yz, k_z: the samples b, a included, with distance < eps_a in that subspace
//!   (tigramite's `query_ball_point` with radius 0.999999999 eps_a: on integer ranks, exactly
//!   "< eps_a"); without Z, k_z = n (every sample is within any radius of the empty space);
//! * I = psi(k) - mean_a [psi(k_xz) + psi(k_yz) - psi(k_z)].
//!
//! The search is exact and its cost does not depend on k: per sample one pass writes the n - 1
//! joint distances (integers, since the coordinates are ranks), `select_nth_unstable` finds the
//! k-th, a second pass counts. 2 n (|S| + 2) integer operations per sample for k = 7 and
//! k = 0.2 n alike.
//!
//! The mean is summed in a fixed order that a GPU block reproduces: samples in chunks of
//! [`LANES`], each chunk reduced by a halving tree (lane i += lane i + s for s = LANES/2 .. 1), the
//! chunk sums added in chunk order. Counts are exact integers, so the CPU and the GPU add the same
//! doubles in the same order and agree bit for bit.

/// Samples per reduction chunk (the GPU's block size).
pub const LANES: usize = 256;

/// Row-major samples [x, y, z_1 .. z_l], stride `d = l + 2`.
pub struct Rows<'a> {
    pub v: &'a [u32],
    pub d: usize,
}

/// (k_xz, k_yz, k_z) of sample `a`; `dist` is scratch of any length.
pub fn sample_counts(rows: &Rows, n: usize, k: usize, a: usize, dist: &mut Vec<u32>) -> (u32, u32, u32) {
    // a width known at compile time unrolls the distances' inner loop (MAX_LEVEL 8 of the GPU's
    // kernel: d <= 10); the same code with d read at run time serves the rest
    match rows.d {
        2 => counts::<2>(rows, n, k, a, dist),
        3 => counts::<3>(rows, n, k, a, dist),
        4 => counts::<4>(rows, n, k, a, dist),
        5 => counts::<5>(rows, n, k, a, dist),
        6 => counts::<6>(rows, n, k, a, dist),
        7 => counts::<7>(rows, n, k, a, dist),
        8 => counts::<8>(rows, n, k, a, dist),
        9 => counts::<9>(rows, n, k, a, dist),
        10 => counts::<10>(rows, n, k, a, dist),
        _ => counts::<0>(rows, n, k, a, dist),
    }
}

/// [`sample_counts`] for rows of `D` values (0: `rows.d`).
#[inline(always)]
fn counts<const D: usize>(rows: &Rows, n: usize, k: usize, a: usize, dist: &mut Vec<u32>) -> (u32, u32, u32) {
    let d = if D == 0 { rows.d } else { D };
    let all = &rows.v[..n * d];
    let ra = &all[a * d..(a + 1) * d];
    dist.clear();
    dist.reserve(n);
    for (b, rb) in all.chunks_exact(d).enumerate() {
        if b != a {
            dist.push((0..d).fold(0, |m, c| m.max(ra[c].abs_diff(rb[c]))));
        }
    }
    let (_, &mut eps, _) = dist.select_nth_unstable(k - 1);
    let (mut kxz, mut kyz, mut kz) = (0u32, 0u32, 0u32);
    for rb in all.chunks_exact(d) {
        let dz = (2..d).fold(0, |m, c| m.max(ra[c].abs_diff(rb[c])));
        if dz < eps {
            kz += 1;
            kxz += (ra[0].abs_diff(rb[0]) < eps) as u32;
            kyz += (ra[1].abs_diff(rb[1]) < eps) as u32;
        }
    }
    (kxz, kyz, kz)
}

/// The per-sample term psi(k_xz) + psi(k_yz) - psi(k_z), in this order of operations.
#[inline]
pub fn term(psi: &[f64], kxz: u32, kyz: u32, kz: u32) -> f64 {
    (psi[kxz as usize] + psi[kyz as usize]) - psi[kz as usize]
}

/// The halving tree over one chunk of `LANES` values (missing samples are 0.0).
#[inline]
pub fn tree_reduce(v: &mut [f64; LANES]) -> f64 {
    let mut s = LANES / 2;
    while s > 0 {
        for i in 0..s {
            v[i] += v[i + s];
        }
        s /= 2;
    }
    v[0]
}

/// Chunk sums added in chunk order.
pub fn sum_of_chunks(chunks: &[f64]) -> f64 {
    let mut total = 0.0;
    for &c in chunks {
        total += c;
    }
    total
}

/// psi(k) - sum / n.
#[inline]
pub fn cmi_from_sum(psi: &[f64], k: usize, sum: f64, n: usize) -> f64 {
    psi[k] - sum / n as f64
}

/// The CMI estimate of `rows` (n samples), summed in the canonical order.
pub fn cmi(rows: &Rows, n: usize, k: usize, psi: &[f64], dist: &mut Vec<u32>) -> f64 {
    let mut total = 0.0;
    let mut lanes = [0.0f64; LANES];
    for start in (0..n).step_by(LANES) {
        for (i, lane) in lanes.iter_mut().enumerate() {
            let a = start + i;
            *lane = if a < n {
                let (kxz, kyz, kz) = sample_counts(rows, n, k, a, dist);
                term(psi, kxz, kyz, kz)
            } else {
                0.0
            };
        }
        total += tree_reduce(&mut lanes);
    }
    cmi_from_sum(psi, k, total, n)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counting by sorting all distances, the definition read literally.
    fn counts_by_definition(rows: &Rows, n: usize, k: usize, a: usize) -> (u32, u32, u32) {
        let d = rows.d;
        let dist = |b: usize, cols: &[usize]| {
            cols.iter().map(|&c| rows.v[a * d + c].abs_diff(rows.v[b * d + c])).max().unwrap_or(0)
        };
        let all: Vec<usize> = (0..d).collect();
        let mut ds: Vec<u32> = (0..n).filter(|&b| b != a).map(|b| dist(b, &all)).collect();
        ds.sort();
        let eps = ds[k - 1];
        let xz: Vec<usize> = std::iter::once(0).chain(2..d).collect();
        let yz: Vec<usize> = std::iter::once(1).chain(2..d).collect();
        let z: Vec<usize> = (2..d).collect();
        let count = |cols: &[usize]| (0..n).filter(|&b| dist(b, cols) < eps).count() as u32;
        (count(&xz), count(&yz), count(&z))
    }

    #[test]
    fn counts_match_the_definition() {
        let n = 37;
        for d in 2..13 {
            // rank columns from a fixed scramble, with a duplicated y to have ties
            let v: Vec<u32> = (0..n * d).map(|i| ((i * 7919 + i / d * 31) % n) as u32).collect();
            let rows = Rows { v: &v, d };
            let mut buf = Vec::new();
            for k in [1, 3, 10, 36] {
                for a in 0..n {
                    assert_eq!(sample_counts(&rows, n, k, a, &mut buf), counts_by_definition(&rows, n, k, a));
                }
            }
        }
    }

    #[test]
    fn tree_is_the_fixed_order() {
        let mut v = [0.0; LANES];
        for (i, x) in v.iter_mut().enumerate() {
            *x = 1.0 / (i as f64 + 1.0);
        }
        let mut w = v;
        // the same pairs written out for LANES = 256
        let mut s = 128;
        while s >= 1 {
            for i in 0..s {
                w[i] = w[i] + w[i + s];
            }
            s /= 2;
        }
        assert_eq!(tree_reduce(&mut v).to_bits(), w[0].to_bits());
    }
}
