//! extendr glue (pending).
