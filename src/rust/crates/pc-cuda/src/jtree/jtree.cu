// Junction-tree propagation for a batch of B evidence sets (pc-jtree's engine, same arithmetic).
// Value (cell, row) of a table sits at cell * B + row. Projections: clique cell = base[j] + off[t]
// (off = t when marked identity); a clique cell r maps to subset cell j =
// sum_i (r / stride_i % card_i) * sstride_i.
//
// Threads: a block of 256 is 256 / W groups of W lanes (W = 2^lw, the smallest power of two >= B,
// at most 32). A group takes one unit at a time (a clique cell, or a projection's item), grid-
// stride over blockIdx.x, and does that unit's index arithmetic (which clique, which separator
// cells) once; its lanes then take the rows b = blockIdx.y * W + lane, + gridDim.y * W, ... < B.
// So with B in the hundreds a warp is one cell and 32 consecutive rows (coalesced), and the index
// work of a cell is shared by all its rows instead of being repeated per (cell, row).
// Every launch covers one tree depth (all its cliques or separators). Collect is one fused
// kernel per depth (jt_collect: build, store and marginalise each table in one pass).

typedef unsigned long long u64;
typedef unsigned int u32;

struct Proj {
    u64 table, out, base, off, len;
    u32 nbase, off_ident, dig, ndig;
};

__device__ __forceinline__ u32 find_start(const u64* starts, u64 lo_val, u32 n, u64 g) {
    // last i with starts[i] - lo_val <= g
    u32 lo = 0, hi = n;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (starts[mid] - lo_val <= g) lo = mid; else hi = mid;
    }
    return lo;
}

// A clique has fewer than 2^32 cells: 32-bit division (64-bit division is many times slower).
__device__ __forceinline__ u64 subset_cell(const Proj& p, const u32* dig, u64 r64) {
    u32 r = (u32)r64;
    u64 j = 0;
    for (u32 i = 0; i < p.ndig; i++) {
        const u32* d = dig + 4 * (p.dig + i);
        j += (u64)((r / d[1]) % d[2]) * d[3];
    }
    return j;
}

struct Lanes {
    u64 grp, ngrp;  // this group, number of groups
    u32 b0, bstep;  // first row, row step
};

__device__ __forceinline__ Lanes lanes(u32 lw) {
    Lanes l;
    u32 gpb = blockDim.x >> lw;
    l.grp = (u64)blockIdx.x * gpb + (threadIdx.x >> lw);
    l.ngrp = (u64)gridDim.x * gpb;
    l.b0 = blockIdx.y * (1u << lw) + (threadIdx.x & ((1u << lw) - 1));
    l.bstep = gridDim.y << lw;
    return l;
}

// Item g (counted from istart[p0] = lo) of a launch over projections p0..p0+np: item k of
// projection i is (j, part) = (k / parts, k % parts), a run t0..t1 of at most `split`
// configurations. A projection of one part writes its output, one of several its partial sums
// (to scratch, at the item's place), which jt_combine then adds in order.
struct Item {
    u32 i;
    u64 j;
    u32 t0, t1;
    double* dst;
};

__device__ __forceinline__ Item item_at(const Proj* pj, const u64* istart, u32 p0, u32 np, u64 lo, u64 g, u64 split,
                                        u32 B, double* out, double* scratch) {
    Item it;
    it.i = p0 + find_start(istart + p0, lo, np, g);
    const Proj& p = pj[it.i];
    u64 parts = (p.len + split - 1) / split;
    u64 k = g - (istart[it.i] - lo);
    it.j = k / parts;
    u64 part = k % parts;
    it.t0 = (u32)(part * split);
    it.t1 = (u32)min(p.len, (part + 1) * split);
    it.dst = parts == 1 ? out + (p.out + it.j) * B : scratch + g * B;
    return it;
}

// Collect's runs are unrolled by RUN cells (collect_run).
#define RUN 4

