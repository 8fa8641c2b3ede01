//! The host side of the set kernels (cuPC-S: one thread per row and conditioning set, each set
//! shared by every y of its row): the plan's shape check, the compacted adjacency and edge lookup
//! a level uploads, the binomial table and rank arithmetic the kernels use, and the rounds of
//! launches over the rows.

use crate::combinations::binomial;
use crate::par::par_ranges;
use crate::plan::{LevelPlan, SideKind};
use crate::PcError;

/// Level 0 lists each row's plan edges {i < j}: rows `i` with the j's at
/// cols[off[i] + upper[i] ..][.. ebase[i + 1] - ebase[i]], and edge k of the plan is the
/// (k - ebase[i])-th of row i's. Without fixed edges this is the snapshot CSR itself (the plan
/// holds every pair i < j in row-major order); otherwise a list built from the plan.
pub struct Level0Rows {
    pub off: Vec<u64>,
    /// None: use the plan's CSR columns.
    pub cols: Option<Vec<u32>>,
    pub upper: Vec<u32>,
    pub ebase: Vec<u64>,
}

pub fn level0_rows(plan: &LevelPlan) -> Level0Rows {
    let p = plan.rows.offsets.len() - 1;
    let mut upper = Vec::with_capacity(p);
    let mut ebase = Vec::with_capacity(p + 1);
    ebase.push(0u64);
    for i in 0..p as u32 {
        let row = plan.rows.row(i);
        let u = row.partition_point(|&c| c <= i);
        upper.push(u as u32);
        ebase.push(ebase[i as usize] + (row.len() - u) as u64);
    }
    if ebase[p] == plan.edges.len() as u64 {
        let off = plan.rows.offsets.iter().map(|&o| o as u64).collect();
        return Level0Rows { off, cols: None, upper, ebase };
    }
    // some pairs are not in the plan (fixed edges): list the plan's own
    let mut count = vec![0u64; p + 1];
    for e in &plan.edges {
        count[e.i as usize + 1] += 1;
    }
    for i in 0..p {
        count[i + 1] += count[i];
    }
    let cols = plan.edges.iter().map(|e| e.j).collect();
    Level0Rows { off: count.clone(), cols: Some(cols), upper: vec![0; p], ebase: count }
}

/// The adjacency and edge lookup of one level, as the kernels read them.
#[derive(Clone, Debug, Default)]
pub struct LevelInputs {
    /// CSR offsets of the snapshot rows (p + 1).
    pub off: Vec<u64>,
    /// CSR columns (ascending within a row).
    pub cols: Vec<u32>,
    /// For CSR entry (x, position q): the plan index of edge {x, cols[q]} when the plan tests the
    /// side whose list is row(x) \ {cols[q]}, else -1.
    pub edge_of: Vec<i32>,
    /// Per plan edge: i, j (i < j), position of j in row(i), of i in row(j), and which sides exist
    /// (bit 0: side 0, x = i; bit 1: side 1, x = j).
    pub ei: Vec<u32>,
    pub ej: Vec<u32>,
    pub qi: Vec<u32>,
    pub qj: Vec<u32>,
    pub sides: Vec<u8>,
}

/// Checks that `plan` is a `method = "stable"` plan, the only order the kernels implement: every
/// side is plain, side 0 is (i, j) with the full list row(i) \ {j}, side 1 is (j, i) likewise, and
/// a side is missing only when its list is shorter than the level.
pub fn check_stable_plan(plan: &LevelPlan) -> Result<(), PcError> {
    let not_stable = || PcError::Cuda("stable.fast order is not supported on the GPU yet".to_string());
    let l = plan.level as u64;
    par_ranges(plan.edges.len(), |range| {
        for e in &plan.edges[range] {
            if e.i >= e.j {
                return Err(not_stable());
            }
            for (si, (x, y)) in [(e.i, e.j), (e.j, e.i)].into_iter().enumerate() {
                let len = plan.rows.row(x).len() as u64 - 1;
                match e.sides[si] {
                    None if len < l => {}
                    Some(s) if s.kind == SideKind::Plain && s.x == x && s.y == y && s.len as u64 == len => {
                        if Some(s.n_ranks) != binomial(len, l) {
                            return Err(PcError::Internal(format!(
                                "side ({x}, {y}) of level {l} has {} ranks",
                                s.n_ranks
                            )));
                        }
                    }
                    _ => return Err(not_stable()),
                }
            }
        }
        Ok(())
    })
}

fn position(row: &[u32], v: u32) -> Result<u32, PcError> {
    row.binary_search(&v)
        .map(|q| q as u32)
        .map_err(|_| PcError::Internal(format!("{v} is missing from a snapshot row")))
}

