//! pcbench: runs gpupc's skeleton search without R, on the CPU, the GPU or both, to time it and
//! to check that both backends give the same answers (graph, sepsets, pMax, n.edgetests).
//!
//!   pcbench run --gen --p 1643 --n 850 --degree 4 --backend both --threads 16 --repeat 2
//!   pcbench run --cor C.bin --n 850 --backend cuda
//!   pcbench parity --cases 100 --p-max 300 --n-min 20 --n-max 5000 --repeat 2
//!   pcbench discrete --cases 60 --repeat 2                 (G^2: random discrete data)
//!   pcbench jtree pigs.bif.gz munin.bif.gz --rows 10000 --observed 0.05
//!   pcbench discrete --p 1000 --n 1000000 --max-levels 21 --backend cuda --m-max 1
//!
//! Exit status: 0 when everything matched, 1 on a CPU/GPU mismatch that is not a tie at alpha,
//! 2 when two GPU runs differ, 3 on an error.

mod cmiknn;
mod compare;
mod data;
mod discrete;
mod jtree;
mod multi;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use pc_core::backend::{NullWatch, Watch};
use pc_core::citest::{GaussFlavour, GaussTest};
use pc_core::cpu::ParallelCpu;
use pc_core::graph::Adjacency;
use pc_core::plan::Order;
use pc_core::skeleton::{run_skeleton, SkeletonParams, SkeletonResult};
use pc_cuda::CudaGauss;

use compare::{compare, identical, verdict, Lockstep, Verdict};

#[derive(Parser)]
#[command(name = "pcbench", about = "gpupc skeleton search without R: timing and CPU/GPU parity")]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// One data set: a correlation matrix from a file, or a simulated one.
    Run(RunArgs),
    /// Many random simulated data sets, CPU against GPU.
    Parity(ParityArgs),
    /// Discrete data (G^2 tests), CPU against GPU.
    Discrete(discrete::DiscreteArgs),
    /// The GPU's chi-square tail against R's pchisq and exact values (the fixtures of pc-core).
    Pchisq {
        /// Folder with pchisq.csv (x, df, R's p) and pchisq_exact.csv (x, df, p_exact).
        #[arg(long, default_value = "src/rust/crates/pc-core/tests/fixtures")]
        fixtures: PathBuf,
    },
    /// CMI-kNN: GPU/CPU parity, one-test timings, a skeleton search on a non-linear DAG.
    Cmiknn(cmiknn::CmiArgs),
    /// Junction-tree inference on BIF networks: CPU engine against the GPU, timings.
    Jtree(jtree::JtreeArgs),
    /// Several GPUs (or contexts on one) against one GPU and the CPU: parity and timings.
    Multi(multi::MultiArgs),
    /// Print what the GPU probe finds.
    Probe,
    /// The kernels' compile time per family (NVRTC, one after another) and read back from the disk
    /// cache: what the first GPU call of a process pays. Run it with an empty CUDA_CACHE_PATH: the
    /// driver's own cache also holds NVRTC's output.
    Kernels {
        /// Kernel cache folder for the cached rows (emptied first).
        #[arg(long)]
        cache: PathBuf,
    },
}

/// pcalg's skeleton order (`skel.method`).
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OrderArg {
    /// "stable": pcalg's R loop and R's gaussCItest.
    Stable,
    /// "stable.fast": pcalg's C++ loop and its C++ test.
    Fast,
}

impl OrderArg {
    pub fn order(self) -> Order {
        match self {
            OrderArg::Stable => Order::Stable,
            OrderArg::Fast => Order::StableFast,
        }
    }

