# Which GPUs one call uses (`devices =` of gpu_pc() / gpu_skeleton()): by default every usable
# device; the Rust side splits each level over them (pc-core's multi.rs, pc-cuda's
# gauss_multi.rs) with results identical to one GPU's.

# Checks the argument's form; NULL means every usable device.
check_devices <- function(devices, backend) {
  if (is.null(devices)) return(NULL)
  if (!is.numeric(devices) || length(devices) == 0 || anyNA(devices) ||
      any(!is.finite(devices)) || any(devices < 0) || any(devices != round(devices)))
    abort_arg("devices", "must be GPU numbers (0, 1, ...) as {.code gpu_info()$devices$device} lists them, or NULL for every usable GPU.")
  if (anyDuplicated(devices))
    abort_arg("devices", "names GPU {devices[anyDuplicated(devices)]} twice.")
  if (identical(backend, "cpu"))
    abort_arg("devices", "chooses GPUs, but {.arg backend} is \"cpu\".")
  as.integer(devices)
}

# The devices a CUDA run uses: `devices` checked against gpu_info(), or every usable one.
resolve_devices <- function(devices) {
  info <- gpu_info()
  usable <- if (isTRUE(info$usable) && !is.null(info$devices)) info$devices$device else integer(0)
  if (is.null(devices)) return(if (length(usable)) usable else NULL)
  missing <- setdiff(devices, usable)
  if (length(missing))
    abort_arg("devices", sprintf("names GPU %s, which is not usable here (usable: %s).",
                                 paste(missing, collapse = ", "),
                                 if (length(usable)) paste(usable, collapse = ", ") else "none"))
  devices
}
