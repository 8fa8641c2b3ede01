//! Partial correlation of two variables given a set, from a small dense submatrix: a Cholesky
//! fast path for matrices that are safely positive definite, and the Moore-Penrose route that
//! pcalg takes (corpcor::pseudoinverse in R, arma::pinv in C++) for everything else.
//!
//! Both routines work in caller-owned buffers so that the per-test hot loop allocates nothing.

// `!(d > 0.0)` is meant: a NaN pivot must fail the test too. The triangular loops read better
// with explicit indices.
#![allow(clippy::neg_cmp_op_on_partial_ord, clippy::needless_range_loop)]

/// Grows `buf` to at least `len` entries; never shrinks, so a warmed-up scratch stays put.
#[inline]
pub(crate) fn ensure_len(buf: &mut Vec<f64>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
}

/// How much the smallest eigenvalue must exceed the pseudo-inverse's cut-off (m * sigma_max *
/// eps) before the matrix counts as safely positive definite. The bound used for the smallest
/// eigenvalue (1 / ||L^-1||_F^2) is itself pessimistic by up to a factor m, and the margin also
/// covers the backward error of the factorisation, so the pseudo-inverse could not have dropped
/// a singular value whenever the fast path is taken.
const PD_MARGIN: f64 = 1024.0;

/// Partial correlation of the last two variables given the others, for the symmetric matrix
/// whose lower triangle is stored row by row in `l` (m rows, row i holding columns 0..=i at
/// offset i*m). Factorises M = L D L^T in place (unit lower L below the diagonal, D on it) and
/// returns `None` unless the matrix is safely positive definite in the sense of [`PD_MARGIN`].
/// `x` is m*m scratch (it receives L^-1), `work` 2m.
///
/// With the order (S, x, y) the Schur complement of S is the trailing 2x2 block of L D L^T,
/// [[d_x, l d_x], [l d_x, d_y + l^2 d_x]] with l = L[y, x], so the partial correlation is
/// l d_x / sqrt(d_x (d_y + l^2 d_x)); this equals -P_xy / sqrt(P_xx P_yy) for P = M^-1, which is
/// what pcalg evaluates. LDL^T needs m divisions and no square roots until the last line.
///
/// Both triangular sweeps are right-looking (rank-one updates of whole rows), so their inner
/// loops are independent multiply-adds over contiguous memory instead of dot-product chains
/// that would stall on floating-point latency.
pub(crate) fn schur_pcor(l: &mut [f64], m: usize, x: &mut [f64], work: &mut [f64]) -> Option<f64> {
    debug_assert!(m >= 2 && l.len() >= m * m && x.len() >= m * m && work.len() >= 2 * m);
    let (inv_d, w) = work.split_at_mut(m);
    let l = &mut l[..m * m];
    let mut trace = 0.0;
    for i in 0..m {
        trace += l[i * m + i];
    }
    for k in 0..m {
        let d = l[k * m + k];
        // Also rejects NaN.
        if !(d > 0.0) {
            return None;
        }
        let inv = 1.0 / d;
        inv_d[k] = inv;
        // Column k below the diagonal: w_i = L[i,k] d_k (the not yet scaled entry), L[i,k].
        for i in (k + 1)..m {
            let a = l[i * m + k];
            w[i] = a;
            l[i * m + k] = a * inv;
        }
        // Trailing update A[i, k+1..=i] -= L[i,k] w[k+1..=i].
        for i in (k + 1)..m {
            let (head, row) = l.split_at_mut(i * m);
            let _ = head;
            let lik = row[k];
            for (a, &wj) in row[k + 1..=i].iter_mut().zip(&w[k + 1..=i]) {
                *a -= lik * wj;
            }
        }
    }
    // X = L^-1 by right-looking forward elimination on the identity, row-major lower.
    let x = &mut x[..m * m];
    for i in 0..m {
        let row = &mut x[i * m..i * m + i + 1];
        row.fill(0.0);
        row[i] = 1.0;
    }
    for t in 0..m {
        for i in (t + 1)..m {
            let lit = l[i * m + t];
            let (top, bottom) = x.split_at_mut(i * m);
            let src = &top[t * m..t * m + t + 1];
            for (dst, &s) in bottom[..t + 1].iter_mut().zip(src) {
                *dst -= lit * s;
            }
        }
    }
    // trace(M^-1) = sum_i ||row i of L^-1||^2 / d_i >= 1 / lambda_min.
    let mut trace_inv = 0.0;
    for i in 0..m {
        let row = &x[i * m..i * m + i + 1];
        let ss: f64 = row.iter().map(|v| v * v).sum();
        trace_inv += ss * inv_d[i];
    }
    // trace(M) >= sigma_max.
    let cutoff = PD_MARGIN * m as f64 * trace * f64::EPSILON;
    if !(trace_inv * cutoff < 1.0) {
        return None;
    }
    let dx = l[(m - 2) * m + (m - 2)];
    let dy = l[(m - 1) * m + (m - 1)];
    let lyx = l[(m - 1) * m + (m - 2)];
    let sxy = lyx * dx;
    Some(sxy / (dx * (dy + lyx * sxy)).sqrt())
}