// Collect with the cell maps, cells t..t+U of a run for one row: the U cells' loads first (a
// thread has U chains of dependent loads in flight rather than one), then the stores and the sum
// in cell order. Each value is the potential, times the evidence of its homed variables, times
// its children's messages in child order (per value exactly the one-cell loop's product), stored
// into its table and added (or maxed) into acc.
template <int U>
__device__ __forceinline__ double collect_run(u32 t, u32 b, u32 B, bool ident, const u32* op, u32 bj, const u32* mp, u32 e,
                                              const double* pot, u32 nh, const u32* hm, u32 nch, const int* hard,
                                              const int* soft_col, const double* soft, const double* msg, double* tb,
                                              int mode, double acc) {
    u32 r[U];
    const u32* m[U];
    double v[U];
#pragma unroll
    for (int u = 0; u < U; u++) {
        r[u] = bj + (ident ? t + u : op[t + u]);
        m[u] = mp + (u64)r[u] * e;
        v[u] = pot[r[u]];
    }
    for (u32 h = 0; h < nh; h++) {
        u32 var = hm[3 * h];
        int hv = hard[(u64)var * B + b];
        int col = soft_col[var];
#pragma unroll
        for (int u = 0; u < U; u++) {
            int s = (int)m[u][1 + nch + h];
            if (hv >= 0 && hv != s) v[u] = 0.0;
            if (col >= 0) v[u] *= soft[((u64)col + (u64)s) * B + b];
        }
    }
    for (u32 q = 0; q < nch; q++) {
#pragma unroll
        for (int u = 0; u < U; u++) v[u] *= msg[(u64)m[u][1 + q] * B + b];
    }
#pragma unroll
    for (int u = 0; u < U; u++) {
        tb[(u64)r[u] * B + b] = v[u];
        if (mode == 0) acc += v[u]; else if (v[u] > acc) acc = v[u];
    }
    return acc;
}

// Projections p0..p0+np of the tables (mode 0 sum, 1 max), an item (item_at) per group. With `ratio`
// (distribute) the output is the child's distribute factor: the sum over the message sent up
// from the same cells (0 where that is 0), computed once per separator cell instead of once per
// clique cell. jt_reduce reads the tables as they are (the roots' projections at depth 0: a
// root's collected values are calibrated); jt_reduce_cal the rest.
extern "C" __global__ void jt_reduce(const Proj* pj, const u64* istart, u32 p0, u32 np, u64 items, u32 B, u32 lw,
                                     int mode, u64 split, const u32* bpool, const u32* opool,
                                     const double* tables, double* out, double* scratch, int ratio, const double* old) {
    Lanes l = lanes(lw);
    u64 lo = istart[p0];
    for (u64 g = l.grp; g < items; g += l.ngrp) {
        Item it = item_at(pj, istart, p0, np, lo, g, split, B, out, scratch);
        const Proj& p = pj[it.i];
        bool whole = p.len <= split;
        const double* tb = tables + (p.table + bpool[p.base + it.j]) * B;
        const u32* op = opool + p.off;
        bool ident = p.off_ident != 0;
        for (u32 b = l.b0; b < B; b += l.bstep) {
            const double* tr = tb + b;
            double acc = 0.0;
            if (mode == 0) {
                if (ident) for (u32 t = it.t0; t < it.t1; t++) acc += tr[(u64)t * B];
                else for (u32 t = it.t0; t < it.t1; t++) acc += tr[(u64)op[t] * B];
            } else {
                for (u32 t = it.t0; t < it.t1; t++) {
                    double x = tr[(u64)(ident ? t : op[t]) * B];
                    if (x > acc) acc = x;
                }
            }
            if (ratio && whole) {
                double o = old[(p.out + it.j) * B + b];
                acc = o == 0.0 ? 0.0 : acc / o;
            }
            it.dst[b] = acc;
        }
    }
}

// jt_reduce over calibrated values, with no table written after collect: a projection of a
// non-root clique's table (fac[i] != 0) reads each value times the clique's distribute factor
// at its up separator cell (in dm): the value the CPU engine's scatter writes into the table and
// its reduce reads (the same product, summed in the same order). That cell is
// fa[p.base + j] + fb[fb_off[i] + t]: the base and the offset hold the digits of disjoint
// variables, so their up separator cells add. Distribute (`ratio`) writes the children's factors
// into dm (out null) while it reads their parents' (disjoint cells); the marginals write `out`.
extern "C" __global__ void jt_reduce_cal(const Proj* pj, const u64* istart, u32 p0, u32 np, u64 items, u32 B, u32 lw,
                                         int mode, u64 split, const u32* bpool, const u32* opool,
                                         const double* tables, double* out, double* scratch, int ratio,
                                         const double* old, const u32* fac, const u64* fa, const u64* fb_off,
                                         const u32* fb, double* dm) {
    Lanes l = lanes(lw);
    u64 lo = istart[p0];
    double* res = out ? out : dm;
    for (u64 g = l.grp; g < items; g += l.ngrp) {
        Item it = item_at(pj, istart, p0, np, lo, g, split, B, res, scratch);
        const Proj& p = pj[it.i];
        bool whole = p.len <= split;
        const double* tb = tables + (p.table + bpool[p.base + it.j]) * B;
        const u32* op = opool + p.off;
        bool ident = p.off_ident != 0;
        bool fc = fac[it.i] != 0;
        const double* f = dm + (fc ? fa[p.base + it.j] : 0) * B;
        const u32* fo = fb + fb_off[it.i];
        for (u32 b = l.b0; b < B; b += l.bstep) {
            const double* tr = tb + b;
            const double* fr = f + b;
            double acc = 0.0;
            for (u32 t = it.t0; t < it.t1; t++) {
                u32 o = ident ? t : op[t];
                double x = fc ? __dmul_rn(tr[(u64)o * B], fr[(u64)fo[t] * B]) : tr[(u64)o * B];
                if (mode == 0) acc += x; else if (x > acc) acc = x;
            }
            if (ratio && whole) {
                double o = old[(p.out + it.j) * B + b];
                acc = o == 0.0 ? 0.0 : acc / o;
            }
            it.dst[b] = acc;
        }
    }
}

