//! The rank transform (tigramite's `transform = "ranks"`), done once per column for the whole run.
//!
//! tigramite adds noise of 1e-6 sd before every estimate and ranks with `argsort(argsort(.))`;
//! on data without ties the noise changes nothing and the ranks here are the same integers. Ties
//! are broken here by row order (the first row gets the lower rank), deterministically, where
//! tigramite breaks them at random; so the ranks of every column are a permutation of 0..n-1.

use pc_core::PcError;

/// Ranks of every column, column-major (`p` columns of `n` rows).
pub struct RankData {
    n: usize,
    p: usize,
    ranks: Vec<u32>,
}

fn oom(what: &str) -> PcError {
    PcError::Test(format!("CMI-kNN: not enough memory for {what}"))
}

impl RankData {
    /// `values` is column-major n x p (R's layout). Non-finite values are refused.
    pub fn from_columns(values: &[f64], n: usize, p: usize) -> Result<Self, PcError> {
        if n < 2 {
            return Err(PcError::invalid("suffStat$data", "needs at least 2 rows"));
        }
        if n > u32::MAX as usize / 2 {
            return Err(PcError::invalid("suffStat$data", "has too many rows"));
        }
        if values.len() != n.checked_mul(p).ok_or_else(|| oom("the ranks"))? {
            return Err(PcError::Internal(format!("data of length {} is not {n} x {p}", values.len())));
        }
        if values.iter().any(|v| !v.is_finite()) {
            return Err(PcError::invalid("suffStat$data", "must not contain NA, NaN or infinite values"));
        }
        let mut ranks = Vec::new();
        ranks.try_reserve_exact(n * p).map_err(|_| oom("the ranks"))?;
        ranks.resize(n * p, 0);
        let mut idx: Vec<u32> = Vec::new();
        idx.try_reserve_exact(n).map_err(|_| oom("the ranks"))?;
        for j in 0..p {
            let col = &values[j * n..(j + 1) * n];
            idx.clear();
            idx.extend(0..n as u32);
            // stable: equal values keep row order
            idx.sort_by(|&a, &b| col[a as usize].partial_cmp(&col[b as usize]).unwrap());
            let out = &mut ranks[j * n..(j + 1) * n];
            for (r, &i) in idx.iter().enumerate() {
                out[i as usize] = r as u32;
            }
        }
        Ok(RankData { n, p, ranks })
    }

    pub fn n(&self) -> usize {
        self.n
    }

    pub fn p(&self) -> usize {
        self.p
    }

    pub fn column(&self, j: u32) -> &[u32] {
        &self.ranks[j as usize * self.n..(j as usize + 1) * self.n]
    }

    /// All ranks, column-major (for uploading to a device).
    pub fn as_slice(&self) -> &[u32] {
        &self.ranks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_and_ties() {
        let v = [3.0, 1.0, 2.0, 1.0, /* col 2 */ 0.5, 0.25, 0.75, 1.0];
        let d = RankData::from_columns(&v, 4, 2).unwrap();
        assert_eq!(d.column(0), &[3, 0, 2, 1]);
        assert_eq!(d.column(1), &[1, 0, 2, 3]);
        assert!(RankData::from_columns(&[1.0, f64::NAN], 2, 1).is_err());
        assert!(RankData::from_columns(&[1.0], 1, 1).is_err());
    }
}
