//! `pcbench discrete`: the G^2 tests (disCItest / binCItest) on simulated discrete data, CPU
//! against GPU: many random cases (parity), or one large data set (timing, size limits).

use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use pc_core::backend::NullWatch;
use pc_core::citest::{DiscreteData, GSquareKind, GSquareTest};
use pc_core::cpu::ParallelCpu;
use pc_core::graph::Adjacency;
use pc_core::plan::Order;
use pc_core::skeleton::{run_skeleton, SkeletonParams, SkeletonResult};
use pc_cuda::CudaGSquare;

use crate::compare::{compare, identical, verdict, Verdict};
use crate::data::Rng;
use crate::{log_uniform, Common, Res};

#[derive(Args)]
pub struct DiscreteArgs {
    /// Random cases to compare (0: one data set of --p variables and --n rows).
    #[arg(long, default_value_t = 0)]
    cases: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value_t = 100)]
    p: usize,
    #[arg(long, default_value_t = 10000)]
    n: usize,
    #[arg(long, default_value_t = 5)]
    p_min: usize,
    #[arg(long, default_value_t = 80)]
    p_max: usize,
    #[arg(long, default_value_t = 100)]
    n_min: usize,
    #[arg(long, default_value_t = 50000)]
    n_max: usize,
    /// Levels per variable: 2..=this (random per variable).
    #[arg(long, default_value_t = 5)]
    max_levels: u32,
    /// Parents per variable: 0..=this.
    #[arg(long, default_value_t = 3)]
    max_parents: u64,
    /// One data set: which backends run.
    #[arg(long, default_value = "both")]
    backend: String,
    /// One data set read from a file (bench/lib/export-codes.R writes one) instead of simulated.
    #[arg(long)]
    codes: Option<std::path::PathBuf>,
    /// Threads per block of the G^2 kernel (default: the backend's, 128).
    #[arg(long)]
    block: Option<u32>,
    /// Growth of an edge's window from round to round, in percent (default: the backend's).
    #[arg(long)]
    growth: Option<u64>,
    /// How the G^2 kernel counts tables of fewer than 65536 cells: "packed" (the backend's
    /// default), "runs", or "both" (the runs of each, which must be identical to each other).
    #[arg(long, default_value = "packed")]
    count: String,
    /// Table words a block of the G^2 kernel keeps in shared memory (default: the backend's).
    #[arg(long)]
    shared_words: Option<u32>,
    #[command(flatten)]
    common: Common,
}

