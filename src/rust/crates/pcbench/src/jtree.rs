//! `pcbench jtree`: junction-tree inference without R on BIF networks: compilation sizes, one
//! query without evidence and a batch of evidence sets drawn from forward samples, on the CPU
//! engine and the GPU; GPU against CPU (marginals, P(evidence), MPE) and GPU run against run.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use pc_jtree::engine::{marginals_cpu, mpe_cpu, Options};
use pc_jtree::{Evidence, Heuristic, Limits, Network, Plan};

use crate::data::Rng;
use crate::Res;

#[derive(Args)]
pub struct JtreeArgs {
    /// BIF files (.bif or .bif.gz, read through gzip -dc).
    #[arg(required = true)]
    pub bif: Vec<PathBuf>,
    /// Evidence sets in the batch.
    #[arg(long, default_value_t = 10000)]
    pub rows: usize,
    /// Fraction of the nodes observed in each evidence set.
    #[arg(long, default_value_t = 0.05)]
    pub observed: f64,
    /// Rows of the batch the CPU engine also runs (timed; compared with the GPU).
    #[arg(long, default_value_t = 200)]
    pub cpu_rows: usize,
    /// Rows whose MPE is compared.
    #[arg(long, default_value_t = 100)]
    pub mpe_rows: usize,
    /// CPU threads (0: all cores).
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// auto, minfill, minweight or wminfill (gpu_jtree()'s `triangulation`).
    #[arg(long, default_value = "auto")]
    pub triangulation: String,
    /// Skip the GPU.
    #[arg(long)]
    pub cpu_only: bool,
    /// Append one CSV row per network here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Rows of the batch run a second time on the GPU to check run-to-run identity (0: all).
    #[arg(long, default_value_t = 0)]
    pub repeat_rows: usize,
    /// Append the GPU's (with --cpu-only the CPU's) MPE of the first `mpe_rows` evidence sets here (tab-separated: network,
    /// row, evidence as var=state;..., the MPE as var=state;..., ln P(mpe, evidence)), for
    /// jtree-pyagrum.py to compare with pyAgrum's.
    #[arg(long)]
    pub mpe_out: Option<PathBuf>,
    /// After the timed batch, run its first N rows again with every launch waited for and timed
    /// (per phase and depth, with the table bytes each must move) and print that profile.
    #[arg(long, default_value_t = 0)]
    pub profile_rows: usize,
    /// Append the profile here (network, phase, depth, launches, seconds, bytes, GB/s).
    #[arg(long)]
    pub profile_csv: Option<PathBuf>,
}

pub fn read_bif(p: &PathBuf) -> Res<Network> {
    let text = if p.extension().is_some_and(|e| e == "gz") {
        let o = std::process::Command::new("gzip").arg("-dc").arg(p).output().map_err(|e| format!("gzip: {e}"))?;
        String::from_utf8(o.stdout).map_err(|e| e.to_string())?
    } else {
        std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?
    };
    pc_jtree::bif::parse_bif(&text).map_err(|e| e.to_string())
}

/// Evidence sets from forward samples (so each is possible): each node observed with `frac`.
pub fn sampled_evidence(net: &Network, rows: usize, frac: f64, rng: &mut Rng) -> Res<Evidence> {
    let order = net.topological_order().map_err(|e| e.to_string())?;
    let n = net.len();
    let mut ev = Evidence::empty(n, rows);
    let mut x = vec![0usize; n];
    let k = ((frac * n as f64).round() as usize).clamp(1, n);
    for r in 0..rows {
        for &v in &order {
            let u = rng.uniform();
            let mut acc = 0.0;
            x[v] = net.card(v) - 1;
            for s in 0..net.card(v) {
                x[v] = s;
                acc += net.cpt_value(v, &x);
                if u < acc {
                    break;
                }
            }
        }
        // k distinct nodes
        let mut picked = 0;
        while picked < k {
            let v = (rng.next_u64() % n as u64) as usize;
            if ev.hard[r * n + v] < 0 {
                ev.hard[r * n + v] = x[v] as i32;
                picked += 1;
            }
        }
    }
    Ok(ev)
}

