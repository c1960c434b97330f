//! The Sedov–Taylor point explosion on an adaptive hierarchy: the blast
//! wave's radius follows `R = ξ0 (E t² / ρ0)^(1/5)`, `ξ0 = 1.0328` for
//! γ = 1.4 (Sedov 1959; Kamm & Timmes 2007 tabulate the solution).
//!
//! The blast sits on the corner at the origin with reflecting walls on the
//! three low faces, so the unit cube holds one octant of it at twice the
//! resolution a centred blast would get; the high faces are outflow, which
//! the shock does not reach, so mass and energy stay exactly conserved.
//! Four levels (ratio 2, finest cell 1/128) follow the shell through
//! regrids every 4 steps, with refluxing at every coarse-fine face.

mod common;

use quilt_integrator::deck::Deck;
use quilt_integrator::{CpuBackend, Integrator};

/// Blast energy of the full sphere (the cube holds an eighth of it).
const ENERGY: f64 = 1.0;
/// Ambient density and pressure (the pressure makes the shock's Mach
/// number exceed 100 throughout: the strong-shock limit of the solution).
const RHO0: f64 = 1.0;
const P0: f64 = 1e-5;
/// Radius of the initial deposit (3.8 finest cells).
const R0: f64 = 0.03;
const GAMMA: f64 = 1.4;
/// Sedov's constant for γ = 1.4 in three dimensions.
const XI0: f64 = 1.0328;
/// `R ∝ t^DELTA`.
const DELTA: f64 = 0.4;
/// Exact shock radii at which the run is compared: 10 and 13 deposit
/// radii, 38 and 51 finest cells, far from the outflow faces.
const RADII: [f64; 2] = [0.3, 0.4];

type Run = Integrator<f64, CpuBackend<f64>>;

/// Levels of the hierarchy (ratio 2): the finest cell is 1/128.
const LEVELS: usize = 4;

/// The octant on a 16³ base grid with three finer levels. The density
/// gradient criterion follows the compressed shell (its tolerance, in
/// density per unit length, sits below the jump at the front and above
/// most of the rarefied interior), the pressure shock criterion the front
/// itself.
fn deck() -> Deck {
    Deck::parse(&format!(
        r#"
[domain]
base_cells = [16, 16, 16]
[amr]
max_levels = {LEVELS}
base_patch = 16
max_patch = 40
regrid_interval = 4
tag_buffer = 2
[[tagging]]
field = "density"
detector = "gradient"
tol = 40.0
[[tagging]]
field = "pressure"
detector = "shock"
tol = 4.0
[boundary]
x_lo = "reflecting"
y_lo = "reflecting"
z_lo = "reflecting"
[initial]
kind = "sedov"
[initial.sedov]
center = [0.0, 0.0, 0.0]
energy = {ENERGY}
radius = {R0}
rho = {RHO0}
p_ambient = {P0}
[hydro]
gamma = {GAMMA}
[run]
end_time = 10.0
"#
    ))
    .expect("Sedov deck")
}

/// The exact shock radius at time `t`.
fn exact_radius(t: f64) -> f64 {
    XI0 * (ENERGY * t * t / RHO0).powf(0.2)
}

/// The time at which the exact shock reaches radius `r`.
fn time_of_radius(r: f64) -> f64 {
    (r / XI0).powf(2.5) * (RHO0 / ENERGY).sqrt()
}

/// Integrals of the exact self-similar solution over `ξ = r/R ∈ [0, 1]`,
/// with `u = Ṙ U(ξ)`, `ρ = ρ0 G(ξ)`, `p = ρ0 Ṙ² P(ξ)`.
#[derive(Debug)]
struct SedovIntegrals {
    /// `∫ (G U²/2 + P/(γ−1)) ξ² dξ`: the energy, `E = 4π ρ0 Ṙ² R³ I_E`.
    energy: f64,
    /// `∫ G ξ² dξ`: the swept-up mass, `1/3` exactly.
    mass: f64,
    /// `∫ (G − 1) ξ³ dξ`: the first radial moment of the density excess.
    moment: f64,
}

