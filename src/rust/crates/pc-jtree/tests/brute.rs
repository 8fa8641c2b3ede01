//! The engine against brute-force enumeration of the joint distribution on small random networks
//! (every triangulation, forests, hard, likelihood and impossible evidence, batches split in
//! chunks), and the triangulation `auto` chooses.

use pc_jtree::engine::{marginals_cpu, marginals_cpu_into, marginals_cpu_watched, mpe_cpu, mpe_cpu_watched, Marginals, Mpe, Options};
use pc_jtree::{Evidence, Heuristic, JtError, Limits, Network, Plan};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn unif(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn random_network(rng: &mut Rng, n: usize, max_par: usize, zeros: bool) -> Network {
    let names: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    let states: Vec<Vec<String>> = (0..n).map(|_| (0..2 + rng.below(2)).map(|s| format!("s{s}")).collect()).collect();
    // a random order; parents among earlier ones
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, rng.below(i + 1));
    }
    let mut parents = vec![Vec::new(); n];
    for i in 0..n {
        let v = perm[i];
        for &u in perm[..i].iter() {
            if parents[v].len() < max_par && rng.below(3) == 0 {
                parents[v].push(u);
            }
        }
    }
    let cpts = (0..n)
        .map(|v| {
            let k = states[v].len();
            let rows: usize = parents[v].iter().map(|&p| states[p].len()).product();
            let mut t = Vec::new();
            for _ in 0..rows {
                let mut col: Vec<f64> = (0..k).map(|_| if zeros && rng.below(5) == 0 { 0.0 } else { 0.05 + rng.unif() }).collect();
                if col.iter().all(|&x| x == 0.0) {
                    col[0] = 1.0;
                }
                let s: f64 = col.iter().sum();
                t.extend(col.iter().map(|x| x / s));
            }
            t
        })
        .collect();
    Network::new(names, states, parents, cpts).unwrap()
}

fn for_each_assignment(card: &[usize], mut f: impl FnMut(&[usize])) {
    let mut x = vec![0usize; card.len()];
    loop {
        f(&x);
        let mut i = 0;
        loop {
            if i == card.len() {
                return;
            }
            x[i] += 1;
            if x[i] < card[i] {
                break;
            }
            x[i] = 0;
            i += 1;
        }
    }
}

fn weight(net: &Network, ev: &Evidence, row: usize, x: &[usize]) -> f64 {
    let n = net.len();
    let mut p = 1.0;
    for v in 0..n {
        p *= net.cpt_value(v, x);
        let h = ev.hard[row * n + v];
        if h >= 0 && h as usize != x[v] {
            p = 0.0;
        }
        if ev.soft_col[v] >= 0 {
            p *= ev.soft[row * ev.soft_width + ev.soft_col[v] as usize + x[v]];
        }
    }
    p
}

fn random_evidence(rng: &mut Rng, net: &Network, rows: usize, soft: bool) -> Evidence {
    let n = net.len();
    let card = net.cards();
    let mut ev = Evidence::empty(n, rows);
    for r in 0..rows {
        for v in 0..n {
            if rng.below(3) == 0 {
                ev.hard[r * n + v] = rng.below(card[v]) as i32;
            }
        }
    }
    if soft {
        let mut w = 0;
        for v in 0..n {
            if rng.below(3) == 0 {
                ev.soft_col[v] = w as i32;
                w += card[v];
            }
        }
        ev.soft_width = w;
        ev.soft = (0..rows * w).map(|_| if rng.below(4) == 0 { 1.0 } else { rng.unif() }).collect();
    }
    ev
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1e-300)
}

