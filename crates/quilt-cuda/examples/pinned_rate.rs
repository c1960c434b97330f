//! How fast page-locked host memory is allocated: `N` buffers of `MB`
//! megabytes each, one after another and then from `N` threads at once,
//! with and without a first write of every page.
//!
//!     cargo run --release -p quilt-cuda --example pinned_rate -- [N] [MB]
//!
//! The batch ring of the host-staged loop allocates its page-locked
//! batches in the first step; this says what that costs and whether
//! allocating them at once hides it.
//!
//! Then the same sizes are mapped by the process (with and without
//! transparent huge pages), written once and page-locked afterwards by
//! `cuMemHostRegister`: what keeping the host state itself page-locked
//! would cost.

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

/// Maps `bytes` of anonymous memory, asks for huge pages or not, and
/// writes every page; returns the address and the seconds of the writes.
fn map(bytes: usize, huge: bool) -> (usize, f64) {
    // SAFETY: a fresh private anonymous mapping, unmapped in `unmap`.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            bytes,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert!(p != libc::MAP_FAILED, "mmap of {bytes} bytes failed");
    let advice = if huge {
        libc::MADV_HUGEPAGE
    } else {
        libc::MADV_NOHUGEPAGE
    };
    // SAFETY: the mapping above.
    unsafe { libc::madvise(p, bytes, advice) };
    let t = Instant::now();
    // SAFETY: `bytes` writable bytes.
    unsafe { std::ptr::write_bytes(p.cast::<u8>(), 1, bytes) };
    (p as usize, t.elapsed().as_secs_f64())
}

fn unmap(p: usize, bytes: usize) {
    // SAFETY: mapped by `map` with this length.
    unsafe { libc::munmap(p as *mut libc::c_void, bytes) };
}

fn register(ctx: &Arc<CudaContext>, p: usize, bytes: usize) -> f64 {
    ctx.bind_to_thread().expect("cuCtxSetCurrent");
    let t = Instant::now();
    // SAFETY: `p` is a mapping of `bytes` bytes that outlives the registration.
    let r = unsafe { cudarc::driver::sys::cuMemHostRegister_v2(p as *mut _, bytes, 0) };
    assert_eq!(
        r,
        cudarc::driver::sys::CUresult::CUDA_SUCCESS,
        "cuMemHostRegister"
    );
    t.elapsed().as_secs_f64()
}

fn unregister(ctx: &Arc<CudaContext>, p: usize) -> f64 {
    ctx.bind_to_thread().expect("cuCtxSetCurrent");
    let t = Instant::now();
    // SAFETY: registered by `register`.
    let r = unsafe { cudarc::driver::sys::cuMemHostUnregister(p as *mut _) };
    assert_eq!(
        r,
        cudarc::driver::sys::CUresult::CUDA_SUCCESS,
        "cuMemHostUnregister"
    );
    t.elapsed().as_secs_f64()
}

fn registered(ctx: &Arc<CudaContext>, n: usize, mb: usize) {
    let bytes = mb << 20;
    let gb = (n * bytes) as f64 / 1e9;
    for huge in [true, false] {
        let maps: Vec<(usize, f64)> = (0..n).map(|_| map(bytes, huge)).collect();
        let touch: f64 = maps.iter().map(|m| m.1).sum();
        let t = Instant::now();
        for m in &maps {
            register(ctx, m.0, bytes);
        }
        let serial = t.elapsed().as_secs_f64();
        let t = Instant::now();
        for m in &maps {
            unregister(ctx, m.0);
        }
        let unreg = t.elapsed().as_secs_f64();
        let t = Instant::now();
        std::thread::scope(|s| {
            for m in &maps {
                s.spawn(|| register(ctx, m.0, bytes));
            }
        });
        let parallel = t.elapsed().as_secs_f64();
        for m in &maps {
            unregister(ctx, m.0);
            unmap(m.0, bytes);
        }
        println!(
            "{n} x {mb} MB mapped, huge pages {huge}: first writes {touch:.3} s ({:.2} GB/s), register one after another {serial:.3} s ({:.2} GB/s), unregister {unreg:.3} s, register from {n} threads {parallel:.3} s ({:.2} GB/s)",
            gb / touch,
            gb / serial,
            gb / parallel
        );
    }
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
    registered(&ctx, n, mb);
}
