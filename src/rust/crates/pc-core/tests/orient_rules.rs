//! Property tests of orientation: `orient_relaxed` and `check_triples` against literal,
//! dense-matrix transcriptions of pcalg's `udag2pdagRelaxed()` and `pc.cons.intern()` /
//! `checkTriple()` loops, on random skeletons with random sepsets and unfaithful triples (so
//! conflicts and every rule fire). The transcriptions share no code with the core.

mod common;

use std::sync::Mutex;

use pc_core::orient::{check_triples, orient_relaxed, unshielded_pairs, PairSepsets, Pdag, ParallelBatch, SequentialBatch, TripleRule, Unfaithful, UnfVersion};
use pc_core::{CiTest, NullWatch, PcError, Watch};
use proptest::prelude::*;

struct Dense {
    p: usize,
    m: Vec<u8>,
}

impl Dense {
    fn at(&self, i: usize, j: usize) -> u8 {
        self.m[i * self.p + j]
    }
    fn set(&mut self, i: usize, j: usize, v: u8) {
        self.m[i * self.p + j] = v;
    }
    /// `pdag[i, j] <- ij; pdag[j, i] <- ji`
    fn set2(&mut self, i: usize, j: usize, ij: u8, ji: u8) {
        self.set(i, j, ij);
        self.set(j, i, ji);
    }
}

/// Sepsets as pcalg holds them: `sep[x * p + z]` is `sepset[[x]][[z]]` (None = NULL).
type Sep = Vec<Option<Vec<u32>>>;

fn in_unf(unf: &[(usize, usize, usize)], x: usize, y: usize, z: usize) -> bool {
    unf.iter().any(|&t| t == (x, y, z)) || unf.iter().any(|&t| t == (z, y, x))
}

fn sep_has(sep: &Sep, p: usize, x: usize, z: usize, y: usize) -> bool {
    sep[x * p + z].as_ref().is_some_and(|s| s.contains(&(y as u32)))
}

