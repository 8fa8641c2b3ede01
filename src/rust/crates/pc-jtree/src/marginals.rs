//! Where a batch's posterior marginals go, and in which layout.
//!
//! Each variable's marginals are a rows x states matrix in column-major order (state s of row
//! r at `s * rows + r`): R's matrix layout, and the layout a chunk's marginal cells come in
//! (cell-major, the chunk's rows contiguous), so a chunk is normalised straight into its final
//! place, a contiguous run per state. A caller that owns the matrices (R, which allocates them
//! before the batch) hands them in as a [`MargSink`] and no copy is made after the batch; a
//! variable without a matrix is not normalised at all.

use std::marker::PhantomData;

use crate::error::{try_filled, Result};
use crate::plan::Plan;

/// The value of every state of a row whose evidence is impossible (P(evidence) = 0): a NaN,
/// the one R reads as `NA`.
pub const NO_ANSWER: f64 = f64::from_bits(0x7FF0_0000_0000_07A2);

/// Posterior marginals of every variable (`nodes[v]`: rows x card[v], column-major, normalised,
/// [`NO_ANSWER`] where P(evidence) = 0) and P(evidence) per row.
#[derive(Clone, Debug)]
pub struct Marginals {
    pub rows: usize,
    pub nodes: Vec<Vec<f64>>,
    pub pe: Vec<f64>,
}

impl Marginals {
    /// Zeros for `rows` evidence sets of `plan`'s variables (filled on the rayon pool it is
    /// called in).
    pub fn zeroed(plan: &Plan, rows: usize) -> Result<Marginals> {
        let nodes = plan.card.iter().map(|&c| try_filled(rows * c, 0.0, "the marginals")).collect::<Result<_>>()?;
        Ok(Marginals { rows, nodes, pe: try_filled(rows, 0.0, "P(evidence)")? })
    }

    /// State `s` of variable `v` in row `r`.
    pub fn at(&self, r: usize, v: usize, s: usize) -> f64 {
        self.nodes[v][s * self.rows + r]
    }

    /// Row `r`: every variable's states, the variables in order.
    pub fn row(&self, r: usize) -> Vec<f64> {
        self.nodes.iter().flat_map(|m| m.iter().skip(r).step_by(self.rows.max(1)).copied()).collect()
    }

    /// Every value's bits, variable by variable (for comparisons bit for bit).
    pub fn bits(&self) -> Vec<u64> {
        self.nodes.iter().flatten().map(|x| x.to_bits()).collect()
    }

    /// The first `rows` rows.
    pub fn first_rows(&self, rows: usize) -> Marginals {
        let rows = rows.min(self.rows);
        let nodes = self.nodes.iter().map(|m| m.chunks(self.rows.max(1)).flat_map(|col| &col[..rows]).copied().collect()).collect();
        Marginals { rows, nodes, pe: self.pe[..rows].to_vec() }
    }

    /// The answers of consecutive blocks of one batch, as the batch's (the blocks in order).
    pub fn concat(parts: Vec<Marginals>) -> Option<Marginals> {
        let rows: usize = parts.iter().map(|m| m.rows).sum();
        let vars = parts.first()?.nodes.len();
        let nodes = (0..vars)
            .map(|v| {
                let states = parts.iter().find(|m| m.rows > 0).map_or(0, |m| m.nodes[v].len() / m.rows);
                let mut out = Vec::with_capacity(rows * states);
                for s in 0..states {
                    for m in parts.iter().filter(|m| m.rows > 0) {
                        out.extend_from_slice(&m.nodes[v][s * m.rows..(s + 1) * m.rows]);
                    }
                }
                out
            })
            .collect();
        Some(Marginals { rows, nodes, pe: parts.iter().flat_map(|m| m.pe.iter().copied()).collect() })
    }

    /// A sink over these matrices (every variable).
    pub fn sink(&mut self, plan: &Plan) -> MargSink<'_> {
        let nodes = self.nodes.iter_mut().map(|m| m.as_mut_ptr()).collect();
        // SAFETY: each matrix holds rows x card[v] values and pe rows, borrowed for the sink's life.
        unsafe { MargSink::from_raw(plan, self.rows, nodes, self.pe.as_mut_ptr()) }
    }
}

/// The matrices a batch's marginals are normalised into: per variable a column-major matrix of
/// `rows` rows (or none: that variable is skipped), and P(evidence) per row. A view made with
/// [`MargSink::from_row`] writes a block of rows, so that several devices can each write their
/// block of one batch at once.
pub struct MargSink<'a> {
    rows: usize,
    first: usize,
    nodes: Vec<*mut f64>,
    pe: *mut f64,
    _cells: PhantomData<&'a mut [f64]>,
}

