// C = Z'Z from standardised columns (pc-core's corr.rs has the contract): each entry one
// sequential chain of fused multiply-adds over the observations in order, as on the CPU, so both
// backends hold the same C bit for bit. C is written whole (column-major p x p): the block of
// tile (ti, tj), ti <= tj, writes its entries and their mirrors; the diagonal is exactly 1.

// CT, the tile side (entries of C), comes from the host as a -D option (module.rs, Family::defines).
#define KT 16   // observations per shared-memory step

extern "C" __global__ void corr_syrk(const double* __restrict__ z, unsigned long long n,
                                     unsigned int p, double* __restrict__ c) {
    const unsigned int ti = blockIdx.y, tj = blockIdx.x;
    if (tj < ti) return;
    __shared__ double as[KT][CT + 1];
    __shared__ double bs[KT][CT + 1];
    const unsigned int t = threadIdx.x;          // 256 threads: 16 x 16, 4 x 4 entries each
    const unsigned int tx = t % 16, ty = t / 16;
    const unsigned int i0 = ti * CT, j0 = tj * CT;
    double acc[4][4];
#pragma unroll
    for (int a = 0; a < 4; a++)
#pragma unroll
        for (int b = 0; b < 4; b++) acc[a][b] = 0.0;
    for (unsigned long long k0 = 0; k0 < n; k0 += KT) {
        // 1024 values per tile: thread t loads 4 (column e / KT, observation e % KT)
#pragma unroll
        for (int r = 0; r < 4; r++) {
            const unsigned int e = t + 256 * r;
            const unsigned int col = e / KT, kk = e % KT;
            const unsigned long long k = k0 + kk;
            const unsigned int ci = i0 + col, cj = j0 + col;
            as[kk][col] = (k < n && ci < p) ? z[(unsigned long long)ci * n + k] : 0.0;
            bs[kk][col] = (k < n && cj < p) ? z[(unsigned long long)cj * n + k] : 0.0;
        }
        __syncthreads();
        const unsigned int kmax = (n - k0 < KT) ? (unsigned int)(n - k0) : KT;
        // observations past n must not enter the chain (fma(0, 0, acc) = acc, but the CPU's
        // chain has exactly n steps; stopping at kmax keeps the two identical even for -0.0)
        for (unsigned int kk = 0; kk < kmax; kk++) {
            double av[4], bv[4];
#pragma unroll
            for (int a = 0; a < 4; a++) av[a] = as[kk][ty + 16 * a];
#pragma unroll
            for (int b = 0; b < 4; b++) bv[b] = bs[kk][tx + 16 * b];
#pragma unroll
            for (int a = 0; a < 4; a++)
#pragma unroll
                for (int b = 0; b < 4; b++) acc[a][b] = fma(av[a], bv[b], acc[a][b]);
        }
        __syncthreads();
    }
#pragma unroll
    for (int a = 0; a < 4; a++) {
        const unsigned int i = i0 + ty + 16 * a;
#pragma unroll
        for (int b = 0; b < 4; b++) {
            const unsigned int j = j0 + tx + 16 * b;
            if (i >= p || j >= p || j < i) continue;
            const double v = (i == j) ? 1.0 : fmin(1.0, fmax(-1.0, acc[a][b]));
            c[(unsigned long long)j * p + i] = v;
            c[(unsigned long long)i * p + j] = v;
        }
    }
}
