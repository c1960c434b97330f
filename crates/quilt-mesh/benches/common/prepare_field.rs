//! The old data both prepare measurements fill from (the `prepare` bench
//! and the `prepare_table` example, which includes this file by path).

use std::error::Error;

use quilt_mesh::{Hierarchy, PatchData, Real};

/// Components of the Euler state.
pub const NCOMP: usize = 5;

/// Old data of every patch: a smooth field with a jump and structure on
/// every component, so that limiters take both branches.
pub fn old_data<T: Real>(h: &Hierarchy) -> Result<Vec<PatchData<T>>, Box<dyn Error>> {
    let mut out = Vec::with_capacity(h.patches().len());
    for p in h.patches() {
        let lg = h
            .level_geometry(p.level())
            .ok_or_else(|| format!("no geometry for level {}", p.level()))?;
        let mut d = PatchData::new(p.interior(), h.ghost(), NCOMP)?;
        d.fill_cells_with(|q, v| {
            let x = lg.cell_center(q);
            let r = ((x.x - 0.5).powi(2) + (x.y - 0.5).powi(2) + (x.z - 0.5).powi(2)).sqrt();
            let rho = 1.0 + if r < 0.3 { 2.0 } else { 0.1 * (20.0 * r).sin() };
            v[0] = T::from_f64(rho);
            v[1] = T::from_f64(rho * (x.y - 0.5));
            v[2] = T::from_f64(-rho * (x.x - 0.5));
            v[3] = T::from_f64(0.1 * x.z);
            v[4] = T::from_f64(2.5 / r.max(0.05));
        });
        out.push(d);
    }
    Ok(out)
}
