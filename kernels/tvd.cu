// MUSCL-type TVD scheme of Enzo's GPU solver (Wang, Abel & Kaehler 2010):
// one RK stage's flux difference along one axis for a column, the GPU twin
// of quilt_sweep::scheme::tvd, and the stage combination of the unsplit
// driver (three axis passes per stage, SSP-RK2):
//
//   sub 0: acc = dU_a,   sub 1: acc += dU_b,
//   sub 2: stage 0: U* = U^n + (acc + dU_c)            (floors)
//          stage 1: U^{n+1} = (U^n + (U* + (acc + dU_c))) / 2   (floors)
// Resident blocks per SM asked of ptxas for the cell-parallel kernels
// (registers per thread 65536 / (128 x blocks)): chosen from ptxas' spill
// report so that no kernel of this file spills.
#define QUILT_MINB_F32 6
#define QUILT_MINB_F64 5
// The f64 marching kernel: four resident blocks measured faster than two
// (H100, 420 patches: 6.17 against 6.96 ms per step).
#ifndef QUILT_MARCH_MINB_F64
#define QUILT_MARCH_MINB_F64 4
#endif
#include "common.cuh"

template <class T> __device__ __forceinline__ void primitive(const GasK<T>& k, const T u[5], T w[5]) {
    T inv = q_rcp(u[0]);
    T ke = kinetic_energy(u, inv);
    T p = q_max(eos_pressure(k.eos, u[0], u[4] - ke), k.p_floor);
    w[0] = u[0];
    w[1] = u[1] * inv;
    w[2] = u[2] * inv;
    w[3] = u[3] * inv;
    w[4] = p;
}

// lim 0: minmod, 1: monotonized central.
template <class T> __device__ __forceinline__ T tvd_slope(int lim, T a, T b) {
    if (a * b <= T(0)) return T(0);
    if (lim == 0) return q_abs(a) < q_abs(b) ? a : b;
    T m = q_min(q_min(T(2) * q_abs(a), T(2) * q_abs(b)), T(0.5) * q_abs(a + b));
    return a > T(0) ? m : -m;
}

template <class T> __device__ __forceinline__ T conserved(const GasK<T>& k, const T w[5], T u[5]) {
    T rho = w[0];
    T ke = T(0.5) * rho * (w[1] * w[1] + (w[2] * w[2] + w[3] * w[3]));
    u[0] = rho;
    u[1] = rho * w[1];
    u[2] = rho * w[2];
    u[3] = rho * w[3];
    u[4] = eos_internal_energy(k.eos, rho, w[4]) + ke;
    return q_sqrt(q_div(eos_bulk_modulus(k.eos, rho, w[4]), rho));
}

// kind 0: HLL with Davis speeds, 1: local Lax-Friedrichs.
template <class T>
__device__ __forceinline__ void tvd_face_flux(const GasK<T>& k, int kind, const T wl[5], const T wr[5], T f[5]) {
    T ul[5], ur[5];
    T cl = conserved(k, wl, ul);
    T cr = conserved(k, wr, ur);
    T fl[5], fr[5];
    euler_flux(ul, wl[1], wl[4], fl);
    euler_flux(ur, wr[1], wr[4], fr);
    if (kind == 0) {
        T sl = q_min(wl[1] - cl, wr[1] - cr);
        T sr = q_max(wl[1] + cl, wr[1] + cr);
        if (sl >= T(0)) {
#pragma unroll
            for (int v = 0; v < 5; ++v) f[v] = fl[v];
        } else if (sr <= T(0)) {
#pragma unroll
            for (int v = 0; v < 5; ++v) f[v] = fr[v];
        } else {
            T inv = q_rcp(sr - sl);
#pragma unroll
            for (int v = 0; v < 5; ++v) f[v] = (sr * fl[v] - sl * fr[v] + sl * sr * (ur[v] - ul[v])) * inv;
        }
    } else {
        T a = q_max(q_abs(wl[1]) + cl, q_abs(wr[1]) + cr);
#pragma unroll
        for (int v = 0; v < 5; ++v) f[v] = T(0.5) * ((fl[v] + fr[v]) - a * (ur[v] - ul[v]));
    }
}

