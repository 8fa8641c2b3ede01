# Thin wrappers over the Rust entry points (crates/gpupc-r/src/entry.rs). Written by hand: the
# set is small, and generating it would need R at cargo build time. Each passes its result
# through rust_value() (R/errors.R), which raises a Rust error as gpupc's classed condition;
# rs_rfun_stop() alone does not (it runs in on.exit(), where a second error would mask the first).
# Those that may compile GPU kernels run inside with_kernel_cache() (R/kernel_cache.R).

rs_skeleton <- function(test, data, args, backend, hooks) {
  with_kernel_cache(rust_value(.Call(wrap__gpupc_skeleton, test, data, args, backend, hooks)))
}

rs_sepsets <- function(handle, compact, object = NULL, made = NULL) rust_value(.Call(wrap__gpupc_sepsets, handle, compact, object, made))
rs_with_sepsets <- function(object, list) rust_value(.Call(wrap__gpupc_with_sepsets, object, list))

rs_graph_parts <- function(from, to, labels, keys) rust_value(.Call(wrap__gpupc_graph_parts, from, to, labels, keys))

rs_gpu_info <- function() rust_value(.Call(wrap__gpupc_gpu_info))

rs_choose_engine <- function(work, backend, p, n, devices) {
  rust_value(.Call(wrap__gpupc_choose_engine, work, backend, as.double(p), as.double(n), devices))
}

rs_choose_devices <- function(devices, work, size, usable) {
  rust_value(.Call(wrap__gpupc_choose_devices, devices, work, as.double(size), usable))
}

# `threads` hash large vectors (the digest does not depend on them)
rs_input_digest <- function(x, threads = digest_threads()) {
  rust_value(.Call(wrap__gpupc_input_digest, x, as.integer(threads)))
}

# writes into `dst` in place (R/cluster.R's exchanges, on vectors they allocated themselves)
rs_raw_copy <- function(dst, at, src, from, n) {
  invisible(rust_value(.Call(wrap__gpupc_raw_copy, dst, as.double(at), src, as.double(from), as.double(n))))
}

rs_cpu_threads <- function() rust_value(.Call(wrap__gpupc_cpu_threads))

rs_rfun_start <- function(args) rust_value(.Call(wrap__gpupc_rfun_start, args))

rs_rfun_step <- function(handle, answer) rust_value(.Call(wrap__gpupc_rfun_step, handle, answer))

rs_rfun_stop <- function(handle) .Call(wrap__gpupc_rfun_stop, handle)

rs_memory_plan <- function(p, test_bytes, start_edges, dense_levels, sepset_rows) {
  rust_value(.Call(wrap__gpupc_memory_plan, p, test_bytes, start_edges, dense_levels, sepset_rows))
}

rs_device_plan <- function(test, p, n, free) rust_value(.Call(wrap__gpupc_device_plan, test, p, n, free))

rs_cmiknn_test <- function(data, vars, threads) rust_value(.Call(wrap__gpupc_cmiknn_test, data, vars, threads))

rs_jt_compile <- function(names, states, parents, cpts, triangulation, max_cells, threads) {
  rust_value(.Call(wrap__gpupc_jt_compile, names, states, parents, cpts, triangulation, max_cells, threads))
}

rs_jt_codes <- function(cols, states, maps, nodes, rows, n) {
  rust_value(.Call(wrap__gpupc_jt_codes, cols, states, maps, nodes, rows, n))
}

rs_jt_query <- function(ptr, ev, query, hooks = list()) {
  with_kernel_cache(rust_value(.Call(wrap__gpupc_jt_query, ptr, ev, query, hooks)))
}

rs_orient <- function(edges, sepset, test, data, unf, settings) {
  with_kernel_cache(rust_value(.Call(wrap__gpupc_orient, edges, sepset, test, data, unf, settings)))
}
rs_sepset_handle <- function(sepset) rust_value(.Call(wrap__gpupc_sepset_handle, sepset))

rs_kernel_cache_use <- function(dir) invisible(rust_value(.Call(wrap__gpupc_kernel_cache_use, dir)))
rs_kernel_cache_notice <- function() rust_value(.Call(wrap__gpupc_kernel_cache_notice))
rs_kernel_cache_info <- function(dir) rust_value(.Call(wrap__gpupc_kernel_cache_info, dir))
rs_kernel_cache_clear <- function(dir) rust_value(.Call(wrap__gpupc_kernel_cache_clear, dir))
rs_kernel_prefetch_wait <- function() invisible(.Call(wrap__gpupc_kernel_prefetch_wait))
rs_pdsep <- function(edges, sepset, pmax, fixed, test, data, settings) {
  with_kernel_cache(rust_value(.Call(wrap__gpupc_pdsep, edges, sepset, pmax, fixed, test, data, settings)))
}

rs_rfci <- function(edges, sepset, test, data, settings) {
  rust_value(.Call(wrap__gpupc_rfci, edges, sepset, test, data, settings))
}

rs_fci_triples <- function(edges, sepset, test, data, settings) {
  with_kernel_cache(rust_value(.Call(wrap__gpupc_fci_triples, edges, sepset, test, data, settings)))
}
rs_udag2pag <- function(pag, p, sepset, rules, unf, jci, context, orient_collider) {
  rust_value(.Call(wrap__gpupc_udag2pag, pag, p, sepset, rules, unf, jci, context, orient_collider))
}
