# A suite's one CSV: bench/run collects the raw output of a run into it, and publishes it into the
# package (inst/extdata/bench/SUITE.csv, which the benchmark vignette and BENCHMARKS.md read).
#
#   Rscript bench/lib/collect.R collect SUITE RAWDIR MACHINE OUT.csv
#   Rscript bench/lib/collect.R publish SUITE NEW.csv NEW.machine.txt DESTDIR
#
# The CSV holds several tables, one row per measurement: the columns `table` (which one),
# `machine` (the [ID] of SUITE.machine.txt) and `source` (the raw file the row came from), then
# the union of the tables' own columns (a column a table does not have is empty there):
# bench_table() below, and the vignette, take one table back with its own columns. Text output
# that a script prints and does not write as a CSV (pcbench's summaries, level logs) is kept as
# table `log`: one row per result line (`line`), with its `source`.
#
# publish merges a run into the current CSV: a table's rows from the same machine and the same
# source file are replaced (a part run again replaces what it made before; other machines'
# rows stay), the comparison tables row by row (data set, tool: bench/lib/merge.R), junction-
# tree tables by network; the machine's description replaces the one of the same [ID].
# Needs no package.

here <- local({  # this file's folder: run by Rscript, or sourced (by its path, or from the root)
  f <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
  of <- tryCatch(sys.frame(1)$ofile, error = function(e) NULL)
  d <- c(if (!is.null(of)) dirname(of), if (length(f)) dirname(normalizePath(f[1])), file.path("bench", "lib"))
  d[file.exists(file.path(d, "agreement.R"))][1]
})
source(file.path(here, "agreement.R"))
source(file.path(here, "merge.R"))

read_csv <- function(f) {
  x <- tryCatch(utils::read.csv(f, stringsAsFactors = FALSE, check.names = FALSE), error = function(e) NULL)
  if (is.null(x) || !nrow(x)) return(NULL)
  # a script's own `machine` column (the GPU's name) is not the run's machine ID
  if ("machine" %in% names(x)) names(x)[names(x) == "machine"] <- if ("gpu" %in% names(x)) "machine_gpu" else "gpu"
  x$source <- basename(f)
  x
}
files <- function(raw, pattern) sort(list.files(raw, pattern = pattern, full.names = TRUE))
rbind_fill <- function(parts) {
  parts <- Filter(function(x) !is.null(x) && nrow(x) > 0, parts)
  if (!length(parts)) return(NULL)
  cols <- unique(unlist(lapply(parts, names)))
  do.call(rbind, lapply(parts, function(x) { x[setdiff(cols, names(x))] <- NA; x[cols] }))
}
csvs <- function(raw, pattern) rbind_fill(lapply(files(raw, pattern), read_csv))

# Result lines of a text output: blank lines, progress lines and (drop) per-case rows left out.
log_lines <- function(f, keep = NULL, drop = "^\\s+[0-9]", max = 400) {
  if (!file.exists(f)) return(NULL)
  l <- readLines(f, warn = FALSE)
  l <- sub("\\s+$", "", l)
  l <- l[nzchar(l) & !grepl("ETA|^\\$|^\\[1\\]|^Warning|^There were", l)]
  if (!is.null(keep)) l <- l[grepl(keep, l)]
  if (!is.null(drop)) l <- l[!grepl(drop, l)]
  if (!length(l)) return(NULL)
  if (length(l) > max) l <- c(utils::head(l, max - 1), sprintf("(%d more lines)", length(l) - max + 1))
  data.frame(source = basename(f), line = l, stringsAsFactors = FALSE)
}
logs <- function(raw, pattern, ...) rbind_fill(lapply(files(raw, pattern), log_lines, ...))

# CSV blocks inside a text output (pcbench cmiknn and tigramite.py print a header line, then rows).
csv_blocks <- function(f) {
  if (!file.exists(f)) return(list())
  l <- readLines(f, warn = FALSE)
  out <- list(); hdr <- NULL
  for (x in l) {
    if (grepl("^(what|tool),", x)) { hdr <- strsplit(x, ",")[[1]]; next }
    if (is.null(hdr) || !grepl(",", x) || grepl("^#", x)) next
    v <- strsplit(x, ",")[[1]]
    if (length(v) != length(hdr)) next
    r <- as.data.frame(as.list(stats::setNames(v, hdr)), stringsAsFactors = FALSE, check.names = FALSE)
    r$source <- basename(f)
    out[[length(out) + 1]] <- utils::type.convert(r, as.is = TRUE)
  }
  out
}

