//! The CUDA backend inside the integrator (needs a GPU and NVRTC; run with
//! `--ignored`, as `scripts/gpu-check.sh device` does): the same run on the
//! CPU and on the GPU gives bitwise identical hierarchies and states, with
//! regrids, refluxing and pipelined batches, in f64 and f32.

mod common;

use quilt_integrator::deck::{BackendChoice, Deck, Precision};
use quilt_integrator::{Integrator, Real, SolveBackend, backend_for};

/// The final state's bits, the patches, the backend's name and the
/// patches whose restriction outputs the device computed.
fn run<T: Real>(deck: &Deck, steps: usize) -> (Vec<u64>, Vec<String>, String, u64) {
    let backend = backend_for::<T>(deck).expect("backend");
    let name = backend.name().to_string();
    let mut it: Integrator<T, Box<dyn SolveBackend<T>>> =
        Integrator::new(deck, backend).expect("integrator");
    for _ in 0..steps {
        it.step().expect("step");
    }
    it.sync_host().expect("copy back");
    let h = it.hierarchy();
    let d = it.data();
    let mut bits = Vec::new();
    let mut boxes = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        boxes.push(format!("{} {}", p.level(), p.interior()));
        for c in 0..deck.ncomp() {
            for q in p.interior().iter() {
                bits.push(quilt_mesh::Real::as_f64(d.old(i).get(c, &q)).to_bits());
            }
        }
    }
    let restricted = it
        .backend()
        .solve_totals()
        .map_or(0, |t| t.restricted_on_device);
    (bits, boxes, name, restricted)
}

fn cpu_and_gpu_agree<T: Real>(precision: Precision) {
    let mut deck = common::closed_box();
    deck.run.precision = precision;
    deck.run.residency = quilt_integrator::deck::Residency::Host;
    deck.run.backend = BackendChoice::Cpu;
    let (cpu, cpu_boxes, n0, _) = run::<T>(&deck, 12);
    deck.run.backend = BackendChoice::Cuda;
    let (gpu, gpu_boxes, n1, restricted) = run::<T>(&deck, 12);
    assert_eq!((n0.as_str(), n1.as_str()), ("cpu", "cuda"));
    // The finest level's means and CFL rates came from the device.
    assert!(restricted > 0, "no patch restricted on the device");
    assert!(cpu_boxes.iter().any(|b| b.starts_with("1 ")), "no level 1");
    assert_eq!(cpu_boxes, gpu_boxes, "hierarchies differ");
    let diff = cpu.iter().zip(&gpu).filter(|(a, b)| a != b).count();
    assert_eq!(diff, 0, "{diff} of {} values differ", cpu.len());
}

/// Passive scalars through the CUDA backend (each pass's scalar kernel,
/// refluxed and restricted with the Euler components): the same bits as
/// the CPU, every scheme.
#[test]
#[ignore = "needs a CUDA device and NVRTC"]
fn cuda_backend_reproduces_the_cpu_run_with_passive_scalars() {
    for (scheme, precision) in [
        ("rtvd", Precision::F64),
        ("tvd", Precision::F32),
        ("waf", Precision::F64),
    ] {
        let mut deck = common::closed_box();
        // Patch sizes that suit every scheme's ghost width.
        deck.amr.max_patch = 32;
        deck.hydro.scheme = scheme.into();
        deck.hydro.cfl = if scheme == "tvd" { 0.4 } else { 0.8 };
        deck.hydro.scalars = vec!["inside".into(), "second".into()];
        deck.run.precision = precision;
        deck.run.residency = quilt_integrator::deck::Residency::Host;
        let runs: Vec<_> = [BackendChoice::Cpu, BackendChoice::Cuda]
            .into_iter()
            .map(|b| {
                deck.run.backend = b;
                match precision {
                    Precision::F64 => run::<f64>(&deck, 8),
                    Precision::F32 => run::<f32>(&deck, 8),
                }
            })
            .collect();
        let ((cpu, cpu_boxes, n0, _), (gpu, gpu_boxes, n1, _)) = (&runs[0], &runs[1]);
        assert_eq!((n0.as_str(), n1.as_str()), ("cpu", "cuda"));
        assert_eq!(cpu_boxes, gpu_boxes, "{scheme}: hierarchies differ");
        let diff = cpu.iter().zip(gpu).filter(|(a, b)| a != b).count();
        assert_eq!(diff, 0, "{scheme}: {diff} of {} values differ", cpu.len());
    }
}

#[test]
#[ignore = "needs a CUDA device and NVRTC"]
fn cuda_backend_reproduces_the_cpu_run_in_f64() {
    cpu_and_gpu_agree::<f64>(Precision::F64);
}

#[test]
#[ignore = "needs a CUDA device and NVRTC"]
fn cuda_backend_reproduces_the_cpu_run_in_f32() {
    cpu_and_gpu_agree::<f32>(Precision::F32);
}

