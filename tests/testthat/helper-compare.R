## Helpers shared by the parity tests: compare two pcAlgo objects slot by slot, and tell a
## decision flipped by a p-value within rounding of alpha (a "tie") from a real difference.
##
## Slots compared (not `call`, which records the caller's own call):
##   graph        class, node names, edgemode, adjacency matrix as(graph, "matrix") (exact)
##   sepset       length p of lists of length p; every [[i]][[j]]: NULL in both, or identical
##                as.integer() vectors (so NULL vs integer(0) is a difference)
##   pMax         dims; the same pattern of NA / NaN / +-Inf; finite entries equal to relative 1e-9
##                (-1 and 1 are finite and compared like any value)
##   n.edgetests  identical values; identical type as well when strict_type (stable.fast)
##   max.ord, n, zMin   identical

TIE_REL <- 1e-9   # "within rounding of alpha"
PMAX_REL <- 1e-9  # relative tolerance on finite pMax entries

## Counters kept across the whole run (helpers are sourced once per test_check()).
.parity <- new.env(parent = emptyenv())
.parity$ties <- character(0)
.parity$compared <- 0L

adj_matrix <- function(x) {
  m <- as(x@graph, "matrix")
  storage.mode(m) <- "double"
  m
}

num_equal_rel <- function(a, b, rel) {
  ## a, b finite doubles of the same length; TRUE where equal within rel (relative to the larger).
  ## Values both in the subnormal range (|x| < .Machine$double.xmin, i.e. p-values that underflow)
  ## carry no relative precision and are treated as equal.
  scale <- pmax(abs(a), abs(b))
  a == b | abs(a - b) <= rel * scale | scale < .Machine$double.xmin
}

fmt_vals <- function(v) {
  if (is.null(v)) return("NULL")
  if (length(v) == 0) return(paste0(typeof(v), "(0)"))
  paste0("c(", paste(format(v, digits = 17), collapse = ","), ")")
}

## Returns a character vector describing every difference (empty when the objects agree).
pcalgo_diff <- function(got, want, strict_type = FALSE, max_report = 8L) {
  out <- character(0)
  add <- function(...) out <<- c(out, paste0(...))
  if (!methods::is(got, "pcAlgo")) return(paste0("got is not a pcAlgo object but ", paste(class(got), collapse = "/")))
  if (!methods::is(want, "pcAlgo")) return("want is not a pcAlgo object")

  ## graph ---------------------------------------------------------------------------------
  if (!identical(class(got@graph), class(want@graph)))
    add("graph class: got ", class(got@graph), ", want ", class(want@graph))
  ng <- graph::nodes(got@graph); nw <- graph::nodes(want@graph)
  if (!identical(ng, nw)) add("graph nodes: got ", fmt_vals(ng), ", want ", fmt_vals(nw))
  if (!identical(graph::edgemode(got@graph), graph::edgemode(want@graph)))
    add("graph edgemode: got ", graph::edgemode(got@graph), ", want ", graph::edgemode(want@graph))
  ag <- adj_matrix(got); aw <- adj_matrix(want)
  if (!identical(dim(ag), dim(aw))) {
    add("graph adjacency dims: got ", paste(dim(ag), collapse = "x"), ", want ", paste(dim(aw), collapse = "x"))
  } else if (!identical(unname(ag), unname(aw))) {
    w <- which(ag != aw, arr.ind = TRUE)
    k <- min(nrow(w), max_report)
    add("graph adjacency: ", nrow(w), " entries differ, e.g. ",
        paste(sprintf("[%d,%d] got %g want %g", w[seq_len(k), 1], w[seq_len(k), 2],
                      ag[w[seq_len(k), , drop = FALSE]], aw[w[seq_len(k), , drop = FALSE]]), collapse = "; "))
  }

  ## sepset --------------------------------------------------------------------------------
  sg <- got@sepset; sw <- want@sepset
  if (length(sg) != length(sw)) {
    add("sepset length: got ", length(sg), ", want ", length(sw))
  } else {
    nd <- 0L; ex <- character(0)
    for (i in seq_along(sw)) {
      if (length(sg[[i]]) != length(sw[[i]])) {
        add("sepset[[", i, "]] length: got ", length(sg[[i]]), ", want ", length(sw[[i]]))
        next
      }
      for (j in seq_along(sw[[i]])) {
        a <- sg[[i]][[j]]; b <- sw[[i]][[j]]
        same <- if (is.null(a) || is.null(b)) is.null(a) && is.null(b) else
          identical(as.integer(a), as.integer(b))
        if (!same) {
          nd <- nd + 1L
          if (length(ex) < max_report)
            ex <- c(ex, sprintf("[[%d]][[%d]] got %s want %s", i, j, fmt_vals(a), fmt_vals(b)))
        }
      }
    }
    if (nd > 0) add("sepset: ", nd, " entries differ, e.g. ", paste(ex, collapse = "; "))
  }

  ## pMax ----------------------------------------------------------------------------------
  pg <- got@pMax; pw <- want@pMax
  if (!identical(dim(pg), dim(pw))) {
    add("pMax dims: got ", paste(dim(pg), collapse = "x"), ", want ", paste(dim(pw), collapse = "x"))
  } else {
    pg <- unname(pg); pw <- unname(pw)
    cls <- function(m) ifelse(is.nan(m), "NaN", ifelse(is.na(m), "NA",
                       ifelse(is.infinite(m), ifelse(m > 0, "Inf", "-Inf"), "fin")))
    cg <- cls(pg); cw <- cls(pw)
    bad <- cg != cw
    fin <- !bad & cg == "fin"
    bad[fin] <- !num_equal_rel(pg[fin], pw[fin], PMAX_REL)
    if (any(bad)) {
      w <- which(bad, arr.ind = TRUE)
      k <- min(nrow(w), max_report)
      add("pMax: ", nrow(w), " entries differ, e.g. ",
          paste(sprintf("[%d,%d] got %.17g want %.17g", w[seq_len(k), 1], w[seq_len(k), 2],
                        pg[w[seq_len(k), , drop = FALSE]], pw[w[seq_len(k), , drop = FALSE]]),
                collapse = "; "))
    }
  }

  ## n.edgetests, max.ord, n, zMin ------------------------------------------------------------
  eg <- got@n.edgetests; ew <- want@n.edgetests
  if (!identical(as.numeric(eg), as.numeric(ew)))
    add("n.edgetests: got ", fmt_vals(eg), ", want ", fmt_vals(ew))
  else if (strict_type && !identical(eg, ew))
    add("n.edgetests type/attributes: got ", typeof(eg), " ", deparse(eg), ", want ", typeof(ew), " ", deparse(ew))
  if (!identical(got@max.ord, want@max.ord))
    add("max.ord: got ", deparse(got@max.ord), ", want ", deparse(want@max.ord))
  if (!identical(got@n, want@n))
    add("n slot: got ", deparse(got@n), ", want ", deparse(want@n))
  if (!identical(got@zMin, want@zMin))
    add("zMin: got ", paste(deparse(got@zMin), collapse = ""), ", want ", paste(deparse(want@zMin), collapse = ""))
  out
}

