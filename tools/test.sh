#!/usr/bin/env bash
# The project's test command (the README shows it; .ci/run runs it):
#
#   bash tools/test.sh            # Rust tests, install the package and run its testthat tests, R CMD build
#   bash tools/test.sh --rust     # only (a)
#   bash tools/test.sh --r        # only (b) and (c)
#   bash tools/test.sh --build    # only (d)   (options combine: --r --build runs (b), (c) and (d))
#
# (a) cargo test --offline --locked --workspace in src/rust (every crate: pc-core, pc-cuda, gpupc-r,
#     pcbench; no GPU needed), from the package's own src/rust/vendor.tar.xz: the source replacement is
#     passed with --config, so no ~/.cargo/config.toml and no network are needed;
# (b) R CMD INSTALL of the package (in place) into a temporary library;
# (c) testthat on tests/testthat against that installed package (NOT_CRAN=true: the full suite);
# (d) R CMD build --no-manual on a copy of the package (no .git, no cargo target): builds the source
#     tarball and with it the vignettes (vignettes/benchmark.Rmd reads the committed CSVs in
#     inst/extdata/bench; no GPU, no benchmark run). R CMD build installs the package once more, in
#     a temporary directory of its own; src/Makevars unpacks the vendored crates there, at a new
#     path each time, and cargo then rebuilds them: that build has its own target directory,
#     $GPUPC_CARGO_TARGET_DIR/r-cmd-build, so that (b)'s stays incremental.
# The builds use the target directory $GPUPC_CARGO_TARGET_DIR (default src/rust/target/vendored),
# (configure's default too), kept between runs for incremental builds and apart from plain `cargo build`s
# in src/rust/target, which read the crates from another path (cargo rebuilds all dependencies when that
# path changes).
# Exits non-zero when any step fails or any test fails; the last line is "N passed, N failed, N skipped"
# (cargo's tests plus testthat's expectations; cargo's ignored tests count as skipped).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:$HOME/.cargo/bin"
export NOT_CRAN=true

do_rust=1; do_r=1; do_build=1; picked=""
for a in "$@"; do
  case "$a" in
    --rust|--r|--build) picked="$picked ${a#--}" ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
if [ -n "$picked" ]; then  # only the steps asked for
  do_rust=0; do_r=0; do_build=0
  for p in $picked; do case "$p" in rust) do_rust=1 ;; r) do_r=1 ;; build) do_build=1 ;; esac; done
fi

passed=0; failed=0; skipped=0; status=0
summary=()
step_failed() { # a step failed without a test count to show for it: count it as one failure
  echo "test.sh: FAILED: $1" >&2
  summary+=("$1: FAILED"); failed=$((failed + 1)); status=1
}

work=$(mktemp -d "${TMPDIR:-/tmp}/gpupc-test.XXXXXX")
trap 'rm -rf "$work"' EXIT

R_HOME_DIR=$(R RHOME)
export R_HOME="$R_HOME_DIR"
# The value R CMD INSTALL gives extendr-ffi's build script, so cargo does not rebuild it when both run.
R_INCLUDE_DIR=$("$R_HOME_DIR/bin/Rscript" --vanilla -e 'cat(R.home("include"))')
export R_INCLUDE_DIR
export LD_LIBRARY_PATH="$R_HOME_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUPC_CARGO_TARGET_DIR="${GPUPC_CARGO_TARGET_DIR:-$root/src/rust/target/vendored}"
mkdir -p "$GPUPC_CARGO_TARGET_DIR"

# ------------------------------------------------------------------------------------------------
# (a) cargo tests, offline, from the package's own vendored crates
if [ "$do_rust" = 1 ]; then
  echo "== (a) cargo test --offline --locked --workspace (src/rust)"
  if ! command -v cargo >/dev/null; then
    step_failed "cargo not found (install Rust >= 1.77: https://rustup.rs)"
  else
    echo "using $(cargo --version) / $(rustc --version)"
    # the crates, unpacked at a fixed path (so cargo's fingerprints stay valid between runs)
    vend="$GPUPC_CARGO_TARGET_DIR/vendor"
    if [ ! -f "$vend/.vendor-stamp" ] || [ "$root/src/rust/vendor.tar.xz" -nt "$vend/.vendor-stamp" ]; then
      echo "unpacking src/rust/vendor.tar.xz into $vend"
      rm -rf "$vend" && tar -xJf "$root/src/rust/vendor.tar.xz" -C "$GPUPC_CARGO_TARGET_DIR" \
        && touch "$vend/.vendor-stamp" || step_failed "unpacking src/rust/vendor.tar.xz"
    fi
    log="$work/cargo-test.log"
    (cd src/rust && cargo test --offline --locked --workspace --no-fail-fast \
        --target-dir "$GPUPC_CARGO_TARGET_DIR" \
        --config 'source.crates-io.replace-with="vendored-sources"' \
        --config "source.vendored-sources.directory=\"$vend\"" 2>&1) | tee "$log"
    rc=${PIPESTATUS[0]}
    # "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s"
    read -r cp cf ci < <(awk '/^test result: /{
        for (i = 1; i <= NF; i++) { v = $i; sub(/;$/, "", $(i+1));
          if ($(i+1) == "passed") p += v; else if ($(i+1) == "failed") f += v; else if ($(i+1) == "ignored") g += v }
      } END { print p + 0, f + 0, g + 0 }' "$log")
    passed=$((passed + cp)); failed=$((failed + cf)); skipped=$((skipped + ci))
    summary+=("cargo test: $cp passed, $cf failed, $ci ignored")
    if [ "$rc" -ne 0 ]; then
      status=1
      [ "$cf" -gt 0 ] || step_failed "cargo test (exit $rc, see above)"
    fi
  fi
