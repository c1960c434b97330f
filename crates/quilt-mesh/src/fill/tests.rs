//! Prepare against a cell-by-cell reference, bit for bit.
//!
//! The reference writes every cell of a patch's ghost box on its own:
//! interior and sibling cells from the old data, coarse–fine cells through
//! [`crate::interp::reference`], physical cells through the same boundary
//! code in the same axis order. Prepare must agree with it exactly: any
//! change of the fast kernels' arithmetic (order of operations included)
//! fails here.

use super::boundary;
use super::*;
use crate::geometry::Geometry;
use crate::hierarchy::{Hierarchy, PatchId, PatchSpec, SizeLimits};
use crate::index::{IndexBox, iv};
use crate::interp::{CoarseScratch, Limiter, reference};
use crate::patch_data::PatchData;
use crate::real::Real;
use crate::synthetic::{SyntheticSpec, generate};

/// Deterministic values per cell: smooth parts, jumps, ties and zeros, so
/// that every limiter branch is taken.
fn field(p: &crate::index::IntVect, c: usize, level: usize) -> f64 {
    let mut z = (p.x as i64 as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add((p.y as i64 as u64).wrapping_mul(0xBF58_476D_1CE4_E5B9))
        .wrapping_add((p.z as i64 as u64).wrapping_mul(0x94D0_49BB_1331_11EB))
        .wrapping_add((c as u64 + 1) << 40)
        .wrapping_add(level as u64);
    z ^= z >> 29;
    z = z.wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^= z >> 32;
    match z % 6 {
        0 => 1.0,
        1 => 0.0,
        _ => {
            let smooth = 0.3 * p.x as f64 - 0.2 * p.y as f64 + 0.05 * (p.z * p.z) as f64;
            smooth + (z >> 11) as f64 / (1u64 << 53) as f64
        }
    }
}

fn old_data<T: Real>(h: &Hierarchy, ncomp: usize) -> Vec<PatchData<T>> {
    h.patches()
        .iter()
        .map(|p| {
            let mut d = PatchData::new(p.interior(), h.ghost(), ncomp).unwrap();
            for c in 0..ncomp {
                d.fill_with(c, |q| T::from_f64(field(q, c, p.level())));
            }
            d
        })
        .collect()
}

/// The ghost box of patch `i`, written cell by cell (see the module docs).
fn reference_prepare<T: Real>(
    fill: &GhostFill<T>,
    old: &[PatchData<T>],
    i: usize,
    out: &mut PatchData<T>,
) {
    let p = &fill.plan().patches[i];
    let ncomp = out.ncomp();
    let mut t = FillTarget::patch(out);
    let own = &old[i];
    for q in p.interior.iter() {
        for c in 0..ncomp {
            t.set(c, &q, own.get(c, &q)).unwrap();
        }
    }
    for o in &p.copies {
        for q in o.region.iter() {
            for c in 0..ncomp {
                t.set(c, &q, old[o.source].get(c, &(q - o.shift))).unwrap();
            }
        }
    }
    if !p.interp.is_empty() {
        let gbox = p
            .gather
            .iter()
            .fold(IndexBox::empty(), |b, o| b.bounding(&o.region));
        let mut cs = CoarseScratch::new();
        cs.reset(gbox, ncomp).unwrap();
        for o in &p.gather {
            cs.copy_from(&old[o.source], &o.region, &o.shift).unwrap();
        }
        let avail = |q: &crate::index::IntVect| cs.is_available(q);
        // Prepare interpolates slab by slab; the thin/row choice of the
        // kernels depends on the box given, so the reference takes the
        // same boxes.
        for g in &p.interp {
            let mut z0 = g.fine.lo.z;
            while z0 <= g.fine.hi.z {
                let z1 = g.fine.hi.z.min((z0.div_euclid(4) + 1) * 4 - 1);
                let mut part = g.fine;
                part.lo.z = z0;
                part.hi.z = z1;
                z0 = z1 + 1;
                reference::interpolate(&cs, p.ratio, fill.limiter(), &part, &avail, &mut t);
            }
        }
    }
    let lg = &fill.plan().levels[p.level];
    for axis in 0..3 {
        for s in p.physical.iter().filter(|s| s.axis == axis) {
            boundary::apply(fill.boundary_conditions(), s, lg, p.id, 0.0, &mut t);
        }
    }
}

fn check_hierarchy<T: Real>(h: &Hierarchy, bc: BoundaryConditions<T>, limiter: Limiter) {
    // Both builds of the interpolation kernels (where the CPU has AVX2).
    for baseline in [false, true] {
        crate::interp::tests::baseline_only(baseline);
        check_hierarchy_once(h, bc.clone(), limiter);
    }
    crate::interp::tests::baseline_only(false);
}

fn check_hierarchy_once<T: Real>(h: &Hierarchy, bc: BoundaryConditions<T>, limiter: Limiter) {
    let ncomp = 3;
    let old = old_data::<T>(h, ncomp);
    let fill = GhostFill::new(h, bc, limiter).unwrap();
    let mut scratch = FillScratch::new();
    let mut interpolated = 0;
    for (i, p) in h.patches().iter().enumerate() {
        let mut got = PatchData::<T>::new(p.interior(), h.ghost(), ncomp).unwrap();
        let mut want = got.clone();
        let counts = fill
            .prepare(&old, i, 0.0, &mut FillTarget::patch(&mut got), &mut scratch)
            .unwrap();
        interpolated += counts.ghosts.interpolated;
        reference_prepare(&fill, &old, i, &mut want);
        let (a, b) = (
            bytemuck::cast_slice::<T, u8>(got.as_slice()),
            bytemuck::cast_slice::<T, u8>(want.as_slice()),
        );
        if a != b {
            let bad = p
                .ghost_box()
                .iter()
                .find(|q| (0..ncomp).any(|c| got.get(c, q) != want.get(c, q)))
                .unwrap();
            panic!(
                "patch {i} ({:?}, level {}), {limiter:?}, {}: first difference at {bad:?}: {:?} vs reference {:?}",
                p.id(),
                p.level(),
                T::NAME,
                (0..ncomp).map(|c| got.get(c, &bad)).collect::<Vec<_>>(),
                (0..ncomp).map(|c| want.get(c, &bad)).collect::<Vec<_>>(),
            );
        }
    }
    assert!(
        interpolated > 10_000,
        "the hierarchy must exercise interpolation"
    );
}

fn synthetic(ratio: i32, patches: usize, seed: u64) -> Hierarchy {
    generate(&SyntheticSpec {
        patches,
        seed,
        ratio,
        domain_cells: 64,
        base_patch: 32,
        ..Default::default()
    })
    .unwrap()
}

/// A patch of a hand-made hierarchy: id, interior corners, parent id.
fn spec(id: u32, lo: [i32; 3], hi: [i32; 3], parent: Option<u32>) -> PatchSpec {
    PatchSpec {
        id: PatchId(id),
        interior: IndexBox::new(iv(lo[0], lo[1], lo[2]), iv(hi[0], hi[1], hi[2])),
        parent: parent.map(PatchId),
    }
}

fn walls<T: Real>() -> BoundaryConditions<T> {
    BoundaryConditions::uniform(PhysicalBc::Reflecting).with_vector([0, 1, 2])
}

#[test]
fn prepare_matches_reference_bitwise_ratio_2() {
    let h = synthetic(2, 22, 3);
    check_hierarchy::<f32>(&h, walls(), Limiter::MonotonizedCentral);
    check_hierarchy::<f64>(&h, walls(), Limiter::MonotonizedCentral);
    check_hierarchy::<f64>(&h, BoundaryConditions::outflow(), Limiter::MinMod);
}

#[test]
fn prepare_matches_reference_bitwise_ratio_4() {
    let h = synthetic(4, 18, 5);
    check_hierarchy::<f32>(&h, walls(), Limiter::MinMod);
    check_hierarchy::<f64>(&h, walls(), Limiter::MonotonizedCentral);
    check_hierarchy::<f32>(
        &h,
        BoundaryConditions::outflow(),
        Limiter::PiecewiseConstant,
    );
}

/// Periodic along `x` and `z`: periodic images (the patch's own
/// included) and coarse data gathered across the periodic faces.
#[test]
fn prepare_matches_reference_bitwise_periodic() {
    for r in [2, 4] {
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(32, 24, 32), &[r])
            .unwrap()
            .with_periodic([true, false, true]);
        let n = 32 * r;
        let h = Hierarchy::new(
            g,
            3,
            SizeLimits { min: 4, max: 160 },
            vec![
                vec![
                    spec(0, [0, 0, 0], [15, 23, 31], None),
                    spec(1, [16, 0, 0], [31, 23, 31], None),
                ],
                vec![
                    // Spans the periodic x direction: its own image fills
                    // its x ghosts.
                    spec(10, [0, 2 * r, 0], [n - 1, 6 * r - 1, 4 * r - 1], Some(0)),
                    // Touches the periodic low-z face: coarse data from
                    // the image at the high-z side.
                    spec(
                        11,
                        [4 * r, 10 * r, 0],
                        [12 * r - 1, 16 * r - 1, 6 * r - 1],
                        Some(0),
                    ),
                    spec(
                        12,
                        [20 * r, 8 * r, 26 * r],
                        [28 * r - 1, 20 * r - 1, n - 1],
                        Some(1),
                    ),
                ],
            ],
        )
        .unwrap();
        let bc = BoundaryConditions::for_geometry(h.geometry(), PhysicalBc::Reflecting)
            .with_vector([0, 1, 2]);
        check_hierarchy::<f64>(&h, bc.clone(), Limiter::MonotonizedCentral);
        let bc32 = BoundaryConditions::for_geometry(h.geometry(), PhysicalBc::Outflow);
        check_hierarchy::<f32>(&h, bc32, Limiter::MinMod);
    }
}

