//! The founding paper's evaluation (Raghavan & Vadhiyar 2015, section 4) as
//! one suite: `cargo xtask paper`.
//!
//! It packs the paper's synthetic hierarchies (Table 3, the `paper_pack`
//! example), runs the default sphere with Berger–Rigoutsos patches and
//! with uniform 16³ blocks on the CPU (Figure 9), reads the JSON summaries of `scripts/sphere-bench.sh` runs made
//! on the GPU machine (`--gpu DIR`: the whole step on every backend and
//! batching, Tables 1, 2 and 4 and Figures 11, 13 and 17) and, when `DIR`
//! holds it, `gpu_bench`'s CSV `gpu_bench.csv` (the solver alone: Figures
//! 10, 12, 15 and 16), writes CSV tables
//! and SVG charts into `docs/figures/` and the page `docs/paper-results.md`,
//! which puts each figure next to the paper's. `--tiny` packs two sizes with
//! two seeds (seconds: CI runs it into a temporary folder).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::plot::{self, BarGroup, Corner, LineChart, Series};

mod published;
mod solver;

/// What `cargo xtask paper` runs and where it writes.
#[derive(clap::Args)]
pub struct PaperArgs {
    /// Two sizes and two seeds of the packing table, in the `ci` profile.
    #[arg(long)]
    tiny: bool,
    /// A folder of `scripts/sphere-bench.sh` JSON summaries
    /// (`DECK.CONFIG.RUN.json`) from the GPU machine.
    #[arg(long)]
    gpu: Option<PathBuf>,
    /// Where and when the GPU runs were made, for the page.
    #[arg(long, default_value = "")]
    gpu_label: String,
    /// The folder of the CSV tables and SVG charts.
    #[arg(long, default_value = "docs/figures")]
    out: PathBuf,
    /// The page written.
    #[arg(long, default_value = "docs/paper-results.md")]
    page: PathBuf,
}

/// Table 3 of the paper: patches, bins, efficiency, packing time (ms).
const PAPER_TABLE3: [(usize, f64, f64, f64); 5] = [
    (120, 41.0, 0.8441, 2.459),
    (240, 67.0, 0.8689, 8.668),
    (360, 101.0, 0.8574, 11.01),
    (480, 142.0, 0.8656, 17.21),
    (600, 178.0, 0.8516, 29.61),
];

/// The three sphere traces (`examples/traces/`, written by the deck
/// `examples/decks/sphere_traces.toml` at its regrids): the paper's name,
/// the file's stem, the paper's patch count.
const TRACES: [(&str, &str, usize); 3] = [
    ("RT I", "rt1_step4", 525),
    ("RT II", "rt2_step8", 383),
    ("RT III", "rt3_step16", 635),
];

/// The deck the traces were written with, and are replayed with.
const TRACE_DECK: &str = "examples/decks/sphere_traces.toml";

/// What the names of the traces' f32 and TVD replays add to the trace's
/// (`scripts/sphere-bench.sh` names a replay by what its deck's name adds
/// to `sphere_traces`: `sphere_traces_f32.toml`, `sphere_traces_tvd.toml`).
const F32_SUFFIX: &str = "_f32";
const TVD_SUFFIX: &str = "_tvd";

/// The paper's Table 8 (TVD, single Fermi C2050, seconds) for RT I–III:
/// Enzo, the optimised solver without asynchrony, with adaptive
/// asynchrony.
const PAPER_TABLE8: [[f64; 3]; 3] = [
    [0.9662, 0.6913, 0.4880],
    [0.4455, 0.1998, 0.1392],
    [0.8996, 0.6176, 0.4248],
];

/// One row of `paper_pack`'s CSV.
#[derive(Debug)]
struct PackRow {
    reading: String,
    heuristic: String,
    patches: usize,
    bins: f64,
    efficiency: f64,
    bound_bins: f64,
    bound_efficiency: f64,
    time_ms: f64,
}

fn read_pack(path: &Path) -> Result<Vec<PackRow>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut rows = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1) {
        let c: Vec<&str> = line.split(',').collect();
        let where_ = || format!("{}:{}", path.display(), n + 1);
        if c.len() != 9 {
            bail!("{}: expected 9 columns, found {}", where_(), c.len());
        }
        let num = |k: usize| -> Result<f64> {
            c[k].parse::<f64>()
                .ok()
                .filter(|v| v.is_finite())
                .with_context(|| format!("{}: column {} is {:?}", where_(), k + 1, c[k]))
        };
        rows.push(PackRow {
            reading: c[0].to_string(),
            heuristic: c[1].to_string(),
            patches: num(2)? as usize,
            bins: num(4)?,
            efficiency: num(5)?,
            bound_bins: num(6)?,
            bound_efficiency: num(7)?,
            time_ms: num(8)?,
        });
    }
    if rows.is_empty() {
        bail!("{}: no rows", path.display());
    }
    Ok(rows)
}

