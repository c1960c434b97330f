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

use quilt_mesh::fill::{FillPlan, OldData};
use quilt_mesh::{Hierarchy, HierarchyData, IndexBox, PatchData, Real, TimeLevel};

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

/// Volume of one exchange, for logs and the overlap report.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ExchangeCounts {
    /// Messages posted.
    pub sent_messages: usize,
    /// Bytes posted.
    pub sent_bytes: usize,
    /// Messages received.
    pub received_messages: usize,
    /// Bytes received.
    pub received_bytes: usize,
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
    /// new time level).
    pub fn post_from<'a, T: Real>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        source: impl Fn(usize) -> Option<&'a PatchData<T>>,
    ) -> Result<ExchangeCounts, DistError> {
        let mut counts = ExchangeCounts::default();
        for (to, pieces) in &self.sends {
            let len = pieces
                .iter()
                .map(|p| {
                    let ncomp = source(p.patch).map_or(0, PatchData::ncomp);
                    p.region.num_cells().max(0) as usize * ncomp * size_of::<T>()
                })
                .sum();
            let mut buf = Vec::with_capacity(len);
            for piece in pieces {
                let src = source(piece.patch).ok_or_else(|| {
                    DistError::Distribution(format!(
                        "rank {}: sending patch index {} to rank {to}, which this rank does not hold",
                        self.rank, piece.patch
                    ))
                })?;
                pack(src, &piece.region, &mut buf)?;
            }
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
    /// `dest.patch_mut(i)`.
    pub fn receive_into<T: Real>(
        &self,
        t: &mut (impl Transport + ?Sized),
        tag: Tag,
        dest: &mut impl PatchesMut<T>,
    ) -> Result<ExchangeCounts, DistError> {
        let mut counts = ExchangeCounts::default();
        for (from, pieces) in &self.recvs {
            let buf = t.recv(*from, tag)?;
            counts.received_messages += 1;
            counts.received_bytes += buf.len();
            let malformed = |why: String| DistError::Malformed {
                rank: self.rank,
                from: *from,
                tag,
                why,
            };
            let mut at = 0;
            for piece in pieces {
                let dst = dest.patch_mut(piece.patch).ok_or_else(|| {
                    malformed(format!("no place for patch index {}", piece.patch))
                })?;
                at = unpack(dst, &piece.region, &buf, at).map_err(malformed)?;
            }
            if at != buf.len() {
                return Err(malformed(format!(
                    "{} bytes, the plan accounts for {at}",
                    buf.len()
                )));
            }
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
            ..self
        }
    }
}

fn pack<T: Real>(
    src: &PatchData<T>,
    region: &IndexBox,
    buf: &mut Vec<u8>,
) -> Result<(), DistError> {
    if !src.interior().contains_box(region) {
        return Err(DistError::Distribution(format!(
            "piece {region} lies outside its patch's interior {}",
            src.interior()
        )));
    }
    let nx = (region.hi.x - region.lo.x + 1) as usize;
    for c in 0..src.ncomp() {
        let comp = src.comp(c);
        for z in region.lo.z..=region.hi.z {
            for y in region.lo.y..=region.hi.y {
                let o = src.index(&quilt_mesh::iv(region.lo.x, y, z));
                buf.extend_from_slice(bytemuck::cast_slice(&comp[o..o + nx]));
            }
        }
    }
    Ok(())
}

fn unpack<T: Real>(
    dst: &mut PatchData<T>,
    region: &IndexBox,
    buf: &[u8],
    mut at: usize,
) -> Result<usize, String> {
    if !dst.interior().contains_box(region) {
        return Err(format!(
            "piece {region} lies outside the shadow's interior {}",
            dst.interior()
        ));
    }
    let nx = (region.hi.x - region.lo.x + 1) as usize;
    let row = nx * size_of::<T>();
    for c in 0..dst.ncomp() {
        for z in region.lo.z..=region.hi.z {
            for y in region.lo.y..=region.hi.y {
                let bytes = buf
                    .get(at..at + row)
                    .ok_or_else(|| format!("{} bytes end inside piece {region}", buf.len()))?;
                let o = dst.index(&quilt_mesh::iv(region.lo.x, y, z));
                // The buffer has no alignment guarantee: copy bytewise.
                bytemuck::cast_slice_mut::<T, u8>(&mut dst.comp_mut(c)[o..o + nx])
                    .copy_from_slice(bytes);
                at += row;
            }
        }
    }
    Ok(at)
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
}

impl<T: Real> PatchesMut<T> for Shadows<T> {
    fn patch_mut(&mut self, index: usize) -> Option<&mut PatchData<T>> {
        self.get_mut(index)
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
