//! The correlation matrix from the data (`suffStat = list(data = X)`), for when C itself is too
//! large to pass (`cor()` of 3189 x 55,572 is 25 GB in R, besides the copy a backend makes).
//!
//! Both backends compute C from the same standardised columns ([`standardize`]) and each entry as
//! one sequential chain of fused multiply-adds over the observations in order, the CPU here
//! ([`correlation`]) and the GPU in `corr.cu`; so C, and with it every p-value, is the same bit
//! for bit on both. C is exactly symmetric, its diagonal exactly 1, its entries within [-1, 1].

use rayon::prelude::*;

use crate::error::{PcError, Result};
use crate::mem::try_vec;

/// Columns of `x` (n x p, column-major) centred and scaled to unit length, so that C = Z'Z: the
/// mean as R's `mean()` takes it (the sum / n, refined by the mean residual) and the length as the
/// square root of the sum of squared residuals. A column with a non-finite value or no spread is
/// an error naming `arg`.
pub fn standardize(x: &[f64], n: usize, p: usize, arg: &'static str, pool: &rayon::ThreadPool) -> Result<Vec<f64>> {
    if n < 2 {
        return Err(PcError::invalid(arg, format!("needs at least 2 rows (observations), has {n}")));
    }
    if x.len() != n * p {
        return Err(PcError::invalid(arg, format!("must be an n x {p} matrix")));
    }
    let mut z = try_vec::<f64>(n * p, arg, "the standardised data")?;
    // SAFETY: every element is written below (chunks cover 0..n p) before it is read.
    unsafe { z.set_len(n * p) };
    pool.install(|| {
        z.par_chunks_mut(n).zip(x.par_chunks(n)).enumerate().try_for_each(|(j, (zc, xc))| {
            if let Some(k) = xc.iter().position(|v| !v.is_finite()) {
                return Err(PcError::invalid(arg, format!("must hold finite numbers; [{}, {}] is {}", k + 1, j + 1, xc[k])));
            }
            let nf = n as f64;
            let m0 = xc.iter().sum::<f64>() / nf;
            let m = m0 + xc.iter().map(|v| v - m0).sum::<f64>() / nf;
            let ss: f64 = xc.iter().map(|v| (v - m) * (v - m)).sum();
            if !(ss > 0.0) {
                return Err(PcError::invalid(arg, format!("column {} is constant: its correlations are undefined", j + 1)));
            }
            let s = ss.sqrt();
            for (d, v) in zc.iter_mut().zip(xc) {
                *d = (v - m) / s;
            }
            Ok(())
        })
    })?;
    Ok(z)
}

/// One entry of C: the dot product of two standardised columns as a sequential chain of fused
/// multiply-adds (the order the GPU kernel uses), clamped to [-1, 1].
#[inline(always)]
fn clamp1(v: f64) -> f64 {
    v.clamp(-1.0, 1.0)
}

/// Side of the blocks of C one task computes (B x B entries, 4 x 4 in registers at a time).
const B: usize = 64;

/// C = Z'Z (p x p, column-major) from [`standardize`]'s columns, on `pool`'s threads.
pub fn correlation(z: &[f64], n: usize, p: usize, arg: &'static str, pool: &rayon::ThreadPool) -> Result<Vec<f64>> {
    let mut c = try_vec::<f64>(p * p, arg, "the correlation matrix")?;
    // SAFETY: every entry is written below: the blocks i0 <= j0 cover the upper triangle and the
    // diagonal, and each writes its mirror.
    unsafe { c.set_len(p * p) };
    let nb = p.div_ceil(B);
    let blocks: Vec<(usize, usize)> = (0..nb).flat_map(|bi| (bi..nb).map(move |bj| (bi, bj))).collect();
    let out = crate::par::DisjointSlice::new(&mut c);
    let fma = fma_available();
    pool.install(|| {
        blocks.par_iter().for_each(|&(bi, bj)| {
            let (i0, j0) = (bi * B, bj * B);
            let (i1, j1) = ((i0 + B).min(p), (j0 + B).min(p));
            let mut tile = [[0.0f64; B]; B];
            block_dots(z, n, i0, i1, j0, j1, &mut tile, fma);
            for i in i0..i1 {
                for j in j0.max(i)..j1 {
                    let v = if i == j { 1.0 } else { clamp1(tile[i - i0][j - j0]) };
                    // SAFETY: block (bi, bj) with bi <= bj alone writes entries (i, j) and (j, i)
                    // for i in its rows and j >= i in its columns: no two tasks share a cell.
                    unsafe {
                        out.set(i + j * p, v);
                        out.set(j + i * p, v);
                    }
                }
            }
        })
    });
    Ok(c)
}

#[cfg(target_arch = "x86_64")]
fn fma_available() -> bool {
    std::arch::is_x86_feature_detected!("fma")
}

#[cfg(not(target_arch = "x86_64"))]
fn fma_available() -> bool {
    false
}

fn block_dots(z: &[f64], n: usize, i0: usize, i1: usize, j0: usize, j1: usize, tile: &mut [[f64; B]; B], fma: bool) {
    #[cfg(target_arch = "x86_64")]
    if fma {
        // SAFETY: the CPU has FMA (checked at run time).
        return unsafe { block_dots_fma(z, n, i0, i1, j0, j1, tile) };
    }
    let _ = fma;
    block_dots_generic(z, n, i0, i1, j0, j1, tile)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "fma")]
