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

use anyhow::{Context, Result, bail};
use clap::{Parser, ValueEnum};
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
    /// Initial discontinuity position in [0, 1].
    #[arg(long, default_value_t = 0.5)]
    x0: f64,
    /// End time.
    #[arg(long)]
    t_end: f64,
    /// Cells along the problem axis.
    #[arg(long, default_value_t = 400)]
    cells: u32,
    /// Adiabatic index.
    #[arg(long, default_value_t = 1.4)]
    gamma: f64,
    /// Axis of the problem.
    #[arg(long, value_enum, default_value = "x")]
    axis: Axis,
    /// CFL number (default 0.8 x the scheme's limit).
    #[arg(long)]
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

fn parse_state(s: &str) -> Result<State1d, String> {
    let v: Vec<f64> = s
        .split(',')
        .map(|t| t.trim().parse::<f64>().map_err(|e| format!("`{t}`: {e}")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [rho, u, p] => Ok(State1d::new(rho, u, p)),
        _ => Err(format!("expected RHO,U,P (three numbers), got `{s}`")),
    }
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
    // The line is cut into patches of at most 48 interior cells, two cells
    // wide across; every patch with its ghosts is bin-packed into 64^3 bins.
    let trans = 2;
    let mut cells = [trans; 3];
    cells[axis] = args.cells;
    let dx = [1.0 / f64::from(args.cells); 3];
    let mut cuts: [Vec<u32>; 3] = std::array::from_fn(|_| vec![trans]);
    cuts[axis] = even_cuts(args.cells, 48);
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
    let packing = quilt::pack::pack(&items, [64; 3], &quilt::pack::PackOptions::default())?;
    let placements: Vec<(u32, [u32; 3])> = packing
        .placements
        .iter()
        .map(|p| (p.bin as u32, p.offset))
        .collect();
    let mut batch = grid.packed_batch(64, &placements)?;
    println!(
        "{} patches in {} bins of 64^3 (fill {:.1}%), {} ghost cells, {}",
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

fn main() -> Result<()> {
    env_logger::init();
    let args = Args::parse();
    if !(args.x0.is_finite() && (0.0..=1.0).contains(&args.x0)) {
        bail!("--x0 {} must lie in [0, 1]", args.x0);
    }
    if !(args.t_end.is_finite() && args.t_end > 0.0) {
        bail!("--t-end {} must be finite and > 0", args.t_end);
    }
    if args.cells < 2 {
        bail!("--cells {} must be at least 2", args.cells);
    }
    let scheme = Scheme::from_names(&args.scheme, args.limiter.as_deref())?;
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
