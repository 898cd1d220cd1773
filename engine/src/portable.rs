//! Which relative paths can be file names everywhere a bundle may be delivered. A leaf:
//! the catalogue refuses such names where it reads them, and bundle verification checks
//! every path of a bundle with the same rule.

/// Whether a bundle path is portable: `[A-Za-z0-9._-]` segments, not `.`/`..`, no
/// leading dot or trailing dot, not a Windows device name.
pub fn is_portable_path(path: &str) -> bool {
    const RESERVED: [&str; 6] = ["con", "prn", "aux", "nul", "com1", "lpt1"];
    !path.is_empty()
        && path.split('/').all(|segment| {
            !segment.is_empty()
                && !segment.starts_with('.')
                && !segment.ends_with('.')
                && segment.len() <= 255
                && segment.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
                && !RESERVED.contains(&segment.split('.').next().unwrap_or_default().to_ascii_lowercase().as_str())
        })
}
