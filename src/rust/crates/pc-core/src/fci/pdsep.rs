//! Possible-D-SEP, as pcalg's `pdsep()` computes it, with its tests in batches.
//!
//! pcalg's steps, which this module keeps in order:
//! 1. Arrowheads: `amat[a, b] = 2` wherever a - b - c is an unshielded triple of the skeleton and b
//!    is in neither `sepset[[a]][[c]]` nor `sepset[[c]][[a]]` (marks only ever go from 1 to 2, so
//!    the order of pcalg's loop does not matter).
//! 2. Possible-D-SEP of every x (`qreach()`), from that marked graph, before any edge is removed.
//! 3. For x = 1..p in order, for y in x's neighbours at the start of x's turn (ascending), unless
//!    the edge is fixed: the conditioning sets of the edge in pcalg's order, the first p >= alpha
//!    removing the edge and setting both sepsets. Within x's turn an edge's tests read only what
//!    the turn started with (x's neighbours, Possible-D-SEP) and write only the edge's own cells,
//!    so the open edges of a turn run their next tests together, one batch per round, and each
//!    edge's first success in its own order decides it; tests after it in the same batch are not
//!    counted, so the counts are those of pcalg's sequential loop.

use std::collections::VecDeque;

use rayon::prelude::*;

use crate::backend::Watch;
use crate::combinations::next_subset;
use crate::error::{PcError, Result};
use crate::orient::batch::{BatchEvaluator, TestBatch};

#[derive(Clone, Copy, Debug)]
pub struct PdsepParams {
    pub alpha: f64,
    /// pcalg's `m.max` (Inf: no limit; any real number, compared as pcalg compares it).
    pub m_max: f64,
    pub pdsep_max: f64,
    pub na_delete: bool,
    pub bicc: BiCC,
}

/// pcalg's `biCC`: Possible-D-SEP cut to the biconnected component of the edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BiCC {
    Off,
    /// The components of the skeleton (node labels that R reads as the numbers 1..p).
    Components,
    /// pcalg finds each edge's component by `as.numeric()` of RBGL's node labels; labels that are
    /// not numbers give NA, so no component holds x and y, the loop ends on the last one (all
    /// NA), and every edge's set is empty.
    NoComponent,
}

/// An edge the stage removed: x's turn (0-based), its set, and the order that removed it.
#[derive(Clone, Debug, PartialEq)]
pub struct Removed {
    pub x: u32,
    pub y: u32,
    pub ord: u32,
    pub set: Vec<u32>,
}

#[derive(Debug, Default)]
pub struct PdsepResult {
    /// In the order pcalg removes them.
    pub removed: Vec<Removed>,
    /// pMax[x, y] cells raised by the stage (x's turn only, as pcalg writes them), final values.
    pub pmax: Vec<(u32, u32, f64)>,
    /// pcalg's `allPdsep`: for each x, the last edge's (tf, y) of x's turn; None where x had no
    /// neighbour that is not fixed.
    pub all_pdsep: Vec<Option<Vec<u32>>>,
    /// pcalg's `max.ord`: the value its `ord` variable ends with (see `pdsep`).
    pub max_ord: u32,
    /// pcalg's `n.edgetests[1:(max.ord + 1)]`: entry k counts the tests with |S| = k.
    pub n_edgetests: Vec<f64>,
    pub tests: u64,
}

fn pos(adj: &[u32], v: u32) -> Option<usize> {
    adj.binary_search(&v).ok()
}

/// Step 1: `marks[a][k]` is true where `amat[a, adj[a][k]] == 2`. `sep_has(a, b, c)`: b is in
/// `sepset[[a]][[c]]` or in `sepset[[c]][[a]]`. `adj` holds sorted neighbour lists.
pub fn collider_marks(adj: &[Vec<u32>], sep_has: impl Fn(u32, u32, u32) -> bool + Sync) -> Vec<Vec<bool>> {
    // amat[a, b] = 2 when some c makes a - b - c unshielded with b outside their sepsets
    adj.par_iter()
        .enumerate()
        .map(|(a, nb)| {
            let a = a as u32;
            nb.iter()
                .map(|&b| adj[b as usize].iter().any(|&c| c != a && pos(&adj[a as usize], c).is_none() && !sep_has(a, b, c)))
                .collect()
        })
        .collect()
}