/// The hierarchy kept on the GPU (device residency: fill, probes, sweeps,
/// refluxing and restriction as kernels over flat items) against the CPU
/// staging batches through host memory, after every regrid and at the end.
fn resident_gpu_matches_host_cpu<T: Real>(mut deck: Deck, steps: usize) {
    use quilt_integrator::deck::Residency;
    deck.run.backend = BackendChoice::Cpu;
    deck.run.residency = Residency::Host;
    let (cpu, cpu_boxes, ..) = run::<T>(&deck, steps);
    deck.run.backend = BackendChoice::Cuda;
    deck.run.residency = Residency::Device;
    let backend = backend_for::<T>(&deck).expect("backend");
    assert_eq!(backend.name(), "cuda");
    let mut it: Integrator<T, Box<dyn SolveBackend<T>>> =
        Integrator::new(&deck, backend).expect("integrator");
    for _ in 0..steps {
        it.step().expect("resident step");
    }
    it.sync_host().expect("copy back");
    let h = it.hierarchy();
    let boxes: Vec<String> = h
        .patches()
        .iter()
        .map(|p| format!("{} {}", p.level(), p.interior()))
        .collect();
    assert_eq!(cpu_boxes, boxes, "hierarchies differ");
    let d = it.data();
    let mut gpu = Vec::new();
    for (i, p) in h.patches().iter().enumerate() {
        for c in 0..deck.ncomp() {
            for q in p.interior().iter() {
                gpu.push(quilt_mesh::Real::as_f64(d.old(i).get(c, &q)).to_bits());
            }
        }
    }
    let diff = cpu.iter().zip(&gpu).filter(|(a, b)| a != b).count();
    assert_eq!(diff, 0, "{diff} of {} values differ", cpu.len());
}

#[test]
#[ignore = "needs a CUDA device and NVRTC"]
fn resident_gpu_steps_reproduce_the_cpu_run() {
    resident_gpu_matches_host_cpu::<f64>(common::closed_box(), 12);
    let mut d32 = common::closed_box();
    d32.run.precision = Precision::F32;
    resident_gpu_matches_host_cpu::<f32>(d32, 12);
    resident_gpu_matches_host_cpu::<f64>(common::periodic_three_levels(), 6);
    // Tagging on the GPU by every detector on both fields.
    let mut every = common::with_every_detector(common::periodic_three_levels());
    resident_gpu_matches_host_cpu::<f64>(every.clone(), 6);
    every.run.precision = Precision::F32;
    resident_gpu_matches_host_cpu::<f32>(every, 6);
    for scheme in ["tvd", "waf"] {
        let mut d = common::periodic_three_levels();
        d.hydro.scheme = scheme.to_string();
        d.hydro.cfl = 0.4;
        resident_gpu_matches_host_cpu::<f64>(d.clone(), 4);
        d.run.precision = Precision::F32;
        resident_gpu_matches_host_cpu::<f32>(d, 4);
    }
    // Passive scalars in device residency.
    let mut dyed = common::closed_box();
    dyed.amr.max_patch = 32;
    dyed.hydro.scalars = vec!["inside".into(), "second".into()];
    resident_gpu_matches_host_cpu::<f64>(dyed.clone(), 10);
    dyed.hydro.scheme = "waf".into();
    dyed.run.precision = Precision::F32;
    resident_gpu_matches_host_cpu::<f32>(dyed, 6);
}

/// `run.residency = "auto"` on the GPU: resident when the device has room,
/// host-staged under a forced small budget (`run.device_memory_limit`),
/// switching at the first regrid under a budget between the two
/// hierarchies' states; always the CPU's answer bit for bit.
#[test]
#[ignore = "needs a CUDA device and NVRTC"]
fn auto_residency_on_the_gpu_follows_the_memory_budget() {
    use quilt_integrator::deck::Residency;
    let steps = 9;
    let mut deck = common::closed_box();
    deck.run.backend = BackendChoice::Cpu;
    deck.run.residency = Residency::Host;
    let (cpu, cpu_boxes, ..) = run::<f64>(&deck, steps);
    deck.run.backend = BackendChoice::Cuda;
    // Where the state lived after every step, the resident bytes, and the
    // step of the first regrid.
    let go = |deck: &Deck| {
        let backend = backend_for::<f64>(deck).expect("backend");
        assert_eq!(backend.name(), "cuda");
        let mut it: Integrator<f64, Box<dyn SolveBackend<f64>>> =
            Integrator::new(deck, backend).expect("integrator");
        let mut places = vec![it.residency()];
        let (mut bytes, mut first) = (vec![None], None);
        for s in 1..=steps {
            let info = it.step().expect("step");
            places.push(it.residency());
            bytes.push(it.resident_bytes());
            if info.regridded && first.is_none() {
                first = Some(s);
            }
        }
        (places, bytes, first.expect("a regrid"))
    };
    deck.run.residency = Residency::Device;
    let (_, bytes, first) = go(&deck);
    let (s0, s1) = (bytes[1].unwrap(), bytes[first].unwrap());
    assert_ne!(s0, s1);
    let cases = [
        (0, "room on the device"),
        (1, "a forced budget of one byte"),
        (s0.min(s1), "a budget for the smaller state only"),
    ];
    deck.run.residency = Residency::Auto;
    for (limit, what) in cases {
        deck.run.device_memory_limit = limit;
        let (places, _, _) = go(&deck);
        match limit {
            0 => assert!(places.iter().all(|&p| p == Residency::Device), "{what}"),
            1 => assert!(places.iter().all(|&p| p == Residency::Host), "{what}"),
            _ => assert_ne!(places[0], places[first], "{what}: no switch"),
        }
        let (gpu, boxes, ..) = run::<f64>(&deck, steps);
        assert_eq!(cpu_boxes, boxes, "{what}: hierarchies differ");
        let diff = cpu.iter().zip(&gpu).filter(|(a, b)| a != b).count();
        assert_eq!(diff, 0, "{what}: {diff} of {} values differ", cpu.len());
    }
}
