//! quilt-mesh's flux registers read a fine patch's block of quilt-sweep's
//! flux buffer as it is (`FluxRegister::add_fine_patch_block`): both crates
//! must agree on the order of the six faces, the sides, the components and
//! the transverse cells. Each entry of a block, placed through
//! `quilt_sweep::layout::flux_index`, must correct exactly the coarse cell
//! across that face of the fine patch, in that component, with the sign and
//! size the register's convention gives; a change of order in either crate
//! moves the correction to another cell or component and fails here.

use quilt_mesh::flux_register::{FaceFluxes, FluxRegister};
use quilt_mesh::{
    Geometry, Hierarchy, IndexBox, IntVect, PatchData, PatchId, PatchSpec, Side, SizeLimits, iv,
};
use quilt_sweep::layout::{PatchDesc, face_offset, flux_index, flux_len};

const RATIO: i32 = 2;
const GHOST: i32 = 3;
const NCOMP: usize = 2;

/// One coarse patch over a 16³ domain and one fine patch (ratio 2) inside
/// it with a different size along each axis, so that swapped transverse
/// axes land on other cells.
fn hierarchy() -> Hierarchy {
    let g = Geometry::new([0.0; 3], [1.0, 2.0, 4.0], iv(16, 16, 16), &[RATIO]).unwrap();
    let spec = |id: u32, lo: IntVect, hi: IntVect, parent: Option<u32>| PatchSpec {
        id: PatchId(id),
        interior: IndexBox::new(lo, hi),
        parent: parent.map(PatchId),
    };
    Hierarchy::new(
        g,
        GHOST,
        SizeLimits { min: 4, max: 32 },
        vec![
            vec![spec(0, iv(0, 0, 0), iv(15, 15, 15), None)],
            vec![spec(1, iv(10, 8, 12), iv(13, 13, 19), Some(0))],
        ],
    )
    .unwrap()
}

/// quilt-sweep's descriptor of a patch with interior `interior`.
fn desc(interior: &IndexBox) -> PatchDesc {
    let n = interior.size();
    PatchDesc {
        extent: [n.x, n.y, n.z].map(|e| (e + 2 * GHOST) as u32),
        ghost: GHOST as u32,
        level: 1,
        ..Default::default()
    }
}

/// The two axes across `axis`, in increasing order (quilt-sweep's `(a, b)`).
fn across(axis: usize) -> (usize, usize) {
    match axis {
        0 => (1, 2),
        1 => (0, 2),
        _ => (0, 1),
    }
}

