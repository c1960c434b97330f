//! Planar Riemann problem on [0, 1] along one axis of a 3D domain whose
//! patches are bin-packed into a batch and advanced by a quilt-sweep scheme.
//!
//! ```text
//! cargo run --release --example riemann -- --scheme rtvd --left 1,0,1 --right 0.125,0,0.1 \
//!     --x0 0.5 --t-end 0.2 --cells 400 --gamma 1.4 --axis x --out sod.csv [--exact sod_exact.csv]
//! ```
//!
//! Writes `x,rho,u,p` per cell centre along the line; with `--exact`, the
//! exact solution at the same points, and prints L1 errors.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Parser, ValueEnum, value_parser};
use quilt::sweep::exact::{ExactRiemann, State1d};
use quilt::sweep::physics::{Gas, Primitive};
use quilt::sweep::uniform::{Boundary, UniformGrid, even_cuts};
use quilt::sweep::{Real, Scheme, Solver, Workspace};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Axis {
    X,
    Y,
    Z,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Precision {
    F32,
    F64,
}

/// Runs a planar Riemann problem through bin-packed patches.
///
/// Numeric options take values that start with `-`, so that a negative or
/// infinite value is reported as an invalid value of its option: floats
/// through `allow_hyphen_values` (`-inf` and `-1e-3` are not numbers to
/// clap's lexer), integers through `allow_negative_numbers`.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Args {
    /// Scheme: rtvd, tvd or waf.
    #[arg(long, default_value = "rtvd")]
    scheme: String,
    /// Left state RHO,U,P.
    #[arg(long, value_parser = parse_state, allow_hyphen_values = true)]
    left: State1d,
    /// Right state RHO,U,P.
    #[arg(long, value_parser = parse_state, allow_hyphen_values = true)]
    right: State1d,
    /// Initial discontinuity position, strictly inside the domain (0, 1).
    #[arg(long, default_value_t = 0.5, value_parser = parse_x0, allow_hyphen_values = true)]
    x0: f64,
    /// End time.
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    t_end: f64,
    /// Cells along the problem axis.
    #[arg(long, default_value_t = 400, value_parser = value_parser!(u32).range(2..),
          allow_negative_numbers = true)]
    cells: u32,
    /// Adiabatic index.
    #[arg(long, default_value_t = 1.4, value_parser = parse_gamma, allow_hyphen_values = true)]
    gamma: f64,
    /// Axis of the problem.
    #[arg(long, value_enum, default_value = "x")]
    axis: Axis,
    /// CFL number (default 0.8 x the scheme's limit).
    #[arg(long, value_parser = parse_positive, allow_hyphen_values = true)]
    cfl: Option<f64>,
    /// Limiter (RTVD: vanleer|minmod; TVD: mc|minmod; WAF: vanleer|superbee|vanalbada|minbee).
    #[arg(long)]
    limiter: Option<String>,
    /// Working precision.
    #[arg(long, value_enum, default_value = "f64")]
    precision: Precision,
    /// Output CSV (`x,rho,u,p`).
    #[arg(long)]
    out: PathBuf,
    /// Optional CSV of the exact solution at the same points.
    #[arg(long)]
    exact: Option<PathBuf>,
}

/// The domain along the problem axis, `[0, 1]`: cells of size `1 / cells`
/// centred at `(i + 1/2) / cells`.
const DOMAIN: (f64, f64) = (0.0, 1.0);

/// Most interior cells per patch along the problem axis.
const PATCH_CELLS: u32 = 48;
/// Interior cells of every patch across the problem axis.
const PATCH_WIDTH: u32 = 2;
/// Edge of the cubic bins the patches, with their ghosts, are packed into.
const BIN_EDGE: u32 = 64;

fn parse_finite(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|e| format!("`{s}` is not a number: {e}"))?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(format!("must be finite, got {v}"))
    }
}

fn parse_above(s: &str, min: f64) -> Result<f64, String> {
    let v = parse_finite(s)?;
    if v > min {
        Ok(v)
    } else {
        Err(format!("must be > {min}, got {v}"))
    }
}

fn parse_positive(s: &str) -> Result<f64, String> {
    parse_above(s, 0.0)
}

fn parse_gamma(s: &str) -> Result<f64, String> {
    parse_above(s, 1.0)
}

