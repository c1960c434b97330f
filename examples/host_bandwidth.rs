//! Host memory bandwidth on the machine at hand: the floor under the
//! host-staged batch loop, whose prepare and close are copies.
//!
//! Two access patterns, each on 1 to all rayon threads:
//! - `stream`: large contiguous copies (a STREAM "copy");
//! - `rows`: rows of `--row` values copied from a dense array into an
//!   array with a row stride of 64 values, as prepare writes a patch's
//!   rows into a 64³ bin.
//!
//! Rates count the bytes read plus the bytes written (not the reads a
//! write-allocating cache adds).
//!
//! ```text
//! cargo run --release --example host_bandwidth -- [--gib 2] [--row 24] [--reps 5]
//! ```

use std::time::Instant;

use rayon::prelude::*;

/// Values per task: chunks small enough to balance, large enough to
/// stream.
const CHUNK: usize = 1 << 20;

/// Row stride of the destination in the `rows` pattern: a 64³ bin's.
const STRIDE: usize = 64;

struct Args {
    gib: f64,
    row: usize,
    reps: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        gib: 2.0,
        row: 24,
        reps: 5,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or_else(|| format!("{k} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{k} {v}: {e}");
        match k.as_str() {
            "--gib" => a.gib = v.parse().map_err(|e| bad(&e))?,
            "--row" => a.row = v.parse().map_err(|e| bad(&e))?,
            "--reps" => a.reps = v.parse().map_err(|e| bad(&e))?,
            _ => return Err(format!("unknown argument {k} (--gib, --row, --reps)")),
        }
    }
    if !(a.gib > 0.0 && a.gib <= 64.0) {
        return Err(format!("--gib {} is outside (0, 64]", a.gib));
    }
    if a.row == 0 || a.row > STRIDE {
        return Err(format!("--row {} is outside 1..={STRIDE}", a.row));
    }
    if a.reps == 0 {
        return Err("--reps must be at least 1".into());
    }
    Ok(a)
}

/// The best of `reps` timings of `f`, in seconds.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("host_bandwidth: {e}");
            std::process::exit(2);
        }
    };
    let n = (args.gib * (1u64 << 30) as f64 / 8.0) as usize / CHUNK * CHUNK;
    let n = n.max(CHUNK);
    // First touch in parallel, so that pages lie where the threads run.
    let mut src = vec![0.0_f64; n];
    let mut dst = vec![0.0_f64; n];
    src.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(i, c)| c.iter_mut().for_each(|v| *v = i as f64));
    dst.par_chunks_mut(CHUNK).for_each(|c| c.fill(1.0));
    let rows = n / STRIDE;
    let all = rayon::current_num_threads();
    let mut counts: Vec<usize> = [1, 2, 4, 8, 12, 16, 24, 32, 64]
        .into_iter()
        .filter(|&t| t < all)
        .collect();
    counts.push(all);
    println!(
        "host bandwidth: {:.2} GiB per array, rows of {} values at a stride of {STRIDE}; best of {}",
        (n * 8) as f64 / (1u64 << 30) as f64,
        args.row,
        args.reps
    );
    println!("threads   stream GB/s   rows GB/s");
    for &t in &counts {
        let pool = match rayon::ThreadPoolBuilder::new().num_threads(t).build() {
            Ok(p) => p,
            Err(e) => {
                eprintln!("host_bandwidth: {t} threads: {e}");
                std::process::exit(1);
            }
        };
        let stream = pool.install(|| {
            best(args.reps, || {
                dst.par_chunks_mut(CHUNK)
                    .zip(src.par_chunks(CHUNK))
                    .for_each(|(d, s)| d.copy_from_slice(s));
            })
        });
        let r = args.row;
        let rows_secs = pool.install(|| {
            best(args.reps, || {
                let per = CHUNK / STRIDE;
                dst.par_chunks_mut(per * STRIDE)
                    .enumerate()
                    .for_each(|(c, d)| {
                        let s = &src[c * per * r..];
                        for (j, row) in d.chunks_mut(STRIDE).enumerate() {
                            if (j + 1) * r <= s.len() {
                                row[..r].copy_from_slice(&s[j * r..(j + 1) * r]);
                            }
                        }
                    });
            })
        });
        let stream_gb = 2.0 * (n * 8) as f64 / stream / 1e9;
        let rows_gb = 2.0 * (rows * r * 8) as f64 / rows_secs / 1e9;
        println!("{t:>7}   {stream_gb:>11.1}   {rows_gb:>9.1}");
    }
    // Keeps the copies from being optimised away.
    std::hint::black_box(&dst);
}