/// The runs of one configuration of one deck.
#[derive(Clone, Debug, Default)]
struct Runs {
    precision: String,
    device: String,
    values: BTreeMap<&'static str, Vec<f64>>,
}

/// Fields of a summary reported here.
const FIELDS: [&str; 9] = [
    "cell_updates_per_s",
    "steps_wall",
    "setup",
    "regrid",
    "solve_estimate_error",
    "prepare_estimate_error",
    "patches",
    "final_cells",
    "cells",
];

/// The default sphere with uniform 16³ blocks (Figure 9's uniform
/// patches), beside the default deck's Berger–Rigoutsos patches.
const BLOCKS_DECK: &str = "examples/decks/sphere_blocks.toml";

/// The decks of a GPU folder that hold uniform blocks end in this; each
/// is set against the deck without it (`sphere_large_blocks` against
/// `sphere_large`) in Figure 9, not in the whole-step ratios.
const BLOCKS_SUFFIX: &str = "_blocks";

/// The paper's Figure 9: non-uniform patches took 1.21–1.88 times less
/// execution time than uniform 16³ ones (five runs, Fermi C2070).
const PAPER_FIG9: (f64, f64) = (1.21, 1.88);

impl Runs {
    fn median(&self, field: &str) -> Option<f64> {
        let mut v = self.values.get(field)?.clone();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let m = v.len() / 2;
        Some(if v.len() % 2 == 1 {
            v[m]
        } else {
            0.5 * (v[m - 1] + v[m])
        })
    }

    /// The median cell updates per second.
    fn rate(&self) -> Option<f64> {
        self.median("cell_updates_per_s")
    }

    fn count(&self) -> usize {
        self.values.get(FIELDS[0]).map_or(0, Vec::len)
    }
}

/// Runs by deck, then by configuration.
type Results = BTreeMap<String, BTreeMap<String, Runs>>;

fn read_runs(dir: &Path) -> Result<Results> {
    let mut out = Results::new();
    let entries = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let parts: Vec<&str> = name.split('.').collect();
        let [deck, config, run, "json"] = parts[..] else {
            continue;
        };
        if run.parse::<u32>().is_err() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not a JSON summary", path.display()))?;
        let runs = out
            .entry(deck.to_string())
            .or_default()
            .entry(config.to_string())
            .or_default();
        runs.precision = v["precision"].as_str().unwrap_or("?").to_string();
        runs.device = v["device"].as_str().unwrap_or("?").to_string();
        for f in FIELDS {
            let x = v[f]
                .as_f64()
                .with_context(|| format!("{}: no number {f:?}", path.display()))?;
            runs.values.entry(f).or_default().push(x);
        }
    }
    if out.is_empty() {
        bail!(
            "{}: no sphere-bench summaries (DECK.CONFIG.RUN.json)",
            dir.display()
        );
    }
    Ok(out)
}

/// The ratios of the whole step the paper reports, with its best figure:
/// label, numerator and denominator configurations, the paper's value.
const RATIOS: [(&str, &str, &str, Option<f64>); 5] = [
    (
        "adaptive / static",
        "cuda-adaptive",
        "cuda-static",
        Some(1.17),
    ),
    (
        "over the default scheme",
        "cuda-adaptive",
        "cuda-default",
        Some(2.2),
    ),
    ("GPU / CPU cores", "cuda-adaptive", "cpu", Some(12.22)),
    ("resident / CPU cores", "cuda-resident", "cpu", None),
    (
        "resident / host-staged",
        "cuda-resident",
        "cuda-adaptive",
        None,
    ),
];

fn ratio(runs: &BTreeMap<String, Runs>, a: &str, b: &str) -> Option<f64> {
    let x = runs.get(a)?.rate()?;
    let y = runs.get(b)?.rate()?;
    (y > 0.0).then_some(x / y)
}

