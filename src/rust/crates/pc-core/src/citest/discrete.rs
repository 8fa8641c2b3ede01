//! disCItest / binCItest: the G^2 likelihood-ratio test of x _||_ y | S on contingency tables,
//! as pcalg's `gSquareDis` / `gSquareBin` compute it.
//!
//! * df = (nlev[x]-1)(nlev[y]-1) prod(nlev[S]) (Dis) or 2^|S| (Bin); if n < 10 df the test is
//!   not run and p = 1 (pcalg warns "n is too small ... treated as independence").
//! * G^2 = sum over cells with n_ijk > 0 of 2 n_ijk log(n_ijk n_k / (n_ik n_jk)), evaluated with
//!   pcalg's association of the floating-point operations (see [`GSquareTest::p_value`]); empty
//!   cells contribute 0 (pcalg zeroes the NaN of 0 * log 0).
//! * p = pchisq(G^2, df, lower.tail = FALSE).
//! * adaptDF (only when |S| > 0, in both functions): df <- max(df - zero.counts, 1) with
//!   zero.counts = #(empty cells of the x-y-stratum table) + 4 (2^|S| - #strata in the table).
//!   The "4" and "2^|S|" are the binary case's numbers, and pcalg uses them in gSquareDis too:
//!   for 1 <= |S| <= 4 the table holds all prod(nlev[S]) strata, so a non-binary S *lowers*
//!   zero.counts by 4 (prod(nlev[S]) - 2^|S|) and can raise df; that is reproduced. For
//!   |S| >= 5 pcalg's table holds only the observed strata (see below), and so does ours.
//!
//! **pcalg bug, deliberately not reproduced:** for |S| >= 5, `gSquareDis` builds the strata
//! with `lapply(as.list(S), function(x) k <<- cbind(k, d.x1))`, i.e. from x's own column rather
//! than from the columns of S. Every stratum then holds a single x value, G^2 is 0 up to
//! rounding, and the p-value is 1 (or within ~1e-7 of it) whatever the data. This module
//! computes the correct statistic, with the strata of S, at every |S| (the fixture test
//! `dis_large_s_differs_from_pcalg_bug` shows the two side by side). `gSquareBin` gets its
//! |S| >= 6 branch right (`dm[, x] + 1` with x bound to the element of S), and agrees with this
//! module.
//!
//! Memory: the table is dense (nlev[x] nlev[y] prod(nlev[S]) counts), which is always O(n):
//! the test only runs when n >= 10 df, and nlev[x] nlev[y] prod(nlev[S]) <= 4 df, so the table
//! never exceeds 0.4 n cells. Larger tables are never built, the p-value being 1 before
//! counting.

use super::special::pchisq_upper;
use super::CiTest;
use crate::error::{PcError, Result};

/// Discrete data: n x p codes 0..nlev-1, column-major, one byte each (so at most 255 levels per
/// variable).
pub struct DiscreteData {
    pub n: usize,
    pub p: usize,
    pub codes: Vec<u8>,
    pub nlev: Vec<u32>,
}

impl DiscreteData {
    /// Checks the shape, 2 <= nlev[j] <= 255 and 0 <= codes < nlev[j] for every column j.
    pub fn new(n: usize, p: usize, codes: Vec<u8>, nlev: Vec<u32>) -> Result<Self> {
        if n.checked_mul(p) != Some(codes.len()) {
            return Err(PcError::invalid(
                "suffStat$dm",
                format!("must be an {n} x {p} matrix, got {} entries", codes.len()),
            ));
        }
        if nlev.len() != p {
            return Err(PcError::invalid(
                "suffStat$nlev",
                format!("must have length p = {p}, got {}", nlev.len()),
            ));
        }
        if n == 0 {
            return Err(PcError::invalid(
                "suffStat$dm",
                "must have at least one row",
            ));
        }
        if p > u32::MAX as usize {
            return Err(PcError::invalid("suffStat$dm", "too many variables"));
        }
        for (j, &l) in nlev.iter().enumerate() {
            if !(2..=255).contains(&l) {
                return Err(PcError::invalid(
                    "suffStat$nlev",
                    format!(
                        "variable {} has nlev = {l}; each variable needs between 2 and 255 levels \
                         (pcalg requires >= 2; codes are stored in one byte)",
                        j + 1
                    ),
                ));
            }
            let col = &codes[j * n..(j + 1) * n];
            // the column's largest code first (a vectorised pass), the offending one only then
            let top = col.iter().fold(0u8, |m, &c| m.max(c));
            if let Some(&bad) = (top as u32 >= l).then(|| col.iter().find(|&&c| c as u32 >= l)).flatten() {
                return Err(PcError::invalid(
                    "suffStat$dm",
                    format!(
                        "variable {} has value {bad}, outside 0..{} (nlev = {l})",
                        j + 1,
                        l - 1
                    ),
                ));
            }
        }
        Ok(DiscreteData { n, p, codes, nlev })
    }

