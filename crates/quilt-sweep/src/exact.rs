//! The exact solution of the Riemann problem of the 1D Euler equations for
//! an ideal gas (Toro, *Riemann Solvers and Numerical Methods for Fluid
//! Dynamics*, 3rd ed., ch. 4): Newton iteration for the star pressure, then
//! sampling of the self-similar solution. The reference for every shock-tube
//! test of quilt.

use thiserror::Error;

/// A 1D primitive state: density, normal velocity, pressure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct State1d {
    /// Density.
    pub rho: f64,
    /// Velocity.
    pub u: f64,
    /// Pressure.
    pub p: f64,
}

impl State1d {
    /// A state from `(rho, u, p)`.
    pub const fn new(rho: f64, u: f64, p: f64) -> Self {
        Self { rho, u, p }
    }
}

/// Why a Riemann problem has no (vacuum-free) exact solution here.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ExactError {
    /// `gamma` must exceed 1.
    #[error("gamma = {0} must be finite and > 1")]
    Gamma(f64),
    /// Density and pressure must be finite and positive.
    #[error(
        "{side} state {state:?} must have finite positive density and pressure and finite velocity"
    )]
    State {
        /// `"left"` or `"right"`.
        side: &'static str,
        /// The state.
        state: State1d,
    },
    /// The data generate vacuum (pressure positivity condition violated).
    #[error("the initial data generate vacuum: u_R - u_L = {du} >= {critical}")]
    Vacuum {
        /// Velocity difference.
        du: f64,
        /// Critical difference `2 (c_L + c_R) / (gamma - 1)`.
        critical: f64,
    },
    /// Newton's method did not converge.
    #[error("star-pressure iteration did not converge (last change {0})")]
    NoConvergence(f64),
}

/// The solved Riemann problem between `left` and `right`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ExactRiemann {
    left: State1d,
    right: State1d,
    gamma: f64,
    p_star: f64,
    u_star: f64,
}

impl ExactRiemann {
    /// Solves the problem (star pressure to a relative change of 1e-15).
    pub fn new(left: State1d, right: State1d, gamma: f64) -> Result<Self, ExactError> {
        if !(gamma.is_finite() && gamma > 1.0) {
            return Err(ExactError::Gamma(gamma));
        }
        for (side, s) in [("left", left), ("right", right)] {
            let ok =
                s.rho.is_finite() && s.rho > 0.0 && s.p.is_finite() && s.p > 0.0 && s.u.is_finite();
            if !ok {
                return Err(ExactError::State { side, state: s });
            }
        }
        let cl = (gamma * left.p / left.rho).sqrt();
        let cr = (gamma * right.p / right.rho).sqrt();
        let du = right.u - left.u;
        let critical = 2.0 * (cl + cr) / (gamma - 1.0);
        if du >= critical {
            return Err(ExactError::Vacuum { du, critical });
        }
        let mut this = Self {
            left,
            right,
            gamma,
            p_star: 0.0,
            u_star: 0.0,
        };
        // Initial guess: two-rarefaction approximation (exact when both
        // waves are rarefactions, always positive).
        let z = (gamma - 1.0) / (2.0 * gamma);
        let mut p = ((cl + cr - 0.5 * (gamma - 1.0) * du)
            / (cl / left.p.powf(z) + cr / right.p.powf(z)))
        .powf(1.0 / z);
        let mut change = f64::INFINITY;
        for _ in 0..100 {
            let (fl, dl) = this.wave_function(p, &left);
            let (fr, dr) = this.wave_function(p, &right);
            let mut next = p - (fl + fr + du) / (dl + dr);
            if next <= 0.0 {
                next = 0.5 * p;
            }
            change = 2.0 * (next - p).abs() / (next + p);
            p = next;
            if change < 1e-15 {
                break;
            }
        }
        if change > 1e-12 {
            return Err(ExactError::NoConvergence(change));
        }
        let (fl, _) = this.wave_function(p, &left);
        let (fr, _) = this.wave_function(p, &right);
        this.p_star = p;
        this.u_star = 0.5 * (left.u + right.u) + 0.5 * (fr - fl);
        Ok(this)
    }

