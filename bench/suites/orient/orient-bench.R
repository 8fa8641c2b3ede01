# Orientation benchmark: gpupc's native orientation (Rust) against pcalg's R code.
#
#   Rscript bench/suites/orient/orient-bench.R [--out orient.csv] [--backend cuda|cpu|auto] [--cap 600]
#                                      [--parts orient,e2e,cons] [--orient-p 1643,10000,20000]
#                                      [--input synthetic|learned] [--cons-p 500,1643]
#                                      [--e2e-p 1643] [--n 850] [--alpha 0.01] [--quick]
#
# Parts (--parts, comma-separated; default all three):
#   orient  orientation alone at each --orient-p (Gaussian DAG, mean degree 4): the skeleton
#           input is, with --input synthetic (default), the true skeleton of pcalg's randomDAG
#           with sepsets that d-separate (sepset[[x]][[z]] = parents of the later of x, z, for
#           the non-adjacent pairs with a common neighbour: the only sepsets orientation reads),
#           so the result is the true CPDAG; with --input learned, gpu_skeleton() on --n samples
#           (backend --backend). Times gpupc:::orient_pcalgo() (the call gpu_pc() makes: R in
#           and out, graphNEL built) and its Rust part, against pcalg::udag2pdagRelaxed() in a
#           forked child under --cap seconds; same = identical() graphs.
#   e2e     gpu_pc() (skel.method "stable", --backend) against pc(skel.method = "stable.fast")
#           end to end at each --e2e-p, n = --n, capped; same = identical amat.
#   cons    conservative and majority-rule gpu_pc() against pc(..., skel.method =
#           "stable.fast") at each --cons-p, capped; same = identical amat (the two skeleton
#           orders store sepsets under different conventions, so those are not compared here;
#           tests/testthat/test-orient.R compares them within one order).
# --quick   tiny sizes (seconds on 2 cores) to try the script.
#
# Prints a table as it goes and (with --out) writes one CSV row per measurement, rewritten after
# every row so a killed run keeps what it measured.
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
here <- local({
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  if (length(f)) dirname(normalizePath(f[1])) else "bench/suites/orient"
})
source(file.path(here, "..", "..", "lib", "lib.R"))

args <- commandArgs(trailingOnly = TRUE)
opt <- option_reader(args)
nums <- function(x) as.numeric(strsplit(x, ",")[[1]])
quick <- "--quick" %in% args
out <- opt("out", NA)
backend <- opt("backend", "auto")
cap <- as.numeric(opt("cap", "600"))
alpha <- as.numeric(opt("alpha", "0.01"))
parts <- strsplit(opt("parts", "orient,e2e,cons"), ",")[[1]]
input <- opt("input", "synthetic")
orient_p <- nums(opt("orient-p", if (quick) "200,1000" else "1643,10000,20000"))
e2e_p <- nums(opt("e2e-p", if (quick) "200" else "1643"))
cons_p <- nums(opt("cons-p", if (quick) "100,200" else "500,1643"))
n_obs <- as.numeric(opt("n", "850"))
stopifnot(backend %in% c("cuda", "cpu", "auto"), input %in% c("synthetic", "learned"),
          all(parts %in% c("orient", "e2e", "cons")))

mi <- machine_info()
cat(sprintf("machine: %s | %s | %d cores | gpupc %s | pcalg %s\n", mi$gpu, mi$cpu, mi$cores, mi$gpupc, mi$pcalg))
record <- csv_recorder(out, mi)
fmt <- function(s) if (is.na(s)) sprintf("> %g", cap) else sprintf("%.4f", s)

# The true skeleton of `dag` (randomDAG: edges go from lower to higher index) with d-separating
# sepsets for the non-adjacent pairs with a common neighbour, as a pcAlgo.
synthetic_skeleton <- function(dag, labels) {
  p <- length(labels)
  em <- graph::edgeMatrix(dag)
  from <- em[1, ]; to <- em[2, ]
  parents <- split(from, factor(to, levels = seq_len(p)))
  nb <- split(c(from, to), factor(c(to, from), levels = seq_len(p)))
  key <- function(a, b) a * (p + 1) + b
  adj <- key(pmin(from, to), pmax(from, to))
  # the unshielded pairs (x < z) around each middle y
  pr <- do.call(cbind, lapply(seq_len(p), function(y) {
    n <- sort(nb[[y]])
    if (length(n) < 2) return(NULL)
    utils::combn(n, 2)
  }))
  pr <- pr[, !(key(pr[1, ], pr[2, ]) %in% adj), drop = FALSE]
  pr <- pr[, !duplicated(key(pr[1, ], pr[2, ])), drop = FALSE]
  # one list per row, filled at once (nested assignment in a loop copies rows of p entries)
  by_x <- split(pr[2, ], factor(pr[1, ], levels = seq_len(p)))
  sep <- lapply(seq_len(p), function(x) {
    row <- vector("list", p)
    z <- by_x[[x]]
    if (length(z)) row[z] <- lapply(z, function(zz) as.integer(parents[[zz]]))
    row
  })
  edges <- cbind(pmin(from, to), pmax(from, to))
  g <- gpupc:::undirected_graphnel(edges[order(edges[, 1], edges[, 2]), , drop = FALSE], labels)
  new("pcAlgo", graph = g, call = quote(skeleton()), n = integer(0), max.ord = 0L,
      n.edgetests = 0, sepset = sep, pMax = matrix(-Inf, 1, 1), zMin = matrix(NA, 1, 1))
}

