//! The paper's default scheme (section 4.1): a fixed number of patches per batch.
//!
//! The baseline the adaptive scheme is measured against: batches of
//! `n_fixed` patches (streams × multiprocessors in the paper: 120 on Tesla,
//! 56 on Fermi), taken in order, regardless of their solve or prepare times.
//! With unpacked patches ([`crate::BinWork::single`]) every bin is one patch,
//! so a batch is exactly `n_fixed` patches; with packed bins whole bins are
//! taken while the patch count stays within `n_fixed`.

use crate::error::{BatchError, Result};
use crate::model::CostModel;
use crate::select::adaptive::check_common;
use crate::select::queues::Selector;
use crate::select::selection::Selection;
use crate::work::BinWork;

impl Selector {
    /// Static selection into `out`; see [`select_static`].
    ///
    /// # Errors
    /// As [`select_static`].
    pub fn fixed(
        &mut self,
        bins: &[BinWork],
        n_fixed: usize,
        queues: usize,
        model: &CostModel,
        out: &mut Selection,
    ) -> Result<()> {
        check_common(bins, queues)?;
        if n_fixed == 0 {
            return Err(BatchError::InvalidOption {
                name: "n_fixed",
                value: "0".into(),
                reason: "a batch needs at least one patch",
            });
        }
        self.prepare_costs(bins, model);
        out.reset(queues, f64::INFINITY);
        let mut patches = 0usize;
        for (b, bin) in bins.iter().enumerate() {
            let n = bin.patches().len();
            if b > 0 && patches + n > n_fixed {
                break;
            }
            patches += n;
            self.try_place(bins, b, f64::INFINITY, true, out);
        }
        Ok(())
    }
}

/// The default scheme: the leading bins of `bins`, in index order, while their
/// patches number at most `n_fixed` (always at least the first bin), spread
/// over `queues` CPU queues by the same least-loaded rule as the adaptive
/// selector, so the two schemes differ only in which bins form a batch.
///
/// # Errors
/// [`BatchError::NoBins`], [`BatchError::NoQueues`], and
/// [`BatchError::InvalidOption`] for `n_fixed == 0`.
pub fn select_static(
    bins: &[BinWork],
    n_fixed: usize,
    queues: usize,
    model: &CostModel,
) -> Result<Selection> {
    let mut out = Selection::new();
    Selector::new().fixed(bins, n_fixed, queues, model, &mut out)?;
    Ok(out)
}
