//! The water shock tube of a stiffened gas on quilt's AMR hierarchy,
//! against its exact solution.
//!
//! ```text
//! cargo run --release -p stiffened-gas -- [--levels N] [--steps N]
//! ```

use anyhow::Result;
use clap::Parser;
use quilt::sweep::physics::Gas;
use stiffened_gas::{StiffenedGas, run, water_tube};

/// Command line.
#[derive(Parser, Debug)]
#[command(about = "A stiffened-gas (water) shock tube against its exact solution")]
struct Args {
    /// Levels of the hierarchy (1 to 5).
    #[arg(long, default_value_t = 3)]
    levels: usize,
    /// Stop after this many steps (default: at the end time).
    #[arg(long)]
    steps: Option<u64>,
    /// The stiffening pressure (default: water's).
    #[arg(long, default_value_t = StiffenedGas::WATER.p_inf)]
    p_inf: f64,
}

fn main() -> Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    let water = StiffenedGas {
        p_inf: args.p_inf,
        ..StiffenedGas::WATER
    };
    let o = run(
        water_tube(Gas::new(water), args.levels),
        args.steps,
        (water.gamma, water.p_inf),
    )?;
    log::info!(
        "water shock tube: {} steps to t = {:.4e} s, {} levels; L1 error of the density {:.3e}, of the pressure {:.3e}; mass change {:.1e}",
        o.steps,
        o.time,
        o.levels,
        o.l1_density,
        o.l1_pressure,
        o.mass_drift
    );
    Ok(())
}
