//! The adapter from [`PatchData`] to [`TagInput`].

use super::criterion::TagInput;
use super::error::TagError;
use super::tag_box::TagBox;
use crate::patch_data::PatchData;
use crate::real::Real;

impl<'a, T: Real> TagInput<'a, T> {
    /// Component `comp` of a patch: its data box (interior and ghost
    /// cells), its interior as the cells to tag, and the cell size `dx`.
    /// Fails if the component does not exist.
    pub fn from_patch(data: &'a PatchData<T>, comp: usize, dx: [f64; 3]) -> Result<Self, TagError> {
        if comp >= data.ncomp() {
            return Err(TagError::NoComponent {
                comp,
                ncomp: data.ncomp(),
            });
        }
        TagInput::new(data.comp(comp), data.data_box(), data.interior(), dx)
    }
}

impl TagBox {
    /// An untagged field over a patch's interior.
    pub fn for_patch<T: Real>(data: &PatchData<T>) -> Result<TagBox, TagError> {
        TagBox::new(data.interior())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::{IndexBox, iv};
    use crate::tag::{ShockDetector, TagCriterion};

    #[test]
    fn detectors_run_on_patch_data() {
        let interior = IndexBox::new(iv(0, 0, 0), iv(15, 15, 15));
        let mut d = PatchData::<f32>::new(interior, 2, 5).unwrap();
        d.fill_with(4, |p| if p.y >= 8 { 2.5 } else { 1.0 });
        let input = TagInput::from_patch(&d, 4, [0.1; 3]).unwrap();
        let mut tags = TagBox::for_patch(&d).unwrap();
        ShockDetector::new(1.0, 0.85)
            .unwrap()
            .tag(&input, &mut tags)
            .unwrap();
        assert_eq!(tags.count(), 2 * 16 * 16);
        assert!(tags.iter().all(|p| p.y == 7 || p.y == 8));
        assert!(matches!(
            TagInput::from_patch(&d, 5, [0.1; 3]),
            Err(TagError::NoComponent { comp: 5, ncomp: 5 })
        ));
    }
}
