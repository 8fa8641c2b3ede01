# Agreement with pcalg, from the fingerprints compare.R writes (skel_md5: the skeleton's edge list;
# sep_md5: every sepset). Needs no package: compare.R and merge.R source it, so rows from
# separate runs (the parts of a suite, each in its own device call) are compared after the fact.
#
# Rules (the `reference` column says which applied):
#   - tools in pcalg's "stable" order (gpupc-gpu, gpupc-cpu, parallelpc): skeleton and sepsets
#     against pcalg-stable; when pcalg-stable did not finish, the skeleton alone against
#     pcalg-stable.fast (PC-stable's skeleton does not depend on the order of the tests).
#   - gpupc-cpu-stable.fast (gpupc in stable.fast's order): skeleton and sepsets against
#     pcalg-stable.fast.
#   - pcalg-stable.fast: the skeleton against pcalg-stable (its sepsets follow another order).
#   - bnlearn: the skeleton only (bnlearn keeps no sepsets in pcalg's form); against pcalg-stable,
#     else pcalg-stable.fast.
#   - pcalg-stable is the reference itself: NA.
# same_skeleton / same_sepsets are "yes", "no" or NA (the tool or the reference did not finish).
# Rows are compared only within one data set (data_id) on one machine (cpu, cores, gpu).
bench_agreement <- function(res) {
  need <- c("data_id", "tool", "status", "skel_md5", "sep_md5")
  if (!nrow(res) || !all(need %in% names(res))) return(res)
  res$reference <- NA_character_
  res$same_skeleton <- NA_character_
  res$same_sepsets <- NA_character_
  ok <- !is.na(res$status) & res$status == "ok" & !is.na(res$skel_md5)
  machine <- do.call(paste, c(lapply(intersect(c("cpu", "cores", "gpu"), names(res)), function(k) res[[k]]), sep = "|"))
  key <- paste(res$data_id, machine, sep = "||")
  yn <- function(a, b) if (is.na(a) || is.na(b)) NA_character_ else if (identical(a, b)) "yes" else "no"
  for (k in unique(key)) {
    idx <- which(key == k)
    pick <- function(tool) { i <- idx[res$tool[idx] == tool & ok[idx]]; if (length(i)) i[length(i)] else NA }
    st <- pick("pcalg-stable"); fa <- pick("pcalg-stable.fast")
    for (i in idx) {
      t <- res$tool[i]
      if (t == "pcalg-stable") next
      if (t == "gpupc-cpu-stable.fast") { ref <- fa; sep <- TRUE; name <- "pcalg-stable.fast" }
      else if (t == "pcalg-stable.fast") { ref <- st; sep <- FALSE; name <- "pcalg-stable (skeleton only)" }
      else if (t == "bnlearn") {
        ref <- if (!is.na(st)) st else fa; sep <- FALSE
        name <- if (!is.na(st)) "pcalg-stable (skeleton only)" else "pcalg-stable.fast (skeleton only)"
      } else if (!is.na(st)) { ref <- st; sep <- TRUE; name <- "pcalg-stable" }
      else { ref <- fa; sep <- FALSE; name <- "pcalg-stable.fast (skeleton only)" }
      if (!ok[i]) next
      if (is.na(ref)) { res$reference[i] <- "none finished"; next }
      res$reference[i] <- name
      res$same_skeleton[i] <- yn(res$skel_md5[i], res$skel_md5[ref])
      if (sep) res$same_sepsets[i] <- yn(res$sep_md5[i], res$sep_md5[ref])
    }
  }
  res
}
