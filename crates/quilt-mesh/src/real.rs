//! The floating-point abstraction of quilt: the one precision trait that
//! patch data, the schemes (quilt-sweep re-exports it) and the backends
//! are generic over.

use std::fmt::{Debug, Display};

use bytemuck::Pod;
use num_traits::Float;

/// A floating-point type patch data and batches can hold: `f32` or `f64`.
///
/// `Pod` lets a patch's storage be viewed as bytes (host–device copies,
/// files); `Send + Sync` lets patches be prepared in parallel. The schemes
/// are written once, generically over `Real`, so that the single- and
/// double-precision CUDA kernels have one CPU reference each; constants
/// enter through [`Real::from_f64`], which rounds an `f64` literal the way
/// a CUDA `(float)` cast does.
///
/// The widening conversion is called [`Real::as_f64`] rather than `to_f64`
/// because `num_traits::ToPrimitive` (a supertrait of `Float`) already has a
/// `to_f64` returning `Option<f64>`, and the two would be ambiguous in
/// generic code.
pub trait Real: Float + Pod + Default + Send + Sync + Debug + Display + 'static {
    /// Short name used in kernel names, logs and benchmark ids (`"f32"`,
    /// `"f64"`).
    const NAME: &'static str;

    /// Converts an `f64` (round to nearest for `f32`).
    fn from_f64(x: f64) -> Self;

    /// Widens the value to `f64` exactly.
    fn as_f64(self) -> f64;
}

impl Real for f32 {
    const NAME: &'static str = "f32";

    #[inline(always)]
    fn from_f64(x: f64) -> Self {
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
    fn from_f64(x: f64) -> Self {
        x
    }

    #[inline(always)]
    fn as_f64(self) -> f64 {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip<T: Real>(x: f64) -> f64 {
        T::from_f64(x).as_f64()
    }

    #[test]
    fn conversions() {
        assert_eq!(roundtrip::<f64>(0.1), 0.1);
        assert_eq!(roundtrip::<f32>(0.5), 0.5);
        assert_eq!(roundtrip::<f32>(0.1), 0.1f32 as f64);
        assert_eq!(<f32 as Real>::NAME, "f32");
    }
}
