## Bad input gives an R error whose message names the argument (never a crash), and R
## keeps working: after every error, a valid call succeeds and still equals pcalg.

skip_if(selftest())

bad_gauss <- local({
  set.seed(777)
  g <- pcalg::randomDAG(6, 0.5)
  d <- pcalg::rmvDAG(200, g)
  list(C = stats::cor(d), n = 200L)
})
bad_disc <- local({
  o <- load_disc("sachs", 500)
  dm <- o$dm; dimnames(dm) <- NULL
  list(dm = dm, nlev = o$nlev, adaptDF = FALSE)
})
bad_bin <- local({
  o <- load_disc("asia", 500)
  dm <- o$dm; dimnames(dm) <- NULL
  list(dm = dm, adaptDF = FALSE)
})

FUNS <- c("skeleton", "pc")
METHODS <- c("stable", "stable.fast")

## One valid call after an error: R must still work and give pcalg's answer.
valid_call_works <- function(fun, method, label) {
  f <- under_test(fun)
  ma <- if (fun == "pc") list(skel.method = method) else list(method = method)
  got <- quietly(do.call(f, c(list(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L), ma)))
  want <- quietly(do.call(reference(fun), c(list(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L), ma)))
  expect_same_pcalgo(got, want, 0.05, paste("valid call after", label),
                     strict_type = method == "stable.fast")
}

## Calls gpu_<fun>() with the defaults below replaced by `...`, expects an error matching `.pattern`,
## then checks a valid call.
## (`.pattern` has a dot so that a `p = ` in `...` cannot partially match it.)
expect_arg_error <- function(.pattern, ..., indepTest = pcalg::gaussCItest, suffStat = bad_gauss,
                             alpha = 0.05, label = .pattern) {
  for (fun in FUNS) for (method in METHODS) {
    f <- under_test(fun)
    args <- list(suffStat = suffStat, indepTest = indepTest, alpha = alpha, ...)
    if (is.null(args[["p"]]) && is.null(args[["labels"]]) && !isTRUE(args[[".no_p"]])) args$p <- if (is.matrix(suffStat[["dm"]])) ncol(suffStat[["dm"]]) else 6L
    args[[".no_p"]] <- NULL
    args[[if (fun == "pc") "skel.method" else "method"]] <- method
    lab <- sprintf("%s [%s, %s]", label, fun, method)
    err <- tryCatch({ quietly(do.call(f, args)); NULL }, error = function(e) e)
    if (is.null(err)) {
      fail(sprintf("%s: no error", lab))
    } else {
      expect_match(conditionMessage(err), .pattern, label = lab)
    }
    valid_call_works(fun, method, lab)
  }
}

with_C <- function(C, n = 200L) list(C = C, n = n)

test_that("suffStat$C: not square, not symmetric, outside [-1, 1], wrong size (NA: test-robust.R)", {
  C <- bad_gauss$C
  expect_arg_error("suffStat\\$C", suffStat = with_C(C[, -1]), label = "C not square")
  Ca <- C; Ca[1, 2] <- Ca[1, 2] + 0.3
  expect_arg_error("suffStat\\$C", suffStat = with_C(Ca), label = "C not symmetric")
  Cb <- C; Cb[1, 4] <- Cb[4, 1] <- 1.5
  expect_arg_error("suffStat\\$C", suffStat = with_C(Cb), label = "C outside [-1,1]")
  expect_arg_error("suffStat\\$C|\\bp\\b|labels", suffStat = with_C(C), p = 7L, label = "C smaller than p")
  expect_arg_error("suffStat\\$C", suffStat = list(n = 200L), label = "C missing")
})

test_that("suffStat$n: missing, negative, NA, not one number (n = 0, 10.5, Inf: test-robust.R)", {
  C <- bad_gauss$C
  expect_arg_error("suffStat\\$n", suffStat = list(C = C), label = "n missing")
  expect_arg_error("suffStat\\$n", suffStat = with_C(C, -10), label = "n negative")
  expect_arg_error("suffStat\\$n", suffStat = with_C(C, NA_real_), label = "n NA")
  expect_arg_error("suffStat\\$n", suffStat = with_C(C, c(100, 200)), label = "n of length 2")
})