# gpu_skeleton() through R, one line per call (bench/suites/discrete/discrete-r-timing.R).
r_timing <- function(f) {
  if (!file.exists(f)) return(NULL)
  l <- readLines(f, warn = FALSE)
  num <- function(x, pat) suppressWarnings(as.numeric(sub(pat, "\\1", x)))
  w <- grep("^[a-z0-9]+: p = [0-9]+, n = [0-9]+; warm-up", l, value = TRUE)
  runs <- grep("^[a-z0-9]+ (cuda|cpu) run [0-9]+: gpu_skeleton", l, value = TRUE)
  rows <- list()
  if (length(w)) rows[[1]] <- data.frame(
    network = sub(":.*", "", w), p = num(w, ".*p = ([0-9]+),.*"), n = num(w, ".*n = ([0-9]+);.*"),
    call = "warm-up", seconds = num(w, ".*warm-up ([0-9.]+) s.*"), edges = num(w, ".*s, ([0-9]+) edges left.*"),
    stringsAsFactors = FALSE)
  if (length(runs)) {
    phase <- function(x, name) num(x, sprintf(".*%s ([0-9.]+)[,;].*", name))
    rows[[2]] <- data.frame(
      network = sub(" .*", "", runs), backend = sub("^[a-z0-9]+ ([a-z]+) run.*", "\\1", runs),
      call = sub("^[a-z0-9]+ [a-z]+ run ([0-9]+):.*", "\\1", runs), seconds = num(runs, ".*gpu_skeleton ([0-9.]+) s.*"),
      identical_to_first = sub(".*identical to run 1: ([A-Z]+);.*", "\\1", runs),
      collector_s = num(runs, ".*collector ([0-9.]+) s.*"), input_s = phase(runs, "input_s"),
      search_s = phase(runs, "search_s"), sepset_s = phase(runs, "sepset_s"),
      graph_object_s = phase(runs, "graph_object_s"), levels = sub(".*levels: ", "", runs), stringsAsFactors = FALSE)
  }
  x <- rbind_fill(rows)
  if (!is.null(x)) x$source <- basename(f)
  x
}

# One GPU against all (bench/suites/multigpu): R's table lines and pcbench multi's result lines.
multigpu_timing <- function(f) {
  l <- readLines(f, warn = FALSE)
  rows <- list()
  # "default GPU(s)": the devices gpu_query() chose itself, their count at the end of its phases
  r <- grep("^[^|]+ \\| ([0-9]+|default) GPU\\(s\\) \\| ", l, value = TRUE)
  for (x in r) {
    v <- trimws(strsplit(x, " | ", fixed = TRUE)[[1]])
    gpus <- if (startsWith(v[2], "default")) sub(".*\\(([0-9]+) GPUs?\\).*", "\\1", v[6]) else sub(" GPU.*", "", v[2])
    rows[[length(rows) + 1]] <- data.frame(what = v[1], gpus = as.integer(gpus),
      seconds = as.numeric(sub(" s.*", "", v[3])), runs = sub(".*runs: ([^)]*)\\).*", "\\1", v[3]),
      ratio = as.numeric(sub("x$", "", v[4])), check = v[5], phases = if (length(v) > 5) v[6] else NA,
      stringsAsFactors = FALSE)
  }
  p <- grep("^(gauss|discrete) .*\\| 1 gpu [0-9.]+ s", l, value = TRUE)
  for (x in p) {
    v <- trimws(strsplit(x, " | ", fixed = TRUE)[[1]])
    k <- suppressWarnings(as.integer(sub(".*?([0-9]+) (x |devices).*", "\\1", sub("cuda \\(([0-9]+) x.*", "cuda \\1 x ", v[3]), perl = TRUE)))
    multi_s <- as.numeric(sub(".* ([0-9.]+) s \\(setup.*", "\\1", v[3]))
    one_s <- as.numeric(sub("1 gpu ([0-9.]+) s.*", "\\1", v[2]))
    what <- sub(":.*", "", v[1]); detail <- sub("^[^:]*: ", "", v[1])
    rows[[length(rows) + 1]] <- data.frame(what = what, gpus = c(1L, k), seconds = c(one_s, multi_s),
      runs = NA, ratio = c(1, as.numeric(sub("ratio ", "", v[4]))), check = c("reference", sub("^k = 1: ", "", v[5])),
      phases = c(sub("^1 gpu [0-9.]+ s ", "", v[2]), sub("^.* s \\(", "(", v[3])), detail = detail, stringsAsFactors = FALSE)
  }
  x <- rbind_fill(rows)
  if (!is.null(x)) x$source <- basename(f)
  x
}
multigpu_parity <- function(f) {
  l <- readLines(f, warn = FALSE)
  s <- grep("^(multi [a-z]+ parity|parity|fault): ", l, value = TRUE)
  # parity lines end in identical / DIFFERS, the fault suite's in ok / FAILED
  c1 <- grep("^[a-z].*\\s{2,}(identical|DIFFER|ok|FAILED)", l, value = TRUE)
  c1 <- c1[!grepl("^(multi [a-z]+ parity|parity|fault): ", c1)]
  rows <- list()
  if (length(c1)) rows[[1]] <- data.frame(check = trimws(sub("\\s{2,}(identical|DIFFER|ok|FAILED).*$", "", c1)),
    result = sub("^.*\\s{2,}((identical|DIFFER|ok|FAILED)[^[]*).*$", "\\1", c1),
    note = ifelse(grepl("\\[", c1), sub("^.*\\[(.*)\\]\\s*$", "\\1", c1), NA), stringsAsFactors = FALSE)
  if (length(s)) rows[[2]] <- data.frame(check = sub(":.*", "", s), result = sub("^[^:]*: ", "", s), stringsAsFactors = FALSE)
  x <- rbind_fill(rows)
  if (!is.null(x)) { x$result <- trimws(x$result); x$source <- basename(f) }
  x
}

