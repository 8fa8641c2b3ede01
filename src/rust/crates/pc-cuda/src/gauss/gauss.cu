// Gaussian conditional-independence tests (pcalg's gaussCItest) for gpupc's CUDA backend.
//
// Compiled at run time by NVRTC (no headers), with --fmad=false so that no multiply-add is
// contracted and the re-evaluation of a winning test (gauss_pbest_*) reproduces the main kernel's
// p-value bit for bit. One source, several families compiled apart, each only when a call needs
// it: -DGAUSS_BASE (levels 0 and 1, the dense levels, rows_live), or one templated variant,
// -DGAUSS_SETS=m, -DGAUSS_LISTED=m or -DGAUSS_BATCH=m (module.rs, Family), and always -DBLOCK, the
// host's threads per block (host.rs).
//
// Layout: C is the p x p correlation matrix, column-major (C[a + b * p] is C[a, b]).
// A key packs (side, rank) as side << 63 | rank, so that u64 order is pcalg's canonical order:
// side 0 (x = i, y = j, i < j) before side 1 (x = j, y = i), then lexicographic rank of S within
// the side's list row(x) \ {y}. Per edge we keep the minimum successful key (atomicMin) and the
// largest NA-mapped p-value of a failed test (atomicMax on the bit pattern, + 1 so that 0 means
// "none"); a test is only ever skipped when its key is above the edge's current best.

typedef unsigned long long u64;
typedef unsigned int u32;
typedef unsigned char u8;

#define NO_KEY 0xFFFFFFFFFFFFFFFFull
#define SIDE_BIT 0x8000000000000000ull
#define CUT_AT 0.9999999
#define DBL_EPS 2.220446049250313e-16
#define FULL_MASK 0xFFFFFFFFu

__device__ __forceinline__ u64 cidx(u32 a, u32 b, u64 p) { return (u64)a + (u64)b * p; }

__device__ __forceinline__ double neg_inf() { return __longlong_as_double(0xFFF0000000000000ll); }
__device__ __forceinline__ double nan_value() { return __longlong_as_double(0x7FF8000000000000ll); }

// R's pnorm(x, lower.tail = FALSE): W. J. Cody's ANORM rational approximations with R's branch
// points and underflow cut, evaluated operation for operation as pc-core's citest/special.rs does.
__device__ const double NA_[5] = {2.2352520354606839287e00, 1.6102823106855587881e02, 1.0676894854603709582e03,
                                  1.8154981253343561249e04, 6.5682337918207449113e-2};
__device__ const double NB_[4] = {4.7202581904688241870e01, 9.7609855173777669322e02, 1.0260932208618978205e04,
                                  4.5507789335026729956e04};
__device__ const double NC_[9] = {3.9894151208813466764e-1, 8.8831497943883759412e00, 9.3506656132177855979e01,
                                  5.9727027639480026226e02, 2.4945375852903726711e03, 6.8481904505362823326e03,
                                  1.1602651437647350124e04, 9.8427148383839780218e03, 1.0765576773720192317e-8};
__device__ const double ND_[8] = {2.2266688044328115691e01, 2.3538790178262499861e02, 1.5193775994075548050e03,
                                  6.4855582982667607550e03, 1.8615571640885098091e04, 3.4900952721145977266e04,
                                  3.8912003286093271411e04, 1.9685429676859990727e04};
__device__ const double NP_[6] = {2.1589853405795699e-1, 1.274011611602473639e-1, 2.2235277870649807e-2,
                                  1.421619193227893466e-3, 2.9112874951168792e-5, 2.307344176494017303e-2};
__device__ const double NQ_[5] = {1.28426009614491121e00, 4.68238212480865118e-1, 6.59881378689285515e-2,
                                  3.78239633202758244e-3, 7.29751555083966205e-5};
#define FRAC_1_SQRT_2PI 0.3989422804014326779399461

// exp(-y^2 / 2) * t with y^2 split into an exact head and a small rest.
__device__ __forceinline__ double exp_half_sq_times(double y, double t) {
    double head = trunc(y * 16.0) / 16.0;
    double rest = (y - head) * (y + head);
    return exp(-head * head * 0.5) * exp(-rest * 0.5) * t;
}

__device__ double pnorm_upper(double x) {
    if (x != x) return nan_value();
    double y = fabs(x);
    if (y <= 0.67448975) {
        double xsq = (y > DBL_EPS * 0.5) ? x * x : 0.0;
        double num = NA_[4] * xsq;
        double den = xsq;
        for (int i = 0; i < 3; ++i) {
            num = (num + NA_[i]) * xsq;
            den = (den + NB_[i]) * xsq;
        }
        double t = x * (num + NA_[3]) / (den + NB_[3]);
        return 0.5 - t;
    }
    double small;
    if (y <= sqrt(32.0)) {
        double num = NC_[8] * y;
        double den = y;
        for (int i = 0; i < 7; ++i) {
            num = (num + NC_[i]) * y;
            den = (den + ND_[i]) * y;
        }
        small = exp_half_sq_times(y, (num + NC_[7]) / (den + ND_[7]));
    } else if (x < 37.5193 && x > -8.2924) {
        double xsq = 1.0 / (x * x);
        double num = NP_[5] * xsq;
        double den = xsq;
        for (int i = 0; i < 4; ++i) {
            num = (num + NP_[i]) * xsq;
            den = (den + NQ_[i]) * xsq;
        }
        double t = xsq * (num + NP_[4]) / (den + NQ_[4]);
        small = exp_half_sq_times(y, (FRAC_1_SQRT_2PI - t) / y);
    } else if (x > 0.0) {
        return 0.0;
    } else {
        return 1.0;
    }
    return x > 0.0 ? small : 1.0 - small;
}

// pcalg: r NA -> 0, clamp to +-0.9999999, z = sqrt(n - |S| - 3) * 0.5 * log1p(2r / (1 - r)),
// z NA -> 0, p = 2 * pnorm(|z|, lower.tail = FALSE). zfac = sqrt(n - |S| - 3) * 0.5 (NaN when
// n - |S| - 3 < 0, which makes z NaN, hence 0, hence p = 1, as in R).
__device__ __forceinline__ double fisher_p(double r, double zfac) {
    if (r != r) r = 0.0;
    r = fmax(-CUT_AT, fmin(CUT_AT, r));
    double z = zfac * log1p(2.0 * r / (1.0 - r));
    if (z != z) z = 0.0;
    return 2.0 * pnorm_upper(fabs(z));
}

// Boost's erfc as pc-core's citest/special.rs stands in for it (W. J. Cody's CALERF rational
// approximations, same branch points), operation for operation.
__device__ const double EA_[5] = {3.16112374387056560e00, 1.13864154151050156e02, 3.77485237685302021e02,
                                  3.20937758913846947e03, 1.85777706184603153e-1};
__device__ const double EB_[4] = {2.36012909523441209e01, 2.44024637934444173e02, 1.28261652607737228e03,
                                  2.84423683343917062e03};
__device__ const double EC_[9] = {5.64188496988670089e-1, 8.88314979438837594e00, 6.61191906371416295e01,
                                  2.98635138197400131e02, 8.81952221241769090e02, 1.71204761263407058e03,
                                  2.05107837782607147e03, 1.23033935479799725e03, 2.15311535474403846e-8};
__device__ const double ED_[8] = {1.57449261107098347e01, 1.17693950891312499e02, 5.37181101862009858e02,
                                  1.62138957456669019e03, 3.29079923573345963e03, 4.36261909014324716e03,
                                  3.43936767414372164e03, 1.23033935480374942e03};
__device__ const double EP_[6] = {3.05326634961232344e-1, 3.60344899949804439e-1, 1.25781726111229246e-1,
                                  1.60837851487422766e-2, 6.58749161529837803e-4, 1.63153871373020978e-2};
__device__ const double EQ_[5] = {2.56852019228982242e00, 1.87295284992346047e00, 5.27905102951428412e-1,
                                  6.05183413124413191e-2, 2.33520497626869185e-3};
#define FRAC_1_SQRT_PI 0.5641895835477562869480795
#define SQRT_2 1.4142135623730951

// exp(-y^2) * t with y^2 split as in exp_half_sq_times.
__device__ __forceinline__ double exp_neg_sq_times(double y, double t) {
    double head = trunc(y * 16.0) / 16.0;
    double rest = (y - head) * (y + head);
    return exp(-head * head) * exp(-rest) * t;
}