/// Builds what a level uploads. `with_rows` = false skips the CSR (level 0 needs none).
pub fn level_inputs(plan: &LevelPlan, with_rows: bool) -> Result<LevelInputs, PcError> {
    let ne = plan.edges.len();
    if ne > i32::MAX as usize {
        return Err(PcError::Cuda(format!("{ne} edges in one level: more than the GPU backend indexes")));
    }
    let mut li = LevelInputs {
        ei: Vec::with_capacity(ne),
        ej: Vec::with_capacity(ne),
        qi: Vec::with_capacity(ne),
        qj: Vec::with_capacity(ne),
        sides: Vec::with_capacity(ne),
        ..Default::default()
    };
    if with_rows {
        li.off = plan.rows.offsets.iter().map(|&o| o as u64).collect();
        li.cols = plan.rows.cols.clone();
        li.edge_of = vec![-1; li.cols.len()];
    }
    for (k, e) in plan.edges.iter().enumerate() {
        li.ei.push(e.i);
        li.ej.push(e.j);
        li.sides.push(e.sides[0].is_some() as u8 | (e.sides[1].is_some() as u8) << 1);
        if with_rows {
            let qi = position(plan.rows.row(e.i), e.j)?;
            let qj = position(plan.rows.row(e.j), e.i)?;
            li.qi.push(qi);
            li.qj.push(qj);
            if e.sides[0].is_some() {
                li.edge_of[plan.rows.offsets[e.i as usize] + qi as usize] = k as i32;
            }
            if e.sides[1].is_some() {
                li.edge_of[plan.rows.offsets[e.j as usize] + qj as usize] = k as i32;
            }
        }
    }
    Ok(li)
}

/// C(n, k) for n in 0..=max_n and k in 0..=l, at n * (l + 1) + k; u64::MAX where it overflows
/// (the kernels never read such an entry: every entry they read is at most C(d - 1, l) or C(d, l)
/// of a row whose C(d, l) fits).
pub fn binomial_table(max_n: usize, l: usize) -> Vec<u64> {
    let mut t = Vec::with_capacity((max_n + 1) * (l + 1));
    for n in 0..=max_n as u64 {
        for k in 0..=l as u64 {
            t.push(binomial(n, k).unwrap_or(u64::MAX));
        }
    }
    t
}

/// Lexicographic rank of the ascending l-subset `pos` of {0..n} by the complement formula the
/// kernels use: C(n, l) - 1 - sum_c C(n - 1 - pos_c, l - c).
pub fn rank_by_complement(n: u32, pos: &[u32]) -> u64 {
    let l = pos.len() as u64;
    let mut s = 0u64;
    for (c, &v) in pos.iter().enumerate() {
        s += binomial((n - 1 - v) as u64, l - c as u64).expect("fits");
    }
    binomial(n as u64, l).expect("fits") - 1 - s
}

/// For a set at positions `pos` (ascending) of a row of `d` entries, the rank of the same set
/// within the row without the entry at position q, for every q not in `pos`, in ascending q:
/// the incremental form of `gauss_sets_*` (one table look-up per position passed, O(1) per q).
pub fn shifted_ranks(d: u32, pos: &[u32], table: &[u64], l: usize) -> Vec<(u32, u64)> {
    let lp1 = l + 1;
    let b = |n: u32, k: usize| table[n as usize * lp1 + k];
    let mut sum: u64 = pos.iter().enumerate().map(|(c, &v)| b(d - 1 - v, l - c)).sum();
    let top = b(d - 1, l) - 1;
    let mut ip = 0usize;
    let mut out = Vec::new();
    for q in 0..d {
        if ip < l && pos[ip] == q {
            let a_c = if pos[ip] + 2 <= d { b(d - 2 - pos[ip], l - ip) } else { 0 };
            sum = sum - b(d - 1 - pos[ip], l - ip) + a_c;
            ip += 1;
            continue;
        }
        out.push((q, top - sum));
    }
    out
}

/// The same rank computed the plain way: drop position q and re-rank with pc-core.
pub fn shifted_rank_reference(d: u32, pos: &[u32], q: u32) -> u64 {
    let shifted: Vec<u32> = pos.iter().map(|&v| if v > q { v - 1 } else { v }).collect();
    crate::combinations::rank(d - 1, &shifted)
}

/// One row of a level >= 2: its l-subsets are ranks 0..total of row(x); `next` is the first not
/// yet launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowWork {
    pub row: u32,
    pub total: u64,
    pub next: u64,
}

