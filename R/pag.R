# pcalg's udag2pag() in gpupc's Rust core (pc-core's fci/pag, one call: rs_udag2pag()): the JCI
# marks, the colliders from the separating sets and rules 1-10, mark for mark as pcalg sets them,
# with its checks and its warning. No `verbose`: gpu_fci(verbose = TRUE) calls pcalg's, whose
# printed trace it keeps. The matrix comes back as udag2pag() returns it: double (a logical one
# converted), dimnames kept; an integer matrix stays integer only when pcalg assigns no mark.
native_udag2pag <- function(pag, sepset, rules = rep(TRUE, 10), unfVect = NULL,
                            jci = c("0", "1", "12", "123"), contextVars = NULL,
                            orientCollider = TRUE) {
  rules <- check_rules(rules)
  if (!is.matrix(pag) || nrow(pag) != ncol(pag))
    abort_arg("pag", "must be a square matrix of edge marks (0, 1, 2, 3).")
  if (!is.numeric(pag)) storage.mode(pag) <- "numeric"
  jci <- match.arg(jci)
  if (jci != "0" && any(rules[5:7]))
    warning("FCI orientation rules 5-7 should be disabled if JCI functionality is used.", call. = FALSE)
  if (!is.null(unfVect) && !is.numeric(unfVect) && !is.logical(unfVect))
    abort_arg("unfVect", "must be NULL or a numeric vector of triple numbers (pcalg's triple2numb()).")
  if (!is.null(contextVars)) {
    if (!is.numeric(contextVars) && !is.logical(contextVars))
      abort_arg("contextVars", "must be NULL or a vector of variable numbers.")
    contextVars <- as.double(contextVars)
  }
  marks <- pag
  storage.mode(marks) <- "double"
  res <- rs_udag2pag(marks, nrow(pag), sepset, rules,
                     if (is.null(unfVect)) NULL else as.double(unfVect), jci, contextVars,
                     isTRUE(orientCollider))
  if (!res$wrote) return(pag)
  storage.mode(pag) <- "double"
  pag[] <- res$marks
  pag
}