#[test]
fn marginals_and_mpe_match_brute_force() {
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let mut impossible = 0;
    let mut ties_checked = 0;
    for case in 0..120 {
        let n = 2 + rng.below(8);
        let mp_ = 1 + rng.below(3);
        let net = random_network(&mut rng, n, mp_, case % 3 == 0);
        let h = [Heuristic::MinFill, Heuristic::MinWeight, Heuristic::WeightedMinFill, Heuristic::Auto][case % 4];
        let plan = Plan::compile(&net, h, Limits::default(), 2).unwrap();
        let rows = 1 + rng.below(7);
        let ev = random_evidence(&mut rng, &net, rows, case % 4 == 1);
        // small memory limit: several chunks
        let opts = Options { threads: 2, memory_bytes: if case % 5 == 0 { plan.stats.bytes_per_evidence_set * 2 } else { 1 << 26 } };
        let m = marginals_cpu(&plan, &ev, opts).unwrap();
        let mp = mpe_cpu(&plan, &ev, opts).unwrap();
        let card = net.cards();
        for r in 0..rows {
            let mut pe = 0.0;
            let mut marg: Vec<Vec<f64>> = card.iter().map(|&c| vec![0.0; c]).collect();
            let mut best = (0.0f64, Vec::new());
            for_each_assignment(&card, |x| {
                let p = weight(&net, &ev, r, x);
                pe += p;
                for v in 0..n {
                    marg[v][x[v]] += p;
                }
                if p > best.0 {
                    best = (p, x.to_vec());
                }
            });
            assert!(close(m.pe[r], pe, 1e-12), "case {case} row {r}: P(e) {} vs {pe}", m.pe[r]);
            assert!(close(mp.prob[r], best.0, 1e-12), "case {case} row {r}: MPE prob {} vs {}", mp.prob[r], best.0);
            if pe == 0.0 {
                impossible += 1;
                assert!(m.row(r).iter().all(|x| x.is_nan()));
                assert!(mp.states[r * n..(r + 1) * n].iter().all(|&s| s == -1));
                continue;
            }
            for v in 0..n {
                for s in 0..card[v] {
                    let want = marg[v][s] / pe;
                    let got = m.at(r, v, s);
                    assert!((got - want).abs() <= 1e-12, "case {case} row {r} var {v} state {s}: {got} vs {want}");
                }
            }
            // the decoded configuration attains the maximum
            let x: Vec<usize> = mp.states[r * n..(r + 1) * n].iter().map(|&s| s as usize).collect();
            let p = weight(&net, &ev, r, &x);
            assert!(close(p, best.0, 1e-12), "case {case} row {r}: decoded config has {p}, max {}", best.0);
            // when the maximum is unique (by a clear margin) it is the same configuration
            let mut second = 0.0f64;
            for_each_assignment(&card, |y| {
                if y != &best.1[..] {
                    second = second.max(weight(&net, &ev, r, y));
                }
            });
            if second < best.0 * (1.0 - 1e-9) {
                assert_eq!(x, best.1, "case {case} row {r}");
                ties_checked += 1;
            }
        }
    }
    assert!(impossible > 0, "no case had impossible evidence");
    assert!(ties_checked > 100);
}

#[test]
fn results_are_identical_run_to_run_and_across_chunkings_and_threads() {
    let mut rng = Rng(42);
    let net = random_network(&mut rng, 9, 3, false);
    let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).unwrap();
    let ev = random_evidence(&mut rng, &net, 37, true);
    let a = marginals_cpu(&plan, &ev, Options { threads: 1, memory_bytes: 1 << 30 }).unwrap();
    let b = marginals_cpu(&plan, &ev, Options { threads: 3, memory_bytes: plan.stats.bytes_per_evidence_set * 5 }).unwrap();
    // chunking changes B, not the arithmetic of a value
    assert_eq!(a.bits(), b.bits());
    assert_eq!(a.pe, b.pe);
    assert_same_in_one_row_chunks(&plan, &ev);
    // the later chunks reuse the first one's buffers, the last one only in part
    let ma = mpe_cpu(&plan, &ev, Options { threads: 1, memory_bytes: 1 << 30 }).unwrap();
    let mb = mpe_cpu(&plan, &ev, Options { threads: 3, memory_bytes: plan.stats.bytes_per_evidence_set * 5 }).unwrap();
    assert_eq!(ma.states, mb.states);
    assert_eq!(ma.prob.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), mb.prob.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
}