# The cmiknn suite's one-test and PC timings, from the CSV blocks of its logs.
cmiknn_timings <- function(raw) {
  b <- unlist(lapply(files(raw, "^cmiknn-(bench|extra|check|pc-p200)\\.log$"), csv_blocks), recursive = FALSE)
  b <- rbind_fill(b)
  if (is.null(b)) return(NULL)
  ours <- b[!is.na(b$what) & b$what == "single", ]
  tig <- b[!is.na(b$tool) & b$tool == "tigramite", ]
  rows <- lapply(seq_len(nrow(ours)), function(i) {
    o <- ours[i, ]
    t <- tig[tig$n == o$n & tig$k == o$k & tig$B == o$B & tig$l == o$l, ]
    data.frame(what = "one test", n = o$n, k = o$k, B = o$B, l = o$l, p = NA,
               ours_gpu_s = suppressWarnings(as.numeric(o$gpu_median_s)), ours_cpu_s = suppressWarnings(as.numeric(o$cpu_median_s)),
               tigramite_s = if (nrow(t)) t$median_s[nrow(t)] else NA, tigramite_estimated = FALSE,
               note = o$source, stringsAsFactors = FALSE)
  })
  pcs <- b[!is.na(b$what) & b$what == "pc", ]
  rows <- c(rows, lapply(seq_len(nrow(pcs)), function(i) {
    o <- pcs[i, ]
    gpu <- is.null(o$backend) || is.na(o$backend) || o$backend != "cpu"
    data.frame(what = "PC", n = o$n, k = o$k, B = o$B, l = NA, p = o$p,
               ours_gpu_s = if (gpu) o$seconds else NA, ours_cpu_s = if (gpu) NA else o$seconds,
               tigramite_s = NA, tigramite_estimated = FALSE,
               note = sprintf("%s: %s edges (%s true), tests per level %s", o$source, o$edges, o$true_edges, o$tests_per_level),
               stringsAsFactors = FALSE)
  }))
  x <- rbind_fill(rows)
  if (!is.null(x)) x$source <- x$note
  x
}
cmiknn_dist <- function(f) {
  if (!file.exists(f)) return(NULL)
  l <- grep("^(cell,|n[0-9]+_S)", readLines(f, warn = FALSE), value = TRUE)
  if (length(l) < 2) return(NULL)
  x <- utils::read.csv(text = l, stringsAsFactors = FALSE)
  x$source <- basename(f)
  x
}

