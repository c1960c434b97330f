use super::*;

fn err(text: &str) -> DeckError {
    match Deck::parse_named(text, "t.toml") {
        Ok(d) => panic!("accepted {text:?}: {d:?}"),
        Err(e) => e,
    }
}

/// Asserts the error names `key` on `line`.
fn at(text: &str, key: &str, line: usize) -> DeckError {
    let e = err(text);
    assert_eq!(e.key(), Some(key), "{e}");
    assert_eq!(e.line(), Some(line), "{e}");
    let s = e.to_string();
    assert!(s.starts_with(&format!("t.toml:{line}:")), "{s}");
    assert!(s.contains(key), "{s}");
    e
}

#[test]
fn the_default_deck_is_the_default() {
    let d = Deck::parse(DEFAULT_DECK).unwrap();
    assert_eq!(d, Deck::default());
    assert_eq!(Deck::parse("").unwrap(), Deck::default());
    Deck::default().validate().unwrap();
}

#[test]
fn round_trip_through_toml() {
    let mut d = Deck::default();
    d.hydro.cfl = 0.6;
    d.initial.kind = InitialKind::Sedov;
    d.boundary = BoundarySection::all(Boundary::Reflecting);
    d.tagging.truncate(1);
    let text = d.to_toml();
    assert!(!text.contains("[initial.sphere]"), "{text}");
    let back = Deck::parse(&text).unwrap();
    assert_eq!(back, d);
    assert_eq!(
        Deck::parse(&Deck::default().to_toml()).unwrap(),
        Deck::default()
    );
}

#[test]
fn partial_sections_keep_other_defaults() {
    let d = Deck::parse("[hydro]\nscheme = \"waf\"\nlimiter = \"superbee\"\ncfl = 0.9\n").unwrap();
    assert_eq!(d.scheme().unwrap().name(), "waf");
    assert_eq!(d.ghost().unwrap(), 2);
    assert_eq!(d.hydro.gamma, 1.4);
    assert_eq!(d.amr, AmrSection::default());
    let d = Deck::parse("[amr]\nmax_levels = 3\nratios = [4, 2]\n").unwrap();
    assert_eq!(d.fine_ratios(), vec![4, 2]);
    let d = Deck::parse("[amr]\nmax_levels = 3\n").unwrap();
    assert_eq!(d.fine_ratios(), vec![2, 2]);
    assert_eq!(d.geometry().unwrap().num_levels(), 3);
}

#[test]
fn unknown_keys_name_key_and_line() {
    let e = at(
        "[hydro]\ncfl = 0.5\nlimitr = \"minmod\"\n",
        "hydro.limitr",
        3,
    );
    assert!(e.to_string().contains("unknown field"), "{e}");
    at("\n\n[bogus]\nx = 1\n", "bogus", 3);
    at(
        "[initial.sphere]\nradius = 0.1\nradus = 0.2\n",
        "initial.sphere.radus",
        3,
    );
    at(
        "[[tagging]]\nfield = \"density\"\ndetector = \"shock\"\ntol = 1\ntoll = 2\n",
        "tagging[0].toll",
        5,
    );
    at("speed = 3\n", "speed", 1);
}

#[test]
fn wrong_types_and_names_name_key_and_line() {
    at("[run]\nmax_steps = \"ten\"\n", "run.max_steps", 2);
    at("[run]\nprecision = \"f16\"\n", "run.precision", 2);
    at("[run]\nbackend = \"opencl\"\n", "run.backend", 2);
    at("[boundary]\nx_lo = \"wall\"\n", "boundary.x_lo", 2);
    at("[batching]\nmode = \"greedy\"\n", "batching.mode", 2);
    at("[initial]\nkind = \"blast\"\n", "initial.kind", 2);
    at("[domain]\nbase_cells = [32, 32]\n", "domain.base_cells", 2);
    at(
        "[[tagging]]\nfield = \"entropy\"\ndetector = \"shock\"\ntol = 1\n",
        "tagging[0].field",
        2,
    );
    at("[amr]\ninterpolation = \"cubic\"\n", "amr.interpolation", 2);
}

#[test]
fn syntax_errors_give_the_line() {
    let e = err("[hydro]\ncfl = = 0.5\n");
    assert!(matches!(e, DeckError::Parse { .. }), "{e}");
    assert_eq!(e.line(), Some(2), "{e}");
    let e = err("[hydro]\ncfl = 0.5\n[hydro]\n");
    assert_eq!(e.line(), Some(3), "{e}");
}

#[test]
fn missing_required_criterion_keys() {
    let e = err("[[tagging]]\nfield = \"density\"\ndetector = \"shock\"\n");
    assert!(e.to_string().contains("tol"), "{e}");
}

#[test]
fn bad_domain_values() {
    at("[domain]\nlo = [0.0, 0.0, nan]\n", "domain.lo", 2);
    at("[domain]\nhi = [1.0, -1.0, 1.0]\n", "domain.hi", 2);
    at(
        "[domain]\nbase_cells = [32, 0, 32]\n",
        "domain.base_cells",
        2,
    );
}

