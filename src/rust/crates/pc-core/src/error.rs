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
    /// A GPU failure on one of a call's devices: `index` is its place in the call's list of
    /// devices, `label` its name ("GPU 1"), `error` a `Cuda`, `Internal` or `DeviceOutOfMemory`.
    /// Kept apart so that `backend = "auto"` can go on without that device.
    #[error("{}", on_device_text(label, error))]
    OnDevice { index: usize, label: String, error: Box<PcError> },
    /// The failure of one rank of a search run over several processes (`ranks.rs`), as every rank
    /// reports it: the lowest rank that failed, and its error's text (it crossed as bytes).
    #[error("rank {rank}: {message}")]
    OnRank { rank: usize, message: String },
}

/// "CUDA backend: GPU 1: ..." (the device named after the kind, as before it was kept apart).
fn on_device_text(label: &str, e: &PcError) -> String {
    match e {
        PcError::Cuda(m) => format!("CUDA backend: {label}: {m}"),
        PcError::Internal(m) => format!("internal error: {label}: {m}"),
        other => format!("{label}: {other}"),
    }
}

impl PcError {
    pub fn invalid(arg: &'static str, msg: impl Into<String>) -> Self {
        PcError::InvalidArgument { arg, msg: msg.into() }
    }

    /// The error itself, or the one a device's label wraps.
    pub fn inner(&self) -> &PcError {
        match self {
            PcError::OnDevice { error, .. } => error,
            other => other,
        }
    }

    /// A failure of the GPU (a CUDA error, its memory too small), on which `backend = "auto"`
    /// goes on elsewhere; an invalid argument or an interrupt is not one.
    pub fn is_gpu_failure(&self) -> bool {
        matches!(self.inner(), PcError::Cuda(_) | PcError::DeviceOutOfMemory { .. })
    }

    /// The place, in the call's list of devices, of the device that failed (several devices).
    pub fn failed_device(&self) -> Option<usize> {
        match self {
            PcError::OnDevice { index, .. } => Some(*index),
            _ => None,
        }
    }
}

pub type Result<T> = std::result::Result<T, PcError>;
