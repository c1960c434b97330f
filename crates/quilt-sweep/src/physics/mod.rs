//! Euler physics: the equation of state ([`Eos`], [`IdealGas`] built in),
//! conserved/primitive conversion, sound speed, directional fluxes, the
//! density/pressure floors and the fields derived for output
//! ([`Derived`]).
//!
//! The conserved components, in storage order, are
//! `[rho, rho*u, rho*v, rho*w, E]` ([`RHO`], [`MX`], [`MY`], [`MZ`],
//! [`ENE`]). Inside a sweep a column holds them *rotated* to
//! `[rho, m_n, m_t1, m_t2, E]` (normal momentum first, then the two
//! transverse momenta in cyclic order), so one column function serves all
//! three axes and planar problems give bitwise identical results along x, y
//! and z.

mod column;
mod derived;
mod eos;
mod floors;
mod gas;
mod rate_row;
mod state;
mod thermo;

pub use column::{column_components, euler_flux, pressure_of, signal_speed};
pub use derived::Derived;
pub use eos::{EOS_PARAMS, Eos, IdealGas};
pub use floors::{FloorCounts, apply_floors, floor_state};
pub use gas::{Gas, GasConsts};
pub use rate_row::Rows;
pub use state::Primitive;
pub use thermo::Thermo;

/// Number of conserved components of the Euler system.
pub const NCOMP: usize = 5;
/// Index of the mass density.
pub const RHO: usize = 0;
/// Index of the x momentum density.
pub const MX: usize = 1;
/// Index of the y momentum density.
pub const MY: usize = 2;
/// Index of the z momentum density.
pub const MZ: usize = 3;
/// Index of the total energy density.
pub const ENE: usize = 4;

/// What an error says of a component that is not finite, by component.
pub const NOT_FINITE: [&str; NCOMP] = [
    "density is not finite",
    "x momentum is not finite",
    "y momentum is not finite",
    "z momentum is not finite",
    "energy is not finite",
];

/// What an error says of passive scalar `k` (component `NCOMP + k`) that
/// is not finite.
pub fn scalar_not_finite(k: usize) -> &'static str {
    const NAMED: [&str; 11] = [
        "passive scalar 0 is not finite",
        "passive scalar 1 is not finite",
        "passive scalar 2 is not finite",
        "passive scalar 3 is not finite",
        "passive scalar 4 is not finite",
        "passive scalar 5 is not finite",
        "passive scalar 6 is not finite",
        "passive scalar 7 is not finite",
        "passive scalar 8 is not finite",
        "passive scalar 9 is not finite",
        "passive scalar 10 is not finite",
    ];
    NAMED
        .get(k)
        .copied()
        .unwrap_or("a passive scalar is not finite")
}