/// The batch's first rows again, every launch waited for: time and bytes per phase and depth.
fn profile(g: &mut pc_cuda::jtree::CudaJtree, name: &str, ev: &Evidence, csv: Option<&PathBuf>) -> Res<()> {
    g.set_profile(true);
    let t = Instant::now();
    g.marginals(ev, None, &mut |_, _| true).map_err(|e| e.to_string())?;
    let wall = t.elapsed().as_secs_f64();
    let rows = g.profile();
    g.set_profile(false);
    let (ks, kb): (f64, f64) = rows.iter().fold((0.0, 0.0), |a, r| (a.0 + r.seconds, a.1 + r.bytes));
    println!("  profile of {} rows ({} chunks of {}): {wall:.3} s wall, {ks:.3} s in kernels, {:.1} GB of tables moved ({:.0} GB/s over the kernels)", ev.rows, g.layout.chunks, g.layout.rows_per_chunk, kb / 1e9, kb / ks / 1e9);
    let mut by_phase: Vec<(&str, f64, f64, u64)> = Vec::new();
    for r in &rows {
        match by_phase.iter_mut().find(|p| p.0 == r.phase) {
            Some(p) => {
                p.1 += r.seconds;
                p.2 += r.bytes;
                p.3 += r.launches;
            }
            None => by_phase.push((r.phase, r.seconds, r.bytes, r.launches)),
        }
    }
    for (ph, s, b, l) in &by_phase {
        println!("    {ph:<18} {l:>6} launches {s:>9.4} s ({:>5.1}%) {:>9.2} GB {:>7.0} GB/s", 100.0 * s / ks, b / 1e9, b / s / 1e9);
    }
    let mut top: Vec<_> = rows.iter().collect();
    top.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    for r in top.iter().take(8) {
        println!("    top: {:<18} depth {:>3} {:>9.4} s {:>9.2} GB {:>7.0} GB/s", r.phase, r.depth, r.seconds, r.bytes / 1e9, r.bytes / r.seconds / 1e9);
    }
    if let Some(p) = csv {
        let new = !p.exists();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| e.to_string())?;
        if new {
            writeln!(f, "network,rows,phase,depth,launches,seconds,bytes,gb_per_s").map_err(|e| e.to_string())?;
        }
        for r in &rows {
            writeln!(f, "{name},{},{},{},{},{},{},{}", ev.rows, r.phase, r.depth, r.launches, r.seconds, r.bytes, r.bytes / r.seconds / 1e9).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn rows_of(ev: &Evidence, m: usize) -> Evidence {
    let m = m.min(ev.rows);
    Evidence { rows: m, hard: ev.hard[..m * ev.n_vars].to_vec(), soft: ev.soft[..m * ev.soft_width].to_vec(), ..ev.clone() }
}

fn max_rel(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| if x == y || (x.is_nan() && y.is_nan()) { 0.0 } else { (x - y).abs() / x.abs().max(y.abs()).max(1e-300) }).fold(0.0, f64::max)
}

/// Every value of `m`, variable by variable (the same order for two answers of as many rows).
fn flat(m: &pc_jtree::Marginals) -> Vec<f64> {
    m.nodes.concat()
}

fn max_abs(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| if x.is_nan() && y.is_nan() { 0.0 } else { (x - y).abs() }).fold(0.0, f64::max)
}

fn assignment(net: &Network, states: &[i32]) -> String {
    let parts: Vec<String> = (0..net.len()).filter(|&v| states[v] >= 0).map(|v| format!("{}={}", net.names[v], net.states[v][states[v] as usize])).collect();
    parts.join(";")
}

