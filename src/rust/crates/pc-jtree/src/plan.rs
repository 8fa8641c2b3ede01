//! The compiled tree as flat arrays, shared by the CPU engine and the CUDA kernels: cliques
//! numbered breadth-first over the forest (so the cliques of one depth, their tables and their
//! separator messages are contiguous, and a parent's children are consecutive), and one
//! *projection* per (clique, subset) pair used in a message: clique cell = base[j] + off[t] for
//! subset cell j and t over the other variables, plus the digits that map a clique cell to j.
//!
//! Layout: a clique's variables ascend by index, the first varies fastest (R's array order);
//! in a batch, table value (cell, row) sits at cell * B + row.

use crate::compile::{moral_graph, triangulate, Heuristic, Limits, TreeStats};
use crate::error::{JtError, Result};
use crate::network::Network;

/// Longest run of a marginalisation summed by one thread: longer runs are summed in parts of
/// this length and the parts then summed in order (on the CPU the same way, so both agree).
pub const REDUCE_SPLIT: u64 = 1024;

/// A clique onto a subset of its variables.
#[derive(Clone, Debug, Default)]
pub struct Projection {
    /// Cell offset of the clique's table among all clique tables.
    pub table: u64,
    /// Cell offset of the result among its kind (separator messages or marginals).
    pub out: u64,
    /// Subset cells: clique cell of subset cell j with the other variables at 0.
    pub base: Vec<u32>,
    /// Offsets of the other variables' configurations (the first varies fastest); empty when
    /// they are the identity (the other variables lead the clique: a root's projection onto no
    /// variable, say, which would otherwise be as long as its table).
    pub off: Vec<u32>,
    /// Number of configurations of the other variables.
    pub len: u64,
    /// Per subset variable: (variable, stride in the clique, cardinality, stride in the subset).
    pub digits: Vec<(u32, u32, u32, u32)>,
    /// Per subset variable, its position among the clique's variables (see `subset_cell_at`).
    pub pos: Vec<u32>,
}

impl Projection {
    fn new(vars: &[usize], strides: &[u64], card: &[usize], subset: &[usize], table: u64, out: u64) -> Projection {
        let mut digits = Vec::new();
        let mut pos = Vec::new();
        let mut s_stride = 1u64;
        for &v in subset {
            let i = vars.iter().position(|&u| u == v).expect("subset of the clique");
            digits.push((v as u32, strides[i] as u32, card[v] as u32, s_stride as u32));
            pos.push(i as u32);
            s_stride *= card[v] as u64;
        }
        let enumerate = |which: &[usize]| -> Vec<u32> {
            let mut out = vec![0u32];
            for &v in which {
                let i = vars.iter().position(|&u| u == v).expect("variable of the clique");
                let prev = out.len();
                for s in 1..card[v] as u64 {
                    for k in 0..prev {
                        out.push(out[k] + (s * strides[i]) as u32);
                    }
                }
            }
            out
        };
        let rest: Vec<usize> = vars.iter().copied().filter(|v| !subset.contains(v)).collect();
        let len: u64 = rest.iter().map(|&v| card[v] as u64).product();
        let identity = vars[..rest.len()] == rest[..];
        let off = if identity { Vec::new() } else { enumerate(&rest) };
        Projection { table, out, base: enumerate(subset), off, len, digits, pos }
    }

    /// Parts of `REDUCE_SPLIT` configurations its marginalisation is summed in.
    pub fn parts(&self) -> u64 {
        self.len.div_ceil(REDUCE_SPLIT).max(1)
    }

    /// Offset of configuration `t` of the other variables.
    #[inline]
    pub fn off_at(&self, t: usize) -> u64 {
        if self.off.is_empty() {
            t as u64
        } else {
            self.off[t] as u64
        }
    }

    /// The subset cell of the clique cell whose variables' states are `states` (by the clique's
    /// variable order): [`Projection::subset_cell`] without its divisions.
    #[inline]
    pub fn subset_cell_at(&self, states: &[u32]) -> u64 {
        self.pos.iter().zip(&self.digits).map(|(&i, &(_, _, _, ss))| states[i as usize] as u64 * ss as u64).sum()
    }

    /// The subset cell of clique cell `r`.
    #[inline]
    pub fn subset_cell(&self, r: u64) -> u64 {
        // a clique has fewer than 2^32 cells: 32-bit division (much cheaper, on the GPU too)
        let r = r as u32;
        let mut j = 0u64;
        for &(_, cs, c, ss) in &self.digits {
            j += ((r / cs) % c) as u64 * ss as u64;
        }
        j
    }
}

#[derive(Clone, Debug)]
pub struct Clique {
    pub vars: Vec<usize>,
    pub strides: Vec<u64>,
    pub cells: u64,
    /// Cell offset of its table.
    pub offset: u64,
    pub parent: Option<usize>,
    pub depth: usize,
    pub first_child: usize,
    pub n_child: usize,
    /// Variables whose evidence enters here: (variable, stride, cardinality), and each one's
    /// position among `vars`.
    pub homed: Vec<(u32, u32, u32)>,
    pub homed_pos: Vec<u32>,
}

