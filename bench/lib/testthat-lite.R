# The package's own tests on a machine without testthat (the GPU machine's portable R carries
# only what gpupc, pcalg and bnlearn need): a stand-in for the part of testthat's API that
# tests/testthat uses, so the tests that skip without a GPU on CI run on the GPU here.
#
#   Rscript bench/lib/testthat-lite.R tests/testthat test-backend.R [test-x.R ...]
#
# Sources the folder's helper-*.R, then each file, every block under test_that(); prints one line
# per failure or skip and a summary. Exit status 1 when an expectation failed or a block errored.
# `testthat::f` in the sources is read as `f`.

.lite <- new.env()
.lite$pass <- 0L; .lite$fail <- 0L; .lite$skip <- 0L; .lite$block <- ""

lite_condition <- function(class, msg) structure(class = c(class, "condition"), list(message = msg, call = NULL))
succeed <- function(...) { .lite$pass <- .lite$pass + 1L; invisible(TRUE) }
fail <- function(message = "failure", ...) {
  .lite$fail <- .lite$fail + 1L
  cat(sprintf("FAIL [%s]: %s\n", .lite$block, message))
  invisible(FALSE)
}
expect <- function(ok, message) if (isTRUE(ok)) succeed() else fail(message)
label_of <- function(x) paste(deparse(x, width.cutoff = 60L)[1], collapse = "")
skip <- function(message = "skipped") stop(lite_condition("lite_skip", message))
skip_if <- function(condition, message = label_of(substitute(condition))) if (isTRUE(condition)) skip(message)
skip_if_not <- function(condition, message = label_of(substitute(condition))) if (!isTRUE(condition)) skip(message)
skip_if_not_installed <- function(pkg, ...) if (!requireNamespace(pkg, quietly = TRUE)) skip(paste(pkg, "is not installed"))
skip_on_cran <- function() invisible()
skip_on_os <- function(os, ...) if (tolower(Sys.info()[["sysname"]]) %in% tolower(os)) skip(paste("on", os))
test_path <- function(...) file.path(.lite$dir, ...)

expect_true <- function(object, info = NULL, label = label_of(substitute(object))) expect(isTRUE(object), paste(label, "is not TRUE", info))
expect_false <- function(object, info = NULL, label = label_of(substitute(object))) expect(isFALSE(object), paste(label, "is not FALSE", info))
expect_null <- function(object, ...) expect(is.null(object), paste(label_of(substitute(object)), "is not NULL"))
expect_identical <- function(object, expected, info = NULL, label = label_of(substitute(object)), ...)
  expect(identical(object, expected), paste(label, "is not identical to", label_of(substitute(expected)), info))
expect_equal <- function(object, expected, tolerance = sqrt(.Machine$double.eps), info = NULL, ..., label = label_of(substitute(object))) {
  eq <- all.equal(expected, object, tolerance = tolerance, ...)
  expect(isTRUE(eq), paste(label, "is not equal to", label_of(substitute(expected)), ":", paste(eq, collapse = "; "), info))
}
expect_setequal <- function(object, expected, ...) expect(setequal(object, expected), paste(label_of(substitute(object)), "and", label_of(substitute(expected)), "differ as sets"))
expect_length <- function(object, n) expect(length(object) == n, sprintf("%s has length %d, not %d", label_of(substitute(object)), length(object), n))
expect_type <- function(object, type) expect(identical(typeof(object), type), sprintf("%s is of type %s, not %s", label_of(substitute(object)), typeof(object), type))
expect_s3_class <- function(object, class, ...) expect(inherits(object, class), paste(label_of(substitute(object)), "does not inherit from", class))
expect_s4_class <- function(object, class, ...) expect(methods::is(object, class), paste(label_of(substitute(object)), "is not an S4", class))
expect_named <- function(object, expected, ...) expect(if (missing(expected)) !is.null(names(object)) else identical(names(object), expected), "names differ")
compare_op <- function(op, name) function(object, expected, ...) {
  expect(isTRUE(op(object, expected)), sprintf("%s (%s) is not %s %s", label_of(substitute(object)), format(object), name, format(expected)))
}
expect_gt <- compare_op(`>`, ">"); expect_gte <- compare_op(`>=`, ">=")
expect_lt <- compare_op(`<`, "<"); expect_lte <- compare_op(`<=`, "<=")
expect_match <- function(object, regexp, ..., all = TRUE, info = NULL, label = label_of(substitute(object))) {
  hit <- grepl(regexp, object, ...)
  expect(length(hit) > 0 && (if (all) all(hit) else any(hit)),
         sprintf("%s does not match /%s/: %s %s", label, regexp, paste(utils::head(object, 3), collapse = " | "), if (is.null(info)) "" else info))
}
# a condition of `kind` from `expr` whose message matches `regexp` and that inherits from `class`
expect_condition_of <- function(kind, expr, regexp, class, label, fixed = FALSE) {
  got <- NULL
  tryCatch(withCallingHandlers(expr,
    warning = function(w) if (kind == "warning" && is.null(got)) got <<- w,
    message = function(m) if (kind == "message" && is.null(got)) got <<- m),
    error = function(e) if (kind == "error") got <<- e else stop(e))
  ok <- !is.null(got) && (is.null(regexp) || grepl(regexp, conditionMessage(got), fixed = fixed)) &&
    (is.null(class) || inherits(got, class))
  expect(ok, sprintf("%s: no %s%s%s (got: %s)", label, kind, if (is.null(regexp)) "" else paste0(" matching /", regexp, "/"),
                     if (is.null(class)) "" else paste0(" of class ", class), if (is.null(got)) "none" else conditionMessage(got)))
}
expect_error <- function(object, regexp = NULL, class = NULL, ..., fixed = FALSE, label = label_of(substitute(object)))
  expect_condition_of("error", object, regexp, class, label, fixed)