/// pcalg's `legal.path(a, b, c, amat)` for a path a - b - c of the marked graph: a triangle, or b
/// a collider (arrowheads at b from both a and c).
fn legal(a: u32, b: u32, c: u32, adj: &[Vec<u32>], marks: &[Vec<bool>]) -> bool {
    if a == c {
        return false;
    }
    if pos(&adj[a as usize], c).is_some() {
        return true;
    }
    let ab = pos(&adj[a as usize], b).map(|k| marks[a as usize][k]).unwrap_or(false);
    let cb = pos(&adj[c as usize], b).map(|k| marks[c as usize][k]).unwrap_or(false);
    ab && cb
}

/// Step 2, pcalg's `qreach(x, amat)`: a breadth-first walk over directed edges of the marked
/// graph, starting with x's edges; an edge a -> b is taken (and then closed) when the path
/// pred - a - b is legal. An edge that is not legal from one predecessor stays open for another,
/// so the walk's first-in-first-out order is pcalg's, and so is the set it reaches. Returns
/// the reached nodes but x, ascending.
pub fn qreach(x: u32, adj: &[Vec<u32>], marks: &[Vec<bool>]) -> Vec<u32> {
    let mut open: Vec<Vec<bool>> = adj.iter().map(|nb| vec![true; nb.len()]).collect();
    let xs = x as usize;
    let mut queue: VecDeque<(u32, u32)> = adj[xs].iter().map(|&b| (b, x)).collect();
    let mut reached: Vec<u32> = adj[xs].clone();
    open[xs].iter_mut().for_each(|o| *o = false);
    while let Some((a, pred)) = queue.pop_front() {
        let au = a as usize;
        // the open edges of a as pcalg's which() lists them when a leaves the queue
        let candidates: Vec<usize> = (0..adj[au].len()).filter(|&k| open[au][k]).collect();
        for k in candidates {
            let b = adj[au][k];
            if legal(pred, a, b, adj, marks) {
                open[au][k] = false;
                queue.push_back((b, a));
                reached.push(b);
            }
        }
    }
    reached.sort_unstable();
    reached.dedup();
    reached.retain(|&v| v != x);
    reached
}

/// Biconnected components of an undirected graph, per edge.
pub struct EdgeComponents {
    /// `comp[a][k]`: the component of the edge a - adj[a][k].
    comp: Vec<Vec<u32>>,
    /// Each component's nodes, ascending.
    pub nodes: Vec<Vec<u32>>,
}

impl EdgeComponents {
    /// The nodes of the component holding the edge a - b (an edge of the graph).
    pub fn of_edge(&self, adj: &[Vec<u32>], a: u32, b: u32) -> Option<&[u32]> {
        let k = pos(&adj[a as usize], b)?;
        Some(&self.nodes[self.comp[a as usize][k] as usize])
    }
}

