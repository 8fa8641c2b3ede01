#!/usr/bin/env bash
# The README's first command: installs what gpupc needs (Debian 12 packages and CRAN packages, see
# tools/install-deps.sh; Rust >= 1.77 must already be installed), installs gpupc from this checkout
# into R's default library, and runs the quick-start example inst/examples/quickstart.R.
#
#   bash tools/setup-and-run-example.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install-deps.sh

# Keep cargo's build (src/rust/target/vendored, shared with tools/test.sh) for the next run.
export NOT_CRAN=true
R CMD INSTALL .

Rscript inst/examples/quickstart.R
