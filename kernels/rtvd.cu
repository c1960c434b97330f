// Relaxing TVD (Trac & Pen 2003; GAMER, Schive et al. 2010): one
// directional sweep of a column, the GPU twin of quilt_sweep::scheme::rtvd.
//
//   1. split fluxes F_R = (c U + F)/2, F_L = (c U - F)/2 of U^n, c = |v_n| + c_s;
//      half step U^{n+1/2}_i = U_i - dt/2dx ((F_R,i - F_L,i+1) - (F_R,i-1 - F_L,i))
//   2. split fluxes of U^{n+1/2}, limited second-order face fluxes
//   3. full step from U^n on cells 3 .. len-4.
//
// Three organisations compute exactly the same values: `par` (a group of
// threads per column, one or two cells per thread, shared memory between
// phases), `rows_shfl` (par's pair groups with neighbours through warp
// shuffles) and `march` (one thread per column, a register window sliding
// along it).
// Resident blocks per SM asked of ptxas (registers per thread 65536 /
// (128 x blocks)). Cell-parallel kernels: from ptxas' spill report, so
// that the default and packed kernels do not spill. The f32 march at four
// blocks spills a few words but measured faster than at three (H100, 420
// patches: 1.88 against 2.04 ms per step) or five.
#define QUILT_MINB_F32 6
#define QUILT_MINB_F64 4
#define QUILT_MARCH_MINB_F32 4
#include "common.cuh"

template <class T> __device__ __forceinline__ T rtvd_limit(int lim, T a, T b) {
    T ab = a * b;
    if (q_fast<T>()) {
        // No branch: lanes whose slopes differ in sign would otherwise
        // split the warp at each of the ten limiters of a cell.
        T q = lim == 0 ? (T(2) * ab) * q_rcp(a + b) : (q_abs(a) < q_abs(b) ? a : b);
        return ab <= T(0) ? T(0) : q;
    }
    if (lim == 0) return van_leer(a, b);
    if (ab <= T(0)) return T(0);
    return q_abs(a) < q_abs(b) ? a : b;  // minmod
}

// Split fluxes of u given its 1/rho and kinetic energy (signal_speed's
// operations from there on).
template <class T>
__device__ __forceinline__ void split_flux_known(const GasK<T>& k, const T u[5], T inv, T ke, T fr[5], T fl[5]) {
    T vn = u[1] * inv;
    T p = q_max(eos_pressure(k.eos, u[0], u[4] - ke), k.p_floor);
    T cs = q_sqrt(eos_bulk_modulus(k.eos, u[0], p) * inv);
    T c = q_abs(vn) + cs;
    T f[5];
    euler_flux(u, vn, p, f);
#pragma unroll
    for (int v = 0; v < 5; ++v) {
        T cu = c * u[v];
        fr[v] = T(0.5) * (cu + f[v]);
        fl[v] = T(0.5) * (cu - f[v]);
    }
}

template <class T> __device__ __forceinline__ void split_flux(const GasK<T>& k, const T u[5], T fr[5], T fl[5]) {
    T inv = q_rcp(u[0]);
    T ke = kinetic_energy(u, inv);
    split_flux_known(k, u, inv, ke, fr, fl);
}

// Limited face flux between cells f and f+1 from the half-step split fluxes
// HR_{f-1..f+1} and HL_{f..f+2}.
template <class T>
__device__ __forceinline__ T rtvd_face(int lim, T rm, T r0, T rp, T l0, T l1, T l2) {
    T right = r0 + T(0.5) * rtvd_limit(lim, r0 - rm, rp - r0);
    T left = l1 - T(0.5) * rtvd_limit(lim, l1 - l0, l2 - l1);
    return right - left;
}

#define COPY5(dst, src)                                \
    do {                                               \
        _Pragma("unroll") for (int v_ = 0; v_ < 5; ++v_) \
            (dst)[v_] = (src)[v_];                     \
    } while (0)

