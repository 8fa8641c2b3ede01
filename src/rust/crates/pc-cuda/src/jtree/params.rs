//! The junction tree's kernel parameters, each struct mirroring the `extern "C" __global__`
//! signature it names (`jtree.cu`), in its order; the tests below hold them to it. The cell maps
//! are optional (a null pointer when the tree has none), and so is jt_reduce_cal's `out` (null:
//! the distribute factors, written into `dm`).

use cudarc::driver::CudaSlice;

use super::Proj;
use crate::runtime::launch::{kernel_params, Elem};

impl Elem for Proj {
    #[cfg(test)]
    const C: &'static str = "Proj";
}

kernel_params!(Reduce = "jt_reduce" {
    pj: &'a CudaSlice<Proj>, istart: &'a CudaSlice<u64>, p0: u32, np: u32, items: u64, B: u32, lw: u32, mode: i32, split: u64,
    bpool: &'a CudaSlice<u32>, opool: &'a CudaSlice<u32>, tables: &'a CudaSlice<f64>, out: &'a mut CudaSlice<f64>,
    scratch: &'a mut CudaSlice<f64>, ratio: i32, old: &'a CudaSlice<f64>,
});

kernel_params!(ReduceCal = "jt_reduce_cal" {
    pj: &'a CudaSlice<Proj>, istart: &'a CudaSlice<u64>, p0: u32, np: u32, items: u64, B: u32, lw: u32, mode: i32, split: u64,
    bpool: &'a CudaSlice<u32>, opool: &'a CudaSlice<u32>, tables: &'a CudaSlice<f64>, out: Option<&'a mut CudaSlice<f64>>,
    scratch: &'a mut CudaSlice<f64>, ratio: i32, old: &'a CudaSlice<f64>, fac: &'a CudaSlice<u32>, fa: &'a CudaSlice<u64>,
    fb_off: &'a CudaSlice<u64>, fb: &'a CudaSlice<u32>, dm: &'a mut CudaSlice<f64>,
});

kernel_params!(Combine = "jt_combine" {
    pj: &'a CudaSlice<Proj>, outs: &'a CudaSlice<u64>, istart: &'a CudaSlice<u64>, p0: u32, np: u32, cells: u64, B: u32,
    lw: u32, mode: i32, split: u64, scratch: &'a CudaSlice<f64>, out: &'a mut CudaSlice<f64>, ratio: i32,
    old: &'a CudaSlice<f64>,
});

kernel_params!(Collect = "jt_collect" {
    pj: &'a CudaSlice<Proj>, istart: &'a CudaSlice<u64>, p0: u32, np: u32, items: u64, B: u32, lw: u32, mode: i32, split: u64,
    bpool: &'a CudaSlice<u32>, opool: &'a CudaSlice<u32>, dig: &'a CudaSlice<u32>, k: u32, cl_child: &'a CudaSlice<u32>,
    homed_start: &'a CudaSlice<u32>, homed: &'a CudaSlice<u32>, base: &'a CudaSlice<f64>, hard: &'a CudaSlice<i32>,
    soft_col: &'a CudaSlice<i32>, soft: &'a CudaSlice<f64>, tables: &'a mut CudaSlice<f64>, msg: &'a mut CudaSlice<f64>,
    scratch: &'a mut CudaSlice<f64>, map_off: Option<&'a CudaSlice<u64>>, map: Option<&'a CudaSlice<u32>>,
});

kernel_params!(Maps = "jt_maps" {
    cl_off: &'a CudaSlice<u64>, nc: u32, cells: u64, pj: &'a CudaSlice<Proj>, k: u32, dig: &'a CudaSlice<u32>,
    cl_child: &'a CudaSlice<u32>, homed_start: &'a CudaSlice<u32>, homed: &'a CudaSlice<u32>, map_off: &'a CudaSlice<u64>,
    map: &'a mut CudaSlice<u32>,
});

kernel_params!(Decode = "jt_decode" {
    cl_off: &'a CudaSlice<u64>, k: u32, B: u64, pj: &'a CudaSlice<Proj>, bpool: &'a CudaSlice<u32>, opool: &'a CudaSlice<u32>,
    dig: &'a CudaSlice<u32>, vars_start: &'a CudaSlice<u32>, vars: &'a CudaSlice<u32>, n: u32, tables: &'a CudaSlice<f64>,
    x: &'a mut CudaSlice<i32>,
});

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::launch::assert_mirrors;
    use crate::runtime::module::JTREE_SRC;

    #[test]
    fn each_struct_mirrors_its_kernels_signature() {
        assert_mirrors(JTREE_SRC, &[
            (Reduce::KERNEL, Reduce::fields()),
            (ReduceCal::KERNEL, ReduceCal::fields()),
            (Combine::KERNEL, Combine::fields()),
            (Collect::KERNEL, Collect::fields()),
            (Maps::KERNEL, Maps::fields()),
            (Decode::KERNEL, Decode::fields()),
        ]);
    }
}