/// The flat items over one store of all patches (each patch's arrays one
/// after another, ghost cells poisoned) against prepare, bit for bit.
fn check_flat<T: Real>(h: &Hierarchy, bc: BoundaryConditions<T>, limiter: Limiter) {
    let ncomp = 3;
    let old = old_data::<T>(h, ncomp);
    let fill = GhostFill::new(h, bc, limiter).unwrap();
    let mut places = Vec::new();
    let mut store = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        let d = &old[i];
        let [_, sy, sz] = d.strides();
        places.push(crate::flat::Strided {
            base: store.len() as u64,
            sy: sy as u64,
            sz: sz as u64,
            sc: d.comp_len() as u64,
        });
        let mut poisoned = d.clone();
        let interior = p.interior();
        for c in 0..ncomp {
            poisoned.fill_with(c, |q| {
                if interior.contains(q) {
                    d.get(c, q)
                } else {
                    T::from_f64(f64::NAN)
                }
            });
        }
        store.extend_from_slice(poisoned.as_slice());
    }
    let items = crate::flat::FlatFill::new(&fill, &places, ncomp).unwrap();
    assert!(!items.interp.is_empty() && !items.copies.is_empty());
    let mut scratch = vec![T::zero(); items.scratch_len as usize];
    items.run(&mut store, &mut scratch).unwrap();
    let mut fs = FillScratch::new();
    for (i, p) in h.patches().iter().enumerate() {
        let mut want = PatchData::<T>::new(p.interior(), h.ghost(), ncomp).unwrap();
        fill.prepare(&old, i, 0.0, &mut FillTarget::patch(&mut want), &mut fs)
            .unwrap();
        let base = places[i].base as usize;
        let got = &store[base..base + want.as_slice().len()];
        let (a, b) = (
            bytemuck::cast_slice::<T, u8>(got),
            bytemuck::cast_slice::<T, u8>(want.as_slice()),
        );
        if a != b {
            let k = got
                .iter()
                .zip(want.as_slice())
                .position(|(x, y)| x.to_bits_u64() != y.to_bits_u64())
                .unwrap();
            panic!(
                "patch {i} (level {}), {limiter:?}, {}: value {k} of its box is {:?}, prepare wrote {:?}",
                p.level(),
                T::NAME,
                got[k],
                want.as_slice()[k]
            );
        }
    }
}

