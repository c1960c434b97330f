//! Backend selection and the solver's behaviour without a usable GPU (runs
//! everywhere; on a machine with a GPU the no-GPU assertions are skipped).

use quilt_cuda::probe::driver_available;
use quilt_cuda::{
    Backend, CudaConfig, CudaError, CudaSolver, Selected, Variant, probe, select_backend,
};
use quilt_sweep::Scheme;
use quilt_sweep::physics::Gas;

#[test]
fn backend_names_parse_and_bad_names_are_rejected() {
    assert_eq!("auto".parse::<Backend>().unwrap(), Backend::Auto);
    assert_eq!("CPU".parse::<Backend>().unwrap(), Backend::Cpu);
    assert_eq!("cuda".parse::<Backend>().unwrap(), Backend::Cuda);
    let err = "opencl".parse::<Backend>().unwrap_err().to_string();
    assert!(
        err.contains("opencl") && err.contains("auto, cpu, cuda"),
        "{err}"
    );
    assert_eq!(Backend::Cuda.to_string(), "cuda");
}

#[test]
fn cpu_backend_is_always_available() {
    assert_eq!(select_backend(Backend::Cpu, 0).unwrap(), Selected::Cpu);
}

#[test]
fn without_a_gpu_auto_falls_back_and_cuda_is_a_clear_error() {
    if let Ok(info) = probe() {
        eprintln!("a GPU is present ({info}): checking that auto selects it");
        assert!(matches!(
            select_backend(Backend::Auto, 0).unwrap(),
            Selected::Cuda(_)
        ));
        return;
    }
    assert_eq!(select_backend(Backend::Auto, 0).unwrap(), Selected::Cpu);
    let err = select_backend(Backend::Cuda, 0).unwrap_err();
    if !driver_available() {
        assert!(matches!(err, CudaError::NoDriver), "{err:?}");
        assert!(err.to_string().contains("libcuda"), "{err}");
    }
    // Creating a solver probes first: an error, never a panic.
    let err = CudaSolver::<f64>::new(Scheme::rtvd(), Gas::ideal(1.4), CudaConfig::default())
        .err()
        .expect("no solver without a GPU");
    assert!(
        matches!(
            err,
            CudaError::NoDriver | CudaError::NoDevice(_) | CudaError::NoNvrtc
        ),
        "{err:?}"
    );
}

#[test]
fn bad_configurations_are_rejected_before_the_device_is_touched() {
    let gas = Gas::ideal(1.4);
    let bad = [
        CudaConfig {
            streams: 0,
            ..CudaConfig::default()
        },
        CudaConfig {
            chunks: 0,
            ..CudaConfig::default()
        },
        CudaConfig {
            n_fixed: Some(0),
            ..CudaConfig::default()
        },
        CudaConfig {
            fused: true,
            ..CudaConfig::variant(Variant::Packed)
        },
    ];
    for cfg in bad {
        let err = CudaSolver::<f32>::new(Scheme::waf(), gas, cfg)
            .err()
            .expect("rejected");
        assert!(matches!(err, CudaError::Config(_)), "{cfg:?}: {err:?}");
    }
    let err = CudaSolver::<f32>::new(Scheme::waf(), Gas::ideal(0.9), CudaConfig::default())
        .err()
        .expect("gamma <= 1 rejected");
    assert!(err.to_string().contains("gamma"), "{err}");
}
