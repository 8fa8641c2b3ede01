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
  g <- empty_graphnel(labels, "undirected")
  g@edgeL <- edge_lists(from, to, labels)
  keys <- paste(labels[from], labels[to], sep = "|")
  g@edgeData@defaults <- list(weight = 1L)
  g@edgeData@data <- stats::setNames(rep(list(list(weight = 1L)), length(keys)), keys)
  g
}

# An edgeless graphNEL with these nodes: slots set on an empty one, since new("graphNEL", nodes =
# ) validates every name (0.08 s at p = 20000) and new("graphNEL", edgeL = ) re-derives and
# re-validates every edge as well (90% of the time at p = 10000). The labels were checked
# before (R/checks.R), as pcalg's own coercion would reject them.
empty_graphnel <- function(labels, edgemode) {
  g <- new("graphNEL", edgemode = edgemode)
  g@nodes <- labels
  g
}

# The edgeL of a graphNEL: for each node (1..length(labels)) the `to` of its edges, in the order
# given; `from` is integer 1-based. The factor is built from the codes directly: factor() would
# match every value against the levels as strings.
edge_lists <- function(from, to, labels) {
  codes <- structure(as.integer(from), levels = as.character(seq_along(labels)), class = "factor")
  edL <- lapply(split(to, codes), function(e) list(edges = e))
  names(edL) <- labels
  edL
}

# The skeleton's graphNEL from its edges (m x 2, 1-based; pcalg's own object when there are none).
skeleton_graphnel <- function(edges, labels) {
  if (nrow(edges) == 0) new("graphNEL", nodes = labels) else undirected_graphnel(edges, labels)
}
