//! CI compile check, no GPU needed: every kernel file compiles with NVRTC
//! to PTX and defines every entry point of both precisions. With
//! `QUILT_NVRTC_PTXAS=1` every file also goes through ptxas for sm_90 in
//! both FMA modes (slower: about a minute on two cores), which also checks
//! the register budget (no spills in the kernels that must have none).
//!
//! Skipped with a message when `libnvrtc.so.13` cannot be loaded, unless
//! `QUILT_REQUIRE_NVRTC=1` (then the test fails). `scripts/nvrtc-venv.sh`
//! installs NVRTC from PyPI and prints the `LD_LIBRARY_PATH` to export.

use quilt_cuda::probe::{nvrtc_available, nvrtc_version};
use quilt_cuda::source::{CompileOptions, KernelFile, cache_key, compile};

fn nvrtc_or_skip() -> bool {
    if nvrtc_available() {
        return true;
    }
    let required = std::env::var("QUILT_REQUIRE_NVRTC").is_ok_and(|v| v == "1");
    assert!(
        !required,
        "QUILT_REQUIRE_NVRTC=1 but libnvrtc.so.13 cannot be loaded (run scripts/nvrtc-venv.sh and export the LD_LIBRARY_PATH it prints)"
    );
    eprintln!(
        "skipping the NVRTC compile check: libnvrtc.so.13 cannot be loaded (scripts/nvrtc-venv.sh installs it; QUILT_REQUIRE_NVRTC=1 makes this an error)"
    );
    false
}

