//! Compiling the kernels: by NVRTC, for the card's own architecture, to a CUBIN (machine code, so
//! the driver never JIT-compiles PTX and a newer NVRTC than the driver cannot produce an
//! "unsupported PTX version"). When this NVRTC does not know the card (a card newer than the
//! toolkit), PTX for the newest architecture it knows is produced instead. Always with
//! `--fmad=false`: no multiply-add contraction, so results follow the source's rounding as the
//! CPU's does.
//!
//! The kernels come in families ([`Family`]): the Gaussian source alone holds sixteen templated
//! kernels, and a call needs a few of them, so each family is compiled only when a call first
//! needs it, and several at once in parallel ([`prepare`]). An image is compiled once per process
//! and device (kept here) and once per machine (kept on disk by [`kernel_cache`]).

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaModule};
use cudarc::nvrtc::{result as nres, sys as nsys, Ptx};

use crate::runtime::gpu::{DeviceId, Gpu, Kernel};
use crate::runtime::kernel_cache::{self, KernelKey, Lookup};

/// The Gaussian kernels' source, embedded in the library.
pub const GAUSS_SRC: &str = include_str!("../gauss/gauss.cu");
/// The correlation kernel's source (C from the data).
pub const CORR_SRC: &str = include_str!("../gauss/corr.cu");
/// The G^2 kernel's source.
pub const GSQUARE_SRC: &str = include_str!("../gsquare/gsquare.cu");
/// The CMI-kNN kernel's source.
pub const CMIKNN_SRC: &str = include_str!("../cmiknn/cmiknn.cu");
/// The reductions that merge several devices' dense levels (`gauss/multi.rs`).
pub const MERGE_SRC: &str = include_str!("../gauss/merge.cu");
/// The junction tree's kernels.
pub const JTREE_SRC: &str = include_str!("../jtree/jtree.cu");

/// A set of kernels compiled together: one source, and the `#define`s that select its part.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Gaussian levels 0 and 1, the dense levels and `gauss_rows_live`.
    GaussBase,
    /// `gauss_sets_l{m}` and `gauss_pbest_l{m}` (stable, levels 2..=m).
    GaussSets(usize),
    /// `gauss_listed_l{m}` (stable.fast, levels up to m).
    GaussListed(usize),
    /// `gauss_batch_l{m}` (the triple checks, sets up to m).
    GaussBatch(usize),
    Corr,
    GSquare,
    CmiKnn,
    Merge,
    Jtree,
}

impl Family {
    pub fn source(self) -> &'static str {
        match self {
            Family::GaussBase | Family::GaussSets(_) | Family::GaussListed(_) | Family::GaussBatch(_) => GAUSS_SRC,
            Family::Corr => CORR_SRC,
            Family::GSquare => GSQUARE_SRC,
            Family::CmiKnn => CMIKNN_SRC,
            Family::Merge => MERGE_SRC,
            Family::Jtree => JTREE_SRC,
        }
    }

    /// The family's name, as in the cache's file names and NVRTC's messages.
    pub fn name(self) -> String {
        match self {
            Family::GaussBase => "gauss-base".into(),
            Family::GaussSets(m) => format!("gauss-sets-l{m}"),
            Family::GaussListed(m) => format!("gauss-listed-l{m}"),
            Family::GaussBatch(m) => format!("gauss-batch-l{m}"),
            Family::Corr => "corr".into(),
            Family::GSquare => "gsquare".into(),
            Family::CmiKnn => "cmiknn".into(),
            Family::Merge => "merge".into(),
            Family::Jtree => "jtree".into(),
        }
    }

    /// The `#define`s that select the family's part of its source (the first, in `gauss.cu`),
    /// and the constants the host code shares with the kernels, from the host's own.
    fn defines(self) -> Vec<String> {
        let gauss = |part: String| vec![part, format!("-DBLOCK={}", crate::gauss::host::BLOCK)];
        match self {
            Family::GaussBase => gauss("-DGAUSS_BASE".into()),
            Family::GaussSets(m) => gauss(format!("-DGAUSS_SETS={m}")),
            Family::GaussListed(m) => gauss(format!("-DGAUSS_LISTED={m}")),
            Family::GaussBatch(m) => gauss(format!("-DGAUSS_BATCH={m}")),
            Family::Corr => vec![format!("-DCT={}", crate::gauss::corr::TILE)],
            Family::GSquare => {
                use crate::gsquare::{BLOCK, CHUNK, MAX_LEVEL};
                vec![format!("-DMAXBLOCK={BLOCK}"), format!("-DCHUNK={CHUNK}"), format!("-DMAXL={MAX_LEVEL}")]
            }
            Family::CmiKnn => vec![format!("-DLANES={}", pc_cmiknn::estimator::LANES), format!("-DMAXL={}", crate::cmiknn::MAX_LEVEL)],
            Family::Merge | Family::Jtree => Vec::new(),
        }
    }
}

