//! Comparing two skeleton results, and a lock-step backend that runs the CPU and the GPU on the
//! same plan level by level to tell decisions that flip at p ~ alpha (ties) from real mismatches.

use std::collections::HashMap;

use pc_core::backend::{Backend, Watch};
use pc_core::citest::{CiTest, GaussScratch, GaussTest};
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::skeleton::SkeletonResult;
use pc_core::PcError;

/// Relative tolerance on pMax; values below `PMAX_FLOOR` count as equal (the far tail of the
/// normal law, where exp() differs by an ulp between libraries, or subnormals).
pub const PMAX_REL: f64 = 1e-9;
pub const PMAX_FLOOR: f64 = 1e-300;

pub fn close(a: f64, b: f64, rel: f64) -> bool {
    a == b || (a.is_nan() && b.is_nan()) || (a.abs() <= PMAX_FLOOR && b.abs() <= PMAX_FLOOR) || (a - b).abs() <= rel * a.abs().max(b.abs())
}

#[derive(Clone, Debug, Default)]
pub struct Diff {
    pub graph: usize,
    pub sepsets: usize,
    pub pmax: usize,
    pub pmax_max_rel: f64,
    pub edgetests: bool,
    pub max_ord: bool,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.graph == 0 && self.sepsets == 0 && self.pmax == 0 && !self.edgetests && !self.max_ord
    }
}

impl std::fmt::Display for Diff {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "graph {} entries, sepsets {}, pMax {} (max rel {:.2e}), n.edgetests {}, max.ord {}",
            self.graph,
            self.sepsets,
            self.pmax,
            self.pmax_max_rel,
            if self.edgetests { "differ" } else { "same" },
            if self.max_ord { "differs" } else { "same" }
        )
    }
}

fn sepset_map(r: &SkeletonResult) -> HashMap<(u32, u32), (u32, u32, Vec<u32>)> {
    r.all_sepsets().into_iter().map(|s| ((s.x.min(s.y), s.x.max(s.y)), (s.x, s.y, s.set))).collect()
}

/// What differs between `a` and `b` (pMax to `PMAX_REL`).
pub fn compare(a: &SkeletonResult, b: &SkeletonResult) -> Diff {
    let mut d = Diff::default();
    let p = a.graph.p();
    for i in 0..p {
        for j in 0..p {
            if i != j && a.graph.has(i, j) != b.graph.has(i, j) {
                d.graph += 1;
            }
        }
    }
    let (sa, sb) = (sepset_map(a), sepset_map(b));
    d.sepsets = sa.iter().filter(|(k, v)| sb.get(k) != Some(v)).count() + sb.keys().filter(|k| !sa.contains_key(k)).count();
    for (x, y) in a.pmax.iter().zip(&b.pmax) {
        if !close(*x, *y, PMAX_REL) {
            d.pmax += 1;
        }
        if x.is_finite() && y.is_finite() && x != y {
            let rel = (x - y).abs() / x.abs().max(y.abs());
            if rel > d.pmax_max_rel && !(x.abs() <= PMAX_FLOOR && y.abs() <= PMAX_FLOOR) {
                d.pmax_max_rel = rel;
            }
        }
    }
    d.edgetests = a.n_edgetests != b.n_edgetests;
    d.max_ord = a.max_ord != b.max_ord;
    d
}

/// Bit-for-bit equality (for run-to-run determinism).
pub fn identical(a: &SkeletonResult, b: &SkeletonResult) -> bool {
    a.graph == b.graph
        && a.sepsets == b.sepsets
        && a.sep0 == b.sep0
        && a.pmax.len() == b.pmax.len()
        && a.pmax.iter().zip(&b.pmax).all(|(x, y)| x.to_bits() == y.to_bits())
        && a.n_edgetests == b.n_edgetests
        && a.max_ord == b.max_ord
}

/// How a case's GPU runs compare with its CPU run: the runs must be bit-identical to each other,
/// then the first one is compared with the CPU's.
pub enum Verdict {
    Nondeterministic,
    Identical,
    Differ(Diff),
}

/// The verdict and the largest relative pMax difference between the CPU run and the first GPU run.
pub fn verdict(cpu: &SkeletonResult, gpu_runs: &[SkeletonResult]) -> (Verdict, f64) {
    let d = compare(cpu, &gpu_runs[0]);
    let max_rel = d.pmax_max_rel;
    let v = if !gpu_runs.iter().skip(1).all(|r| identical(&gpu_runs[0], r)) {
        Verdict::Nondeterministic
    } else if d.is_empty() {
        Verdict::Identical
    } else {
        Verdict::Differ(d)
    };
    (v, max_rel)
}

/// One edge on which the two backends decided differently at some level.
#[derive(Clone, Debug)]
pub struct Flip {
    pub level: usize,
    pub i: u32,
    pub j: u32,
    /// The CPU's p-value of the earlier of the two backends' winning tests (the test one backend
    /// counts as a success and the other as a failure), and its distance to alpha.
    pub p: f64,
    pub rel_to_alpha: f64,
    pub tie: bool,
}

/// Runs `a` (the reference, whose outcomes drive the level loop) and `b` on every plan and records
/// where they differ.
pub struct Lockstep<'a> {
    pub a: &'a mut dyn Backend,
    pub b: &'a mut dyn Backend,
    pub test: &'a GaussTest,
    pub tie_tol: f64,
    pub flips: Vec<Flip>,
    /// Edges with the same decision whose level p-value differs beyond PMAX_REL: (level, i, j, a, b).
    pub p_diffs: Vec<(usize, u32, u32, f64, f64)>,
}

fn level_p(o: &EdgeOutcome, na: f64) -> f64 {
    match o.best {
        Some(_) => o.max_fail.max(pc_core::plan::na_map(o.p_best, na)),
        None => o.max_fail,
    }
}

impl Backend for Lockstep<'_> {
    fn name(&self) -> String {
        format!("lockstep({}, {})", self.a.name(), self.b.name())
    }

    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>, PcError> {
        let ra = self.a.run_level(plan, watch)?;
        let rb = self.b.run_level(plan, watch)?;
        let mut sc = GaussScratch::default();
        for ((e, oa), ob) in plan.edges.iter().zip(&ra).zip(&rb) {
            if oa.best != ob.best {
                let k = match (oa.best, ob.best) {
                    (Some(x), Some(y)) => x.min(y),
                    (Some(x), None) | (None, Some(x)) => x,
                    (None, None) => unreachable!(),
                };
                let side = e.sides[k.0 as usize].expect("side of a reported test");
                let s = plan.sepset(e, k.0, k.1);
                let p = self.test.p_value(&mut sc, side.x, side.y, &s)?;
                let rel = (p - plan.alpha).abs() / plan.alpha;
                self.flips.push(Flip { level: plan.level, i: e.i, j: e.j, p, rel_to_alpha: rel, tie: rel <= self.tie_tol });
            } else {
                let (pa, pb) = (level_p(oa, plan.na_value), level_p(ob, plan.na_value));
                if !close(pa, pb, PMAX_REL) {
                    self.p_diffs.push((plan.level, e.i, e.j, pa, pb));
                }
            }
        }
        Ok(ra)
    }
}
