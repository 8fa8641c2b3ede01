#!/usr/bin/env bash
# Installs what building, testing and benchmarking gpupc needs on Debian 12 (R 4.2), idempotently:
# Debian's r-cran-*/r-bioc-* packages for pcalg's dependencies and our Suggests (Rmpi with Open
# MPI among them), pandoc (the vignettes), qpdf and checkbashisms (R CMD check --as-cran), pcalg
# from CRAN, and bnlearn 4.9 / ParallelPC 1.2 (Suggests, benchmarks only) from CRAN's archive,
# because the current releases need a newer R. Rust (cargo, rustc) is not installed here: the
# package's configure says what to do when it is missing. Safe to run twice: each step checks
# before it installs.
set -euo pipefail

need_apt=()
want_apt=(r-base-dev xz-utils
  r-bioc-graph r-bioc-rbgl r-cran-igraph r-cran-ggm r-cran-corpcor r-cran-robustbase r-cran-vcd
  r-cran-bdsmatrix r-cran-sfsmisc r-cran-fastica r-cran-clue r-cran-abind r-cran-rcpparmadillo
  r-cran-bh r-cran-rcpp r-cran-cli r-cran-testthat r-cran-knitr r-cran-rmarkdown r-cran-ggplot2
  r-cran-broom r-cran-rcppeigen  # gRain's and gRbase's imports (junction-tree tests)
  pandoc   # rmarkdown needs it to build the vignettes (R CMD build in tools/test.sh)
  # R CMD check --as-cran (tools/test.sh) warns without them: qpdf checks the size of PDFs in
  # inst/doc, checkbashisms (in devscripts) that configure and cleanup are portable sh scripts
  qpdf devscripts
  # cluster = "mpi" (Suggests: Rmpi) and its tests, which start ranks with Open MPI's mpirun
  openmpi-bin libopenmpi-dev r-cran-rmpi)
for p in "${want_apt[@]}"; do
  # no pipe into grep -q: under pipefail, grep leaving early can fail dpkg-query's write
  [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" == *"install ok installed"* ]] || need_apt+=("$p")
done
if [ ${#need_apt[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
fi

# R packages from CRAN (current release) and from CRAN's archive (pinned: last versions for R 4.2).
# The archive URL is built from the configured CRAN mirror, so no host is hard-coded here.
Rscript --vanilla - <<'RCODE'
repos <- getOption("repos")
if (is.null(repos) || identical(unname(repos["CRAN"]), "@CRAN@")) repos <- c(CRAN = "https://cloud.r-project.org")
options(repos = repos, Ncpus = 2L)
# installed, and (for a pinned version) at that version or newer: a newer release that a user
# installed is never replaced by the older pin
have <- function(p, v = NULL) {
  ok <- requireNamespace(p, quietly = TRUE)
  ok && (is.null(v) || packageVersion(p) >= v)
}
lib <- .libPaths()[1]
if (!have("pcalg")) install.packages("pcalg", lib = lib)
archive <- function(p, v) {
  if (have(p, v)) return(invisible())
  url <- sprintf("%s/src/contrib/Archive/%s/%s_%s.tar.gz", sub("/$", "", repos[["CRAN"]]), p, p, v)
  f <- file.path(tempdir(), basename(url))
  ok <- tryCatch({ download.file(url, f, quiet = TRUE); TRUE }, error = function(e) FALSE)
  if (ok) install.packages(f, repos = NULL, type = "source", lib = lib)
  if (!have(p, v)) message("note: could not install ", p, " ", v, " (optional: benchmarks only)")
}
# gRain (junction-tree parity, Suggests) and its gRbase: the current releases build on R 4.2.
for (p in c("gRbase", "gRain")) if (!have(p)) install.packages(p, lib = lib)
archive("bnlearn", "4.9")
archive("ParallelPC", "1.2")
stopifnot(requireNamespace("pcalg", quietly = TRUE))
cat("R dependencies ready: pcalg", format(packageVersion("pcalg")), "\n")
RCODE