/// Rows of level `l` that have work: at least l + 1 entries (a set and a y outside it) and a
/// tested side. Errors when a row's set count overflows 64 bits.
pub fn work_rows(li: &LevelInputs, l: usize) -> Result<Vec<RowWork>, PcError> {
    let p = li.off.len().saturating_sub(1);
    let mut rows = Vec::new();
    for x in 0..p {
        let (a, b) = (li.off[x] as usize, li.off[x + 1] as usize);
        let d = b - a;
        if d <= l || !li.edge_of[a..b].iter().any(|&e| e >= 0) {
            continue;
        }
        let total = binomial(d as u64, l as u64).ok_or(PcError::TooManySets { level: l, n: d })?;
        rows.push(RowWork { row: x as u32, total, next: 0 });
    }
    Ok(rows)
}

/// One launch: task w covers ranks task_t0[w] .. task_t0[w] + (prefix[w + 1] - prefix[w]) of row
/// task_row[w]; thread g of the launch takes the task with prefix[w] <= g < prefix[w + 1].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Round {
    pub task_row: Vec<u32>,
    pub task_t0: Vec<u64>,
    pub task_prefix: Vec<u64>,
}

impl Round {
    pub fn threads(&self) -> u64 {
        *self.task_prefix.last().unwrap_or(&0)
    }
    pub fn n_tasks(&self) -> usize {
        self.task_row.len()
    }
}

