//! gaussCItest: Fisher's z on partial correlations read off the correlation matrix, reproducing
//! both of pcalg's code paths bit for bit where the arithmetic allows it.
//!
//! * [`GaussFlavour::R`] is `pcalg::gaussCItest` (`zStat` + `pcorOrder`), used by skeleton
//!   methods "stable" and "original".
//! * [`GaussFlavour::Cpp`] is `IndepTestGauss::test` in pcalg's `constraint.cpp`, used by
//!   "stable.fast".
//!
//! For |S| <= 1 both evaluate closed forms, which are repeated here operation for operation,
//! so r is identical to the last bit. For |S| >= 2 pcalg inverts C[c(x,y,S), c(x,y,S)] by an
//! SVD pseudo-inverse on every test, at several microseconds a test; here an LDL^T (Cholesky)
//! factorisation of the same matrix, on stack arrays for |S| <= 8, gives the same partial
//! correlation whenever the matrix is certified safely positive definite, and a Jacobi-SVD
//! pseudo-inverse with pcalg's rank cut-off takes over when it is not (n < p data, collinear
//! variables, a non-symmetric C), so rank-deficient cases get pcalg's answer too. "The same"
//! means up to the conditioning of the problem (~m kappa eps in r): pcalg's LAPACK result
//! carries an error of that size itself, and is in fact the less accurate of the two.

use super::linalg::{ensure_len, pinv_pcor, schur_pcor, schur_pcor_fixed, Keep};
use super::special::{erfc, two_sided_p};
use super::CiTest;
use crate::error::{PcError, Result};

/// Which of pcalg's two Gaussian code paths to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaussFlavour {
    /// R's `gaussCItest` (skeleton "stable"/"original", pc.cons.intern).
    R,
    /// The C++ `IndepTestGauss` behind skeleton "stable.fast".
    Cpp,
}

/// |r| is cut at this value before Fisher's z (pcorOrder's `cut.at`, C++'s `CUT_THR`).
const CUT_AT: f64 = 0.9999999;

/// The Gaussian CI test on a p x p correlation matrix `c` (column-major).
pub struct GaussTest {
    pub p: usize,
    pub c: Vec<f64>,
    pub n: f64,
    pub flavour: GaussFlavour,
    /// `n` as pcalg's C++ code holds it: `Rcpp::as<uint>`, i.e. truncated to an unsigned int.
    n_uint: u32,
    /// C is exactly symmetric, so the Cholesky fast path (which reads one triangle) applies.
    symmetric: bool,
    /// `nan_var[i]`: row or column i of C holds a NaN; lets the per-test NaN scan be skipped.
    nan_var: Vec<bool>,
    any_nan: bool,
}

/// Per-thread buffers: the gathered submatrix, a second m x m matrix (L^-1 or the Jacobi right
/// singular vectors), two vectors for LDL^T, the gathered indices. Sized on first use for the
/// largest |S| seen, then reused.
#[derive(Default)]
pub struct GaussScratch {
    m: Vec<f64>,
    v: Vec<f64>,
    w: Vec<f64>,
    idx: Vec<usize>,
}

impl GaussTest {
    /// `c`: p x p correlation matrix, column-major; `n`: sample size (`suffStat$n`).
    ///
    /// NaN entries are allowed (pcalg lets them through: a constant column gives NA
    /// correlations); infinite ones are rejected, as no correlation matrix holds them and
    /// pcalg's two paths would fail in unrelated ways (an SVD error, an out-of-bounds abort).
    pub fn new(c: Vec<f64>, p: usize, n: f64, flavour: GaussFlavour) -> Result<Self> {
        Self::check_shape(c.len(), p)?;
        if c.iter().any(|v| v.is_infinite()) {
            return Err(PcError::invalid(
                "suffStat$C",
                "entries must be finite (NA is allowed)",
            ));
        }
        let has_nan = c.iter().any(|v| v.is_nan());
        Self::assemble(c, p, n, flavour, false, has_nan)
    }

    /// [`GaussTest::new`] for a C already scanned in one parallel pass
    /// (`par::scan_symmetric`, which the caller used to refuse infinite entries): `exact`, its
    /// mirror is equal bit for bit; `has_nan`, it holds a NaN. The O(p^2) scans of `new` are
    /// skipped (at p = 1643 they were most of the CPU backend's input step).
    pub fn new_scanned(c: Vec<f64>, p: usize, n: f64, flavour: GaussFlavour, exact: bool, has_nan: bool) -> Result<Self> {
        Self::check_shape(c.len(), p)?;
        Self::assemble(c, p, n, flavour, exact, has_nan)
    }