#[test]
fn progress_is_told_between_chunks_and_can_stop_the_batch() {
    let mut rng = Rng(7);
    let net = random_network(&mut rng, 8, 2, false);
    let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).unwrap();
    let ev = random_evidence(&mut rng, &net, 23, true);
    let opts = Options { threads: 2, memory_bytes: plan.stats.bytes_per_evidence_set * 5 };
    let mut seen = Vec::new();
    let m = marginals_cpu_watched(&plan, &ev, opts, &mut |d, t| {
        seen.push((d, t));
        true
    })
    .unwrap();
    // before the first chunk of 5 rows and after each
    assert_eq!(seen, [0, 5, 10, 15, 20, 23].map(|d| (d, 23)));
    let want = marginals_cpu(&plan, &ev, opts).unwrap();
    assert_eq!(m.bits(), want.bits());
    let mut calls = 0;
    let e = mpe_cpu_watched(&plan, &ev, opts, &mut |_, _| {
        calls += 1;
        calls < 3
    });
    assert!(matches!(e, Err(JtError::Interrupted)), "{e:?}");
    assert_eq!(calls, 3);
}

#[test]
fn forests_and_isolated_nodes() {
    // three isolated nodes and one edge: a forest of three trees
    let names = vec!["a".to_string(), "b".into(), "c".into(), "d".into()];
    let states = vec![vec!["0".to_string(), "1".into()]; 4];
    let parents = vec![vec![], vec![0], vec![], vec![]];
    let cpts = vec![vec![0.3, 0.7], vec![0.9, 0.1, 0.2, 0.8], vec![0.5, 0.5], vec![0.25, 0.75]];
    let net = Network::new(names, states, parents, cpts).unwrap();
    let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).unwrap();
    assert_eq!(plan.stats.trees, 3);
    let mut ev = Evidence::empty(4, 1);
    ev.hard[1] = 1;
    ev.hard[3] = 0;
    let m = marginals_cpu(&plan, &ev, Options::default()).unwrap();
    let pb1 = 0.3 * 0.1 + 0.7 * 0.8;
    assert!(close(m.pe[0], pb1 * 0.25, 1e-14));
    assert!((m.at(0, 0, 0) - 0.3 * 0.1 / pb1).abs() < 1e-15);
    assert!((m.at(0, 2, 0) - 0.5).abs() < 1e-15);
}

#[test]
fn too_large_trees_fail_before_allocating() {
    // a node with 12 parents of 10 states each: 10^13 cells
    let n = 13;
    let names: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    let states = vec![(0..10).map(|s| s.to_string()).collect::<Vec<_>>(); n];
    let mut parents = vec![Vec::new(); n];
    parents[12] = (0..12).collect();
    // the CPT itself is too large to build, so check the compilation limits on a smaller one
    let _ = (names, states, parents);
    let names: Vec<String> = (0..6).map(|i| format!("v{i}")).collect();
    let states = vec![(0..10).map(|s| s.to_string()).collect::<Vec<_>>(); 6];
    let mut parents = vec![Vec::new(); 6];
    parents[5] = (0..5).collect();
    let mut cpts: Vec<Vec<f64>> = (0..5).map(|_| vec![0.1; 10]).collect();
    cpts.push(vec![0.1; 1_000_000]);
    let net = Network::new(names, states, parents, cpts).unwrap();
    let e = Plan::compile(&net, Heuristic::MinFill, Limits { max_clique_cells: 100_000, max_total_cells: 1 << 30 }, 1).err().unwrap();
    assert!(e.to_string().contains("too large"), "{e}");
    let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).unwrap();
    let e = marginals_cpu(&plan, &Evidence::empty(6, 1), Options { threads: 1, memory_bytes: 1000 }).err().unwrap();
    assert!(e.to_string().contains("one evidence set needs"), "{e}");
}