# MPI ranks against one process (bench/suites/mpi): mpi-bench.R's table lines and their levels.
mpi_timing <- function(f) {
  l <- readLines(f, warn = FALSE)
  r <- grep("^[^|]+ \\| [^|]+ \\| [0-9.]+ s \\| [0-9.]+x \\| ", l, value = TRUE)
  rows <- lapply(r, function(x) {
    v <- trimws(strsplit(x, " | ", fixed = TRUE)[[1]])
    data.frame(what = v[1], how = v[2], seconds = as.numeric(sub(" s$", "", v[3])),
               ratio = as.numeric(sub("x$", "", v[4])), check = v[5], result = v[6],
               phases = if (length(v) > 6) v[7] else NA, stringsAsFactors = FALSE)
  })
  x <- rbind_fill(rows)
  if (!is.null(x)) x$source <- basename(f)
  x
}

# The tables of each suite from a run's raw folder.
suite_tables <- function(suite, raw) {
  switch(suite,
    gauss = list(
      compare = merge_compare(lapply(files(raw, "^compare.*\\.csv$"), read_csv)),
      cpu = merge_compare(lapply(files(raw, "^cpu\\.csv$"), read_csv)),
      resident = csvs(raw, "^resident-bench\\.csv$"),
      "resident-fast" = csvs(raw, "^resident-bench-stable\\.fast\\.csv$"),
      "large-p" = csvs(raw, "^large-p\\.csv$"),
      gpucsl = csvs(raw, "^gpucsl\\.csv$"),
      "first-call" = csvs(raw, "^first-call\\.csv$"),
      kernels = csvs(raw, "^kernels\\.csv$"),
      "fast-levels-parity" = csvs(raw, "^gpu-parity-stable\\.fast\\.csv$"),
      log = rbind_fill(list(logs(raw, "^(resident|fast|r-side(-[a-z-]+)?|pcbench-fast-trace|fast-levels(-[a-z.-]+)?)\\.log$"), logs(raw, "^large\\.log$", drop = NULL)))),
    discrete = list(
      compare = merge_compare(lapply(files(raw, "^compare.*\\.csv$"), read_csv)),
      "r-timing" = r_timing(file.path(raw, "r-timing.log")),
      log = rbind_fill(list(
        logs(raw, "^(gsquare-(munin|link)|large-input|occ-.*)\\.log$", drop = NULL),
        logs(raw, "^ncu-.*\\.log$", keep = "Duration|Executed Instructions  |L1/TEX Cache Throughput|Issue Slots Busy|excessive wavefronts", drop = NULL)))),
    sweeps = list(compare = merge_compare(lapply(files(raw, "^compare.*\\.csv$"), read_csv))),
    parity = list(
      gauss = csvs(raw, "^gpu-parity\\.csv$"),
      "gauss-fast" = csvs(raw, "^gpu-parity-stable\\.fast\\.csv$"),
      discrete = csvs(raw, "^gpu-parity-discrete\\.csv$"),
      "small-n" = csvs(raw, "^small-n-.*\\.csv$"),
      log = logs(raw, "^(parity-.*|gpu-check.*|pcbench-discrete|gsquare-link-parity|pchisq|small-n-.*)\\.log$")),
    orient = list(
      alone = csvs(raw, "^orient-alone\\.csv$"),
      e2e = csvs(raw, "^orient-e2e(-p10000|-warm-[0-9]+)?\\.csv$"),
      "discrete-timing" = csvs(raw, "^orient-discrete-timing\\.csv$"),
      "discrete-parity" = csvs(raw, "^orient-discrete-parity\\.csv$"),
      fci = csvs(raw, "^fci-bench(-p500|-discrete)?\\.csv$"),
      log = logs(raw, "^orient-.*\\.log$", keep = "^part=parity  case=|^parity:|gpupc [0-9.]+ +pcalg")),
    jtree = list(
      gpu = csvs(raw, "^jtree\\.csv$"),
      profile = csvs(raw, "^jtree-profile\\.csv$"),
      nomaps = csvs(raw, "^jtree-nomaps\\.csv$"),
      base = csvs(raw, "^jtree-base\\.csv$"),
      "profile-base" = csvs(raw, "^jtree-profile-base\\.csv$"),
      alt = csvs(raw, "^jtree-alt\\.csv$"),
      "profile-alt" = csvs(raw, "^jtree-profile-alt\\.csv$"),
      cpu = csvs(raw, "^jtree-cpu\\.csv$"),
      "cpu-base" = csvs(raw, "^jtree-cpu-base\\.csv$"),
      grain = csvs(raw, "^grain-summary.*\\.csv$"),
      path = csvs(raw, "^path\\.csv$"),
      "pyagrum-single" = csvs(raw, "^pyagrum-(single|link)\\.csv$"),
      "pyagrum-batch" = csvs(raw, "^pyagrum-batch\\.csv$"),
      "pyagrum-mpe" = csvs(raw, "^pyagrum-mpe\\.csv$"),
      "pyagrum-same-run" = csvs(raw, "^pyagrum-batch-same-run.*\\.csv$"),
      check = csvs(raw, "^jtree-check\\.csv$"),
      log = rbind_fill(list(
        logs(raw, "^grain-link\\.txt$"), logs(raw, "^r-overhead.*\\.log$"),
        logs(raw, "^r-ab.*\\.log$", keep = "^answers|munin|gpupc trace"),
        logs(raw, "^jtree-r-(pruned|held).*\\.log$"),
        logs(raw, "^jtree-(chunks|tri|pyagrum|ab-evict-first|ncu-evict-first).*\\.txt$", drop = NULL, keep = paste0(
          "^== |GPU batch|batch of|GPU vs CPU|pyAgrum [0-9]+ processes|pyAgrum one after|^[a-z]+ \\| |^network \\||",
          "dram__|lts__|^rc |cliques in [0-9]+ trees|^gpu_jtree\\(|evidence sets \\(5% observed\\) \\||^answers|",
          "^    (collect|distribute|combine|marginals) +[0-9]+ launches")),
        logs(raw, "^(jtree-)?r-profile.*\\.(txt|log)$", drop = NULL, keep = "evidence sets, |^\"[a-z_.]+\" +[0-9]"),
        logs(raw, "^jtree-ncu-.*\\.txt$", keep = paste0(
          "^  jt_[a-z_]+ \\(|Duration|DRAM Throughput|L2 Hit Rate|L1/TEX Hit Rate|Registers Per Thread|Occupancy  |",
          "Issue Slots Busy|No Eligible|Issued Instructions  |L2 Compression Input|SM Frequency|dram__|lts__"))))),
    cmiknn = list(
      timings = cmiknn_timings(raw),
      dist = cmiknn_dist(file.path(raw, "cmiknn-dist.txt")),
      "dag-gpu" = csvs(raw, "^cmiknn-dag-gpu\\.csv$"),
      "dag-r" = csvs(raw, "^cmiknn-dag-r\\.csv$"),
      log = rbind_fill(list(
        logs(raw, "^cmiknn-(check|extra|bench|cpu-pc)\\.log$", keep = "parity|identical|^pc,|^single,|^tigramite,|^#|run [0-9]+: "),
        logs(raw, "^cmiknn-pc-p200\\.log$", keep = "^level [0-9]+:|^pc,"),
        logs(raw, "^cmiknn-tigramite-empty-set\\.txt$")))),
    mpi = list(
      timing = rbind_fill(lapply(files(raw, "^mpi-.*\\.log$"), mpi_timing)),
      log = logs(raw, "^mpi-.*\\.log$", keep = "^    level |^mpi-device |rc [0-9]+|one rank against the plain call|^    run [0-9]+: plain")),
    multigpu = list(
      timing = rbind_fill(lapply(files(raw, "\\.txt$"), multigpu_timing)),
      parity = rbind_fill(lapply(files(raw, "^(parity|fault).*\\.txt$"), multigpu_parity))),
    stop("no suite ", suite))
}

