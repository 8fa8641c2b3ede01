//! Which engine runs a call, and opening it. [`choose`] takes what R asked for (`backend =`,
//! `devices =`), the test and the problem's size, and says CPU or GPU, which GPUs, and why
//! (`gpupc_last_run()$why` / `$devices_why`); the thresholds of `backend = "auto"` live here and
//! nowhere else. [`gauss`], [`gsquare`] and [`cmiknn`] open the chosen GPUs as one [`Engine`]
//! (one device, or several composed by pc-core's `Split` / [`MultiGauss`]), and [`or_cpu`] runs
//! a call on it, or on the CPU when the GPU fails and `backend = "auto"` allowed that.

use pc_cmiknn::CmiKnn;
use pc_core::citest::GSquareTest;
use pc_core::dense::DenseLevels;
use pc_core::multi::{label_error, Split};
use pc_core::plan::{EdgeOutcome, LevelPlan};
use pc_core::error::Result;
use pc_core::{Backend, Order, PcError, Watch};

use crate::{combined_timings, device_labels, min_split_tests, CudaCmiKnn, CudaGSquare, CudaGauss, MultiGauss, Timings};

/// Below this many variables the CPU backend is as fast as the GPU one or faster, counting the
/// first CUDA call of a process: the driver's start and the kernels, 0.4 s with the kernel cache
/// warm, 2-2.7 s on a machine that never compiled them (BENCHMARKS.md, "The first GPU call of an
/// R process"). Warm GPU against the CPU backend on an H100 host with 16 cores (same file,
/// "Gaussian data"): p = 1643 0.054 s and 0.164 s; p = 5361 0.15-0.20 s and 1.19-1.47 s;
/// p = 10000 0.65-0.88 s and 5.8-6.2 s; "stable.fast" alike. With the first call's 0.4 s the GPU
/// wins a single call from about p = 3000, for both methods.
pub const GPU_MIN_P: usize = 3000;
/// For the G^2 tests the work of level 0 is about n p^2 / 2 sample visits; below this the CPU's
/// cores finish before the GPU has started (the first CUDA call of a process takes seconds).
pub const GPU_MIN_DISCRETE_WORK: f64 = 5e9;
/// Below these sizes one GPU finishes first: opening, loading and merging on a second device
/// costs more than its share of the work saves. Measured on two H100s (BENCHMARKS.md, "Several
/// GPUs"): gaussCItest was no faster on two at p = 20000 (n = 3189, every level: 2.15 s on both)
/// nor at p = 55,572 (levels 0-1: 17.7 s on one, 20.6 s on two), its time being C's upload,
/// pMax's download and R's objects, not the kernels; so by default its other GPUs join only
/// at a level of 4e9 tests or more (`gauss::multi::GROW_MIN_TESTS`), and split it. disCItest on MUNIN at n = 1e6 (n p^2 / 2 = 5.4e11) took 56.2 s on one and 31.9 s on two
/// (1.76x); at n = 20000 (1.1e10) two gave nothing. A Munin batch of 30,000 evidence sets took
/// 30.3 s on one and 21.0 s on two through R.
pub const MULTI_MIN_DISCRETE_WORK: f64 = 1e11;
pub const MULTI_MIN_JTREE_SETS: f64 = 20000.0;

/// `backend =` of a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asked {
    Auto,
    Cpu,
    Cuda,
}

impl Asked {
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Asked::Auto),
            "cpu" => Ok(Asked::Cpu),
            "cuda" => Ok(Asked::Cuda),
            other => Err(PcError::invalid("backend", format!("must be one of \"auto\", \"cpu\" or \"cuda\", not \"{other}\""))),
        }
    }
}

/// What a call runs: a native test, an R function (`rfun`, CPU only) or junction-tree batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    Gauss,
    Dis,
    Bin,
    CmiKnn,
    RFun,
    Jtree,
}

impl Work {
    pub fn parse(s: &str) -> Result<Self> {
        Ok(match s {
            "gauss" => Work::Gauss,
            "dis" => Work::Dis,
            "bin" => Work::Bin,
            "cmiknn" => Work::CmiKnn,
            "rfun" => Work::RFun,
            "jtree" => Work::Jtree,
            other => return Err(PcError::invalid("indepTest", format!("unknown native test \"{other}\""))),
        })
    }
}

