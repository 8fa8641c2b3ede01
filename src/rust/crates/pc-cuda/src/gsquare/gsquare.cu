// G^2 conditional-independence tests (pcalg's disCItest / binCItest) for gpupc's CUDA backend.
//
// Compiled at run time by NVRTC (no headers), with --fmad=false, so every p-value follows the
// rounding of pc-core's citest/discrete.rs and citest/special.rs, which this file mirrors: a
// change there must be made here too.
//
// Layout: data is n x p codes, one byte each, column-major with a column stride `stride` that is a
// multiple of 16 (data[v * stride + s] is variable v at sample s; the padding is never counted),
// 0 <= code < lev[v] <= 255. A round evaluates n_tasks tests: test t is x = tx[t], y = ty[t],
// S = ts[t * l .. (t + 1) * l]. One block per test (blocks stride over the tests): each thread
// reads 16 samples of every column at once and counts runs of equal cells with one atomic each
// into the contingency table (shared memory when it fits, else the block's own slot of global
// scratch); then the block sums the G^2 terms over the cells. The kernel writes G^2 and its
// degrees of freedom; pchisq_points turns them into p-values, one thread per test, so the
// incomplete gamma's loop does not hold up a whole block.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

// MAXBLOCK (the largest block), CHUNK (bytes a thread reads from a column at once) and MAXL (the
// deepest level) come from the host's constants as -D options (module.rs, Family::defines).
#define FULL_MASK 0xffffffffu
#define DBL_EPS 2.220446049250313e-16
#define LN_SQRT_2PI 0.918938533204672741780329736
#define TAU 6.283185307179586476925286766559

// ---------------------------------------------------------------------------------------------
// pchisq(q, df, lower.tail = FALSE): the regularized upper incomplete gamma Q(df / 2, q / 2),
// as pc-core's citest/special.rs computes it (series below the mode, Lentz's continued fraction
// above it, the prefactor in saddle-point form). Accurate in the far tail.
// ---------------------------------------------------------------------------------------------

// ln Gamma(n + 1) - (n + 1/2) ln n + n - ln sqrt(2 pi) at n = k/2, k = 1..30 (special.rs).
__device__ const double STIRLERR_HALVES[30] = {
    1.534264097200273452914e-1, 8.106146679532725821967e-2, 5.481412105191765389614e-2,
    4.134069595540929409382e-2, 3.316287351993628748511e-2, 2.767792568499833914879e-2,
    2.374616365629749597133e-2, 2.079067210376509311152e-2, 1.848845053267318523078e-2,
    1.664469118982119216319e-2, 1.513497322191737887351e-2, 1.387612882307074799875e-2,
    1.281046524292022692425e-2, 1.189670994589177009506e-2, 1.110455975820691732663e-2,
    1.041126526197209649748e-2, 9.79941612615880329839e-3,  9.255462182712732917729e-3,
    8.768700134139385462955e-3, 8.330563433362871256469e-3, 7.93411456431402054725e-3,
    7.573675487951840794972e-3, 7.244554301320383179546e-3, 6.942840107209529865664e-3,
    6.665247032707682442356e-3, 6.40899418800420706844e-3,  6.171712263039457647535e-3,
    5.951370112758847735624e-3, 5.746216513010115682026e-3, 5.554733551962801371039e-3};

__device__ double stirlerr(double n) {
    if (n <= 15.0) {
        double twice = n + n;
        if (twice == rint(twice) && twice >= 1.0) return STIRLERR_HALVES[(int)twice - 1];
        // off the half-integer grid (never for the integer df of G^2)
        return lgamma(n + 1.0) - (n + 0.5) * log(n) + n - LN_SQRT_2PI;
    }
    const double S0 = 1.0 / 12.0, S1 = 1.0 / 360.0, S2 = 1.0 / 1260.0, S3 = 1.0 / 1680.0;
    const double S4 = 1.0 / 1188.0, S5 = 691.0 / 360360.0;
    double nn = n * n;
    return (S0 - (S1 - (S2 - (S3 - (S4 - S5 / nn) / nn) / nn) / nn) / nn) / n;
}