// The partial sums of the split projections among p0..p0+np (outputs contiguous from
// pj[p0].out, `cells` of them), in part order.
extern "C" __global__ void jt_combine(const Proj* pj, const u64* outs, const u64* istart, u32 p0, u32 np, u64 cells,
                                      u32 B, u32 lw, int mode, u64 split, const double* scratch, double* out, int ratio,
                                      const double* old) {
    Lanes l = lanes(lw);
    u64 lo = outs[p0];
    for (u64 g = l.grp; g < cells; g += l.ngrp) {
        u32 i = p0 + find_start(outs + p0, lo, np, g);
        const Proj& p = pj[i];
        u64 parts = (p.len + split - 1) / split;
        if (parts == 1) continue;
        u64 j = g - (p.out - lo);
        const double* sc = scratch + (istart[i] - istart[p0] + j * parts) * B;
        double* dst = out + (p.out + j) * B;
        for (u32 b = l.b0; b < B; b += l.bstep) {
            double acc = 0.0;
            for (u64 k = 0; k < parts; k++) {
                double x = sc[k * B + b];
                if (mode == 0) acc += x; else if (x > acc) acc = x;
            }
            if (ratio) {
                double o = old[(p.out + j) * B + b];
                acc = o == 0.0 ? 0.0 : acc / o;
            }
            dst[b] = acc;
        }
    }
}

// Collect at one depth, fused: cliques p0..p0+np (their up projections are projections p0..; a
// clique's number is its up projection's) build their tables (the potentials times the evidence
// of the chunk's rows, times their children's messages in child order: the CPU engine's init and
// absorb, value for value), store them and marginalise them onto their separators in the same
// pass (items and parts as jt_reduce). Each cell of a clique lies on exactly one (item, t), so
// every table value is written once and never read back here. `msg`: the children's messages
// are read (deeper cliques), this depth's written (other cells). With the cell maps (`map`, not
// null: jt_maps) a cell's separator cells and homed states are read instead of computed. Evidence
// by variable:
// hard[var * B + b] (state or -1), soft[(col + s) * B + b].
extern "C" __global__ void jt_collect(const Proj* pj, const u64* istart, u32 p0, u32 np, u64 items, u32 B, u32 lw,
                                      int mode, u64 split, const u32* bpool, const u32* opool, const u32* dig, u32 k,
                                      const u32* cl_child, const u32* homed_start, const u32* homed,
                                      const double* base, const int* hard, const int* soft_col, const double* soft,
                                      double* tables, double* msg, double* scratch, const u64* map_off, const u32* map) {
    Lanes l = lanes(lw);
    u64 lo = istart[p0];
    for (u64 g = l.grp; g < items; g += l.ngrp) {
        Item it = item_at(pj, istart, p0, np, lo, g, split, B, msg, scratch);
        u32 i = it.i, t0 = it.t0, t1 = it.t1;
        const Proj& p = pj[i];
        u32 bj = bpool[p.base + it.j];
        double* dst = it.dst;
        const u32* op = opool + p.off;
        bool ident = p.off_ident != 0;
        const double* pot = base + p.table;
        double* tb = tables + p.table * B;
        u32 h0 = homed_start[i], h1 = homed_start[i + 1];
        u32 c0 = cl_child[2 * i], c1 = c0 + cl_child[2 * i + 1];
        if (map) {
            // the cell maps: a cell's separator cells and homed states read, not divided out
            u32 nch = c1 - c0, nh = h1 - h0, e = 1 + nch + nh;
            const u32* mp = map + map_off[i];
            const u32* hm = homed + 3 * h0;
            for (u32 b = l.b0; b < B; b += l.bstep) {
                double acc = 0.0;
                u32 t = t0;
                for (; t + RUN <= t1; t += RUN)
                    acc = collect_run<RUN>(t, b, B, ident, op, bj, mp, e, pot, nh, hm, nch, hard, soft_col, soft, msg, tb, mode, acc);
                for (; t < t1; t++)
                    acc = collect_run<1>(t, b, B, ident, op, bj, mp, e, pot, nh, hm, nch, hard, soft_col, soft, msg, tb, mode, acc);
                dst[b] = acc;
            }
            continue;
        }
        for (u32 b = l.b0; b < B; b += l.bstep) {
            double acc = 0.0;
            for (u32 t = t0; t < t1; t++) {
                u32 r = bj + (ident ? t : op[t]);
                double v = pot[r];
                for (u32 h = h0; h < h1; h++) {
                    u32 var = homed[3 * h], st = homed[3 * h + 1], cd = homed[3 * h + 2];
                    int s = (int)((r / st) % cd);
                    int hv = hard[(u64)var * B + b];
                    if (hv >= 0 && hv != s) v = 0.0;
                    int col = soft_col[var];
                    if (col >= 0) v *= soft[((u64)col + (u64)s) * B + b];
                }
                for (u32 ch = c0; ch < c1; ch++) {
                    const Proj& q = pj[k + ch];
                    v *= msg[(q.out + subset_cell(q, dig, r)) * B + b];
                }
                tb[(u64)r * B + b] = v;
                if (mode == 0) acc += v; else if (v > acc) acc = v;
            }
            dst[b] = acc;
        }
    }
}

