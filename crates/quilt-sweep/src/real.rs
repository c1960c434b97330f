//! The floating-point abstraction shared by every scheme.

use std::fmt::{Debug, Display};

use bytemuck::Pod;
use num_traits::Float;

/// A floating-point type a batch can hold: `f32` or `f64`.
///
/// The schemes are written once, generically over `Real`, so that the
/// single- and double-precision CUDA kernels (`sweep_*_f32`, `sweep_*_f64`)
/// have one CPU reference each. Constants enter through [`Real::lit`], which
/// rounds an `f64` literal the way a CUDA `(float)` cast does.
pub trait Real: Float + Pod + Default + Debug + Display + Send + Sync + 'static {
    /// Short name used in kernel names, logs and benchmark ids (`"f32"`, `"f64"`).
    const NAME: &'static str;

    /// Converts an `f64` constant to this type (round to nearest).
    fn lit(x: f64) -> Self;

    /// Widens (or keeps) the value as `f64`, exactly.
    fn as_f64(self) -> f64;
}

impl Real for f32 {
    const NAME: &'static str = "f32";

    #[inline(always)]
    fn lit(x: f64) -> Self {
        x as f32
    }

    #[inline(always)]
    fn as_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Real for f64 {
    const NAME: &'static str = "f64";

    #[inline(always)]
    fn lit(x: f64) -> Self {
        x
    }

    #[inline(always)]
    fn as_f64(self) -> f64 {
        self
    }
}
