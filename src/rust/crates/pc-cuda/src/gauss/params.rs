//! The Gaussian kernels' parameters, each struct mirroring the `extern "C" __global__` signature
//! it names (`gauss.cu`, `corr.cu`, `merge.cu`), in its order; the tests below hold them to it.

use cudarc::driver::{CudaSlice, CudaViewMut};

use crate::runtime::launch::{kernel_params, DeviceAddr};

kernel_params!(Level0 = "gauss_level0" {
    C: &'a CudaSlice<f64>, p: u64, off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>, upper: &'a CudaSlice<u32>,
    ebase: &'a CudaSlice<u64>, n_rows: u32, e0: u64, m: u64, zfac: f64, both: i32,
    p0_out: &'a mut CudaSlice<f64>, p1_out: &'a mut CudaSlice<f64>,
});

kernel_params!(Level1 = "gauss_level1" {
    C: &'a CudaSlice<f64>, p: u64, off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>, ei: &'a CudaSlice<u32>,
    ej: &'a CudaSlice<u32>, qi: &'a CudaSlice<u32>, qj: &'a CudaSlice<u32>, sides: &'a CudaSlice<u8>, n_edges: u64,
    zfac: f64, alpha: f64, na_value: f64, key_out: &'a mut CudaSlice<u64>,
    pbest_out: &'a mut CudaSlice<f64>, maxfail_out: &'a mut CudaSlice<f64>,
});

kernel_params!(Sets = "gauss_sets_l##M" {
    C: &'a CudaSlice<f64>, p: u64, off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>,
    edge_of: &'a CudaSlice<i32>, task_row: &'a CudaSlice<u32>, task_t0: &'a CudaSlice<u64>,
    task_prefix: &'a CudaSlice<u64>, n_tasks: u32, total: u64, binom: &'a CudaSlice<u64>, l: i32,
    zfac: f64, alpha: f64, na_value: f64, pd_margin: f64, symmetric: i32, best: &'a mut CudaSlice<u64>,
    maxfail: &'a mut CudaSlice<u64>, stats: &'a mut CudaSlice<u64>,
});

kernel_params!(Pbest = "gauss_pbest_l##M" {
    C: &'a CudaSlice<f64>, p: u64, off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>,
    ei: &'a CudaSlice<u32>, ej: &'a CudaSlice<u32>, items: &'a CudaSlice<u32>, n_items: u32,
    binom: &'a CudaSlice<u64>, l: i32, zfac: f64, pd_margin: f64, symmetric: i32, best: &'a CudaSlice<u64>,
    pbest_out: &'a mut CudaSlice<f64>,
});

kernel_params!(RowsLive = "gauss_rows_live" {
    off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>, edge_of: &'a CudaSlice<i32>, rows: &'a CudaSlice<u32>,
    n_rows: u32, best: &'a CudaSlice<u64>, live: &'a mut CudaSlice<u8>,
});

kernel_params!(ScanC = "gauss_scan_c" { C: &'a CudaSlice<f64>, p: u64, tol: f64, bound: f64, flags: &'a mut CudaSlice<u32> });