__device__ double erfc_dev(double x) {
    if (x != x) return nan_value();
    double y = fabs(x);
    if (y <= 0.46875) {
        double xsq = (y > DBL_EPS * 0.5) ? y * y : 0.0;
        double num = EA_[4] * xsq;
        double den = xsq;
        for (int i = 0; i < 3; ++i) {
            num = (num + EA_[i]) * xsq;
            den = (den + EB_[i]) * xsq;
        }
        return 1.0 - x * (num + EA_[3]) / (den + EB_[3]);
    }
    double tail;
    if (y <= 4.0) {
        double num = EC_[8] * y;
        double den = y;
        for (int i = 0; i < 7; ++i) {
            num = (num + EC_[i]) * y;
            den = (den + ED_[i]) * y;
        }
        tail = exp_neg_sq_times(y, (num + EC_[7]) / (den + ED_[7]));
    } else if (y < 27.3) {
        double xsq = 1.0 / (y * y);
        double num = EP_[5] * xsq;
        double den = xsq;
        for (int i = 0; i < 4; ++i) {
            num = (num + EP_[i]) * xsq;
            den = (den + EQ_[i]) * xsq;
        }
        double t = xsq * (num + EP_[4]) / (den + EQ_[4]);
        tail = exp_neg_sq_times(y, (FRAC_1_SQRT_PI - t) / y);
    } else {
        tail = 0.0;
    }
    return x > 0.0 ? tail : 2.0 - tail;
}

// pcalg's C++ test (skel.method = "stable.fast", IndepTestGauss::test): |r| cut at 0.9999999 by
// std::min (a NaN r becomes the cut), |z| = zfac * log1p(2|r| / (1 - |r|)), p = 2 * (erfc(|z| /
// sqrt 2) / 2); zfac = sqrt(n_uint - |S| - 3) * 0.5 (the host never launches with a NaN zfac:
// C++ stops with an error there, which the CPU test reproduces). C with a NaN never gets here.
__device__ __forceinline__ double cpp_p(double r, double zfac) {
    double a = fabs(r);
    a = (a < CUT_AT) ? a : CUT_AT;
    double absz = zfac * log1p(2.0 * a / (1.0 - a));
    return 2.0 * (erfc_dev(absz / SQRT_2) / 2.0);
}

// The p-value of either of pcalg's Gaussian code paths from r.
__device__ __forceinline__ double flavour_p(double r, double zfac, int cpp) { return cpp ? cpp_p(r, zfac) : fisher_p(r, zfac); }

__device__ __forceinline__ double na_map(double pv, double na_value) { return pv != pv ? na_value : pv; }

// Bit pattern of a non-negative double, + 1 (0 is reserved for "no failure").
__device__ __forceinline__ u64 fail_bits(double mapped) { return (u64)__double_as_longlong(mapped) + 1ull; }

// ---------------------------------------------------------------------------------------------
// Level 0: one thread per edge, r = C[x, y]. Edge e of the launch's range is the
// (e - ebase[i])-th of row i's list cols[off[i] + upper[i] ..] (the snapshot's j > i); the raw
// p-value of side 0 (x = i) goes to p0_out, and of side 1 (x = j) to p1_out when C is not
// symmetric (when it is, both sides read the same entry and give the same p).

#ifdef GAUSS_BASE
extern "C" __global__ void gauss_level0(const double* __restrict__ C, u64 p, const u64* __restrict__ off,
                                        const u32* __restrict__ cols, const u32* __restrict__ upper,
                                        const u64* __restrict__ ebase, u32 n_rows, u64 e0, u64 m, double zfac,
                                        int both, double* __restrict__ p0_out, double* __restrict__ p1_out) {
    u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= m) return;
    u64 e = e0 + k;
    u32 lo = 0, hi = n_rows;  // ebase[lo] <= e < ebase[lo + 1]
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (ebase[mid] <= e) lo = mid; else hi = mid;
    }
    u32 i = lo;
    u32 j = cols[off[i] + upper[i] + (e - ebase[i])];
    p0_out[k] = fisher_p(C[cidx(i, j, p)], zfac);
    if (both) p1_out[k] = fisher_p(C[cidx(j, i, p)], zfac);
}
#endif

// ---------------------------------------------------------------------------------------------
// Level 1: one warp per edge; lanes take consecutive ranks (rank r is S = {list[r]}, list =
// row(x) \ {y}); after each round of 32 a ballot finds the first success in canonical order.

__device__ __forceinline__ double level1_pf(const double* __restrict__ C, u64 p, u32 x, u32 y, u32 k, double zfac, int cpp) {
    double cxy = C[cidx(x, y, p)];
    double cxk = C[cidx(x, k, p)];
    double cyk = C[cidx(y, k, p)];
    // pcalg pcorOrder: (C[i,j] - C[i,k] * C[j,k]) / sqrt((1 - C[j,k]^2) * (1 - C[i,k]^2))
    double r = (cxy - cxk * cyk) / sqrt((1.0 - cyk * cyk) * (1.0 - cxk * cxk));
    return flavour_p(r, zfac, cpp);
}
__device__ __forceinline__ double level1_p(const double* __restrict__ C, u64 p, u32 x, u32 y, u32 k, double zfac) {
    return level1_pf(C, p, x, y, k, zfac, 0);
}

#ifdef GAUSS_BASE
extern "C" __global__ void gauss_level1(const double* __restrict__ C, u64 p, const u64* __restrict__ off,
                                        const u32* __restrict__ cols, const u32* __restrict__ ei,
                                        const u32* __restrict__ ej, const u32* __restrict__ qi,
                                        const u32* __restrict__ qj, const u8* __restrict__ sides, u64 n_edges,
                                        double zfac, double alpha, double na_value, u64* __restrict__ key_out,
                                        double* __restrict__ pbest_out, double* __restrict__ maxfail_out) {
    u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = threadIdx.x & 31;
    if (warp >= n_edges) return;  // uniform across the warp
    u32 i = ei[warp], j = ej[warp];
    u8 fl = sides[warp];
    u64 key = NO_KEY;
    double pb = nan_value();
    double mf = neg_inf();
    for (int side = 0; side < 2 && key == NO_KEY; ++side) {
        if (!((fl >> side) & 1)) continue;
        u32 x = side ? j : i, y = side ? i : j;
        u32 qy = side ? qj[warp] : qi[warp];  // position of y in row(x)
        const u32* row = cols + off[x];
        u64 len = off[x + 1] - off[x] - 1;
        for (u64 base = 0; base < len; base += 32) {
            u64 r = base + lane;
            bool succ = false;
            double pv = 0.0;
            if (r < len) {
                u64 q = r + (r >= qy ? 1 : 0);
                pv = level1_p(C, p, x, y, row[q], zfac);
                double mapped = na_map(pv, na_value);
                succ = mapped >= alpha;
                if (!succ) mf = fmax(mf, mapped);
            }
            unsigned ball = __ballot_sync(FULL_MASK, succ);
            if (ball) {
                int w = __ffs(ball) - 1;
                key = ((u64)side << 63) | (base + (u64)w);
                pb = __shfl_sync(FULL_MASK, pv, w);
                break;
            }
        }
    }
    for (int o = 16; o > 0; o >>= 1) mf = fmax(mf, __shfl_xor_sync(FULL_MASK, mf, o));
    if (lane == 0) {
        key_out[warp] = key;
        pbest_out[warp] = pb;
        maxfail_out[warp] = mf;
    }
}
#endif

// ---------------------------------------------------------------------------------------------
// Levels >= 2, cuPC-S shape: one thread per (row x, rank t of an l-subset S of row(x)); C[S, S]
// is factored once and reused for every y in row(x) \ S.
//
// The arithmetic is pc-core's (citest/linalg.rs), operation for operation, split at the S / y
// boundary: the LDL^T factorisation of M = C[(S, x, y), (S, x, y)] (rows left to right, every
// pivot d > 0 or the fast path is off), the "safely positive definite" test
// trace(M^-1) * (1024 * m * trace(M) * eps) < 1 with trace(M^-1) = sum_ij (L^-1)_ij^2 / d_i summed
// column by column in the same order, and r = l d_x / sqrt(d_x (d_y + l^2 d_x)) with l = L[y, x];
// otherwise r = -P12 / sqrt(P11 P22) for P the pseudo-inverse of C[c(x, y, S), c(x, y, S)] by
// one-sided Jacobi, keeping singular values > m * sigma_max * eps (corpcor's rule). A C that is
// not exactly symmetric always takes the pseudo-inverse, as on the CPU.

#define TRI(r, c) ((r) * ((r) + 1) / 2 + (c))

template <int MAXL>
struct SetFactor {
    u32 S[MAXL];
    double L[MAXL * (MAXL + 1) / 2];     // unit lower factor of C[S, S] below the diagonal (packed rows)
    double U[MAXL * (MAXL + 1) / 2];     // its inverse below the diagonal (packed rows)
    double inv_d[MAXL];                  // 1 / pivots of the S block
    double lx[MAXL];                     // row x of L over the S columns
    double dx, inv_dx;                   // pivot of x
    double trace;                        // C[s,s] summed over S, then C[x,x]
    bool ok;                             // all pivots so far > 0 (and C symmetric)
};

