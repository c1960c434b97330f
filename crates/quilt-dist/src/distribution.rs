//! Which rank owns which patch: a Morton curve over patch positions cut
//! into equal-cost pieces, refined by a knapsack on per-patch cost, and the
//! rule that keeps an existing distribution unless a new one is clearly
//! better.
//!
//! Every rank holds the whole hierarchy (boxes, not data) and the same
//! costs, and computes the same distribution: nothing is negotiated.

use quilt_mesh::{Hierarchy, IndexBox};

use crate::error::DistError;
use crate::morton::patch_keys;

/// The owner rank of every patch of a hierarchy, by patch index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    owners: Vec<u32>,
    ranks: usize,
}

impl Distribution {
    /// From explicit owners; errors if an owner is not below `ranks`.
    pub fn new(owners: Vec<usize>, ranks: usize) -> Result<Self, DistError> {
        if ranks == 0 || ranks > u32::MAX as usize {
            return Err(DistError::Distribution(format!(
                "{ranks} ranks (at least one, at most {})",
                u32::MAX
            )));
        }
        if let Some((i, r)) = owners.iter().enumerate().find(|(_, r)| **r >= ranks) {
            return Err(DistError::Distribution(format!(
                "patch index {i} is given to rank {r}, but there are {ranks} ranks"
            )));
        }
        Ok(Self {
            owners: owners.into_iter().map(|r| r as u32).collect(),
            ranks,
        })
    }

    /// Every one of `patches` patches on rank 0 of `ranks`.
    pub fn single(patches: usize, ranks: usize) -> Self {
        Self {
            owners: vec![0; patches],
            ranks: ranks.max(1),
        }
    }

    /// The number of ranks.
    pub fn ranks(&self) -> usize {
        self.ranks
    }

    /// The number of patches.
    pub fn len(&self) -> usize {
        self.owners.len()
    }

    /// Whether there is no patch.
    pub fn is_empty(&self) -> bool {
        self.owners.is_empty()
    }

    /// The owner of patch index `patch` (rank 0 past the end).
    pub fn owner(&self, patch: usize) -> usize {
        self.owners.get(patch).map_or(0, |&r| r as usize)
    }

    /// The patch indices of `rank`, ascending.
    pub fn owned(&self, rank: usize) -> Vec<usize> {
        (0..self.owners.len())
            .filter(|&i| self.owners[i] as usize == rank)
            .collect()
    }

    /// Whether `rank` owns each patch, by patch index.
    pub fn mask(&self, rank: usize) -> Vec<bool> {
        self.owners.iter().map(|&r| r as usize == rank).collect()
    }

    /// The summed cost of each rank's patches (`costs` by patch index).
    pub fn loads(&self, costs: &[f64]) -> Vec<f64> {
        let mut loads = vec![0.0; self.ranks];
        for (i, &r) in self.owners.iter().enumerate() {
            loads[r as usize] += costs.get(i).copied().unwrap_or(0.0);
        }
        loads
    }

    /// Load-balance efficiency: mean over max rank load (1 when balanced
    /// or empty).
    pub fn efficiency(&self, costs: &[f64]) -> f64 {
        efficiency(&self.loads(costs))
    }

    /// Cells of `h` whose owner differs between `self` and `other` (both
    /// distributions of `h`): the data a switch would move.
    pub fn cells_moved(&self, other: &Self, h: &Hierarchy) -> i64 {
        h.patches()
            .iter()
            .enumerate()
            .filter(|(i, _)| self.owner(*i) != other.owner(*i))
            .map(|(_, p)| p.interior().num_cells())
            .sum()
    }

    /// A fresh distribution of `h` over `ranks`: the patches in Morton
    /// order of their centres (all levels on one curve, so that a fine
    /// patch tends to share the rank of the coarse cells under it), cut
    /// where the running cost crosses multiples of the mean load, then
    /// refined by [`refine_knapsack`].
    pub fn balanced(h: &Hierarchy, costs: &[f64], ranks: usize) -> Result<Self, DistError> {
        check_costs(h, costs)?;
        let ranks = ranks.max(1);
        let keys = patch_keys(h);
        let mut order: Vec<usize> = (0..h.num_patches()).collect();
        order.sort_by_key(|&i| (keys[i], h.patches()[i].level(), i));
        let total: f64 = order.iter().map(|&i| costs[i]).sum();
        let mut owners = vec![0usize; h.num_patches()];
        let mut run = 0.0;
        for &i in &order {
            // The piece is chosen by the patch's midpoint on the curve, so
            // a patch straddling a cut goes to the side holding most of it.
            let mid = run + 0.5 * costs[i];
            run += costs[i];
            owners[i] = if total > 0.0 {
                ((mid / total * ranks as f64) as usize).min(ranks - 1)
            } else {
                0
            };
        }
        let mut d = Self::new(owners, ranks)?;
        refine_knapsack(&mut d, costs);
        Ok(d)
    }

