//! The GPU solver alone: `gpu_bench`'s CSV (`gpu_bench.csv`) set against
//! the paper's solver figures, on its synthetic hierarchies (Figures 10,
//! 12, 15 and 16) and on the traces (Tables 5–7).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};

use super::{TRACES, link, write_atomic};
use crate::plot::{self, BarGroup, Corner, LineChart, Series};

/// Times of the seeds (ms) by configuration.
type ByConfig = BTreeMap<String, Vec<f64>>;

/// `gpu_bench`'s solver times, by (scheme, precision).
#[derive(Debug, Default)]
pub(super) struct SolverTimes {
    /// The synthetic hierarchies, by patch count.
    pub synthetic: BTreeMap<(String, String), BTreeMap<usize, ByConfig>>,
    /// The traces, by the trace's name: its patch count and times.
    pub traces: BTreeMap<(String, String), BTreeMap<String, (usize, ByConfig)>>,
}

/// `gpu_bench`'s `hierarchy` of the synthetic hierarchies (and of every
/// line of a CSV without that column).
const SYNTHETIC: &str = "synthetic";

/// The paper's solver speed-ups over its default scheme, averaged over its
/// synthetic hierarchies: scheme, load balancing alone, with the kernel
/// optimisations, the figure.
const PAPER_SOLVER: [(&str, Option<f64>, f64, &str); 4] = [
    ("rtvd", Some(1.47), 1.85, "Figure 10 (Tesla S1070)"),
    ("rtvd", Some(1.47), 1.67, "Figure 12 (Fermi C2070)"),
    (
        "waf",
        None,
        1.41,
        "Figure 15 (Tesla S1070; 1.28–1.41, load balancing up to 1.23)",
    ),
    ("tvd", Some(1.06), 1.39, "Figure 16 (Fermi C2070)"),
];

/// The paper's GPU solver times on its traces RT I–III (seconds: the
/// default scheme, load balancing, load balancing and the kernel
/// optimisations): scheme, table, GPU.
type PaperTraceTable = (&'static str, &'static str, &'static str, [[f64; 3]; 3]);

const PAPER_TRACE_SOLVER: [PaperTraceTable; 3] = [
    (
        "rtvd",
        "Table 5",
        "Tesla S1070",
        [
            [3.5298, 2.6092, 2.4164],
            [1.0875, 0.8148, 0.6212],
            [3.3184, 2.5821, 1.8230],
        ],
    ),
    (
        "rtvd",
        "Table 6",
        "Fermi C2070",
        [
            [1.2277, 0.9070, 0.7900],
            [0.2983, 0.2362, 0.2106],
            [1.0950, 0.7862, 0.7397],
        ],
    ),
    (
        "tvd",
        "Table 7 (Enzo's solver as the default)",
        "Fermi C2050",
        [
            [0.7063, 0.6348, 0.4716],
            [0.3242, 0.2828, 0.1358],
            [0.6460, 0.5449, 0.4159],
        ],
    ),
];

pub(super) fn read_solver(path: &Path) -> Result<SolverTimes> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines().enumerate();
    let header: Vec<&str> = lines
        .next()
        .map(|(_, h)| h.split(',').collect())
        .unwrap_or_default();
    let find = |name: &str| header.iter().position(|h| *h == name);
    let col =
        |name: &str| find(name).with_context(|| format!("{}: no column {name:?}", path.display()));
    let (scheme, precision, patches, config, ms) = (
        col("scheme")?,
        col("precision")?,
        col("patches")?,
        col("config")?,
        col("solver_ms")?,
    );
    let hierarchy = find("hierarchy");
    let mut out = SolverTimes::default();
    for (n, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let c: Vec<&str> = line.split(',').collect();
        let at = |k: usize| {
            c.get(k)
                .copied()
                .with_context(|| format!("{}:{}: too few columns", path.display(), n + 1))
        };
        let count: usize = at(patches)?
            .parse()
            .with_context(|| format!("{}:{}: patches", path.display(), n + 1))?;
        let t: f64 = at(ms)?
            .parse()
            .with_context(|| format!("{}:{}: solver_ms", path.display(), n + 1))?;
        if !t.is_finite() {
            continue;
        }
        let key = (at(scheme)?.to_string(), at(precision)?.to_string());
        let by_config = match hierarchy.map(at).transpose()? {
            None | Some(SYNTHETIC) => out
                .synthetic
                .entry(key)
                .or_default()
                .entry(count)
                .or_default(),
            Some(trace) => {
                let entry = out
                    .traces
                    .entry(key)
                    .or_default()
                    .entry(trace.to_string())
                    .or_insert_with(|| (count, ByConfig::new()));
                &mut entry.1
            }
        };
        by_config
            .entry(at(config)?.to_string())
            .or_default()
            .push(t);
    }
    if out.synthetic.is_empty() && out.traces.is_empty() {
        bail!("{}: no solver times", path.display());
    }
    Ok(out)
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The default scheme's mean time over `config`'s.
fn ratio(configs: &ByConfig, config: &str) -> Option<f64> {
    let d = mean(configs.get("default")?);
    let c = mean(configs.get(config)?);
    (c > 0.0).then_some(d / c)
}

pub(super) fn solver_ratios(by_count: &BTreeMap<usize, ByConfig>, config: &str) -> Vec<(f64, f64)> {
    by_count
        .iter()
        .filter_map(|(&n, configs)| Some((n as f64, ratio(configs, config)?)))
        .collect()
}

/// The paper's name of the trace `stem` (`rt1_step4` is RT I).
fn paper_name(stem: &str) -> Option<&'static str> {
    TRACES.iter().find(|t| t.1 == stem).map(|t| t.0)
}

