//! [`CudaEos`]: an equation of state the kernels compute.
//!
//! The kernels ask three functions of the equation of state (pressure,
//! internal energy, `ρ c²`), declared in the header `eos.cuh` that every
//! kernel file includes. NVRTC compiles each image with the header of the
//! solver's equation of state, so the kernels stay one source and an
//! equation of state of another crate is compiled in as quilt's own ideal
//! gas is (`kernels/eos_ideal.cuh`). The header is part of the image's
//! cache key.

use quilt_sweep::physics::{Eos, IdealGas};

/// The ideal gas's header, `kernels/eos_ideal.cuh`.
pub const IDEAL_GAS_CUH: &str = include_str!("../../../kernels/eos_ideal.cuh");

/// An [`Eos`] with its functions in CUDA C.
///
/// [`CudaEos::SOURCE`] defines, for `T` of `float` and `double`,
///
/// ```text
/// template <class T> __device__ __forceinline__ T eos_pressure(const T* k, T rho, T rho_e);
/// template <class T> __device__ __forceinline__ T eos_internal_energy(const T* k, T rho, T p);
/// template <class T> __device__ __forceinline__ T eos_bulk_modulus(const T* k, T rho, T p);
/// ```
///
/// with `k` the four parameters of [`Eos::params`] rounded to `T`, each
/// the same operations in the same order as the Rust function of the same
/// role, so that the kernels (compiled without FMA contraction) agree with
/// the CPU bit for bit. `kernels/eos_ideal.cuh` is the model.
pub trait CudaEos: Eos {
    /// The header's text.
    const SOURCE: &'static str;
}

impl CudaEos for IdealGas {
    const SOURCE: &'static str = IDEAL_GAS_CUH;
}
