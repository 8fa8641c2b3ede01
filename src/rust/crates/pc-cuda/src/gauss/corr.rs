//! The correlation matrix computed on the device from the standardised data (`corr.cu`), for
//! `suffStat = list(data = X)`: the data go up once (8 n p bytes) and C (8 p^2) never exists on
//! the host. Bit for bit pc-core's `corr::correlation` (one sequential FMA chain per entry).

use cudarc::driver::{CudaSlice, LaunchConfig};
use pc_core::PcError;

use crate::runtime::gpu::{cuda_err, Gpu, Result};
use crate::gauss::params;
use crate::runtime::module;

/// The kernel's tile side (`CT` in corr.cu, passed to it by `Family::defines`).
pub(crate) const TILE: usize = 64;

/// Writes C = Z'Z into `c` (p x p, column-major) from `z` (rows x p, column-major).
pub(crate) fn correlation_into(gpu: &Gpu, z: &[f64], rows: usize, p: usize, c: &mut CudaSlice<f64>) -> Result<()> {
    let tiles = p.div_ceil(TILE);
    if tiles > 65535 {
        return Err(PcError::invalid("suffStat$data", "too many variables for the GPU's correlation kernel"));
    }
    let compiled = module::module_for(&gpu, module::Family::Corr).map_err(PcError::Cuda)?;
    let f = compiled.function("corr_syrk").map_err(PcError::Cuda)?;
    // SAFETY: written whole by the upload below before the kernel reads it.
    let mut dz = unsafe { gpu.stream.alloc::<f64>(z.len()) }.map_err(cuda_err("could not allocate the data on the GPU"))?;
    gpu.upload_staged(z, &mut dz, "could not upload the data")?;
    let (n, p32) = (rows as u64, p as u32);
    let cfg = LaunchConfig { grid_dim: (tiles as u32, tiles as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: dz holds rows x p values, c p x p.
    unsafe { params::CorrSyrk { z: &dz, n, p: p32, c }.launch(gpu, &f, cfg, "corr_syrk") }?;
    gpu.stream.synchronize().map_err(cuda_err("computing the correlation matrix"))?;
    drop(dz);
    Ok(())
}
