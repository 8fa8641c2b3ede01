// The merge of several devices' dense levels (pc-core's multi.rs): run on the device that
// gathers the others' copies after a peer copy into a scratch buffer.

typedef unsigned long long u64;

// Graph bits: a pair removed on any device is removed.
extern "C" __global__ void merge_and_u64(u64* __restrict__ dst, const u64* __restrict__ src, u64 n) {
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (u64)gridDim.x * blockDim.x) dst[k] &= src[k];
}

// Level 0's sepset bits: each set by the pair's owner only.
extern "C" __global__ void merge_or_u64(u64* __restrict__ dst, const u64* __restrict__ src, u64 n) {
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (u64)gridDim.x * blockDim.x) dst[k] |= src[k];
}

// pMax: each cell raised only by its pair's owner, from copies that started equal (never NaN).
extern "C" __global__ void merge_max_f64(double* __restrict__ dst, const double* __restrict__ src, u64 n) {
    for (u64 k = (u64)blockIdx.x * blockDim.x + threadIdx.x; k < n; k += (u64)gridDim.x * blockDim.x) {
        double s = src[k];
        if (s > dst[k]) dst[k] = s;
    }
}