const ASIA: &str = "network unknown {\n}\nvariable asia {\n  type discrete [ 2 ] { yes, no };\n}\nvariable tub {\n  type discrete [ 2 ] { yes, no };\n}\nvariable smoke {\n  type discrete [ 2 ] { yes, no };\n}\nvariable lung {\n  type discrete [ 2 ] { yes, no };\n}\nvariable bronc {\n  type discrete [ 2 ] { yes, no };\n}\nvariable either {\n  type discrete [ 2 ] { yes, no };\n}\nvariable xray {\n  type discrete [ 2 ] { yes, no };\n}\nvariable dysp {\n  type discrete [ 2 ] { yes, no };\n}\nprobability ( asia ) {\n  table 0.01, 0.99;\n}\nprobability ( tub | asia ) {\n  (yes) 0.05, 0.95;\n  (no) 0.01, 0.99;\n}\nprobability ( smoke ) {\n  table 0.5, 0.5;\n}\nprobability ( lung | smoke ) {\n  (yes) 0.1, 0.9;\n  (no) 0.01, 0.99;\n}\nprobability ( bronc | smoke ) {\n  (yes) 0.6, 0.4;\n  (no) 0.3, 0.7;\n}\nprobability ( either | lung, tub ) {\n  (yes, yes) 1.0, 0.0;\n  (no, yes) 1.0, 0.0;\n  (yes, no) 1.0, 0.0;\n  (no, no) 0.0, 1.0;\n}\nprobability ( xray | either ) {\n  (yes) 0.98, 0.02;\n  (no) 0.05, 0.95;\n}\nprobability ( dysp | bronc, either ) {\n  (yes, yes) 0.9, 0.1;\n  (no, yes) 0.7, 0.3;\n  (yes, no) 0.8, 0.2;\n  (no, no) 0.1, 0.9;\n}\n";

#[test]
fn asia_from_bif() {
    let net = pc_jtree::bif::parse_bif(ASIA).unwrap();
    assert_eq!(net.len(), 8);
    let either = net.index_of("either").unwrap();
    // P(either = yes | lung = no, tub = yes) = 1
    let mut x = vec![0usize; 8];
    x[net.index_of("lung").unwrap()] = 1;
    assert_eq!(net.cpt_value(either, &x), 1.0);
    let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).unwrap();
    let m = marginals_cpu(&plan, &Evidence::empty(8, 1), Options::default()).unwrap();
    // gRain: querygrain(asia)$lung = 0.055 yes
    assert!((m.at(0, net.index_of("lung").unwrap(), 0) - 0.055).abs() < 1e-15);
    assert!((m.pe[0] - 1.0).abs() < 1e-15);
    assert!(pc_jtree::bif::parse_bif("variable a { type discrete [ 2 ] { x }; }").is_err());
    assert!(pc_jtree::bif::parse_bif(&ASIA.replace("(no, no) 0.0, 1.0;", "")).is_err());
}

#[test]
fn long_marginalisations_summed_in_parts_match_brute_force() {
    // one node with 11 parents: a clique of 2^12 cells, whose runs onto small separators and onto
    // no variable (the root) are longer than REDUCE_SPLIT
    let mut rng = Rng(7);
    let n = 13;
    let names: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
    let states = vec![vec!["a".to_string(), "b".into()]; n];
    let mut parents = vec![Vec::new(); n];
    parents[11] = (0..11).collect();
    parents[12] = vec![11];
    let cpts: Vec<Vec<f64>> = (0..n)
        .map(|v| {
            let rows = 1usize << parents[v].len();
            (0..rows)
                .flat_map(|_| {
                    let p = 0.05 + 0.9 * rng.unif();
                    [p, 1.0 - p]
                })
                .collect()
        })
        .collect();
    let net = Network::new(names, states, parents, cpts).unwrap();
    let plan = Plan::compile(&net, Heuristic::MinWeight, Limits::default(), 2).unwrap();
    assert!(plan.up.iter().chain(&plan.marg).any(|p| p.parts() > 1), "no split run");
    let ev = random_evidence(&mut rng, &net, 6, true);
    let m = marginals_cpu(&plan, &ev, Options { threads: 2, memory_bytes: 1 << 26 }).unwrap();
    let mp = mpe_cpu(&plan, &ev, Options { threads: 2, memory_bytes: 1 << 26 }).unwrap();
    let card = net.cards();
    for r in 0..ev.rows {
        let (mut pe, mut best) = (0.0, 0.0f64);
        let mut marg = vec![[0.0; 2]; n];
        for_each_assignment(&card, |x| {
            let p = weight(&net, &ev, r, x);
            pe += p;
            best = best.max(p);
            for v in 0..n {
                marg[v][x[v]] += p;
            }
        });
        assert!(close(m.pe[r], pe, 1e-12));
        assert!(close(mp.prob[r], best, 1e-12));
        if pe > 0.0 {
            for v in 0..n {
                for s in 0..2 {
                    assert!((m.at(r, v, s) - marg[v][s] / pe).abs() < 1e-12);
                }
            }
        }
    }
    // chunks of one row sum each run in a register (split runs too): the same sums
    assert_same_in_one_row_chunks(&plan, &ev);
}