/// `udag2pdagRelaxed()`, line by line (0-based; `ind` loops column-major like `which(arr.ind)`).
fn reference_relaxed(g: &Dense, sep: &Sep, unf: &[(usize, usize, usize)], solve: bool) -> Dense {
    let p = g.p;
    let mut pdag = Dense { p, m: g.m.clone() };
    let orient_conflict = |pdag: &mut Dense, x: usize, y: usize, z: usize| {
        for e in [x, z] {
            if pdag.at(e, y) == 1 {
                pdag.set(y, e, 0);
            } else {
                pdag.set2(e, y, 2, 2);
            }
        }
    };
    for y in 0..p {
        for x in 0..p {
            if g.at(x, y) != 1 {
                continue;
            }
            for z in (0..p).filter(|&z| g.at(y, z) == 1 && z != x) {
                if g.at(x, z) == 0 && !(sep_has(sep, p, x, z, y) || sep_has(sep, p, z, x, y)) && (unf.is_empty() || !in_unf(unf, x, y, z)) {
                    if !solve {
                        pdag.set2(x, y, 1, 0);
                        pdag.set2(z, y, 1, 0);
                    } else {
                        orient_conflict(&mut pdag, x, y, z);
                    }
                }
            }
        }
    }
    let col_major = |m: &Dense, f: &dyn Fn(&Dense, usize, usize) -> bool| -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for b in 0..p {
            for a in 0..p {
                if f(m, a, b) {
                    v.push((a, b));
                }
            }
        }
        v
    };
    loop {
        let old = pdag.m.clone();
        // rule 1
        {
            let mut search = Dense { p, m: pdag.m.clone() };
            let ind = col_major(&pdag, &|m, a, b| m.at(a, b) == 1 && m.at(b, a) == 0);
            for (a, b) in ind {
                let is_c: Vec<usize> = (0..p).filter(|&c| search.at(b, c) == 1 && search.at(c, b) == 1 && search.at(a, c) == 0 && search.at(c, a) == 0).collect();
                for c in is_c {
                    if !solve || (pdag.at(b, c) == 1 && pdag.at(c, b) == 1) {
                        if !in_unf(unf, a, b, c) {
                            pdag.set2(b, c, 1, 0);
                        }
                    } else if pdag.at(b, c) == 0 && pdag.at(c, b) == 1 && !in_unf(unf, a, b, c) {
                        pdag.set2(b, c, 2, 2);
                    }
                }
                if !solve {
                    search.m.clone_from(&pdag.m);
                }
            }
        }
        // rule 2
        {
            let mut search = Dense { p, m: pdag.m.clone() };
            let ind = col_major(&search, &|m, a, b| m.at(a, b) == 1 && m.at(b, a) == 1);
            for (a, b) in ind {
                let is_c: Vec<usize> = (0..p).filter(|&c| search.at(a, c) == 1 && search.at(c, a) == 0 && search.at(c, b) == 1 && search.at(b, c) == 0).collect();
                for _c in is_c {
                    if !solve || (pdag.at(a, b) == 1 && pdag.at(b, a) == 1) {
                        pdag.set2(a, b, 1, 0);
                    } else if pdag.at(a, b) == 0 && pdag.at(b, a) == 1 {
                        pdag.set2(a, b, 2, 2);
                    }
                }
                if !solve {
                    search.m.clone_from(&pdag.m);
                }
            }
        }
        // rule 3
        {
            let mut search = Dense { p, m: pdag.m.clone() };
            let ind = col_major(&search, &|m, a, b| m.at(a, b) == 1 && m.at(b, a) == 1);
            for (a, b) in ind {
                let c: Vec<usize> = (0..p).filter(|&c| search.at(a, c) == 1 && search.at(c, a) == 1 && search.at(c, b) == 1 && search.at(b, c) == 0).collect();
                if c.len() < 2 {
                    continue;
                }
                'pairs: for i in 0..c.len() {
                    for j in i + 1..c.len() {
                        let (c1, c2) = (c[i], c[j]);
                        if search.at(c1, c2) == 0 && search.at(c2, c1) == 0 && !in_unf(unf, c1, a, c2) {
                            if !solve || (pdag.at(a, b) == 1 && pdag.at(b, a) == 1) {
                                pdag.set2(a, b, 1, 0);
                                if !solve {
                                    search.m.clone_from(&pdag.m);
                                }
                                break 'pairs;
                            } else if pdag.at(a, b) == 0 && pdag.at(b, a) == 1 {
                                pdag.set2(a, b, 2, 2);
                                break 'pairs;
                            }
                        }
                    }
                }
            }
        }
        if pdag.m == old {
            break;
        }
    }
    pdag
}

/// A deterministic fake test (p-values from a hash of x, y, S), recording its calls.
struct HashTest {
    seed: u64,
    log: Option<Mutex<Vec<(u32, u32, Vec<u32>)>>>,
}

