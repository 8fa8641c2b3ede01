//! A CI test that calls an R function: how `gpu_pc()` accepts any `indepTest` that `pc()` accepts.

use extendr_api::prelude::*;
use pc_core::{CiTest, PcError};

/// R's NA_real_: a NaN whose low word is 1954.
const R_NA_REAL: f64 = f64::from_bits(0x7FF0_0000_0000_07A2);

/// `f(x, y, S)` with 1-based indices, as the R wrapper built it around the user's indepTest and
/// suffStat. The wrapper catches R errors and returns them as a `gpupc_test_error` string, so
/// no R error ever unwinds through Rust frames.
pub struct RTest {
    f: Function,
}

impl RTest {
    pub fn new(f: Function) -> Self {
        RTest { f }
    }
}

impl CiTest for RTest {
    type Scratch = ();

    fn p_value(&self, _: &mut (), x: u32, y: u32, s: &[u32]) -> pc_core::error::Result<f64> {
        let set: Vec<i32> = s.iter().map(|&v| v as i32 + 1).collect();
        let out = self
            .f
            .call(pairlist!(x as i32 + 1, y as i32 + 1, set))
            .map_err(|e| PcError::Test(format!("calling indepTest failed: {e}")))?;
        if out.inherits("gpupc_test_error") {
            let msg = out.as_str().unwrap_or("unknown error").to_string();
            return Err(PcError::Test(msg));
        }
        if out.len() != 1 {
            return Err(PcError::Test(format!("indepTest must return one p-value, it returned {} values", out.len())));
        }
        if let Some(v) = out.as_real_slice() {
            // the raw double keeps NA_real_'s payload: pcalg's stable.fast stores a level-0 p
            // unmapped in pMax, and NA must stay NA there (NaN, not NA, marks a failed
            // computation); everywhere else the level loop maps any NaN by NAdelete
            return Ok(v[0]);
        }
        if let Some(v) = out.as_integer_slice() {
            return Ok(if v[0] == i32::MIN { R_NA_REAL } else { v[0] as f64 });
        }
        if out.as_logical_slice().is_some() {
            return Ok(R_NA_REAL);
        }
        Err(PcError::Test(format!("indepTest must return a numeric p-value, it returned a {:?}", out.rtype())))
    }
}
