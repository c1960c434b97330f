// The AMR operations of a device-resident step over the resident batch:
// ghost fill (copies, interpolation, physical boundaries), restriction,
// refluxing and the CFL scan, one launch per phase over all patches.
//
// Each kernel executes the flat items of quilt_mesh::flat (same structs,
// same field order) with one thread per cell of the phase: the thread
// finds its item by bisecting the items' prefix sums of cells (between
// the items of its block's first and last cells) and does
// the operations of the item's CPU statement (`run` in quilt_mesh::flat)
// in their order. Compiled with --fmad=false the results are the CPU's
// bit for bit.

typedef unsigned long long u64;
typedef unsigned int u32;

// The equation of state (the header "eos.cuh" of every kernel file).
#include "eos.cuh"

// The equation of state's parameters in f64 and its minimum pressure
// (quilt_cuda::params::EosArgs, as in common.cuh).
struct EosArgs {
    double k[4];
    double p_min;
};

struct Strided {
    u64 base, sy, sz, sc;
};

struct CopyItem {
    Strided src, dst;
    u32 n[3];
    u32 route;  // 0 store to store, 1 store to scratch, 2 scratch to store
};

struct InterpItem {
    Strided dst, src;
    u64 flags;
    int lo[3];
    u32 n[3];
    int clo[3];
    int flo[3];
    u32 fn_[2];
    u32 ratio;
    u32 thin;
};

struct BoundaryItem {
    Strided bx;
    u32 lo[3];
    u32 n[3];
    u32 axis, kind;
    int edge;
    u32 side, negate, pad;
};

struct RestrictItem {
    Strided coarse, fine;
    u32 n[3];
    u32 ratio;
};

struct RefluxItem {
    Strided dst, fine;
    double factor;
    u64 coarse;
    u32 n[3];
    u32 axis, ratio, pass;
};

// One interior box of the CFL scan: its first interior cell in the batch
// and the patch's cell size.
struct RateItem {
    u64 base;
    u32 n[3];
    u32 pad;
    double dx[3];
};

// One patch to tag (quilt_mesh::flat::TagItem): `bx` is its interior
// grown by the detectors' reach of 2 cells.
struct TagItem {
    Strided bx;
    int lo[3];
    u32 level;
    u32 n[3];
    u32 wpr;
    u64 word;
};

// One criterion (quilt_mesh::flat::TagRule).
struct TagRule {
    u32 kind;   // 0 gradient, 1 shock
    u32 field;  // 0 component comps[0], 1 pressure of comps by eos.cuh
    u32 comps[5];
    u32 pad;
    double onset;
    double eos[4];
};

__device__ __forceinline__ u64 at(const Strided& s, u64 x, u64 y, u64 z, u64 c) {
    return s.base + x + s.sy * y + s.sz * z + s.sc * c;
}

// The item whose cells hold cell `t` of the phase: the last `k` with
// starts[k] <= t. `starts` holds the n + 1 prefix sums of the items' cells
// (starts[n] the phase's `total`), then for every block of the launch the
// item of its first cell and, last, the item of the phase's last cell
// (quilt_cuda's `block_firsts`): a thread bisects only between its block's
// first and last items, which a block mostly spans a few of. `t` may lie
// past `total` (the result is then of no use).
__device__ __forceinline__ u32 find_item_block(const u64* starts, u32 n, u64 total, u64 t) {
    const u64* firsts = starts + n + 1;
    u32 lo = (u32)firsts[blockIdx.x];
    u32 hi = (u32)firsts[blockIdx.x + 1] + 1;
    if (hi > n) hi = n;
    u64 c = t < total ? t : total - 1;
    while (hi - lo > 1) {
        u32 mid = (lo + hi) >> 1;
        if (starts[mid] <= c) lo = mid; else hi = mid;
    }
    return lo;
}

// Cell `r` of an item of extent `n` as (x, y, z). An item holds fewer than
// 2^32 cells (the host checks it), and 32-bit division costs the GPU a
// fraction of 64-bit division.
__device__ __forceinline__ void split(u64 r, const u32* n, u64* d) {
    u32 s = (u32)r;
    u32 q = s / n[0];
    d[0] = s - q * n[0];
    d[1] = q % n[1];
    d[2] = q / n[1];
}

// Components of one cell loaded before any of them is stored. A load after
// a store to memory the compiler cannot tell apart from it waits for that
// store; loading a chunk first keeps its loads in flight together.
#define COMP_CHUNK 8

