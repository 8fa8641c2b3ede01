# Argument checks in pcalg's words. Every error names the argument, so a user who replaced
# pc( by gpu_pc( sees which input is wrong.

# The message names the argument; the call is left out because the checks run several frames
# below the user's gpu_pc() / gpu_skeleton() call.
abort_arg <- function(arg, msg) {
  text <- cli::format_inline(msg, .envir = parent.frame())  # {p}, {nrow(C)} live in the caller
  cli::cli_abort(c("{.arg {arg}} {text}"), class = c("gpupc_invalid_argument", "gpupc_error"),
                 call = NULL)
}

# labels / p exactly as pcalg::skeleton() settles them (a fractional p is truncated, as its
# as.integer(p) does); returns list(labels, p, arg), arg naming the one that set p.
resolve_labels <- function(labels, p, missing_labels, missing_p, chatty = FALSE) {
  if (!missing_p) {
    if (!is.numeric(p) || length(p) != 1 || is.na(p) || p < 2)
      abort_arg("p", "must be a single number >= 2.")
    if (p > .Machine$integer.max) {
      imax <- .Machine$integer.max
      abort_arg("p", "= {format(p)} is more variables than R can index (at most {imax}).")
    }
    p <- as.integer(p)
  }
  if (missing_labels) {
    if (missing_p) abort_arg("labels", "or {.arg p} must be given (need to specify 'labels' or 'p').")
    labels <- as.character(seq_len(p))
  } else {
    if (!is.character(labels)) abort_arg("labels", "must be a character vector.")
    if (missing_p) {
      p <- length(labels)
    } else if (p != length(labels)) {
      abort_arg("p", "is not needed when {.arg labels} is given, and must match length(labels) = {length(labels)}, not {p}.")
    } else if (chatty) {
      message("No need to specify 'p', when 'labels' is given")
    }
    if (p < 2) abort_arg("labels", "must name at least 2 variables.")
    # the graphNEL's node names: pcalg fails on these with "invalid class graphNEL object"
    if (anyNA(labels)) abort_arg("labels", "must not contain NA (label {which(is.na(labels))[1]} is NA).")
    if (any(!nzchar(labels))) abort_arg("labels", "must not contain empty names (label {which(!nzchar(labels))[1]} is \"\").")
    if (anyDuplicated(labels)) {
      d <- labels[anyDuplicated(labels)]
      abort_arg("labels", "must be unique: {.val {d}} appears more than once.")
    }
  }
  list(labels = labels, p = as.integer(p), arg = if (missing_labels) "p" else "labels")
}

check_alpha <- function(alpha) {
  if (!is.numeric(alpha) || length(alpha) != 1 || is.na(alpha) || alpha <= 0 || alpha > 1)
    abort_arg("alpha", "must be a single number in (0, 1].")
  as.double(alpha)
}

# pcalg's R loop compares `ord <= m.max` inside `&&`, which (R < 4.3) uses m.max[1] with a
# warning; its C++ (stable.fast) takes as.integer(m.max), so a negative m.max means "no limit"
# there, and it fails on more than one value. Returns the level limit as a double (Inf: none;
# negative: no level at all, pcalg R's `while (ord <= m.max)` never entered).
check_m_max <- function(m.max, method) {
  if (!is.numeric(m.max) || length(m.max) < 1 || is.na(m.max[1]))
    abort_arg("m.max", "must be a single number (or Inf).")
  if (length(m.max) > 1) {
    if (method == "stable.fast") abort_arg("m.max", "must be a single number for method \"stable.fast\", not {length(m.max)} numbers.")
    warning("'length(x) = ", length(m.max), " > 1' in coercion to 'logical(1)' (m.max: using m.max[1] = ", m.max[1], ")", call. = FALSE)
    m.max <- m.max[1]
  }
  if (method == "stable.fast" && is.finite(m.max)) {
    m.max <- suppressWarnings(as.integer(m.max))  # pcalg's as.integer(); NA beyond 2^31
    if (is.na(m.max) || m.max < 0) m.max <- Inf
  }
  as.double(m.max)
}

check_flag <- function(x, arg) {
  if (!is.logical(x) || length(x) != 1 || is.na(x)) abort_arg(arg, "must be TRUE or FALSE.")
  x
}

# fixedGaps / fixedEdges: NULL or a symmetric p x p logical (or 0/1) matrix.
# NULL stays NULL (no gaps / no fixed edges): no p x p matrix is built for it.
check_fixed <- function(x, p, arg) {
  if (is.null(x)) return(NULL)
  if (!is.matrix(x) || !identical(dim(x), c(p, p)))
    abort_arg(arg, "must be a {p} x {p} matrix (dimensions of the dataset and {arg} do not agree).")
  if (anyNA(x)) abort_arg(arg, "must not contain NA.")
  if (!(is.logical(x) || (is.numeric(x) && all(x %in% c(0, 1)))))
    abort_arg(arg, "must be a logical matrix.")
  x <- unname(x)
  storage.mode(x) <- "logical"
  if (!identical(x, t(x))) abort_arg(arg, "must be symmetric.")
  x
}

# pcalg accepts any positive numCores (it uses it only for stable.fast with OpenMP, which its
# Linux builds lack); gpupc runs floor(numCores) threads, at least 1 and at most the cores.
# The threads of `numCores = NULL`: getOption("gpupc.threads") when set; else the limit R CMD
# check sets for a package's examples, tests and vignettes (_R_CHECK_LIMIT_CORES_: 2) or
# OMP_THREAD_LIMIT; else 0, every core.
default_threads <- function() {
  o <- getOption("gpupc.threads")
  if (!is.null(o)) {
    if (!is.numeric(o) || length(o) != 1 || is.na(o) || o < 1 || o != round(o))
      abort_arg("gpupc.threads", "(an option) must be a whole number >= 1, or NULL for every core.")
    return(as.integer(o))
  }
  lim <- Sys.getenv("_R_CHECK_LIMIT_CORES_", "")
  if (nzchar(lim) && !identical(toupper(lim), "FALSE")) return(2L)
  omp <- suppressWarnings(as.integer(Sys.getenv("OMP_THREAD_LIMIT", "")))
  if (!is.na(omp) && omp >= 1) return(omp)
  # ranks that an MPI launcher started on one host share its cores (each with all of them, four
  # ranks would run four times as many threads as cores)
  local <- mpi_local_size()
  if (!is.na(local) && local > 1L) return(max(1L, as.integer(rs_cpu_threads() %/% local)))
  0L
}

check_threads <- function(numCores) {
  if (is.null(numCores)) return(min_threads(default_threads()))
  if (!is.numeric(numCores) || length(numCores) < 1 || is.na(numCores[1]) || numCores[1] <= 0)
    abort_arg("numCores", "must be NULL (all cores) or a number > 0.")
  n <- numCores[1]
  cores <- rs_cpu_threads()
  if (n >= cores) return(as.integer(cores))
  as.integer(max(1, floor(n)))
}

# `n` threads (0: every core) capped at the cores this process may use.
min_threads <- function(n) if (n == 0L) 0L else as.integer(min(n, rs_cpu_threads()))
