//! What every method's backend runs on: devices and their contexts ([`device`]), one device's
//! stream, kernels, staged copies and clocks ([`gpu`]), kernels' parameters pushed in their
//! signatures' order ([`launch`]), NVRTC compilation by family ([`module`])
//! and its disk cache ([`kernel_cache`]), two rounds of listed tests in flight ([`inflight`]),
//! device memory planned before allocating ([`memplan`]), buffers kept for an engine's next call
//! until another plans memory ([`held`]) and where the time went ([`timings`]).

pub mod device;
pub mod gpu;
pub mod held;
pub mod inflight;
pub mod kernel_cache;
pub mod launch;
pub mod memplan;
pub mod module;
pub mod timings;
