## The package's source tree (a checkout: DESCRIPTION, R/ and the Rust crates beside the tests),
## or NULL where the tests run from an installed copy (R CMD check), which has no sources.
source_root <- function() {
  root <- normalizePath(test_path("..", ".."), mustWork = FALSE)
  if (file.exists(file.path(root, "DESCRIPTION")) && dir.exists(file.path(root, "R")) &&
      dir.exists(file.path(root, "src", "rust", "crates"))) root else NULL
}