#[test]
fn every_kernel_compiles_to_ptx_in_both_precisions() {
    if !nvrtc_or_skip() {
        return;
    }
    eprintln!("NVRTC {:?}", nvrtc_version().expect("version"));
    // The bitwise build and the fast one (FMA and approximate f32 arithmetic).
    let jobs: Vec<(KernelFile, bool)> = KernelFile::ALL
        .iter()
        .flat_map(|&f| [(f, false), (f, true)])
        .collect();
    let results: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = jobs
            .iter()
            .map(|&(file, fast)| {
                s.spawn(move || {
                    let mut opts = CompileOptions::new("compute_90", fast);
                    opts.fast_f32 = fast;
                    (file, fast, compile(file, &opts))
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().expect("compile thread"))
            .collect()
    });
    for (file, fast, out) in results {
        let out = out.unwrap_or_else(|e| panic!("{} (fast {fast}): {e}", file.path()));
        assert!(
            out.cubin.is_none(),
            "a virtual architecture yields PTX only"
        );
        for name in file.entry_points() {
            assert!(
                out.ptx.contains(&format!(".entry {name}(")),
                "{} (fast {fast}) lacks the entry point {name}",
                file.path()
            );
        }
        // With contraction off the PTX holds no fma: division and square
        // root stay div.rn / sqrt.rn and ptxas expands them. The fast build
        // takes f32 reciprocals with rcp.approx.
        if !fast {
            assert!(
                !out.ptx.contains("fma.rn"),
                "{} contracted a multiply-add with --fmad=false",
                file.path()
            );
        }
        assert_eq!(
            out.ptx.contains("rcp.approx.ftz.f32"),
            fast,
            "{}: approximate f32 reciprocals in the fast build only",
            file.path()
        );
        eprintln!(
            "{} (fast {fast}): {} bytes of PTX",
            file.path(),
            out.ptx.len()
        );
    }
}

/// Kernels that must not touch local memory: the cell-parallel shapes
/// (their per-thread state is a few cells) and the copies between host
/// and device (`load_`, `store_`, with or without external boxes). The
/// marching and fused shapes of the f64 schemes may spill a little; their
/// cost is measured on the GPU (docs/quilt-cuda.md).
const NO_SPILL: [&str; 5] = ["_default_", "_packed_", "scan_", "load_", "store_"];

/// Bytes of spill stores in a ptxas report line.
fn spill_bytes(line: &str) -> Option<u32> {
    let head = line.split(" bytes spill stores").next()?;
    head.rsplit(|c: char| !c.is_ascii_digit())
        .find(|w| !w.is_empty())?
        .parse()
        .ok()
}

#[test]
fn every_kernel_assembles_for_sm_90() {
    if !nvrtc_or_skip() || std::env::var("QUILT_NVRTC_PTXAS").map_or(true, |v| v != "1") {
        eprintln!("skipping the ptxas check (set QUILT_NVRTC_PTXAS=1)");
        return;
    }
    for file in KernelFile::ALL {
        for (fma, fast) in [(false, false), (true, false), (true, true)] {
            let mut opts = CompileOptions::new("sm_90", fma);
            opts.fast_f32 = fast;
            let out = compile(file, &opts).unwrap_or_else(|e| panic!("{e}"));
            let cubin = out.cubin.expect("a real architecture yields a cubin");
            assert!(cubin.starts_with(b"\x7fELF"), "cubin is an ELF image");
            // ptxas' report: "Compiling entry function 'X'" ... "N bytes spill stores".
            let mut entry = String::new();
            for line in out.log.lines() {
                if let Some(rest) = line.split("Compiling entry function '").nth(1) {
                    entry = rest.split('\'').next().unwrap_or("").to_string();
                }
                if line.contains("spill stores") && NO_SPILL.iter().any(|p| entry.contains(p)) {
                    let bytes = spill_bytes(line).unwrap_or_else(|| panic!("unread: {line}"));
                    assert_eq!(bytes, 0, "{entry} (fma {fma}, fast {fast}) spills: {line}");
                }
            }
            eprintln!("{} fma {fma} fast {fast}:\n{}", file.path(), out.log);
        }
    }
}

#[test]
fn a_broken_kernel_reports_the_nvrtc_log() {
    if !nvrtc_or_skip() {
        return;
    }
    // The options are validated by NVRTC: an unknown architecture fails with
    // NVRTC's message in the error.
    let err =
        compile(KernelFile::Waf, &CompileOptions::new("compute_1", false)).expect_err("bad arch");
    let msg = err.to_string();
    assert!(
        msg.contains("kernels/waf.cu") && msg.contains("compute_1"),
        "{msg}"
    );
}

/// The AMR kernels of device-resident steps: every entry point in both
/// precisions, and no contracted multiply-add with `--fmad=false` (their
/// bitwise agreement with the CPU's items depends on it).
#[test]
fn the_amr_kernels_compile_without_contraction() {
    if !nvrtc_or_skip() {
        return;
    }
    let file = KernelFile::Amr;
    let out = compile(file, &CompileOptions::new("compute_90", false))
        .unwrap_or_else(|e| panic!("{}: {e}", file.path()));
    let names = file.entry_points();
    assert_eq!(names.len(), 2 * KernelFile::AMR_KERNELS.len());
    for name in names {
        assert!(
            out.ptx.contains(&format!(".entry {name}(")),
            "{} lacks the entry point {name}",
            file.path()
        );
    }
    assert!(
        !out.ptx.contains("fma.rn"),
        "{} contracted a multiply-add",
        file.path()
    );
}

/// With passive scalars (`QUILT_NCOMP` above 5) every scheme file also
/// defines its scalar pass in both precisions, without contraction; the
/// default build defines none.
#[test]
fn the_scalar_passes_compile_for_every_scheme() {
    if !nvrtc_or_skip() {
        return;
    }
    for file in [KernelFile::Rtvd, KernelFile::Tvd, KernelFile::Waf] {
        let mut opts = CompileOptions::new("compute_90", false);
        opts.defines.push(("QUILT_NCOMP".into(), "8".into()));
        let out = compile(file, &opts).unwrap_or_else(|e| panic!("{}: {e}", file.path()));
        for name in file
            .entry_points()
            .into_iter()
            .chain(["f32", "f64"].map(|p| format!("{}_scalar_{p}", file.prefix())))
        {
            assert!(
                out.ptx.contains(&format!(".entry {name}(")),
                "{} with scalars lacks the entry point {name}",
                file.path()
            );
        }
        assert!(
            !out.ptx.contains("fma.rn"),
            "{} with scalars contracted a multiply-add",
            file.path()
        );
        let plain = compile(file, &CompileOptions::new("compute_90", false))
            .unwrap_or_else(|e| panic!("{}: {e}", file.path()));
        assert!(
            !plain.ptx.contains("_scalar_"),
            "{} defines a scalar pass without scalars",
            file.path()
        );
    }
}

/// The kernel cache's key changes with everything an image depends on and
/// with nothing else.
#[test]
fn cache_keys_name_everything_an_image_depends_on() {
    if !nvrtc_or_skip() {
        return;
    }
    let key = |file, arch: &str, fma, fast, define: Option<&str>| {
        let mut o = CompileOptions::new(arch, fma);
        o.fast_f32 = fast;
        if let Some(v) = define {
            o.defines.push(("QUILT_MARCH_MINB_F64".into(), v.into()));
        }
        cache_key(file, &o).expect("key")
    };
    let base = key(KernelFile::Rtvd, "sm_90", false, false, None);
    assert_eq!(base, key(KernelFile::Rtvd, "sm_90", false, false, None));
    for other in [
        key(KernelFile::Tvd, "sm_90", false, false, None),
        key(KernelFile::Rtvd, "sm_80", false, false, None),
        key(KernelFile::Rtvd, "sm_90", true, false, None),
        key(KernelFile::Rtvd, "sm_90", false, true, None),
        key(KernelFile::Rtvd, "sm_90", false, false, Some("3")),
    ] {
        assert_ne!(base, other);
    }
    // The sources are part of the key, the equation of state's header too.
    let src = KernelFile::Rtvd.source();
    assert!(base.windows(src.len()).any(|w| w == src.as_bytes()));
    let mut o = CompileOptions::new("sm_90", false);
    o.eos = "// another equation of state\n";
    assert_ne!(base, cache_key(KernelFile::Rtvd, &o).expect("key"));
}
