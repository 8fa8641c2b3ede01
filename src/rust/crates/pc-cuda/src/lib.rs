//! pc-cuda: the CUDA backend of gpupc.
//!
//! Nothing CUDA is needed to build it: cudarc loads the driver and NVRTC at run time, and
//! [`probe`] says (without panicking) whether a usable GPU is there. The kernels live in
//! `src/kernels/*.cu`, are embedded in the library and compiled by NVRTC for the card in use, by
//! family and only when a call needs them ([`module`]), once per process and once per machine:
//! the images are kept on disk between processes ([`kernel_cache`]). [`CudaGauss`] runs pcalg's `gaussCItest` levels of
//! `skeleton(method = "stable")` through pc-core's [`pc_core::Backend`] seam; the host-side
//! arithmetic the kernels rely on lives in [`host`], testable without a GPU.

pub mod cmiknn;
mod corr;
pub mod device;
pub mod discrete;
pub mod gauss;
pub mod gauss_batch;
mod gauss_dense;
mod gauss_fast;
pub mod gauss_multi;
mod gpu;
pub mod gsquare_batch;
pub mod host;
mod inflight;
pub mod jtree;
pub mod kernel_cache;
pub mod level0;
pub mod memplan;
pub mod module;
pub mod open;
pub mod windows;

pub use cmiknn::{CmiTimings, CudaCmiKnn};
pub use device::{probe, probe_all, DeviceInfo};
pub use discrete::{min_split_tests, CudaGSquare};
pub use gauss::{CudaGauss, CudaTimings, LevelTimings};
pub use gauss_batch::CudaGaussBatch;
pub use gauss_multi::{combined_timings, device_labels, MultiGauss};
pub use gsquare_batch::CudaGSquareBatch;
pub use open::{choose, Choice, Engine};
