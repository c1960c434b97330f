//! [`Derived`]: fields computed from a cell's conserved state for output,
//! besides the density, velocity, pressure and total energy every output
//! holds. Each is computed by the fluid's equation of state, so it is
//! right for any [`Thermo`].

use super::thermo::Thermo;

/// A field of the Euler physics derived from a cell's conserved state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Derived {
    /// The sound speed `c = sqrt(ρ c² / ρ)` ([`Thermo::sound_speed`]).
    SoundSpeed,
    /// The Mach number `|v| / c`.
    Mach,
    /// The internal energy per unit mass `e = (E − ½ ρ |v|²) / ρ`.
    SpecificInternalEnergy,
}

impl Derived {
    /// Every derived field, in the order outputs write them.
    pub const ALL: [Derived; 3] = [
        Derived::SoundSpeed,
        Derived::Mach,
        Derived::SpecificInternalEnergy,
    ];

    /// The name of its cell array (`sound_speed`, `mach`,
    /// `specific_internal_energy`).
    pub fn name(self) -> &'static str {
        match self {
            Derived::SoundSpeed => "sound_speed",
            Derived::Mach => "mach",
            Derived::SpecificInternalEnergy => "specific_internal_energy",
        }
    }

    /// The field called `name`, if any.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|d| d.name() == name)
    }

    /// Its value for the conserved state `u` (density, momentum, total
    /// energy) of `gas`. A state without a real sound speed (a pressure
    /// below the equation of state's admissible range) gives NaN for the
    /// sound speed and the Mach number, as ParaView expects of a hole.
    pub fn value(self, gas: &dyn Thermo, u: [f64; 5]) -> f64 {
        let (rho, v, p) = gas.primitive(u);
        let speed2 = v[0] * v[0] + v[1] * v[1] + v[2] * v[2];
        match self {
            Derived::SoundSpeed => gas.sound_speed(rho, p),
            Derived::Mach => speed2.sqrt() / gas.sound_speed(rho, p),
            Derived::SpecificInternalEnergy => (u[4] - 0.5 * rho * speed2) / rho,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::physics::Gas;

    #[test]
    fn derived_fields_of_an_ideal_gas() {
        let gas = Gas::ideal(1.4);
        // rho = 2, v = (3, 0, 4), p = 5: c = sqrt(1.4 * 5 / 2), |v| = 5,
        // e = p / ((γ - 1) rho).
        let (rho, v, p) = (2.0, [3.0, 0.0, 4.0], 5.0);
        let u = [
            rho,
            rho * v[0],
            rho * v[1],
            rho * v[2],
            gas.total_energy(rho, v, p),
        ];
        let c = (1.4f64 * 5.0 / 2.0).sqrt();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-14 * b.abs();
        assert!(close(Derived::SoundSpeed.value(&gas, u), c));
        assert!(close(Derived::Mach.value(&gas, u), 5.0 / c));
        assert!(close(
            Derived::SpecificInternalEnergy.value(&gas, u),
            5.0 / (0.4 * 2.0)
        ));
        for d in Derived::ALL {
            assert_eq!(Derived::from_name(d.name()), Some(d));
        }
        assert_eq!(Derived::from_name("pressure"), None);
    }
}