    fn check_shape(len: usize, p: usize) -> Result<()> {
        if p.checked_mul(p) != Some(len) {
            return Err(PcError::invalid(
                "suffStat$C",
                format!("must be a {p} x {p} matrix, got {len} entries"),
            ));
        }
        if p > u32::MAX as usize {
            return Err(PcError::invalid("suffStat$C", "too many variables"));
        }
        Ok(())
    }

    /// The test on a checked C; `exact` (a bit-equal mirror) spares the value comparison that
    /// decides `symmetric` (equal values or both NaN: 0.0 and -0.0 count as equal).
    fn assemble(c: Vec<f64>, p: usize, n: f64, flavour: GaussFlavour, exact: bool, has_nan: bool) -> Result<Self> {
        // n = Inf is pcalg's R gaussCItest's limit (z = +-Inf, p = 0 or 1); stable.fast's C++
        // casts n to a 32-bit unsigned integer, checked below
        if !(n >= 0.0) {
            return Err(PcError::invalid(
                "suffStat$n",
                format!("must be a number >= 0, got {n}"),
            ));
        }
        Self::check_n(n, flavour)?;
        let mut nan_var = vec![false; p];
        if has_nan {
            for (j, col) in c.chunks(p.max(1)).enumerate() {
                for (i, v) in col.iter().enumerate() {
                    if v.is_nan() {
                        nan_var[i] = true;
                        nan_var[j] = true;
                    }
                }
            }
        }
        let symmetric = exact
            || crate::par::try_upper_pairs_tiled(p, |i, j| {
                let (v, w) = (c[i + j * p], c[j + i * p]);
                if v != w && !(v.is_nan() && w.is_nan()) {
                    Err(())
                } else {
                    Ok(())
                }
            })
            .is_ok();
        let any_nan = nan_var.iter().any(|&b| b);
        Ok(GaussTest {
            p,
            c,
            n,
            flavour,
            n_uint: n as u32,
            symmetric,
            nan_var,
            any_nan,
        })
    }

    /// The flavour's limit on n beyond `n >= 0` (checked by every backend, the GPU's too).
    pub fn check_n(n: f64, flavour: GaussFlavour) -> Result<()> {
        if flavour == GaussFlavour::Cpp && n >= 4294967296.0 {
            return Err(PcError::invalid(
                "suffStat$n",
                "must be below 2^32 for method \"stable.fast\" (pcalg's C++ code stores it as a 32-bit unsigned integer)",
            ));
        }
        Ok(())
    }

    /// C is exactly symmetric (mirror entries equal bit for bit).
    pub fn is_symmetric(&self) -> bool {
        self.symmetric
    }

    /// C holds a NaN somewhere.
    pub fn has_nan(&self) -> bool {
        self.any_nan
    }

    #[inline]
    fn at(&self, i: usize, j: usize) -> f64 {
        self.c[i + j * self.p]
    }

    fn check_index(&self, v: u32) -> Result<usize> {
        let v = v as usize;
        if v < self.p {
            Ok(v)
        } else {
            Err(PcError::Internal(format!(
                "gaussCItest: variable index {v} out of range (p = {})",
                self.p
            )))
        }
    }

    /// Whether C[c(x,y,S), c(x,y,S)] (the whole square, diagonal included) holds a NaN.
    fn sub_has_nan(&self, x: usize, y: usize, s: &[u32]) -> bool {
        if !self.any_nan {
            return false;
        }
        let any_nan_var =
            self.nan_var[x] || self.nan_var[y] || s.iter().any(|&k| self.nan_var[k as usize]);
        if !any_nan_var {
            return false;
        }
        let idx = |i: usize| match i {
            0 => x,
            1 => y,
            _ => s[i - 2] as usize,
        };
        let m = s.len() + 2;
        (0..m).any(|i| (0..m).any(|j| self.at(idx(i), idx(j)).is_nan()))
    }

