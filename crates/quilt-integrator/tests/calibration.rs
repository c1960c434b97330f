//! The cost model is calibrated on the backend in use in the first steps,
//! stored per backend and device, read back by a later run, and a foreign
//! or malformed file falls back to a fresh calibration.

mod common;

use quilt_integrator::calibration::coefficient_path;
use quilt_integrator::{Integrator, SolveBackend};

fn run(dir: &std::path::Path, steps: usize) -> Integrator<f64, quilt_integrator::CpuBackend<f64>> {
    let mut deck = common::closed_box();
    deck.batching.coefficients_dir = dir.display().to_string();
    // A fixed batching: enough batches per step for a fit after two steps,
    // whatever the timings.
    deck.batching.mode = quilt_integrator::deck::BatchMode::Static;
    deck.batching.n_fixed = 2;
    let mut it = common::cpu(&deck);
    for _ in 0..steps {
        it.step().unwrap();
    }
    it
}

#[test]
fn calibrates_stores_reloads_and_replaces_foreign_files() {
    let dir = std::env::temp_dir().join(format!("quilt-cal-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);

    // First run: calibrates after two steps and stores the coefficients.
    let it = run(&dir, 1);
    assert!(it.calibration().is_none(), "the first step only warms up");
    let it = run(&dir, 2);
    let report = it
        .calibration()
        .expect("calibrated after two steps")
        .clone();
    assert!(
        report.samples.iter().all(|&n| n > 0),
        "{:?}",
        report.samples
    );
    let backend = it.backend();
    let path = coefficient_path(&dir, backend.name(), &backend.device());
    let text = std::fs::read_to_string(&path).expect("coefficients stored");
    let version = format!("\"format_version\": {}", quilt_batch::FORMAT_VERSION);
    assert!(text.contains(&version), "{text}");
    assert_eq!(
        it.model().model().coefficients(),
        &report.coefficients,
        "the fitted model is the one in use"
    );

    // Second run: reads them and does not calibrate.
    let it = run(&dir, 3);
    assert!(it.calibration().is_none());

    // A file of another device, a malformed one and one of the format
    // before `t_bin`: calibrated afresh and the file replaced by this
    // device's.
    let foreign = text.replace(
        &format!("\"device\": \"{}\"", backend.device()),
        "\"device\": \"another GPU\"",
    );
    assert_ne!(foreign, text);
    let old_format = text.replace(&version, "\"format_version\": 1");
    for bad in [foreign, "{ \"format_version\": 1,".to_string(), old_format] {
        std::fs::write(&path, &bad).unwrap();
        let it = run(&dir, 3);
        assert!(
            it.calibration().is_some(),
            "calibrated afresh over {bad:.40}"
        );
        let now = std::fs::read_to_string(&path).unwrap();
        assert!(now.contains(&backend.device()), "{now}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