    /// The distribution of `new` that moves the least data from `old`
    /// (a distribution of `old_h`): each new patch goes to the owner of the
    /// old patch of its level that shares most cells with it, else (a patch
    /// over new ground) to the owner of the deepest coarser old patch under
    /// its centre's neighbourhood with most cells in common.
    pub fn inherited(old_h: &Hierarchy, old: &Self, new: &Hierarchy) -> Result<Self, DistError> {
        if old.len() != old_h.num_patches() {
            return Err(DistError::Distribution(format!(
                "the old distribution has {} patches, the old hierarchy {}",
                old.len(),
                old_h.num_patches()
            )));
        }
        let owners = new
            .patches()
            .iter()
            .map(|p| {
                let fine = p.level();
                let ratio_at = |l: usize| new.level_geometry(l).map_or(1, |g| g.cumulative_ratio);
                for l in (0..=fine.min(old_h.num_levels().saturating_sub(1))).rev() {
                    let r = (ratio_at(fine) / ratio_at(l).max(1)).max(1);
                    let b = p.interior().coarsen(r);
                    if let Some(i) = best_overlap(old_h, l, &b) {
                        return old.owner(i);
                    }
                }
                0
            })
            .collect();
        Self::new(owners, old.ranks)
    }
}

/// Costs of `new`'s patches from the measured costs of `old_h`'s
/// (`old_costs`, by patch index; NaN or a non-positive value where a patch
/// was never measured): each new patch costs the cost per cell of the old
/// patches of its level it overlaps, cell by cell, and its cells over new
/// ground the mean cost per cell of that level (of all measured patches
/// for a new level). Cells alone when nothing was measured. Every rank
/// that holds the same costs computes the same result.
pub fn inherited_costs(old_h: &Hierarchy, old_costs: &[f64], new: &Hierarchy) -> Vec<f64> {
    let measured = |i: usize| {
        old_costs
            .get(i)
            .copied()
            .filter(|c| c.is_finite() && *c > 0.0)
    };
    let cells = |i: usize| old_h.patches()[i].interior().num_cells() as f64;
    // Mean cost per cell of each old level, then of all of them.
    let mut sums = vec![(0.0f64, 0.0f64); old_h.num_levels()];
    for (i, p) in old_h.patches().iter().enumerate() {
        if let Some(c) = measured(i) {
            sums[p.level()].0 += c;
            sums[p.level()].1 += cells(i);
        }
    }
    let (all_cost, all_cells) = sums
        .iter()
        .fold((0.0, 0.0), |(a, b), &(c, n)| (a + c, b + n));
    if all_cells <= 0.0 {
        return new
            .patches()
            .iter()
            .map(|p| p.interior().num_cells() as f64)
            .collect();
    }
    let global = all_cost / all_cells;
    let level_mean = |l: usize| match sums.get(l) {
        Some(&(c, n)) if n > 0.0 => c / n,
        _ => global,
    };
    new.patches()
        .iter()
        .map(|p| {
            let (l, b) = (p.level(), p.interior());
            let mut cost = 0.0;
            let mut covered = 0.0;
            if l < old_h.num_levels() {
                for o in old_h.patches_intersecting(l, &b) {
                    let n = old_h.patches()[o].interior().intersect(&b).num_cells() as f64;
                    let per_cell = measured(o).map_or(level_mean(l), |c| c / cells(o));
                    cost += per_cell * n;
                    covered += n;
                }
            }
            cost + (b.num_cells() as f64 - covered).max(0.0) * level_mean(l)
        })
        .collect()
}

/// The old patch of `level` sharing most cells with `b` (lowest index on
/// a tie).
fn best_overlap(h: &Hierarchy, level: usize, b: &IndexBox) -> Option<usize> {
    let mut best: Option<(i64, usize)> = None;
    for i in h.patches_intersecting(level, b) {
        let n = h.patches()[i].interior().intersect(b).num_cells();
        if best.is_none_or(|(m, j)| n > m || (n == m && i < j)) {
            best = Some((n, i));
        }
    }
    best.map(|(_, i)| i)
}

/// Mean over max of `loads` (1 when all are zero).
pub fn efficiency(loads: &[f64]) -> f64 {
    let max = loads.iter().copied().fold(0.0, f64::max);
    if max <= 0.0 {
        return 1.0;
    }
    loads.iter().sum::<f64>() / loads.len() as f64 / max
}

fn check_costs(h: &Hierarchy, costs: &[f64]) -> Result<(), DistError> {
    if costs.len() != h.num_patches() {
        return Err(DistError::Distribution(format!(
            "{} costs for {} patches",
            costs.len(),
            h.num_patches()
        )));
    }
    if let Some((i, c)) = costs
        .iter()
        .enumerate()
        .find(|(_, c)| !c.is_finite() || **c < 0.0)
    {
        return Err(DistError::Distribution(format!(
            "patch index {i} has cost {c} (finite and not negative expected)"
        )));
    }
    Ok(())
}

