//! One CMI-kNN test as tigramite's `CMIknn.run_test` computes it, and the `CiTest` the level loop
//! calls.
//!
//! Defaults (tigramite 5.2): knn = 0.2 (a fraction of n when below 1: max(1, floor(knn n))),
//! shuffle_neighbors = 5, sig_samples = 500, transform = "ranks", permute = "Y". The p-value is
//! tigramite's (1 + #{null >= statistic}) / (1 + sig_samples).
//!
//! Which variable a test permutes follows the call's order: in `test(x, y, S)` with permute = Y,
//! y's values are moved among Z-neighbours. The permutations' key is (seed, x, sorted S), so the
//! tests of one x and S against every y share them (what the GPU batches on).

use pc_core::citest::CiTest;
use pc_core::PcError;
use rayon::prelude::*;

use crate::digamma::digamma_table;
use crate::estimator::{cmi, Rows};
use crate::permute::{full_permutation, restricted_permutation, z_neighbours_from, PermScratch, ZOrder};
use crate::philox::group_key;
use crate::ranks::RankData;

type Result<T> = std::result::Result<T, PcError>;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Knn {
    /// A fraction of n (tigramite: a value below 1).
    Fraction(f64),
    /// An absolute count.
    Count(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Permute {
    X,
    Y,
}

#[derive(Clone, Debug)]
pub struct CmiKnnParams {
    pub knn: Knn,
    pub shuffle_neighbors: usize,
    pub sig_samples: usize,
    pub permute: Permute,
    pub seed: u64,
}

impl Default for CmiKnnParams {
    fn default() -> Self {
        CmiKnnParams { knn: Knn::Fraction(0.2), shuffle_neighbors: 5, sig_samples: 500, permute: Permute::Y, seed: 0 }
    }
}

/// A test's statistic, p-value and null distribution (in permutation order).
#[derive(Clone, Debug)]
pub struct Outcome {
    pub statistic: f64,
    pub p_value: f64,
    pub null: Vec<f64>,
}

/// The test over one data set (ranks computed once).
pub struct CmiKnn {
    data: RankData,
    params: CmiKnnParams,
    k: usize,
    psi: Vec<f64>,
}

fn oom(what: &str) -> PcError {
    PcError::Test(format!("CMI-kNN: not enough memory for {what}"))
}

fn zeroed<T: Clone + Default>(len: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len).map_err(|_| oom(what))?;
    v.resize(len, T::default());
    Ok(v)
}

/// Runs `f(i)` for i in 0..count, on the current rayon pool when called inside one (the level
/// loop's, or the one an entry point built for the call), sequentially otherwise: never on the
/// global pool. The results are the same either way.
fn map_indices<T: Send>(count: usize, f: impl Fn(usize) -> Result<T> + Sync + Send) -> Result<Vec<T>> {
    if rayon::current_thread_index().is_some() {
        (0..count).into_par_iter().map(f).collect()
    } else {
        (0..count).map(f).collect()
    }
}

impl CmiKnn {
    pub fn new(data: RankData, params: CmiKnnParams) -> Result<Self> {
        let n = data.n();
        let k = match params.knn {
            Knn::Fraction(f) => {
                if !(f > 0.0 && f < 1.0) {
                    return Err(PcError::invalid("suffStat$knn", "a fraction of n must lie in (0, 1)"));
                }
                ((f * n as f64) as usize).max(1)
            }
            Knn::Count(c) => c.max(1),
        };
        if k >= n {
            return Err(PcError::invalid("suffStat$knn", format!("gives k = {k} neighbours, but there are only {n} samples (k must be below n)")));
        }
        if params.shuffle_neighbors < 1 {
            return Err(PcError::invalid("suffStat$shuffle_neighbors", "must be at least 1"));
        }
        if params.sig_samples < 1 {
            return Err(PcError::invalid("suffStat$sig_samples", "must be at least 1"));
        }
        let psi = digamma_table(n).map_err(|_| oom("the digamma table"))?;
        Ok(CmiKnn { data, params, k, psi })
    }

    /// k, the neighbour count of the estimate.
    pub fn k(&self) -> usize {
        self.k
    }

    pub fn n(&self) -> usize {
        self.data.n()
    }

    pub fn params(&self) -> &CmiKnnParams {
        &self.params
    }

    pub fn data(&self) -> &RankData {
        &self.data
    }

    pub fn psi(&self) -> &[f64] {
        &self.psi
    }

    fn check(&self, x: u32, y: u32, s: &[u32]) -> Result<()> {
        let p = self.data.p() as u32;
        if x >= p || y >= p || s.iter().any(|&v| v >= p) {
            return Err(PcError::Test(format!("CMI-kNN: a variable index is out of range (there are {p} variables)")));
        }
        if x == y || s.contains(&x) || s.contains(&y) {
            return Err(PcError::Test("CMI-kNN: x, y and S must be distinct variables".into()));
        }
        Ok(())
    }

    /// Whether the null of a test with `l` conditioning variables uses the restricted
    /// permutation (else a full one).
    pub fn restricted(&self, l: usize) -> bool {
        l > 0 && self.params.shuffle_neighbors < self.data.n()
    }

    /// The Z-neighbour lists of a conditioning set (n x shuffle_neighbors), or none when the
    /// null uses full permutations.
    pub fn neighbours(&self, s: &[u32]) -> Result<Option<Vec<u32>>> {
        if !self.restricted(s.len()) {
            return Ok(None);
        }
        let n = self.data.n();
        let kp = self.params.shuffle_neighbors;
        let mut nb = zeroed(n.checked_mul(kp).ok_or_else(|| oom("Z-neighbours"))?, "Z-neighbours")?;
        let zs: Vec<&[u32]> = s.iter().map(|&v| self.data.column(v)).collect();
        let zo = ZOrder::new(zs[0])?;
        // split over the caller's pool when there is one
        if rayon::current_thread_index().is_some() {
            const ROWS: usize = 64;
            nb.par_chunks_mut(ROWS * kp).enumerate().for_each_init(Vec::new, |keys, (c, out)| {
                z_neighbours_from(&zs, &zo, n, kp, c * ROWS, out, keys);
            });
        } else {
            z_neighbours_from(&zs, &zo, n, kp, 0, &mut nb, &mut Vec::new());
        }
        Ok(Some(nb))
    }

    /// Permutation `b` of the group (x, S): `out[a]` is the row whose value sample a receives.
    pub fn permutation(&self, key: [u32; 2], b: u32, neighbours: Option<&[u32]>, sc: &mut PermScratch, out: &mut [u32]) {
        let n = self.data.n();
        match neighbours {
            Some(nb) => restricted_permutation(key, b, nb, n, self.params.shuffle_neighbors, sc, out),
            None => full_permutation(key, b, n, out),
        }
    }

    /// The group key of x and S (S in any order).
    pub fn key(&self, x: u32, s: &[u32]) -> [u32; 2] {
        key_of(self.params.seed, x, s)
    }

    /// Rows [x, y, z..] with the permuted variable read through `perm`.
    fn fill_rows(&self, x: u32, y: u32, s: &[u32], perm: Option<&[u32]>, rows: &mut Vec<u32>) {
        let n = self.data.n();
        let (cx, cy) = (self.data.column(x), self.data.column(y));
        let zs: Vec<&[u32]> = s.iter().map(|&v| self.data.column(v)).collect();
        rows.clear();
        for a in 0..n {
            let (ix, iy) = match (perm, self.params.permute) {
                (Some(p), Permute::X) => (p[a] as usize, a),
                (Some(p), Permute::Y) => (a, p[a] as usize),
                (None, _) => (a, a),
            };
            rows.push(cx[ix]);
            rows.push(cy[iy]);
            rows.extend(zs.iter().map(|z| z[a]));
        }
    }

    fn estimate(&self, x: u32, y: u32, s: &[u32], perm: Option<&[u32]>) -> Result<f64> {
        let n = self.data.n();
        let d = s.len() + 2;
        let mut rows = Vec::new();
        rows.try_reserve_exact(n * d).map_err(|_| oom("the samples"))?;
        self.fill_rows(x, y, s, perm, &mut rows);
        let mut dist = Vec::new();
        dist.try_reserve_exact(n).map_err(|_| oom("distances"))?;
        Ok(cmi(&Rows { v: &rows, d }, n, self.k, &self.psi, &mut dist))
    }

    /// tigramite's `get_dependence_measure` on the ranks.
    pub fn statistic(&self, x: u32, y: u32, s: &[u32]) -> Result<f64> {
        self.check(x, y, s)?;
        self.estimate(x, y, s, None)
    }

    /// The statistic under every permutation of the group key `key`, in permutation order.
    pub fn null_distribution(&self, x: u32, y: u32, s: &[u32], key: [u32; 2]) -> Result<Vec<f64>> {
        self.check(x, y, s)?;
        let n = self.data.n();
        let nb = self.neighbours(s)?;
        map_indices(self.params.sig_samples, |b| {
            let mut perm = zeroed(n, "a permutation")?;
            self.permutation(key, b as u32, nb.as_deref(), &mut PermScratch::default(), &mut perm);
            self.estimate(x, y, s, Some(&perm))
        })
    }

    /// Statistic, null distribution and p-value of X_x _||_ X_y | X_S.
    pub fn run(&self, x: u32, y: u32, s: &[u32]) -> Result<Outcome> {
        self.run_keyed(x, y, s, self.key(x, s))
    }

    /// [`Self::run`] with the permutations' key given: a caller holding only some columns
    /// (R's single test) keys them by the variables' indices in the whole data set.
    pub fn run_keyed(&self, x: u32, y: u32, s: &[u32], key: [u32; 2]) -> Result<Outcome> {
        let statistic = self.statistic(x, y, s)?;
        let null = self.null_distribution(x, y, s, key)?;
        let p_value = p_value(statistic, &null);
        Ok(Outcome { statistic, p_value, null })
    }
}

/// The permutations' key of the group (x, S) under `seed` (S in any order).
pub fn key_of(seed: u64, x: u32, s: &[u32]) -> [u32; 2] {
    let mut sorted = s.to_vec();
    sorted.sort_unstable();
    group_key(seed, x, &sorted)
}

/// tigramite's empirical p-value: (1 + #{null >= statistic}) / (1 + B).
pub fn p_value(statistic: f64, null: &[f64]) -> f64 {
    let ge = null.iter().filter(|&&v| v >= statistic).count();
    (ge as f64 + 1.0) / (null.len() as f64 + 1.0)
}

impl CiTest for CmiKnn {
    type Scratch = ();
    fn p_value(&self, _: &mut (), x: u32, y: u32, s: &[u32]) -> Result<f64> {
        Ok(self.run(x, y, s)?.p_value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u64) -> RankData {
        // x -> y non-linear, z independent noise; a small LCG so no crate is needed
        let mut st = seed;
        let mut u = || {
            st = st.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (st >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut v = vec![0.0; n * 4];
        for i in 0..n {
            let z = u();
            let x = z + 0.5 * u();
            let y = (3.0 * x).sin() + 0.3 * u();
            let w = z * z + 0.3 * u();
            v[i] = x;
            v[n + i] = y;
            v[2 * n + i] = z;
            v[3 * n + i] = w;
        }
        RankData::from_columns(&v, n, 4).unwrap()
    }

    fn test(n: usize, b: usize) -> CmiKnn {
        let p = CmiKnnParams { knn: Knn::Count(7), sig_samples: b, seed: 42, ..Default::default() };
        CmiKnn::new(data(n, 1), p).unwrap()
    }

    #[test]
    fn same_outcome_on_any_pool() {
        let t = test(120, 30);
        let seq = t.run(0, 1, &[2]).unwrap();
        for threads in [1, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let par = pool.install(|| t.run(0, 1, &[2])).unwrap();
            assert_eq!(seq.statistic.to_bits(), par.statistic.to_bits());
            assert_eq!(seq.null.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), par.null.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            assert_eq!(seq.p_value, par.p_value);
        }
        // S in another order gives the same test
        let t2 = t.run(0, 1, &[3, 2]).unwrap();
        let t3 = t.run(0, 1, &[2, 3]).unwrap();
        assert_eq!(t2.p_value, t3.p_value);
        assert_eq!(t2.statistic.to_bits(), t3.statistic.to_bits());
    }

    #[test]
    fn dependence_is_found_and_independence_is_not() {
        let t = test(300, 99);
        // y depends on x: every surrogate falls below the statistic
        let dep = t.run(0, 1, &[]).unwrap();
        assert_eq!(dep.p_value, 0.01);
        // z reaches y only through x
        let ind = t.run(2, 1, &[0]).unwrap();
        assert!(ind.p_value > 0.05, "{}", ind.p_value);
        assert_eq!(dep.null.len(), 99);
    }

    #[test]
    fn parameters_are_checked() {
        let bad = |p: CmiKnnParams| CmiKnn::new(data(20, 1), p).err().unwrap().to_string();
        assert!(bad(CmiKnnParams { knn: Knn::Count(20), ..Default::default() }).contains("suffStat$knn"));
        assert!(bad(CmiKnnParams { knn: Knn::Fraction(1.5), ..Default::default() }).contains("suffStat$knn"));
        assert!(bad(CmiKnnParams { shuffle_neighbors: 0, ..Default::default() }).contains("shuffle_neighbors"));
        assert!(bad(CmiKnnParams { sig_samples: 0, ..Default::default() }).contains("sig_samples"));
        let t = test(20, 5);
        assert!(t.run(0, 0, &[]).is_err());
        assert!(t.run(0, 1, &[1]).is_err());
        assert!(t.run(0, 9, &[]).is_err());
        // knn = 0.2 of 1000: 0.2 * 1000 = 200.00000000000003 -> 200, as tigramite's int()
        let p = CmiKnnParams::default();
        assert_eq!(CmiKnn::new(data(1000, 2), p).unwrap().k(), 200);
    }
}
