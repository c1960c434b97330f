//! A run restarted from a checkpoint continues bitwise identically.

mod common;

use quilt_integrator::{CpuBackend, Integrator};

#[test]
fn restart_continues_bit_for_bit() {
    let deck = common::closed_box();
    let mut straight = common::cpu(&deck);
    for _ in 0..11 {
        straight.step().unwrap();
    }

    let dir = std::env::temp_dir().join(format!("quilt-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ck.h5");
    let mut first = common::cpu(&deck);
    // Stop between regrids (every 5 steps) so the restart starts on a
    // hierarchy that is not rebuilt at once.
    for _ in 0..7 {
        first.step().unwrap();
    }
    first.write_checkpoint(&path).unwrap();
    let version = first.hierarchy_version();
    drop(first);

    let solver = deck.solver().unwrap();
    let mut resumed = Integrator::<f64, _>::restart(&path, None, CpuBackend::new(solver)).unwrap();
    assert_eq!(resumed.steps(), 7);
    assert_eq!(resumed.hierarchy_version(), version);
    assert_eq!(resumed.deck(), &deck);
    for _ in 0..4 {
        resumed.step().unwrap();
    }
    assert_eq!(resumed.time().to_bits(), straight.time().to_bits());
    assert_eq!(resumed.totals().regrids, straight.totals().regrids);
    let (a, b) = (common::state_bits(&resumed), common::state_bits(&straight));
    assert_eq!(a.len(), b.len());
    assert!(
        a == b,
        "{} values differ",
        a.iter().zip(&b).filter(|(x, y)| x != y).count()
    );

    // A foreign file is a clear error.
    let bogus = dir.join("bogus.h5");
    std::fs::write(&bogus, b"not a checkpoint").unwrap();
    let solver = deck.solver().unwrap();
    let e = Integrator::<f64, _>::restart(&bogus, None, CpuBackend::new(solver))
        .err()
        .unwrap();
    assert!(e.to_string().contains("bogus.h5"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}
