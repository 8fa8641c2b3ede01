//! The one form in which an error crosses to R: a list of class `gpupc_rust_error` holding
//! `kind` (which gpupc condition R raises: "invalid", "cuda", "memory", ...), `message`, and
//! `arg`, the argument it names (NULL when none). Every entry point returns its value or this
//! list; R's `rust_value()` (R/errors.R) raises it, so no R code reads messages for their parts.

use extendr_api::prelude::*;
use pc_core::PcError;
use pc_jtree::JtError;

/// The error list R raises.
pub(crate) fn r_error(kind: &str, message: &str, arg: Option<&str>) -> Robj {
    let arg: Robj = arg.map(Robj::from).unwrap_or_else(|| Robj::from(()));
    let l = List::from_names_and_values(["kind", "message", "arg"], [Robj::from(kind), Robj::from(message), arg]).unwrap_or_default();
    let mut r: Robj = l.into();
    let _ = r.set_class(["gpupc_rust_error"]);
    r
}

/// A core error: its kind, and for a bad argument the bare message and the argument; an error
/// of one of several devices also gives that device's place in the call's list (`device`, from 1).
pub(crate) fn from_pc(e: &PcError) -> Robj {
    let (kind, arg) = match e.inner() {
        PcError::InvalidArgument { arg, msg } => return r_error("invalid", msg, Some(arg)),
        PcError::Test(_) => ("test", None),
        PcError::Interrupted => ("interrupt", None),
        PcError::TooManySets { .. } => ("too_many_sets", None),
        PcError::Cuda(_) | PcError::OnDevice { .. } => ("cuda", None),
        PcError::Internal(_) => ("internal", None),
        PcError::OnRank { .. } => ("rank", None),
        PcError::OutOfMemory { arg, .. } => ("memory", Some(*arg)),
        PcError::DeviceOutOfMemory { arg, .. } => ("device_memory", Some(*arg)),
    };
    let mut r = r_error(kind, &e.to_string(), arg);
    if let Some(i) = e.failed_device() {
        let _ = r.set_attrib("device", (i + 1) as i32);
    }
    r
}

/// A junction-tree error; one without an argument of its own is put on `arg` (the network for a
/// compilation, the evidence for a query).
pub(crate) fn from_jt(e: &JtError, arg: &str) -> Robj {
    match e {
        JtError::InvalidArgument { arg, msg } => r_error("invalid", msg, Some(arg)),
        JtError::TooLarge(_) | JtError::OutOfMemory(_) => r_error("too_large", &e.to_string(), Some(arg)),
        JtError::Network(_) | JtError::Bif(_) => r_error("network", &e.to_string(), Some(arg)),
        JtError::Interrupted => r_error("interrupt", &e.to_string(), None),
        JtError::Other(_) => r_error("internal", &e.to_string(), None),
    }
}
