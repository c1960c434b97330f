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

/// Uniform blocks (`amr.blocks`): the same closed box, its fine level made
/// of aligned 12³ blocks (parts of blocks only at the coarse level's edge),
/// conserves mass and energy through regrids too.
#[test]
fn uniform_blocks_conserve_mass_and_energy() {
    let mut deck = common::closed_box();
    deck.amr.blocks = 12;
    deck.validate().unwrap();
    let mut it = common::cpu(&deck);
    let before = it.conserved_totals().unwrap();
    let mut regrids = 0;
    for _ in 0..20 {
        regrids += usize::from(it.step().unwrap().regridded);
        let h = it.hierarchy();
        let fine = h.level_patches(1);
        assert!(!fine.is_empty(), "{}", h.summary());
        let whole = fine
            .iter()
            .filter(|p| {
                let b = p.interior();
                b.size().iter().all(|&s| s == 12) && b.lo.iter().all(|&l| l % 12 == 0)
            })
            .count();
        assert!(
            2 * whole > fine.len(),
            "{whole} of {} fine patches are whole aligned blocks\n{}",
            fine.len(),
            h.summary()
        );
    }
    assert!(regrids >= 3);
    let after = it.conserved_totals().unwrap();
    for c in [0, 4] {
        let rel = (after[c] - before[c]).abs() / before[c].abs();
        assert!(rel <= 1e-12, "component {c}: relative change {rel:.3e}");
    }
}
