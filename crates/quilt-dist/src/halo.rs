//! Ghost data across ranks: which pieces of which patches each pair of
//! ranks exchanges, and the exchange itself.
//!
//! A rank keeps the data of the patches it owns and, for every remote
//! patch some fill of its own patches reads, a *shadow*: a patch-sized
//! buffer of which only the cells read are ever received. The fill code of
//! quilt-mesh runs unchanged over [`WithShadows`], which answers a patch
//! index with the shadow when there is one and with the rank's own data
//! otherwise; since every cell it reads has the owner's bits, a
//! distributed fill is bitwise the serial one.
//!
//! Both sides of a pair derive the same piece list, in the same order,
//! from the replicated hierarchy and distribution, so a message carries
//! values only.

use std::collections::HashSet;
use std::ops::Range;
use std::time::Instant;

use quilt_mesh::fill::{FillPlan, OldData};
use quilt_mesh::memory::split_parts;
use quilt_mesh::{Hierarchy, HierarchyData, IndexBox, PatchData, Real, TimeLevel};
use rayon::prelude::*;

use crate::distribution::Distribution;
use crate::error::DistError;
use crate::transport::{Tag, Transport};

/// Cells of one patch's interior, in that patch's index space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Patch index of the source.
    pub patch: usize,
    /// The cells sent.
    pub region: IndexBox,
}

/// What one rank sends to and receives from each other rank in one
/// exchange.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HaloPlan {
    rank: usize,
    sends: Vec<(usize, Vec<Piece>)>,
    recvs: Vec<(usize, Vec<Piece>)>,
    remote: Vec<usize>,
}

/// Volume and time of one exchange, for logs and the overlap report.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ExchangeCounts {
    /// Messages posted.
    pub sent_messages: usize,
    /// Bytes posted.
    pub sent_bytes: usize,
    /// Messages received.
    pub received_messages: usize,
    /// Bytes received.
    pub received_bytes: usize,
    /// Seconds spent packing the messages posted (reading the pieces
    /// into send buffers, on the rayon pool).
    pub pack_seconds: f64,
    /// Seconds spent waiting for messages in the transport (transfer
    /// time and waits for slower ranks).
    pub wait_seconds: f64,
    /// Seconds spent unpacking received messages into their patches.
    pub unpack_seconds: f64,
}

impl HaloPlan {
    /// The plan of `rank` when the owner of every patch `t` needs
    /// `needs(t)` (pieces of other patches). Pieces whose source the
    /// target's owner holds itself are dropped, and a piece asked for twice
    /// by one rank is sent once.
    pub fn from_needs(
        dist: &Distribution,
        rank: usize,
        needs: impl FnMut(usize) -> Vec<Piece>,
    ) -> Self {
        Self::between(dist, dist, rank, needs)
    }

    /// As [`Self::from_needs`] when sources and targets are patches of two
    /// distributions (a regrid: pieces of the old hierarchy's patches,
    /// owned by `sources`, for the new hierarchy's patches `t`, owned by
    /// `targets`).
    pub fn between(
        sources: &Distribution,
        targets: &Distribution,
        rank: usize,
        mut needs: impl FnMut(usize) -> Vec<Piece>,
    ) -> Self {
        let n = sources.ranks().max(targets.ranks());
        let mut sends = vec![Vec::new(); n];
        let mut recvs = vec![Vec::new(); n];
        let mut seen_send: Vec<HashSet<Piece>> = vec![HashSet::new(); n];
        let mut seen_recv: Vec<HashSet<Piece>> = vec![HashSet::new(); n];
        for t in 0..targets.len() {
            let dst = targets.owner(t);
            for piece in needs(t) {
                let src = sources.owner(piece.patch);
                if src == dst || piece.region.is_empty() {
                    continue;
                }
                if dst == rank && seen_recv[src].insert(piece) {
                    recvs[src].push(piece);
                }
                if src == rank && seen_send[dst].insert(piece) {
                    sends[dst].push(piece);
                }
            }
        }
        let mut remote: Vec<usize> = recvs.iter().flatten().map(|p| p.patch).collect();
        remote.sort_unstable();
        remote.dedup();
        let pairs = |v: Vec<Vec<Piece>>| {
            v.into_iter()
                .enumerate()
                .filter(|(_, p)| !p.is_empty())
                .collect::<Vec<_>>()
        };
        Self {
            rank,
            sends: pairs(sends),
            recvs: pairs(recvs),
            remote,
        }
    }

