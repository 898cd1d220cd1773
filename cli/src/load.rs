//! Reading person sources from disk (or from the embedded roster) into salsa inputs.
//! Symlinks anywhere in a package are refused; every file's bytes are read here and
//! nowhere else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use acompose_engine::catalogue::Catalogue;
use acompose_engine::{Database, Diagnostic, Package, PackageKind, PersonSource, SourceFile};
use salsa::Durability;
use salsa::Setter;

/// The spelling that selects the embedded default.
pub const EMBEDDED: &str = "roster:core";

/// Where a person source comes from: the embedded default or a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Embedded,
    Directory(PathBuf),
}

impl Location {
    pub fn parse(text: &str) -> Self {
        if text == EMBEDDED { Location::Embedded } else { Location::Directory(PathBuf::from(text)) }
    }
}

/// What to load: a person package and its libraries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    pub person: Location,
    pub libraries: Vec<Location>,
    pub core_rules: bool,
}

impl Selection {
    pub fn embedded() -> Self {
        Selection { person: Location::Embedded, libraries: Vec::new(), core_rules: true }
    }
}

/// Keeps the salsa inputs of loaded packages so a reload only sets what changed.
#[derive(Default)]
pub struct Loader {
    files: BTreeMap<(String, String), SourceFile>,
    packages: BTreeMap<(String, PackageKind), Package>,
    catalogues: BTreeMap<String, Catalogue>,
    source: Option<PersonSource>,
}

/// The parts of a repository a catalogue is made of.
const CATALOGUE_PARTS: [&str; 3] = [".agents/skills", ".agents/composed", ".agents/roles.kdl"];

/// Turns a path into a label: as the user wrote it, with `/` separators.
pub fn label_of(path: &Path) -> String {
    let text = path.to_string_lossy().replace('\\', "/");
    let trimmed = text.trim_end_matches('/');
    let trimmed = trimmed.strip_prefix("./").filter(|rest| !rest.is_empty()).unwrap_or(trimmed);
    if trimmed.is_empty() { ".".to_owned() } else { trimmed.to_owned() }
}

/// Files read from disk: `(relative path, bytes)`, and the problems met.
pub struct Read {
    pub files: Vec<(String, Vec<u8>)>,
    pub diagnostics: Vec<Diagnostic>,
}

fn read_directory(root: &Path, label: &str) -> Read {
    let mut read = Read { files: Vec::new(), diagnostics: Vec::new() };
    match std::fs::symlink_metadata(root) {
        Err(error) => {
            read.diagnostics.push(
                Diagnostic::error(
                    "package-missing",
                    format!("cannot open person source `{label}`: {}", error_kind(&error)),
                )
                .in_file(label)
                .hint("pass an existing package directory, or `roster:core` for the embedded default"),
            );
            return read;
        }
        Ok(metadata) if metadata.file_type().is_symlink() => {
            read.diagnostics.push(
                Diagnostic::error("symlink-refused", format!("`{label}` is a symbolic link"))
                    .in_file(label)
                    .hint("pass the real directory; packages may not contain or be symbolic links"),
            );
            return read;
        }
        Ok(metadata) if !metadata.is_dir() => {
            read.diagnostics.push(
                Diagnostic::error("package-not-directory", format!("`{label}` is not a directory"))
                    .in_file(label)
                    .hint("a person source is a package directory"),
            );
            return read;
        }
        Ok(_) => {}
    }
    let walker = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.depth() == 0 || !entry.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error.path().map_or_else(|| label.to_owned(), |path| display_under(root, path, label));
                read.diagnostics.push(
                    Diagnostic::error("unreadable-file", "cannot read this entry of the package")
                        .in_file(path)
                        .hint("check its permissions"),
                );
                continue;
            }
        };
        if entry.depth() == 0 {
            continue;
        }
        let relative = relative_path(root, entry.path());
        if entry.path_is_symlink() {
            read.diagnostics.push(
                Diagnostic::error("symlink-refused", "symbolic links are not allowed in a package")
                    .in_file(format!("{label}/{relative}"))
                    .hint("replace the link with the file or folder it points to"),
            );
            continue;
        }
        if entry.file_type().is_dir() {
            continue;
        }
        if !entry.file_type().is_file() {
            read.diagnostics.push(
                Diagnostic::error("unreadable-file", "this entry is not a regular file (a device, pipe or socket)")
                    .in_file(format!("{label}/{relative}"))
                    .hint("a package holds only folders and regular files"),
            );
            continue;
        }
        match std::fs::read(entry.path()) {
            Ok(bytes) => read.files.push((relative, bytes)),
            Err(error) => read.diagnostics.push(
                Diagnostic::error("unreadable-file", format!("cannot read this file: {}", error_kind(&error)))
                    .in_file(format!("{label}/{relative}"))
                    .hint("check its permissions"),
            ),
        }
    }
    read
}