template <int MAXL>
__device__ __forceinline__ void factor_set(SetFactor<MAXL>& f, const double* __restrict__ C, u64 p, u32 x, int l,
                                           bool symmetric) {
    f.ok = symmetric;
    if (!symmetric) return;
    f.trace = 0.0;
    double w[MAXL];
    for (int j = 0; j < l; ++j) {
        for (int k = 0; k < j; ++k) {
            double sum = C[cidx(f.S[k], f.S[j], p)];
            for (int t = 0; t < k; ++t) sum -= w[t] * f.L[TRI(k, t)];
            w[k] = sum;
            f.L[TRI(j, k)] = sum * f.inv_d[k];
        }
        double ajj = C[cidx(f.S[j], f.S[j], p)];
        f.trace += ajj;
        double d = ajj;
        for (int t = 0; t < j; ++t) d -= w[t] * f.L[TRI(j, t)];
        if (!(d > 0.0)) {
            f.ok = false;
            return;
        }
        f.inv_d[j] = 1.0 / d;
    }
    // row x
    for (int k = 0; k < l; ++k) {
        double sum = C[cidx(f.S[k], x, p)];
        for (int t = 0; t < k; ++t) sum -= w[t] * f.L[TRI(k, t)];
        w[k] = sum;
        f.lx[k] = sum * f.inv_d[k];
    }
    double axx = C[cidx(x, x, p)];
    f.trace += axx;
    double d = axx;
    for (int t = 0; t < l; ++t) d -= w[t] * f.lx[t];
    if (!(d > 0.0)) {
        f.ok = false;
        return;
    }
    f.dx = d;
    f.inv_dx = 1.0 / d;
    // inverse of the unit lower S block, column by column
    for (int j = 0; j < l; ++j) {
        f.U[TRI(j, j)] = 1.0;
        for (int i = j + 1; i < l; ++i) {
            double sum = 0.0;
            for (int t = j; t < i; ++t) sum -= f.L[TRI(i, t)] * f.U[TRI(t, j)];
            f.U[TRI(i, j)] = sum;
        }
    }
}

// r from the pseudo-inverse of A = C[c(x, y, S), c(x, y, S)] (column-major): one-sided (Hestenes)
// Jacobi as pc-core's linalg::pinv_pcor, keeping singular values above m * sigma_max * eps.
template <int MAXL>
__device__ __noinline__ double pinv_r(const double* __restrict__ C, u64 p, u32 x, u32 y, const u32* S, int l, int at_least) {
    const int m = l + 2;
    double A[(MAXL + 2) * (MAXL + 2)];
    double V[(MAXL + 2) * (MAXL + 2)];
    u32 idx[MAXL + 2];
    idx[0] = x;
    idx[1] = y;
    for (int k = 0; k < l; ++k) idx[2 + k] = S[k];
    for (int j = 0; j < m; ++j)
        for (int i = 0; i < m; ++i) {
            A[j * m + i] = C[cidx(idx[i], idx[j], p)];
            V[j * m + i] = (i == j) ? 1.0 : 0.0;
        }
    for (int sweep = 0; sweep < 100; ++sweep) {
        bool rotated = false;
        for (int i = 0; i < m - 1; ++i) {
            for (int j = i + 1; j < m; ++j) {
                int ci = i * m, cj = j * m;
                double alpha = 0.0, beta = 0.0, gamma = 0.0;
                for (int r = 0; r < m; ++r) {
                    double ai = A[ci + r], aj = A[cj + r];
                    alpha += ai * ai;
                    beta += aj * aj;
                    gamma += ai * aj;
                }
                if (gamma == 0.0 || fabs(gamma) <= DBL_EPS * sqrt(alpha * beta)) continue;
                rotated = true;
                double zeta = (beta - alpha) / (2.0 * gamma);
                double t;
                if (fabs(zeta) > 1e150) {
                    t = 0.5 / zeta;
                } else {
                    t = copysign(1.0, zeta) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                }
                double c = 1.0 / sqrt(1.0 + t * t);
                double s = c * t;
                for (int r = 0; r < m; ++r) {
                    double ai = A[ci + r], aj = A[cj + r];
                    A[ci + r] = c * ai - s * aj;
                    A[cj + r] = s * ai + c * aj;
                    double vi = V[ci + r], vj = V[cj + r];
                    V[ci + r] = c * vi - s * vj;
                    V[cj + r] = s * vi + c * vj;
                }
            }
        }
        if (!rotated) break;
    }
    double sigma_max = 0.0;
    for (int k = 0; k < m; ++k) {
        double s2 = 0.0;
        for (int r = 0; r < m; ++r) s2 += A[k * m + r] * A[k * m + r];
        sigma_max = fmax(sigma_max, sqrt(s2));
    }
    double tol = (double)m * sigma_max * DBL_EPS;
    double p00 = 0.0, p01 = 0.0, p11 = 0.0;
    for (int k = 0; k < m; ++k) {
        double s2 = 0.0;
        for (int r = 0; r < m; ++r) s2 += A[k * m + r] * A[k * m + r];
        double sigma = sqrt(s2);
        // corpcor keeps sigma > tol (R's test), Armadillo's pinv sigma >= tol (C++'s)
        bool kept = at_least ? (sigma >= tol) : (sigma > tol);
        if (!kept || sigma == 0.0) continue;
        double v0 = V[k * m], v1 = V[k * m + 1];
        p00 += v0 * A[k * m] / s2;
        p01 += v0 * A[k * m + 1] / s2;
        p11 += v1 * A[k * m + 1] / s2;
    }
    return -p01 / sqrt(p00 * p11);
}

// p-value of the test (x, y | S) given the factor of S; *fallback is set when the pseudo-inverse
// path was taken.
template <int MAXL>
__device__ __forceinline__ double test_y(const SetFactor<MAXL>& f, const double* __restrict__ C, u64 p, u32 x,
                                         u32 y, int l, double pd_margin, double zfac, bool* fallback, int cpp = 0) {
    if (f.ok) {
        double w[MAXL];
        double ly[MAXL];
        for (int k = 0; k < l; ++k) {
            double sum = C[cidx(f.S[k], y, p)];
            for (int t = 0; t < k; ++t) sum -= w[t] * f.L[TRI(k, t)];
            w[k] = sum;
            ly[k] = sum * f.inv_d[k];
        }
        double sum = C[cidx(x, y, p)];
        for (int t = 0; t < l; ++t) sum -= w[t] * f.lx[t];
        double wx = sum;
        double lyx = sum * f.inv_dx;
        double ayy = C[cidx(y, y, p)];
        double trace = f.trace + ayy;
        double d = ayy;
        for (int t = 0; t < l; ++t) d -= w[t] * ly[t];
        d -= wx * lyx;
        if (d > 0.0) {
            double dy = d, inv_dy = 1.0 / d;
            // trace(M^-1) column by column of L^-1: S rows, then x, then y
            double trace_inv = 0.0;
            for (int j = 0; j < l; ++j) {
                trace_inv += f.inv_d[j];
                for (int i = j + 1; i < l; ++i) {
                    double u = f.U[TRI(i, j)];
                    trace_inv += u * u * f.inv_d[i];
                }
                double su = 0.0;
                for (int t = j; t < l; ++t) su -= f.lx[t] * f.U[TRI(t, j)];
                double ux = su;
                trace_inv += ux * ux * f.inv_dx;
                double sv = 0.0;
                for (int t = j; t < l; ++t) sv -= ly[t] * f.U[TRI(t, j)];
                sv -= lyx * ux;
                trace_inv += sv * sv * inv_dy;
            }
            trace_inv += f.inv_dx;
            double sxu = 0.0;
            sxu -= lyx * 1.0;
            trace_inv += sxu * sxu * inv_dy;
            trace_inv += inv_dy;
            double cutoff = pd_margin * (double)(l + 2) * trace * DBL_EPS;
            if (trace_inv * cutoff < 1.0) {
                *fallback = false;
                double sxy = lyx * f.dx;
                return flavour_p(sxy / sqrt(f.dx * (dy + lyx * sxy)), zfac, cpp);
            }
        }
    }
    *fallback = true;
    return flavour_p(pinv_r<MAXL>(C, p, x, y, f.S, l, cpp), zfac, cpp);
}

// Positions P[0..l) of the t-th (lexicographic) l-subset of {0..n}; binom[n' * (l + 1) + k].
__device__ __forceinline__ void unrank_set(u32 n, int l, u64 t, const u64* __restrict__ binom, u32* P) {
    u64 r = t;
    u32 v = 0;
    u64 lp1 = (u64)l + 1;
    for (int c = 0; c < l; ++c) {
        int rem = l - c - 1;
        for (;;) {
            u64 cnt = binom[(u64)(n - v - 1) * lp1 + rem];
            if (r < cnt) break;
            r -= cnt;
            ++v;
        }
        P[c] = v;
        ++v;
    }
}

__device__ __forceinline__ u64 warp_sum(u64 v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(FULL_MASK, v, o);
    return v;
}

