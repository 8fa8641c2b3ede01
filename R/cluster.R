# cluster = "mpi": one skeleton search over the ranks of an MPI job launched SPMD (`mpirun -np K
# Rscript script.R`, every rank making the same call). Each rank runs its share of every level's
# tests on its own backend and the ranks exchange the outcomes (src/rust/crates/pc-core/src/
# ranks.rs), through Rmpi's allgather on MPI_COMM_WORLD; every rank returns the whole result.
# gaussCItest's levels 0 and 1 run whole on every rank instead where the ranks' engines are of one
# kind.

# An Rmpi function, looked up when called: written as Rmpi::f, R CMD check would load Rmpi to
# check the name, and Rmpi's .onLoad starts MPI (leaving Open MPI's job directory behind).
rmpi <- function(name) getExportedValue("Rmpi", name)

# NULL, or list(rank, size, allgather, local_rank) for the call's ranks (class gpupc_ranks: a
# caller that checked it and compared the ranks' inputs itself hands it on as it is, with
# `agreed`, the seconds that took).
check_cluster <- function(cluster) {
  if (is.null(cluster) || inherits(cluster, "gpupc_ranks")) return(cluster)
  if (!identical(cluster, "mpi"))
    abort_arg("cluster", "must be NULL (one process) or \"mpi\" (the ranks of an MPI job), not {.val {format(cluster)}}.")
  # installed, but not loaded yet: loading Rmpi outside a launcher starts MPI as a singleton
  if (!nzchar(system.file(package = "Rmpi")))
    abort_arg("cluster", "= \"mpi\" needs the {.pkg Rmpi} package (CRAN; Debian: r-cran-rmpi).")
  if (!under_mpi_launcher())
    abort_arg("cluster", "= \"mpi\" needs the script started by an MPI launcher ({.code mpirun -np 4 Rscript script.R}, or {.code srun} under Slurm); here no MPI job is running.")
  if (!requireNamespace("Rmpi", quietly = TRUE))
    abort_arg("cluster", "= \"mpi\": the {.pkg Rmpi} package does not load.")
  size <- rmpi("mpi.comm.size")(0L)
  if (size < 1L)
    abort_arg("cluster", "= \"mpi\": MPI_COMM_WORLD has no ranks (Rmpi could not start MPI).")
  structure(list(rank = as.integer(rmpi("mpi.comm.rank")(0L)), size = as.integer(size),
                 allgather = mpi_allgather_raw, local_rank = mpi_local_rank()),
            class = "gpupc_ranks")
}

# check_cluster() and cluster_agree() on `parts` (the call's inputs as given) before anything
# else: an entry point's own checks come before skeleton_impl(), and a rank stopped by one alone
# would leave the others waiting. The cluster, marked as compared, for skeleton_impl().
cluster_first <- function(cluster, parts) {
  cluster <- check_cluster(cluster)
  if (!is.null(cluster)) cluster$agreed <- cluster_agree(cluster, parts)
  cluster
}

# Every rank's raw vector `x`, in rank order, as a list: the lengths, then the bytes, gathered on
# MPI_COMM_WORLD. (Rmpi's mpi.allgather.Robj() serialises, runs gc() at every call and simplifies
# equal lengths into a matrix.) MPI counts and displacements are C ints, so the bytes go in
# rounds whose total over the ranks stays below 2^31: each rank sends at most
# mpi_round_bytes() of its bytes per round, and every rank runs as many rounds as the longest
# rank needs (the lengths, exchanged first, say how many). A rank's own bytes are returned as
# given; the others' are written into vectors allocated once (rs_raw_copy(), in place), so the
# exchange holds the gathered bytes once plus one round's buffers.
mpi_allgather_raw <- function(x) {
  size <- rmpi("mpi.comm.size")(0L)
  me <- rmpi("mpi.comm.rank")(0L) + 1L
  # length and round cap as doubles (a rank's bytes may pass 2^31); the smallest cap holds
  head <- rmpi("mpi.allgather")(c(as.double(length(x)), mpi_round_bytes(size)), type = 2,
                                rdata = double(2 * size), comm = 0L)
  counts <- head[c(TRUE, FALSE)]
  cap <- min(head[c(FALSE, TRUE)])
  rounds <- max(0, ceiling(counts / cap))
  .gpupc_state$allgather_rounds <- max(.gpupc_state$allgather_rounds, rounds)
  out <- mpi_receive_buffers(counts, me, x)
  for (k in seq_len(rounds)) {
    off <- (k - 1) * cap
    sent <- pmin(cap, pmax(0, counts - off))
    piece <- if (rounds == 1) x else raw_range(x, off, sent[me])
    got <- rmpi("mpi.allgatherv")(piece, type = 4, rdata = raw(sum(sent)), rcounts = sent, comm = 0L)
    rm(piece)
    starts <- cumsum(sent) - sent
    for (i in seq_len(size)[-me]) {
      if (sent[i] > 0) rs_raw_copy(out[[i]], off, got, starts[i], sent[i])
    }
    rm(got)
  }
  out
}