    #[inline]
    fn col(&self, j: usize) -> &[u8] {
        &self.codes[j * self.n..(j + 1) * self.n]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GSquareKind {
    /// pcalg's disCItest (gSquareDis).
    Dis,
    /// pcalg's binCItest (gSquareBin): every variable binary, df = 2^|S|.
    Bin,
}

pub struct GSquareTest {
    pub data: DiscreteData,
    pub kind: GSquareKind,
    pub adapt_df: bool,
    /// Tests answered p = 1 because n < n.min = 10 df, and the smallest such n.min: pcalg warns
    /// "n=.. is too small (n < n.min = ..)" for each, which R raises after the run.
    small_n: std::sync::atomic::AtomicU64,
    small_n_min: std::sync::atomic::AtomicU64,
}

/// Per-thread buffers: per-sample cell index, cell counts, the two margins of one stratum.
#[derive(Default)]
pub struct GSquareScratch {
    cell: Vec<u32>,
    count: Vec<u32>,
    row: Vec<f64>,
    colm: Vec<f64>,
}

impl GSquareTest {
    /// For [`GSquareKind::Bin`], every code must be 0 or 1 (binCItest's check); `nlev` is then
    /// ignored, as gSquareBin ignores it (a column of zeros is a legal binary variable there).
    pub fn new(data: DiscreteData, kind: GSquareKind, adapt_df: bool) -> Result<Self> {
        if data.n.checked_mul(data.p) != Some(data.codes.len()) || data.nlev.len() != data.p {
            return Err(PcError::invalid("suffStat$dm", "inconsistent dimensions"));
        }
        if kind == GSquareKind::Bin && data.codes.iter().any(|&c| c > 1) {
            return Err(PcError::invalid(
                "suffStat$dm",
                "must be binary, i.e. with values in {0,1}",
            ));
        }
        Ok(GSquareTest {
            data,
            kind,
            adapt_df,
            small_n: Default::default(),
            small_n_min: std::sync::atomic::AtomicU64::new(u64::MAX),
        })
    }

    /// (tests that had n < n.min, the smallest n.min among them), for pcalg's warning.
    pub fn small_n_tests(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.small_n.load(Relaxed), self.small_n_min.load(Relaxed))
    }

    /// `small_n_tests()`, the counts starting again from zero: a test reused by a later run
    /// (orientation's triple checks after the skeleton) warns for that run's tests alone.
    pub fn take_small_n_tests(&self) -> (u64, u64) {
        use std::sync::atomic::Ordering::Relaxed;
        (self.small_n.swap(0, Relaxed), self.small_n_min.swap(u64::MAX, Relaxed))
    }

    /// Records `count` tests answered p = 1 because n < n.min = 10 `df` (pcalg's warning).
    pub(crate) fn note_small_n(&self, count: u64, df: f64) {
        use std::sync::atomic::Ordering::Relaxed;
        if count > 0 {
            self.small_n.fetch_add(count, Relaxed);
            self.small_n_min.fetch_min((10.0 * df).min(u64::MAX as f64) as u64, Relaxed);
        }
    }

    /// The test's degrees of freedom before adaptDF (pcalg's `df`), and prod(nlev[S]).
    #[inline]
    pub fn df_strata(&self, x: usize, y: usize, s: &[u32]) -> (f64, f64) {
        let strata_f: f64 = s.iter().map(|&k| self.levels(k as usize) as f64).product();
        let df = match self.kind {
            GSquareKind::Dis => (self.levels(x) as f64 - 1.0) * (self.levels(y) as f64 - 1.0) * strata_f,
            GSquareKind::Bin => 2f64.powi(s.len() as i32),
        };
        (df, strata_f)
    }

    #[inline]
    fn levels(&self, v: usize) -> u32 {
        match self.kind {
            GSquareKind::Bin => 2,
            GSquareKind::Dis => self.data.nlev[v],
        }
    }

    fn check_index(&self, v: u32) -> Result<usize> {
        let v = v as usize;
        if v < self.data.p && self.data.nlev.len() == self.data.p {
            Ok(v)
        } else {
            Err(PcError::Internal(format!(
                "G^2 test: variable index {v} out of range (p = {})",
                self.data.p
            )))
        }
    }
}

/// Compensated (Neumaier) summation: pcalg's `sum()` accumulates in long double, so a plain
/// double sum could differ from it in the last bits, which the far chi-square tail magnifies.
#[derive(Default)]
struct Sum {
    s: f64,
    c: f64,
}

impl Sum {
    #[inline]
    fn add(&mut self, v: f64) {
        let t = self.s + v;
        if self.s.abs() >= v.abs() {
            self.c += (self.s - t) + v;
        } else {
            self.c += (v - t) + self.s;
        }
        self.s = t;
    }
    fn value(&self) -> f64 {
        self.s + self.c
    }
}

impl CiTest for GSquareTest {
    type Scratch = GSquareScratch;