// a ln(a/m) + m - a, without cancellation for |a - m| < (a + m) / 2 (special.rs's bd0).
__device__ double bd0(double a, double m) {
    double d = a - m;
    if (fabs(d) < 0.5 * (a + m)) {
        double v = d / (a + m);
        double v2 = v * v;
        double s = d * v;
        double ej = 2.0 * a * v;
        double j = 1.0;
        for (;;) {
            ej *= v2;
            double next = s + ej / (2.0 * j + 1.0);
            if (next == s) return s;
            s = next;
            j += 1.0;
        }
    }
    return a * log(a / m) + m - a;
}

__device__ double poisson_density(double a, double m) {
    if (a == 0.0) return exp(-m);
    return exp(-stirlerr(a) - bd0(a, m)) / sqrt(TAU * a);
}

__device__ double lower_series(double a, double x) {
    double term = 1.0, sum = 1.0, den = a;
    for (;;) {
        den += 1.0;
        term *= x / den;
        if (term <= sum * (DBL_EPS * 0.25)) break;
        sum += term;
    }
    return poisson_density(a, x) * sum;
}

__device__ double upper_fraction(double a, double x) {
    const double TINY = 1e-300;
    double b = x + 1.0 - a;
    double c = 1.0 / TINY;
    double d = 1.0 / b;
    double h = d;
    double i = 1.0;
    for (u32 it = 0; it < 10000000u; ++it) {
        double an = -i * (i - a);
        b += 2.0;
        d = an * d + b;
        if (fabs(d) < TINY) d = TINY;
        c = b + an / c;
        if (fabs(c) < TINY) c = TINY;
        d = 1.0 / d;
        double delta = d * c;
        h *= delta;
        if (fabs(delta - 1.0) <= DBL_EPS * 0.5) break;
        i += 1.0;
    }
    if (a >= 1.0) return poisson_density(a - 1.0, x) * (x * h);
    return a * poisson_density(a, x) * h;
}

__device__ double gamma_q(double a, double x) {
    if (a != a || x != x || a <= 0.0) return __longlong_as_double(0x7FF8000000000000ll);
    if (x <= 0.0) return 1.0;
    const double inf = __longlong_as_double(0x7FF0000000000000ll);
    if (x == inf) return 0.0;
    if (a == inf) return 1.0;
    if (x < a + 1.0) return 1.0 - lower_series(a, x);
    return upper_fraction(a, x);
}

__device__ double pchisq_upper(double q, double df) {
    if (q != q || df != df) return __longlong_as_double(0x7FF8000000000000ll);
    if (q <= 0.0) return 1.0;
    return gamma_q(df * 0.5, q * 0.5);
}

// Neumaier's compensated addition, as discrete.rs's `Sum`.
__device__ __forceinline__ void sum_add(double& s, double& c, double v) {
    double t = s + v;
    if (fabs(s) >= fabs(v)) c += (s - t) + v;
    else c += (v - t) + s;
    s = t;
}

// Words of table a test needs: the cells, then x's and y's margins per stratum, then n_k.
__device__ __forceinline__ u64 table_words(u32 lx, u32 ly, u64 n_strata) {
    return (u64)lx * ly * n_strata + ((u64)lx + ly + 1) * n_strata;
}

// Byte i of a 16-byte chunk (i is a constant once the loops over a chunk are unrolled).
__device__ __forceinline__ u32 chunk_byte(const uint4& v, int i) {
    const u32 w = i < 4 ? v.x : i < 8 ? v.y : i < 12 ? v.z : v.w;
    return (w >> (8 * (i & 3))) & 0xFFu;
}

