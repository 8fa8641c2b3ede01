//! The canonical test sequence of every edge at one level, for each of pcalg's two stable orders.
//!
//! An edge {i, j} (i < j) has at most two *sides*, tested one after the other; a side is a list of
//! candidate neighbours and a number of ranks: rank r is the r-th lexicographic l-subset of the
//! list's positions. A test is identified by its key (side, rank); the first success in key order
//! decides the edge, whatever order a backend evaluates tests in.
//!
//! - [`Order::Stable`] is pcalg's R `skeleton(method = "stable")`: side 0 is adj(i) \ {j} from
//!   the level's snapshot, side 1 is adj(j) \ {i}, both ascending; level 0 tests both directions.
//! - [`Order::StableFast`] is pcalg's C++ `stable.fast`: level 0 tests each pair once; at l >= 1
//!   side 1 lists j's neighbours that are not adjacent to i first and skips the sets made only of
//!   common neighbours (tested already from side 0), which are exactly its last C(len - m, l) ranks.


use crate::combinations::binomial;
use crate::error::{PcError, Result};
use crate::graph::Adjacency;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    Stable,
    StableFast,
}

/// The snapshot adjacency of a level as ascending neighbour lists (CSR).
#[derive(Clone, Debug, Default)]
pub struct Rows {
    pub offsets: Vec<usize>,
    pub cols: Vec<u32>,
}

impl Rows {
    pub fn from_adjacency(adj: &Adjacency) -> Result<Self> {
        Self::from_adjacency_on(adj, false)
    }

    /// [`Rows::from_adjacency`], on this thread when `here`.
    pub fn from_adjacency_on(adj: &Adjacency, here: bool) -> Result<Self> {
        let degrees: Vec<usize> = crate::par::map_indices(adj.p(), here, |i| adj.degree(i));
        let mut offsets = Vec::with_capacity(adj.p() + 1);
        offsets.push(0);
        for d in &degrees {
            offsets.push(offsets[offsets.len() - 1] + d);
        }
        let total = offsets[adj.p()];
        // rows filled in parallel, in place (level 0 of p = 10000 lists 1e8 neighbours)
        let mut cols: Vec<u32> = crate::mem::try_vec(total, "labels", "the level's neighbour lists")?;
        {
            let mut rest = &mut cols.spare_capacity_mut()[..total];
            let mut slots = Vec::with_capacity(adj.p());
            for &d in &degrees {
                let (row, tail) = rest.split_at_mut(d);
                slots.push(row);
                rest = tail;
            }
            crate::par::try_for_each_indexed(slots, here, |(i, slot)| {
                let mut k = 0;
                for (w, &word) in adj.row(i).iter().enumerate() {
                    let mut b = word;
                    while b != 0 {
                        slot[k].write((w * 64 + b.trailing_zeros() as usize) as u32);
                        k += 1;
                        b &= b - 1;
                    }
                }
                assert_eq!(k, slot.len(), "row {i}: degree and bits disagree");
                Ok::<(), ()>(())
            })
            .expect("the rows' writes do not fail");
        }
        // SAFETY: the row slots tile cols[..total] and each was filled (asserted above).
        unsafe { cols.set_len(total) };
        Ok(Rows { offsets, cols })
    }

    /// These rows less the pairs `adj` no longer holds (the next level's snapshot, from the
    /// last one's rows and the edges left: a pass over the rows' entries instead of over every
    /// bit of the p x p matrix, 50 MB at p = 20000). Rows in parallel, on the caller's pool.
    pub fn keeping(&self, adj: &Adjacency) -> Result<Self> {
        self.keeping_on(adj, false)
    }

