//! A batch of evidence sets: hard evidence as one state per (row, variable) and likelihood (soft)
//! evidence as a vector over the states of the variables that have any.

use crate::error::{JtError, Result};

#[derive(Clone, Debug)]
pub struct Evidence {
    pub rows: usize,
    pub n_vars: usize,
    /// rows x n_vars, row-major: the observed state, or -1.
    pub hard: Vec<i32>,
    /// Per variable: its first column in `soft`, or -1 when no row has likelihood evidence on it.
    pub soft_col: Vec<i32>,
    pub soft_width: usize,
    /// rows x soft_width, row-major: the likelihood of each state (all 1 where unobserved).
    pub soft: Vec<f64>,
}

impl Evidence {
    /// `rows` evidence sets with nothing observed.
    pub fn empty(n_vars: usize, rows: usize) -> Evidence {
        Evidence { rows, n_vars, hard: vec![-1; rows * n_vars], soft_col: vec![-1; n_vars], soft_width: 0, soft: Vec::new() }
    }

    /// Checks shapes and ranges against the variables' cardinalities.
    pub fn check(&self, card: &[usize]) -> Result<()> {
        let n = card.len();
        if self.n_vars != n || self.hard.len() != self.rows * n || self.soft_col.len() != n || self.soft.len() != self.rows * self.soft_width {
            return Err(JtError::invalid("evidence", "has the wrong shape for this network"));
        }
        if self.rows == 0 {
            return Err(JtError::invalid("evidence", "has no rows"));
        }
        for (i, &s) in self.hard.iter().enumerate() {
            if s >= card[i % n] as i32 || s < -1 {
                return Err(JtError::invalid("evidence", format!("row {}: state {} is out of range", i / n + 1, s + 1)));
            }
        }
        let mut width = 0usize;
        for (v, &c) in self.soft_col.iter().enumerate() {
            if c >= 0 {
                width = width.max(c as usize + card[v]);
            }
        }
        if width > self.soft_width {
            return Err(JtError::invalid("evidence", "likelihood columns overrun"));
        }
        if self.soft.iter().any(|x| !x.is_finite() || *x < 0.0) {
            return Err(JtError::invalid("evidence", "likelihoods must be finite and non-negative"));
        }
        Ok(())
    }
}
