# Orientation of a skeleton by the Rust core (crates/pc-core/src/orient): pcalg's
# udag2pdagRelaxed(), after pc.cons.intern()'s triple checks for conservative / majority-rule PC,
# mark for mark. One call into Rust; the graphNEL is built from the oriented edge list.

# The edges {i, j}, i < j, of an undirected graphNEL as an m x 2 integer matrix (1-based).
skeleton_edges <- function(g) {
  to <- lapply(g@edgeL, `[[`, "edges")
  from <- rep.int(seq_along(to), lengths(to))
  to <- as.integer(unlist(to, use.names = FALSE))
  keep <- from < to
  cbind(from[keep], to[keep])
}

# What as(pdag, "graphNEL") gives for pcalg's amat `pdag`, built from its non-zero entries
# (from, to, weight = pdag[from, to]) in row-major order, without the p x p matrix and the
# graphAM round trip. tests/testthat/test-orient.R checks identical() against the coercion.
pdag_graphnel <- function(from, to, weight, labels, directed) {
  # slots set on an edgeless graph (empty_graphnel() says why)
  g <- empty_graphnel(labels, if (directed) "directed" else "undirected")
  parts <- graph_parts(from, to, labels, keys = length(from) > 0)
  g@edgeL <- parts$edgeL
  g@edgeData@defaults <- list(weight = 1)
  if (length(from)) {
    # pcalg's marks are 1 and 2: two shared lists instead of one per edge
    d <- rep(list(list(weight = 1)), length(from))
    d[weight != 1] <- lapply(weight[weight != 1], function(w) list(weight = w))
    names(d) <- parts$keys
    g@edgeData@data <- d
  } else {
    g@edgeData@data <- list()
  }
  g
}

