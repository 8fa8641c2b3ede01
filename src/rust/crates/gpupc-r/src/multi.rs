//! Several GPUs for one call: which devices (`devices =` of `gpu_pc()`, which R checked and put
//! into the test's data list as `devices`), and the backends over them (pc-cuda's `MultiGauss`;
//! pc-core's `Split` of the discrete and CMI-kNN backends).

use extendr_api::prelude::*;
use pc_core::multi::Split;
use pc_core::PcError;

use crate::convert::{double_vec, CoreResult};
use crate::entry::{cuda_details, Run};

/// The ordinals R chose (every usable device by default); `GPUPC_CUDA_DEVICE` (or 0) when the
/// list holds none.
pub(crate) fn devices_of(data: &List) -> CoreResult<Vec<usize>> {
    match data.iter().find(|(k, _)| *k == "devices") {
        Some((_, v)) => ordinals(&v),
        None => ordinals(&Robj::from(())),
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

/// gaussCItest on several devices.
pub(crate) fn cuda_gauss(run: &mut Run, c: &[f64], p: usize, n: f64, scan: &pc_core::par::SymScan, devices: &[usize]) -> CoreResult<(pc_core::SkeletonResult, String)> {
    let t0 = std::time::Instant::now();
    let mut b = pc_cuda::MultiGauss::new_scanned_on(devices, c, p, n, scan.exact, scan.has_nan)?;
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    run.extra = with_devices(cuda_details(b.timings()), devices, b.merge_seconds());
    Ok(out)
}

/// disCItest / binCItest on several devices (each writes its rounds' tests on its share of the
/// call's threads).
pub(crate) fn cuda_gsquare(run: &mut Run, t: &pc_core::citest::GSquareTest, devices: &[usize]) -> CoreResult<(pc_core::SkeletonResult, String)> {
    let t0 = std::time::Instant::now();
    let per = share_threads(run.params.threads, devices.len());
    let mut devs = Vec::with_capacity(devices.len());
    for (&d, label) in devices.iter().zip(pc_cuda::device_labels(devices)) {
        let mut g = pc_cuda::CudaGSquare::new_on(t, d).map_err(|e| pc_core::multi::label_error(&label, e))?;
        g.set_threads(per)?;
        devs.push(g);
    }
    let mut b = Split::new(devs, pc_cuda::device_labels(devices))?.with_min_split_tests(pc_cuda::gsquare::min_split_tests(t.data.n));
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    let tm = pc_cuda::combined_timings(b.devs.iter().map(|d| d.timings()));
    run.extra = with_split(with_devices(cuda_details(&tm), devices, 0.0), &b);
    Ok(out)
}

/// cmiknnCItest on several devices (the permutations on each device's share of the threads).
pub(crate) fn cuda_cmiknn(run: &mut Run, t: &pc_cmiknn::CmiKnn, devices: &[usize]) -> CoreResult<(pc_core::SkeletonResult, String)> {
    let t0 = std::time::Instant::now();
    let per = share_threads(run.params.threads, devices.len());
    let labels = pc_cuda::device_labels(devices);
    let mut devs = Vec::with_capacity(devices.len());
    for (&d, label) in devices.iter().zip(&labels) {
        devs.push(pc_cuda::CudaCmiKnn::new_on(t, per, d).map_err(|e| pc_core::multi::label_error(label, e))?);
    }
    let mut b = Split::new(devs, labels)?;
    run.setup_s = t0.elapsed().as_secs_f64();
    let out = run.go(&mut b)?;
    let (mut kernel, mut transfer, mut tests) = (0.0, 0.0, 0.0);
    for d in &b.devs {
        let tm = d.timings();
        kernel += tm.kernel_s;
        transfer += tm.transfer_s;
        tests += tm.tests as f64;
    }
    run.extra = with_split(list!(kernel_s = kernel, transfer_s = transfer, gpu_tests = tests, devices = devices.iter().map(|&d| d as i32).collect::<Vec<_>>()), &b);
    Ok(out)
}

/// Threads per device: the call's cores (0: all) divided among the devices.
fn share_threads(threads: usize, k: usize) -> usize {
    let all = if threads == 0 { pc_core::threads::available_cores() } else { threads };
    all.div_ceil(k.max(1)).max(1)
}

/// `l` with the levels the split backend ran on one device (small) and split.
fn with_split<B: pc_core::Backend + Send>(l: List, b: &Split<B>) -> List {
    let mut names: Vec<String> = l.names().map(|n| n.map(|s| s.to_string()).collect()).unwrap_or_default();
    let mut vals: Vec<Robj> = l.values().collect();
    names.push("levels_split".into());
    vals.push((b.levels_split as i32).into_robj());
    names.push("levels_one_device".into());
    vals.push((b.levels_alone as i32).into_robj());
    List::from_names_and_values(names, vals).unwrap_or(l)
}

fn with_devices(l: List, devices: &[usize], merge_s: f64) -> List {
    let mut names: Vec<String> = l.names().map(|n| n.map(|s| s.to_string()).collect()).unwrap_or_default();
    let mut vals: Vec<Robj> = l.values().collect();
    names.push("devices".into());
    vals.push(devices.iter().map(|&d| d as i32).collect::<Vec<_>>().into_robj());
    names.push("merge_s".into());
    vals.push(merge_s.into_robj());
    List::from_names_and_values(names, vals).unwrap_or(l)
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
