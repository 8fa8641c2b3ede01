//! Compiling the kernels: once per process and device, by NVRTC, for the card's own architecture,
//! to a CUBIN (machine code, so the driver never JIT-compiles PTX and a newer NVRTC than the driver
//! cannot produce an "unsupported PTX version"). When this NVRTC does not know the card (a card
//! newer than the toolkit), PTX for the newest architecture it knows is produced instead.
//! Always with `--fmad=false`: no multiply-add contraction, so results follow the source's
//! rounding as the CPU's does.

use std::collections::HashMap;
use std::ffi::{c_char, CStr, CString};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use cudarc::driver::{CudaContext, CudaModule};
use cudarc::nvrtc::{result as nres, sys as nsys, Ptx};

use crate::gpu::{DeviceId, Gpu, Kernel};

/// The Gaussian kernels' source, embedded in the library.
pub const GAUSS_SRC: &str = include_str!("kernels/gauss.cu");
/// The correlation kernel's source (C from the data).
pub const CORR_SRC: &str = include_str!("kernels/corr.cu");
/// The G^2 kernel's source.
pub const GSQUARE_SRC: &str = include_str!("kernels/gsquare.cu");
/// The CMI-kNN kernel's source.
pub const CMIKNN_SRC: &str = include_str!("kernels/cmiknn.cu");
/// The reductions that merge several devices' dense levels (`gauss_multi.rs`).
pub const MERGE_SRC: &str = include_str!("kernels/merge.cu");

/// A compiled module of one device and how it was made. Its kernels come out as [`Kernel`]s
/// tagged with that device, which only that device's [`Gpu`] launches.
pub struct Compiled {
    module: Arc<CudaModule>,
    owner: DeviceId,
    /// Seconds NVRTC took (the first time in this process; 0 when taken from the cache).
    pub compile_seconds: f64,
    /// e.g. "sm_90 (cubin)" or "compute_90 (ptx)".
    pub target: String,
    /// NVRTC's log (warnings; resource usage when GPUPC_NVRTC_VERBOSE=1).
    pub log: String,
    pub from_cache: bool,
}

impl Compiled {
    pub(crate) fn function(&self, name: &str) -> Result<Kernel, String> {
        let f = self.module.load_function(name).map_err(|e| format!("kernel {name} is missing from the module: {e}"))?;
        Ok(Kernel::new(f, self.owner, name))
    }
}

struct CacheEntry {
    // keeps the primary context (and so the module) alive for the process
    _ctx: Arc<CudaContext>,
    module: Arc<CudaModule>,
    target: String,
    log: String,
}

fn cache() -> &'static Mutex<HashMap<(usize, &'static str), CacheEntry>> {
    static CACHE: OnceLock<Mutex<HashMap<(usize, &'static str), CacheEntry>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The module built from `src` (named `name`) for `gpu`'s device, compiled on first use.
pub(crate) fn module_for(gpu: &Gpu, name: &'static str, src: &str) -> Result<Compiled, String> {
    let ctx = &gpu.ctx;
    let owner = gpu.id();
    let key = (ctx.ordinal(), name);
    let mut cache = cache().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = cache.get(&key) {
        return Ok(Compiled {
            module: e.module.clone(),
            owner,
            compile_seconds: 0.0,
            target: e.target.clone(),
            log: e.log.clone(),
            from_cache: true,
        });
    }
    let cc = ctx.compute_capability().map_err(|e| format!("could not read the compute capability: {e}"))?;
    let t0 = Instant::now();
    let (image, target, log) = compile(name, src, cc)?;
    let compile_seconds = t0.elapsed().as_secs_f64();
    let module = ctx.load_module(image).map_err(|e| format!("the driver could not load the {target} module: {e}"))?;
    cache.insert(key, CacheEntry { _ctx: ctx.clone(), module: module.clone(), target: target.clone(), log: log.clone() });
    Ok(Compiled { module, owner, compile_seconds, target, log, from_cache: false })
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

fn compile(name: &str, src: &str, cc: (i32, i32)) -> Result<(Ptx, String, String), String> {
    let (arch, cubin) = choose_target(cc, &supported_archs())
        .ok_or_else(|| format!("NVRTC knows no architecture at or below the GPU's ({}.{})", cc.0, cc.1))?;
    let target = if cubin { format!("sm_{arch}") } else { format!("compute_{arch}") };
    let mut opts = vec![
        format!("--gpu-architecture={target}"),
        "--fmad=false".to_string(),
        "--std=c++17".to_string(),
    ];
    if std::env::var("GPUPC_NVRTC_VERBOSE").is_ok_and(|v| v == "1") {
        opts.push("--ptxas-options=-v".to_string());
    }
    let csrc = CString::new(src).map_err(|_| "kernel source holds a NUL byte".to_string())?;
    let cname = CString::new(name).map_err(|_| "kernel name holds a NUL byte".to_string())?;
    let prog = nres::create_program(&csrc, Some(&cname)).map_err(|e| format!("NVRTC could not create the program: {e}"))?;
    // SAFETY: prog is live until destroy_program below; every path reaches it.
    let out = unsafe {
        let compiled = nres::compile_program(prog, &opts);
        let log = nres::get_program_log(prog)
            .map(|l| CStr::from_ptr(l.as_ptr()).to_string_lossy().into_owned())
            .unwrap_or_default();
        match compiled {
            Err(e) => Err(format!("NVRTC failed to compile {name} for {target} ({e}):\n{log}")),
            Ok(()) if cubin => get_cubin(prog).map(|b| (Ptx::from_binary(b), format!("{target} (cubin)"), log)),
            Ok(()) => nres::get_ptx(prog)
                .map_err(|e| format!("NVRTC gave no PTX: {e}"))
                .map(|v| {
                    let s = CStr::from_ptr(v.as_ptr() as *const c_char).to_string_lossy().into_owned();
                    (Ptx::from_src(s), format!("{target} (ptx)"), log)
                }),
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
    fn kernel_source_defines_every_kernel_the_backend_loads() {
        for k in crate::gauss::KERNEL_NAMES.iter() {
            assert!(GAUSS_SRC.contains(k.trim_end_matches(|c: char| c.is_ascii_digit())), "{k}");
        }
        for m in crate::host::SET_KERNEL_VARIANTS {
            assert!(GAUSS_SRC.contains(&format!("GAUSS_SET_KERNELS({m})")));
        }
        assert!(GSQUARE_SRC.contains("__global__ void __launch_bounds__(MAXBLOCK) gsquare_tests("));
        assert!(GSQUARE_SRC.contains("__global__ void pchisq_points("));
        assert!(GSQUARE_SRC.contains(&format!("#define MAXBLOCK {}", crate::discrete::BLOCK)));
        assert!(GSQUARE_SRC.contains(&format!("#define CHUNK {}", crate::discrete::CHUNK)));
        assert!(GSQUARE_SRC.contains(&format!("#define MAXL {}", crate::discrete::MAX_LEVEL)));
    }
}
