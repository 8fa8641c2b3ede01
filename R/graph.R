# The undirected graphNEL that pcalg builds with as(G, "graphNEL"), built directly: the
# coercion goes through graphAM and took as long as the whole skeleton search at p = 1000.
# tests/testthat/test-graph.R checks that both give identical objects.
undirected_graphnel <- function(G, labels) {
  edL <- lapply(seq_len(ncol(G)), function(j) list(edges = unname(which(G[, j]))))
  names(edL) <- labels
  g <- new("graphNEL", nodes = labels, edgeL = edL, edgemode = "undirected")
  w <- which(G, arr.ind = TRUE)
  o <- order(w[, 1], w[, 2])
  keys <- paste(labels[w[o, 1]], labels[w[o, 2]], sep = "|")
  g@edgeData@defaults <- list(weight = 1L)
  g@edgeData@data <- stats::setNames(rep(list(list(weight = 1L)), length(keys)), keys)
  g
}
