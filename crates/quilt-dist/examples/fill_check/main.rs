//! Checks that a ghost fill spread over ranks is bitwise the serial fill.
//!
//! With the `mpi` feature it runs on the ranks of `mpirun`:
//!
//! ```text
//! cargo build --release -p quilt-dist --features mpi --example fill_check
//! mpirun -np 3 target/release/examples/fill_check
//! ```
//!
//! Without it, `fill_check [RANKS]` runs that many in-process ranks. Rank 0
//! prints one line per precision; the exit status is non-zero on any
//! difference.

mod check;

use std::process::ExitCode;

use quilt_dist::Transport;

fn both(t: &mut impl Transport) -> Result<String, String> {
    let a = check::fill_matches::<f64>(t, 1)?;
    let b = check::fill_matches::<f32>(t, 2)?;
    Ok(format!(
        "rank {} of {}: {} patches bitwise equal to the serial fill in f64 and f32, {} + {} bytes sent",
        t.rank(),
        t.size(),
        a.patches,
        a.sent_bytes,
        b.sent_bytes
    ))
}

/// Rank 0 reports every rank's outcome; every rank returns whether all
/// passed.
fn report(t: &mut impl Transport, mine: Result<String, String>) -> bool {
    let line = match &mine {
        Ok(s) => format!("ok   {s}"),
        Err(e) => format!("FAIL {e}"),
    };
    match t.all_gather(line.into_bytes()) {
        Ok(all) => {
            let lines: Vec<String> = all
                .into_iter()
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect();
            if t.rank() == 0 {
                for l in &lines {
                    println!("fill_check: {l}");
                }
            }
            lines.iter().all(|l| l.starts_with("ok"))
        }
        Err(e) => {
            eprintln!("fill_check: rank {}: {e}", t.rank());
            false
        }
    }
}

/// A chunk size far below every halo message of the check.
#[cfg(feature = "mpi")]
const CHUNK_CHECK: usize = 977;

#[cfg(feature = "mpi")]
fn main() -> ExitCode {
    let mut t = match quilt_dist::transport::MpiRanks::init() {
        Ok(t) => t,
        Err(e) => {
            eprintln!("fill_check: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mine = both(&mut t).and_then(|s| {
        // Again with every message split into many chunks, as a state of
        // 2 GiB or more is.
        t.set_chunk(CHUNK_CHECK);
        let c = check::fill_matches::<f64>(&mut t, 3)?;
        Ok(format!(
            "{s}; again in chunks of {CHUNK_CHECK} bytes ({} bytes sent)",
            c.sent_bytes
        ))
    });
    if report(&mut t, mine) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

#[cfg(not(feature = "mpi"))]
fn main() -> ExitCode {
    let ranks = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 3,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("fill_check: the argument is a number of ranks (at least 1)");
            return ExitCode::FAILURE;
        }
    };
    let ok = quilt_dist::run_ranks(ranks, |mut t| {
        let mine = both(&mut t);
        report(&mut t, mine)
    });
    if ok.iter().all(|&o| o) {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
