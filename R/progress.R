# The progress display of long work (a skeleton's level, a junction-tree batch, the triple
# checks): a cli progress bar, which cli shows only once the work has run a while (its option
# `cli.progress_show_after`, 2 s by default) and its other options govern as they do any cli bar.
# Rust calls `tick(done, total)` on R's thread between pieces of work (src/rust/crates/gpupc-r/
# src/watch.rs: a FALSE from it stops the work as Ctrl-C does); `done()` removes the bar.
# `unit` names what is counted (shown as "done/total unit" with the elapsed time; NULL: cli's
# default bar). While `.gpupc_state$no_progress` is TRUE (the gpu_pc() calls of
# gpu_boot_strength(), R/boot.R) no bar is shown.
progress_hooks <- function(name, unit = NULL) {
  state <- new.env()  # cli evaluates its format strings here, so it needs a normal parent
  state$bar <- NULL
  state$unit <- unit
  fmt <- if (!is.null(unit)) "{cli::pb_name}{cli::pb_bar} {cli::pb_current}/{cli::pb_total} {unit} {cli::pb_elapsed}"
  list(
    tick = function(done, total) {
      # inside gpu_boot_strength(), whose own bar counts the resamples instead
      if (isTRUE(.gpupc_state$no_progress)) return(invisible(TRUE))
      # a broken progress display must never stop a run
      if (total > 0) try(silent = TRUE, {
        if (is.null(state$bar)) {
          # auto_terminate = FALSE: the watcher may tick again after the work reached its total
          state$bar <- cli::cli_progress_bar(name, total = total, format = fmt, auto_terminate = FALSE,
                                             .auto_close = FALSE, .envir = state)
        }
        cli::cli_progress_update(id = state$bar, set = done, .envir = state)
      })
      invisible(TRUE)
    },
    done = function() {
      if (!is.null(state$bar)) try(cli::cli_progress_done(id = state$bar, .envir = state), silent = TRUE)
      state$bar <- NULL
    }
  )
}

# `indepTest` counting its calls into `hooks$tick(calls, total)` (pcalg's own triple checks,
# which call an R-function test from R): after the last call, and else at most every 0.1 s,
# asked every 8 calls (a tick costs a third of a fast test written in R).
counting_test <- function(indepTest, hooks, total) {
  calls <- 0
  last <- -Inf
  function(x, y, S, suffStat) {
    p <- indepTest(x, y, S, suffStat)
    calls <<- calls + 1
    if (calls == total || calls %% 8 == 1 && proc.time()[[3]] - last >= 0.1) {
      last <<- proc.time()[[3]]
      if (isFALSE(hooks$tick(calls, total))) signal_interrupt()
    }
    p
  }
}