/// A compiled module of one device and how it was made. Its kernels come out as [`Kernel`]s
/// tagged with that device, which only that device's [`Gpu`] launches.
pub struct Compiled {
    module: Arc<CudaModule>,
    owner: DeviceId,
    /// Seconds NVRTC took, or reading the image from disk took (0 when this process had it).
    pub compile_seconds: f64,
    /// e.g. "sm_90 (cubin)" or "compute_90 (ptx)".
    pub target: String,
    /// NVRTC's log (warnings; resource usage when GPUPC_NVRTC_VERBOSE=1).
    pub log: String,
    /// Not compiled by this call: this process had it, or the disk cache did.
    pub from_cache: bool,
}

impl Compiled {
    pub(crate) fn function(&self, name: &str) -> Result<Kernel, String> {
        let f = self.module.load_function(name).map_err(|e| format!("kernel {name} is missing from the module: {e}"))?;
        Ok(Kernel::new(f, self.owner, name))
    }
}

struct LoadedModule {
    // keeps the primary context (and so the module) alive for the process
    _ctx: Arc<CudaContext>,
    module: Arc<CudaModule>,
    target: String,
    log: String,
}

type Loaded = HashMap<(usize, Family), Arc<LoadedModule>>;

fn loaded() -> &'static Mutex<Loaded> {
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    LOADED.get_or_init(|| Mutex::new(HashMap::new()))
}

/// An image for a card: from the disk cache or from NVRTC.
struct Image {
    /// CUBIN bytes, or PTX text when `cubin` is false.
    bytes: Vec<u8>,
    cubin: bool,
    target: String,
    log: String,
    from_disk: bool,
}

impl Image {
    fn ptx(&self) -> Ptx {
        if self.cubin {
            Ptx::from_binary(self.bytes.clone())
        } else {
            Ptx::from_src(String::from_utf8_lossy(&self.bytes).into_owned())
        }
    }
}

fn image_for(family: Family, cc: (i32, i32)) -> Result<Image, String> {
    let (arch, cubin) = choose_target(cc, &supported_archs())
        .ok_or_else(|| format!("NVRTC knows no architecture at or below the GPU's ({}.{})", cc.0, cc.1))?;
    let target = if cubin { format!("sm_{arch}") } else { format!("compute_{arch}") };
    let described = format!("{target} ({})", if cubin { "cubin" } else { "ptx" });
    let opts = options(family, &target);
    let key = KernelKey::new(&family.name(), family.source(), &opts, nvrtc_version(), &target);
    let disk = kernel_cache::current();
    if let Some(Lookup::Hit(bytes)) = disk.as_ref().map(|d| d.load(&key)) {
        if cubin || std::str::from_utf8(&bytes).is_ok() {
            return Ok(Image { bytes, cubin, target: described, log: String::new(), from_disk: true });
        }
    }
    let (bytes, log) = compile(&family.name(), family.source(), &opts, cubin)?;
    if let Some(d) = &disk {
        if let Err(e) = d.store(&key, &bytes) {
            kernel_cache::notice_write_failure(d.dir(), &e);
        }
    }
    Ok(Image { bytes, cubin, target: described, log, from_disk: false })
}

type ImageCell = Arc<OnceLock<Result<Arc<Image>, String>>>;