/// Each variable is a noisy function of up to `max_parents` earlier ones (so tests at every
/// level both succeed and fail); rows are generated in parallel chunks.
pub fn random_discrete(p: usize, n: usize, max_levels: u32, max_parents: u64, seed: u64) -> DiscreteData {
    let mut r = Rng::new(seed);
    let nlev: Vec<u32> = (0..p).map(|_| 2 + (r.next_u64() % (max_levels.max(2) as u64 - 1)) as u32).collect();
    let parents: Vec<Vec<usize>> = (0..p)
        .map(|j| if j == 0 { vec![] } else { (0..r.next_u64() % (max_parents + 1)).map(|_| (r.next_u64() % j as u64) as usize).collect() })
        .collect();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let chunk = n.div_ceil(threads).max(1);
    let parts: Vec<Vec<u8>> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..n.div_ceil(chunk))
            .map(|c| {
                let (nlev, parents) = (&nlev, &parents);
                s.spawn(move || {
                    let rows = chunk.min(n - c * chunk);
                    let mut rr = Rng::new(seed ^ (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
                    let mut out = vec![0u8; rows * p]; // row-major within the chunk
                    for s in 0..rows {
                        for j in 0..p {
                            let v = if !parents[j].is_empty() && rr.uniform() < 0.7 {
                                parents[j].iter().map(|&q| out[s * p + q] as u32 * (q as u32 + 1)).sum::<u32>() % nlev[j]
                            } else {
                                (rr.next_u64() % nlev[j] as u64) as u32
                            };
                            out[s * p + j] = v as u8;
                        }
                    }
                    out
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("data thread")).collect()
    });
    let mut codes = vec![0u8; n * p];
    for (c, part) in parts.iter().enumerate() {
        for (s, row) in part.chunks(p).enumerate() {
            for (j, &v) in row.iter().enumerate() {
                codes[j * n + c * chunk + s] = v;
            }
        }
    }
    let nlev_obs = relabel_observed(&mut codes, n, p);
    DiscreteData::new(n, p, codes, nlev_obs).expect("simulated data are valid")
}

/// Every level must occur for pcalg-style nlev: relabels each column (n codes, column-major) to
/// its observed levels in increasing order and returns their counts (at least 2).
pub fn relabel_observed(codes: &mut [u8], n: usize, p: usize) -> Vec<u32> {
    let mut nlev_obs = vec![2u32; p];
    for j in 0..p {
        let col = &mut codes[j * n..(j + 1) * n];
        let mut seen = [false; 256];
        col.iter().for_each(|&v| seen[v as usize] = true);
        // observed levels in increasing order get codes 0, 1, ...
        let mut map = [0u8; 256];
        let mut next = 0u8;
        for k in (0..256).filter(|&k| seen[k]) {
            map[k] = next;
            next += 1;
        }
        col.iter_mut().for_each(|v| *v = map[*v as usize]);
        nlev_obs[j] = (next as u32).max(2);
    }
    nlev_obs
}

/// Reads export-codes.R's format: n and p (u32 LE), p level counts (u32 LE), n * p codes.
fn read_codes(path: &std::path::Path) -> Res<DiscreteData> {
    let b = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let u32_at = |k: usize| -> Res<usize> {
        b.get(4 * k..4 * k + 4).map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]) as usize).ok_or_else(|| format!("{}: too short", path.display()))
    };
    let (n, p) = (u32_at(0)?, u32_at(1)?);
    let nlev: Vec<u32> = (0..p).map(|j| u32_at(2 + j).map(|v| v as u32)).collect::<Res<_>>()?;
    let head = 4 * (2 + p);
    if b.len() != head + n * p {
        return Err(format!("{}: {} bytes, expected {} for n = {n}, p = {p}", path.display(), b.len(), head + n * p));
    }
    DiscreteData::new(n, p, b[head..].to_vec(), nlev).map_err(|e| e.to_string())
}

fn params(p: usize, order: Order, c: &Common) -> SkeletonParams {
    SkeletonParams { alpha: c.alpha, order, m_max: c.m_max, na_delete: true, start: Adjacency::complete(p), fixed_edges: Adjacency::empty(p), threads: 0 }
}

fn run_cpu(t: &GSquareTest, order: Order, c: &Common) -> Res<(SkeletonResult, f64)> {
    let mut be = ParallelCpu::new(t, c.threads).map_err(|e| e.to_string())?;
    let s = Instant::now();
    let r = run_skeleton(&params(t.data.p, order, c), &mut be, &mut NullWatch).map_err(|e| e.to_string())?;
    Ok((r, s.elapsed().as_secs_f64()))
}

fn run_gpu(g: &mut CudaGSquare, p: usize, order: Order, c: &Common) -> Res<(SkeletonResult, f64, usize)> {
    let first = g.timings().levels.len();
    let s = Instant::now();
    let r = run_skeleton(&params(p, order, c), g, &mut NullWatch).map_err(|e| e.to_string())?;
    Ok((r, s.elapsed().as_secs_f64(), first))
}

/// `--count`: the settings of `CudaGSquare::set_packed` to run, in order.
fn count_modes(arg: &str) -> Res<Vec<bool>> {
    match arg {
        "packed" => Ok(vec![true]),
        "runs" => Ok(vec![false]),
        "both" => Ok(vec![true, false]),
        o => Err(format!("--count must be packed, runs or both, not {o}")),
    }
}

fn tests(r: &SkeletonResult) -> f64 {
    r.n_edgetests.iter().sum()
}