/// The suite at its tiny size with the latest GPU summaries committed
/// under `docs/figures/paper-runs/`, into `target/paper-check/`: what
/// `cargo xtask test` runs so that the suite's code stays alive.
pub fn check() -> Result<()> {
    let runs = crate::workspace_root().join("docs/figures/paper-runs");
    let latest = std::fs::read_dir(&runs)
        .with_context(|| format!("reading {}", runs.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .max();
    run(&PaperArgs {
        tiny: true,
        gpu: latest,
        gpu_label: String::new(),
        out: "target/paper-check".into(),
        page: "target/paper-check/paper-results.md".into(),
    })
}

/// Runs the suite.
pub fn run(args: &PaperArgs) -> Result<()> {
    let root = crate::workspace_root();
    let out = root.join(&args.out);
    let page = root.join(&args.page);
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;

    let table3 = out.join("paper_table3.csv");
    let mut cmd = example(args.tiny, "paper_pack");
    cmd.arg("--csv").arg(&table3);
    if args.tiny {
        cmd.arg("--tiny");
    }
    crate::status(cmd)?;
    let pack = read_pack(&table3)?;
    draw_table3(&pack, &out.join("paper_table3.svg"))?;
    let traces = replay_traces(args.tiny, &out.join("trace-runs"))?;
    let blocks = run_blocks(args.tiny, &out.join("blocks-runs"))?;

    let gpu_dir = args.gpu.as_ref().map(|d| root.join(d));
    let gpu = gpu_dir.as_deref().map(read_runs).transpose()?;
    // Decks of uniform blocks are Figure 9's alone.
    let whole = gpu.as_ref().map(without_blocks);
    if let (Some(gpu), Some(whole)) = (&gpu, &whole) {
        write_whole_step(gpu, &out.join("paper_whole_step.csv"))?;
        draw_ratios(whole, &out.join("paper_speedups.svg"))?;
        published::draw(whole, &out.join("paper_published.svg"))?;
    }
    let fig9 = blocks_ratios(&blocks, gpu.as_ref());
    write_blocks(&fig9, &out.join("paper_blocks.csv"))?;
    draw_blocks(&fig9, &out.join("paper_blocks.svg"))?;
    let solver = gpu_dir
        .map(|d| d.join("gpu_bench.csv"))
        .filter(|csv| csv.exists())
        .map(|csv| solver::read_solver(&csv))
        .transpose()?;
    if let Some(solver) = &solver {
        solver::write_outputs(solver, &out)?;
    }
    let text = page_text(
        args,
        &pack,
        &traces,
        &fig9,
        whole.as_ref(),
        solver.as_ref(),
        &out,
        &page,
    );
    write_atomic(&page, text.as_bytes())?;
    println!(
        "xtask paper: wrote {} and the tables and charts in {}",
        page.display(),
        out.display()
    );
    Ok(())
}

/// `cargo run` of the example `name`, in the `ci` profile for `tiny` runs
/// (built by the test suite) and else `release`; its arguments follow.
fn example(tiny: bool, name: &str) -> std::process::Command {
    let mut cmd = crate::cargo();
    cmd.args(["run", "--quiet", "--profile"])
        .arg(if tiny { "ci" } else { "release" })
        .args(["--example", name, "--"]);
    cmd
}

/// What a trace holds: patches per level.
fn trace_levels(path: &Path) -> Result<Vec<usize>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: serde_json::Value = serde_json::from_str(&text)
        .with_context(|| format!("{}: not a hierarchy file", path.display()))?;
    v["levels"]
        .as_array()
        .with_context(|| format!("{}: no levels", path.display()))?
        .iter()
        .map(|l| {
            l["patches"]
                .as_array()
                .map(Vec::len)
                .with_context(|| format!("{}: a level without patches", path.display()))
        })
        .collect()
}

/// Replays each trace on the CPU backend (1 step with `tiny`, else 4) from
/// the deck's initial condition, summaries into `dir`; the traces' levels
/// and the runs.
fn replay_traces(tiny: bool, dir: &Path) -> Result<(Vec<Vec<usize>>, Results)> {
    let root = crate::workspace_root();
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut levels = Vec::new();
    for (_, stem, _) in TRACES {
        let trace = root.join("examples/traces").join(format!("{stem}.json"));
        levels.push(trace_levels(&trace)?);
        let mut cmd = example(tiny, "replay");
        cmd.arg("--trace")
            .arg(&trace)
            .args(["--config", TRACE_DECK, "--backend", "cpu", "--steps"])
            .arg(if tiny { "1" } else { "4" })
            .arg("--summary-json")
            .arg(dir.join(format!("{stem}.cpu.1.json")));
        crate::status(cmd)?;
    }
    Ok((levels, read_runs(dir)?))
}

/// Runs the default sphere on the CPU backend with Berger–Rigoutsos
/// (`sphere`) and with uniform 16³ blocks (`sphere_blocks`,
/// [`BLOCKS_DECK`]), to its end (with `tiny`, 2 coarse steps on 3
/// levels), summaries into `dir`.
fn run_blocks(tiny: bool, dir: &Path) -> Result<Results> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    for (name, deck) in [("sphere", None), ("sphere_blocks", Some(BLOCKS_DECK))] {
        let mut cmd = example(tiny, "euler_sphere");
        if let Some(deck) = deck {
            cmd.args(["--config", deck]);
        }
        cmd.args(["--backend", "cpu", "--no-output"]);
        if tiny {
            cmd.args(["--max-steps", "2", "--levels", "3"]);
        }
        cmd.arg("--summary-json")
            .arg(dir.join(format!("{name}.cpu.1.json")));
        crate::status(cmd)?;
    }
    read_runs(dir)
}

/// `gpu` without the decks of uniform blocks.
fn without_blocks(gpu: &Results) -> Results {
    gpu.iter()
        .filter(|(deck, _)| !deck.ends_with(BLOCKS_SUFFIX))
        .map(|(deck, runs)| (deck.clone(), runs.clone()))
        .collect()
}