/// The paper's row of trace `stem` in `table`.
fn paper_row(table: &PaperTraceTable, stem: &str) -> Option<[f64; 3]> {
    let k = TRACES.iter().position(|t| t.1 == stem)?;
    table.3.get(k).copied()
}

/// Writes the CSV tables and charts of what `solver` holds.
pub(super) fn write_outputs(solver: &SolverTimes, out: &Path) -> Result<()> {
    if !solver.synthetic.is_empty() {
        write_synthetic(solver, &out.join("paper_solver.csv"))?;
        draw_synthetic(solver, &out.join("paper_solver.svg"))?;
    }
    if !solver.traces.is_empty() {
        write_traces(solver, &out.join("paper_solver_traces.csv"))?;
        draw_traces(solver, &out.join("paper_solver_traces.svg"))?;
    }
    Ok(())
}

fn write_synthetic(solver: &SolverTimes, out: &Path) -> Result<()> {
    let mut csv = String::from("scheme,precision,patches,packed_over_default,kopt_over_default\n");
    for ((scheme, precision), by_count) in &solver.synthetic {
        let lb = solver_ratios(by_count, "packed");
        let ko = solver_ratios(by_count, "+kopt");
        for ((n, a), (_, b)) in lb.iter().zip(&ko) {
            writeln!(csv, "{scheme},{precision},{n},{a:.4},{b:.4}")?;
        }
    }
    write_atomic(out, csv.as_bytes())
}