expect_warning <- function(object, regexp = NULL, class = NULL, ..., fixed = FALSE, label = label_of(substitute(object)))
  suppressWarnings(expect_condition_of("warning", object, regexp, class, label, fixed))
expect_message <- function(object, regexp = NULL, class = NULL, ..., fixed = FALSE, label = label_of(substitute(object)))
  suppressMessages(expect_condition_of("message", object, regexp, class, label, fixed))
capture_conditions <- function(kind) function(code) {
  got <- character(0)
  muffle <- if (kind == "warning") "muffleWarning" else "muffleMessage"
  withCallingHandlers(code, condition = function(c) if (inherits(c, kind)) { got <<- c(got, conditionMessage(c)); invokeRestart(muffle) })
  got
}
capture_warnings <- capture_conditions("warning")
capture_messages <- capture_conditions("message")
expect_no_error <- function(object, ...) expect(!inherits(try(object, silent = TRUE), "try-error"), "an error")

test_that <- function(desc, code) {
  .lite$block <- desc
  # LITE_VERBOSE=1: each block named as it starts (to find one that hangs)
  if (nzchar(Sys.getenv("LITE_VERBOSE"))) cat(sprintf("%s start [%s]\n", format(Sys.time(), "%H:%M:%S"), desc))
  env <- new.env(parent = .lite$file_env)
  tryCatch(eval(substitute(code), env),
           lite_skip = function(s) { .lite$skip <- .lite$skip + 1L; cat(sprintf("skip [%s]: %s\n", desc, conditionMessage(s))) },
           error = function(e) fail(paste("error:", conditionMessage(e))))
  invisible()
}

source_lite <- function(f, env) {
  text <- gsub("testthat::", "", readLines(f, warn = FALSE), fixed = TRUE)
  exprs <- parse(text = text, keep.source = FALSE)
  for (e in exprs) {
    r <- tryCatch({ eval(e, env); NULL }, lite_skip = function(s) s)
    if (!is.null(r)) { .lite$skip <- .lite$skip + 1L; cat(sprintf("skip [%s]: %s\n", basename(f), conditionMessage(r))); return(invisible()) }
  }
}

if (sys.nframe() == 0L) {
  args <- commandArgs(TRUE)
  .lite$dir <- normalizePath(args[1])
  suppressPackageStartupMessages(library(gpupc))
  # testthat's reproducible output: condition messages are not wrapped at the console's width
  options(cli.width = 1000L, width = 200L)
  helpers <- new.env(parent = globalenv())
  for (h in sort(list.files(.lite$dir, "^helper.*\\.R$", full.names = TRUE))) source_lite(h, helpers)
  for (f in args[-1]) {
    t0 <- Sys.time()
    .lite$file_env <- new.env(parent = helpers)
    before <- c(.lite$pass, .lite$fail, .lite$skip)
    source_lite(file.path(.lite$dir, f), .lite$file_env)
    d <- c(.lite$pass, .lite$fail, .lite$skip) - before
    cat(sprintf("%s: %d passed, %d failed, %d skipped (%.1f s)\n", f, d[1], d[2], d[3], as.numeric(Sys.time() - t0, units = "secs")))
  }
  cat(sprintf("testthat-lite: %d passed, %d failed, %d skipped\n", .lite$pass, .lite$fail, .lite$skip))
  quit(status = if (.lite$fail > 0) 1 else 0)
}
