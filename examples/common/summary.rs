//! The run summary the examples write as JSON (`--summary-json`): what
//! `scripts/sphere-bench.sh` tabulates and `cargo xtask paper` reads.
//! Included by `euler_sphere` and `replay` with `#[path]`.

use std::path::Path;

use anyhow::{Context, Result};
use quilt::integrator::{Integrator, Real, SolveBackend};

/// Writes the run's summary as JSON to `path`, with the fields of `extra`
/// (an object) added.
pub fn write<T: Real, B: SolveBackend<T>>(
    it: &Integrator<T, B>,
    setup: f64,
    extra: serde_json::Value,
    path: &Path,
) -> Result<()> {
    let t = it.totals();
    let p = &t.phases;
    let h = it.hierarchy();
    let d = &it.deck().batching;
    let (batch_bytes, batch_memory) = it.batch_memory();
    let with_ghosts: i64 = h.patches().iter().map(|p| p.ghost_box().num_cells()).sum();
    let state_bytes = with_ghosts as f64 * 5.0 * std::mem::size_of::<T>() as f64;
    let device_solves = it.backend().solve_totals().map(|g| {
        serde_json::json!({
            "batches": g.batches,
            "host_s": g.host_secs,
            "layout_state_s": g.state_secs,
            "staged_layouts": g.staged_layouts,
            "issue_s": g.issue_secs,
            "wait_s": g.wait_secs,
            "gpu_s": g.gpu_secs,
            "upload_s": g.upload_secs,
            "kernel_s": g.kernel_secs,
            "download_s": g.download_secs,
            "bytes_up": g.bytes_up,
            "bytes_down": g.bytes_down,
            "restricted_on_device": g.restricted_on_device,
            "bus_gb_per_s": g.bus_rate() / 1e9,
            "upload_gb_per_s": g.upload_rate() / 1e9,
        })
    });
    let mut v = serde_json::json!({
        "backend": it.backend().name(),
        "device": it.backend().device(),
        "precision": <T as quilt::mesh::Real>::NAME,
        "scheme": it.deck().hydro.scheme.to_string(),
        "mode": format!("{:?}", d.mode).to_lowercase(),
        "layout": format!("{:?}", d.layout),
        "pipelined": d.pipelined,
        "threads": rayon::current_num_threads(),
        "steps": t.steps,
        "time": it.time(),
        "cells": t.cells,
        "solved_cells": t.solved_cells,
        "batches": t.batches,
        "regrids": t.regrids,
        "patches": h.num_patches(),
        "final_cells": h.total_cells(),
        "levels": h.num_levels(),
        "bins": it.num_bins(),
        "fill": it.fill_ratio(),
        "setup": setup,
        "prepare": p.prepare,
        "solve": p.solve,
        "close": p.close,
        "reflux_restrict": p.reflux_restrict,
        "regrid": p.regrid,
        "output": p.output,
        "idle": p.idle,
        "hidden": p.hidden(),
        "other": p.other,
        "batch_loop": p.batch_loop,
        "prepare_tasks": p.prepare_tasks,
        "close_tasks": p.close_tasks,
        "steps_wall": p.wall,
        "cell_updates_per_s": t.cells as f64 / p.wall.max(1e-12),
        "peak_mb": peak_memory(),
        "state_mb_per_level": state_bytes / 1e6,
        "batch_allocations": it.batch_allocations(),
        "solve_estimate_error": t.estimates.solve_mean(),
        "calibration_holdout_error": it.calibration().map(|c| c.holdout),
        "prepare_estimate_error": t.estimates.prepare_mean(),
        "batch_memory_mb": batch_bytes as f64 / 1e6,
        "batch_memory": batch_memory,
    });
    v["device_solves"] = device_solves.into();
    v["residency"] = format!("{:?}", it.residency()).to_lowercase().into();
    v["resident_mb"] = it.resident_bytes().map(|b| b as f64 / 1e6).into();
    if let (Some(v), serde_json::Value::Object(extra)) = (v.as_object_mut(), extra) {
        v.extend(extra);
    }
    let text = serde_json::to_string_pretty(&v)?;
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Peak resident set size of this process in MB (Linux).
pub fn peak_memory() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1e3)
}