/// Hopcroft and Tarjan's edge-stack algorithm, without recursion. pcalg's `biCC` intersects a
/// node set with the one component (RBGL's `biConnComp()`) holding both x and y: for an edge x - y
/// that is the edge's component, as two components share at most one node; pcalg keeps the
/// order of the set it intersects, so the components' order and the order within one do not
/// matter.
pub fn biconnected_components(adj: &[Vec<u32>]) -> EdgeComponents {
    let p = adj.len();
    let mut disc = vec![0u32; p];
    let mut low = vec![0u32; p];
    let mut time = 0u32;
    let mut comp: Vec<Vec<u32>> = adj.iter().map(|nb| vec![u32::MAX; nb.len()]).collect();
    let mut nodes: Vec<Vec<u32>> = Vec::new();
    let mut edges: Vec<(u32, u32)> = Vec::new();
    // frames: (node, parent, next neighbour index)
    let mut stack: Vec<(u32, u32, usize)> = Vec::new();
    for root in 0..p as u32 {
        if disc[root as usize] != 0 || adj[root as usize].is_empty() {
            continue;
        }
        time += 1;
        disc[root as usize] = time;
        low[root as usize] = time;
        stack.push((root, u32::MAX, 0));
        while let Some(&mut (v, parent, ref mut i)) = stack.last_mut() {
            let vu = v as usize;
            if *i < adj[vu].len() {
                let w = adj[vu][*i];
                *i += 1;
                let wu = w as usize;
                if disc[wu] == 0 {
                    edges.push((v, w));
                    time += 1;
                    disc[wu] = time;
                    low[wu] = time;
                    stack.push((w, v, 0));
                } else if w != parent && disc[wu] < disc[vu] {
                    // a back edge, pushed once (from its lower end)
                    edges.push((v, w));
                    low[vu] = low[vu].min(disc[wu]);
                }
            } else {
                stack.pop();
                if let Some(&(u, _, _)) = stack.last() {
                    let uu = u as usize;
                    low[uu] = low[uu].min(low[vu]);
                    if low[vu] >= disc[uu] {
                        // u separates v's subtree: its edges since u - v form one component
                        let id = nodes.len() as u32;
                        let mut members = Vec::new();
                        while let Some((a, b)) = edges.pop() {
                            for (s, t) in [(a, b), (b, a)] {
                                if let Some(k) = pos(&adj[s as usize], t) {
                                    comp[s as usize][k] = id;
                                }
                            }
                            members.push(a);
                            members.push(b);
                            if (a, b) == (u, v) {
                                break;
                            }
                        }
                        members.sort_unstable();
                        members.dedup();
                        nodes.push(members);
                    }
                }
            }
        }
    }
    EdgeComponents { comp, nodes }
}

/// One edge's conditioning sets in pcalg's order: |S| = 1 over `diff` (x's Possible-D-SEP
/// outside x's neighbours), then for |S| = 2.. the subsets of `tf` in `combn()`'s order, those
/// inside x's neighbours left out.
struct EdgeRun {
    y: u32,
    tf: Vec<u32>,
    diff: Vec<u32>,
    /// The last order pcalg's `while (!done && ord < min(length(tf), m.max))` reaches.
    last_ord: u32,
    ord: u32,
    next_diff: usize,
    comb: Vec<u32>,
    comb_started: bool,
    exhausted: bool,
    /// The order it ends at (the value pcalg's `ord` has after the edge).
    final_ord: Option<u32>,
    pmax: f64,
    raised: bool,
    sep: Option<Vec<u32>>,
    /// Its tests in the current batch.
    from: usize,
    to: usize,
}

impl EdgeRun {
    /// The next set into `out` and its order, or None when the edge has no more tests.
    fn next_set(&mut self, adj_x: &[u32], out: &mut Vec<u32>) -> Option<u32> {
        out.clear();
        loop {
            if self.ord == 0 {
                if self.last_ord == 0 {
                    return None;
                }
                self.ord = 1;
            }
            if self.ord == 1 {
                if self.next_diff < self.diff.len() {
                    out.push(self.diff[self.next_diff]);
                    self.next_diff += 1;
                    return Some(1);
                }
            } else {
                let k = self.ord as usize;
                let more = if !self.comb_started {
                    self.comb_started = true;
                    self.comb = (0..k as u32).collect();
                    true
                } else {
                    next_subset(self.tf.len() as u32, &mut self.comb)
                };
                if more {
                    // pcalg skips a set inside adj(x) only when ord <= |adj(x)|; a larger set
                    // cannot be inside adj(x) \ {y}, so the skip is the same for every order
                    if self.comb.iter().all(|&i| pos(adj_x, self.tf[i as usize]).is_some()) {
                        continue;
                    }
                    out.extend(self.comb.iter().map(|&i| self.tf[i as usize]));
                    return Some(self.ord);
                }
            }
            if self.ord >= self.last_ord {
                return None;
            }
            self.ord += 1;
            self.comb_started = false;
        }
    }
}

