//! The single-process transport: one rank, messages to itself only.

use std::collections::{HashMap, VecDeque};

use super::{Tag, Transport, check_peer};
use crate::error::DistError;

/// One rank alone: a run without MPI. Messages to itself are kept in
/// order (a halo plan of one rank has none, but a caller's generic code
/// may still post them).
#[derive(Debug, Default)]
pub struct Solo {
    queue: HashMap<Tag, VecDeque<Vec<u8>>>,
}

impl Solo {
    /// The one rank.
    pub fn new() -> Self {
        Self::default()
    }
}

impl Transport for Solo {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn send(&mut self, to: usize, tag: Tag, data: Vec<u8>) -> Result<(), DistError> {
        check_peer(0, 1, to)?;
        self.queue.entry(tag).or_default().push_back(data);
        Ok(())
    }

    fn try_recv(&mut self, from: usize, tag: Tag) -> Result<Option<Vec<u8>>, DistError> {
        check_peer(0, 1, from)?;
        Ok(self.queue.get_mut(&tag).and_then(VecDeque::pop_front))
    }

    fn recv(&mut self, from: usize, tag: Tag) -> Result<Vec<u8>, DistError> {
        // Nobody else can send: a missing message would never come.
        self.try_recv(from, tag)?.ok_or(DistError::Timeout {
            rank: 0,
            from,
            tag,
            waited: std::time::Duration::ZERO,
        })
    }

    fn flush(&mut self) -> Result<(), DistError> {
        Ok(())
    }
}