/// The image of `family` for cards of compute capability `cc`, made once per process: a second
/// caller (another device of the same kind, or a call waiting for a prefetch) waits for the first.
fn shared_image(family: Family, cc: (i32, i32)) -> Result<Arc<Image>, String> {
    static IMAGES: OnceLock<Mutex<HashMap<(Family, (i32, i32)), ImageCell>>> = OnceLock::new();
    let cell = IMAGES.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner()).entry((family, cc)).or_default().clone();
    cell.get_or_init(|| image_for(family, cc).map(Arc::new)).clone()
}

/// Makes one family's image for a card of compute capability `cc` as a call would (from the disk
/// cache when it has it, else by NVRTC, then stored), without loading or keeping it; returns the
/// seconds and whether it came from disk. For benchmarks of the first call.
pub fn time_image(family: Family, cc: (i32, i32)) -> Result<(f64, bool), String> {
    let t0 = Instant::now();
    let im = image_for(family, cc)?;
    Ok((t0.elapsed().as_secs_f64(), im.from_disk))
}

/// Every family a call can need.
pub fn all_families() -> Vec<Family> {
    let mut all = vec![Family::GaussBase];
    for m in crate::gauss::host::SET_KERNEL_VARIANTS {
        all.extend([Family::GaussSets(m), Family::GaussListed(m), Family::GaussBatch(m)]);
    }
    all.extend([Family::Corr, Family::GSquare, Family::CmiKnn, Family::Merge, Family::Jtree]);
    all
}

fn running() -> &'static Mutex<Vec<std::thread::JoinHandle<()>>> {
    static RUNNING: OnceLock<Mutex<Vec<std::thread::JoinHandle<()>>>> = OnceLock::new();
    RUNNING.get_or_init(|| Mutex::new(Vec::new()))
}

/// Starts making the images of `families` for device `ordinal` in background threads (NVRTC
/// and the disk cache only, no CUDA context), so that the levels that need them later find them
/// ready: a run compiles what its next levels need while its first levels run, and a call does
/// not wait for variants its levels never reached. Never fails: a family that cannot be made
/// fails again, with its message, where it is loaded. The process must call
/// [`wait_for_prefetches`] before it exits or unloads this library (the R package does so from
/// an exit finalizer and `.onUnload`): NVRTC can crash in its teardown under a running thread.
pub fn prefetch(ordinal: usize, families: &[Family]) {
    let Ok(cc) = crate::runtime::device::compute_capability(ordinal) else { return };
    let mut running = running().lock().unwrap_or_else(|e| e.into_inner());
    running.retain(|h| !h.is_finished());
    for &f in families {
        let spawned = std::thread::Builder::new().name(format!("gpupc-nvrtc-{}", f.name())).spawn(move || {
            let _ = std::panic::catch_unwind(move || shared_image(f, cc));
        });
        if let Ok(h) = spawned {
            running.push(h);
        }
    }
}

/// Waits for every compile [`prefetch`] started.
pub fn wait_for_prefetches() {
    let handles: Vec<_> = running().lock().unwrap_or_else(|e| e.into_inner()).drain(..).collect();
    for h in handles {
        let _ = h.join();
    }
}

/// The module of `family` for `gpu`'s device: this process's, or loaded from its image (made by
/// a prefetch, read from the disk cache, or compiled now).
pub(crate) fn module_for(gpu: &Gpu, family: Family) -> Result<Compiled, String> {
    prepare(gpu, &[family])?;
    let key = (gpu.ctx.ordinal(), family);
    let m = loaded().lock().unwrap_or_else(|e| e.into_inner()).get(&key).cloned();
    let m = m.ok_or_else(|| format!("the {} kernels were not loaded", family.name()))?;
    let (seconds, compiled) = take_seconds(key);
    Ok(Compiled { module: m.module.clone(), owner: gpu.id(), compile_seconds: seconds, target: m.target.clone(), log: m.log.clone(), from_cache: !compiled })
}

/// Seconds a call waited for each module to be made and loaded, and whether NVRTC made it,
/// handed to the first caller that asks (so a call's timings count what it waited for, and
/// later calls count nothing).
fn pending() -> &'static Mutex<HashMap<(usize, Family), (f64, bool)>> {
    static P: OnceLock<Mutex<HashMap<(usize, Family), (f64, bool)>>> = OnceLock::new();
    P.get_or_init(|| Mutex::new(HashMap::new()))
}

