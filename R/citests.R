# Which native test an indepTest maps to, and the checks of its suffStat. pcalg's own tests are
# recognised by identity (as pcalg's stable.fast recognises gaussCItest); any other function is
# called back from R by the same level loop.

native_kind <- function(indepTest) {
  if (identical(indepTest, pcalg::gaussCItest)) return("gauss")
  if (identical(indepTest, pcalg::disCItest)) return("dis")
  if (identical(indepTest, pcalg::binCItest)) return("bin")
  if (identical(indepTest, cmiknnCItest)) return("cmiknn")
  "rfun"
}

# Returns list(kind, data, bytes) for the Rust entry point; an R-function test (kind "rfun") is
# called by run_rfun() (R/rfun.R). `bytes`: what the Rust side holds of the test's data.
prepare_test <- function(indepTest, suffStat, p) {
  if (!is.function(indepTest)) abort_arg("indepTest", "must be a function(x, y, S, suffStat).")
  kind <- native_kind(indepTest)
  data <- switch(kind,
    gauss = check_gauss_stat(suffStat, p),
    dis = check_discrete_stat(suffStat, p, binary = FALSE),
    bin = check_discrete_stat(suffStat, p, binary = TRUE),
    cmiknn = check_cmiknn_stat(suffStat, p),
    rfun = list())
  bytes <- switch(kind, gauss = 8 * as.double(p)^2 + 8 * as.double(length(data$data)), rfun = 0,
                  cmiknn = 8 * as.double(length(data$data)),
                  as.double(length(data$dm)))
  list(kind = kind, data = data, bytes = bytes)
}

check_gauss_stat <- function(suffStat, p) {
  if (!is.list(suffStat)) abort_arg("suffStat", "must be a list(C = <correlation matrix>, n = <sample size>).")
  C <- suffStat$C
  n <- suffStat$n
  if (is.null(C) && !is.null(suffStat$data)) return(check_gauss_data(suffStat$data, n, p))
  if (is.null(C)) abort_arg("suffStat$C", "is missing: gaussCItest needs the correlation matrix (or gpupc's suffStat$data).")
  # what gaussCItest indexes as C[i, j] alike: a data frame, or a Matrix such as
  # Matrix::nearPD(C)$mat (a common repair of a correlation matrix that is not positive definite)
  if (is.data.frame(C) || methods::is(C, "Matrix")) C <- as.matrix(C)
  if (!is.matrix(C) || !is.numeric(C)) abort_arg("suffStat$C", "must be a numeric matrix.")
  if (nrow(C) != ncol(C)) abort_arg("suffStat$C", "must be square, not {nrow(C)} x {ncol(C)}.")
  if (nrow(C) != p) abort_arg("suffStat$C", "is {nrow(C)} x {ncol(C)}, but there are {p} variables (labels/p).")
  # NA / NaN (cor() of a constant column) pass: gaussCItest gives such tests r = 0, p = 1
  # (stable.fast's C++ gives NaN, mapped by NAdelete), as in pcalg
  # symmetry and the [-1, 1] range are checked in Rust, in one pass (isSymmetric() took
  # seconds at p = 5000)
  if (is.null(n)) abort_arg("suffStat$n", "is missing: gaussCItest needs the sample size.")
  # gaussCItest takes any n >= 0 (Inf too) as it is; stable.fast's C++ truncates it to an
  # unsigned integer (checked in Rust)
  if (!is.numeric(n) || length(n) != 1 || is.na(n) || n < 0)
    abort_arg("suffStat$n", "must be a single number >= 0 (the sample size).")
  # no copy of C (800 MB at p = 10000): Rust reads the doubles and ignores the dimnames
  if (!is.double(C)) storage.mode(C) <- "double"
  list(C = C, n = as.double(n))
}

# gpupc's own addition for gaussCItest: `suffStat = list(data = X)` (n = nrow(X) unless given),
# C computed by the backend (on the GPU, never on the host; see ?gpu_skeleton). NA, infinite
# values and constant columns are refused in Rust, in the one pass that standardises X.
check_gauss_data <- function(X, n, p) {
  if (is.data.frame(X)) X <- as.matrix(X)
  if (!is.matrix(X) || !is.numeric(X))
    abort_arg("suffStat$data", "must be a numeric matrix (rows: observations, columns: variables).")
  if (ncol(X) != p) abort_arg("suffStat$data", "has {ncol(X)} columns, but there are {p} variables (labels/p).")
  if (nrow(X) < 2) abort_arg("suffStat$data", "needs at least 2 rows (observations).")
  if (is.null(n)) n <- nrow(X)
  if (!is.numeric(n) || length(n) != 1 || is.na(n) || n < 0)
    abort_arg("suffStat$n", "must be a single number >= 0 (the sample size).")
  if (!is.double(X)) storage.mode(X) <- "double"
  list(data = X, n = as.double(n))
}

