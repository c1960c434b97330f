//! Runs processed in fixed-width blocks, the last one overlapping its
//! predecessor: no scalar remainder loop, whose cost on the short rows of
//! ghost regions (10 to 40 cells) would match the vectorised body's.
//!
//! A block of `W` values is a loop with a constant trip count, which the
//! compiler unrolls and vectorises. Covering `0..n` with blocks at
//! `0, W, 2W, …` and one more ending at `n` computes some positions twice;
//! that is harmless wherever each output depends only on inputs at its own
//! position and no output is an input, which holds for every use here.
//!
//! Each pass of the block loop starts with a compiler fence (no machine
//! instruction). Without it the loop vectoriser, which runs before the
//! block's own vectorisation, takes the loop over blocks for a strided
//! loop and vectorises *it* with lane-by-lane gathers and shuffles, at
//! several times the instructions; with it, each block becomes a few
//! vector operations.

/// `cover!(n, |i, W| body, else rest)`: runs `body` for blocks `i..i + W`
/// covering `0..n`, with the constant `W = 8` where `n >= 8`, else `W = 4`
/// where `n >= 4`; shorter runs take `rest` instead.
macro_rules! cover {
    ($n:expr, |$i:ident, $w:ident| $body:block, else $rest:block) => {{
        let n: usize = $n;
        if n >= 8 {
            const $w: usize = 8;
            let mut at = 0;
            while at + $w <= n {
                std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
                let $i = at;
                $body
                at += $w;
            }
            if at < n {
                let $i = n - $w;
                $body
            }
        } else if n >= 4 {
            const $w: usize = 4;
            {
                let $i = 0;
                $body
            }
            if n > $w {
                let $i = n - $w;
                $body
            }
        } else $rest
    }};
}
pub(crate) use cover;

/// Copies a row (`d.len()` values of `s`): up to 16 values (ghost slabs
/// are three cells wide) in blocks without a library call, longer rows
/// with `memcpy` (wider moves than the baseline build's blocks).
#[inline(always)]
pub(crate) fn copy_row<T: Copy>(d: &mut [T], s: &[T]) {
    let n = d.len();
    let s = &s[..n];
    if n > 16 {
        d.copy_from_slice(s);
        return;
    }
    cover!(n, |i, W| {
        d[i..i + W].copy_from_slice(&s[i..i + W]);
    }, else {
        for (a, b) in d.iter_mut().zip(s) {
            *a = *b;
        }
    });
}