/// Reads the catalogue parts of a repository; `None` when the folder does not exist.
pub fn read_catalogue(root: &Path, label: &str) -> Option<Read> {
    match std::fs::symlink_metadata(root) {
        Err(_) => return None,
        Ok(metadata) if metadata.file_type().is_symlink() => {
            let diagnostic = Diagnostic::error("symlink-refused", format!("`{label}` is a symbolic link"))
                .in_file(label)
                .hint("point the request at the real folder");
            return Some(Read { files: Vec::new(), diagnostics: vec![diagnostic] });
        }
        Ok(metadata) if !metadata.is_dir() => return None,
        Ok(_) => {}
    }
    let mut files = Vec::new();
    let mut diagnostics = Vec::new();
    for part in CATALOGUE_PARTS {
        let path = root.join(part);
        if std::fs::symlink_metadata(&path).is_err() {
            continue;
        }
        if std::fs::symlink_metadata(root.join(".agents")).is_ok_and(|metadata| metadata.file_type().is_symlink()) {
            diagnostics.push(
                Diagnostic::error("symlink-refused", "symbolic links are not allowed in a catalogue")
                    .in_file(format!("{label}/.agents"))
                    .hint("replace the link with the folder it points to"),
            );
            break;
        }
        let read = read_directory_entries(root, &path, label);
        files.extend(read.files);
        diagnostics.extend(read.diagnostics);
    }
    files.sort_by(|a, b| a.0.cmp(&b.0));
    Some(Read { files, diagnostics })
}

/// Reads every file of a folder (no symlinks followed).
pub fn read_folder(root: &Path, label: &str) -> Read {
    read_directory_entries(root, root, label)
}

/// Reads a file or a folder under `root` (no symlinks followed), paths relative to root.
fn read_directory_entries(root: &Path, start: &Path, label: &str) -> Read {
    let mut read = Read { files: Vec::new(), diagnostics: Vec::new() };
    let walker = walkdir::WalkDir::new(start)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|entry| entry.depth() == 0 || !entry.file_name().to_string_lossy().starts_with('.'));
    for entry in walker {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                let path = error.path().map_or_else(|| label.to_owned(), |path| display_under(root, path, label));
                read.diagnostics.push(
                    Diagnostic::error("unreadable-file", "cannot read this entry of the catalogue")
                        .in_file(path)
                        .hint("check its permissions"),
                );
                continue;
            }
        };
        let relative = relative_path(root, entry.path());
        if entry.path_is_symlink() {
            read.diagnostics.push(
                Diagnostic::error("symlink-refused", "symbolic links are not allowed in a catalogue")
                    .in_file(format!("{label}/{relative}"))
                    .hint("replace the link with the file or folder it points to"),
            );
            continue;
        }
        if entry.file_type().is_dir() {
            continue;
        }
        if !entry.file_type().is_file() {
            read.diagnostics.push(
                Diagnostic::error("unreadable-file", "this entry is not a regular file (a device, pipe or socket)")
                    .in_file(format!("{label}/{relative}"))
                    .hint("a catalogue holds only folders and regular files"),
            );
            continue;
        }
        match std::fs::read(entry.path()) {
            Ok(bytes) => read.files.push((relative, bytes)),
            Err(error) => read.diagnostics.push(
                Diagnostic::error("unreadable-file", format!("cannot read this file: {}", error_kind(&error)))
                    .in_file(format!("{label}/{relative}"))
                    .hint("check its permissions"),
            ),
        }
    }
    read
}

fn display_under(root: &Path, path: &Path, label: &str) -> String {
    let relative = relative_path(root, path);
    if relative.is_empty() { label.to_owned() } else { format!("{label}/{relative}") }
}

