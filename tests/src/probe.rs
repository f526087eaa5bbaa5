//! What a leak check reads about this process from Linux `/proc`: open descriptors, resident
//! memory (now and peak), child processes (zombies included).

use std::path::Path;

/// Number of open file descriptors of this process (entries of `/proc/self/fd`; the one the
/// listing itself holds is not counted).
pub fn open_fds() -> usize {
    fd_targets().len()
}

/// What each open descriptor points at (`/proc/self/fd/N` links), sorted, for a leak report.
pub fn fd_targets() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/proc/self/fd") else {
        return Vec::new();
    };
    let mut targets: Vec<String> = dir
        .flatten()
        .filter_map(|e| {
            // The listing's own descriptor is gone by the time it is read: no link.
            let target = std::fs::read_link(e.path()).ok()?;
            Some(format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            ))
        })
        .collect();
    targets.sort();
    targets
}

/// Resident memory of this process, in KiB.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now.
    pub rss_kib: u64,
    /// `VmHWM`: the peak since the start or since [`reset_peak`].
    pub peak_kib: u64,
}

impl Memory {
    /// Reads `/proc/self/status` (zeros where a field is missing).
    pub fn now() -> Memory {
        let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Memory {
            rss_kib: field("VmRSS:"),
            peak_kib: field("VmHWM:"),
        }
    }
}

/// Resets the peak resident size (`VmHWM`) to the current one (writes 5 to
/// `/proc/self/clear_refs`); false if the kernel refused.
pub fn reset_peak() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// One process in `/proc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proc {
    /// Its id.
    pub pid: u32,
    /// Its state letter (`R`, `S`, `Z` for a zombie, ...).
    pub state: char,
    /// Its command name.
    pub name: String,
}

/// The processes whose parent is this process (zombies included: they are not reaped).
pub fn children() -> Vec<Proc> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let (state, ppid, name) = stat(pid)?;
            (ppid == me).then_some(Proc { pid, state, name })
        })
        .collect()
}

/// The state letter of `pid`, if it exists (`Z`: a zombie, not reaped yet).
pub fn state_of(pid: u32) -> Option<char> {
    stat(pid).map(|(state, _, _)| state)
}

/// `(state, ppid, name)` from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(char, u32, String)> {
    let stat =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("stat")).ok()?;
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    let name = stat.get(open + 1..close)?.to_owned();
    let mut rest = stat.get(close + 1..)?.split_whitespace();
    let state = rest.next()?.chars().next()?;
    let ppid = rest.next()?.parse().ok()?;
    Some((state, ppid, name))
}

/// The pids listed one per line in `path` (a server's `--pid-file`); none if it is missing.
pub fn pids_in(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_visible() {
        assert!(open_fds() >= 3, "{:?}", fd_targets());
        let m = Memory::now();
        assert!(m.rss_kib > 0 && m.peak_kib >= m.rss_kib, "{m:?}");
        assert!(state_of(std::process::id()).is_some());
        let child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        std::thread::sleep(std::time::Duration::from_millis(100));
        // Exited but not waited for: a zombie child.
        assert!(
            children().iter().any(|p| p.pid == pid && p.state == 'Z'),
            "{:?}",
            children()
        );
        let mut child = child;
        child.wait().unwrap();
        assert_eq!(state_of(pid), None);
    }
}