struct Rtvd {
    static const int E = QUILT_MAX_EDGE;
    // fr, fl, face fluxes
    static const int SLOT_WORDS = 15 * E;
    // Passive scalars (shell_scalar): where par leaves the face fluxes,
    // and the cells at either end of a column that a pass does not update.
    static const int FACES = 10 * E;
    static const bool SPLIT = true;
    static const int REACH = 3;

    // With FACES_ONLY, par stops once the face fluxes are in the slot (the
    // scalar kernel's first half, shell_scalar in common.cuh).
    template <class T, int CPT, bool WARP, class M, bool FACES_ONLY = false>
    static __device__ __forceinline__ void par(const StepArgs<T>& A, const PassInfo& ps, const Col& c, const M& m, T* sm, Floors& fc) {
        T* sfr = sm;
        T* sfl = sm + 5 * E;
        T* sfx = sm + 10 * E;
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        T* data = (T*)A.data;
        const int len = c.len;
        T dtdx, wf;
        col_step(A, c, axis, dtdx, wf);
        const T hdtdx = T(0.5) * dtdx;
        T u[CPT][5];
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i < len) {
                load_cell(data, c, axis, i, u[q]);
                T fr[5], fl[5];
                split_flux(k, u[q], fr, fl);
                const int s = m.at(i);
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    sfr[v * E + s] = fr[v];
                    sfl[v * E + s] = fl[v];
                }
            }
        }
        QUILT_SYNC(WARP);
        T uh[CPT][5], hinv[CPT], hke[CPT];
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i >= 1 && i <= len - 2) {
                const int sm1 = m.at(i - 1), s0 = m.at(i), sp1 = m.at(i + 1);
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    T fp = sfr[v * E + s0] - sfl[v * E + sp1];
                    T fm = sfr[v * E + sm1] - sfl[v * E + s0];
                    uh[q][v] = u[q][v] - hdtdx * (fp - fm);
                }
                apply_floors_keep(k, uh[q], fc, hinv[q], hke[q]);
            }
        }
        QUILT_SYNC(WARP);
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i >= 1 && i <= len - 2) {
                T fr[5], fl[5];
                split_flux_known(k, uh[q], hinv[q], hke[q], fr, fl);
                const int s = m.at(i);
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    sfr[v * E + s] = fr[v];
                    sfl[v * E + s] = fl[v];
                }
            }
        }
        QUILT_SYNC(WARP);
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int f = m.cell(q);
            if (f >= 2 && f <= len - 4) {
                const int sm1 = m.at(f - 1), s0 = m.at(f), sp1 = m.at(f + 1), sp2 = m.at(f + 2);
#pragma unroll
                for (int v = 0; v < 5; ++v) {
                    const T* r = sfr + v * E;
                    const T* l = sfl + v * E;
                    sfx[v * E + s0] = rtvd_face(A.opt0, r[sm1], r[s0], r[sp1], l[s0], l[sp1], l[sp2]);
                }
            }
        }
        QUILT_SYNC(WARP);
        if (FACES_ONLY) return;