trait Bits {
    fn to_bits_u64(self) -> u64;
}

impl<T: Real> Bits for T {
    fn to_bits_u64(self) -> u64 {
        let b = bytemuck::bytes_of(&self);
        b.iter().rev().fold(0, |a, &x| a << 8 | u64::from(x))
    }
}

#[test]
fn flat_items_fill_as_prepare_does_bitwise() {
    let h = synthetic(2, 22, 3);
    check_flat::<f64>(&h, walls(), Limiter::MonotonizedCentral);
    check_flat::<f32>(&h, BoundaryConditions::outflow(), Limiter::MinMod);
    let h = synthetic(4, 18, 5);
    check_flat::<f32>(&h, walls(), Limiter::MonotonizedCentral);
    check_flat::<f64>(
        &h,
        BoundaryConditions::outflow(),
        Limiter::PiecewiseConstant,
    );
}

#[test]
fn flat_items_refuse_user_boundaries_and_wrong_placements() {
    #[derive(Debug)]
    struct Nothing;
    impl UserBoundary<f64> for Nothing {
        fn fill(&self, _: &BoundaryFace<'_>, _: &mut FillTarget<'_, f64>) {}
    }
    let h = synthetic(2, 22, 3);
    let bc = BoundaryConditions::outflow()
        .with_face(
            1,
            crate::index::Side::Hi,
            PhysicalBc::User(std::sync::Arc::new(Nothing)),
        )
        .unwrap();
    let fill = GhostFill::new(&h, bc, Limiter::MinMod).unwrap();
    let places = vec![crate::flat::Strided::default(); h.num_patches()];
    let e = crate::flat::FlatFill::new(&fill, &places, 3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("user boundary"), "{e}");
    let e = crate::flat::FlatFill::new(&fill, &places[1..], 3)
        .unwrap_err()
        .to_string();
    assert!(e.contains("placements"), "{e}");
}