    /// The floating-point evaluation follows pcalg: for |S| = 0 the log argument is
    /// `n * (n_ij / (n_i n_j))`, for |S| > 0 `n_ijk * (n_k / (n_ik n_jk))`, and each term is
    /// `(2 n_ijk) * log(...)`, so every term is bit-identical to pcalg's.
    fn p_value(&self, sc: &mut GSquareScratch, x: u32, y: u32, s: &[u32]) -> Result<f64> {
        let d = &self.data;
        let x = self.check_index(x)?;
        let y = self.check_index(y)?;
        for &k in s {
            self.check_index(k)?;
        }
        if d.codes.len() != d.n * d.p {
            return Err(PcError::Internal(
                "G^2 test: data matrix has the wrong size".into(),
            ));
        }
        let (lx, ly) = (self.levels(x), self.levels(y));
        // DiscreteData::new guarantees this; a struct built field by field might not, and with
        // a 1-level variable df = 0 would defeat the n >= 10 df bound on the table size.
        let bad_levels = |v: usize| !(2..=255).contains(&self.levels(v));
        if bad_levels(x) || bad_levels(y) || s.iter().any(|&k| bad_levels(k as usize)) {
            return Err(PcError::invalid(
                "suffStat$nlev",
                "every variable needs between 2 and 255 levels",
            ));
        }
        let (df, strata_f) = self.df_strata(x, y, s);
        let n = d.n;
        if (n as f64) < 10.0 * df {
            self.note_small_n(1, df);
            return Ok(1.0);
        }
        // Bounded by 0.4 n (see the module doc), so these products cannot overflow.
        let n_strata = strata_f as usize;
        let block = (lx * ly) as usize;
        let cells = block * n_strata;
        if cells > u32::MAX as usize {
            return Err(PcError::invalid(
                "suffStat$dm",
                "too many rows: the contingency table index overflows 32 bits",
            ));
        }

        // Cell index of every sample: x + lx * (y + ly * stratum), stratum in mixed radix.
        if sc.cell.len() < n {
            sc.cell.resize(n, 0);
        }
        let cell = &mut sc.cell[..n];
        let mut bad = false;
        for ((c, &cx), &cy) in cell.iter_mut().zip(d.col(x)).zip(d.col(y)) {
            bad |= cx as u32 >= lx || cy as u32 >= ly;
            *c = cx as u32 + lx * cy as u32;
        }
        let mut mult = lx * ly;
        for &k in s {
            let lk = self.levels(k as usize);
            for (c, &ck) in cell.iter_mut().zip(d.col(k as usize)) {
                bad |= ck as u32 >= lk;
                *c += mult * ck as u32;
            }
            mult = mult.saturating_mul(lk);
        }
        if bad {
            return Err(PcError::invalid(
                "suffStat$dm",
                "a code is not below its variable's nlev",
            ));
        }
        if sc.count.len() < cells {
            sc.count.resize(cells, 0);
        }
        let count = &mut sc.count[..cells];
        count.fill(0);
        for &c in cell.iter() {
            count[c as usize] += 1;
        }

        if sc.row.len() < lx as usize {
            sc.row.resize(lx as usize, 0.0);
        }
        if sc.colm.len() < ly as usize {
            sc.colm.resize(ly as usize, 0.0);
        }
        let (lx, ly) = (lx as usize, ly as usize);
        let mut g2 = Sum::default();
        let mut nonzero = 0usize;
        let mut observed = 0usize;
        for k in 0..n_strata {
            let tab = &count[k * block..(k + 1) * block];
            let row = &mut sc.row[..lx];
            let colm = &mut sc.colm[..ly];
            row.fill(0.0);
            colm.fill(0.0);
            let mut nk = 0u64;
            for j in 0..ly {
                for i in 0..lx {
                    let v = tab[i + lx * j];
                    row[i] += v as f64;
                    colm[j] += v as f64;
                    nk += v as u64;
                }
            }
            if nk == 0 {
                continue;
            }
            observed += 1;
            let nk = nk as f64;
            for j in 0..ly {
                for i in 0..lx {
                    let v = tab[i + lx * j];
                    if v == 0 {
                        continue;
                    }
                    nonzero += 1;
                    let v = v as f64;
                    let ratio = if s.is_empty() {
                        n as f64 * (v / (row[i] * colm[j]))
                    } else {
                        v * (nk / (row[i] * colm[j]))
                    };
                    g2.add(2.0 * v * ratio.ln());
                }
            }
        }
        let g2 = g2.value();

        let mut df = df;
        if self.adapt_df && !s.is_empty() {
            let pow2 = 2f64.powi(s.len() as i32);
            // Strata in pcalg's table: all of them where it is dense (Bin |S| <= 5 and Dis
            // |S| <= 4), the observed ones where it is built sample by sample.
            let listed = match (self.kind, s.len()) {
                (GSquareKind::Bin, 0..=5) | (GSquareKind::Dis, 0..=4) => n_strata,
                _ => observed,
            };
            let zero_counts = (listed * block - nonzero) as f64 + 4.0 * (pow2 - listed as f64);
            df = (df - zero_counts).max(1.0);
        }
        Ok(pchisq_upper(g2, df))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(cols: &[&[u8]], nlev: &[u32]) -> DiscreteData {
        let n = cols[0].len();
        let codes: Vec<u8> = cols.iter().flat_map(|c| c.iter().copied()).collect();
        DiscreteData::new(n, cols.len(), codes, nlev.to_vec()).unwrap()
    }

    #[test]
    fn validation() {
        assert!(DiscreteData::new(2, 2, vec![0, 1, 0], vec![2, 2]).is_err());
        assert!(DiscreteData::new(2, 2, vec![0, 1, 0, 1], vec![2]).is_err());
        assert!(DiscreteData::new(2, 2, vec![0, 1, 0, 2], vec![2, 2]).is_err());
        assert!(DiscreteData::new(2, 2, vec![0, 1, 0, 1], vec![1, 2]).is_err());
        assert!(DiscreteData::new(2, 2, vec![0, 1, 0, 1], vec![2, 256]).is_err());
        let d = DiscreteData::new(2, 2, vec![0, 1, 0, 2], vec![2, 3]).unwrap();
        assert!(GSquareTest::new(d, GSquareKind::Bin, false).is_err());
    }

    #[test]
    fn too_few_samples_gives_one() {
        // n = 39 < 10 * df = 40 for |S| = 2 (Bin df = 4); 39 >= 20 for |S| = 1.
        let a: Vec<u8> = (0..39).map(|i| (i % 2) as u8).collect();
        let b: Vec<u8> = (0..39).map(|i| ((i / 2) % 2) as u8).collect();
        let c: Vec<u8> = (0..39).map(|i| ((i / 3) % 2) as u8).collect();
        let t = GSquareTest::new(
            data(&[&a, &a, &b, &c], &[2, 2, 2, 2]),
            GSquareKind::Bin,
            false,
        )
        .unwrap();
        let mut sc = GSquareScratch::default();
        assert_eq!(t.p_value(&mut sc, 0, 1, &[2, 3]).unwrap(), 1.0);
        assert!(t.p_value(&mut sc, 0, 1, &[2]).unwrap() < 1e-6);
        // Dis with a 3-level S: df = 1 * 1 * 3 -> n.min = 30 <= 39, runs.
        let c3: Vec<u8> = (0..39).map(|i| (i % 3) as u8).collect();
        let t =
            GSquareTest::new(data(&[&a, &a, &c3], &[2, 2, 3]), GSquareKind::Dis, false).unwrap();
        assert!(t.p_value(&mut sc, 0, 1, &[2]).unwrap() < 1e-6);
        let t = GSquareTest::new(
            data(&[&a, &a, &c3, &c3], &[2, 2, 3, 3]),
            GSquareKind::Dis,
            false,
        )
        .unwrap();
        assert_eq!(t.p_value(&mut sc, 0, 1, &[2, 3]).unwrap(), 1.0);
    }

    #[test]
    fn g2_of_a_2x2_table() {
        // Counts 30 10 / 10 30: G^2 = 2 * sum n log(n N / (r c)).
        let mut xs = vec![];
        let mut ys = vec![];
        for (xv, yv, k) in [(0u8, 0u8, 30), (1, 0, 10), (0, 1, 10), (1, 1, 30)] {
            for _ in 0..k {
                xs.push(xv);
                ys.push(yv);
            }
        }
        let g2: f64 = 2.0
            * (2.0 * 30.0 * (30.0f64 * 80.0 / 1600.0).ln()
                + 2.0 * 10.0 * (10.0f64 * 80.0 / 1600.0).ln());
        let want = pchisq_upper(g2, 1.0);
        for kind in [GSquareKind::Dis, GSquareKind::Bin] {
            let t = GSquareTest::new(data(&[&xs, &ys], &[2, 2]), kind, false).unwrap();
            let got = t
                .p_value(&mut GSquareScratch::default(), 0, 1, &[])
                .unwrap();
            assert!(((got - want) / want).abs() < 1e-13, "{got} vs {want}");
        }
    }

    #[test]
    fn adapt_df_counts_zero_cells_like_pcalg() {
        // x = y = s1, s2 random-ish: many empty cells. Bin |S| = 2: df = 4, 16 cells.
        let n = 400;
        let s1: Vec<u8> = (0..n).map(|i| (i % 2) as u8).collect();
        let s2: Vec<u8> = (0..n).map(|i| ((i * 7 / 3) % 2) as u8).collect();
        let d = || data(&[&s1, &s1, &s1, &s2], &[2, 2, 2, 2]);
        let mut sc = GSquareScratch::default();
        let plain = GSquareTest::new(d(), GSquareKind::Bin, false).unwrap();
        let adapt = GSquareTest::new(d(), GSquareKind::Bin, true).unwrap();
        // With x = y = s1, within each (s1, s2) stratum only the cell (s1, s1) is filled: G^2 = 0
        // and the table has 4 nonzero cells, 12 zeros: df = max(4 - 12, 1) = 1.
        assert_eq!(plain.p_value(&mut sc, 0, 1, &[2, 3]).unwrap(), 1.0);
        assert_eq!(adapt.p_value(&mut sc, 0, 1, &[2, 3]).unwrap(), 1.0);
        // Independent x, y given a 3-level S in Dis: zero.counts = zeros - 4 (3 - 2).
        let mut state = 12345u64;
        let mut draw = |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) % m) as u8
        };
        let x: Vec<u8> = (0..n).map(|_| draw(2)).collect();
        let y: Vec<u8> = (0..n).map(|_| draw(2)).collect();
        let z: Vec<u8> = (0..n).map(|_| draw(3)).collect();
        let t = GSquareTest::new(data(&[&x, &y, &z], &[2, 2, 3]), GSquareKind::Dis, true).unwrap();
        let p = t.p_value(&mut sc, 0, 1, &[2]).unwrap();
        // All 12 cells filled: zero.counts = 0 + 4 (2 - 3) = -4, df = 3 + 4 = 7.
        let t0 =
            GSquareTest::new(data(&[&x, &y, &z], &[2, 2, 3]), GSquareKind::Dis, false).unwrap();
        let p0 = t0.p_value(&mut sc, 0, 1, &[2]).unwrap();
        assert!(p > p0, "raising df from 3 to 7 must raise p: {p} vs {p0}");
    }
}
