//! Initial conditions: cell averages of conserved variables, by sampling
//! each cell at `SAMPLES³` points (so a sphere or a plane cutting a cell
//! gives the volume-weighted mix, and the initial state does not depend on
//! which level a region happens to be on more than the cell size allows).
//!
//! The Sedov deposit is normalised by the volume its sample points
//! actually cover on each level (see [`InitialCondition::sedov_volume`]),
//! so every level holds exactly the deck's blast energy: the analytic
//! `4/3 π r³` would miss it by the discretisation of a sphere a few cells
//! across, which is a bias in the blast energy and hence (as `E^(1/5)`) in
//! the shock radius.

use std::sync::OnceLock;

use quilt_mesh::{LevelGeometry, iv};

use crate::deck::{Deck, InitialKind};

/// Sample points per axis in each cell.
const SAMPLES: usize = 4;

/// Most sample points per axis across the Sedov deposit for which its
/// lattice volume is counted (the count visits the square of this many
/// rows); beyond it the lattice volume is within about `(2/SPAN)^1.5` of
/// the analytic one and that is used instead.
const MAX_DEPOSIT_SPAN: usize = 4096;

/// Offset of sample `n` of a cell in units of the cell size.
fn sample_offset(n: usize) -> f64 {
    (n as f64 + 0.5) / SAMPLES as f64
}

/// Squared distance along one axis.
fn offset2(x: f64, c: f64) -> f64 {
    (x - c) * (x - c)
}

/// Whether a point at squared axis offsets `d2` from the centre lies within
/// `r`. Both the deposit and its volume count test points through this one
/// expression, so they agree on every point, bit for bit.
fn within(d2: [f64; 3], r: f64) -> bool {
    (d2[0] + d2[1] + d2[2]).sqrt() <= r
}

/// The average of `SAMPLES³` samples that all equal `u`, summed one after
/// another as the sampled average sums them (so bit for bit the same),
/// remembered per thread for the few states an initial condition has.
fn repeated_average(u: [f64; 5]) -> [f64; 5] {
    thread_local! {
        static SEEN: std::cell::RefCell<Vec<([u64; 5], [f64; 5])>> =
            const { std::cell::RefCell::new(Vec::new()) };
    }
    let key = u.map(f64::to_bits);
    SEEN.with_borrow_mut(|seen| {
        if let Some((_, avg)) = seen.iter().find(|(k, _)| *k == key) {
            return *avg;
        }
        let mut sum = [0.0; 5];
        for _ in 0..SAMPLES * SAMPLES * SAMPLES {
            for c in 0..5 {
                sum[c] += u[c];
            }
        }
        let avg = sum.map(|s| s / (SAMPLES * SAMPLES * SAMPLES) as f64);
        if seen.len() >= 16 {
            seen.remove(0);
        }
        seen.push((key, avg));
        avg
    })
}

/// The Sedov deposit's volume on one level's sample lattice, with the
/// lattice it was counted on.
#[derive(Clone, Copy, Debug, PartialEq)]
struct LatticeVolume {
    prob_lo: [f64; 3],
    dx: [f64; 3],
    volume: f64,
}

/// The initial condition of a deck as a function of position, giving the
/// primitive state `[rho, u, v, w, p]`.
#[derive(Clone, Debug)]
pub struct InitialCondition {
    kind: InitialKind,
    deck: Deck,
    gamma: f64,
    /// Per level, the Sedov deposit volume, counted on first use.
    sedov_volumes: Vec<OnceLock<LatticeVolume>>,
}

impl InitialCondition {
    /// The deck's initial condition (the deck is assumed validated).
    pub fn new(deck: &Deck) -> Self {
        Self {
            kind: deck.initial.kind,
            deck: deck.clone(),
            gamma: deck.hydro.gamma,
            sedov_volumes: (0..deck.amr.max_levels).map(|_| OnceLock::new()).collect(),
        }
    }

    /// Primitive state `[rho, u, v, w, p]` at point `x`. Inside the Sedov
    /// deposit the pressure is the point value `p_ambient + (γ−1) E / V`
    /// with `V` the analytic sphere volume; [`Self::cell_average`] uses the
    /// level's lattice volume instead.
    pub fn primitive(&self, x: [f64; 3]) -> [f64; 5] {
        let s = &self.deck.initial.sedov;
        self.primitive_with(x, self.sedov_pressure(analytic_volume(s.radius)))
    }