fn draw_synthetic(solver: &SolverTimes, out: &Path) -> Result<()> {
    let series: Vec<Series> = solver
        .synthetic
        .iter()
        .map(|((scheme, precision), by_count)| Series {
            name: format!("{} {precision}", scheme.to_uppercase()),
            points: solver_ratios(by_count, "+kopt"),
        })
        .collect();
    let x_max = solver
        .synthetic
        .values()
        .flat_map(|c| c.keys())
        .map(|&n| n as f64)
        .fold(0.0, f64::max);
    let markers: Vec<plot::Marker> = PAPER_SOLVER
        .iter()
        .enumerate()
        .map(|(k, (scheme, _, both, fig))| {
            let fig: String = fig.chars().filter(char::is_ascii_digit).take(2).collect();
            (
                format!("paper {} {both:.2} (Fig. {fig})", scheme.to_uppercase()),
                x_max * (0.3 + 0.2 * k as f64),
                *both,
            )
        })
        .collect();
    plot::line_chart(
        out,
        &LineChart {
            title: "GPU solver: quilt (LB + K-Opt) over the default scheme",
            x_label: "patches in the hierarchy",
            y_label: "default scheme time / quilt time",
            ideal: false,
            legend: Corner::UpperRight,
        },
        &series,
        &markers,
    )
}

fn write_traces(solver: &SolverTimes, out: &Path) -> Result<()> {
    let mut csv = String::from(
        "scheme,precision,trace,patches,default_ms,packed_ms,kopt_ms,packed_over_default,kopt_over_default\n",
    );
    for ((scheme, precision), by_trace) in &solver.traces {
        for (trace, (patches, configs)) in by_trace {
            let ms = |c: &str| configs.get(c).map_or(f64::NAN, |v| mean(v));
            writeln!(
                csv,
                "{scheme},{precision},{trace},{patches},{:.4},{:.4},{:.4},{:.4},{:.4}",
                ms("default"),
                ms("packed"),
                ms("+kopt"),
                ratio(configs, "packed").unwrap_or(f64::NAN),
                ratio(configs, "+kopt").unwrap_or(f64::NAN),
            )?;
        }
    }
    write_atomic(out, csv.as_bytes())
}

/// Bars per trace: quilt's LB + K-Opt speed-up of each scheme and
/// precision, then the paper's tables'.
fn draw_traces(solver: &SolverTimes, out: &Path) -> Result<()> {
    let mut names: Vec<String> = solver
        .traces
        .keys()
        .map(|(scheme, precision)| format!("quilt {} {precision}", scheme.to_uppercase()))
        .collect();
    names.extend(
        PAPER_TRACE_SOLVER
            .iter()
            .map(|t| format!("paper {} ({}, {})", t.0.to_uppercase(), t.2, short(t.1))),
    );
    let groups: Vec<BarGroup> = TRACES
        .iter()
        .map(|&(name, stem, _)| {
            let mut values: Vec<Option<f64>> = solver
                .traces
                .values()
                .map(|by_trace| by_trace.get(stem).and_then(|(_, c)| ratio(c, "+kopt")))
                .collect();
            values.extend(
                PAPER_TRACE_SOLVER
                    .iter()
                    .map(|t| paper_row(t, stem).map(|r| r[0] / r[2])),
            );
            BarGroup {
                label: name.to_string(),
                values,
            }
        })
        .collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    plot::ratio_bars(
        out,
        "GPU solver on the traces: LB + K-Opt over the default scheme",
        "default scheme time / quilt time",
        &names,
        &groups,
    )
}

/// "Table 7 (…)" → "Table 7".
fn short(table: &str) -> &str {
    table.split(" (").next().unwrap_or(table)
}

pub(super) fn section(s: &mut String, solver: Option<&SolverTimes>, out: &Path, page: &Path) {
    match solver {
        Some(solver) if !solver.synthetic.is_empty() => synthetic_section(s, solver, out, page),
        _ => s.push_str(
            "## The solver (Figures 10, 12, 15 and 16)\n\n\
             Not in this run: the `--gpu` folder holds no `gpu_bench.csv` with \
             the synthetic hierarchies.\n\n",
        ),
    }
    match solver {
        Some(solver) if !solver.traces.is_empty() => traces_section(s, solver, out, page),
        _ => s.push_str(
            "## The solver on the traces (Tables 5–7)\n\n\
             Not in this run: the `--gpu` folder's `gpu_bench.csv` has no \
             trace (`gpu_bench --traces`).\n\n",
        ),
    }
}

