// Junction-tree propagation for a batch of B evidence sets (pc-jtree's engine, same arithmetic).
// Value (cell, row) of a table sits at cell * B + row, so consecutive threads (rows) read
// consecutive doubles. Projections: clique cell = base[j] + off[t] (off = t when marked identity);
// a clique cell r maps to subset cell j = sum_i (r / stride_i % card_i) * sstride_i.
// Every launch covers one tree depth (all its cliques or separators); threads loop grid-stride.

typedef unsigned long long u64;
typedef unsigned int u32;

struct Proj {
    u64 table, out, base, off, len;
    u32 nbase, off_ident, dig, ndig;
};

__device__ __forceinline__ u64 find_start(const u64* starts, u64 lo_val, u32 n, u64 g) {
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

// Projections p0..p0+np of the tables (mode 0 sum, 1 max); item k of projection i is (j, part)
// = (k / parts, k % parts), a run of at most `split` configurations. Items start at istart[i];
// a projection of one part writes its output, one of several its partial sums (to scratch, at
// the item's place counted from istart[p0]), which jt_combine then adds in order.
extern "C" __global__ void jt_reduce(const Proj* pj, const u64* istart, u32 p0, u32 np, u64 items, u64 B, int mode,
                                     u64 split, const u32* bpool, const u32* opool, const double* tables, double* out,
                                     double* scratch) {
    u64 lo = istart[p0];
    u64 total = items * B;
    for (u64 idx = blockIdx.x * (u64)blockDim.x + threadIdx.x; idx < total; idx += (u64)gridDim.x * blockDim.x) {
        u64 g = idx / B, b = idx % B;
        u32 i = p0 + (u32)find_start(istart + p0, lo, np, g);
        Proj p = pj[i];
        u64 parts = (p.len + split - 1) / split;
        u64 k = g - (istart[i] - lo);
        u64 j = k / parts, part = k % parts;
        u64 base = p.table + bpool[p.base + j];
        u64 t1 = min(p.len, (part + 1) * split);
        double acc = 0.0;
        for (u64 t = part * split; t < t1; t++) {
            u64 o = p.off_ident ? t : (u64)opool[p.off + t];
            double x = tables[(base + o) * B + b];
            if (mode == 0) acc += x; else if (x > acc) acc = x;
        }
        if (parts == 1) out[(p.out + j) * B + b] = acc;
        else scratch[g * B + b] = acc;
    }
}

// The partial sums of the split projections among p0..p0+np (outputs contiguous from
// pj[p0].out, `cells` of them), in part order.
extern "C" __global__ void jt_combine(const Proj* pj, const u64* outs, const u64* istart, u32 p0, u32 np, u64 cells,
                                      u64 B, int mode, u64 split, const double* scratch, double* out) {
    u64 lo = outs[p0];
    u64 total = cells * B;
    for (u64 idx = blockIdx.x * (u64)blockDim.x + threadIdx.x; idx < total; idx += (u64)gridDim.x * blockDim.x) {
        u64 g = idx / B, b = idx % B;
        u32 i = p0 + (u32)find_start(outs + p0, lo, np, g);
        Proj p = pj[i];
        u64 parts = (p.len + split - 1) / split;
        if (parts == 1) continue;
        u64 j = g - (p.out - lo);
        u64 first = istart[i] - istart[p0] + j * parts;
        double acc = 0.0;
        for (u64 k = 0; k < parts; k++) {
            double x = scratch[(first + k) * B + b];
            if (mode == 0) acc += x; else if (x > acc) acc = x;
        }
        out[(p.out + j) * B + b] = acc;
    }
}

// f(c, r, v) for every cell of cliques c0..c0+nc (one depth, or all) and every row: c the
// clique, r the cell in it, v the table value; grid-stride.
template <class F>
__device__ __forceinline__ void for_cells(const u64* cl_off, u32 c0, u32 nc, u64 cells, u64 B, double* tables, F f) {
    u64 lo = cl_off[c0];
    u64 total = cells * B;
    for (u64 idx = blockIdx.x * (u64)blockDim.x + threadIdx.x; idx < total; idx += (u64)gridDim.x * blockDim.x) {
        u64 g = idx / B, b = idx % B;
        u32 c = c0 + (u32)find_start(cl_off + c0, lo, nc, g);
        f(c, lo + g - cl_off[c], b, tables[(lo + g) * B + b], lo + g);
    }
}

// Cliques c0..c0+nc: the potentials times the evidence of the chunk's rows.
extern "C" __global__ void jt_init(const u64* cl_off, u32 c0, u32 nc, u64 cells, u64 B, const u32* homed_start,
                                   const u32* homed, const double* base, const int* hard, u32 n, const int* soft_col,
                                   u64 soft_width, const double* soft, double* tables) {
    for_cells(cl_off, c0, nc, cells, B, tables, [&](u32 c, u64 r, u64 b, double& v, u64 cell) {
        double y = base[cell];
        for (u32 h = homed_start[c]; h < homed_start[c + 1]; h++) {
            u32 var = homed[3 * h], st = homed[3 * h + 1], cd = homed[3 * h + 2];
            int s = (int)(((u32)r / st) % cd);
            int hv = hard[b * n + var];
            if (hv >= 0 && hv != s) y = 0.0;
            int col = soft_col[var];
            if (col >= 0) y *= soft[b * soft_width + (u64)col + (u64)s];
        }
        v = y;
    });
}

// Cliques c0..c0+nc (one depth) multiply in their children's messages, in child order.
extern "C" __global__ void jt_absorb(const u64* cl_off, u32 c0, u32 nc, u64 cells, u64 B, const u32* cl_child,
                                     const Proj* pj, u32 k, const u32* dig, const double* msg, double* tables) {
    for_cells(cl_off, c0, nc, cells, B, tables, [&](u32 c, u64 r, u64 b, double& v, u64) {
        u32 first = cl_child[2 * c], nch = cl_child[2 * c + 1];
        for (u32 ch = first; ch < first + nch; ch++) {
            Proj p = pj[k + ch];
            v *= msg[(p.out + subset_cell(p, dig, r)) * B + b];
        }
    });
}

// Cliques c0..c0+nc (one depth) take their parent's separator marginal over their own message.
extern "C" __global__ void jt_scatter(const u64* cl_off, u32 c0, u32 nc, u64 cells, u64 B, const Proj* pj,
                                      const u32* dig, const double* msg, const double* dmsg, double* tables) {
    for_cells(cl_off, c0, nc, cells, B, tables, [&](u32 c, u64 r, u64 b, double& v, u64) {
        Proj p = pj[c];
        u64 m = (p.out + subset_cell(p, dig, r)) * B + b;
        double old = msg[m];
        v *= (old == 0.0 ? 0.0 : dmsg[m] / old);
    });
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
