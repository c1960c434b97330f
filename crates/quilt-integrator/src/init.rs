//! Initial conditions: cell averages of conserved variables, by sampling
//! each cell at `SAMPLES³` points (so a sphere or a plane cutting a cell
//! gives the volume-weighted mix, and the initial state does not depend on
//! which level a region happens to be on more than the cell size allows).

use quilt_mesh::{IntVect, LevelGeometry};

use crate::deck::{Deck, InitialKind};

/// Sample points per axis in each cell.
const SAMPLES: usize = 4;

/// The initial condition of a deck as a function of position, giving the
/// primitive state `[rho, u, v, w, p]`.
#[derive(Clone, Debug)]
pub struct InitialCondition {
    kind: InitialKind,
    deck: Deck,
    gamma: f64,
}

impl InitialCondition {
    /// The deck's initial condition (the deck is assumed validated).
    pub fn new(deck: &Deck) -> Self {
        Self {
            kind: deck.initial.kind,
            deck: deck.clone(),
            gamma: deck.hydro.gamma,
        }
    }

    /// Primitive state `[rho, u, v, w, p]` at point `x`.
    pub fn primitive(&self, x: [f64; 3]) -> [f64; 5] {
        let i = &self.deck.initial;
        let dist = |c: [f64; 3]| {
            ((x[0] - c[0]).powi(2) + (x[1] - c[1]).powi(2) + (x[2] - c[2]).powi(2)).sqrt()
        };
        match self.kind {
            InitialKind::Sphere => {
                let s = &i.sphere;
                if dist(s.center) <= s.radius {
                    [s.rho_in, 0.0, 0.0, 0.0, s.p_in]
                } else {
                    [s.rho_out, 0.0, 0.0, 0.0, s.p_out]
                }
            }
            InitialKind::Sedov => {
                let s = &i.sedov;
                if dist(s.center) <= s.radius {
                    let vol = 4.0 / 3.0 * std::f64::consts::PI * s.radius.powi(3);
                    [s.rho, 0.0, 0.0, 0.0, (self.gamma - 1.0) * s.energy / vol]
                } else {
                    [s.rho, 0.0, 0.0, 0.0, s.p_ambient]
                }
            }
            InitialKind::Riemann => {
                let s = &i.riemann;
                let a = s.axis.index();
                let st = if x[a] < s.x0 { s.left } else { s.right };
                let mut v = [0.0; 3];
                v[a] = st[1];
                [st[0], v[0], v[1], v[2], st[2]]
            }
            InitialKind::Uniform => {
                let s = &i.uniform;
                [s.rho, s.velocity[0], s.velocity[1], s.velocity[2], s.p]
            }
        }
    }

    /// Conserved state `[rho, rho u, rho v, rho w, E]` at point `x`.
    pub fn conserved(&self, x: [f64; 3]) -> [f64; 5] {
        let [rho, u, v, w, p] = self.primitive(x);
        [
            rho,
            rho * u,
            rho * v,
            rho * w,
            p / (self.gamma - 1.0) + 0.5 * rho * (u * u + v * v + w * w),
        ]
    }

    /// Cell average of the conserved state over cell `p` of level `lg`.
    pub fn cell_average(&self, lg: &LevelGeometry, p: &IntVect) -> [f64; 5] {
        let lo = lg.cell_lo_corner(p);
        let dx = lg.dx;
        let mut sum = [0.0; 5];
        for k in 0..SAMPLES {
            for j in 0..SAMPLES {
                for i in 0..SAMPLES {
                    let f = |n: usize| (n as f64 + 0.5) / SAMPLES as f64;
                    let x = [lo.x + f(i) * dx.x, lo.y + f(j) * dx.y, lo.z + f(k) * dx.z];
                    let u = self.conserved(x);
                    for c in 0..5 {
                        sum[c] += u[c];
                    }
                }
            }
        }
        sum.map(|s| s / (SAMPLES * SAMPLES * SAMPLES) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quilt_mesh::{Geometry, iv};

    #[test]
    fn sphere_cells_mix_by_volume() {
        let deck = Deck::default();
        let ic = InitialCondition::new(&deck);
        let g = Geometry::new([0.0; 3], [1.0; 3], iv(32, 32, 32), &[]).unwrap();
        let lg = g.level(0).unwrap();
        assert_eq!(ic.cell_average(&lg, &iv(16, 16, 16))[0], 8.0);
        assert_eq!(ic.cell_average(&lg, &iv(0, 0, 0))[0], 1.0);
        let edge = ic.cell_average(&lg, &iv(19, 16, 16))[0];
        assert!(edge > 1.0 && edge < 8.0, "{edge}");
        let e = ic.conserved([0.5; 3])[4];
        assert!((e - 40.0 / 0.4).abs() < 1e-12);
    }

    #[test]
    fn riemann_states_follow_the_axis() {
        let mut deck = Deck::default();
        deck.initial.kind = InitialKind::Riemann;
        deck.initial.riemann.axis = crate::deck::Axis::Y;
        deck.initial.riemann.left = [2.0, 0.5, 3.0];
        let ic = InitialCondition::new(&deck);
        assert_eq!(ic.primitive([0.9, 0.1, 0.9]), [2.0, 0.0, 0.5, 0.0, 3.0]);
        assert_eq!(ic.primitive([0.1, 0.9, 0.1]), [0.125, 0.0, 0.0, 0.0, 0.1]);
    }
}
