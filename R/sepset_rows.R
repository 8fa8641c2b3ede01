# The `sepset` slot as compact rows at large p (built in Rust: crates/gpupc-r/src/sepset_rows.rs).
#
# pcalg's sepset is a list of p lists of p entries: 8 p^2 bytes of pointers (3.2 GB at p = 20000,
# 25 GB at p = 55,572) that R takes seconds to fill. Above `getOption("gpupc.sepset_rows_p", 5000)`
# variables each `sepset[[x]]` is instead a row of class "gpupc_sepset_row":
# list(p, bits = <raw: bit y - 1 set when the entry is integer(0)>, idx = <y with a set of its
# own>, sets = <those sets>, idx1 = <y whose set is one variable>, k1 = <that variable>), every
# other entry NULL (idx before idx1 before bits). The methods below make `sepset[[x]][[y]]`,
# `sepset[[x]][[y]] <- S`, `sepset[[x]][y] <- list(NULL)`, `length()`, `lapply()` and `as.list()`
# behave as on pcalg's list, which is all pcalg's own functions (udag2pdagRelaxed, pc.cons.intern,
# fci's pdsep and udag2pag, fciPlus) do with it.

# Compact rows for this p? `gpupc.sepset_rows_p` = Inf turns them off, 0 makes them always.
use_sepset_rows <- function(p) {
  lim <- getOption("gpupc.sepset_rows_p", 5000)
  if (!is.numeric(lim) || length(lim) != 1 || is.na(lim))
    abort_arg("options(gpupc.sepset_rows_p)", "must be a single number (Inf: always pcalg's list of lists).")
  p > lim
}

sepset_row_index <- function(x, i) {
  p <- .subset2(x, "p")
  if (!is.numeric(i) || length(i) != 1L || is.na(i)) return(NA_integer_)
  i <- as.integer(i)
  if (i < 1L || i > p) stop("subscript out of bounds", call. = FALSE)
  i
}

sepset_row_bit <- function(bits, i) {
  b <- as.integer(bits[(i - 1L) %/% 8L + 1L])
  bitwAnd(b, bitwShiftL(1L, (i - 1L) %% 8L)) != 0L
}

#' @export
`[[.gpupc_sepset_row` <- function(x, i, ...) {
  i <- sepset_row_index(x, i)
  if (is.na(i)) return(as.list.gpupc_sepset_row(x)[[i]])
  k <- match(i, .subset2(x, "idx"))
  if (!is.na(k)) return(.subset2(.subset2(x, "sets"), k))
  k <- match(i, .subset2(x, "idx1"))
  if (!is.na(k)) return(.subset2(x, "k1")[k])
  if (sepset_row_bit(.subset2(x, "bits"), i)) integer(0) else NULL
}

#' @export
`[[<-.gpupc_sepset_row` <- function(x, i, value) {
  j <- sepset_row_index(x, i)
  if (is.na(j)) {  # names or vectors: what a plain list does
    l <- as.list.gpupc_sepset_row(x)
    l[[i]] <- value
    return(l)
  }
  u <- unclass(x)
  byte <- (j - 1L) %/% 8L + 1L
  mask <- bitwShiftL(1L, (j - 1L) %% 8L)
  b <- as.integer(u$bits[byte])
  k <- match(j, u$idx)
  if (!is.na(k)) {
    u$idx <- u$idx[-k]
    u$sets <- u$sets[-k]
  }
  k <- match(j, u$idx1)
  if (!is.na(k)) {
    u$idx1 <- u$idx1[-k]
    u$k1 <- u$k1[-k]
  }
  if (identical(value, integer(0))) {
    u$bits[byte] <- as.raw(bitwOr(b, mask))
  } else {
    u$bits[byte] <- as.raw(bitwAnd(b, bitwNot(mask)))
    if (!is.null(value)) {
      u$idx <- c(u$idx, j)
      u$sets <- c(u$sets, list(value))
    }
  }
  class(u) <- class(x)
  u
}

#' @export
`[.gpupc_sepset_row` <- function(x, i, ...) as.list.gpupc_sepset_row(x)[i]

#' @export
`[<-.gpupc_sepset_row` <- function(x, i, value) {
  idx <- seq_len(.subset2(x, "p"))[i]
  if (anyNA(idx)) {
    l <- as.list.gpupc_sepset_row(x)
    l[i] <- value
    return(l)
  }
  value <- rep_len(as.list(value), length(idx))
  for (k in seq_along(idx)) x[[idx[k]]] <- value[[k]]
  x
}

#' @export
length.gpupc_sepset_row <- function(x) .subset2(x, "p")

#' @export
names.gpupc_sepset_row <- function(x) NULL

#' @export
as.list.gpupc_sepset_row <- function(x, ...) {
  p <- .subset2(x, "p")
  out <- vector("list", p)
  zero <- which(as.logical(rawToBits(.subset2(x, "bits")))[seq_len(p)])
  out[zero] <- list(integer(0))
  idx1 <- .subset2(x, "idx1")
  if (length(idx1)) out[idx1] <- as.list(.subset2(x, "k1"))
  idx <- .subset2(x, "idx")
  if (length(idx)) out[idx] <- .subset2(x, "sets")
  out
}

#' @export
print.gpupc_sepset_row <- function(x, ...) {
  print(as.list.gpupc_sepset_row(x), ...)
  invisible(x)
}

#' pcalg's list of lists from a sepset of compact rows
#'
#' Above `getOption("gpupc.sepset_rows_p", 5000)` variables, the `sepset` slot of a
#' [gpu_skeleton()] or [gpu_pc()] result is a list of p compact rows instead of pcalg's p lists
#' of p entries (see "Host memory" in [gpu_skeleton()]). They read alike (`sepset[[x]][[y]]` is
#' `NULL` or the set), but `identical()` with pcalg's object needs this conversion, which
#' allocates the full 8 p^2 bytes.
#'
#' @param x a `pcAlgo` object or its `sepset` slot.
#' @return pcalg's `sepset`: a list of p lists of p entries, each `NULL` or an integer vector.
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' X <- gmG8$x
#' old <- options(gpupc.sepset_rows_p = 0)  # compact rows at any p
#' sk <- gpu_skeleton(list(C = cor(X), n = nrow(X)), gaussCItest, alpha = 0.01,
#'                    labels = colnames(X), numCores = 2, backend = "cpu")
#' options(old)
#' class(sk@sepset[[1]])
#' sk@sepset[[1]][[2]]
#' str(as_sepset_list(sk)[[1]])
#' # the same lists as with pcalg's layout
#' sk2 <- gpu_skeleton(list(C = cor(X), n = nrow(X)), gaussCItest, alpha = 0.01,
#'                     labels = colnames(X), numCores = 2, backend = "cpu")
#' identical(as_sepset_list(sk), sk2@sepset)
as_sepset_list <- function(x) {
  s <- if (methods::is(x, "pcAlgo")) x@sepset else x
  if (!is.list(s)) abort_arg("x", "must be a pcAlgo object or its sepset list.")
  lapply(s, function(r) if (inherits(r, "gpupc_sepset_row")) as.list.gpupc_sepset_row(r) else r)
}