    /// [`Rows::keeping`], on this thread when `here`.
    pub fn keeping_on(&self, adj: &Adjacency, here: bool) -> Result<Self> {
        let p = self.offsets.len().saturating_sub(1);
        if p != adj.p() {
            return Err(PcError::Internal("rows of another graph".into()));
        }
        let kept = |i: u32| self.row(i).iter().copied().filter(move |&j| adj.has(i as usize, j as usize));
        let counts: Vec<usize> = crate::par::map_indices(p, here, |i| kept(i as u32).count());
        let mut offsets = Vec::with_capacity(p + 1);
        offsets.push(0);
        for c in &counts {
            offsets.push(offsets[offsets.len() - 1] + c);
        }
        let total = offsets[p];
        let mut cols: Vec<u32> = crate::mem::try_vec(total, "labels", "the level's neighbour lists")?;
        {
            let mut rest = &mut cols.spare_capacity_mut()[..total];
            let mut slots = Vec::with_capacity(p);
            for &c in &counts {
                let (row, tail) = rest.split_at_mut(c);
                slots.push(row);
                rest = tail;
            }
            crate::par::try_for_each_indexed(slots, here, |(i, slot)| {
                for (s, j) in slot.iter_mut().zip(kept(i as u32)) {
                    s.write(j);
                }
                Ok::<(), ()>(())
            })
            .expect("the rows' writes do not fail");
        }
        // SAFETY: the row slots tile cols[..total], and row i's slot has exactly as many entries
        // as its kept neighbours, counted above from the same rows and graph.
        unsafe { cols.set_len(total) };
        Ok(Rows { offsets, cols })
    }

    #[inline]
    pub fn row(&self, i: u32) -> &[u32] {
        &self.cols[self.offsets[i as usize]..self.offsets[i as usize + 1]]
    }

    #[inline]
    pub fn contains(&self, i: u32, j: u32) -> bool {
        self.row(i).binary_search(&j).is_ok()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SideKind {
    /// row(x) \ {y}, ascending.
    Plain,
    /// stable.fast's second side: (row(x) \ {y}) minus row(y), then the common neighbours.
    CommonLast,
}

/// One side of an edge: tests `indepTest(x, y, S)` for S drawn from the side's list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub x: u32,
    pub y: u32,
    pub kind: SideKind,
    /// Length of the side's list.
    pub len: u32,
    /// Number of ranks tested on this side (C(len, l), less the skipped tail for CommonLast).
    pub n_ranks: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EdgeWork {
    pub i: u32,
    pub j: u32,
    pub sides: [Option<Side>; 2],
}

impl EdgeWork {
    /// Total tests if nothing succeeds.
    pub fn n_tests(&self) -> u64 {
        self.sides.iter().flatten().map(|s| s.n_ranks).sum()
    }
}

/// What a backend reports for one edge of a plan.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EdgeOutcome {
    /// The first success in canonical order: (side index, rank).
    pub best: Option<(u8, u64)>,
    /// The raw p-value of that test (NaN stays NaN; stable.fast's level 0 needs it raw).
    pub p_best: f64,
    /// The largest NA-mapped p-value among failed tests that precede `best` (all tests when there
    /// is no success); -Inf when there were none. Backends may fold in failures after `best`
    /// too: every failure is below alpha <= the success's p, so the level's pMax is unchanged.
    pub max_fail: f64,
}

impl EdgeOutcome {
    pub const NONE: EdgeOutcome = EdgeOutcome { best: None, p_best: f64::NAN, max_fail: f64::NEG_INFINITY };

    /// Takes the next test of the edge's canonical sequence, test `rank` of `side` with raw
    /// p-value `p` ([`decides`]); true when it decides the edge.
    #[inline]
    pub fn record(&mut self, side: u8, rank: u64, p: f64, alpha: f64, na_value: f64) -> bool {
        let d = decides(p, alpha, na_value, &mut self.max_fail);
        if d {
            self.best = Some((side, rank));
            self.p_best = p;
        }
        d
    }
}

/// A p-value as pcalg compares it with alpha: NaN counts as `na_value` (1 under NAdelete, else 0).
#[inline]
pub fn na_map(p: f64, na_value: f64) -> f64 {
    if p.is_nan() {
        na_value
    } else {
        p
    }
}

/// pcalg's rule for one test of an edge's canonical sequence, taken in order: the first test whose
/// NA-mapped p-value (NaN counts as `na_value`) is >= alpha decides the edge (true); a test that
/// does not raises `max_fail` to its mapped p. Every backend and level folds p-values through it.
#[inline]
pub fn decides(p: f64, alpha: f64, na_value: f64, max_fail: &mut f64) -> bool {
    let mapped = na_map(p, na_value);
    if mapped >= alpha {
        return true;
    }
    *max_fail = max_fail.max(mapped);
    false
}

/// Packs (side, rank) so that u64 order is canonical order (for atomicMin on a GPU).
#[inline]
pub fn pack_key(side: u8, rank: u64) -> u64 {
    ((side as u64) << 63) | rank
}

#[inline]
pub fn unpack_key(key: u64) -> (u8, u64) {
    ((key >> 63) as u8, key & !(1u64 << 63))
}

/// Everything a backend needs to run one level.
#[derive(Clone, Debug)]
pub struct LevelPlan {
    /// Which of pcalg's orders the sides follow (a GPU backend runs the two differently).
    pub order: Order,
    pub level: usize,
    pub alpha: f64,
    /// What a NaN p-value counts as: 1 (NAdelete = TRUE) or 0.
    pub na_value: f64,
    pub rows: Rows,
    pub edges: Vec<EdgeWork>,
    /// Edges that qualified for the level (stable.fast runs a level iff this is > 0, even when a
    /// qualifying edge ends up with no test).
    pub qualifying: usize,
}

impl LevelPlan {
    /// The same level over other edges (a share of this plan's, for another device or rank).
    pub fn with_edges(&self, edges: Vec<EdgeWork>) -> LevelPlan {
        LevelPlan { order: self.order, level: self.level, alpha: self.alpha, na_value: self.na_value, rows: self.rows.clone(), edges, qualifying: self.qualifying }
    }

