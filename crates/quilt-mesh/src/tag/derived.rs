//! Derived fields that criteria run on.

use num_traits::Float;

use super::criterion::to_field;
use super::error::TagError;

/// Pressure of an ideal gas from conserved variables, cell by cell:
/// `p = (gamma - 1) (E - |m|^2 / (2 rho))`, written into `out`.
///
/// The arguments are whole component slices of one patch (same box, same
/// layout), so `out` can be handed to a detector with that box. Fails if the
/// slices differ in length or `gamma <= 1`.
pub fn euler_pressure<T: Float>(
    rho: &[T],
    momentum: [&[T]; 3],
    energy: &[T],
    gamma: f64,
    out: &mut [T],
) -> Result<(), TagError> {
    if !(gamma.is_finite() && gamma > 1.0) {
        return Err(TagError::BadParameter {
            criterion: "euler pressure",
            parameter: "gamma",
            value: gamma,
            why: "must be finite and > 1",
        });
    }
    let gm1: T = to_field(gamma - 1.0);
    pressure_with(rho, momentum, energy, out, |_, e| gm1 * e)
}

/// The pressure `eos(rho, E - |m|^2 / (2 rho))` of conserved variables,
/// cell by cell, written into `out`: `eos` takes the density and the
/// internal energy density ([`euler_pressure`] is the ideal gas's).
///
/// Fails if the slices differ in length.
pub fn pressure_with<T: Float>(
    rho: &[T],
    momentum: [&[T]; 3],
    energy: &[T],
    out: &mut [T],
    eos: impl Fn(T, T) -> T,
) -> Result<(), TagError> {
    let n = rho.len();
    let lens = [
        momentum[0].len(),
        momentum[1].len(),
        momentum[2].len(),
        energy.len(),
        out.len(),
    ];
    for (k, &len) in lens.iter().enumerate() {
        if len != n {
            return Err(TagError::ComponentLength {
                component: k + 1,
                len,
                expected: n,
            });
        }
    }
    let half: T = to_field(0.5);
    for i in 0..n {
        let m2 = momentum[0][i] * momentum[0][i]
            + momentum[1][i] * momentum[1][i]
            + momentum[2][i] * momentum[2][i];
        out[i] = eos(rho[i], energy[i] - half * m2 / rho[i]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pressure_of_a_moving_gas() {
        // rho = 2, u = (1, 2, 0), p = 3, gamma = 1.4: E = p/(g-1) + rho|u|^2/2 = 7.5 + 5
        let rho = [2.0f64];
        let (mx, my, mz) = ([2.0], [4.0], [0.0]);
        let e = [12.5];
        let mut p = [0.0];
        euler_pressure(&rho, [&mx, &my, &mz], &e, 1.4, &mut p).unwrap();
        assert!((p[0] - 3.0).abs() < 1e-14);
        assert!(euler_pressure(&rho, [&mx, &my, &mz], &e, 1.0, &mut p).is_err());
        let mut short: [f64; 0] = [];
        assert!(matches!(
            euler_pressure(&rho, [&mx, &my, &mz], &e, 1.4, &mut short),
            Err(TagError::ComponentLength { component: 5, .. })
        ));
    }
}
