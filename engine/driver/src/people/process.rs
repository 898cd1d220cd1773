//! The process table as People sessions need it: whether a pid is alive and when it
//! started (so a reused pid is told apart), whether a process group still has a live
//! member, and signals to a whole group. Linux reads `/proc`; elsewhere the start time
//! cannot be read and sessions cannot be started or reconciled.
//!
//! A zombie (a process that exited and was not collected yet) counts as alive here while
//! its parent is the launcher that spawned it, which holds it until it has written the
//! outcome; a zombie handed to pid 1 (its launcher died) counts as gone. A group whose
//! only members are zombies counts as empty: nothing in it can run any more.

use std::io;

use acompose_people::session::Observation;
use rustix::process::{Pid, Signal, kill_process_group};

/// What `/proc/<pid>/stat` says about one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessStat {
    /// The one-letter state (`R`, `S`, `Z`, …).
    pub state: char,
    /// The parent's pid.
    pub parent: u32,
    /// The process group id.
    pub group: u32,
    /// Field 22: the start time in clock ticks since boot.
    pub start: u64,
}

impl ProcessStat {
    fn is_live(&self) -> bool {
        !self.is_zombie()
    }

    fn is_zombie(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses the text of `/proc/<pid>/stat`. The command name (field 2) is in parentheses
/// and may itself hold spaces and parentheses, so the fields are counted after the last
/// `)`.
pub fn parse_stat(text: &str) -> Option<ProcessStat> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name, field 3 (state) is index 0, so field N is index N - 3.
    let state = fields.first()?.chars().next()?;
    let parent = fields.get(1)?.parse().ok()?;
    let group = fields.get(2)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some(ProcessStat { state, parent, group, start })
}

/// The stat of `pid`, `None` when no process has it.
#[cfg(target_os = "linux")]
pub fn stat(pid: u32) -> io::Result<Option<ProcessStat>> {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(text) => parse_stat(&text)
            .map(Some)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "unreadable /proc stat")),
        Err(error) if matches!(error.kind(), io::ErrorKind::NotFound) || error.raw_os_error() == Some(3) => Ok(None),
        Err(error) => Err(error),
    }
}

#[cfg(not(target_os = "linux"))]
pub fn stat(_pid: u32) -> io::Result<Option<ProcessStat>> {
    Err(io::Error::new(io::ErrorKind::Unsupported, "process start times are read from /proc, which only Linux has"))
}

/// What is seen at `pid` now, for reconciliation: a zombie nobody but pid 1 will collect
/// is gone.
pub fn observe(pid: u32) -> io::Result<Observation> {
    Ok(match stat(pid)? {
        Some(stat) if stat.is_zombie() && stat.parent <= 1 => Observation::Gone,
        Some(stat) => Observation::Alive { pid_start: stat.start },
        None => Observation::Gone,
    })
}

/// Whether any process of group `group` can still run (zombies do not count).
#[cfg(target_os = "linux")]
pub fn group_alive(group: u32) -> io::Result<bool> {
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else {
            continue;
        };
        // A process that exits between the listing and the read is simply gone.
        if let Ok(Some(stat)) = stat(pid)
            && stat.group == group
            && stat.is_live()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

#[cfg(not(target_os = "linux"))]
pub fn group_alive(group: u32) -> io::Result<bool> {
    let Some(pid) = Pid::from_raw(i32::try_from(group).unwrap_or(0)) else {
        return Ok(false);
    };
    Ok(rustix::process::test_kill_process_group(pid).is_ok())
}

/// Sends `signal` to every process of group `group`. A group that no longer exists is
/// not an error.
pub fn signal_group(group: u32, signal: Signal) -> io::Result<()> {
    let Some(pid) = i32::try_from(group).ok().and_then(Pid::from_raw) else {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a process group id"));
    };
    match kill_process_group(pid, signal) {
        Ok(()) => Ok(()),
        Err(rustix::io::Errno::SRCH) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

/// Ends group `group`: SIGTERM, then SIGKILL if a member still runs after `grace`.
/// Returns whether the group is empty afterwards (checked for up to `grace` more).
pub fn end_group(group: u32, grace: std::time::Duration) -> io::Result<bool> {
    if !group_alive(group)? {
        return Ok(true);
    }
    signal_group(group, Signal::TERM)?;
    if wait_until_empty(group, grace)? {
        return Ok(true);
    }
    signal_group(group, Signal::KILL)?;
    wait_until_empty(group, grace)
}

/// Polls until group `group` has no live member, for at most `limit`.
pub fn wait_until_empty(group: u32, limit: std::time::Duration) -> io::Result<bool> {
    let started = std::time::Instant::now();
    loop {
        if !group_alive(group)? {
            return Ok(true);
        }
        if started.elapsed() >= limit {
            return Ok(false);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_counted_after_the_name() {
        let text = "4242 (a (b) c) S 1 4240 4240 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        assert_eq!(parse_stat(text), Some(ProcessStat { state: 'S', parent: 1, group: 4240, start: 987_654 }));
        assert_eq!(parse_stat("4242 (x) S 1"), None);
        assert_eq!(parse_stat("no name here"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_is_alive_with_a_stable_start_time() {
        let pid = std::process::id();
        let first = observe(pid).ok();
        assert!(matches!(first, Some(Observation::Alive { .. })));
        assert_eq!(observe(pid).ok(), first);
    }
}
