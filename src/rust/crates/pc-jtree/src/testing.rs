//! For tests, here and in the crates that use pc-jtree (feature `testing`).

use crate::compile::{Heuristic, Limits};
use crate::plan::Plan;

/// A network the R package bundles (`inst/extdata/networks`), compiled (gzip reads the file, as
/// pcbench does).
pub fn bundled_plan(name: &str) -> Plan {
    let path = format!("{}/../../../../inst/extdata/networks/{name}.bif.gz", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new("gzip").arg("-dc").arg(&path).output().expect("gzip");
    assert!(out.status.success(), "reading {path}");
    let net = crate::bif::parse_bif(std::str::from_utf8(&out.stdout).expect("UTF-8")).expect("a BIF file");
    Plan::compile(&net, Heuristic::MinFill, Limits::default(), 2).expect("a compiled plan")
}
