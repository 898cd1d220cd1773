//! `acompose bundle list [--json]`: the home's bundles (the host lists them), one line
//! each with role, id, age, size and the projections that show it.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, SystemTime};

use acompose_driver::convergence::bundle_name::{Listed, list};
use acompose_driver::engine::diagnostic::sanitize;
use acompose_driver::home::resolve_home;

use crate::terminal::{Terminal, report_error};
use crate::{exit, print_stdout};

pub(crate) fn run(home: Option<&Path>, json: bool, terminal: &Terminal) -> u8 {
    let home = match resolve_home(home) {
        Ok(home) => home,
        Err(error) => return report_error(&error, terminal),
    };
    let bundles = list(&home);
    if json {
        print_stdout(&document(&bundles));
    } else if bundles.is_empty() {
        if !terminal.quiet {
            print_stdout(&format!("no bundles in `{}` yet\n", sanitize(&home.display().to_string())));
        }
    } else {
        print_stdout(&table(&bundles, SystemTime::now()));
    }
    exit::SUCCESS
}

/// The `acompose.bundle-list.v1` document: no clock in it, the modification time as
/// seconds since the Unix epoch.
fn document(bundles: &[Listed]) -> String {
    #[derive(serde::Serialize)]
    struct Entry<'a> {
        id: &'a str,
        role: &'a str,
        current: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        name: Option<&'a str>,
        place: &'a str,
        path: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        modified_unix: Option<u64>,
        bytes: u64,
        projections: Vec<String>,
    }
    #[derive(serde::Serialize)]
    struct Document<'a> {
        format: &'static str,
        bundles: Vec<Entry<'a>>,
    }
    let entries = bundles
        .iter()
        .map(|bundle| Entry {
            id: &bundle.id,
            role: &bundle.role,
            current: bundle.current,
            name: bundle.name.as_deref(),
            place: bundle.place,
            path: bundle.folder.display().to_string(),
            modified_unix: bundle
                .modified
                .and_then(|modified| modified.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|since| since.as_secs()),
            bytes: bundle.bytes,
            projections: bundle.projections.iter().map(|target| target.display().to_string()).collect(),
        })
        .collect();
    let document = Document { format: "acompose.bundle-list.v1", bundles: entries };
    String::from_utf8_lossy(&acompose_driver::engine::snapshot::to_json_bytes(&document)).into_owned()
}

/// One line per bundle: role (with `*` for the role's current bundle, `ROLE@{N}` for one
/// convergence keeps as the role's Nth earlier bundle), id, age, size, projections.
fn table(bundles: &[Listed], now: SystemTime) -> String {
    let shown = |bundle: &Listed| match (&bundle.name, bundle.role.is_empty()) {
        (Some(name), _) => name.clone(),
        (None, true) => "?".to_owned(),
        (None, false) => bundle.role.clone(),
    };
    let width = bundles.iter().map(|bundle| shown(bundle).len()).max().unwrap_or(0).max(4);
    let mut text = format!("  {:<width$}  {:<16}  {:>8}  {:>9}  PROJECTIONS\n", "ROLE", "BUNDLE", "AGE", "SIZE");
    for bundle in bundles {
        let mark = if bundle.current { '*' } else { ' ' };
        let role = shown(bundle);
        let age = bundle.modified.and_then(|modified| now.duration_since(modified).ok()).map_or("?".to_owned(), age);
        let projections = match bundle.projections.as_slice() {
            [] if bundle.place == "runtime" => "(a launch's)".to_owned(),
            [] => "-".to_owned(),
            targets => targets.iter().map(|target| target.display().to_string()).collect::<Vec<_>>().join(", "),
        };
        let _ = writeln!(
            text,
            "{mark} {:<width$}  {:<16}  {:>8}  {:>9}  {}",
            sanitize(&role),
            bundle.id,
            age,
            size(bundle.bytes),
            sanitize(&projections)
        );
    }
    text.push_str("* the role's current bundle in the home's index\n");
    if bundles.iter().any(|bundle| !bundle.current && bundle.name.is_some()) {
        text.push_str(
            "ROLE@{N}: the role's Nth earlier bundle, newest first, kept by convergence (`bundle_history`)\n",
        );
    }
    text
}

/// An age as a person reads it: `42 s`, `5 min`, `3 h`, `12 d`.
fn age(elapsed: Duration) -> String {
    let seconds = elapsed.as_secs();
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min", seconds / 60),
        3600..86_400 => format!("{} h", seconds / 3600),
        _ => format!("{} d", seconds / 86_400),
    }
}

/// A size in bytes, KiB or MiB with one decimal.
fn size(bytes: u64) -> String {
    const KIB: u64 = 1024;
    match bytes {
        0..KIB => format!("{bytes} B"),
        _ if bytes < KIB * KIB => format!("{:.1} KiB", bytes as f64 / KIB as f64),
        _ => format!("{:.1} MiB", bytes as f64 / (KIB * KIB) as f64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_sizes_read_as_a_person_says_them() {
        assert_eq!(age(Duration::from_secs(42)), "42 s");
        assert_eq!(age(Duration::from_secs(300)), "5 min");
        assert_eq!(age(Duration::from_secs(3 * 3600 + 5)), "3 h");
        assert_eq!(age(Duration::from_secs(12 * 86_400)), "12 d");
        assert_eq!(size(512), "512 B");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(3 * 1024 * 1024), "3.0 MiB");
    }
}
