//! Measures how fast the transport moves large messages between ranks:
//! every rank sends one message of each size to every other rank, then
//! receives theirs (the pattern of a halo exchange), repeated, and rank 0
//! prints the rate per rank (bytes received per second of exchange).
//! Buffers come from and go back to the transport
//! ([`quilt_dist::Transport::buffer`], `recycle`), as the exchanges' do.
//!
//! ```text
//! cargo build --release -p quilt-dist --features mpi --example transport_rate
//! mpirun -np 4 target/release/examples/transport_rate
//! ```
//!
//! Without the `mpi` feature it runs `RANKS` in-process ranks (default 2).

use std::time::Instant;

use quilt_dist::Transport;

/// Message sizes, bytes.
const SIZES: [usize; 4] = [1 << 16, 1 << 20, 16 << 20, 64 << 20];
/// Exchanges per size.
const REPEATS: usize = 8;

fn measure(t: &mut dyn Transport) -> Result<Vec<(usize, f64)>, quilt_dist::DistError> {
    let (me, n) = (t.rank(), t.size());
    let mut rates = Vec::new();
    for &size in &SIZES {
        t.barrier()?;
        let start = Instant::now();
        let mut received = 0;
        for k in 0..REPEATS {
            let tag = 10 + k as quilt_dist::Tag;
            for to in (0..n).filter(|&r| r != me) {
                let mut buf = t.buffer(size);
                buf.fill(me as u8);
                t.send(to, tag, buf)?;
            }
            for from in (0..n).filter(|&r| r != me) {
                let m = t.recv(from, tag)?;
                received += m.len();
                t.recycle(m);
            }
            t.flush()?;
        }
        rates.push((size, received as f64 / start.elapsed().as_secs_f64()));
    }
    Ok(rates)
}

fn report(t: &dyn Transport, rates: &[(usize, f64)]) {
    if t.rank() == 0 {
        for (size, rate) in rates {
            println!(
                "{} ranks, messages of {:>9} bytes: {:.2} GB/s received per rank",
                t.size(),
                size,
                rate / 1e9
            );
        }
    }
}

#[cfg(feature = "mpi")]
fn main() -> Result<(), quilt_dist::DistError> {
    let mut t = quilt_dist::transport::MpiRanks::init()?;
    let rates = measure(&mut t)?;
    report(&t, &rates);
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn main() -> Result<(), quilt_dist::DistError> {
    let n = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let out = quilt_dist::run_ranks(n, |mut t| {
        let r = measure(&mut t);
        (t.rank() == 0).then(|| r.map(|r| report(&t, &r)))
    });
    out.into_iter().flatten().collect::<Result<Vec<()>, _>>()?;
    Ok(())
}
