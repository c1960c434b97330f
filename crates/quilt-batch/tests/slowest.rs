//! A batch's prepare is its slowest queue's: the expected maximum of noisy
//! queue times against sampled maxima, and the spread learned online.

use quilt_batch::model::expected_slowest;
use quilt_batch::{Coefficients, CostModel, OnlineModel, PatchWork, PrepareSample, RefineOptions};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Standard normal by Box–Muller.
fn gauss(rng: &mut impl Rng) -> f64 {
    let u1: f64 = 1.0 - rng.random::<f64>();
    let u2: f64 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A queue's time: its mean times a log-normal factor of mean 1.
fn noisy(rng: &mut impl Rng, mean: f64, spread: f64) -> f64 {
    mean * (spread * gauss(rng) - 0.5 * spread * spread).exp()
}

/// The mean of `draws` sampled maxima of queues of means `loads`.
fn sampled_slowest(rng: &mut impl Rng, loads: &[f64], spread: f64, draws: usize) -> f64 {
    let total: f64 = (0..draws)
        .map(|_| {
            loads
                .iter()
                .map(|&l| noisy(rng, l, spread))
                .fold(0.0, f64::max)
        })
        .sum();
    total / draws as f64
}

#[test]
fn expected_slowest_matches_sampled_maxima() {
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let cases: [(&[f64], f64); 5] = [
        (&[1.0; 16], 0.15),
        (&[1.0, 1.0], 0.3),
        (&[2.0, 1.8, 1.5, 0.5, 0.1], 0.2),
        (
            &[1e-3, 0.9e-3, 1.1e-3, 1.05e-3, 0.7e-3, 1e-3, 1e-3, 0.95e-3],
            0.1,
        ),
        (&[3.0], 0.4),
    ];
    for (loads, spread) in cases {
        let want = sampled_slowest(&mut rng, loads, spread, 200_000);
        let got = expected_slowest(loads, spread);
        let rel = (got - want).abs() / want;
        assert!(
            rel < 3e-3,
            "{loads:?}, spread {spread}: {got} against {want} sampled"
        );
    }
    // Sixteen equal queues 15 % apart run about a quarter over their mean.
    let e = expected_slowest(&[1.0; 16], 0.15);
    assert!(e > 1.2 && e < 1.3, "{e}");
}

#[test]
fn expected_slowest_edge_cases() {
    assert_eq!(expected_slowest(&[], 0.2), 0.0);
    assert_eq!(expected_slowest(&[0.0, 0.0], 0.2), 0.0);
    assert_eq!(expected_slowest(&[1.0, 3.0, 2.0], 0.0), 3.0);
    assert_eq!(expected_slowest(&[1.0, 3.0], f64::NAN), 3.0);
    // One queue: its mean.
    assert!((expected_slowest(&[2.5], 0.3) - 2.5).abs() < 2.5e-4);
    // A queue far below the others changes nothing.
    let a = expected_slowest(&[1.0, 1.0, 1.0], 0.1);
    let b = expected_slowest(&[1.0, 1.0, 1.0, 1e-3], 0.1);
    assert_eq!(a, b);
    // The model clamps and reports its spread.
    let m = CostModel::default().with_queue_spread(7.0);
    assert_eq!(m.queue_spread(), 1.0);
    assert_eq!(CostModel::default().queue_spread(), 0.0);
    assert_eq!(CostModel::default().slowest_queue(&[1.0, 2.0]), 2.0);
}

#[test]
fn observed_queues_teach_the_spread_and_unbias_the_slowest() {
    // The machine's prepare costs are the model's; each of 16 queues runs
    // 15 % apart from its estimate, independently.
    let c = Coefficients::gpu_default();
    let machine = CostModel::new(c).unwrap();
    let mut online = OnlineModel::new(machine, RefineOptions::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let spread = 0.15;
    // Mean relative error of each estimate of the slowest queue, as the
    // integrator reports it, and mean measured / estimated.
    let (mut plain, mut expected, mut n) = ([0.0; 2], [0.0; 2], 0.0);
    for batch in 0..400 {
        let queues: Vec<Vec<PatchWork>> = (0..16)
            .map(|_| {
                // Balanced queues, as the selection makes them.
                (0..4)
                    .map(|_| {
                        let e: u32 = rng.random_range(22..26);
                        PatchWork::new([e, e, e], 3)
                            .with_ghost_fill(u64::from(e * e * 6), u64::from(e * e * 30))
                    })
                    .collect()
            })
            .collect();
        let loads: Vec<f64> = queues
            .iter()
            .map(|q| q.iter().map(|p| machine.patch_prepare(p)).sum())
            .collect();
        let samples: Vec<PrepareSample> = queues
            .iter()
            .zip(&loads)
            .map(|(q, &l)| PrepareSample::patches(q, noisy(&mut rng, l, spread)))
            .collect();
        let slowest = samples.iter().map(|s| s.seconds).fold(0.0, f64::max);
        if batch >= 100 {
            let model = online.model();
            let estimate: Vec<f64> = queues
                .iter()
                .map(|q| q.iter().map(|p| model.patch_prepare(p)).sum())
                .collect();
            for (acc, e) in [
                (&mut plain, estimate.iter().copied().fold(0.0, f64::max)),
                (&mut expected, model.slowest_queue(&estimate)),
            ] {
                acc[0] += (e - slowest).abs() / slowest;
                acc[1] += slowest / e;
            }
            n += 1.0;
        }
        online.observe_queues(&samples).unwrap();
    }
    let learned = online.model().queue_spread();
    assert!(
        (learned - spread).abs() < 0.03,
        "learned spread {learned}, true {spread}"
    );
    let (plain, expected) = (plain.map(|v| v / n), expected.map(|v| v / n));
    // The plain maximum is biased by about a fifth. The expected slowest
    // is within the few per cent by which the refinement, fitted to
    // relative errors, puts each queue below its mean time.
    assert!(plain[1] > 1.15, "measured / plain maximum {}", plain[1]);
    assert!(
        (expected[1] - 1.0).abs() < 0.07,
        "measured / expected slowest {}",
        expected[1]
    );
    assert!(
        expected[0] < 0.5 * plain[0],
        "error of the expected slowest {:.3}, of the plain maximum {:.3}",
        expected[0],
        plain[0]
    );
}

#[test]
fn a_bad_queue_sample_is_refused_whole() {
    let mut online = OnlineModel::new(CostModel::default(), RefineOptions::default()).unwrap();
    let p = PatchWork::new([16, 16, 16], 3).with_ghost_fill(100, 200);
    let good = PrepareSample::patch(&p, 1e-4);
    let bad = PrepareSample::patch(&p, -1.0);
    assert!(online.observe_queues(&[good, bad]).is_err());
    assert_eq!(online.observations(), 0);
    online.observe_queues(&[good, good]).unwrap();
    assert_eq!(online.observations(), 2);
}