template <typename T>
__device__ void copy_cells(const CopyItem* __restrict__ items, const u64* __restrict__ starts,
                           u32 nitems, u64 total, u32 ncomp, T* store, T* scratch) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t >= total) return;
    const CopyItem it = items[k];
    u64 d[3];
    split(t - starts[k], it.n, d);
    const T* src = it.route == 2 ? scratch : store;
    T* dst = it.route == 1 ? scratch : store;
    u64 s = at(it.src, d[0], d[1], d[2], 0), o = at(it.dst, d[0], d[1], d[2], 0);
    for (u32 c0 = 0; c0 < ncomp; c0 += COMP_CHUNK) {
        T v[COMP_CHUNK];
#pragma unroll
        for (u32 c = 0; c < COMP_CHUNK; ++c)
            if (c0 + c < ncomp) v[c] = src[s + it.src.sc * (c0 + c)];
#pragma unroll
        for (u32 c = 0; c < COMP_CHUNK; ++c)
            if (c0 + c < ncomp) dst[o + it.dst.sc * (c0 + c)] = v[c];
    }
}

// The limited slope of quilt_mesh::interp (0 constant, 1 minmod, 2 MC).
template <typename T>
__device__ __forceinline__ T limited(u32 limiter, T dl, T dr) {
    T p = dl * dr;
    if (!(p > (T)0)) return (T)0;
    if (limiter == 1) {
        T a = fabs(dl), b = fabs(dr);
        return copysign(b < a ? b : a, dl);
    }
    if (limiter == 2) {
        T dc = (dl + dr) * (T)0.5;
        T m = fabs(dc);
        T b = (T)2 * fabs(dl);
        m = b < m ? b : m;
        T c = (T)2 * fabs(dr);
        m = c < m ? c : m;
        return copysign(m, dc);
    }
    return (T)0;
}

template <typename T>
__device__ void interp_cells(const InterpItem* items, const u64* starts, u32 nitems, u64 total,
                             u32 ncomp, u32 limiter, const unsigned char* flags,
                             const T* scratch, T* store) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t >= total) return;
    const InterpItem& it = items[k];
    u64 d[3];
    split(t - starts[k], it.n, d);
    int r = (int)it.ratio;
    int f[3], q[3];
    T o[3];
    for (int a = 0; a < 3; ++a) {
        f[a] = it.lo[a] + (int)d[a];
        q[a] = f[a] >= 0 ? f[a] / r : -((-f[a] + r - 1) / r);
        o[a] = (T)(((double)(f[a] & (r - 1)) + 0.5) / (double)r - 0.5);
    }
    u64 fi = ((u64)(q[2] - it.flo[2]) * it.fn_[1] + (u64)(q[1] - it.flo[1])) * it.fn_[0]
             + (u64)(q[0] - it.flo[0]);
    unsigned fl = flags[it.flags + fi];
    u64 stride[3] = {1, it.src.sy, it.src.sz};
    for (u32 c = 0; c < ncomp; ++c) {
        u64 i = at(it.src, (u64)(q[0] - it.clo[0]), (u64)(q[1] - it.clo[1]),
                   (u64)(q[2] - it.clo[2]), c);
        T u = scratch[i];
        T s[3];
        for (int a = 0; a < 3; ++a) {
            bool hl = (fl >> (2 * a)) & 1;
            bool hr = (fl >> (2 * a)) & 2;
            T dl = hl ? u - scratch[i - stride[a]] : (T)0;
            T dr = hr ? scratch[i + stride[a]] - u : (T)0;
            s[a] = limited<T>(limiter, hl ? dl : dr, hr ? dr : dl);
        }
        T v;
        if (it.thin) {
            v = u + s[1] * o[1];
            v = v + s[0] * o[0];
        } else {
            v = u + s[0] * o[0];
            v = v + s[1] * o[1];
        }
        v = v + s[2] * o[2];
        store[at(it.dst, d[0], d[1], d[2], c)] = v;
    }
}

template <typename T>
__device__ void boundary_cells(const BoundaryItem* items, const u64* starts, u32 nitems,
                               u64 total, u32 ncomp, T* store) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t >= total) return;
    const BoundaryItem& it = items[k];
    u64 d[3];
    split(t - starts[k], it.n, d);
    u64 p[3] = {it.lo[0] + d[0], it.lo[1] + d[1], it.lo[2] + d[2]};
    long long e = it.edge, x = (long long)p[it.axis];
    long long src = it.kind == 0 ? e : (it.side == 0 ? 2 * e - 1 - x : 2 * e + 1 - x);
    u64 s[3] = {p[0], p[1], p[2]};
    s[it.axis] = (u64)src;
    for (u32 c = 0; c < ncomp; ++c) {
        T v = store[at(it.bx, s[0], s[1], s[2], c)];
        store[at(it.bx, p[0], p[1], p[2], c)] = ((it.negate >> c) & 1) ? -v : v;
    }
}