template <int MAXL>
__device__ __forceinline__ void sets_body(const double* __restrict__ C, u64 p, const u64* __restrict__ off,
                                          const u32* __restrict__ cols, const int* __restrict__ edge_of,
                                          const u32* __restrict__ task_row, const u64* __restrict__ task_t0,
                                          const u64* __restrict__ task_prefix, u32 n_tasks, u64 total,
                                          const u64* __restrict__ binom, int l, double zfac, double alpha,
                                          double na_value, double pd_margin, int symmetric, u64* best, u64* maxfail, u64* stats) {
    u64 g = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 n_tests = 0, n_fallback = 0;
    if (g < total) {
        // the task holding g: task_prefix[w] <= g < task_prefix[w + 1]
        u32 lo = 0, hi = n_tasks;
        while (hi - lo > 1) {
            u32 mid = (lo + hi) >> 1;
            if (task_prefix[mid] <= g) lo = mid; else hi = mid;
        }
        u32 x = task_row[lo];
        u64 t = task_t0[lo] + (g - task_prefix[lo]);
        u64 o = off[x];
        u32 d = (u32)(off[x + 1] - o);
        const u32* row = cols + o;
        u64 lp1 = (u64)l + 1;

        u32 P[MAXL];
        unrank_set(d, l, t, binom, P);
        SetFactor<MAXL> f;
        // rank of S within row(x) \ {y}, for y at position q (n' = d - 1 elements):
        //   C(d - 1, l) - 1 - sum_c C(d - 2 - P'_c, l - c),  P'_c = P_c - [P_c > q].
        // With ip = #{c : P_c < q}: sum = sum_{c < ip} A_c + sum_{c >= ip} B_c,
        //   A_c = C(d - 2 - P_c, l - c), B_c = C(d - 1 - P_c, l - c).
        u64 sum = 0;
        for (int c = 0; c < l; ++c) {
            f.S[c] = row[P[c]];
            sum += binom[(u64)(d - 1 - P[c]) * lp1 + (l - c)];
        }
        u64 top = binom[(u64)(d - 1) * lp1 + l] - 1;
        int ip = 0;
        bool factored = false;
        for (u32 q = 0; q < d; ++q) {
            if (ip < l && P[ip] == q) {
                u64 a_c = (P[ip] + 2 <= d) ? binom[(u64)(d - 2 - P[ip]) * lp1 + (l - ip)] : 0;
                sum = sum - binom[(u64)(d - 1 - P[ip]) * lp1 + (l - ip)] + a_c;
                ++ip;
                continue;
            }
            int e = edge_of[o + q];
            if (e < 0) continue;
            u32 y = row[q];
            u64 key = ((u64)(x > y ? 1 : 0) << 63) | (top - sum);
            u64 cur = *((volatile u64*)(best + e));
            if (key >= cur) continue;  // a success with a smaller key is known
            if (!factored) {
                factor_set<MAXL>(f, C, p, x, l, symmetric != 0);
                factored = true;
            }
            bool fb;
            double pv = test_y<MAXL>(f, C, p, x, y, l, pd_margin, zfac, &fb);
            ++n_tests;
            n_fallback += fb ? 1 : 0;
            double mapped = na_map(pv, na_value);
            if (mapped >= alpha) {
                atomicMin(best + e, key);
            } else {
                atomicMax(maxfail + e, fail_bits(mapped));
            }
        }
    }
    n_tests = warp_sum(n_tests);
    n_fallback = warp_sum(n_fallback);
    if ((threadIdx.x & 31) == 0 && n_tests) {
        atomicAdd(stats + 0, n_tests);
        atomicAdd(stats + 1, n_fallback);
    }
}

// Re-evaluates the winning test of each listed edge (same functions as sets_body, so the same bits).
template <int MAXL>
__device__ __forceinline__ void pbest_body(const double* __restrict__ C, u64 p, const u64* __restrict__ off,
                                           const u32* __restrict__ cols, const u32* __restrict__ ei,
                                           const u32* __restrict__ ej, const u32* __restrict__ items, u32 n_items,
                                           const u64* __restrict__ binom, int l, double zfac, double pd_margin, int symmetric,
                                           const u64* __restrict__ best, double* __restrict__ pbest_out) {
    u32 k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n_items) return;
    u32 e = items[k];
    u64 key = best[e];
    u32 side = (u32)(key >> 63);
    u64 rank = key & ~SIDE_BIT;
    u32 x = side ? ej[e] : ei[e];
    u32 y = side ? ei[e] : ej[e];
    u64 o = off[x];
    u32 d = (u32)(off[x + 1] - o);
    const u32* row = cols + o;
    u32 lo = 0, hi = d;  // position of y in row(x)
    while (lo < hi) {
        u32 mid = (lo + hi) >> 1;
        if (row[mid] < y) lo = mid + 1; else hi = mid;
    }
    u32 qy = lo;
    u32 P[MAXL];
    unrank_set(d - 1, l, rank, binom, P);
    SetFactor<MAXL> f;
    for (int c = 0; c < l; ++c) f.S[c] = row[P[c] + (P[c] >= qy ? 1 : 0)];
    factor_set<MAXL>(f, C, p, x, l, symmetric != 0);
    bool fb;
    pbest_out[k] = test_y<MAXL>(f, C, p, x, y, l, pd_margin, zfac, &fb);
}

#define GAUSS_SET_KERNELS(M)                                                                                     \
    extern "C" __global__ void __launch_bounds__(BLOCK) gauss_sets_l##M(                                           \
        const double* __restrict__ C, u64 p, const u64* __restrict__ off, const u32* __restrict__ cols,          \
        const int* __restrict__ edge_of, const u32* __restrict__ task_row, const u64* __restrict__ task_t0,      \
        const u64* __restrict__ task_prefix, u32 n_tasks, u64 total, const u64* __restrict__ binom, int l,       \
        double zfac, double alpha, double na_value, double pd_margin, int symmetric, u64* best, u64* maxfail, u64* stats) {          \
        sets_body<M>(C, p, off, cols, edge_of, task_row, task_t0, task_prefix, n_tasks, total, binom, l, zfac,  \
                     alpha, na_value, pd_margin, symmetric, best, maxfail, stats);                                               \
    }                                                                                                            \
    extern "C" __global__ void gauss_pbest_l##M(                                                                 \
        const double* __restrict__ C, u64 p, const u64* __restrict__ off, const u32* __restrict__ cols,          \
        const u32* __restrict__ ei, const u32* __restrict__ ej, const u32* __restrict__ items, u32 n_items,      \
        const u64* __restrict__ binom, int l, double zfac, double pd_margin, int symmetric, const u64* __restrict__ best,             \
        double* __restrict__ pbest_out) {                                                                        \
        pbest_body<M>(C, p, off, cols, ei, ej, items, n_items, binom, l, zfac, pd_margin, symmetric, best, pbest_out);            \
    }

// One variant per compile: -DGAUSS_SETS=m (module.rs, Family). The indirection expands the
// macro's value before the name is pasted.
#define GAUSS_SET_KERNELS_OF(M) GAUSS_SET_KERNELS(M)
#ifdef GAUSS_SETS
GAUSS_SET_KERNELS_OF(GAUSS_SETS)
#endif

// A row still has work when some edge of it has no success yet, or only one on a later side
// (side 1 is row j's; row i's side-0 tests all come before it in canonical order). A success on
// this row's own side came from an earlier round, whose ranks for that y are all smaller.
#ifdef GAUSS_BASE
extern "C" __global__ void gauss_rows_live(const u64* __restrict__ off, const u32* __restrict__ cols,
                                     const int* __restrict__ edge_of, const u32* __restrict__ rows, u32 n_rows,
                                     const u64* __restrict__ best, u8* __restrict__ live) {
    u32 w = blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= n_rows) return;
    u32 x = rows[w];
    u8 alive = 0;
    for (u64 q = off[x]; q < off[x + 1]; ++q) {
        int e = edge_of[q];
        if (e < 0) continue;
        u64 side = cols[q] < x ? 1 : 0;
        u64 b = *((volatile const u64*)(best + e));
        if (b == NO_KEY || (b >> 63) > side) {
            alive = 1;
            break;
        }
    }
    live[w] = alive;
}
#endif

// ---------------------------------------------------------------------------------------------
// Dense levels 0 and 1 (skel.method = "stable"): the graph stays on the device as a bit matrix
// (row x holds `words` u64, bit y of word y / 64), pMax as a p x p matrix, level 0's empty
// sepsets as a second bit matrix (bit (x, y): sepset[[x]][[y]] = integer(0)). The rules per pair
// are pc-core's dense.rs (level0_pair, Level1Walk), line for line.

__device__ __forceinline__ bool bit_at(const u64* __restrict__ m, u64 words, u32 x, u32 y) {
    return (m[(u64)x * words + (y >> 6)] >> (y & 63)) & 1ull;
}
__device__ __forceinline__ void bit_clear_pair(u64* m, u64 words, u32 x, u32 y) {
    atomicAnd(&m[(u64)x * words + (y >> 6)], ~(1ull << (y & 63)));
    atomicAnd(&m[(u64)y * words + (x >> 6)], ~(1ull << (x & 63)));
}
__device__ __forceinline__ void bit_set(u64* m, u64 words, u32 x, u32 y) {
    atomicOr(&m[(u64)x * words + (y >> 6)], 1ull << (y & 63));
}
__device__ __forceinline__ void pmax_raise(double* pmax, u64 p, u32 i, u32 j, double v) {
    if (pmax[cidx(i, j, p)] < v) pmax[cidx(i, j, p)] = v;
    if (pmax[cidx(j, i, p)] < v) pmax[cidx(j, i, p)] = v;
}