/// An interface on or beyond a boundary leaves a single state in the
/// domain: the run would be a uniform flow that compares nothing.
fn parse_x0(s: &str) -> Result<f64, String> {
    let v = parse_finite(s)?;
    let (lo, hi) = DOMAIN;
    if lo < v && v < hi {
        Ok(v)
    } else {
        Err(format!(
            "{v} is not strictly inside the domain ({lo}, {hi}): the interface would leave one state only"
        ))
    }
}

fn parse_state(s: &str) -> Result<State1d, String> {
    let v: Vec<f64> = s
        .split(',')
        .map(|t| t.trim().parse::<f64>().map_err(|e| format!("`{t}`: {e}")))
        .collect::<Result<_, _>>()?;
    let [rho, u, p] = v[..] else {
        return Err(format!("expected RHO,U,P (three numbers), got `{s}`"));
    };
    if !(rho.is_finite() && rho > 0.0) {
        return Err(format!("density {rho} must be finite and > 0"));
    }
    if !u.is_finite() {
        return Err(format!("velocity {u} must be finite"));
    }
    if !(p.is_finite() && p > 0.0) {
        return Err(format!("pressure {p} must be finite and > 0"));
    }
    Ok(State1d::new(rho, u, p))
}

/// Bytes a run of `cells` cells holds at once, from the same tiling and
/// packing `run` does: the packed batch (with the two stage copies of the
/// unsplit TVD scheme), the face fluxes, the grid state and the output rows.
/// The packer fills each bin as a grid of identical patches does (checked
/// against its bin counts for all three schemes), so this is computed
/// without building the tiles, which for the sizes it refuses would
/// themselves not fit.
fn run_bytes(cells: u32, ghost: u32, scheme: Scheme, real_bytes: u64) -> u64 {
    let ncomp = 5u64;
    let tiles = u64::from(cells.div_ceil(PATCH_CELLS));
    let longest = u64::from(cells).div_ceil(tiles);
    let g = u64::from(ghost);
    let extent = [
        longest + 2 * g,
        u64::from(PATCH_WIDTH) + 2 * g,
        u64::from(PATCH_WIDTH) + 2 * g,
    ];
    let edge = u64::from(BIN_EDGE);
    let per_bin = extent.iter().map(|e| edge / e).product::<u64>().max(1);
    let bins = tiles.div_ceil(per_bin);
    let copies = if matches!(scheme, Scheme::Tvd { .. }) {
        3
    } else {
        1
    };
    let batch = copies * bins * ncomp * edge.pow(3);
    let w = u64::from(PATCH_WIDTH);
    let flux = tiles * ncomp * 2 * (w * w + 2 * w * longest);
    let grid = u64::from(cells) * w * w * ncomp;
    // Rows of the solution and of the exact solution: [f64; 4] each.
    let rows = 2 * 32 * u64::from(cells);
    (batch + flux + grid) * real_bytes + rows
}

fn write_csv(path: &PathBuf, rows: &[[f64; 4]]) -> Result<()> {
    let file = File::create(path).with_context(|| format!("creating {}", path.display()))?;
    let mut w = BufWriter::new(file);
    writeln!(w, "x,rho,u,p")?;
    for r in rows {
        writeln!(w, "{},{},{},{}", r[0], r[1], r[2], r[3])?;
    }
    w.flush()?;
    Ok(())
}

