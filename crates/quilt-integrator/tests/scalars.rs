//! Passive scalars through whole AMR steps: regrids, refluxing, restriction
//! and interpolation carry them with the gas, the Euler answer does not
//! change, and a dye follows the contact of a Riemann problem.

mod common;

use quilt_integrator::deck::Deck;
use quilt_integrator::problem::{DeckProblem, Faces, Problem, Refinement};
use quilt_integrator::{CpuBackend, Integrator, IntegratorBuilder, IntegratorError};
use quilt_mesh::{IndexBox, IntVect, LevelGeometry, iv};

/// The deck's problem with passive scalar 0 set to `C0` times the density
/// (scalar 1 keeps the deck's marked gas).
struct Scaled(DeckProblem);

const C0: f64 = 0.3;

impl Problem<f64> for Scaled {
    fn initial_state(&self, level: &LevelGeometry, cell: &IntVect, state: &mut [f64]) {
        Problem::<f64>::initial_state(&self.0, level, cell, state);
        state[5] = C0 * state[0];
    }
    fn refinement(&self) -> Result<Vec<Refinement<f64>>, IntegratorError> {
        self.0.refinement()
    }
    fn faces(&self) -> Result<Faces<f64>, IntegratorError> {
        self.0.faces()
    }
}

/// The closed box of the conservation test with patch sizes that suit
/// every scheme's ghost width.
fn closed_box(scheme: &str) -> Deck {
    let mut deck = common::closed_box();
    deck.amr.max_patch = 32;
    deck.hydro.scheme = scheme.into();
    deck.hydro.cfl = if scheme == "tvd" { 0.4 } else { 0.8 };
    deck
}

fn with_scalars(mut deck: Deck) -> Deck {
    deck.hydro.scalars = vec!["c".into(), "inside".into()];
    deck
}

/// Every interior cell of every level: `(density, scalars)`.
fn cells(it: &Integrator<f64, CpuBackend<f64>>) -> Vec<(f64, [f64; 2])> {
    let (h, d) = (it.hierarchy(), it.data());
    let mut out = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        for q in p.interior().iter() {
            let pd = d.old(i);
            out.push((pd.get(0, &q), [pd.get(5, &q), pd.get(6, &q)]));
        }
    }
    out
}

#[test]
fn scalars_change_no_euler_bit_and_stay_multiples_of_the_density() {
    for scheme in ["rtvd", "tvd", "waf"] {
        let plain = closed_box(scheme);
        let dyed = with_scalars(plain.clone());
        let mut a = common::cpu(&plain);
        let solver = dyed.solver().unwrap();
        let mut b = IntegratorBuilder::new(&dyed)
            .problem(Scaled(DeckProblem::new(&dyed)))
            .build(CpuBackend::new(solver))
            .unwrap();
        let before = b.conserved_totals().unwrap();
        assert_eq!(before.len(), 7);
        let mut regrids = 0;
        for _ in 0..11 {
            a.step().unwrap();
            regrids += usize::from(b.step().unwrap().regridded);
        }
        assert!(regrids >= 2 && b.hierarchy().num_levels() == 2, "{scheme}");
        assert_eq!(common::state_bits(&a), common::state_bits(&b), "{scheme}");
        let after = b.conserved_totals().unwrap();
        for c in 5..7 {
            let rel = (after[c] - before[c]).abs() / before[c];
            assert!(
                rel <= 1e-12,
                "{scheme}: scalar {} changed by {rel:.2e}",
                c - 5
            );
        }
        let (mut worst, mut lo, mut hi) = (0.0f64, f64::MAX, f64::MIN);
        for (rho, s) in cells(&b) {
            worst = worst.max((s[0] / rho - C0).abs());
            lo = lo.min(s[1] / rho);
            hi = hi.max(s[1] / rho);
        }
        assert!(
            worst <= 1e-13,
            "{scheme}: s/rho departs from {C0} by {worst:.2e}"
        );
        assert!(
            lo > -1e-12 && hi < 1.0 + 1e-12,
            "{scheme}: fraction in [{lo}, {hi}]"
        );
        assert!(lo < 0.01 && hi > 0.99, "{scheme}: fraction in [{lo}, {hi}]");
    }
}

fn sod(scheme: &str) -> Deck {
    let mut deck = Deck::parse(
        r#"
[domain]
hi = [1.0, 0.25, 0.25]
base_cells = [64, 16, 16]
[amr]
max_levels = 2
base_patch = 16
max_patch = 32
regrid_interval = 2
tag_buffer = 2
[[tagging]]
field = "density"
detector = "gradient"
tol = 0.3
[boundary]
y_lo = "periodic"
y_hi = "periodic"
z_lo = "periodic"
z_hi = "periodic"
[initial]
kind = "riemann"
[initial.riemann]
axis = "x"
x0 = 0.5
left = [1.0, 0.0, 1.0]
right = [0.125, 0.0, 0.1]
[run]
end_time = 0.15
"#,
    )
    .unwrap();
    deck.hydro.scheme = scheme.into();
    deck.hydro.cfl = if scheme == "tvd" { 0.4 } else { 0.8 };
    deck.hydro.scalars = vec!["left_gas".into()];
    deck
}

