test_that("the graphNEL built directly is identical to pcalg's as(G, 'graphNEL')", {
  for (seed in 1:20) {
    set.seed(seed)
    p <- sample(2:60, 1)
    G <- matrix(FALSE, p, p)
    G[upper.tri(G)] <- runif(p * (p - 1) / 2) < runif(1, 0.02, 0.6)
    G <- G | t(G)
    if (sum(G) == 0) next
    labels <- if (seed %% 2) paste0("X", seq_len(p)) else as.character(seq_len(p))
    want <- G
    colnames(want) <- rownames(want) <- labels
    edges <- which(G & upper.tri(G), arr.ind = TRUE)
    edges <- edges[sample(nrow(edges)), , drop = FALSE]  # any row order gives the same object
    expect_identical(gpupc:::undirected_graphnel(edges, labels), as(want, "graphNEL"), info = paste("seed", seed))
  }
})
