//! Cost-model coefficients (paper eqs. 1–3) and their validation.
//!
//! Every coefficient is a time per unit of work, in seconds. Each group maps
//! to a fixed-length feature vector (see [`crate::model`]) so that estimation,
//! least-squares calibration and online refinement share one definition of
//! what each coefficient multiplies.

use serde::{Deserialize, Serialize};

use crate::error::{BatchError, Result};

/// GPU (or CPU backend) solve coefficients: paper eqs. 1 and 2, plus three
/// terms the paper folds away (`c_cell`, `t_launch`, `t_bin`).
///
/// `t_exec(bin) = c1*Nx + c2*Ny + c3*Nz + c_cell*V + t_bin`;
/// `t_solve(batch) = t_launch + t_trans*(bytes_first + bytes_last) + Σ t_exec`.
/// With `c_cell = t_launch = t_bin = 0` this is exactly the paper's model.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SolveCoeffs {
    /// `C1`: seconds per column of the x-sweep.
    pub c1: f64,
    /// `C2`: seconds per column of the y-sweep.
    pub c2: f64,
    /// `C3`: seconds per column of the z-sweep.
    pub c3: f64,
    /// Seconds per ghost-inclusive cell for all three sweeps together; captures
    /// the dependence on column length that a per-column cost misses when
    /// patches of a bin differ in width.
    pub c_cell: f64,
    /// `t_trans`: seconds per byte moved between host and device.
    pub t_trans: f64,
    /// Fixed cost per batch (kernel launches, synchronisation).
    pub t_launch: f64,
    /// Fixed cost per bin: what a bin costs whatever its patches (its share
    /// of the launches' blocks, its transfers' set-up). On a GPU behind a
    /// bus it is the largest term of a nearly empty bin, so without it the
    /// model overestimates full bins and underestimates sparse ones.
    pub t_bin: f64,
}

/// CPU prepare coefficients: paper eq. 3 plus a per-patch overhead.
///
/// `t_prep(patch) = k1*S_interp + k2*(S_copied + V_interior) + k_patch`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrepareCoeffs {
    /// `K1`: seconds per ghost cell interpolated from the coarser level.
    pub k1: f64,
    /// `K2`: seconds per cell copied (same-level ghost cells and interior cells).
    pub k2: f64,
    /// Fixed seconds per patch (plan lookup, dispatch).
    pub k_patch: f64,
}

/// CPU close coefficients: interior written back plus flux-register work.
///
/// `t_close(patch) = k3*V_interior + k_flux*F + k_patch`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseCoeffs {
    /// `K3`: seconds per interior cell written back.
    pub k3: f64,
    /// Seconds per face whose flux is accumulated into a flux register.
    pub k_flux: f64,
    /// Fixed seconds per patch.
    pub k_patch: f64,
}

/// One full coefficient set: solve, prepare and close.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coefficients {
    /// Solve (GPU side) coefficients.
    pub solve: SolveCoeffs,
    /// Prepare (CPU side) coefficients.
    pub prepare: PrepareCoeffs,
    /// Close (CPU side) coefficients.
    pub close: CloseCoeffs,
}

/// Names of the solve coefficients, in feature order (as in the JSON file).
pub const SOLVE_NAMES: [&str; 7] = ["c1", "c2", "c3", "c_cell", "t_trans", "t_launch", "t_bin"];
/// Names of the prepare coefficients, in feature order.
pub const PREPARE_NAMES: [&str; 3] = ["k1", "k2", "k_patch"];
/// Names of the close coefficients, in feature order.
pub const CLOSE_NAMES: [&str; 3] = ["k3", "k_flux", "k_patch"];

