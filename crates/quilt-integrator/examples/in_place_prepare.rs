//! Prepare of patches solved in place, on the CPU: the large sphere (or
//! any deck) run with a backend that offers a page lock which locks
//! nothing, so that every state comes from the integrator's arena and
//! every patch's old ghosts are filled in place, as on a GPU node; the
//! solve is the CPU backend's. Prints the prepare tasks' core-seconds per
//! step, the figure that bounds the host-staged pipeline when the GPU
//! waits for the CPU, and the CPU-only phases outside the batch loop (CFL
//! scan, reflux and restriction, regrid); run it under a profiler to see
//! where they go.
//!
//! With `--backend-probes` after the step count the backend fills the
//! probes of patches solved in place
//! ([`quilt_integrator::SolveBackend::fills_probes`]),
//! so that prepare copies none; with `--backend-restricts` it also fills
//! the finest level's restriction outputs
//! ([`quilt_integrator::SolveBackend::fills_restricted`]), as the CUDA
//! backend does.
//!
//! ```text
//! cargo run --release -p quilt-integrator --example in_place_prepare -- \
//!     examples/decks/sphere_large.toml 3 [--backend-probes] [--backend-restricts]
//! ```

use std::error::Error;
use std::path::PathBuf;

use quilt_integrator::deck::Deck;
use quilt_integrator::{CpuBackend, Integrator};

#[path = "../tests/in_place_cpu/mod.rs"]
mod in_place_cpu;

use in_place_cpu::InPlace;

fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let path = PathBuf::from(
        args.next()
            .unwrap_or("examples/decks/sphere_large.toml".into()),
    );
    let steps: usize = args.next().map_or(Ok(3), |s| s.parse())?;
    let deck = Deck::from_file(&path)?;
    let flags: Vec<String> = args.collect();
    let probes = flags.iter().any(|a| a == "--backend-probes");
    let mut backend = InPlace::new(CpuBackend::new(deck.solver()?), false, probes);
    backend.fills_restricted = flags.iter().any(|a| a == "--backend-restricts");
    let mut it = Integrator::new(&deck, backend)?;
    for s in 0..steps {
        let info = it.step()?;
        let p = &info.phases;
        println!(
            "step {s}: prepare tasks {:.3} core-s, prepare wall {:.3} s, solve {:.3} s, close tasks {:.3} core-s, loop {:.3} s; CFL scan {:.3} s, reflux + restriction {:.3} s, regrid {:.3} s ({})",
            p.prepare_tasks,
            p.prepare,
            p.solve,
            p.close_tasks,
            p.batch_loop,
            p.other,
            p.reflux_restrict,
            p.regrid,
            if info.regridded {
                "regridded"
            } else {
                "no regrid"
            }
        );
    }
    Ok(())
}
