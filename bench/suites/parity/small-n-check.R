# disCItest / binCItest's "n < n.min" warning on a backend, against pcalg: the cases and the
# comparison are tests/testthat/small-n-cases.R (test-robust.R runs them on the CPU backend).
#   Rscript bench/suites/parity/small-n-check.R cuda OUT.csv    (exit status 1 when a case differs)
here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1])))
source(file.path(here, "..", "..", "..", "tests", "testthat", "small-n-cases.R"))

if (sys.nframe() == 0L) {
  args <- commandArgs(TRUE)
  backend <- if (length(args) >= 1) args[1] else "cpu"
  suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
  rows <- do.call(rbind, lapply(small_n_cases(), small_n_compare, backend = backend))
  print(rows, row.names = FALSE)
  cat(sprintf("small-n check on %s: %d of %d cases agree with pcalg; %d with warnings\n",
              backend, sum(rows$ok), nrow(rows), sum(rows$pcalg_tests > 0)))
  if (length(args) >= 2) utils::write.csv(rows, args[2], row.names = FALSE)
  quit(status = if (all(rows$ok)) 0 else 1)
}
