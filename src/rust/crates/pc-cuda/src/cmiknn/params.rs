//! The CMI-kNN kernel's parameters, mirroring `cmiknn_partials`' signature (`cmiknn.cu`) in its
//! order; the test below holds them to it.

use cudarc::driver::CudaSlice;

use crate::runtime::launch::kernel_params;

kernel_params!(Partials = "cmiknn_partials" {
    ranks: &'a CudaSlice<u32>, n: u32, psi: &'a CudaSlice<f64>, k: u32, tx: &'a CudaSlice<u32>, ty: &'a CudaSlice<u32>,
    tl: &'a CudaSlice<u32>, ts: &'a CudaSlice<u32>, tperm: &'a CudaSlice<u32>, perm: &'a CudaSlice<u32>, permute_x: u32,
    n_est: u32, partial: &'a mut CudaSlice<f64>,
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::launch::assert_mirrors;
    use crate::runtime::module::CMIKNN_SRC;

    #[test]
    fn the_struct_mirrors_the_kernels_signature() {
        assert_mirrors(CMIKNN_SRC, &[(Partials::KERNEL, Partials::fields())]);
    }
}
