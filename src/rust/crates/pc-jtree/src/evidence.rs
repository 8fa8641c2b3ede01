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

    /// The evidence sets `range` of this batch (one device's share of it).
    pub fn rows_slice(&self, range: std::ops::Range<usize>) -> Evidence {
        let (n, w) = (self.n_vars, self.soft_width);
        Evidence {
            rows: range.len(),
            n_vars: n,
            hard: self.hard[range.start * n..range.end * n].to_vec(),
            soft_col: self.soft_col.clone(),
            soft_width: w,
            soft: self.soft[range.start * w..range.end * w].to_vec(),
        }
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
        for (r, row) in self.hard.chunks(n.max(1)).enumerate() {
            if let Some((&s, _)) = row.iter().zip(card).find(|(&s, &c)| s >= c as i32 || s < -1) {
                return Err(JtError::invalid("evidence", format!("row {}: state {} is out of range", r + 1, s + 1)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_holds_its_rows_and_the_slices_make_the_batch() {
        let mut ev = Evidence::empty(3, 5);
        ev.soft_col = vec![-1, 0, -1];
        ev.soft_width = 2;
        ev.soft = (0..10).map(|x| x as f64).collect();
        ev.hard = (0..15).map(|x| (x % 4) as i32 - 1).collect();
        let (a, b) = (ev.rows_slice(0..2), ev.rows_slice(2..5));
        assert_eq!((a.rows, b.rows), (2, 3));
        assert_eq!([a.hard, b.hard].concat(), ev.hard);
        assert_eq!([a.soft, b.soft].concat(), ev.soft);
        assert_eq!(b.soft_col, ev.soft_col);
    }

    #[test]
    fn a_state_out_of_range_is_named_by_its_row() {
        let card = [2, 3, 2];
        let mut ev = Evidence::empty(3, 4);
        assert!(ev.check(&card).is_ok());
        ev.hard[2 * 3 + 1] = 2; // row 3, the 3-state variable's last state
        assert!(ev.check(&card).is_ok());
        ev.hard[2 * 3 + 2] = 2; // row 3, a 2-state variable's third state
        let e = ev.check(&card).unwrap_err().to_string();
        assert!(e.contains("row 3: state 3 is out of range"), "{e}");
        ev.hard[2 * 3 + 2] = -1;
        ev.hard[1] = -2;
        assert!(ev.check(&card).unwrap_err().to_string().contains("row 1: state -1"));
    }
}
