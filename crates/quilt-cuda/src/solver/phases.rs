//! Item phases of the device-resident step: each phase is one launch of a
//! `kernels/amr.cu` entry point over a list of flat items, with one thread
//! per cell. A hierarchy's phases (and the small arrays beside them) are
//! placed in one [`PhaseArena`] and reach the device as one allocation and
//! one copy: a large hierarchy has some forty such arrays of tens of
//! megabytes in all, and one allocation and one pageable copy each cost
//! more than the bytes do.

use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaStream, LaunchConfig};
use quilt_mesh::flat::starts;
use rayon::prelude::*;

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::error::CudaError;

/// Threads per block of the item kernels.
pub(super) const ITEM_BLOCK: u32 = 256;

/// Alignment of every array in an arena (the device's allocation
/// granularity for coalesced reads).
const ALIGN: usize = 256;

/// Bytes copied by one task when an arena is gathered on the host.
const GATHER_CHUNK: usize = 1 << 20;

/// One phase's items on the device: the addresses of their bytes and of
/// the prefix sums of their cells followed by each block's first item
/// ([`block_firsts`]), and the counts a launch needs.
pub(super) struct Phase {
    pub items: u64,
    pub starts: u64,
    pub n: u32,
    pub total: u64,
}

impl Phase {
    /// The launch over every cell of the phase; `None` if it has none.
    pub fn config(&self) -> Option<LaunchConfig> {
        (self.total > 0).then(|| LaunchConfig {
            grid_dim: (self.total.div_ceil(u64::from(ITEM_BLOCK)) as u32, 1, 1),
            block_dim: (ITEM_BLOCK, 1, 1),
            shared_mem_bytes: 0,
        })
    }
}

/// An array placed in a [`PhaseArena`].
#[derive(Clone, Copy, Debug)]
pub(super) struct ArrayId(usize);

/// A phase placed in a [`PhaseArena`].
#[derive(Clone, Copy, Debug)]
pub(super) struct PhaseId(usize);

/// One array of an arena: borrowed from the caller's items, or made here.
enum Piece<'a> {
    Borrowed(&'a [u8]),
    Bytes(Vec<u8>),
}

impl Piece<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Self::Borrowed(b) => b,
            Self::Bytes(b) => b,
        }
    }
}

/// The extent of a phase's item `k`.
type Extent<'a> = Box<dyn Fn(usize) -> [u32; 3] + Send + Sync + 'a>;

/// An arena's entry: an array, or a phase's items, whose prefix sums the
/// upload makes.
enum Entry<'a> {
    Array(Piece<'a>),
    Phase {
        items: Piece<'a>,
        n: usize,
        extent: Extent<'a>,
    },
}

/// Arrays and phases bound for one device allocation, each array at an
/// aligned offset. The phases' prefix sums and block tables are made at
/// the upload, all phases in parallel.
#[derive(Default)]
pub(super) struct PhaseArena<'a> {
    entries: Vec<Entry<'a>>,
}

impl<'a> PhaseArena<'a> {
    /// Places `values` as they are.
    pub fn array<I: bytemuck::Pod>(&mut self, values: &'a [I]) -> ArrayId {
        let piece = Piece::Borrowed(bytemuck::cast_slice(values));
        self.entries.push(Entry::Array(piece));
        ArrayId(self.entries.len() - 1)
    }

    /// Places a phase over `items`, item `i` of extent `extent(i)`.
    pub fn phase<I: bytemuck::Pod + Sync>(
        &mut self,
        items: &'a [I],
        extent: impl Fn(&I) -> [u32; 3] + Send + Sync + 'a,
    ) -> PhaseId {
        self.entries.push(Entry::Phase {
            items: Piece::Borrowed(bytemuck::cast_slice(items)),
            n: items.len(),
            extent: Box::new(move |k| extent(&items[k])),
        });
        PhaseId(self.entries.len() - 1)
    }

    /// [`PhaseArena::phase`] over items made for it.
    pub fn phase_owned<I: bytemuck::Pod + Send + Sync>(
        &mut self,
        items: Vec<I>,
        extent: impl Fn(&I) -> [u32; 3] + Send + Sync + 'a,
    ) -> PhaseId {
        self.entries.push(Entry::Phase {
            items: Piece::Bytes(bytemuck::cast_slice(&items).to_vec()),
            n: items.len(),
            extent: Box::new(move |k| extent(&items[k])),
        });
        PhaseId(self.entries.len() - 1)
    }

