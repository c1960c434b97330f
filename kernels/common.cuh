// Shared part of quilt's CUDA kernels: the batch layout (descriptors, column
// geometry, flux-buffer indexing), the Euler physics with the floating-point
// operation order of the CPU reference (crates/quilt-sweep), the input scan,
// counters, error keys and the grid barrier of the fused kernels.
//
// Every expression that produces a value compared with the CPU is written in
// the same order as its Rust twin, so that with NVRTC's --fmad=false the
// kernels reproduce quilt-sweep bit for bit (see docs/quilt-cuda.md).
//
// Compiled by NVRTC at run time; the host passes this file as the header
// "common.cuh" of every scheme file.
#ifndef QUILT_COMMON_CUH
#define QUILT_COMMON_CUH

typedef unsigned int u32;
typedef unsigned long long u64;
typedef long long i64;

// Largest column (bin edge) the kernels handle: shared-memory columns and
// the 6-bit cell coordinates of error keys are sized for it.
#define QUILT_MAX_EDGE 64
// Descriptors that fit the constant bank next to the other constants.
#define QUILT_CONST_DESCS 768
#define QUILT_NO_ERROR 0xffffffffffffffffull
// Components per cell of the batch layout: the five Euler components, then
// the passive scalars (quilt_sweep::scheme::scalar). The host defines it
// when a run carries scalars; the Euler kernels use it for their strides
// only, so with five the code is the same as without the define.
#ifndef QUILT_NCOMP
#define QUILT_NCOMP 5
#endif

// The equation of state: eos_pressure, eos_internal_energy and
// eos_bulk_modulus (kernels/eos_ideal.cuh, or the solver's CudaEos header),
// passed by the host as the header "eos.cuh".
#include "eos.cuh"
static_assert(QUILT_NCOMP >= 5 && QUILT_NCOMP <= 16, "5 Euler components and at most 11 scalars (4-bit error keys)");

// quilt_sweep::PatchDesc, byte for byte (80 bytes, no padding).
struct PatchDesc {
    u64 id;
    double dx[3];
    u64 flux_offset;
    u32 bin;
    u32 offset[3];
    u32 extent[3];
    u32 ghost;
    u32 level;
    u32 user;
};

__constant__ PatchDesc c_descs[QUILT_CONST_DESCS];

// The equation of state's parameters (quilt_sweep::physics::Eos::params)
// rounded to T, and the floors; the pressure floor counts from the
// equation of state's minimum pressure (Gas::lowest_pressure).
template <class T> struct GasK {
    T eos[4];
    T rho_floor, p_floor;
};

// The equation of state's parameters in f64 and its minimum pressure, for
// the scans (quilt_cuda::params::EosArgs).
struct EosArgs {
    double k[4];
    double p_min;
};

// Per-patch step constants, rounded to T on the host like the CPU driver
// (dt/dx per axis, then the flux-buffer weight dt or dt/2).
template <class T> struct PatchStep {
    T dtdx[3];
    T wflux;
};

// One work item of a pass: a column (cell-parallel kernels: patch-local
// transverse coordinates, ghosts included) or, for the marching kernels, 32
// consecutive columns of one patch in the flat order of its (tb, ta) grid
// starting at ta (tb unused): whole warps stay busy whatever the widths.
struct ColItem {
    u32 patch;
    unsigned short ta, tb;
};

// One pass: a directional sweep (split schemes) or one axis of one TVD stage.
struct PassInfo {
    u64 items;   // const ColItem*
    u64 pstart;  // const u32*: first item of each patch position, n+1 entries
    int axis, read_halo;
    int th0, th1, th2;  // transverse ghost rows covered along x, y, z
    int slot;    // error slot (sweep index, or TVD stage)
    int stage;   // TVD stage 0/1
    int sub;     // TVD: 0 = acc = du, 1 = acc += du, 2 = stage update
    int march;   // items are flat segments of 32 columns, marched
    int rows;    // items are groups of rows (else, and not march, one column each)
};

#define QUILT_MAX_PASSES 6

template <class T> struct StepArgs {
    u64 data, flux, stage, acc;  // T*
    u64 descs;                   // const PatchDesc*
    u64 step;                    // const PatchStep<T>*
    u64 counters;                // u64[2]: density, pressure floors
    u64 errors;                  // u64[QUILT_MAX_PASSES]: first bad cell per slot
    u64 barrier;                 // u32: grid-barrier counter (fused kernels)
    u64 queue;                   // u32[QUILT_MAX_PASSES]: next item of each pass of the chunk (marching kernels)
    u64 passes;                  // const PassInfo*: the passes of the step
    u32 q0, q1;                  // patch positions [q0, q1) of this chunk
    int use_const;               // descriptors read from c_descs
    int bin_edge;
    int opt0, opt1;              // scheme options (limiter, TVD flux)
    int pass0, npasses;          // passes [pass0, pass0 + npasses) of this launch
    GasK<T> k;
};