    /// The ghost-fill exchange of `plan`: sibling copies and the coarse
    /// cells gathered for interpolation (periodic images included), read
    /// from old interiors.
    pub fn for_fill(plan: &FillPlan, dist: &Distribution, rank: usize) -> Self {
        Self::from_needs(dist, rank, |t| {
            plan.patch(t).map_or_else(Vec::new, |p| {
                p.copies()
                    .iter()
                    .chain(p.gather())
                    .filter(|o| o.source != t)
                    .map(|o| Piece {
                        patch: o.source,
                        region: o.region.shift(&-o.shift),
                    })
                    .collect()
            })
        })
    }

    /// This plan's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// `(rank, pieces)` this rank sends, by rank.
    pub fn sends(&self) -> &[(usize, Vec<Piece>)] {
        &self.sends
    }

    /// `(rank, pieces)` this rank receives, by rank.
    pub fn recvs(&self) -> &[(usize, Vec<Piece>)] {
        &self.recvs
    }

    /// Patch indices this rank keeps shadows of, ascending.
    pub fn remote_patches(&self) -> &[usize] {
        &self.remote
    }

    /// Posts this rank's messages: each piece's cells, component by
    /// component, `x` fastest, read from `local`'s old data.
    pub fn post<T: Real, D: OldData<T> + ?Sized>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        local: &D,
    ) -> Result<ExchangeCounts, DistError> {
        self.post_from(t, tag, |i| local.old_patch(i))
    }

    /// [`Self::post`] reading patch `i`'s data from `source(i)` (e.g. a
    /// new time level). Each message's pieces are packed in parallel, each
    /// into its own part of the buffer.
    pub fn post_from<'a, T: Real>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        source: impl Fn(usize) -> Option<&'a PatchData<T>>,
    ) -> Result<ExchangeCounts, DistError> {
        let mut counts = ExchangeCounts::default();
        for (to, pieces) in &self.sends {
            let start = Instant::now();
            let mut jobs = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let src = source(piece.patch).ok_or_else(|| {
                    DistError::Distribution(format!(
                        "rank {}: sending patch index {} to rank {to}, which this rank does not hold",
                        self.rank, piece.patch
                    ))
                })?;
                if !src.interior().contains_box(&piece.region) {
                    return Err(DistError::Distribution(format!(
                        "piece {} lies outside its patch's interior {}",
                        piece.region,
                        src.interior()
                    )));
                }
                jobs.push((
                    (src, piece.region),
                    piece_bytes::<T>(&piece.region, src.ncomp()),
                ));
            }
            let Ok(buf) = fill_message(t, jobs, |(src, region), out| {
                pack(src, &region, out);
                Ok::<_, std::convert::Infallible>(())
            });
            counts.pack_seconds += start.elapsed().as_secs_f64();
            counts.sent_messages += 1;
            counts.sent_bytes += buf.len();
            t.send(*to, tag, buf)?;
        }
        Ok(counts)
    }

    /// Receives every message of the plan into `shadows`, waiting (within
    /// the transport's bound) for each in rank order.
    pub fn receive<T: Real>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        shadows: &mut Shadows<T>,
    ) -> Result<ExchangeCounts, DistError> {
        self.receive_into(t, tag, shadows)
    }

    /// [`Self::receive`] writing patch `i`'s pieces into
    /// `dest.patch_mut(i)`. Each message is unpacked in parallel over its
    /// patches.
    pub fn receive_into<T: Real>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        dest: &mut impl PatchesMut<T>,
    ) -> Result<ExchangeCounts, DistError> {
        let mut counts = ExchangeCounts::default();
        for (from, pieces) in &self.recvs {
            let waited = Instant::now();
            let buf = t.recv(*from, tag)?;
            let start = Instant::now();
            counts.wait_seconds += (start - waited).as_secs_f64();
            counts.received_messages += 1;
            counts.received_bytes += buf.len();
            let malformed = |why: String| DistError::Malformed {
                rank: self.rank,
                from: *from,
                tag,
                why,
            };
            // Where each piece lies in the message, checked whole before
            // any cell is written.
            let mut at = 0;
            let mut placed = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let dst = dest.patch_mut(piece.patch).ok_or_else(|| {
                    malformed(format!("no place for patch index {}", piece.patch))
                })?;
                if !dst.interior().contains_box(&piece.region) {
                    return Err(malformed(format!(
                        "piece {} lies outside the shadow's interior {}",
                        piece.region,
                        dst.interior()
                    )));
                }
                let n = piece_bytes::<T>(&piece.region, dst.ncomp());
                placed.push((piece.patch, piece.region, at..at + n));
                at += n;
            }
            if at != buf.len() {
                return Err(malformed(format!(
                    "{} bytes, the plan accounts for {at}",
                    buf.len()
                )));
            }
            // Pieces by patch, so that each patch is written by one task.
            placed.sort_by_key(|p| p.0);
            let mut groups: Vec<(&mut PatchData<T>, &[Placed])> = Vec::new();
            let mut rest = &placed[..];
            for (i, data) in dest.all_mut() {
                let n = rest.iter().take_while(|p| p.0 == i).count();
                if n > 0 {
                    let (mine, others) = rest.split_at(n);
                    groups.push((data, mine));
                    rest = others;
                }
                if rest.is_empty() {
                    break;
                }
            }
            if !rest.is_empty() {
                return Err(malformed(format!("no place for patch index {}", rest[0].0)));
            }
            groups.into_par_iter().for_each(|(data, mine)| {
                for (_, region, range) in mine {
                    unpack(data, region, &buf[range.clone()]);
                }
            });
            t.recycle(buf);
            counts.unpack_seconds += start.elapsed().as_secs_f64();
        }
        Ok(counts)
    }

    /// [`Self::post`], then [`Self::receive`].
    pub fn exchange<T: Real, D: OldData<T> + ?Sized>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        local: &D,
        shadows: &mut Shadows<T>,
    ) -> Result<ExchangeCounts, DistError> {
        let sent = self.post(t, tag, local)?;
        let got = self.receive(t, tag, shadows)?;
        t.flush()?;
        Ok(sent.with_received(got))
    }

    /// The exchange within one time level of `data`, which every rank
    /// holds whole (only the cells each rank owns being current): pieces
    /// are read from `level` of the sending rank's patches and written to
    /// `level` of the receiving rank's copies.
    pub fn exchange_states<T: Real>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        data: &mut HierarchyData<T>,
        level: TimeLevel,
    ) -> Result<ExchangeCounts, DistError> {
        let sent = self.post_from(t, tag, |i| data.get(i).map(|s| level.of(s)))?;
        let got = self.receive_into(t, tag, &mut States { data, level })?;
        t.flush()?;
        Ok(sent.with_received(got))
    }
}