/// The GPUs of this machine: the default device's name and every usable ordinal.
#[derive(Clone, Debug, PartialEq)]
pub struct Gpus {
    pub name: String,
    pub usable: Vec<usize>,
}

/// The GPUs found by probing the driver, or why there are none.
pub fn probe_gpus() -> std::result::Result<Gpus, String> {
    let d = crate::probe()?;
    let usable = crate::probe_all().unwrap_or_default().iter().map(|d| d.ordinal).collect();
    Ok(Gpus { name: d.name, usable })
}

/// The engine of one call: the GPU (`devices`: the ordinals, or `None` for the driver's default)
/// or the CPU, each with the reason R reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub cuda: bool,
    pub why: String,
    pub devices: Option<Vec<usize>>,
    pub devices_why: Option<String>,
}

/// The engine for `work` on `p` variables and `n` rows (NaN when the test has no rows of codes),
/// as `asked`, with `given` the GPUs `devices =` named. `gpus` is asked at most once, and only
/// where the answer depends on it (a small problem under "auto" never starts the driver).
pub fn choose(asked: Asked, work: Work, p: usize, n: f64, given: Option<&[usize]>, gpus: impl FnOnce() -> std::result::Result<Gpus, String>) -> Result<Choice> {
    let cpu = |why: String| Ok(Choice { cuda: false, why, devices: None, devices_why: None });
    let discrete = matches!(work, Work::Dis | Work::Bin);
    let size = n * p as f64 * p as f64 / 2.0;
    if work == Work::RFun {
        return match asked {
            Asked::Cuda => Err(PcError::Cuda("the GPU backend runs only gaussCItest, disCItest, binCItest and cmiknnCItest".into())),
            Asked::Cpu => cpu("asked for".into()),
            Asked::Auto => cpu("a user-supplied test runs on the CPU".into()),
        };
    }
    let found = match asked {
        Asked::Cpu => return cpu("asked for".into()),
        Asked::Auto if work == Work::Gauss && p < GPU_MIN_P => return cpu(format!("p = {p} is small (< {GPU_MIN_P})")),
        Asked::Auto if discrete && !(size >= GPU_MIN_DISCRETE_WORK) => {
            return cpu(format!("n p^2 / 2 = {} is small (< {})", fmt_g3(size), fmt_g3(GPU_MIN_DISCRETE_WORK)))
        }
        _ => gpus(),
    };
    let why = match (&found, asked) {
        (_, Asked::Cuda) => "asked for".to_string(),
        (Ok(g), _) => format!("GPU {}", g.name),
        (Err(reason), _) => return cpu(format!("no usable GPU: {reason}")),
    };
    let usable = found.map(|g| g.usable).unwrap_or_default();
    let (devices, devices_why) = choose_devices(given, work, if discrete { size } else { f64::INFINITY }, &usable)?;
    Ok(Choice { cuda: true, why, devices, devices_why: Some(devices_why) })
}

/// The GPUs of a CUDA run and why: `given` checked against `usable`, or, when `None`, every
/// usable GPU where `work` gains from them and the first one otherwise. `size` is the work: n p^2
/// / 2 for the G^2 tests, evidence sets for junction-tree batches.
pub fn choose_devices(given: Option<&[usize]>, work: Work, size: f64, usable: &[usize]) -> Result<(Option<Vec<usize>>, String)> {
    if let Some(d) = given {
        let missing: Vec<String> = d.iter().filter(|o| !usable.contains(o)).map(|o| o.to_string()).collect();
        if !missing.is_empty() {
            let have: Vec<String> = usable.iter().map(|o| o.to_string()).collect();
            let have = if have.is_empty() { "none".to_string() } else { have.join(", ") };
            return Err(PcError::invalid("devices", format!("names GPU {}, which is not usable here (usable: {have}).", missing.join(", "))));
        }
        return Ok((Some(d.to_vec()), "asked for".into()));
    }
    let one = |why: String| Ok((Some(vec![usable[0]]), format!("one GPU: {why}")));
    match usable.len() {
        0 => return Ok((None, "no usable GPU".into())),
        1 => return Ok((Some(usable.to_vec()), "the one usable GPU".into())),
        _ => {}
    }
    match work {
        Work::Gauss => {
            let k = usable.len();
            return Ok((Some(usable.to_vec()), format!("{k} GPUs: the first runs the levels alone, the others join at the first level >= 2 of >= {} tests (name `devices` to split every level)", fmt_g3(crate::gauss::multi::GROW_MIN_TESTS as f64))));
        }
        Work::Dis | Work::Bin if !(size >= MULTI_MIN_DISCRETE_WORK) => {
            return one(format!("n p^2 / 2 = {} is small for several GPUs (< {})", fmt_g3(size), fmt_g3(MULTI_MIN_DISCRETE_WORK)))
        }
        Work::Jtree if size < MULTI_MIN_JTREE_SETS => {
            return one(format!("{} evidence sets are few for several GPUs (< {})", size as i64, MULTI_MIN_JTREE_SETS as i64))
        }
        _ => {}
    }
    Ok((Some(usable.to_vec()), format!("{} GPUs", usable.len())))
}

