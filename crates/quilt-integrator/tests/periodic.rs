//! A periodic box with three levels whose refined region straddles the
//! periodic boundary: coarse–fine faces across the boundary are refluxed
//! through periodic images, and mass, momentum and energy are conserved.

mod common;

use quilt_integrator::deck::Deck;

#[test]
fn periodic_three_levels_conserve_everything() {
    let deck = Deck::parse(
        r#"
[domain]
base_cells = [20, 20, 20]
[amr]
max_levels = 3
base_patch = 10
max_patch = 28
regrid_interval = 3
tag_buffer = 1
[[tagging]]
field = "pressure"
detector = "gradient"
tol = 6.0
[boundary]
x_lo = "periodic"
x_hi = "periodic"
y_lo = "periodic"
y_hi = "periodic"
z_lo = "periodic"
z_hi = "periodic"
[initial.sphere]
center = [0.04, 0.5, 0.47]
radius = 0.13
rho_in = 2.0
p_in = 6.0
[run]
end_time = 10.0
[batching]
max_bins = 3
bin_edge = 32
"#,
    )
    .unwrap();
    let mut it = common::cpu(&deck);
    let h = it.hierarchy();
    assert_eq!(h.num_levels(), 3, "{}", h.summary());
    // Level-1 patches on both sides of the x boundary.
    let n = h.level_geometry(1).unwrap().domain.hi.x;
    let lv1 = h.level_patches(1);
    assert!(
        lv1.iter().any(|p| p.interior().lo.x == 0) && lv1.iter().any(|p| p.interior().hi.x == n)
    );
    let before = it.conserved_totals().unwrap();
    // 60 steps, 20 regrids. Level-2 patches reach the periodic x faces;
    // they are properly nested only because level 1 covers their ghost
    // cells' periodic images at the opposite face.
    let n2 = h.level_geometry(2).unwrap().domain.hi.x;
    let (mut deep, mut at_face) = (0, 0);
    for _ in 0..60 {
        let info = it.step().unwrap();
        if info.regridded {
            let h = it.hierarchy();
            if h.num_levels() == 3 {
                deep += 1;
                let lv2 = h.level_patches(2);
                if lv2
                    .iter()
                    .any(|p| p.interior().lo.x == 0 || p.interior().hi.x == n2)
                {
                    at_face += 1;
                }
            }
        }
    }
    assert!(it.totals().regrids >= 20);
    eprintln!("{deep} regrids kept three levels, {at_face} with level 2 at an x face");
    assert!(deep >= 15 && at_face >= 15, "{deep} / {at_face}");
    let after = it.conserved_totals().unwrap();
    let scale = before[0].abs().max(before[4].abs());
    for c in 0..5 {
        let d = (after[c] - before[c]).abs() / scale;
        eprintln!(
            "component {c}: {} -> {}, change {d:.3e} of the mass/energy scale",
            before[c], after[c]
        );
        assert!(d <= 1e-12, "component {c}: {d:.3e}");
    }
}