// Applies dU of column cell i according to the pass (see the file header).
template <class T>
__device__ __forceinline__ void tvd_combine(const StepArgs<T>& A, const PassInfo& ps, const Col& c, int i, const T du[5],
                                            Floors& fc) {
    const int axis = ps.axis;
    T* acc = (T*)A.acc;
    if (ps.sub == 0) {
        store_cell(acc, c, axis, i, du);
    } else if (ps.sub == 1) {
#pragma unroll
        for (int v = 0; v < 5; ++v) {
            const i64 idx = value_index(c, axis, i, v);
            acc[idx] = acc[idx] + du[v];
        }
    } else {
        T un[5], a[5], w[5];
        load_cell((const T*)A.data, c, axis, i, un);
        load_cell((const T*)acc, c, axis, i, a);
        if (ps.stage == 0) {
#pragma unroll
            for (int v = 0; v < 5; ++v) w[v] = un[v] + (a[v] + du[v]);
            apply_floors(A.k, w, fc);
            check_finite(c, axis, i, w, A.errors, ps.slot);
            store_cell((T*)A.stage, c, axis, i, w);
        } else {
            T us[5];
            load_cell((const T*)A.stage, c, axis, i, us);
#pragma unroll
            for (int v = 0; v < 5; ++v) w[v] = T(0.5) * (un[v] + (us[v] + (a[v] + du[v])));
            apply_floors(A.k, w, fc);
            check_finite(c, axis, i, w, A.errors, ps.slot);
            store_cell((T*)A.data, c, axis, i, w);
        }
    }
}

#define COPY5(dst, src)                                  \
    do {                                                 \
        _Pragma("unroll") for (int v_ = 0; v_ < 5; ++v_) \
            (dst)[v_] = (src)[v_];                       \
    } while (0)

struct Tvd : PairRows<Tvd> {
    static const int E = QUILT_MAX_EDGE;
    // primitives, slopes, face fluxes
    static const int SLOT_WORDS = 15 * E;
    // Passive scalars (shell_scalar): where par leaves the face fluxes,
    // and the cells at either end of a column that a pass does not update.
    static const int FACES = 10 * E;
    static const bool SPLIT = false;
    static const int REACH = 2;

