use thiserror::Error;

/// Every way building or querying a junction tree can fail.
#[derive(Debug, Error)]
pub enum JtError {
    #[error("invalid argument '{arg}': {msg}")]
    InvalidArgument { arg: &'static str, msg: String },
    #[error("the network is not valid: {0}")]
    Network(String),
    #[error("the junction tree is too large: {0}")]
    TooLarge(String),
    #[error("could not parse the BIF file: {0}")]
    Bif(String),
    #[error("out of memory: {0}")]
    OutOfMemory(String),
    #[error("interrupted by the user")]
    Interrupted,
    #[error("{0}")]
    Other(String),
}

impl JtError {
    pub fn invalid(arg: &'static str, msg: impl Into<String>) -> Self {
        JtError::InvalidArgument { arg, msg: msg.into() }
    }
}

pub type Result<T> = std::result::Result<T, JtError>;

/// A vector of `len` copies of `v`, reserved fallibly (tables grow with the network and the batch).
pub fn try_filled<T: Clone>(len: usize, v: T, what: &str) -> Result<Vec<T>> {
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| JtError::OutOfMemory(format!("{what}: {len} values ({:.2} GB)", (len * std::mem::size_of::<T>()) as f64 / 1e9)))?;
    out.resize(len, v);
    Ok(out)
}