// ---------------------------------------------------------------- math ----
// Overloads that keep IEEE semantics (NVRTC defaults: prec-div, prec-sqrt,
// no flush to zero) and the NaN rules of Rust's min/max.
//
// With QUILT_FAST_F32 defined (CudaConfig::fast_f32) the f32 division,
// reciprocal and square root are the hardware approximations instead
// (div.full.f32 at most 2 ulp; rcp.approx.ftz.f32, which flushes a
// denormal argument or result to zero, as CUDA's fast math does;
// sqrt.approx.f32): results are no longer bitwise the CPU's but stay within
// the f32 tolerance, and each of the thirteen divisions of an RTVD cell
// update loses its branch to the IEEE slow path.
#ifdef QUILT_FAST_F32
__device__ __forceinline__ float q_sqrt(float x) {
    float r;
    asm("sqrt.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
    return r;
}
__device__ __forceinline__ float q_div(float a, float b) {
    float r;
    asm("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
    return r;
}
// 1 / a (the CPU's T(1) / a).
__device__ __forceinline__ float q_rcp(float a) {
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
    return r;
}
#else
__device__ __forceinline__ float q_rcp(float a) { return 1.0f / a; }
__device__ __forceinline__ float q_sqrt(float x) { return sqrtf(x); }
__device__ __forceinline__ float q_div(float a, float b) { return a / b; }
#endif
__device__ __forceinline__ double q_sqrt(double x) { return sqrt(x); }
__device__ __forceinline__ double q_div(double a, double b) { return a / b; }
__device__ __forceinline__ double q_rcp(double a) { return 1.0 / a; }
// Whether q_div of T is the branch-free approximation: code may then divide
// unconditionally and select, instead of branching around the division.
template <class T> __device__ __forceinline__ constexpr bool q_fast() { return false; }
#ifdef QUILT_FAST_F32
template <> __device__ __forceinline__ constexpr bool q_fast<float>() { return true; }
#endif
__device__ __forceinline__ float q_abs(float x) { return fabsf(x); }
__device__ __forceinline__ double q_abs(double x) { return fabs(x); }
__device__ __forceinline__ float q_min(float a, float b) { return fminf(a, b); }
__device__ __forceinline__ double q_min(double a, double b) { return fmin(a, b); }
__device__ __forceinline__ float q_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double q_max(double a, double b) { return fmax(a, b); }
__device__ __forceinline__ bool q_finite(float x) { return isfinite(x); }
__device__ __forceinline__ bool q_finite(double x) { return isfinite(x); }

// ------------------------------------------------------------- physics ----
// Column order [rho, m_n, m_t1, m_t2, E] (quilt_sweep::physics::column).

// Kinetic energy of u given 1/rho, in the CPU's operation order.
template <class T> __device__ __forceinline__ T kinetic_energy(const T u[5], T inv) {
    return T(0.5) * (u[1] * u[1] + (u[2] * u[2] + u[3] * u[3])) * inv;
}

template <class T>
__device__ __forceinline__ void signal_speed(const GasK<T>& k, const T u[5], T& vn, T& p, T& cs) {
    T inv = q_rcp(u[0]);
    vn = u[1] * inv;
    T ke = kinetic_energy(u, inv);
    p = q_max(eos_pressure(k.eos, u[0], u[4] - ke), k.p_floor);
    cs = q_sqrt(eos_bulk_modulus(k.eos, u[0], p) * inv);
}

template <class T> __device__ __forceinline__ void euler_flux(const T u[5], T vn, T p, T f[5]) {
    f[0] = u[1];
    f[1] = u[1] * vn + p;
    f[2] = u[2] * vn;
    f[3] = u[3] * vn;
    f[4] = (u[4] + p) * vn;
}

// Floor counters of one thread, flushed once at the end of a kernel.
struct Floors {
    u32 density, pressure;
};

// The floors, keeping 1/rho and the kinetic energy of the floored state
// (the floors change neither once the density is floored), so that a split
// flux of that state need not divide again: the values are those the
// separate calls compute.
template <class T>
__device__ __forceinline__ void apply_floors_keep(const GasK<T>& k, T u[5], Floors& c, T& inv, T& ke) {
    if (u[0] < k.rho_floor) {
        u[0] = k.rho_floor;
        c.density += 1;
    }
    inv = q_rcp(u[0]);
    ke = kinetic_energy(u, inv);
    T p = eos_pressure(k.eos, u[0], u[4] - ke);
    if (p < k.p_floor) {
        u[4] = ke + eos_internal_energy(k.eos, u[0], k.p_floor);
        c.pressure += 1;
    }
}

template <class T> __device__ __forceinline__ void apply_floors(const GasK<T>& k, T u[5], Floors& c) {
    T inv, ke;
    apply_floors_keep(k, u, c, inv, ke);
}

__device__ __forceinline__ void flush_floors(const Floors& c, u64 counters) {
    u32 d = c.density, p = c.pressure;
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        d += __shfl_xor_sync(0xffffffffu, d, o);
        p += __shfl_xor_sync(0xffffffffu, p, o);
    }
    if ((threadIdx.x & 31) == 0 && (d | p) != 0) {
        u64* ctr = (u64*)counters;
        if (d) atomicAdd(ctr, (u64)d);
        if (p) atomicAdd(ctr + 1, (u64)p);
    }
}

// --------------------------------------------------------- descriptors ----

__device__ __forceinline__ const PatchDesc& desc_of(int use_const, u64 descs, u32 p) {
    return use_const ? c_descs[p] : ((const PatchDesc*)descs)[p];
}

// Where one column lives (quilt_sweep's driver::column::Column). Plain
// scalars only: a run-time index into a small array would put it in local
// memory.
struct Col {
    i64 base;      // data index of column cell 0, component 0
    i64 stride;    // data-index distance of neighbouring column cells
    i64 cstride;   // B^3: distance of components
    i64 face0;     // flux index of component 0 at the low interior face, -1 if none
    i64 face1;     // ... at the high interior face
    i64 fstride;   // flux-buffer distance of components
    int len;       // cells in the column (0: idle slot)
    int face_lo;   // column index of the face before the first interior cell
    int face_hi;   // ... after the last interior cell
    int fx, fy, fz;  // patch-local coordinates of column cell 0 (error keys)
    u32 patch;
};

// x, y or z by a run-time axis, without an array.
template <class V> __device__ __forceinline__ V pick(int axis, V x, V y, V z) {
    return axis == 0 ? x : (axis == 1 ? y : z);
}

// Column component v of a sweep along `axis` is batch component comp_of(axis, v).
__device__ __forceinline__ int comp_of(int axis, int v) {
    if (v == 0 || v == 4) return v;
    int c = axis + v;  // 1 + (axis + v - 1) % 3
    return c > 3 ? c - 3 : c;
}

// Cells of a pass's columns over patch d: the interior along the axis and
// the read halo on either side.
__device__ __forceinline__ int pass_len(const PatchDesc& d, const PassInfo& ps) {
    return (int)pick(ps.axis, d.extent[0], d.extent[1], d.extent[2]) - 2 * (int)d.ghost + 2 * ps.read_halo;
}

__device__ __forceinline__ Col make_col(const PatchDesc& d, u32 patch, const PassInfo& ps, int ta, int tb, int B) {
    Col c;
    const int axis = ps.axis;
    const int g = (int)d.ghost;
    const int n0 = (int)d.extent[0] - 2 * g, n1 = (int)d.extent[1] - 2 * g, n2 = (int)d.extent[2] - 2 * g;
    // transverse axes (a, b) in increasing order: x -> (y, z), y -> (x, z), z -> (x, y)
    const int nax = pick(axis, n0, n1, n2);
    const int na = axis == 0 ? n1 : n0;
    const int nb = axis == 2 ? n1 : n2;
    const int fa = g - ps.read_halo;
    c.fx = axis == 0 ? fa : ta;
    c.fy = axis == 1 ? fa : (axis == 0 ? ta : tb);
    c.fz = axis == 2 ? fa : tb;
    const i64 bb = B;
    c.cstride = bb * bb * bb;
    c.base = ((i64)d.bin * QUILT_NCOMP * bb + (i64)(d.offset[2] + c.fz)) * bb * bb + (i64)(d.offset[1] + c.fy) * bb +
             (i64)(d.offset[0] + c.fx);
    c.stride = pick<i64>(axis, 1, bb, bb * bb);
    c.len = pass_len(d, ps);
    c.fstride = (i64)na * nb;
    c.face_lo = ps.read_halo - 1;
    c.face_hi = c.face_lo + nax;
    c.patch = patch;
    const bool inside = ta >= g && ta < g + na && tb >= g && tb < g + nb;
    if (inside) {
        // face_offset of quilt_sweep::layout::flux, QUILT_NCOMP components
        const i64 a0 = (i64)n1 * n2, a1 = (i64)n0 * n2, a2 = (i64)n0 * n1;
        const i64 before = pick<i64>(axis, 0, a0, a0 + a1);
        const i64 area = pick(axis, a0, a1, a2);
        const i64 lo = (i64)d.flux_offset + QUILT_NCOMP * (2 * before) + (i64)(tb - g) * na + (ta - g);
        c.face0 = lo;
        c.face1 = lo + QUILT_NCOMP * area;
    } else {
        c.face0 = -1;
        c.face1 = -1;
    }
    return c;
}

__device__ __forceinline__ Col idle_col() {
    Col c;
    c.base = c.stride = c.cstride = c.fstride = 0;
    c.face0 = c.face1 = -1;
    c.len = 0;
    c.face_lo = c.face_hi = -1;
    c.fx = c.fy = c.fz = 0;
    c.patch = 0;
    return c;
}

// Upper end of the transverse range of axis `a` covered by a pass.
__device__ __forceinline__ int t_hi(const PatchDesc& d, const PassInfo& ps, int a) {
    return (int)pick(a, d.extent[0], d.extent[1], d.extent[2]) - (int)d.ghost + pick(a, ps.th0, ps.th1, ps.th2);
}

// ----------------------------------------------------------- error keys ----
// First non-finite value of a slot: atomicMin over
//   patch << 24 | (tb, ta, i: 6 bits each) << 6 | component << 2 | class
// with (tb, ta) the column's transverse coordinates and i the column cell,
// class 0 NaN, 1 +inf, 2 -inf. The order of the keys is the CPU driver's
// (patch, column group, column, cell), so the host reports the same cell as
// quilt-sweep (SweepError::BadState).

// Offers non-finite value x of batch component comp at column cell i to
// the slot's atomicMin.
template <class T>
__device__ __forceinline__ void report_bad(const Col& c, int axis, int i, int comp, T x, u64 errors, int slot) {
    u64 cls = x != x ? 0 : (x > T(0) ? 1 : 2);
    u64 ta = axis == 0 ? c.fy : c.fx;
    u64 tb = axis == 2 ? c.fy : c.fz;
    u64 lin = (tb << 12) | (ta << 6) | (u64)i;
    u64 key = ((u64)c.patch << 24) | (lin << 6) | ((u64)comp << 2) | cls;
    atomicMin(((u64*)errors) + slot, key);
}

template <class T>
__device__ __forceinline__ void check_finite(const Col& c, int axis, int i, const T w[5], u64 errors, int slot) {
    bool ok = q_finite(w[0]) && q_finite(w[1]) && q_finite(w[2]) && q_finite(w[3]) && q_finite(w[4]);
    if (ok) return;
    int first = 5;
    T val = T(0);
#pragma unroll
    for (int v = 4; v >= 0; --v) {
        if (!q_finite(w[v])) {
            first = v;
            val = w[v];
        }
    }
    report_bad(c, axis, i, comp_of(axis, first), val, errors, slot);
}

// check_finite of one value of batch component `comp` (a passive scalar).
template <class T>
__device__ __forceinline__ void check_value(const Col& c, int axis, int i, int comp, T x, u64 errors, int slot) {
    if (!q_finite(x)) report_bad(c, axis, i, comp, x, errors, slot);
}

// ------------------------------------------------------------- columns ----

// Data index of value v (column order) of column cell i.
__device__ __forceinline__ i64 value_index(const Col& c, int axis, int i, int v) {
    // Within one bin (at most 16 x 64^3 values) the offset fits 32 bits,
    // which saves the 64-bit multiplies of every cell access.
    return c.base + (i64)(i * (int)c.stride + comp_of(axis, v) * (int)c.cstride);
}

template <class T> __device__ __forceinline__ void load_cell(const T* src, const Col& c, int axis, int i, T u[5]) {
#pragma unroll
    for (int v = 0; v < 5; ++v) u[v] = src[value_index(c, axis, i, v)];
}

template <class T> __device__ __forceinline__ void store_cell(T* dst, const Col& c, int axis, int i, const T u[5]) {
#pragma unroll
    for (int v = 0; v < 5; ++v) dst[value_index(c, axis, i, v)] = u[v];
}

// Cells of a marched column on their way in. Each thread copies the cell
// it will need QUILT_RING_AHEAD steps later into its own slots of a shared
// ring with cp.async, so that the load latency passes during the steps in
// between instead of stalling the step that reads the cell (Nsight Compute
// put a third of the march's stall cycles on loads read one step after
// they were issued), and the values in flight take no registers. A step
// also reads back cells it used before (the state at the cell it updates)
// from the ring rather than keeping them in registers.
#define QUILT_RING_CELLS 8
// Copies two steps ahead measured faster than three or four (H100, RTVD
// f32, 420 patches: 1.175 against 1.209 ms per step on the fast path).
#define QUILT_RING_AHEAD 2
#define QUILT_MARCH_BLOCK 128
template <class T> struct Ring {
    // Value v of column cell i at slots[((i % CELLS) * 5 + v) * BLOCK]:
    // neighbouring threads, neighbouring banks.
    T* slots;
    static const int CELLS = QUILT_RING_CELLS;
    // A cell overwritten at step j is j + AHEAD - CELLS; the oldest cell a
    // step reads is j - 3.
    static_assert(QUILT_RING_CELLS >= QUILT_RING_AHEAD + 4, "ring too short for the march window");

    static __device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }

    // Starts copying cell i of column c (nothing past its end; CHECK =
    // false when the caller knows i is inside) as one commit group: every
    // call commits exactly one group, so that the group count and the cell
    // index stay in step.
    template <bool CHECK = true>
    __device__ __forceinline__ void fetch(const T* src, const Col& c, int axis, int i) const {
        if (!CHECK || i < c.len) {
            T* dst = slots + (i & (CELLS - 1)) * 5 * QUILT_MARCH_BLOCK;
#pragma unroll
            for (int v = 0; v < 5; ++v)
                asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(smem_addr(dst + v * QUILT_MARCH_BLOCK)),
                             "l"(src + value_index(c, axis, i, v)), "n"(sizeof(T)));
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    }
    // Waits until at most N of this thread's commit groups are in flight.
    template <int N> static __device__ __forceinline__ void wait() {
        asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
    }
    static __device__ __forceinline__ void drain() { asm volatile("cp.async.wait_all;" ::: "memory"); }
    __device__ __forceinline__ void load(int i, T u[5]) const {
        const T* src = slots + (i & (CELLS - 1)) * 5 * QUILT_MARCH_BLOCK;
#pragma unroll
        for (int v = 0; v < 5; ++v) u[v] = src[v * QUILT_MARCH_BLOCK];
    }
};

