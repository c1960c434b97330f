//! Interpolation checks: limiters, linear exactness, conservation, and
//! the kernels against the cell-by-cell reference, bit for bit.
use super::slopes::offsets;
use super::*;
use crate::index::{IntVect, iv};
use crate::patch_data::PatchData;

thread_local! {
    /// Set by a test to run the baseline build of the kernels on this
    /// thread even where AVX2 is available.
    pub(super) static BASELINE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes this thread run the baseline build of the kernels (`true`) or
/// the widest the CPU has (`false`).
pub(crate) fn baseline_only(on: bool) {
    BASELINE_ONLY.with(|b| b.set(on));
}

/// Small deterministic generator (splitmix64) for the randomised tests.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + self.below((hi - lo + 1) as u64) as i32
    }
    /// Values with ties, zeros, sign changes and a wide range of
    /// magnitudes, so that every limiter branch is taken.
    fn value(&mut self) -> f64 {
        match self.below(8) {
            0 => 0.0,
            1 => 1.0,
            2 => -0.5,
            _ => {
                let m = (self.next() >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0;
                m * 10f64.powi(self.range(-3, 3))
            }
        }
    }
}

/// Random coarse data with holes, random fine boxes (thin and wide,
/// aligned and not): the kernels agree bit for bit with the cell-by-cell
/// reference, through the mask and through planned stencil flags.
fn bitwise_case<T: Real>(seed: u64) -> [usize; 2] {
    let mut g = Mix(seed);
    let mut w = InterpWork::new();
    let mut compared = [0usize; 2];
    for case in 0..48 {
        let r = if case % 2 == 0 { 2 } else { 4 };
        let lim = [
            Limiter::PiecewiseConstant,
            Limiter::MinMod,
            Limiter::MonotonizedCentral,
        ][case / 2 % 3];
        let ncomp = 1 + g.below(3) as usize;
        let lo = iv(g.range(-6, 3), g.range(-6, 3), g.range(-6, 3));
        let cbox = IndexBox::from_lo_size(lo, iv(g.range(3, 14), g.range(3, 14), g.range(3, 9)));
        let mut src = PatchData::<T>::new(cbox, 0, ncomp).unwrap();
        for c in 0..ncomp {
            src.fill_with(c, |_| T::from_f64(g.value()));
        }
        // Holes: a few random boxes of the coarse box are not given.
        let mut cs = CoarseScratch::new();
        cs.reset(cbox, ncomp).unwrap();
        let holes: Vec<IndexBox> = (0..g.below(4))
            .map(|_| {
                let p = iv(
                    g.range(cbox.lo.x, cbox.hi.x),
                    g.range(cbox.lo.y, cbox.hi.y),
                    g.range(cbox.lo.z, cbox.hi.z),
                );
                IndexBox::new(p, p + iv(g.range(0, 2), g.range(0, 2), g.range(0, 2)))
            })
            .collect();
        for q in cbox.iter() {
            if !holes.iter().any(|h| h.contains(&q)) {
                cs.copy_from(&src, &IndexBox::new(q, q), &iv(0, 0, 0))
                    .unwrap();
            }
        }
        let fbox = cbox.refine(r);
        for _ in 0..6 {
            // Thin boxes (x faces of a ghost shell) or wide ones.
            let nx = if g.below(2) == 0 {
                g.range(1, 4)
            } else {
                g.range(1, fbox.size().x)
            };
            let size = iv(nx, g.range(1, fbox.size().y), g.range(1, fbox.size().z));
            let lo = iv(
                g.range(fbox.lo.x, fbox.hi.x - size.x + 1),
                g.range(fbox.lo.y, fbox.hi.y - size.y + 1),
                g.range(fbox.lo.z, fbox.hi.z - size.z + 1),
            );
            let fine = IndexBox::from_lo_size(lo, size);
            let cg = fine.coarsen(r);
            if holes.iter().any(|h| h.intersects(&cg)) {
                continue;
            }
            compared[usize::from(fine.size().x <= THIN && fine.size().y > THIN)] += 1;
            let mut want = PatchData::<T>::new(fbox, 0, ncomp).unwrap();
            let mut got = want.clone();
            let avail = |p: &IntVect| cs.is_available(p);
            reference::interpolate(
                &cs,
                r,
                lim,
                &fine,
                &avail,
                &mut FillTarget::patch(&mut want),
            );
            interpolate(&cs, r, lim, &fine, &mut FillTarget::patch(&mut got), &mut w).unwrap();
            let same = |a: &PatchData<T>, b: &PatchData<T>| {
                bytemuck::cast_slice::<T, u8>(a.as_slice())
                    == bytemuck::cast_slice::<T, u8>(b.as_slice())
            };
            assert!(
                same(&want, &got),
                "seed {seed} case {case}: mask path, {fine} r {r} {lim:?}"
            );
            // The planned path, with stencil flags over a larger box.
            let fb = cg.grow(1).intersect(&cbox);
            let flags = stencil_flags(cs.mask().unwrap(), &cbox, &fb).unwrap_or_else(|_| {
                // Cells of `fb` outside `cg` may be holes: flags only
                // over the coarse cells under the box then.
                stencil_flags(cs.mask().unwrap(), &cbox, &cg).unwrap()
            });
            let fb = if flags.len() == fb.num_cells() as usize {
                fb
            } else {
                cg
            };
            let mut planned = PatchData::<T>::new(fbox, 0, ncomp).unwrap();
            interpolate_planned(
                &cs,
                r,
                lim,
                &fine,
                &fb,
                &flags,
                &mut FillTarget::patch(&mut planned),
                &mut w,
            )
            .unwrap();
            assert!(
                same(&want, &planned),
                "seed {seed} case {case}: planned path, {fine} r {r} {lim:?}"
            );
        }
    }
    compared
}

