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

/// A vector of `len` copies of `v`, reserved fallibly (tables grow with the network and the batch)
/// and written by the current rayon pool's threads (fresh memory costs a page fault per 4 KB:
/// one thread took 0.13 s for Munin's 250 MB of tables and messages). Call it inside the call's
/// pool (`install`): rayon's global pool has no threads in a forked child, so a large fill there
/// would wait forever.
pub fn try_filled<T: Copy + Send + Sync>(len: usize, v: T, what: &str) -> Result<Vec<T>> {
    use rayon::prelude::*;
    let mut out = Vec::new();
    out.try_reserve_exact(len)
        .map_err(|_| JtError::OutOfMemory(format!("{what}: {len} values ({:.2} GB)", (len * std::mem::size_of::<T>()) as f64 / 1e9)))?;
    out.spare_capacity_mut()[..len].par_chunks_mut(1 << 16).for_each(|c| c.iter_mut().for_each(|x| {
        x.write(v);
    }));
    // SAFETY: every one of the first `len` slots was written above.
    unsafe { out.set_len(len) };
    Ok(out)
}