    /// Pressure inside the Sedov deposit when it covers volume `volume`:
    /// the ambient gas plus the blast energy spread over that volume.
    fn sedov_pressure(&self, volume: f64) -> f64 {
        let s = &self.deck.initial.sedov;
        s.p_ambient + (self.gamma - 1.0) * s.energy / volume
    }

    /// [`Self::primitive`] with the Sedov deposit's pressure given.
    fn primitive_with(&self, x: [f64; 3], sedov_p: f64) -> [f64; 5] {
        self.state_at(x, sedov_p).0
    }

    /// [`Self::primitive_with`] and whether `x` holds the *marked* gas,
    /// which the deck's passive scalars follow: inside the sphere or the
    /// Sedov deposit, the Riemann problem's left state, everywhere for a
    /// uniform state.
    fn state_at(&self, x: [f64; 3], sedov_p: f64) -> ([f64; 5], bool) {
        let i = &self.deck.initial;
        let dist = |c: [f64; 3]| {
            ((x[0] - c[0]).powi(2) + (x[1] - c[1]).powi(2) + (x[2] - c[2]).powi(2)).sqrt()
        };
        match self.kind {
            InitialKind::Sphere => {
                let s = &i.sphere;
                if dist(s.center) <= s.radius {
                    ([s.rho_in, 0.0, 0.0, 0.0, s.p_in], true)
                } else {
                    ([s.rho_out, 0.0, 0.0, 0.0, s.p_out], false)
                }
            }
            InitialKind::Sedov => {
                let s = &i.sedov;
                let d2 = std::array::from_fn(|a| offset2(x[a], s.center[a]));
                if within(d2, s.radius) {
                    ([s.rho, 0.0, 0.0, 0.0, sedov_p], true)
                } else {
                    ([s.rho, 0.0, 0.0, 0.0, s.p_ambient], false)
                }
            }
            InitialKind::Riemann => {
                let s = &i.riemann;
                let a = s.axis.index();
                let left = x[a] < s.x0;
                let st = if left { s.left } else { s.right };
                let mut v = [0.0; 3];
                v[a] = st[1];
                ([st[0], v[0], v[1], v[2], st[2]], left)
            }
            InitialKind::Uniform => {
                let s = &i.uniform;
                (
                    [s.rho, s.velocity[0], s.velocity[1], s.velocity[2], s.p],
                    true,
                )
            }
        }
    }

    /// Conserved state `[rho, rho u, rho v, rho w, E]` at point `x`.
    pub fn conserved(&self, x: [f64; 3]) -> [f64; 5] {
        self.to_conserved(self.primitive(x))
    }

    fn to_conserved(&self, [rho, u, v, w, p]: [f64; 5]) -> [f64; 5] {
        [
            rho,
            rho * u,
            rho * v,
            rho * w,
            p / (self.gamma - 1.0) + 0.5 * rho * (u * u + v * v + w * w),
        ]
    }

    /// Cell average of the conserved state over cell `p` of level `lg`.
    pub fn cell_average(&self, lg: &LevelGeometry, p: &quilt_mesh::IntVect) -> [f64; 5] {
        self.cell_average_marked(lg, p).0
    }

    /// [`Self::cell_average`] and the cell average of the marked gas's
    /// density (see `state_at`): the partial density the deck's passive
    /// scalars start with. It equals the cell's density bit for bit where
    /// the whole cell is marked.
    pub fn cell_average_marked(
        &self,
        lg: &LevelGeometry,
        p: &quilt_mesh::IntVect,
    ) -> ([f64; 5], f64) {
        let sedov_p = match self.kind {
            InitialKind::Sedov => self.sedov_pressure(self.sedov_volume(lg)),
            _ => 0.0,
        };
        let lo = lg.cell_lo_corner(p);
        let dx = lg.dx;
        let sample = |i: usize, j: usize, k: usize| {
            [
                lo.x + sample_offset(i) * dx.x,
                lo.y + sample_offset(j) * dx.y,
                lo.z + sample_offset(k) * dx.z,
            ]
        };
        let mut sum = [0.0; 5];
        let mut marked = 0.0;
        let last = SAMPLES - 1;
        let n = (SAMPLES * SAMPLES * SAMPLES) as f64;
        if self.uniform_between(sample(0, 0, 0), sample(last, last, last)) {
            // Every sample has the state of the first: the same sums as
            // below, bit for bit, without evaluating each sample.
            let (w, inside) = self.state_at(sample(0, 0, 0), sedov_p);
            let avg = repeated_average(self.to_conserved(w));
            return (avg, if inside { avg[0] } else { 0.0 });
        } else {
            for k in 0..SAMPLES {
                for j in 0..SAMPLES {
                    for i in 0..SAMPLES {
                        let (w, inside) = self.state_at(sample(i, j, k), sedov_p);
                        let u = self.to_conserved(w);
                        for c in 0..5 {
                            sum[c] += u[c];
                        }
                        if inside {
                            marked += u[0];
                        }
                    }
                }
            }
        }
        (sum.map(|s| s / n), marked / n)
    }