/// [`schur_pcor`] for a compile-time size, on stack arrays, gathering M = C[idx, idx] (C p x p,
/// column-major, symmetric) itself. Same operations in the same order, hence the same result to
/// the last bit; with M known the loops unroll and the bounds checks vanish, which is what makes
/// the common small conditioning sets cheap.
#[inline]
pub(crate) fn schur_pcor_fixed<const M: usize>(c: &[f64], p: usize, idx: &[usize]) -> Option<f64> {
    let idx: &[usize; M] = idx.try_into().ok()?;
    let mut a = [[0.0f64; M]; M];
    for i in 0..M {
        let col = &c[idx[i] * p..idx[i] * p + p];
        for j in 0..=i {
            a[i][j] = col[idx[j]];
        }
    }
    let mut trace = 0.0;
    for (i, row) in a.iter().enumerate() {
        trace += row[i];
    }
    let mut inv_d = [0.0f64; M];
    let mut w = [0.0f64; M];
    for k in 0..M {
        let d = a[k][k];
        if !(d > 0.0) {
            return None;
        }
        let inv = 1.0 / d;
        inv_d[k] = inv;
        for i in (k + 1)..M {
            let v = a[i][k];
            w[i] = v;
            a[i][k] = v * inv;
        }
        for i in (k + 1)..M {
            let lik = a[i][k];
            for j in (k + 1)..=i {
                a[i][j] -= lik * w[j];
            }
        }
    }
    let mut x = [[0.0f64; M]; M];
    for (i, row) in x.iter_mut().enumerate() {
        row[i] = 1.0;
    }
    for t in 0..M {
        for i in (t + 1)..M {
            let lit = a[i][t];
            for j in 0..=t {
                x[i][j] -= lit * x[t][j];
            }
        }
    }
    let mut trace_inv = 0.0;
    for i in 0..M {
        let mut ss = 0.0;
        for j in 0..=i {
            ss += x[i][j] * x[i][j];
        }
        trace_inv += ss * inv_d[i];
    }
    let cutoff = PD_MARGIN * M as f64 * trace * f64::EPSILON;
    if !(trace_inv * cutoff < 1.0) {
        return None;
    }
    let dx = a[M - 2][M - 2];
    let dy = a[M - 1][M - 1];
    let lyx = a[M - 1][M - 2];
    let sxy = lyx * dx;
    Some(sxy / (dx * (dy + lyx * sxy)).sqrt())
}

/// Which singular values the pseudo-inverse keeps, relative to tol = m * sigma_max * eps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Keep {
    /// corpcor::fast.svd: `d > tol`.
    Above,
    /// arma::pinv: `s >= tol`.
    AtLeast,
}