#[test]
fn bad_hydro_values() {
    at("[hydro]\nscheme = \"ppm\"\n", "hydro.scheme", 2);
    at(
        "[hydro]\nscheme = \"rtvd\"\nlimiter = \"superbee\"\n",
        "hydro.limiter",
        3,
    );
    let e = at("[hydro]\ncfl = 1.2\n", "hydro.cfl", 2);
    assert!(e.to_string().contains("(0, 1]"), "{e}");
    at("[hydro]\nscheme = \"tvd\"\ncfl = 0.8\n", "hydro.cfl", 3);
    at("[hydro]\ncfl = 0.0\n", "hydro.cfl", 2);
    at("[hydro]\ngamma = 1.0\n", "hydro.gamma", 2);
    at(
        "[hydro]\ndensity_floor = -1e-10\n",
        "hydro.density_floor",
        2,
    );
    at("[hydro]\npressure_floor = 0.0\n", "hydro.pressure_floor", 2);
}

#[test]
fn bad_amr_values() {
    at("[amr]\nmax_levels = 0\n", "amr.max_levels", 2);
    at("[amr]\nmax_levels = 9\n", "amr.max_levels", 2);
    at("[amr]\nmax_levels = 4\nratios = [2, 2]\n", "amr.ratios", 3);
    at("[amr]\nratios = [3]\n", "amr.ratios", 2);
    // Uniform blocks: a multiple of the ratio, patches within the limits.
    at("[amr]\nblocks = 15\n", "amr.blocks", 2);
    at("[amr]\nblocks = -16\n", "amr.blocks", 2);
    at("[amr]\nblocks = 64\n", "amr.blocks", 2);
    at("[amr]\nratios = [4]\nblocks = 18\n", "amr.blocks", 3);
    Deck::parse("[amr]\nblocks = 16\n")
        .unwrap()
        .validate()
        .unwrap();
    at("[amr]\nmin_patch = 70\n", "amr.min_patch", 2);
    at("[amr]\nmin_patch = 0\n", "amr.min_patch", 2);
    at("[amr]\nmin_patch = 4\nmax_patch = 6\n", "amr.max_patch", 3);
    at("[amr]\nmax_patch = 80\n", "amr.max_patch", 2);
    at("[amr]\nbase_patch = 0\n", "amr.base_patch", 2);
    // 32 cells in pieces of 5: sides of 5 + 6 ghosts = 11 < 16.
    let e = at("[amr]\nbase_patch = 5\n", "amr.base_patch", 2);
    assert!(e.to_string().contains("level-0 patch"), "{e}");
    at("[amr]\nefficiency = 1.5\n", "amr.efficiency", 2);
    at(
        "[amr]\ncombine_efficiency = 0\n",
        "amr.combine_efficiency",
        2,
    );
    at("[amr]\nnesting_buffer = -1\n", "amr.nesting_buffer", 2);
    at("[amr]\ntag_buffer = 99\n", "amr.tag_buffer", 2);
    // 16..=20 with 6 ghost cells: fine interiors 10..=14, coarse 5..=7: no split possible.
    at(
        "[amr]\nmin_patch = 16\nmax_patch = 20\nbase_patch = 12\n",
        "amr.min_patch",
        2,
    );
}

#[test]
fn bad_tagging_values() {
    at(
        "[[tagging]]\nfield = \"density\"\ndetector = \"gradient\"\ntol = 1\n[[tagging]]\nfield = \"density\"\ndetector = \"gradient\"\ntol = -1\n",
        "tagging[1].tol",
        8,
    );
    at(
        "[[tagging]]\nfield = \"pressure\"\ndetector = \"shock\"\ntol = 1\nonset = 1.5\n",
        "tagging[0].onset",
        5,
    );
}

#[test]
fn bad_boundaries() {
    let e = at("[boundary]\nx_lo = \"periodic\"\n", "boundary.x_lo", 2);
    assert!(e.to_string().contains("periodic on one face"), "{e}");
}

#[test]
fn periodic_pairs_are_accepted() {
    let d = Deck::parse("[boundary]\ny_lo = \"periodic\"\ny_hi = \"periodic\"\n").unwrap();
    assert_eq!(d.periodic(), [false, true, false]);
    assert!(d.geometry().unwrap().periodic()[1]);
}

#[test]
fn bad_initial_conditions() {
    at(
        "[initial.sphere]\nradius = 0.0\n",
        "initial.sphere.radius",
        2,
    );
    at("[initial.sphere]\np_in = -3\n", "initial.sphere.p_in", 2);
    at(
        "[initial]\nkind = \"sedov\"\n[initial.sedov]\nenergy = 0\n",
        "initial.sedov.energy",
        4,
    );
    at(
        "[initial]\nkind = \"riemann\"\n[initial.riemann]\nleft = [1.0, 0.0, -1.0]\n",
        "initial.riemann.left",
        4,
    );
    at(
        "[initial]\nkind = \"uniform\"\n[initial.uniform]\nvelocity = [1.0, inf, 0.0]\n",
        "initial.uniform.velocity",
        4,
    );
    let e = at(
        "[initial]\nkind = \"sedov\"\n[initial.sphere]\nradius = 0.2\n",
        "initial.sphere",
        3,
    );
    assert!(e.to_string().contains("kind `sphere`"), "{e}");
}