    /// Whether the initial state is certainly the same at every point of
    /// the box `[lo, hi]` (the first and last sample of a cell): the box
    /// lies on one side of the Riemann interface, or inside or outside the
    /// sphere with a margin far above the rounding of the per-sample test.
    fn uniform_between(&self, lo: [f64; 3], hi: [f64; 3]) -> bool {
        let i = &self.deck.initial;
        let sphere_side = |c: [f64; 3], r: f64| {
            let (mut near, mut far) = (0.0, 0.0);
            for a in 0..3 {
                let (d0, d1) = ((lo[a] - c[a]).abs(), (hi[a] - c[a]).abs());
                let inside = lo[a] <= c[a] && c[a] <= hi[a];
                near += if inside { 0.0 } else { d0.min(d1).powi(2) };
                far += d0.max(d1).powi(2);
            }
            const MARGIN: f64 = 1e-9;
            far.sqrt() < r * (1.0 - MARGIN) || near.sqrt() > r * (1.0 + MARGIN)
        };
        match self.kind {
            InitialKind::Sphere => sphere_side(i.sphere.center, i.sphere.radius),
            InitialKind::Sedov => sphere_side(i.sedov.center, i.sedov.radius),
            InitialKind::Riemann => {
                let a = i.riemann.axis.index();
                // Sample coordinates grow with the sample index, so the
                // first and last decide for all.
                (hi[a] < i.riemann.x0) == (lo[a] < i.riemann.x0)
            }
            InitialKind::Uniform => true,
        }
    }

    /// The volume the Sedov deposit covers on level `lg`: the number of
    /// cell sample points (of the level's lattice extended over all space,
    /// so the deposit counts whole even where the domain cuts it) within
    /// `radius` of `center`, times the volume each stands for. The deposit's
    /// pressure is `p_ambient + (γ−1) energy / volume`, so the cell averages
    /// of a level hold exactly `energy` above the ambient gas — all of it
    /// for a blast inside the domain, an eighth of it (by the lattice's
    /// mirror symmetry) for one centred on a corner of the domain, a half
    /// for one centred on a face. Falls back to the analytic `4/3 π r³`
    /// when no sample lies inside or the deposit spans more than
    /// `MAX_DEPOSIT_SPAN` samples per axis.
    pub fn sedov_volume(&self, lg: &LevelGeometry) -> f64 {
        let s = &self.deck.initial.sedov;
        let key = |volume| LatticeVolume {
            prob_lo: [lg.prob_lo.x, lg.prob_lo.y, lg.prob_lo.z],
            dx: [lg.dx.x, lg.dx.y, lg.dx.z],
            volume,
        };
        let count = || {
            lattice_volume(lg, s.center, s.radius).unwrap_or_else(|| {
                log::debug!(
                    "Sedov deposit on level {}: lattice volume not counted, analytic volume used",
                    lg.level
                );
                analytic_volume(s.radius)
            })
        };
        match self.sedov_volumes.get(lg.level) {
            Some(cell) => {
                let v = cell.get_or_init(|| key(count()));
                // A geometry other than the deck's (same level number,
                // other lattice) is counted afresh.
                if v.prob_lo == key(0.0).prob_lo && v.dx == key(0.0).dx {
                    v.volume
                } else {
                    count()
                }
            }
            None => count(),
        }
    }
}

/// `4/3 π r³`.
fn analytic_volume(r: f64) -> f64 {
    4.0 / 3.0 * std::f64::consts::PI * r.powi(3)
}