    /// Partial correlation of x and y given s (|s| >= 2) as -P[1,2]/sqrt(P[1,1]P[2,2]) with P
    /// the (pseudo-)inverse of C[c(x,y,S), c(x,y,S)]. `keep` is the rank rule of the
    /// pseudo-inverse that pcalg would use.
    fn pcor_inv(&self, sc: &mut GaussScratch, x: usize, y: usize, s: &[u32], keep: Keep) -> f64 {
        let k = s.len();
        let m = k + 2;
        ensure_len(&mut sc.m, m * m);
        ensure_len(&mut sc.v, m * m);
        ensure_len(&mut sc.w, 2 * m);
        sc.idx.clear();
        if self.symmetric {
            // Order (S, x, y): the partial correlation is then read off the last 2x2 block.
            sc.idx.extend(s.iter().map(|&v| v as usize));
            sc.idx.push(x);
            sc.idx.push(y);
            let fixed = match m {
                4 => schur_pcor_fixed::<4>(&self.c, self.p, &sc.idx),
                5 => schur_pcor_fixed::<5>(&self.c, self.p, &sc.idx),
                6 => schur_pcor_fixed::<6>(&self.c, self.p, &sc.idx),
                7 => schur_pcor_fixed::<7>(&self.c, self.p, &sc.idx),
                8 => schur_pcor_fixed::<8>(&self.c, self.p, &sc.idx),
                9 => schur_pcor_fixed::<9>(&self.c, self.p, &sc.idx),
                10 => schur_pcor_fixed::<10>(&self.c, self.p, &sc.idx),
                _ => None,
            };
            if let Some(r) = fixed {
                return r;
            }
            for (i, &vi) in sc.idx.iter().enumerate() {
                let col = &self.c[vi * self.p..(vi + 1) * self.p];
                for (dst, &vj) in sc.m[i * m..i * m + i + 1].iter_mut().zip(&sc.idx) {
                    *dst = col[vj];
                }
            }
            if let Some(r) = schur_pcor(&mut sc.m, m, &mut sc.v, &mut sc.w) {
                return r;
            }
            sc.idx.clear();
        }
        // pcalg's order (x, y, S), full square, column-major.
        sc.idx.push(x);
        sc.idx.push(y);
        sc.idx.extend(s.iter().map(|&v| v as usize));
        for (j, &vj) in sc.idx.iter().enumerate() {
            let col = &self.c[vj * self.p..(vj + 1) * self.p];
            for (dst, &vi) in sc.m[j * m..(j + 1) * m].iter_mut().zip(&sc.idx) {
                *dst = col[vi];
            }
        }
        pinv_pcor(&mut sc.m, &mut sc.v, m, keep)
    }

    /// `pcorOrder` without its final NA/cut handling, and the same for the C++ path.
    fn pcor(&self, sc: &mut GaussScratch, x: usize, y: usize, s: &[u32], keep: Keep) -> f64 {
        match s.len() {
            0 => self.at(x, y),
            1 => {
                let k = s[0] as usize;
                let (cxy, cxk, cyk) = (self.at(x, y), self.at(x, k), self.at(y, k));
                (cxy - cxk * cyk) / ((1.0 - cyk * cyk) * (1.0 - cxk * cxk)).sqrt()
            }
            _ => self.pcor_inv(sc, x, y, s, keep),
        }
    }

    /// The partial correlation of x and y given s that the flavour's p-value is built from,
    /// before the NA and cut-off rules (R: `pcorOrder` without its last line; C++: `r` before
    /// `std::min`). NaN where pcalg's arithmetic gives NaN; an error where R's svd() refuses NA.
    ///
    /// For |s| >= 2 this agrees with pcalg to about kappa * eps (kappa the condition number of
    /// C[c(x,y,S), c(x,y,S)] over the singular values kept), not to the last bit: pcalg's value
    /// comes from LAPACK's SVD and carries an error of that size itself (it changes with the
    /// BLAS/LAPACK R is linked to), and no other algorithm reproduces those rounding errors.
    pub fn partial_correlation(
        &self,
        sc: &mut GaussScratch,
        x: u32,
        y: u32,
        s: &[u32],
    ) -> Result<f64> {
        let x = self.check_index(x)?;
        let y = self.check_index(y)?;
        for &k in s {
            self.check_index(k)?;
        }
        match self.flavour {
            GaussFlavour::R => {
                if s.len() >= 2 && self.sub_has_nan(x, y, s) {
                    return Err(self.svd_na_error(x, y, s));
                }
                Ok(self.pcor(sc, x, y, s, Keep::Above))
            }
            GaussFlavour::Cpp => Ok(self.pcor(sc, x, y, s, Keep::AtLeast)),
        }
    }

