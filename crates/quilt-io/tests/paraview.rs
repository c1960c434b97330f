//! Opens quilt's VTKHDF output in real ParaView: `pvpython` runs
//! `tests/paraview/check_vtkhdf.py`, which checks the level count, blocks
//! per level, AMR boxes, spacing, blanking and the density field against
//! what was written.
//!
//! Without `pvpython` on `PATH` the test logs why and passes, unless
//! `QUILT_REQUIRE_PARAVIEW=1` is set (CI sets it), in which case a missing
//! ParaView is a failure.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use std::collections::HashSet;

use quilt_io::{AmrOutput, VtkHdfSeries, euler_output, write_vtkhdf};
use serde_json::json;

/// pvpython starts a whole ParaView; generous, but bounded.
const PVPYTHON_TIMEOUT: Duration = Duration::from_secs(300);

fn find_on_path(exe: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(exe))
        .find(|p| p.is_file())
}

fn paraview_required() -> bool {
    matches!(
        std::env::var("QUILT_REQUIRE_PARAVIEW").as_deref(),
        Ok("1") | Ok("true") | Ok("yes")
    )
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/paraview/check_vtkhdf.py")
}

/// Runs the check script; returns its combined output or panics with it.
fn run_check(pvpython: &Path, file: &Path, expect: &serde_json::Value, dir: &Path, tag: &str) {
    let sidecar = dir.join(format!("{tag}.expect.json"));
    std::fs::write(&sidecar, serde_json::to_string_pretty(expect).unwrap()).unwrap();
    let out_path = dir.join(format!("{tag}.log"));
    let log = std::fs::File::create(&out_path).unwrap();
    let mut child = Command::new(pvpython)
        // No window is ever opened; offscreen keeps pvpython from looking
        // for a display on headless machines.
        .arg("--force-offscreen-rendering")
        .arg(script())
        .arg(file)
        .arg("--expect")
        .arg(&sidecar)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", pvpython.display()));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > PVPYTHON_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "pvpython did not finish within {PVPYTHON_TIMEOUT:?} checking {}",
                file.display()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let output = std::fs::read_to_string(&out_path).unwrap_or_default();
    eprintln!(
        "--- pvpython {tag} ({:.1} s) ---\n{output}",
        start.elapsed().as_secs_f64()
    );
    assert!(
        status.success(),
        "ParaView check of {} failed ({status}):\n{output}",
        file.display()
    );
    assert!(
        output.contains("OK: "),
        "no OK line from the check script:\n{output}"
    );
}

/// Coarse cells of each level under the next level's patches: what VTK
/// must blank. Computed from the boxes alone.
fn covered_cells(o: &AmrOutput) -> Vec<usize> {
    (0..o.levels.len())
        .map(|l| {
            let Some(fine) = o.levels.get(l + 1) else {
                return 0;
            };
            let ratio = (o.levels[l].spacing[0] / fine.spacing[0]).round() as i32;
            let mut covered = HashSet::new();
            for fb in &fine.boxes {
                let cb = fb.coarsen(ratio);
                for b in &o.levels[l].boxes {
                    let ov = b.intersect(&cb);
                    if !ov.is_empty() {
                        covered.extend(common::cells(&ov));
                    }
                }
            }
            covered.len()
        })
        .collect()
}

/// What ParaView must see for output `o` whose density is `c0 + grad . x`
/// at cell centres.
fn expectations(o: &AmrOutput, c0: f64, grad: [f64; 3]) -> serde_json::Value {
    let (lo, hi) = o.range("density").unwrap();
    json!({
        "levels": o.levels.len(),
        "blocks": o.levels.iter().map(|l| l.boxes.len()).collect::<Vec<_>>(),
        "density_range": [lo, hi],
        "tolerance": 1e-12,
        "origin": o.origin,
        "spacing": o.levels.iter().map(|l| l.spacing).collect::<Vec<_>>(),
        "amr_boxes": o.levels.iter().map(|l| l.boxes.iter().map(|b| {
            vec![b.lo.x, b.hi.x, b.lo.y, b.hi.y, b.lo.z, b.hi.z]
        }).collect::<Vec<_>>()).collect::<Vec<_>>(),
        "covered": covered_cells(o),
        "density_linear": { "c0": c0, "grad": grad },
    })
}

#[test]
fn paraview_reads_output_and_series() {
    let Some(pvpython) = find_on_path("pvpython") else {
        if paraview_required() {
            panic!(
                "QUILT_REQUIRE_PARAVIEW is set but pvpython is not on PATH \
                 (install the Debian package python3-paraview)"
            );
        }
        eprintln!(
            "skipping the ParaView check: pvpython is not on PATH \
             (install python3-paraview, or set QUILT_REQUIRE_PARAVIEW=1 to make this a failure)"
        );
        return;
    };
    let dir = common::scratch("paraview");
    let fixed = common::output(0.25, 10);
    // Coarse cells covered by finer patches are what VTK must blank; a
    // fixture with nothing covered would not test the geometry.
    assert!(covered_cells(&fixed)[..2].iter().all(|&n| n > 0));
    let fixed_exp = expectations(&fixed, common::C0 + 0.25, common::G);

    let mut series = VtkHdfSeries::create(&dir, "amr").unwrap();
    series.write(&common::output(0.0, 0)).unwrap();
    let last = series.write(&fixed).unwrap();
    run_check(&pvpython, &last, &fixed_exp, &dir, "file");

    let mut exp = fixed_exp.clone();
    exp["time"] = json!(0.25);
    exp["times"] = json!([0.0, 0.25]);
    run_check(&pvpython, &dir.join("amr.hdf.series"), &exp, &dir, "series");

    // The same through the hierarchy path, in f32: quilt-mesh patches with
    // ghosts, a shifted non-cubic domain, ratios 2 and 4.
    let h = common::hierarchy();
    let d = common::euler_data::<f32>(&h);
    let o = euler_output(&h, |i| d.old(i), 0.0, 0, common::euler_fields::<f32>).unwrap();
    let path = dir.join("mesh.hdf");
    write_vtkhdf(&path, &o).unwrap();
    let mut exp = expectations(&o, 1.0, [1.0, 2.0, 3.0]);
    exp["tolerance"] = json!(1e-6);
    run_check(&pvpython, &path, &exp, &dir, "mesh");

    // The script must be able to fail: a wrong expectation is reported.
    let mut wrong = fixed_exp;
    wrong["blocks"] = json!([2, 2, 2]);
    let sidecar = dir.join("wrong.expect.json");
    std::fs::write(&sidecar, wrong.to_string()).unwrap();
    let out = Command::new(&pvpython)
        .arg("--force-offscreen-rendering")
        .arg(script())
        .arg(&last)
        .arg("--expect")
        .arg(&sidecar)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("blocks per level"), "{text}");

    std::fs::remove_dir_all(&dir).unwrap();
}
