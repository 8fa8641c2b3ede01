//! The path searches of the rules: pcalg's `minDiscrPath()` (rule 4), `minUncovCircPath()`
//! (rule 5) and `minUncovPdPath()` (rules 9 and 10). Each is a breadth-first search whose queue
//! holds paths; a node is marked visited when its path leaves the queue (when it is extended,
//! for `minDiscrPath`), so a node may be queued more than once, and the first path found in
//! pcalg's queue order is the one returned.

use std::collections::VecDeque;

use super::marks::{Pag, ARROW, CIRCLE, NONE, TAIL};
use super::unf::UnfTriples;

/// Paths as a tree: each entry is a node and the entry it extends.
struct PathTree {
    node: Vec<u32>,
    parent: Vec<usize>,
}

impl PathTree {
    fn new(root: u32) -> Self {
        PathTree { node: vec![root], parent: vec![usize::MAX] }
    }

    fn push(&mut self, v: u32, parent: usize) -> usize {
        self.node.push(v);
        self.parent.push(parent);
        self.node.len() - 1
    }

    /// The nodes from the root to `e`, after `out`'s current contents.
    fn append_path(&self, e: usize, out: &mut Vec<u32>) {
        let start = out.len();
        let mut k = e;
        while k != usize::MAX {
            out.push(self.node[k]);
            k = self.parent[k];
        }
        out[start..].reverse();
    }
}

/// No two nodes two apart on the path are adjacent (either direction).
fn uncovered(pag: &Pag, path: &[u32]) -> bool {
    path.windows(3).all(|w| pag.get(w[0], w[2]) == NONE && pag.get(w[2], w[0]) == NONE)
}

/// u - v could be directed u -> v: the mark at v is a circle or an arrowhead, at u a circle or a
/// tail.
#[inline]
pub fn potentially_directed(pag: &Pag, u: u32, v: u32) -> bool {
    matches!(pag.get(u, v), CIRCLE | ARROW) && matches!(pag.get(v, u), CIRCLE | TAIL)
}

/// pcalg's `minDiscrPath(pag, a, b, c)`: a discriminating path for b, found backwards from a
/// over arrowheads into the path's nodes, each a parent of c, up to a node not adjacent to c.
/// pcalg's queue keeps only the last step of each path (`mpath[-1]`), so what it returns, and
/// what this returns, is `(d, its predecessor, b, c)`, d the far end.
pub fn min_discr_path(pag: &Pag, a: u32, b: u32, c: u32) -> Option<[u32; 4]> {
    let mut visited = vec![false; pag.p()];
    for v in [a, b, c] {
        visited[v as usize] = true;
    }
    let mut queue: VecDeque<(u32, u32)> = VecDeque::new();
    for &j in pag.neighbours(a) {
        if pag.get(a, j) != NONE && pag.get(j, a) == ARROW && !visited[j as usize] {
            queue.push_back((a, j));
        }
    }
    while let Some((pred, d)) = queue.pop_front() {
        if pag.get(c, d) == NONE && pag.get(d, c) == NONE {
            return Some([d, pred, b, c]);
        }
        if pag.get(d, c) == ARROW && pag.get(c, d) == TAIL && pag.get(pred, d) == ARROW {
            visited[d as usize] = true;
            for &j in pag.neighbours(d) {
                if pag.get(d, j) != NONE && pag.get(j, d) == ARROW && !visited[j as usize] {
                    queue.push_back((d, j));
                }
            }
        }
    }
    None
}

/// pcalg's `minUncovCircPath(p, pag, path = c(a, c, d, b), unfVect)`: an uncovered path
/// a o-o c o-o ... o-o d o-o b whose inner part runs over circle-circle edges from c to d (and,
/// with `unfVect`, that passes `faith.check`), shortest first.
pub fn min_uncov_circ_path(pag: &Pag, unf: &UnfTriples, path: [u32; 4]) -> Option<Vec<u32>> {
    let [a, c, d, b] = path;
    let circ = |u: u32, v: u32| pag.get(u, v) == CIRCLE && pag.get(v, u) == CIRCLE;
    let mut visited = vec![false; pag.p()];
    for v in path {
        visited[v as usize] = true;
    }
    let mut tree = PathTree::new(c);
    let mut queue: VecDeque<usize> = VecDeque::new();
    for &j in pag.neighbours(c) {
        if circ(c, j) && !visited[j as usize] {
            queue.push_back(tree.push(j, 0));
        }
    }
    let mut full = Vec::new();
    while let Some(e) = queue.pop_front() {
        let x = tree.node[e];
        visited[x as usize] = true;
        if circ(x, d) {
            full.clear();
            full.push(a);
            tree.append_path(e, &mut full);
            full.extend_from_slice(&[d, b]);
            if uncovered(pag, &full) && (!unf.listed() || unf.faithful(&full)) {
                return Some(full);
            }
        } else {
            for &j in pag.neighbours(x) {
                if circ(x, j) && !visited[j as usize] {
                    queue.push_back(tree.push(j, e));
                }
            }
        }
    }
    None
}

/// pcalg's `minUncovPdPath(p, pag, a, b, c, unfVect)`: an uncovered potentially directed path
/// a - b - ... - c (with `unfVect`, one that passes `faith.check`), shortest first; its inner
/// nodes after b are not adjacent to a by the mark at a. pcalg stops when a - b itself is not
/// potentially directed from a; the rules call it only where it is.
pub fn min_uncov_pd_path(pag: &Pag, unf: &UnfTriples, a: u32, b: u32, c: u32) -> Option<Vec<u32>> {
    debug_assert!(potentially_directed(pag, a, b));
    if potentially_directed(pag, b, c) && pag.get(c, a) == NONE {
        let path = vec![a, b, c];
        if !unf.listed() || unf.faithful(&path) {
            return Some(path);
        }
    }
    let mut visited = vec![false; pag.p()];
    for v in [a, b, c] {
        visited[v as usize] = true;
    }
    let mut tree = PathTree::new(b);
    let mut queue: VecDeque<usize> = VecDeque::new();
    for &j in pag.neighbours(b) {
        if potentially_directed(pag, b, j) && pag.get(j, a) == NONE && !visited[j as usize] {
            queue.push_back(tree.push(j, 0));
        }
    }
    let mut full = Vec::new();
    while let Some(e) = queue.pop_front() {
        let d = tree.node[e];
        visited[d as usize] = true;
        if potentially_directed(pag, d, c) {
            full.clear();
            full.push(a);
            tree.append_path(e, &mut full);
            full.push(c);
            if uncovered(pag, &full) && (!unf.listed() || unf.faithful(&full)) {
                return Some(full);
            }
        } else {
            for &j in pag.neighbours(d) {
                if potentially_directed(pag, d, j) && !visited[j as usize] {
                    queue.push_back(tree.push(j, e));
                }
            }
        }
    }
    None
}