# The pcAlgo that pc() returns after its skeleton `skel`: udag2pdagRelaxed(skel, solve.confl)
# when rule = "none", else pc.cons.intern(version.unf = c(2, 1)) followed by
# udag2pdagRelaxed(unfVect = ...). `unfTriples` (k x 3, 1-based) adds triples to treat as
# unfaithful, as pcalg's `unfVect` does (for tests). `sepsets`: NULL (read skel@sepset) or the
# skeleton's Rust-side handle (skeleton_impl(defer_sepsets = TRUE)), which the orientation reads
# and the triple checks rewrite in place; `sepset_made`, the empty rows of its list made beside
# the skeleton (skeleton_impl()'s `made`). Returns list(pcalgo, info, sepsets): `sepsets` is the
# handle still to be made into the pcalgo's sepset slot (attach_sepsets()), or NULL when the slot
# is final (with no triple checks, the list is made into `sepset_made` while the orientation runs). `backend`: "cuda" runs the triple checks' gaussCItest, disCItest and binCItest tests
# on the GPU `device` (the skeleton's first); a GPU failure then reruns them on the CPU (in Rust,
# pc-cuda's open.rs) with a message when `fallback`. `test_handle`: the skeleton's native test
# (skeleton_impl(keep_test = TRUE)), which the triple checks take over instead of reading
# suffStat again.
orient_pcalgo <- function(skel, suffStat = NULL, indepTest = NULL, alpha = NA_real_,
                          solve.confl = FALSE, rule = c("none", "conservative", "majority"),
                          numCores = NULL, unfTriples = NULL, verbose = FALSE, sepsets = NULL,
                          backend = "cpu", fallback = TRUE, device = NULL, test_handle = NULL,
                          hooks = progress_hooks("gpupc triples", "tests"), edges = NULL,
                          sepset_made = NULL) {
  rule <- match.arg(rule)
  labels <- skel@graph@nodes
  p <- length(labels)
  # given `edges`, the skeleton's graph slot is a placeholder, built only where pcalg reads it
  placeholder <- !is.null(edges)
  edges <- if (placeholder) edges[order(edges[, 1], edges[, 2]), , drop = FALSE] else skeleton_edges(skel@graph)
  if (nrow(edges) == 0) {  # pcalg returns its input when there is no edge
    if (placeholder) skel@graph <- skeleton_graphnel(edges, labels)
    return(list(pcalgo = skel, info = NULL, sepsets = sepsets))
  }
  test <- list(kind = "gauss", data = list())
  if (rule != "none") {
    test <- prepare_test(indepTest, suffStat, p)
    if (!test$kind %in% c("gauss", "dis", "bin")) {
      # any other test is called by R, never from Rust (R/rfun.R says why): pcalg's own
      # checks call it, in pcalg's order, and the orientation takes their unfaithful triples
      if (placeholder) skel@graph <- undirected_graphnel(edges, labels)
      if (!is.null(sepsets)) {
        skel <- attach_sepsets(skel, sepsets)
        sepsets <- NULL
      }
      on.exit(hooks$done())
      pc. <- pcalg::pc.cons.intern(skel, suffStat, counting_test(indepTest, hooks, triple_tests(edges, p)),
                                   alpha, version.unf = c(2, 1), maj.rule = rule == "majority", verbose = verbose)
      hooks$done()
      skel <- pc.$sk
      unfTriples <- rbind(unfTriples, decode_triples(pc.$unfTripl, p))
      rule <- "none"
      test <- list(kind = "gauss", data = list())
    }
  }
  if (!is.null(unfTriples)) storage.mode(unfTriples) <- "integer"
  # the triple checks are small batches: they run on one GPU, the skeleton's first
  if (!is.null(device)) test$data$devices <- device[1]
  if (rule != "none") test$data$test_handle <- test_handle
  # the skeleton's own sepsets, which no triple check rewrites: Rust makes R's list of them while
  # it orients, and the result carries it (sepsets then comes back NULL)
  sepset_list <- rule == "none" && inherits(sepsets, "externalptr") && !use_sepset_rows(p)
  settings <- list(p = as.integer(p), solve_confl = isTRUE(solve.confl), rule = rule,
                   alpha = if (rule == "none") 0 else as.double(alpha),
                   threads = as.integer(check_threads(numCores)), backend = backend, fallback = isTRUE(fallback),
                   hooks = hooks, sepset_list = sepset_list, sepset_made = if (sepset_list) sepset_made)
  on.exit(hooks$done())
  res <- rs_orient(edges, if (is.null(sepsets)) skel@sepset else sepsets, test$kind, test$data, unfTriples, settings)
  if (!is.null(res$gpu_failed)) gpu_fallback_message(res$gpu_failed, " in the triple checks")
  # checkTriple's disCItest / binCItest calls warn as the skeleton's do
  if (isTRUE(res$small_n[1] > 0))
    warn_small_n_discrete(list(small_n_tests = res$small_n[1], small_n_min = res$small_n[2], n = res$small_n[3]))
  if (nrow(res$pairs) > 0) {
    sepset <- skel@sepset
    pairs <- res$pairs
    for (k in seq_len(nrow(pairs))) {
      sepset[[pairs[k, 1]]][[pairs[k, 2]]] <- res$sep_ac[[k]]
      sepset[[pairs[k, 2]]][[pairs[k, 1]]] <- res$sep_ca[[k]]
    }
    skel@sepset <- sepset
  }
  skel@graph <- pdag_graphnel(res$from, res$to, res$weight, labels, res$directed)
  # set in Rust: R's `@<-` would walk all p^2 cells of the list looking for a cycle
  if (!is.null(res$sepset_list)) {
    skel <- rs_with_sepsets(skel, res$sepset_list)
    sepsets <- NULL
  }
  st <- res$stats
  if (verbose) {
    if (rule != "none")
      cat(sprintf("gpupc: %s rule: %.0f unshielded triples, %.0f tests, %.0f ambiguous (%s%s)\n",
                  rule, st$triples, st$tests, st$ambiguous, st$evaluator,
                  if (isTRUE(st$data_reused)) ", on the skeleton's device data" else ""))
    cat(sprintf("gpupc: orientation: %.0f edges in v-structures, %.0f rounds of rules 1-3\n",
                st$colliders, st$rounds))
  }
  list(pcalgo = skel, info = list(stats = st, phases = unlist(res$phases)), sepsets = sepsets)
}

# How many tests pcalg's checkTriple() runs on the skeleton with edges `edges` (m x 2): every
# subset of adj(a), then of adj(c), for each unshielded triple a - b - c, a < c. Per edge b - a,
# the c that make a triple with it are b's other neighbours not adjacent to a.
triple_tests <- function(edges, p) {
  a <- c(edges[, 1], edges[, 2])
  b <- c(edges[, 2], edges[, 1])
  nb <- split(b, factor(a, levels = seq_len(p)))
  deg <- lengths(nb)
  common <- mapply(function(x, y) sum(nb[[x]] %in% nb[[y]]), a, b)
  sum(2^deg[a] * (deg[b] - 1 - common))
}

# pcalg's triple2numb() codes (k + p (j + p i), 1-based) back to rows (i, j, k).
decode_triples <- function(codes, p) {
  if (!length(codes)) return(NULL)
  k <- (codes - 1) %% p + 1
  r <- (codes - k) / p
  j <- (r - 1) %% p + 1
  cbind((r - j) / p, j, k, deparse.level = 0)
}
