## The long sweeps (hundreds of random cases, the costliest rows of a case table) run a first part
## by default, so that the whole suite fits the time R CMD check and the test command have, and in
## full in the extended mode: GPUPC_EXTENDED=true, which `bash tools/test.sh --extended` sets (CI
## runs it after the test command). A sweep's first part is the start of the same case stream
## (the same seeds, the same cases), so the extended mode only adds cases; every comparison is the
## same in both modes.

extended_mode <- function() isTRUE(as.logical(Sys.getenv("GPUPC_EXTENDED", "false")))

## How many cases of a sweep to run: `full` in the extended mode, else `default`.
sweep_n <- function(full, default) if (extended_mode()) full else min(default, full)

## For a test of a file the extended mode runs for its long cases, which the test command has run
## already: skipped in the extended mode, so that CI does not run it twice.
skip_if_run_before <- function() skip_if(extended_mode(), "run by the test command; the extended mode adds the long cases")
