//! System packages the workspace needs, how to detect them, and how to
//! install them on Debian/Ubuntu.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Result, bail};

/// One system requirement: how to tell it is present and which Debian
/// package provides it.
struct Requirement {
    what: &'static str,
    debian_package: &'static str,
    present: fn() -> bool,
}

fn succeeds(program: &str, args: &[&str]) -> bool {
    Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

fn has_pkg_config() -> bool {
    succeeds("pkg-config", &["--version"])
}

fn has_hdf5() -> bool {
    // Debian ships the serial build as `hdf5-serial` with `hdf5` as an
    // alternative; either name is what the hdf5 bindings look for.
    ["hdf5", "hdf5-serial"]
        .iter()
        .any(|name| succeeds("pkg-config", &["--exists", name]))
}

const REQUIREMENTS: &[Requirement] = &[
    Requirement {
        what: "pkg-config",
        debian_package: "pkg-config",
        present: has_pkg_config,
    },
    Requirement {
        what: "libhdf5 (pkg-config module hdf5 or hdf5-serial)",
        debian_package: "libhdf5-dev",
        present: has_hdf5,
    },
    Requirement {
        what: "DejaVu Sans (the text of the charts' PNG copies)",
        debian_package: "fonts-dejavu-core",
        present: has_dejavu,
    },
];

fn has_dejavu() -> bool {
    Path::new("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf").exists()
}

fn has_ompi_dev() -> bool {
    succeeds("pkg-config", &["--exists", "ompi"])
}

fn has_mpirun() -> bool {
    succeeds("mpirun", &["--version"])
}

fn has_libclang() -> bool {
    // bindgen (under rsmpi's build script) loads libclang; Debian keeps it
    // under /usr/lib/llvm-<version>/lib.
    std::fs::read_dir("/usr/lib").is_ok_and(|dirs| {
        dirs.flatten().any(|d| {
            d.file_name().to_string_lossy().starts_with("llvm-")
                && std::fs::read_dir(d.path().join("lib")).is_ok_and(|libs| {
                    libs.flatten()
                        .any(|f| f.file_name().to_string_lossy().starts_with("libclang.so"))
                })
        })
    })
}

/// What the `mpi` feature of quilt-dist needs on top of [`REQUIREMENTS`].
const MPI_REQUIREMENTS: &[Requirement] = &[
    Requirement {
        what: "Open MPI headers (pkg-config module ompi)",
        debian_package: "libopenmpi-dev",
        present: has_ompi_dev,
    },
    Requirement {
        what: "mpirun",
        debian_package: "openmpi-bin",
        present: has_mpirun,
    },
    Requirement {
        what: "libclang (for rsmpi's bindings)",
        debian_package: "libclang-dev",
        present: has_libclang,
    },
];

/// Whether everything the `mpi` feature needs is installed.
pub fn mpi_present() -> bool {
    MPI_REQUIREMENTS.iter().all(|r| (r.present)())
}

pub fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

fn has_apt() -> bool {
    succeeds("apt-get", &["--version"])
}

/// Check every requirement (with `mpi`, those of the `mpi` feature too);
/// install the missing ones when allowed and possible, otherwise fail with
/// the exact command to run.
pub fn run(allow_install: bool, mpi: bool) -> Result<()> {
    let wanted = || {
        let extra = if mpi { MPI_REQUIREMENTS } else { &[] };
        REQUIREMENTS.iter().chain(extra)
    };
    let missing: Vec<&Requirement> = wanted().filter(|r| !(r.present)()).collect();
    if missing.is_empty() {
        eprintln!("xtask setup: all system packages present");
        return Ok(());
    }
    let packages: Vec<&str> = missing.iter().map(|r| r.debian_package).collect();
    let command = format!(
        "apt-get update && apt-get install -y --no-install-recommends {}",
        packages.join(" ")
    );
    for r in &missing {
        eprintln!(
            "xtask setup: missing {} (Debian package {})",
            r.what, r.debian_package
        );
    }
    if !(allow_install && is_root() && has_apt()) {
        bail!("install the missing packages first:\n    sudo sh -c '{command}'");
    }
    eprintln!("xtask setup: running {command}");
    let ok = Command::new("sh")
        .args(["-c", &command])
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    if !ok {
        bail!("`{command}` failed");
    }
    let still: Vec<&str> = wanted()
        .filter(|r| !(r.present)())
        .map(|r| r.what)
        .collect();
    if !still.is_empty() {
        bail!("still missing after installation: {}", still.join(", "));
    }
    Ok(())
}
