//! A hierarchy that outgrows the memory budget (a regrid, a deck's level 0,
//! a checkpoint's state) is refused with an error naming what needed the
//! memory, before it is allocated. One test per
//! binary: it sets the process's budget (`QUILT_MEMORY_LIMIT`).

use quilt_integrator::deck::Deck;
use quilt_integrator::{CpuBackend, Integrator, IntegratorError};
use quilt_mesh::memory::MEMORY_LIMIT_VAR;

#[test]
fn states_beyond_the_budget_are_refused_before_allocating() {
    // A sphere filling most of the domain, tagged with a tiny tolerance
    // and buffered, refines all of it: level 1 holds 8 times the cells of
    // level 0.
    let text = r#"
[domain]
base_cells = [16, 16, 16]
[amr]
max_levels = 2
base_patch = 16
max_patch = 40
[[tagging]]
field = "pressure"
detector = "gradient"
tol = 1e-12
[initial.sphere]
radius = 0.3
"#;
    let unlimited = Deck::parse(text).unwrap();
    let mut it =
        Integrator::<f64, _>::new(&unlimited, CpuBackend::new(unlimited.solver().unwrap()))
            .unwrap();
    assert_eq!(it.hierarchy().level_cells(1), 8 * 16 * 16 * 16);
    let dir = std::env::temp_dir().join(format!("quilt-memory-budget-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = dir.join("ck.h5");
    it.write_checkpoint(&ck).unwrap();
    drop(it);
    let level0 = unlimited.level0_bytes(unlimited.ghost().unwrap());
    // SAFETY: the only test of this binary; no other thread reads the
    // environment while it is set.
    unsafe { std::env::set_var(MEMORY_LIMIT_VAR, (2 * level0).to_string()) };
    let deck = Deck::parse(text).expect("level 0 fits twice over");
    let e = Integrator::<f64, _>::new(&deck, CpuBackend::new(deck.solver().unwrap()))
        .err()
        .expect("the refined level does not fit");
    let s = e.to_string();
    assert!(matches!(e, IntegratorError::Mesh { .. }), "{s}");
    assert!(
        s.contains("regridded hierarchy") && s.contains(MEMORY_LIMIT_VAR),
        "{s}"
    );
    // Level 0 alone beyond the budget: the deck is refused.
    unsafe { std::env::set_var(MEMORY_LIMIT_VAR, (level0 / 2).to_string()) };
    let e = Deck::parse(text).unwrap_err();
    assert_eq!(e.key(), Some("domain.base_cells"), "{e}");
    // A checkpoint whose state exceeds the budget is refused before its
    // state is allocated, naming the file.
    let e = quilt_io::read_checkpoint::<f64>(&ck).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("ck.h5") && s.contains(MEMORY_LIMIT_VAR), "{s}");
    std::fs::remove_dir_all(&dir).ok();
    unsafe { std::env::remove_var(MEMORY_LIMIT_VAR) };
}