fn synthetic_section(s: &mut String, solver: &SolverTimes, out: &Path, page: &Path) {
    let _ = writeln!(
        s,
        "## The solver (Figures 10, 12, 15 and 16)\n\n\
         ![solver speed-ups]({})\n\n\
         `gpu_bench` on the paper's synthetic hierarchies: the GPU solver's \
         time per step (scan and sweeps of a batch resident on the device, \
         CUDA events) of the default scheme (a patch per bin, one block per \
         patch) over packed bins (load balancing, LB) and over packed bins \
         with the kernel optimisations (LB + K-Opt), means over the seeds \
         and the sizes.\n",
        link(page, &out.join("paper_solver.svg"))
    );
    s.push_str("| scheme | precision | patches | LB | LB + K-Opt |\n|---|---|---|---|---|\n");
    let avg = |v: &[(f64, f64)]| v.iter().map(|p| p.1).sum::<f64>() / v.len().max(1) as f64;
    for ((scheme, precision), by_count) in &solver.synthetic {
        let lb = solver_ratios(by_count, "packed");
        let ko = solver_ratios(by_count, "+kopt");
        let sizes: Vec<String> = by_count.keys().map(|n| n.to_string()).collect();
        let _ = writeln!(
            s,
            "| {} | {precision} | {} | {:.2}× | {:.2}× |",
            scheme.to_uppercase(),
            sizes.join(", "),
            avg(&lb),
            avg(&ko)
        );
    }
    s.push_str("\n| the paper | LB | LB + K-Opt |\n|---|---|---|\n");
    for (scheme, lb, both, fig) in PAPER_SOLVER {
        let _ = writeln!(
            s,
            "| {} {fig} | {} | {both:.2}× |",
            scheme.to_uppercase(),
            lb.map_or("—".to_string(), |v| format!("{v:.2}×"))
        );
    }
    let _ = writeln!(
        s,
        "\nCSV: `{}`.\n",
        link(page, &out.join("paper_solver.csv"))
    );
}