impl ExchangeCounts {
    /// These counts' sends with `got`'s receives.
    fn with_received(self, got: ExchangeCounts) -> Self {
        Self {
            received_messages: got.received_messages,
            received_bytes: got.received_bytes,
            wait_seconds: got.wait_seconds,
            unpack_seconds: got.unpack_seconds,
            ..self
        }
    }

    /// Adds `other`'s volume and times to these.
    pub fn add(&mut self, other: &ExchangeCounts) {
        self.sent_messages += other.sent_messages;
        self.sent_bytes += other.sent_bytes;
        self.received_messages += other.received_messages;
        self.received_bytes += other.received_bytes;
        self.pack_seconds += other.pack_seconds;
        self.wait_seconds += other.wait_seconds;
        self.unpack_seconds += other.unpack_seconds;
    }
}

/// A received piece: its patch, its cells and its bytes in the message.
type Placed = (usize, IndexBox, Range<usize>);

/// Bytes of `region`'s cells with `ncomp` components of `T`.
pub fn piece_bytes<T>(region: &IndexBox, ncomp: usize) -> usize {
    region.num_cells().max(0) as usize * ncomp * size_of::<T>()
}

/// A message of consecutive parts, one per job: `jobs` pairs each job
/// with its part's length in bytes, and `fill(job, part)` writes every
/// byte of the part. The parts are filled in parallel, into a buffer from
/// the transport.
pub fn fill_message<J: Send, E: Send>(
    t: &mut (impl Transport + ?Sized),
    jobs: Vec<(J, usize)>,
    fill: impl Fn(J, &mut [u8]) -> Result<(), E> + Sync,
) -> Result<Vec<u8>, E> {
    let mut buf = t.buffer(jobs.iter().map(|j| j.1).sum());
    let parts = split_parts(&mut buf, jobs.iter().map(|j| j.1));
    jobs.into_par_iter()
        .zip(parts)
        .try_for_each(|((job, _), part)| fill(job, part))?;
    Ok(buf)
}

/// Writes `region`'s cells of `src` (which holds them) into `out`,
/// component by component, `x` fastest.
fn pack<T: Real>(src: &PatchData<T>, region: &IndexBox, out: &mut [u8]) {
    let nx = (region.hi.x - region.lo.x + 1) as usize;
    let row = nx * size_of::<T>();
    let mut at = 0;
    for c in 0..src.ncomp() {
        let comp = src.comp(c);
        for z in region.lo.z..=region.hi.z {
            for y in region.lo.y..=region.hi.y {
                let o = src.index(&quilt_mesh::iv(region.lo.x, y, z));
                out[at..at + row].copy_from_slice(bytemuck::cast_slice(&comp[o..o + nx]));
                at += row;
            }
        }
    }
}

