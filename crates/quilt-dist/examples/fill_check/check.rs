//! The distributed ghost fill against the serial one, on any transport:
//! shared by `fill_check` (run under `mpirun`) and the in-process tests.

use quilt_dist::{Distribution, HaloPlan, Shadows, Transport, WithShadows};
use quilt_mesh::fill::{FillScratch, OldData};
use quilt_mesh::hierarchy::HierarchyData;
use quilt_mesh::{
    BoundaryConditions, FillTarget, GhostFill, Hierarchy, Limiter, PatchData, Real, SyntheticSpec,
    generate,
};

/// Components of the test data.
pub const NCOMP: usize = 3;

/// A small three-level synthetic hierarchy (every rank builds the same).
pub fn hierarchy() -> Hierarchy {
    generate(&SyntheticSpec {
        patches: 40,
        seed: 7,
        domain_cells: 32,
        base_patch: 16,
        ..SyntheticSpec::default()
    })
    .expect("the synthetic spec is valid")
}

/// Old data that differs in every cell, level and component.
pub fn data<T: Real>(h: &Hierarchy) -> HierarchyData<T> {
    let mut d = HierarchyData::<T>::new(h, NCOMP).expect("layout of h");
    d.init_old_with(h, |lg, p, v| {
        for (c, x) in v.iter_mut().enumerate() {
            let s = (p.x * 131 + p.y * 71 + p.z * 37 + c as i32 * 11 + lg.level as i32 * 5) as f64;
            *x = T::from_f64((s * 0.013).sin() + 2.0);
        }
    })
    .expect("layout of h");
    d
}

fn prepared<T: Real, D: OldData<T> + ?Sized>(
    fill: &GhostFill<T>,
    h: &Hierarchy,
    old: &D,
    i: usize,
) -> Result<PatchData<T>, String> {
    let p = &h.patches()[i];
    let mut t = PatchData::<T>::new(p.interior(), h.ghost(), NCOMP).map_err(|e| e.to_string())?;
    fill.prepare(
        old,
        i,
        0.0,
        &mut FillTarget::patch(&mut t),
        &mut FillScratch::new(),
    )
    .map_err(|e| e.to_string())?;
    Ok(t)
}

/// What one rank found.
#[derive(Debug, Clone, Copy, Default)]
pub struct RankCheck {
    /// Patches of this rank compared with the serial fill.
    pub patches: usize,
    /// Bytes this rank sent.
    pub sent_bytes: usize,
}

/// Fills this rank's patches of [`hierarchy`] through a halo exchange over
/// `t` (the other patches' data poisoned with NaN, so that a read the plan
/// missed shows) and compares them bit for bit with the serial fill.
pub fn fill_matches<T: Real>(t: &mut impl Transport, tag: u32) -> Result<RankCheck, String> {
    let h = hierarchy();
    let fill = GhostFill::<T>::new(
        &h,
        BoundaryConditions::outflow(),
        Limiter::MonotonizedCentral,
    )
    .map_err(|e| e.to_string())?;
    let full = data::<T>(&h);
    let costs: Vec<f64> = h
        .patches()
        .iter()
        .map(|p| p.interior().num_cells() as f64)
        .collect();
    let me = t.rank();
    let dist = Distribution::balanced(&h, &costs, t.size()).map_err(|e| e.to_string())?;
    let mut local = full.clone();
    for i in (0..h.num_patches()).filter(|&i| dist.owner(i) != me) {
        local.get_mut(i).expect("index in range").old.fill(T::nan());
    }
    let plan = HaloPlan::for_fill(fill.plan(), &dist, me);
    let mut shadows = Shadows::<T>::for_plan(&h, &plan, NCOMP).map_err(|e| e.to_string())?;
    let counts = plan
        .exchange(t, tag, &local, &mut shadows)
        .map_err(|e| e.to_string())?;
    let view = WithShadows {
        local: &local,
        shadows: &shadows,
    };
    let mine = dist.owned(me);
    for &i in &mine {
        let want = prepared(&fill, &h, &full, i)?;
        let got = prepared(&fill, &h, &view, i)?;
        let same = bytemuck::cast_slice::<T, u8>(got.as_slice())
            == bytemuck::cast_slice::<T, u8>(want.as_slice());
        if !same {
            return Err(format!(
                "rank {me} of {}: patch index {i} differs from the serial fill",
                t.size()
            ));
        }
    }
    Ok(RankCheck {
        patches: mine.len(),
        sent_bytes: counts.sent_bytes,
    })
}
