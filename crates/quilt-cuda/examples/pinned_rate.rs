//! How fast page-locked host memory is allocated: `N` buffers of `MB`
//! megabytes each, one after another and then from `N` threads at once,
//! with and without a first write of every page.
//!
//!     cargo run --release -p quilt-cuda --example pinned_rate -- [N] [MB]
//!
//! The batch ring of the host-staged loop allocates its page-locked
//! batches in the first step; this says what that costs and whether
//! allocating them at once hides it.

use std::sync::Arc;
use std::time::Instant;

use cudarc::driver::{CudaContext, result};

fn alloc(ctx: &Arc<CudaContext>, bytes: usize, touch: bool) -> (usize, f64) {
    ctx.bind_to_thread().expect("cuCtxSetCurrent");
    let t = Instant::now();
    // SAFETY: plain allocation, freed below.
    let p = unsafe { result::malloc_host(bytes, 0) }.expect("cuMemHostAlloc");
    if touch {
        // SAFETY: `bytes` writable bytes.
        unsafe { std::ptr::write_bytes(p.cast::<u8>(), 0, bytes) };
    }
    (p as usize, t.elapsed().as_secs_f64())
}

fn free(ctx: &Arc<CudaContext>, p: usize) {
    ctx.bind_to_thread().expect("cuCtxSetCurrent");
    // SAFETY: allocated by `alloc` and freed once.
    unsafe { result::free_host(p as *mut std::ffi::c_void) }.expect("cuMemFreeHost");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let n: usize = args.get(1).and_then(|v| v.parse().ok()).unwrap_or(5);
    let mb: usize = args.get(2).and_then(|v| v.parse().ok()).unwrap_or(330);
    let bytes = mb << 20;
    let ctx = CudaContext::new(0).expect("no CUDA device");
    for touch in [false, true] {
        let t = Instant::now();
        let ps: Vec<(usize, f64)> = (0..n).map(|_| alloc(&ctx, bytes, touch)).collect();
        let serial = t.elapsed().as_secs_f64();
        let each: Vec<String> = ps.iter().map(|p| format!("{:.3}", p.1)).collect();
        for (p, _) in ps {
            free(&ctx, p);
        }
        let t = Instant::now();
        let ps: Vec<(usize, f64)> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..n)
                .map(|_| s.spawn(|| alloc(&ctx, bytes, touch)))
                .collect();
            hs.into_iter().map(|h| h.join().expect("thread")).collect()
        });
        let parallel = t.elapsed().as_secs_f64();
        for (p, _) in ps {
            free(&ctx, p);
        }
        let gb = (n * bytes) as f64 / 1e9;
        println!(
            "{n} x {mb} MB, first write {touch}: one after another {serial:.3} s ({:.2} GB/s; each {}), {n} threads {parallel:.3} s ({:.2} GB/s)",
            gb / serial,
            each.join(" "),
            gb / parallel
        );
    }
}