fn run<T: Real>(args: &Args, solver: &Solver, cfl: f64) -> Result<Vec<[f64; 4]>> {
    let axis = args.axis as usize;
    let gas = solver.gas();
    let g = solver.ghost_width();
    let need = run_bytes(args.cells, g, solver.scheme(), size_of::<T>() as u64);
    quilt::mesh::memory::check_fits(
        need,
        &format!(
            "--cells {} ({} {})",
            args.cells,
            solver.scheme().name(),
            T::NAME
        ),
    )?;
    let mut cells = [PATCH_WIDTH; 3];
    cells[axis] = args.cells;
    let dx = [1.0 / f64::from(args.cells); 3];
    let mut cuts: [Vec<u32>; 3] = std::array::from_fn(|_| vec![PATCH_WIDTH]);
    cuts[axis] = even_cuts(args.cells, PATCH_CELLS);
    let mut bc = [Boundary::Periodic; 3];
    bc[axis] = Boundary::Outflow;
    let mut grid = UniformGrid::<T>::new(cells, dx, bc, g, cuts)?;
    let (l, r, x0) = (args.left, args.right, args.x0);
    grid.init(|_, x| {
        let s = if x[axis] < x0 { l } else { r };
        let mut vel = [0.0; 3];
        vel[axis] = s.u;
        Primitive {
            rho: s.rho,
            vel,
            p: s.p,
        }
        .to_conserved(&gas)
    });
    let shapes = grid.shapes();
    let items: Vec<[u32; 3]> = shapes.iter().map(|s| s.extent).collect();
    let packing = quilt::pack::pack(&items, [BIN_EDGE; 3], &quilt::pack::PackOptions::default())?;
    let placements: Vec<(u32, [u32; 3])> = packing
        .placements
        .iter()
        .map(|p| (p.bin as u32, p.offset))
        .collect();
    let mut batch = grid.packed_batch(BIN_EDGE, &placements)?;
    println!(
        "{} patches in {} bins of {BIN_EDGE}^3 (fill {:.1}%), {} ghost cells, {}",
        shapes.len(),
        batch.layout().nbins(),
        100.0 * batch.layout().fill_ratio(),
        g,
        T::NAME
    );
    let mut ws = Workspace::new();
    let start = Instant::now();
    let sum = grid.run(solver, &mut batch, &mut ws, args.t_end, cfl)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{} steps to t = {}, {:.3} s, {:.3e} cell updates/s, floors used {} times",
        sum.steps,
        sum.time,
        secs,
        sum.cell_updates as f64 / secs,
        sum.floors.total()
    );
    let mut rows = Vec::with_capacity(args.cells as usize);
    for i in 0..args.cells {
        let mut c = [0; 3];
        c[axis] = i;
        let u = grid.get(c).context("line cell")?.map(|v| v.as_f64());
        let w = Primitive::from_conserved(&u, &gas);
        rows.push([dx[axis] * (f64::from(i) + 0.5), w.rho, w.vel[axis], w.p]);
    }
    Ok(rows)
}

fn main() -> std::process::ExitCode {
    quilt::integrator::cli::exit_status(run_main().map(|()| std::process::ExitCode::SUCCESS))
}

fn run_main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    let scheme = Scheme::from_names(&args.scheme, args.limiter.as_deref()).map_err(|e| {
        let option = if Scheme::from_names(&args.scheme, None).is_err() {
            "--scheme"
        } else {
            "--limiter"
        };
        anyhow!("{option}: {e}")
    })?;
    let solver = Solver::new(scheme, Gas::ideal(args.gamma))?;
    let cfl = args.cfl.unwrap_or(0.8 * scheme.cfl_limit());
    if !(cfl > 0.0 && cfl <= scheme.cfl_limit()) {
        bail!(
            "--cfl {cfl} must lie in (0, {}] for {}",
            scheme.cfl_limit(),
            scheme.name()
        );
    }
    // States that generate vacuum have no exact solution here; the scheme
    // still runs (its floors are counted), only the comparison is skipped.
    let exact = match ExactRiemann::new(args.left, args.right, args.gamma) {
        Ok(e) => Some(e),
        Err(e @ quilt::sweep::exact::ExactError::Vacuum { .. }) => {
            println!("no exact solution: {e}");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let rows = match args.precision {
        Precision::F32 => run::<f32>(&args, &solver, cfl)?,
        Precision::F64 => run::<f64>(&args, &solver, cfl)?,
    };
    write_csv(&args.out, &rows)?;
    println!("wrote {}", args.out.display());
    let Some(exact) = exact else {
        return Ok(());
    };
    let h = 1.0 / f64::from(args.cells);
    let mut l1 = [0.0; 3];
    let mut ex = Vec::with_capacity(rows.len());
    for r in &rows {
        let s = exact.cell_average(r[0] - 0.5 * h, r[0] + 0.5 * h, args.x0, args.t_end, 16);
        l1[0] += (r[1] - s.rho).abs() * h;
        l1[1] += (r[2] - s.u).abs() * h;
        l1[2] += (r[3] - s.p).abs() * h;
        ex.push([r[0], s.rho, s.u, s.p]);
    }
    println!(
        "L1 errors vs exact cell averages: rho {:.5e}, u {:.5e}, p {:.5e}",
        l1[0], l1[1], l1[2]
    );
    if let Some(path) = &args.exact {
        write_csv(path, &ex)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
