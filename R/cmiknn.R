#' CMI-kNN conditional independence test (tigramite's CMIknn)
#'
#' A non-parametric test of X_x independent of X_y given X_S for continuous data: the
#' Frenzel-Pompe / Vejmelka-Palus k-nearest-neighbour estimate of the conditional mutual
#' information (max norm, on ranks), with Runge's local-permutation null, as tigramite's
#' `CMIknn` computes it. It has pcalg's `indepTest` signature, so `pcalg::pc()` can call it;
#' `gpu_pc()` and `gpu_skeleton()` recognise it and run it natively on all CPU cores.
#'
#' `suffStat` fields, with tigramite's defaults:
#' * `data`: the n x p numeric matrix (or data frame), no missing values;
#' * `knn` (0.2): the neighbours of the estimate, a fraction of n below 1 (k = max(1, floor(knn n))),
#'   a count otherwise; k must be below n;
#' * `shuffle_neighbors` (5): the Z-neighbours among which the permuted variable is shuffled;
#' * `sig_samples` (500): the number of permutations;
#' * `transform` ("ranks"): only ranks are implemented;
#' * `permute` ("Y"): which variable is shuffled, `"Y"` (tigramite's current default) or `"X"`
#'   (the AISTATS 2018 paper's);
#' * `seed` (42): the permutations are drawn from a Philox4x32-10 stream keyed by
#'   (seed, x, sorted S, permutation), so a test gives the same p-value whatever the call order,
#'   the thread count or the machine.
#'
#' The p-value is tigramite's (1 + the number of surrogates >= statistic) / (1 + sig_samples).
#' Differences from tigramite: without conditioning set a full random permutation (for i.i.d. samples)
#' replaces tigramite's block shuffle for time series; ties are broken by row order instead of
#' 1e-6 sd random noise (on data without ties the statistic equals tigramite's to 1e-12); the
#' permuted variable keeps the ranks of the values it receives (tigramite re-ranks after
#' adding noise, which separates the duplicates a restricted permutation may create); equally
#' distant Z-neighbours are taken in row order.
#'
#' @param x,y Indices of the two variables (columns of `suffStat$data`).
#' @param S Indices of the conditioning set (may be empty).
#' @param suffStat A list; see Details.
#' @return The p-value.
#' @references
#' Runge, J. (2018). Conditional independence testing based on a nearest-neighbor estimator of
#' conditional mutual information. *Proceedings of the 21st International Conference on
#' Artificial Intelligence and Statistics (AISTATS)*, PMLR 84, 938--946.
#' <https://proceedings.mlr.press/v84/runge18a.html>
#' @seealso [gpu_pc()], [gpu_skeleton()].
#' @export
#' @examples
#' set.seed(1)
#' n <- 300
#' z <- rnorm(n); x <- z^2 + rnorm(n, sd = 0.3); y <- sin(z) + rnorm(n, sd = 0.3)
#' st <- list(data = cbind(x, y, z), sig_samples = 100)
#' cmiknnCItest(1, 2, integer(0), st)   # dependent
#' cmiknnCItest(1, 2, 3, st)            # independent given z
#'
#' # in the PC algorithm, where gpu_pc() runs it natively (here on 2 CPU threads)
#' fit <- gpu_pc(st, cmiknnCItest, alpha = 0.05, labels = c("x", "y", "z"),
#'               numCores = 2, backend = "cpu")
#' fit
cmiknnCItest <- function(x, y, S, suffStat) {
  st <- check_cmiknn_stat(suffStat, NULL)
  p <- ncol(st$data)
  ok <- function(v) is.numeric(v) && all(!is.na(v)) && all(v == round(v)) && all(v >= 1 & v <= p)
  if (length(x) != 1 || !ok(x)) abort_arg("x", "must be one column index in 1..{p}.")
  if (length(y) != 1 || !ok(y)) abort_arg("y", "must be one column index in 1..{p}.")
  if (length(S) > 0 && !ok(S)) abort_arg("S", "must hold column indices in 1..{p}.")
  vars <- as.integer(c(x, y, S))
  if (anyDuplicated(vars)) abort_arg("S", "must not contain x or y, nor repeat a variable.")
  st$data <- st$data[, vars, drop = FALSE]
  # the cores follow gpupc.threads and R CMD check's limit, as in gpu_pc(numCores = NULL)
  rs_cmiknn_test(st, as.double(vars - 1L), check_threads(NULL))$p_value
}