/// One pair of Figure 9: where it ran, then of the non-uniform and the
/// uniform run the patches, the cells at the end, the cell updates and
/// the seconds of steps (medians).
struct BlocksPair {
    label: String,
    non_uniform: [f64; 4],
    uniform: [f64; 4],
}

impl BlocksPair {
    /// Uniform over non-uniform seconds of steps.
    fn time_ratio(&self) -> f64 {
        self.uniform[3] / self.non_uniform[3]
    }
}

fn pair_values(r: &Runs) -> [f64; 4] {
    ["patches", "final_cells", "cells", "steps_wall"].map(|f| r.median(f).unwrap_or(f64::NAN))
}

/// The pairs of Figure 9: the CPU runs of [`run_blocks`], then, for every
/// deck of `gpu` ending in [`BLOCKS_SUFFIX`], each configuration it shares
/// with its deck without the suffix.
fn blocks_ratios(cpu: &Results, gpu: Option<&Results>) -> Vec<BlocksPair> {
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (
        cpu.get("sphere").and_then(|c| c.get("cpu")),
        cpu.get("sphere_blocks").and_then(|c| c.get("cpu")),
    ) {
        out.push(BlocksPair {
            label: "sphere, cpu (dev box)".into(),
            non_uniform: pair_values(a),
            uniform: pair_values(b),
        });
    }
    for (deck, runs) in gpu.into_iter().flatten() {
        let Some(base) = deck.strip_suffix(BLOCKS_SUFFIX) else {
            continue;
        };
        let Some(base_runs) = gpu.and_then(|g| g.get(base)) else {
            continue;
        };
        for (config, r) in runs {
            if let Some(b) = base_runs.get(config) {
                out.push(BlocksPair {
                    label: format!("{base}, {config}"),
                    non_uniform: pair_values(b),
                    uniform: pair_values(r),
                });
            }
        }
    }
    out
}

fn write_blocks(pairs: &[BlocksPair], out: &Path) -> Result<()> {
    let mut csv = String::from(
        "run,patches,cells,cell_updates,steps_s,blocks_patches,blocks_cells,blocks_cell_updates,blocks_steps_s,time_ratio\n",
    );
    for p in pairs {
        let [a, b, c, d] = p.non_uniform;
        let [e, f, g, h] = p.uniform;
        writeln!(
            csv,
            "{},{a},{b},{c},{d:.3},{e},{f},{g},{h:.3},{:.3}",
            p.label,
            p.time_ratio()
        )?;
    }
    write_atomic(out, csv.as_bytes())
}

fn draw_blocks(pairs: &[BlocksPair], out: &Path) -> Result<()> {
    let mut names: Vec<String> = pairs
        .iter()
        .map(|p| format!("quilt, {}", p.label))
        .collect();
    names.push("paper, lowest".into());
    names.push("paper, highest".into());
    let mut values: Vec<Option<f64>> = pairs.iter().map(|p| Some(p.time_ratio())).collect();
    values.push(Some(PAPER_FIG9.0));
    values.push(Some(PAPER_FIG9.1));
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    plot::ratio_bars(
        out,
        "Uniform 16³ patches against non-uniform ones (paper Figure 9)",
        "uniform / non-uniform time of the steps",
        &names,
        &[BarGroup {
            label: "time of the same coarse steps".into(),
            values,
        }],
    )
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))
}

fn draw_table3(rows: &[PackRow], out: &Path) -> Result<()> {
    // Per reading, EP-BFD's efficiency and the best the bound allows.
    let mut series = Vec::new();
    for (reading, label) in [
        ("interiors", "32³ interiors"),
        ("with-ghosts", "32³ with ghosts"),
    ] {
        let of = |y: fn(&PackRow) -> f64| {
            rows.iter()
                .filter(|r| r.reading == reading && r.heuristic == "ep-bfd")
                .map(|r| (r.patches as f64, y(r)))
                .collect()
        };
        series.push(Series {
            name: format!("EP-BFD, {label}"),
            points: of(|r| r.efficiency),
        });
        series.push(Series {
            name: format!("best possible, {label}"),
            points: of(|r| r.bound_efficiency),
        });
    }
    let markers: Vec<plot::Marker> = PAPER_TABLE3
        .iter()
        .map(|&(n, _, e, _)| (format!("paper {e:.2}"), n as f64, e))
        .collect();
    plot::line_chart(
        out,
        &LineChart {
            title: "Packing efficiency in 64³ bins (paper Table 3)",
            x_label: "patches in the hierarchy",
            y_label: "packed / bin volume",
            ideal: false,
            legend: Corner::LowerRight,
        },
        &series,
        &markers,
    )
}