// counters[0] += tests, counters[1] += removed, counters[2] |= not done, counters[3] +=
// qualifying edges: one atomic per block. Every thread of the block must call it.
__device__ void block_counts(u64 tests, u64 removed, u64 not_done, u64 qualifying, u64* counters) {
    __shared__ u64 part[4][32];
    for (int o = 16; o > 0; o >>= 1) {
        tests += __shfl_down_sync(FULL_MASK, tests, o);
        removed += __shfl_down_sync(FULL_MASK, removed, o);
        not_done |= __shfl_down_sync(FULL_MASK, not_done, o);
        qualifying += __shfl_down_sync(FULL_MASK, qualifying, o);
    }
    u32 t = threadIdx.x + threadIdx.y * blockDim.x;
    u32 warp = t >> 5, n_warps = (blockDim.x * blockDim.y + 31) >> 5;
    if ((t & 31) == 0) {
        part[0][warp] = tests;
        part[1][warp] = removed;
        part[2][warp] = not_done;
        part[3][warp] = qualifying;
    }
    __syncthreads();
    if (t == 0) {
        u64 a = 0, b = 0, c = 0, d = 0;
        for (u32 w = 0; w < n_warps; ++w) {
            a += part[0][w];
            b += part[1][w];
            c |= part[2][w];
            d += part[3][w];
        }
        if (a) atomicAdd(&counters[0], a);
        if (b) atomicAdd(&counters[1], b);
        if (c) atomicOr(&counters[2], c);
        if (d) atomicAdd(&counters[3], d);
    }
}

#ifdef GAUSS_BASE
// C's checks on the device, as pc-core's par::scan_symmetric makes them on the host: flags[0] a
// NaN, flags[1] a value beyond `bound` in absolute value (an infinity too), flags[2] a pair
// i < j not bit-identical (nor both NaN), flags[3] such a pair further apart than
// tol (1 + max |.|). Thread (i, j) reads C[i, j] and, for i < j, C[j, i].
extern "C" __global__ void gauss_scan_c(const double* __restrict__ C, u64 p, double tol, double bound, u32* __restrict__ flags) {
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u64 j = (u64)blockIdx.y * blockDim.y + threadIdx.y;
    if (i >= p || j >= p) return;
    double a = C[i + j * p];
    if (isnan(a)) atomicOr(flags + 0, 1u);
    if (fabs(a) > bound) atomicOr(flags + 1, 1u);
    if (i < j) {
        double b = C[j + i * p];
        if (__double_as_longlong(a) != __double_as_longlong(b) && !(isnan(a) && isnan(b))) {
            atomicOr(flags + 2, 1u);
            if (fabs(a - b) > tol * (1.0 + fmax(fabs(a), fabs(b)))) atomicOr(flags + 3, 1u);
        }
    }
}

// pMax before the first level: "stable" -Inf with 1 on the diagonal (pcalg's R: matrix(-Inf, p,
// p); diag 1), "stable.fast" -1 everywhere (its C++ fills -1; R maps it afterwards).
extern "C" __global__ void dense_pmax_init(double* __restrict__ pmax, u64 p, int fast) {
    u64 n = p * p;
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (u64)gridDim.x * blockDim.x) {
        pmax[k] = fast ? -1.0 : ((k % (p + 1) == 0) ? 1.0 : neg_inf());
    }
}

// Degree of every row: one warp per row.
extern "C" __global__ void dense_degrees(const u64* __restrict__ adj, u64 words, u32 p, u32* __restrict__ deg) {
    u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = threadIdx.x & 31;
    if (warp >= p) return;
    const u64* row = adj + warp * words;
    u32 d = 0;
    for (u64 w = lane; w < words; w += 32) d += __popcll(row[w]);
    for (int o = 16; o > 0; o >>= 1) d += __shfl_down_sync(FULL_MASK, d, o);
    if (lane == 0) deg[warp] = d;
}

// The neighbour lists of the graph (CSR, ascending, off from the degrees) and upper[x], the
// number of neighbours below x: one warp per row, each lane a word, a prefix sum of the words'
// popcounts placing each lane's bits.
extern "C" __global__ void dense_fill_rows(const u64* __restrict__ adj, u64 words, u32 p, const u64* __restrict__ off,
                                           u32* __restrict__ cols, u32* __restrict__ upper) {
    u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = threadIdx.x & 31;
    if (warp >= p) return;
    u32 x = (u32)warp;
    const u64* row = adj + warp * words;
    u64 base = off[x];
    u32 below = 0;
    for (u64 w0 = 0; w0 < words; w0 += 32) {
        u64 w = w0 + lane;
        u64 bits = w < words ? row[w] : 0ull;
        u32 c = __popcll(bits);
        u32 incl = c;  // inclusive prefix sum over lanes
        for (int o = 1; o < 32; o <<= 1) {
            u32 v = __shfl_up_sync(FULL_MASK, incl, o);
            if (lane >= (u32)o) incl += v;
        }
        u64 pos = base + incl - c;
        // neighbours below x within this lane's word
        if (w < words) {
            u64 lo_mask;
            if ((u64)(x >> 6) > w) lo_mask = ~0ull;
            else if ((u64)(x >> 6) < w) lo_mask = 0ull;
            else lo_mask = (x & 63) ? ((1ull << (x & 63)) - 1ull) : 0ull;
            below += __popcll(bits & lo_mask);
        }
        while (bits) {
            u32 t = __ffsll((long long)bits) - 1;
            cols[pos++] = (u32)(w * 64 + t);
            bits &= bits - 1;
        }
        base += __shfl_sync(FULL_MASK, incl, 31);
    }
    for (int o = 16; o > 0; o >>= 1) below += __shfl_down_sync(FULL_MASK, below, o);
    if (lane == 0) upper[x] = below;
}

// Exclusive prefix sums of each row's count, deg[x] less upper[x] when has_upper (a level's
// edges above each row), into out[0 .. p], the total into out[p] and stats[0], the largest
// degree into stats[1]: one block, each thread a run of rows (a deeper level's lists are made
// without the host).
extern "C" __global__ void dense_row_offsets(const u32* __restrict__ deg, const u32* __restrict__ upper, int has_upper,
                                             u32 p, u64* __restrict__ out, u64* __restrict__ stats) {
    __shared__ u64 part[1024];
    __shared__ u32 top[1024];
    u32 t = threadIdx.x, nt = blockDim.x;
    u32 per = (p + nt - 1) / nt;
    u32 a = min(p, t * per), b = min(p, a + per);
    u64 sum = 0;
    u32 m = 0;
    for (u32 x = a; x < b; ++x) {
        sum += deg[x] - (has_upper ? upper[x] : 0u);
        m = max(m, deg[x]);
    }
    part[t] = sum;
    top[t] = m;
    __syncthreads();
    for (u32 o = 1; o < nt; o <<= 1) {  // inclusive scan of the runs' sums
        u64 v = t >= o ? part[t - o] : 0;
        __syncthreads();
        part[t] += v;
        __syncthreads();
    }
    for (u32 o = nt >> 1; o > 0; o >>= 1) {
        if (t < o) top[t] = max(top[t], top[t + o]);
        __syncthreads();
    }
    u64 base = t ? part[t - 1] : 0;
    for (u32 x = a; x < b; ++x) {
        out[x] = base;
        base += deg[x] - (has_upper ? upper[x] : 0u);
    }
    if (t == nt - 1) {
        out[p] = part[nt - 1];
        stats[0] = part[nt - 1];
        stats[1] = top[0];
    }
}