## Does the skeleton / pc decision depend on a p-value within TIE_REL of alpha?
## Two signals: (a) a finite pMax entry (of either object) within TIE_REL * alpha of alpha;
## (b) when `rerun` (a function of alpha returning the reference pcAlgo, seeds included) is given,
## the reference's own result changes between alpha * (1 - TIE_REL) and alpha * (1 + TIE_REL).
tie_info <- function(got, want, alpha, rerun = NULL) {
  why <- character(0)
  near <- function(m) { m <- m[is.finite(m)]; m[abs(m - alpha) <= TIE_REL * alpha] }
  pm <- c(near(got@pMax), near(want@pMax))
  if (length(pm)) why <- c(why, sprintf("pMax entries at %s", paste(format(unique(pm), digits = 17), collapse = ",")))
  if (is.function(rerun)) {
    for (a in alpha * c(1 - TIE_REL, 1 + TIE_REL)) {
      r <- rerun(a)
      d <- pcalgo_diff(r, want)
      ## pMax differences are expected to be zero here; only decisions matter.
      d <- d[!startsWith(d, "pMax")]
      if (length(d)) why <- c(why, sprintf("reference changes at alpha = %.17g (%s)", a, d[1]))
    }
  }
  list(tie = length(why) > 0, why = why)
}

## The expectation. `rerun`: optional function(alpha) giving the reference (pcalg) result at another
## alpha, used only when the objects differ, to tell a tie from a real difference.
expect_same_pcalgo <- function(got, want, alpha, label, rerun = NULL, strict_type = FALSE) {
  .parity$compared <- .parity$compared + 1L
  d <- pcalgo_diff(got, want, strict_type = strict_type)
  if (length(d) == 0) {
    testthat::succeed()
    return(invisible(TRUE))
  }
  ti <- tie_info(got, want, alpha, rerun)
  if (ti$tie) {
    .parity$ties <- c(.parity$ties, label)
    testthat::skip(sprintf("tie at p ~ alpha (tie #%d so far): %s [%s]; differences: %s",
                           length(.parity$ties), label, paste(ti$why, collapse = "; "),
                           paste(d, collapse = " | ")))
  }
  testthat::fail(paste0(label, ":\n  ", paste(d, collapse = "\n  ")))
  invisible(FALSE)
}

