# The sepset slot as compact rows (R/sepset_rows.R), forced at small p with
# options(gpupc.sepset_rows_p = 0): read, written and passed to pcalg's own functions, each must
# act exactly as pcalg's list of lists.

with_rows <- function(expr) {
  old <- options(gpupc.sepset_rows_p = 0)
  on.exit(options(old))
  expr
}

gauss_case <- function(seed, p = 25, n = 300) {
  set.seed(seed)
  g <- pcalg::randomDAG(p, prob = 3 / p)
  X <- pcalg::rmvDAG(n, g)
  list(suffStat = list(C = cor(X), n = n), labels = paste0("V", seq_len(p)), X = X)
}

test_that("compact rows read as pcalg's sepset list, entry by entry, both methods", {
  for (seed in 1:4) for (method in c("stable", "stable.fast")) {
    cs <- gauss_case(seed)
    want <- pcalg::skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, method = method)
    got <- with_rows(gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels,
                                  method = method, backend = "cpu"))
    expect_true(all(vapply(got@sepset, inherits, logical(1), "gpupc_sepset_row")))
    p <- length(cs$labels)
    rows <- lapply(seq_len(p), function(x) {
      r <- got@sepset[[x]]
      list(length(r), lapply(seq_len(p), function(y) r[[y]]), as.list(r), lapply(r, length))
    })
    lists <- lapply(seq_len(p), function(x) {
      r <- want@sepset[[x]]
      list(length(r), lapply(seq_len(p), function(y) r[[y]]), r, lapply(r, length))
    })
    expect_identical(rows, lists)
    expect_identical(as_sepset_list(got), want@sepset)
    expect_identical(as_sepset_list(want), want@sepset)
    expect_error(got@sepset[[1]][[p + 1]], "subscript out of bounds")
  }
})

test_that("writes into compact rows act as writes into pcalg's lists", {
  cs <- gauss_case(5)
  got <- with_rows(gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu"))
  rows <- got@sepset
  lists <- as_sepset_list(got)
  before <- lists
  set.seed(1)
  p <- length(rows)
  values <- list(NULL, integer(0), c(3L, 7L), 2, list("a"), c(1.5, 2))
  for (k in 1:200) {
    x <- sample(p, 1); y <- sample(p, 1); v <- values[[sample(length(values), 1)]]
    if (k %% 5 == 0) {
      rows[[x]][y] <- list(v)
      lists[[x]][y] <- list(v)
    } else {
      rows[[x]][[y]] <- v
      if (is.null(v)) lists[[x]][y] <- list(NULL) else lists[[x]][[y]] <- v
    }
  }
  expect_identical(as_sepset_list(rows), lists)
  expect_identical(rows[[2]][1:3], lists[[2]][1:3])
  # the rows share their empty fields and `p`: the object written from is unchanged
  expect_identical(as_sepset_list(got), before)
})

test_that("pcalg's orientation and triple checks give the same answers on compact rows", {
  for (seed in 6:8) {
    cs <- gauss_case(seed, p = 30)
    want <- pcalg::skeleton(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels)
    got <- with_rows(gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels, backend = "cpu"))
    expect_identical(as(pcalg::udag2pdagRelaxed(got)@graph, "matrix"),
                     as(pcalg::udag2pdagRelaxed(want)@graph, "matrix"))
    for (maj in c(FALSE, TRUE)) {
      a <- pcalg::pc.cons.intern(got, cs$suffStat, pcalg::gaussCItest, 0.05, version.unf = c(2, 1), maj.rule = maj)
      b <- pcalg::pc.cons.intern(want, cs$suffStat, pcalg::gaussCItest, 0.05, version.unf = c(2, 1), maj.rule = maj)
      expect_identical(a$unfTripl, b$unfTripl)
      expect_identical(as_sepset_list(a$sk), b$sk@sepset)
    }
  }
})

test_that("gpu_pc() with compact rows orients as pcalg::pc(), every rule", {
  cs <- gauss_case(9, p = 30)
  for (args in list(list(), list(conservative = TRUE), list(maj.rule = TRUE), list(solve.confl = TRUE))) {
    want <- do.call(pcalg::pc, c(list(cs$suffStat, pcalg::gaussCItest, alpha = 0.05, labels = cs$labels), args))
    got <- with_rows(do.call(gpu_pc, c(list(cs$suffStat, pcalg::gaussCItest, alpha = 0.05, labels = cs$labels,
                                             backend = "cpu"), args)))
    expect_identical(as(got@graph, "matrix"), as(want@graph, "matrix"))
    expect_identical(as_sepset_list(got), want@sepset)
  }
})

