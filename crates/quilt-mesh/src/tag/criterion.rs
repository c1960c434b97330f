//! The tagging criterion trait and its input.
//!
//! A criterion looks at one field component of one patch, stored as a plain
//! slice over a data box (`x` fastest, the patch interior grown by its ghost
//! cells), and tags cells of the interior. Working on slices keeps criteria
//! independent of how patch data is stored; [`TagInput::new`] checks that the
//! slice, boxes and cell sizes agree once, so criteria can index freely.

use num_traits::Float;

use super::error::TagError;
use super::tag_box::TagBox;
use crate::index::{IndexBox, IntVect};

/// One field component of one patch, ready for a [`TagCriterion`].
#[derive(Debug, Clone, Copy)]
pub struct TagInput<'a, T> {
    values: &'a [T],
    data_box: IndexBox,
    interior: IndexBox,
    dx: [f64; 3],
    previous: Option<&'a TagBox>,
}

impl<'a, T: Copy> TagInput<'a, T> {
    /// `values` holds one value per cell of `data_box`, `x` fastest; the
    /// cells of `interior` (inside `data_box`) are the ones to tag; `dx` is
    /// the physical cell size along each axis.
    pub fn new(
        values: &'a [T],
        data_box: IndexBox,
        interior: IndexBox,
        dx: [f64; 3],
    ) -> Result<Self, TagError> {
        let cells = data_box.num_cells();
        if values.len() as i64 != cells {
            return Err(TagError::DataLength {
                len: values.len(),
                data_box,
                cells,
            });
        }
        if !data_box.contains_box(&interior) {
            return Err(TagError::InteriorOutsideData { interior, data_box });
        }
        for (axis, &value) in dx.iter().enumerate() {
            if !(value.is_finite() && value > 0.0) {
                return Err(TagError::BadCellSize { axis, value });
            }
        }
        Ok(Self {
            values,
            data_box,
            interior,
            dx,
            previous: None,
        })
    }

    /// Gives the criteria the tags of the previous regrid: cells tagged
    /// there are tested against relaxed thresholds (hysteresis, so that
    /// refined regions do not flicker between regrids). `previous` must
    /// cover the interior.
    pub fn with_previous(mut self, previous: &'a TagBox) -> Result<Self, TagError> {
        if !previous.region().contains_box(&self.interior) {
            return Err(TagError::PreviousTagsOutside {
                interior: self.interior,
                region: previous.region(),
            });
        }
        self.previous = Some(previous);
        Ok(self)
    }

    /// The field values over [`TagInput::data_box`], `x` fastest.
    #[inline]
    pub fn values(&self) -> &'a [T] {
        self.values
    }

    /// The box the values cover.
    #[inline]
    pub fn data_box(&self) -> IndexBox {
        self.data_box
    }

    /// The cells to tag.
    #[inline]
    pub fn interior(&self) -> IndexBox {
        self.interior
    }

    /// Physical cell size along each axis.
    #[inline]
    pub fn dx(&self) -> [f64; 3] {
        self.dx
    }

    /// The previous tags, if given.
    #[inline]
    pub fn previous(&self) -> Option<&'a TagBox> {
        self.previous
    }

    /// Whether cell `p` was tagged at the previous regrid.
    #[inline]
    pub fn was_tagged(&self, p: &IntVect) -> bool {
        self.previous.is_some_and(|t| t.get(p))
    }

    /// The value at cell `p`, `None` outside the data box.
    #[inline]
    pub fn value(&self, p: &IntVect) -> Option<T> {
        self.data_box
            .contains(p)
            .then(|| self.values[self.data_box.offset(p)])
    }

    /// Checks that a stencil reaching `width` cells from every interior cell
    /// stays in the data, and that `tags` can receive the interior.
    pub fn check(
        &self,
        criterion: &'static str,
        width: i32,
        tags: &TagBox,
    ) -> Result<(), TagError> {
        if !self.data_box.contains_box(&self.interior.grow(width)) {
            return Err(TagError::StencilOutsideData {
                criterion,
                width,
                interior: self.interior,
                data_box: self.data_box,
            });
        }
        if !tags.region().contains_box(&self.interior) {
            return Err(TagError::InteriorOutsideTags {
                interior: self.interior,
                region: tags.region(),
            });
        }
        Ok(())
    }
}

/// A refinement criterion: tags cells of one patch from one field component.
///
/// Implementations only ever *add* tags to `tags` (several criteria are run
/// one after another into the same field) and only inside
/// [`TagInput::interior`]. They must fail, not panic, when their stencil does
/// not fit in the data (see [`TagInput::check`]).
pub trait TagCriterion<T> {
    /// Tags the cells of `input.interior()` that need refinement.
    fn tag(&self, input: &TagInput<'_, T>, tags: &mut TagBox) -> Result<(), TagError>;
}

impl<T, C: TagCriterion<T> + ?Sized> TagCriterion<T> for &C {
    fn tag(&self, input: &TagInput<'_, T>, tags: &mut TagBox) -> Result<(), TagError> {
        (**self).tag(input, tags)
    }
}

impl<T, C: TagCriterion<T> + ?Sized> TagCriterion<T> for Box<C> {
    fn tag(&self, input: &TagInput<'_, T>, tags: &mut TagBox) -> Result<(), TagError> {
        (**self).tag(input, tags)
    }
}

/// A user criterion from a per-cell closure: `f(input, cell)` returns whether
/// the interior cell `cell` needs refinement. The closure may read any cell
/// of the data box through [`TagInput::value`].
///
/// # Example
/// ```
/// use quilt_mesh::tag::{FnCriterion, TagBox, TagCriterion, TagInput};
/// use quilt_mesh::{IndexBox, iv};
///
/// let data_box = IndexBox::new(iv(0, 0, 0), iv(3, 3, 3));
/// let values: Vec<f64> = data_box.iter().map(|p| p.x as f64).collect();
/// let input = TagInput::new(&values, data_box, data_box, [1.0; 3]).unwrap();
/// let hot = FnCriterion(|inp: &TagInput<'_, f64>, p| inp.value(&p).unwrap() > 2.5);
/// let mut tags = TagBox::new(data_box).unwrap();
/// hot.tag(&input, &mut tags).unwrap();
/// assert_eq!(tags.count(), 16);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct FnCriterion<F>(pub F);

impl<T, F> TagCriterion<T> for FnCriterion<F>
where
    T: Copy,
    F: Fn(&TagInput<'_, T>, IntVect) -> bool,
{
    fn tag(&self, input: &TagInput<'_, T>, tags: &mut TagBox) -> Result<(), TagError> {
        input.check("closure criterion", 0, tags)?;
        for p in input.interior().iter() {
            if (self.0)(input, p) {
                tags.set_unchecked(&p);
            }
        }
        Ok(())
    }
}

/// Converts an `f64` threshold to the field type (thresholds are stored in
/// `f64` so one detector works for `f32` and `f64` data).
#[inline]
pub(crate) fn to_field<T: Float>(x: f64) -> T {
    T::from(x).unwrap_or_else(T::infinity)
}