/// The mass fraction along the line `y = z = 0` at every cell of the fine
/// index space (the finest level covering each cell).
fn fraction_line(it: &Integrator<f64, CpuBackend<f64>>, n: i32, ratio: i32) -> Vec<f64> {
    let (h, d) = (it.hierarchy(), it.data());
    (0..n)
        .map(|i| {
            for l in (0..h.num_levels()).rev() {
                let r = h.level_geometry(l).unwrap().cumulative_ratio;
                let p = iv(i, 0, 0) * r / ratio;
                if let Some(&idx) = h.patches_intersecting(l, &IndexBox::new(p, p)).first() {
                    let pd = d.old(idx);
                    return pd.get(5, &p) / pd.get(0, &p);
                }
            }
            panic!("level 0 covers the domain");
        })
        .collect()
}

#[test]
fn a_dye_follows_the_contact_of_a_riemann_problem() {
    use quilt_sweep::exact::{ExactRiemann, State1d};
    let exact = ExactRiemann::new(
        State1d {
            rho: 1.0,
            u: 0.0,
            p: 1.0,
        },
        State1d {
            rho: 0.125,
            u: 0.0,
            p: 0.1,
        },
        1.4,
    )
    .unwrap();
    let contact = 0.5 + exact.u_star() * 0.15;
    for scheme in ["rtvd", "tvd", "waf"] {
        let deck = sod(scheme);
        let mut it = common::cpu(&deck);
        while !it.finished() {
            it.step().unwrap();
        }
        assert_eq!(it.hierarchy().num_levels(), 2, "{scheme}");
        let n = 128;
        let dx = 1.0 / n as f64;
        let phi = fraction_line(&it, n, 2);
        // The dyed gas ends where the contact is: the integral of the
        // fraction is the contact's position (the smeared profile is
        // nearly antisymmetric about it).
        let front: f64 = phi.iter().sum::<f64>() * dx;
        eprintln!("{scheme}: dye front {front:.4}, exact contact {contact:.4}");
        assert!(
            (front - contact).abs() < 1.5 * dx,
            "{scheme}: dye front {front:.4}, exact contact {contact:.4}"
        );
        for (i, &f) in phi.iter().enumerate() {
            let x = (i as f64 + 0.5) * dx;
            // Pure gas away from the contact, whatever the rarefaction and
            // the shock did to the density there: the smeared contact's
            // tails fall off by about a decade per fine cell (RTVD, WAF)
            // or half as fast (TVD's HLL fluxes).
            if x < contact - 0.1 {
                assert!((f - 1.0).abs() < 1e-5, "{scheme}: x = {x:.3}: {f}");
            }
            if x > contact + 0.1 {
                assert!(f.abs() < 1e-5, "{scheme}: x = {x:.3}: {f}");
            }
            assert!(
                (-1e-12..=1.0 + 1e-12).contains(&f),
                "{scheme}: x = {x:.3}: {f}"
            );
        }
        let mixed = phi.iter().filter(|&&f| f > 0.02 && f < 0.98).count();
        assert!(mixed <= 10, "{scheme}: {mixed} fine cells are mixed");
        let out = it.output().unwrap().unwrap();
        for level in &out.levels {
            let names: Vec<&str> = level.cell_arrays.iter().map(|a| a.name.as_str()).collect();
            assert!(names.contains(&"left_gas"), "{names:?}");
        }
    }
}

#[test]
fn bad_scalar_names_are_refused_with_the_key() {
    for (names, why) in [
        (r#"["a b"]"#, "letters, digits"),
        (r#"["dye", "dye"]"#, "twice"),
        (r#"["pressure"]"#, "output array"),
        (r#"["a","b","c","d","e","f","g","h","i"]"#, "at most 8"),
    ] {
        let e = Deck::parse(&format!("[hydro]\nscalars = {names}\n"))
            .and_then(|d| d.validate().map(|_| d))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("hydro.scalars") && e.contains(why),
            "{names}: {e}"
        );
    }
}

#[test]
fn a_run_with_scalars_restarts_bit_for_bit_and_refuses_other_scalars() {
    let deck = with_scalars(closed_box("rtvd"));
    let mut straight = common::cpu(&deck);
    for _ in 0..11 {
        straight.step().unwrap();
    }
    let dir = std::env::temp_dir().join(format!("quilt-scalar-restart-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("ck.h5");
    let mut first = common::cpu(&deck);
    for _ in 0..7 {
        first.step().unwrap();
    }
    first.write_checkpoint(&path).unwrap();
    drop(first);
    let solver = deck.solver().unwrap();
    let mut resumed = Integrator::<f64, _>::restart(&path, None, CpuBackend::new(solver)).unwrap();
    assert_eq!(resumed.deck().hydro.scalars, deck.hydro.scalars);
    // Through the regrid after step 10.
    for _ in 0..4 {
        resumed.step().unwrap();
    }
    assert!(common::component_bits(&resumed, 0..7) == common::component_bits(&straight, 0..7));
    // A deck with fewer scalars than the checkpoint's state is refused.
    let mut fewer = deck.clone();
    fewer.hydro.scalars.pop();
    let e = Integrator::<f64, _>::restart(&path, Some(&fewer), CpuBackend::new(solver))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("7 components") && e.contains("6"), "{e}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn scalars_may_run_in_device_residency() {
    use quilt_integrator::deck::Residency;
    let mut deck = with_scalars(closed_box("rtvd"));
    deck.run.residency = Residency::Device;
    let solver = deck.solver().unwrap();
    let it = Integrator::<f64, _>::new(&deck, CpuBackend::new(solver)).unwrap();
    assert_eq!(it.residency(), Residency::Device);
    // Auto takes the run into residency when the budget allows.
    deck.run.residency = Residency::Auto;
    deck.run.device_memory_limit = 1 << 40;
    let it = Integrator::<f64, _>::new(&deck, CpuBackend::new(solver)).unwrap();
    assert_eq!(it.residency(), Residency::Device);
}
