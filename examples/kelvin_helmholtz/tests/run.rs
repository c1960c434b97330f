//! Runs the example for a few steps: it must finish, write a ParaView
//! series, and (where `pvpython` is installed, or `QUILT_REQUIRE_PARAVIEW=1`
//! demands it) that series must open in real ParaView with two levels.

use std::path::{Path, PathBuf};
use std::process::Command;

fn find_on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

#[test]
fn a_few_steps_write_a_series_that_paraview_opens() {
    let dir = std::env::temp_dir().join(format!("quilt-kh-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(env!("CARGO_BIN_EXE_kelvin-helmholtz"))
        .args(["--steps", "6", "--every", "3", "--levels", "2", "--out"])
        .arg(&dir)
        .env("RUST_LOG", "info")
        .output()
        .expect("the example runs");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{log}");
    // The custom criterion refines the interfaces from the start, and the
    // problem's faces keep the run host-staged.
    assert!(log.contains("step 6 "), "{log}");
    assert!(log.contains("2 levels"), "{log}");
    // The problem's after-step hook reports the dye.
    assert!(log.contains("step 6: the dye is mixed in "), "{log}");
    let blocks = log
        .lines()
        .find_map(|l| l.split("initial hierarchy: patches per level [").nth(1))
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no initial hierarchy line in {log}"))
        .replace(' ', "");
    assert_eq!(blocks.split(',').count(), 2, "{blocks}");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    let series = files
        .iter()
        .find(|p| p.to_string_lossy().ends_with(".series"))
        .unwrap_or_else(|| panic!("no series in {files:?}"))
        .clone();
    // Steps 0, 3 and 6, and the series file.
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(files.iter().all(|f| f.metadata().unwrap().len() > 0));

    let required = matches!(
        std::env::var("QUILT_REQUIRE_PARAVIEW").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    );
    match find_on_path("pvpython") {
        Some(pv) => {
            let script =
                Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/paraview/check_vtkhdf.py");
            // The first time step: the initial hierarchy, the density of
            // the streams between 1 and 2 (within the tanh profile's 6e-7),
            // the dye's mass fraction between 0 and 1, the Mach number of
            // the slow light stream (0.3 / sqrt(1.4 · 2.5)) and of the fast
            // dense one (0.9 / sqrt(1.4 · 2.5 / 2)), and the problem's
            // mixing field within [0, 1].
            let expect = dir.join("expect.json");
            std::fs::write(
                &expect,
                r#"{"time": 0.0, "density_range": [1.0, 2.0], "tolerance": 1e-5,
                    "array_ranges": {"dye": [0.0, 1.0],
                                     "mach": [0.16035674514745463, 0.680336051416609]},
                    "array_bounds": {"mixing": [0.0, 1.0]}}"#,
            )
            .unwrap();
            let check = Command::new(pv)
                .arg(&script)
                .arg(&series)
                .args(["--levels", "2", "--blocks", &blocks, "--expect"])
                .arg(&expect)
                .output()
                .expect("pvpython runs");
            assert!(
                check.status.success(),
                "{}\n{}",
                String::from_utf8_lossy(&check.stdout),
                String::from_utf8_lossy(&check.stderr)
            );
        }
        None if required => panic!("QUILT_REQUIRE_PARAVIEW is set but pvpython is not on PATH"),
        None => eprintln!("pvpython not on PATH: the ParaView check is skipped"),
    }
    std::fs::remove_dir_all(&dir).ok();
}
