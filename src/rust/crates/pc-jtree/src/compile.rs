//! Compilation: moral graph, triangulation by an elimination order (min-fill, min-weight,
//! weighted min-fill, or the cheapest of several orders: [`Heuristic::Auto`]), the maximal
//! elimination cliques, and a clique tree (a forest when the graph is disconnected) by a
//! maximum-weight spanning tree on separator sizes. Clique sizes are computed with checked
//! arithmetic and compared with the limits before any table exists.

use crate::error::{JtError, Result};
use crate::network::Network;

/// How the elimination order is chosen (ties: the other criterion, then the lowest index).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Heuristic {
    /// Fewest fill-in edges.
    MinFill,
    /// Smallest clique table (product of the cardinalities of the node and its neighbours).
    MinWeight,
    /// Smallest weight of fill-in edges, an edge weighing the product of its ends' cardinalities.
    WeightedMinFill,
    /// The tree of least propagation cost ([`propagation_cost`]) among the three orders above
    /// and seeded randomised variants of them ([`AUTO_TRIALS`]): the same tree on every run
    /// and every number of threads.
    Auto,
}

impl Heuristic {
    pub fn parse(s: &str) -> Result<Heuristic> {
        match s {
            "auto" => Ok(Heuristic::Auto),
            "minfill" | "min-fill" | "min_fill" => Ok(Heuristic::MinFill),
            "minweight" | "min-weight" | "min_weight" => Ok(Heuristic::MinWeight),
            "wminfill" | "weighted-minfill" | "weighted_minfill" => Ok(Heuristic::WeightedMinFill),
            other => Err(JtError::invalid(
                "triangulation",
                format!("must be \"auto\", \"minfill\", \"minweight\" or \"wminfill\", not \"{other}\""),
            )),
        }
    }
}

/// Upper bounds checked before allocation.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Cells of the largest clique table.
    pub max_clique_cells: u64,
    /// Cells of all clique tables together (one evidence set).
    pub max_total_cells: u64,
}