    /// Every entry's offset (phases: of their items, then of their prefix
    /// sums and block table, made here in parallel), the pieces to copy
    /// at their offsets, and the arena's length.
    fn lay_out(&self) -> Result<Laid<'_>, CudaError> {
        let sums = self
            .entries
            .par_iter()
            .map(|e| match e {
                Entry::Array(_) => Ok(None),
                Entry::Phase { n, extent, .. } => phase_starts(*n, extent).map(Some),
            })
            .collect::<Result<Vec<_>, CudaError>>()?;
        let mut laid = Laid {
            pieces: Vec::with_capacity(2 * self.entries.len()),
            places: Vec::with_capacity(self.entries.len()),
            len: 0,
            sums,
        };
        for (k, e) in self.entries.iter().enumerate() {
            let place = match e {
                Entry::Array(p) => Place::Array(laid.place(p.bytes())),
                Entry::Phase { items, n, .. } => {
                    let n = u32::try_from(*n)
                        .map_err(|_| CudaError::Config(format!("{n} items in one phase")))?;
                    let total = laid.sums[k].as_ref().map_or(0, |s| s.1);
                    Place::Phase(Placed {
                        items: laid.place(items.bytes()),
                        starts: laid.place_sums(k),
                        n,
                        total,
                    })
                }
            };
            laid.places.push(place);
        }
        Ok(laid)
    }

    /// Copies the arena to one new device allocation on `stream` (not
    /// synchronised), gathered first into `staging` (page-locked memory,
    /// grown as needed and kept for later arenas; it must stay untouched
    /// until the stream passes the copy), or into pageable memory without
    /// one or where the system refuses to page-lock more.
    pub fn upload(
        self,
        ctx: &Arc<CudaContext>,
        stream: &CudaStream,
        staging: Option<&mut Option<PinnedBuffer<u8>>>,
    ) -> Result<DeviceArena, CudaError> {
        let t = std::time::Instant::now();
        let laid = self.lay_out()?;
        let len = laid.len.max(1);
        let buf = DeviceBuffer::<u8>::new(ctx, len)?;
        // Page-locked memory the system refuses leaves the copy to
        // pageable memory: slower, never an error.
        let pinned = staging.and_then(|slot| {
            let host = slot.take().and_then(|b| b.reuse(len)).or_else(|| {
                PinnedBuffer::new(ctx, len.next_multiple_of(1 << 20))
                    .inspect_err(|e| log::debug!("items staged in pageable memory: {e}"))
                    .ok()
                    .and_then(|b| b.reuse(len))
            })?;
            Some(slot.insert(host))
        });
        match pinned {
            Some(host) => {
                laid.gather(host.as_mut_slice());
                buf.upload(0, host.as_slice(), stream)?;
            }
            None => {
                let mut host = vec![0u8; len];
                laid.gather(&mut host);
                // A pageable source is copied out before the call returns.
                buf.upload(0, &host, stream)?;
            }
        }
        log::trace!(
            "{len} bytes of items on the device in {:.4} s",
            t.elapsed().as_secs_f64()
        );
        Ok(DeviceArena {
            buf,
            places: laid.places,
        })
    }
}

/// What a piece of a laid-out arena copies.
enum Src<'a> {
    Bytes(&'a [u8]),
    /// The prefix sums of entry `k`.
    Sums(usize),
}

/// An arena laid out: its pieces at their offsets.
struct Laid<'a> {
    pieces: Vec<(usize, Src<'a>)>,
    places: Vec<Place>,
    len: usize,
    sums: Vec<Option<(Vec<u64>, u64)>>,
}

impl<'a> Laid<'a> {
    fn next(&mut self, bytes: usize) -> usize {
        let at = self.len.next_multiple_of(ALIGN);
        self.len = at + bytes;
        at
    }

    fn place(&mut self, bytes: &'a [u8]) -> usize {
        let at = self.next(bytes.len());
        self.pieces.push((at, Src::Bytes(bytes)));
        at
    }

    /// Places entry `k`'s sums.
    fn place_sums(&mut self, k: usize) -> usize {
        let at = self.next(8 * self.sums_of(k).len());
        self.pieces.push((at, Src::Sums(k)));
        at
    }

    fn sums_of(&self, k: usize) -> &[u64] {
        self.sums[k].as_ref().map_or(&[], |s| &s.0)
    }

