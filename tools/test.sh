#!/usr/bin/env bash
# The project's test command (the README shows it; .ci/run runs it, then its extended mode):
#
#   bash tools/test.sh              # (a) Rust tests, (b) R CMD build, (c) R CMD check --as-cran, (d)
#   bash tools/test.sh --extended   # (e) the long sweeps in full and (f) a CRAN-style install
#   bash tools/test.sh --rust       # only (a)
#   bash tools/test.sh --r          # only (b), (c) and (d)   (options combine: --r --extended)
#
# (a) cargo test --offline --locked --workspace in src/rust (every crate: pc-core, pc-cmiknn, pc-cuda,
#     pc-jtree, gpupc-r, pcbench; no GPU needed), from the package's own src/rust/vendor.tar.xz: the
#     source replacement is passed with --config, so no ~/.cargo/config.toml and no network are
#     needed. Debug assertions and overflow checks stay on; pc-core alone is optimised, since its
#     G^2 tests dominate pc-cuda's round-by-round comparisons (minutes unoptimised), and the debug
#     info is line tables only (backtraces keep file:line; compiling and linking take half the time).
#     With the R steps it runs beside them at the lowest priority (nice): it takes the core that
#     R CMD build's and R CMD check's single-threaded phases leave idle and hardly slows them.
# (b) R CMD build --no-manual of a copy of the package (no .git, no cargo target): the source tarball
#     gpupc_<version>.tar.gz, here, with the vignettes built (R CMD build installs the package once,
#     in a temporary directory, to build them).
# (c) R CMD check --as-cran --no-manual --no-build-vignettes on that tarball, in gpupc.Rcheck here:
#     installs it (the Rust library comes from (b)'s cargo build: both installs share the target
#     directory, and the vendored crates are unpacked at the same path in it, see configure), runs
#     the examples, the testthat suite (tests/testthat.R, with NOT_CRAN=true so nothing is skipped
#     as on CRAN) and the vignettes' code, under CRAN's core limits (_R_CHECK_LIMIT_CORES_,
#     OMP_THREAD_LIMIT=2: gpupc's default thread count follows them). A check ERROR or WARNING fails
#     this command, and so does a NOTE that cran-comments.md does not explain (it must quote the
#     line "checking ... NOTE"). No PDF manual (no LaTeX needed; R CMD build --no-manual alike);
#     the vignettes are not built a second time: (b) built them from the same sources a minute
#     before.
# (d) the test files that read the package's source tree (no-development-words, source-tree-bench: the
#     benchmark suites' part lists; under R CMD check
#     they skip, its copy of the tests has no sources beside it), against the package (c) installed.
# (e) --extended: the sweeps of tests/testthat (the files that call sweep_cases() or extended_mode(),
#     see helper-extended.R) with GPUPC_EXTENDED=true: the cases after the first part that (c)
#     ran, and the long cases only this mode runs; against the package (c) installed, when
#     gpupc.Rcheck was checked from these very sources (else (b) and (c) run first).
# (f) --extended: R CMD INSTALL of the tarball as CRAN would (no GPUPC_* or NOT_CRAN variables: the
#     crates unpacked and built inside the package's temporary copy, offline, the target removed),
#     then one gpu_pc() call against pc(); beside (e).
# The builds use the target directory $GPUPC_CARGO_TARGET_DIR (default src/rust/target/vendored,
# configure's default too), kept between runs for incremental builds and apart from plain `cargo
# build`s in src/rust/target, which read the crates from another path (cargo rebuilds all
# dependencies when that path changes).
# Exits non-zero when any step fails or any test fails; the last line is "N passed, N failed, N skipped"
# (cargo's tests plus testthat's expectations; cargo's ignored tests count as skipped).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PATH="$PATH:$HOME/.cargo/bin"
export NOT_CRAN=true

do_rust=0; do_r=0; do_ext=0; picked=0
for a in "$@"; do
  case "$a" in
    --rust) do_rust=1; picked=1 ;;
    --r) do_r=1; picked=1 ;;
    --extended) do_ext=1; picked=1 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "test.sh: unknown option $a" >&2; exit 2 ;;
  esac
