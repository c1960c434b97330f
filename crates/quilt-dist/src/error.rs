//! Errors of ranks, transports and distributions.

use std::time::Duration;

use quilt_mesh::MeshError;

/// What went wrong across ranks; every message names the ranks involved.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// A rank waited longer than the transport's bound for a message.
    #[error("rank {rank} waited {waited:?} for a message from rank {from} (tag {tag}) and gave up")]
    Timeout {
        /// The waiting rank.
        rank: usize,
        /// The rank it waited for.
        from: usize,
        /// The message's tag.
        tag: u32,
        /// How long it waited.
        waited: Duration,
    },
    /// The peer rank stopped (its thread or process ended) before the
    /// message arrived, or cannot take messages any more.
    #[error("rank {rank}: rank {peer} has stopped ({why})")]
    PeerStopped {
        /// The rank that noticed.
        rank: usize,
        /// The rank that stopped.
        peer: usize,
        /// What was being done.
        why: String,
    },
    /// A rank number outside `0..size`.
    #[error("rank {rank}: no rank {peer} among {size} ranks")]
    NoSuchRank {
        /// The calling rank.
        rank: usize,
        /// The rank asked for.
        peer: usize,
        /// The number of ranks.
        size: usize,
    },
    /// A message that does not have the length or content its plan says.
    #[error("rank {rank}: message from rank {from} (tag {tag}) is malformed: {why}")]
    Malformed {
        /// The receiving rank.
        rank: usize,
        /// The sender.
        from: usize,
        /// The message's tag.
        tag: u32,
        /// What is wrong.
        why: String,
    },
    /// A distribution that does not fit the hierarchy or the ranks.
    #[error("distribution: {0}")]
    Distribution(String),
    /// An error of the mesh layer (a patch data access, a plan).
    #[error(transparent)]
    Mesh(#[from] MeshError),
    /// An error reported by MPI.
    #[error("MPI: {0}")]
    Mpi(String),
}
