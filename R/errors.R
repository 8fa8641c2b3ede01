# Every Rust entry point returns its value or a `gpupc_rust_error` list (kind, message, and the
# argument it names; src/rust/crates/gpupc-r/src/rerror.rs). The wrappers in extendr-wrappers.R
# pass each result through rust_value(), so R code never inspects an error list: a failure is a
# classed condition from here on, and callers that fall back (a GPU error with backend = "auto")
# catch its class.

rust_value <- function(res) if (inherits(res, "gpupc_rust_error")) raise_rust_error(res) else res

# Raises the error as the condition of its kind: class gpupc_<kind>_error and gpupc_error; a bad
# argument (also a network or a tree too large) is a gpupc_invalid_argument naming the argument;
# memory errors name the argument that sets the size, and the GPU's are also gpupc_cuda_error
# (backend = "auto" runs on the CPU instead); an interrupt is R's interrupt, as Ctrl-C is.
raise_rust_error <- function(err) {
  kind <- err$kind
  msg <- err$message
  arg <- err$arg
  cls <- c(paste0("gpupc_", kind, "_error"), "gpupc_error")
  # the place, in the call's devices, of the one that failed (several devices)
  device <- attr(err, "device")
  if (kind %in% c("invalid", "network", "too_large"))
    cli::cli_abort(c("{.arg {arg}}: {msg}"), class = unique(c(cls[1], "gpupc_invalid_argument", cls)), call = NULL)
  if (kind %in% c("memory", "device_memory")) {
    if (kind == "device_memory") cls <- c(cls, "gpupc_cuda_error")
    cli::cli_abort(c("{.arg {arg}}: {msg}"), class = unique(c("gpupc_memory_error", cls)), call = NULL, device = device)
  }
  if (kind == "interrupt") signal_interrupt()
  if (kind == "test") cli::cli_abort(c("{.arg indepTest} failed.", x = "{msg}"), class = cls, call = NULL)
  cli::cli_abort(c("gpupc: {msg}"), class = cls, call = NULL, device = device)
}

# `run(backend, devices)`, and when it fails on the GPU (class gpupc_cuda_error) and `fallback`,
# a message and the run again without the GPU that failed (the condition's `device`), or on the
# CPU (`run("cpu", NULL)`) when none is left or the failure names none: junction-tree batches.
# (A skeleton does this in Rust, pc-cuda's open.rs, and R says so with gpu_fallback_messages().)
with_cpu_fallback <- function(run, backend, fallback, devices = NULL, what = "") {
  if (backend == "cpu" || !fallback) return(run(backend, devices))
  repeat {
    res <- tryCatch(run(backend, devices), gpupc_cuda_error = identity)
    if (!inherits(res, "gpupc_cuda_error")) return(res)
    i <- res$device
    devices <- if (!is.null(i) && length(devices) > 1) devices[-i] else NULL
    cpu_fallback_message(res, what, devices)
    if (is.null(devices)) return(run("cpu", NULL))
  }
}

cpu_fallback_message <- function(e, what = "", devices = NULL) {
  then <- if (length(devices)) paste0("GPU", if (length(devices) > 1) "s", " ", paste(devices, collapse = ", ")) else "the CPU"
  message("gpupc: the GPU failed", what, " (", conditionMessage(e), "); running on ", then, " instead")
}

# The message of a GPU failure `err` (Rust's error list) that Rust answered by running on the
# GPUs `devices` (NULL: the CPU).
gpu_fallback_message <- function(err, what = "", devices = NULL) {
  cpu_fallback_message(tryCatch(raise_rust_error(err), error = identity), what, devices)
}

# A skeleton's failures (Rust's list of list(failure, devices)), each with the GPUs it went on with.
gpu_fallback_messages <- function(failed) {
  for (f in failed) gpu_fallback_message(f$failure, devices = if (length(f$devices)) f$devices)
}