// SAFETY: the sink writes through its pointers only in `write_chunk`, at rows its views keep
// apart (each view's rows from its `first`), into memory the creator lends it exclusively.
unsafe impl Send for MargSink<'_> {}
unsafe impl Sync for MargSink<'_> {}

impl<'a> MargSink<'a> {
    /// # Safety
    /// For the sink's life each non-null `nodes[v]` points to `rows * plan.card[v]` doubles and
    /// `pe` to `rows` doubles, which nothing else reads or writes; `nodes` has one entry per
    /// variable.
    pub unsafe fn from_raw(plan: &Plan, rows: usize, nodes: Vec<*mut f64>, pe: *mut f64) -> MargSink<'a> {
        assert_eq!(nodes.len(), plan.card.len(), "one matrix (or none) per variable");
        MargSink { rows, first: 0, nodes, pe, _cells: PhantomData }
    }

    /// The view of rows `first..` (rows of a block are counted from its first).
    pub fn from_row(&self, first: usize) -> MargSink<'_> {
        MargSink { rows: self.rows, first: self.first + first, nodes: self.nodes.clone(), pe: self.pe, _cells: PhantomData }
    }

    /// Normalises a chunk's marginals (cells x b) into its rows `r0..r0 + b` (of this view).
    /// Each chunk's rows are written by one call: two views in use at once cover disjoint rows.
    pub fn write_chunk(&self, plan: &Plan, marg: &[f64], msg_roots: &[f64], b: usize, r0: usize) {
        let at = self.first + r0;
        assert!(at + b <= self.rows, "a chunk past the sink's rows");
        let pe: Vec<f64> = (0..b).map(|k| (0..plan.roots.len()).fold(1.0, |acc, i| acc * msg_roots[i * b + k])).collect();
        // SAFETY: `pe` holds `rows` values (from_raw); rows at..at + b are this chunk's.
        unsafe { std::ptr::copy_nonoverlapping(pe.as_ptr(), self.pe.add(at), b) };
        let mut z = vec![0.0; b];
        for (p, &dst) in plan.marg.iter().zip(&self.nodes) {
            if dst.is_null() {
                continue;
            }
            let (s, m) = (p.out as usize, p.base.len());
            for (k, zk) in z.iter_mut().enumerate() {
                *zk = (0..m).map(|j| marg[(s + j) * b + k]).sum();
            }
            for j in 0..m {
                let src = &marg[(s + j) * b..][..b];
                // SAFETY: the variable's matrix holds rows x m values (from_raw); state j's rows
                // at..at + b are this chunk's.
                let out = unsafe { std::slice::from_raw_parts_mut(dst.add(j * self.rows + at), b) };
                for k in 0..b {
                    out[k] = if pe[k] > 0.0 && z[k] > 0.0 { src[k] / z[k] } else { NO_ANSWER };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_answer_is_the_nan_r_reads_as_na() {
        assert!(NO_ANSWER.is_nan());
        // R's NA_real_: high word 0x7FF00000, low word 1954
        assert_eq!(NO_ANSWER.to_bits() >> 32, 0x7FF0_0000);
        assert_eq!(NO_ANSWER.to_bits() & 0xFFFF_FFFF, 1954);
    }

    #[test]
    fn blocks_concatenate_column_by_column() {
        let block = |rows: usize, base: f64| Marginals {
            rows,
            nodes: vec![(0..rows * 2).map(|i| base + i as f64).collect(), (0..rows).map(|i| -(base + i as f64)).collect()],
            pe: (0..rows).map(|i| base + i as f64).collect(),
        };
        let m = Marginals::concat(vec![block(2, 0.0), block(0, 50.0), block(3, 100.0)]).unwrap();
        assert_eq!(m.rows, 5);
        assert_eq!(m.nodes[0], [0.0, 1.0, 100.0, 101.0, 102.0, 2.0, 3.0, 103.0, 104.0, 105.0]);
        assert_eq!(m.nodes[1], [-0.0, -1.0, -100.0, -101.0, -102.0]);
        assert_eq!(m.row(2), [100.0, 103.0, -100.0]);
        assert_eq!(m.first_rows(2).nodes[0], [0.0, 1.0, 2.0, 3.0]);
        let m = Marginals::concat(vec![block(0, 0.0), block(2, 10.0)]).unwrap();
        assert_eq!(m.nodes[0], [10.0, 11.0, 12.0, 13.0]);
    }
}