/// Volume of the sample points of level `lg` within `r` of `center`
/// (`None` when there are none or too many to count). Sample coordinates
/// are computed per axis exactly as [`InitialCondition::cell_average`]
/// computes them; for fixed `y`, `z` offsets the test is monotone in the
/// `x` offset, so each row is counted by a binary search over the sorted
/// squared `x` offsets.
fn lattice_volume(lg: &LevelGeometry, center: [f64; 3], r: f64) -> Option<f64> {
    let mut d2: [Vec<f64>; 3] = Default::default();
    for (a, d2a) in d2.iter_mut().enumerate() {
        let cell = |x: f64| ((x - lg.prob_lo[a]) / lg.dx[a]).floor();
        // One cell of margin each side: a sample outside lies farther than
        // `r` from the centre by most of a cell, far beyond rounding.
        let (lo, hi) = (cell(center[a] - r) - 1.0, cell(center[a] + r) + 1.0);
        let span = (hi - lo + 1.0) * SAMPLES as f64;
        if !(span.is_finite() && span <= MAX_DEPOSIT_SPAN as f64)
            || lo < f64::from(i32::MIN)
            || hi > f64::from(i32::MAX)
        {
            return None;
        }
        for m in lo as i32..=hi as i32 {
            let corner = lg.cell_lo_corner(&iv(m, m, m))[a];
            for n in 0..SAMPLES {
                d2a.push(offset2(corner + sample_offset(n) * lg.dx[a], center[a]));
            }
        }
    }
    let [mut dx2, dy2, dz2] = d2;
    dx2.sort_by(f64::total_cmp);
    let mut count = 0u64;
    for &z in &dz2 {
        for &y in &dy2 {
            count += dx2.partition_point(|&x| within([x, y, z], r)) as u64;
        }
    }
    if count == 0 {
        return None;
    }
    let sample_volume = lg.cell_volume() / (SAMPLES * SAMPLES * SAMPLES) as f64;
    Some(count as f64 * sample_volume)
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_mesh::{Geometry, iv};

    #[test]
    fn sphere_cells_mix_by_volume() {
        let deck = Deck::default();
        let ic = InitialCondition::new(&deck);
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(32, 32, 32), &[]).unwrap();
        let lg = g.level(0).unwrap();
        assert_eq!(ic.cell_average(&lg, &iv(16, 16, 16))[0], 8.0);
        assert_eq!(ic.cell_average(&lg, &iv(0, 0, 0))[0], 1.0);
        let edge = ic.cell_average(&lg, &iv(19, 16, 16))[0];
        assert!(edge > 1.0 && edge < 8.0, "{edge}");
        let e = ic.conserved([0.5; 3])[4];
        assert!((e - 40.0 / 0.4).abs() < 1e-12);
    }

    /// The shortcut for cells the initial state is uniform over gives the
    /// sampled average bit for bit, on every cell of a level, for every
    /// kind whose state has a discontinuity.
    #[test]
    fn uniform_cells_average_as_their_samples_do() {
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(24, 24, 24), &[]).unwrap();
        let lg = g.level(0).unwrap();
        let mut sphere = Deck::default();
        sphere.initial.sphere.radius = 0.3;
        let mut riemann = Deck::default();
        riemann.initial.kind = InitialKind::Riemann;
        riemann.initial.riemann.x0 = 0.51;
        let sedov = sedov_deck([0.5; 3], 0.2, 1.0);
        for deck in [sphere, riemann, sedov] {
            let ic = InitialCondition::new(&deck);
            let sedov_p = ic.sedov_pressure(ic.sedov_volume(&lg));
            let (mut shortcut, mut sampled) = (0, 0);
            for q in lg.domain.iter() {
                let lo = lg.cell_lo_corner(&q);
                let mut sum = [0.0; 5];
                for k in 0..SAMPLES {
                    for j in 0..SAMPLES {
                        for i in 0..SAMPLES {
                            let x = [
                                lo.x + sample_offset(i) * lg.dx.x,
                                lo.y + sample_offset(j) * lg.dx.y,
                                lo.z + sample_offset(k) * lg.dx.z,
                            ];
                            let u = ic.to_conserved(ic.primitive_with(x, sedov_p));
                            for c in 0..5 {
                                sum[c] += u[c];
                            }
                        }
                    }
                }
                let want = sum.map(|s| s / (SAMPLES * SAMPLES * SAMPLES) as f64);
                assert_eq!(
                    ic.cell_average(&lg, &q),
                    want,
                    "{:?} cell {q:?}",
                    deck.initial.kind
                );
                let hi = [lo.x, lo.y, lo.z].map(|v| v + 0.9 * lg.dx.x);
                if ic.uniform_between([lo.x, lo.y, lo.z], hi) {
                    shortcut += 1;
                } else {
                    sampled += 1;
                }
            }
            assert!(
                shortcut > 10 * sampled && sampled > 0,
                "{:?}: {shortcut} / {sampled}",
                deck.initial.kind
            );
        }
    }

    /// Blast energy held by the cell averages of `lg` over all cells of
    /// the domain (above the ambient gas's internal energy).
    fn deposited(ic: &InitialCondition, lg: &LevelGeometry, deck: &Deck) -> f64 {
        let s = &deck.initial.sedov;
        let ambient = s.p_ambient / (deck.hydro.gamma - 1.0);
        lg.domain
            .iter()
            .map(|q| (ic.cell_average(lg, &q)[4] - ambient) * lg.cell_volume())
            .sum()
    }

    fn sedov_deck(center: [f64; 3], radius: f64, energy: f64) -> Deck {
        let mut deck = Deck::default();
        deck.initial.kind = InitialKind::Sedov;
        deck.initial.sedov.center = center;
        deck.initial.sedov.radius = radius;
        deck.initial.sedov.energy = energy;
        deck
    }

    #[test]
    fn sedov_levels_hold_exactly_the_blast_energy() {
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(16, 16, 16), &[2, 2]).unwrap();
        for (center, share) in [
            ([0.47, 0.52, 0.5], 1.0),
            ([0.0, 0.0, 0.0], 0.125),
            ([0.5, 0.5, 0.0], 0.5),
        ] {
            let deck = sedov_deck(center, 0.07, 2.5);
            let ic = InitialCondition::new(&deck);
            for lg in g.levels() {
                let e = deposited(&ic, &lg, &deck);
                let rel = (e / (share * 2.5) - 1.0).abs();
                assert!(
                    rel < 1e-12,
                    "{center:?} level {}: {e} ({rel:.2e})",
                    lg.level
                );
                // The lattice volume is the sphere's to within the
                // discretisation of a sphere a few cells across.
                let v = ic.sedov_volume(&lg) / analytic_volume(0.07);
                assert!((v - 1.0).abs() < 0.05, "level {}: {v}", lg.level);
            }
        }
    }

    #[test]
    fn sedov_volume_converges_and_has_a_fallback() {
        let deck = sedov_deck([0.5; 3], 0.1, 1.0);
        let ic = InitialCondition::new(&deck);
        let err = |n: i32| {
            let g = Geometry::new([0.0; 3], [1.0; 3], iv(n, n, n), &[]).unwrap();
            (ic.sedov_volume(&g.level(0).unwrap()) / analytic_volume(0.1) - 1.0).abs()
        };
        assert!(err(128) < 2e-3, "{}", err(128));
        // Far too fine to count: the analytic volume.
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(8192, 8192, 8192), &[]).unwrap();
        assert_eq!(ic.sedov_volume(&g.level(0).unwrap()), analytic_volume(0.1));
        // A deposit between the samples: nothing to count.
        let tiny = InitialCondition::new(&sedov_deck([0.5; 3], 1e-3, 1.0));
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(8, 8, 8), &[]).unwrap();
        assert_eq!(
            tiny.sedov_volume(&g.level(0).unwrap()),
            analytic_volume(1e-3)
        );
        // The point value uses the analytic volume, on top of the ambient.
        let p = ic.primitive([0.5; 3])[4];
        assert!(
            (p - (1e-5 + 0.4 / analytic_volume(0.1))).abs() < 1e-12,
            "{p}"
        );
    }

    #[test]
    fn riemann_states_follow_the_axis() {
        let mut deck = Deck::default();
        deck.initial.kind = InitialKind::Riemann;
        deck.initial.riemann.axis = crate::deck::Axis::Y;
        deck.initial.riemann.left = [2.0, 0.5, 3.0];
        let ic = InitialCondition::new(&deck);
        assert_eq!(ic.primitive([0.9, 0.1, 0.9]), [2.0, 0.0, 0.5, 0.0, 3.0]);
        assert_eq!(ic.primitive([0.1, 0.9, 0.1]), [0.125, 0.0, 0.0, 0.0, 0.1]);
    }
}