// The cell maps, once per tree: per clique cell (cells of clique c from map_off[c], 1 + children
// + homed entries each) its up separator cell, its children's separator cells (in child order)
// and its homed variables' states.
extern "C" __global__ void jt_maps(const u64* cl_off, u32 nc, u64 cells, const Proj* pj, u32 k, const u32* dig,
                                   const u32* cl_child, const u32* homed_start, const u32* homed, const u64* map_off,
                                   u32* map) {
    for (u64 g = blockIdx.x * (u64)blockDim.x + threadIdx.x; g < cells; g += (u64)gridDim.x * blockDim.x) {
        u32 c = find_start(cl_off, 0, nc, g);
        u32 r = (u32)(g - cl_off[c]);
        u32 c0 = cl_child[2 * c], nch = cl_child[2 * c + 1], h0 = homed_start[c], h1 = homed_start[c + 1];
        u32* m = map + map_off[c] + (u64)r * (1 + nch + h1 - h0);
        m[0] = (u32)(pj[c].out + subset_cell(pj[c], dig, r));
        for (u32 q = 0; q < nch; q++) {
            const Proj& p = pj[k + c0 + q];
            m[1 + q] = (u32)(p.out + subset_cell(p, dig, r));
        }
        for (u32 h = h0; h < h1; h++) m[1 + nch + h - h0] = (r / homed[3 * h + 1]) % homed[3 * h + 2];
    }
}

// One thread per row: the MPE from the roots down (in each clique the largest cell consistent with
// the variables already fixed, ties to the lowest cell).
extern "C" __global__ void jt_decode(const u64* cl_off, u32 k, u64 B, const Proj* pj, const u32* bpool,
                                     const u32* opool, const u32* dig, const u32* vars_start, const u32* vars,
                                     u32 n, const double* tables, int* x) {
    for (u64 b = blockIdx.x * (u64)blockDim.x + threadIdx.x; b < B; b += (u64)gridDim.x * blockDim.x) {
        int* xb = x + b * n;
        for (u32 c = 0; c < k; c++) {
            Proj p = pj[c];
            u64 j = 0;
            for (u32 i = 0; i < p.ndig; i++) {
                const u32* d = dig + 4 * (p.dig + i);
                j += (u64)xb[d[0]] * d[3];
            }
            u64 bj = bpool[p.base + j];
            double best = -1.0;
            u64 br = 0;
            for (u64 t = 0; t < p.len; t++) {
                u64 r = bj + (p.off_ident ? t : (u64)opool[p.off + t]);
                double v = tables[(cl_off[c] + r) * B + b];
                if (v > best) { best = v; br = r; }
            }
            for (u32 i = vars_start[c]; i < vars_start[c + 1]; i++) {
                xb[vars[3 * i]] = (int)((br / vars[3 * i + 1]) % vars[3 * i + 2]);
            }
        }
    }
}
