//! `pcbench cmiknn`: the CMI-kNN test without R. Parity of the GPU with the CPU (statistic, every
//! surrogate and the p-value, bit for bit), one-test timings, and a skeleton search on a
//! non-linear DAG with either backend.
//!
//!   pcbench cmiknn parity --cases 120
//!   pcbench cmiknn single --n 1000 --knn 7 --sig-samples 100 --level 1 --backend both
//!   pcbench cmiknn pc --p 50 --n 1000 --knn 0.2 --sig-samples 500 --backend cuda
//!   pcbench cmiknn dag --p 20 --n 500 --cases 3 --sig-samples 100 --backend cuda
//!   pcbench cmiknn pvalues --input sets.f64 --n 1000 --level 1 --knn 10 --sig-samples 99
//!
//! `pvalues` reads replicate data sets written by bench/suites/cmiknn/cmiknn-dist.py: little-endian f64,
//! column-major n x (R (2 + level)), replicate r in columns r (2 + level) + [x, y, z_1..z_level];
//! it tests x _||_ y | z of every replicate in one batch (ranks are per column, so stacking the
//! replicates as variables is the same as testing each data set alone) and prints one CSV row
//! per replicate.

use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, ValueEnum};
use pc_cmiknn::{CmiKnn, CmiKnnParams, Knn, Outcome, Permute, RankData};
use pc_core::backend::{NullWatch, Watch};
use pc_core::cpu::ParallelCpu;
use pc_core::graph::Adjacency;
use pc_core::plan::Order;
use pc_core::skeleton::{run_skeleton, SkeletonParams};
use pc_cuda::cmiknn::CmiCase;
use pc_cuda::CudaCmiKnn;

use crate::data::Rng;

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Parity,
    Single,
    Pc,
    Pvalues,
    Dag,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum On {
    Cpu,
    Cuda,
    Both,
}

#[derive(Args)]
pub struct CmiArgs {
    mode: Mode,
    #[arg(long, default_value_t = 120)]
    cases: usize,
    #[arg(long, default_value_t = 1000)]
    n: usize,
    #[arg(long, default_value_t = 10)]
    p: usize,
    /// Below 1 a fraction of n, else a count.
    #[arg(long, default_value_t = 0.2)]
    knn: f64,
    #[arg(long, default_value_t = 5)]
    shuffle: usize,
    #[arg(long, default_value_t = 100)]
    sig_samples: usize,
    /// |S| of the single test.
    #[arg(long, default_value_t = 1)]
    level: usize,
    #[arg(long, default_value_t = 0.05)]
    alpha: f64,
    #[arg(long, default_value_t = 2.0)]
    degree: f64,
    #[arg(long)]
    m_max: Option<usize>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// CPU threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    #[arg(long, value_enum, default_value_t = On::Both)]
    backend: On,
    /// `pc`: stop after this many seconds (the levels done so far are printed as they end).
    #[arg(long)]
    limit_s: Option<f64>,
    /// `pvalues`: the replicate data sets (see the module comment).
    #[arg(long)]
    input: Option<std::path::PathBuf>,
}

/// Samples of a random non-linear DAG in topological order 0..p: each edge j -> i adds
/// f(x_j) with f linear, quadratic, tanh or sine; noise N(0, 1). Column-major n x p.
pub fn nonlinear_dag(p: usize, n: usize, degree: f64, seed: u64) -> (Vec<f64>, Adjacency) {
    nonlinear_dag_of(p, n, degree, seed, &[0, 1, 2, 3])
}

/// As `nonlinear_dag`, each edge's f drawn from `kinds` (0 linear, 1 quadratic, 2 tanh, 3 sine).
pub fn nonlinear_dag_of(p: usize, n: usize, degree: f64, seed: u64, kinds: &[u8]) -> (Vec<f64>, Adjacency) {
    let mut rng = Rng::new(seed);
    let prob = if p > 1 { (degree / (p - 1) as f64).min(1.0) } else { 0.0 };
    let mut truth = Adjacency::empty(p);
    let mut v = vec![0.0f64; n * p];
    for i in 0..p {
        let mut parents: Vec<(usize, u8, f64)> = Vec::new();
        for j in 0..i {
            if rng.uniform() < prob {
                parents.push((j, kinds[(rng.next_u64() % kinds.len() as u64) as usize], 0.5 + rng.uniform()));
            }
        }
        for &(j, _, _) in &parents {
            truth.add_edge(i, j);
        }
        for s in 0..n {
            let mut x = rng.normal();
            for &(j, f, w) in &parents {
                let u = v[j * n + s];
                x += w * match f {
                    0 => u,
                    1 => u * u / 2.0,
                    2 => 2.0 * (u).tanh(),
                    _ => 2.0 * u.sin(),
                };
            }
            v[i * n + s] = x;
        }
        // standardise so quadratic chains do not explode
        let col = &mut v[i * n..(i + 1) * n];
        let m = col.iter().sum::<f64>() / n as f64;
        let sd = (col.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n as f64).sqrt().max(1e-12);
        col.iter_mut().for_each(|x| *x = (*x - m) / sd);
    }
    (v, truth)
}