fn check<const N: usize>(values: [f64; N], names: [&'static str; N]) -> Result<()> {
    for (value, name) in values.into_iter().zip(names) {
        if !(value.is_finite() && value >= 0.0) {
            return Err(BatchError::InvalidCoefficient { name, value });
        }
    }
    Ok(())
}

impl SolveCoeffs {
    /// Coefficients in feature order ([`SOLVE_NAMES`]).
    pub fn to_array(&self) -> [f64; 7] {
        [
            self.c1,
            self.c2,
            self.c3,
            self.c_cell,
            self.t_trans,
            self.t_launch,
            self.t_bin,
        ]
    }

    /// Inverse of [`SolveCoeffs::to_array`].
    pub fn from_array(a: [f64; 7]) -> Self {
        Self {
            c1: a[0],
            c2: a[1],
            c3: a[2],
            c_cell: a[3],
            t_trans: a[4],
            t_launch: a[5],
            t_bin: a[6],
        }
    }

    /// Checks that every coefficient is finite and non-negative.
    pub fn validate(&self) -> Result<()> {
        check(self.to_array(), SOLVE_NAMES)
    }
}

impl PrepareCoeffs {
    /// Coefficients in feature order ([`PREPARE_NAMES`]).
    pub fn to_array(&self) -> [f64; 3] {
        [self.k1, self.k2, self.k_patch]
    }

    /// Inverse of [`PrepareCoeffs::to_array`].
    pub fn from_array(a: [f64; 3]) -> Self {
        Self {
            k1: a[0],
            k2: a[1],
            k_patch: a[2],
        }
    }

    /// Checks that every coefficient is finite and non-negative.
    pub fn validate(&self) -> Result<()> {
        check(self.to_array(), PREPARE_NAMES)
    }
}

impl CloseCoeffs {
    /// Coefficients in feature order ([`CLOSE_NAMES`]).
    pub fn to_array(&self) -> [f64; 3] {
        [self.k3, self.k_flux, self.k_patch]
    }

    /// Inverse of [`CloseCoeffs::to_array`].
    pub fn from_array(a: [f64; 3]) -> Self {
        Self {
            k3: a[0],
            k_flux: a[1],
            k_patch: a[2],
        }
    }

    /// Checks that every coefficient is finite and non-negative.
    pub fn validate(&self) -> Result<()> {
        check(self.to_array(), CLOSE_NAMES)
    }
}

impl Coefficients {
    /// Order-of-magnitude defaults for a multicore CPU solving with its own
    /// cores (no transfers): ~100 ns per cell per sweep, ~4 ns per copied cell
    /// of 5 f64 components, ~40 ns per interpolated cell. Calibrate to replace them.
    pub fn cpu_default() -> Self {
        Self {
            solve: SolveCoeffs {
                c1: 2.0e-7,
                c2: 2.0e-7,
                c3: 2.0e-7,
                c_cell: 3.0e-7,
                t_trans: 0.0,
                t_launch: 5.0e-6,
                t_bin: 2.0e-6,
            },
            prepare: Self::CPU_PREPARE,
            close: Self::CPU_CLOSE,
        }
    }

    /// Order-of-magnitude defaults for a current datacentre GPU behind PCIe 5
    /// (~20 GB/s effective, ~30 µs launch and synchronisation per batch).
    /// Prepare and close stay on the CPU, so they match [`Coefficients::cpu_default`].
    pub fn gpu_default() -> Self {
        Self {
            solve: SolveCoeffs {
                c1: 1.0e-9,
                c2: 1.0e-9,
                c3: 1.0e-9,
                c_cell: 3.0e-10,
                t_trans: 5.0e-11,
                t_launch: 3.0e-5,
                t_bin: 1.0e-4,
            },
            prepare: Self::CPU_PREPARE,
            close: Self::CPU_CLOSE,
        }
    }

    const CPU_PREPARE: PrepareCoeffs = PrepareCoeffs {
        k1: 4.0e-8,
        k2: 4.0e-9,
        k_patch: 2.0e-6,
    };

    const CPU_CLOSE: CloseCoeffs = CloseCoeffs {
        k3: 4.0e-9,
        k_flux: 1.0e-8,
        k_patch: 2.0e-6,
    };

    /// Checks that every coefficient is finite and non-negative.
    ///
    /// # Errors
    /// [`BatchError::InvalidCoefficient`] naming the first bad coefficient.
    pub fn validate(&self) -> Result<()> {
        self.solve.validate()?;
        self.prepare.validate()?;
        self.close.validate()
    }
}

impl Default for Coefficients {
    /// [`Coefficients::cpu_default`].
    fn default() -> Self {
        Self::cpu_default()
    }
}