fn traces_section(s: &mut String, solver: &SolverTimes, out: &Path, page: &Path) {
    let _ = writeln!(
        s,
        "## The solver on the traces (Tables 5–7)\n\n\
         ![solver speed-ups on the traces]({})\n\n\
         `gpu_bench --traces` on the hierarchies RT I–III, each filled with \
         `gpu_bench`'s smooth synthetic state: the GPU solver's time per step \
         as above. The RTVD traces are `examples/traces/`; TVD needs four \
         ghost layers, which make the RTVD traces' largest patches wider \
         than a 64³ bin, so its traces come from the same run with the TVD \
         scheme (`examples/decks/sphere_traces_tvd.toml`, \
         `examples/traces/tvd/`). The paper's solver times are seconds over \
         its run, quilt's milliseconds per step: only the ratios compare.\n",
        link(page, &out.join("paper_solver_traces.svg"))
    );
    s.push_str(
        "| trace | scheme | precision | patches | default / LB / LB + K-Opt ms | LB | LB + K-Opt | the paper's LB / LB + K-Opt |\n\
         |---|---|---|---|---|---|---|---|\n",
    );
    for ((scheme, precision), by_trace) in &solver.traces {
        for (stem, (patches, configs)) in by_trace {
            let ms = |c: &str| {
                configs
                    .get(c)
                    .map_or("—".to_string(), |v| format!("{:.3}", mean(v)))
            };
            let x = |c: &str| ratio(configs, c).map_or("—".to_string(), |r| format!("{r:.2}×"));
            let paper: Vec<String> = PAPER_TRACE_SOLVER
                .iter()
                .filter(|t| t.0 == scheme)
                .filter_map(|t| {
                    let r = paper_row(t, stem)?;
                    Some(format!(
                        "{:.2}× / {:.2}× ({})",
                        r[0] / r[1],
                        r[0] / r[2],
                        short(t.1)
                    ))
                })
                .collect();
            let _ = writeln!(
                s,
                "| {} (`{stem}`) | {} | {precision} | {patches} | {} / {} / {} | {} | {} | {} |",
                paper_name(stem).unwrap_or(stem),
                scheme.to_uppercase(),
                ms("default"),
                ms("packed"),
                ms("+kopt"),
                x("packed"),
                x("+kopt"),
                if paper.is_empty() {
                    "—".to_string()
                } else {
                    paper.join("; ")
                }
            );
        }
    }
    s.push_str("\nThe paper's tables: ");
    let tables: Vec<String> = PAPER_TRACE_SOLVER
        .iter()
        .map(|t| format!("{} {} on the {}", t.1, t.0.to_uppercase(), t.2))
        .collect();
    let _ = writeln!(
        s,
        "{}. CSV: `{}`.\n",
        tables.join("; "),
        link(page, &out.join("paper_solver_traces.csv"))
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn solver_tables_give_ratios_over_the_default_scheme() {
        let dir = std::env::temp_dir().join(format!("xtask-solver-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gpu_bench.csv");
        std::fs::write(
            &path,
            "scheme,precision,patches,seed,config,solver_ms,scan_ms\n\
             rtvd,f32,120,1,default,4.0,0\n\
             rtvd,f32,120,2,default,2.0,0\n\
             rtvd,f32,120,1,packed,2.0,0\n\
             rtvd,f32,120,2,packed,1.0,0\n\
             rtvd,f32,120,1,+kopt,1.0,0\n\
             rtvd,f32,120,2,+kopt,NaN,0\n",
        )
        .unwrap();
        let t = read_solver(&path).unwrap();
        let by = &t.synthetic[&("rtvd".to_string(), "f32".to_string())];
        assert_eq!(solver_ratios(by, "packed"), vec![(120.0, 2.0)]);
        assert_eq!(solver_ratios(by, "+kopt"), vec![(120.0, 3.0)]);
        assert!(t.traces.is_empty());
        std::fs::write(&path, "scheme,precision\nrtvd,f32\n").unwrap();
        let e = read_solver(&path).unwrap_err().to_string();
        assert!(e.contains("no column \"patches\""), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn trace_lines_are_kept_apart_and_set_against_the_papers_tables() {
        let dir = std::env::temp_dir().join(format!("xtask-traces-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gpu_bench.csv");
        std::fs::write(
            &path,
            "scheme,precision,patches,seed,config,solver_ms,scan_ms,hierarchy\n\
             rtvd,f64,120,1,default,4.0,0,synthetic\n\
             rtvd,f64,120,1,+kopt,2.0,0,synthetic\n\
             tvd,f64,1365,0,default,9.0,0,rt1_step4\n\
             tvd,f64,1365,0,packed,6.0,0,rt1_step4\n\
             tvd,f64,1365,0,+kopt,3.0,0,rt1_step4\n",
        )
        .unwrap();
        let t = read_solver(&path).unwrap();
        assert_eq!(t.synthetic.len(), 1);
        let (patches, c) = &t.traces[&("tvd".to_string(), "f64".to_string())]["rt1_step4"];
        assert_eq!(*patches, 1365);
        assert_eq!(ratio(c, "packed"), Some(1.5));
        assert_eq!(ratio(c, "+kopt"), Some(3.0));
        let mut s = String::new();
        traces_section(&mut s, &t, Path::new("figures"), Path::new("page.md"));
        // Table 7's RT I: 0.7063 / 0.6348 and 0.7063 / 0.4716.
        assert!(
            s.contains("| RT I (`rt1_step4`) | TVD | f64 | 1365 | 9.000 / 6.000 / 3.000 | 1.50× | 3.00× | 1.11× / 1.50× (Table 7) |"),
            "{s}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
