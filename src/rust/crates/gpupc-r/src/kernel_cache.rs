//! The kernel cache's entry points: R resolves the folder (option, environment variable, then
//! `tools::R_user_dir()`) and hands it over before each call that may compile kernels, since the
//! option can change between calls.

use std::path::PathBuf;

use extendr_api::prelude::*;
use pc_cuda::runtime::kernel_cache::{self, DiskCache};

/// Uses `dir` as the kernel cache for the calls that follow ("" for no cache).
#[extendr]
fn gpupc_kernel_cache_use(dir: &str) {
    kernel_cache::set_dir((!dir.is_empty()).then(|| PathBuf::from(dir)));
}

/// The notice the cache left (it could not be written), once; "" when there is none.
#[extendr]
fn gpupc_kernel_cache_notice() -> String {
    kernel_cache::take_notice().unwrap_or_default()
}

/// Entries and bytes in the cache folder `dir`.
#[extendr]
fn gpupc_kernel_cache_info(dir: &str) -> Robj {
    let u = DiskCache::new(dir).usage();
    list!(dir = dir, entries = u.entries as f64, bytes = u.bytes as f64).into_robj()
}

/// Removes every entry of the cache folder `dir`; returns how many files went.
#[extendr]
fn gpupc_kernel_cache_clear(dir: &str) -> i32 {
    DiskCache::new(dir).clear() as i32
}

/// Waits for the kernels being compiled in the background (before R exits or unloads gpupc).
#[extendr]
fn gpupc_kernel_prefetch_wait() {
    pc_cuda::runtime::module::wait_for_prefetches();
}

extendr_module! {
    mod kernel_cache;
    fn gpupc_kernel_prefetch_wait;
    fn gpupc_kernel_cache_use;
    fn gpupc_kernel_cache_notice;
    fn gpupc_kernel_cache_info;
    fn gpupc_kernel_cache_clear;
}