impl CiTest for HashTest {
    type Scratch = ();
    fn p_value(&self, _: &mut (), x: u32, y: u32, s: &[u32]) -> pc_core::error::Result<f64> {
        if let Some(l) = &self.log {
            l.lock().unwrap().push((x, y, s.to_vec()));
        }
        let h = common::test_hash(self.seed, x, y, s);
        Ok((h >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// `pc.cons.intern(version.unf = c(2, 1))` with `checkTriple()` inlined, line by line. Returns
/// the unfaithful triples (as `unfTripl` lists them) and the calls made, in order.
/// `version1`: pcalg's `version.unf[1]` (1 or 2).
fn reference_cons(g: &Dense, sep: &mut Sep, t: &HashTest, alpha: f64, maj: bool, version1: u8) -> Vec<(usize, usize, usize)> {
    let p = g.p;
    let mut unf = Vec::new();
    let mut triples = Vec::new();
    for b in 0..p {
        for a in 0..p {
            if g.at(a, b) != 1 {
                continue;
            }
            for c in (0..p).filter(|&c| g.at(b, c) == 1 && c != a && g.at(a, c) == 0) {
                triples.push((a, b, c));
            }
        }
    }
    triples.retain(|&(a, _, c)| a <= c);
    for (a, b, c) in triples {
        let nbrs = |v: usize| (0..p).filter(|&u| g.at(u, v) != 0).map(|u| u as u32).collect::<Vec<u32>>();
        let mut sep_a = sep[a * p + c].clone().unwrap_or_default();
        let mut sep_c = sep[c * p + a].clone().unwrap_or_default();
        let mut tmp: Vec<bool> = Vec::new();
        let mut nr_indep = 0;
        let mut version = 0;
        for nb in [nbrs(a), nbrs(c)] {
            for i in 0..(1u64 << nb.len()) {
                let s: Vec<u32> = (0..nb.len()).filter(|k| i >> k & 1 == 1).map(|k| nb[k]).collect();
                let pval = t.p_value(&mut (), a as u32, c as u32, &s).unwrap();
                if pval >= alpha {
                    nr_indep += 1;
                    tmp.push(s.contains(&(b as u32)));
                    version = 1;
                }
            }
        }
        if version1 == 2 && nr_indep == 0 {
            version = 2;
        }
        if tmp.is_empty() {
            tmp.push(false);
        }
        let frac = tmp.iter().filter(|&&v| v).count() as f64 / tmp.len() as f64;
        let b32 = b as u32;
        let add = |s: &mut Vec<u32>| {
            if !s.contains(&b32) {
                s.push(b32)
            }
        };
        let remove = |s: &mut Vec<u32>| {
            let mut v = Vec::new();
            for &x in s.iter() {
                if x != b32 && !v.contains(&x) {
                    v.push(x);
                }
            }
            *s = v;
        };
        let res = if tmp.iter().all(|&v| v) {
            add(&mut sep_a);
            add(&mut sep_c);
            2
        } else if tmp.iter().all(|&v| !v) {
            remove(&mut sep_a);
            remove(&mut sep_c);
            1
        } else if !maj {
            3
        } else if frac < 0.5 {
            remove(&mut sep_a);
            remove(&mut sep_c);
            1
        } else if frac > 0.5 {
            add(&mut sep_a);
            add(&mut sep_c);
            2
        } else {
            3
        };
        if res == 3 || (version1 == 2 && version == 2 && res != 3) {
            unf.push((a, b, c));
        }
        sep[a * p + c] = Some(sep_a);
        sep[c * p + a] = Some(sep_c);
    }
    unf
}

#[derive(Debug, Clone)]
struct Case {
    p: usize,
    edges: Vec<(u32, u32)>,
    sep: Sep,
    unf_pick: Vec<u16>,
    solve: bool,
}

/// Random skeleton (about `deg` neighbours per vertex) with random sepsets: NULL, empty, or a
/// random set that holds each common neighbour with probability 1/2, so colliders, their
/// conflicts and every rule fire.
fn case(max_p: usize, max_deg: usize) -> impl Strategy<Value = Case> {
    (3..=max_p, 1..=max_deg, any::<u64>(), any::<bool>(), proptest::collection::vec(any::<u16>(), 0..6)).prop_map(move |(p, deg, seed, solve, unf_pick)| {
        let mut s = seed | 1;
        let mut rnd = move || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        let prob = (deg as f64 / (p - 1) as f64).min(1.0);
        let mut edges = Vec::new();
        for i in 0..p {
            for j in i + 1..p {
                if (rnd() % 10_000) as f64 / 10_000.0 < prob {
                    edges.push((i as u32, j as u32));
                }
            }
        }
        let mut sep: Sep = vec![None; p * p];
        for x in 0..p {
            for z in 0..p {
                if x == z {
                    continue;
                }
                sep[x * p + z] = match rnd() % 4 {
                    0 => None,
                    1 => Some(vec![]),
                    _ => Some((0..p as u32).filter(|&v| v as usize != x && v as usize != z && rnd() % 2 == 0).collect()),
                };
            }
        }
        Case { p, edges, sep, unf_pick, solve }
    })
}

fn dense(c: &Case) -> Dense {
    let mut g = Dense { p: c.p, m: vec![0; c.p * c.p] };
    for &(i, j) in &c.edges {
        g.set(i as usize, j as usize, 1);
        g.set(j as usize, i as usize, 1);
    }
    g
}

fn pair_sepsets(c: &Case, g: &Pdag) -> PairSepsets {
    let mut s = PairSepsets::new();
    for (x, z) in unshielded_pairs(g) {
        for (a, b) in [(x, z), (z, x)] {
            if let Some(v) = &c.sep[a as usize * c.p + b as usize] {
                s.insert(a, b, v);
            }
        }
    }
    s
}

fn to_dense(g: &Pdag) -> Vec<u8> {
    let p = g.p();
    let mut m = vec![0; p * p];
    for (i, j, v) in g.entries() {
        m[i as usize * p + j as usize] = v;
    }
    m
}

/// The progress the triple checks report: (tests done, all their tests), stopping at `stop_at`.
#[derive(Default)]
struct Ticks {
    seen: Vec<(u64, u64)>,
    stop_at: Option<usize>,
}

impl Watch for Ticks {
    fn tick(&mut self, done: u64, total: u64) -> bool {
        self.seen.push((done, total));
        self.stop_at != Some(self.seen.len())
    }
}

impl Ticks {
    /// From 0 to every test run, never backwards, the total never changing.
    fn check(&self, tests: u64) {
        assert_eq!(self.seen.first(), Some(&(0, tests)));
        assert_eq!(self.seen.last(), Some(&(tests, tests)));
        assert!(self.seen.windows(2).all(|w| w[0].0 <= w[1].0 && w[1].1 == tests), "{:?}", self.seen);
    }
}

#[test]
fn a_watch_stops_the_triple_checks() {
    // 0 - 1 - 2 - 3: two unshielded triples
    let g = Pdag::from_edges(4, &[(0, 1), (1, 2), (2, 3)]).unwrap();
    let t = HashTest { seed: 1, log: None };
    let pl = pool();
    for stop_at in 1..=2 {
        let mut ticks = Ticks { stop_at: Some(stop_at), ..Ticks::default() };
        let r = check_triples(&g, &mut PairSepsets::new(), 0.5, TripleRule::Conservative, UnfVersion::AmbiguousOrDependent, &mut ParallelBatch::new(&t, &pl), &mut ticks);
        assert!(matches!(r, Err(PcError::Interrupted)), "stopped at tick {stop_at}");
    }
    // deg 1 + deg 2 ends: 2 + 4 tests per triple
    let mut ticks = Ticks::default();
    check_triples(&g, &mut PairSepsets::new(), 0.5, TripleRule::Conservative, UnfVersion::AmbiguousOrDependent, &mut SequentialBatch::new(&t), &mut ticks).unwrap();
    ticks.check(12);
}

fn pool() -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap()
}

/// Some of the unshielded triples, as pcalg's `unfVect` would list them (either end first).
fn pick_unf(c: &Case, g: &Pdag) -> Vec<(usize, usize, usize)> {
    let all = pc_core::orient::triples::unshielded_triples(g);
    if all.is_empty() {
        return vec![];
    }
    c.unf_pick
        .iter()
        .map(|&k| {
            let (a, b, cc) = all[k as usize % all.len()];
            if k % 2 == 0 {
                (a as usize, b as usize, cc as usize)
            } else {
                (cc as usize, b as usize, a as usize)
            }
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn relaxed_matches_pcalg(c in case(24, 6), with_unf in any::<bool>()) {
        let mut g = Pdag::from_edges(c.p, &c.edges).unwrap();
        let sep = pair_sepsets(&c, &g);
        let unf_list = if with_unf { pick_unf(&c, &g) } else { vec![] };
        let mut unf = Unfaithful::new();
        for &(x, y, z) in &unf_list {
            unf.insert(x as u32, y as u32, z as u32);
        }
        let want = reference_relaxed(&dense(&c), &c.sep, &unf_list, c.solve);
        orient_relaxed(&mut g, &sep, &unf, c.solve, Some(&pool()), &mut NullWatch).unwrap();
        prop_assert_eq!(to_dense(&g), want.m);
    }

    #[test]
    fn conservative_and_majority_match_pcalg(c in case(14, 4), maj in any::<bool>(), alpha in 0.05f64..0.95, seed in any::<u64>(), fci_pdsep in any::<bool>()) {
        let rule = if maj { TripleRule::Majority } else { TripleRule::Conservative };
        // version.unf = c(1, 1) as fci() passes after Possible-D-SEP, else c(2, 1)
        let (version1, version) = if fci_pdsep { (1, UnfVersion::Ambiguous) } else { (2, UnfVersion::AmbiguousOrDependent) };
        let gd = dense(&c);
        let mut ref_sep = c.sep.clone();
        let t_ref = HashTest { seed, log: Some(Mutex::new(Vec::new())) };
        let ref_unf = reference_cons(&gd, &mut ref_sep, &t_ref, alpha, maj, version1);
        let want = reference_relaxed(&gd, &ref_sep, &ref_unf, c.solve);

        // native: deduplicated, parallel
        let mut g = Pdag::from_edges(c.p, &c.edges).unwrap();
        let mut sep = pair_sepsets(&c, &g);
        let t = HashTest { seed, log: None };
        let pl = pool();
        let mut ticks = Ticks::default();
        let out = check_triples(&g, &mut sep, alpha, rule, version, &mut ParallelBatch::new(&t, &pl), &mut ticks).unwrap();
        ticks.check(out.tests);
        for &(x, z) in &unshielded_pairs(&g) {
            for (a, b) in [(x, z), (z, x)] {
                let want_s = ref_sep[a as usize * c.p + b as usize].clone().unwrap_or_default();
                prop_assert_eq!(sep.get(a, b), &want_s[..], "sepset[[{}]][[{}]]", a + 1, b + 1);
            }
        }
        for &(a, b, cc) in &ref_unf {
            prop_assert!(out.unfaithful.contains(a as u32, b as u32, cc as u32));
        }
        prop_assert_eq!(out.unfaithful.len(), ref_unf.len());
        // unfTripl's order
        let listed: Vec<(usize, usize, usize)> = out.listed.iter().map(|&(a, b, cc)| (a as usize, b as usize, cc as usize)).collect();
        prop_assert_eq!(&listed, &ref_unf);
        orient_relaxed(&mut g, &sep, &out.unfaithful, c.solve, if c.p % 2 == 0 { Some(&pl) } else { None }, &mut NullWatch).unwrap();
        prop_assert_eq!(to_dense(&g), want.m);

        // R-callback path: every call, in pcalg's order
        let g2 = Pdag::from_edges(c.p, &c.edges).unwrap();
        let mut sep2 = pair_sepsets(&c, &g2);
        let t2 = HashTest { seed, log: Some(Mutex::new(Vec::new())) };
        let mut ticks = Ticks::default();
        let out2 = check_triples(&g2, &mut sep2, alpha, rule, version, &mut SequentialBatch::new(&t2), &mut ticks).unwrap();
        ticks.check(out2.tests);
        prop_assert_eq!(t2.log.unwrap().into_inner().unwrap(), t_ref.log.unwrap().into_inner().unwrap());
        prop_assert_eq!(out2.unfaithful.to_sorted_vec(), out.unfaithful.to_sorted_vec());
        prop_assert_eq!(out2.listed, out.listed);
    }
}

#[test]
fn larger_graphs_match_pcalg() {
    // a few hundred vertices with hubs: many rounds of the rules, long neighbour lists
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig { cases: 6, ..ProptestConfig::default() });
    runner
        .run(&(case(160, 8), any::<bool>()), |(c, with_unf)| {
            let mut g = Pdag::from_edges(c.p, &c.edges).unwrap();
            let sep = pair_sepsets(&c, &g);
            let unf_list = if with_unf { pick_unf(&c, &g) } else { vec![] };
            let mut unf = Unfaithful::new();
            for &(x, y, z) in &unf_list {
                unf.insert(x as u32, y as u32, z as u32);
            }
            let want = reference_relaxed(&dense(&c), &c.sep, &unf_list, c.solve);
            orient_relaxed(&mut g, &sep, &unf, c.solve, Some(&pool()), &mut NullWatch).unwrap();
            prop_assert_eq!(to_dense(&g), want.m);
            Ok(())
        })
        .unwrap();
}
