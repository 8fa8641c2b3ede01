// CMI-kNN statistics (tigramite's CMIknn) for gpupc's CUDA backend: many tests, each with its
// original data and all its permutations, in one launch.
//
// Compiled at run time by NVRTC with --fmad=false. It mirrors pc-cmiknn's estimator.rs, which
// defines the result: the counts are exact integers (the data are ranks), the per-sample term is
// (psi[kxz] + psi[kyz]) - psi[kz] read from the host's table, and the 256 terms of a block are
// added by the same halving tree; the host adds the chunk sums in chunk order. So statistic and
// p-value equal the CPU's bit for bit. A change there must be made here too.
//
// Layout: ranks is n x p, column-major (ranks[v * n + s]), every column a permutation of 0..n-1.
// Test t: x = tx[t], y = ty[t], S = ts[t * MAXL .. t * MAXL + tl[t]], its permutations start at
// perm[tperm[t] * n] (sig_samples rows of n sample indices, shared by the tests of one (x, S)
// group); permute_x says whether x (else y) is read through them.
// Grid: (chunks of 256 samples, 1 + sig_samples estimates, tests); estimate 0 is the original
// data, estimate e > 0 uses permutation e - 1. Output: partial[(t * (B + 1) + e) * chunks + c].
//
// eps of a sample (the k-th smallest joint distance to the others, an integer in 1..n-1) is found
// by bisection over the radius with counting passes (about log2 n of them), so the cost does not
// depend on k and nothing of size k is kept per thread; candidates stream through shared memory
// in tiles that every thread of the block reads alike.

typedef unsigned int u32;
typedef unsigned long long u64;

// LANES (threads per block, samples per chunk) and MAXL (the deepest level) come from the host's
// constants as -D options (module.rs, Family::defines).
#define MAXD (MAXL + 2)

__device__ __forceinline__ u32 absd(u32 a, u32 b) { return a > b ? a - b : b - a; }

extern "C" __global__ void __launch_bounds__(LANES) cmiknn_partials(
    const u32* __restrict__ ranks, u32 n, const double* __restrict__ psi, u32 k,
    const u32* __restrict__ tx, const u32* __restrict__ ty, const u32* __restrict__ tl,
    const u32* __restrict__ ts, const u32* __restrict__ tperm, const u32* __restrict__ perm,
    u32 permute_x, u32 n_est, double* __restrict__ partial)
{
    __shared__ u32 tile[LANES * MAXD];
    __shared__ double red[LANES];
    const u32 chunk = blockIdx.x, e = blockIdx.y, t = blockIdx.z;
    const u32 tid = threadIdx.x;
    const u32 a = chunk * LANES + tid;
    const bool live = a < n;
    const u32 l = tl[t], d = l + 2;
    const u32* cx = ranks + (u64)tx[t] * n;
    const u32* cy = ranks + (u64)ty[t] * n;
    const u32* pr = e == 0 ? 0 : perm + ((u64)tperm[t] + (e - 1)) * n;
    u32 cz[MAXL];
    for (u32 j = 0; j < l; j++) cz[j] = ts[t * MAXL + j];

    // the row of sample s as the estimator sees it: [x, y, z_1..z_l]
    #define ROW_X(s) (pr != 0 && permute_x ? cx[pr[s]] : cx[s])
    #define ROW_Y(s) (pr != 0 && !permute_x ? cy[pr[s]] : cy[s])

    u32 me[MAXD];
    if (live) {
        me[0] = ROW_X(a);
        me[1] = ROW_Y(a);
        for (u32 j = 0; j < l; j++) me[2 + j] = ranks[(u64)cz[j] * n + a];
    }

    // bisection: the smallest r with #{b != a : d(a, b) <= r} >= k lies in [lo, hi]
    u32 lo = 1, hi = n - 1;
    u32 kxz = 0, kyz = 0, kz = 0;
    // passes: bisection steps while any thread of the block is unsettled, then one counting pass
    for (;;) {
        const bool searching = live && lo < hi;
        const int any = __syncthreads_or(searching);
        const bool counting = !any;
        const u32 mid = lo + (hi - lo) / 2;
        u32 cnt = 0;
        for (u32 base = 0; base < n; base += LANES) {
            __syncthreads();
            const u32 s = base + tid;
            if (s < n) {
                tile[tid * MAXD + 0] = ROW_X(s);
                tile[tid * MAXD + 1] = ROW_Y(s);
                for (u32 j = 0; j < l; j++) tile[tid * MAXD + 2 + j] = ranks[(u64)cz[j] * n + s];
            }
            __syncthreads();
            const u32 m = min((u32)LANES, n - base);
            if (counting && live) {
                for (u32 i = 0; i < m; i++) {
                    const u32* r = tile + i * MAXD;
                    u32 dz = 0;
                    for (u32 j = 2; j < d; j++) dz = max(dz, absd(me[j], r[j]));
                    if (dz < lo) {
                        kz++;
                        kxz += absd(me[0], r[0]) < lo;
                        kyz += absd(me[1], r[1]) < lo;
                    }
                }
            } else if (searching) {
                for (u32 i = 0; i < m; i++) {
                    const u32* r = tile + i * MAXD;
                    u32 dd = 0;
                    for (u32 j = 0; j < d; j++) dd = max(dd, absd(me[j], r[j]));
                    cnt += dd <= mid;
                }
            }
        }
        if (counting) break;
        if (searching) {
            // the sample itself is at distance 0 <= mid: not one of its neighbours
            if (cnt - 1 >= k) hi = mid; else lo = mid + 1;
        }
    }
    #undef ROW_X
    #undef ROW_Y

    red[tid] = live ? (psi[kxz] + psi[kyz]) - psi[kz] : 0.0;
    for (u32 s = LANES / 2; s > 0; s >>= 1) {
        __syncthreads();
        if (tid < s) red[tid] = red[tid] + red[tid + s];
    }
    if (tid == 0) {
        const u32 chunks = gridDim.x;
        partial[((u64)t * n_est + e) * chunks + chunk] = red[0];
    }
}
