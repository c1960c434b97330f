//! The precisions the kernels are instantiated for.

use cudarc::driver::DeviceRepr;
use quilt_sweep::Real;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// `f32` or `f64`: a [`Real`] the kernels exist for (entry points end in
/// `_f32` / `_f64`, [`Real::NAME`]).
pub trait GpuReal: Real + DeviceRepr + sealed::Sealed {}

impl GpuReal for f32 {}
impl GpuReal for f64 {}