// This thread's ring, in a static shared array of its block (which the
// compiler drops for a scheme whose march does not use it).
template <class T> __device__ __forceinline__ Ring<T> thread_ring() {
    __shared__ T slots[QUILT_RING_CELLS * 5 * QUILT_MARCH_BLOCK];
    return Ring<T>{slots + threadIdx.x};
}

// Records weight * flux (or adds it) at face `side` of a column.
template <class T>
__device__ __forceinline__ void record_face(T* flux, const Col& c, int axis, int side, const T f[5], T weight, bool add) {
    const i64 face = side == 0 ? c.face0 : c.face1;
    if (face < 0) return;
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        i64 idx = face + (i64)comp_of(axis, v) * c.fstride;
        T val = weight * f[v];
        flux[idx] = add ? flux[idx] + val : val;
    }
}

// --------------------------------------------------------- grid barrier ----
// Barrier of a cooperative launch: every block arrives once per epoch on a
// monotonic counter (zeroed before the launch).

__device__ __forceinline__ void grid_barrier(u64 counter, u32 epoch) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile u32* ctr = (volatile u32*)counter;
        __threadfence();
        atomicAdd((u32*)counter, 1u);
        u32 target = epoch * gridDim.x;
        while (*ctr < target) {
            __nanosleep(64);
        }
        __threadfence();
    }
    __syncthreads();
}

// ----------------------------------------------------------- input scan ----
// quilt_sweep's driver::check::scan_patch on the GPU (same operations, so the
// rate and hence the Courant number are the CPU's bit for bit, except on the
// fast f32 path, see ScanMath): the state must be finite
// with positive density and pressure everywhere in a patch (bad[q] = 1
// otherwise; the host then reproduces the exact error on the CPU), and the
// fastest signal max_d (|v_d| + c_s) / dx_d over interior cells, in f64 as on
// the CPU, goes to rate[q] as the bits of a non-negative double.
// Grid: one block per ScanItem of the chunk (QUILT_SCAN_CELLS consecutive
// cells of one patch, so that large patches spread over many blocks and
// the last blocks to finish are short); QUILT_SCAN_BLOCK threads, each
// loading QUILT_SCAN_BATCH cells before computing. Resident warps hide the
// load latency better than loads batched per thread: two cells at four
// blocks per SM measured faster than four at three blocks or eight at two
// (H100, 420 patches, f32: 0.16 against 0.18 and 0.24 ms).

struct ScanItem {
    u32 q;      // patch position
    u32 first;  // first cell, x fastest over the patch with its ghosts
};

// A block's largest rate and bad-cell flag, valid in thread 0: the
// non-negative doubles' bits (which order as the values) reduced by warp
// shuffles, then across the block's warps. Every thread of the block must
// call it (it synchronises the block).
__device__ __forceinline__ void block_rate(double best, bool bad, u64& max_bits, int& any_bad) {
    __shared__ u64 s_bits[32];
    __shared__ int s_bad[32];
    u64 bits = (u64)__double_as_longlong(best);
    for (int o = 16; o > 0; o >>= 1) {
        u64 other = __shfl_xor_sync(0xffffffffu, bits, o);
        bits = other > bits ? other : bits;
    }
    const int warp_bad = __any_sync(0xffffffffu, bad);
    const int warp = threadIdx.x >> 5, nwarps = blockDim.x >> 5;
    if ((threadIdx.x & 31) == 0) {
        s_bits[warp] = bits;
        s_bad[warp] = warp_bad;
    }
    __syncthreads();
    max_bits = 0;
    any_bad = 0;
    if (threadIdx.x == 0) {
        for (int w = 0; w < nwarps; ++w) {
            max_bits = s_bits[w] > max_bits ? s_bits[w] : max_bits;
            any_bad |= s_bad[w];
        }
    }
}

// The arithmetic of the scan: f64, as on the CPU, except for f32 data on
// the fast path, where f32 with the approximate reciprocal and square root
// skips f64's division and square-root sequences (the rate is then within
// a few f32 ulp of the CPU's, and the host's Courant check allows for
// that; 0.163 -> 0.156 ms, H100, 420 patches: the scan is bound by DRAM).
template <class T> struct ScanMath {
    typedef double type;
};
#ifdef QUILT_FAST_F32
template <> struct ScanMath<float> {
    typedef float type;
};
#endif

// One cell of the scan: bad flag, and the rate if the cell is interior.
template <class T, class C>
__device__ __forceinline__ void scan_cell(const T w[5], bool interior, const C ek[4], C p_min, const C inv_dx[3],
                                          C& best, bool& is_bad) {
    const C u[5] = {(C)w[0], (C)w[1], (C)w[2], (C)w[3], (C)w[4]};
    bool fin = isfinite(u[0]) && isfinite(u[1]) && isfinite(u[2]) && isfinite(u[3]) && isfinite(u[4]);
    if (!fin || !(u[0] > C(0))) {
        is_bad = true;
        return;
    }
    C inv = q_rcp(u[0]);
    C vel[3] = {u[1] * inv, u[2] * inv, u[3] * inv};
    C pr = eos_pressure(ek, u[0], u[4] - C(0.5) * (u[1] * vel[0] + u[2] * vel[1] + u[3] * vel[2]));
    if (!(pr > p_min)) {
        is_bad = true;
        return;
    }
    if (interior) {
        C c = q_sqrt(eos_bulk_modulus(ek, u[0], pr) * inv);
#pragma unroll
        for (int a = 0; a < 3; ++a) best = q_max(best, (q_abs(vel[a]) + c) * inv_dx[a]);
    }
}

#define QUILT_SCAN_BLOCK 256
#define QUILT_SCAN_BATCH 2
// Must match plan::SCAN_CELLS.
#define QUILT_SCAN_CELLS 2048

// A cell position (i, j, k) in a patch of extent (ex, ey, .), moved on by a
// fixed number of cells with carries instead of a division per cell.
struct ScanPos {
    int i, j, k;
    __device__ __forceinline__ void advance(int si, int sj, int sk, int ex, int ey) {
        i += si;
        j += sj;
        k += sk;
        if (i >= ex) {
            i -= ex;
            ++j;
        }
        if (j >= ey) {
            j -= ey;
            ++k;
        }
    }
};