    /// The ordered candidate list of a side, written into `out`.
    pub fn side_list(&self, side: &Side, out: &mut Vec<u32>) {
        out.clear();
        let row = self.rows.row(side.x);
        match side.kind {
            SideKind::Plain => out.extend(row.iter().copied().filter(|&a| a != side.y)),
            SideKind::CommonLast => {
                out.extend(row.iter().copied().filter(|&a| a != side.y && !self.rows.contains(side.y, a)));
                out.extend(row.iter().copied().filter(|&a| a != side.y && self.rows.contains(side.y, a)));
            }
        }
        debug_assert_eq!(out.len(), side.len as usize);
    }

    /// The separating set of test (side, rank), in the side list's order (pcalg stores it so).
    pub fn sepset(&self, edge: &EdgeWork, side: u8, rank: u64) -> Vec<u32> {
        let s = edge.sides[side as usize].expect("side exists");
        if self.level == 0 {
            return Vec::new(); // no need to build the side's list
        }
        let mut list = Vec::new();
        self.side_list(&s, &mut list);
        let mut pos = vec![0u32; self.level];
        crate::combinations::unrank(s.len, rank, &mut pos);
        pos.iter().map(|&q| list[q as usize]).collect()
    }

    pub fn total_tests(&self) -> u64 {
        self.edges.iter().map(|e| e.n_tests()).sum()
    }
}

fn ranks(len: usize, level: usize) -> Result<u64> {
    binomial(len as u64, level as u64).ok_or(PcError::TooManySets { level, n: len })
}

/// Plans level `level` on the snapshot `adj`; fixed edges are never tested.
pub fn plan_level(order: Order, level: usize, adj: &Adjacency, fixed: &Adjacency, alpha: f64, na_value: f64) -> Result<LevelPlan> {
    plan_level_cancellable(order, level, adj, fixed, alpha, na_value, &|| false)
}

/// [`plan_level`] that gives up with `Interrupted` soon after `cancelled()` turns true (level 0
/// of a large problem lists tens of millions of edges).
pub fn plan_level_cancellable(
    order: Order,
    level: usize,
    adj: &Adjacency,
    fixed: &Adjacency,
    alpha: f64,
    na_value: f64,
    cancelled: &(dyn Fn() -> bool + Sync),
) -> Result<LevelPlan> {
    plan_level_from_rows(order, level, Rows::from_adjacency(adj)?, fixed, alpha, na_value, cancelled, false)
}

/// [`plan_level_cancellable`] from the level's snapshot as rows (`Rows::from_adjacency`, or the
/// last level's `Rows::keeping` the edges left); on this thread when `here`, else across the
/// current pool.
#[allow(clippy::too_many_arguments)]
pub fn plan_level_from_rows(
    order: Order,
    level: usize,
    rows: Rows,
    fixed: &Adjacency,
    alpha: f64,
    na_value: f64,
    cancelled: &(dyn Fn() -> bool + Sync),
    here: bool,
) -> Result<LevelPlan> {
    if rows.offsets.len() != fixed.p() + 1 {
        return Err(PcError::Internal("the level's rows and the fixed edges differ in size".into()));
    }
    if cancelled() {
        return Err(PcError::Interrupted);
    }
    // Rows in parallel (level 0 of p = 10000 lists 5e7 edges, 2.8 GB), in two passes: count each
    // row's edges, then write them in place. Per-row vectors joined afterwards cost a second
    // allocation and copy of it all, which took longer than the tests at p = 8000.
    let p = fixed.p() as u32;
    let counts = crate::par::map_indices(p as usize, here, |i| {
        let i = i as u32;
        if i % 64 == 0 && cancelled() {
            return Err(PcError::Interrupted);
        }
        let mut n = 0usize;
        let qualifying = row_edges(order, level, &rows, fixed, i, &mut |_| n += 1)?;
        Ok((n, qualifying))
    })
    .into_iter()
        .collect::<Result<Vec<_>>>()?; // the first error in row order, as a sequential walk gives
    let qualifying = counts.iter().map(|c| c.1).sum();
    let total: usize = counts.iter().map(|c| c.0).sum();
    let mut edges: Vec<EdgeWork> = crate::mem::try_vec(total, "labels", "the level's plan")?;
    {
        let mut rest = &mut edges.spare_capacity_mut()[..total];
        let mut slots = Vec::with_capacity(p as usize);
        for &(n, _) in &counts {
            let (row, tail) = rest.split_at_mut(n);
            slots.push(row);
            rest = tail;
        }
        crate::par::try_for_each_indexed(slots, here, |(i, slot)| {
            let mut k = 0usize;
            row_edges(order, level, &rows, fixed, i as u32, &mut |e| {
                slot[k].write(e);
                k += 1;
            })?;
            debug_assert_eq!(k, slot.len());
            if k == slot.len() { Ok(()) } else { Err(PcError::Internal("a plan row changed between its two passes".into())) }
        })?;
    }
    // SAFETY: the row slots tile edges[..total], and each row wrote exactly its slot (checked above).
    unsafe { edges.set_len(total) };
    Ok(LevelPlan { order, level, alpha, na_value, rows, edges, qualifying })
}

/// Emits the edges {i, j}, j > i, of row i in order; returns how many qualified for the level.
fn row_edges(order: Order, level: usize, rows: &Rows, fixed: &Adjacency, i: u32, emit: &mut dyn FnMut(EdgeWork)) -> Result<usize> {
    let mut qualifying = 0usize;
    let later = rows.row(i).partition_point(|&j| j <= i);
    for j in rows.row(i)[later..].iter().copied() {
        if fixed.has(i as usize, j as usize) {
            continue;
        }
        let ni = rows.row(i).len() - 1; // |adj(i) \ {j}|
        let nj = rows.row(j).len() - 1;
        let plain = |x: u32, y: u32, len: usize| -> Result<Option<Side>> {
            Ok(if len >= level {
                Some(Side { x, y, kind: SideKind::Plain, len: len as u32, n_ranks: ranks(len, level)? })
            } else {
                None
            })
        };
        let sides = match (order, level) {
            (Order::Stable, _) => [plain(i, j, ni)?, plain(j, i, nj)?],
            (Order::StableFast, 0) => [plain(i, j, ni)?, None],
            (Order::StableFast, _) => {
                if ni.max(nj) < level {
                    continue;
                }
                let second = if nj >= level {
                    let common = rows.row(j).iter().filter(|&&a| a != i && rows.contains(i, a)).count();
                    let m = nj - common;
                    let n = ranks(nj, level)? - ranks(common, level)?;
                    (m > 0 && n > 0).then_some(Side { x: j, y: i, kind: SideKind::CommonLast, len: nj as u32, n_ranks: n })
                } else {
                    None
                };
                [plain(i, j, ni)?, second]
            }
        };
        qualifying += 1;
        if sides.iter().any(|s| s.is_some()) {
            emit(EdgeWork { i, j, sides });
        }
    }
    Ok(qualifying)
}

#[cfg(test)]
mod tests {