test_that("the threshold option is checked and pcalg's lists stay the default at small p", {
  cs <- gauss_case(10)
  sk <- gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu")
  expect_false(inherits(sk@sepset[[1]], "gpupc_sepset_row"))
  old <- options(gpupc.sepset_rows_p = "x")
  on.exit(options(old))
  expect_error(gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.01, labels = cs$labels, backend = "cpu"),
               "gpupc.sepset_rows_p")
})

# The dense levels (the GPU's, and the CPU backend's for gaussCItest) list level 1's
# one-variable sets in idx1/k1 (no R object per set); planned levels list them in idx/sets. Rows
# with every one-variable set moved into idx1/k1 must read, write and orient alike.
to_singles <- function(row) {
  u <- unclass(row)
  one <- lengths(u$sets) == 1L & vapply(u$sets, is.integer, logical(1))
  # rows from the dense levels hold their level-1 sets as idx1 / k1 already
  idx1 <- c(u$idx1, u$idx[one])
  k1 <- c(u$k1, unlist(u$sets[one], use.names = FALSE))
  o <- order(idx1)
  u$idx1 <- as.integer(idx1[o])
  u$k1 <- as.integer(k1[o])
  u$idx <- u$idx[!one]
  u$sets <- u$sets[!one]
  structure(u, class = class(row))
}

test_that("rows with level 1's sets as idx1/k1 read, write and orient as pcalg's lists", {
  for (seed in 11:13) {
    cs <- gauss_case(seed, p = 30)
    want <- pcalg::skeleton(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels)
    got <- with_rows(gpu_skeleton(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels, backend = "cpu"))
    got@sepset <- lapply(got@sepset, to_singles)
    expect_gt(sum(lengths(lapply(got@sepset, function(r) unclass(r)$idx1))), 0)
    p <- length(cs$labels)
    expect_identical(lapply(seq_len(p), function(x) lapply(seq_len(p), function(y) got@sepset[[x]][[y]])), want@sepset)
    expect_identical(as_sepset_list(got), want@sepset)
    o <- gpupc:::orient_pcalgo(got)$pcalgo
    expect_identical(as(o@graph, "matrix"), as(pcalg::udag2pdagRelaxed(want)@graph, "matrix"))
    a <- pcalg::pc.cons.intern(got, cs$suffStat, pcalg::gaussCItest, 0.05, version.unf = c(2, 1))
    b <- pcalg::pc.cons.intern(want, cs$suffStat, pcalg::gaussCItest, 0.05, version.unf = c(2, 1))
    expect_identical(a$unfTripl, b$unfTripl)
    expect_identical(as_sepset_list(a$sk), b$sk@sepset)
    o <- gpupc:::orient_pcalgo(got, cs$suffStat, pcalg::gaussCItest, 0.05, rule = "conservative")$pcalgo
    w <- pcalg::pc(cs$suffStat, pcalg::gaussCItest, 0.05, labels = cs$labels, conservative = TRUE)
    expect_identical(as(o@graph, "matrix"), as(w@graph, "matrix"))
    expect_identical(as_sepset_list(o), w@sepset)
    r <- got@sepset[[3]]
    l <- as.list(r)
    for (y in unclass(r)$idx1[seq_len(min(3, length(unclass(r)$idx1)))]) {
      r[[y]] <- NULL; l[y] <- list(NULL)
    }
    expect_identical(as.list(r), l)
  }
})

test_that("the sepset slot set from Rust is the list R gives, and the object passed in keeps its own", {
  cs <- gauss_case(7)
  p <- length(cs$labels)
  for (compact in c(FALSE, TRUE)) {
    sk <- function() gpupc:::skeleton_impl(quote(f()), cs$suffStat, pcalg::gaussCItest, 0.01, cs$labels, p, "stable", Inf,
                                           NULL, NULL, TRUE, 2, FALSE, "cpu", defer_sepsets = TRUE)
    a <- sk()
    b <- sk()
    before <- a$pcalgo@sepset
    got <- gpupc:::rs_sepsets(a$sepsets, compact, a$pcalgo)
    expect_identical(a$pcalgo@sepset, before)
    expect_identical(got@sepset, gpupc:::rs_sepsets(b$sepsets, compact))
    expect_identical(got@graph, a$pcalgo@graph)
    expect_identical(got@pMax, a$pcalgo@pMax)
    expect_true(validObject(got))
    expect_error(gpupc:::rs_sepsets(a$sepsets, compact, a$pcalgo), "taken already")
  }
  h <- sk()$sepsets
  expect_error(gpupc:::rs_sepsets(h, FALSE, list(1)), "not an S4 object")
})
