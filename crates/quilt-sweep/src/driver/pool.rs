//! Column scratch kept between the jobs of a sweep, and between passes,
//! batches and steps: rayon's `for_each_init` asks for a fresh state at
//! every job it splits off, so scratch made there would be allocated
//! thousands of times a step.

use std::any::Any;
use std::ops::{Deref, DerefMut};
use std::sync::Mutex;

/// What a scratch state was made for: the column capacity and the scalar
/// column capacity.
type Key = (usize, usize);

/// Scratch states of any type, each with the [`Key`] it was made for.
#[derive(Default)]
pub(crate) struct ScratchPool {
    free: Mutex<Vec<(Key, Box<dyn Any + Send>)>>,
}

impl Clone for ScratchPool {
    /// An empty pool: scratch holds nothing a sweep reads before writing.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl std::fmt::Debug for ScratchPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.free.lock().map_or(0, |v| v.len());
        f.debug_struct("ScratchPool").field("free", &n).finish()
    }
}

impl ScratchPool {
    /// A state of type `S` made for `key`: one given back earlier, else
    /// `make()`'s.
    pub(crate) fn take<S: Any + Send>(&self, key: Key, make: impl FnOnce() -> S) -> Lease<'_, S> {
        let found = {
            let mut free = self.free.lock().unwrap_or_else(|p| p.into_inner());
            free.iter()
                .rposition(|(k, s)| *k == key && s.is::<S>())
                .map(|i| free.swap_remove(i).1)
        };
        let state = found
            .and_then(|s| s.downcast::<S>().ok())
            .unwrap_or_else(|| Box::new(make()));
        Lease {
            pool: self,
            key,
            state: Some(state),
        }
    }
}

/// A state taken from a [`ScratchPool`], given back when dropped.
pub(crate) struct Lease<'p, S: Any + Send> {
    pool: &'p ScratchPool,
    key: Key,
    state: Option<Box<S>>,
}

impl<S: Any + Send> Deref for Lease<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.state.as_deref().expect("held until dropped")
    }
}

impl<S: Any + Send> DerefMut for Lease<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        self.state.as_deref_mut().expect("held until dropped")
    }
}

impl<S: Any + Send> Drop for Lease<'_, S> {
    fn drop(&mut self) {
        if let Some(state) = self.state.take() {
            let mut free = self.pool.free.lock().unwrap_or_else(|p| p.into_inner());
            free.push((self.key, state));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states_come_back_by_type_and_key() {
        let pool = ScratchPool::default();
        let a = pool.take((4, 0), || vec![1u8; 4]);
        let p = a.as_ptr();
        drop(a);
        // The same type and key: the same state.
        assert_eq!(pool.take((4, 0), || vec![2u8; 4]).as_ptr(), p);
        // Another key or type: a new one.
        assert_eq!(pool.take((8, 0), || vec![3u8; 8])[0], 3);
        assert_eq!(pool.take((4, 0), || vec![4u16; 4])[0], 4);
        // Two held at once are two states: the kept one and a new one.
        let x = pool.take((4, 0), || vec![5u8; 4]);
        let y = pool.take((4, 0), || vec![6u8; 4]);
        assert_eq!((x.as_ptr(), x[0], y[0]), (p, 1, 6));
    }
}
