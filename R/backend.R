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

check_backend <- function(backend) {
  if (!is.character(backend) || length(backend) != 1 || !backend %in% c("auto", "cpu", "cuda"))
    abort_arg("backend", "must be one of \"auto\", \"cpu\" or \"cuda\".")
  backend
}

# The engine of one skeleton as Rust chooses it (src/rust/crates/pc-cuda/src/open.rs holds the
# thresholds of "auto" and the default devices): list(backend = "cpu" / "cuda", why, devices,
# devices_why). `kind` is prepare_test()'s, `n` the rows of dm (NA for other tests), `devices`
# check_devices()'s.
resolve_backend <- function(backend, kind, p, n = NA_real_, devices = NULL) {
  rs_choose_engine(kind, check_backend(backend), p, n, devices)
}