/// A compiled junction forest, ready to propagate.
pub struct Plan {
    pub names: Vec<String>,
    pub card: Vec<usize>,
    pub cliques: Vec<Clique>,
    /// Cliques of depth d: depth_start[d]..depth_start[d + 1].
    pub depth_start: Vec<usize>,
    pub roots: Vec<usize>,
    /// Per clique: itself onto the separator with its parent (a root: onto no variable, whose
    /// one cell is the tree's normalising constant). Outputs into the separator buffer.
    pub up: Vec<Projection>,
    /// Per non-root clique: its parent onto the same separator (same output offset).
    pub down: Vec<Projection>,
    pub sep_cells: u64,
    /// Per variable: its home clique onto it. Outputs into the marginal buffer.
    pub marg: Vec<Projection>,
    pub marg_cells: u64,
    pub total_cells: u64,
    /// The initial potentials (product of the CPTs assigned to each clique), one value per cell.
    pub base: Vec<f64>,
    pub stats: TreeStats,
}

impl Plan {
    /// Compiles `net`. Every size is checked against `limits` before the potentials are allocated
    /// (fallibly). [`Heuristic::Auto`]'s trials and the potentials run on a pool of `threads`
    /// threads (0: all cores) built for the call.
    pub fn compile(net: &Network, h: Heuristic, limits: Limits, threads: usize) -> Result<Plan> {
        let n = net.len();
        if n == 0 {
            return Err(JtError::Network("the network has no variables".into()));
        }
        let card = net.cards();
        let names = |v: usize| net.names[v].clone();
        let moral = moral_graph(net);
        let limits = Limits { max_clique_cells: limits.max_clique_cells.min(u32::MAX as u64), ..limits };
        let pool = crate::engine::pool(threads)?;
        let forest = pool.install(|| triangulate(&card, &moral, h, limits.max_clique_cells, &names))?;
        let (maxc, parent0, roots0) = (forest.cliques, forest.parent, forest.roots);
        // breadth-first numbering over the whole forest
        let k = maxc.len();
        let mut children0 = vec![Vec::new(); k];
        for (c, p) in parent0.iter().enumerate() {
            if let Some(p) = p {
                children0[*p].push(c);
            }
        }
        let mut order = roots0.clone();
        let mut depth_of = vec![0usize; k];
        let mut depth_start = vec![0usize];
        let mut lo = 0;
        while lo < order.len() {
            let hi = order.len();
            depth_start.push(hi);
            for i in lo..hi {
                let c = order[i];
                for &u in &children0[c] {
                    depth_of[u] = depth_of[c] + 1;
                    order.push(u);
                }
            }
            lo = hi;
        }
        let mut new_id = vec![0usize; k];
        for (i, &c) in order.iter().enumerate() {
            new_id[c] = i;
        }
        let mut cliques = Vec::with_capacity(k);
        let mut offset = 0u64;
        for (i, &c) in order.iter().enumerate() {
            let vars = maxc[c].clone();
            let mut strides = Vec::with_capacity(vars.len());
            let mut s = 1u64;
            for &v in &vars {
                strides.push(s);
                s *= card[v] as u64;
            }
            let cells = s;
            offset = offset
                .checked_add(cells)
                .filter(|&o| o <= limits.max_total_cells)
                .ok_or_else(|| JtError::TooLarge(format!("the clique tables have more than {} cells in all", limits.max_total_cells)))?;
            let kids: Vec<usize> = children0[c].iter().map(|&u| new_id[u]).collect();
            cliques.push(Clique {
                vars,
                strides,
                cells,
                offset: offset - cells,
                parent: parent0[c].map(|p| new_id[p]),
                depth: depth_of[c],
                first_child: kids.first().copied().unwrap_or(i + 1),
                n_child: kids.len(),
                homed: Vec::new(),
                homed_pos: Vec::new(),
            });
            debug_assert!(kids.windows(2).all(|w| w[1] == w[0] + 1));
        }
        let total_cells = offset;
        let roots: Vec<usize> = (0..depth_start[1]).collect();
        // separators
        let mut up = Vec::with_capacity(k);
        let mut down = Vec::with_capacity(k);
        let mut sep_cells = 0u64;
        for c in 0..k {
            let cl = &cliques[c];
            let sep: Vec<usize> = match cl.parent {
                Some(p) => cl.vars.iter().copied().filter(|v| cliques[p].vars.contains(v)).collect(),
                None => Vec::new(),
            };
            up.push(Projection::new(&cl.vars, &cl.strides, &card, &sep, cl.offset, sep_cells));
            down.push(match cl.parent {
                Some(p) => Projection::new(&cliques[p].vars, &cliques[p].strides, &card, &sep, cliques[p].offset, sep_cells),
                None => Projection::default(),
            });
            sep_cells += sep.iter().map(|&v| card[v] as u64).product::<u64>();
        }
        // home of each variable: the smallest clique holding it (lowest number on ties)
        let mut marg = Vec::with_capacity(n);
        let mut marg_cells = 0u64;
        for v in 0..n {
            let h = (0..k).filter(|&c| cliques[c].vars.contains(&v)).min_by_key(|&c| (cliques[c].cells, c)).expect("every variable is in a clique");
            let i = cliques[h].vars.iter().position(|&u| u == v).unwrap();
            let st = cliques[h].strides[i] as u32;
            cliques[h].homed.push((v as u32, st, card[v] as u32));
            cliques[h].homed_pos.push(i as u32);
            marg.push(Projection::new(&cliques[h].vars, &cliques[h].strides, &card, &[v], cliques[h].offset, marg_cells));
            marg_cells += card[v] as u64;
        }
        // partial sums of split marginalisations: the most one launch (a depth's separators, or
        // the variables) needs
        let split_cells = |ps: &[Projection]| -> u64 {
            if ps.iter().any(|p| p.parts() > 1) {
                ps.iter().map(|p| p.base.len() as u64 * p.parts()).sum()
            } else {
                0
            }
        };
        let mut scratch = split_cells(&marg);
        for d in 0..depth_start.len() - 1 {
            scratch = scratch.max(split_cells(&up[depth_start[d]..depth_start[d + 1]]));
            scratch = scratch.max(split_cells(&down[depth_start[d]..depth_start[d + 1]]));
        }
        let stats = TreeStats {
            cliques: k,
            trees: roots.len(),
            depth: depth_start.len() - 2,
            max_clique_vars: cliques.iter().map(|c| c.vars.len()).max().unwrap_or(0),
            max_clique_cells: cliques.iter().map(|c| c.cells).max().unwrap_or(0),
            total_clique_cells: total_cells,
            total_separator_cells: sep_cells,
            bytes_per_evidence_set: 8 * (total_cells + 2 * sep_cells + marg_cells + scratch),
            scratch_cells: scratch,
        };
        let mut plan = Plan { names: net.names.clone(), card, cliques, depth_start, roots, up, down, sep_cells, marg, marg_cells, total_cells, base: Vec::new(), stats };
        plan.base = pool.install(|| plan.potentials(net))?;
        Ok(plan)
    }