/// pcalg's `while (ord < min(length(tf), m.max))` from ord = 0, one step per order: the number of
/// orders it enters (m.max may be fractional or negative).
fn last_order(len_tf: usize, m_max: f64) -> u32 {
    let lim = (len_tf as f64).min(m_max);
    if lim.is_nan() || lim <= 0.0 {
        0
    } else {
        lim.ceil() as u32
    }
}

const ROUND_TESTS: usize = 16_384;

/// pcalg's `pdsep()` on the skeleton `adj` (sorted neighbour lists, 0-based). `sep_has` as for
/// [`collider_marks`]; `fixed(x, y)`: fixedEdges; `pmax0(x, y)`: the skeleton's pMax[x, y].
/// `threads` for the walks of step 2.
#[allow(clippy::too_many_arguments)]
pub fn pdsep(
    mut adj: Vec<Vec<u32>>,
    sep_has: impl Fn(u32, u32, u32) -> bool + Sync,
    fixed: impl Fn(u32, u32) -> bool,
    pmax0: impl Fn(u32, u32) -> f64,
    params: PdsepParams,
    pool: &rayon::ThreadPool,
    eval: &mut dyn BatchEvaluator,
    watch: &mut dyn Watch,
) -> Result<PdsepResult> {
    let p = adj.len();
    let mut res = PdsepResult { all_pdsep: vec![None; p], n_edgetests: vec![0.0], ..Default::default() };
    let (marks, reach, comps) = pool.install(|| {
        let marks = collider_marks(&adj, &sep_has);
        let reach: Vec<Vec<u32>> = (0..p as u32).into_par_iter().map(|x| qreach(x, &adj, &marks)).collect();
        (marks, reach, if params.bicc == BiCC::Components { Some(biconnected_components(&adj)) } else { None })
    });
    drop(marks);
    let skeleton = if params.bicc == BiCC::Components { adj.clone() } else { Vec::new() };
    // pcalg's `ord`: set to 0 by every edge that reaches the tests, then stepped by its loop, and
    // never reset between turns, so max.ord is the value the last such edge left (not a maximum)
    let mut ord_var: u32 = 0;
    let mut batch = TestBatch::default();
    let mut pvals: Vec<f64> = Vec::new();
    let mut set = Vec::new();
    for x in 0..p as u32 {
        let adj_x = adj[x as usize].clone();
        if adj_x.is_empty() {
            continue;
        }
        let mut runs: Vec<EdgeRun> = Vec::new();
        for &y in &adj_x {
            if fixed(x, y) {
                continue;
            }
            let mut tf: Vec<u32> = reach[x as usize].iter().copied().filter(|&v| v != y).collect();
            // diff.set is taken before the biCC intersection, so with biCC its members may lie
            // outside tf (pcalg tests them at order 1 all the same)
            let diff: Vec<u32> = tf.iter().copied().filter(|v| pos(&adj_x, *v).is_none()).collect();
            if let Some(c) = &comps {
                let nodes = c.of_edge(&skeleton, x, y).ok_or_else(|| PcError::Internal(format!("edge {} - {} not in the skeleton", x + 1, y + 1)))?;
                tf.retain(|v| *v != x && nodes.binary_search(v).is_ok());
            } else if params.bicc == BiCC::NoComponent {
                tf.clear();
            }
            // allPdsep[[x]] is overwritten by every edge of the turn: the last one's stays
            let mut last = tf.clone();
            last.push(y);
            res.all_pdsep[x as usize] = Some(last);
            if tf.len() as f64 > params.pdsep_max || diff.is_empty() {
                continue;
            }
            let last_ord = last_order(tf.len(), params.m_max);
            runs.push(EdgeRun {
                y,
                tf,
                diff,
                last_ord,
                ord: 0,
                next_diff: 0,
                comb: Vec::new(),
                comb_started: false,
                exhausted: false,
                final_ord: if last_ord == 0 { Some(0) } else { None },
                pmax: pmax0(x, y),
                raised: false,
                sep: None,
                from: 0,
                to: 0,
            });
        }
        // rounds: every open edge's next tests in one batch, more per edge as rounds go on
        let mut per_edge = 4usize;
        loop {
            let open: Vec<usize> = (0..runs.len()).filter(|&r| runs[r].final_ord.is_none()).collect();
            if open.is_empty() {
                break;
            }
            if !watch.keep_going() {
                return Err(PcError::Interrupted);
            }
            let take = per_edge.min((ROUND_TESTS / open.len()).max(1));
            batch.clear();
            let mut orders: Vec<u32> = Vec::new();
            for &r in &open {
                let run = &mut runs[r];
                run.from = batch.len();
                for _ in 0..take {
                    match run.next_set(&adj_x, &mut set) {
                        Some(o) => {
                            batch.push(x, run.y, set.iter().copied());
                            orders.push(o);
                        }
                        None => {
                            run.exhausted = true;
                            break;
                        }
                    }
                }
                run.to = batch.len();
            }
            if !batch.is_empty() {
                eval.p_values(&batch, &mut pvals, watch)?;
                if pvals.len() != batch.len() {
                    return Err(PcError::Internal(format!("{} p-values for {} tests", pvals.len(), batch.len())));
                }
            }
            for &r in &open {
                let run = &mut runs[r];
                for t in run.from..run.to {
                    let o = orders[t];
                    if res.n_edgetests.len() <= o as usize {
                        res.n_edgetests.resize(o as usize + 1, 0.0);
                    }
                    res.n_edgetests[o as usize] += 1.0;
                    res.tests += 1;
                    // pcalg: an NA p-value counts as NAdelete (1: the edge goes, 0: it stays)
                    let pv = if pvals[t].is_nan() { if params.na_delete { 1.0 } else { 0.0 } } else { pvals[t] };
                    if pv > run.pmax {
                        run.pmax = pv;
                        run.raised = true;
                    }
                    if pv >= params.alpha {
                        run.sep = Some(batch.set(t).to_vec());
                        run.final_ord = Some(o);
                        break;
                    }
                }
                if run.final_ord.is_none() && run.exhausted {
                    run.final_ord = Some(run.last_ord);
                }
            }
            per_edge = (per_edge * 4).min(ROUND_TESTS);
        }
        for run in runs {
            ord_var = run.final_ord.unwrap_or(0);
            if run.raised {
                res.pmax.push((x, run.y, run.pmax));
            }
            if let Some(s) = run.sep {
                let (y, ord) = (run.y, ord_var);
                adj[x as usize].retain(|&v| v != y);
                adj[y as usize].retain(|&v| v != x);
                res.removed.push(Removed { x, y, ord, set: s });
            }
        }
    }
    res.max_ord = ord_var;
    // pcalg returns n.edgetests[1:(ord + 1)]: the counts of larger orders are cut off
    res.n_edgetests.resize(ord_var as usize + 1, 0.0);
    Ok(res)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::NullWatch;

    fn graph(p: usize, edges: &[(u32, u32)]) -> Vec<Vec<u32>> {
        let mut adj = vec![Vec::new(); p];
        for &(a, b) in edges {
            adj[a as usize].push(b);
            adj[b as usize].push(a);
        }
        adj.iter_mut().for_each(|v| v.sort_unstable());
        adj
    }

    #[test]
    fn qreach_follows_colliders_and_triangles_only() {
        // 0 - 1 - 2 - 3: with 1 a collider (0 *-> 1 <-* 2), 2 is reachable from 0, and 3 only
        // if 2 is a collider on 1 - 2 - 3 as well
        let adj = graph(4, &[(0, 1), (1, 2), (2, 3)]);
        let none = |_: u32, _: u32, _: u32| true;
        let marks = collider_marks(&adj, none);
        assert_eq!(qreach(0, &adj, &marks), vec![1]);
        let all = |_: u32, _: u32, _: u32| false;
        let marks = collider_marks(&adj, all);
        assert_eq!(qreach(0, &adj, &marks), vec![1, 2, 3]);
        // only 1 a collider
        let one = |a: u32, b: u32, c: u32| !(b == 1 && a.min(c) == 0 && a.max(c) == 2);
        let marks = collider_marks(&adj, one);
        assert_eq!(qreach(0, &adj, &marks), vec![1, 2]);
        assert_eq!(qreach(3, &adj, &marks), vec![2]);
        // a triangle is always legal
        let tri = graph(4, &[(0, 1), (1, 2), (0, 2), (2, 3)]);
        let marks = collider_marks(&tri, none);
        assert_eq!(qreach(0, &tri, &marks), vec![1, 2]);
        assert_eq!(qreach(1, &tri, &marks), vec![0, 2]);
    }

    #[test]
    fn biconnected_components_of_two_triangles_and_a_bridge() {
        // triangles {0,1,2} and {2,3,4} share 2; 4 - 5 is a bridge
        let adj = graph(6, &[(0, 1), (1, 2), (0, 2), (2, 3), (3, 4), (2, 4), (4, 5)]);
        let c = biconnected_components(&adj);
        assert_eq!(c.of_edge(&adj, 0, 1).unwrap(), &[0, 1, 2]);
        assert_eq!(c.of_edge(&adj, 2, 0).unwrap(), &[0, 1, 2]);
        assert_eq!(c.of_edge(&adj, 3, 2).unwrap(), &[2, 3, 4]);
        assert_eq!(c.of_edge(&adj, 5, 4).unwrap(), &[4, 5]);
        assert_eq!(c.nodes.len(), 3);
    }

    fn run_of(tf: Vec<u32>, diff: Vec<u32>, last_ord: u32) -> EdgeRun {
        EdgeRun { y: 99, tf, diff, last_ord, ord: 0, next_diff: 0, comb: Vec::new(), comb_started: false, exhausted: false, final_ord: None, pmax: 0.0, raised: false, sep: None, from: 0, to: 0 }
    }

    #[test]
    fn sets_in_pcalgs_order() {
        // tf = (1, 3, 5, 7), x's neighbours 3 and 5 (and y): order 1 over diff = (1, 7), then
        // combn(tf, 2) without {3, 5}, then combn(tf, 3)
        let mut r = run_of(vec![1, 3, 5, 7], vec![1, 7], 3);
        let adj_x = [3u32, 5, 99];
        let mut out = Vec::new();
        let mut seq = Vec::new();
        while let Some(o) = r.next_set(&adj_x, &mut out) {
            seq.push((o, out.clone()));
        }
        let want: Vec<(u32, Vec<u32>)> = vec![
            (1, vec![1]),
            (1, vec![7]),
            (2, vec![1, 3]),
            (2, vec![1, 5]),
            (2, vec![1, 7]),
            (2, vec![3, 7]),
            (2, vec![5, 7]),
            (3, vec![1, 3, 5]),
            (3, vec![1, 3, 7]),
            (3, vec![1, 5, 7]),
            (3, vec![3, 5, 7]),
        ];
        assert_eq!(seq, want);
    }

    #[test]
    fn last_order_as_pcalgs_while() {
        assert_eq!(last_order(4, f64::INFINITY), 4);
        assert_eq!(last_order(4, 2.0), 2);
        assert_eq!(last_order(4, 2.5), 3);
        assert_eq!(last_order(4, 0.0), 0);
        assert_eq!(last_order(4, -1.0), 0);
        assert_eq!(last_order(0, 3.0), 0);
    }

    /// A test answering from a table: p = 1 for the listed (x, y, S), else 0.
    struct Table(Vec<(u32, u32, Vec<u32>)>);
    impl BatchEvaluator for Table {
        fn name(&self) -> String {
            "table".into()
        }
        fn shares_results(&self) -> bool {
            true
        }
        fn p_values(&mut self, b: &TestBatch, out: &mut Vec<f64>, _: &mut dyn Watch) -> Result<()> {
            out.clear();
            for t in 0..b.len() {
                let hit = self.0.iter().any(|(x, y, s)| *x == b.x[t] && *y == b.y[t] && s.as_slice() == b.set(t));
                out.push(if hit { 1.0 } else { 0.0 });
            }
            Ok(())
        }
    }

    #[test]
    fn first_success_counts_and_last_edge_order() {
        // a collider 0 *-> 1 <-* 2 and 2 - 3: Possible-D-SEP of 0 holds 2 and 3 beyond 1
        let adj = graph(5, &[(0, 1), (1, 2), (2, 3), (0, 4)]);
        let sep_has = |_: u32, _: u32, _: u32| false;
        let pool = crate::threads::call_pool(1, "test").unwrap();
        let params = PdsepParams { alpha: 0.5, m_max: f64::INFINITY, pdsep_max: f64::INFINITY, na_delete: true, bicc: BiCC::Off };
        let mut t = Table(vec![(0, 1, vec![2, 3])]);
        let r = pdsep(adj.clone(), sep_has, |_, _| false, |_, _| -1.0, params, &pool, &mut t, &mut NullWatch).unwrap();
        assert_eq!(r.removed, vec![Removed { x: 0, y: 1, ord: 2, set: vec![2, 3] }]);
        // pMax starts at -1 here: every tested edge raises its cell, 0 - 1 to its success
        assert_eq!(r.pmax, vec![(0, 1, 1.0), (0, 4, 0.0), (1, 2, 0.0), (2, 1, 0.0), (2, 3, 0.0), (3, 2, 0.0), (4, 0, 0.0)]);
        // every triple is a collider. x = 0: 0 - 1 tests {2}, {3}, {2, 3} (its success); 0 - 4
        // tests {2}, {3}, {1, 2}, {1, 3}, {2, 3}, {1, 2, 3}. Then 1 - 2, 2 - 1, 2 - 3, 3 - 2 and
        // 4 - 0 test every set of their three other nodes that is not inside adj(x)
        assert_eq!(r.n_edgetests, vec![0.0, 17.0, 19.0, 6.0]);
        assert_eq!(r.tests, 42);
        assert_eq!(r.max_ord, 3);
        assert_eq!(r.all_pdsep[0], Some(vec![1, 2, 3, 4]));
        assert_eq!(r.all_pdsep[4], Some(vec![1, 2, 3, 0]));
        // m.max = 1 ends every edge at order 1, so 0 - 1 stays: x = 1 then has 0 and 2 as
        // neighbours (2 tests each, over {3, 4}) where it had 2 alone (3 tests)
        let r = pdsep(adj.clone(), sep_has, |_, _| false, |_, _| -1.0, PdsepParams { m_max: 1.0, ..params }, &pool, &mut t, &mut NullWatch).unwrap();
        assert_eq!((r.max_ord, r.tests, r.n_edgetests.clone()), (1, 18, vec![0.0, 18.0]));
        assert!(r.removed.is_empty());
        let r = pdsep(adj, sep_has, |_, _| false, |_, _| -1.0, PdsepParams { pdsep_max: 2.0, ..params }, &pool, &mut t, &mut NullWatch).unwrap();
        assert_eq!((r.tests, r.max_ord), (0, 0));
    }
}