/// Chunks of one evidence set (their runs summed in a register) give the values of one chunk of
/// all sets, bit for bit: marginals, P(evidence) and the MPE.
fn assert_same_in_one_row_chunks(plan: &Plan, ev: &Evidence) {
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let all = Options { threads: 2, memory_bytes: 1 << 30 };
    let one = Options { threads: 2, memory_bytes: plan.stats.bytes_per_evidence_set };
    let (a, b) = (marginals_cpu(plan, ev, all).unwrap(), marginals_cpu(plan, ev, one).unwrap());
    assert_eq!(a.bits(), b.bits());
    assert_eq!(bits(&a.pe), bits(&b.pe));
    let (a, b) = (mpe_cpu(plan, ev, all).unwrap(), mpe_cpu(plan, ev, one).unwrap());
    assert_eq!(a.states, b.states);
    assert_eq!(bits(&a.prob), bits(&b.prob));
}

/// A batch split into consecutive blocks (one per device) and put back together gives the whole
/// batch's answers, bit for bit: the CPU twin of the GPUs' split.
#[test]
fn a_batch_split_into_blocks_equals_the_whole_batch() {
    let mut rng = Rng(99);
    for _ in 0..6 {
        let net = random_network(&mut rng, 9, 3, false);
        let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 1).unwrap();
        let ev = random_evidence(&mut rng, &net, 23, true);
        let opts = Options { threads: 1, memory_bytes: 1 << 30 };
        let whole_m = marginals_cpu(&plan, &ev, opts).unwrap();
        let whole_e = mpe_cpu(&plan, &ev, opts).unwrap();
        for k in [2usize, 3, 5] {
            let blocks: Vec<_> = (0..k).map(|d| ev.rows * d / k..ev.rows * (d + 1) / k).collect();
            let m = Marginals::concat(blocks.iter().map(|r| marginals_cpu(&plan, &ev.rows_slice(r.clone()), opts).unwrap()).collect()).unwrap();
            let e = Mpe::concat(blocks.iter().map(|r| mpe_cpu(&plan, &ev.rows_slice(r.clone()), opts).unwrap()).collect()).unwrap();
            assert_eq!(m.rows, ev.rows);
            assert_eq!(m.bits(), whole_m.bits(), "marginals, k = {k}");
            // each block written into its rows of one set of matrices, as the GPUs write theirs
            let mut into = Marginals::zeroed(&plan, ev.rows).unwrap();
            let sink = into.sink(&plan);
            for r in &blocks {
                marginals_cpu_into(&plan, &ev.rows_slice(r.clone()), opts, &mut |_, _| true, &sink.from_row(r.start)).unwrap();
            }
            drop(sink);
            assert_eq!(into.bits(), whole_m.bits(), "marginals into one sink, k = {k}");
            assert!(into.pe.iter().zip(&whole_m.pe).all(|(a, b)| a.to_bits() == b.to_bits()), "P(evidence) into one sink, k = {k}");
            assert!(m.pe.iter().zip(&whole_m.pe).all(|(a, b)| a.to_bits() == b.to_bits()), "P(evidence), k = {k}");
            assert_eq!((e.rows, &e.states), (ev.rows, &whole_e.states), "MPE, k = {k}");
            assert!(e.prob.iter().zip(&whole_e.prob).all(|(a, b)| a.to_bits() == b.to_bits()), "MPE probability, k = {k}");
        }
    }
}

