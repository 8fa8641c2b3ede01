//! pcalg 2.7-12's `udag2apag()`: RFCI's rules 1-10 until the graph stops changing, rule 4 with
//! `checkEdges()`'s tests on each minimal discriminating path (`rfci.rs`).
//!
//! Each rule lists its cells (`which(..., arr.ind = TRUE)`, column-major) when it starts and
//! visits them in that order against the graph as earlier cells left it; the path searches
//! (`minDiscrPath()`, `minUncovCircPath()`, `minUncovPdPath()`) take their first-in-first-out
//! lists and their `visited` marks as pcalg's do. pcalg's quirks that change results, kept:
//! * `minDiscrPath()` extends a path by `mpath[-1]`, so it only ever holds the last two nodes
//!   and the path it returns is (d, previous, b, c), shorter than the discriminating path.
//! * `faith.check()` skips the triple that starts at the path's last node (its loop's first
//!   index, 0, selects nothing).
//! * Rule 2 sets `a *-> c` without checking that the mark is still a circle; rule 10's
//!   `length(indX >= 2)` is true for any non-empty indX.

use std::collections::VecDeque;

use super::rfci::{triple_key, Rfci, UnfaithfulKeys};
use crate::error::Result;

const CIRCLE: u8 = 1;
const ARROW: u8 = 2;
const TAIL: u8 = 3;

/// pcalg's `faith.check(cp, unfVect, p)`: no triple along `cp` (see the module's notes) is
/// listed as unfaithful.
fn faithful(cp: &[u32], unf: &UnfaithfulKeys, p: usize) -> bool {
    let n = cp.len();
    for l in 1..n {
        let (a, b, c) = (cp[l - 1], cp[l % n], cp[(l + 1) % n]);
        if unf.has(triple_key(p, a, b, c)) || unf.has(triple_key(p, c, b, a)) {
            return false;
        }
    }
    true
}

