# The undirected graphNEL that pcalg builds with as(G, "graphNEL"), built directly from the edge
# list the Rust core returns: the coercion goes through graphAM and took as long as the whole
# skeleton search at p = 1000.
# tests/testthat/test-graph.R checks that both give identical objects.
undirected_graphnel <- function(edges, labels) {
  # both directions of each edge {i, j} (edges: one row each, 1-based), ordered as which(G,
  # arr.ind = TRUE) would list them after ordering by row, then column
  from <- c(edges[, 1], edges[, 2])
  to <- c(edges[, 2], edges[, 1])
  o <- order(from, to)
  from <- from[o]
  to <- to[o]
  edL <- lapply(split(to, factor(from, levels = seq_along(labels))), function(e) list(edges = e))
  names(edL) <- labels
  # slots set directly: new("graphNEL", edgeL = ) also builds default weights and validates,
  # 90% of the time at p = 10000, and edgeData is replaced below anyway
  g <- new("graphNEL", nodes = labels, edgemode = "undirected")
  g@edgeL <- edL
  keys <- paste(labels[from], labels[to], sep = "|")
  g@edgeData@defaults <- list(weight = 1L)
  g@edgeData@data <- stats::setNames(rep(list(list(weight = 1L)), length(keys)), keys)
  g
}