#[test]
fn every_block_entry_corrects_the_coarse_cell_across_its_face() {
    let h = hierarchy();
    let (coarse, fine) = (0, 1);
    let interior = h.patches()[fine].interior();
    let cbox = h.patches()[coarse].interior();
    let d = desc(&interior);
    let len = flux_len(&d, NCOMP as u32) as usize;
    let dxc = h.geometry().level(0).unwrap().dx;
    let n = interior.size();
    let mut checked = 0;
    for axis in 0..3 {
        let (a, b) = across(axis);
        for side in 0..2 {
            for comp in 0..NCOMP {
                for tb in 0..n[b] {
                    for ta in 0..n[a] {
                        let at = flux_index(
                            &d,
                            NCOMP as u32,
                            axis,
                            side,
                            comp as u32,
                            ta as u32,
                            tb as u32,
                        )
                        .unwrap();
                        let mut block = vec![0.0f64; len];
                        block[at] = 1.0;
                        let mut reg = FluxRegister::new(&h, 1, NCOMP).unwrap();
                        let added = reg.add_fine_patch_block(fine, &block, 1.0).unwrap();
                        assert_eq!(added, 2 * (n.y * n.z + n.x * n.z + n.x * n.y) as usize);
                        let mut data = PatchData::<f64>::new(cbox, GHOST, NCOMP).unwrap();
                        reg.reflux_patch(coarse, &mut data).unwrap();

                        // The fine cell just outside the face, and the coarse
                        // cell holding it.
                        let mut outside = interior.lo;
                        outside[a] += ta;
                        outside[b] += tb;
                        outside[axis] = if side == 0 {
                            interior.lo[axis] - 1
                        } else {
                            interior.hi[axis] + 1
                        };
                        let q = iv(
                            outside.x.div_euclid(RATIO),
                            outside.y.div_euclid(RATIO),
                            outside.z.div_euclid(RATIO),
                        );
                        // δ = −F/r² (fine flux only); the coarse cell below
                        // the low face gains +δ/dx, the one above the high
                        // face −δ/dx.
                        let delta = -1.0 / f64::from(RATIO * RATIO);
                        let expect = if side == 0 { delta } else { -delta } / dxc[axis];
                        for c in 0..NCOMP {
                            for p in cbox.iter() {
                                let want = if c == comp && p == q { expect } else { 0.0 };
                                let got = data.get(c, &p);
                                assert!(
                                    (got - want).abs() <= 1e-12 * expect.abs(),
                                    "entry (axis {axis}, side {side}, comp {comp}, t_a {ta}, t_b {tb}) \
                                     at {at}: coarse cell {p:?} component {c} is {got}, expected {want}"
                                );
                            }
                        }
                        checked += 1;
                    }
                }
            }
        }
    }
    assert_eq!(checked, len);
}

/// The block split into its six faces (by `face_offset`) and given face by
/// face as `FaceFluxes` over `interior.boundary_faces(axis, side)` yields
/// the same correction bit for bit as the whole block.
#[test]
fn block_equals_its_faces_given_one_by_one() {
    let h = hierarchy();
    let (coarse, fine) = (0, 1);
    let interior = h.patches()[fine].interior();
    let cbox = h.patches()[coarse].interior();
    let d = desc(&interior);
    let len = flux_len(&d, NCOMP as u32) as usize;
    let block: Vec<f64> = (0..len)
        .map(|i| ((i * 7919) % 1013) as f64 / 97.0 - 5.0)
        .collect();

    let mut whole = FluxRegister::new(&h, 1, NCOMP).unwrap();
    whole.add_fine_patch_block(fine, &block, 0.5).unwrap();
    let mut by_face = FluxRegister::new(&h, 1, NCOMP).unwrap();
    let n = interior.size();
    for axis in 0..3 {
        let (a, b) = across(axis);
        let area = (n[a] * n[b]) as usize;
        for (side, s) in Side::BOTH.into_iter().enumerate() {
            let start = face_offset(&d, NCOMP as u32, axis, side) as usize;
            let faces = interior.boundary_faces(axis, s);
            let f = FaceFluxes::new(&block[start..start + NCOMP * area], faces, NCOMP).unwrap();
            by_face.add_fine(fine, axis, &f, 0.5).unwrap();
        }
    }
    let mut u = PatchData::<f64>::new(cbox, GHOST, NCOMP).unwrap();
    let mut v = u.clone();
    whole.reflux_patch(coarse, &mut u).unwrap();
    by_face.reflux_patch(coarse, &mut v).unwrap();
    assert!(u.as_slice().iter().any(|&x| x != 0.0));
    assert_eq!(u.as_slice(), v.as_slice());
}

/// A block of another length (the sweep layout of another patch) is an
/// error, not a misread.
#[test]
fn block_of_the_wrong_size_is_an_error() {
    let h = hierarchy();
    let interior = h.patches()[1].interior();
    let len = flux_len(&desc(&interior), NCOMP as u32) as usize;
    let mut reg = FluxRegister::new(&h, 1, NCOMP).unwrap();
    let e = reg
        .add_fine_patch_block(1, &vec![0.0f64; len + NCOMP], 1.0)
        .unwrap_err();
    assert!(e.to_string().contains("values given"), "{e}");
}