    /// Toro's `f_K(p)` and its derivative (eqs. 4.6, 4.7, 4.37).
    fn wave_function(&self, p: f64, s: &State1d) -> (f64, f64) {
        let g = self.gamma;
        let c = (g * s.p / s.rho).sqrt();
        if p > s.p {
            let a = 2.0 / ((g + 1.0) * s.rho);
            let b = (g - 1.0) / (g + 1.0) * s.p;
            let q = (a / (p + b)).sqrt();
            ((p - s.p) * q, q * (1.0 - 0.5 * (p - s.p) / (b + p)))
        } else {
            let r = p / s.p;
            let f = 2.0 * c / (g - 1.0) * (r.powf((g - 1.0) / (2.0 * g)) - 1.0);
            let d = 1.0 / (s.rho * c) * r.powf(-(g + 1.0) / (2.0 * g));
            (f, d)
        }
    }

    /// Star-region pressure.
    pub fn p_star(&self) -> f64 {
        self.p_star
    }

    /// Star-region (contact) velocity.
    pub fn u_star(&self) -> f64 {
        self.u_star
    }

    /// The solution at similarity coordinate `xi = (x - x0) / t` (Toro sec.
    /// 4.5); `xi` on a discontinuity gives its left state.
    pub fn sample(&self, xi: f64) -> State1d {
        let g = self.gamma;
        let (gp, gm) = (g + 1.0, g - 1.0);
        let (ps, us) = (self.p_star, self.u_star);
        if xi <= us {
            let s = self.left;
            let c = (g * s.p / s.rho).sqrt();
            if ps > s.p {
                let shock = s.u - c * (gp / (2.0 * g) * ps / s.p + gm / (2.0 * g)).sqrt();
                if xi <= shock {
                    s
                } else {
                    let r = ps / s.p;
                    State1d::new(s.rho * (r + gm / gp) / (gm / gp * r + 1.0), us, ps)
                }
            } else {
                let head = s.u - c;
                let cs = c * (ps / s.p).powf(gm / (2.0 * g));
                let tail = us - cs;
                if xi <= head {
                    s
                } else if xi > tail {
                    State1d::new(s.rho * (ps / s.p).powf(1.0 / g), us, ps)
                } else {
                    let f = 2.0 / gp + gm / (gp * c) * (s.u - xi);
                    State1d::new(
                        s.rho * f.powf(2.0 / gm),
                        2.0 / gp * (c + gm / 2.0 * s.u + xi),
                        s.p * f.powf(2.0 * g / gm),
                    )
                }
            }
        } else {
            let s = self.right;
            let c = (g * s.p / s.rho).sqrt();
            if ps > s.p {
                let shock = s.u + c * (gp / (2.0 * g) * ps / s.p + gm / (2.0 * g)).sqrt();
                if xi >= shock {
                    s
                } else {
                    let r = ps / s.p;
                    State1d::new(s.rho * (r + gm / gp) / (gm / gp * r + 1.0), us, ps)
                }
            } else {
                let head = s.u + c;
                let cs = c * (ps / s.p).powf(gm / (2.0 * g));
                let tail = us + cs;
                if xi >= head {
                    s
                } else if xi <= tail {
                    State1d::new(s.rho * (ps / s.p).powf(1.0 / g), us, ps)
                } else {
                    let f = 2.0 / gp - gm / (gp * c) * (s.u - xi);
                    State1d::new(
                        s.rho * f.powf(2.0 / gm),
                        2.0 / gp * (-c + gm / 2.0 * s.u + xi),
                        s.p * f.powf(2.0 * g / gm),
                    )
                }
            }
        }
    }

    /// The solution at position `x` and time `t > 0` for an initial
    /// discontinuity at `x0`.
    pub fn at(&self, x: f64, x0: f64, t: f64) -> State1d {
        self.sample((x - x0) / t)
    }

