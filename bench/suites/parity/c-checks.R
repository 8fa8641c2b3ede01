# suffStat$C's checks on the GPU against the CPU backend's: for matrices that are exactly
# symmetric, symmetric within the tolerance only, asymmetric beyond it, out of range, infinite
# or with NaN, gpu_skeleton(backend = "cuda") must return what backend = "cpu" returns: the same
# error message, or the same skeleton (graph, sepsets, n.edgetests and max.ord identical, pMax
# within 1e-9 relative, as the other parity checks compare them: CUDA's exp and log1p round
# differently from glibc's in the last bits). One GPU checks C on the device after the upload and
# leaves the naming of a bad cell to the host's scan.
#
#   Rscript bench/suites/parity/c-checks.R [--p 120] [--n 400]
args <- commandArgs(trailingOnly = TRUE)
opt <- function(name, default) { i <- match(paste0("--", name), args); if (is.na(i)) default else args[i + 1] }
p <- as.integer(opt("p", "120")); n <- as.integer(opt("n", "400"))
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
if (!isTRUE(gpu_info()$usable)) { cat("no usable GPU\n"); quit(status = 1) }
set.seed(11)
g <- randomDAG(p, prob = 3 / p)
C <- cor(rmvDAG(n, g))
nudge <- function(C, i, j, d) { C[i, j] <- C[i, j] + d; C }
cases <- list(
  symmetric = C,
  within_tolerance = nudge(C, 5, 9, 1e-14),
  beyond_tolerance = nudge(C, 5, 9, 1e-6),
  above_one = { D <- C; D[7, 3] <- D[3, 7] <- 1 + 1e-6; D },
  infinite = { D <- C; D[2, 4] <- D[4, 2] <- Inf; D },
  nan = { D <- C; D[10, 11] <- D[11, 10] <- NaN; D },
  nan_one_side = { D <- C; D[12, 13] <- NaN; D }
)
run <- function(C, backend) tryCatch(suppressWarnings(gpu_skeleton(list(C = C, n = n), gaussCItest, 0.01, p = p, backend = backend)),
                                     error = function(e) paste("error:", conditionMessage(e)))
bad <- 0
for (nm in names(cases)) {
  a <- run(cases[[nm]], "cuda")
  b <- run(cases[[nm]], "cpu")
  same <- if (is.character(a) || is.character(b)) identical(a, b) else
    identical(a@graph, b@graph) && identical(a@sepset, b@sepset) && identical(a@n.edgetests, b@n.edgetests) &&
      identical(a@max.ord, b@max.ord) && isTRUE(all.equal(a@pMax, b@pMax, tolerance = 1e-9))
  bad <- bad + !same
  what <- if (is.character(a)) substr(gsub("\\s+", " ", a), 1, 90) else sprintf("skeleton, %d edges", graph::numEdges(a@graph))
  cat(sprintf("%-18s %s  (GPU: %s)\n", nm, if (same) "same as the CPU backend" else "DIFFERS FROM THE CPU BACKEND", what))
}
cat(sprintf("c-checks: %d cases, %d differ\n", length(cases), bad))
quit(status = if (bad > 0) 1 else 0)
