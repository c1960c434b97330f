//! Coefficient files: round trip, defaults, and errors that name the file.

use std::path::PathBuf;

use quilt_batch::{
    BatchError, CoefficientFile, Coefficients, CostModel, FORMAT_VERSION, Provenance,
    coefficient_file_name, load_or_default,
};

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("quilt-batch-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn provenance() -> Provenance {
    Provenance {
        backend: "cuda".into(),
        device: "NVIDIA H100 80GB HBM3".into(),
        date: "2026-11-22".into(),
        samples: 1234,
    }
}

#[test]
fn round_trip_preserves_every_bit() {
    let d = dir("roundtrip");
    let path = d
        .join("sub")
        .join(coefficient_file_name("cuda", "NVIDIA H100 80GB HBM3"));
    let mut c = Coefficients::gpu_default();
    c.solve.c1 = 1.234_567_890_123_456_7e-9;
    c.prepare.k1 = 0.1 + 0.2;
    let file = CoefficientFile::new(provenance(), c);
    file.save(&path).unwrap();
    let back = CoefficientFile::load(&path).unwrap().unwrap();
    assert_eq!(back, file);
    assert_eq!(back.format_version, FORMAT_VERSION);
    let (model, prov) = load_or_default(&path, Coefficients::cpu_default()).unwrap();
    assert_eq!(model, CostModel::new(c).unwrap());
    assert_eq!(prov.unwrap(), provenance());
    // No temporary file is left behind.
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
    assert_eq!(names.len(), 1);
    std::fs::remove_dir_all(d).unwrap();
}

/// Runs sharing a coefficients directory may save the same file at once:
/// every save succeeds and the file is always one complete save.
#[test]
fn concurrent_saves_of_one_file_all_succeed() {
    let d = dir("concurrent");
    let path = d.join(coefficient_file_name("cpu", "host"));
    let file = CoefficientFile::new(provenance(), Coefficients::cpu_default());
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..20 {
                    file.save(&path).unwrap();
                    assert_eq!(CoefficientFile::load(&path).unwrap().unwrap(), file);
                }
            });
        }
    });
    let names: Vec<_> = std::fs::read_dir(&d).unwrap().collect();
    assert_eq!(names.len(), 1);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn missing_file_gives_defaults_not_an_error() {
    let path = dir("missing").join("cpu-none.json");
    assert!(CoefficientFile::load(&path).unwrap().is_none());
    let (model, prov) = load_or_default(&path, Coefficients::cpu_default()).unwrap();
    assert!(prov.is_none());
    assert_eq!(model.coefficients(), &Coefficients::cpu_default());
}

#[test]
fn corrupt_files_are_errors_naming_file_line_and_column() {
    let d = dir("corrupt");
    std::fs::create_dir_all(&d).unwrap();
    let good = serde_json::to_string_pretty(&CoefficientFile::new(
        provenance(),
        Coefficients::cpu_default(),
    ))
    .unwrap();

    let path = d.join("truncated.json");
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    let e = CoefficientFile::load(&path).unwrap_err();
    match &e {
        BatchError::Parse {
            path: p,
            line,
            column,
            ..
        } => {
            assert_eq!(p, &path);
            assert!(*line > 1 && *column > 0);
        }
        other => panic!("{other:?}"),
    }
    let msg = e.to_string();
    assert!(
        msg.contains("truncated.json") && msg.contains("line"),
        "{msg}"
    );
    assert!(load_or_default(&path, Coefficients::cpu_default()).is_err());

    // A misspelt coefficient is caught, not silently defaulted.
    let path = d.join("typo.json");
    std::fs::write(&path, good.replace("\"k_flux\"", "\"k_flux_\"")).unwrap();
    assert!(matches!(
        CoefficientFile::load(&path),
        Err(BatchError::Parse { .. })
    ));

    // NaN cannot be written in JSON; a negative coefficient can.
    let path = d.join("negative.json");
    let mut c = Coefficients::cpu_default();
    c.solve.c3 = 1.0;
    let text = serde_json::to_string_pretty(&CoefficientFile::new(provenance(), c))
        .unwrap()
        .replace("\"c3\": 1.0", "\"c3\": -1.0");
    std::fs::write(&path, text).unwrap();
    let e = CoefficientFile::load(&path).unwrap_err();
    assert!(matches!(&e, BatchError::InvalidFile { .. }), "{e}");
    assert!(
        e.to_string().contains("negative.json") && e.to_string().contains("c3"),
        "{e}"
    );

    let current = format!("\"format_version\": {FORMAT_VERSION}");
    assert!(good.contains(&current), "{good}");
    let path = d.join("version.json");
    std::fs::write(&path, good.replace(&current, "\"format_version\": 99")).unwrap();
    assert!(matches!(
        CoefficientFile::load(&path),
        Err(BatchError::FormatVersion { found: 99, .. })
    ));

    // A file of version 1 (before t_bin) names its version, not the field
    // it lacks.
    let path = d.join("version1.json");
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["format_version"] = 1.into();
    v["coefficients"]["solve"]
        .as_object_mut()
        .unwrap()
        .remove("t_bin")
        .unwrap();
    let old = serde_json::to_string_pretty(&v).unwrap();
    std::fs::write(&path, &old).unwrap();
    let e = CoefficientFile::load(&path).unwrap_err();
    assert!(
        matches!(&e, BatchError::FormatVersion { found: 1, .. }),
        "{e}\n{old}"
    );
    assert!(e.to_string().contains("version1.json"), "{e}");

    // A folder where the file should be is an I/O error, not "missing".
    let path = d.join("folder.json");
    std::fs::create_dir_all(&path).unwrap();
    assert!(matches!(
        CoefficientFile::load(&path),
        Err(BatchError::Io { .. })
    ));
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn invalid_coefficients_are_not_saved() {
    let d = dir("invalid");
    let path = d.join("x.json");
    let mut c = Coefficients::cpu_default();
    c.close.k3 = f64::NAN;
    let e = CoefficientFile::new(provenance(), c)
        .save(&path)
        .unwrap_err();
    assert!(matches!(
        e,
        BatchError::InvalidCoefficient { name: "k3", .. }
    ));
    assert!(!path.exists());
}

#[test]
fn file_names_are_portable() {
    assert_eq!(
        coefficient_file_name("cuda", "NVIDIA H100 80GB HBM3"),
        "cuda-NVIDIA_H100_80GB_HBM3.json"
    );
    assert_eq!(
        coefficient_file_name("cpu", "AMD/EPYC 9654"),
        "cpu-AMD_EPYC_9654.json"
    );
}