#[test]
fn kernels_match_the_reference_bitwise() {
    let mut n = [0; 2];
    for seed in 1..=6 {
        // Both builds of the kernels (where the CPU has AVX2).
        baseline_only(seed % 2 == 0);
        for (a, b) in n.iter_mut().zip(bitwise_case::<f32>(seed)) {
            *a += b;
        }
        for (a, b) in n.iter_mut().zip(bitwise_case::<f64>(seed)) {
            *a += b;
        }
    }
    baseline_only(false);
    // Enough wide and thin boxes were compared for the test to mean
    // something.
    assert!(n[0] > 300 && n[1] > 100, "{n:?}");
}

#[test]
fn reference_limiters_agree() {
    let mut g = Mix(7);
    for _ in 0..20_000 {
        let (a, b) = (g.value(), g.value());
        for lim in [
            Limiter::PiecewiseConstant,
            Limiter::MinMod,
            Limiter::MonotonizedCentral,
        ] {
            assert_eq!(
                lim.slope(a, b).to_bits(),
                reference::slope(lim, a, b).to_bits(),
                "{lim:?} {a} {b}"
            );
            let (x, y) = (a as f32, b as f32);
            assert_eq!(
                lim.slope(x, y).to_bits(),
                reference::slope(lim, x, y).to_bits()
            );
        }
    }
}

#[test]
fn limiters() {
    let l = Limiter::MonotonizedCentral;
    assert_eq!(l.slope(1.0f64, 1.0), 1.0);
    assert_eq!(l.slope(1.0f64, 3.0), 2.0);
    assert_eq!(l.slope(1.0f64, 10.0), 2.0);
    assert_eq!(l.slope(-1.0f64, 2.0), 0.0);
    assert_eq!(l.slope(-2.0f64, -1.0), -1.5);
    let m = Limiter::MinMod;
    assert_eq!(m.slope(1.0f64, 3.0), 1.0);
    assert_eq!(m.slope(-3.0f64, -1.0), -1.0);
    assert_eq!(m.slope(3.0f64, -1.0), 0.0);
    assert_eq!(Limiter::PiecewiseConstant.slope(1.0f64, 1.0), 0.0);
    assert_eq!(offsets::<f64, 2>(), [-0.25, 0.25]);
    assert_eq!(offsets::<f64, 4>(), [-0.375, -0.125, 0.125, 0.375]);
}

/// A linear field on a coarse box interpolates exactly; a random field
/// keeps every coarse cell's mean; both with holes in the mask.
#[test]
fn linear_exact_and_conservative() {
    for r in [2, 4] {
        for lim in [Limiter::MinMod, Limiter::MonotonizedCentral] {
            let cbox = IndexBox::new(iv(-2, 0, 1), iv(5, 4, 6));
            let mut src = PatchData::<f64>::new(cbox, 1, 2).unwrap();
            src.fill_with(0, |p| {
                1.0 + 0.5 * p.x as f64 - 0.25 * p.y as f64 + 2.0 * p.z as f64
            });
            src.fill_with(1, |p| ((p.x * 7 + p.y * 13 + p.z * 29) % 11) as f64);
            let mut cs = CoarseScratch::new();
            cs.reset(cbox.grow(1), 2).unwrap();
            // Leave out the x = 5 plane: one-sided slopes next to it.
            let given = IndexBox::new(cbox.lo, iv(4, 4, 6));
            cs.copy_from(&src, &given, &iv(0, 0, 0)).unwrap();
            let fine = IndexBox::new(iv(-2, 0, 1), iv(4, 4, 6)).refine(r);
            let mut dst = PatchData::<f64>::new(fine, 0, 2).unwrap();
            let mut w = InterpWork::new();
            interpolate(&cs, r, lim, &fine, &mut FillTarget::patch(&mut dst), &mut w).unwrap();
            let rf = r as f64;
            for p in fine.iter() {
                let x = |d: usize| (p[d] as f64 + 0.5) / rf - 0.5;
                let exact = 1.0 + 0.5 * x(0) - 0.25 * x(1) + 2.0 * x(2);
                assert!((dst.get(0, &p) - exact).abs() < 1e-12, "{p:?}");
            }
            for q in given.iter() {
                let s = dst.region_sum(1, &IndexBox::new(q, q).refine(r));
                let mean = s / (r * r * r) as f64;
                assert!((mean - src.get(1, &q)).abs() < 1e-13);
            }
            // Thin boxes (their own kernel), at unaligned offsets and
            // next to the missing x = 5 plane, agree with the above.
            for x0 in [-2 * r + 1, 4 * r - 3, 5 * r - 3] {
                let thin = IndexBox::new(iv(x0, 1, r + 1), iv(x0 + 2, 5 * r - 2, 6 * r));
                let mut t = PatchData::<f64>::new(fine, 0, 2).unwrap();
                interpolate(&cs, r, lim, &thin, &mut FillTarget::patch(&mut t), &mut w).unwrap();
                for p in thin.iter() {
                    for c in 0..2 {
                        assert!((t.get(c, &p) - dst.get(c, &p)).abs() < 1e-12, "{p:?}");
                    }
                }
            }
            // A coarse cell missing under the fine box is an error.
            let e = interpolate(
                &cs,
                r,
                lim,
                &IndexBox::new(iv(5, 0, 1), iv(5, 0, 1)).refine(r),
                &mut FillTarget::patch(&mut PatchData::<f64>::new(cbox.refine(r), 0, 2).unwrap()),
                &mut w,
            )
            .unwrap_err();
            assert!(e.to_string().contains("no coarse data"), "{e}");
        }
    }
}