fn write_mpe(p: &PathBuf, name: &str, net: &Network, ev: &Evidence, mpe: &pc_jtree::engine::Mpe) -> Res<()> {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| e.to_string())?;
    let n = net.len();
    for r in 0..ev.rows {
        let (e, x) = (assignment(net, &ev.hard[r * n..(r + 1) * n]), assignment(net, &mpe.states[r * n..(r + 1) * n]));
        writeln!(f, "{name}\t{r}\t{e}\t{x}\t{:.17e}", mpe.prob[r].ln()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

pub fn cmd_jtree(a: &JtreeArgs) -> Res<ExitCode> {
    let h = Heuristic::parse(&a.triangulation).map_err(|e| e.to_string())?;
    let opts = Options { threads: a.threads, memory_bytes: 16 << 30 };
    let mut ok = true;
    let mut csv = match &a.csv {
        Some(p) => {
            let new = !p.exists();
            let mut f = std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| e.to_string())?;
            if new {
                writeln!(f, "network,nodes,cliques,max_clique_cells,total_cells,compile_s,single_cpu_s,single_gpu_s,rows,observed,batch_gpu_s,gpu_rows_per_chunk,cpu_rows,batch_cpu_s,cpu_s_per_row,gpu_s_per_row,max_abs_marg_diff,max_rel_pe_diff,gpu_identical,mpe_rows,mpe_same_states,mpe_max_rel_prob_diff").map_err(|e| e.to_string())?;
            }
            Some(f)
        }
        None => None,
    };
    for path in &a.bif {
        let name = path.file_name().and_then(|s| s.to_str()).unwrap_or("?").trim_end_matches(".gz").trim_end_matches(".bif").to_string();
        let net = read_bif(path)?;
        let t = Instant::now();
        let plan = match Plan::compile(&net, h, Limits::default(), a.threads) {
            Ok(p) => p,
            Err(e) => {
                println!("{name}: {e}");
                continue;
            }
        };
        let compile_s = t.elapsed().as_secs_f64();
        let s = &plan.stats;
        println!(
            "{name}: {} nodes, {} cliques in {} trees, depth {}, largest clique {} vars / {} cells, {} cells in all ({:.1} MB per evidence set), compiled in {compile_s:.2} s",
            net.len(), s.cliques, s.trees, s.depth, s.max_clique_vars, s.max_clique_cells, s.total_clique_cells, s.bytes_per_evidence_set as f64 / 1e6
        );
        let none = Evidence::empty(net.len(), 1);
        let t = Instant::now();
        let m_cpu1 = marginals_cpu(&plan, &none, opts).map_err(|e| e.to_string())?;
        let single_cpu = t.elapsed().as_secs_f64();
        let mut rng = Rng::new(a.seed);
        let ev = sampled_evidence(&net, a.rows, a.observed, &mut rng)?;
        let sub = rows_of(&ev, a.cpu_rows);
        let t = Instant::now();
        let m_cpu = marginals_cpu(&plan, &sub, opts).map_err(|e| e.to_string())?;
        let batch_cpu = t.elapsed().as_secs_f64();
        let mev = rows_of(&ev, a.mpe_rows);
        let mpe_c = mpe_cpu(&plan, &mev, opts).map_err(|e| e.to_string())?;
        let (mut single_gpu, mut batch_gpu, mut chunk, mut dmarg, mut dpe, mut ident, mut same, mut dprob) = (f64::NAN, f64::NAN, 0, f64::NAN, f64::NAN, false, 0, f64::NAN);
        if !a.cpu_only {
            let t = Instant::now();
            let mut g = pc_cuda::jtree::CudaJtree::new(&plan).map_err(|e| e.to_string())?;
            println!(
                "  GPU set-up {:.3} s (kernels compiled in {:.3} s); cell maps: {}",
                t.elapsed().as_secs_f64(),
                g.timings.compile_s,
                if g.layout.maps { format!("{:.1} MB made in {:.3} s", g.layout.map_bytes as f64 / 1e6, g.timings.setup_s) } else { "off".into() }
            );
            let m1 = g.marginals(&none, None, &mut |_, _| true).map_err(|e| e.to_string())?; // warm-up
            let t = Instant::now();
            let m1b = g.marginals(&none, None, &mut |_, _| true).map_err(|e| e.to_string())?;
            single_gpu = t.elapsed().as_secs_f64();
            let d1 = max_abs(&flat(&m1), &flat(&m_cpu1)).max(max_abs(&flat(&m1b), &flat(&m1)));
            let t = Instant::now();
            let mg = g.marginals(&ev, None, &mut |_, _| true).map_err(|e| e.to_string())?;
            batch_gpu = t.elapsed().as_secs_f64();
            chunk = g.layout.rows_per_chunk;
            println!(
                "  GPU batch: {} chunks of {chunk} rows, {} launches, kernels (wall, per chunk) {:.3} s, transfers {:.3} s, host normalising {:.3} s (overlapped)",
                g.layout.chunks, g.timings.launches, g.timings.kernel_s, g.timings.transfer_s, g.timings.host_s
            );
            if a.profile_rows > 0 {
                profile(&mut g, &name, &rows_of(&ev, a.profile_rows), a.profile_csv.as_ref())?;
            }
            let rep = if a.repeat_rows == 0 { ev.rows } else { a.repeat_rows.min(ev.rows) };
            let mg2 = g.marginals(&rows_of(&ev, rep), None, &mut |_, _| true).map_err(|e| e.to_string())?;
            ident = mg.first_rows(rep).bits() == mg2.bits()
                && mg.pe[..rep].iter().zip(&mg2.pe).all(|(x, y)| x.to_bits() == y.to_bits());
            dmarg = max_abs(&flat(&mg.first_rows(sub.rows)), &flat(&m_cpu)).max(d1);
            dpe = max_rel(&mg.pe[..sub.rows], &m_cpu.pe);
            let mpe_g = g.mpe(&mev, None, &mut |_, _| true).map_err(|e| e.to_string())?;
            let n = net.len();
            same = (0..mev.rows).filter(|&r| mpe_g.states[r * n..(r + 1) * n] == mpe_c.states[r * n..(r + 1) * n]).count();
            dprob = max_rel(&mpe_g.prob, &mpe_c.prob);
            if let Some(p) = &a.mpe_out {
                write_mpe(p, &name, &net, &mev, &mpe_g)?;
            }
        } else if let Some(p) = &a.mpe_out {
            write_mpe(p, &name, &net, &mev, &mpe_c)?;
            if dmarg > 1e-12 || dpe > 1e-12 || !ident || same != mev.rows || dprob > 1e-12 {
                ok = false;
            }
        }
        let impossible = m_cpu.pe.iter().filter(|&&p| p <= 0.0).count();
        println!(
            "  one query, no evidence: CPU {single_cpu:.4} s, GPU {single_gpu:.4} s | batch of {} ({}% observed): GPU {batch_gpu:.3} s ({} rows per chunk, {:.3e} s per row), CPU {} rows {batch_cpu:.3} s ({:.3e} s per row; {impossible} with P(e) = 0)",
            a.rows, a.observed * 100.0, chunk, batch_gpu / a.rows as f64, sub.rows, batch_cpu / sub.rows as f64
        );
        println!("  GPU vs CPU: max |marginal diff| {dmarg:.3e}, max rel P(e) diff {dpe:.3e}, GPU run to run identical: {ident}; MPE same states {same}/{}, max rel prob diff {dprob:.3e}", mev.rows);
        if let Some(f) = csv.as_mut() {
            writeln!(
                f,
                "{name},{},{},{},{},{compile_s},{single_cpu},{single_gpu},{},{},{batch_gpu},{chunk},{},{batch_cpu},{},{},{dmarg},{dpe},{ident},{},{same},{dprob}",
                net.len(), s.cliques, s.max_clique_cells, s.total_clique_cells, a.rows, a.observed, sub.rows, batch_cpu / sub.rows as f64, batch_gpu / a.rows as f64, mev.rows
            )
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(if ok { ExitCode::SUCCESS } else { ExitCode::from(1) })
}