template <typename T>
__device__ void restrict_cells(const RestrictItem* items, const u64* starts, u32 nitems,
                               u64 total, u32 ncomp, T* store) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t >= total) return;
    const RestrictItem& it = items[k];
    u64 d[3];
    split(t - starts[k], it.n, d);
    u64 r = it.ratio;
    T inv = (T)(1.0 / (double)(r * r * r));
    if (r == 2) {
        // The common ratio: a component's eight fine values are loaded
        // together, then summed in the CPU's order (z, y, x).
        const u64 f = at(it.fine, 2 * d[0], 2 * d[1], 2 * d[2], 0);
        const u64 o = at(it.coarse, d[0], d[1], d[2], 0);
        const u64 sy = it.fine.sy, sz = it.fine.sz;
        const u64 off[8] = {0, 1, sy, sy + 1, sz, sz + 1, sz + sy, sz + sy + 1};
        for (u32 c = 0; c < ncomp; ++c) {
            const T* src = store + f + it.fine.sc * c;
            T v[8];
#pragma unroll
            for (int k = 0; k < 8; ++k) v[k] = src[off[k]];
            T a = (T)0;
#pragma unroll
            for (int k = 0; k < 8; ++k) a = a + v[k];
            store[o + it.coarse.sc * c] = a * inv;
        }
        return;
    }
    for (u32 c = 0; c < ncomp; ++c) {
        T a = (T)0;
        for (u64 dz = 0; dz < r; ++dz)
            for (u64 dy = 0; dy < r; ++dy)
                for (u64 dx = 0; dx < r; ++dx)
                    a = a + store[at(it.fine, d[0] * r + dx, d[1] * r + dy, d[2] * r + dz, c)];
        store[at(it.coarse, d[0], d[1], d[2], c)] = a * inv;
    }
}

template <typename T>
__device__ void reflux_cells(const RefluxItem* items, const u64* starts, u32 nitems, u64 total,
                             u32 ncomp, const u64* coarse, const T* flux, T* store) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t >= total) return;
    const RefluxItem& it = items[k];
    u64 local = t - starts[k];
    u64 d[3];
    split(local, it.n, d);
    u64 r = it.ratio;
    double scale = 1.0 / (double)(r * r);
    u64 span[3] = {r, r, r};
    span[it.axis] = 1;
    u64 f0[3] = {d[0] * r, d[1] * r, d[2] * r};
    f0[it.axis] = 0;
    const u64* cs = coarse + 2 * (it.coarse + local);
    if (r == 2) {
        // The common ratio: the four fine faces of a component are loaded
        // together, then subtracted in the CPU's order (z, y, x).
        const u64 f = at(it.fine, f0[0], f0[1], f0[2], 0);
        const u64 s_in = it.axis == 0 ? it.fine.sy : 1;
        const u64 s_out = it.axis == 2 ? it.fine.sy : it.fine.sz;
        const u64 off[4] = {0, s_in, s_out, s_out + s_in};
        const u64 c0 = cs[0], c1 = cs[1];
        const u64 o = at(it.dst, d[0], d[1], d[2], 0);
        for (u32 c = 0; c < ncomp; ++c) {
            const T* src = flux + f + it.fine.sc * c;
            T v[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) v[k] = src[off[k]];
            double acc = 0.0;
            acc += 1.0 * (double)flux[c0 + c * c1];
#pragma unroll
            for (int k = 0; k < 4; ++k) acc -= scale * (double)v[k];
            const u64 i = o + it.dst.sc * c;
            store[i] = (T)((double)store[i] + it.factor * acc);
        }
        return;
    }
    for (u32 c = 0; c < ncomp; ++c) {
        double acc = 0.0;
        acc += 1.0 * (double)flux[cs[0] + c * cs[1]];
        for (u64 kz = 0; kz < span[2]; ++kz)
            for (u64 ky = 0; ky < span[1]; ++ky)
                for (u64 kx = 0; kx < span[0]; ++kx)
                    acc -= scale * (double)flux[at(it.fine, f0[0] + kx, f0[1] + ky, f0[2] + kz, c)];
        u64 i = at(it.dst, d[0], d[1], d[2], c);
        store[i] = (T)((double)store[i] + it.factor * acc);
    }
}

