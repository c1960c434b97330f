//! In-process ranks: one thread per rank, channels between them, so that
//! `cargo test` covers multi-rank logic without `mpirun`.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::time::{Duration, Instant};

use super::{Tag, Transport, check_peer, overdue};
use crate::error::DistError;

/// How long [`ThreadRank::recv`] waits by default.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(120);

/// How often a waiting rank looks whether its peer is still running.
const POLL: Duration = Duration::from_millis(20);

struct Envelope {
    from: usize,
    tag: Tag,
    data: Vec<u8>,
}

/// One in-process rank; made by [`thread_ranks`], moved into its thread.
/// Dropping it (the rank's thread ended, normally or by a panic) marks the
/// rank stopped, so that peers waiting for it fail at once.
pub struct ThreadRank {
    rank: usize,
    to: Vec<Sender<Envelope>>,
    inbox: Receiver<Envelope>,
    pending: HashMap<(usize, Tag), VecDeque<Vec<u8>>>,
    alive: Arc<Vec<AtomicBool>>,
    wait: Duration,
}

impl std::fmt::Debug for ThreadRank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ThreadRank")
            .field("rank", &self.rank)
            .field("size", &self.to.len())
            .finish()
    }
}

/// `n` connected ranks (at least one).
pub fn thread_ranks(n: usize) -> Vec<ThreadRank> {
    let n = n.max(1);
    let (senders, receivers): (Vec<_>, Vec<_>) = (0..n).map(|_| channel()).unzip();
    let alive = Arc::new((0..n).map(|_| AtomicBool::new(true)).collect::<Vec<_>>());
    receivers
        .into_iter()
        .enumerate()
        .map(|(rank, inbox)| ThreadRank {
            rank,
            to: senders.clone(),
            inbox,
            pending: HashMap::new(),
            alive: Arc::clone(&alive),
            wait: DEFAULT_WAIT,
        })
        .collect()
}

/// Runs `f` on `n` in-process ranks, one scoped thread each, and returns
/// the results by rank. A rank that panics is reported to its peers as
/// stopped and its panic is resumed here once every rank has returned.
pub fn run_ranks<R: Send>(n: usize, f: impl Fn(ThreadRank) -> R + Sync) -> Vec<R> {
    let ranks = thread_ranks(n);
    std::thread::scope(|s| {
        let handles: Vec<_> = ranks
            .into_iter()
            .map(|t| {
                let f = &f;
                s.spawn(move || f(t))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    })
}

impl ThreadRank {
    /// Sets how long a receive waits before [`DistError::Timeout`].
    pub fn set_wait(&mut self, wait: Duration) {
        self.wait = wait;
    }

    fn stopped(&self, peer: usize, why: &str) -> DistError {
        DistError::PeerStopped {
            rank: self.rank,
            peer,
            why: why.to_string(),
        }
    }
}

impl Drop for ThreadRank {
    fn drop(&mut self) {
        self.alive[self.rank].store(false, Ordering::Release);
    }
}

impl Transport for ThreadRank {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.to.len()
    }

    fn send(&mut self, to: usize, tag: Tag, data: Vec<u8>) -> Result<(), DistError> {
        check_peer(self.rank, self.size(), to)?;
        if !self.alive[to].load(Ordering::Acquire) {
            return Err(self.stopped(to, "sending to it"));
        }
        let env = Envelope {
            from: self.rank,
            tag,
            data,
        };
        self.to[to]
            .send(env)
            .map_err(|_| self.stopped(to, "sending to it"))
    }

    fn try_recv(&mut self, from: usize, tag: Tag) -> Result<Option<Vec<u8>>, DistError> {
        check_peer(self.rank, self.size(), from)?;
        while let Ok(env) = self.inbox.try_recv() {
            self.pending
                .entry((env.from, env.tag))
                .or_default()
                .push_back(env.data);
        }
        Ok(self
            .pending
            .get_mut(&(from, tag))
            .and_then(VecDeque::pop_front))
    }

    fn recv(&mut self, from: usize, tag: Tag) -> Result<Vec<u8>, DistError> {
        let start = Instant::now();
        loop {
            if let Some(d) = self.try_recv(from, tag)? {
                return Ok(d);
            }
            let waited = overdue(self.rank, from, tag, start, self.wait)?;
            // A message posted before the peer stopped still counts, so
            // the inbox is drained (above) before liveness is judged.
            let alive = self.alive[from].load(Ordering::Acquire);
            match self.inbox.recv_timeout(POLL.min(self.wait - waited)) {
                Ok(env) => self
                    .pending
                    .entry((env.from, env.tag))
                    .or_default()
                    .push_back(env.data),
                Err(RecvTimeoutError::Timeout) if !alive => {
                    return Err(self.stopped(from, "waiting for its message"));
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Err(self.stopped(from, "waiting for its message"));
                }
            }
        }
    }

    fn flush(&mut self) -> Result<(), DistError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_keep_their_order_per_tag() {
        let got = run_ranks(3, |mut t| {
            let me = t.rank() as u8;
            for to in 0..3 {
                for k in 0..4u8 {
                    t.send(to, u32::from(k % 2), vec![me, k]).unwrap();
                }
            }
            let mut seen = Vec::new();
            for from in 0..3 {
                for tag in [1, 0] {
                    for _ in 0..2 {
                        seen.push(t.recv(from, tag).unwrap());
                    }
                }
            }
            seen
        });
        for seen in got {
            let want: Vec<Vec<u8>> = (0..3u8)
                .flat_map(|f| [1, 3, 0, 2].map(|k| vec![f, k]))
                .collect();
            assert_eq!(seen, want);
        }
    }

    #[test]
    fn collectives_agree_on_every_rank() {
        let got = run_ranks(4, |mut t| {
            let me = t.rank();
            let all = t.all_gather(vec![me as u8; me + 1]).unwrap();
            let m = t.all_min(10.0 - me as f64).unwrap();
            (all, m)
        });
        for (all, m) in got {
            assert_eq!(m, 7.0);
            for (r, d) in all.iter().enumerate() {
                assert_eq!(d, &vec![r as u8; r + 1]);
            }
        }
    }

    #[test]
    fn a_stopped_peer_is_an_error_not_a_hang() {
        let got = run_ranks(2, |mut t| {
            if t.rank() == 1 {
                return None;
            }
            t.set_wait(Duration::from_secs(30));
            let start = Instant::now();
            let e = t.recv(1, 7).unwrap_err();
            Some((e.to_string(), start.elapsed()))
        });
        let (msg, took) = got[0].clone().unwrap();
        assert!(msg.contains("rank 1 has stopped"), "{msg}");
        assert!(took < Duration::from_secs(10), "{took:?}");
    }

    #[test]
    fn a_bounded_wait_times_out() {
        let mut r = thread_ranks(2);
        r[0].set_wait(Duration::from_millis(50));
        let e = r[0].recv(1, 3).unwrap_err();
        assert!(
            matches!(
                e,
                DistError::Timeout {
                    from: 1,
                    tag: 3,
                    ..
                }
            ),
            "{e}"
        );
        let e = r[0].send(5, 0, vec![]).unwrap_err();
        assert!(e.to_string().contains("no rank 5"), "{e}");
    }
}