impl Default for Limits {
    fn default() -> Self {
        // u32 cell offsets inside a clique (the kernels' index type); 2^31 cells = 17 GB.
        Limits { max_clique_cells: u32::MAX as u64, max_total_cells: 1 << 31 }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct Bits {
    w: Vec<u64>,
}

impl Bits {
    pub fn new(n: usize) -> Bits {
        Bits { w: vec![0; n.div_ceil(64)] }
    }
    pub fn set(&mut self, i: usize) {
        self.w[i / 64] |= 1 << (i % 64);
    }
    pub fn clear(&mut self, i: usize) {
        self.w[i / 64] &= !(1 << (i % 64));
    }
    pub fn get(&self, i: usize) -> bool {
        self.w[i / 64] >> (i % 64) & 1 == 1
    }
    pub fn and_count(&self, o: &Bits) -> u32 {
        self.w.iter().zip(&o.w).map(|(a, b)| (a & b).count_ones()).sum()
    }
    pub fn subset_of(&self, o: &Bits) -> bool {
        self.w.iter().zip(&o.w).all(|(a, b)| a & !b == 0)
    }
    pub fn ones(&self) -> Vec<usize> {
        let mut v = Vec::new();
        for (k, &w) in self.w.iter().enumerate() {
            let mut x = w;
            while x != 0 {
                v.push(k * 64 + x.trailing_zeros() as usize);
                x &= x - 1;
            }
        }
        v
    }
}

/// The undirected moral graph: parents married, directions dropped.
pub fn moral_graph(net: &Network) -> Vec<Vec<usize>> {
    let n = net.len();
    let mut adj = vec![Bits::new(n); n];
    for (v, ps) in net.parents.iter().enumerate() {
        for (i, &p) in ps.iter().enumerate() {
            adj[v].set(p);
            adj[p].set(v);
            for &q in &ps[i + 1..] {
                adj[p].set(q);
                adj[q].set(p);
            }
        }
    }
    adj.iter().map(|b| b.ones()).collect()
}

#[derive(Clone, Copy, PartialEq, PartialOrd)]
struct Score(f64, f64, usize);

/// One greedy elimination order: a fixed criterion, and for [`Heuristic::Auto`]'s randomised
/// trials a multiplicative jitter of up to `noise` on the first criterion, drawn from `seed`
/// afresh for every node at every step (so a trial is the same on every run).
#[derive(Clone, Copy, Debug)]
pub struct Order {
    pub criterion: Heuristic,
    pub noise: f64,
    pub seed: u64,
}

fn splitmix(x: &mut u64) -> f64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// The elimination cliques of `order`, in elimination order (each sorted by variable index).
pub fn eliminate_by(card: &[usize], moral: &[Vec<usize>], order: Order) -> Vec<Vec<usize>> {
    eliminate_capped(card, moral, order, u64::MAX).expect("no cap")
}

/// [`eliminate_by`], given up (None) at the first clique of more than `cap` cells: such an
/// order's tree costs more than `cap` to propagate (that clique lies in one of its tables).
pub fn eliminate_capped(card: &[usize], moral: &[Vec<usize>], order: Order, cap: u64) -> Option<Vec<Vec<usize>>> {
    let n = card.len();
    let mut adj = vec![Bits::new(n); n];
    for (v, ns) in moral.iter().enumerate() {
        for &u in ns {
            adj[v].set(u);
        }
    }
    let lw: Vec<f64> = card.iter().map(|&c| (c as f64).log2()).collect();
    let mut alive = vec![true; n];
    let mut rng = order.seed;
    let score = |v: usize, adj: &[Bits]| -> Score {
        let nb = adj[v].ones();
        let mut fill = 0f64;
        for (i, &a) in nb.iter().enumerate() {
            for &b in &nb[i + 1..] {
                if !adj[a].get(b) {
                    fill += if order.criterion == Heuristic::WeightedMinFill { (card[a] * card[b]) as f64 } else { 1.0 };
                }
            }
        }
        let weight = lw[v] + nb.iter().map(|&u| lw[u]).sum::<f64>();
        match order.criterion {
            Heuristic::MinWeight => Score(weight, fill, v),
            _ => Score(fill, weight, v),
        }
    };
    let mut scores: Vec<Score> = (0..n).map(|v| score(v, &adj)).collect();
    let mut cliques = Vec::with_capacity(n);
    for _ in 0..n {
        let v = if order.noise > 0.0 {
            let mut best = (Score(f64::INFINITY, f64::INFINITY, n), n);
            for u in (0..n).filter(|&u| alive[u]) {
                let Score(a, b, w) = scores[u];
                let key = Score(a * (1.0 + order.noise * splitmix(&mut rng)), b, w);
                if key < best.0 {
                    best = (key, u);
                }
            }
            best.1
        } else {
            (0..n)
                .filter(|&v| alive[v])
                .min_by(|&a, &b| scores[a].partial_cmp(&scores[b]).unwrap_or(std::cmp::Ordering::Equal))
                .expect("a node is left")
        };
        let nb = adj[v].ones();
        let mut c = nb.clone();
        c.push(v);
        c.sort_unstable();
        if cap < u64::MAX && c.iter().try_fold(1u64, |a, &u| a.checked_mul(card[u] as u64).filter(|&x| x <= cap)).is_none() {
            return None;
        }
        cliques.push(c);
        for (i, &a) in nb.iter().enumerate() {
            for &b in &nb[i + 1..] {
                adj[a].set(b);
                adj[b].set(a);
            }
        }
        for &a in &nb {
            adj[a].clear(v);
        }
        adj[v] = Bits::new(n);
        alive[v] = false;
        // scores change for the neighbours and their neighbours
        let mut dirty = Bits::new(n);
        for &a in &nb {
            dirty.set(a);
            for u in adj[a].ones() {
                dirty.set(u);
            }
        }
        for u in dirty.ones() {
            if alive[u] {
                scores[u] = score(u, &adj);
            }
        }
    }
    Some(cliques)
}

/// Randomised trials of [`Heuristic::Auto`] per criterion and jitter, besides the three plain
/// orders. A trial is an elimination and a clique forest (Munin's: about 7 ms on one core); on
/// the bundled networks the trials' best tree has 1.0-2.3x fewer cells to move than min-fill's.
/// More trials, or other criteria and jitters, found trees at most 2% cheaper (Munin 3.79e7
/// cells against 3.87e7 with 16 trials each).
pub const AUTO_TRIALS: u64 = 8;
const AUTO_NOISE: [f64; 3] = [0.2, 0.5, 1.0];

/// The number of plain orders that lead [`auto_orders`].
pub const AUTO_PLAIN: usize = 3;

/// The orders [`Heuristic::Auto`] tries, the plain ones first. The randomised ones jitter
/// min-fill and weighted min-fill (of jittered min-weight orders, only diabetes' were cheaper:
/// 5% in 24 trials).
pub fn auto_orders() -> Vec<Order> {
    let plain = [Heuristic::MinFill, Heuristic::WeightedMinFill, Heuristic::MinWeight];
    let mut v: Vec<Order> = plain.iter().map(|&criterion| Order { criterion, noise: 0.0, seed: 0 }).collect();
    for (ci, &criterion) in plain[..2].iter().enumerate() {
        for (ni, &noise) in AUTO_NOISE.iter().enumerate() {
            for t in 0..AUTO_TRIALS {
                v.push(Order { criterion, noise, seed: ((ci as u64 * 16 + ni as u64) << 32) | (t + 1) });
            }
        }
    }
    v
}

/// The cells one evidence set's propagation reads or writes once (a proxy of its bytes): collect
/// writes every clique's table, distribute reads each parent's once per child.
pub fn propagation_cost(cells: &[u64], parent: &[Option<usize>]) -> u64 {
    let collect: u64 = cells.iter().sum();
    let distribute: u64 = parent.iter().filter_map(|p| p.map(|p| cells[p])).sum();
    collect.saturating_add(distribute)
}

/// A triangulation's maximal cliques and their forest (parent, roots).
pub struct Forest {
    pub cliques: Vec<Vec<usize>>,
    pub parent: Vec<Option<usize>>,
    pub roots: Vec<usize>,
}

/// The maximal cliques of one order and their forest, or the error of a clique over `limit`;
/// None when the order is given up at a clique of more than `cap` cells.
fn forest_of(card: &[usize], moral: &[Vec<usize>], order: Order, limit: u64, cap: u64, names: &dyn Fn(usize) -> String) -> Option<Result<(u64, Forest)>> {
    let elim = eliminate_capped(card, moral, order, cap)?;
    if let Some(e) = elim.iter().find_map(|c| table_cells(card, c, limit, names).err()) {
        return Some(Err(e));
    }
    let cliques = maximal_cliques(elim, card.len());
    let (parent, roots) = clique_forest(&cliques, card.len());
    let cells: Vec<u64> = cliques.iter().map(|c| c.iter().map(|&v| card[v] as u64).product()).collect();
    Some(Ok((propagation_cost(&cells, &parent), Forest { cliques, parent, roots })))
}

/// The junction forest of `h` (for [`Heuristic::Auto`] the cheapest of [`auto_orders`], the first
/// on ties; its trials run on the caller's rayon pool). Errors when no order keeps every clique
/// within `limit` (the min-fill order's error).
pub fn triangulate(card: &[usize], moral: &[Vec<usize>], h: Heuristic, limit: u64, names: &(dyn Fn(usize) -> String + Sync)) -> Result<Forest> {
    use rayon::prelude::*;
    let plain = |o: Order| forest_of(card, moral, o, limit, u64::MAX, names).expect("no cap");
    if h != Heuristic::Auto {
        return plain(Order { criterion: h, noise: 0.0, seed: 0 }).map(|x| x.1);
    }
    // the plain orders first: their cheapest tree's cost caps the randomised trials, each given
    // up at its first clique larger than that (the same cap on every run, so the same tree)
    let orders = auto_orders();
    let (first, rest) = orders.split_at(AUTO_PLAIN);
    let mut tried: Vec<Result<(u64, Forest)>> = first.par_iter().map(|&o| plain(o)).collect();
    let cap = tried.iter().filter_map(|t| t.as_ref().ok().map(|x| x.0)).min().unwrap_or(u64::MAX);
    tried.extend(rest.par_iter().filter_map(|&o| forest_of(card, moral, o, limit, cap, names)).collect::<Vec<_>>());
    let mut best: Option<(u64, Forest)> = None;
    let mut first_err = None;
    for t in tried {
        match t {
            Ok((c, f)) => {
                if best.as_ref().is_none_or(|b| c < b.0) {
                    best = Some((c, f));
                }
            }
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match best {
        Some((_, f)) => Ok(f),
        None => Err(first_err.expect("some order was tried")),
    }
}

/// Product of the cardinalities of `vars`, or an error when it exceeds `limit`.
pub fn table_cells(card: &[usize], vars: &[usize], limit: u64, names: &dyn Fn(usize) -> String) -> Result<u64> {
    let mut cells: u64 = 1;
    for &v in vars {
        cells = cells.checked_mul(card[v] as u64).filter(|&c| c <= limit).ok_or_else(|| {
            let lg: f64 = vars.iter().map(|&u| (card[u] as f64).log2()).sum();
            JtError::TooLarge(format!(
                "a clique of {} variables ({}...) has 2^{lg:.1} cells, more than the limit of {limit}",
                vars.len(),
                vars.iter().take(5).map(|&u| names(u)).collect::<Vec<_>>().join(", ")
            ))
        })?;
    }
    Ok(cells)
}

/// Per variable, the cliques holding it, ascending.
fn cliques_by_variable(cliques: &[Vec<usize>], n: usize) -> Vec<Vec<usize>> {
    let mut by = vec![Vec::new(); n];
    for (c, vars) in cliques.iter().enumerate() {
        for &v in vars {
            by[v].push(c);
        }
    }
    by
}

fn as_bits(sets: &[Vec<usize>], n: usize) -> Vec<Bits> {
    sets.iter()
        .map(|c| {
            let mut b = Bits::new(n);
            c.iter().for_each(|&v| b.set(v));
            b
        })
        .collect()
}

/// The maximal cliques among elimination cliques (first occurrence kept; order preserved).
pub fn maximal_cliques(elim: Vec<Vec<usize>>, n: usize) -> Vec<Vec<usize>> {
    let sets = as_bits(&elim, n);
    let mut keep = vec![true; elim.len()];
    // a clique's supersets hold its first variable: only those are compared (ascending, as a
    // scan of all would meet them)
    let holding = cliques_by_variable(&elim, n);
    for i in 0..elim.len() {
        for &j in &holding[elim[i][0]] {
            if i != j && keep[j] && sets[i].subset_of(&sets[j]) && (elim[i].len() < elim[j].len() || j < i) {
                keep[i] = false;
                break;
            }
        }
    }
    elim.into_iter().zip(keep).filter(|(_, k)| *k).map(|(c, _)| c).collect()
}

/// A maximum-weight spanning forest on separator sizes (Kruskal; ties by the lower clique pair):
/// the parent of each clique after rooting each tree at its centre (the clique whose farthest
/// clique is nearest, lowest index on ties). Returns (parent, roots).
pub fn clique_forest(cliques: &[Vec<usize>], n: usize) -> (Vec<Option<usize>>, Vec<usize>) {
    let k = cliques.len();
    let sets = as_bits(cliques, n);
    // the pairs that share a variable (the others weigh 0 and are never joined)
    let holding = cliques_by_variable(cliques, n);
    let mut pairs = Vec::new();
    let mut seen = vec![usize::MAX; k];
    for i in 0..k {
        for &v in &cliques[i] {
            for &j in &holding[v] {
                if j > i && seen[j] != i {
                    seen[j] = i;
                    pairs.push((sets[i].and_count(&sets[j]), i, j));
                }
            }
        }
    }
    pairs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut uf: Vec<usize> = (0..k).collect();
    fn find(uf: &mut [usize], mut x: usize) -> usize {
        while uf[x] != x {
            uf[x] = uf[uf[x]];
            x = uf[x];
        }
        x
    }
    let mut nbr = vec![Vec::new(); k];
    for (_, i, j) in pairs {
        let (a, b) = (find(&mut uf, i), find(&mut uf, j));
        if a != b {
            uf[a] = b;
            nbr[i].push(j);
            nbr[j].push(i);
        }
    }
    for l in nbr.iter_mut() {
        l.sort_unstable();
    }
    let bfs = |s: usize| -> Vec<(usize, usize)> {
        // (clique, distance) in visiting order
        let mut seen = vec![false; k];
        let mut out = vec![(s, 0)];
        seen[s] = true;
        let mut i = 0;
        while i < out.len() {
            let (c, d) = out[i];
            for &u in &nbr[c] {
                if !seen[u] {
                    seen[u] = true;
                    out.push((u, d + 1));
                }
            }
            i += 1;
        }
        out
    };
    let mut parent = vec![None; k];
    let mut done = vec![false; k];
    let mut roots = Vec::new();
    for s in 0..k {
        if done[s] {
            continue;
        }
        // the centre: the clique(s) of least eccentricity, which are the middle of any longest
        // path (one clique, or two adjacent ones; the lower numbered then)
        let a = bfs(s).last().map(|x| x.0).unwrap_or(s);
        let mut from = vec![usize::MAX; k];
        from[a] = a;
        let mut queue = vec![a];
        let mut i = 0;
        while i < queue.len() {
            let c = queue[i];
            for &u in &nbr[c] {
                if from[u] == usize::MAX {
                    from[u] = c;
                    queue.push(u);
                }
            }
            i += 1;
        }
        let mut path = vec![*queue.last().expect("a clique")];
        while *path.last().unwrap() != a {
            let c = *path.last().unwrap();
            path.push(from[c]);
        }
        let d = path.len() - 1;
        let root = path[d / 2].min(path[d.div_ceil(2)]);
        roots.push(root);
        let mut queue = vec![root];
        done[root] = true;
        let mut i = 0;
        while i < queue.len() {
            let c = queue[i];
            for &u in &nbr[c] {
                if !done[u] {
                    done[u] = true;
                    parent[u] = Some(c);
                    queue.push(u);
                }
            }
            i += 1;
        }
    }
    (parent, roots)
}

/// Sizes of a compiled tree, known before any table is allocated.
#[derive(Clone, Debug, Default)]
pub struct TreeStats {
    pub cliques: usize,
    pub trees: usize,
    pub depth: usize,
    pub max_clique_vars: usize,
    pub max_clique_cells: u64,
    pub total_clique_cells: u64,
    pub total_separator_cells: u64,
    /// Bytes of the tables one evidence set needs during propagation (cliques, two sets of
    /// separator messages, marginals, partial sums).
    pub bytes_per_evidence_set: u64,
    /// Cells of partial sums (split marginalisations) one launch needs per evidence set.
    pub scratch_cells: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The root by its definition: the clique whose farthest clique is nearest, lowest on ties.
    fn centre_by_eccentricity(parent: &[Option<usize>], members: &[usize]) -> usize {
        let k = parent.len();
        let mut nbr = vec![Vec::new(); k];
        for (c, p) in parent.iter().enumerate() {
            if let Some(p) = *p {
                nbr[c].push(p);
                nbr[p].push(c);
            }
        }
        let ecc = |s: usize| {
            let mut d = vec![usize::MAX; k];
            d[s] = 0;
            let mut q = vec![s];
            let mut i = 0;
            while i < q.len() {
                let c = q[i];
                for &u in &nbr[c] {
                    if d[u] == usize::MAX {
                        d[u] = d[c] + 1;
                        q.push(u);
                    }
                }
                i += 1;
            }
            q.iter().map(|&c| d[c]).max().unwrap()
        };
        *members.iter().min_by_key(|&&c| (ecc(c), c)).unwrap()
    }

    #[test]
    fn each_tree_is_rooted_at_its_centre() {
        // paths of odd and even length, a star, and an isolated clique: variables 0..20
        let path5: Vec<Vec<usize>> = (0..5).map(|i| vec![i, i + 1]).collect();
        let path4: Vec<Vec<usize>> = (0..4).map(|i| vec![10 + i, 11 + i]).collect();
        let star = vec![vec![16, 17], vec![16, 18], vec![16, 19]];
        let mut cliques = path5;
        cliques.extend(path4);
        cliques.extend(star);
        cliques.push(vec![20]);
        let (parent, roots) = clique_forest(&cliques, 21);
        assert_eq!(roots.len(), 4);
        for (&r, members) in roots.iter().zip([&[0, 1, 2, 3, 4][..], &[5, 6, 7, 8], &[9, 10, 11], &[12]]) {
            assert!(parent[r].is_none());
            assert_eq!(r, centre_by_eccentricity(&parent, members), "tree {members:?}");
        }
        assert_eq!(roots, vec![2, 6, 9, 12]);
    }

    #[test]
    fn an_order_over_the_cap_is_given_up_and_one_within_it_is_not() {
        // a 4-cycle of 10-state variables: any order makes a clique of 1000 cells
        let card = vec![10; 4];
        let moral = vec![vec![1, 3], vec![0, 2], vec![1, 3], vec![0, 2]];
        let o = Order { criterion: Heuristic::MinFill, noise: 0.0, seed: 0 };
        assert!(eliminate_capped(&card, &moral, o, 999).is_none());
        assert_eq!(eliminate_capped(&card, &moral, o, 1000), Some(eliminate_by(&card, &moral, o)));
    }
}
