// Weighted average flux (Toro 1989/1992) over HLLC Riemann problems (Toro,
// Spruce & Speares 1994): one directional sweep of a column, the GPU twin of
// quilt_sweep::scheme::waf.
//
//   1. HLLC wave structure at faces 0 .. len-2 (Davis speeds, star states)
//   2. limited weighted-average fluxes at faces 1 .. len-3 (per wave, density
//      jump ratios at the upwind face)
//   3. conservative update of cells 2 .. len-3.
// Resident blocks per SM asked of ptxas for the cell-parallel kernels
// (registers per thread 65536 / (128 x blocks)): chosen from ptxas' spill
// report so that no kernel of this file spills.
#define QUILT_MINB_F32 4
#define QUILT_MINB_F64 3
// The f32 marching kernel: four resident blocks measured faster than three
// (H100, 420 patches: 2.24 against 2.36 ms per step).
#ifndef QUILT_MARCH_MINB_F32
#define QUILT_MARCH_MINB_F32 4
#endif
#include "common.cuh"

template <class T>
__device__ __forceinline__ void star_state(const T u[5], T vn, T p, T q, T s, T s_star, T out[5]) {
    T inv = q_rcp(u[0]);
    T rho_star = q_div(q, s - s_star);
    out[0] = rho_star;
    out[1] = rho_star * s_star;
    out[2] = rho_star * (u[2] * inv);
    out[3] = rho_star * (u[3] * inv);
    out[4] = rho_star * (u[4] * inv + (s_star - vn) * (s_star + q_div(p, q)));
}

// The three waves of the HLLC solution between ul and ur, whose signal
// speeds (v_n, p, c_s) are given.
template <class T> struct Face {
    T fsum[5];   // F_L + F_R
    T d0[5];     // flux jumps across the three waves
    T d1[5];
    T d2[5];
    T cour[3];   // wave Courant numbers dt S_k / dx
    T drho[3];   // density jumps across the waves
};

template <class T>
__device__ __forceinline__ void hllc_face(T dtdx, const T ul[5], T vl, T pl, T cl, const T ur[5], T vr, T pr, T cr,
                                          Face<T>& F) {
    T sl = q_min(vl - cl, vr - cr);
    T sr = q_max(vl + cl, vr + cr);
    T ql = ul[0] * (sl - vl);
    T qr = ur[0] * (sr - vr);
    T s_star = q_div(pr - pl + vl * ql - vr * qr, ql - qr);
    T fl[5], fr[5], usl[5], usr[5];
    euler_flux(ul, vl, pl, fl);
    euler_flux(ur, vr, pr, fr);
    star_state(ul, vl, pl, ql, sl, s_star, usl);
    star_state(ur, vr, pr, qr, sr, s_star, usr);
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        T fsl = fl[v] + sl * (usl[v] - ul[v]);
        T fsr = fr[v] + sr * (usr[v] - ur[v]);
        F.fsum[v] = fl[v] + fr[v];
        F.d0[v] = fsl - fl[v];
        F.d1[v] = fsr - fsl;
        F.d2[v] = fr[v] - fsr;
    }
    F.cour[0] = dtdx * sl;
    F.cour[1] = dtdx * s_star;
    F.cour[2] = dtdx * sr;
    F.drho[0] = usl[0] - ul[0];
    F.drho[1] = usr[0] - usl[0];
    F.drho[2] = ur[0] - usr[0];
}

// lim 0: superbee, 1: van Leer, 2: van Albada, 3: minbee.
template <class T> __device__ __forceinline__ T waf_psi(int lim, T r) {
    if (r <= T(0)) return T(0);
    switch (lim) {
    case 0: return q_max(q_min(T(2) * r, T(1)), q_min(r, T(2)));
    case 1: return q_div(T(2) * r, T(1) + r);
    case 2: return q_div(r * (T(1) + r), T(1) + r * r);
    default: return q_min(r, T(1));
    }
}

template <class T> __device__ __forceinline__ T sgn(T x) { return x > T(0) ? T(1) : (x < T(0) ? T(-1) : T(0)); }

