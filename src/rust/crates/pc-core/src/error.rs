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
}

impl PcError {
    pub fn invalid(arg: &'static str, msg: impl Into<String>) -> Self {
        PcError::InvalidArgument { arg, msg: msg.into() }
    }
}

pub type Result<T> = std::result::Result<T, PcError>;
