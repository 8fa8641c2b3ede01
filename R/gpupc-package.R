#' gpupc: the PC algorithm on the GPU, a drop-in for pcalg
#'
#' [gpu_pc()] and [gpu_skeleton()] take exactly the arguments of [pcalg::pc()] and
#' [pcalg::skeleton()] and return the same `pcAlgo` object (graph, sepsets, pMax, n.edgetests,
#' max.ord), computed by a Rust core on every CPU core or on an NVIDIA GPU.
#'
#' Options: `gpupc.backend` (`"auto"`, `"cpu"` or `"cuda"`) sets the default backend.
#'
#' @keywords internal
#' @useDynLib gpupc, .registration = TRUE
#' @importFrom methods new as
#' @importClassesFrom graph graphNEL
#' @importClassesFrom pcalg pcAlgo
"_PACKAGE"
