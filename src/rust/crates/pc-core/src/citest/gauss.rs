//! gaussCItest: Fisher's z on partial correlations from the correlation matrix (IMPLEMENTATION PENDING).
use super::CiTest;
use crate::error::Result;

/// Which of pcalg's two Gaussian code paths to reproduce.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GaussFlavour {
    /// R's `gaussCItest` (skeleton "stable"/"original", pc.cons.intern).
    R,
    /// The C++ `IndepTestGauss` behind skeleton "stable.fast".
    Cpp,
}

pub struct GaussTest {
    pub p: usize,
    pub c: Vec<f64>,
    pub n: f64,
    pub flavour: GaussFlavour,
}

impl GaussTest {
    pub fn new(c: Vec<f64>, p: usize, n: f64, flavour: GaussFlavour) -> Result<Self> {
        Ok(GaussTest { p, c, n, flavour })
    }
}

impl CiTest for GaussTest {
    type Scratch = ();
    fn p_value(&self, _: &mut (), _x: u32, _y: u32, _s: &[u32]) -> Result<f64> {
        Err(crate::PcError::Internal("gauss test pending".into()))
    }
}
