//! System calls of one process counted by `strace -c -f` (when it is installed), set
//! beside the floor of the calls its job cannot avoid: one open, read and close per
//! input file, one listing per input folder (open, read the entries until the end,
//! close), and one call per written entry (a file created, written and closed; a folder
//! made; a link made). The counts do not depend on the machine's load, so they are the
//! stable measure beside the timings.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// Files, folders and links of a tree (links are not followed).
#[derive(Debug, Default, Clone, Copy)]
pub struct Entries {
    pub files: u64,
    pub folders: u64,
    pub links: u64,
}

impl Entries {
    /// Counts what is under `root`, `root` included; `keep` picks the entries counted.
    pub fn of(root: &Path, keep: &dyn Fn(&Path) -> bool) -> Self {
        let mut entries = Entries::default();
        for entry in walkdir::WalkDir::new(root).follow_links(false).into_iter().flatten() {
            if !keep(entry.path()) {
                continue;
            }
            let kind = entry.file_type();
            if kind.is_symlink() {
                entries.links += 1;
            } else if kind.is_dir() {
                entries.folders += 1;
            } else if kind.is_file() {
                entries.files += 1;
            }
        }
        entries
    }

    pub fn total(&self) -> u64 {
        self.files + self.folders + self.links
    }
}

/// The floor of reading `inputs`: open, read and close each file; open, read the entries
/// (one call that returns them, one that says there are no more) and close each folder.
pub fn read_floor(inputs: Entries) -> u64 {
    3 * inputs.files + 4 * inputs.folders
}

/// The floor of writing `outputs`: create, write and close each file; make each folder
/// and each link.
pub fn write_floor(outputs: Entries) -> u64 {
    3 * outputs.files + outputs.folders + outputs.links
}

/// Runs `command` under `strace -c -f` and returns the calls by name (`None` when strace
/// is not installed). The command must succeed.
pub fn count(command: &Command, scratch: &Path) -> Option<BTreeMap<String, u64>> {
    if Command::new("strace").arg("-V").output().is_err() {
        return None;
    }
    let report = scratch.join("strace-summary.txt");
    let mut traced = Command::new("strace");
    traced.args(["-f", "-c", "-o"]).arg(&report).arg("--").arg(command.get_program()).args(command.get_args());
    if let Some(directory) = command.get_current_dir() {
        traced.current_dir(directory);
    }
    for (key, value) in command.get_envs() {
        match value {
            Some(value) => traced.env(key, value),
            None => traced.env_remove(key),
        };
    }
    let status = traced.stdout(std::process::Stdio::null()).status().expect("run strace");
    assert!(status.success(), "the traced command failed");
    let text = std::fs::read_to_string(&report).expect("strace summary");
    let _ = std::fs::remove_file(&report);
    Some(parse(&text))
}

/// The `calls` column of strace's summary, by call name (the `total` line left out).
fn parse(text: &str) -> BTreeMap<String, u64> {
    let mut calls = BTreeMap::new();
    for line in text.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // % time, seconds, usecs/call, calls, [errors], syscall
        if fields.len() < 5 || fields[0].parse::<f64>().is_err() {
            continue;
        }
        let name = fields[fields.len() - 1];
        if name == "total" {
            continue;
        }
        if let Ok(count) = fields[3].parse::<u64>() {
            calls.insert(name.to_owned(), count);
        }
    }
    calls
}

/// Prints the counts of one run: every call made at least `inputs.total() / 20` times,
/// per input and per written entry, then the total against the floor.
pub fn report(title: &str, calls: &BTreeMap<String, u64>, inputs: Entries, outputs: Entries) {
    let total: u64 = calls.values().sum();
    let floor = read_floor(inputs) + write_floor(outputs);
    let per = |count: u64, of: u64| count as f64 / of.max(1) as f64;
    let mut lines = vec![
        format!("{title}: system calls (strace -c -f)"),
        format!(
            "  inputs: {} files, {} folders; written: {} files, {} folders, {} links",
            inputs.files, inputs.folders, outputs.files, outputs.folders, outputs.links
        ),
        format!("  {:<18} {:>9} {:>10} {:>12}", "call", "calls", "per input", "per written"),
    ];
    let mut sorted: Vec<(&String, &u64)> = calls.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (name, &count) in sorted.into_iter().filter(|(_, count)| **count * 20 >= inputs.total()) {
        lines.push(format!(
            "  {name:<18} {count:>9} {:>10.2} {:>12.2}",
            per(count, inputs.total()),
            per(count, outputs.total())
        ));
    }
    // The fingerprint cache needs each input's size, time and inode: one `fstat` of the
    // open file or folder on top of the floor.
    let with_metadata = floor + inputs.files + inputs.folders;
    lines.push(format!(
        "  total {total}; floor {floor} (read {} + write {}): {:.2}x; with one fstat per input {with_metadata}: {:.2}x",
        read_floor(inputs),
        write_floor(outputs),
        per(total, floor),
        per(total, with_metadata)
    ));
    eprintln!("{}", lines.join("\n"));
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_summary_is_read_by_its_calls_column() {
        let text = "% time     seconds  usecs/call     calls    errors syscall\n\
                    ------ ----------- ----------- --------- --------- ----------------\n\
                    \x20 40.00    0.000040           4        10         2 openat\n\
                    \x20 60.00    0.000060           6        10           statx\n\
                    ------ ----------- ----------- --------- --------- ----------------\n\
                    100.00    0.000100           5        20         2 total\n";
        let calls = super::parse(text);
        assert_eq!(calls.get("openat"), Some(&10));
        assert_eq!(calls.get("statx"), Some(&10));
        assert_eq!(calls.len(), 2);
    }
}