    fn svd_na_error(&self, x: usize, y: usize, s: &[u32]) -> PcError {
        // corpcor::pseudoinverse calls svd(), which refuses NA input; pcalg has no handler.
        PcError::Test(format!(
            "gaussCItest(x = {}, y = {}, S of size {}): the correlation submatrix C[c(x,y,S), c(x,y,S)] \
             contains NA, and pcalg's pseudoinverse() stops on it (svd: \"infinite or missing values in 'x'\")",
            x + 1,
            y + 1,
            s.len()
        ))
    }

    /// pcalg::gaussCItest.
    ///
    /// r: NA -> 0, then clamped to [-CUT_AT, CUT_AT]; z = sqrt(n - |S| - 3) * 0.5 *
    /// log1p(2r/(1-r)), NA -> 0 (so n - |S| - 3 < 0 gives p = 1); p = 2 pnorm(-|z|).
    fn p_value_r(&self, sc: &mut GaussScratch, x: usize, y: usize, s: &[u32]) -> Result<f64> {
        if s.len() >= 2 && self.sub_has_nan(x, y, s) {
            return Err(self.svd_na_error(x, y, s));
        }
        let r = self.pcor(sc, x, y, s, Keep::Above);
        let r = if r.is_nan() {
            0.0
        } else {
            r.clamp(-CUT_AT, CUT_AT)
        };
        let z = (self.n - s.len() as f64 - 3.0).sqrt() * 0.5 * log_q1pm(r);
        let z = if z.is_nan() { 0.0 } else { z };
        Ok(two_sided_p(z))
    }

    /// pcalg's `IndepTestGauss::test` (stable.fast).
    ///
    /// NaN anywhere in C[c(x,y,S), c(x,y,S)] -> NaN. Otherwise r = std::min(CUT_AT, |r|), which
    /// maps a NaN r to CUT_AT (not to 0 as in R). The sample size is an unsigned int and the
    /// degrees of freedom are formed as `n - S.size() - 3.0` in unsigned 64-bit arithmetic:
    /// n - |S| in {0, 1, 2} gives sqrt of a negative number, and Boost's normal cdf then throws
    /// (`domain_error`, surfacing as an R error), which is reproduced as an error here; n < |S|
    /// wraps around to ~1.8e19, giving p = 0 (or 1 when r = 0), reproduced as such (it is
    /// unreachable from the skeleton, whose level n - 2 would have thrown first).
    /// p = 2 * (erfc(|z| / sqrt 2) / 2), Boost's normal upper tail.
    fn p_value_cpp(&self, sc: &mut GaussScratch, x: usize, y: usize, s: &[u32]) -> Result<f64> {
        if self.sub_has_nan(x, y, s) {
            return Ok(f64::NAN);
        }
        let r = self.pcor(sc, x, y, s, Keep::AtLeast);
        let r = cpp_cut(r);
        let absz = cpp_z_factor(self.n, s.len()) * log_q1pm(r);
        if absz.is_nan() {
            return Err(PcError::invalid(
                "suffStat$n",
                format!(
                    "n = {} is too small for a conditioning set of size {} (n - |S| - 3 < 0): pcalg's \
                     stable.fast stops here with Boost's domain_error (\"Random variate x is -nan\")",
                    self.n_uint,
                    s.len()
                ),
            ));
        }
        Ok(2.0 * (erfc(absz / std::f64::consts::SQRT_2) / 2.0))
    }
}

/// sqrt(n - |S| - 3) * 0.5 as pcalg's C++ test forms it: n truncated to an unsigned int, n - |S|
/// in unsigned 64-bit arithmetic (wrapping), then - 3.0; NaN when n - |S| is 0, 1 or 2. A GPU
/// evaluating the C++ test takes its factor from here.
pub fn cpp_z_factor(n: f64, set_size: usize) -> f64 {
    let n_uint = n as u32;
    let dof = (n_uint as u64).wrapping_sub(set_size as u64) as f64 - 3.0;
    dof.sqrt() * 0.5
}