/// The flat fill writes every ghost cell of every patch exactly once and
/// no interior cell (each phase's destinations counted over the store).
#[test]
fn flat_items_cover_every_ghost_cell_once() {
    for (h, bc) in [
        (synthetic(2, 22, 3), walls::<f64>()),
        (synthetic(4, 18, 5), BoundaryConditions::outflow()),
    ] {
        let fill = GhostFill::new(&h, bc, Limiter::MinMod).unwrap();
        let mut places = Vec::new();
        let mut len = 0u64;
        for p in h.patches() {
            let s = p.ghost_box().size();
            let (nx, ny, nz) = (s.x as u64, s.y as u64, s.z as u64);
            places.push(crate::flat::Strided {
                base: len,
                sy: nx,
                sz: nx * ny,
                sc: nx * ny * nz,
            });
            len += 3 * nx * ny * nz;
        }
        // Component 0's cells counted.
        let items = crate::flat::FlatFill::new(&fill, &places, 3).unwrap();
        let mut count = vec![0u32; len as usize];
        let mut hit = |s: &crate::flat::Strided, n: [u32; 3]| {
            for z in 0..u64::from(n[2]) {
                for y in 0..u64::from(n[1]) {
                    for x in 0..u64::from(n[0]) {
                        count[s.index([x, y, z], 0) as usize] += 1;
                    }
                }
            }
        };
        for c in items
            .copies
            .iter()
            .filter(|c| c.route == crate::flat::CopyItem::IN_STORE)
        {
            hit(&c.dst, c.n);
        }
        for i in &items.interp {
            hit(&i.dst, i.n);
        }
        for b in items.boundary.iter().flatten() {
            hit(&b.bx.at(b.lo.map(u64::from)), b.n);
        }
        for (i, p) in h.patches().iter().enumerate() {
            let gb = p.ghost_box();
            for q in gb.iter() {
                let d = [0, 1, 2].map(|a| (q[a] - gb.lo[a]) as u64);
                let k = count[places[i].index(d, 0) as usize];
                let want = u32::from(!p.interior().contains(&q));
                assert_eq!(k, want, "patch {i}, cell {q:?}: written {k} times");
            }
        }
    }
}

/// Locks nothing: an arena of ordinary memory for the tests.
struct NoLock;

impl crate::locked::PageLock for NoLock {
    unsafe fn lock(&self, _ptr: *mut u8, _bytes: usize) -> Result<(), String> {
        Ok(())
    }
    unsafe fn unlock(&self, _ptr: *mut u8) {}
    fn kind(&self) -> &'static str {
        "test lock"
    }
}