// Level 0: a thread per pair (i, j), i along x (so C[i + j p] loads coalesce), j along y; pairs
// i < j of the snapshot `snap` with i in rows i0..i1 (a device's share) that are not fixed are
// tested; removals clear bits of `adj`.
extern "C" __global__ void gauss_dense_level0(const double* __restrict__ C, u64 p, const u64* __restrict__ snap,
                                              u64* adj, const u64* __restrict__ fixed, int has_fixed, u64 words,
                                              const u32* __restrict__ deg, double zfac, int both, double alpha,
                                              double na_value, double* __restrict__ pmax, u64* sep0,
                                              u64* counters, u32 i0, u32 i1, int fast) {
    // a block wholly below the diagonal (every i > j) has no pair: uniform exit, before any sync
    if ((u64)i0 + blockIdx.x * blockDim.x >= (u64)(blockIdx.y + 1) * blockDim.y) return;
    u32 i = i0 + blockIdx.x * blockDim.x + threadIdx.x;
    u32 j = blockIdx.y * blockDim.y + threadIdx.y;
    u64 tests = 0, removed = 0, not_done = 0;
    if (fast && (u64)j < p && i < i1 && i < j && bit_at(snap, words, i, j) && !(has_fixed && bit_at(fixed, words, i, j))) {
        // stable.fast (pc-core's level0_fast): one test, x = i; the raw p into pMax[i, j]; kept
        // only when p < alpha; the sepset at [[j]][[i]] unless p is NaN
        double pv = cpp_p(C[cidx(i, j, p)], zfac);
        tests = 1;
        pmax[cidx(i, j, p)] = pv;
        if (!(pv < alpha)) {
            removed = 1;
            bit_clear_pair(adj, words, i, j);
            if (pv == pv) bit_set(sep0, words, j, i);
        }
    } else if ((u64)j < p && i < i1 && i < j && bit_at(snap, words, i, j) && !(has_fixed && bit_at(fixed, words, i, j))) {
        double m0 = na_map(fisher_p(C[cidx(i, j, p)], zfac), na_value);
        double level_p;
        int side = -1;
        if (m0 >= alpha) {
            side = 0;
            tests = 1;
            level_p = m0;
            not_done = deg[i] > 1;
        } else {
            double m1 = both ? na_map(fisher_p(C[cidx(j, i, p)], zfac), na_value) : m0;
            tests = 2;
            level_p = fmax(m0, m1);
            not_done = deg[i] > 1 || deg[j] > 1;
            if (m1 >= alpha) side = 1;
        }
        pmax_raise(pmax, p, i, j, level_p);
        if (side >= 0) {
            removed = 1;
            bit_clear_pair(adj, words, i, j);
            if (side == 0) bit_set(sep0, words, i, j); else bit_set(sep0, words, j, i);
        }
    }
    block_counts(tests, removed, not_done, 0, counters);
}

// Level 1: a warp per edge {i, j}, i < j, of the level's lists (edge e is the (e - ebase[i])-th
// neighbour of i above i); the lanes walk the canonical ranks 32 at a time as gauss_level1, then
// lane 0 applies the rules: tests in the prefix, pMax, removal from `adj`, the sepset appended to
// sep_out (x, y, k) at an atomically taken slot. With `fast` (stable.fast, pc-core's DenseCpu):
// side 1 lists only j's neighbours not adjacent to i in the snapshot (a lane's candidate is
// dropped and the others' ranks close up), pMax[i, j] alone is raised, the sepset goes to
// [[j]][[i]], and the edges that qualified are counted.
extern "C" __global__ void gauss_dense_level1(const double* __restrict__ C, u64 p, const u64* __restrict__ off,
                                              const u32* __restrict__ cols, const u32* __restrict__ upper,
                                              const u64* __restrict__ ebase, u32 n_rows, u64 e0, u64 m,
                                              const u64* __restrict__ fixed, int has_fixed, u64 words, double zfac,
                                              double alpha, double na_value, u64* adj, double* __restrict__ pmax,
                                              u32* __restrict__ sep_out, u64* sep_count, u64* counters, int fast) {
    u64 warp = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = threadIdx.x & 31;
    u64 tests = 0, removed = 0, not_done = 0, qualifying = 0;
    if (warp < m) {
        u64 e = e0 + warp;
        u32 lo = 0, hi = n_rows;  // ebase[lo] <= e < ebase[lo + 1]
        while (hi - lo > 1) {
            u32 mid = (lo + hi) >> 1;
            if (ebase[mid] <= e) lo = mid; else hi = mid;
        }
        u32 i = lo;
        u32 qi = upper[i] + (u32)(e - ebase[i]);  // position of j in row(i)
        u32 j = cols[off[i] + qi];
        u64 deg_i = off[i + 1] - off[i], deg_j = off[j + 1] - off[j];
        bool fixed_edge = has_fixed && bit_at(fixed, words, i, j);
        if (!fixed_edge && (deg_i >= 2 || deg_j >= 2)) {
            qualifying = 1;
            // position of i in row(j)
            const u32* rj = cols + off[j];
            const u32* ri = cols + off[i];
            u32 a = 0, b = (u32)deg_j;
            while (a < b) {
                u32 mid = (a + b) >> 1;
                if (rj[mid] < i) a = mid + 1; else b = mid;
            }
            u32 qj = a;
            u64 key = NO_KEY;
            double pb = nan_value();
            u32 kb = 0;
            double mf = neg_inf();
            u64 n_listed[2] = {0, 0};  // candidates each side lists (its ranks)
            for (int side = 0; side < 2 && key == NO_KEY; ++side) {
                u64 dx = side ? deg_j : deg_i;
                if (dx < 2) continue;
                u32 x = side ? j : i, y = side ? i : j;
                u32 qy = side ? qj : qi;
                const u32* row = cols + off[x];
                u64 len = dx - 1;
                bool skip_common = fast && side == 1;
                for (u64 base = 0; base < len; base += 32) {
                    u64 r = base + lane;
                    bool listed = false, succ = false;
                    double pv = 0.0;
                    u32 k = 0;
                    if (r < len) {
                        u64 q = r + (r >= qy ? 1 : 0);
                        k = row[q];
                        listed = true;
                        if (skip_common) {  // k adjacent to i in the snapshot?
                            u32 c0 = 0, c1 = (u32)deg_i;
                            while (c0 < c1) {
                                u32 mid = (c0 + c1) >> 1;
                                if (ri[mid] < k) c0 = mid + 1; else c1 = mid;
                            }
                            listed = !(c0 < deg_i && ri[c0] == k);
                        }
                        if (listed) {
                            pv = level1_pf(C, p, x, y, k, zfac, fast);
                            double mapped = na_map(pv, na_value);
                            succ = mapped >= alpha;
                            if (!succ) mf = fmax(mf, mapped);
                        }
                    }
                    unsigned lball = __ballot_sync(FULL_MASK, listed);
                    unsigned ball = __ballot_sync(FULL_MASK, succ);
                    if (ball) {
                        int w = __ffs(ball) - 1;
                        u64 rank = n_listed[side] + (u64)__popc(lball & ((1u << w) - 1u));
                        key = ((u64)side << 63) | rank;
                        pb = __shfl_sync(FULL_MASK, pv, w);
                        kb = __shfl_sync(FULL_MASK, k, w);
                        break;
                    }
                    n_listed[side] += (u64)__popc(lball);
                }
            }
            for (int o = 16; o > 0; o >>= 1) mf = fmax(mf, __shfl_xor_sync(FULL_MASK, mf, o));
            if (lane == 0) {
                u64 n0 = n_listed[0];
                double level_p = mf;
                int side = -1;
                if (key == NO_KEY) {
                    tests = n0 + n_listed[1];
                } else {
                    side = (int)(key >> 63);
                    u64 r = key & ~SIDE_BIT;
                    // a success on side 1 means side 0 ran to its end: n0 is all of its ranks
                    tests = side ? n0 + r + 1 : r + 1;
                    level_p = fmax(mf, na_map(pb, na_value));
                }
                not_done = deg_i > 2 || (side != 0 && deg_j > 2);
                if (fast) {
                    if (pmax[cidx(i, j, p)] < level_p) pmax[cidx(i, j, p)] = level_p;
                } else {
                    pmax_raise(pmax, p, i, j, level_p);
                }
                if (side >= 0) {
                    removed = 1;
                    bit_clear_pair(adj, words, i, j);
                    u32 x = side ? j : i, y = side ? i : j;
                    u64 slot = atomicAdd(sep_count, 1ull);
                    sep_out[3 * slot] = fast ? j : x;
                    sep_out[3 * slot + 1] = fast ? i : y;
                    sep_out[3 * slot + 2] = kb;
                }
            }
        }
    }
    block_counts(lane == 0 ? tests : 0, lane == 0 ? removed : 0, lane == 0 ? not_done : 0,
                 lane == 0 ? qualifying : 0, counters);
}
#endif

// ---------------------------------------------------------------------------------------------
// Listed tests, one thread each: test t is x[t] _||_ y[t] | S = s[s_start[t] .. s_start[t + 1]],
// |S| <= MAXL, its raw p-value to p_out[t] (R's gaussCItest, as on the CPU: the closed forms for
// |S| <= 1, else the factorisation of (S, x, y) with S in the listed order). The conservative /
// majority-rule triple checks (pc.cons.intern) list their tests this way. zfac[l] is
// sqrt(n - l - 3) * 0.5 for each |S| = l of the launch.
template <int MAXL>
__device__ __forceinline__ void batch_body(const double* __restrict__ C, u64 p, const u32* __restrict__ tx,
                                           const u32* __restrict__ ty, const u64* __restrict__ s_start,
                                           const u32* __restrict__ s, u64 n_tests, const double* __restrict__ zfac,
                                           double pd_margin, int symmetric, double* __restrict__ p_out) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_tests) return;
    u32 x = tx[t], y = ty[t];
    u64 a = s_start[t];
    int l = (int)(s_start[t + 1] - a);
    double z = zfac[l];
    if (l == 0) {
        p_out[t] = fisher_p(C[cidx(x, y, p)], z);
        return;
    }
    if (l == 1) {
        p_out[t] = level1_p(C, p, x, y, s[a], z);
        return;
    }
    SetFactor<MAXL> f;
    for (int c = 0; c < l; ++c) f.S[c] = s[a + c];
    factor_set<MAXL>(f, C, p, x, l, symmetric != 0);
    bool fb;
    p_out[t] = test_y<MAXL>(f, C, p, x, y, l, pd_margin, z, &fb);
}

