//! Reaping mcpc's own child processes (the stdio servers) before it exits, so that none is
//! left behind as a zombie for an init that may not reap (containers).

use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};

/// How long [`reap`] waits for children that were killed but are not gone yet.
pub const REAP_BOUND: Duration = Duration::from_millis(200);

/// Reaps every child that has exited, waiting up to `bound` for the rest (they were sent
/// SIGKILL; it takes a moment to land). Call it only once the async runtime is gone: it
/// reaps any child, including ones the runtime would wait for.
pub fn reap(bound: Duration) -> usize {
    let deadline = Instant::now() + bound;
    let mut reaped = 0;
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::StillAlive) => {
                if Instant::now() >= deadline {
                    return reaped;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(_) => reaped += 1,
            Err(Errno::EINTR) => {}
            // ECHILD: no children left.
            Err(_) => return reaped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exited_children_are_reaped() {
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        std::thread::sleep(Duration::from_millis(50));
        // Unit tests run in threads of one process: other tests' children may be reaped too,
        // which is harmless here (none of them waits for its own).
        reap(Duration::from_millis(500));
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());
        drop(child);
    }
}