# --- orientation alone ---------------------------------------------------------------------------
if ("orient" %in% parts) for (p in orient_p) {
  set.seed(1)
  labels <- paste0("V", seq_len(p))
  t0 <- proc.time()[["elapsed"]]
  if (input == "synthetic") {
    dag <- randomDAG(p, prob = min(1, 4 / (p - 1)))
    sk <- synthetic_skeleton(dag, labels)
  } else {
    d <- gauss_data(p, n_obs, degree = 4, seed = 1)
    sk <- gpu_skeleton(d$suff, gaussCItest, alpha, labels = labels, backend = backend)
  }
  prep_s <- proc.time()[["elapsed"]] - t0
  nat <- timed(gpupc:::orient_pcalgo(sk))
  info <- nat$value$info
  ref <- capped({
    r <- udag2pdagRelaxed(sk)
    identical(r@graph, nat$value$pcalgo@graph)
  }, cap)
  record(part = "orient", p = p, input = input, edges = graph::numEdges(sk@graph),
         gpupc_s = nat$secs, gpupc_core_s = unname(info$phases["orient_s"]),
         gpupc_rust_total_s = sum(info$phases), gpupc_read_s = unname(info$phases["orient_input_s"]),
         rounds = info$stats$rounds,
         pcalg_s = if (ref$status == "ok") ref$secs else NA_real_, pcalg_status = ref$status,
         speedup = if (ref$status == "ok") ref$secs / nat$secs else NA_real_,
         same = if (ref$status == "ok") ref$value else NA, input_s = prep_s)
}

# --- end to end -----------------------------------------------------------------------------------
# The first CUDA call of a process opens the device and compiles the kernels (seconds; 8.8 s on a
# fresh machine): made once here, outside every timing, as a user's R process makes it once.
warmed <- FALSE
warm_up <- function() {
  if (warmed || backend == "cpu") return(invisible())
  d <- gauss_data(50, 200, degree = 2, seed = 2)
  try(gpu_skeleton(d$suff, gaussCItest, alpha, labels = d$labels, backend = backend), silent = TRUE)
  warmed <<- TRUE
}
e2e <- function(p, part, variants) {
  warm_up()
  d <- gauss_data(p, n_obs, degree = 4, seed = 1)
  for (v in variants) {
    g <- timed(gpu_pc(d$suff, gaussCItest, alpha, labels = d$labels, conservative = v$cons,
                      maj.rule = v$maj, backend = backend))
    ph <- gpupc_last_run()$phases
    fit <- g$value
    ref <- capped({
      r <- pc(d$suff, gaussCItest, alpha, labels = d$labels, skel.method = "stable.fast",
              conservative = v$cons, maj.rule = v$maj)
      identical(as(r@graph, "matrix"), as(fit@graph, "matrix"))
    }, cap)
    record(part = part, p = p, n = n_obs, variant = v$name, backend = gpupc_last_run()$backend,
           gpupc_s = g$secs, gpupc_search_s = unname(ph["search_s"]), gpupc_orient_s = unname(ph["orient_s"]),
           pcalg_s = if (ref$status == "ok") ref$secs else NA_real_, pcalg_status = ref$status,
           speedup = if (ref$status == "ok") ref$secs / g$secs else NA_real_,
           same_amat = if (ref$status == "ok") ref$value else NA)
  }
}
if ("e2e" %in% parts) for (p in e2e_p) e2e(p, "e2e", list(list(name = "relaxed", cons = FALSE, maj = FALSE)))
if ("cons" %in% parts) for (p in cons_p) {
  e2e(p, "cons", list(list(name = "conservative", cons = TRUE, maj = FALSE),
                      list(name = "maj.rule", cons = FALSE, maj = TRUE)))
}

cat("\nsummary (seconds; pcalg capped at", cap, "s):\n")
for (r in recorded_rows(record)) {
  cat(sprintf("  %-6s p=%-6d %-13s gpupc %s  pcalg %s  speedup %s\n", r$part, as.integer(r$p),
              if (!is.null(r$variant)) r$variant else r$input, fmt(r$gpupc_s), fmt(r$pcalg_s),
              if (is.na(r$speedup)) "-" else sprintf("%.0fx", r$speedup)))
}
