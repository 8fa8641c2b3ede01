# An R-function indepTest, run as pcalg runs it (see src/rust/crates/gpupc-r/src/rdriver.rs).
#
# The Rust level loop runs on a worker thread and asks for one p-value at a time, in pcalg's call
# order; this loop calls the test itself. So only R frames lie between the test and the caller's
# handlers: its warnings and messages reach suppressWarnings() / withCallingHandlers() as they
# do from pc(), and an error, an interrupt or a tryCatch() handler unwinds R's stack as usual,
# after which on.exit() stops the worker (it leaves through its own frames).

# Returns what rs_skeleton() returns (a Rust error is raised by the wrappers, R/errors.R).
# `args`: skeleton_args() (R/gpu_skeleton.R).
run_rfun <- function(indepTest, suffStat, args, hooks) {
  method <- args$order
  h <- rs_rfun_start(args)
  on.exit(rs_rfun_stop(h))
  # pcalg's R loop passes integer indices; its C++ (Rcpp, unsigned int) passes doubles
  idx <- if (method == "stable") identity else as.double
  answer <- NULL
  repeat {
    req <- rs_rfun_step(h, answer)
    if (is.integer(req)) {
      x <- idx(req[1L])
      y <- idx(req[2L])
      S <- idx(req[-(1:2)])
      answer <- as_pvalue(indepTest(x, y, S, suffStat))
      next
    }
    answer <- 0
    switch(req$kind,
           level_start = hooks$level_start(req$level, req$edges, NA),
           level_end = hooks$level_end(req$level, req$tests, req$removed, req$seconds),
           interrupt = signal_interrupt(),
           done = return(req$result))
  }
}

# The test's value as pcalg uses it: a logical counts as 0/1 (R's comparisons and Rcpp's
# as<double>() both coerce it), NA stays NA (mapped by NAdelete). pcalg fails on anything that
# is not one number too, in ways that differ between its R and C++ code.
as_pvalue <- function(pval) {
  if (!(is.numeric(pval) || is.logical(pval)) || length(pval) != 1L)
    abort_arg("indepTest", "must return one p-value (a number), not {.obj_type_friendly {pval}} of length {length(pval)}.")
  as.double(pval)
}

# Ctrl-C while the worker was planning a level: raise it as R does, to the caller's "interrupt"
# handlers, else back to the top level.
signal_interrupt <- function() {
  signalCondition(structure(class = c("interrupt", "condition"), list(message = "", call = NULL)))
  invokeRestart("abort")
}