// The CFL scan of quilt_sweep::physics::Gas::signal_rate over interior cells:
// the largest rate as the bits of a non-negative double (their order is the
// values' order) in out[0]; a bad cell sets out[1].
template <typename T>
__device__ void rate_cells(const RateItem* items, const u64* starts, u32 nitems, u64 total,
                           u64 sy, u64 sz, u64 sc, EosArgs eos, const T* data, u64* out) {
    __shared__ double best[32];
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    double rate = 0.0;
    bool bad = false;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t < total) {
        const RateItem& it = items[k];
        u64 d[3];
        split(t - starts[k], it.n, d);
        u64 i = it.base + d[0] + sy * d[1] + sz * d[2];
        double u[5];
        for (int c = 0; c < 5; ++c) {
            u[c] = (double)data[i + sc * c];
            bad = bad || !isfinite(u[c]);
        }
        if (!bad && !(u[0] > 0.0)) bad = true;
        if (!bad) {
            double vel[3] = {u[1] / u[0], u[2] / u[0], u[3] / u[0]};
            double ke = 0.5 * (u[1] * vel[0] + u[2] * vel[1] + u[3] * vel[2]);
            double p = eos_pressure(eos.k, u[0], u[4] - ke);
            if (isnan(p) || p <= eos.p_min) {
                bad = true;
            } else {
                double cs = sqrt(eos_bulk_modulus(eos.k, u[0], p) / u[0]);
                for (int a = 0; a < 3; ++a) rate = fmax(rate, (fabs(vel[a]) + cs) / it.dx[a]);
                if (!isfinite(rate)) bad = true;
            }
        }
        if (bad) rate = 0.0;
    }
    if (__any_sync(0xffffffffu, bad) && (threadIdx.x & 31) == 0) atomicMax(&out[1], 1ull);
    for (int o = 16; o > 0; o >>= 1) rate = fmax(rate, __shfl_down_sync(0xffffffffu, rate, o));
    if ((threadIdx.x & 31) == 0) best[threadIdx.x >> 5] = rate;
    __syncthreads();
    if (threadIdx.x == 0) {
        double m = 0.0;
        for (u32 w = 0; w < (blockDim.x + 31) / 32; ++w) m = fmax(m, best[w]);
        atomicMax(&out[0], (u64)__double_as_longlong(m));
    }
}

// The 13 neighbour directions of quilt_mesh::tag::DIRECTIONS.
__constant__ int TAG_DIRECTIONS[13][3] = {
    {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0, 1, 1}, {0, 1, -1}, {1, 0, 1}, {1, 0, -1},
    {1, 1, 0}, {1, -1, 0}, {1, 1, 1}, {1, 1, -1}, {1, -1, 1}, {1, -1, -1}};

// The field of `rule` at store index `i` (component 0 of a cell), as
// quilt_mesh::tag::pressure_with computes the pressure, with the equation
// of state's parameters rounded to T.
template <typename T>
__device__ __forceinline__ T tag_field(const TagRule& rule, const T* data, long long i, u64 sc) {
    if (rule.field == 0) return data[i + (long long)(sc * rule.comps[0])];
    T rho = data[i + (long long)(sc * rule.comps[0])];
    T mx = data[i + (long long)(sc * rule.comps[1])];
    T my = data[i + (long long)(sc * rule.comps[2])];
    T mz = data[i + (long long)(sc * rule.comps[3])];
    T e = data[i + (long long)(sc * rule.comps[4])];
    T m2 = mx * mx + my * my + mz * mz;
    const T k[4] = {(T)rule.eos[0], (T)rule.eos[1], (T)rule.eos[2], (T)rule.eos[3]};
    T half = (T)0.5;
    return eos_pressure(k, rho, e - half * m2 / rho);
}