#define GAUSS_BATCH_KERNEL(M)                                                                                    \
    extern "C" __global__ void __launch_bounds__(BLOCK) gauss_batch_l##M(                                          \
        const double* __restrict__ C, u64 p, const u32* __restrict__ tx, const u32* __restrict__ ty,             \
        const u64* __restrict__ s_start, const u32* __restrict__ s, u64 n_tests, const double* __restrict__ zfac, \
        double pd_margin, int symmetric, double* __restrict__ p_out) {                                           \
        batch_body<M>(C, p, tx, ty, s_start, s, n_tests, zfac, pd_margin, symmetric, p_out);                     \
    }

// One variant per compile: -DGAUSS_BATCH=m (module.rs, Family). The indirection expands the
// macro's value before the name is pasted.
#define GAUSS_BATCH_KERNEL_OF(M) GAUSS_BATCH_KERNEL(M)
#ifdef GAUSS_BATCH
GAUSS_BATCH_KERNEL_OF(GAUSS_BATCH)
#endif

// ---------------------------------------------------------------------------------------------
// Listed tests of one level, one thread each (the rounds of windows.rs: how stable.fast's
// planned levels run on the GPU): test t is x[t] _||_ y[t] | S = s[t l .. (t + 1) l], its raw
// p-value to p_out[t], in either flavour (cpp: pcalg's C++ test), with batch_body's arithmetic.
// The raw p-value of x _||_ y | set[0 .. l) in either flavour (the listed and ranked tests').
template <int MAXL>
__device__ __forceinline__ double listed_p(const double* __restrict__ C, u64 p, u32 x, u32 y, const u32* set, int l,
                                           double zfac, double pd_margin, int symmetric, int cpp) {
    if (l == 0) return flavour_p(C[cidx(x, y, p)], zfac, cpp);
    if (l == 1) return level1_pf(C, p, x, y, set[0], zfac, cpp);
    SetFactor<MAXL> f;
    for (int c = 0; c < l; ++c) f.S[c] = set[c];
    factor_set<MAXL>(f, C, p, x, l, symmetric != 0);
    bool fb;
    return test_y<MAXL>(f, C, p, x, y, l, pd_margin, zfac, &fb, cpp);
}

template <int MAXL>
__device__ __forceinline__ void listed_body(const double* __restrict__ C, u64 p, const u32* __restrict__ tx,
                                            const u32* __restrict__ ty, const u32* __restrict__ s, u64 n_tests, int l,
                                            double zfac, double pd_margin, int symmetric, int cpp,
                                            double* __restrict__ p_out) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_tests) return;
    p_out[t] = listed_p<MAXL>(C, p, tx[t], ty[t], s + t * (u64)l, l, zfac, pd_margin, symmetric, cpp);
}

#define GAUSS_LISTED_KERNEL(M)                                                                                   \
    extern "C" __global__ void __launch_bounds__(BLOCK) gauss_listed_l##M(                                         \
        const double* __restrict__ C, u64 p, const u32* __restrict__ tx, const u32* __restrict__ ty,             \
        const u32* __restrict__ s, u64 n_tests, int l, double zfac, double pd_margin, int symmetric, int cpp,    \
        double* __restrict__ p_out) {                                                                            \
        listed_body<M>(C, p, tx, ty, s, n_tests, l, zfac, pd_margin, symmetric, cpp, p_out);                     \
    }

// One variant per compile: -DGAUSS_LISTED=m (module.rs, Family). The indirection expands the
// macro's value before the name is pasted.
#define GAUSS_LISTED_KERNEL_OF(M) GAUSS_LISTED_KERNEL(M)
#ifdef GAUSS_LISTED
GAUSS_LISTED_KERNEL_OF(GAUSS_LISTED)
#endif

// ---------------------------------------------------------------------------------------------
// Ranked tests of a stable.fast level (stable_fast.rs), one thread each, unranked here instead of
// written out by the host. A round is a list of n pieces, each the keys of one window
// (rank_windows.rs) on one side of its edge, in two arrays: w64 holds first[0 .. n] (piece k
// holds tests first[k] .. first[k + 1] - 1), key0[0 .. n) and base[0 .. n); w32 holds skip, len,
// x, y and win, n each. Test t of piece k has key key0[k] + (t - first[k]); its set, of key
// (side, rank), is the rank-th lexicographic l-subset of the side's list of len[k] members, the
// q-th member members[base[k] + q + (q >= skip[k])] (a plain side is row(x) read from the level's
// rows, skipping y's position; a common-last side a list of its own, skip[k] = ~0). The round's
// nw windows' results go to out: the smallest success key (atomicMin, out[w]), the failures'
// largest mapped p (atomicMax of fail_bits, out[nw + w]) and the raw p of the success (the
// doubles' bits, out[2 nw + w], from the second kernel); a test whose key is above a success
// already posted is skipped.
struct Pieces {
    const u64* first;
    const u64* key0;
    const u64* base;
    const u32* skip;
    const u32* len;
    const u32* x;
    const u32* y;
    const u32* win;
};

__device__ __forceinline__ Pieces pieces_of(const u64* __restrict__ w64, const u32* __restrict__ w32, u32 n) {
    Pieces q;
    q.first = w64;
    q.key0 = w64 + n + 1;
    q.base = w64 + 2 * (u64)n + 1;
    q.skip = w32;
    q.len = w32 + n;
    q.x = w32 + 2 * (u64)n;
    q.y = w32 + 3 * (u64)n;
    q.win = w32 + 4 * (u64)n;
    return q;
}

__device__ __forceinline__ u32 piece_of(const u64* __restrict__ first, u32 n_pieces, u64 t) {
    u32 lo = 0, hi = n_pieces;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (first[mid] <= t) lo = mid; else hi = mid;
    }
    return lo;
}

template <int MAXL>
__device__ __forceinline__ double ranked_p(const double* __restrict__ C, u64 p, const Pieces& q, u32 k, u64 key,
                                           const u32* __restrict__ members, const u64* __restrict__ binom, int l,
                                           double zfac, double pd_margin, int symmetric, int cpp) {
    u32 P[MAXL];
    u32 S[MAXL];
    unrank_set(q.len[k], l, key & ~SIDE_BIT, binom, P);
    const u32* list = members + q.base[k];
    u32 sk = q.skip[k];
    for (int c = 0; c < l; ++c) S[c] = list[P[c] + (P[c] >= sk ? 1u : 0u)];
    return listed_p<MAXL>(C, p, q.x[k], q.y[k], S, l, zfac, pd_margin, symmetric, cpp);
}

#define GAUSS_RANKED_KERNELS(M)                                                                                  \
    extern "C" __global__ void __launch_bounds__(BLOCK) gauss_ranked_l##M(                                         \
        const double* __restrict__ C, u64 p, const u64* __restrict__ w64, const u32* __restrict__ w32,           \
        u32 n_pieces, u32 n_windows, const u32* __restrict__ members, const u64* __restrict__ binom, int l,      \
        double zfac, double alpha, double na_value, double pd_margin, int symmetric, int cpp, u64* out) {        \
        Pieces q = pieces_of(w64, w32, n_pieces);                                                                \
        u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;                                                      \
        if (t >= q.first[n_pieces]) return;                                                                      \
        u32 k = piece_of(q.first, n_pieces, t);                                                                  \
        u64 key = q.key0[k] + (t - q.first[k]);                                                                  \
        u32 w = q.win[k];                                                                                        \
        if (key >= *((volatile u64*)(out + w))) return;                                                         \
        double pv = ranked_p<M>(C, p, q, k, key, members, binom, l, zfac, pd_margin, symmetric, cpp);           \
        double mapped = na_map(pv, na_value);                                                                    \
        if (mapped >= alpha) {                                                                                   \
            atomicMin(out + w, key);                                                                             \
        } else {                                                                                                 \
            atomicMax(out + n_windows + w, fail_bits(mapped));                                                   \
        }                                                                                                        \
    }                                                                                                            \
    /* the raw p of each window's winning test, from the piece that holds it (same arithmetic) */                \
    extern "C" __global__ void gauss_ranked_pbest_l##M(                                                          \
        const double* __restrict__ C, u64 p, const u64* __restrict__ w64, const u32* __restrict__ w32,           \
        u32 n_pieces, u32 n_windows, const u32* __restrict__ members, const u64* __restrict__ binom, int l,      \
        double zfac, double pd_margin, int symmetric, int cpp, u64* out) {                                       \
        Pieces q = pieces_of(w64, w32, n_pieces);                                                                \
        u32 k = blockIdx.x * blockDim.x + threadIdx.x;                                                           \
        if (k >= n_pieces) return;                                                                               \
        u32 w = q.win[k];                                                                                        \
        u64 key = out[w];                                                                                        \
        if (key == NO_KEY || key < q.key0[k] || key - q.key0[k] >= q.first[k + 1] - q.first[k]) return;          \
        double pv = ranked_p<M>(C, p, q, k, key, members, binom, l, zfac, pd_margin, symmetric, cpp);           \
        out[2 * (u64)n_windows + w] = (u64)__double_as_longlong(pv);                                             \
    }