check_discrete_stat <- function(suffStat, p, binary) {
  if (!is.list(suffStat)) abort_arg("suffStat", "must be a list(dm = <data>, nlev = , adaptDF = ).")
  dm <- suffStat$dm
  if (is.null(dm)) abort_arg("suffStat$dm", "is missing: the test needs the data matrix.")
  if (is.data.frame(dm)) {
    fac <- vapply(dm, is.factor, NA)
    if (any(fac)) {
      # bnlearn's form: each factor's levels are its states, coded 0, 1, ... in level order
      if (!all(fac))
        abort_arg("suffStat$dm", "mixes factor and other columns ({.val {names(dm)[!fac][1]}}): give every column as a factor (its levels are the states, as in bnlearn) or every column as codes 0, 1, 2, ...")
      if (is.null(suffStat$nlev) && !binary) suffStat$nlev <- vapply(dm, nlevels, 1L)
      dm <- matrix(unlist(lapply(dm, function(f) as.integer(f) - 1L), use.names = FALSE), nrow(dm),
                   dimnames = list(NULL, names(dm)))
    } else {
      dm <- data.matrix(dm)
    }
  }
  if (!is.matrix(dm) || !(is.numeric(dm) || is.logical(dm)))
    abort_arg("suffStat$dm", "must be a matrix (or data frame) of integer codes 0, 1, 2, ...")
  if (ncol(dm) != p) abort_arg("suffStat$dm", "has {ncol(dm)} columns, but there are {p} variables (labels/p).")
  if (nrow(dm) < 1) abort_arg("suffStat$dm", "has no rows.")
  # an integer matrix's NA (INT_MIN) is found by Rust's pass over the codes, with this message:
  # anyNA() here was a pass over n x p codes of its own
  if (!is.integer(dm) && anyNA(dm)) abort_arg("suffStat$dm", "must not contain NA.")
  if (is.double(dm) && any(big <- abs(dm) > .Machine$integer.max))
    abort_arg("suffStat$dm", "must hold codes 0, 1, 2, ... (at most 254); found {dm[big][1]}.")
  # The codes' range (negative codes, no 0, binCItest's 0/1, codes >= nlev) is checked in Rust
  # while the codes are copied to bytes: one pass over dm, which may hold 10^9 codes.
  if (is.double(dm) && any(dm != round(dm)))
    abort_arg("suffStat$dm", "must be discrete, with whole-number codes in {{0,1,..}}.")
  adaptDF <- suffStat$adaptDF
  if (is.null(adaptDF)) adaptDF <- FALSE
  if (!is.logical(adaptDF) || length(adaptDF) != 1 || is.na(adaptDF))
    abort_arg("suffStat$adaptDF", "must be TRUE or FALSE.")
  if (binary) {
    nlev <- rep(2L, p)
  } else {
    nlev <- suffStat$nlev
    if (is.null(nlev)) {
      # pcalg counts the observed levels of each column when nlev is not given (an NA would count
      # as a level: found here, before the count)
      if (anyNA(dm)) abort_arg("suffStat$dm", "must not contain NA.")
      nlev <- vapply(seq_len(p), function(j) length(unique(dm[, j])), 1L)
    } else if (!is.numeric(nlev) || length(nlev) != p || anyNA(nlev) || any(nlev != round(nlev))) {
      abort_arg("suffStat$nlev", "must be a whole-number vector of length {p} (levels per variable).")
    }
    if (any(nlev < 2)) abort_arg("suffStat$nlev", "must be >= 2: each column of dm needs at least two different values.")
    if (any(nlev > 255)) abort_arg("suffStat$nlev", "must be <= 255: gpupc stores codes in one byte.")
  }
  # `storage.mode<-` copies even an integer matrix (83 MB and 0.05-0.1 s for MUNIN's 20000 x 1041)
  if (!is.integer(dm)) storage.mode(dm) <- "integer"
  # dimnames are left on: Rust reads the codes only, and unname() would copy them
  list(dm = dm, nlev = as.integer(nlev), adaptDF = adaptDF)
}