    /// Copies every piece to its offset in `out`, in parallel.
    fn gather(&self, out: &mut [u8]) {
        let mut rest = out;
        let mut at = 0;
        let mut jobs = Vec::with_capacity(self.pieces.len());
        for (offset, piece) in &self.pieces {
            let offset = *offset;
            let src: &[u8] = match piece {
                Src::Bytes(b) => b,
                Src::Sums(k) => bytemuck::cast_slice(self.sums_of(*k)),
            };
            let (_, tail) = rest.split_at_mut(offset - at);
            let (dst, tail) = tail.split_at_mut(src.len());
            jobs.push((dst, src));
            rest = tail;
            at = offset + src.len();
        }
        jobs.into_par_iter().for_each(|(dst, src)| {
            dst.par_chunks_mut(GATHER_CHUNK)
                .zip(src.par_chunks(GATHER_CHUNK))
                .for_each(|(d, s)| d.copy_from_slice(s));
        });
    }
}

/// Where an entry of an arena lies in it.
enum Place {
    Array(usize),
    Phase(Placed),
}

/// A phase's offsets in an arena, and its counts.
#[derive(Clone, Copy, Debug)]
struct Placed {
    items: usize,
    starts: usize,
    n: u32,
    total: u64,
}

/// The prefix sums of the cells of `n` items of extents `extent`, then
/// the block table ([`block_firsts`]); and the cells in all.
fn phase_starts(n: usize, extent: &Extent<'_>) -> Result<(Vec<u64>, u64), CudaError> {
    let mut s = starts((0..n).map(extent));
    // The kernels split an item's cell index in 32 bits.
    if let Some(w) = s.windows(2).find(|w| w[1] - w[0] > u64::from(u32::MAX)) {
        return Err(CudaError::Config(format!(
            "an item of {} cells (the kernels take at most 2^32 - 1 per item)",
            w[1] - w[0]
        )));
    }
    let total = s.last().copied().unwrap_or(0);
    let firsts = block_firsts(&s, ITEM_BLOCK);
    s.extend(firsts);
    Ok((s, total))
}

/// An arena on the device.
pub(super) struct DeviceArena {
    buf: DeviceBuffer<u8>,
    places: Vec<Place>,
}

impl DeviceArena {
    /// The device address of array `a`.
    pub fn at(&self, a: ArrayId) -> u64 {
        match &self.places[a.0] {
            Place::Array(at) => self.buf.at(*at),
            Place::Phase(_) => unreachable!("array ids name arrays"),
        }
    }

    /// Phase `p`.
    pub fn phase(&self, p: PhaseId) -> Phase {
        match &self.places[p.0] {
            Place::Phase(p) => Phase {
                items: self.buf.at(p.items),
                starts: self.buf.at(p.starts),
                n: p.n,
                total: p.total,
            },
            Place::Array(_) => unreachable!("phase ids name phases"),
        }
    }
}

/// For every block of `block` threads over the cells that the prefix sums
/// `starts` count, the item of its first cell, and after them the item of
/// the last cell: the items of block `b` lie between entries `b` and
/// `b + 1`. The kernels look their block's range up here instead of
/// bisecting all the items from the top, a chain of dependent loads that
/// every block would otherwise wait for before its first copy.
pub(super) fn block_firsts(starts: &[u64], block: u32) -> Vec<u64> {
    let Some(&total) = starts.last() else {
        return Vec::new();
    };
    if total == 0 {
        return Vec::new();
    }
    let n = starts.len() - 1;
    let blocks = total.div_ceil(u64::from(block));
    let mut out = Vec::with_capacity(blocks as usize + 1);
    let mut k = 0;
    for b in 0..=blocks {
        let t = (b * u64::from(block)).min(total - 1);
        // The last item starting at or before cell `t`, as the kernels'
        // bisection finds it (empty items before it are passed over).
        while k + 1 < n && starts[k + 1] <= t {
            k += 1;
        }
        out.push(k as u64);
    }
    out
}
#[cfg(test)]
mod tests {
    use super::{ALIGN, ITEM_BLOCK, PhaseArena, Place, block_firsts};
    use rand::{RngExt, SeedableRng};

    /// The kernels' answer for cell `t`: the last item starting at or
    /// before it.
    fn item_of(starts: &[u64], t: u64) -> usize {
        starts[..starts.len() - 1]
            .iter()
            .rposition(|&s| s <= t)
            .expect("cell 0 starts item 0")
    }

