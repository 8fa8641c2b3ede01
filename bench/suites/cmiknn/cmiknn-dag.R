# Skeleton recovery on non-linear DAGs: CMI-kNN (gpupc's cmiknnCItest, CPU backend)
# beside pcalg's gaussCItest on the same data sets. Each data set is a random DAG (variables in
# topological order, edge probability degree / (p - 1)) whose every edge is of one kind:
# quadratic (w u^2), tanh (2 w tanh u) or sinusoidal (2 w sin u), w ~ U(0.5, 1.5), noise N(0, 1),
# every variable standardised. The learned skeleton is compared with the true one: SHD (extra +
# missing edges) and F1 of the edges.
#
#   Rscript bench/suites/cmiknn/cmiknn-dag.R [LIB] [OUT.csv] [p] [n] [reps] [sig_samples] [kinds] [first]
#
# kinds: a comma-separated subset of quadratic,tanh,sine (default: all three); first: the first
# replicate (default 1; replicate r of a kind always has the same data).
# LIB: the library gpupc is installed in (default: the normal library path).
args <- commandArgs(trailingOnly = TRUE)
arg <- function(i, default) if (length(args) >= i && nzchar(args[i])) args[i] else default
lib <- arg(1, NA)
out <- arg(2, "cmiknn-dag.csv")
p <- as.integer(arg(3, 10))
n <- as.integer(arg(4, 500))
reps <- as.integer(arg(5, 3))
B <- as.integer(arg(6, 100))
kinds <- strsplit(arg(7, "quadratic,tanh,sine"), ",")[[1]]
first <- as.integer(arg(8, 1))
if (is.na(lib)) library(gpupc) else library(gpupc, lib.loc = lib)
suppressMessages(library(pcalg))

edge_fun <- list(
  quadratic = function(u, w) w * u^2,
  tanh = function(u, w) 2 * w * tanh(u),
  sine = function(u, w) 2 * w * sin(u)
)

sim_dag <- function(kind, p, n, degree, seed) {
  set.seed(seed)
  prob <- min(1, degree / (p - 1))
  truth <- matrix(FALSE, p, p)
  X <- matrix(0, n, p)
  for (i in seq_len(p)) {
    x <- rnorm(n)
    for (j in seq_len(i - 1)) {
      if (runif(1) < prob) {
        truth[i, j] <- truth[j, i] <- TRUE
        x <- x + edge_fun[[kind]](X[, j], runif(1, 0.5, 1.5))
      }
    }
    X[, i] <- (x - mean(x)) / sd(x)
  }
  colnames(X) <- paste0("V", seq_len(p))
  list(X = X, truth = truth)
}

score <- function(amat, truth) {
  up <- upper.tri(truth)
  est <- (amat | t(amat))[up]
  tru <- truth[up]
  tp <- sum(est & tru); fp <- sum(est & !tru); fn <- sum(!est & tru)
  c(true_edges = sum(tru), found = sum(est), tp = tp, fp = fp, fn = fn, shd = fp + fn,
    f1 = if (tp == 0) 0 else 2 * tp / (2 * tp + fp + fn))
}

rows <- list()
options(cli.progress_show_after = Inf)
for (kind in kinds) {
  for (r in seq(first, reps)) {
    d <- sim_dag(kind, p, n, degree = 2, seed = 1000 * match(kind, names(edge_fun)) + r)
    t0 <- proc.time()[["elapsed"]]
    cm <- gpu_skeleton(list(data = d$X, knn = 0.2, shuffle_neighbors = 5, sig_samples = B, seed = r),
                       cmiknnCItest, alpha = 0.05, labels = colnames(d$X), backend = "cpu")
    t_cm <- proc.time()[["elapsed"]] - t0
    ga <- pcalg::skeleton(list(C = cor(d$X), n = n), gaussCItest, alpha = 0.05, labels = colnames(d$X))
    for (res in list(list("cmiknn", cm, t_cm), list("gauss", ga, NA))) {
      s <- score(as(res[[2]]@graph, "matrix") != 0, d$truth)
      rows[[length(rows) + 1]] <- data.frame(kind = kind, rep = r, p = p, n = n, test = res[[1]],
        B = if (res[[1]] == "cmiknn") B else NA, t(s), seconds = res[[3]])
    }
    cat(sprintf("%s rep %d: cmiknn SHD %d F1 %.3f (%.1f s) | gauss SHD %d F1 %.3f\n", kind, r,
                rows[[length(rows) - 1]]$shd, rows[[length(rows) - 1]]$f1, t_cm,
                rows[[length(rows)]]$shd, rows[[length(rows)]]$f1))
    write.csv(do.call(rbind, rows), out, row.names = FALSE)
  }
}
tab <- do.call(rbind, rows)
agg <- aggregate(cbind(shd, f1, tp, fp, fn) ~ kind + test, data = tab, FUN = mean)
print(agg[order(agg$kind, agg$test), ], digits = 3, row.names = FALSE)