kernel_params!(PmaxInit = "dense_pmax_init" { pmax: &'a mut CudaSlice<f64>, p: u64, fast: i32 });

kernel_params!(Degrees = "dense_degrees" { adj: &'a CudaSlice<u64>, words: u64, p: u32, deg: &'a mut CudaSlice<u32> });

kernel_params!(FillRows = "dense_fill_rows" {
    adj: &'a CudaSlice<u64>, words: u64, p: u32, off: &'a CudaSlice<u64>, cols: &'a mut CudaSlice<u32>,
    upper: &'a mut CudaSlice<u32>,
});

kernel_params!(DenseLevel0 = "gauss_dense_level0" {
    C: &'a CudaSlice<f64>, p: u64, snap: &'a CudaSlice<u64>, adj: &'a mut CudaSlice<u64>, fixed: &'a CudaSlice<u64>,
    has_fixed: i32, words: u64, deg: &'a CudaSlice<u32>, zfac: f64, both: i32, alpha: f64, na_value: f64,
    pmax: &'a mut CudaSlice<f64>, sep0: &'a mut CudaSlice<u64>, counters: &'a mut CudaSlice<u64>, i0: u32, i1: u32,
    fast: i32,
});

kernel_params!(DenseLevel1 = "gauss_dense_level1" {
    C: &'a CudaSlice<f64>, p: u64, off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>, upper: &'a CudaSlice<u32>,
    ebase: &'a CudaSlice<u64>, n_rows: u32, e0: u64, m: u64, fixed: &'a CudaSlice<u64>, has_fixed: i32, words: u64,
    zfac: f64, alpha: f64, na_value: f64, adj: &'a mut CudaSlice<u64>, pmax: &'a mut CudaSlice<f64>,
    sep_out: &'a mut CudaSlice<u32>, sep_count: &'a mut CudaSlice<u64>, counters: &'a mut CudaSlice<u64>, fast: i32,
});

kernel_params!(Batch = "gauss_batch_l##M" {
    C: &'a CudaSlice<f64>, p: u64, tx: &'a CudaSlice<u32>, ty: &'a CudaSlice<u32>, s_start: &'a CudaSlice<u64>,
    s: &'a CudaSlice<u32>, n_tests: u64, zfac: &'a CudaSlice<f64>, pd_margin: f64, symmetric: i32,
    p_out: &'a mut CudaSlice<f64>,
});

kernel_params!(Listed = "gauss_listed_l##M" {
    C: &'a CudaSlice<f64>, p: u64, tx: &'a CudaSlice<u32>, ty: &'a CudaSlice<u32>, s: &'a CudaSlice<u32>,
    n_tests: u64, l: i32, zfac: f64, pd_margin: f64, symmetric: i32, cpp: i32, p_out: &'a mut CudaSlice<f64>,
});

kernel_params!(Ranked = "gauss_ranked_l##M" {
    C: &'a CudaSlice<f64>, p: u64, w64: &'a CudaSlice<u64>, w32: &'a CudaSlice<u32>, n_pieces: u32, n_windows: u32,
    members: &'a CudaSlice<u32>, binom: &'a CudaSlice<u64>, l: i32, zfac: f64, alpha: f64, na_value: f64,
    pd_margin: f64, symmetric: i32, cpp: i32, out: &'a mut CudaSlice<u64>,
});

kernel_params!(RankedPbest = "gauss_ranked_pbest_l##M" {
    C: &'a CudaSlice<f64>, p: u64, w64: &'a CudaSlice<u64>, w32: &'a CudaSlice<u32>, n_pieces: u32, n_windows: u32,
    members: &'a CudaSlice<u32>, binom: &'a CudaSlice<u64>, l: i32, zfac: f64, pd_margin: f64, symmetric: i32,
    cpp: i32, out: &'a mut CudaSlice<u64>,
});

kernel_params!(DenseDeep = "gauss_dense_deep_l##M" {
    C: &'a CudaSlice<f64>, p: u64, off: &'a CudaSlice<u64>, cols: &'a CudaSlice<u32>, upper: &'a CudaSlice<u32>,
    ebase: &'a CudaSlice<u64>, n_rows: u32, end: u64, fixed: &'a CudaSlice<u64>, has_fixed: i32, words: u64,
    binom: &'a CudaSlice<u64>, l: i32, zfac: f64, alpha: f64, na_value: f64, pd_margin: f64, symmetric: i32,
    adj: &'a mut CudaSlice<u64>, raises: &'a mut CudaSlice<u64>, own: &'a mut CudaSlice<u32>, stride: u64,
    sep_out: &'a mut CudaSlice<u32>, counters: &'a mut CudaSlice<u64>, next: &'a mut CudaSlice<u64>,
});

kernel_params!(RowOffsets = "dense_row_offsets" {
    deg: &'a CudaSlice<u32>, upper: &'a CudaSlice<u32>, has_upper: i32, p: u32, out: &'a mut CudaSlice<u64>,
    stats: CudaViewMut<'a, u64>,
});

kernel_params!(CorrSyrk = "corr_syrk" { z: &'a CudaSlice<f64>, n: u64, p: u32, c: &'a mut CudaSlice<f64> });

kernel_params!(
    /// `merge_and_u64` and `merge_or_u64` alike.
    MergeU64 = "merge_and_u64" { dst: CudaViewMut<'a, u64>, src: &'a CudaSlice<u64>, n: u64 });

kernel_params!(MergeMax = "merge_max_f64" { dst: DeviceAddr<f64>, src: &'a CudaSlice<f64>, n: u64 });

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::launch::assert_mirrors;
    use crate::runtime::module::{CORR_SRC, GAUSS_SRC, MERGE_SRC};

    #[test]
    fn each_struct_mirrors_its_kernels_signature() {
        assert_mirrors(GAUSS_SRC, &[
            (Level0::KERNEL, Level0::fields()),
            (Level1::KERNEL, Level1::fields()),
            (Sets::KERNEL, Sets::fields()),
            (Pbest::KERNEL, Pbest::fields()),
            (RowsLive::KERNEL, RowsLive::fields()),
            (ScanC::KERNEL, ScanC::fields()),
            (PmaxInit::KERNEL, PmaxInit::fields()),
            (Degrees::KERNEL, Degrees::fields()),
            (FillRows::KERNEL, FillRows::fields()),
            (DenseLevel0::KERNEL, DenseLevel0::fields()),
            (DenseLevel1::KERNEL, DenseLevel1::fields()),
            (Batch::KERNEL, Batch::fields()),
            (Listed::KERNEL, Listed::fields()),
            (Ranked::KERNEL, Ranked::fields()),
            (RankedPbest::KERNEL, RankedPbest::fields()),
            (DenseDeep::KERNEL, DenseDeep::fields()),
            (RowOffsets::KERNEL, RowOffsets::fields()),
        ]);
        assert_mirrors(CORR_SRC, &[(CorrSyrk::KERNEL, CorrSyrk::fields())]);
        assert_mirrors(MERGE_SRC, &[(MergeU64::KERNEL, MergeU64::fields()), ("merge_or_u64", MergeU64::fields()), (MergeMax::KERNEL, MergeMax::fields())]);
    }
}
