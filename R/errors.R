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
  if (kind %in% c("invalid", "network", "too_large"))
    cli::cli_abort(c("{.arg {arg}}: {msg}"), class = unique(c(cls[1], "gpupc_invalid_argument", cls)), call = NULL)
  if (kind %in% c("memory", "device_memory")) {
    if (kind == "device_memory") cls <- c(cls, "gpupc_cuda_error")
    cli::cli_abort(c("{.arg {arg}}: {msg}"), class = unique(c("gpupc_memory_error", cls)), call = NULL)
  }
  if (kind == "interrupt") signal_interrupt()
  if (kind == "test") cli::cli_abort(c("{.arg indepTest} failed.", x = "{msg}"), class = cls, call = NULL)
  cli::cli_abort(c("gpupc: {msg}"), class = cls, call = NULL)
}

# `run(backend)`, and when it fails on the GPU (class gpupc_cuda_error) and `fallback`, a message
# and `run("cpu")`: junction-tree batches. (A skeleton and the triple checks do this in Rust,
# pc-cuda's open.rs, and R says so with gpu_fallback_message().)
with_cpu_fallback <- function(run, backend, fallback, what = "") {
  if (backend == "cpu" || !fallback) return(run(backend))
  tryCatch(run(backend), gpupc_cuda_error = function(e) {
    cpu_fallback_message(e, what)
    run("cpu")
  })
}

cpu_fallback_message <- function(e, what = "") {
  message("gpupc: the GPU failed", what, " (", conditionMessage(e), "); running on the CPU instead")
}

# The message of a GPU failure `err` (Rust's error list) that Rust answered by running on the CPU.
gpu_fallback_message <- function(err, what = "") {
  cpu_fallback_message(tryCatch(raise_rust_error(err), error = identity), what)
}