/// Writes the bytes of `region`'s cells (component by component, `x`
/// fastest, as the exchanges lay pieces out) into `dst`. The caller checks
/// that `dst`'s interior holds the region and that `bytes` holds exactly
/// its cells; it panics otherwise.
pub fn unpack<T: Real>(dst: &mut PatchData<T>, region: &IndexBox, bytes: &[u8]) {
    let nx = (region.hi.x - region.lo.x + 1) as usize;
    let row = nx * size_of::<T>();
    let mut at = 0;
    for c in 0..dst.ncomp() {
        for z in region.lo.z..=region.hi.z {
            for y in region.lo.y..=region.hi.y {
                let o = dst.index(&quilt_mesh::iv(region.lo.x, y, z));
                // The buffer has no alignment guarantee: copy bytewise.
                bytemuck::cast_slice_mut::<T, u8>(&mut dst.comp_mut(c)[o..o + nx])
                    .copy_from_slice(&bytes[at..at + row]);
                at += row;
            }
        }
    }
}

/// Patch-sized buffers for the remote patches a rank reads, by patch
/// index (none for the others).
#[derive(Debug)]
pub struct Shadows<T> {
    data: Vec<Option<PatchData<T>>>,
}

impl<T: Real> Shadows<T> {
    /// Zeroed shadows of `plan`'s remote patches of `h`, with `ncomp`
    /// components.
    pub fn for_plan(h: &Hierarchy, plan: &HaloPlan, ncomp: usize) -> Result<Self, DistError> {
        let mut data: Vec<Option<PatchData<T>>> = (0..h.num_patches()).map(|_| None).collect();
        for &i in plan.remote_patches() {
            let p = h.patches().get(i).ok_or_else(|| {
                DistError::Distribution(format!(
                    "the halo plan names patch index {i}, the hierarchy has {}",
                    h.num_patches()
                ))
            })?;
            data[i] = Some(PatchData::new(p.interior(), h.ghost(), ncomp)?);
        }
        Ok(Self { data })
    }

    /// The shadow of patch `index`, if this rank keeps one.
    pub fn get(&self, index: usize) -> Option<&PatchData<T>> {
        self.data.get(index).and_then(Option::as_ref)
    }

    /// As [`Self::get`], mutable.
    pub fn get_mut(&mut self, index: usize) -> Option<&mut PatchData<T>> {
        self.data.get_mut(index).and_then(Option::as_mut)
    }

    /// Bytes held.
    pub fn bytes(&self) -> usize {
        self.data
            .iter()
            .flatten()
            .map(|d| std::mem::size_of_val(d.as_slice()))
            .sum()
    }
}

/// Where received pieces go: patch data by patch index.
pub trait PatchesMut<T> {
    /// Patch `index`'s data, if there is a place for it.
    fn patch_mut(&mut self, index: usize) -> Option<&mut PatchData<T>>;

    /// Every patch there is a place for, with its index, in ascending
    /// index order (so that several can be written at once).
    fn all_mut(&mut self) -> Vec<(usize, &mut PatchData<T>)>;
}

impl<T: Real> PatchesMut<T> for Shadows<T> {
    fn patch_mut(&mut self, index: usize) -> Option<&mut PatchData<T>> {
        self.get_mut(index)
    }

    fn all_mut(&mut self) -> Vec<(usize, &mut PatchData<T>)> {
        self.data
            .iter_mut()
            .enumerate()
            .filter_map(|(i, d)| d.as_mut().map(|d| (i, d)))
            .collect()
    }
}

/// One time level of every patch of a [`HierarchyData`] as a destination
/// of received pieces.
pub struct States<'a, T> {
    /// The data.
    pub data: &'a mut HierarchyData<T>,
    /// The time level written.
    pub level: TimeLevel,
}

impl<T: Real> PatchesMut<T> for States<'_, T> {
    fn patch_mut(&mut self, index: usize) -> Option<&mut PatchData<T>> {
        let level = self.level;
        self.data.get_mut(index).map(|s| level.of_mut(s))
    }

    fn all_mut(&mut self) -> Vec<(usize, &mut PatchData<T>)> {
        let level = self.level;
        self.data
            .states_mut()
            .iter_mut()
            .map(|s| level.of_mut(s))
            .enumerate()
            .collect()
    }
}

/// A rank's old data seen with its shadows: the fill's view on one rank.
pub struct WithShadows<'a, D: ?Sized, T> {
    /// The rank's own patches.
    pub local: &'a D,
    /// Its shadows of remote ones.
    pub shadows: &'a Shadows<T>,
}

impl<D: OldData<T> + ?Sized, T: Real> OldData<T> for WithShadows<'_, D, T> {
    fn old_patch(&self, index: usize) -> Option<&PatchData<T>> {
        self.shadows
            .get(index)
            .or_else(|| self.local.old_patch(index))
    }
}