// Whether `rule` tags the cell at store index `i` (the detectors of
// quilt_mesh::tag, fresh thresholds `thr` per direction).
template <typename T>
__device__ bool tag_rule(const TagRule& rule, const T* thr, const T* data, long long i, u64 sy,
                         u64 sz, u64 sc) {
    T c = tag_field<T>(rule, data, i, sc);
    T onset = (T)rule.onset;
    for (int k = 0; k < 13; ++k) {
        long long o = TAG_DIRECTIONS[k][0] + TAG_DIRECTIONS[k][1] * (long long)sy
                      + TAG_DIRECTIONS[k][2] * (long long)sz;
        T m = tag_field<T>(rule, data, i - o, sc);
        T p = tag_field<T>(rule, data, i + o, sc);
        T jump = fmax(fabs(c - m), fabs(p - c));
        if (rule.kind == 0) {
            if (jump > thr[k]) return true;
            continue;
        }
        if (jump <= thr[k]) continue;
        T j1 = p - m;
        T j2 = tag_field<T>(rule, data, i + 2 * o, sc) - tag_field<T>(rule, data, i - 2 * o, sc);
        if (fabs(j1) >= onset * fabs(j2) || j1 * j2 < (T)0) return true;
    }
    return false;
}

// One thread per tag bit: the warp of a 32-bit word assembles it with a
// ballot (items start on whole words), lane 0 writes it.
template <typename T>
__device__ void tag_cells(const TagItem* items, const u64* starts, u32 nitems, u64 total,
                          const TagRule* rules, u32 nrules, const T* thr, u32 levels,
                          const T* data, u32* out) {
    u64 t = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    u32 k = find_item_block(starts, nitems, total, t);
    if (t >= total) return;  // whole warps: total is a multiple of 32
    const TagItem& it = items[k];
    u64 local = t - starts[k];
    u64 word = local >> 5;
    u64 row_words = 2 * (u64)it.wpr;
    u64 row = word / row_words;
    u64 x = (word % row_words) * 32 + (local & 31);
    bool tagged = false;
    if (x < it.n[0]) {
        u64 y = row % it.n[1], z = row / it.n[1];
        long long i = (long long)at(it.bx, x + 2, y + 2, z + 2, 0);
        for (u32 r = 0; r < nrules && !tagged; ++r)
            tagged = tag_rule<T>(rules[r], thr + ((u64)r * levels + it.level) * 13, data, i,
                                 it.bx.sy, it.bx.sz, it.bx.sc);
    }
    u32 bits = __ballot_sync(0xffffffffu, tagged);
    if ((local & 31) == 0) out[it.word + word] = bits;
}

#define QUILT_AMR(T, S)                                                                          \
    extern "C" __global__ void flat_copy_##S(const CopyItem* items, const u64* starts, u32 n,    \
                                             u64 total, u32 ncomp, T* store, T* scratch) {       \
        copy_cells<T>(items, starts, n, total, ncomp, store, scratch);                            \
    }                                                                                            \
    extern "C" __global__ void flat_interp_##S(const InterpItem* items, const u64* starts,       \
                                               u32 n, u64 total, u32 ncomp, u32 limiter,         \
                                               const unsigned char* flags, const T* scratch,     \
                                               T* store) {                                       \
        interp_cells<T>(items, starts, n, total, ncomp, limiter, flags, scratch, store);          \
    }                                                                                            \
    extern "C" __global__ void flat_boundary_##S(const BoundaryItem* items, const u64* starts,   \
                                                 u32 n, u64 total, u32 ncomp, T* store) {        \
        boundary_cells<T>(items, starts, n, total, ncomp, store);                                 \
    }                                                                                            \
    extern "C" __global__ void flat_restrict_##S(const RestrictItem* items, const u64* starts,   \
                                                 u32 n, u64 total, u32 ncomp, T* store) {        \
        restrict_cells<T>(items, starts, n, total, ncomp, store);                                 \
    }                                                                                            \
    extern "C" __global__ void flat_reflux_##S(const RefluxItem* items, const u64* starts,       \
                                               u32 n, u64 total, u32 ncomp, const u64* coarse,   \
                                               const T* flux, T* store) {                        \
        reflux_cells<T>(items, starts, n, total, ncomp, coarse, flux, store);                     \
    }                                                                                            \
    extern "C" __global__ void flat_rate_##S(const RateItem* items, const u64* starts, u32 n,    \
                                             u64 total, u64 sy, u64 sz, u64 sc, EosArgs eos,     \
                                             const T* data, u64* out) {                          \
        rate_cells<T>(items, starts, n, total, sy, sz, sc, eos, data, out);                       \
    }                                                                                            \
    extern "C" __global__ void flat_tag_##S(const TagItem* items, const u64* starts, u32 n,      \
                                            u64 total, const TagRule* rules, u32 nrules,         \
                                            const T* thr, u32 levels, const T* data, u32* out) { \
        tag_cells<T>(items, starts, n, total, rules, nrules, thr, levels, data, out);             \
    }

QUILT_AMR(float, f32)
QUILT_AMR(double, f64)
