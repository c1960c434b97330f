//! Range and consistency checks of a parsed deck.

use quilt_mesh::memory;
use quilt_mesh::tag::{GradientDetector, ShockDetector};
use quilt_sweep::physics::Derived;

use super::locate::Locator;
use super::{Boundary, Deck, DeckError, Detector, InitialKind, base_patches};

/// Most levels a deck may ask for (the paper runs up to 6).
pub(crate) const MAX_LEVELS: usize = 8;

/// Longest `output.name`: the longest file name made from it is the
/// temporary of an atomic checkpoint write, `.NAME.checkpoint.h5.tmp-PID-N`
/// (up to 55 more bytes), and file systems allow 255.
const MAX_OUTPUT_NAME: usize = 200;

/// Most level-0 patches a deck may ask for: far beyond any run (a 2048³
/// base grid of 16³ patches has 2^21), and small enough that listing them
/// is quick.
const MAX_BASE_PATCHES: u128 = 1 << 24;

/// Whether the ball of `radius` around `center` shares volume with the
/// domain (distance from the centre to the box below the radius).
fn ball_meets_domain(d: &Deck, center: [f64; 3], radius: f64) -> bool {
    let dist2: f64 = (0..3)
        .map(|a| {
            let c = center[a].clamp(d.domain.lo[a], d.domain.hi[a]);
            (center[a] - c).powi(2)
        })
        .sum();
    dist2 < radius * radius
}

/// Deck values that are valid but probably not what the user meant: the
/// integrator logs them as warnings when a run starts.
pub(crate) fn warnings(d: &Deck) -> Vec<String> {
    let mut w = Vec::new();
    let inside = |p: [f64; 3]| (0..3).all(|a| p[a] >= d.domain.lo[a] && p[a] <= d.domain.hi[a]);
    let centre = match d.initial.kind {
        InitialKind::Sphere => Some(("initial.sphere.center", d.initial.sphere.center)),
        InitialKind::Sedov => Some(("initial.sedov.center", d.initial.sedov.center)),
        _ => None,
    };
    if let Some((key, c)) = centre {
        if !inside(c) {
            w.push(format!(
                "{key} {c:?} lies outside the domain {:?} ..= {:?}; only part of the blast is in it",
                d.domain.lo, d.domain.hi
            ));
        }
    }
    w
}

struct Check<'a, 'b> {
    loc: &'a Locator<'b>,
}

