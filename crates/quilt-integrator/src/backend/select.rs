//! The deck's `run.backend` choice: `cpu`, `cuda`, or `auto` (CUDA when a
//! usable device and NVRTC exist, else the CPU with one log line).

use quilt_cuda::{Backend, CudaConfig, Selected, Variant, select_backend};

use super::{CpuBackend, CudaBackend, SolveBackend};
use crate::deck::{BackendChoice, BatchLayoutKind, Deck};
use crate::{IntegratorError, Real};

/// The backend `deck.run.backend` asks for, boxed so a program can choose
/// at run time. `cuda` fails with the reason CUDA is unusable (no driver,
/// no device, no NVRTC, a kernel that does not compile); `auto` falls back
/// to the CPU in that case and logs why. The CUDA kernels are compiled for
/// the deck's passive scalars.
pub fn backend_for<T: Real>(deck: &Deck) -> Result<Box<dyn SolveBackend<T>>, IntegratorError> {
    let solver = deck
        .solver()
        .map_err(|e| IntegratorError::Config(format!("scheme: {e}")))?;
    let cpu = || -> Box<dyn SolveBackend<T>> { Box::new(CpuBackend::<T>::new(solver)) };
    let requested = match deck.run.backend {
        BackendChoice::Cpu => return Ok(cpu()),
        BackendChoice::Cuda => Backend::Cuda,
        BackendChoice::Auto => Backend::Auto,
    };
    // The default kernels (packed bins, warp-per-column x sweeps, marched
    // y and z sweeps), FMA off so results equal the CPU's bit for bit,
    // device 0; per-patch kernels for the paper's default scheme.
    let mut config = CudaConfig {
        scalars: deck.hydro.scalars.len() as u32,
        ..match deck.batching.layout {
            BatchLayoutKind::Packed => CudaConfig::default(),
            BatchLayoutKind::PerPatch => CudaConfig::variant(Variant::Default),
        }
    };
    tuning_from_env(&mut config);
    let made = select_backend(requested, config.device).and_then(|sel| match sel {
        Selected::Cpu => Ok(None),
        Selected::Cuda(_) => CudaBackend::<T>::new(solver.scheme(), solver.gas(), config).map(Some),
    });
    match (made, requested) {
        (Ok(Some(b)), _) => Ok(Box::new(b)),
        (Ok(None), _) => Ok(cpu()),
        (Err(e), Backend::Auto) => {
            log::warn!("backend auto: CUDA is unusable ({e}); using the CPU solver");
            Ok(cpu())
        }
        (Err(e), _) => Err(IntegratorError::Backend(e)),
    }
}

/// Stream and chunk counts from `QUILT_CUDA_STREAMS` and
/// `QUILT_CUDA_CHUNKS`, for measuring how a batch's copies and kernels
/// overlap; a value that is not a positive count is ignored with a warning.
fn tuning_from_env(config: &mut CudaConfig) {
    for (var, field) in [
        ("QUILT_CUDA_STREAMS", &mut config.streams),
        ("QUILT_CUDA_CHUNKS", &mut config.chunks),
    ] {
        let Ok(v) = std::env::var(var) else { continue };
        match v.parse::<usize>() {
            Ok(n) if n > 0 => {
                log::info!("{var}={n}");
                *field = n;
            }
            _ => log::warn!("{var}={v:?} is not a positive count; ignored"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_is_cpu_and_auto_never_fails_without_a_gpu() {
        let mut deck = Deck::default();
        deck.run.backend = BackendChoice::Cpu;
        assert_eq!(backend_for::<f64>(&deck).unwrap().name(), "cpu");
        deck.run.backend = BackendChoice::Auto;
        let b = backend_for::<f32>(&deck).unwrap();
        let expected = if quilt_cuda::probe().is_ok() {
            "cuda"
        } else {
            "cpu"
        };
        assert_eq!(b.name(), expected);
    }

    #[test]
    fn cuda_without_a_gpu_is_a_clear_error() {
        if quilt_cuda::probe().is_ok() {
            return;
        }
        let mut deck = Deck::default();
        deck.run.backend = BackendChoice::Cuda;
        let e = backend_for::<f64>(&deck).err().expect("no GPU here");
        let msg = e.to_string();
        assert!(
            msg.contains("CUDA") || msg.contains("NVRTC"),
            "unhelpful error: {msg}"
        );
    }
}
