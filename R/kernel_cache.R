# The kernel cache: compiled GPU kernels kept on disk between R processes, so that only the first
# process on a machine pays NVRTC's compile time (src/rust/crates/pc-cuda/src/kernel_cache.rs).

# The folder: options(gpupc.kernel_cache =), else the environment variable GPUPC_KERNEL_CACHE,
# else tools::R_user_dir("gpupc", "cache"); "" when the cache is off (FALSE, "" or "off").
kernel_cache_dir <- function() {
  opt <- getOption("gpupc.kernel_cache")
  if (!is.null(opt)) {
    if (isFALSE(opt) || identical(opt, "") || identical(opt, "off")) return("")
    if (!is.character(opt) || length(opt) != 1L || is.na(opt))
      abort_arg("options(gpupc.kernel_cache)", "must be a folder, or FALSE for no kernel cache.")
    return(path.expand(opt))
  }
  env <- Sys.getenv("GPUPC_KERNEL_CACHE", unset = NA)
  if (!is.na(env)) return(if (env %in% c("", "off")) "" else path.expand(env))
  tools::R_user_dir("gpupc", "cache")
}

# Evaluates `call` (a Rust entry point that may compile kernels) with the cache's current folder,
# then shows the cache's notice once (it could not be written: kernels were compiled in memory).
with_kernel_cache <- function(call) {
  rs_kernel_cache_use(kernel_cache_dir())
  on.exit({
    note <- rs_kernel_cache_notice()
    if (nzchar(note)) message(note)
  })
  call
}

kernel_cache_info <- function() {
  dir <- kernel_cache_dir()
  if (!nzchar(dir)) return(list(dir = "", entries = 0, bytes = 0))
  rs_kernel_cache_info(dir)
}

#' Clear the kernel cache
#'
#' gpupc compiles its GPU kernels with NVRTC the first time a call needs them and keeps the
#' compiled kernels on disk, so that later R processes load them in milliseconds instead of
#' compiling them again. The folder is `tools::R_user_dir("gpupc", "cache")`, or the one set
#' by `options(gpupc.kernel_cache = "<folder>")` or the environment variable
#' `GPUPC_KERNEL_CACHE` (the option wins); `FALSE`, `""` or `"off"` turns the cache off.
#' Entries of other gpupc versions are removed automatically; a damaged entry is found and
#' compiled again. [gpu_info()] reports the folder and its size.
#'
#' @return The number of files removed, invisibly.
#' @export
#' @examples
#' old <- options(gpupc.kernel_cache = file.path(tempdir(), "gpupc-kernels"))
#' gpu_info()$kernel_cache
#' gpu_clear_cache()
#' options(old)
gpu_clear_cache <- function() {
  dir <- kernel_cache_dir()
  if (!nzchar(dir) || !dir.exists(dir)) return(invisible(0L))
  invisible(rs_kernel_cache_clear(dir))
}

# Kernels of levels a run has not reached yet are compiled in background threads; R must not exit
# or unload gpupc while one runs (NVRTC can crash in its teardown), so both wait for them.
.gpupc_exit <- new.env()
.onLoad <- function(libname, pkgname) {
  reg.finalizer(.gpupc_exit, function(e) rs_kernel_prefetch_wait(), onexit = TRUE)
}
.onUnload <- function(libpath) rs_kernel_prefetch_wait()