impl Rfci<'_> {
    fn uncovered(&self, path: &[u32]) -> bool {
        let g = &self.amat;
        path.windows(3).all(|w| g.get(w[0], w[2]) == 0 && g.get(w[2], w[0]) == 0)
    }

    /// pcalg's `minDiscrPath(pag, a, b, c)`: None for its NA.
    fn min_discr_path(&self, a: u32, b: u32, c: u32) -> Option<Vec<u32>> {
        let g = &self.amat;
        let p = g.p();
        let mut visited = vec![false; p];
        for v in [a, b, c] {
            visited[v as usize] = true;
        }
        let ind_d = g.which(|k| g.get(a, k) != 0 && g.get(k, a) == ARROW && !visited[k as usize]);
        let mut list: VecDeque<[u32; 2]> = ind_d.into_iter().map(|d| [a, d]).collect();
        while let Some([pred, d]) = list.pop_front() {
            if g.get(c, d) == 0 && g.get(d, c) == 0 {
                return Some(vec![d, pred, b, c]);
            }
            if g.get(d, c) == ARROW && g.get(c, d) == TAIL && g.get(pred, d) == ARROW {
                visited[d as usize] = true;
                for r in g.which(|k| g.get(d, k) != 0 && g.get(k, d) == ARROW && !visited[k as usize]) {
                    list.push_back([d, r]);
                }
            }
        }
        None
    }

    /// pcalg's `minUncovCircPath(p, pag, path = c(a, c, d, b), unfVect)`.
    fn min_uncov_circ_path(&self, path: [u32; 4], unf: &UnfaithfulKeys) -> Option<Vec<u32>> {
        let g = &self.amat;
        let p = g.p();
        let mut visited = vec![false; p];
        for v in path {
            visited[v as usize] = true;
        }
        let [a, c, d, b] = path;
        let circ = |u: u32, k: u32| g.get(u, k) == CIRCLE && g.get(k, u) == CIRCLE;
        let mut list: VecDeque<Vec<u32>> = g.which(|k| circ(c, k) && !visited[k as usize]).into_iter().map(|x| vec![c, x]).collect();
        while let Some(mpath) = list.pop_front() {
            let x = *mpath.last().expect("paths hold two nodes or more");
            visited[x as usize] = true;
            if circ(x, d) {
                let mut full = Vec::with_capacity(mpath.len() + 3);
                full.push(a);
                full.extend_from_slice(&mpath);
                full.extend([d, b]);
                if self.uncovered(&full) && (unf.is_empty() || faithful(&full, unf, p)) {
                    return Some(full);
                }
            } else {
                for r in g.which(|k| circ(x, k) && !visited[k as usize]) {
                    let mut next = mpath.clone();
                    next.push(r);
                    list.push_back(next);
                }
            }
        }
        None
    }

    /// pcalg's `minUncovPdPath(p, pag, a, b, c, unfVect)`: whether it finds a path (its length
    /// above 1). Its `stopifnot()` holds at every call the rules make.
    fn has_uncov_pd_path(&self, a: u32, b: u32, c: u32, unf: &UnfaithfulKeys) -> bool {
        let g = &self.amat;
        let p = g.p();
        let fwd = |u: u32, k: u32| matches!(g.get(u, k), CIRCLE | ARROW) && matches!(g.get(k, u), CIRCLE | TAIL);
        if fwd(b, c) && g.get(c, a) == 0 && (unf.is_empty() || faithful(&[a, b, c], unf, p)) {
            return true;
        }
        let mut visited = vec![false; p];
        for v in [a, b, c] {
            visited[v as usize] = true;
        }
        let mut list: VecDeque<Vec<u32>> = g.which(|k| fwd(b, k) && g.get(k, a) == 0 && !visited[k as usize]).into_iter().map(|d| vec![b, d]).collect();
        while let Some(mpath) = list.pop_front() {
            let d = *mpath.last().expect("paths hold two nodes or more");
            visited[d as usize] = true;
            if fwd(d, c) {
                let mut full = Vec::with_capacity(mpath.len() + 2);
                full.push(a);
                full.extend_from_slice(&mpath);
                full.push(c);
                if self.uncovered(&full) && (unf.is_empty() || faithful(&full, unf, p)) {
                    return true;
                }
            } else {
                for r in g.which(|k| fwd(d, k) && !visited[k as usize]) {
                    let mut next = mpath.clone();
                    next.push(r);
                    list.push_back(next);
                }
            }
        }
        false
    }

    fn rule1(&mut self, unf: &UnfaithfulKeys) {
        let p = self.amat.p();
        for (a, b) in self.amat.cells(|v, t| v == ARROW && t != 0) {
            let g = &self.amat;
            let ind_c = g.which(|k| k != a && g.get(b, k) != 0 && g.get(k, b) == CIRCLE && g.get(a, k) == 0 && g.get(k, a) == 0);
            for c in ind_c {
                if unf.is_empty() || !unf.either(p, a, b, c) {
                    self.amat.set(b, c, ARROW);
                    self.amat.set(c, b, TAIL);
                }
            }
        }
    }

    fn rule2(&mut self) {
        for (a, c) in self.amat.cells(|v, t| v == CIRCLE && t != 0) {
            let g = &self.amat;
            let any_b = (0..g.p() as u32).any(|k| {
                (g.get(a, k) == ARROW && g.get(k, a) == TAIL && g.get(c, k) != 0 && g.get(k, c) == ARROW)
                    || (g.get(a, k) == ARROW && g.get(k, a) != 0 && g.get(c, k) == TAIL && g.get(k, c) == ARROW)
            });
            if any_b {
                self.amat.set(a, c, ARROW);
            }
        }
    }

    fn rule3(&mut self, unf: &UnfaithfulKeys) {
        let p = self.amat.p();
        for (b, d) in self.amat.cells(|v, t| v != 0 && t == CIRCLE) {
            let g = &self.amat;
            let ind_ac = g.which(|k| g.get(b, k) != 0 && g.get(k, b) == ARROW && g.get(k, d) == CIRCLE && g.get(d, k) != 0);
            let n = ind_ac.len();
            if n < 2 {
                continue;
            }
            if unf.is_empty() {
                let mut counter = 0;
                while counter < n - 1 && self.amat.get(d, b) != ARROW {
                    counter += 1;
                    let mut ii = counter;
                    while ii < n && self.amat.get(d, b) != ARROW {
                        ii += 1;
                        let (u, v) = (ind_ac[counter - 1], ind_ac[ii - 1]);
                        if self.amat.get(u, v) == 0 && self.amat.get(v, u) == 0 {
                            self.amat.set(d, b, ARROW);
                        }
                    }
                }
            } else {
                for i in 0..n {
                    for j in i + 1..n {
                        let (a, c) = (ind_ac[i], ind_ac[j]);
                        if self.amat.get(a, c) == 0 && self.amat.get(c, a) == 0 && c != a && !unf.either(p, a, d, c) {
                            self.amat.set(d, b, ARROW);
                        }
                    }
                }
            }
        }
    }

    fn rule4(&mut self, unf: &mut UnfaithfulKeys) -> Result<()> {
        for (b, c) in self.amat.cells(|v, t| v != 0 && t == CIRCLE) {
            let g = &self.amat;
            let ind_a = g.which(|k| g.get(b, k) == ARROW && g.get(k, b) != 0 && g.get(c, k) == TAIL && g.get(k, c) == ARROW);
            for a in ind_a {
                if self.amat.get(c, b) != CIRCLE {
                    break;
                }
                loop {
                    let g = &self.amat;
                    if !(g.get(a, b) != 0 && g.get(a, c) != 0 && g.get(b, c) != 0) {
                        break;
                    }
                    let Some(path) = self.min_discr_path(a, b, c) else { break };
                    let (deleted, new_unf) = self.check_edges(&path, !unf.is_empty())?;
                    unf.extend(&new_unf);
                    if !deleted {
                        let (first, last) = (path[0], path[path.len() - 1]);
                        if self.sep.separates(first, last, b) {
                            self.amat.set(b, c, ARROW);
                            self.amat.set(c, b, TAIL);
                        } else {
                            self.amat.set(a, b, ARROW);
                            self.amat.set(b, c, ARROW);
                            self.amat.set(c, b, ARROW);
                        }
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn set_tails(&mut self, path: &[u32]) {
        for w in path.windows(2) {
            self.amat.set(w[0], w[1], TAIL);
            self.amat.set(w[1], w[0], TAIL);
        }
    }

    fn rule5(&mut self, unf: &UnfaithfulKeys) {
        let p = self.amat.p();
        for (a, b) in self.amat.cells(|v, t| v == CIRCLE && t == CIRCLE) {
            let g = &self.amat;
            let circ = |u: u32, k: u32| g.get(u, k) == CIRCLE && g.get(k, u) == CIRCLE;
            let gap = |u: u32, k: u32| g.get(u, k) == 0 && g.get(k, u) == 0;
            let ind_c = g.which(|k| k != b && circ(a, k) && gap(b, k));
            let ind_d = g.which(|k| k != a && circ(b, k) && gap(a, k));
            if ind_c.is_empty() || ind_d.is_empty() {
                continue;
            }
            'c: for &c in &ind_c {
                if self.amat.get(a, b) != CIRCLE {
                    break;
                }
                for &d in &ind_d {
                    if self.amat.get(a, b) != CIRCLE {
                        continue 'c;
                    }
                    if self.amat.get(c, d) == CIRCLE && self.amat.get(d, c) == CIRCLE {
                        if unf.is_empty() || faithful(&[a, c, d, b], unf, p) {
                            self.set_tails(&[a, c, d, b, a]);
                        }
                    } else if let Some(ucp) = self.min_uncov_circ_path([a, c, d, b], unf) {
                        let n = ucp.len();
                        self.amat.set(ucp[0], ucp[n - 1], TAIL);
                        self.amat.set(ucp[n - 1], ucp[0], TAIL);
                        self.set_tails(&ucp);
                    }
                }
            }
        }
    }

    fn rule6(&mut self) {
        for (b, c) in self.amat.cells(|v, t| v != 0 && t == CIRCLE) {
            let g = &self.amat;
            if (0..g.p() as u32).any(|k| g.get(b, k) == TAIL && g.get(k, b) == TAIL) {
                self.amat.set(c, b, TAIL);
            }
        }
    }

    fn rule7(&mut self, unf: &UnfaithfulKeys) {
        let p = self.amat.p();
        for (b, c) in self.amat.cells(|v, t| v != 0 && t == CIRCLE) {
            let g = &self.amat;
            let ind_a = g.which(|k| k != c && g.get(b, k) == TAIL && g.get(k, b) == CIRCLE && g.get(c, k) == 0 && g.get(k, c) == 0);
            if ind_a.is_empty() {
                continue;
            }
            if unf.is_empty() || ind_a.iter().any(|&a| !unf.either(p, a, b, c)) {
                self.amat.set(c, b, TAIL);
            }
        }
    }

    fn rule8(&mut self) {
        for (a, c) in self.amat.cells(|v, t| v == ARROW && t == CIRCLE) {
            let g = &self.amat;
            let any_b = (0..g.p() as u32).any(|k| (matches!(g.get(a, k), ARROW | CIRCLE) && g.get(k, a) == TAIL) && g.get(c, k) == TAIL && g.get(k, c) == ARROW);
            if any_b {
                self.amat.set(c, a, TAIL);
            }
        }
    }

    fn rule9(&mut self, unf: &UnfaithfulKeys) {
        for (a, c) in self.amat.cells(|v, t| v == ARROW && t == CIRCLE) {
            let g = &self.amat;
            let ind_b = g.which(|k| k != c && matches!(g.get(a, k), ARROW | CIRCLE) && matches!(g.get(k, a), CIRCLE | TAIL) && g.get(c, k) == 0 && g.get(k, c) == 0);
            for b in ind_b {
                if self.amat.get(c, a) != CIRCLE {
                    break;
                }
                if self.has_uncov_pd_path(a, b, c, unf) {
                    self.amat.set(c, a, TAIL);
                }
            }
        }
    }

    fn rule10(&mut self, unf: &UnfaithfulKeys) {
        let p = self.amat.p();
        let fwd = |g: &super::rfci::Amat, u: u32, k: u32| matches!(g.get(u, k), CIRCLE | ARROW) && matches!(g.get(k, u), CIRCLE | TAIL);
        for (a, c) in self.amat.cells(|v, t| v == ARROW && t == CIRCLE) {
            let g = &self.amat;
            let ind_b = g.which(|k| g.get(c, k) == TAIL && g.get(k, c) == ARROW);
            if ind_b.len() < 2 {
                continue;
            }
            for &b in &ind_b {
                if self.amat.get(c, a) != CIRCLE {
                    break;
                }
                for &d in ind_b.iter().filter(|&&d| d != b) {
                    if self.amat.get(c, a) != CIRCLE {
                        break;
                    }
                    let g = &self.amat;
                    if fwd(g, a, b) && fwd(g, a, d) && g.get(d, b) == 0 && g.get(b, d) == 0 {
                        if unf.is_empty() || !unf.either(p, b, a, d) {
                            self.amat.set(c, a, TAIL);
                        }
                        continue;
                    }
                    let ind_x = g.which(|k| k != c && fwd(g, a, k));
                    for &pos1 in &ind_x {
                        if self.amat.get(c, a) != CIRCLE {
                            break;
                        }
                        for &pos2 in ind_x.iter().filter(|&&v| v != pos1) {
                            if self.amat.get(c, a) != CIRCLE {
                                break;
                            }
                            // both searches are pure; pcalg runs both, the result is the same
                            if self.amat.get(pos1, pos2) == 0 && self.has_uncov_pd_path(a, pos1, b, unf) && self.has_uncov_pd_path(a, pos2, d, unf) && (unf.is_empty() || !unf.either(p, pos1, a, pos2)) {
                                self.amat.set(c, a, TAIL);
                            }
                        }
                    }
                }
            }
        }
    }

    /// pcalg's `udag2apag(apag, ..., rules, unfVect)` on `self.amat` and `self.sep`; `unf` is
    /// `unfVect`, which rule 4's edge checks extend.
    pub fn udag2apag(&mut self, rules: [bool; 10], unf: &mut UnfaithfulKeys) -> Result<()> {
        if self.amat.marks().iter().all(|&v| v == 0) {
            return Ok(());
        }
        // pcalg starts from an all-zero "previous" graph, so the rules run at least once
        let mut old: Option<Vec<u8>> = None;
        while old.as_deref() != Some(self.amat.marks()) {
            old = Some(self.amat.marks().to_vec());
            if rules[0] {
                self.rule1(unf);
            }
            if rules[1] {
                self.rule2();
            }
            if rules[2] {
                self.rule3(unf);
            }
            if rules[3] {
                self.rule4(unf)?;
            }
            if rules[4] {
                self.rule5(unf);
            }
            if rules[5] {
                self.rule6();
            }
            if rules[6] {
                self.rule7(unf);
            }
            if rules[7] {
                self.rule8();
            }
            if rules[8] {
                self.rule9(unf);
            }
            if rules[9] {
                self.rule10(unf);
            }
        }
        Ok(())
    }
}