pub fn cmd_discrete(a: &DiscreteArgs) -> Res<ExitCode> {
    let c = &a.common;
    if a.cases == 0 {
        return one_data_set(a);
    }
    println!("gpu: {}", pc_cuda::probe()?);
    let mut rng = Rng::new(a.seed);
    let (mut ok, mut bad, mut nondet) = (0, 0, 0);
    let mut max_rel: f64 = 0.0;
    println!("case     p       n lev  kind adapt  order        edges max.ord    tests    cpu_s    gpu_s  result");
    for case in 0..a.cases {
        let p = log_uniform(&mut rng, a.p_min, a.p_max);
        let n = log_uniform(&mut rng, a.n_min, a.n_max);
        let bin = case % 3 == 2;
        let lev = if bin { 2 } else { 2 + (rng.next_u64() % (a.max_levels.max(2) as u64 - 1)) as u32 };
        let data = random_discrete(p, n, lev, a.max_parents, rng.next_u64());
        let kind = if bin { GSquareKind::Bin } else { GSquareKind::Dis };
        let adapt = case % 2 == 1;
        let order = if case % 4 < 2 { Order::Stable } else { Order::StableFast };
        let t = GSquareTest::new(data, kind, adapt).map_err(|e| e.to_string())?;
        let (cr, cs) = run_cpu(&t, order, c)?;
        let mut g = CudaGSquare::new(&t).map_err(|e| e.to_string())?;
        let mut runs = Vec::new();
        let mut gs = 0.0;
        for packed in count_modes(&a.count)? {
            g.set_packed(packed);
            for _ in 0..c.repeat.max(1) {
                let (r, s, _) = run_gpu(&mut g, p, order, c)?;
                gs += s;
                runs.push(r);
            }
        }
        let (v, rel) = verdict(&cr, &runs);
        max_rel = max_rel.max(rel);
        let result = match v {
            Verdict::Nondeterministic => {
                nondet += 1;
                "NONDETERMINISTIC".to_string()
            }
            Verdict::Identical => {
                ok += 1;
                "identical".to_string()
            }
            Verdict::Differ(d) => {
                bad += 1;
                format!("DIFFER ({d})")
            }
        };
        println!(
            "{:>4} {:>5} {:>7} {:>3} {:>5} {:>5} {:>11} {:>6} {:>7} {:>8} {:>8.3} {:>8.3}  {}",
            case + 1,
            p,
            n,
            lev,
            if bin { "bin" } else { "dis" },
            adapt,
            format!("{order:?}"),
            cr.graph.n_edges(),
            cr.max_ord,
            tests(&cr),
            cs,
            gs / runs.len() as f64,
            result
        );
    }
    println!(
        "discrete parity: {} cases, {ok} identical, {bad} differ, {nondet} nondeterministic; GPU runs per case {} (count {}); pMax max rel diff {max_rel:.2e}",
        a.cases,
        c.repeat.max(1) * count_modes(&a.count)?.len(),
        a.count
    );
    Ok(if nondet > 0 {
        ExitCode::from(2)
    } else if bad > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn one_data_set(a: &DiscreteArgs) -> Res<ExitCode> {
    let c = &a.common;
    let t0 = Instant::now();
    let data = match &a.codes {
        Some(f) => read_codes(f)?,
        None => random_discrete(a.p, a.n, a.max_levels, a.max_parents, a.seed),
    };
    println!(
        "data: {}, p = {}, n = {}, largest number of levels {}, {:.2} GB of codes, made in {:.1} s",
        a.codes.as_ref().map_or_else(|| format!("simulated (levels 2..={})", a.max_levels), |f| f.display().to_string()),
        data.p,
        data.n,
        data.nlev.iter().max().unwrap_or(&0),
        (data.n * data.p) as f64 / 1e9,
        t0.elapsed().as_secs_f64()
    );
    let p = data.p;
    let t = GSquareTest::new(data, GSquareKind::Dis, false).map_err(|e| e.to_string())?;
    let mut cpu = None;
    if a.backend != "cuda" {
        let (r, s) = run_cpu(&t, Order::Stable, c)?;
        println!("cpu: {s:.3} s, {} edges left, max.ord {}, {} tests", r.graph.n_edges(), r.max_ord, tests(&r));
        cpu = Some(r);
    }
    let mut status = ExitCode::SUCCESS;
    if a.backend != "cpu" {
        let s = Instant::now();
        let mut g = CudaGSquare::new(&t).map_err(|e| e.to_string())?;
        g.set_block(a.block).map_err(|e| e.to_string())?;
        g.set_window_growth(a.growth);
        g.set_shared_words(a.shared_words).map_err(|e| e.to_string())?;
        g.set_threads(c.threads).map_err(|e| e.to_string())?;
        println!("gpu: {}; setup {:.3} s (NVRTC {:.3} s, upload {:.3} s)", g.info(), s.elapsed().as_secs_f64(), g.timings().compile_s, g.timings().upload_s);
        let mut runs = Vec::new();
        let modes = count_modes(&a.count)?;
        let reps = c.repeat.max(1);
        for k in 0..reps * modes.len() {
            if k % reps == 0 {
                g.set_packed(modes[k / reps]);
                println!("count: {}", if modes[k / reps] { "packed" } else { "runs" });
            }
            let (r, s, first) = run_gpu(&mut g, p, Order::Stable, c)?;
            let lv = &g.timings().levels[first..];
            println!(
                "gpu run {}: {s:.3} s (kernels {:.3} s, copies {:.3} s), {} edges left, max.ord {}, {} tests",
                k + 1,
                lv.iter().map(|l| l.kernel_s).sum::<f64>(),
                lv.iter().map(|l| l.transfer_s).sum::<f64>(),
                r.graph.n_edges(),
                r.max_ord,
                tests(&r)
            );
            if k % reps == 0 {
                println!("  gpu: level  edges     tests  seconds  kernel_s  copy_s  host_s  other_s  launches  gpu_tests");
                for (l, t) in r.levels.iter().zip(lv) {
                    println!(
                        "  gpu: {:>5} {:>6} {:>9} {:>8.3} {:>9.4} {:>7.4} {:>7.4} {:>8.4} {:>9} {:>10}",
                        l.level, l.edges_at_start, l.tests, l.seconds, t.kernel_s, t.transfer_s, t.host_s, t.collect_s, t.launches, t.gpu_tests
                    );
                }
            }
            runs.push(r);
        }
        if runs.iter().skip(1).any(|r| !identical(&runs[0], r)) {
            println!("NONDETERMINISM: GPU runs differ");
            status = ExitCode::from(2);
        }
        if let Some(cr) = &cpu {
            let d = compare(cr, &runs[0]);
            println!("parity cpu vs gpu: {}", if d.is_empty() { format!("identical (pMax max rel diff {:.2e})", d.pmax_max_rel) } else { format!("DIFFER: {d}") });
            if !d.is_empty() {
                status = ExitCode::from(1);
            }
        }
    }
    Ok(status)
}

/// Reads a CSV of numbers with a header: (column names, rows).
fn read_csv(path: &std::path::Path) -> Res<(Vec<String>, Vec<Vec<f64>>)> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut lines = text.lines();
    let head: Vec<String> = lines.next().unwrap_or("").split(',').map(|s| s.trim().to_string()).collect();
    let rows = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|v| v.trim().parse::<f64>().map_err(|e| format!("{}: {v}: {e}", path.display()))).collect())
        .collect::<Res<Vec<Vec<f64>>>>()?;
    Ok((head, rows))
}