    // the next level's rows made from the last level's equal the rows read from the bits
    #[test]
    fn rows_keeping_the_edges_left_equal_rows_from_the_graph() {
        for p in [1usize, 2, 63, 64, 65, 130] {
            let mut g = Adjacency::complete(p);
            let before = Rows::from_adjacency(&g).unwrap();
            let mut k = 0u64;
            for i in 0..p {
                for j in i + 1..p {
                    k = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    if (k >> 33) % 3 != 0 {
                        g.remove_edge(i, j);
                    }
                }
            }
            let kept = before.keeping(&g).unwrap();
            let fresh = Rows::from_adjacency(&g).unwrap();
            assert_eq!((kept.offsets, kept.cols), (fresh.offsets, fresh.cols), "p = {p}");
        }
        assert!(Rows::from_adjacency(&Adjacency::complete(3)).unwrap().keeping(&Adjacency::complete(4)).is_err());
    }

    // a small level is planned, and its next rows made, on the caller's thread: the same plan
    // and rows as across a pool
    #[test]
    fn a_level_planned_here_equals_one_planned_across_a_pool() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let p = 130;
        let mut g = Adjacency::complete(p);
        let mut fixed = Adjacency::empty(p);
        let mut k = 7u64;
        for i in 0..p {
            for j in i + 1..p {
                k = k.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                match (k >> 33) % 11 {
                    0..=8 => g.remove_edge(i, j),
                    9 => fixed.add_edge(i, j),
                    _ => {}
                }
            }
        }
        let rows = Rows::from_adjacency(&g).unwrap();
        let rows_here = Rows::from_adjacency_on(&g, true).unwrap();
        assert_eq!((&rows.offsets, &rows.cols), (&rows_here.offsets, &rows_here.cols));
        for order in [Order::Stable, Order::StableFast] {
            for level in 0..4 {
                let here = plan_level_from_rows(order, level, rows.clone(), &fixed, 0.01, 1.0, &|| false, true).unwrap();
                let pooled = pool.install(|| plan_level_from_rows(order, level, rows.clone(), &fixed, 0.01, 1.0, &|| false, false)).unwrap();
                assert_eq!(here.edges, pooled.edges, "{order:?} level {level}");
                assert_eq!(here.qualifying, pooled.qualifying);
                assert!(!here.edges.is_empty());
            }
        }
        let mut h = g.clone();
        for i in (0..p).step_by(3) {
            for j in i + 1..p {
                h.remove_edge(i, j);
            }
        }
        let (a, b) = (rows.keeping_on(&h, true).unwrap(), pool.install(|| rows.keeping_on(&h, false)).unwrap());
        assert_eq!((a.offsets, a.cols), (b.offsets, b.cols));
    }
    use super::*;

