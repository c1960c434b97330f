//! Building an [`AmrOutput`] of the Euler fields from a quilt-mesh
//! hierarchy and its patch data.

use quilt_mesh::{Hierarchy, PatchData, Real};

use crate::error::IoError;

use super::model::{AmrOutput, CellArray, CellValues, LevelOutput};

/// The fields of one cell shown in ParaView, computed from its conserved
/// variables by the caller's equation of state.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CellFields {
    /// Mass density.
    pub density: f64,
    /// Velocity `(u, v, w)`.
    pub velocity: [f64; 3],
    /// Pressure.
    pub pressure: f64,
    /// Total energy per unit volume.
    pub total_energy: f64,
}

/// Names of the cell arrays [`euler_output`] writes, in file order.
pub const EULER_ARRAYS: [&str; 5] = [
    "density",
    "velocity",
    "pressure",
    "total_energy",
    "patch_id",
];

/// One output column, in the run's precision.
enum Column {
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Column {
    fn new<T: Real>(n: usize) -> Self {
        if std::mem::size_of::<T>() == 4 {
            Column::F32(Vec::with_capacity(n))
        } else {
            Column::F64(Vec::with_capacity(n))
        }
    }

    #[inline]
    fn push(&mut self, x: f64) {
        match self {
            Column::F32(v) => v.push(x as f32),
            Column::F64(v) => v.push(x),
        }
    }

    fn into_values(self) -> CellValues {
        match self {
            Column::F32(v) => CellValues::F32(v),
            Column::F64(v) => CellValues::F64(v),
        }
    }
}

/// The Euler output of a hierarchy: for every level its patches (interiors
/// only) with density, velocity (3 components), pressure, total energy
/// (in `T`'s precision) and the patch id (`i32`).
///
/// `patch(i)` gives the data of patch index `i` (e.g. `|i| data.old(i)`
/// after the step's swap); `fields` maps the `ncomp` conserved values of a
/// cell to what is shown. The origin is the domain's low corner and each
/// level's spacing its cell size.
pub fn euler_output<'a, T, P, F>(
    h: &Hierarchy,
    patch: P,
    time: f64,
    step: u64,
    fields: F,
) -> Result<AmrOutput, IoError>
where
    T: Real + 'a,
    P: Fn(usize) -> &'a PatchData<T>,
    F: Fn(&[T]) -> CellFields,
{
    euler_output_with(h, patch, (time, step), fields, &[], |_, _| {})
}

/// [`euler_output`] with further scalar cell arrays, one per name of
/// `extra` (after the Euler arrays, before `patch_id`): `extra_values`
/// writes a cell's values of them, in `extra`'s order, from its conserved
/// values (for instance a passive scalar's mass fraction).
pub fn euler_output_with<'a, T, P, F, X>(
    h: &Hierarchy,
    patch: P,
    (time, step): (f64, u64),
    fields: F,
    extra: &[&str],
    extra_values: X,
) -> Result<AmrOutput, IoError>
where
    T: Real + 'a,
    P: Fn(usize) -> &'a PatchData<T>,
    F: Fn(&[T]) -> CellFields,
    X: Fn(&[T], &mut [f64]),
{
    let prob_lo = h.geometry().prob_lo();
    let mut levels = Vec::with_capacity(h.num_levels());
    // One cell's conserved values, gathered from the component-major layout.
    let mut cell: Vec<T> = Vec::new();
    for l in 0..h.num_levels() {
        let lg = h
            .level_geometry(l)
            .ok_or_else(|| IoError::invalid("hierarchy", format!("level {l} has no geometry")))?;
        let ncells = usize::try_from(h.level_cells(l)).unwrap_or(0);
        let mut rho = Column::new::<T>(ncells);
        let mut vel = Column::new::<T>(3 * ncells);
        let mut p = Column::new::<T>(ncells);
        let mut e = Column::new::<T>(ncells);
        let mut ids = Vec::with_capacity(ncells);
        let mut more: Vec<Column> = extra.iter().map(|_| Column::new::<T>(ncells)).collect();
        let mut more_cell = vec![0.0; extra.len()];
        let mut boxes = Vec::with_capacity(h.level_patches(l).len());
        for i in h.level_range(l) {
            let meta = &h.patches()[i];
            let pd = patch(i);
            let interior = meta.interior();
            if pd.interior() != interior {
                return Err(IoError::invalid(
                    format!("level {l}, patch {}", meta.id()),
                    format!(
                        "data interior {} differs from the hierarchy's {interior}",
                        pd.interior()
                    ),
                ));
            }
            let id = i32::try_from(meta.id().0).map_err(|_| {
                IoError::invalid(
                    format!("level {l}, patch {}", meta.id()),
                    "id does not fit the i32 patch_id array",
                )
            })?;
            let ncomp = pd.ncomp();
            let comp_len = pd.comp_len();
            let values = pd.as_slice();
            let [_, sy, sz] = pd.strides();
            let base = pd.index(&interior.lo);
            let n = interior.size();
            cell.resize(ncomp, T::zero());
            for k in 0..n.z as usize {
                for j in 0..n.y as usize {
                    let row = base + j * sy + k * sz;
                    for off in row..row + n.x as usize {
                        for (c, v) in cell.iter_mut().enumerate() {
                            *v = values[c * comp_len + off];
                        }
                        let f = fields(&cell);
                        rho.push(f.density);
                        for u in f.velocity {
                            vel.push(u);
                        }
                        p.push(f.pressure);
                        e.push(f.total_energy);
                        if !extra.is_empty() {
                            extra_values(&cell, &mut more_cell);
                            for (m, &x) in more.iter_mut().zip(&more_cell) {
                                m.push(x);
                            }
                        }
                        ids.push(id);
                    }
                }
            }
            boxes.push(interior);
        }
        levels.push(LevelOutput {
            spacing: [lg.dx.x, lg.dx.y, lg.dx.z],
            boxes,
            cell_arrays: [
                CellArray::scalar(EULER_ARRAYS[0], rho.into_values()),
                CellArray::vector(EULER_ARRAYS[1], vel.into_values()),
                CellArray::scalar(EULER_ARRAYS[2], p.into_values()),
                CellArray::scalar(EULER_ARRAYS[3], e.into_values()),
            ]
            .into_iter()
            .chain(
                extra
                    .iter()
                    .zip(more)
                    .map(|(name, m)| CellArray::scalar(*name, m.into_values())),
            )
            .chain([CellArray::scalar(EULER_ARRAYS[4], ids)])
            .collect(),
        });
    }
    let out = AmrOutput {
        origin: [prob_lo.x, prob_lo.y, prob_lo.z],
        time,
        step,
        levels,
    };
    out.validate()?;
    Ok(out)
}
