## The long sweeps (hundreds of random cases, the costliest rows of a case table) run a first part
## by default, so that the whole suite fits the time R CMD check and the test command have, and the
## rest in the extended mode: GPUPC_EXTENDED=true, which `bash tools/test.sh --extended` sets (CI
## runs it after the test command, so the two modes together run every case once). A sweep's
## first part is the start of the same case stream (the same seeds, the same cases), so the
## extended mode only adds cases; every comparison is the same in both modes.

extended_mode <- function() isTRUE(as.logical(Sys.getenv("GPUPC_EXTENDED", "false")))

## Which cases of a sweep of `full` to run: the first `default`, or in the extended mode the rest
## (default + 1 to full). A loop over one random stream still draws the cases it skips (drawing is
## cheap, comparing is not), so that case i is the same case in both modes.
sweep_cases <- function(full, default) {
  first <- seq_len(min(default, full))
  if (extended_mode()) setdiff(seq_len(full), first) else first
}

## A sweep's label: "cases 1-36 of 200".
sweep_label <- function(cases, full) {
  if (!length(cases)) return(sprintf("none of %d cases", full))
  sprintf("cases %d-%d of %d", min(cases), max(cases), full)
}

## For a test of a file the extended mode runs for its long cases, which the test command has run
## already: skipped in the extended mode, so that CI does not run it twice.
skip_if_run_before <- function() skip_if(extended_mode(), "run by the test command; the extended mode adds the long cases")