test_that("labels / p mismatch or missing", {
  expect_arg_error("labels", labels = letters[1:5], p = 6L, label = "labels shorter than p")
  expect_arg_error("labels", .no_p = TRUE, label = "neither labels nor p")
  expect_arg_error("labels", labels = 1:6, label = "labels not character")
  expect_arg_error("\\bp\\b", p = "six", label = "p not a number")
})

test_that("alpha outside (0, 1]", {
  for (a in list(0, -0.1, 1.5, NA_real_, c(0.01, 0.05), "0.05"))
    expect_arg_error("alpha", alpha = a, label = paste("alpha =", deparse(a)))
})

test_that("m.max not a number (negative: test-robust.R)", {
  expect_arg_error("m\\.max", m.max = NA_real_, label = "m.max = NA")
  expect_arg_error("m\\.max", m.max = "two", label = "m.max = 'two'")
})

test_that("fixedGaps / fixedEdges of the wrong size or not symmetric", {
  set.seed(1)
  asym <- matrix(FALSE, 6, 6); asym[1, 2] <- TRUE
  expect_arg_error("fixedGaps", fixedGaps = matrix(FALSE, 5, 5), label = "fixedGaps 5x5")
  expect_arg_error("fixedGaps", fixedGaps = asym, label = "fixedGaps not symmetric")
  expect_arg_error("fixedEdges", fixedEdges = matrix(FALSE, 7, 7), label = "fixedEdges 7x7")
  expect_arg_error("fixedEdges", fixedEdges = asym, label = "fixedEdges not symmetric")
})

test_that("suffStat$dm / suffStat$nlev for disCItest and binCItest", {
  dm <- bad_disc$dm
  sd <- function(dm, nlev = bad_disc$nlev) list(dm = dm, nlev = nlev, adaptDF = FALSE)
  dis <- pcalg::disCItest
  d1 <- dm; d1[3, 2] <- NA
  expect_arg_error("suffStat\\$dm", suffStat = sd(d1), indepTest = dis, label = "dm with NA")
  d2 <- dm; d2[5, 1] <- -1L
  expect_arg_error("suffStat\\$dm", suffStat = sd(d2), indepTest = dis, label = "dm negative code")
  d3 <- dm; storage.mode(d3) <- "double"; d3[7, 4] <- 0.5
  expect_arg_error("suffStat\\$dm", suffStat = sd(d3), indepTest = dis, label = "dm non-integer code")
  d4 <- dm; d4[9, 6] <- bad_disc$nlev[6]
  expect_arg_error("suffStat\\$dm|suffStat\\$nlev", suffStat = sd(d4), indepTest = dis, label = "dm code >= nlev")
  expect_arg_error("suffStat\\$nlev", suffStat = sd(dm, bad_disc$nlev[-1]), indepTest = dis, label = "nlev too short")
  expect_arg_error("suffStat\\$nlev", suffStat = sd(dm, c(bad_disc$nlev, 3L)), indepTest = dis, label = "nlev too long")
  ## a column with 300 levels, with nlev given and with nlev left to be counted from the data
  d5 <- dm; d5[, 2] <- rep_len(0:299, nrow(d5))
  nl5 <- bad_disc$nlev; nl5[2] <- 300L
  expect_arg_error("suffStat\\$dm|suffStat\\$nlev", suffStat = sd(d5, nl5), indepTest = dis, label = "300 levels")
  expect_arg_error("suffStat\\$dm|suffStat\\$nlev", suffStat = list(dm = d5, adaptDF = FALSE),
                   indepTest = dis, label = "300 levels, nlev counted")
  ## binCItest: codes other than 0/1, NA
  b1 <- bad_bin$dm; b1[2, 3] <- 2L
  expect_arg_error("suffStat\\$dm", suffStat = list(dm = b1, adaptDF = FALSE),
                   indepTest = pcalg::binCItest, label = "binCItest with a 2")
  b2 <- bad_bin$dm; b2[2, 3] <- NA
  expect_arg_error("suffStat\\$dm", suffStat = list(dm = b2, adaptDF = FALSE),
                   indepTest = pcalg::binCItest, label = "binCItest with NA")
  ## dm with the wrong number of columns for p
  expect_arg_error("suffStat\\$dm|\\bp\\b|labels", suffStat = sd(dm), p = ncol(dm) + 1L,
                   indepTest = dis, label = "dm columns != p")
})