fn write_whole_step(gpu: &Results, out: &Path) -> Result<()> {
    let mut csv = String::from(
        "deck,config,precision,runs,cell_updates_per_s,steps_wall_s,setup_s,regrid_s,solve_error,prepare_error\n",
    );
    for (deck, configs) in gpu {
        for (config, r) in configs {
            let m = |f: &str| r.median(f).unwrap_or(f64::NAN);
            writeln!(
                csv,
                "{deck},{config},{},{},{:.4e},{:.3},{:.3},{:.3},{:.4},{:.4}",
                r.precision,
                r.count(),
                m("cell_updates_per_s"),
                m("steps_wall"),
                m("setup"),
                m("regrid"),
                m("solve_estimate_error"),
                m("prepare_estimate_error"),
            )?;
        }
    }
    write_atomic(out, csv.as_bytes())
}

fn draw_ratios(gpu: &Results, out: &Path) -> Result<()> {
    // The traces' f32 and TVD replays stay in the tables: a bar each
    // would crowd the chart past its palette.
    let variant = |d: &str| {
        [F32_SUFFIX, TVD_SUFFIX].iter().any(|suffix| {
            d.strip_suffix(suffix)
                .is_some_and(|stem| TRACES.iter().any(|t| t.1 == stem))
        })
    };
    let decks: Vec<(&String, &BTreeMap<String, Runs>)> =
        gpu.iter().filter(|(d, _)| !variant(d)).collect();
    let mut names: Vec<String> = decks
        .iter()
        .map(|(d, runs)| {
            let p = runs.values().next().map_or("", |r| r.precision.as_str());
            format!("quilt, {d} ({p})")
        })
        .collect();
    names.push("paper (best)".into());
    let groups: Vec<BarGroup> = RATIOS
        .iter()
        .map(|&(label, a, b, paper)| {
            let mut values: Vec<Option<f64>> =
                decks.iter().map(|(_, runs)| ratio(runs, a, b)).collect();
            values.push(paper);
            BarGroup {
                label: label.to_string(),
                values,
            }
        })
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    plot::ratio_bars(
        out,
        "The whole step: quilt's ratios and the paper's",
        "ratio of cell updates per second",
        &names,
        &groups,
    )
}

/// `path` relative to the page's folder, for links.
fn link(from_page: &Path, path: &Path) -> String {
    let dir = from_page.parent().unwrap_or(Path::new(""));
    path.strip_prefix(dir).unwrap_or(path).display().to_string()
}

/// The page's text; `gpu` holds the GPU folder's decks but those of
/// uniform blocks, which `blocks` sets against theirs.
#[allow(clippy::too_many_arguments)]
fn page_text(
    args: &PaperArgs,
    pack: &[PackRow],
    traces: &(Vec<Vec<usize>>, Results),
    blocks: &[BlocksPair],
    gpu: Option<&Results>,
    solver: Option<&solver::SolverTimes>,
    out: &Path,
    page: &Path,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# quilt against its founding paper\n\n\
         Written by `cargo xtask paper{}{}` (do not edit by hand: run it \
         again). The paper is Raghavan & Vadhiyar, *IJHPCA* 2015, section 4; \
         its machines were Tesla S1070 and Fermi C2070 GPUs beside 4–16 \
         Opteron or Xeon cores. Each table below puts quilt's figure next to \
         the paper's. Every chart is an SVG with a PNG copy of the same name \
         beside it.\n",
        if args.tiny { " --tiny" } else { "" },
        args.gpu
            .as_ref()
            .map_or(String::new(), |d| format!(" --gpu {}", d.display())),
    );
    table3_section(&mut s, pack, out, page);
    traces_section(&mut s, traces, gpu, args.tiny);
    blocks_section(&mut s, blocks, args.tiny, out, page);
    solver::section(&mut s, solver, out, page);
    if let Some(gpu) = gpu {
        whole_step_sections(&mut s, gpu, &args.gpu_label, out, page);
        table8_section(&mut s, gpu);
    } else {
        s.push_str(
            "## The whole step (Tables 1, 2 and 4; Figures 11, 13 and 17)\n\n\
             Not in this run: give `--gpu` a folder of `scripts/sphere-bench.sh` \
             summaries.\n\n",
        );
    }
    published::section(&mut s, gpu, out, page);
    s.push_str(MISSING);
    s
}

