//! One integrator per rank: each rank solves the patches a
//! [`Distribution`] gives it, and exchanges with its peers exactly the
//! data the serial step would have read across the cut.
//!
//! Every rank holds the whole hierarchy and a full-size state (only its
//! own patches' values are kept current; the others hold what was last
//! received, or nothing meaningful). Per step:
//!
//! 1. the CFL rate of the rank's patches, reduced to the global minimum
//!    time step (exact);
//! 2. the old interiors the fill of the rank's patches reads from other
//!    ranks ([`HaloPlan::for_fill`]), received into the old state;
//! 3. the batch loop over the rank's bins (its patches and the flux probes
//!    of its coarse patches);
//! 4. the flux blocks that the rank's flux-register shares need (fine
//!    patches and probes of other ranks next to its coarse patches);
//! 5. level by level, finest first: refluxing, then restriction, each rank
//!    restricting its own fine patches (onto its own coarse patches in
//!    place, onto other ranks' into the coarse values it sends them);
//! 6. the step report: cells and floors summed, the Courant number's
//!    maximum (all exact).
//!
//! Every value a rank's patch gets is computed from the same bits, by the
//! same code and in the same order as in a serial run, so a run over any
//! number of ranks is bitwise the serial run.

use quilt_dist::{
    Distribution, ExchangeCounts, HaloPlan, Piece, Tag, Transport, fill_message, piece_bytes,
    unpack,
};
use quilt_mesh::regrid::interpolated_cells;
use quilt_mesh::restrict::{covered_coarse_cells, restrict_into};
use quilt_mesh::tag::TagBox;
use quilt_mesh::{Hierarchy, HierarchyData, Real, TimeLevel};
use quilt_sweep::StepReport;

use crate::error::IntegratorError;
use crate::plan::{FluxStore, PlanLayout};

const TAG_FILL: Tag = 100;
const TAG_FLUX: Tag = 101;
const TAG_REPORT: Tag = 102;
const TAG_TAGS: Tag = 103;
const TAG_MOVE: Tag = 104;
const TAG_GATHER: Tag = 105;
const TAG_AGREE: Tag = 106;
/// The coarse cells the transfer onto level `l` reads use
/// `TAG_COARSE + l`.
const TAG_COARSE: Tag = 300;
/// Restriction onto level `l − 1` uses `TAG_RESTRICT + l`.
const TAG_RESTRICT: Tag = 200;

/// A flux block the register shares of another rank need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    /// The flux block of a fine patch.
    Fine(usize),
    /// The flux block of a probe.
    Probe(usize),
}

/// The ranks of a run and what this one exchanges with the others.
pub(crate) struct Ranks {
    transport: Box<dyn Transport>,
    dist: Distribution,
    owned: Vec<bool>,
    fill: HaloPlan,
    /// `restrict[l − 1]`: the fine pieces restriction onto level `l − 1`
    /// reads.
    restrict: Vec<HaloPlan>,
    /// Whether this rank accumulates fine patch `f`'s register share
    /// (some coarse patch it owns lies next to `f`).
    relevant: Vec<bool>,
    flux_sends: Vec<(usize, Vec<Block>)>,
    flux_recvs: Vec<(usize, Vec<Block>)>,
    /// Whether steps run boundary-first (see [`Ranks::set_overlap`]).
    overlap: bool,
    /// Per bin of the rank's step plan: whether it holds a patch whose
    /// flux blocks another rank needs (batched first when overlapping).
    first_bins: Vec<bool>,
    /// Per `flux_sends` entry: the patches (fine patches, coarse patches
    /// of probes) whose close completes its blocks.
    producers: Vec<Vec<usize>>,
    /// Per patch: the `flux_sends` entries it helps complete.
    produces: Vec<Vec<usize>>,
    /// This step: per `flux_sends` entry, producers not closed yet, and
    /// whether it was posted.
    pending: Vec<usize>,
    posted: Vec<bool>,
    begun: bool,
    /// This step: per `flux_recvs` entry, the message if it arrived while
    /// the batch loop ran.
    early: Vec<Option<Vec<u8>>>,
    /// Regrids that adopted a fresh distribution.
    pub fresh: u64,
    /// Seconds spent in exchanges (posting, waiting, unpacking) by kind:
    /// old interiors for the fill, flux blocks, restriction (all waits
    /// included).
    pub halo_by_kind: [f64; 3],
    /// Volume and the pack / wait / unpack split of the exchanges, by the
    /// kinds of [`Ranks::halo_by_kind`].
    pub halo_counts: [ExchangeCounts; 3],
}