#define GAUSS_RANKED_KERNELS_OF(M) GAUSS_RANKED_KERNELS(M)
#ifdef GAUSS_LISTED
GAUSS_RANKED_KERNELS_OF(GAUSS_LISTED)
#endif

// ---------------------------------------------------------------------------------------------
// stable.fast's levels l >= 2 on the dense levels' graph (dense.rs; pc-core's DenseCpu::
// level_deep is the CPU twin, line for line). A warp takes edges {i, j}, i < j, from a shared
// counter (`next`, up to `end` or the level's last edge, ebase[n_rows]; edge e is the
// (e - ebase[i])-th neighbour of i above i in the level's lists):
// side 0 lists row(i) without j; side 1, walked only when side 0 found no success, lists j's
// neighbours that are not i's and then the common ones, built in the warp's slice of `own`
// (stride entries), and tests its first C(nj, l) - C(common, l) ranks (the sets made only of
// common neighbours were side 0's). The lanes take 32 ranks at a time; the first success ends the
// edge, and its lane appends (j, i, set) to sep_out (l + 2 numbers). A tested edge appends its
// raise of pMax[i, j] to `raises` (the cell, the value's bits): pMax itself is on its way to the
// host meanwhile. counters[0..4] as block_counts; counters[4] and [5] count the sets and raises. The edge is cleared from `adj`; the snapshot lists stay as they were for the
// whole level.
__device__ __forceinline__ bool row_has(const u32* __restrict__ row, u32 n, u32 k) {
    u32 a = 0, b = n;
    while (a < b) {
        u32 mid = (a + b) >> 1;
        if (row[mid] < k) a = mid + 1; else b = mid;
    }
    return a < n && row[a] == k;
}

template <int MAXL>
__device__ __forceinline__ void deep_body(const double* __restrict__ C, u64 p, const u64* __restrict__ off,
                                          const u32* __restrict__ cols, const u32* __restrict__ upper,
                                          const u64* __restrict__ ebase, u32 n_rows, u64 end,
                                          const u64* __restrict__ fixed, int has_fixed, u64 words,
                                          const u64* __restrict__ binom, int l, double zfac, double alpha,
                                          double na_value, double pd_margin, int symmetric, u64* adj,
                                          u64* __restrict__ raises, u32* own_all, u64 stride,
                                          u32* __restrict__ sep_out, u64* counters, u64* next) {
    u64 ne = min(end, ebase[n_rows]);
    u64* sep_count = counters + 4;
    u64* raise_count = counters + 5;
    u64 gw = ((u64)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    u32 lane = threadIdx.x & 31;
    u32 below = (1u << lane) - 1u;
    u32* own = own_all + gw * stride;
    u64 lp1 = (u64)l + 1;
    u64 tests = 0, removed = 0, qualifying = 0;
    for (;;) {
        u64 e = 0;
        if (lane == 0) e = atomicAdd(next, 1ull);
        e = __shfl_sync(FULL_MASK, e, 0);
        if (e >= ne) break;
        u32 lo = 0, hi = n_rows;  // ebase[lo] <= e < ebase[lo + 1]
        while (hi - lo > 1) {
            u32 mid = (lo + hi) >> 1;
            if (ebase[mid] <= e) lo = mid; else hi = mid;
        }
        u32 i = lo;
        u32 qi = upper[i] + (u32)(e - ebase[i]);  // position of j in row(i)
        u32 j = cols[off[i] + qi];
        u32 deg_i = (u32)(off[i + 1] - off[i]), deg_j = (u32)(off[j + 1] - off[j]);
        u32 ni = deg_i - 1, nj = deg_j - 1;
        if (has_fixed && bit_at(fixed, words, i, j)) continue;
        if (ni < (u32)l && nj < (u32)l) continue;
        qualifying += 1;
        const u32* ri = cols + off[i];
        const u32* rj = cols + off[j];
        u64 n0 = ni >= (u32)l ? binom[(u64)ni * lp1 + l] : 0;
        u64 key = NO_KEY, n1 = 0;
        double pb = nan_value();
        double mf = neg_inf();
        for (int side = 0; side < 2 && key == NO_KEY; ++side) {
            u32 x, y, len, skip;
            const u32* list;
            u64 n;
            if (side == 0) {
                x = i; y = j; len = ni; skip = qi; list = ri; n = n0;
            } else {
                if (nj < (u32)l) break;
                // j's neighbours that are not i's, then the common ones, each ascending
                u32 m = 0, common = 0;
                for (int pass = 0; pass < 2; ++pass) {
                    u32 at = pass ? m : 0;
                    for (u32 b0 = 0; b0 < deg_j; b0 += 32) {
                        u32 q = b0 + lane;
                        u32 a = q < deg_j ? rj[q] : 0;
                        bool cand = q < deg_j && a != i;
                        bool com = cand && row_has(ri, deg_i, a);
                        bool take = cand && (pass ? com : !com);
                        unsigned bt = __ballot_sync(FULL_MASK, take);
                        if (take) own[at + __popc(bt & below)] = a;
                        at += __popc(bt);
                    }
                    if (pass == 0) m = at; else common = at - m;
                }
                __syncwarp();
                x = j; y = i; len = nj; skip = 0xFFFFFFFFu; list = own;
                n1 = binom[(u64)nj * lp1 + l] - binom[(u64)common * lp1 + l];
                n = n1;
            }
            for (u64 base = 0; base < n; base += 32) {
                u64 r = base + lane;
                bool succ = false;
                double pv = 0.0;
                u32 P[MAXL];
                u32 S[MAXL];
                if (r < n) {
                    unrank_set(len, l, r, binom, P);
                    for (int c = 0; c < l; ++c) S[c] = list[P[c] + (P[c] >= skip ? 1u : 0u)];
                    pv = listed_p<MAXL>(C, p, x, y, S, l, zfac, pd_margin, symmetric, 1);
                    double mapped = na_map(pv, na_value);
                    succ = mapped >= alpha;
                    if (!succ) mf = fmax(mf, mapped);
                }
                unsigned ball = __ballot_sync(FULL_MASK, succ);
                if (ball) {
                    int w = __ffs(ball) - 1;
                    key = ((u64)side << 63) | (base + (u64)w);
                    pb = __shfl_sync(FULL_MASK, pv, w);
                    if (lane == (u32)w) {
                        u64 slot = atomicAdd(sep_count, 1ull);
                        u32* rec = sep_out + slot * ((u64)l + 2);
                        rec[0] = j;
                        rec[1] = i;
                        for (int c = 0; c < l; ++c) rec[2 + c] = S[c];
                    }
                    break;
                }
            }
        }
        for (int o = 16; o > 0; o >>= 1) mf = fmax(mf, __shfl_xor_sync(FULL_MASK, mf, o));
        if (lane == 0) {
            u64 t;
            double level_p = mf;
            if (key == NO_KEY) {
                t = n0 + n1;
            } else {
                u64 r = key & ~SIDE_BIT;
                t = (key >> 63) ? n0 + r + 1 : r + 1;
                level_p = fmax(mf, na_map(pb, na_value));
                removed += 1;
                bit_clear_pair(adj, words, i, j);
            }
            tests += t;
            if (t > 0) {
                u64 slot = atomicAdd(raise_count, 1ull);
                raises[2 * slot] = cidx(i, j, p);
                raises[2 * slot + 1] = (u64)__double_as_longlong(level_p);
            }
        }
        __syncwarp();  // `own` is rewritten by the next edge
    }
    block_counts(lane == 0 ? tests : 0, lane == 0 ? removed : 0, 0, lane == 0 ? qualifying : 0, counters);
}

#define GAUSS_DEEP_KERNEL(M)                                                                                     \
    extern "C" __global__ void __launch_bounds__(BLOCK) gauss_dense_deep_l##M(                                     \
        const double* __restrict__ C, u64 p, const u64* __restrict__ off, const u32* __restrict__ cols,          \
        const u32* __restrict__ upper, const u64* __restrict__ ebase, u32 n_rows, u64 end,                       \
        const u64* __restrict__ fixed, int has_fixed, u64 words, const u64* __restrict__ binom, int l,           \
        double zfac, double alpha, double na_value, double pd_margin, int symmetric, u64* adj,                   \
        u64* __restrict__ raises, u32* own, u64 stride, u32* __restrict__ sep_out, u64* counters, u64* next) {   \
        deep_body<M>(C, p, off, cols, upper, ebase, n_rows, end, fixed, has_fixed, words, binom, l, zfac, alpha, \
                     na_value, pd_margin, symmetric, adj, raises, own, stride, sep_out, counters, next);         \
    }

#define GAUSS_DEEP_KERNEL_OF(M) GAUSS_DEEP_KERNEL(M)
#ifdef GAUSS_LISTED
GAUSS_DEEP_KERNEL_OF(GAUSS_LISTED)
#endif