fn relative_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .components()
        .map(|component| component.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A short, stable description of an I/O error (no OS-specific wording).
pub fn error_kind(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => "not found".to_owned(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        std::io::ErrorKind::NotADirectory => "not a directory".to_owned(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_owned(),
        other => other.to_string().to_lowercase(),
    }
}

impl Loader {
    /// Loads a selection, reusing inputs whose bytes did not change.
    pub fn load(&mut self, db: &mut Database, selection: &Selection) -> PersonSource {
        let package = self.package(db, &selection.person, PackageKind::Person);
        let libraries: Vec<Package> =
            selection.libraries.iter().map(|location| self.package(db, location, PackageKind::Library)).collect();
        match self.source {
            Some(source) => {
                if source.package(db) != package {
                    source.set_package(db).to(package);
                }
                if source.libraries(db) != &libraries {
                    source.set_libraries(db).to(libraries);
                }
                if source.core_rules(db) != selection.core_rules {
                    source.set_core_rules(db).to(selection.core_rules);
                }
                source
            }
            None => {
                let source = PersonSource::new(db, package, libraries, selection.core_rules);
                self.source = Some(source);
                source
            }
        }
    }

    fn package(&mut self, db: &mut Database, location: &Location, kind: PackageKind) -> Package {
        let (label, embedded, read, durability) = match location {
            Location::Embedded => (
                EMBEDDED.to_owned(),
                true,
                Read {
                    files: acompose_roster::files()
                        .iter()
                        .map(|(path, bytes)| ((*path).to_owned(), bytes.to_vec()))
                        .collect(),
                    diagnostics: Vec::new(),
                },
                Durability::HIGH,
            ),
            Location::Directory(path) => {
                let label = label_of(path);
                let read = read_directory(path, &label);
                (label, false, read, Durability::MEDIUM)
            }
        };
        let mut files = Vec::with_capacity(read.files.len());
        for (relative, bytes) in read.files {
            let key = (label.clone(), relative.clone());
            let file = match self.files.get(&key) {
                Some(&file) => {
                    if file.bytes(db) != &bytes {
                        file.set_bytes(db).with_durability(durability).to(bytes);
                    }
                    file
                }
                None => {
                    let file = SourceFile::builder(label.clone(), relative, bytes).durability(durability).new(db);
                    self.files.insert(key, file);
                    file
                }
            };
            files.push(file);
        }
        match self.packages.get(&(label.clone(), kind)) {
            Some(&package) => {
                if package.files(db) != &files {
                    package.set_files(db).with_durability(durability).to(files);
                }
                if package.load_diagnostics(db) != &read.diagnostics {
                    package.set_load_diagnostics(db).to(read.diagnostics);
                }
                package
            }
            None => {
                let package = Package::builder(label.clone(), kind, embedded, files, read.diagnostics)
                    .durability(durability)
                    .new(db);
                self.packages.insert((label, kind), package);
                package
            }
        }
    }

    /// Sets (or updates) one file input, keyed by its origin label and relative path.
    fn file(
        &mut self,
        db: &mut Database,
        label: &str,
        relative: String,
        bytes: Vec<u8>,
        durability: Durability,
    ) -> SourceFile {
        let key = (label.to_owned(), relative.clone());
        match self.files.get(&key) {
            Some(&file) => {
                if file.bytes(db) != &bytes {
                    file.set_bytes(db).with_durability(durability).to(bytes);
                }
                file
            }
            None => {
                let file = SourceFile::builder(label.to_owned(), relative, bytes).durability(durability).new(db);
                self.files.insert(key, file);
                file
            }
        }
    }

    /// Sets (or updates) a catalogue input from files already read.
    pub fn catalogue_from(
        &mut self,
        db: &mut Database,
        label: &str,
        available: bool,
        read_files: Vec<(String, Vec<u8>)>,
        diagnostics: Vec<Diagnostic>,
    ) -> Catalogue {
        let files: Vec<SourceFile> = read_files
            .into_iter()
            .map(|(relative, bytes)| self.file(db, label, relative, bytes, Durability::LOW))
            .collect();
        match self.catalogues.get(label) {
            Some(&catalogue) => {
                if catalogue.available(db) != available {
                    catalogue.set_available(db).to(available);
                }
                if catalogue.files(db) != &files {
                    catalogue.set_files(db).to(files);
                }
                if catalogue.load_diagnostics(db) != &diagnostics {
                    catalogue.set_load_diagnostics(db).to(diagnostics);
                }
                catalogue
            }
            None => {
                let catalogue = Catalogue::new(db, label.to_owned(), available, files, diagnostics);
                self.catalogues.insert(label.to_owned(), catalogue);
                catalogue
            }
        }
    }

    /// Reads a repository's catalogue parts (`.agents/skills`, `.agents/composed`,
    /// `.agents/roles.kdl`) without walking the rest of the repository.
    pub fn catalogue(&mut self, db: &mut Database, root: &Path, label: &str) -> Catalogue {
        match read_catalogue(root, label) {
            Some(read) => self.catalogue_from(db, label, true, read.files, read.diagnostics),
            None => self.catalogue_from(db, label, false, Vec::new(), Vec::new()),
        }
    }

    /// The text of a loaded file by its display path, for rendering diagnostics.
    pub fn text_of(&self, db: &Database, display_path: &str) -> Option<String> {
        self.files
            .values()
            .find(|file| file.display_path(db) == display_path)
            .map(|file| printable(&String::from_utf8_lossy(file.bytes(db))))
    }
}

/// Replaces control characters (other than newline, tab and carriage return) with `?`,
/// one per byte so diagnostic offsets still point at the same places.
pub fn printable(text: &str) -> String {
    text.chars()
        .flat_map(|character| {
            let keep = !character.is_control() || matches!(character, '\n' | '\t' | '\r');
            if keep { vec![character] } else { vec!['?'; character.len_utf8()] }
        })
        .collect()
}
