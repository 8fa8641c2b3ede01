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
  parts <- graph_parts(from, to, labels)
  g@edgeL <- parts$edgeL
  keys <- parts$keys
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

# The edgeL of a graphNEL (for each node, 1..length(labels), the `to` of its edges in the order
# given, as list(edges = <integer>), named by the labels) and the names of its edgeData
# (paste(labels[from], labels[to], sep = "|"), when `keys`), for integer 1-based `from` and `to`.
# Made in Rust with about two R objects per node and one per edge: split() + lapply() and
# paste() left the same objects after several more, and the collections those set off.
graph_parts <- function(from, to, labels, keys = TRUE) {
  labels <- as.character(labels)
  parts <- rs_graph_parts(as.integer(from), as.integer(to), labels, keys)
  # a label NA or not ASCII: paste() decides the names' encoding
  if (keys && is.null(parts$keys)) parts$keys <- paste(labels[from], labels[to], sep = "|")
  parts
}

# The skeleton's graphNEL from its edges (m x 2, 1-based; pcalg's own object when there are none).
skeleton_graphnel <- function(edges, labels) {
  if (nrow(edges) == 0) new("graphNEL", nodes = labels) else undirected_graphnel(edges, labels)
}
