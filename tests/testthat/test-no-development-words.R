## The package describes what it does, not how or when it was built: no text in the source tree
## and no file name may name rounds of development, tracker numbers, development bundles or
## paths outside the package (git keeps the history). This test reads the source tree, so it runs
## only where the sources are (a checkout), not from an installed package.

## The patterns are assembled from pieces so that this file does not match them itself.
dev_patterns <- c(
  paste0("\\bsess", "ions? [0-9]"),          # a numbered round of work
  paste0("\\bsess", "ion-[0-9]"),
  paste0("\\biss", "ues? [0-9]+"),           # a tracker number
  paste0("\\bpa", "rt [0-9]+\\b"),           # a numbered part of the work
  paste0("-", "s[0-9]+[a-z]?\\b"),           # a round's tag in a name
  paste0("\\.", "dev-"),                     # a development bundle folder
  paste0("\\.\\./", "shared"),               # paths outside the package
  paste0("/", "work/")
)
dev_name_pattern <- paste0("-", "s[0-9]+[a-z]?(\\.|-|$)")

## Files whose bytes are not text: compressed, serialised or binary.
binary_ext <- "\\.(gz|xz|bz2|zip|tar|tgz|rds|rda|RData|png|jpe?g|gif|pdf|so|o|dll|a|html)$"

scanned_files <- function(root) {
  dirs <- c("R", file.path("src", "rust", "crates"), "tests", "man", "vignettes", "inst")
  top <- c("README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "DESCRIPTION", "NEWS.md")
  files <- unlist(lapply(dirs, function(d) {
    if (dir.exists(file.path(root, d)))
      file.path(d, list.files(file.path(root, d), recursive = TRUE, all.files = TRUE))
  }))
  files <- c(files, top[file.exists(file.path(root, top))])
  # build products and vendored crates are not the package's own text
  skip <- grepl("(^|/)(target|vendor)(/|$)", files) | grepl("^inst/doc/", files) |
    grepl("_files/", files) | grepl("(^|/)\\.", files)
  files[!skip]
}

is_text <- function(path) {
  if (grepl(binary_ext, path, ignore.case = TRUE)) return(FALSE)
  size <- file.size(path)
  if (is.na(size)) return(FALSE)
  head <- readBin(path, "raw", n = min(size, 8000))
  !any(head == as.raw(0))
}

test_that("no text or file name in the sources names how or when the package was developed", {
  root <- source_root()
  skip_if(is.null(root), "the package's source tree is not available")
  files <- scanned_files(root)
  expect_gt(length(files), 50)   # the walk found the tree

  hits <- character(0)
  bad_names <- files[grepl(dev_name_pattern, basename(files), ignore.case = TRUE, perl = TRUE)]
  if (length(bad_names)) hits <- c(hits, paste0(bad_names, ": file name"))

  for (f in files) {
    path <- file.path(root, f)
    if (!is_text(path)) next
    lines <- readLines(path, warn = FALSE, encoding = "bytes")
    for (pat in dev_patterns) {
      at <- which(grepl(pat, lines, ignore.case = TRUE, perl = TRUE, useBytes = TRUE))
      if (length(at)) hits <- c(hits, sprintf("%s:%d: %s", f, at, substr(trimws(lines[at]), 1, 120)))
    }
  }
  hits <- unique(hits)
  expect(length(hits) == 0,
         paste0("development words in the package sources (", length(hits), "):\n",
                paste(hits, collapse = "\n")))
})
