#' Which GPU gpupc can use
#'
#' Probes the NVIDIA driver and NVRTC at run time (nothing CUDA is needed to install gpupc).
#'
#' @return A list: `usable` (logical) and, when usable, the default device's `name`,
#'   `memory_bytes`, `compute_capability`, `driver_version` and `nvrtc_version`, and `devices`,
#'   a data frame of every usable GPU (`device`, the number `devices =` of [gpu_pc()] takes,
#'   `name`, `memory_bytes`, `free_bytes`, `compute_capability`, `multiprocessors`); otherwise
#'   `reason`, saying why no GPU can be used. Always `kernel_cache`: the folder of the kernel
#'   cache (`""` when it is off), its `entries` and `bytes` (see [gpu_clear_cache()]).
#' @export
#' @examples
#' gpu_info()
gpu_info <- function() {
  info <- rs_gpu_info()
  if (!is.null(info$devices)) info$devices <- as.data.frame(info$devices, stringsAsFactors = FALSE)
  info$kernel_cache <- kernel_cache_info()
  info
}

# Below this many variables the CPU backend is as fast as the GPU one or faster, counting the
# first CUDA call of a process: the driver's start and the kernels, 0.4 s with the kernel cache
# warm, 2-2.7 s on a machine that never compiled them (BENCHMARKS.md, "The first GPU call of an R
# process"). Warm GPU against the CPU backend on an H100 host with 16 cores (same file, "Gaussian
# data"): p = 1643 0.054 s and 0.164 s; p = 5361 0.15-0.20 s and 1.19-1.47 s; p = 10000
# 0.65-0.88 s and 5.8-6.2 s; "stable.fast" alike. With the first call's 0.4 s the GPU wins a
# single call from about p = 3000, for both methods.
.gpu_min_p <- 3000L

check_backend <- function(backend) {
  if (!is.character(backend) || length(backend) != 1 || !backend %in% c("auto", "cpu", "cuda"))
    abort_arg("backend", "must be one of \"auto\", \"cpu\" or \"cuda\".")
  backend
}

# For the G^2 tests the work of level 0 is about n p^2 / 2 sample visits; below this the
# CPU's cores finish before the GPU has started (the first CUDA call of a process takes
# seconds).
.gpu_min_discrete_work <- 5e9

# Decides the backend to try; returns list(backend, why). `n` is the sample size (rows of dm).
resolve_backend <- function(backend, kind, order, p, n = NA_real_) {
  backend <- check_backend(backend)
  if (backend != "auto") return(list(backend = backend, why = "asked for"))
  if (kind == "rfun") return(list(backend = "cpu", why = "a user-supplied test runs on the CPU"))
  if (kind == "cmiknn") {
    # a CMI-kNN test is O(B n^2): the GPU pays off from a few hundred samples
    info <- gpu_info()
    if (!isTRUE(info$usable)) return(list(backend = "cpu", why = paste("no usable GPU:", info$reason)))
    return(list(backend = "cuda", why = sprintf("GPU %s", info$name)))
  }
  if (kind == "gauss") {
    if (p < .gpu_min_p) return(list(backend = "cpu", why = sprintf("p = %d is small (< %d)", p, .gpu_min_p)))
  } else {
    work <- as.double(n) * p * p / 2
    if (!is.finite(work) || work < .gpu_min_discrete_work)
      return(list(backend = "cpu", why = sprintf("n p^2 / 2 = %.3g is small (< %.3g)", work, .gpu_min_discrete_work)))
  }
  info <- gpu_info()
  if (!isTRUE(info$usable)) return(list(backend = "cpu", why = paste("no usable GPU:", info$reason)))
  list(backend = "cuda", why = sprintf("GPU %s", info$name))
}