#[test]
fn bad_run_output_batching_values() {
    at("[run]\nend_time = -1.0\n", "run.end_time", 2);
    at("[run]\nend_time = 0.0\n", "run.end_time", 2);
    assert!(Deck::parse("[run]\nend_time = 0.0\nmax_steps = 5\n").is_ok());
    at("[run]\nthreads = 100000\n", "run.threads", 2);
    at("[output]\nname = \"a/b\"\n", "output.name", 2);
    at("[output]\ndir = \"\"\n", "output.dir", 2);
    at("[output]\nderived = [\"vorticity\"]\n", "output.derived", 2);
    at(
        "[output]\nderived = [\"mach\", \"mach\"]\n",
        "output.derived",
        2,
    );
    at(
        "[hydro]\nscalars = [\"mach\"]\n[output]\nderived = [\"mach\"]\n",
        "output.derived",
        4,
    );
    assert!(Deck::parse("[output]\nderived = [\"mach\", \"sound_speed\"]\n").is_ok());
    at("[batching]\nn_fixed = 0\n", "batching.n_fixed", 2);
    at("[batching]\nbin_edge = 0\n", "batching.bin_edge", 2);
}

#[test]
fn defaults_that_become_invalid_point_at_the_default() {
    // max_patch defaults to 64; a bin edge of 32 makes that invalid, and the
    // error names the key even though the deck does not contain it.
    let e = err("[batching]\nbin_edge = 32\n");
    assert_eq!(e.key(), Some("amr.max_patch"));
    assert!(
        matches!(
            e,
            DeckError::Invalid {
                location: Location::Default { .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("default value"), "{e}");
}

#[test]
fn a_deck_too_large_for_memory_is_refused_in_deck_terms() {
    let text = "[domain]\nbase_cells = [1024, 1024, 1024]\n";
    let d = Deck::parse_unchecked(text, "big.toml").unwrap();
    let loc = Locator::new("big.toml", text, &[]);
    let e = validate::validate_with_budget(&d, &loc, Some(23_000_000_000)).unwrap_err();
    let s = e.to_string();
    assert_eq!(e.key(), Some("domain.base_cells"), "{s}");
    assert_eq!(e.line(), Some(2), "{s}");
    assert!(
        s.contains("[1024, 1024, 1024]") && s.contains("23.0 GB"),
        "{s}"
    );
    // 1024^3 cells in 32^3 patches with 3 ghost cells (RTVD): 38^3 / 32^3
    // of the interiors, two f64 time levels of 5 components.
    let bytes = d.level0_bytes(3);
    let expect = 32768u128 * 38 * 38 * 38 * 5 * 8 * 2;
    assert!(bytes >= expect && bytes < expect + expect / 100, "{bytes}");
    assert!(s.contains("144 GB"), "{s}");
    // The largest deck the axis ranges allow is refused at once, without
    // listing its 3.5e13 patches.
    let text = "[domain]\nbase_cells = [1048576, 1048576, 1048576]\n";
    let d = Deck::parse_unchecked(text, "huge.toml").unwrap();
    let loc = Locator::new("huge.toml", text, &[]);
    let e = validate::validate_with_budget(&d, &loc, Some(1 << 40)).unwrap_err();
    assert!(e.to_string().contains(" EB "), "{e}");
    // Fits: accepted; and no budget known: no memory check.
    validate::validate_with_budget(&Deck::default(), &loc, Some(1 << 30)).unwrap();
    let e = validate::validate_with_budget(&d, &loc, None).unwrap_err();
    assert_eq!(e.key(), Some("amr.base_patch"), "{e}");
}

#[test]
fn decks_that_cannot_be_meant_are_refused_or_warned_about() {
    at("tagging = []\n[amr]\nmax_levels = 3\n", "amr.max_levels", 3);
    Deck::parse("tagging = []\n[amr]\nmax_levels = 1\n").unwrap();
    let e = at(
        "[initial.sphere]\ncenter = [3.0, 0.5, 0.5]\nradius = 0.2\n",
        "initial.sphere.center",
        2,
    );
    assert!(e.to_string().contains("outside the domain"), "{e}");
    at(
        "[initial]\nkind = \"riemann\"\n[initial.riemann]\naxis = \"y\"\nx0 = 1.5\n",
        "initial.riemann.x0",
        5,
    );
    // Centre outside, ball partly inside: runs, with a warning.
    let d = Deck::parse("[initial.sphere]\ncenter = [1.1, 0.5, 0.5]\nradius = 0.2\n").unwrap();
    let w = d.warnings();
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].contains("initial.sphere.center"), "{w:?}");
    assert!(Deck::default().warnings().is_empty());
    let long = "n".repeat(201);
    at(&format!("[output]\nname = \"{long}\"\n"), "output.name", 2);
    Deck::parse(&format!("[output]\nname = \"{}\"\n", "n".repeat(200))).unwrap();
}