// WAF flux at a face from its wave structure and the density jumps of the
// faces before (lo) and after (hi) it.
template <class T>
__device__ __forceinline__ void waf_flux(int lim, const Face<T>& F, const T lo[3], const T hi[3], T fx[5]) {
    const T cap = T(1e6);  // quilt_sweep::scheme::limiter::WAF_RATIO_CAP
    T wt[3];
#pragma unroll
    for (int w = 0; w < 3; ++w) {
        T c = F.cour[w];
        T up = c > T(0) ? lo[w] : hi[w];
        T local = F.drho[w];
        T r = local != T(0) ? q_min(q_div(up, local), cap) : T(0);
        wt[w] = sgn(c) * (T(1) - (T(1) - q_abs(c)) * waf_psi(lim, r));
    }
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        T corr = (wt[0] * F.d0[v] + wt[1] * F.d1[v]) + wt[2] * F.d2[v];
        fx[v] = T(0.5) * (F.fsum[v] - corr);
    }
}

template <class T> __device__ __forceinline__ void copy_face(Face<T>& dst, const Face<T>& src) {
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        dst.fsum[v] = src.fsum[v];
        dst.d0[v] = src.d0[v];
        dst.d1[v] = src.d1[v];
        dst.d2[v] = src.d2[v];
    }
#pragma unroll
    for (int w = 0; w < 3; ++w) {
        dst.cour[w] = src.cour[w];
        dst.drho[w] = src.drho[w];
    }
}

template <class T> __device__ __forceinline__ void zero_face(Face<T>& F) {
#pragma unroll
    for (int v = 0; v < 5; ++v) F.fsum[v] = F.d0[v] = F.d1[v] = F.d2[v] = T(0);
#pragma unroll
    for (int w = 0; w < 3; ++w) F.cour[w] = F.drho[w] = T(0);
}

#define COPY5(dst, src)                                  \
    do {                                                 \
        _Pragma("unroll") for (int v_ = 0; v_ < 5; ++v_) \
            (dst)[v_] = (src)[v_];                       \
    } while (0)

struct Waf : PairRows<Waf> {
    static const int E = QUILT_MAX_EDGE;
    // states, density jumps, face fluxes
    static const int SLOT_WORDS = 13 * E;
    // Passive scalars (shell_scalar): where par leaves the face fluxes,
    // and the cells at either end of a column that a pass does not update.
    static const int FACES = 8 * E;
    static const bool SPLIT = true;
    static const int REACH = 2;

