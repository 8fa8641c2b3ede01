# Writes a bundled network's sample (the data compare.R's discrete suite uses: lib.R's network_data,
# same seed) as a binary file that `pcbench discrete --codes FILE` reads, so the G^2 kernels can be
# timed on real networks on a machine without R:
#   Rscript bench/lib/export-codes.R NAME N OUT.bin [SEED]      (e.g. munin 20000 munin.bin)
# Format, little-endian: n and p (u32), p level counts (u32), then n * p codes (u8, column-major).
args <- commandArgs(trailingOnly = TRUE)
if (length(args) < 3) stop("usage: export-codes.R NAME N OUT.bin [SEED]")
here <- dirname(normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))))
suppressPackageStartupMessages({ library(pcalg); library(gpupc) })
source(file.path(here, "lib.R"))
d <- network_data(args[[1]], as.numeric(args[[2]]), seed = if (length(args) > 3) as.integer(args[[4]]) else 1)
if (max(d$suff$nlev) > 255) stop("more than 255 levels")
con <- file(args[[3]], "wb")
writeBin(as.integer(c(d$n, d$p, d$suff$nlev)), con, size = 4, endian = "little")
writeBin(as.raw(as.vector(d$suff$dm)), con)
close(con)
cat(sprintf("%s: n = %d, p = %d, levels up to %d -> %s\n", d$id, d$n, d$p, max(d$suff$nlev), args[[3]]))
