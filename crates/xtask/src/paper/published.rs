//! Cell updates per second per GPU that other GPU codes have published,
//! beside quilt's own on the large sphere: not the founding paper's
//! comparison, but the one a user choosing a code makes.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::Result;

use super::{Results, link};
use crate::plot::{self, RankedBar};

/// One published figure.
struct Published {
    /// Short label of the chart.
    label: &'static str,
    /// Code, device, problem and grid, for the table.
    what: &'static str,
    /// Cell (zone) updates per second per GPU; `derived` when it is an
    /// aggregate divided by the GPU count, not a number the source states.
    rate: f64,
    derived: bool,
    /// Where it is stated.
    source: &'static str,
}

/// Every figure was read in its source; none off a plot.
const PUBLISHED: [Published; 9] = [
    Published {
        label: "AthenaK Grace Hopper",
        what: "AthenaK, one NVIDIA Grace Hopper, 3D hydrodynamics (\"over one billion cell updates per second\")",
        rate: 1.0e9,
        derived: false,
        source: "[Stone et al. 2024](https://arxiv.org/abs/2409.16053), abstract",
    },
    Published {
        label: "Quokka A100",
        what: "Quokka, one A100, Sedov blast, PPM hydrodynamics, uniform 256³ grid",
        rate: 2.54e8,
        derived: false,
        source: "[Wibking & Krumholz 2022](https://arxiv.org/abs/2110.01792), the A100 table (`paper/performance_a100.csv` of the Quokka repository)",
    },
    Published {
        label: "Parthenon MI250X (derived)",
        what: "Parthenon's hydrodynamics miniapp on Frontier: 1.7e13 zone-cycles/s on 73,728 logical GPUs (MI250X GCDs), weak scaling",
        rate: 1.7e13 / 73_728.0,
        derived: true,
        source: "[Grete et al. 2023](https://arxiv.org/abs/2202.12309), abstract",
    },
    Published {
        label: "Quokka V100",
        what: "Quokka, one V100, Sedov blast, PPM hydrodynamics, uniform 256³ grid in 128³ boxes",
        rate: 1.13e8,
        derived: false,
        source: "[Wibking & Krumholz 2022](https://arxiv.org/abs/2110.01792), section on hydrodynamic weak scaling",
    },
    Published {
        label: "K-Athena V100",
        what: "K-Athena, one V100, second-order MHD in double precision, uniform grid (\">10⁸ cell-updates/s\")",
        rate: 1.0e8,
        derived: false,
        source: "[Grete, Glines & O'Shea 2021](https://arxiv.org/abs/1905.04341), abstract",
    },
    Published {
        label: "Parthenon V100 AMR 32³",
        what: "Parthenon (a 2020 development version), a benchmark with AMR on one V100, 32³ blocks",
        rate: 1.0e8,
        derived: false,
        source: "developers' figures in [parthenon pull request 359](https://github.com/parthenon-hpc-lab/parthenon/pull/359), not a paper",
    },
    Published {
        label: "Parthenon V100 AMR 16³",
        what: "the same with 16³ blocks, cycles without load balancing (4.5e6 with it)",
        rate: 2.6e7,
        derived: false,
        source: "the same pull request",
    },
    Published {
        label: "GAMER K20/K40",
        what: "GAMER, \"typical performance per GPU\" on Tesla K20 or K40 (\"P100 can be a factor of 2 faster\"); the upper end of 1e7–2e7",
        rate: 2.0e7,
        derived: false,
        source: "GAMER's documentation, `doc/wiki/Simulation-Logs-related/Simulation-Logs:-Record__Performance.md` of gamer-project/gamer; the GAMER-2 paper ([Schive et al. 2018](https://arxiv.org/abs/1712.07070)) compares codes, not per-GPU rates, in its abstract",
    },
    Published {
        label: "Quokka V100 AMR rad-hydro",
        what: "Quokka, radiation hydrodynamics with two AMR levels on 4 V100s, per GPU (\"lower than that of a uniform grid simulation by ≈ 50 per cent\": 10.32 uniform)",
        rate: 4.89e6,
        derived: false,
        source: "[Wibking & Krumholz 2022](https://arxiv.org/abs/2110.01792), strong scaling table",
    },
];

/// quilt's rows: deck, configuration, label.
const OURS: [(&str, &str, &str); 4] = [
    ("sphere_large_f32", "cuda-resident", "quilt resident f32"),
    ("sphere_large", "cuda-resident", "quilt resident f64"),
    ("sphere_large_f32", "cuda-adaptive", "quilt host-staged f32"),
    ("sphere_large", "cuda-adaptive", "quilt host-staged f64"),
];

/// quilt's measured rates in `gpu`: label, device, rate.
fn ours(gpu: &Results) -> Vec<(&'static str, String, f64)> {
    OURS.iter()
        .filter_map(|&(deck, config, label)| {
            let r = gpu.get(deck)?.get(config)?;
            // "NVIDIA H200 (device 0, sm_90, …)": the name.
            let device = r.device.split(" (").next().unwrap_or(&r.device);
            Some((label, device.to_string(), r.rate()?))
        })
        .collect()
}

/// The chart, in million cell updates per second per GPU, fastest first.
pub(super) fn draw(gpu: &Results, out: &Path) -> Result<()> {
    let mut bars: Vec<RankedBar> = ours(gpu)
        .into_iter()
        .map(|(label, _, rate)| RankedBar {
            label: label.to_string(),
            value: rate / 1e6,
            series: 0,
        })
        .collect();
    bars.extend(PUBLISHED.iter().map(|p| RankedBar {
        label: p.label.to_string(),
        value: p.rate / 1e6,
        series: 1,
    }));
    bars.sort_by(|a, b| b.value.total_cmp(&a.value));
    plot::ranked_bars(
        out,
        "Cell updates per second per GPU",
        "million cell updates/s per GPU (log scale)",
        &[
            "quilt: large sphere, 5 AMR levels, H200",
            "published (see the table)",
        ],
        &bars,
    )
}

pub(super) fn section(s: &mut String, gpu: Option<&Results>, out: &Path, page: &Path) {
    s.push_str("## Against other GPU codes: published cell updates per second\n\n");
    let Some(gpu) = gpu.filter(|g| !ours(g).is_empty()) else {
        s.push_str(
            "Not in this run: the `--gpu` folder has no run of the large sphere on the GPU.\n\n",
        );
        return;
    };
    let _ = writeln!(
        s,
        "![cell updates per second per GPU]({})\n\n\
         Beyond the paper: quilt's rate on the large sphere (five AMR levels, \
         RTVD, medians above) beside what other GPU codes have published \
         per GPU. These are different problems, schemes (PPM and MHD do more \
         work per cell than RTVD), precisions and GPU generations, so the \
         table places quilt among them and ranks nothing. Most published \
         figures are for uniform grids; the AMR ones show what small blocks \
         cost elsewhere.\n",
        link(page, &out.join("paper_published.svg"))
    );
    s.push_str("| code and run | cell updates/s per GPU | source |\n|---|---|---|\n");
    for (label, device, rate) in ours(gpu) {
        let _ = writeln!(
            s,
            "| {label}: large sphere, 5 AMR levels, {device} | {rate:.3e} | this suite |"
        );
    }
    for p in &PUBLISHED {
        let _ = writeln!(
            s,
            "| {} | {}{:.2e} | {} |",
            p.what,
            if p.derived { "≈ " } else { "" },
            p.rate,
            if p.derived {
                format!("{} (the total divided by the GPUs here)", p.source)
            } else {
                p.source.to_string()
            }
        );
    }
    s.push('\n');
}