## Two gpupc results that must be bit-identical (numCores 1 vs 2, repeated runs): no tolerance.
expect_identical_pcalgo <- function(a, b, label) {
  d <- character(0)
  for (s in c("graph", "sepset", "pMax", "n.edgetests", "max.ord", "n", "zMin")) {
    x <- methods::slot(a, s); y <- methods::slot(b, s)
    if (s == "graph") { x <- list(graph::nodes(x), graph::edgemode(x), adj_matrix(a)); y <- list(graph::nodes(y), graph::edgemode(y), adj_matrix(b)) }
    if (!identical(x, y)) d <- c(d, s)
  }
  if (length(d)) testthat::fail(paste0(label, ": slots differ: ", paste(d, collapse = ", ")))
  else testthat::succeed()
}

## A compact description of a case (one row of a case table) for failure messages.
case_label <- function(cs) {
  cs <- as.list(cs)
  paste0(names(cs), "=", vapply(cs, function(v) paste(format(v), collapse = ","), ""), collapse = " ")
}

## Run `expr` with warnings muffled (pcalg's gaussCItest warns "NaNs produced" when n <= |S| + 3, and
## the G^2 tests warn when n < 10 df); the parity tests check results, test-bad-input checks warnings.
quietly <- function(expr) suppressWarnings(suppressMessages(expr))

## Random symmetric logical p x p mask with zero diagonal; `frac` of the pairs TRUE.
random_sym_mask <- function(p, frac) {
  m <- matrix(FALSE, p, p)
  ut <- which(upper.tri(m))
  m[sample(ut, max(1L, round(frac * length(ut))))] <- TRUE
  m | t(m)
}

## Discrete fixture (see fixtures/make-discrete-fixtures.R): first n rows of a sampled network.
load_disc <- function(name, n = NULL) {
  f <- testthat::test_path("fixtures", paste0("disc-", name, ".rds"))
  o <- readRDS(f)
  if (!is.null(n)) o$dm <- o$dm[seq_len(n), , drop = FALSE]
  o
}

## Has the package under test been loaded? (Lets the comparison helpers be exercised alone.)
gpupc_available <- function() requireNamespace("gpupc", quietly = TRUE)

## The functions under test. With the environment variable GPUPC_SELFTEST=1 they are pcalg's own
## (and gpupc-only arguments are dropped), which checks the case tables and helpers themselves:
## every parity test must then pass, with no ties.
selftest <- function() identical(Sys.getenv("GPUPC_SELFTEST"), "1")
under_test <- function(fun) {
  if (selftest()) return(switch(fun, pc = pcalg::pc, skeleton = pcalg::skeleton))
  ns <- asNamespace("gpupc")
  switch(fun, pc = get("gpu_pc", ns), skeleton = get("gpu_skeleton", ns))
}
reference <- function(fun) switch(fun, pc = pcalg::pc, skeleton = pcalg::skeleton)

## Run pcalg and gpupc on the same input and compare. `args`: arguments given to both (besides
## suffStat, indepTest, alpha and p or labels); `gpu_args`: arguments only gpupc gets (numCores,
## backend); `seed`: set before each call (u2pd = "rand" draws random numbers).
compare_run <- function(fun, suffStat, indepTest, alpha, p = NULL, labels = NULL, args = list(),
                        gpu_args = list(), seed = NULL, label, strict_type = FALSE) {
  pl <- if (is.null(labels)) list(p = p) else list(labels = labels)
  call_one <- function(f, a, extra) {
    if (!is.null(seed)) set.seed(seed)
    quietly(do.call(f, c(list(suffStat = quote(suffStat), indepTest = quote(indepTest), alpha = a),
                         pl, args, extra)))
  }
  if (selftest()) gpu_args <- list()
  want <- call_one(reference(fun), alpha, list())
  got <- call_one(under_test(fun), alpha, gpu_args)
  expect_same_pcalgo(got, want, alpha, label,
                     rerun = function(a) call_one(reference(fun), a, list()),
                     strict_type = strict_type)
  invisible(list(got = got, want = want))
}

## indepTest wrappers: not recognised as native tests, so gpupc calls them from R.
wrap_gauss <- function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat)
wrap_dis <- function(x, y, S, suffStat) pcalg::disCItest(x, y, S, suffStat)
## Returns NA for some (x, y, S) (symmetric in x and y), to exercise NAdelete.
na_gauss <- function(x, y, S, suffStat)
  if ((x + y + sum(S)) %% 7 == 0) NA_real_ else pcalg::gaussCItest(x, y, S, suffStat)