# The tables (a named list) as one data frame: table, machine, source, the rest.
bind_tables <- function(tables, machine) {
  tables <- Filter(function(x) !is.null(x) && nrow(x) > 0, tables)
  if (!length(tables)) return(NULL)
  parts <- lapply(names(tables), function(t) {
    x <- tables[[t]]
    x$table <- t
    x$machine <- machine
    if (is.null(x$source)) x$source <- NA_character_
    x
  })
  res <- rbind_fill(parts)
  first <- c("table", "machine", "source")
  res[c(first, setdiff(names(res), first))]
}

# One table of a suite's CSV, with only its own columns (those not empty everywhere in it).
bench_table <- function(x, table) {
  if (is.null(x)) return(NULL)
  x <- x[x$table == table, , drop = FALSE]
  if (!nrow(x)) return(NULL)
  keep <- vapply(x, function(v) !all(is.na(v) | (is.character(v) & !nzchar(v))), NA)
  keep[c("table", "machine")] <- TRUE
  x <- x[, keep, drop = FALSE]
  rownames(x) <- NULL
  x
}

# Which rows of a table a new run replaces.
table_key <- function(suite, table, x) {
  if (suite == "jtree" && table %in% c("grain", "gpu", "pyagrum-single", "nomaps"))
    return(paste(x$machine, x$network))
  if (suite == "jtree" && table == "pyagrum-batch") return(paste(x$machine, x$network, x$mode))
  paste(x$machine, x$source)
}