/// -P[0,1] / sqrt(P[0,0] P[1,1]) for P the Moore-Penrose pseudo-inverse of the m x m matrix `a`
/// (column-major, overwritten), computed from its SVD by one-sided (Hestenes) Jacobi rotations.
/// Jacobi gives the small singular values to high accuracy, which is what decides the rank, and
/// needs no allocation (`v` holds the m x m right singular vectors).
pub(crate) fn pinv_pcor(a: &mut [f64], v: &mut [f64], m: usize, keep: Keep) -> f64 {
    debug_assert!(m >= 2 && a.len() >= m * m && v.len() >= m * m);
    let v = &mut v[..m * m];
    v.fill(0.0);
    for i in 0..m {
        v[i * m + i] = 1.0;
    }
    const MAX_SWEEPS: usize = 100;
    for _ in 0..MAX_SWEEPS {
        let mut rotated = false;
        for i in 0..m - 1 {
            for j in (i + 1)..m {
                let (ci, cj) = (i * m, j * m);
                let (mut alpha, mut beta, mut gamma) = (0.0, 0.0, 0.0);
                for r in 0..m {
                    let (ai, aj) = (a[ci + r], a[cj + r]);
                    alpha += ai * ai;
                    beta += aj * aj;
                    gamma += ai * aj;
                }
                if gamma == 0.0 || gamma.abs() <= f64::EPSILON * (alpha * beta).sqrt() {
                    continue;
                }
                rotated = true;
                let zeta = (beta - alpha) / (2.0 * gamma);
                // Smaller root of t^2 + 2 zeta t - 1 = 0 (rotation angle below pi/4).
                let t = if zeta.abs() > 1e150 {
                    0.5 / zeta
                } else {
                    zeta.signum() / (zeta.abs() + (1.0 + zeta * zeta).sqrt())
                };
                let c = 1.0 / (1.0 + t * t).sqrt();
                let s = c * t;
                for r in 0..m {
                    let (ai, aj) = (a[ci + r], a[cj + r]);
                    a[ci + r] = c * ai - s * aj;
                    a[cj + r] = s * ai + c * aj;
                    let (vi, vj) = (v[ci + r], v[cj + r]);
                    v[ci + r] = c * vi - s * vj;
                    v[cj + r] = s * vi + c * vj;
                }
            }
        }
        if !rotated {
            break;
        }
    }
    // A V = W with orthogonal columns w_l = sigma_l u_l, so pinv(A) = V diag(sigma^-2) W^T.
    let mut sigma_max: f64 = 0.0;
    for l in 0..m {
        let col = &a[l * m..l * m + m];
        let s2: f64 = col.iter().map(|w| w * w).sum();
        sigma_max = sigma_max.max(s2.sqrt());
    }
    let tol = m as f64 * sigma_max * f64::EPSILON;
    let (mut p00, mut p01, mut p11) = (0.0, 0.0, 0.0);
    for l in 0..m {
        let col = &a[l * m..l * m + m];
        let s2: f64 = col.iter().map(|w| w * w).sum();
        let sigma = s2.sqrt();
        let kept = match keep {
            Keep::Above => sigma > tol,
            Keep::AtLeast => sigma >= tol,
        };
        if !kept || sigma == 0.0 {
            continue;
        }
        let (v0, v1) = (v[l * m], v[l * m + 1]);
        p00 += v0 * col[0] / s2;
        p01 += v0 * col[1] / s2;
        p11 += v1 * col[1] / s2;
    }
    -p01 / (p00 * p11).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lower_rows(full: &[f64], m: usize) -> Vec<f64> {
        let mut l = vec![0.0; m * m];
        for i in 0..m {
            for j in 0..=i {
                l[i * m + j] = full[i * m + j];
            }
        }
        l
    }

    #[test]
    fn schur_and_pinv_agree_on_a_well_conditioned_matrix() {
        // Order (S0, S1, x, y) for the Cholesky route, (x, y, S0, S1) for the pinv route.
        let full = [
            1.0, 0.3, 0.5, 0.2, //
            0.3, 1.0, 0.1, 0.4, //
            0.5, 0.1, 1.0, 0.6, //
            0.2, 0.4, 0.6, 1.0,
        ];
        let mut l = lower_rows(&full, 4);
        let (mut x, mut w) = (vec![0.0; 16], vec![0.0; 8]);
        let r1 = schur_pcor(&mut l, 4, &mut x, &mut w).unwrap();
        let perm = [2, 3, 0, 1];
        let mut a = vec![0.0; 16];
        for i in 0..4 {
            for j in 0..4 {
                a[j * 4 + i] = full[perm[i] * 4 + perm[j]];
            }
        }
        let mut v = vec![0.0; 16];
        let r2 = pinv_pcor(&mut a, &mut v, 4, Keep::Above);
        assert!((r1 - r2).abs() < 1e-15, "{r1} vs {r2}");
    }

    #[test]
    fn schur_refuses_singular_and_pinv_drops_the_null_space() {
        // y duplicates x exactly: singular; the pseudo-inverse gives r = -1.
        let full = [
            1.0, 0.3, 0.5, 0.5, //
            0.3, 1.0, 0.1, 0.1, //
            0.5, 0.1, 1.0, 1.0, //
            0.5, 0.1, 1.0, 1.0,
        ];
        let mut l = lower_rows(&full, 4);
        let (mut x, mut w) = (vec![0.0; 16], vec![0.0; 8]);
        assert!(schur_pcor(&mut l, 4, &mut x, &mut w).is_none());
        let perm = [2, 3, 0, 1];
        let mut a = vec![0.0; 16];
        for i in 0..4 {
            for j in 0..4 {
                a[j * 4 + i] = full[perm[i] * 4 + perm[j]];
            }
        }
        let mut v = vec![0.0; 16];
        let r = pinv_pcor(&mut a, &mut v, 4, Keep::Above);
        assert!((r + 1.0).abs() < 1e-12, "{r}");
    }

    #[test]
    fn fixed_size_route_is_bit_identical() {
        // A 12 x 12 AR(1)-like matrix; every size 4..=10 from a few index sets.
        let p = 12;
        let c: Vec<f64> = (0..p * p)
            .map(|k| {
                let (i, j) = ((k % p) as i32, (k / p) as i32);
                0.55f64.powi((i - j).abs())
                    + if i == j {
                        0.0
                    } else {
                        0.01 * ((i * j) % 5) as f64
                    }
            })
            .collect();
        // symmetrise exactly
        let mut c2 = c.clone();
        for i in 0..p {
            for j in 0..p {
                c2[i + j * p] = c[i.min(j) + i.max(j) * p];
            }
        }
        let idx: Vec<usize> = vec![3, 7, 1, 10, 5, 0, 8, 11, 2, 9];
        macro_rules! check {
            ($m:literal) => {{
                let ix = &idx[..$m];
                let mut l = vec![0.0; $m * $m];
                for i in 0..$m {
                    for j in 0..=i {
                        l[i * $m + j] = c2[ix[j] + ix[i] * p];
                    }
                }
                let (mut x, mut w) = (vec![0.0; $m * $m], vec![0.0; 2 * $m]);
                let dynamic = schur_pcor(&mut l, $m, &mut x, &mut w).unwrap();
                let fixed = schur_pcor_fixed::<$m>(&c2, p, ix).unwrap();
                assert_eq!(dynamic.to_bits(), fixed.to_bits(), "m = {}", $m);
            }};
        }
        check!(4);
        check!(5);
        check!(6);
        check!(7);
        check!(8);
        check!(9);
        check!(10);
    }

    #[test]
    fn pinv_of_zero_matrix_is_zero() {
        let mut a = vec![0.0; 9];
        let mut v = vec![0.0; 9];
        assert!(pinv_pcor(&mut a, &mut v, 3, Keep::Above).is_nan());
        let mut a = vec![0.0; 9];
        assert!(pinv_pcor(&mut a, &mut v, 3, Keep::AtLeast).is_nan());
    }
}
