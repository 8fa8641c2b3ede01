# gpupc quick start: learn a causal graph with gpu_pc() and with pcalg::pc(), same arguments,
# and compare the answers and the time. Uses the GPU when one is usable, all CPU cores when not.
#   Rscript inst/examples/quickstart.R        (or: bash tools/setup-and-run-example.sh)
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })

same_fit <- function(a, b) {
  identical(as(a, "amat"), as(b, "amat")) && identical(a@sepset, b@sepset) &&
    isTRUE(all.equal(a@pMax, b@pMax, tolerance = 1e-9))
}
timed <- function(expr) { t <- system.time(v <- expr)[["elapsed"]]; list(value = v, secs = t) }

info <- gpu_info()
cat("GPU:", if (isTRUE(info$usable)) info$name else paste("none usable -", info$reason), "\n")
cat("CPU cores:", parallel::detectCores(), "\n\n")

## 1. The bundled Sachs et al. (2005) flow-cytometry data: 7466 cells, 11 proteins (log-scaled).
X <- log(read.csv(system.file("extdata", "sachs.csv.gz", package = "gpupc"), check.names = FALSE))
suff <- list(C = cor(X), n = nrow(X))
g <- timed(gpu_pc(suff, gaussCItest, alpha = 0.01, labels = colnames(X)))
r <- timed(pc(suff, gaussCItest, alpha = 0.01, labels = colnames(X)))
cat("Sachs data: learned CPDAG (gpu_pc)\n")
print(as(g$value, "amat"))
cat(sprintf("gpu_pc %.3f s, pc %.3f s, same answer as pcalg: %s\n\n", g$secs, r$secs,
            same_fit(g$value, r$value)))

## 2. A larger synthetic problem: a random Gaussian DAG with 300 variables, 2000 samples.
set.seed(42)
dag <- randomDAG(300, prob = 4 / 299)
D <- rmvDAG(2000, dag)
suff <- list(C = cor(D), n = nrow(D))
g <- timed(gpu_pc(suff, gaussCItest, alpha = 0.01, p = ncol(D)))
r <- timed(pc(suff, gaussCItest, alpha = 0.01, p = ncol(D)))
cat(sprintf("p = 300, n = 2000: gpu_pc %.2f s, pc %.2f s (%.0fx), same answer as pcalg: %s\n",
            g$secs, r$secs, r$secs / g$secs, same_fit(g$value, r$value)))
cat(sprintf("%d edges in the CPDAG, levels up to %d\n", sum(as(g$value, "amat") | t(as(g$value, "amat"))) / 2,
            g$value@max.ord))
