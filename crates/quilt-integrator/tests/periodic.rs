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
    // 21 steps, 7 regrids. (The regrid after step 24 of this deck fails
    // quilt-mesh's nesting check for a level-2 patch at the periodic x
    // boundary: clustering does not yet nest across periodic boundaries.)
    for _ in 0..21 {
        it.step().unwrap();
    }
    assert!(it.totals().regrids >= 7);
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