fn knn_of(k: f64) -> Knn {
    if k < 1.0 {
        Knn::Fraction(k)
    } else {
        Knn::Count(k as usize)
    }
}

fn same(a: &Outcome, b: &Outcome) -> bool {
    a.statistic.to_bits() == b.statistic.to_bits()
        && a.p_value.to_bits() == b.p_value.to_bits()
        && a.null.len() == b.null.len()
        && a.null.iter().zip(&b.null).all(|(x, y)| x.to_bits() == y.to_bits())
}

fn pool(threads: usize) -> Result<rayon::ThreadPool, String> {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().map_err(|e| e.to_string())
}

pub fn cmd_cmiknn(a: &CmiArgs) -> Result<ExitCode, String> {
    match a.mode {
        Mode::Parity => parity(a),
        Mode::Single => single(a),
        Mode::Pc => pc(a),
        Mode::Pvalues => pvalues(a),
        Mode::Dag => dag(a),
    }
}

fn parity(a: &CmiArgs) -> Result<ExitCode, String> {
    let pool = pool(a.threads)?;
    let mut rng = Rng::new(a.seed);
    let (mut cases, mut bad, mut gpu_repeat_bad, mut sets) = (0usize, 0usize, 0usize, 0usize);
    let mut p_values = Vec::new();
    while cases < a.cases {
        let n = 40 + (rng.next_u64() % 600) as usize;
        let p = 6;
        let (v, _) = nonlinear_dag(p, n, 2.5, rng.next_u64());
        let knn = [1.0, 5.0, 0.1, 0.2, 0.5][(rng.next_u64() % 5) as usize];
        let params = CmiKnnParams {
            knn: knn_of(knn),
            shuffle_neighbors: [1, 3, 5, 10][(rng.next_u64() % 4) as usize],
            sig_samples: [9, 49, 99][(rng.next_u64() % 3) as usize],
            permute: if rng.uniform() < 0.5 { Permute::X } else { Permute::Y },
            seed: rng.next_u64(),
        };
        let t = CmiKnn::new(RankData::from_columns(&v, n, p).map_err(|e| e.to_string())?, params.clone()).map_err(|e| e.to_string())?;
        // tests: a few x, several y per (x, S) so groups share permutations
        let mut batch = Vec::new();
        for _ in 0..3 {
            let l = (rng.next_u64() % 4) as usize;
            let mut vars: Vec<u32> = (0..p as u32).collect();
            for i in (1..p).rev() {
                vars.swap(i, (rng.next_u64() % (i as u64 + 1)) as usize);
            }
            let (x, s) = (vars[0], vars[1..1 + l].to_vec());
            for &y in &vars[1 + l..] {
                batch.push(CmiCase { x, y, s: s.clone() });
            }
        }
        let cpu: Vec<Outcome> = pool.install(|| batch.iter().map(|c| t.run(c.x, c.y, &c.s)).collect::<Result<_, _>>()).map_err(|e| e.to_string())?;
        let g = CudaCmiKnn::new(&t, a.threads).map_err(|e| e.to_string())?;
        let gpu = g.run_tests(&batch).map_err(|e| e.to_string())?;
        let gpu2 = g.run_tests(&batch).map_err(|e| e.to_string())?;
        for (i, c) in batch.iter().enumerate() {
            if !same(&cpu[i], &gpu[i]) {
                bad += 1;
                eprintln!(
                    "MISMATCH n={n} k={} x={} y={} S={:?}: cpu stat {:.17} p {} / gpu stat {:.17} p {}",
                    t.k(), c.x, c.y, c.s, cpu[i].statistic, cpu[i].p_value, gpu[i].statistic, gpu[i].p_value
                );
            }
            if !same(&gpu[i], &gpu2[i]) {
                gpu_repeat_bad += 1;
            }
            p_values.push(cpu[i].p_value);
        }
        cases += batch.len();
        sets += 1;
    }
    let small = p_values.iter().filter(|&&p| p <= 0.05).count();
    println!(
        "cmiknn parity: {cases} tests on {sets} data sets: {} equal bit for bit (statistic, every surrogate, p-value), {bad} differ; second GPU run differs in {gpu_repeat_bad}; {small} tests with p <= 0.05",
        cases - bad
    );
    Ok(if bad > 0 { ExitCode::from(1) } else if gpu_repeat_bad > 0 { ExitCode::from(2) } else { ExitCode::SUCCESS })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn single(a: &CmiArgs) -> Result<ExitCode, String> {
    let p = a.level + 2;
    let (v, _) = nonlinear_dag(p, a.n, 2.0, a.seed);
    let params = CmiKnnParams { knn: knn_of(a.knn), shuffle_neighbors: a.shuffle, sig_samples: a.sig_samples, permute: Permute::Y, seed: a.seed };
    let t = CmiKnn::new(RankData::from_columns(&v, a.n, p).map_err(|e| e.to_string())?, params).map_err(|e| e.to_string())?;
    let s: Vec<u32> = (2..p as u32).collect();
    let pool = pool(a.threads)?;
    let mut cpu_out = None;
    let mut gpu_out = None;
    let (mut cpu_t, mut gpu_t) = (Vec::new(), Vec::new());
    if a.backend != On::Cuda {
        for _ in 0..a.repeat {
            let t0 = Instant::now();
            cpu_out = Some(pool.install(|| t.run(0, 1, &s)).map_err(|e| e.to_string())?);
            cpu_t.push(t0.elapsed().as_secs_f64());
        }
    }
    if a.backend != On::Cpu {
        let g = CudaCmiKnn::new(&t, a.threads).map_err(|e| e.to_string())?;
        let case = [CmiCase { x: 0, y: 1, s: s.clone() }];
        for _ in 0..a.repeat + 1 {
            let t0 = Instant::now();
            gpu_out = Some(g.run_tests(&case).map_err(|e| e.to_string())?.remove(0));
            gpu_t.push(t0.elapsed().as_secs_f64());
        }
        gpu_t.remove(0); // the first includes the module load
        let tm = g.timings();
        eprintln!("gpu: {} compile {:.2}s, kernel {:.4}s total over {} launches, permutations on host {:.4}s", tm.target, tm.compile_s, tm.kernel_s, tm.launches, tm.host_s);
    }
    let equal = match (&cpu_out, &gpu_out) {
        (Some(c), Some(g)) => if same(c, g) { "yes" } else { "NO" },
        _ => "-",
    };
    let o = cpu_out.as_ref().or(gpu_out.as_ref()).unwrap();
    println!("what,n,k,B,l,shuffle,threads,cpu_median_s,gpu_median_s,statistic,p_value,cpu_gpu_identical");
    println!(
        "single,{},{},{},{},{},{},{},{},{:.17},{},{}",
        a.n, t.k(), a.sig_samples, a.level, a.shuffle, pool.current_num_threads(),
        if cpu_t.is_empty() { "NA".into() } else { format!("{:.5}", median(cpu_t)) },
        if gpu_t.is_empty() { "NA".into() } else { format!("{:.5}", median(gpu_t)) },
        o.statistic, o.p_value, equal
    );
    Ok(if equal == "NO" { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Prints each level as it ends (so a run stopped by --limit-s still tells how far it got).
struct LevelLog {
    t0: Instant,
    deadline: Option<Instant>,
}

impl Watch for LevelLog {
    fn level_start(&mut self, level: usize, edges: usize, planned: u64) {
        eprintln!("level {level} starts at {:.1} s: {edges} edges, up to {planned} tests", self.t0.elapsed().as_secs_f64());
    }
    fn level_end(&mut self, level: usize, tests: u64, removed: usize, seconds: f64) {
        eprintln!("level {level}: {tests} tests, {removed} edges removed, {seconds:.2} s (at {:.1} s)", self.t0.elapsed().as_secs_f64());
    }
    fn tick(&mut self, _: u64, _: u64) -> bool {
        self.deadline.map_or(true, |d| Instant::now() < d)
    }
    fn keep_going(&mut self) -> bool {
        self.tick(0, 0)
    }
}

/// pcalg's stable skeleton from the complete graph, with the command's alpha, m.max and threads.
fn skeleton_params(a: &CmiArgs) -> SkeletonParams {
    SkeletonParams {
        alpha: a.alpha,
        order: Order::Stable,
        m_max: a.m_max,
        na_delete: true,
        start: Adjacency::complete(a.p),
        fixed_edges: Adjacency::empty(a.p),
        threads: a.threads,
    }
}

fn pc(a: &CmiArgs) -> Result<ExitCode, String> {
    let (v, truth) = nonlinear_dag(a.p, a.n, a.degree, a.seed);
    let params = CmiKnnParams { knn: knn_of(a.knn), shuffle_neighbors: a.shuffle, sig_samples: a.sig_samples, permute: Permute::Y, seed: a.seed };
    let t = CmiKnn::new(RankData::from_columns(&v, a.n, a.p).map_err(|e| e.to_string())?, params).map_err(|e| e.to_string())?;
    let sp = skeleton_params(a);
    let n_true = (0..a.p).flat_map(|i| (i + 1..a.p).map(move |j| (i, j))).filter(|&(i, j)| truth.has(i, j)).count();
    println!("what,backend,p,n,k,B,seconds,edges,true_edges,tests_per_level,identical_to_cpu,edges_in_truth");
    let mut results = Vec::new();
    for on in [On::Cpu, On::Cuda] {
        if a.backend != On::Both && a.backend != on {
            continue;
        }
        let t0 = Instant::now();
        let mut log = LevelLog { t0, deadline: a.limit_s.map(|l| t0 + std::time::Duration::from_secs_f64(l)) };
        let res = if on == On::Cpu {
            let mut b = ParallelCpu::new(&t, a.threads).map_err(|e| e.to_string())?;
            run_skeleton(&sp, &mut b, &mut log)
        } else {
            let mut b = CudaCmiKnn::new(&t, a.threads).map_err(|e| e.to_string())?;
            run_skeleton(&sp, &mut b, &mut log)
        }
        .map_err(|e| e.to_string())?;
        let secs = t0.elapsed().as_secs_f64();
        let edges = (0..a.p).flat_map(|i| (i + 1..a.p).map(move |j| (i, j))).filter(|&(i, j)| res.graph.has(i, j)).count();
        let true_edges = (0..a.p).flat_map(|i| (i + 1..a.p).map(move |j| (i, j))).filter(|&(i, j)| res.graph.has(i, j) && truth.has(i, j)).count();
        let per_level: Vec<String> = res.n_edgetests.iter().map(|c| c.to_string()).collect();
        let ident = results.first().map(|r0| if crate::compare::identical(r0, &res) { "yes" } else { "NO" }).unwrap_or("-");
        println!(
            "pc,{},{},{},{},{},{secs:.3},{edges},{true_edges},{},{ident},{n_true}",
            if on == On::Cpu { "cpu" } else { "cuda" }, a.p, a.n, t.k(), a.sig_samples, per_level.join(" ")
        );
        results.push(res);
    }
    Ok(ExitCode::SUCCESS)
}

fn pvalues(a: &CmiArgs) -> Result<ExitCode, String> {
    let path = a.input.as_ref().ok_or("pvalues needs --input")?;
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let width = a.level + 2;
    if bytes.len() % (8 * a.n * width) != 0 {
        return Err(format!("{}: {} bytes is not a whole number of n x {width} data sets", path.display(), bytes.len()));
    }
    let v: Vec<f64> = bytes.chunks_exact(8).map(|b| f64::from_le_bytes(b.try_into().unwrap())).collect();
    let p = v.len() / a.n;
    let reps = p / width;
    let params = CmiKnnParams { knn: knn_of(a.knn), shuffle_neighbors: a.shuffle, sig_samples: a.sig_samples, permute: Permute::Y, seed: a.seed };
    let t = CmiKnn::new(RankData::from_columns(&v, a.n, p).map_err(|e| e.to_string())?, params).map_err(|e| e.to_string())?;
    let cases: Vec<CmiCase> = (0..reps)
        .map(|r| {
            let x = (r * width) as u32;
            CmiCase { x, y: x + 1, s: (x + 2..x + width as u32).collect() }
        })
        .collect();
    let t0 = Instant::now();
    let out = if a.backend == On::Cpu {
        pool(a.threads)?.install(|| cases.iter().map(|c| t.run(c.x, c.y, &c.s)).collect::<Result<Vec<_>, _>>()).map_err(|e| e.to_string())?
    } else {
        CudaCmiKnn::new(&t, a.threads).map_err(|e| e.to_string())?.run_tests(&cases).map_err(|e| e.to_string())?
    };
    eprintln!("pvalues: {reps} tests, n = {}, k = {}, B = {}, |S| = {} in {:.3} s", a.n, t.k(), a.sig_samples, a.level, t0.elapsed().as_secs_f64());
    println!("rep,statistic,p_value");
    for (r, o) in out.iter().enumerate() {
        println!("{r},{:.17},{}", o.statistic, o.p_value);
    }
    Ok(ExitCode::SUCCESS)
}

/// (found, true positives, edges of the truth) of a skeleton.
fn edge_counts(g: &Adjacency, truth: &Adjacency, p: usize) -> (usize, usize, usize) {
    let pairs = || (0..p).flat_map(|i| (i + 1..p).map(move |j| (i, j)));
    (
        pairs().filter(|&(i, j)| g.has(i, j)).count(),
        pairs().filter(|&(i, j)| g.has(i, j) && truth.has(i, j)).count(),
        pairs().filter(|&(i, j)| truth.has(i, j)).count(),
    )
}

/// Skeleton recovery on DAGs whose edges are all quadratic, all tanh or all sine: CMI-kNN (GPU
/// or CPU backend) beside the Gaussian partial-correlation test (pcalg's gaussCItest, CPU) on
/// the same data; SHD = extra + missing edges, F1 of the edges.
fn dag(a: &CmiArgs) -> Result<ExitCode, String> {
    println!("what,kind,rep,p,n,k,B,test,seconds,true_edges,found,tp,fp,fn,shd,f1,tests");
    for (kind, name) in [(1u8, "quadratic"), (2, "tanh"), (3, "sine")] {
        for rep in 0..a.cases {
            let seed = a.seed * 1000 + 100 * kind as u64 + rep as u64;
            let (mut v, truth) = nonlinear_dag_of(a.p, a.n, a.degree, seed, &[kind]);
            let sp = skeleton_params(a);
            let params = CmiKnnParams { knn: knn_of(a.knn), shuffle_neighbors: a.shuffle, sig_samples: a.sig_samples, permute: Permute::Y, seed };
            let t = CmiKnn::new(RankData::from_columns(&v, a.n, a.p).map_err(|e| e.to_string())?, params).map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            let cm = if a.backend == On::Cpu {
                run_skeleton(&sp, &mut ParallelCpu::new(&t, a.threads).map_err(|e| e.to_string())?, &mut NullWatch)
            } else {
                run_skeleton(&sp, &mut CudaCmiKnn::new(&t, a.threads).map_err(|e| e.to_string())?, &mut NullWatch)
            }
            .map_err(|e| e.to_string())?;
            let cm_s = t0.elapsed().as_secs_f64();
            let c = crate::data::correlation(&mut v, a.n, a.p, a.threads);
            let gt = pc_core::citest::GaussTest::new(c, a.p, a.n as f64, pc_core::citest::GaussFlavour::R).map_err(|e| e.to_string())?;
            let t0 = Instant::now();
            let ga = run_skeleton(&sp, &mut ParallelCpu::new(&gt, a.threads).map_err(|e| e.to_string())?, &mut NullWatch).map_err(|e| e.to_string())?;
            let ga_s = t0.elapsed().as_secs_f64();
            for (test, res, secs) in [("cmiknn", &cm, cm_s), ("gauss", &ga, ga_s)] {
                let (found, tp, n_true) = edge_counts(&res.graph, &truth, a.p);
                let (fp, fneg) = (found - tp, n_true - tp);
                let f1 = if tp == 0 { 0.0 } else { 2.0 * tp as f64 / (2 * tp + fp + fneg) as f64 };
                let tests: u64 = res.n_edgetests.iter().map(|&x| x as u64).sum();
                println!(
                    "dag,{name},{rep},{},{},{},{},{test},{secs:.3},{n_true},{found},{tp},{fp},{fneg},{},{f1:.4},{tests}",
                    a.p, a.n, if test == "cmiknn" { t.k().to_string() } else { "NA".into() },
                    if test == "cmiknn" { a.sig_samples.to_string() } else { "NA".into() }, fp + fneg
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