/// C's `%.3g` (as R's `sprintf()` writes it; `NA` for NaN), for the reasons R reports.
fn fmt_g3(x: f64) -> String {
    if x.is_nan() {
        return "NA".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Inf".into() } else { "-Inf".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    // the exponent after rounding to 3 significant digits
    let sci = format!("{x:.2e}");
    let (mant, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: String| if s.contains('.') { s.trim_end_matches('0').trim_end_matches('.').to_string() } else { s };
    if !(-4..3).contains(&exp) {
        format!("{}e{}{:02}", trim(mant.to_string()), if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        trim(format!("{x:.*}", (2 - exp) as usize))
    }
}

/// Runs a call on the GPU when `choice_cuda`, else on the CPU; a GPU failure (a CUDA error, the
/// GPU's memory too small) with `fallback` (`backend = "auto"`) is handed to `failed` and the call
/// runs on the CPU instead. Any other error stops the call.
pub fn or_cpu<S, R>(
    state: &mut S,
    choice_cuda: bool,
    fallback: bool,
    cuda: impl FnOnce(&mut S) -> Result<R>,
    cpu: impl FnOnce(&mut S) -> Result<R>,
    failed: impl FnOnce(&mut S, &PcError),
) -> Result<R> {
    if !choice_cuda {
        return cpu(state);
    }
    match cuda(state) {
        Err(e) if fallback && e.is_gpu_failure() => {
            failed(state, &e);
            cpu(state)
        }
        other => other,
    }
}

/// [`or_cpu`] over several GPUs: when the one at place i of `devices` fails (a
/// [`PcError::OnDevice`]) and `fallback` allows it, the call runs again on the others, and on the
/// CPU once a single GPU (or a failure naming none) is left. `failed` hears of each failure with
/// the GPUs the call goes on with (none: the CPU).
#[allow(clippy::too_many_arguments)]
pub fn on_gpus_or_cpu<S, R>(
    state: &mut S,
    devices: &[usize],
    choice_cuda: bool,
    fallback: bool,
    mut cuda: impl FnMut(&mut S, &[usize]) -> Result<R>,
    cpu: impl FnOnce(&mut S) -> Result<R>,
    mut failed: impl FnMut(&mut S, &PcError, &[usize]),
) -> Result<R> {
    if !choice_cuda {
        return cpu(state);
    }
    let mut left = devices.to_vec();
    loop {
        match cuda(state, &left) {
            Err(e) if fallback && e.is_gpu_failure() => {
                match e.failed_device() {
                    Some(i) if left.len() > 1 && i < left.len() => {
                        left.remove(i);
                        failed(state, &e, &left);
                    }
                    _ => {
                        failed(state, &e, &[]);
                        return cpu(state);
                    }
                }
            }
            other => return other,
        }
    }
}

/// The figures only several devices have.
pub struct Several {
    pub devices: Vec<usize>,
    /// Seconds merging the devices' dense levels (gaussCItest).
    pub merge_s: f64,
    /// Levels split over the devices and levels run on one (a `Split`'s small levels).
    pub split: Option<(usize, usize)>,
    /// A growing backend: the level at which its other devices joined, and the seconds that took.
    pub joined: Option<(usize, f64)>,
}

/// What one CUDA engine spent, for `gpupc_last_run()$details`.
pub struct Details {
    pub timings: Timings,
    pub several: Option<Several>,
}

/// The CUDA backend of one call, over one device or several.
pub enum Engine<'a> {
    Gauss(CudaGauss),
    MultiGauss(MultiGauss, Vec<usize>),
    GSquare(CudaGSquare<'a>),
    GSquares(Split<CudaGSquare<'a>>, Vec<usize>),
    CmiKnn(CudaCmiKnn<'a>),
    CmiKnns(Split<CudaCmiKnn<'a>>, Vec<usize>),
}

macro_rules! each {
    ($e:expr, $b:ident => $body:expr) => {
        match $e {
            Engine::Gauss($b) => $body,
            Engine::MultiGauss($b, _) => $body,
            Engine::GSquare($b) => $body,
            Engine::GSquares($b, _) => $body,
            Engine::CmiKnn($b) => $body,
            Engine::CmiKnns($b, _) => $body,
        }
    };
}

impl Backend for Engine<'_> {
    fn name(&self) -> String {
        each!(self, b => b.name())
    }
    fn run_level(&mut self, plan: &LevelPlan, watch: &mut dyn Watch) -> Result<Vec<EdgeOutcome>> {
        each!(self, b => b.run_level(plan, watch))
    }
    fn dense(&mut self) -> Option<&mut dyn DenseLevels> {
        each!(self, b => b.dense())
    }
    /// One device's Gaussian levels split by rows between MPI ranks; a rank of several devices
    /// splits its share by edges, as the others.
    fn row_split(&mut self) -> Option<&mut dyn pc_core::rows::RowSplit> {
        match self {
            Engine::Gauss(b) => Some(b),
            _ => None,
        }
    }
    fn whole_levels(&self) -> bool {
        true
    }
}

impl Engine<'_> {
    pub fn details(&self) -> Details {
        let split = |s: &dyn SplitCounts, devices: &[usize]| Some(Several { devices: devices.to_vec(), merge_s: 0.0, split: Some(s.counts()), joined: None });
        match self {
            Engine::Gauss(b) => Details { timings: b.timings_all(), several: None },
            Engine::MultiGauss(b, d) => Details {
                timings: b.timings(),
                several: Some(Several { devices: d[..b.devices_used()].to_vec(), merge_s: b.merge_seconds(), split: None, joined: b.joined() }),
            },
            Engine::GSquare(b) => Details { timings: b.timings().clone(), several: None },
            Engine::GSquares(b, d) => Details { timings: combined_timings(b.devs.iter().map(|g| g.timings())), several: split(b, d) },
            Engine::CmiKnn(b) => Details { timings: b.timings(), several: None },
            Engine::CmiKnns(b, d) => {
                let ts: Vec<Timings> = b.devs.iter().map(|g| g.timings()).collect();
                Details { timings: combined_timings(&ts), several: split(b, d) }
            }
        }
    }
}

trait SplitCounts {
    fn counts(&self) -> (usize, usize);
}

impl<B> SplitCounts for Split<B> {
    fn counts(&self) -> (usize, usize) {
        (self.levels_split, self.levels_alone)
    }
}

/// gaussCItest's correlations as the GPU takes them.
pub enum GaussSource<'c> {
    /// C itself, scanned on the host (`symmetric` exactly, `has_nan`).
    C { c: &'c [f64], symmetric: bool, has_nan: bool },
    /// The standardised data (`rows` x p, column-major): C is computed on the (first) device.
    Standardized { z: &'c [f64], rows: usize },
}

/// Starts compiling the kernels gaussCItest's first levels need on `device` while the host reads
/// the input.
pub fn prefetch_gauss(device: usize, order: Order, from_data: bool) {
    crate::runtime::module::prefetch(device, &crate::gauss::first_families(order, from_data));
}

/// gaussCItest on `devices`. Several of them asked for (`grow` false) split every "stable" level
/// from C, the dense ones too (stable.fast's dense level 0 writes raw p-values into pMax, which
/// the devices' max-merge is not made for, and C computed from the data lives on one device: those
/// run on the first device). Several chosen by the work (`grow`) start on the first device, and
/// the others join at the first large level (`MultiGauss::growing`), in either order and from
/// either source.
pub fn gauss(devices: &[usize], src: GaussSource, p: usize, n: f64, order: Order, grow: bool) -> Result<Engine<'static>> {
    if order == Order::StableFast {
        pc_core::citest::GaussTest::check_n(n, pc_core::citest::GaussFlavour::Cpp)?;
    }
    let first = *devices.first().ok_or_else(|| PcError::invalid("devices", "must name at least one GPU"))?;
    let one = match src {
        GaussSource::C { c, symmetric, has_nan } if devices.len() > 1 && order == Order::Stable && !grow => {
            return Ok(Engine::MultiGauss(MultiGauss::new_scanned_on(devices, c, p, n, symmetric, has_nan)?, devices.to_vec()));
        }
        GaussSource::C { c, symmetric, has_nan } => CudaGauss::new_scanned_on(first, c, p, n, symmetric, has_nan),
        GaussSource::Standardized { z, rows } => CudaGauss::from_standardized_on(first, z, rows, p, n),
    }
    .map_err(|e| if devices.len() > 1 { label_error(0, &device_labels(devices)[0], e) } else { e })?;
    Ok(if grow && devices.len() > 1 { Engine::MultiGauss(MultiGauss::growing(one, devices)?, devices.to_vec()) } else { Engine::Gauss(one) })
}

/// disCItest / binCItest on `devices`, each writing its rounds' tests on its share of `threads`
/// (0: every core); several devices split only levels of at least `min_split_tests` tests.
pub fn gsquare<'a>(t: &'a GSquareTest, devices: &[usize], threads: usize) -> Result<Engine<'a>> {
    if let [one] = devices {
        let mut g = CudaGSquare::new_on(t, *one)?;
        g.set_threads(threads)?;
        return Ok(Engine::GSquare(g));
    }
    let per = share_threads(threads, devices.len());
    let devs = each_device(devices, |d| {
        let mut g = CudaGSquare::new_on(t, d)?;
        g.set_threads(per)?;
        Ok(g)
    })?;
    Ok(Engine::GSquares(Split::new(devs, device_labels(devices))?.with_min_split_tests(min_split_tests(t.data.n)), devices.to_vec()))
}

/// cmiknnCItest on `devices`: the permutations on `threads` host threads, one pool that every
/// device's rounds share (`GPUPC_CMIKNN_POOL=per-device`: each device its share of them, for
/// comparisons).
pub fn cmiknn<'a>(t: &'a CmiKnn, devices: &[usize], threads: usize) -> Result<Engine<'a>> {
    if let [one] = devices {
        return Ok(Engine::CmiKnn(CudaCmiKnn::new_on(t, threads, *one)?));
    }
    let devs = if std::env::var("GPUPC_CMIKNN_POOL").is_ok_and(|v| v == "per-device") {
        let per = share_threads(threads, devices.len());
        each_device(devices, |d| CudaCmiKnn::new_on(t, per, d))?
    } else {
        let pool = std::sync::Arc::new(CudaCmiKnn::host_pool(threads)?);
        each_device(devices, |d| CudaCmiKnn::new_shared(t, pool.clone(), d))?
    };
    Ok(Engine::CmiKnns(Split::new(devs, device_labels(devices))?, devices.to_vec()))
}

