//! Finding a usable GPU without ever panicking: the CUDA driver and NVRTC are loaded at run time
//! (cudarc's dynamic loading), and cudarc panics when a library is missing, so every call that
//! may load one runs behind a library-presence check and inside `catch_unwind`.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::CUdevice_attribute;
use cudarc::driver::{result as dres, sys as dsys, CudaContext};
use cudarc::nvrtc::sys as nsys;

/// What `probe()` found.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceInfo {
    pub ordinal: usize,
    pub name: String,
    /// Bytes of device memory in all, and free when probed.
    pub total_memory: usize,
    pub free_memory: usize,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    /// CUDA version the driver supports, e.g. (13, 0).
    pub driver_version: (i32, i32),
    pub nvrtc_version: (i32, i32),
}

impl std::fmt::Display for DeviceInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (device {}, compute capability {}.{}, {} SMs, {:.1} GB, {:.1} GB free; driver CUDA {}.{}, NVRTC {}.{})",
            self.name,
            self.ordinal,
            self.compute_capability.0,
            self.compute_capability.1,
            self.multiprocessors,
            gb(self.total_memory),
            gb(self.free_memory),
            self.driver_version.0,
            self.driver_version.1,
            self.nvrtc_version.0,
            self.nvrtc_version.1
        )
    }
}

pub(crate) fn gb(bytes: usize) -> f64 {
    bytes as f64 / 1e9
}

/// Runs `f`, turning a panic (a CUDA library that could not be loaded, say) into an error string.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(e) => Err(format!("{what}: the CUDA library panicked: {}", pc_core::backend::panic_message(&*e))),
    }
}

/// The device ordinal to use: `GPUPC_CUDA_DEVICE` when set, else 0.
pub fn device_ordinal() -> usize {
    std::env::var("GPUPC_CUDA_DEVICE").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
}

/// Checks for the driver library, NVRTC and a device; never panics.
pub fn probe() -> Result<DeviceInfo, String> {
    probe_device(device_ordinal())
}

