## The benchmark runner's suites (bench/, a checkout only: left out of the built package). Each
## suite lists its parts in one single-quoted shell string, so a quote in a part's description
## ends it early, and the runner then knows no part of the suite while still exiting 0.

test_that("every benchmark suite's parts read, as bench/run --dry-run lists them", {
  root <- source_root()
  skip_if(is.null(root) || !dir.exists(file.path(root, "bench", "suites")), "no source tree with bench/ here")
  skip_if(!nzchar(Sys.which("bash")), "no bash")
  suites <- list.dirs(file.path(root, "bench", "suites"), full.names = FALSE, recursive = FALSE)
  expect_gt(length(suites), 0)
  for (s in suites) {
    out <- suppressWarnings(system2("bash", c(shQuote(file.path(root, "bench", "run")), s, "--dry-run"),
                                    stdout = TRUE, stderr = TRUE))
    broken <- grep("syntax error|unbound variable|has no part|command not found|unexpected EOF", out, value = TRUE)
    expect(length(broken) == 0, sprintf("bench/run %s --dry-run: %s", s, paste(broken, collapse = " | ")))
    expect(any(grepl("^  part ", out)), sprintf("bench/run %s --dry-run lists no part", s))
  }
})