    fn star_plus() -> Adjacency {
        // 0-1, 0-2, 0-3, 1-2, 1-4
        let mut a = Adjacency::empty(5);
        for (i, j) in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 4)] {
            a.add_edge(i, j);
        }
        a
    }

    #[test]
    fn stable_sides_are_both_neighbourhoods() {
        let a = star_plus();
        let plan = plan_level(Order::Stable, 1, &a, &Adjacency::empty(5), 0.05, 1.0).unwrap();
        let e01 = plan.edges.iter().find(|e| (e.i, e.j) == (0, 1)).unwrap();
        let mut l = Vec::new();
        plan.side_list(&e01.sides[0].unwrap(), &mut l);
        assert_eq!(l, vec![2, 3]);
        plan.side_list(&e01.sides[1].unwrap(), &mut l);
        assert_eq!(l, vec![2, 4]);
        assert_eq!(e01.n_tests(), 4);
        // edge 0-3: side 1 (adj(3) \ {0} is empty) has too few neighbours at level 1
        let e03 = plan.edges.iter().find(|e| (e.i, e.j) == (0, 3)).unwrap();
        assert!(e03.sides[1].is_none());
    }

    #[test]
    fn stable_fast_puts_common_neighbours_last_and_skips_their_sets() {
        let a = star_plus();
        let plan = plan_level(Order::StableFast, 1, &a, &Adjacency::empty(5), 0.05, 1.0).unwrap();
        let e01 = plan.edges.iter().find(|e| (e.i, e.j) == (0, 1)).unwrap();
        let s1 = e01.sides[1].unwrap();
        let mut l = Vec::new();
        plan.side_list(&s1, &mut l);
        assert_eq!(l, vec![4, 2]); // 4 is not adjacent to 0, 2 is
        assert_eq!(s1.n_ranks, 1); // {2} alone was tested from side 0
        assert_eq!(plan.sepset(e01, 1, 0), vec![4]);
        let level0 = plan_level(Order::StableFast, 0, &a, &Adjacency::empty(5), 0.05, 1.0).unwrap();
        assert!(level0.edges.iter().all(|e| e.sides[1].is_none() && e.n_tests() == 1));
    }

    #[test]
    fn keys_order_side_before_rank() {
        assert!(pack_key(0, u64::MAX >> 1) < pack_key(1, 0));
        assert_eq!(unpack_key(pack_key(1, 12345)), (1, 12345));
    }
}