fn take_seconds(key: (usize, Family)) -> (f64, bool) {
    pending().lock().unwrap_or_else(|e| e.into_inner()).remove(&key).unwrap_or((0.0, false))
}

/// Makes sure the modules of `families` are loaded on `gpu`'s device, making the images that
/// neither this process nor the disk cache has all at once (NVRTC compiles programs in parallel
/// threads).
pub(crate) fn prepare(gpu: &Gpu, families: &[Family]) -> Result<(), String> {
    let ctx = &gpu.ctx;
    let ordinal = ctx.ordinal();
    let missing: Vec<Family> = {
        let have = loaded().lock().unwrap_or_else(|e| e.into_inner());
        let mut m: Vec<Family> = families.iter().copied().filter(|f| !have.contains_key(&(ordinal, *f))).collect();
        m.dedup();
        m
    };
    if missing.is_empty() {
        return Ok(());
    }
    let t0 = Instant::now();
    let cc = ctx.compute_capability().map_err(|e| format!("could not read the compute capability: {e}"))?;
    let images: Vec<Result<Arc<Image>, String>> = if missing.len() == 1 {
        vec![shared_image(missing[0], cc)]
    } else {
        std::thread::scope(|s| {
            let hs: Vec<_> = missing.iter().map(|&f| s.spawn(move || shared_image(f, cc))).collect();
            hs.into_iter().map(|h| h.join().unwrap_or_else(|_| Err("the NVRTC thread panicked".into()))).collect()
        })
    };
    for (k, (family, image)) in missing.into_iter().zip(images).enumerate() {
        let im = image?;
        let module = ctx.load_module(im.ptx()).map_err(|e| format!("the driver could not load the {} module ({}): {e}", family.name(), im.target))?;
        let entry = Arc::new(LoadedModule { _ctx: ctx.clone(), module, target: im.target.clone(), log: im.log.clone() });
        loaded().lock().unwrap_or_else(|e| e.into_inner()).entry((ordinal, family)).or_insert(entry);
        // the wall time of the whole preparation goes to its first family
        let seconds = if k == 0 { t0.elapsed().as_secs_f64() } else { 0.0 };
        pending().lock().unwrap_or_else(|e| e.into_inner()).insert((ordinal, family), (seconds, !im.from_disk));
    }
    Ok(())
}

fn options(family: Family, target: &str) -> Vec<String> {
    let mut opts = vec![format!("--gpu-architecture={target}"), "--fmad=false".to_string(), "--std=c++17".to_string()];
    opts.extend(family.defines());
    if std::env::var("GPUPC_NVRTC_VERBOSE").is_ok_and(|v| v == "1") {
        opts.push("--ptxas-options=-v".to_string());
    }
    opts
}

fn nvrtc_version() -> (i32, i32) {
    let (mut major, mut minor) = (0, 0);
    // SAFETY: writes two ints.
    let _ = unsafe { nsys::nvrtcVersion(&mut major, &mut minor) };
    (major, minor)
}

/// Architectures this NVRTC can compile for (e.g. 75, 80, 90, ...).
fn supported_archs() -> Vec<i32> {
    let mut n: std::ffi::c_int = 0;
    // SAFETY: writes one int, then n ints.
    if unsafe { nsys::nvrtcGetNumSupportedArchs(&mut n) }.result().is_err() || n <= 0 {
        return Vec::new();
    }
    let mut v = vec![0 as std::ffi::c_int; n as usize];
    if unsafe { nsys::nvrtcGetSupportedArchs(v.as_mut_ptr()) }.result().is_err() {
        return Vec::new();
    }
    v
}

/// Picks the compile target for a device of compute capability `cc`: Some(arch) and true for a
/// CUBIN of the device's own arch, or the newest older arch and false for PTX.
pub fn choose_target(cc: (i32, i32), supported: &[i32]) -> Option<(i32, bool)> {
    let dev = cc.0 * 10 + cc.1;
    if supported.is_empty() || supported.contains(&dev) {
        return Some((dev, true));
    }
    supported.iter().copied().filter(|&a| a <= dev).max().map(|a| (a, false))
}

