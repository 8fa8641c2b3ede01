use thiserror::Error;

/// Every way a skeleton search can fail; converted once into an R error at the glue boundary.
#[derive(Debug, Error)]
pub enum PcError {
    #[error("invalid argument '{arg}': {msg}")]
    InvalidArgument { arg: &'static str, msg: String },
    #[error("the independence test failed: {0}")]
    Test(String),
    #[error("interrupted by the user")]
    Interrupted,
    #[error("level {level}: a conditioning-set count overflows 64 bits ({n} neighbours, size {level}); set m.max lower")]
    TooManySets { level: usize, n: usize },
    #[error("CUDA backend: {0}")]
    Cuda(String),
    #[error("internal error: {0}")]
    Internal(String),
    /// A buffer that grows with the input would not fit in memory (see `mem.rs`).
    #[error("cannot allocate {} for {what} (argument '{arg}'){}", crate::mem::format_bytes(*.bytes), .available.map(|a| format!("; {} of memory are available", crate::mem::format_bytes(a))).unwrap_or_default())]
    OutOfMemory { arg: &'static str, what: String, bytes: u64, available: Option<u64> },
    /// The GPU's free memory is too small for what a run holds there (pc-cuda's `runtime/memplan.rs`).
    #[error("cannot allocate {} on the GPU for {what} (argument '{arg}'); {} of GPU memory are free", crate::mem::format_bytes(*.bytes), crate::mem::format_bytes(*.free))]
    DeviceOutOfMemory { arg: &'static str, what: String, bytes: u64, free: u64 },
}

impl PcError {
    pub fn invalid(arg: &'static str, msg: impl Into<String>) -> Self {
        PcError::InvalidArgument { arg, msg: msg.into() }
    }
}

pub type Result<T> = std::result::Result<T, PcError>;