fn blocks_section(s: &mut String, pairs: &[BlocksPair], tiny: bool, out: &Path, page: &Path) {
    let _ = writeln!(
        s,
        "## Figure 9: non-uniform against uniform 16³ patches\n\n\
         The same problem with quilt's Berger–Rigoutsos patches and with \
         uniform ones: every fine level made of the aligned blocks of 16³ \
         interior cells that hold tags (`amr.blocks = 16`, \
         `{BLOCKS_DECK}`), blocks at a coarser level's edge cut to their \
         part inside it. On the CPU the default sphere runs {} each way on \
         this machine; from the GPU machine, a deck ending in \
         `{BLOCKS_SUFFIX}` beside the deck without it. The paper's uniform \
         patches took {:.2}–{:.2} times the time of its non-uniform ones \
         (five runs on a Fermi C2070), which it puts down to \
         over-refinement.\n\n\
         ![uniform against non-uniform]({})\n\n\
         | run | patches (non-uniform / uniform) | cells at the end | cell updates | seconds of steps | uniform / non-uniform time |\n\
         |---|---|---|---|---|---|",
        if tiny {
            "2 coarse steps on 3 levels"
        } else {
            "to its end (t = 0.045, 4 levels)"
        },
        PAPER_FIG9.0,
        PAPER_FIG9.1,
        link(page, &out.join("paper_blocks.svg"))
    );
    for p in pairs {
        let (a, b) = (p.non_uniform, p.uniform);
        let _ = writeln!(
            s,
            "| {} | {:.0} / {:.0} | {:.3e} / {:.3e} | {:.3e} / {:.3e} | {:.2} / {:.2} | {:.2}× |",
            p.label,
            a[0],
            b[0],
            a[1],
            b[1],
            a[2],
            b[2],
            a[3],
            b[3],
            p.time_ratio()
        );
    }
    let _ = writeln!(
        s,
        "\nCSV: `{}`.\n",
        link(page, &out.join("paper_blocks.csv"))
    );
}