/// One backend per device, an error naming the device that failed.
fn each_device<B>(devices: &[usize], open: impl Fn(usize) -> Result<B>) -> Result<Vec<B>> {
    devices.iter().zip(device_labels(devices)).enumerate().map(|(i, (&d, label))| open(d).map_err(|e| label_error(i, &label, e))).collect()
}

/// Threads per device: the call's cores (0: all) divided among the devices.
fn share_threads(threads: usize, k: usize) -> usize {
    let all = if threads == 0 { pc_core::threads::available_cores() } else { threads };
    all.div_ceil(k.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two() -> std::result::Result<Gpus, String> {
        Ok(Gpus { name: "Card".into(), usable: vec![0, 1] })
    }
    fn none() -> std::result::Result<Gpus, String> {
        Err("no driver".into())
    }
    fn never() -> std::result::Result<Gpus, String> {
        panic!("probed a GPU for a choice that needs none")
    }

    #[test]
    fn auto_follows_the_size_and_probes_only_when_it_matters() {
        let c = choose(Asked::Auto, Work::Gauss, 25, f64::NAN, None, never).unwrap();
        assert_eq!((c.cuda, c.why.as_str()), (false, "p = 25 is small (< 3000)"));
        let c = choose(Asked::Auto, Work::Dis, 100, 1000.0, None, never).unwrap();
        assert_eq!(c.why, "n p^2 / 2 = 5e+06 is small (< 5e+09)");
        let c = choose(Asked::Auto, Work::Bin, 100, f64::NAN, None, never).unwrap();
        assert_eq!(c.why, "n p^2 / 2 = NA is small (< 5e+09)");
        let c = choose(Asked::Auto, Work::Gauss, 5000, f64::NAN, None, two).unwrap();
        assert_eq!(c, Choice { cuda: true, why: "GPU Card".into(), devices: Some(vec![0, 1]), devices_why: c.devices_why.clone() });
        assert!(c.devices_why.unwrap().starts_with("2 GPUs: the first runs the levels alone, the others join at the first level >= 2 of >= 4e+09 tests"));
        let c = choose(Asked::Auto, Work::CmiKnn, 5, 100.0, None, none).unwrap();
        assert_eq!((c.cuda, c.why.as_str(), c.devices), (false, "no usable GPU: no driver", None));
        let c = choose(Asked::Auto, Work::RFun, 5000, f64::NAN, None, never).unwrap();
        assert_eq!(c.why, "a user-supplied test runs on the CPU");
        assert!(matches!(choose(Asked::Cuda, Work::RFun, 5, f64::NAN, None, never), Err(PcError::Cuda(_))));
        assert_eq!(choose(Asked::Cpu, Work::Dis, 5000, 1e9, None, never).unwrap().why, "asked for");
    }

    #[test]
    fn cuda_asked_for_without_a_gpu_is_tried_on_the_default_device() {
        let c = choose(Asked::Cuda, Work::Gauss, 5, f64::NAN, None, none).unwrap();
        assert_eq!(c, Choice { cuda: true, why: "asked for".into(), devices: None, devices_why: Some("no usable GPU".into()) });
        let e = choose(Asked::Cuda, Work::Gauss, 5, f64::NAN, Some(&[977]), none).unwrap_err();
        assert!(matches!(e, PcError::InvalidArgument { arg: "devices", ref msg } if msg == "names GPU 977, which is not usable here (usable: none)."));
    }

    #[test]
    fn several_devices_only_where_the_work_gains() {
        let u = [0, 1];
        let pick = |w, s| choose_devices(None, w, s, &u).unwrap();
        assert_eq!(pick(Work::Dis, 1e9), (Some(vec![0]), "one GPU: n p^2 / 2 = 1e+09 is small for several GPUs (< 1e+11)".into()));
        assert_eq!(pick(Work::Dis, 5.4e11).0, Some(vec![0, 1]));
        assert_eq!(pick(Work::Dis, f64::NAN).0, Some(vec![0]));
        assert_eq!(pick(Work::CmiKnn, f64::INFINITY), (Some(vec![0, 1]), "2 GPUs".into()));
        assert_eq!(pick(Work::Jtree, 100.0).1, "one GPU: 100 evidence sets are few for several GPUs (< 20000)");
        assert_eq!(pick(Work::Jtree, 1e5).0, Some(vec![0, 1]));
        assert_eq!(choose_devices(Some(&[1, 0]), Work::Gauss, 50.0, &u).unwrap(), (Some(vec![1, 0]), "asked for".into()));
        assert_eq!(choose_devices(None, Work::Dis, 1e12, &[0]).unwrap(), (Some(vec![0]), "the one usable GPU".into()));
        assert_eq!(choose_devices(None, Work::Dis, 1e12, &[]).unwrap(), (None, "no usable GPU".into()));
    }

    #[test]
    fn a_failing_device_is_left_out_then_the_cpu_runs() {
        let on = |i: usize, o: usize| PcError::OnDevice { index: i, label: format!("GPU {o}"), error: Box::new(PcError::Cuda("broken".into())) };
        // GPU 2 fails at place 1 of [0, 2, 3], then GPU 0 at place 0 of [0, 3]: GPU 3 runs it
        let mut tried: Vec<Vec<usize>> = Vec::new();
        let mut heard: Vec<(String, Vec<usize>)> = Vec::new();
        let out = on_gpus_or_cpu(
            &mut (&mut tried, &mut heard),
            &[0, 2, 3],
            true,
            true,
            |(t, _), d| {
                t.push(d.to_vec());
                match d {
                    [_, _, _] => Err(on(1, 2)),
                    [_, _] => Err(on(0, 0)),
                    _ => Ok(format!("ran on {d:?}")),
                }
            },
            |_| Ok("cpu".to_string()),
            |(_, h), e, left| h.push((e.to_string(), left.to_vec())),
        )
        .unwrap();
        assert_eq!(out, "ran on [3]");
        assert_eq!(tried, vec![vec![0, 2, 3], vec![0, 3], vec![3]]);
        assert_eq!(heard, vec![("CUDA backend: GPU 2: broken".to_string(), vec![0, 3]), ("CUDA backend: GPU 0: broken".to_string(), vec![3])]);
        // the last GPU failing, a failure naming no device, or no fallback
        let mut n = 0;
        assert_eq!(on_gpus_or_cpu(&mut n, &[5], true, true, |_, _| Err::<&str, _>(on(0, 5)), |_| Ok("cpu"), |n, _, left| { assert!(left.is_empty()); *n += 1 }).unwrap(), "cpu");
        assert_eq!(on_gpus_or_cpu(&mut n, &[0, 1], true, true, |_, _| Err::<&str, _>(PcError::Cuda("x".into())), |_| Ok("cpu"), |n, _, _| *n += 1).unwrap(), "cpu");
        assert_eq!(n, 2);
        assert!(on_gpus_or_cpu(&mut n, &[0, 1], true, false, |_, _| Err::<&str, _>(on(1, 1)), |_| Ok("cpu"), |_, _, _| panic!("no fallback asked")).is_err());
        let bad = on_gpus_or_cpu(&mut n, &[0, 1], true, true, |_, _| Err::<&str, _>(PcError::invalid("alpha", "x")), |_| Ok("cpu"), |_, _, _| panic!("not a GPU failure"));
        assert!(matches!(bad, Err(PcError::InvalidArgument { .. })));
    }

    #[test]
    fn g3_is_c_formatting() {
        for (x, s) in [(5e9, "5e+09"), (1.1e10, "1.1e+10"), (123.0, "123"), (12.34, "12.3"), (0.5, "0.5"), (1234.0, "1.23e+03"), (999.6, "1e+03"), (0.0001, "0.0001"), (0.00001234, "1.23e-05"), (6.25e6, "6.25e+06")] {
            assert_eq!(fmt_g3(x), s, "{x}");
        }
    }

    #[test]
    fn a_gpu_failure_runs_on_the_cpu_only_when_allowed() {
        let gpu_err = |_: &mut Vec<String>| -> Result<&str> { Err(PcError::Cuda("GPU 0: failed".into())) };
        let cpu = |_: &mut Vec<String>| -> Result<&str> { Ok("cpu") };
        let note = |s: &mut Vec<String>, e: &PcError| s.push(e.to_string());
        let mut seen = Vec::new();
        assert_eq!(or_cpu(&mut seen, true, true, gpu_err, cpu, note).unwrap(), "cpu");
        assert_eq!(seen, ["CUDA backend: GPU 0: failed"]);
        assert!(or_cpu(&mut seen, true, false, gpu_err, cpu, note).is_err());
        let bad = |_: &mut Vec<String>| -> Result<&str> { Err(PcError::invalid("suffStat$C", "must be a matrix")) };
        assert!(matches!(or_cpu(&mut seen, true, true, bad, cpu, note), Err(PcError::InvalidArgument { .. })));
        assert_eq!(or_cpu(&mut seen, false, true, gpu_err, cpu, note).unwrap(), "cpu");
        assert_eq!(seen.len(), 1);
    }
}