# The most bytes one rank sends in one round: MPI's int limit shared by the ranks, or less where
# GPUPC_MPI_ROUND_BYTES says so (the tests, for several rounds on small cases).
mpi_round_bytes <- function(size) {
  cap <- floor(.Machine$integer.max / size)
  v <- suppressWarnings(as.numeric(Sys.getenv("GPUPC_MPI_ROUND_BYTES")))
  if (length(v) == 1 && !is.na(v) && v >= 1) cap <- min(cap, floor(v))
  cap
}

# The vectors the other ranks' bytes are written into (this rank's own: `x`). A large exchange
# first agrees that every rank could allocate them: a rank that cannot would otherwise stop alone
# and leave the others waiting in the next round.
mpi_receive_buffers <- function(counts, me, x) {
  out <- tryCatch(lapply(seq_along(counts), function(i) if (i == me) x else raw(counts[i])),
                  error = identity)
  if (sum(counts) - counts[me] >= 2^27) {
    ok <- rmpi("mpi.allgather")(as.integer(!inherits(out, "error")), type = 1,
                                rdata = integer(length(counts)), comm = 0L)
    if (inherits(out, "error"))
      cli::cli_abort(c("gpupc: this rank cannot hold the {sum(counts)} bytes of the ranks' exchange: {conditionMessage(out)}"),
                     class = c("gpupc_memory_error", "gpupc_error"), call = NULL)
    if (any(ok == 0L)) {
      r <- which(ok == 0L)[1] - 1L
      cli::cli_abort(c("gpupc: rank {r}: cannot hold the {sum(counts)} bytes of the ranks' exchange"),
                     class = c("gpupc_rank_error", "gpupc_error"), call = NULL)
    }
  }
  if (inherits(out, "error")) stop(out)
  out
}

# `n` bytes of `x` from `from` (0-based), without R's index vector for the range.
raw_range <- function(x, from, n) {
  piece <- raw(n)
  rs_raw_copy(piece, 0, x, from, n)
  piece
}