template <class T>
__device__ __forceinline__ void scan_body(const T* data, const PatchDesc* descs, const u32* order,
                                          const ScanItem* items, u32 i0, int B, EosArgs eos, u64* rate, u32* bad) {
    const ScanItem it = items[i0 + blockIdx.x];
    const u32 q = it.q;
    const PatchDesc& d = descs[order[q]];
    const int ex = d.extent[0], ey = d.extent[1], ez = d.extent[2];
    const int g = d.ghost;
    const int plane = ex * ey;
    const int end = min((int)it.first + QUILT_SCAN_CELLS, plane * ez);
    // Offsets inside one bin fit 32 bits (at most 16 x 64^3 values).
    const int cs = B * B * B;
    const T* bin = data + (i64)d.bin * QUILT_NCOMP * cs;
    const int o0 = (d.offset[2] * B + d.offset[1]) * B + d.offset[0];
    typedef typename ScanMath<T>::type C;
    const C ek[4] = {(C)eos.k[0], (C)eos.k[1], (C)eos.k[2], (C)eos.k[3]};
    const C p_min = (C)eos.p_min;
    const C inv_dx[3] = {(C)(1.0 / d.dx[0]), (C)(1.0 / d.dx[1]), (C)(1.0 / d.dx[2])};
    // This thread's first cell, and the block-wide stride split into
    // (x, y, z) steps.
    int t = (int)it.first + (int)threadIdx.x;
    ScanPos pos;
    pos.k = t / plane;
    pos.j = (t - pos.k * plane) / ex;
    pos.i = t - pos.k * plane - pos.j * ex;
    const int stride = (int)blockDim.x;
    const int sk = stride / plane;
    const int sj = (stride - sk * plane) / ex;
    const int si = stride - sk * plane - sj * ex;
    C best = C(0);
    bool is_bad = false;
    for (; t < end; t += QUILT_SCAN_BATCH * stride) {
        // Held in the storage precision until computed: in f32 that halves
        // the registers of the loads in flight, which bound occupancy.
        T u[QUILT_SCAN_BATCH][5];
        bool interior[QUILT_SCAN_BATCH];
        bool live[QUILT_SCAN_BATCH];
#pragma unroll
        for (int m = 0; m < QUILT_SCAN_BATCH; ++m) {
            live[m] = t + m * stride < end;
            interior[m] = false;
            if (live[m]) {
                const int at = o0 + (pos.k * B + pos.j) * B + pos.i;
#pragma unroll
                for (int v = 0; v < 5; ++v) u[m][v] = bin[at + v * cs];
                // Passive scalars need only be finite (the CPU's scan_patch).
                for (int v = 5; v < QUILT_NCOMP; ++v) is_bad |= !isfinite(bin[at + v * cs]);
                interior[m] = pos.k >= g && pos.k < ez - g && pos.j >= g && pos.j < ey - g && pos.i >= g && pos.i < ex - g;
            }
            pos.advance(si, sj, sk, ex, ey);
        }
#pragma unroll
        for (int m = 0; m < QUILT_SCAN_BATCH; ++m)
            if (live[m]) scan_cell<T, C>(u[m], interior[m], ek, p_min, inv_dx, best, is_bad);
    }
    // Block maximum and flag, then one atomic per block.
    u64 m;
    int b;
    block_rate((double)best, is_bad, m, b);
    if (threadIdx.x == 0) {
        if (m) atomicMax(rate + q, m);
        if (b) atomicOr(bad + q, 1u);
    }
}

// Resident blocks asked of ptxas: 4 in f32 (64 registers), 2 in f64 (its
// loads in flight take twice the registers).
#define QUILT_SCAN_KERNEL(T, NAME, MINB)                                                                     \
    extern "C" __global__ void __launch_bounds__(QUILT_SCAN_BLOCK, MINB)                                    \
        NAME(const T* data, const PatchDesc* descs, const u32* order, const ScanItem* items, u32 i0, int B,  \
             EosArgs eos, u64* rate, u32* bad) {                                                             \
        scan_body<T>(data, descs, order, items, i0, B, eos, rate, bad);                                      \
    }

QUILT_SCAN_KERNEL(float, scan_f32, 4)
QUILT_SCAN_KERNEL(double, scan_f64, 2)

// ------------------------------------------------------ interior store ----
// Results straight into the host's page-locked batch: every interior cell
// of the chunk's patches, written through the mapped (unified) address of
// the batch at the same index as on the device. Only interiors are read
// by the host after a step, so ghost cells and the unused parts of bin
// rows, which a copy of occupied runs carries, never cross the bus or
// touch host memory. Grid: the scan's items (QUILT_SCAN_CELLS consecutive
// cells of one patch each); consecutive threads write consecutive cells
// of a row, so the posted writes coalesce.
//
// External boxes (CudaSolver::advance_external): `ext` (null in store_T,
// one u64 per descriptor in store_ext_T) holds the address of a patch's
// output box, 0 for a patch that lives in the bins. A box is dense in the
// order of quilt_sweep's Batch::load_patch, ((v * ez + k) * ey + j) * ex + i,
// so cell t of the loop (t = (k * ey + j) * ex + i) of component v sits at
// t + v * cells: the same consecutive addresses for consecutive threads.
// The output box is either the patch's own page-locked box (its unified
// address; interiors only) or a whole box in device memory that a DMA copy
// then moves into it: writes from kernels over the bus hold back the
// host-to-device copies of the other chunks, DMA copies in the other
// direction do not. Then `src` (one u64 per descriptor) names the device
// copy of the patch's source box, whose ghost cells fill the output's.

template <class T, bool BOX>
__device__ __forceinline__ void store_cells(const T* data, T* dst, const T* from, const PatchDesc& d,
                                            const ScanItem& it, int B) {
    const int ex = d.extent[0], ey = d.extent[1], ez = d.extent[2];
    const int g = d.ghost;
    const int plane = ex * ey;
    const int cells = plane * ez;
    const int end = min((int)it.first + QUILT_SCAN_CELLS, cells);
    const int cs = B * B * B;
    const i64 base = (i64)d.bin * QUILT_NCOMP * cs;
    const int o0 = (d.offset[2] * B + d.offset[1]) * B + d.offset[0];
    for (int t = (int)it.first + (int)threadIdx.x; t < end; t += (int)blockDim.x) {
        const int k = t / plane;
        const int r = t - k * plane;
        const int j = r / ex;
        const int i = r - j * ex;
        if (k < g || k >= ez - g || j < g || j >= ey - g || i < g || i >= ex - g) {
            if (BOX && from) {
#pragma unroll
                for (int v = 0; v < QUILT_NCOMP; ++v) dst[(i64)t + (i64)v * cells] = from[(i64)t + (i64)v * cells];
            }
            continue;
        }
        const i64 at = base + o0 + (k * B + j) * B + i;
#pragma unroll
        for (int v = 0; v < QUILT_NCOMP; ++v) {
            const T x = data[at + (i64)v * cs];
            if (BOX)
                dst[(i64)t + (i64)v * cells] = x;
            else
                dst[at + (i64)v * cs] = x;
        }
    }
}

// A table entry that stores nothing: a flux probe read out of its coarse
// patch's box, whose interior nobody reads after the step.
#define QUILT_NO_STORE (~0ull)

// `which` picks the patches written (store_ext_T): bit 0 those in
// external boxes, bit 1 those in the bins. A step with boxes writes the
// boxes as soon as its sweeps end, before the host has checked the step
// (their input is elsewhere), and the bins only once it has.
template <class T>
__device__ __forceinline__ void store_body(const T* data, T* host, const u64* ext, const u64* src,
                                           const PatchDesc* descs, const u32* order, const ScanItem* items,
                                           u32 i0, int B, int which) {
    const ScanItem it = items[i0 + blockIdx.x];
    const u32 p = order[it.q];
    const u64 box = ext ? ext[p] : 0ull;
    if (box == QUILT_NO_STORE) return;
    if (box) {
        const T* from = src ? (const T*)src[p] : nullptr;
        if (which & 1) store_cells<T, true>(data, (T*)box, from, descs[p], it, B);
    } else if (which & 2) {
        store_cells<T, false>(data, host, nullptr, descs[p], it, B);
    }
}

