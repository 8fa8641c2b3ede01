## Random inputs for the orientation parity tests (test-orient.R): fake skeletons with random
## sepsets (so colliders, their conflicts and every rule fire) wrapped in pcAlgo objects that
## both pcalg's udag2pdagRelaxed()/pc.cons.intern() and gpupc's orient_pcalgo() take.

orient_labels <- function(p) paste0("V", seq_len(p))

## p variables, about `deg` neighbours each; sepsets for every non-adjacent pair with a common
## neighbour (NULL, integer(0), or random members, each common neighbour in with probability
## 1/2), stored at [[i]][[j]], [[j]][[i]] or both, plus a few for pairs without one.
fake_skeleton <- function(p, deg) {
  labels <- orient_labels(p)
  m <- matrix(FALSE, p, p, dimnames = list(labels, labels))
  up <- which(upper.tri(m))
  m[up[stats::runif(length(up)) < deg / (p - 1)]] <- TRUE
  m <- m | t(m)
  sep <- lapply(seq_len(p), function(.) vector("list", p))
  common <- (m + 0) %*% (m + 0)
  cand <- which(!m & upper.tri(m) & (common > 0 | matrix(stats::runif(p * p) < 0.02, p, p)), arr.ind = TRUE)
  draw <- function(i, j) {
    u <- stats::runif(1)
    if (u < 0.15) return(NULL)
    if (u < 0.3) return(integer(0))
    cn <- which(m[i, ] & m[j, ])
    others <- setdiff(sample.int(p, min(p, 2)), c(i, j))
    s <- c(cn[stats::runif(length(cn)) < 0.5], others[stats::runif(length(others)) < 0.3])
    unique(as.integer(s))
  }
  for (k in seq_len(nrow(cand))) {
    i <- cand[k, 1]; j <- cand[k, 2]
    side <- sample(3, 1)
    if (side != 2) { v <- draw(i, j); if (!is.null(v)) sep[[i]][[j]] <- v }
    if (side != 1) { v <- draw(i, j); if (!is.null(v)) sep[[j]][[i]] <- v }
  }
  new("pcAlgo", graph = as(m, "graphNEL"), call = quote(pc()), n = integer(0), max.ord = 0L,
      n.edgetests = 0, sepset = sep, pMax = matrix(-Inf, p, p), zMin = matrix(NA, 1, 1))
}

## Some unshielded triples (a, b, c) of the skeleton, either end first.
random_unf_triples <- function(sk, k) {
  m <- as(sk@graph, "matrix") != 0
  tr <- NULL
  for (b in which(colSums(m) >= 2)) {
    nb <- which(m[, b])
    pr <- utils::combn(nb, 2)
    pr <- pr[, !m[cbind(pr[1, ], pr[2, ])], drop = FALSE]
    if (ncol(pr)) tr <- rbind(tr, cbind(pr[1, ], b, pr[2, ]))
  }
  if (is.null(tr)) return(NULL)
  tr <- tr[sample.int(nrow(tr), min(k, nrow(tr))), , drop = FALSE]
  flip <- stats::runif(nrow(tr)) < 0.5
  tr[flip, c(1, 3)] <- tr[flip, c(3, 1)]
  unname(tr)
}

## A correlation matrix of n samples of p variables mixed at random, so that p-values of
## conditional tests spread over (0, 1).
random_suffstat <- function(p, n = 40) {
  X <- matrix(stats::rnorm(n * p), n, p) %*% matrix(stats::rnorm(p * p, sd = 0.4), p, p)
  list(C = stats::cor(X), n = n)
}

## A skeleton with at most `max_deg` neighbours per variable (the triple checks test all 2^deg
## subsets of a neighbourhood, as pcalg does): fake_skeleton()'s graph with the edges of
## vertices above the bound dropped (their sepsets stay, as pcalg never reads them).
fake_skeleton_bounded <- function(p, deg, max_deg) {
  sk <- fake_skeleton(p, deg)
  m <- as(sk@graph, "matrix") != 0
  for (v in sample.int(p)) {
    nb <- which(m[v, ])
    if (length(nb) > max_deg) {
      drop <- nb[sample.int(length(nb), length(nb) - max_deg)]
      m[v, drop] <- m[drop, v] <- FALSE
    }
  }
  sk@graph <- as(m, "graphNEL")
  sk
}

## Case sizes: most small, some medium, a few up to 300 variables.
orient_case_p <- function(i) {
  if (i %% 50 == 0) sample(101:300, 1) else if (i %% 7 == 0) sample(31:100, 1) else sample(5:30, 1)
}