    /// Every cell's item lies in its block's range, and the range's ends
    /// are the items of the block's first and last cells, for phases with
    /// empty items, items larger than a block and blocks of one item.
    #[test]
    fn block_ranges_hold_every_cells_item() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for case in 0..200 {
            let n = rng.random_range(1..60);
            let mut starts = vec![0u64];
            for _ in 0..n {
                let cells = match rng.random_range(0..4) {
                    0 => 0,
                    1 => rng.random_range(1..8),
                    2 => rng.random_range(1..300),
                    _ => rng.random_range(200..2000),
                };
                starts.push(starts.last().unwrap() + cells);
            }
            let total = *starts.last().unwrap();
            let block = [1u32, 7, 32, 256][case % 4];
            let firsts = block_firsts(&starts, block);
            if total == 0 {
                assert!(firsts.is_empty());
                continue;
            }
            let blocks = total.div_ceil(u64::from(block));
            assert_eq!(firsts.len() as u64, blocks + 1, "case {case}");
            for t in 0..total {
                let b = (t / u64::from(block)) as usize;
                let (lo, hi) = (firsts[b] as usize, (firsts[b + 1] as usize + 1).min(n));
                let k = item_of(&starts, t);
                assert!(
                    lo <= k && k < hi,
                    "case {case}: cell {t} item {k} not in {lo}..{hi}"
                );
            }
            for b in 0..blocks {
                assert_eq!(
                    firsts[b as usize] as usize,
                    item_of(&starts, b * u64::from(block))
                );
            }
            assert_eq!(
                firsts[blocks as usize] as usize,
                item_of(&starts, total - 1)
            );
        }
    }

    /// An arena's arrays land at aligned offsets, whole and in order,
    /// with a phase's prefix sums and block table after its items.
    #[test]
    fn arenas_place_every_array_whole_at_an_aligned_offset() {
        let a_vals: Vec<u32> = (0..1000).collect();
        let items: Vec<[u32; 3]> = vec![[2, 3, 4], [0, 5, 5], [300, 1, 1]];
        let empty: Vec<u64> = Vec::new();
        let pairs: Vec<[u64; 2]> = vec![[7, 8], [9, 10]];
        let mut a = PhaseArena::default();
        let id_a = a.array(&a_vals);
        let id_e = a.array(&empty);
        let id_p = a.phase(&items, |e| *e);
        let id_w = a.array(&pairs);
        let laid = a.lay_out().unwrap();
        let mut out = vec![0u8; laid.len];
        laid.gather(&mut out);
        let array_at = |id: super::ArrayId| match laid.places[id.0] {
            Place::Array(at) => at,
            Place::Phase(_) => panic!("an array"),
        };
        let Place::Phase(p) = laid.places[id_p.0] else {
            panic!("a phase")
        };
        let (at_a, at_e, at_w) = (array_at(id_a), array_at(id_e), array_at(id_w));
        for at in [at_a, at_e, p.items, p.starts, at_w] {
            assert_eq!(at % ALIGN, 0);
        }
        assert_eq!(
            &out[at_a..at_a + 4000],
            bytemuck::cast_slice::<u32, u8>(&a_vals)
        );
        let item_bytes: &[u8] = bytemuck::cast_slice(&items);
        assert_eq!(&out[p.items..p.items + item_bytes.len()], item_bytes);
        assert_eq!((p.n, p.total), (3, 24 + 300));
        let words = |at: usize, n: usize| -> Vec<u64> {
            out[at..at + 8 * n]
                .chunks(8)
                .map(|c| u64::from_ne_bytes(c.try_into().unwrap()))
                .collect()
        };
        let starts = words(p.starts, 4);
        assert_eq!(starts, [0, 24, 24, 324]);
        assert_eq!(words(p.starts + 32, 3), block_firsts(&starts, ITEM_BLOCK));
        assert_eq!(words(at_w, 4), [7, 8, 9, 10]);
    }

    /// An item beyond the kernels' 32-bit cell index is refused.
    #[test]
    fn items_of_more_than_2_pow_32_cells_are_refused() {
        let items: Vec<[u32; 3]> = vec![[1 << 11, 1 << 11, 1 << 11]];
        let mut a = PhaseArena::default();
        a.phase(&items, |e| *e);
        assert!(a.lay_out().is_err());
    }
}
