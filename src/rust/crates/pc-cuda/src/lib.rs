//! CUDA backend (pending).