done
if [ "$picked" = 0 ]; then do_rust=1; do_r=1; fi

passed=0; failed=0; skipped=0; status=0
summary=()
step_failed() { # a step failed without a test count to show for it: count it as one failure
  echo "test.sh: FAILED: $1" >&2
  summary+=("$1: FAILED"); failed=$((failed + 1)); status=1
}
add_counts() { # label passed failed skipped [extra words for the summary]
  passed=$((passed + $2)); failed=$((failed + $3)); skipped=$((skipped + $4))
  summary+=("$1: $2 passed, $3 failed, $4 skipped${5:+ $5}")
  [ "$3" -eq 0 ] || status=1
}
t0=$(date +%s)
elapsed() { local s=$(( $(date +%s) - $1 )); printf '%dm%02ds' $((s / 60)) $((s % 60)); }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpupc-test.XXXXXX")
cleanup() { # the jobs this script left running (a cargo test or an install beside R)
  local p
  for p in $(jobs -p); do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

R_HOME_DIR=$(R RHOME)
export R_HOME="$R_HOME_DIR"
R="$R_HOME_DIR/bin/R"
RSCRIPT="$R_HOME_DIR/bin/Rscript"
# The value R CMD INSTALL gives extendr-ffi's build script, so cargo does not rebuild it when both run.
R_INCLUDE_DIR=$("$RSCRIPT" --vanilla -e 'cat(R.home("include"))')
export R_INCLUDE_DIR
export LD_LIBRARY_PATH="$R_HOME_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPUPC_CARGO_TARGET_DIR="${GPUPC_CARGO_TARGET_DIR:-$root/src/rust/target/vendored}"
mkdir -p "$GPUPC_CARGO_TARGET_DIR"

version=$(sed -n 's/^Version: *//p' DESCRIPTION)
tarball="$root/gpupc_${version}.tar.gz"
checkdir="$root/gpupc.Rcheck"
# What (c) checked, so that (e) knows whether gpupc.Rcheck holds these sources: the checksums of
# every file git tracks or would track (content, not times).
sources_id() {
  if git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    git -C "$root" ls-files -z -co --exclude-standard | (cd "$root" && xargs -0 cksum 2>/dev/null) | cksum
  else
    echo "no-git-$(date +%s%N)"   # outside a checkout: never the same, so (e) always rebuilds
  fi
}

# testthat on tests/testthat against the gpupc installed in $1 (prepended to R_LIBS): files matching
# the regular expression $3 (empty: all); writes "passed failed skipped" to $2. Extra environment
# (GPUPC_EXTENDED) comes from the caller.
run_testthat() {
  R_LIBS="$1${R_LIBS:+:$R_LIBS}" "$RSCRIPT" --vanilla - "$2" "$3" <<'RCODE'
args <- commandArgs(TRUE)
counts_file <- args[1]
filter <- if (length(args) >= 2 && nzchar(args[2])) args[2] else NULL
write_counts <- function(p, f, s) writeLines(sprintf("%d %d %d", p, f, s), counts_file)
write_counts(0L, 1L, 0L)   # until the tests have run: a crash counts as a failure
suppressPackageStartupMessages(library(testthat))
if (!requireNamespace("gpupc", quietly = TRUE)) stop("gpupc is not installed in ", .libPaths()[1])
# on a terminal the live progress table; in a log (CI) dots per test file, then every problem
reporter <- if (isatty(stdout())) testthat::ProgressReporter$new(show_praise = FALSE) else
  testthat::SummaryReporter$new(show_praise = FALSE, max_reports = Inf)
res <- testthat::test_dir("tests/testthat", filter = filter, package = "gpupc", load_package = "installed",
                          reporter = reporter, stop_on_failure = FALSE, stop_on_warning = FALSE)
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
RCODE
}

# Adds a testthat run's counts (file $2) to the totals, under label $1; $3 is the run's exit status.
count_testthat() {
  local tp tf ts
  read -r tp tf ts < "$2" 2>/dev/null || { tp=0; tf=1; ts=0; }
  add_counts "$1" "$tp" "$tf" "$ts"
  if [ "$3" -ne 0 ] && [ "$tf" -eq 0 ]; then step_failed "$1 (exit $3)"; fi
}

# ------------------------------------------------------------------------------------------------
# (a) cargo tests, offline, from the package's own vendored crates
cargo_log="$work/cargo-test.log"
cargo_rc="$work/cargo-test.rc"
# The crates where src/Makevars unpacks them for this target directory (see configure), so both
# share one copy; the name follows the archive's bytes. Unpacked before anything runs beside it,
# in the same way as src/Makevars does (a directory with its stamp is complete).
vendor_dir() {
  echo "$GPUPC_CARGO_TARGET_DIR/vendor-$(cksum < "$root/src/rust/vendor.tar.xz" | awk '{ print $1 "-" $2 }')"
}
unpack_vendor() {
  local vend tmp
  vend=$(vendor_dir); tmp="$vend.tmp$$"
  [ -f "$vend/.vendor-stamp" ] && return 0
  echo "unpacking src/rust/vendor.tar.xz into $vend"
  rm -rf "$tmp" && mkdir -p "$tmp" && tar -xJf "$root/src/rust/vendor.tar.xz" -C "$tmp" &&
    touch "$tmp/vendor/.vendor-stamp" || { rm -rf "$tmp"; return 1; }
  [ -f "$vend/.vendor-stamp" ] || rm -rf "$vend"
  [ -d "$vend" ] || mv "$tmp/vendor" "$vend"
  rm -rf "$tmp"
  [ -f "$vend/.vendor-stamp" ]
}
run_cargo_tests() {
  echo "using $(cargo --version) / $(rustc --version)"
  local vend
  vend=$(vendor_dir)
  (cd "$root/src/rust" && cargo test --offline --locked --workspace --no-fail-fast \
      --target-dir "$GPUPC_CARGO_TARGET_DIR" \
      --config 'source.crates-io.replace-with="vendored-sources"' \
      --config "source.vendored-sources.directory=\"$vend\"" \
      --config 'profile.dev.package.pc-core.opt-level=2' \
      --config 'profile.dev.debug="line-tables-only"' 2>&1)
}
count_cargo_tests() {
  local rc cp cf ci
  rc=$(cat "$cargo_rc" 2>/dev/null || echo 1)
  # "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s"
  read -r cp cf ci < <(awk '/^test result: /{
      for (i = 1; i <= NF; i++) { v = $i; sub(/;$/, "", $(i+1));
        if ($(i+1) == "passed") p += v; else if ($(i+1) == "failed") f += v; else if ($(i+1) == "ignored") g += v }
    } END { print p + 0, f + 0, g + 0 }' "$cargo_log")
  add_counts "(a) cargo test" "$cp" "$cf" "$ci" "($(( $(cat "$work/cargo-test.end" 2>/dev/null || date +%s) - cargo_t0 ))s$1)"
  if [ "$rc" -ne 0 ] && [ "$cf" -eq 0 ]; then step_failed "(a) cargo test (exit $rc, see its log)"; fi
}
cargo_pid=""
start_cargo_tests() { # $1 = fg: in the foreground, with its output; bg: into its log, shown later
  cargo_t0=$(date +%s)
  if ! command -v cargo >/dev/null; then
    step_failed "(a) cargo not found (install Rust >= 1.77: https://rustup.rs)"
    return
  fi
  if [ "$1" = fg ]; then
    echo "== (a) cargo test --offline --locked --workspace (src/rust)"
  else
    echo "== (a) cargo test --offline --locked --workspace (src/rust): beside (b) to (d), at the lowest priority; its log follows (d)"
  fi
  if ! unpack_vendor; then step_failed "(a) unpacking src/rust/vendor.tar.xz"; return; fi
  if [ "$1" = fg ]; then
    run_cargo_tests | tee "$cargo_log"; echo "${PIPESTATUS[0]}" > "$cargo_rc"; date +%s > "$work/cargo-test.end"
    count_cargo_tests ""
  else
    { renice -n 19 -p $BASHPID >/dev/null 2>&1; run_cargo_tests > "$cargo_log" 2>&1; echo $? > "$cargo_rc"
      date +%s > "$work/cargo-test.end"; } &
    cargo_pid=$!
  fi
}
finish_cargo_tests() {
  wait "$cargo_pid"
  echo "== (a) cargo test: its log"
  cat "$cargo_log"
  count_cargo_tests ", beside (b) to (d)"
}

# ------------------------------------------------------------------------------------------------
# (b) R CMD build: the source tarball, with the vignettes built
build_tarball() {
  local t copy blog
  t=$(date +%s)
  # R CMD build copies the whole directory (cp -R) before it applies .Rbuildignore: give it a copy
  # without the cargo target, .git, earlier tarballs and checks.
  copy="$work/build-src/gpupc"
  mkdir -p "$copy"
  tar -C "$root" --exclude=./.git --exclude=./src/rust/target --exclude=./src/rust/vendor \
      --exclude=./src/rust/.cargo --exclude=./.rbundle --exclude=./.devbin --exclude=./.whl \
      --exclude='./*.Rcheck' --exclude='./gpupc_*.tar.gz' -cf - . | tar -C "$copy" -xf -
  sources_id > "$work/sources-id"
  rm -f "$tarball"
  echo "== (b) R CMD build --no-manual (builds the vignettes; cargo target $GPUPC_CARGO_TARGET_DIR)"
  blog="$work/build.log"
  if ! (cd "$root" && "$R" CMD build --no-manual "$copy" 2>&1) | tee "$blog"; then
    step_failed "(b) R CMD build (see above)"; return 1
  fi
  if [ ! -f "$tarball" ]; then step_failed "(b) R CMD build wrote no $(basename "$tarball")"; return 1; fi
  tar -tzf "$tarball" > "$work/tarball-files"   # (not piped into grep -q: pipefail and SIGPIPE)
  local v
  for v in vignettes/*.Rmd; do
    v=$(basename "$v" .Rmd)
    if ! grep -qx "gpupc/inst/doc/$v.html" "$work/tarball-files"; then
      step_failed "(b) R CMD build: the tarball has no inst/doc/$v.html (vignette not built)"; return 1
    fi
  done
  summary+=("(b) R CMD build: ok, $(basename "$tarball") ($(du -h "$tarball" | cut -f1)) with its vignettes ($(elapsed "$t"))")
}

# ------------------------------------------------------------------------------------------------
# (c) R CMD check --as-cran on the tarball, with the testthat suite
check_tarball() {
  local t missing
  t=$(date +%s)
  rm -rf "$checkdir"
  # Suggests that are not installed would stop the check; it then runs without them (their tests
  # skip) and says so
  missing=$("$RSCRIPT" --vanilla -e '
    d <- read.dcf("DESCRIPTION", "Suggests")[1, 1]
    p <- trimws(sub("\\(.*", "", strsplit(gsub("\n", " ", d), ",")[[1]]))
    p <- p[nzchar(p)]
    cat(p[!nzchar(vapply(p, function(x) system.file(package = x), ""))])' 2>/dev/null)
  local force=true
  if [ -n "$missing" ]; then
    echo "test.sh: Suggests not installed, checked without them: $missing" >&2
    force=false
  fi
  echo "== (c) R CMD check --as-cran --no-manual --no-build-vignettes $(basename "$tarball")"
  # _R_CHECK_CRAN_INCOMING_REMOTE_ / _R_CHECK_SYSTEM_CLOCK_: no network here (CRAN's database and
  # the clock of a time server; the file times are checked against this machine's clock).
  # _R_CHECK_TESTS_NLINES_=0: all of a failing test run's output (testthat's check reporter: the
  # problems only) in the log above, not its last 13 lines.
  (cd "$root" && env NOT_CRAN=true \
      _R_CHECK_CRAN_INCOMING_REMOTE_=false _R_CHECK_SYSTEM_CLOCK_=FALSE \
      _R_CHECK_LIMIT_CORES_=TRUE OMP_THREAD_LIMIT=2 \
      _R_CHECK_FORCE_SUGGESTS_=$force _R_CHECK_TESTS_NLINES_=0 \
      "$R" CMD check --as-cran --no-manual --no-build-vignettes "$tarball" 2>&1)
  local rc=$? log="$checkdir/00check.log"
  [ -d "$checkdir/gpupc" ] && sources_id_of_build > "$checkdir/gpupc-sources.id"
  if [ ! -f "$log" ]; then step_failed "(c) R CMD check wrote no 00check.log (exit $rc)"; return 1; fi

  # the testthat run inside the check: its summary "[ FAIL 0 | WARN 5 | SKIP 2 | PASS 3000 ]"
  local rout="$checkdir/tests/testthat.Rout" tp=0 tf=0 ts=0 tests_result
  [ -f "$rout" ] || rout="$checkdir/tests/testthat.Rout.fail"
  if [ -f "$rout" ] && grep -q '^\[ FAIL [0-9]* | WARN [0-9]* | SKIP [0-9]* | PASS [0-9]* \]' "$rout"; then
    read -r tf ts tp < <(grep '^\[ FAIL [0-9]* | WARN [0-9]* | SKIP [0-9]* | PASS [0-9]* \]' "$rout" | tail -1 |
                          awk '{ print $3, $9, $12 }')
  fi
  tests_result=$(grep -E '^\* checking tests \.\.\.' -A3 "$log" | grep -oE '(OK|NOTE|WARNING|ERROR)$' | head -1)
  if [ "$tests_result" = ERROR ] && [ "$tf" -eq 0 ]; then tf=1; fi   # crashed before its summary
  add_counts "(c) testthat in R CMD check" "$tp" "$tf" "$ts"

  # every finding: "* checking X ... NOTE", or a result on the line after a long header
  local findings n_err=0 n_warn=0 n_note=0 unexplained=0 what res
  findings=$(awk '/^\* /{ h = $0 } /^\* .* (NOTE|WARNING|ERROR)$/ || /^ *(NOTE|WARNING|ERROR)$/ {
      r = $NF; sub(/ \.\.\..*$/, "", h); print r "\t" h }' "$log")
  while IFS=$'\t' read -r res what; do
    [ -n "$res" ] || continue
    what=${what#\* }
    case "$res" in
      ERROR) [ "$what" = "checking tests" ] || { n_err=$((n_err + 1)); step_failed "(c) R CMD check ERROR: $what"; } ;;
      WARNING) n_warn=$((n_warn + 1)); step_failed "(c) R CMD check WARNING: $what" ;;
      NOTE) n_note=$((n_note + 1))
        if ! grep -qF "$what ... NOTE" cran-comments.md 2>/dev/null; then
          unexplained=$((unexplained + 1))
          step_failed "(c) R CMD check NOTE not explained in cran-comments.md: $what"
        fi ;;
    esac
  done <<< "$findings"
  [ "$tests_result" = ERROR ] && n_err=$((n_err + 1))
  summary+=("(c) R CMD check --as-cran: $n_err errors, $n_warn warnings, $n_note notes ($((n_note - unexplained)) explained in cran-comments.md): $(grep '^Status:' "$log") ($(elapsed "$t"))")
  if [ "$rc" -ne 0 ] && [ "$n_err" -eq 0 ]; then step_failed "(c) R CMD check (exit $rc)"; fi
}
# The sources (b) copied, recorded when (c) has installed the package they built.
sources_id_of_build() { cat "$work/sources-id"; }

# ------------------------------------------------------------------------------------------------
# (d) the tests that read the source tree, against the package R CMD check installed
source_tree_tests() {
  local t=$(date +%s) counts="$work/source-tree-counts"
  echo "== (d) testthat: the tests that read the source tree (no-development-words, source-tree-bench)"
  NOT_CRAN=true run_testthat "$checkdir" "$counts" "no-development-words|source-tree-bench"
  count_testthat "(d) testthat on the source tree" "$counts" $?
}

# ------------------------------------------------------------------------------------------------
# (f) the tarball installed as CRAN installs it: nothing of this machine's builds is shared
cran_install() {
  local lib="$work/cran-lib"
  mkdir -p "$lib"
  env -u GPUPC_CARGO_TARGET_DIR -u GPUPC_CARGO_PROFILE -u NOT_CRAN -u R_INCLUDE_DIR \
      _R_CHECK_LIMIT_CORES_=TRUE "$R" CMD INSTALL --no-multiarch -l "$lib" "$tarball" > "$work/cran-install.log" 2>&1 &&
  env -u NOT_CRAN R_LIBS="$lib" "$RSCRIPT" --vanilla -e '
    stopifnot(normalizePath(dirname(getNamespaceInfo("gpupc", "path"))) == normalizePath(.libPaths()[1]))
    data(gmG, package = "pcalg")
    st <- list(C = cor(gmG8$x), n = nrow(gmG8$x))
    a <- gpupc::gpu_pc(st, pcalg::gaussCItest, 0.01, labels = colnames(gmG8$x))
    b <- pcalg::pc(st, pcalg::gaussCItest, 0.01, labels = colnames(gmG8$x))
    stopifnot(identical(as(a, "amat"), as(b, "amat")), identical(a@sepset, b@sepset))
    cat("the CRAN-style install runs gpu_pc() and equals pc()\n")' >> "$work/cran-install.log" 2>&1
  local rc=$?
  date +%s > "$work/cran-install.end"
  return $rc
}

# ------------------------------------------------------------------------------------------------
if [ "$do_r" = 1 ]; then
  [ "$do_rust" = 1 ] && start_cargo_tests bg
  if build_tarball; then
    check_tarball
    [ -d "$checkdir/gpupc" ] && source_tree_tests
  fi
  [ -n "$cargo_pid" ] && finish_cargo_tests
elif [ "$do_rust" = 1 ]; then
  start_cargo_tests fg
fi

if [ "$do_ext" = 1 ]; then
  # (c)'s installed package, if it was built from these sources; else build and check them first
  if [ ! -f "$checkdir/gpupc-sources.id" ] || [ ! -f "$tarball" ] ||
     [ "$(cat "$checkdir/gpupc-sources.id")" != "$(sources_id)" ]; then
    echo "== --extended: gpupc.Rcheck does not hold these sources: (b) and (c) first"
    build_tarball && check_tarball
  fi
  if [ -d "$checkdir/gpupc" ] && [ -f "$tarball" ]; then
    t=$(date +%s)
    echo "== (f) R CMD INSTALL $(basename "$tarball") as CRAN would: beside (e), its log follows (e)"
    cran_install & cran_pid=$!
    files=$(cd tests/testthat && grep -lE 'sweep_cases\(|extended_mode\(\)' test-*.R | sed 's/^test-//; s/\.[rR]$//' | paste -sd'|' -)
    echo "== (e) testthat, extended mode (GPUPC_EXTENDED=true): ${files//|/, }"
    counts="$work/extended-counts"
    GPUPC_EXTENDED=true run_testthat "$checkdir" "$counts" "^(${files})\$"
    count_testthat "(e) testthat, extended sweeps" "$counts" $?
    summary[${#summary[@]}-1]="${summary[${#summary[@]}-1]} ($(elapsed "$t"))"
    wait "$cran_pid"; rc=$?
    echo "== (f) CRAN-style install: its log"
    cat "$work/cran-install.log"
    if [ "$rc" -eq 0 ]; then
      summary+=("(f) CRAN-style install of the tarball: ok ($(( $(cat "$work/cran-install.end") - t ))s, beside (e))")
    else step_failed "(f) CRAN-style install of the tarball (see its log)"; fi
  else
    step_failed "--extended: no checked package to run the sweeps against"
  fi
fi

echo "== summary ($(elapsed "$t0"))"
for s in "${summary[@]}"; do echo "  $s"; done
[ "$failed" -eq 0 ] || status=1
echo "$passed passed, $failed failed, $skipped skipped"
exit "$status"