read_suite <- function(f) {
  if (!file.exists(f)) return(NULL)
  utils::read.csv(f, stringsAsFactors = FALSE, check.names = FALSE)
}

publish <- function(suite, new_csv, new_machine, dest) {
  new <- read_suite(new_csv)
  if (is.null(new)) stop("no rows in ", new_csv)
  cur_f <- file.path(dest, paste0(suite, ".csv"))
  cur <- read_suite(cur_f)
  tabs <- unique(c(if (!is.null(cur)) unique(cur$table), unique(new$table)))
  out <- lapply(tabs, function(t) {
    o <- bench_table(cur, t); n <- bench_table(new, t)
    if (is.null(n)) return(o)
    if (is.null(o)) return(n)
    # the comparison rows (gauss's cpu table is one too; jtree's cpu table is pcbench rows)
    if (t == "compare" || (t == "cpu" && suite != "jtree")) {
      o$table <- NULL; n$table <- NULL
      m <- merge_compare(list(o, n))
      m$table <- t
      return(m)
    }
    rbind_fill(list(o[!table_key(suite, t, o) %in% table_key(suite, t, n), , drop = FALSE], n))
  })
  names(out) <- tabs
  res <- rbind_fill(out)
  first <- c("table", "machine", "source")
  res <- res[c(first, setdiff(names(res), first))]
  dir.create(dest, showWarnings = FALSE, recursive = TRUE)
  utils::write.csv(res, cur_f, row.names = FALSE, na = "")
  # the machine file: one section per [ID], a new run's replacing the old one
  mf <- file.path(dest, paste0(suite, ".machine.txt"))
  sections <- function(f) {
    if (!file.exists(f)) return(list())
    l <- readLines(f, warn = FALSE)
    starts <- grep("^\\[.*\\]$", l)
    if (!length(starts)) return(list())
    s <- split(l[starts[1]:length(l)], cumsum(seq(starts[1], length(l)) %in% starts))
    stats::setNames(s, vapply(s, `[`, "", 1))
  }
  ms <- sections(mf)
  nm <- sections(new_machine)
  for (k in names(nm)) ms[[k]] <- nm[[k]]
  used <- paste0("[", unique(res$machine), "]")
  ms <- ms[names(ms) %in% used]
  writeLines(unlist(lapply(ms, function(s) c(s[nzchar(s)], ""))), mf)
  cat(sprintf("%s: %d rows in %d tables (%s) -> %s\n", suite, nrow(res), length(unique(res$table)),
              paste(unique(res$table), collapse = ", "), cur_f))
}

if (sys.nframe() == 0L) {
  a <- commandArgs(trailingOnly = TRUE)
  if (length(a) == 5 && a[1] == "collect") {
    res <- bind_tables(suite_tables(a[2], a[3]), a[4])
    if (is.null(res)) { cat("no results yet in", a[3], "\n"); quit(status = 0) }
    utils::write.csv(res, a[5], row.names = FALSE, na = "")
    cat(sprintf("%s: %d rows (%s) -> %s\n", a[2], nrow(res),
                paste(sprintf("%s %d", names(table(res$table)), table(res$table)), collapse = ", "), a[5]))
  } else if (length(a) == 5 && a[1] == "publish") {
    publish(a[2], a[3], a[4], a[5])
  } else {
    stop("usage: collect.R collect SUITE RAWDIR MACHINE OUT.csv | publish SUITE NEW.csv NEW.machine.txt DESTDIR")
  }
}
