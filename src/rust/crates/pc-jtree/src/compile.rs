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

/// The elimination cliques in elimination order (each sorted by variable index).
pub fn eliminate(card: &[usize], moral: &[Vec<usize>], h: Heuristic) -> Vec<Vec<usize>> {
    let criterion = if h == Heuristic::Auto { Heuristic::MinFill } else { h };
    eliminate_by(card, moral, Order { criterion, noise: 0.0, seed: 0 })
}

fn splitmix(x: &mut u64) -> f64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64
}

/// [`eliminate`] by an [`Order`].
pub fn eliminate_by(card: &[usize], moral: &[Vec<usize>], order: Order) -> Vec<Vec<usize>> {
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
    cliques
}

/// Randomised trials of [`Heuristic::Auto`] per criterion and jitter, besides the three plain
/// orders. A trial is an elimination and a clique forest (Munin's: about 20 ms on one core); on
/// the bundled networks the trials' best tree has 1.0-2.3x fewer cells to move than min-fill's.
pub const AUTO_TRIALS: u64 = 8;
const AUTO_NOISE: [f64; 3] = [0.2, 0.5, 1.0];

/// The orders [`Heuristic::Auto`] tries, the plain ones first. The randomised ones jitter
/// min-fill and weighted min-fill (jittered min-weight found no cheaper tree on the bundled
/// networks).
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

/// The maximal cliques of one order and their forest, or the error of a clique over `limit`.
fn forest_of(card: &[usize], moral: &[Vec<usize>], order: Order, limit: u64, names: &dyn Fn(usize) -> String) -> Result<(u64, Forest)> {
    let elim = eliminate_by(card, moral, order);
    for c in &elim {
        table_cells(card, c, limit, names)?;
    }
    let cliques = maximal_cliques(elim, card.len());
    let (parent, roots) = clique_forest(&cliques, card.len());
    let cells: Vec<u64> = cliques.iter().map(|c| c.iter().map(|&v| card[v] as u64).product()).collect();
    Ok((propagation_cost(&cells, &parent), Forest { cliques, parent, roots }))
}

/// The junction forest of `h` (for [`Heuristic::Auto`] the cheapest of [`auto_orders`], the first
/// on ties; its trials run on the caller's rayon pool). Errors when no order keeps every clique
/// within `limit` (the min-fill order's error).
pub fn triangulate(card: &[usize], moral: &[Vec<usize>], h: Heuristic, limit: u64, names: &(dyn Fn(usize) -> String + Sync)) -> Result<Forest> {
    use rayon::prelude::*;
    if h != Heuristic::Auto {
        return forest_of(card, moral, Order { criterion: h, noise: 0.0, seed: 0 }, limit, names).map(|x| x.1);
    }
    let tried: Vec<Result<(u64, Forest)>> = auto_orders().into_par_iter().map(|o| forest_of(card, moral, o, limit, names)).collect();
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
    for i in 0..elim.len() {
        for j in 0..elim.len() {
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
    let mut pairs = Vec::new();
    for i in 0..k {
        for j in i + 1..k {
            let w = sets[i].and_count(&sets[j]);
            if w > 0 {
                pairs.push((w, i, j));
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
        let comp = bfs(s);
        let mut best = (usize::MAX, s);
        for &(c, _) in &comp {
            let ecc = bfs(c).last().map(|x| x.1).unwrap_or(0);
            if ecc < best.0 || (ecc == best.0 && c < best.1) {
                best = (ecc, c);
            }
        }
        let root = best.1;
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
