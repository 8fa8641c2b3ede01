# Which GPUs one call uses (`devices =` of gpu_pc() / gpu_skeleton() / gpu_jtree()): by default
# every usable device where the work gains from them; the Rust side splits each level over them
# (pc-core's multi.rs, pc-cuda's open.rs) with results identical to one GPU's.

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

# The GPU numbers gpu_info() finds usable (integer(0) without a GPU).
usable_devices <- function() {
  info <- gpu_info()
  if (isTRUE(info$usable) && !is.null(info$devices)) info$devices$device else integer(0)
}

# The devices of one call and why (src/rust/crates/pc-cuda/src/open.rs decides): `devices` as
# given (checked against the usable ones), or, when NULL, every usable GPU where the work gains
# from them and the first one otherwise. `kind` is the test kind ("gauss", "dis", "bin",
# "cmiknn") or "jtree"; `size` its work (n p^2 / 2 for the G^2 tests, evidence sets for jtree).
# Returns list(devices, why).
choose_devices <- function(devices, kind, size, usable = usable_devices()) {
  rs_choose_devices(devices, kind, size, as.integer(usable))
}