    pub fn flavour(self) -> GaussFlavour {
        match self {
            OrderArg::Stable => GaussFlavour::R,
            OrderArg::Fast => GaussFlavour::Cpp,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Which {
    Cpu,
    Cuda,
    Both,
}

#[derive(Args, Clone)]
pub struct Common {
    /// Significance level.
    #[arg(long, default_value_t = 0.01)]
    pub alpha: f64,
    /// Largest conditioning-set size (default: no limit).
    #[arg(long)]
    pub m_max: Option<usize>,
    /// CPU threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// GPU runs per data set (2 or more also checks that they are identical).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// A decision flip counts as a tie when the p-value is within this relative distance of alpha.
    #[arg(long, default_value_t = 1e-6)]
    pub tie_tol: f64,
    /// Threads per GPU launch at levels >= 2 (default: the backend's choice).
    #[arg(long)]
    pub round_budget: Option<u64>,
    /// Stop the CPU run after this many seconds (its timing is then reported as a lower bound).
    #[arg(long)]
    pub cpu_limit: Option<f64>,
    /// Run the GPU's levels 0 and 1 through host plans (the path before the dense levels).
    #[arg(long)]
    pub planned: bool,
    /// pcalg's skeleton method.
    #[arg(long, value_enum, default_value_t = OrderArg::Stable)]
    pub order: OrderArg,
}

#[derive(Args)]
struct RunArgs {
    /// Correlation matrix: raw little-endian f64 (p * p values) or .csv.
    #[arg(long, conflicts_with = "gen")]
    cor: Option<PathBuf>,
    /// Simulate a random Gaussian DAG data set.
    #[arg(long)]
    gen: bool,
    #[arg(long, default_value_t = 100)]
    p: usize,
    /// Sample size (of the data behind --cor, or to simulate).
    #[arg(long)]
    n: f64,
    /// Expected degree of the simulated DAG.
    #[arg(long, default_value_t = 4.0)]
    degree: f64,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Overwrite this many simulated variables by the sum of two others (collinear data).
    #[arg(long, default_value_t = 0)]
    collinear: usize,
    /// Write the simulated correlation matrix here (raw f64).
    #[arg(long)]
    save_cor: Option<PathBuf>,
    #[arg(long, value_enum, default_value_t = Which::Both)]
    backend: Which,
    #[command(flatten)]
    common: Common,
}

#[derive(Args)]
struct ParityArgs {
    #[arg(long, default_value_t = 100)]
    cases: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 5)]
    p_min: usize,
    #[arg(long, default_value_t = 300)]
    p_max: usize,
    #[arg(long, default_value_t = 20)]
    n_min: usize,
    #[arg(long, default_value_t = 5000)]
    n_max: usize,
    /// Every fourth case overwrites this many variables by the sum of two others (collinear
    /// data, exercising the pseudo-inverse path).
    #[arg(long, default_value_t = 3)]
    collinear: usize,
    #[command(flatten)]
    common: Common,
}

pub(crate) fn params(p: usize, c: &Common) -> SkeletonParams {
    SkeletonParams {
        alpha: c.alpha,
        order: c.order.order(),
        m_max: c.m_max,
        na_delete: true,
        start: Adjacency::complete(p),
        fixed_edges: Adjacency::empty(p),
        threads: 0,
    }
}

/// Cancels the run after a deadline.
struct Deadline(Option<Instant>);
impl Watch for Deadline {
    fn tick(&mut self, _: u64, _: u64) -> bool {
        self.0.map_or(true, |d| Instant::now() < d)
    }
}

pub type Res<T> = Result<T, String>;

fn run_cpu(c: &[f64], p: usize, n: f64, common: &Common) -> Res<(Option<SkeletonResult>, f64)> {
    let test = GaussTest::new(c.to_vec(), p, n, common.order.flavour()).map_err(|e| e.to_string())?;
    let mut be = ParallelCpu::new(&test, common.threads).map_err(|e| e.to_string())?;
    let mut watch = Deadline(common.cpu_limit.map(|s| Instant::now() + std::time::Duration::from_secs_f64(s)));
    let t = Instant::now();
    match run_skeleton(&params(p, common), &mut be, &mut watch) {
        Ok(r) => Ok((Some(r), t.elapsed().as_secs_f64())),
        Err(pc_core::PcError::Interrupted) => Ok((None, t.elapsed().as_secs_f64())),
        Err(e) => Err(e.to_string()),
    }
}

fn run_cuda(g: &mut CudaGauss, p: usize, common: &Common) -> Res<(SkeletonResult, f64, usize)> {
    let first = g.timings().levels.len();
    let t = Instant::now();
    let r = run_skeleton(&params(p, common), g, &mut NullWatch).map_err(|e| e.to_string())?;
    Ok((r, t.elapsed().as_secs_f64(), first))
}

fn tests(r: &SkeletonResult) -> f64 {
    r.n_edgetests.iter().sum()
}

fn print_levels(label: &str, r: &SkeletonResult) {
    // seconds: the backend's run_level plus the level loop's bookkeeping of its outcomes
    println!("  {label}: level  edges  tests  removed  seconds  plan_s  backend_s");
    for l in &r.levels {
        println!("  {label}: {:>5} {:>6} {:>6} {:>8} {:>8.3} {:>7.3} {:>9.3}", l.level, l.edges_at_start, l.tests, l.removed, l.seconds, l.plan_seconds, l.backend_seconds);
    }
}

fn cmd_kernels(cache: PathBuf) -> Result<ExitCode, String> {
    use pc_cuda::runtime::kernel_cache::{set_dir, DiskCache};
    use pc_cuda::runtime::module::{all_families, time_image};
    let cc = pc_cuda::probe()?.compute_capability;
    println!("family,nvrtc_s,disk_s");
    set_dir(None);
    let mut nvrtc = Vec::new();
    for f in all_families() {
        nvrtc.push(time_image(f, cc)?.0);
    }
    DiskCache::new(&cache).clear();
    set_dir(Some(cache.clone()));
    for (f, s) in all_families().into_iter().zip(&nvrtc) {
        time_image(f, cc)?; // stores it
        let (disk, from_disk) = time_image(f, cc)?;
        if !from_disk {
            return Err(format!("{} did not come back from the cache", f.name()));
        }
        println!("{},{s:.3},{disk:.4}", f.name());
    }
    println!("total (one after another),{:.3},", nvrtc.iter().sum::<f64>());
    Ok(ExitCode::SUCCESS)
}

fn cmd_probe() -> ExitCode {
    match pc_cuda::probe() {
        Ok(info) => {
            println!("GPU: {info}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("no usable GPU: {e}");
            ExitCode::from(3)
        }
    }
}

fn cmd_run(a: &RunArgs) -> Res<ExitCode> {
    let common = &a.common;
    let t = Instant::now();
    let (c, p, what) = if let Some(path) = &a.cor {
        let (c, p) = data::read_matrix(path)?;
        (c, p, format!("{} (p = {p})", path.display()))
    } else if a.gen {
        let (c, dag_edges) = data::random_dag_cor(a.p, a.n as usize, a.degree, a.seed, common.threads, a.collinear);
        (
            c,
            a.p,
            format!("simulated DAG p = {}, n = {}, degree {}, seed {}, {} collinear variables ({dag_edges} DAG edges)", a.p, a.n, a.degree, a.seed, a.collinear),
        )
    } else {
        return Err("give --cor FILE or --gen".into());
    };
    if let Some(path) = &a.save_cor {
        data::write_matrix(path, &c)?;
    }
    println!("data: {what}, n = {}, alpha = {}, prepared in {:.2} s", a.n, common.alpha, t.elapsed().as_secs_f64());
    let mut cpu_res = None;
    if a.backend != Which::Cuda {
        let (r, s) = run_cpu(&c, p, a.n, common)?;
        match &r {
            Some(r) => {
                println!("cpu ({} threads): {:.3} s, {} edges left, max.ord {}, {} tests", threads_label(common.threads), s, r.graph.n_edges(), r.max_ord, tests(r));
                print_levels("cpu", r);
            }
            None => println!("cpu ({} threads): stopped after {:.1} s (--cpu-limit)", threads_label(common.threads), s),
        }
        cpu_res = r;
    }
    let mut status = ExitCode::SUCCESS;
    if a.backend != Which::Cpu {
        let t = Instant::now();
        let mut g = CudaGauss::new(&c, p, a.n).map_err(|e| e.to_string())?;
        g.set_round_budget(common.round_budget);
        g.set_planned_only(common.planned);
        let setup = t.elapsed().as_secs_f64();
        let tm = g.timings().clone();
        println!("gpu: {}", g.info());
        println!(
            "gpu setup {:.3} s: NVRTC compile {:.3} s ({}{}), upload C {:.3} s",
            setup,
            tm.compile_s,
            tm.target,
            if tm.compile_cached { ", cached" } else { "" },
            tm.upload_s
        );
        if std::env::var("GPUPC_NVRTC_VERBOSE").is_ok() {
            println!("{}", g.nvrtc_log());
        }
        let mut runs = Vec::new();
        for k in 0..common.repeat.max(1) {
            let (r, s, first) = run_cuda(&mut g, p, common)?;
            let lv = &g.timings().levels[first..];
            let kern: f64 = lv.iter().map(|l| l.kernel_s).sum();
            let copy: f64 = lv.iter().map(|l| l.transfer_s).sum();
            println!(
                "cuda run {}: {:.3} s (kernels {:.3} s, copies {:.3} s), {} edges left, max.ord {}, {} tests",
                k + 1,
                s,
                kern,
                copy,
                r.graph.n_edges(),
                r.max_ord,
                tests(&r)
            );
            if k == 0 {
                println!("  cuda: level  edges  tests  removed  seconds  backend_s  kernel_s  copy_s  host_s  collect_s  launches  gpu_tests  pinv");
                for (l, t) in r.levels.iter().zip(lv) {
                    println!(
                        "  cuda: {:>5} {:>6} {:>6} {:>8} {:>8.3} {:>10.4} {:>9.4} {:>7.4} {:>7.4} {:>10.4} {:>9} {:>10} {:>5}{}",
                        l.level,
                        l.edges_at_start,
                        l.tests,
                        l.removed,
                        l.seconds,
                        t.total_s,
                        t.kernel_s,
                        t.transfer_s,
                        t.host_s,
                        t.collect_s,
                        t.launches,
                        t.gpu_tests,
                        t.fallbacks,
                        if t.on_cpu { " (on CPU)" } else { "" }
                    );
                }
            }
            runs.push(r);
        }
        for (k, r) in runs.iter().enumerate().skip(1) {
            if !identical(&runs[0], r) {
                println!("NONDETERMINISM: cuda run {} differs from run 1", k + 1);
                status = ExitCode::from(2);
            } else {
                println!("cuda run {} identical to run 1", k + 1);
            }
        }
        if let Some(cr) = &cpu_res {
            let d = compare(cr, &runs[0]);
            if d.is_empty() {
                println!("parity cpu vs cuda: identical (pMax max rel diff {:.2e})", d.pmax_max_rel);
            } else {
                println!("parity cpu vs cuda: DIFFER: {d}");
                let (flips, real) = lockstep(&c, p, a.n, common)?;
                print_flips(&flips, "  ");
                if real > 0 {
                    status = ExitCode::from(1);
                }
            }
        }
    }
    Ok(status)
}

fn threads_label(t: usize) -> String {
    if t == 0 {
        format!("{}", std::thread::available_parallelism().map_or(1, |t| t.get()))
    } else {
        t.to_string()
    }
}

/// Lock-step CPU/GPU run: returns the decision flips and how many are not ties (p-value
/// differences beyond PMAX_REL on agreeing decisions count as not ties too).
/// One line per edge the backends decided differently, indented by `indent`.
fn print_flips(flips: &[compare::Flip], indent: &str) {
    for f in flips {
        println!(
            "{indent}level {} edge {}-{}: p = {:.17e} ({:.2e} from alpha) {}",
            f.level,
            f.i + 1,
            f.j + 1,
            f.p,
            f.rel_to_alpha,
            if f.tie { "tie" } else { "MISMATCH" }
        );
    }
}

fn lockstep(c: &[f64], p: usize, n: f64, common: &Common) -> Res<(Vec<compare::Flip>, usize)> {
    let test = GaussTest::new(c.to_vec(), p, n, common.order.flavour()).map_err(|e| e.to_string())?;
    let mut cpu = ParallelCpu::new(&test, common.threads).map_err(|e| e.to_string())?;
    let mut g = CudaGauss::new(c, p, n).map_err(|e| e.to_string())?;
    g.set_round_budget(common.round_budget);
        g.set_planned_only(common.planned);
    let mut ls = Lockstep { a: &mut cpu, b: &mut g, test: &test, tie_tol: common.tie_tol, flips: Vec::new(), p_diffs: Vec::new() };
    run_skeleton(&params(p, common), &mut ls, &mut NullWatch).map_err(|e| e.to_string())?;
    for (l, i, j, pa, pb) in &ls.p_diffs {
        println!("  level {l} edge {}-{}: level p cpu {pa:.17e} cuda {pb:.17e}", i + 1, j + 1);
    }
    let real = ls.flips.iter().filter(|f| !f.tie).count() + ls.p_diffs.len();
    Ok((ls.flips, real))
}

fn cmd_parity(a: &ParityArgs) -> Res<ExitCode> {
    let common = &a.common;
    let info = pc_cuda::probe()?;
    println!("gpu: {info}");
    let mut rng = data::Rng::new(a.seed);
    let (mut n_ok, mut n_tie, mut n_bad, mut n_nondet) = (0, 0, 0, 0);
    let mut n_pinv = 0u64;
    let (mut cpu_s, mut cuda_s) = (0.0, 0.0);
    let mut max_rel: f64 = 0.0;
    println!("case      p      n  degree coll  edges  max.ord      tests   pinv    cpu_s   cuda_s  result");
    for case in 0..a.cases {
        // log-uniform p and n, degree 1..6
        let p = log_uniform(&mut rng, a.p_min, a.p_max);
        let n = log_uniform(&mut rng, a.n_min, a.n_max);
        let degree = 1.0 + 5.0 * rng.uniform();
        let seed = rng.next_u64();
        let dups = if case % 4 == 3 { a.collinear } else { 0 };
        let (c, _) = data::random_dag_cor(p, n, degree, seed, common.threads, dups);
        let (cr, cs) = run_cpu(&c, p, n as f64, common)?;
        let cr = cr.ok_or("the CPU run hit --cpu-limit")?;
        let mut g = CudaGauss::new(&c, p, n as f64).map_err(|e| e.to_string())?;
        g.set_round_budget(common.round_budget);
        g.set_planned_only(common.planned);
        let mut runs = Vec::new();
        let mut gs = 0.0;
        let mut pinv = 0u64;
        for _ in 0..common.repeat.max(1) {
            let (r, s, first) = run_cuda(&mut g, p, common)?;
            pinv = g.timings().levels[first..].iter().map(|l| l.fallbacks).sum();
            gs += s;
            runs.push(r);
        }
        n_pinv += pinv;
        cpu_s += cs;
        cuda_s += gs / runs.len() as f64;
        let (v, rel) = verdict(&cr, &runs);
        max_rel = max_rel.max(rel);
        let result = match v {
            Verdict::Nondeterministic => {
                n_nondet += 1;
                "NONDETERMINISTIC".to_string()
            }
            Verdict::Identical => {
                n_ok += 1;
                "identical".to_string()
            }
            Verdict::Differ(d) => {
                let (flips, real) = lockstep(&c, p, n as f64, common)?;
                print_flips(&flips, "      ");
                if real == 0 && !flips.is_empty() {
                    n_tie += 1;
                    format!("tie at alpha ({d})")
                } else {
                    n_bad += 1;
                    format!("MISMATCH ({d})")
                }
            }
        };
        println!(
            "{:>4} {:>6} {:>6} {:>7.2} {:>4} {:>6} {:>8} {:>10} {:>6} {:>8.3} {:>8.3}  {}",
            case + 1,
            p,
            n,
            degree,
            dups,
            cr.graph.n_edges(),
            cr.max_ord,
            tests(&cr),
            pinv,
            cs,
            gs / runs.len() as f64,
            result
        );
    }
    println!(
        "parity: {} cases, {} identical, {} ties at alpha, {} mismatches, {} nondeterministic; GPU runs per case {}; \
         pMax max rel diff {:.2e}; GPU tests on the pseudo-inverse path {}; total cpu {:.2} s, cuda {:.2} s",
        a.cases,
        n_ok,
        n_tie,
        n_bad,
        n_nondet,
        common.repeat.max(1),
        max_rel,
        n_pinv,
        cpu_s,
        cuda_s
    );
    Ok(if n_nondet > 0 {
        ExitCode::from(2)
    } else if n_bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

pub fn log_uniform(rng: &mut data::Rng, lo: usize, hi: usize) -> usize {
    let (a, b) = ((lo.max(1) as f64).ln(), (hi.max(lo).max(1) as f64).ln());
    ((a + (b - a) * rng.uniform()).exp().round() as usize).clamp(lo, hi.max(lo))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let r = match &cli.cmd {
        Cmd::Probe => return cmd_probe(),
        Cmd::Kernels { cache } => cmd_kernels(cache.clone()),
        Cmd::Run(a) => cmd_run(a),
        Cmd::Parity(a) => cmd_parity(a),
        Cmd::Discrete(a) => discrete::cmd_discrete(a),
        Cmd::Cmiknn(a) => cmiknn::cmd_cmiknn(a),
        Cmd::Pchisq { fixtures } => discrete::cmd_pchisq(fixtures),
        Cmd::Jtree(a) => jtree::cmd_jtree(a),
        Cmd::Multi(a) => multi::cmd_multi(a),
    };
    // kernels still compiling in the background (the next set size, prefetched) must finish
    // before the process exits: NVRTC's teardown under a running compile crashes
    pc_cuda::runtime::module::wait_for_prefetches();
    match r {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pcbench: {e}");
            ExitCode::from(3)
        }
    }
}
