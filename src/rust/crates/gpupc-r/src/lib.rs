//! gpupc-r: the extendr glue. It converts R objects to core types and back, turns R callbacks
//! into a CI test and a progress watch, and maps every error to one R error list (`rerror.rs`). No algorithm here.

mod beside;
mod cluster;
mod cmiknn;
mod convert;
mod entry;
mod fci;
mod graph;
mod kept;
mod orient;
mod owned_doubles;
mod pag;
mod params;
mod rdriver;
mod rerror;
mod rfci;
mod sepset_rows;
mod jtree;
mod jtree_kept;
mod kernel_cache;
mod multi;
mod watch;

use extendr_api::prelude::*;

extendr_module! {
    mod gpupc;
    use entry;
    use fci;
    use graph;
    use cluster;
    use cmiknn;
    use jtree;
    use kernel_cache;
    use multi;
    use orient;
    use pag;
    use rfci;
}
