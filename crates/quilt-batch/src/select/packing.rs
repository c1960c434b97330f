//! Distributing a small set of patches over `P` queues of fixed capacity.
//!
//! The least-loaded rule places patches one bin at a time, in the order the
//! bins are taken; when every patch is a sizeable share of a queue's
//! capacity this can reject a set of bins that does fit (5, 5, 4, 3, 3 into
//! two queues of 10). For small sets the search therefore asks this module
//! whether *any* distribution exists: longest-processing-time first (Graham
//! 1969) over the whole set, then an exact depth-first search in best-fit
//! decreasing order (the tightest queue that still fits first, skipping
//! queues of equal load, which are interchangeable), pruned when the
//! patches left exceed the room left (Martello & Toth 1990, ch. 8).

/// One patch to place: its cost and its position in the caller's sequence
/// (ties in cost are broken by that position, so results are deterministic).
pub(crate) type Item = (f64, usize);

/// Sorts items by non-increasing cost, ties by sequence position.
pub(crate) fn sort_items(items: &mut [Item]) {
    items.sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
}

/// Finds a distribution of sorted `items` over `loads.len()` empty queues with
/// every queue ≤ `cap`. On success fills `loads` and `assign` (queue of each
/// item, in `items` order) and returns true. Each search node costs one unit
/// of `budget`; when it runs out the answer is false (not proven impossible).
pub(crate) fn pack(
    items: &[Item],
    cap: f64,
    budget: &mut usize,
    loads: &mut [f64],
    assign: &mut Vec<usize>,
    suffix: &mut Vec<f64>,
) -> bool {
    assign.clear();
    assign.resize(items.len(), 0);
    // LPT over the whole set first: one pass, usually enough.
    loads.fill(0.0);
    let mut ok = true;
    for (i, &(c, _)) in items.iter().enumerate() {
        let q = least_loaded(loads);
        if loads[q] + c > cap {
            ok = false;
            break;
        }
        loads[q] += c;
        assign[i] = q;
    }
    if ok {
        return true;
    }
    suffix.clear();
    suffix.resize(items.len() + 1, 0.0);
    for k in (0..items.len()).rev() {
        suffix[k] = suffix[k + 1] + items[k].0;
    }
    loads.fill(0.0);
    dfs(0, items, suffix, cap, budget, loads, assign)
}

fn least_loaded(loads: &[f64]) -> usize {
    let mut best = 0;
    for (i, &l) in loads.iter().enumerate().skip(1) {
        if l < loads[best] {
            best = i;
        }
    }
    best
}

fn dfs(
    k: usize,
    items: &[Item],
    suffix: &[f64],
    cap: f64,
    budget: &mut usize,
    loads: &mut [f64],
    assign: &mut [usize],
) -> bool {
    if k == items.len() {
        return true;
    }
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    // Room smaller than the smallest item left is wasted (items are sorted,
    // so that is the last one): a cheap strengthening of the volume bound.
    let smallest = items[items.len() - 1].0;
    let free: f64 = loads
        .iter()
        .map(|&l| cap - l)
        .filter(|&r| r >= smallest)
        .sum();
    if suffix[k] > free * (1.0 + 1e-12) {
        return false;
    }
    let c = items[k].0;
    // Candidate queues by non-increasing load (best fit), one per distinct load.
    let mut below = f64::INFINITY;
    loop {
        let mut pick = None;
        for (q, &l) in loads.iter().enumerate() {
            if l < below && l + c <= cap && pick.is_none_or(|p: usize| l > loads[p]) {
                pick = Some(q);
            }
        }
        let Some(q) = pick else {
            return false;
        };
        let old = loads[q];
        below = old;
        loads[q] = old + c;
        assign[k] = q;
        if dfs(k + 1, items, suffix, cap, budget, loads, assign) {
            return true;
        }
        loads[q] = old;
        if *budget == 0 {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(costs: &[f64], p: usize, cap: f64) -> Option<Vec<f64>> {
        let mut items: Vec<Item> = costs.iter().copied().zip(0..).collect();
        sort_items(&mut items);
        let mut loads = vec![0.0; p];
        let (mut assign, mut suffix) = (Vec::new(), Vec::new());
        let mut budget = 1_000_000;
        pack(
            &items,
            cap,
            &mut budget,
            &mut loads,
            &mut assign,
            &mut suffix,
        )
        .then(|| {
            let mut check = vec![0.0; p];
            for (i, &q) in assign.iter().enumerate() {
                check[q] += items[i].0;
            }
            assert_eq!(check, loads);
            loads
        })
    }

    #[test]
    fn finds_the_packing_list_scheduling_misses() {
        // LPT: 5|5, 4 → 9|5, 3 → 9|8, 3 → no room; exact: {5,5} {4,3,3}.
        let loads = run(&[5.0, 5.0, 4.0, 3.0, 3.0], 2, 10.0).unwrap();
        assert!(loads.iter().all(|&l| l <= 10.0));
    }

    #[test]
    fn proves_infeasibility() {
        assert!(run(&[4.0, 4.0, 4.0], 2, 6.0).is_none());
        assert!(run(&[6.0, 6.0, 6.0, 6.0, 1.0], 4, 6.0).is_none());
        assert!(run(&[], 3, 1.0).is_some());
    }

    #[test]
    fn budget_exhaustion_answers_false() {
        // Feasible, but LPT misses it and the search needs one node per item.
        let mut items: Vec<Item> = [5.0, 5.0, 4.0, 3.0, 3.0].into_iter().zip(0..).collect();
        sort_items(&mut items);
        let mut loads = vec![0.0; 2];
        let (mut assign, mut suffix) = (Vec::new(), Vec::new());
        let mut budget = 2;
        assert!(!pack(
            &items,
            10.0,
            &mut budget,
            &mut loads,
            &mut assign,
            &mut suffix
        ));
        assert_eq!(budget, 0);
    }
}