fi

# ------------------------------------------------------------------------------------------------
# (b) install the package into a temporary library, (c) run testthat against it
if [ "$do_r" = 1 ]; then
  lib="$work/lib"; mkdir -p "$lib"
  echo "== (b) R CMD INSTALL . (into a temporary library)"
  if ! "$R_HOME_DIR/bin/R" CMD INSTALL --no-multiarch -l "$lib" . ; then
    step_failed "R CMD INSTALL"
  else
    echo "== (c) testthat: tests/testthat against the installed package"
    counts="$work/testthat-counts"
    R_LIBS="$lib${R_LIBS:+:$R_LIBS}" "$R_HOME_DIR/bin/Rscript" --vanilla - "$counts" <<'RCODE'
counts_file <- commandArgs(TRUE)[1]
write_counts <- function(p, f, s) writeLines(sprintf("%d %d %d", p, f, s), counts_file)
write_counts(0L, 1L, 0L)   # until the tests have run: a crash counts as a failure
suppressPackageStartupMessages(library(testthat))
if (!requireNamespace("gpupc", quietly = TRUE)) stop("gpupc is not installed in ", .libPaths()[1])
files <- list.files("tests/testthat", pattern = "^test.*\\.[rR]$")
if (length(files) == 0L) {
  cat("no test files in tests/testthat\n")
  write_counts(0L, 0L, 0L)
} else {
  # on a terminal the live progress table; in a log (CI) dots per test file, then every problem
  reporter <- if (isatty(stdout())) testthat::ProgressReporter$new(show_praise = FALSE) else
    testthat::SummaryReporter$new(show_praise = FALSE, max_reports = Inf)
  res <- testthat::test_dir("tests/testthat", package = "gpupc", load_package = "installed",
                            reporter = reporter,
                            stop_on_failure = FALSE, stop_on_warning = FALSE)
  kinds <- unlist(lapply(res, function(t) vapply(t$results, function(e) {
    if (inherits(e, "expectation_error")) "error"
    else if (inherits(e, "expectation_failure")) "failure"
    else if (inherits(e, "expectation_skip")) "skip"
    else if (inherits(e, "expectation_warning")) "warning"
    else if (inherits(e, "expectation_success")) "success"
    else "other"
  }, character(1))))
  n <- function(k) sum(kinds %in% k)
  cat(sprintf("testthat: %d passed, %d failed, %d errors, %d skipped, %d warnings\n",
              n("success"), n("failure"), n("error"), n("skip"), n("warning")))
  write_counts(n("success"), n(c("failure", "error")), n("skip"))
}
RCODE
    rc=$?
    read -r tp tf ts < "$counts" 2>/dev/null || { tp=0; tf=1; ts=0; }
    passed=$((passed + tp)); failed=$((failed + tf)); skipped=$((skipped + ts))
    summary+=("testthat: $tp passed, $tf failed, $ts skipped")
    if [ "$rc" -ne 0 ] || [ "$tf" -gt 0 ]; then status=1; fi
    if [ "$rc" -ne 0 ] && [ "$tf" -eq 0 ]; then step_failed "testthat run (exit $rc)"; fi
  fi
fi

# ------------------------------------------------------------------------------------------------
# (d) R CMD build: the source tarball, with the vignettes built from the committed benchmark CSVs
if [ "$do_build" = 1 ]; then
  # R CMD build copies the whole directory (cp -R) before it applies .Rbuildignore: give it a copy
  # without the cargo target, .git and the R bundle.
  copy="$work/build-src/gpupc"
  mkdir -p "$copy"
  tar -C "$root" --exclude=./.git --exclude=./src/rust/target --exclude=./src/rust/vendor \
      --exclude=./src/rust/.cargo --exclude=./.rbundle --exclude=./.devbin --exclude=./.whl \
      --exclude='./*.Rcheck' --exclude='./gpupc_*.tar.gz' -cf - . | tar -C "$copy" -xf -
  # Its installation unpacks the vendored crates under a fresh temporary path, which cargo treats as
  # new sources: it has its own target directory, so that (b)'s stays incremental.
  btarget="$GPUPC_CARGO_TARGET_DIR/r-cmd-build"
  echo "== (d) R CMD build --no-manual (builds the vignettes; cargo target $btarget)"
  blog="$work/build.log"
  if ! (cd "$work" && GPUPC_CARGO_TARGET_DIR="$btarget" "$R_HOME_DIR/bin/R" CMD build --no-manual "$copy" 2>&1) | tee "$blog"; then
    step_failed "R CMD build (see above)"
  else
    tarball=$(ls "$work"/gpupc_*.tar.gz 2>/dev/null | head -1)
    if [ -z "$tarball" ]; then
      step_failed "R CMD build wrote no tarball"
    else
      tar -tzf "$tarball" > "$work/tarball-files"
      if ! grep -qx 'gpupc/inst/doc/benchmark.html' "$work/tarball-files"; then
        step_failed "R CMD build: the tarball has no inst/doc/benchmark.html (vignette not built)"
      else
        echo "built $(basename "$tarball") ($(du -h "$tarball" | cut -f1)), with inst/doc/benchmark.html"
        summary+=("R CMD build: ok (vignettes built)")
      fi
    fi
  fi
fi

echo "== summary"
for s in "${summary[@]}"; do echo "  $s"; done
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
