#' gpupc: the PC algorithm on the GPU, a drop-in for pcalg
#'
#' [gpu_pc()] and [gpu_skeleton()] take exactly the arguments of [pcalg::pc()] and
#' [pcalg::skeleton()] and return the same `pcAlgo` object (graph, sepsets, pMax, n.edgetests,
#' max.ord), computed by a Rust core on every CPU core or on an NVIDIA GPU.
#' [gpu_boot_strength()] runs [gpu_pc()] on bootstrap resamples and returns bnlearn's arc
#' strengths (`bn.strength`).
#'
#' [gpu_jtree()] compiles a discrete Bayesian network into a junction tree, and [gpu_query()]
#' and [gpu_mpe()] answer batches of evidence sets with it (marginals and most probable
#' explanations). [cmiknnCItest()] is a conditional independence test for non-linear data.
#' [gpu_info()] says which GPU can be used, [gpupc_last_run()] where the last run's time went.
#'
#' Options: `gpupc.backend` (`"auto"`, `"cpu"` or `"cuda"`) sets the default backend;
#' `gpupc.threads` the CPU threads of `numCores = NULL`; `gpupc.devices` the GPUs of
#' `devices = NULL`; `gpupc.sepset_rows_p` the number of variables above which `sepset` is
#' held as compact rows (see [as_sepset_list()]); `gpupc.kernel_cache` the folder of the
#' compiled GPU kernels, or `FALSE` for none (see [gpu_clear_cache()]).
#'
#' @keywords internal
#' @useDynLib gpupc, .registration = TRUE
#' @importFrom methods new as
#' @importClassesFrom graph graphNEL
#' @importClassesFrom pcalg pcAlgo
"_PACKAGE"
