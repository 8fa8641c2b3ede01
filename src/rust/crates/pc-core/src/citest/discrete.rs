//! disCItest / binCItest: G^2 on contingency tables (IMPLEMENTATION PENDING).
use super::CiTest;
use crate::error::Result;

/// n x p codes 0..nlev-1, column-major, one byte each.
pub struct DiscreteData {
    pub n: usize,
    pub p: usize,
    pub codes: Vec<u8>,
    pub nlev: Vec<u32>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GSquareKind {
    /// pcalg's disCItest (gSquareDis).
    Dis,
    /// pcalg's binCItest (gSquareBin).
    Bin,
}

pub struct GSquareTest {
    pub data: DiscreteData,
    pub kind: GSquareKind,
    pub adapt_df: bool,
}

impl CiTest for GSquareTest {
    type Scratch = ();
    fn p_value(&self, _: &mut (), _x: u32, _y: u32, _s: &[u32]) -> Result<f64> {
        Err(crate::PcError::Internal("G^2 test pending".into()))
    }
}
