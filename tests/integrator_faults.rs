//! A fault during a run stops it with an error naming step, level, patch
//! and cell, and leaves the last checkpoint and the ParaView outputs intact:
//! the run continues from the checkpoint.

use quilt::integrator::deck::Deck;
use quilt::integrator::{CpuBackend, Integrator, IntegratorError};
use quilt::mesh::iv;
use quilt_io::{CellFields, VtkHdfSeries, euler_output, read_checkpoint_info};

fn deck() -> Deck {
    Deck::parse(
        r#"
[domain]
base_cells = [20, 20, 20]
[amr]
max_levels = 2
base_patch = 10
max_patch = 28
regrid_interval = 3
[boundary]
x_lo = "reflecting"
x_hi = "reflecting"
[initial.sphere]
radius = 0.2
[run]
end_time = 1.0
"#,
    )
    .unwrap()
}

fn fields(u: &[f64]) -> CellFields {
    CellFields {
        density: u[0],
        velocity: [u[1] / u[0], u[2] / u[0], u[3] / u[0]],
        pressure: 0.4 * (u[4] - 0.5 * (u[1] * u[1] + u[2] * u[2] + u[3] * u[3]) / u[0]),
        total_energy: u[4],
    }
}

#[test]
fn a_fault_leaves_checkpoint_and_outputs_usable() {
    let dir = std::env::temp_dir().join(format!("quilt-integrator-faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ck = dir.join("run.checkpoint.h5");
    let d = deck();
    let mut it = Integrator::<f64, _>::new(&d, CpuBackend::new(d.solver().unwrap())).unwrap();
    let mut series = VtkHdfSeries::create(&dir, "run").unwrap();
    for _ in 0..4 {
        it.step().unwrap();
        let out = euler_output(
            it.hierarchy(),
            |i| it.data().old(i),
            it.time(),
            it.steps(),
            fields,
        )
        .unwrap();
        series.write(&out).unwrap();
        it.write_checkpoint(&ck).unwrap();
    }
    let (time, step) = (it.time(), it.steps());

    // A negative density appears in a fine patch.
    let (index, id, cell) = {
        let h = it.hierarchy();
        let i = h.level_range(1).start;
        (
            i,
            h.patches()[i].id(),
            h.patches()[i].interior().lo + iv(1, 2, 3),
        )
    };
    it.data_mut()
        .unwrap()
        .get_mut(index)
        .unwrap()
        .old
        .set(0, &cell, -1.0);
    let e = it.step().unwrap_err();
    match &e {
        IntegratorError::BadState {
            step: s,
            level,
            patch,
            cell: c,
            ..
        } => {
            assert_eq!((*s, *level, *patch), (step + 1, 1, id));
            assert_eq!(*c, [cell.x, cell.y, cell.z].map(i64::from));
        }
        other => panic!("{other}"),
    }
    drop(it);

    // The last checkpoint and every output are intact.
    let info = read_checkpoint_info(&ck).unwrap();
    assert_eq!(
        (info.run.step, info.run.time.to_bits()),
        (step, time.to_bits())
    );
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for s in 1..=4 {
        assert!(names.contains(&format!("run_{s:06}.hdf")), "{names:?}");
    }
    assert!(!names.iter().any(|n| n.contains(".tmp")), "{names:?}");
    let mut resumed =
        Integrator::<f64, _>::restart(&ck, None, CpuBackend::new(d.solver().unwrap())).unwrap();
    resumed.step().unwrap();
    assert_eq!(resumed.steps(), step + 1);
    std::fs::remove_dir_all(&dir).ok();
}