// Counts the samples into the table. Real data are skewed (most samples in a few cells), and lanes
// adding to one cell at once serialise: each thread reads 16 samples of every column at once and
// adds a run of equal cells with one atomic.
__device__ __forceinline__ void count_table(u32* tab, const uint4* __restrict__ vx, const uint4* __restrict__ vy,
                                            const uint4* const* scol, const u32* smul, int l, u32 lx, u64 n,
                                            u32 chunks, u32 tid, u32 nthreads) {
    for (u32 ch = tid; ch < chunks; ch += nthreads) {
        u32 c[CHUNK];
        const uint4 a = vx[ch], b = vy[ch];
#pragma unroll
        for (int i = 0; i < CHUNK; ++i) c[i] = chunk_byte(a, i) + lx * chunk_byte(b, i);
        for (int k = 0; k < l; ++k) {
            const uint4 v = scol[k][ch];
            const u32 m = smul[k];
#pragma unroll
            for (int i = 0; i < CHUNK; ++i) c[i] += m * chunk_byte(v, i);
        }
        const u64 first = (u64)ch * CHUNK;
        const u32 valid = n - first >= CHUNK ? CHUNK : (u32)(n - first);
        u32 cur = c[0], run = 1;
#pragma unroll
        for (int i = 1; i < CHUNK; ++i) {
            if ((u32)i < valid) {
                if (c[i] == cur) {
                    ++run;
                } else {
                    atomicAdd(&tab[cur], run);
                    cur = c[i];
                    run = 1;
                }
            }
        }
        atomicAdd(&tab[cur], run);
    }
}

// Word j of a 16-byte chunk (j is a constant once the loops over a chunk are unrolled).
__device__ __forceinline__ u32 chunk_word(const uint4& v, int j) {
    return j == 0 ? v.x : j == 1 ? v.y : j == 2 ? v.z : v.w;
}

// count_table for a table of fewer than 65536 cells, in fewer instructions: a word's four codes
// go into two words of two 16-bit lanes (bytes 0 and 2, bytes 1 and 3), so one multiply-add
// makes two samples' cells; no runs (their branches cost more than they saved); each thread
// counts the cell of its first sample in a register (real tables are skewed: the lanes' atomics
// on one cell, all to one address, are replayed one by one) and adds it once at the end. The
// table's counts are count_table's, whatever the order of the additions.
__device__ __forceinline__ void count_table_packed(u32* tab, const uint4* __restrict__ vx,
                                                   const uint4* __restrict__ vy, const uint4* const* scol,
                                                   const u32* smul, int l, u32 lx, u64 n, u32 chunks, u32 tid,
                                                   u32 nthreads) {
    u32 hot = 0xFFFFFFFFu, hot_n = 0;
    for (u32 ch = tid; ch < chunks; ch += nthreads) {
        const uint4 a = vx[ch], b = vy[ch];
        u32 lo[4], hi[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            const u32 wa = chunk_word(a, j), wb = chunk_word(b, j);
            lo[j] = __byte_perm(wa, 0, 0x4240) + lx * __byte_perm(wb, 0, 0x4240);
            hi[j] = __byte_perm(wa, 0, 0x4341) + lx * __byte_perm(wb, 0, 0x4341);
        }
        for (int k = 0; k < l; ++k) {
            const uint4 v = scol[k][ch];
            const u32 m = smul[k];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                const u32 w = chunk_word(v, j);
                lo[j] += m * __byte_perm(w, 0, 0x4240);
                hi[j] += m * __byte_perm(w, 0, 0x4341);
            }
        }
        if (hot == 0xFFFFFFFFu) hot = lo[0] & 0xFFFFu;
        const u64 first = (u64)ch * CHUNK;
        const u32 valid = n - first >= CHUNK ? CHUNK : (u32)(n - first);
#pragma unroll
        for (int i = 0; i < CHUNK; ++i) {
            // sample 4j + 0, 1, 2, 3 of word j: lo's low lane, hi's low lane, lo's high, hi's high
            const int j = i >> 2, q = i & 3;
            const u32 w = (q & 1) ? hi[j] : lo[j];
            const u32 c = (q & 2) ? (w >> 16) : (w & 0xFFFFu);
            if ((u32)i < valid) {
                if (c == hot) ++hot_n;
                else atomicAdd(&tab[c], 1u);
            }
        }
    }
    if (hot_n > 0) atomicAdd(&tab[hot], hot_n);
}

