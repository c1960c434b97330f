//! A ghost fill spread over in-process ranks is bitwise the serial fill.

#[path = "../examples/fill_check/check.rs"]
mod check;

use quilt_dist::{Distribution, HaloPlan, Shadows, Transport, run_ranks};
use quilt_mesh::{BoundaryConditions, GhostFill, Limiter};

fn all_ranks_match<T: quilt_mesh::Real>(ranks: usize) {
    let got = run_ranks(ranks, |mut t| check::fill_matches::<T>(&mut t, 5));
    let mut patches = 0;
    let mut bytes = 0;
    for r in got {
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        patches += r.patches;
        bytes += r.sent_bytes;
    }
    assert_eq!(patches, check::hierarchy().num_patches());
    assert_eq!(bytes > 0, ranks > 1, "{ranks} ranks sent {bytes} bytes");
}

#[test]
fn fill_over_one_to_four_ranks_is_the_serial_fill_f64() {
    assert!(
        check::hierarchy().num_levels() >= 3,
        "coarse-fine ghosts needed"
    );
    for ranks in 1..=4 {
        all_ranks_match::<f64>(ranks);
    }
}

#[test]
fn fill_over_three_ranks_is_the_serial_fill_f32() {
    all_ranks_match::<f32>(3);
}

#[test]
fn a_short_message_is_an_error_naming_the_ranks() {
    let h = check::hierarchy();
    let fill = GhostFill::<f64>::new(&h, BoundaryConditions::outflow(), Limiter::MinMod).unwrap();
    let costs = vec![1.0; h.num_patches()];
    let dist = Distribution::balanced(&h, &costs, 2).unwrap();
    let errors = run_ranks(2, |mut t| {
        let me = t.rank();
        let plan = HaloPlan::for_fill(fill.plan(), &dist, me);
        let mut shadows = Shadows::<f64>::for_plan(&h, &plan, check::NCOMP).unwrap();
        // Zeros of the right length, except that rank 1 sends a byte less.
        for (to, pieces) in plan.sends() {
            let n: usize = pieces
                .iter()
                .map(|p| p.region.num_cells() as usize * check::NCOMP * 8)
                .sum();
            t.send(*to, 9, vec![0; n - usize::from(me == 1)]).unwrap();
        }
        plan.receive(&mut t, 9, &mut shadows)
            .err()
            .map(|e| e.to_string())
    });
    let msg = errors[0].clone().expect("rank 0 must reject the message");
    assert!(
        msg.contains("rank 0") && msg.contains("from rank 1"),
        "{msg}"
    );
    assert!(errors[1].is_none(), "{:?}", errors[1]);
}
