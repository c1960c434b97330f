//! Fixed-width groups of values with element-wise arithmetic, so that the
//! limiters and sums are written once for single values and for groups,
//! and the compiler turns each group operation into vector instructions
//! (every method is one operation over a constant number of elements; the
//! loop vectoriser does not take loops over the short rows of ghost
//! regions, and unrolled kernels are too large to be vectorised whole).

use std::ops::{Add, Mul, Sub};

use crate::real::Real;

/// The arithmetic the limiters and sums need, for single values and for
/// [`Lanes`] alike.
pub(super) trait Arith<T>:
    Copy + Add<Output = Self> + Sub<Output = Self> + Mul<Output = Self>
{
    /// Every element equal to `x`.
    fn splat(x: T) -> Self;
    /// Absolute value.
    fn abs(self) -> Self;
    /// The lesser of the two (`b` if they compare equal or either is NaN:
    /// one `minps`/`minpd`).
    fn lesser(self, b: Self) -> Self;
    /// Magnitude of `self` with the sign of `sign`.
    fn copysign(self, sign: Self) -> Self;
    /// `self` where `c > 0`, zero elsewhere (NaN `c` included).
    fn where_positive(self, c: Self) -> Self;
}

impl<T: Real> Arith<T> for T {
    #[inline(always)]
    fn splat(x: T) -> Self {
        x
    }
    #[inline(always)]
    fn abs(self) -> Self {
        num_traits::Float::abs(self)
    }
    #[inline(always)]
    fn lesser(self, b: Self) -> Self {
        if self < b { self } else { b }
    }
    #[inline(always)]
    fn copysign(self, sign: Self) -> Self {
        num_traits::Float::copysign(self, sign)
    }
    #[inline(always)]
    fn where_positive(self, c: Self) -> Self {
        if c > T::zero() { self } else { T::zero() }
    }
}

/// `W` values of `T`, operated on element by element.
#[derive(Clone, Copy)]
pub(super) struct Lanes<T, const W: usize>(pub [T; W]);

impl<T: Real, const W: usize> Lanes<T, W> {
    /// The first `W` values of `s`.
    #[inline(always)]
    pub fn load(s: &[T]) -> Self {
        let mut v = [T::zero(); W];
        v.copy_from_slice(&s[..W]);
        Self(v)
    }

    /// Writes the values to the first `W` places of `s`.
    #[inline(always)]
    pub fn store(self, s: &mut [T]) {
        s[..W].copy_from_slice(&self.0);
    }

    // Plain loops rather than `array::from_fn`, whose closures are not
    // always inlined.
    #[inline(always)]
    fn map2(self, b: Self, f: impl Fn(T, T) -> T) -> Self {
        let mut v = self.0;
        for (x, &y) in v.iter_mut().zip(&b.0) {
            *x = f(*x, y);
        }
        Self(v)
    }
}

impl<T: Real, const W: usize> Add for Lanes<T, W> {
    type Output = Self;
    #[inline(always)]
    fn add(self, b: Self) -> Self {
        self.map2(b, |x, y| x + y)
    }
}

impl<T: Real, const W: usize> Sub for Lanes<T, W> {
    type Output = Self;
    #[inline(always)]
    fn sub(self, b: Self) -> Self {
        self.map2(b, |x, y| x - y)
    }
}

impl<T: Real, const W: usize> Mul for Lanes<T, W> {
    type Output = Self;
    #[inline(always)]
    fn mul(self, b: Self) -> Self {
        self.map2(b, |x, y| x * y)
    }
}

impl<T: Real, const W: usize> Arith<T> for Lanes<T, W> {
    #[inline(always)]
    fn splat(x: T) -> Self {
        Self([x; W])
    }
    #[inline(always)]
    fn abs(self) -> Self {
        let mut v = self.0;
        for x in &mut v {
            *x = Arith::abs(*x);
        }
        Self(v)
    }
    #[inline(always)]
    fn lesser(self, b: Self) -> Self {
        self.map2(b, Arith::lesser)
    }
    #[inline(always)]
    fn copysign(self, sign: Self) -> Self {
        self.map2(sign, Arith::copysign)
    }
    #[inline(always)]
    fn where_positive(self, c: Self) -> Self {
        self.map2(c, Arith::where_positive)
    }
}