/// Every patch's old ghosts of `h` filled at once on threads of their own
/// through shared references (states in an arena, each task writing its
/// own ghosts while the others read its interior) give, bit for bit, what
/// `prepare` writes into a separate target; a state in a vector is
/// refused.
fn check_shared_ghosts(h: &Hierarchy, bc: BoundaryConditions<f64>) {
    let ncomp = 3;
    let fill = GhostFill::<f64>::new(h, bc, Limiter::MonotonizedCentral).unwrap();
    let vecs = old_data::<f64>(h, ncomp);
    let arena = crate::locked::LockedArena::new(std::sync::Arc::new(NoLock), 1 << 21);
    let olds: Vec<PatchData<f64>> = vecs
        .iter()
        .map(|d| {
            let buf = arena
                .alloc::<f64>(d.as_slice().len(), "test state")
                .unwrap();
            let mut s = PatchData::reuse(d.interior(), d.ghost(), ncomp, buf).unwrap();
            s.as_mut_slice().fill(f64::NAN);
            for c in 0..ncomp {
                for q in d.interior().iter() {
                    s.set(c, &q, d.get(c, &q));
                }
            }
            assert!(s.is_page_locked());
            s
        })
        .collect();
    // A thread per patch, all at once.
    std::thread::scope(|threads| {
        for (i, d) in olds.iter().enumerate() {
            let (fill, olds) = (&fill, &olds);
            threads.spawn(move || {
                // SAFETY: this thread alone writes `d`, at its ghost
                // cells; the others read interiors only, row by row.
                let mut t = unsafe { FillTarget::shared_ghosts(d) }.unwrap();
                let mut scratch = FillScratch::new();
                fill.fill_ghosts(olds, i, 0.0, &mut t, &mut scratch)
                    .unwrap();
            });
        }
    });
    let mut scratch = FillScratch::new();
    for (i, p) in h.patches().iter().enumerate() {
        let mut want = PatchData::<f64>::new(p.interior(), h.ghost(), ncomp).unwrap();
        fill.prepare(
            &vecs,
            i,
            0.0,
            &mut FillTarget::patch(&mut want),
            &mut scratch,
        )
        .unwrap();
        assert_eq!(
            bytemuck::cast_slice::<f64, u8>(olds[i].as_slice()),
            bytemuck::cast_slice::<f64, u8>(want.as_slice()),
            "patch {i}"
        );
    }
    let e = unsafe { FillTarget::shared_ghosts(&vecs[0]) }.unwrap_err();
    assert!(e.to_string().contains("page-locked"), "{e}");
}

#[test]
#[cfg_attr(miri, ignore = "too large for the interpreter: see the small twin")]
fn shared_ghost_fills_in_parallel_match_prepare_bitwise() {
    check_shared_ghosts(&synthetic(2, 22, 3), walls());
}

/// The same on a hierarchy small enough for Miri (`MIRIFLAGS="-Zmiri-tree-borrows
/// -Zmiri-disable-isolation -Zmiri-ignore-leaks" cargo +nightly miri test
/// -p quilt-mesh --lib shared_ghost_fills_of_a_small`; Tree Borrows, since
/// rayon's crossbeam-epoch fails Stacked Borrows), which checks that the writes
/// through shared references and the row reads beside them never alias a
/// live reference: two base patches (one sibling copy each way, periodic
/// along `x`), one refined patch across their boundary (coarse data from
/// both), reflecting walls.
#[test]
fn shared_ghost_fills_of_a_small_hierarchy_match_prepare_bitwise() {
    let g = Geometry::new([0.0; 3], [1.0; 3], iv(8, 4, 4), &[2])
        .unwrap()
        .with_periodic([true, false, false]);
    let h = Hierarchy::new(
        g,
        2,
        SizeLimits { min: 2, max: 16 },
        vec![
            vec![
                spec(0, [0, 0, 0], [3, 3, 3], None),
                spec(1, [4, 0, 0], [7, 3, 3], None),
            ],
            vec![spec(10, [6, 2, 2], [9, 5, 5], Some(0))],
        ],
    )
    .unwrap();
    let bc = BoundaryConditions::for_geometry(h.geometry(), PhysicalBc::Reflecting)
        .with_vector([0, 1, 2]);
    check_shared_ghosts(&h, bc);
}