    /// Cell average over `[a, b]` at time `t` (midpoint rule with `n`
    /// sub-intervals); the fair reference for L1 errors of cell averages.
    pub fn cell_average(&self, a: f64, b: f64, x0: f64, t: f64, n: usize) -> State1d {
        let n = n.max(1);
        let h = (b - a) / n as f64;
        let mut acc = State1d::new(0.0, 0.0, 0.0);
        for i in 0..n {
            let s = self.at(a + (i as f64 + 0.5) * h, x0, t);
            acc.rho += s.rho;
            acc.u += s.u;
            acc.p += s.p;
        }
        let w = 1.0 / n as f64;
        State1d::new(acc.rho * w, acc.u * w, acc.p * w)
    }
}

/// Toro's five shock-tube tests as used for his numerical experiments
/// (3rd ed., Tables 4.1 and 6.2, test 1 with `u_L = 0.75`):
/// `(name, left, right, x0, t_end)`, gamma = 1.4, domain [0, 1].
pub const TORO_TESTS: [(&str, State1d, State1d, f64, f64); 5] = [
    (
        "1 (Sod-like)",
        State1d::new(1.0, 0.75, 1.0),
        State1d::new(0.125, 0.0, 0.1),
        0.3,
        0.2,
    ),
    (
        "2 (123 problem)",
        State1d::new(1.0, -2.0, 0.4),
        State1d::new(1.0, 2.0, 0.4),
        0.5,
        0.15,
    ),
    (
        "3 (left blast wave)",
        State1d::new(1.0, 0.0, 1000.0),
        State1d::new(1.0, 0.0, 0.01),
        0.5,
        0.012,
    ),
    (
        "4 (right blast wave)",
        State1d::new(1.0, 0.0, 0.01),
        State1d::new(1.0, 0.0, 100.0),
        0.4,
        0.035,
    ),
    (
        "5 (shock collision)",
        State1d::new(5.99924, 19.5975, 460.894),
        State1d::new(5.99242, -6.19633, 46.0950),
        0.8,
        0.012,
    ),
];

#[cfg(test)]
mod tests {
    use super::*;

    /// Star values of Toro's Table 4.2 (test 1 there is Sod's problem with
    /// `u_L = 0`; the numerical-test variant has `u_L = 0.75`).
    #[test]
    fn star_states_match_toro_table() {
        let mut tests = TORO_TESTS;
        tests[0].1.u = 0.0;
        let expected = [
            (0.30313, 0.92745),
            (0.00189, 0.00000),
            (460.894, 19.5975),
            (46.0950, -6.19633),
            (1691.64, 8.68975),
        ];
        for ((name, l, r, _, _), (p, u)) in tests.iter().zip(expected) {
            let s = ExactRiemann::new(*l, *r, 1.4).unwrap();
            assert!(
                (s.p_star() - p).abs() <= 1e-5 * p.max(1.0),
                "{name}: p* {}",
                s.p_star()
            );
            assert!(
                (s.u_star() - u).abs() <= 1e-5 * u.abs().max(1.0),
                "{name}: u* {}",
                s.u_star()
            );
        }
    }

    #[test]
    fn sod_star_densities() {
        let s = ExactRiemann::new(
            State1d::new(1.0, 0.0, 1.0),
            State1d::new(0.125, 0.0, 0.1),
            1.4,
        )
        .unwrap();
        // Left of the contact: rarefied gas; right: shocked gas.
        let l = s.sample(s.u_star() - 1e-9);
        let r = s.sample(s.u_star() + 1e-9);
        assert!((l.rho - 0.42632).abs() < 1e-5, "{}", l.rho);
        assert!((r.rho - 0.26557).abs() < 1e-5, "{}", r.rho);
        assert!((s.p_star() - 0.30313).abs() < 1e-5);
    }

    #[test]
    fn vacuum_is_rejected() {
        let e = ExactRiemann::new(
            State1d::new(1.0, -20.0, 0.4),
            State1d::new(1.0, 20.0, 0.4),
            1.4,
        );
        assert!(matches!(e, Err(ExactError::Vacuum { .. })));
    }
}