/// Lowers the heaviest rank's load by moving one patch to a lighter rank,
/// or swapping one patch with it, as long as that helps (the improvement
/// step of AMReX's knapsack distribution): the move or swap that brings the
/// pair's loads closest to equal is taken, ties by the lowest patch index.
/// Each accepted step lowers the heaviest load, so the loop ends; it is
/// also bounded by [`MAX_STEPS_PER_RANK`] steps per rank.
pub fn refine_knapsack(d: &mut Distribution, costs: &[f64]) {
    let ranks = d.ranks;
    if ranks < 2 {
        return;
    }
    let mut loads = d.loads(costs);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); ranks];
    for (i, &r) in d.owners.iter().enumerate() {
        members[r as usize].push(i);
    }
    for _ in 0..MAX_STEPS_PER_RANK * ranks {
        let heavy = argmax(&loads);
        let mut lighter: Vec<usize> = (0..ranks).filter(|&r| r != heavy).collect();
        lighter.sort_by(|&a, &b| loads[a].total_cmp(&loads[b]).then(a.cmp(&b)));
        let mut done = false;
        for &light in &lighter {
            let gap = loads[heavy] - loads[light];
            if gap <= 0.0 {
                break;
            }
            // Best single move: the moved cost closest to gap / 2, below gap.
            let mut best: Option<(f64, usize, Option<usize>)> = None;
            for &a in &members[heavy] {
                let c = costs[a];
                if c > 0.0 && c < gap {
                    let score = (gap / 2.0 - c).abs();
                    if best.is_none_or(|(s, _, _)| score < s) {
                        best = Some((score, a, None));
                    }
                }
            }
            // Best swap: the cost difference closest to gap / 2, found by
            // bisecting the lighter rank's patches sorted by cost.
            let mut light_costs: Vec<(f64, usize)> =
                members[light].iter().map(|&b| (costs[b], b)).collect();
            light_costs.sort_by(|x, y| x.0.total_cmp(&y.0).then(x.1.cmp(&y.1)));
            for &a in &members[heavy] {
                let want = costs[a] - gap / 2.0;
                let k = light_costs.partition_point(|(c, _)| *c < want);
                for &(cb, b) in
                    light_costs[k.saturating_sub(1)..(k + 1).min(light_costs.len())].iter()
                {
                    let diff = costs[a] - cb;
                    if diff > 0.0 && diff < gap {
                        let score = (gap / 2.0 - diff).abs();
                        if best.is_none_or(|(s, _, _)| score < s) {
                            best = Some((score, a, Some(b)));
                        }
                    }
                }
            }
            let Some((_, a, b)) = best else { continue };
            let moved = costs[a] - b.map_or(0.0, |b| costs[b]);
            // Only a strict lowering of the pair's maximum counts.
            if loads[light] + moved >= loads[heavy] {
                continue;
            }
            members[heavy].retain(|&x| x != a);
            members[light].push(a);
            d.owners[a] = light as u32;
            if let Some(b) = b {
                members[light].retain(|&x| x != b);
                members[heavy].push(b);
                d.owners[b] = heavy as u32;
            }
            loads[heavy] -= moved;
            loads[light] += moved;
            done = true;
            break;
        }
        if !done {
            break;
        }
    }
}

/// Bound on the improvement steps of [`refine_knapsack`], per rank.
pub const MAX_STEPS_PER_RANK: usize = 64;

fn argmax(v: &[f64]) -> usize {
    let mut k = 0;
    for (i, x) in v.iter().enumerate() {
        if *x > v[k] {
            k = i;
        }
    }
    k
}

/// The outcome of [`Balancer::rebalance`].
#[derive(Debug, Clone)]
pub struct Rebalance {
    /// The distribution to use.
    pub distribution: Distribution,
    /// Efficiency of the distribution that would be kept (inherited).
    pub kept: f64,
    /// Efficiency of the fresh one.
    pub fresh: f64,
    /// Whether the fresh one was adopted.
    pub adopted: bool,
    /// Cells that change owner with respect to the kept distribution.
    pub cells_moved: i64,
}

/// When to replace a distribution with a fresh one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Balancer {
    /// A fresh distribution is adopted only when its efficiency is more
    /// than this factor above the kept one's (AMReX uses 1.1).
    pub threshold: f64,
}

impl Default for Balancer {
    fn default() -> Self {
        Self { threshold: 1.1 }
    }
}

impl Balancer {
    /// Chooses between `kept` (a distribution of `h`, e.g. inherited from
    /// before a regrid) and a fresh balanced one, by `costs` of `h`'s
    /// patches.
    pub fn rebalance(
        &self,
        h: &Hierarchy,
        kept: Distribution,
        costs: &[f64],
    ) -> Result<Rebalance, DistError> {
        if kept.len() != h.num_patches() {
            return Err(DistError::Distribution(format!(
                "the kept distribution has {} patches, the hierarchy {}",
                kept.len(),
                h.num_patches()
            )));
        }
        let fresh = Distribution::balanced(h, costs, kept.ranks)?;
        let (e_kept, e_fresh) = (kept.efficiency(costs), fresh.efficiency(costs));
        let adopted = e_fresh > e_kept * self.threshold;
        let cells_moved = if adopted {
            kept.cells_moved(&fresh, h)
        } else {
            0
        };
        Ok(Rebalance {
            distribution: if adopted { fresh } else { kept },
            kept: e_kept,
            fresh: e_fresh,
            adopted,
            cells_moved,
        })
    }
}