#pragma unroll
        for (int q = 0; q < CPT; ++q) {
            int i = m.cell(q);
            if (i >= 3 && i <= len - 4) {
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

    // Rows kernel. In f32 the cells of a pair group exchange neighbours
    // through warp shuffles instead of shared memory (measured faster); in
    // f64 the shuffled values would need more registers than par's shared
    // arrays, and par measured faster. The limiter is a constant of the
    // shuffled version, as of the march.
    template <class T>
    static __device__ __forceinline__ void rows(const StepArgs<T>& A, const PassInfo& ps, const Col& c, int lane, int off,
                                                T* sm, Floors& fc) {
        if (sizeof(T) == 4) {
            if (A.opt0 == 0)
                rows_shfl<T, 0>(A, ps, c, lane, off, fc);
            else
                rows_shfl<T, 1>(A, ps, c, lane, off, fc);
        }
        else
            par<T, 2, true>(A, ps, c, PairCells{lane, off}, sm, fc);
    }

    // A pair group (PairCells: lane l owns cells 2l - off and 2l + 1 - off
    // of its row) with par's operations, neighbours through shuffles.
    template <class T, int LIM>
    static __device__ __forceinline__ void rows_shfl(const StepArgs<T>& A, const PassInfo& ps, const Col& c, int lane,
                                                     int off, Floors& fc) {
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        T* data = (T*)A.data;
        const int len = c.len;
        T dtdx, wf;
        col_step(A, c, axis, dtdx, wf);
        const T hdtdx = T(0.5) * dtdx;
        const int i0 = 2 * lane - off;  // cells i0, i0 + 1
        T u[2][5], r[2][5], l[2][5];
#pragma unroll
        for (int q = 0; q < 2; ++q) {
#pragma unroll
            for (int v = 0; v < 5; ++v) u[q][v] = r[q][v] = l[q][v] = T(0);
            if (i0 + q < len) {
                load_cell(data, c, axis, i0 + q, u[q]);
                split_flux(k, u[q], r[q], l[q]);
            }
        }
        // Half step from F*_{i0-1..i0+1} (F*_i = F_R,i - F_L,i+1), formed
        // before the split fluxes of the half step take their registers.
        T fs[3][5];
        {
            T rm[5], lp[5];
            shfl_up5(r[1], rm);
            shfl_down5(l[0], lp);
#pragma unroll
            for (int v = 0; v < 5; ++v) {
                fs[0][v] = rm[v] - l[0][v];
                fs[1][v] = r[0][v] - l[1][v];
                fs[2][v] = r[1][v] - lp[v];
            }
        }
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int i = i0 + q;
            if (i >= 1 && i <= len - 2) {
                T uh[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) uh[v] = u[q][v] - hdtdx * (fs[q + 1][v] - fs[q][v]);
                T hinv, hke;
                apply_floors_keep(k, uh, fc, hinv, hke);
                split_flux_known(k, uh, hinv, hke, r[q], l[q]);
            }
        }
        // Faces i0 and i0 + 1 from HR_{i0-1..i0+2} and HL_{i0..i0+3}.
        T fx[2][5];
        {
            T r_m[5], r_p[5], l_p[5], l_pp[5];
            shfl_up5(r[1], r_m);
            shfl_down5(r[0], r_p);
            shfl_down5(l[0], l_p);
            shfl_down5(l[1], l_pp);
#pragma unroll
            for (int v = 0; v < 5; ++v) {
                fx[0][v] = rtvd_face(LIM, r_m[v], r[0][v], r[1][v], l[0][v], l[1][v], l_p[v]);
                fx[1][v] = rtvd_face(LIM, r[0][v], r[1][v], r_p[v], l[1][v], l_p[v], l_pp[v]);
            }
        }
        T fxm[5];
        shfl_up5(fx[1], fxm);
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int i = i0 + q;
            if (i >= 3 && i <= len - 4) {
                T w[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) w[v] = u[q][v] - dtdx * (fx[q][v] - (q == 0 ? fxm[v] : fx[0][v]));
                apply_floors(k, w, fc);
                check_finite(c, axis, i, w, A.errors, ps.slot);
                store_cell(data, c, axis, i, w);
            }
            if (len > 0 && (i == c.face_lo || i == c.face_hi))
                record_face((T*)A.flux, c, axis, i == c.face_lo ? 0 : 1, fx[q], wf, false);
        }
    }

    // One thread, one column. At step j the window holds the half-step
    // split fluxes HR_{j-2} and HL_{j-2} with their differences from HR_{j-3}
    // and HL_{j-3}, and the right half of face j-3 (formed in step j-1);
    // face j-3 and cell j-3 are finished. Differences of neighbouring split
    // fluxes are formed once and used by both limiter calls that read them,
    // which keeps the window small enough for four resident blocks. The
    // split fluxes of U_{j+1} and the face flux F*_j = F_R,j - F_L,j+1 of the
    // half step are formed one step early, off the dependency chain of the
    // step. The states themselves (U_{j+1}, U_{j-1}, U_{j-3}) are read from
    // the ring when used.
    template <class T> struct Win {
        T frc[5];          // F_R,j
        T fs1[5], dfs[5];  // F*_{j-1}, F*_{j-1} - F*_{j-2}
        T hrp[5], drp[5];  // HR_{j-2}, HR_{j-2} - HR_{j-3}
        T hlp[5], dlp[5];  // HL_{j-2}, HL_{j-2} - HL_{j-3}
        T rgt[5];          // right half of face j-3
        T fxp[5];          // face flux j-4
    };

    // Step j from window a into window b. GEN keeps every condition of the
    // column's ends; the steady steps (6 <= j <= len - 3, where every
    // condition holds and every fetch lies inside the column) drop them,
    // and alternate the two windows so that no value is copied from one
    // step's registers to the next's: a steady step is 23 % fewer
    // instructions, and the bitwise step 5 % faster (H100, RTVD f32, 420
    // patches; the fast path, bound by the latency of its loads, is
    // unchanged).
    template <class T, int LIM, bool GEN>
    static __device__ __forceinline__ void march_step(const StepArgs<T>& A, const PassInfo& ps, const Col& c,
                                                      Floors& fc, const Ring<T>& ring, T dtdx, T hdtdx, T wf, int j,
                                                      const Win<T>& a, Win<T>& b) {
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        T* data = (T*)A.data;
        const int len = c.len;
        const int P = QUILT_RING_AHEAD;
        const int f = j - 3;
        // P + j + 1 groups committed; cells 0 .. j + 1 must have landed.
        ring.template fetch<GEN>(data, c, axis, j + P);
        Ring<T>::template wait<P - 1>();
        // Off the chain: split fluxes of U_{j+1} and F*_j.
        if (!GEN || j + 1 < len) {
            T nx[5], fln[5];
            ring.load(j + 1, nx);
            split_flux(k, nx, b.frc, fln);
#pragma unroll
            for (int v = 0; v < 5; ++v) {
                T fsn = a.frc[v] - fln[v];
                b.dfs[v] = fsn - a.fs1[v];
                b.fs1[v] = fsn;
            }
        } else {
            COPY5(b.frc, a.frc);
            COPY5(b.dfs, a.dfs);
            COPY5(b.fs1, a.fs1);
        }
        if (!GEN || j >= 2) {
            T u2[5], uh[5];
            ring.load(j - 1, u2);
#pragma unroll
            for (int v = 0; v < 5; ++v) uh[v] = u2[v] - hdtdx * a.dfs[v];
            T hinv, hke;
            apply_floors_keep(k, uh, fc, hinv, hke);
            T hr[5];  // HR_{j-1}; HL_{j-1} goes to b.hlp
            split_flux_known(k, uh, hinv, hke, hr, b.hlp);
#pragma unroll
            for (int v = 0; v < 5; ++v) b.dlp[v] = b.hlp[v] - a.hlp[v];
            if (!GEN || (f >= 2 && f <= len - 4)) {
                // rtvd_face's operations, with l0..l2 = HL_{j-3..j-1}.
                T fx[5];
#pragma unroll
                for (int v = 0; v < 5; ++v) fx[v] = a.rgt[v] - (a.hlp[v] - T(0.5) * rtvd_limit(LIM, a.dlp[v], b.dlp[v]));
                if (f == c.face_lo) record_face((T*)A.flux, c, axis, 0, fx, wf, false);
                if (f == c.face_hi) record_face((T*)A.flux, c, axis, 1, fx, wf, false);
                if (!GEN || f >= 3) {
                    T un[5], w[5];
                    ring.load(f, un);
#pragma unroll
                    for (int v = 0; v < 5; ++v) w[v] = un[v] - dtdx * (fx[v] - a.fxp[v]);
                    apply_floors(k, w, fc);
                    check_finite(c, axis, f, w, A.errors, ps.slot);
                    store_cell(data, c, axis, f, w);
                }
                COPY5(b.fxp, fx);
            } else {
                COPY5(b.fxp, a.fxp);
            }
            // Right half of face j-2 (rm, r0, rp = HR_{j-3..j-1}).
            const bool next_face = !GEN || (j >= 4 && j <= len - 2);
#pragma unroll
            for (int v = 0; v < 5; ++v) {
                T dr = hr[v] - a.hrp[v];
                b.rgt[v] = next_face ? a.hrp[v] + T(0.5) * rtvd_limit(LIM, a.drp[v], dr) : a.rgt[v];
                b.drp[v] = dr;
                b.hrp[v] = hr[v];
            }
        } else {
            COPY5(b.hrp, a.hrp);
            COPY5(b.drp, a.drp);
            COPY5(b.hlp, a.hlp);
            COPY5(b.dlp, a.dlp);
            COPY5(b.rgt, a.rgt);
            COPY5(b.fxp, a.fxp);
        }
    }

    template <class T>
    static __device__ __forceinline__ void march(const StepArgs<T>& A, const PassInfo& ps, const Col& c, Floors& fc,
                                                 const Ring<T>& ring) {
        if (A.opt0 == 0)
            march_lim<T, 0>(A, ps, c, fc, ring);
        else
            march_lim<T, 1>(A, ps, c, fc, ring);
    }
    // The limiter as a constant, so that the branch-free fast limiter does
    // not compute both and select (2 % of the fast step).
    template <class T, int LIM>
    static __device__ __forceinline__ void march_lim(const StepArgs<T>& A, const PassInfo& ps, const Col& c, Floors& fc,
                                                     const Ring<T>& ring) {
        const int axis = ps.axis;
        const GasK<T> k = A.k;
        T* data = (T*)A.data;
        const PatchStep<T>& st = step_of(A, c.patch);
        const T dtdx = st.dtdx[axis], wf = st.wflux;
        const T hdtdx = T(0.5) * dtdx;
        const int len = c.len;
        const int P = QUILT_RING_AHEAD;
#pragma unroll
        for (int i = 0; i < P; ++i) ring.fetch(data, c, axis, i);
        Win<T> w0, w1;
#pragma unroll
        for (int v = 0; v < 5; ++v) {
            w0.fs1[v] = w0.dfs[v] = w0.fxp[v] = T(0);
            w0.hrp[v] = w0.drp[v] = w0.hlp[v] = w0.dlp[v] = w0.rgt[v] = T(0);
        }
        Ring<T>::template wait<P - 1>();  // cell 0
        {
            T u0[5], fl[5];
            ring.load(0, u0);
            split_flux(k, u0, w0.frc, fl);
        }
        int j = 0;
#pragma unroll 1
        for (; j < 6 && j < len; ++j) {
            march_step<T, LIM, true>(A, ps, c, fc, ring, dtdx, hdtdx, wf, j, w0, w1);
            w0 = w1;
        }
        // Steady steps end where a fetch would pass the column's end.
        const int last = len - 1 - (P > 2 ? P : 2);
#pragma unroll 1
        for (; j + 1 <= last; j += 2) {
            march_step<T, LIM, false>(A, ps, c, fc, ring, dtdx, hdtdx, wf, j, w0, w1);
            march_step<T, LIM, false>(A, ps, c, fc, ring, dtdx, hdtdx, wf, j + 1, w1, w0);
        }
#pragma unroll 1
        for (; j < len; ++j) {
            march_step<T, LIM, true>(A, ps, c, fc, ring, dtdx, hdtdx, wf, j, w0, w1);
            w0 = w1;
        }
        Ring<T>::drain();
    }
};

QUILT_KERNELS(Rtvd, rtvd)
