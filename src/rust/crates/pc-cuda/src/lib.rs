//! pc-cuda: the CUDA backend of gpupc.
//!
//! Nothing CUDA is needed to build it: cudarc loads the driver and NVRTC at run time, and
//! [`probe`] says (without panicking) whether a usable GPU is there. [`runtime`] holds what every
//! method runs on (devices, contexts, NVRTC and its disk cache, staged copies, rounds in flight,
//! memory plans); each test kind has a folder with its host code beside its kernels (`*.cu`,
//! embedded in the library and compiled by NVRTC for the card in use, by family and only when a
//! call needs them): [`gauss`] (pcalg's `gaussCItest`, [`CudaGauss`] through pc-core's
//! [`pc_core::Backend`] seam), [`gsquare`] (`disCItest` / `binCItest`), [`cmiknn`] and [`jtree`].
//! The scheduling that needs no GPU (rounds of listed tests, the set kernels' rows and ranks)
//! lives in pc-core's `rounds`, beside the CPU backends it is tested against.

pub mod cmiknn;
pub mod gauss;
pub mod gsquare;
pub mod jtree;
pub mod open;
pub mod runtime;

pub use cmiknn::CudaCmiKnn;
pub use gauss::batch::{CudaGaussBatch, DeviceC};
pub use gauss::multi::MultiGauss;
pub use gauss::CudaGauss;
pub use gsquare::batch::CudaGSquareBatch;
pub use gsquare::{min_split_tests, CudaGSquare};
pub use runtime::device::{device_labels, device_ordinal, probe, probe_all, probe_device, DeviceInfo};
pub use runtime::timings::{combined_timings, LevelTimings, Timings};
pub use open::{choose, Choice, Engine};