# An MPI launcher sets one of these in every rank it starts (Open MPI, MPICH's Hydra and Intel
# MPI, PMIx and PMI-2 under Slurm's srun, MVAPICH); a plain Rscript has none, unless Rmpi was
# loaded and started Open MPI as a singleton, which says so.
under_mpi_launcher <- function() {
  if (identical(Sys.getenv("OMPI_MCA_ess"), "singleton")) return(FALSE)
  vars <- c("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "PMIX_RANK", "MV2_COMM_WORLD_SIZE")
  any(nzchar(Sys.getenv(vars)))
}

# The rank's place among the ranks of its host (NA when the launcher does not say).
mpi_local_rank <- function() {
  for (v in c("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "MV2_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID")) {
    x <- suppressWarnings(as.integer(Sys.getenv(v)))
    if (!is.na(x)) return(x)
  }
  NA_integer_
}

# The ranks an MPI launcher started on this host (NA when none did, or it does not say).
mpi_local_size <- function() {
  if (!under_mpi_launcher()) return(NA_integer_)
  for (v in c("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE", "SLURM_NTASKS_PER_NODE")) {
    x <- suppressWarnings(as.integer(Sys.getenv(v)))
    if (!is.na(x) && x >= 1L) return(x)
  }
  NA_integer_
}

# A GPU rank's device when the call names none (`choice`: resolve_backend()'s answer, on the
# GPU): the rank's place on its host modulo the usable GPUs, so the ranks of one host share its
# GPUs instead of each taking every one.
rank_device_choice <- function(cluster, choice) {
  if (is.na(cluster$local_rank)) return(choice)
  usable <- usable_devices()
  if (length(usable) < 2) return(choice)
  d <- usable[cluster$local_rank %% length(usable) + 1L]
  choice$devices <- d
  choice$devices_why <- sprintf("GPU %d: this rank's place on its host (%d) modulo the %d usable GPUs",
                                d, cluster$local_rank, length(usable))
  choice
}

# Stops every rank, with the same error, when the ranks' calls differ: each rank's digest of each
# input (`parts`, a named list) is gathered, and the first rank that differs from rank 0 is
# named with the inputs that differ. One rank has nothing to compare.
cluster_agree <- function(cluster, parts) {
  if (cluster$size < 2L) return(invisible(0))
  t0 <- proc.time()[["elapsed"]]
  threads <- digest_threads()
  mine <- vapply(parts, rs_input_digest, "", threads = threads)
  all <- lapply(cluster$allgather(serialize(mine, NULL)), unserialize)
  for (r in seq_along(all)[-1]) {
    differ <- names(mine)[all[[r]] != all[[1]]]
    if (length(differ))
      abort_arg("cluster", "= \"mpi\": rank {r - 1}'s call differs from rank 0's in {.arg {differ}}; every rank must make the same call on the same data.")
  }
  invisible(proc.time()[["elapsed"]] - t0)
}

# The threads of the digests: numCores = NULL's (the gpupc.threads option, else a core limit, else
# every core), since the call's own numCores is checked only once the ranks agree. An invalid
# option gives one thread here: a call that uses it stops at that later check, on every rank alike.
digest_threads <- function() tryCatch(default_threads(), error = function(e) 1L)

# `expr`'s value, once every rank got through it: a step whose outcome may differ between hosts
# (the GPU found, the memory left) fails on every rank when it fails on one, instead of leaving
# the others waiting at the first level. The failing rank raises its own condition; the others
# "rank r: ..." of the lowest rank that failed. (Also a junction-tree batch's block, R/jtree.R.)
cluster_step <- function(cluster, expr) {
  if (is.null(cluster) || cluster$size < 2L) return(expr)
  # an interrupt (Ctrl-C, or a progress bar's stop) is a failure the others hear of too
  res <- tryCatch(list(value = expr), error = identity, interrupt = identity)
  mine <- if (inherits(res, "interrupt")) "interrupted"
          else if (inherits(res, "error")) enc2utf8(conditionMessage(res)) else ""
  all <- vapply(cluster$allgather(charToRaw(mine)), rawToChar, "")
  if (inherits(res, "interrupt")) signal_interrupt()
  if (inherits(res, "error")) stop(res)
  bad <- which(nzchar(all))
  if (length(bad)) {
    r <- bad[1] - 1L
    msg <- sub("^gpupc: ", "", all[bad[1]])
    cli::cli_abort(c("gpupc: rank {r}: {msg}"), class = c("gpupc_rank_error", "gpupc_error"), call = NULL)
  }
  res$value
}

# What gpupc_last_run()$ranks holds: this rank, the ranks, the seconds of the input check and of
# the exchanges, where levels 0 and 1 ran (and the seconds of their check), and per exchanged
# level its edges, this rank's edges and the bytes and seconds.
ranks_record <- function(ranks, agree_s) {
  if (is.null(ranks)) return(NULL)
  list(rank = ranks$rank, size = ranks$size, check_s = agree_s, allgather_s = ranks$allgather_s,
       dense_levels = ranks$dense_levels, dense_check_s = ranks$dense_check_s,
       levels = as.data.frame(ranks$levels))
}