test_that("indepTest: not a function, an R error inside it, a non-numeric result", {
  expect_arg_error("indepTest", indepTest = "gaussCItest", label = "indepTest a string")
  boom <- function(x, y, S, suffStat) stop("boom-4711 from the user's test")
  expect_arg_error("boom-4711", indepTest = boom, label = "indepTest errors")
  ## the error happens at a later level, after many successful calls
  late <- function(x, y, S, suffStat) {
    if (length(S) >= 1) stop("late-boom-815")
    pcalg::gaussCItest(x, y, S, suffStat)
  }
  dense <- local({ set.seed(3); d <- matrix(rnorm(600), 100, 6); d <- d + d[, 1]; list(C = stats::cor(d), n = 100L) })
  expect_arg_error("late-boom-815", indepTest = late, suffStat = dense, label = "indepTest errors at level 1")
  chr <- function(x, y, S, suffStat) "0.5"
  expect_arg_error("indepTest", indepTest = chr, label = "indepTest returns a string")
})

test_that("the Rust side reports problems as R errors, repeatedly, without harming R", {
  boom <- function(x, y, S, suffStat) stop("boom-again")
  for (k in 1:5) {
    expect_error(quietly(gpupc::gpu_skeleton(bad_gauss, boom, 0.05, p = 6L, method = "stable")), "boom-again")
    expect_error(quietly(gpupc::gpu_pc(bad_gauss, boom, 0.05, p = 6L, skel.method = "stable.fast")), "boom-again")
  }
  valid_call_works("pc", "stable", "five R-side errors")
  valid_call_works("skeleton", "stable.fast", "five R-side errors")
})

test_that("bad u2pd / orientation combinations are errors, as in pcalg", {
  for (method in METHODS) {
    expect_error(gpupc::gpu_pc(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L, skel.method = method,
                               conservative = TRUE, maj.rule = TRUE), "conservative|maj\\.rule")
    expect_error(gpupc::gpu_pc(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L, skel.method = method,
                               u2pd = "rand", conservative = TRUE), "u2pd|relaxed")
    expect_error(gpupc::gpu_pc(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L, skel.method = method,
                               u2pd = "retry", solve.confl = TRUE), "u2pd|relaxed")
    valid_call_works("pc", method, "orientation errors")
  }
})

test_that("after an error, later valid calls run cleanly (nothing printed, no stale state)", {
  ## stdout and stderr (where R prints errors caught inside callbacks) of a valid call
  silent_run <- function(expr) {
    msg <- utils::capture.output(out <- utils::capture.output(val <- expr), type = "message")
    list(val = val, text = c(out, msg))
  }
  boom <- function(x, y, S, suffStat) stop("boom-clean")
  w <- function(x, y, S, suffStat) pcalg::gaussCItest(x, y, S, suffStat)
  for (method in METHODS) {
    expect_error(gpupc::gpu_skeleton(bad_gauss, boom, 0.05, p = 6L, method = method), "boom-clean")
    for (k in 1:2) {
      r <- silent_run(gpupc::gpu_skeleton(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L, method = method))
      expect_identical(r$text, character(0), label = sprintf("output of valid call %d after an indepTest error (%s)", k, method))
      r <- silent_run(gpupc::gpu_skeleton(bad_gauss, w, 0.05, p = 6L, method = method))
      expect_identical(r$text, character(0), label = sprintf("output of valid R-test call %d after an indepTest error (%s)", k, method))
    }
    expect_error(gpupc::gpu_skeleton(bad_gauss, pcalg::gaussCItest, 2, p = 6L, method = method), "alpha")
    r <- silent_run(gpupc::gpu_pc(bad_gauss, pcalg::gaussCItest, 0.05, p = 6L, skel.method = method))
    expect_identical(r$text, character(0), label = sprintf("output of valid gpu_pc call after an alpha error (%s)", method))
  }
})