    // With FACES_ONLY, par stops once the face fluxes are in the slot (the
    // scalar kernel's first half, shell_scalar in common.cuh).
    template <class T, int CPT, bool WARP, class M, bool FACES_ONLY = false>
    static __device__ __forceinline__ void par(const StepArgs<T>& A, const PassInfo& ps, const Col& c, const M& m, T* sm,
                                               Floors& fc) {
        T* su = sm;
        T* sdr = sm + 5 * E;
        T* sfx = sm + 8 * E;
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        T* data = (T*)A.data;
        const int len = c.len;
        T dtdx, wf;
        col_step(A, c, axis, dtdx, wf);
        T u[CPT][5];
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i < len) {
                load_cell(data, c, axis, i, u[q]);
                const int s = m.at(i);
#pragma unroll
                for (int v = 0; v < 5; ++v) su[v * E + s] = u[q][v];
            }
        }
        QUILT_SYNC(WARP);
        Face<T> F[CPT];
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int f = m.cell(q);
            if (f <= len - 2) {
                const int s0 = m.at(f), sp1 = m.at(f + 1);
                T ur[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) ur[v] = su[v * E + sp1];
                T vl, pl, cl, vr, pr, cr;
                signal_speed(k, u[q], vl, pl, cl);
                signal_speed(k, ur, vr, pr, cr);
                hllc_face(dtdx, u[q], vl, pl, cl, ur, vr, pr, cr, F[q]);
#pragma unroll
                for (int w = 0; w < 3; ++w) sdr[w * E + s0] = F[q].drho[w];
            }
        }
        QUILT_SYNC(WARP);
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int f = m.cell(q);
            if (f >= 1 && f <= len - 3) {
                const int sm1 = m.at(f - 1), s0 = m.at(f), sp1 = m.at(f + 1);
                T lo[3], hi[3], fx[5];
#pragma unroll
                for (int w = 0; w < 3; ++w) {
                    lo[w] = sdr[w * E + sm1];
                    hi[w] = sdr[w * E + sp1];
                }
                waf_flux(A.opt0, F[q], lo, hi, fx);
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
                T w[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) w[v] = u[q][v] - dtdx * (sfx[v * E + s0] - sfx[v * E + sm1]);
                apply_floors(k, w, fc);
                check_finite(c, axis, i, w, A.errors, ps.slot);
                store_cell(data, c, axis, i, w);
            }
            if (len > 0 && (i == c.face_lo || i == c.face_hi)) {
                const int s0 = m.at(i);
                T f[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) f[v] = sfx[v * E + s0];
                record_face((T*)A.flux, c, axis, i == c.face_lo ? 0 : 1, f, wf, false);
            }
        }
        QUILT_SYNC(WARP);
    }

    // One thread, one column: at step j (cell j read) the faces j-2 and j-1
    // are known, with the density jumps of face j-3; face j-2 and cell j-2
    // are finished. States come through the ring.
    template <class T>
    static __device__ __forceinline__ void march(const StepArgs<T>& A, const PassInfo& ps, const Col& c, Floors& fc,
                                                 const Ring<T>& ring) {
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        T* data = (T*)A.data;
        const PatchStep<T>& st = step_of(A, c.patch);
        const T dtdx = st.dtdx[axis], wf = st.wflux;
        const int len = c.len;
        const int P = QUILT_RING_AHEAD;
#pragma unroll
        for (int i = 0; i < P; ++i) ring.fetch(data, c, axis, i);
        T ul[5], ur[5];
        T vl = T(0), pl = T(0), cl = T(0);
        Face<T> Fm, Fn;  // faces j-2, j-1
        T dr3[3];        // density jumps of face j-3
        T fxp[5];
#pragma unroll
        for (int v = 0; v < 5; ++v) ul[v] = ur[v] = fxp[v] = T(0);
#pragma unroll
        for (int w = 0; w < 3; ++w) dr3[w] = T(0);
        zero_face(Fm);
        zero_face(Fn);
#pragma unroll 1
        for (int j = 0; j < len; ++j) {
            // P + j + 1 groups committed; cells 0 .. j must have landed.
            ring.fetch(data, c, axis, j + P);
            Ring<T>::template wait<P>();
            COPY5(ul, ur);
            ring.load(j, ur);
            T vr, pr, cr;
            signal_speed(k, ur, vr, pr, cr);
            if (j >= 1) {
                Face<T> Fnew;
                hllc_face(dtdx, ul, vl, pl, cl, ur, vr, pr, cr, Fnew);
#pragma unroll
                for (int w = 0; w < 3; ++w) dr3[w] = Fm.drho[w];
                copy_face(Fm, Fn);
                copy_face(Fn, Fnew);
                const int g = j - 2;
                if (g >= 1) {
                    T fx[5];
                    waf_flux(A.opt0, Fm, dr3, Fn.drho, fx);
                    if (g == c.face_lo) record_face((T*)A.flux, c, axis, 0, fx, wf, false);
                    if (g == c.face_hi) record_face((T*)A.flux, c, axis, 1, fx, wf, false);
                    if (g >= 2) {
                        T w[5];
                        ring.load(g, w);
#pragma unroll
                        for (int v = 0; v < 5; ++v) w[v] = w[v] - dtdx * (fx[v] - fxp[v]);
                        apply_floors(k, w, fc);
                        check_finite(c, axis, g, w, A.errors, ps.slot);
                        store_cell(data, c, axis, g, w);
                    }
                    COPY5(fxp, fx);
                }
            }
            vl = vr;
            pl = pr;
            cl = cr;
        }
        Ring<T>::drain();
    }
};

QUILT_KERNELS(Waf, waf)
