# How suffStat$dm reaches Rust: an integer matrix uncopied and unscanned in R (Rust's one pass over
# the codes finds NAs and codes outside 0..254), any other matrix checked and converted in R.

small_dm <- function() {
  set.seed(3)
  x <- sample(0:2, 300, TRUE)
  y <- (x + sample(0:1, 300, TRUE)) %% 3L
  z <- sample(0:1, 300, TRUE)
  cbind(x = x, y = y, z = z)
}

test_that("an NA in an integer dm is an error naming suffStat$dm, with nlev given or counted", {
  dm <- small_dm(); dm[7, 2] <- NA
  for (nlev in list(c(3L, 3L, 2L), NULL)) {
    ss <- list(dm = dm, nlev = nlev, adaptDF = FALSE)
    err <- tryCatch(gpu_skeleton(ss, pcalg::disCItest, alpha = 0.01, labels = colnames(dm), backend = "cpu"),
                    error = function(e) e)
    expect_s3_class(err, "error")
    expect_match(conditionMessage(err), "suffStat\\$dm")
    expect_match(conditionMessage(err), "NA")
  }
})

test_that("an integer dm is not copied on its way to Rust, and all kinds of dm give one result", {
  dm <- small_dm()
  ss <- list(dm = dm, nlev = c(3L, 3L, 2L), adaptDF = FALSE)
  traced <- tryCatch({ tracemem(ss$dm); TRUE }, error = function(e) FALSE)
  skip_if_not(traced, "R built without memory profiling (tracemem)")
  copies <- capture.output(prep <- gpupc:::prepare_test(pcalg::disCItest, ss, ncol(dm)))
  untracemem(ss$dm)
  expect_identical(copies, character(0))
  expect_identical(prep$data$dm, dm)
  want <- gpu_skeleton(ss, pcalg::disCItest, alpha = 0.05, labels = colnames(dm), backend = "cpu")
  for (other in list(`storage.mode<-`(dm, "double"), as.data.frame(dm))) {
    got <- gpu_skeleton(list(dm = other, nlev = c(3L, 3L, 2L), adaptDF = FALSE), pcalg::disCItest,
                        alpha = 0.05, labels = colnames(dm), backend = "cpu")
    expect_identical(got@sepset, want@sepset)
    expect_identical(got@pMax, want@pMax)
    expect_identical(as(got@graph, "matrix"), as(want@graph, "matrix"))
  }
})

test_that("a data frame of factors (bnlearn's form) is read as its levels' codes; mixed columns are refused", {
  set.seed(8)
  n <- 400
  a <- sample(c("lo", "mid", "hi"), n, TRUE)
  b <- ifelse(runif(n) < 0.7, a, sample(c("lo", "mid", "hi"), n, TRUE))
  c <- sample(c("no", "yes"), n, TRUE)
  df <- data.frame(a = factor(a, levels = c("lo", "mid", "hi")), b = factor(b, levels = c("lo", "mid", "hi", "never")),
                   c = factor(c))
  codes <- sapply(df, function(f) as.integer(f) - 1L)
  want <- pcalg::skeleton(list(dm = codes, nlev = c(3L, 4L, 2L), adaptDF = FALSE), pcalg::disCItest, 0.05, labels = names(df))
  got <- gpu_skeleton(list(dm = df, adaptDF = FALSE), pcalg::disCItest, 0.05, labels = names(df), backend = "cpu")
  expect_identical(as(got@graph, "matrix"), as(want@graph, "matrix"))
  expect_identical(got@sepset, want@sepset)
  expect_equal(got@pMax, want@pMax, tolerance = 1e-12)
  # an nlev given is used as given
  got2 <- gpu_skeleton(list(dm = df, nlev = c(3L, 4L, 2L), adaptDF = FALSE), pcalg::disCItest, 0.05, labels = names(df), backend = "cpu")
  expect_identical(got2@pMax, got@pMax)
  mixed <- df
  mixed$c <- as.integer(mixed$c) - 1L
  expect_error(gpu_skeleton(list(dm = mixed, adaptDF = FALSE), pcalg::disCItest, 0.05, labels = names(df), backend = "cpu"),
               "suffStat\\$dm.*factor", class = "gpupc_invalid_argument")
})
