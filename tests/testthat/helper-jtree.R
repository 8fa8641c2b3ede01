# Shared by the junction-tree tests and bench/suites/jtree: networks, evidence drawn from
# forward samples (so it is possible), and gRain's answers for the same evidence.

jt_network_path <- function(name) {
  p <- system.file("extdata", "networks", paste0(name, ".bif.gz"), package = "gpupc")
  if (!nzchar(p)) p <- file.path(Sys.getenv("GPUPC_NETWORKS", "."), paste0(name, ".bif.gz"))
  p
}

jt_read_fit <- function(name) bnlearn::read.bif(gpupc:::plain_bif(jt_network_path(name)))

# `rows` evidence sets: forward samples with a fraction `frac` of the nodes kept (at least one).
jt_sample_evidence <- function(fit, rows, frac, seed) {
  set.seed(seed)
  smp <- bnlearn::rbn(fit, rows)
  k <- max(1L, round(frac * ncol(smp)))
  # the same draws as sample(names(smp), k) row by row, kept in a logical matrix: assigning NA
  # into the data.frame row by row copies its columns every time (minutes for LINK's 724
  # columns and 10,000 rows)
  kept <- matrix(FALSE, rows, ncol(smp))
  for (r in seq_len(rows)) kept[r, sample.int(ncol(smp), k)] <- TRUE
  ev <- smp
  ev[] <- lapply(seq_along(smp), function(j) { x <- as.character(smp[[j]]); x[!kept[, j]] <- NA; x })
  ev
}

# gRain's marginals and P(evidence) of evidence row r (all nodes).
jt_grain_row <- function(g, ev, r) {
  e <- as.list(ev[r, , drop = FALSE])
  e <- e[!vapply(e, is.na, logical(1))]
  g2 <- if (length(e)) gRain::setEvidence(g, evidence = e) else g
  list(marg = gRain::querygrain(g2, nodes = names(ev), type = "marginal"), pe = gRain::pEvidence(g2))
}

# Largest |difference| of marginals and largest relative difference of P(e) over all rows.
jt_compare_grain <- function(jt, g, ev, backend = NULL) {
  ours <- gpu_query(jt, evidence = ev, backend = backend)
  pe <- attr(ours, "pEvidence")
  dm <- 0; dp <- 0
  for (r in seq_len(nrow(ev))) {
    ref <- jt_grain_row(g, ev, r)
    for (v in names(ref$marg)) {
      dm <- max(dm, abs(ours[[v]][r, names(ref$marg[[v]])] - as.numeric(ref$marg[[v]])))
    }
    dp <- max(dp, abs(pe[r] - ref$pe) / ref$pe)
  }
  c(marginal = dm, pEvidence = dp)
}