fn table3_section(s: &mut String, pack: &[PackRow], out: &Path, page: &Path) {
    let _ = writeln!(
        s,
        "## Table 3: bin packing\n\n\
         ![packing efficiency]({})\n\n\
         Synthetic hierarchies of the paper's section 4.1 (64 base patches, \
         refined patches of 16–64 cells per side with ghosts), packed by \
         EP-BFD into 64³ bins, means over the seeds; the time is one packing \
         on one core. The paper's base patches are \"32³\": read as 32³ \
         interiors (38³ with ghosts, quilt's synthetic hierarchies) no two \
         share a bin and the Martello–Pisinger–Vigo bound caps any packing \
         far below the paper's efficiency; read as 32³ with ghosts, eight \
         fill a bin.\n",
        link(page, &out.join("paper_table3.svg"))
    );
    s.push_str(
        "| patches | paper: bins / efficiency / ms | 32³ interiors: bins / efficiency / best possible / ms | 32³ with ghosts: bins / efficiency / best possible / ms |\n|---|---|---|---|\n",
    );
    let find = |reading: &str, n: usize| {
        pack.iter()
            .find(|r| r.reading == reading && r.heuristic == "ep-bfd" && r.patches == n)
    };
    let cell = |r: Option<&PackRow>| {
        r.map_or("—".to_string(), |r| {
            format!(
                "{:.1} / {:.3} / {:.3} ({:.1} bins) / {:.3}",
                r.bins, r.efficiency, r.bound_efficiency, r.bound_bins, r.time_ms
            )
        })
    };
    for (n, bins, eff, ms) in PAPER_TABLE3 {
        let _ = writeln!(
            s,
            "| {n} | {bins:.0} / {eff:.3} / {ms:.2} | {} | {} |",
            cell(find("interiors", n)),
            cell(find("with-ghosts", n))
        );
    }
    let c = pack
        .iter()
        .filter(|r| r.heuristic == "c-epbfd")
        .map(|r| {
            format!(
                "{} {}: {:.3} in {:.2} ms",
                r.reading, r.patches, r.efficiency, r.time_ms
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    let _ = writeln!(
        s,
        "\nC-EPBFD (four orderings, the best kept): {c}. CSV: `{}`.\n",
        link(page, &out.join("paper_table3.csv"))
    );
}

fn traces_section(
    s: &mut String,
    (levels, cpu): &(Vec<Vec<usize>>, Results),
    gpu: Option<&Results>,
    tiny: bool,
) {
    let _ = writeln!(
        s,
        "## Real-application traces (RT I–III)\n\n\
         The paper's three traces came from a 3D sphere run of 20 time steps \
         with six levels; quilt's are the hierarchies that `{TRACE_DECK}` \
         (the default sphere with six levels, 20 coarse steps) writes at its \
         regrids, committed in `examples/traces/` (the run is deterministic, \
         so the deck regenerates them bit for bit). Each is replayed from the \
         problem's initial condition on its hierarchy (`examples/replay.rs`); \
         the CPU column is this suite's own replay ({} step{}; {}), the GPU \
         columns come from `scripts/sphere-bench.sh` with \
         `QUILT_BENCH_TRACES` when the `--gpu` folder has them.\n",
        if tiny { 1 } else { 4 },
        if tiny { "" } else { "s" },
        cpu.values()
            .flat_map(|c| c.values())
            .map(|r| r.device.as_str())
            .next()
            .unwrap_or("?")
    );
    s.push_str("| trace | patches per level | patches (paper) | CPU replay cell updates/s | GPU adaptive / static / default scheme, f64 | the same in f32 |\n|---|---|---|---|---|---|\n");
    for ((name, stem, paper), per_level) in TRACES.iter().zip(levels) {
        let total: usize = per_level.iter().sum();
        let rate = |runs: Option<&BTreeMap<String, Runs>>, c: &str| {
            runs.and_then(|r| r.get(c)).and_then(Runs::rate)
        };
        let cpu_rate = rate(cpu.get(*stem), "cpu").map_or("—".into(), |v| format!("{v:.3e}"));
        let gpu_cells = |deck: &str| {
            let g = gpu.and_then(|g| g.get(deck));
            match (
                rate(g, "cuda-adaptive"),
                rate(g, "cuda-static"),
                rate(g, "cuda-default"),
            ) {
                (Some(a), Some(st), Some(d)) => format!("{a:.3e} / {st:.3e} / {d:.3e}"),
                _ => "not measured".to_string(),
            }
        };
        let per: Vec<String> = per_level.iter().map(usize::to_string).collect();
        let _ = writeln!(
            s,
            "| {name} (`{stem}`) | {} | {total} ({paper}) | {cpu_rate} | {} | {} |",
            per.join(", "),
            gpu_cells(stem),
            // The f32 replays (`sphere_traces_f32.toml`).
            gpu_cells(&format!("{stem}{F32_SUFFIX}"))
        );
    }
    s.push('\n');
}

/// Table 8: the TVD solver's whole step on its traces (`{stem}_tvd`, the
/// replays of `examples/traces/tvd/` with `sphere_traces_tvd.toml`).
fn table8_section(s: &mut String, gpu: &Results) {
    s.push_str("## The TVD solver's whole step on the traces (Table 8)\n\n");
    let runs = |stem: &str| gpu.get(&format!("{stem}{TVD_SUFFIX}"));
    let rate = |stem: &str, c: &str| runs(stem).and_then(|r| r.get(c)).and_then(Runs::rate);
    if TRACES.iter().all(|t| rate(t.1, "cuda-adaptive").is_none()) {
        s.push_str(
            "Not in this run: the `--gpu` folder has no replay of the TVD traces \
             (`QUILT_PAPER_PARTS=tvd`).\n\n",
        );
        return;
    }
    s.push_str(
        "The TVD traces (`examples/traces/tvd/`) replayed with \
         `examples/decks/sphere_traces_tvd.toml` (4 steps, f64) in the default \
         scheme and with packed bins in static and adaptive batching. The \
         paper's Table 8 set Enzo's solver against its optimised solver \
         without asynchrony and with adaptive asynchrony (AA).\n\n\
         | trace | default scheme / static / adaptive cell updates/s | adaptive over the default scheme | adaptive / static | the paper: Enzo / AA, no asynchrony / AA |\n\
         |---|---|---|---|---|\n",
    );
    for (k, (name, stem, _)) in TRACES.iter().enumerate() {
        let (d, st, a) = (
            rate(stem, "cuda-default"),
            rate(stem, "cuda-static"),
            rate(stem, "cuda-adaptive"),
        );
        let show = |v: Option<f64>| v.map_or("—".to_string(), |v| format!("{v:.3e}"));
        let over = |base: &str| {
            runs(stem)
                .and_then(|r| ratio(r, "cuda-adaptive", base))
                .map_or("—".to_string(), |x| format!("{x:.2}×"))
        };
        let p = PAPER_TABLE8[k];
        let _ = writeln!(
            s,
            "| {name} (`{stem}`) | {} / {} / {} | {} | {} | {:.2}×, {:.2}× |",
            show(d),
            show(st),
            show(a),
            over("cuda-default"),
            over("cuda-static"),
            p[0] / p[2],
            p[1] / p[2]
        );
    }
    s.push('\n');
}

fn whole_step_sections(s: &mut String, gpu: &Results, label: &str, out: &Path, page: &Path) {
    let device = gpu
        .values()
        .flat_map(|c| c.values())
        .map(|r| r.device.as_str())
        .find(|d| *d != "?" && !d.starts_with("CPU"))
        .unwrap_or("?");
    let _ = writeln!(
        s,
        "## The whole step (Tables 1, 2 and 4; Figures 11, 13 and 17)\n\n\
         `scripts/sphere-bench.sh` on {}: the large sphere decks end to end \
         (16 coarse steps with regrids, RTVD), medians of the runs of every \
         configuration; GPU: {device}. Configurations: `cuda-adaptive` \
         (packed bins, the knapsack's adaptive asynchrony), `cuda-static` \
         (packed bins, static batches), `cuda-default` (the paper's default \
         scheme: a patch per bin, per-patch kernels, static batches), `cpu` \
         (every core of the host), `cuda-resident` (device residency, beyond \
         the paper).\n\n\
         ![speed-ups]({})\n",
        if label.is_empty() {
            "the GPU machine"
        } else {
            label
        },
        link(page, &out.join("paper_speedups.svg"))
    );
    s.push_str(
        "| deck | configuration | runs | cell updates/s | steps s | regrid s | solve estimate error | prepare estimate error |\n|---|---|---|---|---|---|---|---|\n",
    );
    for (deck, configs) in gpu {
        for (config, r) in configs {
            let m = |f: &str| r.median(f).unwrap_or(f64::NAN);
            let err = |f: &str| {
                if config.contains("resident") {
                    "—".to_string()
                } else {
                    format!("{:.1} %", 100.0 * m(f))
                }
            };
            let _ = writeln!(
                s,
                "| {deck} ({}) | {config} | {} | {:.3e} | {:.2} | {:.2} | {} | {} |",
                r.precision,
                r.count(),
                m("cell_updates_per_s"),
                m("steps_wall"),
                m("regrid"),
                err("solve_estimate_error"),
                err("prepare_estimate_error"),
            );
        }
    }
    s.push_str(
        "\nThe paper's estimators (Tables 1 and 2, single patches) were within \
         8 % (solve) and 5.4–9.3 % (prepare); quilt's errors are per batch \
         of a whole run, the slowest of 16 CPU queues for the prepare.\n\n\
         | ratio of cell updates/s | paper (best) |",
    );
    for deck in gpu.keys() {
        let _ = write!(s, " quilt, {deck} |");
    }
    s.push_str("\n|---|---|");
    for _ in gpu.keys() {
        s.push_str("---|");
    }
    s.push('\n');
    for (label, a, b, paper) in RATIOS {
        let _ = write!(
            s,
            "| {label} | {} |",
            paper.map_or("—".to_string(), |p| format!("{p:.2}×"))
        );
        for runs in gpu.values() {
            let _ = write!(
                s,
                " {} |",
                ratio(runs, a, b).map_or("—".to_string(), |r| format!("{r:.2}×"))
            );
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "\nThe paper's GPU was against 8 CPU cores (Table 4: 8.93–12.22×), \
         its adaptive asynchrony up to 1.17× static (Figures 11 and 13), \
         the whole method 1.5–2.2× its default scheme. CSV: `{}`.\n",
        link(page, &out.join("paper_whole_step.csv"))
    );
}

/// What the suite does not produce yet.
const MISSING: &str = "## Not in the suite yet\n\n\
- Figures 14 and 18 (several GPUs): two H200s are charted in \
  [ranks_scaling.svg](figures/ranks_scaling.svg); no machine with four GPUs \
  has been lent.\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_tables_parse_or_say_where_they_fail() {
        let dir = std::env::temp_dir().join(format!("xtask-paper-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let good = dir.join("t3.csv");
        std::fs::write(
            &good,
            "reading,heuristic,patches,seeds,bins,efficiency,bound_bins,bound_efficiency,time_ms\n\
             interiors,ep-bfd,120,2,79.5,0.31,77.0,0.32,0.05\n",
        )
        .unwrap();
        let rows = read_pack(&good).unwrap();
        assert_eq!(rows[0].patches, 120);
        assert_eq!(rows[0].bins, 79.5);
        let bad = dir.join("bad.csv");
        std::fs::write(&bad, "h\ninteriors,ep-bfd,120,2,x,0.31,77.0,0.32,0.05\n").unwrap();
        let e = read_pack(&bad).unwrap_err().to_string();
        assert!(e.contains("bad.csv:2") && e.contains("column 5"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn table8_sets_the_tvd_replays_against_the_papers() {
        let mut gpu = Results::new();
        let mut s = String::new();
        table8_section(&mut s, &gpu);
        assert!(s.contains("Not in this run"), "{s}");
        let configs = gpu.entry("rt2_step8_tvd".to_string()).or_default();
        for (c, v) in [
            ("cuda-default", 1e7),
            ("cuda-static", 6e7),
            ("cuda-adaptive", 7.5e7),
        ] {
            let mut r = Runs::default();
            r.values.insert("cell_updates_per_s", vec![v]);
            configs.insert(c.to_string(), r);
        }
        let mut s = String::new();
        table8_section(&mut s, &gpu);
        // Table 8's RT II: 0.4455 / 0.1392 and 0.1998 / 0.1392.
        assert!(
            s.contains("| RT II (`rt2_step8`) | 1.000e7 / 6.000e7 / 7.500e7 | 7.50× | 1.25× | 3.20×, 1.44× |"),
            "{s}"
        );
        assert!(
            s.contains("| RT I (`rt1_step4`) | — / — / — | — | — |"),
            "{s}"
        );
    }

    #[test]
    fn medians_of_runs() {
        let mut r = Runs::default();
        r.values.insert("cell_updates_per_s", vec![3.0, 1.0, 2.0]);
        assert_eq!(r.median("cell_updates_per_s"), Some(2.0));
        r.values.insert("steps_wall", vec![4.0, 1.0]);
        assert_eq!(r.median("steps_wall"), Some(2.5));
        assert_eq!(r.median("regrid"), None);
        assert_eq!(r.count(), 3);
    }
}