    // With FACES_ONLY, par stops once the face fluxes are in the slot (the
    // scalar kernel's first half, shell_scalar in common.cuh).
    template <class T, int CPT, bool WARP, class M, bool FACES_ONLY = false>
    static __device__ __forceinline__ void par(const StepArgs<T>& A, const PassInfo& ps, const Col& c, const M& m, T* sm,
                                               Floors& fc) {
        T* sw = sm;
        T* sdw = sm + 5 * E;
        T* sfx = sm + 10 * E;
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        const T* src = (const T*)(ps.stage == 0 ? A.data : A.stage);
        const int len = c.len;
        T dtdx, wf;
        col_step(A, c, axis, dtdx, wf);
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i < len) {
                T u[5], w[5];
                load_cell(src, c, axis, i, u);
                primitive(k, u, w);
                const int s = m.at(i);
#pragma unroll
                for (int v = 0; v < 5; ++v) sw[v * E + s] = w[v];
            }
        }
        QUILT_SYNC(WARP);
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i >= 1 && i <= len - 2) {
                const int sm1 = m.at(i - 1), s0 = m.at(i), sp1 = m.at(i + 1);
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    const T* w = sw + v * E;
                    sdw[v * E + s0] = tvd_slope(A.opt0, w[s0] - w[sm1], w[sp1] - w[s0]);
                }
            }
        }
        QUILT_SYNC(WARP);
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int f = m.cell(q);
            if (f >= 1 && f <= len - 3) {
                const int s0 = m.at(f), sp1 = m.at(f + 1);
                T wl[5], wr[5], fx[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    wl[v] = sw[v * E + s0] + T(0.5) * sdw[v * E + s0];
                    wr[v] = sw[v * E + sp1] - T(0.5) * sdw[v * E + sp1];
                }
                tvd_face_flux(k, A.opt1, wl, wr, fx);
#pragma unroll
                for (int v = 0; v < 5; ++v) sfx[v * E + s0] = fx[v];
            }
        }
        QUILT_SYNC(WARP);
        if (FACES_ONLY) return;
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i >= 2 && i <= len - 3) {
                const int sm1 = m.at(i - 1), s0 = m.at(i);
                T du[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) du[v] = dtdx * (sfx[v * E + sm1] - sfx[v * E + s0]);
                tvd_combine(A, ps, c, i, du, fc);
            }
            if (len > 0 && (i == c.face_lo || i == c.face_hi)) {
                const int s0 = m.at(i);
                T f[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) f[v] = sfx[v * E + s0];
                record_face((T*)A.flux, c, axis, i == c.face_lo ? 0 : 1, f, wf, ps.stage == 1);
            }
        }
        QUILT_SYNC(WARP);
    }

    // One thread, one column: at step j the window holds W_{j-2..j} and
    // dW_{j-2..j-1}; face j-2 and cell j-2 are finished. U_j comes through
    // the ring.
    template <class T>
    static __device__ __forceinline__ void march(const StepArgs<T>& A, const PassInfo& ps, const Col& c, Floors& fc,
                                                 const Ring<T>& ring) {
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        const T* src = (const T*)(ps.stage == 0 ? A.data : A.stage);
        const PatchStep<T>& st = step_of(A, c.patch);
        const T dtdx = st.dtdx[axis], wf = st.wflux;
        const bool add = ps.stage == 1;
        const int len = c.len;
        const int P = QUILT_RING_AHEAD;
#pragma unroll
        for (int i = 0; i < P; ++i) ring.fetch(src, c, axis, i);
        T w0[5], w1[5], w2[5], dw0[5], dw1[5], fxp[5];
#pragma unroll
        for (int v = 0; v < 5; ++v) w0[v] = w1[v] = w2[v] = dw0[v] = dw1[v] = fxp[v] = T(0);
#pragma unroll 1
        for (int j = 0; j < len; ++j) {
            COPY5(w0, w1);
            COPY5(w1, w2);
            // P + j + 1 groups committed; cells 0 .. j must have landed.
            ring.fetch(src, c, axis, j + P);
            Ring<T>::template wait<P>();
            T u[5];
            ring.load(j, u);
            primitive(k, u, w2);
            if (j >= 2) {
                COPY5(dw0, dw1);
#pragma unroll
                for (int v = 0; v < 5; ++v) dw1[v] = tvd_slope(A.opt0, w1[v] - w0[v], w2[v] - w1[v]);
            }
            if (j >= 3) {
                const int f = j - 2;
                T wl[5], wr[5], fx[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    wl[v] = w0[v] + T(0.5) * dw0[v];
                    wr[v] = w1[v] - T(0.5) * dw1[v];
                }
                tvd_face_flux(k, A.opt1, wl, wr, fx);
                if (f == c.face_lo) record_face((T*)A.flux, c, axis, 0, fx, wf, add);
                if (f == c.face_hi) record_face((T*)A.flux, c, axis, 1, fx, wf, add);
                if (f >= 2 && f <= len - 3) {
                    T du[5];
#pragma unroll
                    for (int v = 0; v < 5; ++v) du[v] = dtdx * (fxp[v] - fx[v]);
                    tvd_combine(A, ps, c, f, du, fc);
                }
                COPY5(fxp, fx);
            }
        }
        Ring<T>::drain();
    }
};

QUILT_KERNELS(Tvd, tvd)
