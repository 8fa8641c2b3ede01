#' The PC algorithm, computed by gpupc: a drop-in for pcalg::pc()
#'
#' Takes exactly the arguments of [pcalg::pc()] (plus `backend`) and returns the same `pcAlgo`
#' object. Replace `pc(` by `gpu_pc(` and nothing changes but the time. The skeleton is computed
#' by [gpu_skeleton()] (see there for tests, methods, differences from pcalg and GPU memory);
#' the edges are then oriented by pcalg's own functions (`udag2pdagRelaxed()`, `udag2pdag()`,
#' `udag2pdagSpecial()`, and `pc.cons.intern()` for `conservative` / `maj.rule`), so the
#' orientation is pcalg's by construction.
#'
#' @inheritParams pcalg::pc
#' @inheritParams gpu_skeleton
#' @return An object of class [pcalg::pcAlgo-class].
#' @export
#' @examples
#' library(pcalg)
#' data(gmG, package = "pcalg")
#' X <- gmG8$x
#' fit <- gpu_pc(suffStat = list(C = cor(X), n = nrow(X)), indepTest = gaussCItest,
#'               alpha = 0.01, labels = colnames(X), backend = "cpu")
#' fit
#' # the same as pcalg:
#' ref <- pc(suffStat = list(C = cor(X), n = nrow(X)), indepTest = gaussCItest,
#'           alpha = 0.01, labels = colnames(X))
#' all.equal(as(fit, "amat"), as(ref, "amat"))
gpu_pc <- function(suffStat, indepTest, alpha, labels, p,
                   fixedGaps = NULL, fixedEdges = NULL, NAdelete = TRUE, m.max = Inf,
                   u2pd = c("relaxed", "rand", "retry"),
                   skel.method = c("stable", "original", "stable.fast"),
                   conservative = FALSE, maj.rule = FALSE, solve.confl = FALSE,
                   numCores = NULL, verbose = FALSE,
                   backend = getOption("gpupc.backend", "auto")) {
  cl <- match.call()
  lp <- resolve_labels(if (missing(labels)) NULL else labels, if (missing(p)) NULL else p,
                       missing(labels), missing(p), chatty = TRUE)
  u2pd <- match.arg(u2pd)
  skel.method <- match.arg(skel.method)
  conservative <- check_flag(conservative, "conservative")
  maj.rule <- check_flag(maj.rule, "maj.rule")
  solve.confl <- check_flag(solve.confl, "solve.confl")
  if (u2pd != "relaxed") {
    if (conservative || maj.rule)
      abort_arg("u2pd", "must be \"relaxed\" for conservative PC and majority rule PC.")
    if (solve.confl)
      abort_arg("u2pd", "must be \"relaxed\" for the versions of PC using lists for the orientation rules (solve.confl).")
  }
  if (conservative && maj.rule) abort_arg("conservative", "and {.arg maj.rule} cannot both be TRUE: choose one.")

  skel <- skeleton_impl(cl, suffStat, indepTest, alpha, lp$labels, lp$p, skel.method, m.max,
                        fixedGaps, fixedEdges, NAdelete, numCores, verbose, backend, p_arg = lp$arg)
  skel@call <- cl
  if (!conservative && !maj.rule) {
    switch(u2pd,
           rand = pcalg::udag2pdag(skel),
           retry = pcalg::udag2pdagSpecial(skel)$pcObj,
           relaxed = pcalg::udag2pdagRelaxed(skel, verbose = verbose, solve.confl = solve.confl))
  } else {
    pc. <- pcalg::pc.cons.intern(skel, suffStat, indepTest, alpha, version.unf = c(2, 1),
                                 maj.rule = maj.rule, verbose = verbose)
    pcalg::udag2pdagRelaxed(pc.$sk, verbose = verbose, unfVect = pc.$unfTripl,
                            solve.confl = solve.confl)
  }
}
