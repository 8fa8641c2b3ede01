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

test_that("labels that are not ASCII give pcalg's graphNEL too", {
  set.seed(5)
  p <- 12
  G <- matrix(FALSE, p, p)
  G[upper.tri(G)] <- runif(p * (p - 1) / 2) < 0.3
  G <- G | t(G)
  for (labels in list(paste0("v\u00e9", seq_len(p)), enc2native(paste0("x\u00fc", seq_len(p))),
                      c(paste0("a", 1:(p - 1)), "\u00df"))) {
    want <- G
    colnames(want) <- rownames(want) <- labels
    edges <- which(G & upper.tri(G), arr.ind = TRUE)
    expect_identical(gpupc:::undirected_graphnel(edges, labels), as(want, "graphNEL"))
  }
})

test_that("the graphNEL's shared pieces change only where they are changed", {
  p <- 6
  G <- matrix(FALSE, p, p)
  G[1, 2] <- G[2, 3] <- TRUE
  G <- G | t(G)
  labels <- LETTERS[1:p]
  want <- G
  colnames(want) <- rownames(want) <- labels
  g <- gpupc:::undirected_graphnel(which(G & upper.tri(G), arr.ind = TRUE), labels)
  h <- g
  names(h@edgeL[[1]])[1] <- "x"
  h@edgeL[[5]]$edges[1] <- 4L
  h@edgeL[[6]][[1]] <- c(h@edgeL[[6]][[1]], 1L)
  expect_identical(names(h@edgeL[[2]]), "edges")
  expect_identical(h@edgeL[[4]]$edges, integer(0))
  expect_identical(h@edgeL[[5]]$edges, 4L)
  expect_identical(g, as(want, "graphNEL"))
  expect_identical(unserialize(serialize(g, NULL)), as(want, "graphNEL"))
})
