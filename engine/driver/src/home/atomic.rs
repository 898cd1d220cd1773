//! The one way a mutable file is replaced or created: a temporary file in the same folder,
//! written, flushed, given ordinary permissions and renamed (or linked without replacing)
//! into place, then the folder flushed. People files, the bundle record and the
//! fingerprint cache use it; transactions use `write_new` for their temporaries and flush them together.
//! Decides nothing about what may be written where.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// A failed read or write of a file, with the path and the I/O error behind it.
#[derive(Debug, thiserror::Error)]
#[error("{message}{}", cause.as_ref().map(|cause| format!(": {cause}")).unwrap_or_default())]
pub struct FileError {
    pub path: PathBuf,
    pub message: String,
    #[source]
    pub cause: Option<io::Error>,
}

impl FileError {
    pub fn new(path: &Path, message: String) -> Self {
        FileError { path: path.to_path_buf(), message, cause: None }
    }

    pub fn caused(path: &Path, message: String, cause: io::Error) -> Self {
        FileError { path: path.to_path_buf(), message, cause: Some(cause) }
    }
}

pub type Result<T, E = FileError> = std::result::Result<T, E>;

/// Names the path an I/O failure happened at.
pub trait At<T> {
    fn at(self, path: &Path, message: impl FnOnce() -> String) -> Result<T>;
}

impl<T> At<T> for io::Result<T> {
    fn at(self, path: &Path, message: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|cause| FileError::caused(path, message(), cause))
    }
}

/// Creates `path` (which must not exist: a leftover, even a planted link, is an error)
/// and writes `bytes`; returns the open file, for the caller to flush to disk (several
/// flushes may then run at once).
pub fn write_new(path: &Path, bytes: &[u8]) -> io::Result<File> {
    let mut handle = OpenOptions::new().write(true).create_new(true).open(path)?;
    handle.write_all(bytes)?;
    Ok(handle)
}

/// Writes a new file atomically; fails with `Ok(false)` when the name already exists.
/// The temp file is flushed to disk before it is linked into place without replacing
/// anything.
pub fn create_new(folder: &Path, name: &str, bytes: &[u8]) -> Result<bool> {
    let temp = staged(folder, bytes, None)?;
    let target = folder.join(name);
    match temp.persist_noclobber(&target) {
        Ok(_) => {
            sync_folder(folder)?;
            Ok(true)
        }
        Err(error) if error.error.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(error) => Err(FileError::caused(&target, format!("cannot write `{}`", target.display()), error.error)),
    }
}

/// Replaces a file atomically (temp file in the same folder, fsync, rename), keeping its
/// permissions. A symlink at the target is refused by the caller before this runs.
pub fn replace(folder: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    replace_with(folder, name, &mut |out| out.write_all(bytes))
}

/// [`replace`] with the bytes written by `write` into the temporary file (buffered), so
/// a large file is never held whole. Nothing replaces the target when `write` fails.
pub fn replace_with(folder: &Path, name: &str, write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>) -> Result<()> {
    let target = folder.join(name);
    let permissions =
        fs::symlink_metadata(&target).ok().filter(Metadata::is_file).map(|metadata| metadata.permissions());
    let temp = staged_with(folder, write, permissions)?;
    temp.persist(&target)
        .map_err(|error| FileError::caused(&target, format!("cannot write `{}`", target.display()), error.error))?;
    sync_folder(folder)
}

fn staged(folder: &Path, bytes: &[u8], permissions: Option<fs::Permissions>) -> Result<tempfile::NamedTempFile> {
    staged_with(folder, &mut |out| out.write_all(bytes), permissions)
}

fn staged_with(
    folder: &Path,
    write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    permissions: Option<fs::Permissions>,
) -> Result<tempfile::NamedTempFile> {
    let mut temp = tempfile::Builder::new()
        .prefix(".acompose-")
        .suffix(".tmp")
        .tempfile_in(folder)
        .at(folder, || format!("cannot create a temporary file in `{}`", folder.display()))?;
    {
        let mut out = io::BufWriter::with_capacity(1 << 16, &mut temp);
        write(&mut out)
            .and_then(|()| out.flush())
            .at(folder, || format!("cannot write into `{}`", folder.display()))?;
    }
    if let Some(permissions) = permissions.or_else(default_permissions) {
        temp.as_file()
            .set_permissions(permissions)
            .at(folder, || format!("cannot set permissions in `{}`", folder.display()))?;
    }
    temp.as_file().sync_all().at(folder, || format!("cannot flush a file in `{}`", folder.display()))?;
    Ok(temp)
}

/// New files are readable by everyone and writable by the owner, like files an editor
/// creates (temp files start private).
#[cfg(unix)]
fn default_permissions() -> Option<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt as _;
    Some(fs::Permissions::from_mode(0o644))
}

/// Elsewhere a temp file is already an ordinary writable file.
#[cfg(not(unix))]
fn default_permissions() -> Option<fs::Permissions> {
    None
}

/// Makes a rename durable by flushing the folder that holds it.
#[cfg(unix)]
fn sync_folder(folder: &Path) -> Result<()> {
    File::open(folder)
        .and_then(|handle| handle.sync_all())
        .at(folder, || format!("cannot flush `{}`", folder.display()))
}

#[cfg(not(unix))]
fn sync_folder(_folder: &Path) -> Result<()> {
    Ok(())
}
