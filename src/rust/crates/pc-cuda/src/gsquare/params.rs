//! The G^2 kernels' parameters, each struct mirroring the `extern "C" __global__` signature it
//! names (`gsquare.cu`), in its order; the tests below hold them to it.

use cudarc::driver::CudaSlice;

use crate::runtime::launch::kernel_params;

kernel_params!(Tests = "gsquare_tests" {
    data: &'a CudaSlice<u8>, n: u64, stride: u64, lev: &'a CudaSlice<u32>, tx: &'a CudaSlice<u32>, ty: &'a CudaSlice<u32>,
    ts: &'a CudaSlice<u32>, l: i32, n_tasks: u32, bin: i32, adapt_df: i32, shared_words: u32,
    scratch: &'a mut CudaSlice<u32>, slot_words: u64, stat_out: &'a mut CudaSlice<f64>, df_out: &'a mut CudaSlice<f64>,
    packed: i32,
});

kernel_params!(PchisqPoints = "pchisq_points" { q: &'a CudaSlice<f64>, df: &'a CudaSlice<f64>, m: u32, out: &'a mut CudaSlice<f64> });

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::launch::assert_mirrors;
    use crate::runtime::module::GSQUARE_SRC;

    #[test]
    fn each_struct_mirrors_its_kernels_signature() {
        assert_mirrors(GSQUARE_SRC, &[(Tests::KERNEL, Tests::fields()), (PchisqPoints::KERNEL, PchisqPoints::fields())]);
    }
}