    pub fn n_vars(&self) -> usize {
        self.card.len()
    }

    pub fn max_depth(&self) -> usize {
        self.depth_start.len() - 2
    }

    /// Each CPT multiplied into the smallest clique holding its family (variables ascending).
    fn potentials(&self, net: &Network) -> Result<Vec<f64>> {
        use rayon::prelude::*;
        let mut base = crate::error::try_filled(self.total_cells as usize, 1.0f64, "the clique potentials")?;
        let k = self.cliques.len();
        let mut assigned: Vec<Vec<usize>> = vec![Vec::new(); k];
        for v in 0..net.len() {
            let fam: Vec<usize> = std::iter::once(v).chain(net.parents[v].iter().copied()).collect();
            let c = (0..k)
                .filter(|&c| fam.iter().all(|u| self.cliques[c].vars.contains(u)))
                .min_by_key(|&c| (self.cliques[c].cells, c))
                .ok_or_else(|| JtError::Other(format!("no clique holds the family of '{}'", net.names[v])))?;
            assigned[c].push(v);
        }
        // slices of `base` per clique, filled in parallel
        let mut rest: &mut [f64] = &mut base;
        let mut parts = Vec::with_capacity(k);
        for c in &self.cliques {
            let (a, b) = rest.split_at_mut(c.cells as usize);
            parts.push(a);
            rest = b;
        }
        parts.into_par_iter().enumerate().for_each(|(c, tab)| {
            let cl = &self.cliques[c];
            for &v in &assigned[c] {
                // (clique stride, cardinality, CPT stride) of the child then its parents
                let fam: Vec<(u64, u64, u64)> = {
                    let mut s = 1u64;
                    std::iter::once(v)
                        .chain(net.parents[v].iter().copied())
                        .map(|u| {
                            let i = cl.vars.iter().position(|&w| w == u).unwrap();
                            let d = (cl.strides[i], self.card[u] as u64, s);
                            s *= self.card[u] as u64;
                            d
                        })
                        .collect()
                };
                let cpt = &net.cpts[v];
                tab.par_iter_mut().with_min_len(4096).enumerate().for_each(|(r, x)| {
                    let r = r as u64;
                    let idx: u64 = fam.iter().map(|&(cs, c, ps)| (r / cs) % c * ps).sum();
                    *x *= cpt[idx as usize];
                });
            }
        });
        Ok(base)
    }
}