/// Integrates the self-similar Euler equations of the strong point
/// explosion from the shock (`ξ = 1`, strong-shock Rankine–Hugoniot
/// values) to the centre. With `R ∝ t^δ`, `δ = 2/5`, `k = (1 − δ)/δ`, the
/// continuity, momentum and entropy equations become
///
/// ```text
/// (U − ξ) G' + G U' = −2 G U / ξ
/// (U − ξ) U' + P'/G = k U
/// γ P U' + (U − ξ) P' = 2 k P − 2 γ P U / ξ
/// ```
///
/// solved for the derivatives and integrated by RK4 in `ln ξ` (the density
/// vanishes like `ξ^(3/(γ−1))` at the centre, smooth in `ln ξ`).
fn sedov_integrals() -> SedovIntegrals {
    let k = (1.0 - DELTA) / DELTA;
    // State: U, G, P and the three integrals; derivative in s = ln ξ.
    let rhs = |s: f64, y: [f64; 6]| -> [f64; 6] {
        let xi = s.exp();
        let [u, g, p] = [y[0], y[1], y[2]];
        let a = u - xi;
        let du = (2.0 * k * p - 2.0 * GAMMA * p * u / xi - a * g * k * u) / (GAMMA * p - a * a * g);
        let dp = g * (k * u - a * du);
        let dg = -g * (2.0 * u / xi + du) / a;
        let w = xi * xi * xi;
        [
            xi * du,
            xi * dg,
            xi * dp,
            w * (0.5 * g * u * u + p / (GAMMA - 1.0)),
            w * g,
            w * xi * (g - 1.0),
        ]
    };
    let mut y = [
        2.0 / (GAMMA + 1.0),
        (GAMMA + 1.0) / (GAMMA - 1.0),
        2.0 / (GAMMA + 1.0),
        0.0,
        0.0,
        0.0,
    ];
    let (s_end, n) = (-16.0_f64, 8000);
    let h = s_end / n as f64;
    let axpy = |y: &[f64; 6], k: &[f64; 6], f: f64| -> [f64; 6] {
        std::array::from_fn(|i| y[i] + f * k[i])
    };
    for i in 0..n {
        let s = i as f64 * h;
        let k1 = rhs(s, y);
        let k2 = rhs(s + 0.5 * h, axpy(&y, &k1, 0.5 * h));
        let k3 = rhs(s + 0.5 * h, axpy(&y, &k2, 0.5 * h));
        let k4 = rhs(s + h, axpy(&y, &k3, h));
        y = std::array::from_fn(|j| y[j] + h / 6.0 * (k1[j] + 2.0 * k2[j] + 2.0 * k3[j] + k4[j]));
    }
    // Integrated from ξ = 1 down, so the integrals over [0, 1] are the
    // negatives (what lies below ξ = e^-16 is far below rounding).
    SedovIntegrals {
        energy: -y[3],
        mass: -y[4],
        moment: -y[5],
    }
}

/// Angle-averaged density in shells of width `dr` about the origin, and the
/// first radial moment `∫ (ρ − ρ0) r dV` of the density excess, both from
/// the finest data covering each point: every cell no finer patch covers
/// is split into finest-level sub-cells, each taken at its centre.
fn shell_profile(it: &Run, dr: f64) -> (Vec<f64>, f64) {
    let h = it.hierarchy();
    let d = it.data();
    let finest = h.num_levels() - 1;
    let fine = *h.level_geometry(finest).expect("finest level");
    let nbins = (1.0 / dr).ceil() as usize;
    let (mut mass, mut vol) = (vec![0.0; nbins], vec![0.0; nbins]);
    let mut moment = 0.0;
    for (i, p) in h.patches().iter().enumerate() {
        let lg = *h.level_geometry(p.level()).expect("level");
        let ratio = h.level_geometry(p.level() + 1).map_or(1, |g| g.ratio);
        // Every finer patch over this one, not only its children: a fine
        // patch straddling two coarse patches has one parent.
        let covered: Vec<_> = h
            .patches_intersecting(p.level() + 1, &p.interior().refine(ratio))
            .into_iter()
            .map(|c| h.patches()[c].interior().coarsen(ratio))
            .collect();
        let sub = fine.cumulative_ratio / lg.cumulative_ratio;
        let sub_vol = fine.cell_volume();
        for q in p.interior().iter() {
            if covered.iter().any(|b| b.contains(&q)) {
                continue;
            }
            let rho = d.old(i).get(0, &q);
            let lo = lg.cell_lo_corner(&q);
            for k in 0..sub {
                for j in 0..sub {
                    for s in 0..sub {
                        let x = [
                            lo.x + (f64::from(s) + 0.5) * fine.dx.x,
                            lo.y + (f64::from(j) + 0.5) * fine.dx.y,
                            lo.z + (f64::from(k) + 0.5) * fine.dx.z,
                        ];
                        let r = (x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sqrt();
                        moment += (rho - RHO0) * r * sub_vol;
                        let b = (r / dr) as usize;
                        if b < nbins {
                            mass[b] += rho * sub_vol;
                            vol[b] += sub_vol;
                        }
                    }
                }
            }
        }
    }
    let profile = mass
        .iter()
        .zip(&vol)
        .map(|(m, v)| if *v > 0.0 { m / v } else { RHO0 })
        .collect();
    (profile, moment)
}

/// The radii of the density peak and of the outer half-maximum of a shell
/// profile (bin `b` centred on `(b + 1/2) dr`). Both are biased: the peak
/// trails the front, and the half-maximum leads it because the exact
/// density falls steeply behind the front, so smearing lowers the peak
/// more than the jump. They are printed for comparison only.
fn profile_radii(profile: &[f64], dr: f64) -> (f64, f64) {
    let (peak, rho_max) = profile
        .iter()
        .copied()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .expect("bins");
    let half = 0.5 * (rho_max + RHO0);
    let centre = |b: usize| (b as f64 + 0.5) * dr;
    let b = (peak + 1..profile.len())
        .find(|&b| profile[b] <= half)
        .expect("the density returns to ambient ahead of the shock");
    let f = (profile[b - 1] - half) / (profile[b - 1] - profile[b]);
    (centre(peak), centre(b - 1) + f * dr)
}

/// Advances to exactly time `t` with CFL steps.
fn run_to(it: &mut Run, t: f64) {
    while it.time() < t {
        let dt = it.cfl_dt().unwrap().min(t - it.time());
        it.advance(dt).unwrap();
    }
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b).abs() / b.abs()
}