#[test]
fn a_subset_cell_from_the_states_equals_the_one_from_the_cell_number() {
    let mut rng = Rng(0x51ed_270b_2712_4f31);
    let mut checked = 0u64;
    for case in 0..40 {
        let (n, max_par) = (3 + rng.below(8), 1 + rng.below(3));
        let net = random_network(&mut rng, n, max_par, case % 2 == 0);
        let plan = Plan::compile(&net, Heuristic::MinFill, Limits::default(), 1).unwrap();
        let projections = plan.up.iter().chain(plan.down.iter().filter(|p| !p.digits.is_empty())).chain(&plan.marg);
        for p in projections {
            let cl = plan.cliques.iter().find(|c| c.offset == p.table).expect("a projection reads a clique's table");
            for r in 0..cl.cells {
                let states: Vec<u32> = cl.vars.iter().zip(&cl.strides).map(|(&v, &st)| ((r / st) % net.cards()[v] as u64) as u32).collect();
                assert_eq!(p.subset_cell_at(&states), p.subset_cell(r), "case {case}, cell {r}");
                checked += 1;
            }
        }
        for cl in &plan.cliques {
            for (&(var, st, _), &at) in cl.homed.iter().zip(&cl.homed_pos) {
                assert_eq!(cl.vars[at as usize], var as usize);
                assert_eq!(cl.strides[at as usize], st as u64);
            }
        }
    }
    assert!(checked > 1000, "{checked} cells checked");
}

fn bundled(name: &str) -> Network {
    let path = format!("{}/../../../../inst/extdata/networks/{name}.bif.gz", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("gzip").arg("-dc").arg(&path).output().expect("gzip");
    assert!(out.status.success(), "reading {path}");
    pc_jtree::bif::parse_bif(std::str::from_utf8(&out.stdout).unwrap()).unwrap()
}

#[test]
fn auto_triangulation_is_the_cheapest_order_tried_and_the_same_on_every_pool() {
    use pc_jtree::compile::{auto_orders, eliminate_by, moral_graph, propagation_cost, triangulate, Forest};
    for name in ["alarm", "hepar2", "andes"] {
        let net = bundled(name);
        let card = net.cards();
        let moral = moral_graph(&net);
        let names = |v: usize| net.names[v].clone();
        let cost = |f: &Forest| {
            let cells: Vec<u64> = f.cliques.iter().map(|c| c.iter().map(|&v| card[v] as u64).product()).collect();
            propagation_cost(&cells, &f.parent)
        };
        let tri = |h: Heuristic, threads: usize| pc_jtree::engine::pool(threads).unwrap().install(|| triangulate(&card, &moral, h, u32::MAX as u64, &names).unwrap());
        let auto = tri(Heuristic::Auto, 1);
        let again = tri(Heuristic::Auto, 3);
        assert_eq!((&auto.cliques, &auto.parent, &auto.roots), (&again.cliques, &again.parent, &again.roots), "{name}");
        let best = cost(&auto);
        for h in [Heuristic::MinFill, Heuristic::MinWeight, Heuristic::WeightedMinFill] {
            assert!(best <= cost(&tri(h, 1)), "{name}: auto {best} against {h:?}");
        }
        // the cheapest of the orders tried, and on ANDES cheaper than any plain one
        let tried: Vec<usize> = auto_orders()
            .into_iter()
            .map(|o| {
                let e = eliminate_by(&card, &moral, o);
                let c = pc_jtree::compile::maximal_cliques(e, card.len());
                let (parent, roots) = pc_jtree::compile::clique_forest(&c, card.len());
                cost(&Forest { cliques: c, parent, roots }) as usize
            })
            .collect();
        assert_eq!(best as usize, *tried.iter().min().unwrap(), "{name}");
        if name == "andes" {
            assert!(best < tried[..3].iter().copied().min().unwrap() as u64, "andes: {best} against {:?}", &tried[..3]);
        }
        // its plan answers as min-fill's does
        let ev = Evidence::empty(net.len(), 1);
        let a = marginals_cpu(&Plan::compile(&net, Heuristic::Auto, Limits::default(), 2).unwrap(), &ev, Options::default()).unwrap();
        let m = marginals_cpu(&Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).unwrap(), &ev, Options::default()).unwrap();
        for v in 0..net.len() {
            for st in 0..card[v] {
                assert!((a.at(0, v, st) - m.at(0, v, st)).abs() < 1e-12, "{name} var {v}");
            }
        }
    }
    // a clique over the limit in every order: the error names the limit
    let e = Plan::compile(&bundled("andes"), Heuristic::Auto, Limits { max_clique_cells: 1000, max_total_cells: 1 << 30 }, 1).err().unwrap();
    assert!(e.to_string().contains("more than the limit of 1000"), "{e}");
}