// One block per test (blockDim.x a multiple of 32, at most MAXBLOCK); see the file's head.
// stat_out[t] and df_out[t] are G^2 and the degrees of freedom after pcalg's df rules (adaptDF
// with the binary-case constants, as discrete.rs explains); a test with n < 10 df is not run and
// gets (0, 1), whose p-value is pcalg's 1.
extern "C" __global__ void __launch_bounds__(MAXBLOCK) gsquare_tests(
    const u8* __restrict__ data, u64 n, u64 stride, const u32* __restrict__ lev, const u32* __restrict__ tx,
    const u32* __restrict__ ty, const u32* __restrict__ ts, int l, u32 n_tasks, int bin, int adapt_df,
    u32 shared_words, u32* __restrict__ scratch, u64 slot_words, double* __restrict__ stat_out,
    double* __restrict__ df_out, int packed) {
    extern __shared__ u32 smem[];
    __shared__ double warp_s[MAXBLOCK / 32];
    __shared__ double warp_c[MAXBLOCK / 32];
    __shared__ u32 warp_nz[MAXBLOCK / 32];
    __shared__ u32 warp_obs[MAXBLOCK / 32];
    __shared__ const uint4* scol[MAXL];
    __shared__ u32 smul[MAXL];
    const u32 tid = threadIdx.x, nthreads = blockDim.x;
    const u32 lane = tid & 31u, warp = tid >> 5, nwarps = nthreads >> 5;
    const u32 chunks = (u32)(stride / CHUNK);

    for (u32 task = blockIdx.x; task < n_tasks; task += gridDim.x) {
        const u32 x = tx[task], y = ty[task];
        const u32* S = ts + (u64)task * (u64)l;
        const u32 lx = lev[x], ly = lev[y];
        double strata_f = 1.0;
        for (int k = 0; k < l; ++k) strata_f *= (double)lev[S[k]];
        const double df = bin ? ldexp(1.0, l) : ((double)lx - 1.0) * ((double)ly - 1.0) * strata_f;
        if ((double)n < 10.0 * df) {  // the same for every thread of the block
            if (tid == 0) {
                stat_out[task] = 0.0;
                df_out[task] = 1.0;
            }
            continue;
        }
        const u64 n_strata = (u64)strata_f;
        const u32 block = lx * ly;
        const u64 cells = (u64)block * n_strata;
        const u64 words = table_words(lx, ly, n_strata);
        u32* tab = words <= shared_words ? smem : scratch + (u64)blockIdx.x * slot_words;
        u32* rowm = tab + cells;
        u32* colm = rowm + (u64)lx * n_strata;
        u32* nk = colm + (u64)ly * n_strata;
        if (tid == 0) {
            u32 mult = block;
            for (int k = 0; k < l; ++k) {
                scol[k] = (const uint4*)(data + (u64)S[k] * stride);
                smul[k] = mult;
                mult *= lev[S[k]];
            }
        }
        for (u64 w = tid; w < words; w += nthreads) tab[w] = 0;
        __syncthreads();

        const uint4* vx = (const uint4*)(data + (u64)x * stride);
        const uint4* vy = (const uint4*)(data + (u64)y * stride);
        // two calls each, so that each inlined copy knows its table's memory (shared atomics are
        // faster than generic ones)
        u32* slot = scratch + (u64)blockIdx.x * slot_words;
        if (packed && cells < 65536) {
            if (words <= shared_words) count_table_packed(smem, vx, vy, scol, smul, l, lx, n, chunks, tid, nthreads);
            else count_table_packed(slot, vx, vy, scol, smul, l, lx, n, chunks, tid, nthreads);
        } else {
            if (words <= shared_words) count_table(smem, vx, vy, scol, smul, l, lx, n, chunks, tid, nthreads);
            else count_table(slot, vx, vy, scol, smul, l, lx, n, chunks, tid, nthreads);
        }
        __syncthreads();

        // Indices in 32 bits (a test that runs has fewer than n < 2^32 cells, as discrete.rs's
        // test_words shows), and no division per cell (the G^2 loop below steps them).
        const u32 ns = (u32)n_strata;
        for (u32 w = tid; w < lx * ns; w += nthreads) {
            const u32 k = w / lx;
            const u32 i = w - k * lx;
            const u32* t = tab + k * block + i;
            u32 sum = 0;
            for (u32 j = 0; j < ly; ++j) sum += t[lx * j];
            rowm[w] = sum;
        }
        for (u32 w = tid; w < ly * ns; w += nthreads) {
            const u32 k = w / ly;
            const u32 j = w - k * ly;
            const u32* t = tab + k * block + lx * j;
            u32 sum = 0;
            for (u32 i = 0; i < lx; ++i) sum += t[i];
            colm[w] = sum;
        }
        __syncthreads();
        u32 obs = 0;
        for (u32 k = tid; k < ns; k += nthreads) {
            u32 sum = 0;
            for (u32 i = 0; i < lx; ++i) sum += rowm[k * lx + i];
            nk[k] = sum;
            obs += sum > 0;
        }
        __syncthreads();

        // each thread a contiguous run of cells, in the CPU's cell order; cell c is (i, j, k) with
        // c = i + lx (j + ly k), stepped along instead of divided out
        const u32 ncells = (u32)cells;
        const u32 per = (ncells + nthreads - 1) / nthreads;
        const u32 c0 = tid * per < ncells ? tid * per : ncells;
        const u32 c1 = c0 + per < ncells ? c0 + per : ncells;
        u32 k = c0 / block;
        u32 j = (c0 - k * block) / lx;
        u32 i = c0 - k * block - j * lx;
        double s = 0.0, comp = 0.0;
        u32 nz = 0;
        for (u32 c = c0; c < c1; ++c) {
            const u32 v = tab[c];
            if (v != 0) {
                ++nz;
                const double vv = (double)v;
                const double rc = (double)rowm[k * lx + i] * (double)colm[k * ly + j];
                const double ratio = l == 0 ? (double)n * (vv / rc) : vv * ((double)nk[k] / rc);
                sum_add(s, comp, 2.0 * vv * log(ratio));
            }
            if (++i == lx) {
                i = 0;
                if (++j == ly) {
                    j = 0;
                    ++k;
                }
            }
        }
        // the threads' compensated sums, combined in a fixed tree (identical from run to run)
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) {
            const double os = __shfl_down_sync(FULL_MASK, s, off);
            const double oc = __shfl_down_sync(FULL_MASK, comp, off);
            nz += __shfl_down_sync(FULL_MASK, nz, off);
            obs += __shfl_down_sync(FULL_MASK, obs, off);
            sum_add(s, comp, os);
            comp += oc;
        }
        if (lane == 0) {
            warp_s[warp] = s;
            warp_c[warp] = comp;
            warp_nz[warp] = nz;
            warp_obs[warp] = obs;
        }
        __syncthreads();
        if (tid == 0) {
            double gs = 0.0, gc = 0.0;
            u64 nonzero = 0, observed = 0;
            for (u32 w = 0; w < nwarps; ++w) {
                sum_add(gs, gc, warp_s[w]);
                sum_add(gs, gc, warp_c[w]);
                nonzero += warp_nz[w];
                observed += warp_obs[w];
            }
            double d = df;
            if (adapt_df && l > 0) {
                const double pow2 = ldexp(1.0, l);
                const u64 listed = ((bin && l <= 5) || (!bin && l <= 4)) ? n_strata : observed;
                const double zero_counts = (double)(listed * block - nonzero) + 4.0 * (pow2 - (double)listed);
                d = fmax(d - zero_counts, 1.0);
            }
            stat_out[task] = gs + gc;
            df_out[task] = d;
        }
        __syncthreads();
    }
}

// pchisq_upper on a list of points: the p-values of gsquare_tests' statistics, and the device's
// chi-square tail checked against R's and exact values (pcbench pchisq).
extern "C" __global__ void pchisq_points(const double* __restrict__ q, const double* __restrict__ df, u32 m,
                                         double* __restrict__ out) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k < m) out[k] = pchisq_upper(q[k], df[k]);
}