# suffStat[[name]], or `default` when absent
field_or <- function(suffStat, name, default) if (is.null(suffStat[[name]])) default else suffStat[[name]]

.cmiknn_fields <- c("data", "knn", "shuffle_neighbors", "sig_samples", "transform", "permute", "seed")

# The checked suffStat of cmiknnCItest with every default filled in; `p` is the number of
# variables when known (gpu_pc), NULL for a single test.
check_cmiknn_stat <- function(suffStat, p) {
  if (!is.list(suffStat))
    abort_arg("suffStat", "must be a list(data = <n x p matrix>, knn = , shuffle_neighbors = , sig_samples = , ...).")
  extra <- setdiff(names(suffStat), .cmiknn_fields)
  if (length(extra) > 0 || is.null(names(suffStat)) && length(suffStat) > 0)
    abort_arg("suffStat", "has unknown fields {.val {extra}}; cmiknnCItest knows {.val {(.cmiknn_fields)}}.")
  data <- suffStat$data
  if (is.null(data)) abort_arg("suffStat$data", "is missing: cmiknnCItest needs the n x p data matrix.")
  if (is.data.frame(data)) {
    if (!all(vapply(data, is.numeric, TRUE))) abort_arg("suffStat$data", "must have numeric columns only.")
    data <- as.matrix(data)
  }
  if (!is.matrix(data) || !is.numeric(data)) abort_arg("suffStat$data", "must be a numeric matrix (or data frame).")
  if (!is.null(p) && ncol(data) != p)
    abort_arg("suffStat$data", "has {ncol(data)} columns, but there are {p} variables (labels/p).")
  n <- nrow(data)
  if (n < 2) abort_arg("suffStat$data", "must have at least 2 rows.")
  if (anyNA(data) || any(!is.finite(data))) abort_arg("suffStat$data", "must not contain NA, NaN or infinite values.")
  whole <- function(v) is.numeric(v) && length(v) == 1 && !is.na(v) && is.finite(v) && v == round(v)
  knn <- field_or(suffStat, "knn", 0.2)
  if (!is.numeric(knn) || length(knn) != 1 || is.na(knn) || !is.finite(knn) || knn <= 0 || (knn >= 1 && knn != round(knn)))
    abort_arg("suffStat$knn", "must be a fraction of n in (0, 1) or a whole number of neighbours >= 1.")
  k <- if (knn < 1) max(1, floor(knn * n)) else knn
  if (k >= n) abort_arg("suffStat$knn", "gives k = {k} neighbours, but there are only {n} samples (k must be below n).")
  shuffle <- field_or(suffStat, "shuffle_neighbors", 5)
  if (!whole(shuffle) || shuffle < 1) abort_arg("suffStat$shuffle_neighbors", "must be a whole number >= 1.")
  B <- field_or(suffStat, "sig_samples", 500)
  if (!whole(B) || B < 1) abort_arg("suffStat$sig_samples", "must be a whole number >= 1 (the number of permutations).")
  transform <- field_or(suffStat, "transform", "ranks")
  if (!identical(transform, "ranks"))
    abort_arg("suffStat$transform", "must be \"ranks\": tigramite's other transforms (\"standardize\", \"uniform\", FALSE) are not implemented.")
  permute <- field_or(suffStat, "permute", "Y")
  if (!is.character(permute) || length(permute) != 1 || !permute %in% c("X", "Y"))
    abort_arg("suffStat$permute", "must be \"Y\" (shuffle y, tigramite's default) or \"X\".")
  seed <- field_or(suffStat, "seed", 42)
  if (!whole(seed) || abs(seed) > 2^53) abort_arg("suffStat$seed", "must be a whole number.")
  if (!is.double(data)) storage.mode(data) <- "double"
  list(data = data, knn = as.double(knn), shuffle_neighbors = as.double(shuffle),
       sig_samples = as.double(B), permute = permute, seed = as.double(seed))
}
