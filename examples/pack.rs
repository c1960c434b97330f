//! Packs items from a CSV file into bins with quilt's extreme-point
//! heuristics and prints the packing as JSON.
//!
//! ```text
//! cargo run --release --example pack -- --bin 64,64,64 --items patches.csv \
//!     [--heuristic ep-bfd|ep-ffd|c-epbfd] [--merit rs|fv] [--sort NAME] [--rotate] \
//!     [--orders NAME,NAME,... | --deltas D,D,...]
//! ```
//!
//! The items file holds one `w,h,d` line per item (a header line naming the
//! columns, blank lines and `#` comments are allowed); an error in it is
//! reported as `FILE:LINE:COLUMN: ...`. Output:
//! `{"bins": N, "efficiency": E, "lower_bound": L, "placements": [{"item": i, "bin": b, "x": X, "y": Y, "z": Z}]}`
//! with items numbered from 0 in file order (`w`, `h`, `d` of the placed
//! extent are added with `--rotate`).

use std::path::PathBuf;

use anyhow::{Context, Result, anyhow};
use clap::{Parser, value_parser};
use quilt::pack::{
    Extent, Heuristic, Merit, PackOptions, ParseOptionError, SortOrder, pack, parse_extent,
    parse_items,
};
use serde_json::json;

/// The numeric options take values starting with `-` (`--bin -1,64,64`),
/// so that such a value is reported as invalid for its option instead of as
/// an unknown argument.
#[derive(Debug, Parser)]
#[command(about = "Pack 3D items into bins (extreme-point heuristics); prints JSON")]
struct Args {
    /// Bin extent `W,H,D` in cells.
    #[arg(long, value_parser = parse_bin, allow_hyphen_values = true)]
    bin: Extent,
    /// Items file: one `w,h,d` line per item.
    #[arg(long)]
    items: PathBuf,
    /// ep-bfd, ep-ffd or c-epbfd.
    #[arg(long, default_value = "ep-bfd")]
    heuristic: Heuristic,
    /// rs (residual space) or fv (free volume).
    #[arg(long, default_value = "rs")]
    merit: Merit,
    /// volume-height, height-volume, area-height, height-area,
    /// clustered-area-height:DELTA or clustered-height-area:DELTA.
    #[arg(long, default_value = "volume-height", value_parser = parse_sort)]
    sort: SortOrder,
    /// Allow items to be turned (off: patches keep their axes).
    #[arg(long)]
    rotate: bool,
    /// Orderings C-EPBFD tries after --sort, comma-separated (default: the
    /// long-side-first orderings cha:51,cwa:51,cda:51).
    #[arg(long, value_delimiter = ',', value_parser = parse_sort)]
    orders: Option<Vec<SortOrder>>,
    /// Run C-EPBFD over the paper's orderings with these cluster widths
    /// (percent, comma-separated) instead of --orders.
    #[arg(long, value_delimiter = ',', conflicts_with = "orders",
          value_parser = value_parser!(u32).range(CLUSTER_WIDTHS), allow_hyphen_values = true)]
    deltas: Option<Vec<u32>>,
}

/// Cluster widths (percent) the clustered orderings accept; checked here so
/// that a bad one is blamed on its option rather than found by `pack`.
const CLUSTER_WIDTHS: std::ops::RangeInclusive<i64> = 1..=100;

fn parse_bin(text: &str) -> Result<Extent, String> {
    parse_extent(text).map_err(|e| e.to_string())
}

fn parse_sort(text: &str) -> Result<SortOrder, String> {
    let order: SortOrder = text.parse().map_err(|e: ParseOptionError| e.to_string())?;
    match order.delta_percent() {
        Some(d) if !CLUSTER_WIDTHS.contains(&i64::from(d)) => Err(format!(
            "cluster width {d} % is outside {}..={}",
            CLUSTER_WIDTHS.start(),
            CLUSTER_WIDTHS.end()
        )),
        _ => Ok(order),
    }
}

fn main() -> std::process::ExitCode {
    quilt::integrator::cli::exit_status(run_main().map(|()| std::process::ExitCode::SUCCESS))
}

fn run_main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    let text = std::fs::read_to_string(&args.items)
        .with_context(|| format!("cannot read items file {}", args.items.display()))?;
    let items = parse_items(&text).map_err(|e| {
        anyhow!(
            "{}:{}:{}: {e}",
            args.items.display(),
            e.line(),
            e.column(&text)
        )
    })?;
    let mut opts = PackOptions {
        heuristic: args.heuristic,
        merit: args.merit,
        sort: args.sort,
        allow_rotation: args.rotate,
        ..Default::default()
    };
    if let Some(orders) = args.orders {
        opts.orders = orders;
    }
    if let Some(deltas) = args.deltas {
        opts.orders = SortOrder::paper_orders(&deltas);
    }
    let packing = pack(&items, args.bin, &opts)
        .with_context(|| format!("cannot pack the items of {}", args.items.display()))?;
    let placements: Vec<_> = packing
        .placements
        .iter()
        .map(|p| {
            let mut v = json!({
                "item": p.item,
                "bin": p.bin,
                "x": p.offset[0],
                "y": p.offset[1],
                "z": p.offset[2],
            });
            if args.rotate {
                v["w"] = json!(p.extent[0]);
                v["h"] = json!(p.extent[1]);
                v["d"] = json!(p.extent[2]);
            }
            v
        })
        .collect();
    let out = json!({
        "bins": packing.bins_used,
        "efficiency": packing.efficiency(),
        "lower_bound": packing.lower_bound(),
        "placements": placements,
    });
    println!("{}", serde_json::to_string(&out)?);
    Ok(())
}