/// Indices of [`Ranks::halo_by_kind`].
const HALO_OLD: usize = 0;
const HALO_FLUX: usize = 1;
const HALO_RESTRICT: usize = 2;

impl std::fmt::Debug for Ranks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ranks")
            .field("rank", &self.rank())
            .field("size", &self.size())
            .finish()
    }
}

impl Ranks {
    /// This rank of `transport`'s with `dist` over `h`, whose step plan
    /// (all patches' probes) is `layout`.
    pub fn new<T: Real>(
        transport: Box<dyn Transport>,
        dist: Distribution,
        h: &Hierarchy,
        layout: &PlanLayout<T>,
    ) -> Result<Self, IntegratorError> {
        if dist.ranks() != transport.size() || dist.len() != h.num_patches() {
            return Err(IntegratorError::Internal(format!(
                "a distribution of {} patches over {} ranks for {} patches and {} ranks",
                dist.len(),
                dist.ranks(),
                h.num_patches(),
                transport.size()
            )));
        }
        let mut me = Self {
            transport,
            dist,
            owned: Vec::new(),
            fill: HaloPlan::default(),
            restrict: Vec::new(),
            relevant: Vec::new(),
            flux_sends: Vec::new(),
            flux_recvs: Vec::new(),
            overlap: true,
            first_bins: Vec::new(),
            producers: Vec::new(),
            produces: Vec::new(),
            pending: Vec::new(),
            posted: Vec::new(),
            begun: false,
            early: Vec::new(),
            fresh: 0,
            halo_by_kind: [0.0; 3],
            halo_counts: [ExchangeCounts::default(); 3],
        };
        me.plan(h, layout);
        Ok(me)
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.transport.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> usize {
        self.transport.size()
    }

    /// The distribution of the current hierarchy.
    pub fn distribution(&self) -> &Distribution {
        &self.dist
    }

    /// Which patches this rank owns, by hierarchy index.
    pub fn owned(&self) -> &[bool] {
        &self.owned
    }

    /// Derives every exchange of the current distribution over `h`.
    fn plan<T: Real>(&mut self, h: &Hierarchy, layout: &PlanLayout<T>) {
        let me = self.rank();
        let dist = &self.dist;
        self.owned = dist.mask(me);
        self.fill = HaloPlan::for_fill(layout.fill.plan(), dist, me);
        self.restrict = (1..h.num_levels())
            .map(|l| {
                let r = h.level_geometry(l).map_or(2, |g| g.ratio);
                HaloPlan::from_needs(dist, me, |c| {
                    let p = &h.patches()[c];
                    if p.level() + 1 != l {
                        return Vec::new();
                    }
                    let under = p.interior().refine(r);
                    h.patches_intersecting(l, &under)
                        .into_iter()
                        .map(|f| Piece {
                            patch: f,
                            region: h.patches()[f].interior().intersect(&under),
                        })
                        .collect()
                })
            })
            .collect();
        // The ranks owning a coarse patch next to each fine patch: those
        // accumulate its register share, so they need its fine block and
        // the blocks of its probes.
        let near: Vec<Vec<usize>> = h
            .patches()
            .iter()
            .map(|p| {
                let l = p.level();
                if l == 0 {
                    return Vec::new();
                }
                let r = h.level_geometry(l).map_or(2, |g| g.ratio);
                let around = p.interior().coarsen(r).grow(1);
                let shifts = h
                    .level_geometry(l - 1)
                    .map_or_else(|| vec![quilt_mesh::iv(0, 0, 0)], |g| g.periodic_shifts());
                let mut ranks: Vec<usize> = shifts
                    .iter()
                    .flat_map(|s| h.patches_intersecting(l - 1, &around.shift(s)))
                    .map(|c| dist.owner(c))
                    .collect();
                ranks.sort_unstable();
                ranks.dedup();
                ranks
            })
            .collect();
        self.relevant = near.iter().map(|r| r.contains(&me)).collect();
        let n = self.size();
        let mut sends = vec![Vec::new(); n];
        let mut recvs = vec![Vec::new(); n];
        for (f, ranks) in near.iter().enumerate() {
            for &r in ranks {
                let blocks = std::iter::once((Block::Fine(f), dist.owner(f))).chain(
                    layout.probes_of_fine[f]
                        .clone()
                        .map(|q| (Block::Probe(q), dist.owner(layout.probes[q].coarse))),
                );
                for (b, from) in blocks {
                    if from == r {
                        continue;
                    }
                    if from == me {
                        sends[r].push(b);
                    }
                    if r == me {
                        recvs[from].push(b);
                    }
                }
            }
        }
        let pairs = |v: Vec<Vec<Block>>| {
            v.into_iter()
                .enumerate()
                .filter(|(_, b)| !b.is_empty())
                .collect::<Vec<_>>()
        };
        self.flux_sends = pairs(sends);
        self.flux_recvs = pairs(recvs);
        let coarse_of = |b: &Block| match *b {
            Block::Fine(f) => f,
            Block::Probe(q) => layout.probes[q].coarse,
        };
        self.producers = self
            .flux_sends
            .iter()
            .map(|(_, blocks)| {
                let mut p: Vec<usize> = blocks.iter().map(coarse_of).collect();
                p.sort_unstable();
                p.dedup();
                p
            })
            .collect();
        self.produces = vec![Vec::new(); h.num_patches()];
        for (k, p) in self.producers.iter().enumerate() {
            for &i in p {
                self.produces[i].push(k);
            }
        }
        self.first_bins = layout
            .bins
            .iter()
            .map(|b| b.patches.iter().any(|&(i, _)| !self.produces[i].is_empty()))
            .collect();
        self.begun = false;
        log::debug!(
            "rank {me}: {} of {} bins hold patches whose flux blocks other ranks need; {} of {} own patches produce them",
            self.first_bins.iter().filter(|&&b| b).count(),
            self.first_bins.len(),
            self.produces.iter().filter(|p| !p.is_empty()).count(),
            self.owned.iter().filter(|&&o| o).count()
        );
    }

    /// Whether steps run boundary-first (the default): the bins whose flux
    /// blocks other ranks need are batched first, each message of blocks
    /// is posted as soon as the last of its patches is closed, and
    /// arrivals are taken between batches, so the transfers travel while
    /// the other bins are solved. Off, everything is exchanged after the
    /// batch loop. Results are bitwise the same either way.
    pub fn set_overlap(&mut self, on: bool) {
        self.overlap = on;
    }

    /// The bins to batch first this step (`None`: no order).
    pub fn first_bins(&self) -> Option<&[bool]> {
        (self.overlap && self.first_bins.iter().any(|&b| b)).then_some(&self.first_bins[..])
    }

    /// Starts a step's flux bookkeeping.
    pub fn begin_step(&mut self) {
        self.pending.clear();
        self.pending.extend(self.producers.iter().map(Vec::len));
        self.posted.clear();
        self.posted.resize(self.flux_sends.len(), false);
        self.early.clear();
        self.early.resize(self.flux_recvs.len(), None);
        self.begun = true;
    }

    /// Between batches: `closed` patches are done; posts every message of
    /// flux blocks whose patches are all closed, and takes flux messages
    /// that have arrived.
    pub fn after_close<T: Real>(
        &mut self,
        closed: impl Iterator<Item = usize>,
        fluxes: &FluxStore<T>,
    ) -> Result<(), IntegratorError> {
        if !self.polls() {
            return Ok(());
        }
        let start = std::time::Instant::now();
        for i in closed {
            for n in 0..self.produces.get(i).map_or(0, Vec::len) {
                let k = self.produces[i][n];
                self.pending[k] = self.pending[k].saturating_sub(1);
                if self.pending[k] == 0 && !self.posted[k] {
                    self.post_flux(k, fluxes)?;
                }
            }
        }
        self.take_arrived()?;
        self.count(HALO_FLUX, start);
        Ok(())
    }

    /// Seconds spent in exchanges, all kinds.
    pub fn halo_secs(&self) -> f64 {
        self.halo_by_kind.iter().sum()
    }

    /// Adds the time since `start` to exchange kind `kind`.
    fn count(&mut self, kind: usize, start: std::time::Instant) {
        self.halo_by_kind[kind] += start.elapsed().as_secs_f64();
    }

    /// Takes the flux messages of this step that have arrived.
    fn take_arrived(&mut self) -> Result<(), IntegratorError> {
        for (e, (from, _)) in self.early.iter_mut().zip(&self.flux_recvs) {
            if e.is_none() {
                *e = self.transport.try_recv(*from, TAG_FLUX)?;
            }
        }
        Ok(())
    }

    /// Whether [`Ranks::poll`] has anything to do this step.
    pub fn polls(&self) -> bool {
        self.overlap && self.begun
    }

    /// While the batch loop works on other threads: drives the posted
    /// sends and takes the flux messages that have arrived (MPI moves a
    /// large message only while both sides call into it). Its time is not
    /// counted as exchange time: the loop runs meanwhile.
    pub fn poll(&mut self) -> Result<(), IntegratorError> {
        if !self.polls() {
            return Ok(());
        }
        self.take_arrived()?;
        self.transport.progress()?;
        Ok(())
    }

    /// Posts `flux_sends[k]`.
    fn post_flux<T: Real>(
        &mut self,
        k: usize,
        fluxes: &FluxStore<T>,
    ) -> Result<(), IntegratorError> {
        let start = std::time::Instant::now();
        let (to, blocks) = &self.flux_sends[k];
        let sources: Vec<(&[u8], usize)> = blocks
            .iter()
            .map(|b| {
                let v = bytemuck::cast_slice::<T, u8>(match *b {
                    Block::Fine(f) => &fluxes.fine[f],
                    Block::Probe(q) => &fluxes.probes[q],
                });
                (v, v.len())
            })
            .collect();
        let Ok(buf) = fill_message(&mut *self.transport, sources, |s, part| {
            part.copy_from_slice(s);
            Ok::<_, std::convert::Infallible>(())
        });
        let c = &mut self.halo_counts[HALO_FLUX];
        c.pack_seconds += start.elapsed().as_secs_f64();
        c.sent_messages += 1;
        c.sent_bytes += buf.len();
        self.transport.send(*to, TAG_FLUX, buf)?;
        self.posted[k] = true;
        Ok(())
    }

    /// Adopts `dist` for `h` (after a regrid) and derives its exchanges.
    pub fn adopt<T: Real>(
        &mut self,
        dist: Distribution,
        h: &Hierarchy,
        layout: &PlanLayout<T>,
    ) -> Result<(), IntegratorError> {
        if dist.len() != h.num_patches() || dist.ranks() != self.size() {
            return Err(IntegratorError::Internal(
                "a distribution that does not fit the hierarchy".into(),
            ));
        }
        self.dist = dist;
        self.plan(h, layout);
        Ok(())
    }

    /// Whether this rank accumulates fine patch `f`'s register share.
    pub fn accumulates(&self, f: usize) -> bool {
        self.relevant.get(f).copied().unwrap_or(false)
    }

    /// The global minimum of `x` (NaN anywhere gives NaN everywhere).
    pub fn all_min(&mut self, x: f64) -> Result<f64, IntegratorError> {
        Ok(self.transport.all_min(x)?)
    }

    /// Step 2: the old interiors other ranks' fills read.
    pub fn exchange_old<T: Real>(
        &mut self,
        data: &mut HierarchyData<T>,
    ) -> Result<(), IntegratorError> {
        let start = std::time::Instant::now();
        let c = self
            .fill
            .exchange_states(&mut *self.transport, TAG_FILL, data, TimeLevel::Old)?;
        self.halo_counts[HALO_OLD].add(&c);
        self.count(HALO_OLD, start);
        Ok(())
    }

    /// Step 4: the flux blocks other ranks' register shares need.
    pub fn exchange_fluxes<T: Real>(
        &mut self,
        fluxes: &mut FluxStore<T>,
    ) -> Result<(), IntegratorError> {
        let start = std::time::Instant::now();
        if !self.begun {
            self.begin_step();
        }
        for k in 0..self.flux_sends.len() {
            if !self.posted[k] {
                self.post_flux(k, fluxes)?;
            }
        }
        let t = &mut *self.transport;
        let me = t.rank();
        let counts = &mut self.halo_counts[HALO_FLUX];
        for ((from, blocks), early) in self.flux_recvs.iter().zip(&mut self.early) {
            let waited = std::time::Instant::now();
            let buf = match early.take() {
                Some(b) => b,
                None => t.recv(*from, TAG_FLUX)?,
            };
            let unpacking = std::time::Instant::now();
            counts.wait_seconds += (unpacking - waited).as_secs_f64();
            counts.received_messages += 1;
            counts.received_bytes += buf.len();
            let mut at = 0;
            for b in blocks {
                let v = match *b {
                    Block::Fine(f) => &mut fluxes.fine[f],
                    Block::Probe(q) => &mut fluxes.probes[q],
                };
                let dst = bytemuck::cast_slice_mut::<T, u8>(v);
                let src = buf.get(at..at + dst.len()).ok_or_else(|| {
                    quilt_dist::DistError::Malformed {
                        rank: me,
                        from: *from,
                        tag: TAG_FLUX,
                        why: format!("{} bytes end inside the flux blocks", buf.len()),
                    }
                })?;
                dst.copy_from_slice(src);
                at += dst.len();
            }
            if at != buf.len() {
                return Err(quilt_dist::DistError::Malformed {
                    rank: me,
                    from: *from,
                    tag: TAG_FLUX,
                    why: format!("{} bytes, the flux blocks take {at}", buf.len()),
                }
                .into());
            }
            t.recycle(buf);
            counts.unpack_seconds += unpacking.elapsed().as_secs_f64();
        }
        t.flush()?;
        // The next step starts its bookkeeping afresh.
        self.begun = false;
        self.count(HALO_FLUX, start);
        Ok(())
    }

    /// Step 5's first half for fine level `l`: posts, for each coarse
    /// patch another rank owns, the restriction of this rank's fine
    /// patches over it (the coarse values, bitwise what the coarse owner
    /// would compute from the fine interiors, at 1/r³ of their volume).
    pub fn post_restriction<T: Real>(
        &mut self,
        h: &Hierarchy,
        l: usize,
        data: &HierarchyData<T>,
    ) -> Result<(), IntegratorError> {
        let Some((plan, ratio, tag)) = restriction(&self.restrict, h, l) else {
            return Ok(());
        };
        let start = std::time::Instant::now();
        let counts = &mut self.halo_counts[HALO_RESTRICT];
        for (to, pieces) in plan.sends() {
            let mut jobs = Vec::with_capacity(pieces.len());
            for piece in pieces {
                let fine = data.get(piece.patch).map(|s| &s.new).ok_or_else(|| {
                    IntegratorError::Internal(format!(
                        "restriction: no fine patch index {}",
                        piece.patch
                    ))
                })?;
                let region = covered_coarse_cells(&piece.region, ratio);
                jobs.push(((fine, region), piece_bytes::<T>(&region, fine.ncomp())));
            }
            // The message's bytes have no alignment for `T`: each piece is
            // restricted into values of its own, then copied.
            let buf = fill_message(&mut *self.transport, jobs, |(fine, region), part| {
                let mut values = vec![T::zero(); part.len() / size_of::<T>()];
                restrict_into(fine, &region, ratio, &mut values)?;
                part.copy_from_slice(bytemuck::cast_slice(&values));
                Ok::<_, quilt_mesh::MeshError>(())
            })
            .map_err(IntegratorError::mesh(format!(
                "restricting level {l} for rank {to}"
            )))?;
            counts.sent_messages += 1;
            counts.sent_bytes += buf.len();
            self.transport.send(*to, tag, buf)?;
        }
        counts.pack_seconds += start.elapsed().as_secs_f64();
        self.count(HALO_RESTRICT, start);
        Ok(())
    }

    /// Step 5's second half for fine level `l`, after this rank restricted
    /// its own pairs: the coarse values other ranks restricted onto this
    /// rank's coarse patches, written into their new time level.
    pub fn receive_restriction<T: Real>(
        &mut self,
        h: &Hierarchy,
        l: usize,
        data: &mut HierarchyData<T>,
    ) -> Result<(), IntegratorError> {
        let Some((plan, ratio, tag)) = restriction(&self.restrict, h, l) else {
            return Ok(());
        };
        let start = std::time::Instant::now();
        let me = self.transport.rank();
        let counts = &mut self.halo_counts[HALO_RESTRICT];
        for (from, pieces) in plan.recvs() {
            let waited = std::time::Instant::now();
            let buf = self.transport.recv(*from, tag)?;
            let unpacking = std::time::Instant::now();
            counts.wait_seconds += (unpacking - waited).as_secs_f64();
            counts.received_messages += 1;
            counts.received_bytes += buf.len();
            let malformed = |why: String| quilt_dist::DistError::Malformed {
                rank: me,
                from: *from,
                tag,
                why,
            };
            let mut at = 0;
            for piece in pieces {
                let region = covered_coarse_cells(&piece.region, ratio);
                let c = h
                    .patches_intersecting(l - 1, &region)
                    .into_iter()
                    .find(|&c| h.patches()[c].interior().contains_box(&region))
                    .ok_or_else(|| malformed(format!("no coarse patch holds {region}")))?;
                let dst = data
                    .get_mut(c)
                    .map(|s| &mut s.new)
                    .ok_or_else(|| malformed(format!("no coarse patch index {c}")))?;
                let n = piece_bytes::<T>(&region, dst.ncomp());
                let bytes = buf.get(at..at + n).ok_or_else(|| {
                    malformed(format!(
                        "{} bytes end inside the restriction of {region}",
                        buf.len()
                    ))
                })?;
                unpack(dst, &region, bytes);
                at += n;
            }
            if at != buf.len() {
                return Err(
                    malformed(format!("{} bytes, the plan accounts for {at}", buf.len())).into(),
                );
            }
            self.transport.recycle(buf);
            counts.unpack_seconds += unpacking.elapsed().as_secs_f64();
        }
        self.transport.flush()?;
        self.count(HALO_RESTRICT, start);
        Ok(())
    }

    /// Step 6: the step report of all ranks (cells and floors summed, the
    /// largest Courant number).
    pub fn combine_report(&mut self, r: StepReport) -> Result<StepReport, IntegratorError> {
        let mut mine = Vec::with_capacity(32);
        mine.extend_from_slice(&r.cells.to_le_bytes());
        mine.extend_from_slice(&r.floors.density.to_le_bytes());
        mine.extend_from_slice(&r.floors.pressure.to_le_bytes());
        mine.extend_from_slice(&r.courant.to_le_bytes());
        let all = self.transport.all_gather(mine)?;
        let mut out = StepReport {
            dt: r.dt,
            ..StepReport::default()
        };
        out.courant = 0.0;
        for (from, b) in all.iter().enumerate() {
            let word = |k: usize| -> Result<[u8; 8], IntegratorError> {
                b.get(8 * k..8 * k + 8)
                    .and_then(|s| s.try_into().ok())
                    .ok_or_else(|| {
                        quilt_dist::DistError::Malformed {
                            rank: self.transport.rank(),
                            from,
                            tag: TAG_REPORT,
                            why: format!("a step report of {} bytes", b.len()),
                        }
                        .into()
                    })
            };
            out.cells += u64::from_le_bytes(word(0)?);
            out.floors.density += u64::from_le_bytes(word(1)?);
            out.floors.pressure += u64::from_le_bytes(word(2)?);
            out.courant = out.courant.max(f64::from_le_bytes(word(3)?));
        }
        Ok(out)
    }

    /// Every patch's tag field on every rank, from each rank's fields of
    /// its own patches (`tags`, one per patch, the others empty): the
    /// clustering input of a serial run.
    pub fn gather_tags(
        &mut self,
        h: &Hierarchy,
        mut tags: Vec<TagBox>,
    ) -> Result<Vec<TagBox>, IntegratorError> {
        let mut mine = Vec::new();
        let mut words = Vec::new();
        for (i, t) in tags.iter().enumerate() {
            if !self.owned.get(i).copied().unwrap_or(false) || !t.any() {
                continue;
            }
            words.resize(tag_words(&t.region()), 0u32);
            t.to_words(&mut words);
            mine.extend_from_slice(&(i as u64).to_le_bytes());
            mine.extend_from_slice(bytemuck::cast_slice(&words));
        }
        let all = self.transport.all_gather(mine)?;
        let me = self.rank();
        for (from, b) in all.iter().enumerate() {
            let bad = |why: String| quilt_dist::DistError::Malformed {
                rank: me,
                from,
                tag: TAG_TAGS,
                why,
            };
            let mut at = 0;
            while at < b.len() {
                let i = b
                    .get(at..at + 8)
                    .map(|w| u64::from_le_bytes(w.try_into().unwrap_or_default()) as usize)
                    .filter(|&i| i < h.num_patches())
                    .ok_or_else(|| bad(format!("a patch index at byte {at}")))?;
                at += 8;
                let region = h.patches()[i].interior();
                let n = 4 * tag_words(&region);
                let raw = b
                    .get(at..at + n)
                    .ok_or_else(|| bad(format!("the tags of patch index {i} end early")))?;
                at += n;
                let w: Vec<u32> = raw
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                tags[i] = TagBox::from_words(region, &w).map_err(|e| bad(e.to_string()))?;
            }
        }
        Ok(tags)
    }

    /// Before a regrid's transfer: the old interiors (of `old_h`, owned by
    /// this run's distribution) that the new patches of this rank (under
    /// `new_dist`) copy, received into the old state.
    pub fn exchange_for_transfer<T: Real>(
        &mut self,
        old_h: &Hierarchy,
        new_h: &Hierarchy,
        new_dist: &Distribution,
        data: &mut HierarchyData<T>,
    ) -> Result<(), IntegratorError> {
        let me = self.rank();
        let plan = HaloPlan::between(&self.dist, new_dist, me, |q| {
            let p = &new_h.patches()[q];
            if p.level() >= old_h.num_levels() {
                return Vec::new();
            }
            old_h
                .patches_intersecting(p.level(), &p.interior())
                .into_iter()
                .map(|o| Piece {
                    patch: o,
                    region: old_h.patches()[o].interior().intersect(&p.interior()),
                })
                .collect()
        });
        plan.exchange_states(&mut *self.transport, TAG_MOVE, data, TimeLevel::Old)?;
        Ok(())
    }

    /// The exchanges inside a regrid's transfer: for each new level
    /// `l ≥ 1` (index `l − 1`), the new coarse cells that the
    /// interpolation onto this rank's new patches of level `l` reads
    /// (the cells no old patch covers, their coarse cells grown by the
    /// slope stencil; unchanged patches read none).
    pub fn coarse_plans(
        &self,
        old_h: &Hierarchy,
        new_h: &Hierarchy,
        new_dist: &Distribution,
    ) -> Vec<HaloPlan> {
        let me = self.rank();
        (1..new_h.num_levels())
            .map(|l| {
                let ratio = new_h.level_geometry(l).map_or(2, |g| g.ratio);
                let coarse_domain = new_h
                    .level_geometry(l - 1)
                    .map_or_else(quilt_mesh::IndexBox::empty, |g| g.domain);
                HaloPlan::from_needs(new_dist, me, |q| {
                    let p = &new_h.patches()[q];
                    if p.level() != l {
                        return Vec::new();
                    }
                    let interior = p.interior();
                    let (olds, _, cbox) =
                        interpolated_cells(old_h, &interior, l, ratio, &coarse_domain);
                    // An unchanged patch moves whole and reads nothing.
                    if olds
                        .iter()
                        .any(|&o| old_h.patches()[o].interior() == interior)
                    {
                        return Vec::new();
                    }
                    let Some(cbox) = cbox else {
                        return Vec::new();
                    };
                    new_h
                        .patches_intersecting(l - 1, &cbox)
                        .into_iter()
                        .map(|c| Piece {
                            patch: c,
                            region: cbox.intersect(&new_h.patches()[c].interior()),
                        })
                        .collect()
                })
            })
            .collect()
    }

    /// Runs `coarse[l − 1]` (of [`Ranks::coarse_plans`]) on the new old
    /// state.
    pub fn exchange_coarse<T: Real>(
        &mut self,
        coarse: &[HaloPlan],
        l: usize,
        new: &mut HierarchyData<T>,
    ) -> Result<(), IntegratorError> {
        let Some(plan) = coarse.get(l.wrapping_sub(1)) else {
            return Ok(());
        };
        let tag = TAG_COARSE + l as Tag;
        plan.exchange_states(&mut *self.transport, tag, new, TimeLevel::Old)?;
        Ok(())
    }

    /// Gathers every patch's old interior onto `root`: afterwards `root`'s
    /// old state holds every patch as its owner does (the ghost cells and
    /// the new time level are not sent). Every rank must call it at the
    /// same point.
    pub fn gather_old<T: Real>(
        &mut self,
        h: &Hierarchy,
        root: usize,
        data: &mut HierarchyData<T>,
    ) -> Result<(), IntegratorError> {
        let onto = Distribution::new(vec![root; h.num_patches()], self.size())?;
        let plan = HaloPlan::between(&self.dist, &onto, self.rank(), |t| {
            vec![Piece {
                patch: t,
                region: h.patches()[t].interior(),
            }]
        });
        plan.exchange_states(&mut *self.transport, TAG_GATHER, data, TimeLevel::Old)?;
        Ok(())
    }

    /// The sum of `x` over all ranks.
    pub fn sum(&mut self, x: u64) -> Result<u64, IntegratorError> {
        let all = self.transport.all_gather(x.to_le_bytes().to_vec())?;
        let mut total = 0u64;
        for (from, b) in all.iter().enumerate() {
            let w: [u8; 8] =
                b.as_slice()
                    .try_into()
                    .map_err(|_| quilt_dist::DistError::Malformed {
                        rank: self.rank(),
                        from,
                        tag: TAG_AGREE,
                        why: format!("a count of {} bytes", b.len()),
                    })?;
            total = total.wrapping_add(u64::from_le_bytes(w));
        }
        Ok(total)
    }

    /// `mine` on every rank when all ranks succeeded; otherwise every rank
    /// returns an error: its own, or one naming the first rank that failed
    /// at `what` and why. Every rank must call it at the same point.
    pub fn agree(
        &mut self,
        what: &str,
        mine: Result<(), IntegratorError>,
    ) -> Result<(), IntegratorError> {
        let text = match &mine {
            Ok(()) => Vec::new(),
            Err(e) => e.to_string().into_bytes(),
        };
        let all = self.transport.all_gather(text)?;
        mine?;
        match all.iter().position(|b| !b.is_empty()) {
            None => Ok(()),
            Some(r) => Err(IntegratorError::Config(format!(
                "rank {r} failed at {what}: {}",
                String::from_utf8_lossy(&all[r])
            ))),
        }
    }

    /// `per` values of each patch of `range`, gathered from the ranks
    /// owning them: `value(i, out)` pushes the `per` values of patch `i`,
    /// and is called on each rank for its own patches of `range`; the
    /// result holds every patch's, in patch order.
    pub fn gather_patch_values(
        &mut self,
        range: std::ops::Range<usize>,
        per: usize,
        mut value: impl FnMut(usize, &mut Vec<f64>),
    ) -> Result<Vec<f64>, IntegratorError> {
        let mut mine = Vec::new();
        for i in range.clone().filter(|&i| self.owned[i]) {
            value(i, &mut mine);
        }
        let all = self
            .transport
            .all_gather(bytemuck::cast_slice::<f64, u8>(&mine).to_vec())?;
        let mut out = vec![0.0; range.len() * per];
        let mut at = vec![0usize; all.len()];
        for i in range.clone() {
            let r = self.dist.owner(i);
            let b = &all[r];
            let n = 8 * per;
            let bytes =
                b.get(at[r]..at[r] + n)
                    .ok_or_else(|| quilt_dist::DistError::Malformed {
                        rank: self.transport.rank(),
                        from: r,
                        tag: TAG_REPORT,
                        why: format!("{} bytes of patch values end early", b.len()),
                    })?;
            at[r] += n;
            for (k, w) in bytes.chunks_exact(8).enumerate() {
                out[(i - range.start) * per + k] =
                    f64::from_le_bytes(w.try_into().unwrap_or_default());
            }
        }
        Ok(out)
    }
}

/// The restriction exchange of fine level `l` among `restrict` (the
/// plans by fine level): its plan, the level's ratio and its tag.
fn restriction<'a>(
    restrict: &'a [HaloPlan],
    h: &Hierarchy,
    l: usize,
) -> Option<(&'a HaloPlan, i32, Tag)> {
    let plan = restrict.get(l.wrapping_sub(1))?;
    let ratio = h.level_geometry(l).map_or(2, |g| g.ratio);
    Some((plan, ratio, TAG_RESTRICT + l as Tag))
}

/// 32-bit words of a tag field over `region` (see `TagBox::to_words`).
fn tag_words(region: &quilt_mesh::IndexBox) -> usize {
    let n = region.size();
    2 * (n.x as usize).div_ceil(64) * n.y as usize * n.z as usize
}