/// Plans the next round over the rows still alive (`live[w]` for `rows[w]`): each gets an equal
/// share of `budget` threads (at least `min_share`), in row order, and its cursor moves on. Rows
/// appear in ascending order, so a launch runs side-0 tests (row i of edge {i < j}) no later than
/// the side-1 tests of the same edge.
pub fn plan_round(rows: &mut [RowWork], live: &[bool], budget: u64, min_share: u64) -> Round {
    let n_live = rows.iter().zip(live).filter(|(r, &a)| a && r.next < r.total).count() as u64;
    let mut round = Round::default();
    if n_live == 0 {
        return round;
    }
    let share = (budget / n_live).max(min_share);
    let mut acc = 0u64;
    round.task_prefix.push(0);
    for (r, &alive) in rows.iter_mut().zip(live) {
        if !alive || r.next >= r.total {
            continue;
        }
        let take = (r.total - r.next).min(share);
        round.task_row.push(r.row);
        round.task_t0.push(r.next);
        acc += take;
        round.task_prefix.push(acc);
        r.next += take;
    }
    round
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::combinations::{next_subset, unrank};
    use crate::graph::Adjacency;
    use crate::plan::{plan_level, Order};

    #[test]
    fn complement_rank_matches_pc_core_exhaustively() {
        for n in 1..=12u32 {
            for l in 0..=n {
                let total = binomial(n as u64, l as u64).unwrap();
                let mut s: Vec<u32> = (0..l).collect();
                for r in 0..total {
                    assert_eq!(rank_by_complement(n, &s), r, "n={n} l={l}");
                    if r + 1 < total {
                        next_subset(n, &mut s);
                    }
                }
            }
        }
    }

    #[test]
    fn shifted_ranks_match_reranking_exhaustively() {
        // every row length d <= 11, level 1..=d-1, every set of the row, every y outside it
        for d in 2..=11u32 {
            for l in 1..d as usize {
                let table = binomial_table(d as usize, l);
                let total = binomial(d as u64, l as u64).unwrap();
                let mut pos = vec![0u32; l];
                for t in 0..total {
                    unrank(d, t, &mut pos);
                    let got = shifted_ranks(d, &pos, &table, l);
                    let want: Vec<(u32, u64)> = (0..d)
                        .filter(|q| !pos.contains(q))
                        .map(|q| (q, shifted_rank_reference(d, &pos, q)))
                        .collect();
                    assert_eq!(got, want, "d={d} l={l} t={t} pos={pos:?}");
                    // and back: the re-evaluation kernel unranks in the shorter list and shifts
                    for &(q, r) in &got {
                        let mut back = vec![0u32; l];
                        unrank(d - 1, r, &mut back);
                        let unshifted: Vec<u32> = back.iter().map(|&v| if v >= q { v + 1 } else { v }).collect();
                        assert_eq!(unshifted, pos);
                    }
                }
            }
        }
    }

    #[test]
    fn shifted_ranks_large_rows() {
        // a few big rows: ranks near 2^40 must come out exact
        let d = 300u32;
        let l = 6usize;
        let table = binomial_table(d as usize, l);
        for pos in [vec![0, 1, 2, 3, 4, 5], vec![3, 50, 51, 200, 298, 299], vec![290, 291, 292, 293, 294, 295]] {
            for (q, r) in shifted_ranks(d, &pos, &table, l) {
                assert_eq!(r, shifted_rank_reference(d, &pos, q));
            }
        }
    }

    fn graph(p: usize, edges: &[(usize, usize)]) -> Adjacency {
        let mut a = Adjacency::empty(p);
        for &(i, j) in edges {
            a.add_edge(i, j);
        }
        a
    }

    #[test]
    fn stable_plans_pass_and_stable_fast_plans_fail() {
        let a = graph(6, &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 4), (2, 3), (3, 5), (4, 5), (1, 3)]);
        let none = Adjacency::empty(6);
        for l in 0..4 {
            let plan = plan_level(Order::Stable, l, &a, &none, 0.05, 1.0).unwrap();
            check_stable_plan(&plan).unwrap();
        }
        for l in 0..2 {
            let plan = plan_level(Order::StableFast, l, &a, &none, 0.05, 1.0).unwrap();
            match check_stable_plan(&plan) {
                Err(PcError::Cuda(m)) => assert!(m.contains("stable.fast")),
                other => panic!("level {l}: {other:?}"),
            }
        }
    }

    #[test]
    fn edge_lookup_points_at_the_plan_edges() {
        let a = graph(6, &[(0, 1), (0, 2), (0, 3), (1, 2), (1, 4), (2, 3), (3, 5), (4, 5)]);
        let mut fixed = Adjacency::empty(6);
        fixed.add_edge(4, 5);
        let plan = plan_level(Order::Stable, 2, &a, &fixed, 0.05, 1.0).unwrap();
        let li = level_inputs(&plan, true).unwrap();
        for x in 0..6usize {
            for q in li.off[x] as usize..li.off[x + 1] as usize {
                let y = li.cols[q];
                let want = plan.edges.iter().position(|e| {
                    (e.i as usize == x && e.j == y && e.sides[0].is_some())
                        || (e.j as usize == x && e.i == y && e.sides[1].is_some())
                });
                assert_eq!(li.edge_of[q], want.map_or(-1, |k| k as i32), "x={x} y={y}");
            }
        }
        // the fixed edge 4-5 has no entry, nor do sides shorter than the level
        let k = li.off[4] as usize + li.cols[li.off[4] as usize..li.off[5] as usize].iter().position(|&c| c == 5).unwrap();
        assert_eq!(li.edge_of[k], -1);
        for (k, e) in plan.edges.iter().enumerate() {
            assert_eq!(plan.rows.row(e.i)[li.qi[k] as usize], e.j);
            assert_eq!(plan.rows.row(e.j)[li.qj[k] as usize], e.i);
        }
        let rows = work_rows(&li, 2).unwrap();
        assert!(rows.iter().all(|r| plan.rows.row(r.row).len() > 2));
    }

    #[test]
    fn level0_rows_enumerate_the_plan_edges() {
        let a = graph(7, &[(0, 1), (0, 2), (0, 6), (1, 2), (1, 4), (2, 3), (3, 5), (4, 5), (5, 6)]);
        for fixed in [Adjacency::empty(7), graph(7, &[(1, 4), (0, 6)])] {
            let plan = plan_level(Order::Stable, 0, &a, &fixed, 0.05, 1.0).unwrap();
            let r = level0_rows(&plan);
            assert_eq!(r.cols.is_some(), fixed.n_edges() > 0);
            let cols = r.cols.as_deref().unwrap_or(&plan.rows.cols);
            let mut k = 0usize;
            for i in 0..7usize {
                for e in r.ebase[i]..r.ebase[i + 1] {
                    let j = cols[(r.off[i] + r.upper[i] as u64 + (e - r.ebase[i])) as usize];
                    assert_eq!((plan.edges[e as usize].i, plan.edges[e as usize].j), (i as u32, j));
                    k += 1;
                }
            }
            assert_eq!(k, plan.edges.len());
        }
    }

    #[test]
    fn rounds_cover_every_rank_once() {
        let mut rows = vec![
            RowWork { row: 0, total: 10, next: 0 },
            RowWork { row: 3, total: 1000, next: 0 },
            RowWork { row: 7, total: 1, next: 0 },
            RowWork { row: 9, total: 77, next: 0 },
        ];
        let live = vec![true, true, false, true];
        let mut seen = vec![vec![false; 1000]; 4];
        let mut n_rounds = 0;
        loop {
            let r = plan_round(&mut rows, &live, 64, 8);
            if r.n_tasks() == 0 {
                break;
            }
            n_rounds += 1;
            for w in 0..r.n_tasks() {
                let idx = rows.iter().position(|x| x.row == r.task_row[w]).unwrap();
                for t in r.task_t0[w]..r.task_t0[w] + (r.task_prefix[w + 1] - r.task_prefix[w]) {
                    assert!(!seen[idx][t as usize]);
                    seen[idx][t as usize] = true;
                }
            }
            assert!(r.task_row.windows(2).all(|w| w[0] < w[1]));
        }
        assert!(n_rounds > 1);
        for (idx, r) in rows.iter().enumerate() {
            let covered = seen[idx].iter().filter(|&&s| s).count() as u64;
            assert_eq!(covered, if live[idx] { r.total } else { 0 });
        }
    }
}
