# Generates the fuzz inputs of test-fuzz.R: every argument of gpu_pc()/gpu_skeleton() and every
# suffStat field, valid and hostile. Each case records what must hold:
#   expect = "pcalg": the same result as pcalg, or an error from both;
#   expect = "refuse": one of gpupc's documented refusals (?gpu_pc): an error that names `arg`.
# Indep tests travel by name (functions are rebuilt in the child process).

fuzz_cases <- function(n = 220, seed = 1301) {
  set.seed(seed)
  lapply(seq_len(n), function(k) fuzz_case(k))
}

fuzz_case <- function(k) {
  p <- sample(2:7, 1)
  kind <- sample(c("gauss", "gauss", "dis", "bin", "rfun"), 1)
  nrow <- sample(c(8L, 30L, 120L, 400L), 1)
  X <- matrix(stats::rnorm(nrow * p), nrow, p)
  if (p > 2) for (j in 2:p) X[, j] <- X[, j] + stats::rbinom(1, 1, 0.6) * X[, sample(j - 1, 1)]
  case <- list(id = k, fun = sample(c("skeleton", "pc"), 1), expect = "pcalg", arg = NA_character_)
  a <- list(alpha = sample(c(0.01, 0.05, 0.2, 0.5, 1), 1, prob = c(3, 4, 2, 1, 0.3)))
  if (kind %in% c("gauss", "rfun")) {
    C <- stats::cor(X)
    st <- list(C = C, n = nrow)
    r <- stats::runif(1)
    if (r < 0.08) st$C <- as.data.frame(C)
    else if (r < 0.14) { v <- sample(p, 1); st$C[v, ] <- st$C[, v] <- NA; st$C[v, v] <- 1 }
    else if (r < 0.18) st$n <- sample(list(Inf, nrow + 0.5, 0, 3), 1)[[1]]
    case$test <- if (kind == "gauss") "gauss" else sample(c("rgauss", "rlogical", "rna", "rwarn", "rrandom"), 1)
  } else {
    lev <- if (kind == "bin") 2L else sample(2:4, 1)
    dm <- apply(X, 2, function(x) as.integer(cut(x, unique(stats::quantile(x, seq(0, 1, length.out = lev + 1))), include.lowest = TRUE)) - 1L)
    dm[is.na(dm)] <- 0L
    for (j in seq_len(p)) if (length(unique(dm[, j])) < 2) dm[1:2, j] <- 0:1
    st <- list(dm = dm, adaptDF = stats::runif(1) < 0.3)
    if (kind == "dis") st$nlev <- if (stats::runif(1) < 0.5) apply(dm, 2, function(x) length(unique(x))) else NULL
    if (stats::runif(1) < 0.1) st$dm <- as.data.frame(st$dm)
    case$test <- kind
  }
  if (stats::runif(1) < 0.5) a$labels <- paste0("V", seq_len(p)) else a$p <- p
  a$m.max <- sample(list(Inf, Inf, 0, 1, 2, 1.5, -1), 1)[[1]]
  method <- sample(c("stable", "stable", "stable.fast", "stable.fast", "original"), 1, prob = c(2, 2, 1, 1, 0.3))
  if (case$fun == "pc") a$skel.method <- method else a$method <- method
  if (stats::runif(1) < 0.3) { g <- matrix(stats::runif(p * p) < 0.2, p); g <- g | t(g); diag(g) <- FALSE; a$fixedGaps <- g }
  if (stats::runif(1) < 0.2) { g <- matrix(stats::runif(p * p) < 0.15, p); g <- g | t(g); diag(g) <- FALSE; a$fixedEdges <- g }
  a$NAdelete <- stats::runif(1) < 0.7
  if (stats::runif(1) < 0.1) a$verbose <- TRUE
  a$numCores <- sample(list(1, 2, 0.5, 1e6, 2000), 1)[[1]]
  if (case$fun == "pc") {
    a$u2pd <- sample(c("relaxed", "relaxed", "rand", "retry"), 1)
    if (a$u2pd == "relaxed") {
      v <- sample(c("none", "none", "cons", "maj"), 1)
      a$conservative <- v == "cons"
      a$maj.rule <- v == "maj"
      a$solve.confl <- stats::runif(1) < 0.3
    }
  }
  # hostile values: documented refusals (?gpu_pc), each naming its argument
  h <- stats::runif(1)
  if (h < 0.15) {
    bad <- sample(c("alpha0", "alpha2", "asym", "r2", "negcode", "nadelete", "labelsdup", "gapsnum"), 1)
    if (bad %in% c("asym", "r2") && case$test != "gauss") bad <- "alpha0"  # a user's test reads C itself
    if (bad == "negcode" && is.null(st$dm)) bad <- "alpha2"
    case$expect <- "refuse"
    switch(bad,
      alpha0 = { a$alpha <- 0; case$arg <- "alpha" },
      alpha2 = { a$alpha <- 2; case$arg <- "alpha" },
      asym = { st$C <- as.matrix(st$C); st$C[1, 2] <- st$C[1, 2] + 0.2; case$arg <- "suffStat$C" },
      r2 = { st$C <- as.matrix(st$C); st$C[1, 2] <- st$C[2, 1] <- 1.5; case$arg <- "suffStat$C" },
      negcode = { st$dm <- as.matrix(st$dm); st$dm[1, 1] <- -1L; case$arg <- "suffStat$dm" },
      nadelete = { a$NAdelete <- NA; case$arg <- "NAdelete" },
      labelsdup = { a$p <- NULL; a$labels <- rep("A", p); case$arg <- "labels" },
      gapsnum = { g <- matrix(0, p, p); g[1, 2] <- g[2, 1] <- 2; a$fixedGaps <- g; case$arg <- "fixedGaps" })
  }
  # pcalg's stable.fast (C++) fails on a data-frame C, which gpupc converts with as.matrix():
  # the result must then be pcalg's for the converted matrix (?gpu_pc)
  if (is.data.frame(st$C) && method == "stable.fast" && case$test == "gauss" && case$expect == "pcalg")
    case$expect <- "pcalg on as.matrix(C)"
  case$args <- a
  case$suffStat <- st
  case
}

# The tests by name; rrandom draws random numbers, so the call order must be pcalg's.
fuzz_test <- function(name) {
  switch(name,
    gauss = pcalg::gaussCItest, dis = pcalg::disCItest, bin = pcalg::binCItest,
    rgauss = function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat),
    rlogical = function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat) > 0.1,
    rna = function(x, y, S, suffStat) if ((x * 7 + y + length(S)) %% 5 == 0) NA else pcalg::gaussCItest(x, y, S, suffStat),
    rwarn = function(x, y, S, suffStat) { if (x == 1) warning("fuzz warning"); pcalg::gaussCItest(x, y, S, suffStat) },
    rrandom = function(x, y, S, suffStat) 0.3 * stats::runif(1) + 0.7 * pcalg::gaussCItest(x, y, S, suffStat))
}
