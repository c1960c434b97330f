//! A graceful stop on the signals that terminals and batch schedulers send.
//!
//! Ctrl-C sends SIGINT, a closed terminal SIGHUP, and schedulers (Slurm,
//! PBS, Kubernetes) SIGTERM some seconds before SIGKILL at a job's time
//! limit. All three take the same path: the handler only records the
//! signal, and the application's step loop, which polls
//! [`StopRequest::signal`] between steps, writes a checkpoint and exits
//! with [`StopSignal::exit_code`] (128 + the signal number, the shell's
//! convention: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP), so that
//! scripts can tell a stopped run from a finished one.
//!
//! A second signal while a stop is pending ends the process at once with
//! the same code: a user who presses Ctrl-C twice does not wait for the
//! step in flight.
//!
//! ```no_run
//! use quilt_integrator::stop::StopRequest;
//!
//! let stop = StopRequest::install().unwrap();
//! loop {
//!     // ... one step ...
//!     if let Some(sig) = stop.signal() {
//!         // ... checkpoint ...
//!         eprintln!("stopped by {}", sig.name());
//!         std::process::exit(sig.exit_code());
//!     }
//! }
//! ```

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// One of the signals that request a graceful stop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StopSignal(i32);

impl StopSignal {
    /// The signal number.
    pub fn number(self) -> i32 {
        self.0
    }

    /// `"SIGINT"`, `"SIGTERM"`, `"SIGHUP"` (or `"signal N"`).
    pub fn name(self) -> String {
        match self.0 {
            1 => "SIGHUP".into(),
            2 => "SIGINT".into(),
            15 => "SIGTERM".into(),
            n => format!("signal {n}"),
        }
    }

    /// The exit status of a process stopped by this signal: 128 + its
    /// number.
    pub fn exit_code(self) -> i32 {
        128 + self.0
    }
}

/// The signals [`StopRequest::install`] handles.
#[cfg(unix)]
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// A stop requested by a signal, polled by the step loop.
#[derive(Clone, Debug)]
pub struct StopRequest {
    /// The number of the first signal received, 0 while none was.
    received: Arc<AtomicUsize>,
}

impl StopRequest {
    /// Handles SIGINT, SIGTERM and SIGHUP from now on (replacing their
    /// default action, which kills the process with no checkpoint).
    pub fn install() -> std::io::Result<Self> {
        let received = Arc::new(AtomicUsize::new(0));
        #[cfg(unix)]
        for sig in STOP_SIGNALS {
            // The conditional exit is registered first so that it sees the
            // flag as it was before this signal: only a second signal exits.
            let pending = Arc::new(std::sync::atomic::AtomicBool::new(false));
            signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, pending.clone())?;
            signal_hook::flag::register(sig, pending)?;
            let first = received.clone();
            // SAFETY: the action only does an atomic compare-exchange, which
            // is async-signal-safe.
            unsafe {
                signal_hook::low_level::register(sig, move || {
                    let _ =
                        first.compare_exchange(0, sig as usize, Ordering::SeqCst, Ordering::SeqCst);
                })?;
            }
        }
        Ok(Self { received })
    }

    /// A request that no signal triggers (for runs that handle signals
    /// themselves); [`StopRequest::request`] still works.
    pub fn manual() -> Self {
        Self {
            received: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Requests a stop as if `signal` had been received (first request
    /// wins).
    pub fn request(&self, signal: i32) {
        let _ = self.received.compare_exchange(
            0,
            signal.max(1) as usize,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
    }

    /// The first stop signal received, if any.
    pub fn signal(&self) -> Option<StopSignal> {
        match self.received.load(Ordering::SeqCst) {
            0 => None,
            n => Some(StopSignal(n as i32)),
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn names_and_codes_follow_the_shell() {
        assert_eq!(StopSignal(2).exit_code(), 130);
        assert_eq!(StopSignal(15).exit_code(), 143);
        assert_eq!(StopSignal(1).name(), "SIGHUP");
        assert_eq!(StopSignal(15).name(), "SIGTERM");
    }

    #[test]
    fn the_first_request_wins() {
        let s = StopRequest::manual();
        assert_eq!(s.signal(), None);
        s.request(15);
        s.request(2);
        assert_eq!(s.signal().map(StopSignal::number), Some(15));
    }
}