// Two entry points per precision: without a table (the box branch folds
// away, so the batch's own store keeps its registers) and with one.
#define QUILT_STORE_KERNEL(T, NAME, EXT_NAME)                                                                 \
    extern "C" __global__ void __launch_bounds__(QUILT_SCAN_BLOCK)                                            \
        NAME(const T* data, T* host, const PatchDesc* descs, const u32* order, const ScanItem* items, u32 i0,  \
             int B) {                                                                                         \
        store_body<T>(data, host, nullptr, nullptr, descs, order, items, i0, B, 3);                           \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(QUILT_SCAN_BLOCK)                                            \
        EXT_NAME(const T* data, T* host, const u64* ext, const u64* src, const PatchDesc* descs,               \
                 const u32* order, const ScanItem* items, u32 i0, int B, int which) {                         \
        store_body<T>(data, host, ext, src, descs, order, items, i0, B, which);                               \
    }

QUILT_STORE_KERNEL(float, store_f32, store_ext_f32)
QUILT_STORE_KERNEL(double, store_f64, store_ext_f64)

// ------------------------------------------------- restriction outputs ----
// quilt_sweep::Restricted of the patches in external boxes that ask for
// them, from their new interiors in the bins right after the sweeps: the
// coarse means restriction writes onto the level below, straight into
// the host's page-locked scratch, and the largest CFL rate of the
// interior. `means` and `ratio` hold one entry per descriptor (address 0:
// none). Grid and order as the store; the thread of a coarse cell's first
// fine cell writes its means, each adding its fine cells in the host's
// order (dz, dy, x) from zero. The rate is quilt_sweep's row scan
// (Gas::max_signal_rate) cell by cell in f64, operation for operation:
// `out` gets per descriptor the largest rate's bits (non-negative doubles
// order as u64) and a bad-cell flag.
template <class T>
__device__ __forceinline__ void restrict_out_body(const T* data, const u64* means, const u64* ratio,
                                                  const PatchDesc* descs, const u32* order,
                                                  const ScanItem* items, u32 i0, int B, EosArgs eos,
                                                  u64* out) {
    const ScanItem it = items[i0 + blockIdx.x];
    const u32 p = order[it.q];
    const u64 to = means[p];
    if (!to) return;
    T* m = (T*)to;
    const int r = (int)ratio[p];
    const PatchDesc d = descs[p];
    const int ex = d.extent[0], ey = d.extent[1], ez = d.extent[2];
    const int g = d.ghost;
    const int plane = ex * ey;
    const int end = min((int)it.first + QUILT_SCAN_CELLS, plane * ez);
    const int cs = B * B * B;
    const i64 base = (i64)d.bin * QUILT_NCOMP * cs;
    const int o0 = (d.offset[2] * B + d.offset[1]) * B + d.offset[0];
    const int cx = (ex - 2 * g) / r, cy = (ey - 2 * g) / r, cz = (ez - 2 * g) / r;
    const i64 coarse = (i64)cx * cy * cz;
    const T inv = (T)(1.0 / (double)(r * r * r));
    double best = 0.0;
    bool bad = false;
    for (int t = (int)it.first + (int)threadIdx.x; t < end; t += (int)blockDim.x) {
        const int k = t / plane;
        const int rest = t - k * plane;
        const int j = rest / ex;
        const int i = rest - j * ex;
        if (k < g || k >= ez - g || j < g || j >= ey - g || i < g || i >= ex - g) continue;
        const i64 at = base + o0 + (k * B + j) * B + i;
        const double rho = (double)data[at], m0 = (double)data[at + cs], m1 = (double)data[at + 2 * (i64)cs],
                     m2 = (double)data[at + 3 * (i64)cs], e = (double)data[at + 4 * (i64)cs];
        const double v0 = m0 / rho, v1 = m1 / rho, v2 = m2 / rho;
        const double kinetic = 0.5 * (m0 * v0 + m1 * v1 + m2 * v2);
        const double pr = eos_pressure(eos.k, rho, e - kinetic);
        const double sound = sqrt(eos_bulk_modulus(eos.k, rho, pr) / rho);
        double rt = fmax(fmax((fabs(v0) + sound) / d.dx[0], (fabs(v1) + sound) / d.dx[1]),
                         (fabs(v2) + sound) / d.dx[2]);
        rt = fmax(0.0, rt);
        const bool finite = isfinite(rho) && isfinite(m0) && isfinite(m1) && isfinite(m2) && isfinite(e) &&
                            isfinite(rt);
        if (finite && rho > 0.0 && pr > eos.p_min)
            best = fmax(best, rt);
        else
            bad = true;
        const int fi = i - g, fj = j - g, fk = k - g;
        if (fi % r == 0 && fj % r == 0 && fk % r == 0) {
            const i64 o = ((i64)(fk / r) * cy + fj / r) * cx + fi / r;
            for (int v = 0; v < QUILT_NCOMP; ++v) {
                T a = (T)0;
                for (int dz = 0; dz < r; ++dz)
                    for (int dy = 0; dy < r; ++dy)
                        for (int dx = 0; dx < r; ++dx) a = a + data[at + (i64)v * cs + (dz * B + dy) * B + dx];
                m[o + (i64)v * coarse] = a * inv;
            }
        }
    }
    u64 mx;
    int b;
    block_rate(best, bad, mx, b);
    if (threadIdx.x == 0) {
        if (mx) atomicMax(out + 2 * p, mx);
        if (b) atomicOr(out + 2 * p + 1, 1ull);
    }
}

#define QUILT_RESTRICT_OUT_KERNEL(T, NAME)                                                                  \
    extern "C" __global__ void __launch_bounds__(QUILT_SCAN_BLOCK)                                          \
        NAME(const T* data, const u64* means, const u64* ratio, const PatchDesc* descs, const u32* order,    \
             const ScanItem* items, u32 i0, int B, EosArgs eos, u64* out) {                                 \
        restrict_out_body<T>(data, means, ratio, descs, order, items, i0, B, eos, out);                    \
    }

QUILT_RESTRICT_OUT_KERNEL(float, restrict_out_f32)
QUILT_RESTRICT_OUT_KERNEL(double, restrict_out_f64)

// ------------------------------------------------------- ghost-box load ----
// The batch straight from the host's page-locked memory: every cell of the
// chunk's ghost boxes, read through the mapped (unified) address of the
// batch (or of a patch's external box, `ext` as in the store) and written
// to the device at the patch's place in its bin. Only the boxes the sweeps
// read cross the bus; a copy of occupied runs would also carry the unused
// parts of every bin row between them. Grid and order as the store.

// Reads over the bus take microseconds: each thread issues the reads of
// QUILT_LOAD_CELLS cells before it writes any, so that enough of them are
// in flight to fill the link.
#define QUILT_LOAD_CELLS 4

// A source box's extent, `sx | sy << 16 | sz << 32` (load_ext_T's `geom`):
// a patch's own box has the patch's extent; a flux probe is read out of
// its coarse patch's box, its table address at the probe's first cell.
template <class T, bool BOX>
__device__ __forceinline__ void load_cells(T* __restrict__ data, const T* __restrict__ src, const PatchDesc& d,
                                           const ScanItem& it, int B, u64 geom) {
    const int ex = d.extent[0], ey = d.extent[1], ez = d.extent[2];
    const int plane = ex * ey;
    const int cells = plane * ez;
    const int sx = (int)(geom & 0xffffull), sy = (int)((geom >> 16) & 0xffffull);
    const i64 scomp = (i64)sx * sy * (i64)((geom >> 32) & 0xffffull);
    const int end = min((int)it.first + QUILT_SCAN_CELLS, cells);
    const int cs = B * B * B;
    const i64 base = (i64)d.bin * QUILT_NCOMP * cs;
    const int o0 = (d.offset[2] * B + d.offset[1]) * B + d.offset[0];
    const int stride = (int)blockDim.x;
    for (int t0 = (int)it.first + (int)threadIdx.x; t0 < end; t0 += QUILT_LOAD_CELLS * stride) {
        T u[QUILT_LOAD_CELLS][QUILT_NCOMP];
        i64 at[QUILT_LOAD_CELLS];
#pragma unroll
        for (int m = 0; m < QUILT_LOAD_CELLS; ++m) {
            const int t = t0 + m * stride;
            at[m] = -1;
            if (t < end) {
                const int k = t / plane;
                const int r = t - k * plane;
                const int j = r / ex;
                const int i = r - j * ex;
                at[m] = base + o0 + (k * B + j) * B + i;
                const i64 from = BOX ? ((i64)k * sy + j) * sx + i : at[m];
                const i64 step = BOX ? scomp : (i64)cs;
#pragma unroll
                for (int v = 0; v < QUILT_NCOMP; ++v) u[m][v] = src[from + (i64)v * step];
            }
        }
#pragma unroll
        for (int m = 0; m < QUILT_LOAD_CELLS; ++m)
            if (at[m] >= 0) {
#pragma unroll
                for (int v = 0; v < QUILT_NCOMP; ++v) data[at[m] + (i64)v * cs] = u[m][v];
            }
    }
}

template <class T>
__device__ __forceinline__ void load_body(T* __restrict__ data, const T* __restrict__ host, const u64* ext,
                                          const u64* geom, const PatchDesc* descs, const u32* order,
                                          const ScanItem* items, u32 i0, int B) {
    const ScanItem it = items[i0 + blockIdx.x];
    const u32 p = order[it.q];
    const u64 box = ext ? ext[p] : 0ull;
    if (box)
        load_cells<T, true>(data, (const T*)box, descs[p], it, B, geom[p]);
    else
        load_cells<T, false>(data, host, descs[p], it, B, 0ull);
}

// As the store: the batch's own load (the box branch folded away: the
// registers, and so the reads in flight, of the load without boxes) and
// the load with a table. The box branch needs more registers (ptxas, sm_90:
// f32 61 against 47, f64 80 against 64); EXT_MINB asks for the resident
// blocks of the load without boxes where that costs no spill (f32: 48
// registers, 5 blocks; f64 spills 24 bytes at 4 blocks, so it keeps 3).
#define QUILT_LOAD_KERNEL(T, NAME, EXT_NAME, EXT_MINB)                                                        \
    extern "C" __global__ void __launch_bounds__(QUILT_SCAN_BLOCK)                                            \
        NAME(T* data, const T* host, const PatchDesc* descs, const u32* order, const ScanItem* items, u32 i0,  \
             int B) {                                                                                         \
        load_body<T>(data, host, nullptr, nullptr, descs, order, items, i0, B);                               \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(QUILT_SCAN_BLOCK, EXT_MINB)                                  \
        EXT_NAME(T* data, const T* host, const u64* ext, const u64* geom, const PatchDesc* descs,              \
                 const u32* order, const ScanItem* items, u32 i0, int B) {                                    \
        load_body<T>(data, host, ext, geom, descs, order, items, i0, B);                                      \
    }

QUILT_LOAD_KERNEL(float, load_f32, load_ext_f32, 5)
QUILT_LOAD_KERNEL(double, load_f64, load_ext_f64, 1)

// ------------------------------------------------------ launch helpers ----

template <class T> __device__ __forceinline__ const PatchStep<T>& step_of(const StepArgs<T>& a, u32 p) {
    return ((const PatchStep<T>*)a.step)[p];
}

// dt/dx along the sweep and the flux-buffer weight of a column's patch;
// zero for an idle column, which has no patch.
template <class T>
__device__ __forceinline__ void col_step(const StepArgs<T>& A, const Col& c, int axis, T& dtdx, T& wf) {
    dtdx = wf = T(0);
    if (c.len > 0) {
        const PatchStep<T>& st = step_of(A, c.patch);
        dtdx = st.dtdx[axis];
        wf = st.wflux;
    }
}

template <class T> __device__ __forceinline__ PassInfo pass_of(const StepArgs<T>& a, int i) {
    return ((const PassInfo*)a.passes)[i];
}

// Item range [s0, s1) of the chunk's patches in a pass table.
__device__ __forceinline__ void item_range(const PassInfo& ps, u32 q0, u32 q1, u32& s0, u32& s1) {
    const u32* pst = (const u32*)ps.pstart;
    s0 = pst[q0];
    s1 = pst[q1];
}

__device__ __forceinline__ ColItem item_at(const PassInfo& ps, u32 i) { return ((const ColItem*)ps.items)[i]; }

// ------------------------------------------------------- cell maps ----
// Which column cells a thread of a cell-parallel group owns (`cell(q)`, its
// q-th cell, possibly outside the column: then idle), and where column
// cell i lives in the group's shared arrays (`at(i)`). Every neighbour a
// column function reads lies in the same column, so a map only has to keep
// a column's cells apart from the other columns of its group.

// One column per group of G threads: cell t + qG, slot i.
template <int G> struct SeqCells {
    int t;
    __device__ __forceinline__ int cell(int q) const { return t + q * G; }
    __device__ __forceinline__ int at(int i) const { return i; }
};

// Rows kernel: a warp holds several short rows end to end in 64 slots, each
// row starting at an even slot `off`, so that lane l owns slots 2l and
// 2l + 1 of one row (so cell(q) >= 0; idle lanes get an empty column).
// Slot x is stored at (x & 1) * 32 + x / 2: the lanes of a warp reading
// the same neighbour of their cells hit 32 different banks.
// Slots of a rows-kernel group (two cells per lane; plan::ROW_SLOTS).
#define QUILT_ROW_SLOTS 64
struct PairCells {
    int lane, off;
    __device__ __forceinline__ int cell(int q) const { return 2 * lane + q - off; }
    __device__ __forceinline__ int at(int i) const {
        const int x = off + i;
        return (x & 1) * (QUILT_ROW_SLOTS / 2) + (x >> 1);
    }
};

// ------------------------------------------------------- pass tables ----
// One pass table of a large layout (quilt_cuda::params::TableArgs), made on
// the device from the first item of every patch position (`pstart`, n + 1
// entries, made by the host): one thread per item writes what the host's
// statement (plan::HostPlan::table) writes there. kind: 0 one column per
// item, 1 groups of rows, 2 segments of 32 columns.
struct TableArgs {
    u64 descs;   // const PatchDesc*
    u64 order;   // const u32*
    u64 pstart;  // const u32*
    u64 items;   // ColItem*
    u32 n, total, kind, axis, read_halo;
    u32 th[3];
};

extern "C" __global__ void __launch_bounds__(256) layout_table(const TableArgs g) {
    const u32 t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= g.total) return;
    const u32* pstart = (const u32*)g.pstart;
    // The last position q with pstart[q] <= t (positions without items
    // repeat their successor's start).
    u32 lo = 0, hi = g.n;
    while (hi - lo > 1) {
        const u32 mid = (lo + hi) >> 1;
        if (pstart[mid] <= t) lo = mid; else hi = mid;
    }
    const u32 p = ((const u32*)g.order)[lo];
    const PatchDesc& d = ((const PatchDesc*)g.descs)[p];
    const u32 a = g.axis == 0 ? 1 : 0, b = g.axis == 2 ? 1 : 2;
    const u32 alo = d.ghost - g.th[a], ahi = d.extent[a] - d.ghost + g.th[a];
    const u32 blo = d.ghost - g.th[b], bhi = d.extent[b] - d.ghost + g.th[b];
    const u32 l = t - pstart[lo];
    ColItem c;
    c.patch = p;
    if (g.kind == 0) {
        const u32 w = ahi - alo;
        c.ta = (unsigned short)(alo + l % w);
        c.tb = (unsigned short)(blo + l / w);
    } else {
        const u32 len = d.extent[g.axis] - 2 * d.ghost + 2 * g.read_halo;
        const u32 per = g.kind == 2 ? 32u : max(QUILT_ROW_SLOTS / (len + (len & 1)), 1u);
        const u32 first = l * per;
        const u32 rows = (ahi - alo) * (bhi - blo);
        c.ta = (unsigned short)first;
        c.tb = g.kind == 2 ? 0 : (unsigned short)min(per, rows - first);
    }
    ((ColItem*)g.items)[t] = c;
}

// Values of the lane below / above (rows-kernel neighbours). Every lane
// takes part; what a lane gets across a row boundary or past the warp's
// ends is never used, since the cells that read a neighbour lie inside
// their row.
template <class T> __device__ __forceinline__ void shfl_up5(const T x[5], T y[5]) {
#pragma unroll
    for (int v = 0; v < 5; ++v) y[v] = __shfl_up_sync(0xffffffffu, x[v], 1);
}
template <class T> __device__ __forceinline__ void shfl_down5(const T x[5], T y[5]) {
#pragma unroll
    for (int v = 0; v < 5; ++v) y[v] = __shfl_down_sync(0xffffffffu, x[v], 1);
}

#define QUILT_SYNC(WARP) \
    do {                  \
        if (WARP)         \
            __syncwarp(); \
        else              \
            __syncthreads(); \
    } while (0)

// ------------------------------------------------------------- shells ----
// The thread organisations of the three variants, shared by the schemes. A
// scheme S provides
//   S::SLOT_WORDS                       shared-memory values per column slot
//   S::par<T, CPT, WARP>(..., m, ...)   one column, CPT cells per thread
//                                       placed by the cell map m, phases
//                                       separated by block (WARP = false) or
//                                       warp barriers
//   S::rows<T>(..., lane, off, ...)     a rows-kernel pair group (PairCells
//                                       lane, off); PairRows<S> gives par's
//   S::march<T>(..., ring)              one column marched by one thread,
//                                       states from global memory or
//                                       through the thread's Ring<T>

// The rows kernel's pair group as par with PairCells, for a scheme S with
// no version of its own (struct S : PairRows<S>).
template <class S> struct PairRows {
    template <class T>
    static __device__ __forceinline__ void rows(const StepArgs<T>& A, const PassInfo& ps, const Col& c, int lane, int off,
                                                T* sm, Floors& fc) {
        S::template par<T, 2, true>(A, ps, c, PairCells{lane, off}, sm, fc);
    }
};

// Default scheme (paper's baseline): one block of 2 x 64 threads per patch,
// every pass of the step in one launch, block barriers between phases.
template <class S, class T> __device__ __forceinline__ void shell_default(const StepArgs<T>& A) {
    extern __shared__ __align__(16) unsigned char qsm[];
    int slot = threadIdx.x >> 6, t = threadIdx.x & 63;
    T* sm = (T*)qsm + slot * S::SLOT_WORDS;
    u32 q = A.q0 + blockIdx.x;
    Floors fc = {0, 0};
    for (int pi = A.pass0; pi < A.pass0 + A.npasses; ++pi) {
        PassInfo ps = pass_of(A, pi);
        const u32* pst = (const u32*)ps.pstart;
        u32 s0 = pst[q], s1 = pst[q + 1];
        for (u32 base = s0; base < s1; base += 2) {
            u32 it = base + slot;
            Col c = idle_col();
            if (it < s1) {
                ColItem ci = item_at(ps, it);
                c = make_col(desc_of(A.use_const, A.descs, ci.patch), ci.patch, ps, ci.ta, ci.tb, A.bin_edge);
            }
            S::template par<T, 1, false>(A, ps, c, SeqCells<64>{t}, sm, fc);
        }
        __syncthreads();
    }
    flush_floors(fc, A.counters);
}

// Packed bins (paper sec. 3.1): all blocks stride together over the columns
// of one pass of every bin of the chunk, two columns per block at a time.
template <class S, class T> __device__ __forceinline__ void shell_packed(const StepArgs<T>& A) {
    extern __shared__ __align__(16) unsigned char qsm[];
    int slot = threadIdx.x >> 6, t = threadIdx.x & 63;
    T* sm = (T*)qsm + slot * S::SLOT_WORDS;
    PassInfo ps = pass_of(A, A.pass0);
    u32 s0, s1;
    item_range(ps, A.q0, A.q1, s0, s1);
    Floors fc = {0, 0};
    for (u32 base = s0 + 2 * blockIdx.x; base < s1; base += 2 * gridDim.x) {
        u32 it = base + slot;
        Col c = idle_col();
        if (it < s1) {
            ColItem ci = item_at(ps, it);
            c = make_col(desc_of(A.use_const, A.descs, ci.patch), ci.patch, ps, ci.ta, ci.tb, A.bin_edge);
        }
        S::template par<T, 1, false>(A, ps, c, SeqCells<64>{t}, sm, fc);
    }
    flush_floors(fc, A.counters);
}

// Columns a pass covers along transverse axis `a` of patch d.
__device__ __forceinline__ int pass_span(const PatchDesc& d, const PassInfo& ps, int a) {
    return (int)pick(a, d.extent[0], d.extent[1], d.extent[2]) - 2 * (int)d.ghost + pick(a, ps.th0, ps.th1, ps.th2) * 2;
}

// Column l of a pass over patch d in the flat order of its (tb, ta) grid.
__device__ __forceinline__ Col flat_col(const PatchDesc& d, u32 patch, const PassInfo& ps, int l, int B) {
    const int axis = ps.axis;
    const int a = axis == 0 ? 1 : 0;
    const int b = axis == 2 ? 1 : 2;
    const int g = (int)d.ghost;
    const int ra = pass_span(d, ps, a);
    const int tb = l / ra;
    const int ta = l - tb * ra;
    return make_col(d, patch, ps, g - pick(a, ps.th0, ps.th1, ps.th2) + ta, g - pick(b, ps.th0, ps.th1, ps.th2) + tb, B);
}

// Kernel-optimised x sweep (paper sec. 3.4): a warp per group of rows of
// one patch (as many as fit end to end in QUILT_ROW_SLOTS, so that short
// rows do not leave lanes idle), two neighbouring cells per lane, warp
// barriers only; rows are contiguous, so reads coalesce. An item holds the
// first row of its group in the flat (tb, ta) order of the patch's rows
// (ta) and the number of rows (tb).
template <class S, class T>
__device__ __forceinline__ void row_item(const StepArgs<T>& A, const PassInfo& ps, u32 it, int lane, T* sm, Floors& fc) {
    ColItem ci = item_at(ps, it);
    const PatchDesc& d = desc_of(A.use_const, A.descs, ci.patch);
    const int len = pass_len(d, ps);
    const int span = len + (len & 1);
    const int r = 2 * lane / span;
    Col c = idle_col();
    int off = 0;
    if (r < (int)ci.tb) {
        c = flat_col(d, ci.patch, ps, (int)ci.ta + r, A.bin_edge);
        off = r * span;
    }
    S::template rows<T>(A, ps, c, lane, off, sm, fc);
}

// Kernel-optimised y and z sweeps: a warp per 32 columns of one patch, one
// thread marching along each column; neighbouring lanes read neighbouring x
// cells (two runs where the flat order wraps to the next row), so loads
// coalesce.
template <class S, class T>
__device__ __forceinline__ void march_item(const StepArgs<T>& A, const PassInfo& ps, u32 it, int lane, Floors& fc,
                                           const Ring<T>& ring) {
    ColItem ci = item_at(ps, it);
    const PatchDesc& d = desc_of(A.use_const, A.descs, ci.patch);
    const int axis = ps.axis;
    const int cols = pass_span(d, ps, axis == 0 ? 1 : 0) * pass_span(d, ps, axis == 2 ? 1 : 2);
    const int l = (int)ci.ta + lane;
    if (l < cols) {
        Col c = flat_col(d, ci.patch, ps, l, A.bin_edge);
        S::template march<T>(A, ps, c, fc, ring);
    }
}

// Runs the body (the macro's remaining arguments) with the constant AX
// equal to the run-time axis: a pass copied with that constant axis lets
// the column geometry (strides, component order, transverse axes) fold
// into the code of each copy.
#define QUILT_AXIS_SWITCH(axis, ...)     \
    switch (axis) {                      \
    case 0: {                            \
        constexpr int AX = 0;            \
        __VA_ARGS__;                     \
    } break;                             \
    case 1: {                            \
        constexpr int AX = 1;            \
        __VA_ARGS__;                     \
    } break;                             \
    default: {                           \
        constexpr int AX = 2;            \
        __VA_ARGS__;                     \
    } break;                             \
    }

template <class S, class T> __device__ __forceinline__ void shell_rows(const StepArgs<T>& A) {
    extern __shared__ __align__(16) unsigned char qsm[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    u32 nw = blockDim.x >> 5;
    T* sm = (T*)qsm + warp * S::SLOT_WORDS;
    const PassInfo ps = pass_of(A, A.pass0);
    u32 s0, s1;
    item_range(ps, A.q0, A.q1, s0, s1);
    Floors fc = {0, 0};
    QUILT_AXIS_SWITCH(ps.axis, {
        PassInfo pa = ps;
        pa.axis = AX;
        for (u32 it = s0 + blockIdx.x * nw + warp; it < s1; it += gridDim.x * nw) row_item<S, T>(A, pa, it, lane, sm, fc);
    })
    flush_floors(fc, A.counters);
}

// Marched columns differ in length (a patch side of 16 to 64 cells), so a
// fixed share of the items per warp leaves warps idle while others finish
// long columns: each block takes the pass's next items from a counter
// instead (zeroed by the host at the start of every step), one per warp.
// The items of a block are neighbouring columns of one patch, of one
// length, so its warps finish together; their accesses stay close in
// memory (1.2 % faster than an item per warp: H100, RTVD f32, 420
// patches, bitwise).
template <class S, class T> __device__ __forceinline__ void shell_march(const StepArgs<T>& A) {
    const int lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    const PassInfo ps = pass_of(A, A.pass0);
    u32 s0, s1;
    item_range(ps, A.q0, A.q1, s0, s1);
    u32* next = (u32*)A.queue + A.pass0;
    const Ring<T> ring = thread_ring<T>();
    Floors fc = {0, 0};
    QUILT_AXIS_SWITCH(ps.axis, {
        PassInfo pa = ps;
        pa.axis = AX;
        for (;;) {
            __shared__ u32 s_base;
            if (threadIdx.x == 0) s_base = s0 + atomicAdd(next, nw);
            __syncthreads();
            const u32 base = s_base;
            __syncthreads();
            if (base >= s1) break;
            if (base + warp < s1) march_item<S, T>(A, pa, base + warp, lane, fc, ring);
        }
    })
    flush_floors(fc, A.counters);
}

// Every pass of the step in one cooperative launch, a grid barrier between
// passes; each pass as rows or marched, as its table says.
template <class S, class T> __device__ __forceinline__ void shell_fused(const StepArgs<T>& A) {
    extern __shared__ __align__(16) unsigned char qsm[];
    int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    u32 nw = blockDim.x >> 5;
    T* sm = (T*)qsm + warp * S::SLOT_WORDS;
    // A pass is all rows or all marched and passes are separated by the
    // grid barrier, so the ring shares the rows' shared memory (the host
    // sizes it for both: params::fused_words).
    const Ring<T> ring = {(T*)qsm + threadIdx.x};
    Floors fc = {0, 0};
    for (int k = 0; k < A.npasses; ++k) {
        PassInfo ps = pass_of(A, A.pass0 + k);
        u32 s0, s1;
        item_range(ps, A.q0, A.q1, s0, s1);
        for (u32 it = s0 + blockIdx.x * nw + warp; it < s1; it += gridDim.x * nw) {
            if (ps.march)
                march_item<S, T>(A, ps, it, lane, fc, ring);
            else
                row_item<S, T>(A, ps, it, lane, sm, fc);
        }
        if (k + 1 < A.npasses) grid_barrier(A.barrier, (u32)(k + 1));
    }
    flush_floors(fc, A.counters);
}

// ------------------------------------------------------ passive scalars ----
// quilt_sweep::scheme::scalar on the GPU (consistent multifluid advection:
// the scalar's face flux is the scheme's face mass flux times an upwind,
// van Leer limited mass fraction), operation for operation, so that the
// scalars are the CPU's bit for bit. One launch per pass, before the Euler
// kernel of the pass: it reads the state the pass starts from, which the
// Euler kernel then overwrites, and recomputes each column's face fluxes
// with the scheme's own `par` stopped after its face phase (FACES_ONLY),
// so the Euler kernels are untouched by scalars. A scheme S provides, besides
// `par`:
//   S::SPLIT   one-step split scheme (else a TVD stage pass)
//   S::REACH   column cells on each side that a pass does not update
//   S::FACES   where par leaves the face fluxes in a slot (component 0 =
//              the mass flux, slot f = face between cells f and f + 1);
//              the slot's first 3E values are free once they are formed.
// Blocks of QUILT_SCALAR_BLOCK threads, one column at a time, a thread
// per cell and face.
#define QUILT_SCALAR_BLOCK 64

// The van Leer limiter (quilt_sweep's RtvdLimiter::VanLeer: zero unless
// the slopes agree in sign), of the RTVD fluxes and of the scalars' mass
// fractions. The branch keeps the exact division off the lanes whose
// result is zero: where a = b = 0 (a flat region) it would be 0 / 0, the
// slow path of a correctly rounded division.
template <class T> __device__ __forceinline__ T van_leer(T a, T b) {
    T ab = a * b;
    if (ab <= T(0)) return T(0);
    return q_div(T(2) * ab, a + b);
}

// Data index of passive scalar k at column cell i.
__device__ __forceinline__ i64 scalar_index(const Col& c, int i, int k) {
    return c.base + (i64)(i * (int)c.stride + (5 + k) * (int)c.cstride);
}

template <class S, class T>
__device__ __forceinline__ void scalar_column(const StepArgs<T>& A, const PassInfo& ps, const Col& c, T* sm) {
    const int E = QUILT_MAX_EDGE;
    const int i = (int)threadIdx.x;  // cell i, and face i (between i and i + 1)
    Floors unused = {0, 0};
    S::template par<T, 1, false, SeqCells<QUILT_SCALAR_BLOCK>, true>(A, ps, c, SeqCells<QUILT_SCALAR_BLOCK>{i}, sm,
                                                                     unused);
    T* phi = sm;
    T* sflux = sm + E;
    T* rho = sm + 2 * E;
    const T* mass = sm + S::FACES;
    const int axis = ps.axis;
    const int len = c.len;
    const int lo = S::REACH, hi = len - S::REACH;
    T* data = (T*)A.data;
    const T* src = (const T*)((S::SPLIT || ps.stage == 0) ? A.data : A.stage);
    T dtdx, wf;
    col_step(A, c, axis, dtdx, wf);
    const T zero = T(0), one = T(1), half = T(0.5);
    const T time = S::SPLIT ? dtdx : zero;
    const bool add = !S::SPLIT && ps.stage == 1;
    const bool read = i >= lo - 2 && i < hi + 2;
    if (read) rho[i] = src[value_index(c, axis, i, 0)];
    for (int k = 0; k < QUILT_NCOMP - 5; ++k) {
        const i64 at = scalar_index(c, i, k);
        T s = zero;
        if (read) {
            s = src[at];
            phi[i] = q_div(s, rho[i]);
        }
        __syncthreads();
        if (i >= lo - 1 && i < hi) {
            const int f = i;
            const T m = mass[f];
            const T nu_l = q_min(q_max(q_div(time * m, rho[f]), zero), one);
            const T left = phi[f] + half * (one - nu_l) * van_leer(phi[f] - phi[f - 1], phi[f + 1] - phi[f]);
            const T nu_r = q_min(q_max(zero - q_div(time * m, rho[f + 1]), zero), one);
            const T right =
                phi[f + 1] - half * (one - nu_r) * van_leer(phi[f + 1] - phi[f], phi[f + 2] - phi[f + 1]);
            const T fs = m * (m >= zero ? left : right);
            sflux[f] = fs;
            const i64 face = f == c.face_lo ? c.face0 : (f == c.face_hi ? c.face1 : -1);
            if (face >= 0) {
                T* flux = (T*)A.flux;
                const i64 idx = face + (i64)(5 + k) * c.fstride;
                const T val = wf * fs;
                flux[idx] = add ? flux[idx] + val : val;
            }
        }
        __syncthreads();
        if (i >= lo && i < hi) {
            const T du = dtdx * (sflux[i - 1] - sflux[i]);
            T* acc = (T*)A.acc;
            T w;
            T* dst = nullptr;
            if (S::SPLIT) {
                w = s + du;
                dst = data;
            } else if (ps.sub == 0) {
                acc[at] = du;
            } else if (ps.sub == 1) {
                acc[at] = acc[at] + du;
            } else if (ps.stage == 0) {
                // tvd::stage_one_value
                w = data[at] + (acc[at] + du);
                dst = (T*)A.stage;
            } else {
                // tvd::stage_two_value
                w = T(0.5) * (data[at] + (((const T*)A.stage)[at] + (acc[at] + du)));
                dst = data;
            }
            if (dst) {
                check_value(c, axis, i, 5 + k, w, A.errors, ps.slot);
                dst[at] = w;
            }
        }
        __syncthreads();
    }
}

// The columns of a pass's items, whichever the table kind (columns, row
// groups or flat segments), one after another through scalar_column.
template <class S, class T> __device__ __forceinline__ void shell_scalar(const StepArgs<T>& A) {
    extern __shared__ __align__(16) unsigned char qsm[];
    T* sm = (T*)qsm;
    const PassInfo ps = pass_of(A, A.pass0);
    u32 s0, s1;
    item_range(ps, A.q0, A.q1, s0, s1);
    for (u32 it = s0 + blockIdx.x; it < s1; it += gridDim.x) {
        const ColItem ci = item_at(ps, it);
        const PatchDesc& d = desc_of(A.use_const, A.descs, ci.patch);
        if (!ps.march && !ps.rows) {
            scalar_column<S, T>(A, ps, make_col(d, ci.patch, ps, ci.ta, ci.tb, A.bin_edge), sm);
            continue;
        }
        const int cols = pass_span(d, ps, ps.axis == 0 ? 1 : 0) * pass_span(d, ps, ps.axis == 2 ? 1 : 2);
        const int first = (int)ci.ta;
        const int last = ps.rows ? first + (int)ci.tb : min(first + 32, cols);
        for (int l = first; l < last; ++l) scalar_column<S, T>(A, ps, flat_col(d, ci.patch, ps, l, A.bin_edge), sm);
    }
}

// Minimum resident blocks of 128 threads per multiprocessor asked of ptxas
// (__launch_bounds__): without it ptxas spends up to 255 registers on
// instruction-level parallelism and leaves too few warps to hide memory
// latency. Overridable with -D at compile time (the host does for tuning).
#ifndef QUILT_MINB_F32
#define QUILT_MINB_F32 4
#endif
#ifndef QUILT_MINB_F64
#define QUILT_MINB_F64 3
#endif
// The marching kernels hold a register window per column.
#ifndef QUILT_MARCH_MINB_F32
#define QUILT_MARCH_MINB_F32 3
#endif
#ifndef QUILT_MARCH_MINB_F64
#define QUILT_MARCH_MINB_F64 2
#endif

#define QUILT_KERNEL_SET(S, NAME, T, SUF, MINB, MMINB)                                                                 \
    extern "C" __global__ void __launch_bounds__(128, MINB) NAME##_default_##SUF(const StepArgs<T> a) {       \
        shell_default<S, T>(a);                                                                                 \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(128, MINB) NAME##_packed_##SUF(const StepArgs<T> a) {        \
        shell_packed<S, T>(a);                                                                                  \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(128, MINB) NAME##_rows_##SUF(const StepArgs<T> a) {          \
        shell_rows<S, T>(a);                                                                                    \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(128, MMINB) NAME##_march_##SUF(const StepArgs<T> a) {         \
        shell_march<S, T>(a);                                                                                   \
    }                                                                                                           \
    extern "C" __global__ void __launch_bounds__(128, MMINB) NAME##_fused_##SUF(const StepArgs<T> a) {         \
        shell_fused<S, T>(a);                                                                                   \
    }

// The scalar kernel of a scheme and precision (compiled when the layout
// has scalars only).
#if QUILT_NCOMP > 5
#define QUILT_SCALAR_KERNEL(S, NAME, T, SUF)                                                              \
    extern "C" __global__ void __launch_bounds__(QUILT_SCALAR_BLOCK) NAME##_scalar_##SUF(const StepArgs<T> a) { \
        shell_scalar<S, T>(a);                                                                             \
    }
#else
#define QUILT_SCALAR_KERNEL(S, NAME, T, SUF)
#endif

#define QUILT_KERNELS(S, NAME)                               \
    QUILT_KERNEL_SET(S, NAME, float, f32, QUILT_MINB_F32, QUILT_MARCH_MINB_F32)    \
    QUILT_KERNEL_SET(S, NAME, double, f64, QUILT_MINB_F64, QUILT_MARCH_MINB_F64)   \
    QUILT_SCALAR_KERNEL(S, NAME, float, f32)                                       \
    QUILT_SCALAR_KERNEL(S, NAME, double, f64)

#endif
