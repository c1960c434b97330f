//! A closed box with AMR, regrids and refluxing conserves mass and energy.

mod common;

#[test]
fn closed_box_conserves_mass_and_energy() {
    let deck = common::closed_box();
    let mut it = common::cpu(&deck);
    assert_eq!(
        it.hierarchy().num_levels(),
        2,
        "{}",
        it.hierarchy().summary()
    );
    let before = it.conserved_totals().unwrap();
    let mut regrids = 0;
    for _ in 0..50 {
        let info = it.step().unwrap();
        regrids += usize::from(info.regridded);
        assert!(info.batches >= 2, "{info:?}");
    }
    let after = it.conserved_totals().unwrap();
    assert!(regrids >= 9);
    for c in [0, 4] {
        let rel = (after[c] - before[c]).abs() / before[c].abs();
        eprintln!(
            "component {c}: {} -> {}, relative change {rel:.3e}",
            before[c], after[c]
        );
        assert!(rel <= 1e-12, "component {c}: relative change {rel:.3e}");
    }
}
