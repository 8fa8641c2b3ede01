//! The engine of a call as R asks for it and reports it (the choice itself is pc-cuda's
//! `open.rs`), and the GPUs: `devices =` of `gpu_pc()` as R checked it and put it into the test's
//! data list as `devices`, and every usable device for `gpu_info()`.

use extendr_api::prelude::*;
use pc_core::PcError;
use pc_cuda::open::{Asked, Work};
use pc_cuda::Choice;

use crate::convert::{double_vec, CoreResult};

/// The ordinals R chose (every usable device by default); `GPUPC_CUDA_DEVICE` (or 0) when the
/// list holds none.
pub(crate) fn devices_of(data: &List) -> CoreResult<Vec<usize>> {
    match data.iter().find(|(k, _)| *k == "devices") {
        Some((_, v)) => ordinals(&v),
        None => ordinals(&Robj::from(())),
    }
}

/// Whether the devices were chosen by the work (`devices = NULL`), so that gaussCItest's join
/// the first one at a large level rather than split every level from the start.
pub(crate) fn devices_grow(data: &List) -> CoreResult<bool> {
    match data.iter().find(|(k, _)| *k == "devices_grow") {
        Some((_, v)) => v.as_bool().ok_or_else(|| PcError::Internal("devices_grow must be TRUE or FALSE".into())),
        None => Ok(false),
    }
}

/// GPU numbers from R (NULL: the default device).
pub(crate) fn ordinals(v: &Robj) -> CoreResult<Vec<usize>> {
    if v.is_null() {
        return Ok(vec![pc_cuda::device_ordinal()]);
    }
    let d = double_vec(v, "devices")?;
    if d.is_empty() || d.iter().any(|x| !(x.is_finite() && *x >= 0.0 && x.fract() == 0.0 && *x < 65536.0)) {
        return Err(PcError::invalid("devices", "must be GPU numbers (0, 1, ...) as gpu_info()$devices lists them"));
    }
    Ok(d.iter().map(|&x| x as usize).collect())
}

/// `devices =` from R: NULL (none given) or the GPU numbers R checked.
fn given(v: &Robj) -> CoreResult<Option<Vec<usize>>> {
    if v.is_null() {
        Ok(None)
    } else {
        ordinals(v).map(Some)
    }
}

/// A double from R, NA as NaN (extendr's `f64` arguments refuse NA).
fn number(x: &Robj) -> f64 {
    x.as_real_slice().and_then(|v| v.first().copied()).unwrap_or(f64::NAN)
}

/// GPU numbers for R, NULL for none.
fn numbers(d: Option<Vec<usize>>) -> Robj {
    d.map_or_else(|| Robj::from(()), |d| d.iter().map(|&o| o as i32).collect::<Vec<_>>().into_robj())
}

fn choice_to_r(c: Choice) -> Robj {
    let why = c.devices_why.map_or_else(|| Robj::from(()), Robj::from);
    list!(backend = if c.cuda { "cuda" } else { "cpu" }, why = c.why, devices = numbers(c.devices), devices_why = why).into_robj()
}

/// The engine of a skeleton (`pc_cuda::open::choose`): `work` "gauss", "dis", "bin", "cmiknn" or
/// "rfun", `backend` as R checked it, `n` the rows of the codes (NA otherwise), `devices` NULL or
/// the GPUs named. list(backend = "cpu" / "cuda", why, devices, devices_why), or the error list.
#[extendr]
fn gpupc_choose_engine(work: &str, backend: &str, p: f64, n: Robj, devices: Robj) -> Robj {
    let chosen = (|| -> CoreResult<Robj> {
        let (asked, work) = (Asked::parse(backend)?, Work::parse(work)?);
        Ok(choice_to_r(pc_cuda::choose(asked, work, p as usize, number(&n), given(&devices)?.as_deref(), pc_cuda::open::probe_gpus)?))
    })();
    chosen.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

/// The GPUs of a CUDA run (`pc_cuda::open::choose_devices`) of `work` ("jtree" or a test) and
/// size `size` among the `usable` ones: list(devices, why), or the error list.
#[extendr]
fn gpupc_choose_devices(devices: Robj, work: &str, size: Robj, usable: Robj) -> Robj {
    let chosen = (|| -> CoreResult<Robj> {
        let usable = if usable.len() == 0 { Vec::new() } else { ordinals(&usable)? };
        let (d, why) = pc_cuda::open::choose_devices(given(&devices)?.as_deref(), Work::parse(work)?, number(&size), &usable)?;
        Ok(list!(devices = numbers(d), why = why).into_robj())
    })();
    chosen.unwrap_or_else(|e| crate::rerror::from_pc(&e))
}

/// Every usable device, as columns (R makes them a data frame): `gpu_info()$devices`.
pub(crate) fn devices_table() -> Robj {
    let all = pc_cuda::probe_all().unwrap_or_default();
    list!(
        device = all.iter().map(|d| d.ordinal as i32).collect::<Vec<_>>(),
        name = all.iter().map(|d| d.name.clone()).collect::<Vec<_>>(),
        memory_bytes = all.iter().map(|d| d.total_memory as f64).collect::<Vec<_>>(),
        free_bytes = all.iter().map(|d| d.free_memory as f64).collect::<Vec<_>>(),
        compute_capability = all.iter().map(|d| format!("{}.{}", d.compute_capability.0, d.compute_capability.1)).collect::<Vec<_>>(),
        multiprocessors = all.iter().map(|d| d.multiprocessors).collect::<Vec<_>>()
    )
    .into_robj()
}

extendr_module! {
    mod multi;
    fn gpupc_choose_engine;
    fn gpupc_choose_devices;
}