unsafe fn block_dots_fma(z: &[f64], n: usize, i0: usize, i1: usize, j0: usize, j1: usize, tile: &mut [[f64; B]; B]) {
    block_dots_generic(z, n, i0, i1, j0, j1, tile)
}

/// Dot products of columns i0..i1 with j0..j1 (only j >= i is used), 4 x 4 at a time: 16
/// independent chains per pass over the observations, each in observation order.
#[inline(always)]
fn block_dots_generic(z: &[f64], n: usize, i0: usize, i1: usize, j0: usize, j1: usize, tile: &mut [[f64; B]; B]) {
    let col = |j: usize| &z[j * n..(j + 1) * n];
    let mut i = i0;
    while i < i1 {
        let ni = (i1 - i).min(4);
        let mut j = j0;
        while j < j1 {
            let nj = (j1 - j).min(4);
            if j + nj > i {
                let a: [&[f64]; 4] = std::array::from_fn(|r| col(i + r.min(ni - 1)));
                let b: [&[f64]; 4] = std::array::from_fn(|s| col(j + s.min(nj - 1)));
                let mut acc = [[0.0f64; 4]; 4];
                for k in 0..n {
                    let av = [a[0][k], a[1][k], a[2][k], a[3][k]];
                    let bv = [b[0][k], b[1][k], b[2][k], b[3][k]];
                    for r in 0..4 {
                        for s in 0..4 {
                            acc[r][s] = av[r].mul_add(bv[s], acc[r][s]);
                        }
                    }
                }
                for r in 0..ni {
                    for s in 0..nj {
                        tile[i + r - i0][j + s - j0] = acc[r][s];
                    }
                }
            }
            j += 4;
        }
        i += 4;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool() -> rayon::ThreadPool {
        crate::threads::call_pool(2, "corr-test").unwrap()
    }

    fn data(n: usize, p: usize, seed: u64) -> Vec<f64> {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((s >> 11) as f64) / ((1u64 << 53) as f64) - 0.5
        };
        let mut x: Vec<f64> = (0..n * p).map(|_| next()).collect();
        // some dependence between neighbouring columns
        for j in 1..p {
            for k in 0..n {
                x[k + j * n] += 0.7 * x[k + (j - 1) * n];
            }
        }
        x
    }

    #[test]
    fn matches_a_two_pass_pearson_correlation() {
        let (n, p) = (37, 70);
        let x = data(n, p, 1);
        let z = standardize(&x, n, p, "suffStat$data", &pool()).unwrap();
        let c = correlation(&z, n, p, "suffStat$data", &pool()).unwrap();
        for i in 0..p {
            for j in 0..p {
                let (xi, xj) = (&x[i * n..(i + 1) * n], &x[j * n..(j + 1) * n]);
                let (mi, mj) = (xi.iter().sum::<f64>() / n as f64, xj.iter().sum::<f64>() / n as f64);
                let sij: f64 = xi.iter().zip(xj).map(|(a, b)| (a - mi) * (b - mj)).sum();
                let sii: f64 = xi.iter().map(|a| (a - mi) * (a - mi)).sum();
                let sjj: f64 = xj.iter().map(|b| (b - mj) * (b - mj)).sum();
                let r = sij / (sii * sjj).sqrt();
                assert!((c[i + j * p] - r).abs() < 1e-13, "C[{i}, {j}] = {} vs {r}", c[i + j * p]);
                assert_eq!(c[i + j * p].to_bits(), c[j + i * p].to_bits());
            }
            assert_eq!(c[i + i * p], 1.0);
        }
    }

    #[test]
    fn each_entry_is_one_sequential_fma_chain() {
        // the contract the GPU kernel shares: bit for bit the chain k = 0, 1, ..., n - 1
        let (n, p) = (129, 9);
        let z = standardize(&data(n, p, 7), n, p, "x", &pool()).unwrap();
        let c = correlation(&z, n, p, "x", &pool()).unwrap();
        for i in 0..p {
            for j in i + 1..p {
                let mut acc = 0.0f64;
                for k in 0..n {
                    acc = z[k + i * n].mul_add(z[k + j * n], acc);
                }
                assert_eq!(c[i + j * p].to_bits(), acc.clamp(-1.0, 1.0).to_bits(), "({i}, {j})");
            }
        }
    }

    #[test]
    fn bad_columns_are_errors_naming_the_argument() {
        let mut x = data(10, 3, 3);
        x[15] = f64::NAN;
        let e = standardize(&x, 10, 3, "suffStat$data", &pool()).unwrap_err().to_string();
        assert!(e.contains("suffStat$data") && e.contains("[6, 2]"), "{e}");
        let mut x = data(10, 3, 3);
        for v in &mut x[20..30] {
            *v = 2.5;
        }
        let e = standardize(&x, 10, 3, "suffStat$data", &pool()).unwrap_err().to_string();
        assert!(e.contains("column 3 is constant"), "{e}");
        assert!(standardize(&x[..10], 1, 10, "d", &pool()).is_err());
    }
}