/// The device's pchisq against R (pchisq.csv) and mpmath (pchisq_exact.csv), next to the CPU's.
pub fn cmd_pchisq(dir: &std::path::Path) -> Res<ExitCode> {
    use pc_core::citest::special::pchisq_upper;
    let rel = |a: f64, b: f64| if a == b { 0.0 } else { (a - b).abs() / b.abs() };
    let mut worst = 0.0f64;
    for (file, col) in [("pchisq.csv", "R's pchisq"), ("pchisq_exact.csv", "exact (mpmath)")] {
        let (_, rows) = read_csv(&dir.join(file))?;
        let q: Vec<f64> = rows.iter().map(|r| r[0]).collect();
        let df: Vec<f64> = rows.iter().map(|r| r[1]).collect();
        let gpu = pc_cuda::gsquare::device_pchisq(&q, &df).map_err(|e| e.to_string())?;
        let (mut e_gpu, mut e_cpu, mut e_gc, mut at) = (0.0f64, 0.0f64, 0.0f64, 0);
        let mut tail = 0;
        for (k, r) in rows.iter().enumerate() {
            let cpu = pchisq_upper(q[k], df[k]);
            let eg = rel(gpu[k], r[2]);
            if eg > e_gpu {
                e_gpu = eg;
                at = k;
            }
            e_cpu = e_cpu.max(rel(cpu, r[2]));
            e_gc = e_gc.max(rel(gpu[k], cpu));
            tail += (r[2] < 1e-100) as usize;
        }
        println!(
            "{file}: {} points ({tail} with p < 1e-100, smallest {:.3e}), max rel err vs {col}: GPU {e_gpu:.3e} (x = {}, df = {}), CPU {e_cpu:.3e}; GPU vs CPU {e_gc:.3e}",
            rows.len(),
            rows.iter().map(|r| r[2]).fold(f64::INFINITY, f64::min),
            q[at],
            df[at]
        );
        worst = worst.max(e_gpu);
    }
    Ok(if worst <= 1e-12 { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