#[test]
fn sedov_shock_radius_and_conservation() {
    let deck = deck();
    let mut it = common::cpu(&deck);
    assert_eq!(it.hierarchy().num_levels(), LEVELS);

    // The deposit holds exactly E/8 above the ambient gas's internal
    // energy (the unit cube's volume is 1).
    let start = it.conserved_totals().unwrap();
    let ambient = P0 / (GAMMA - 1.0);
    let deposit = start[4] - ambient;
    eprintln!(
        "deposited energy in the octant {deposit:.15} (E/8 = {}), relative error {:.2e}",
        ENERGY / 8.0,
        rel(deposit, ENERGY / 8.0)
    );
    assert!(rel(deposit, ENERGY / 8.0) <= 1e-12, "{deposit}");
    assert!(rel(start[0], RHO0) <= 1e-14, "{}", start[0]);

    // The exact solution's integrals, checked against what they must be.
    let exact = sedov_integrals();
    // E = 4π ρ0 Ṙ² R³ I_E with Ṙ = δ R / t.
    let xi0 = (4.0 * std::f64::consts::PI * DELTA * DELTA * exact.energy).powf(-0.2);
    eprintln!("Sedov integrals {exact:?}: xi0 = {xi0:.5}");
    assert!((exact.mass - 1.0 / 3.0).abs() < 1e-8, "{exact:?}");
    assert!((xi0 - XI0).abs() < 1e-4, "xi0 {xi0}");

    let fine_dx = it.hierarchy().level_geometry(LEVELS - 1).unwrap().dx.x;
    for radius in RADII {
        run_to(&mut it, time_of_radius(radius));
        let h = it.hierarchy();
        assert_eq!(h.num_levels(), LEVELS, "{}", h.summary());
        let fine_cells = h.level_cells(LEVELS - 1);
        let full = h.level_geometry(LEVELS - 1).unwrap().domain.num_cells();
        assert!(
            fine_cells < full / 8,
            "the fine level covers {fine_cells} of {full} cells: not adaptive"
        );
        // The shock radius from the first radial moment of the density
        // excess, `∫ (ρ − ρ0) r dV = (π/2) ρ0 R⁴ ∫ (G − 1) ξ³ dξ` over the
        // octant. Beyond the front ρ = ρ0 exactly, so the integral over the
        // cube is the one over the blast. Smearing the radial profile with
        // any symmetric kernel of width w keeps mass and changes this
        // moment only by O(w²/R²), so a captured shock of a few cells
        // measures where its front is. The density peak or the outer
        // half-maximum instead carry a bias of up to a cell from the shape
        // of the exact profile (see `profile_radii`). What remains is the
        // run's own error: at R = 0.3 (deposit radius 0.05) it measured
        // +2.8%, +1.9%, +1.3% with finest cells 1/32, 1/64, 1/128.
        let (profile, moment) = shell_profile(&it, fine_dx);
        let r = (moment / (0.5 * std::f64::consts::PI * RHO0 * exact.moment)).powf(0.25);
        let (r_peak, r_half) = profile_radii(&profile, fine_dx);
        let r_exact = exact_radius(it.time());
        let err = r / r_exact - 1.0;
        let pct = |x: f64| 100.0 * (x / r_exact - 1.0);
        eprintln!(
            "t = {:.5} after {} steps, {} regrids, fine level {fine_cells} cells: shock radius {r:.5} (exact {r_exact:.5}, error {:+.3}%, {:+.2} fine cells); density peak {r_peak:.4} ({:+.2}%), outer half-maximum {r_half:.4} ({:+.2}%)",
            it.time(),
            it.steps(),
            it.totals().regrids,
            100.0 * err,
            (r - r_exact) / fine_dx,
            pct(r_peak),
            pct(r_half),
        );
        assert!(err.abs() <= 0.02, "shock radius {r} vs {r_exact}");

        let now = it.conserved_totals().unwrap();
        for (c, name) in [(0, "mass"), (4, "energy")] {
            let e = rel(now[c], start[c]);
            eprintln!(
                "{name}: {} -> {}, relative change {e:.2e}",
                start[c], now[c]
            );
            assert!(e <= 1e-12, "{name} changed by {e:.3e}");
        }
    }
    assert!(it.totals().regrids >= 10, "{:?}", it.totals().regrids);
    assert_eq!(it.totals().floors.total(), 0, "{:?}", it.totals().floors);
}
