//! A discrete Bayesian network: variables with named states, parents, and conditional probability
//! tables laid out as R lays out bnlearn's CPT arrays (the child's state fastest, then the parents
//! in their listed order), so tables come from R without reordering.

use crate::error::{JtError, Result};

#[derive(Clone, Debug)]
pub struct Network {
    pub names: Vec<String>,
    pub states: Vec<Vec<String>>,
    pub parents: Vec<Vec<usize>>,
    /// P(v | parents), `card(v) * prod card(parents)` values, child state fastest.
    pub cpts: Vec<Vec<f64>>,
}

impl Network {
    /// Checks sizes, parent indices, acyclicity and that every column of a CPT is a distribution
    /// (non-negative, finite, summing to 1 within 1e-6; gRain and bnlearn accept the same).
    pub fn new(names: Vec<String>, states: Vec<Vec<String>>, parents: Vec<Vec<usize>>, cpts: Vec<Vec<f64>>) -> Result<Network> {
        let n = names.len();
        if states.len() != n || parents.len() != n || cpts.len() != n {
            return Err(JtError::Network("names, states, parents and CPTs differ in length".into()));
        }
        for v in 0..n {
            let c = states[v].len();
            if c == 0 {
                return Err(JtError::Network(format!("variable '{}' has no states", names[v])));
            }
            let mut rows: usize = 1;
            for &p in &parents[v] {
                if p >= n || p == v {
                    return Err(JtError::Network(format!("variable '{}' has an invalid parent", names[v])));
                }
                rows = rows
                    .checked_mul(states[p].len())
                    .ok_or_else(|| JtError::TooLarge(format!("the CPT of '{}' overflows", names[v])))?;
            }
            let mut ps = parents[v].clone();
            ps.sort_unstable();
            if ps.windows(2).any(|w| w[0] == w[1]) {
                return Err(JtError::Network(format!("variable '{}' lists a parent twice", names[v])));
            }
            if cpts[v].len() != rows.saturating_mul(c) {
                return Err(JtError::Network(format!(
                    "the CPT of '{}' has {} values, expected {}",
                    names[v],
                    cpts[v].len(),
                    rows.saturating_mul(c)
                )));
            }
            for (r, col) in cpts[v].chunks(c).enumerate() {
                if col.iter().any(|x| !x.is_finite() || *x < 0.0) {
                    return Err(JtError::Network(format!("the CPT of '{}' holds a negative or non-finite value", names[v])));
                }
                let s: f64 = col.iter().sum();
                if (s - 1.0).abs() > 1e-6 {
                    return Err(JtError::Network(format!("column {} of the CPT of '{}' sums to {s}, not 1", r + 1, names[v])));
                }
            }
        }
        let net = Network { names, states, parents, cpts };
        net.topological_order()?;
        Ok(net)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn card(&self, v: usize) -> usize {
        self.states[v].len()
    }

    pub fn cards(&self) -> Vec<usize> {
        (0..self.len()).map(|v| self.card(v)).collect()
    }

    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }

    /// Parents before children (Kahn, lowest index first); an error names a variable on a cycle.
    pub fn topological_order(&self) -> Result<Vec<usize>> {
        let n = self.len();
        let mut indeg: Vec<usize> = self.parents.iter().map(|p| p.len()).collect();
        let mut children = vec![Vec::new(); n];
        for (v, ps) in self.parents.iter().enumerate() {
            for &p in ps {
                children[p].push(v);
            }
        }
        let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&v| indeg[v] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while let Some(v) = ready.pop_first() {
            order.push(v);
            for &c in &children[v] {
                indeg[c] -= 1;
                if indeg[c] == 0 {
                    ready.insert(c);
                }
            }
        }
        if order.len() < n {
            let v = (0..n).find(|&v| indeg[v] > 0).unwrap_or(0);
            return Err(JtError::Network(format!("the graph has a directed cycle through '{}'", self.names[v])));
        }
        Ok(order)
    }

    /// P(v = s | parents = states in `x`), `x` a full assignment.
    pub fn cpt_value(&self, v: usize, x: &[usize]) -> f64 {
        let mut idx = 0usize;
        let mut stride = self.card(v);
        for &p in &self.parents[v] {
            idx += x[p] * stride;
            stride *= self.card(p);
        }
        self.cpts[v][idx + x[v]]
    }
}
