# Which GPUs one call uses (`devices =` of gpu_pc() / gpu_skeleton()): by default every usable
# device; the Rust side splits each level over them (pc-core's multi.rs, pc-cuda's
# gauss/multi.rs) with results identical to one GPU's.

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

# The devices a CUDA run uses: `devices` checked against the usable ones, or every usable one.
resolve_devices <- function(devices, usable = usable_devices()) {
  if (is.null(devices)) return(if (length(usable)) usable else NULL)
  missing <- setdiff(devices, usable)
  if (length(missing))
    abort_arg("devices", sprintf("names GPU %s, which is not usable here (usable: %s).",
                                 paste(missing, collapse = ", "),
                                 if (length(usable)) paste(usable, collapse = ", ") else "none"))
  devices
}

# Below these sizes one GPU finishes first: opening, loading and merging on a second device
# costs more than its share of the work saves. Measured on two H100s (BENCHMARKS.md, "Several
# GPUs"): gaussCItest was no faster on two at p = 20000 (n = 3189, every level: 2.15 s on
# both) nor at p = 55,572 (levels 0-1: 17.7 s on one, 20.6 s on two), its time being C's upload,
# pMax's download and R's objects, not the kernels; so it takes one GPU unless `devices` names
# more. disCItest on MUNIN at n = 1e6 (n p^2 / 2 = 5.4e11) took 56.2 s on one and 31.9 s on
# two (1.76x); at n = 20000 (1.1e10) two gave nothing. A Munin batch of 30,000 evidence sets
# took 30.3 s on one and 21.0 s on two through R.
.multi_min_discrete_work <- 1e11   # n p^2 / 2, as backend.R measures the G^2 levels' work
.multi_min_jtree_sets <- 20000L

# The devices of one call and why: `devices` as given, or, when NULL, every usable GPU where the
# work gains from them and the first one otherwise. `kind` is the test kind ("gauss", "dis",
# "bin", "cmiknn") or "jtree"; `size` its work (n p^2 / 2 for the G^2 tests, evidence sets for
# jtree). Returns list(devices, why).
choose_devices <- function(devices, kind, size, usable = usable_devices()) {
  given <- !is.null(devices)
  all <- resolve_devices(devices, usable)
  if (given) return(list(devices = all, why = "asked for"))
  if (length(all) == 0) return(list(devices = NULL, why = "no usable GPU"))
  if (length(all) == 1) return(list(devices = all, why = "the one usable GPU"))
  one <- function(why) list(devices = all[1], why = paste0("one GPU: ", why))
  if (kind == "gauss") {
    return(one("gaussCItest's time is C's upload and the results' download, which a second GPU does not shorten (name `devices` to split its levels)"))
  } else if (kind %in% c("dis", "bin")) {
    if (!is.finite(size) || size < .multi_min_discrete_work)
      return(one(sprintf("n p^2 / 2 = %.3g is small for several GPUs (< %.3g)", size, .multi_min_discrete_work)))
  } else if (kind == "jtree") {
    if (size < .multi_min_jtree_sets)
      return(one(sprintf("%d evidence sets are few for several GPUs (< %d)", as.integer(size), .multi_min_jtree_sets)))
  }
  list(devices = all, why = sprintf("%d GPUs", length(all)))
}