impl Check<'_, '_> {
    fn fail(&self, key: &str, message: impl Into<String>) -> DeckError {
        DeckError::Invalid {
            location: self.loc.locate(key),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn ensure(
        &self,
        ok: bool,
        key: &str,
        message: impl FnOnce() -> String,
    ) -> Result<(), DeckError> {
        if ok {
            Ok(())
        } else {
            Err(self.fail(key, message()))
        }
    }

    fn positive(&self, key: &str, v: f64) -> Result<(), DeckError> {
        self.ensure(v.is_finite() && v > 0.0, key, || {
            format!("{v} must be finite and > 0")
        })
    }

    fn finite(&self, key: &str, v: &[f64]) -> Result<(), DeckError> {
        self.ensure(v.iter().all(|x| x.is_finite()), key, || {
            format!("{v:?} must be finite")
        })
    }

    fn fraction(&self, key: &str, v: f64) -> Result<(), DeckError> {
        self.ensure(v.is_finite() && v > 0.0 && v <= 1.0, key, || {
            format!("{v} must lie in (0, 1]")
        })
    }
}

/// Scalar names: at most [`super::MAX_SCALARS`], each non-empty, of
/// letters, digits and `_`, unique and none an output array's name.
fn validate_scalars(c: &Check<'_, '_>, names: &[String]) -> Result<(), DeckError> {
    let key = "hydro.scalars";
    c.ensure(names.len() <= super::MAX_SCALARS, key, || {
        format!(
            "{} scalars; at most {} are supported",
            names.len(),
            super::MAX_SCALARS
        )
    })?;
    for (i, n) in names.iter().enumerate() {
        c.ensure(super::is_array_name(n), key, || {
            format!("scalar name {n:?} must be non-empty and of letters, digits and '_'")
        })?;
        c.ensure(
            !quilt_io::vtkhdf::EULER_ARRAYS.contains(&n.as_str()),
            key,
            || format!("scalar name {n:?} is already an output array's name"),
        )?;
        c.ensure(!names[..i].contains(n), key, || {
            format!("scalar name {n:?} is given twice")
        })?;
    }
    Ok(())
}

pub(crate) fn validate(d: &Deck, loc: &Locator<'_>) -> Result<(), DeckError> {
    validate_with_budget(d, loc, memory::available_bytes())
}

/// [`validate`] against a memory budget of `available` bytes (`None`: no
/// memory check).
pub(crate) fn validate_with_budget(
    d: &Deck,
    loc: &Locator<'_>,
    available: Option<u64>,
) -> Result<(), DeckError> {
    let c = Check { loc };
    c.ensure(
        (1..=1024).contains(&d.batching.bin_edge),
        "batching.bin_edge",
        || format!("{} must lie in 1 ..= 1024", d.batching.bin_edge),
    )?;

    // Domain.
    c.finite("domain.lo", &d.domain.lo)?;
    c.finite("domain.hi", &d.domain.hi)?;
    c.ensure(
        (0..3).all(|a| d.domain.hi[a] > d.domain.lo[a]),
        "domain.hi",
        || {
            format!(
                "{:?} must exceed domain.lo {:?} on every axis",
                d.domain.hi, d.domain.lo
            )
        },
    )?;
    c.ensure(
        d.domain
            .base_cells
            .iter()
            .all(|&n| (1..=1 << 20).contains(&n)),
        "domain.base_cells",
        || {
            format!(
                "{:?}: every axis needs 1 ..= 2^20 cells",
                d.domain.base_cells
            )
        },
    )?;

    // Hydro first: the ghost width follows from the scheme.
    let scheme = d.scheme().map_err(|e| {
        let key = if e.to_string().contains("limiter") {
            "hydro.limiter"
        } else {
            "hydro.scheme"
        };
        c.fail(key, e.to_string())
    })?;
    let limit = scheme.cfl_limit();
    c.ensure(
        d.hydro.cfl.is_finite() && d.hydro.cfl > 0.0 && d.hydro.cfl <= limit,
        "hydro.cfl",
        || {
            format!(
                "{} must lie in (0, {limit}] for the {} scheme",
                d.hydro.cfl,
                scheme.name()
            )
        },
    )?;
    c.ensure(
        d.hydro.gamma.is_finite() && d.hydro.gamma > 1.0,
        "hydro.gamma",
        || format!("{} must be finite and > 1", d.hydro.gamma),
    )?;
    validate_scalars(&c, &d.hydro.scalars)?;
    c.positive("hydro.density_floor", d.hydro.density_floor)?;
    c.positive("hydro.pressure_floor", d.hydro.pressure_floor)?;
    let ghost = scheme.ghost_width() as i32;

    // AMR.
    let a = &d.amr;
    c.ensure(
        (1..=MAX_LEVELS).contains(&a.max_levels),
        "amr.max_levels",
        || format!("{} must lie in 1 ..= {MAX_LEVELS}", a.max_levels),
    )?;
    c.ensure(
        a.ratios.len() == 1 || a.ratios.len() + 1 == a.max_levels,
        "amr.ratios",
        || {
            format!(
                "give one ratio for all levels or max_levels - 1 = {} ratios, not {}",
                a.max_levels - 1,
                a.ratios.len()
            )
        },
    )?;
    c.ensure(
        a.ratios.iter().all(|&r| r == 2 || r == 4),
        "amr.ratios",
        || format!("{:?}: every ratio must be 2 or 4", a.ratios),
    )?;
    c.ensure(
        a.min_patch >= 1 && a.min_patch <= a.max_patch,
        "amr.min_patch",
        || {
            format!(
                "{} must lie in 1 ..= amr.max_patch ({})",
                a.min_patch, a.max_patch
            )
        },
    )?;
    c.ensure(a.max_patch > 2 * ghost, "amr.max_patch", || {
        format!(
            "{} leaves no interior cell with the {} scheme's {ghost} ghost cells per side",
            a.max_patch,
            scheme.name()
        )
    })?;
    let bin = d.batching.bin_edge;
    c.ensure(
        bin >= 1 && a.max_patch as i64 <= i64::from(bin),
        "amr.max_patch",
        || {
            format!(
                "{} must not exceed the bin edge batching.bin_edge = {bin}",
                a.max_patch
            )
        },
    )?;
    c.ensure(a.base_patch >= 1, "amr.base_patch", || {
        format!("{} must be >= 1", a.base_patch)
    })?;
    // Before anything lists the base patches: there may be too many.
    let count = d.base_patch_count();
    let need = d.level0_bytes(ghost);
    if let Some(avail) = available {
        if need > u128::from(avail) {
            return Err(c.fail(
                "domain.base_cells",
                format!(
                    "{:?} needs ~{} for level 0 alone ({} patches of amr.base_patch = {}, both time levels, \
                     {ghost} ghost cells, {}) but {} is available (set {} to change the budget)",
                    d.domain.base_cells,
                    memory::format_bytes(need),
                    d.base_patch_count(),
                    a.base_patch,
                    d.run.precision.name(),
                    memory::format_bytes(avail),
                    memory::MEMORY_LIMIT_VAR,
                ),
            ));
        }
    }
    c.ensure(count <= MAX_BASE_PATCHES, "amr.base_patch", || {
        format!(
            "{} cuts domain.base_cells {:?} into {count} level-0 patches, more than {MAX_BASE_PATCHES}",
            a.base_patch, d.domain.base_cells
        )
    })?;
    for b in base_patches(d.domain.base_cells, a.base_patch) {
        let s = b.size();
        let worst = (0..3)
            .map(|ax| s[ax] + 2 * ghost)
            .find(|&n| n < a.min_patch || n > a.max_patch);
        if let Some(n) = worst {
            return Err(c.fail(
                "amr.base_patch",
                format!(
                    "level-0 patch {b} has a side of {n} cells with ghosts, outside amr.min_patch ..= amr.max_patch \
                     ({} ..= {}); change amr.base_patch or domain.base_cells",
                    a.min_patch, a.max_patch
                ),
            ));
        }
    }
    c.fraction("amr.efficiency", a.efficiency)?;
    c.fraction("amr.combine_efficiency", a.combine_efficiency)?;
    c.ensure(a.nesting_buffer >= 0, "amr.nesting_buffer", || {
        format!("{} must be >= 0", a.nesting_buffer)
    })?;
    c.ensure((0..=16).contains(&a.tag_buffer), "amr.tag_buffer", || {
        format!("{} must lie in 0 ..= 16", a.tag_buffer)
    })?;
    if a.max_levels > 1 {
        for (l, &ratio) in d.fine_ratios().iter().enumerate() {
            let n = a.blocks;
            c.ensure(
                n == 0
                    || (n > 0
                        && n % ratio == 0
                        && (a.min_patch..=a.max_patch).contains(&(n + 2 * ghost))),
                "amr.blocks",
                || {
                    format!(
                        "{n} must be 0 (Berger–Rigoutsos) or a positive multiple of the ratio {ratio} \
                         of level {} whose patches, with {ghost} ghost cells per side, lie within \
                         amr.min_patch ..= amr.max_patch ({} ..= {})",
                        l + 1,
                        a.min_patch,
                        a.max_patch
                    )
                },
            )?;
            d.cluster_options(l + 1, ghost).validate().map_err(|e| {
                c.fail(
                    "amr.min_patch",
                    format!("patch sizes for level {}: {e}", l + 1),
                )
            })?;
        }
        if let Err(e) = d.geometry() {
            return Err(c.fail("amr.max_levels", e.to_string()));
        }
    }

    // Tagging.
    c.ensure(a.max_levels == 1 || !d.tagging.is_empty(), "amr.max_levels", || {
        format!(
            "is {} but the deck has no [[tagging]] criterion, so no cell would ever be refined; \
             add one or set amr.max_levels = 1",
            a.max_levels
        )
    })?;
    for (i, t) in d.tagging.iter().enumerate() {
        let key = format!("tagging[{i}]");
        let r = match t.detector {
            Detector::Gradient => GradientDetector::new(t.tol).map(|_| ()),
            Detector::Shock => ShockDetector::new(t.tol, t.onset).map(|_| ()),
        };
        if let Err(e) = r {
            let field = if e.to_string().contains("onset") {
                "onset"
            } else {
                "tol"
            };
            return Err(c.fail(&format!("{key}.{field}"), e.to_string()));
        }
        // Only the shock detector uses it, but a value out of range (NaN
        // above all: the deck would no longer equal itself) is a mistake.
        c.ensure(
            (0.0..=1.0).contains(&t.onset),
            &format!("{key}.onset"),
            || format!("{} must lie in [0, 1]", t.onset),
        )?;
    }

    // Boundaries.
    let f = d.boundary.faces();
    for (ax, name) in ["x", "y", "z"].iter().enumerate() {
        let (lo, hi) = (f[2 * ax], f[2 * ax + 1]);
        if (lo == Boundary::Periodic) != (hi == Boundary::Periodic) {
            let key = if lo == Boundary::Periodic {
                format!("boundary.{name}_lo")
            } else {
                format!("boundary.{name}_hi")
            };
            return Err(c.fail(
                &key,
                format!("axis {name} is periodic on one face only; set both boundary.{name}_lo and {name}_hi to periodic"),
            ));
        }
    }

    // Initial condition: parameters of the chosen kind, and no table for another.
    let kinds = [
        (InitialKind::Sphere, "sphere"),
        (InitialKind::Sedov, "sedov"),
        (InitialKind::Riemann, "riemann"),
        (InitialKind::Uniform, "uniform"),
    ];
    for (kind, name) in kinds {
        let key = format!("initial.{name}");
        if kind != d.initial.kind && loc.present(&key) {
            return Err(c.fail(
                &key,
                format!(
                    "parameters for kind `{name}`, but initial.kind is `{:?}`",
                    d.initial.kind
                )
                .to_lowercase(),
            ));
        }
    }
    match d.initial.kind {
        InitialKind::Sphere => {
            let s = &d.initial.sphere;
            c.finite("initial.sphere.center", &s.center)?;
            c.positive("initial.sphere.radius", s.radius)?;
            c.positive("initial.sphere.rho_in", s.rho_in)?;
            c.positive("initial.sphere.p_in", s.p_in)?;
            c.positive("initial.sphere.rho_out", s.rho_out)?;
            c.positive("initial.sphere.p_out", s.p_out)?;
            c.ensure(
                ball_meets_domain(d, s.center, s.radius),
                "initial.sphere.center",
                || {
                    format!(
                        "the sphere of radius {} around {:?} lies wholly outside the domain {:?} ..= {:?}: \
                         the initial state would be uniform",
                        s.radius, s.center, d.domain.lo, d.domain.hi
                    )
                },
            )?;
        }
        InitialKind::Sedov => {
            let s = &d.initial.sedov;
            c.finite("initial.sedov.center", &s.center)?;
            c.positive("initial.sedov.energy", s.energy)?;
            c.positive("initial.sedov.radius", s.radius)?;
            c.positive("initial.sedov.rho", s.rho)?;
            c.positive("initial.sedov.p_ambient", s.p_ambient)?;
            c.ensure(
                ball_meets_domain(d, s.center, s.radius),
                "initial.sedov.center",
                || {
                    format!(
                        "the energy deposit of radius {} around {:?} lies wholly outside the domain {:?} ..= {:?}",
                        s.radius, s.center, d.domain.lo, d.domain.hi
                    )
                },
            )?;
        }
        InitialKind::Riemann => {
            let s = &d.initial.riemann;
            c.finite("initial.riemann.x0", &[s.x0])?;
            let ax = s.axis.index();
            let (lo, hi) = (d.domain.lo[ax], d.domain.hi[ax]);
            c.ensure(s.x0 > lo && s.x0 < hi, "initial.riemann.x0", || {
                format!(
                    "{} lies outside the domain along {:?} ({lo} .. {hi}): the initial state would be uniform",
                    s.x0, s.axis
                )
            })?;
            for (key, st) in [
                ("initial.riemann.left", s.left),
                ("initial.riemann.right", s.right),
            ] {
                c.ensure(
                    st[0].is_finite()
                        && st[0] > 0.0
                        && st[1].is_finite()
                        && st[2].is_finite()
                        && st[2] > 0.0,
                    key,
                    || format!("{st:?}: [rho, u, p] needs finite values with rho > 0 and p > 0"),
                )?;
            }
        }
        InitialKind::Uniform => {
            let s = &d.initial.uniform;
            c.positive("initial.uniform.rho", s.rho)?;
            c.positive("initial.uniform.p", s.p)?;
            c.finite("initial.uniform.velocity", &s.velocity)?;
        }
    }

    // Run.
    c.ensure(
        d.run.end_time.is_finite() && d.run.end_time >= 0.0,
        "run.end_time",
        || format!("{} must be finite and >= 0", d.run.end_time),
    )?;
    c.ensure(
        d.run.end_time > 0.0 || d.run.max_steps > 0,
        "run.end_time",
        || "is 0 and run.max_steps is 0: the run would never advance".to_string(),
    )?;
    c.ensure(d.run.threads <= 4096, "run.threads", || {
        format!("{} must be at most 4096", d.run.threads)
    })?;
    let f = d.run.device_memory_fraction;
    c.ensure(f > 0.0 && f <= 1.0, "run.device_memory_fraction", || {
        format!("{f} must be in (0, 1]")
    })?;

    // Output.
    let name = &d.output.name;
    c.ensure(
        !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch)),
        "output.name",
        || format!("`{name}` must be non-empty and use only letters, digits, `-`, `_` and `.`"),
    )?;
    c.ensure(name.len() <= MAX_OUTPUT_NAME, "output.name", || {
        format!(
            "is {} bytes long; at most {MAX_OUTPUT_NAME} leave room for the file names made from it \
             (`.NAME.checkpoint.h5.tmp-PID-N` must fit the file system's 255 bytes)",
            name.len()
        )
    })?;
    c.ensure(!d.output.dir.as_os_str().is_empty(), "output.dir", || {
        "must not be empty".to_string()
    })?;
    let derived = &d.output.derived;
    for (i, n) in derived.iter().enumerate() {
        c.ensure(Derived::from_name(n).is_some(), "output.derived", || {
            let known: Vec<&str> = Derived::ALL.iter().map(|d| d.name()).collect();
            format!("{n:?} is not a derived field; known: {}", known.join(", "))
        })?;
        c.ensure(!derived[..i].contains(n), "output.derived", || {
            format!("{n:?} is given twice")
        })?;
        c.ensure(!d.hydro.scalars.contains(n), "output.derived", || {
            format!("{n:?} is also a passive scalar's name (hydro.scalars)")
        })?;
    }

    // Batching.
    c.ensure(d.batching.n_fixed >= 1, "batching.n_fixed", || {
        "must be >= 1".to_string()
    })?;
    Ok(())
}