/// The image (CUBIN bytes, or PTX text) and NVRTC's log.
fn compile(name: &str, src: &str, opts: &[String], cubin: bool) -> Result<(Vec<u8>, String), String> {
    let csrc = CString::new(src).map_err(|_| "kernel source holds a NUL byte".to_string())?;
    let cname = CString::new(name).map_err(|_| "kernel name holds a NUL byte".to_string())?;
    let prog = nres::create_program(&csrc, Some(&cname)).map_err(|e| format!("NVRTC could not create the program: {e}"))?;
    // SAFETY: prog is live until destroy_program below; every path reaches it.
    let out = unsafe {
        let compiled = nres::compile_program(prog, opts);
        let log = nres::get_program_log(prog)
            .map(|l| CStr::from_ptr(l.as_ptr()).to_string_lossy().into_owned())
            .unwrap_or_default();
        match compiled {
            Err(e) => Err(format!("NVRTC failed to compile {name} ({}) ({e}):\n{log}", opts.join(" "))),
            Ok(()) if cubin => get_cubin(prog).map(|b| (b, log)),
            Ok(()) => nres::get_ptx(prog)
                .map_err(|e| format!("NVRTC gave no PTX: {e}"))
                .map(|v| (CStr::from_ptr(v.as_ptr() as *const c_char).to_bytes().to_vec(), log)),
        }
    };
    // SAFETY: prog came from create_program and is destroyed once.
    let _ = unsafe { nres::destroy_program(prog) };
    out
}

unsafe fn get_cubin(prog: nsys::nvrtcProgram) -> Result<Vec<u8>, String> {
    let mut size: usize = 0;
    nsys::nvrtcGetCUBINSize(prog, &mut size).result().map_err(|e| format!("NVRTC gave no CUBIN size: {e}"))?;
    let mut buf = vec![0u8; size];
    nsys::nvrtcGetCUBIN(prog, buf.as_mut_ptr() as *mut c_char).result().map_err(|e| format!("NVRTC gave no CUBIN: {e}"))?;
    Ok(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn target_is_the_cards_own_arch_when_known() {
        assert_eq!(choose_target((9, 0), &[75, 80, 86, 89, 90, 100, 120]), Some((90, true)));
        assert_eq!(choose_target((9, 0), &[]), Some((90, true)));
        // a card newer than this NVRTC: PTX for the newest older arch
        assert_eq!(choose_target((12, 1), &[75, 80, 90, 100]), Some((100, false)));
        assert_eq!(choose_target((5, 0), &[75, 80]), None);
    }

    #[test]
    fn every_family_has_its_own_name_and_the_variants_their_own_defines() {
        let all = all_families();
        let names: std::collections::HashSet<String> = all.iter().map(|f| f.name()).collect();
        assert_eq!(names.len(), all.len());
        let defines: std::collections::HashSet<Vec<String>> = all.iter().filter(|f| f.source() == GAUSS_SRC).map(|f| f.defines()).collect();
        assert_eq!(defines.len(), 1 + 3 * crate::gauss::host::SET_KERNEL_VARIANTS.len());
    }

    #[test]
    fn kernel_source_defines_every_kernel_the_backend_loads() {
        for k in crate::gauss::KERNEL_NAMES.iter() {
            assert!(GAUSS_SRC.contains(k.trim_end_matches(|c: char| c.is_ascii_digit())), "{k}");
        }
        // each Gaussian family's #define selects a part of the source
        for f in [Family::GaussBase, Family::GaussSets(4), Family::GaussListed(8), Family::GaussBatch(16)] {
            let d = f.defines()[0].trim_start_matches("-D").split('=').next().unwrap().to_string();
            assert!(GAUSS_SRC.contains(&format!("#ifdef {d}\n")), "{d}");
        }
    }

    #[test]
    fn the_host_defines_what_the_sources_use_and_do_not_define_themselves() {
        for f in all_families() {
            for d in f.defines() {
                let name = d.trim_start_matches("-D").split('=').next().unwrap().to_string();
                assert!(f.source().contains(&name), "{}: {name} is unused", f.name());
                assert!(!f.source().contains(&format!("#define {name} ")), "{}: {name} is defined twice", f.name());
            }
        }
    }
}