/// pcalg's `logQ1pm`: log((1+r)/(1-r)) = 2 atanh(r), as log1p(2r/(1-r)).
#[inline]
fn log_q1pm(r: f64) -> f64 {
    (2.0 * r / (1.0 - r)).ln_1p()
}

/// `std::min(CUT_THR, std::abs(r))`: std::min returns its first argument unless the second
/// compares less, so a NaN r becomes CUT_THR.
#[inline]
fn cpp_cut(r: f64) -> f64 {
    let a = r.abs();
    if a < CUT_AT {
        a
    } else {
        CUT_AT
    }
}

impl CiTest for GaussTest {
    type Scratch = GaussScratch;
    fn p_value(&self, sc: &mut GaussScratch, x: u32, y: u32, s: &[u32]) -> Result<f64> {
        let x = self.check_index(x)?;
        let y = self.check_index(y)?;
        for &k in s {
            self.check_index(k)?;
        }
        match self.flavour {
            GaussFlavour::R => self.p_value_r(sc, x, y, s),
            GaussFlavour::Cpp => self.p_value_cpp(sc, x, y, s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ar1(p: usize, rho: f64) -> Vec<f64> {
        let mut c = vec![0.0; p * p];
        for i in 0..p {
            for j in 0..p {
                c[i + j * p] = rho.powi((i as i32 - j as i32).abs());
            }
        }
        c
    }

    fn pv(t: &GaussTest, x: u32, y: u32, s: &[u32]) -> Result<f64> {
        t.p_value(&mut GaussScratch::default(), x, y, s)
    }

    #[test]
    fn rejects_bad_input() {
        assert!(GaussTest::new(vec![1.0; 3], 2, 10.0, GaussFlavour::R).is_err());
        assert!(
            GaussTest::new(vec![1.0, f64::INFINITY, 0.0, 1.0], 2, 10.0, GaussFlavour::R).is_err()
        );
        assert!(GaussTest::new(vec![1.0; 4], 2, f64::NAN, GaussFlavour::R).is_err());
        assert!(GaussTest::new(vec![1.0; 4], 2, -1.0, GaussFlavour::R).is_err());
        assert!(GaussTest::new(vec![1.0; 4], 2, 5e9, GaussFlavour::Cpp).is_err());
        assert!(GaussTest::new(vec![1.0; 4], 2, 5e9, GaussFlavour::R).is_ok());
        let t = GaussTest::new(ar1(3, 0.5), 3, 10.0, GaussFlavour::R).unwrap();
        assert!(pv(&t, 0, 3, &[]).is_err());
    }

    #[test]
    fn markov_chain_partial_correlation_vanishes() {
        // AR(1): X0 and X2 are independent given X1, for every conditioning set holding X1.
        let c = ar1(6, 0.6);
        for fl in [GaussFlavour::R, GaussFlavour::Cpp] {
            let t = GaussTest::new(c.clone(), 6, 100.0, fl).unwrap();
            assert!((pv(&t, 0, 2, &[1]).unwrap() - 1.0).abs() < 1e-12);
            assert!((pv(&t, 0, 2, &[1, 4]).unwrap() - 1.0).abs() < 1e-12);
            assert!((pv(&t, 0, 2, &[1, 3, 4, 5]).unwrap() - 1.0).abs() < 1e-12);
            assert!(pv(&t, 0, 2, &[4]).unwrap() < 1e-3);
        }
    }

    #[test]
    fn r_flavour_small_n_gives_one() {
        let t = GaussTest::new(ar1(6, 0.6), 6, 4.0, GaussFlavour::R).unwrap();
        // n - |S| - 3 = 1, 0, -1, -2.
        assert!(pv(&t, 0, 1, &[]).unwrap() < 1.0);
        assert_eq!(pv(&t, 0, 1, &[2]).unwrap(), 1.0);
        assert_eq!(pv(&t, 0, 1, &[2, 3]).unwrap(), 1.0);
        assert_eq!(pv(&t, 0, 1, &[2, 3, 4]).unwrap(), 1.0);
    }

    #[test]
    fn cpp_flavour_small_n_errors_or_wraps() {
        let t = GaussTest::new(ar1(8, 0.6), 8, 4.7, GaussFlavour::Cpp).unwrap();
        // n is truncated to 4: |S| = 1 gives dof 0 and p = 1, |S| = 2..4 throw in pcalg.
        assert_eq!(pv(&t, 0, 1, &[2]).unwrap(), 1.0);
        for k in 2..=4 {
            let s: Vec<u32> = (2..2 + k).collect();
            match pv(&t, 0, 1, &s) {
                Err(PcError::InvalidArgument { arg, .. }) => assert_eq!(arg, "suffStat$n"),
                other => panic!("|S| = {k}: expected an error, got {other:?}"),
            }
        }
        // |S| = 5 > n: the unsigned subtraction wraps and p underflows to 0.
        assert_eq!(pv(&t, 0, 1, &[2, 3, 4, 5, 6]).unwrap(), 0.0);
    }

    #[test]
    fn nan_rules_differ_between_flavours() {
        let mut c = ar1(5, 0.5);
        // Variable 4 is constant: NA correlations, NA variance.
        for i in 0..5 {
            c[4 + i * 5] = f64::NAN;
            c[i + 4 * 5] = f64::NAN;
        }
        let r = GaussTest::new(c.clone(), 5, 50.0, GaussFlavour::R).unwrap();
        let cpp = GaussTest::new(c, 5, 50.0, GaussFlavour::Cpp).unwrap();
        // R: NA r -> 0 -> p = 1 at |S| <= 1; svd() error at |S| >= 2.
        assert_eq!(pv(&r, 0, 4, &[]).unwrap(), 1.0);
        assert_eq!(pv(&r, 0, 1, &[4]).unwrap(), 1.0);
        assert!(matches!(pv(&r, 0, 1, &[2, 4]), Err(PcError::Test(_))));
        // C++: NaN in the submatrix -> NaN.
        assert!(pv(&cpp, 0, 4, &[]).unwrap().is_nan());
        assert!(pv(&cpp, 0, 1, &[4]).unwrap().is_nan());
        assert!(pv(&cpp, 0, 1, &[2, 4]).unwrap().is_nan());
        // Tests not touching variable 4 are unaffected.
        assert!(pv(&r, 0, 2, &[1, 3]).unwrap() > 0.99);
        assert!(pv(&cpp, 0, 2, &[1, 3]).unwrap() > 0.99);
    }

    #[test]
    fn cpp_cut_maps_nan_to_threshold() {
        assert_eq!(cpp_cut(f64::NAN), CUT_AT);
        assert_eq!(cpp_cut(-0.5), 0.5);
        assert_eq!(cpp_cut(-1.0), CUT_AT);
        // A NaN r in the C++ path is "almost perfectly correlated": with a zero submatrix
        // (pinv = 0, r = -0/0) the p-value is tiny instead of R's 1.
        let mut c = vec![0.0; 25];
        c[0] = 1.0;
        let t = GaussTest::new(c.clone(), 5, 30.0, GaussFlavour::Cpp).unwrap();
        assert!(pv(&t, 1, 2, &[3, 4]).unwrap() < 1e-30);
        let t = GaussTest::new(c, 5, 30.0, GaussFlavour::R).unwrap();
        assert_eq!(pv(&t, 1, 2, &[3, 4]).unwrap(), 1.0);
    }

    #[test]
    fn clamp_is_applied() {
        // Two perfectly correlated variables: r = 1 is cut at 0.9999999 in both flavours.
        let c = vec![1.0, 1.0, 1.0, 1.0];
        let want = two_sided_p(7.0f64.sqrt() * 0.5 * log_q1pm(CUT_AT));
        let r = GaussTest::new(c.clone(), 2, 10.0, GaussFlavour::R).unwrap();
        assert_eq!(pv(&r, 0, 1, &[]).unwrap(), want);
        let cpp = GaussTest::new(c, 2, 10.0, GaussFlavour::Cpp).unwrap();
        let got = pv(&cpp, 0, 1, &[]).unwrap();
        assert!(((got - want) / want).abs() < 1e-13);
    }

    #[test]
    fn asymmetric_matrix_uses_pinv_order() {
        let mut c = ar1(4, 0.4);
        c[1] += 1e-3; // C[1,0] != C[0,1]
        let t = GaussTest::new(c, 4, 100.0, GaussFlavour::R).unwrap();
        assert!(!t.symmetric);
        let p = pv(&t, 0, 3, &[1, 2]).unwrap();
        assert!(p.is_finite() && (0.0..=1.0).contains(&p));
    }
}