/// Every device the driver lists, each probed (a device that cannot be opened is left out; when
/// none can, the reason of the first).
pub fn probe_all() -> Result<Vec<DeviceInfo>, String> {
    let count = guarded("counting the GPUs", || {
        // SAFETY: only tries to open the library by name.
        if !unsafe { dsys::is_culib_present() } {
            return Err("no CUDA driver library (libcuda.so) was found".to_string());
        }
        dres::init().map_err(|e| format!("the CUDA driver did not start: {e}"))?;
        dres::device::get_count().map_err(|e| format!("could not count CUDA devices: {e}"))
    })?;
    if count <= 0 {
        return probe_device(0).map(|d| vec![d]);
    }
    let mut found = Vec::new();
    let mut first_err = None;
    for ordinal in 0..count as usize {
        match probe_device(ordinal) {
            Ok(d) => found.push(d),
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    match (found.is_empty(), first_err) {
        (true, Some(e)) => Err(e),
        _ => Ok(found),
    }
}

pub fn probe_device(ordinal: usize) -> Result<DeviceInfo, String> {
    guarded("probing the GPU", || {
        // SAFETY: only tries to open the libraries by name.
        if !unsafe { dsys::is_culib_present() } {
            return Err("no CUDA driver library (libcuda.so) was found".to_string());
        }
        if !unsafe { nsys::is_culib_present() } {
            return Err("the CUDA driver is there but NVRTC (libnvrtc.so.13 or .12) was not found; \
                        install the CUDA toolkit or its NVRTC runtime, or put it on LD_LIBRARY_PATH"
                .to_string());
        }
        dres::init().map_err(|e| format!("the CUDA driver did not start: {e}"))?;
        let count = dres::device::get_count().map_err(|e| format!("could not count CUDA devices: {e}"))?;
        if count <= 0 {
            return Err("the CUDA driver found no GPU".to_string());
        }
        if ordinal >= count as usize {
            return Err(format!("GPU {ordinal} asked for, but only {count} found"));
        }
        let ctx = context(ordinal).map_err(|e| format!("could not open GPU {ordinal}: {e}"))?;
        info_of(&ctx)
    })
}

/// The compute capability of device `ordinal`, read without opening a context.
pub(crate) fn compute_capability(ordinal: usize) -> Result<(i32, i32), String> {
    guarded("reading the compute capability", || {
        // SAFETY: only tries to open the library by name.
        if !unsafe { dsys::is_culib_present() } {
            return Err("no CUDA driver library".to_string());
        }
        let e = |e: dres::DriverError| e.to_string();
        dres::init().map_err(e)?;
        let dev = dres::device::get(ordinal as i32).map_err(e)?;
        // SAFETY: dev is a valid device handle from the driver.
        let major = unsafe { dres::device::get_attribute(dev, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) }.map_err(e)?;
        let minor = unsafe { dres::device::get_attribute(dev, CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) }.map_err(e)?;
        Ok((major, minor))
    })
}

/// The device's primary context, retained once for the process and bound to the calling thread.
/// Creating it takes a tenth of a second or more, and a context a probe released would be
/// created again by the run that follows it (the first call of a process probed, then ran).
pub(crate) fn context(ordinal: usize) -> Result<Arc<CudaContext>, dres::DriverError> {
    static CONTEXTS: OnceLock<Mutex<HashMap<usize, Arc<CudaContext>>>> = OnceLock::new();
    let mut held = CONTEXTS.get_or_init(|| Mutex::new(HashMap::new())).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(ctx) = held.get(&ordinal) {
        ctx.bind_to_thread()?;
        return Ok(ctx.clone());
    }
    let ctx = CudaContext::new(ordinal)?;
    held.insert(ordinal, ctx.clone());
    Ok(ctx)
}

pub(crate) fn info_of(ctx: &Arc<CudaContext>) -> Result<DeviceInfo, String> {
    let err = |what: &str, e: dres::DriverError| format!("could not read the GPU's {what}: {e}");
    let name = ctx.name().map_err(|e| err("name", e))?;
    let compute_capability = ctx.compute_capability().map_err(|e| err("compute capability", e))?;
    let (free_memory, total_memory) = ctx.mem_get_info().map_err(|e| err("memory", e))?;
    let multiprocessors = ctx
        .attribute(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .map_err(|e| err("multiprocessor count", e))?;
    let mut v: std::ffi::c_int = 0;
    // SAFETY: writes one int.
    unsafe { dsys::cuDriverGetVersion(&mut v) }.result().map_err(|e| err("driver version", e))?;
    let driver_version = (v / 1000, (v % 1000) / 10);
    let (mut maj, mut min): (std::ffi::c_int, std::ffi::c_int) = (0, 0);
    // SAFETY: writes two ints.
    unsafe { nsys::nvrtcVersion(&mut maj, &mut min) }
        .result()
        .map_err(|e| format!("could not read the NVRTC version: {e:?}"))?;
    Ok(DeviceInfo {
        ordinal: ctx.ordinal(),
        name,
        total_memory,
        free_memory,
        compute_capability,
        multiprocessors,
        driver_version,
        nvrtc_version: (maj, min),
    })
}

/// One label per device ("GPU 1"; "GPU 0 (context 1)" for an ordinal given again).
pub fn device_labels(ordinals: &[usize]) -> Vec<String> {
    ordinals
        .iter()
        .enumerate()
        .map(|(d, o)| if ordinals[..d].contains(o) { format!("GPU {o} (context {d})") } else { format!("GPU {o}") })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_never_panics() {
        // On a machine without a GPU (CI) this is an Err with a reason; with one, an Ok.
        match probe() {
            Ok(info) => {
                assert!(!info.name.is_empty());
                assert!(info.total_memory > 0);
            }
            Err(msg) => assert!(!msg.is_empty()),
        }
    }

    #[test]
    fn guarded_turns_panics_into_errors() {
        let r: Result<(), String> = guarded("testing", || panic!("boom"));
        assert!(r.unwrap_err().contains("boom"));
    }
}
