//! The OCI artifact a bundle becomes in a registry (`docs/distribution.md`): one blob per
//! store entry (a skill tree as a tar archive, a slice as JSON), one blob per file of the
//! bundle's own, a config blob naming which provider folder links which slice, and an
//! image manifest with the artifact type and annotations (role, bundle id, format
//! versions). Builds and reads bytes only: the registry module moves them, and the bundle
//! they make is verified as `verify` does before anything is written.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read as _;

use acompose_engine::OutputFile;
use acompose_engine::bundle::{MANIFEST_FORMAT, Manifest, is_portable_path};
use acompose_engine::store::{
    SKILLS_PREFIX, StoreTree, TreeBody, is_slice_name, is_tree_key, layout, names_slice, names_tree,
};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// The artifact type of a bundle (the manifest's `artifactType`).
pub const ARTIFACT_TYPE: &str = "application/vnd.acompose.bundle.v1";
/// The config blob: the bundle id, its role and its provider links.
pub const CONFIG_MEDIA_TYPE: &str = "application/vnd.acompose.bundle.config.v1+json";
/// A skill tree of the store: an uncompressed tar archive of its files.
pub const TREE_MEDIA_TYPE: &str = "application/vnd.acompose.store.tree.v1.tar";
/// A slice of the store: its (skill, tree key) links as JSON.
pub const SLICE_MEDIA_TYPE: &str = "application/vnd.acompose.store.slice.v1+json";
/// One file of the bundle's own (`manifest.json`, `trace.json`, instructions, delivery).
pub const FILE_MEDIA_TYPE: &str = "application/vnd.acompose.bundle.file.v1";
/// The OCI image manifest.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";

/// Manifest annotations.
pub const ROLE_ANNOTATION: &str = "dev.acompose.role";
pub const BUNDLE_ANNOTATION: &str = "dev.acompose.bundle.id";
pub const BUNDLE_FORMAT_ANNOTATION: &str = "dev.acompose.bundle.format";
pub const BUNDLE_FORMAT_VERSION_ANNOTATION: &str = "dev.acompose.bundle.format-version";
pub const TRACE_FORMAT_ANNOTATION: &str = "dev.acompose.trace.format";
pub const ARTIFACT_FORMAT_VERSION_ANNOTATION: &str = "dev.acompose.artifact.format-version";
/// Layer annotations: a store entry's name, and a bundle file's path (the title ORAS
/// clients write a layer to).
pub const ENTRY_ANNOTATION: &str = "dev.acompose.store.entry";
pub const TITLE_ANNOTATION: &str = "org.opencontainers.image.title";

const CONFIG_FORMAT: &str = "acompose.bundle-config";
const SLICE_FORMAT: &str = "acompose.store-slice";
const ARTIFACT_FORMAT_VERSION: u32 = 1;

/// The largest manifest or config blob read.
pub const MAX_DOCUMENT: u64 = 4 << 20;
/// The most layers an artifact may have, and the most bytes its blobs may hold (as an
/// exported archive).
pub const MAX_LAYERS: usize = 100_000;
pub const MAX_BYTES: u64 = 1 << 30;

/// `sha256:<hex>` of bytes: the digest a registry names a blob by.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{:x}", sha2::Sha256::digest(bytes))
}

fn is_sha256_digest(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')))
}

/// A content descriptor of the image manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Descriptor {
    pub media_type: String,
    pub digest: String,
    pub size: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// The OCI image manifest of a bundle artifact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ImageManifest {
    schema_version: u32,
    #[serde(default)]
    media_type: Option<String>,
    #[serde(default)]
    artifact_type: Option<String>,
    config: Descriptor,
    layers: Vec<Descriptor>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

/// Which slice one provider folder of the bundle links.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Link {
    pub source: String,
    pub slice: String,
}

/// The config blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ArtifactConfig {
    pub format: String,
    pub format_version: u32,
    pub bundle: String,
    pub role: String,
    pub links: Vec<Link>,
    /// The bundle's own files of no bytes (a registry takes no blob of no bytes from
    /// every client), by path.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub empty: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SliceSkill {
    name: String,
    tree: String,
}

/// A slice blob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SliceDocument {
    format: String,
    skills: Vec<SliceSkill>,
}

/// One blob to push: its bytes, digest and the descriptor annotations it carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    pub media_type: &'static str,
    pub bytes: Vec<u8>,
    pub digest: String,
    pub annotations: BTreeMap<String, String>,
}

impl Blob {
    fn new(media_type: &'static str, bytes: Vec<u8>, annotation: Option<(&str, &str)>) -> Blob {
        let annotations =
            annotation.into_iter().map(|(key, value)| (key.to_owned(), value.to_owned())).collect::<BTreeMap<_, _>>();
        Blob { media_type, digest: sha256_digest(&bytes), bytes, annotations }
    }

    pub fn descriptor(&self) -> Descriptor {
        Descriptor {
            media_type: self.media_type.to_owned(),
            digest: self.digest.clone(),
            size: self.bytes.len() as u64,
            annotations: self.annotations.clone(),
        }
    }

    /// What a report calls it: the store entry or the bundle file it carries.
    pub fn subject(&self) -> &str {
        self.annotations
            .get(ENTRY_ANNOTATION)
            .or_else(|| self.annotations.get(TITLE_ANNOTATION))
            .map_or("config", String::as_str)
    }
}

/// A bundle as an artifact: its blobs (the config first), the manifest's bytes and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub id: String,
    pub role: String,
    /// The config blob first, then the layers in manifest order.
    pub blobs: Vec<Blob>,
    pub manifest: Vec<u8>,
    pub digest: String,
}

fn tar_header(size: u64) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header.set_entry_type(tar::EntryType::Regular);
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(0);
    header.set_uid(0);
    header.set_gid(0);
    header
}

/// A skill tree as a tar archive: its files sorted by path, fixed modes, owners and
/// times, so one tree always gives one blob.
fn tree_archive(tree: &StoreTree<'_>) -> Result<Vec<u8>, String> {
    let failed = |error: std::io::Error| format!("cannot archive the skill tree `{}`: {error}", tree.key);
    let mut builder = tar::Builder::new(Vec::new());
    for file in &tree.files {
        let TreeBody::Bytes(bytes) = file.body else {
            return Err(format!("the skill tree `{}` is not held in memory", tree.key));
        };
        let mut header = tar_header(bytes.len() as u64);
        builder.append_data(&mut header, file.path, bytes).map_err(failed)?;
    }
    builder.into_inner().map_err(failed)
}

fn to_json(value: &impl Serialize) -> Vec<u8> {
    // Plain structs of strings and numbers always serialize.
    serde_json::to_vec(value).unwrap_or_default()
}

/// The artifact of a verified bundle: `files` are every file of it, skills included.
pub fn artifact(id: &str, manifest: &Manifest, files: &BTreeMap<String, Vec<u8>>) -> Result<Artifact, String> {
    let outputs: Vec<OutputFile> =
        files.iter().map(|(path, bytes)| OutputFile { path: path.clone(), bytes: bytes.clone().into() }).collect();
    let layout = layout(&outputs, &[]);
    let mut layers = Vec::new();
    let mut empty = Vec::new();
    for file in &layout.own {
        if file.bytes.is_empty() {
            empty.push(file.path.clone());
            continue;
        }
        layers.push(Blob::new(FILE_MEDIA_TYPE, file.bytes.to_vec(), Some((TITLE_ANNOTATION, &file.path))));
    }
    let mut slices = BTreeSet::new();
    for slice in &layout.slices {
        let name = slice.entry_name();
        if slices.insert(name.clone()) {
            let skills = slice.skills.iter().map(|(name, tree)| SliceSkill { name: name.clone(), tree: tree.clone() });
            let document = SliceDocument { format: SLICE_FORMAT.to_owned(), skills: skills.collect() };
            layers.push(Blob::new(SLICE_MEDIA_TYPE, to_json(&document), Some((ENTRY_ANNOTATION, &name))));
        }
    }
    for tree in &layout.trees {
        layers.push(Blob::new(TREE_MEDIA_TYPE, tree_archive(tree)?, Some((ENTRY_ANNOTATION, &tree.key))));
    }
    let links =
        layout.slices.iter().map(|slice| Link { source: slice.source.clone(), slice: slice.entry_name() }).collect();
    let role = manifest.role.slug.clone();
    let config = ArtifactConfig {
        format: CONFIG_FORMAT.to_owned(),
        format_version: ARTIFACT_FORMAT_VERSION,
        bundle: id.to_owned(),
        role: role.clone(),
        links,
        empty,
    };
    let config = Blob::new(CONFIG_MEDIA_TYPE, to_json(&config), None);
    let annotations: BTreeMap<String, String> = [
        (ROLE_ANNOTATION, role.clone()),
        (BUNDLE_ANNOTATION, id.to_owned()),
        (BUNDLE_FORMAT_ANNOTATION, MANIFEST_FORMAT.to_owned()),
        (BUNDLE_FORMAT_VERSION_ANNOTATION, manifest.format_version.to_string()),
        (TRACE_FORMAT_ANNOTATION, acompose_engine::trace::FORMAT.to_owned()),
        (ARTIFACT_FORMAT_VERSION_ANNOTATION, ARTIFACT_FORMAT_VERSION.to_string()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let image = ImageManifest {
        schema_version: 2,
        media_type: Some(MANIFEST_MEDIA_TYPE.to_owned()),
        artifact_type: Some(ARTIFACT_TYPE.to_owned()),
        config: config.descriptor(),
        layers: layers.iter().map(Blob::descriptor).collect(),
        annotations,
    };
    let manifest = to_json(&image);
    let digest = sha256_digest(&manifest);
    let mut blobs = vec![config];
    blobs.extend(layers);
    Ok(Artifact { id: id.to_owned(), role, blobs, manifest, digest })
}

/// An artifact read from a registry's manifest, every name and digest checked for shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Remote {
    pub id: String,
    pub role: String,
    pub config: Descriptor,
    /// The bundle's own files: (path, blob).
    pub files: Vec<(String, Descriptor)>,
    /// Slices and trees: (entry name, blob).
    pub slices: Vec<(String, Descriptor)>,
    pub trees: Vec<(String, Descriptor)>,
}

impl Remote {
    /// The digest of every blob the manifest names, the config's included.
    pub fn digests(&self) -> BTreeSet<String> {
        let layers = self.files.iter().chain(&self.slices).chain(&self.trees).map(|(_, layer)| layer);
        std::iter::once(&self.config).chain(layers).map(|descriptor| descriptor.digest.clone()).collect()
    }
}

fn shown(text: &str) -> String {
    acompose_engine::diagnostic::sanitize(text)
}

/// Reads an image manifest as a bundle artifact: of the artifact type, every layer of a
/// known kind with its name, every digest a sha256 and the sizes within the limits.
pub fn read_manifest(bytes: &[u8]) -> Result<Remote, String> {
    let image: ImageManifest =
        serde_json::from_slice(bytes).map_err(|error| format!("the manifest is not an OCI image manifest: {error}"))?;
    if image.schema_version != 2 || image.media_type.as_deref().is_some_and(|kind| kind != MANIFEST_MEDIA_TYPE) {
        return Err("the manifest is not an OCI image manifest of schema 2".to_owned());
    }
    if image.artifact_type.as_deref() != Some(ARTIFACT_TYPE) || image.config.media_type != CONFIG_MEDIA_TYPE {
        return Err(format!("the artifact is not an acompose bundle (its type is not `{ARTIFACT_TYPE}`)"));
    }
    let annotation = |key: &str| image.annotations.get(key).cloned().unwrap_or_default();
    let id = annotation(BUNDLE_ANNOTATION);
    if !(id.len() == 16 && id.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))) {
        return Err(format!("the manifest names no bundle id (annotation `{BUNDLE_ANNOTATION}`)"));
    }
    if image.layers.len() > MAX_LAYERS {
        return Err(format!("the artifact has more than {MAX_LAYERS} layers"));
    }
    let mut remote = Remote {
        id,
        role: annotation(ROLE_ANNOTATION),
        config: image.config.clone(),
        files: Vec::new(),
        slices: Vec::new(),
        trees: Vec::new(),
    };
    let mut total = 0u64;
    for descriptor in std::iter::once(&image.config).chain(&image.layers) {
        if !is_sha256_digest(&descriptor.digest) {
            return Err(format!(
                "the manifest names a blob by `{}`, not by a sha256 digest",
                shown(&descriptor.digest)
            ));
        }
        total = total.saturating_add(descriptor.size);
    }
    if image.config.size > MAX_DOCUMENT || total > MAX_BYTES {
        return Err("the artifact is larger than a bundle may be".to_owned());
    }
    for layer in image.layers {
        sort_layer(&mut remote, layer)?;
    }
    Ok(remote)
}

/// Files one layer under its kind, checking the name it carries.
fn sort_layer(remote: &mut Remote, layer: Descriptor) -> Result<(), String> {
    let entry = layer.annotations.get(ENTRY_ANNOTATION).cloned().unwrap_or_default();
    let title = layer.annotations.get(TITLE_ANNOTATION).cloned().unwrap_or_default();
    match layer.media_type.as_str() {
        FILE_MEDIA_TYPE if is_portable_path(&title) && !title.starts_with(SKILLS_PREFIX) => {
            remote.files.push((title, layer));
        }
        SLICE_MEDIA_TYPE if is_slice_name(&entry) && layer.size <= MAX_DOCUMENT => remote.slices.push((entry, layer)),
        TREE_MEDIA_TYPE if is_tree_key(&entry) => remote.trees.push((entry, layer)),
        FILE_MEDIA_TYPE | SLICE_MEDIA_TYPE | TREE_MEDIA_TYPE => {
            let name = if entry.is_empty() { title } else { entry };
            return Err(format!("the manifest names a layer `{}` that is no bundle file or store entry", shown(&name)));
        }
        other => return Err(format!("the manifest has a layer of unknown media type `{}`", shown(other))),
    }
    Ok(())
}

/// Reads the config blob of the artifact `remote`: its bundle id is the manifest's, and
/// every link names a provider folder and a slice the artifact carries.
pub fn read_config(bytes: &[u8], remote: &Remote) -> Result<ArtifactConfig, String> {
    let config: ArtifactConfig =
        serde_json::from_slice(bytes).map_err(|error| format!("the config blob is not a bundle config: {error}"))?;
    if config.format != CONFIG_FORMAT || config.format_version != ARTIFACT_FORMAT_VERSION {
        return Err("the config blob is of an unknown format".to_owned());
    }
    if config.bundle != remote.id || config.role != remote.role {
        return Err("the config blob names another bundle than the manifest".to_owned());
    }
    let slices: BTreeSet<&str> = remote.slices.iter().map(|(name, _)| name.as_str()).collect();
    let mut sources = BTreeSet::new();
    for link in &config.links {
        let portable = is_portable_path(&link.source) && !link.source.contains('/');
        if !portable || !sources.insert(link.source.as_str()) || !slices.contains(link.slice.as_str()) {
            return Err(format!("the config blob links `{}` to no slice of the artifact", shown(&link.source)));
        }
    }
    let carried: BTreeSet<&str> = remote.files.iter().map(|(path, _)| path.as_str()).collect();
    for path in &config.empty {
        if !is_portable_path(path) || path.starts_with(SKILLS_PREFIX) || carried.contains(path.as_str()) {
            return Err(format!("the config blob names `{}` as an empty file of the bundle", shown(path)));
        }
    }
    Ok(config)
}

/// Reads a slice blob: (skill, tree key) links that hash to the slice's name.
pub fn read_slice(bytes: &[u8], name: &str) -> Result<Vec<(String, String)>, String> {
    let document: SliceDocument =
        serde_json::from_slice(bytes).map_err(|error| format!("the slice `{name}` is not a slice: {error}"))?;
    if document.format != SLICE_FORMAT {
        return Err(format!("the slice `{name}` is of an unknown format"));
    }
    let skills: Vec<(String, String)> = document.skills.into_iter().map(|skill| (skill.name, skill.tree)).collect();
    let shaped =
        skills.iter().all(|(skill, tree)| is_portable_path(skill) && !skill.contains('/') && is_tree_key(tree));
    if !shaped || !names_slice(name, &skills) {
        return Err(format!("the slice `{name}` does not hash to its name"));
    }
    Ok(skills)
}

/// Unpacks a tree blob: regular files at portable relative paths, bounded in count and
/// size, whose tree key is `key`.
pub fn read_tree(bytes: &[u8], key: &str) -> Result<Vec<(String, Vec<u8>)>, String> {
    let damaged = |what: &str| format!("the skill tree `{key}` {what}");
    let mut archive = tar::Archive::new(bytes);
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let entries = archive.entries().map_err(|_| damaged("is not a tar archive"))?;
    for entry in entries {
        let mut entry = entry.map_err(|_| damaged("is not a readable tar archive"))?;
        let path = entry.path().map_err(|_| damaged("holds an unreadable name"))?.to_string_lossy().into_owned();
        if entry.header().entry_type() != tar::EntryType::Regular || !is_portable_path(&path) {
            return Err(damaged(&format!("holds `{}`, which is no regular file at a portable path", shown(&path))));
        }
        if files.len() >= MAX_LAYERS {
            return Err(damaged("holds more files than a bundle may"));
        }
        let mut content = Vec::new();
        entry.read_to_end(&mut content).map_err(|_| damaged("is not a readable tar archive"))?;
        if files.insert(path, content).is_some() {
            return Err(damaged("holds a file twice"));
        }
    }
    let pairs: Vec<(&str, &[u8])> = files.iter().map(|(path, bytes)| (path.as_str(), bytes.as_slice())).collect();
    if files.is_empty() || !names_tree(key, &pairs) {
        return Err(damaged("does not hash to its name"));
    }
    Ok(files.into_iter().collect())
}

/// Every file of the bundle: its own files, and each provider folder's skills through the
/// slice it links and the trees that slice names.
pub fn assemble(
    config: &ArtifactConfig,
    own: BTreeMap<String, Vec<u8>>,
    slices: &BTreeMap<String, Vec<(String, String)>>,
    trees: &BTreeMap<String, Vec<(String, Vec<u8>)>>,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut files = own;
    for path in &config.empty {
        files.insert(path.clone(), Vec::new());
    }
    for link in &config.links {
        let skills = slices.get(&link.slice).ok_or_else(|| format!("the slice `{}` is missing", link.slice))?;
        for (skill, key) in skills {
            let tree =
                trees.get(key).ok_or_else(|| format!("the slice `{}` names a tree the artifact lacks", link.slice))?;
            for (path, bytes) in tree {
                files.insert(format!("{SKILLS_PREFIX}{}/{skill}/{path}", link.source), bytes.clone());
            }
        }
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use acompose_engine::store::{slice_key, tree_key};

    #[test]
    fn a_tree_blob_reads_back_to_its_files_and_refuses_other_bytes() {
        let files = [("SKILL.md", &b"---\nname: a\n---\n"[..]), ("references/notes.md", b"notes\n")];
        let key = tree_key(&files);
        let tree = StoreTree {
            key: key.clone(),
            files: files
                .iter()
                .map(|(path, bytes)| acompose_engine::store::TreeFile {
                    path,
                    length: bytes.len() as u64,
                    body: TreeBody::Bytes(bytes),
                })
                .collect(),
        };
        let archive = tree_archive(&tree).expect("archive");
        assert_eq!(archive, tree_archive(&tree).expect("archive"), "one tree, one blob");
        let read = read_tree(&archive, &key).expect("read");
        assert_eq!(read.len(), 2);
        assert_eq!(read[1], ("references/notes.md".to_owned(), b"notes\n".to_vec()));
        let other = tree_key(&[("SKILL.md", b"other")]);
        assert!(read_tree(&archive, &other).is_err(), "a tree that does not hash to its name is refused");
        assert!(read_tree(b"not a tar archive at all", &key).is_err());
    }

    #[test]
    fn a_slice_blob_must_hash_to_its_name() {
        let skills = vec![("review".to_owned(), tree_key(&[("SKILL.md", b"x")]))];
        let name = format!("slice-{}", slice_key(&skills));
        let skill = SliceSkill { name: skills[0].0.clone(), tree: skills[0].1.clone() };
        let bytes = to_json(&SliceDocument { format: SLICE_FORMAT.to_owned(), skills: vec![skill] });
        assert_eq!(read_slice(&bytes, &name).expect("read"), skills);
        let other = format!("slice-{}", "0".repeat(64));
        assert!(read_slice(&bytes, &other).is_err());
    }

    #[test]
    fn a_manifest_of_another_artifact_type_is_refused() {
        let manifest = br#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}"#;
        let refused = read_manifest(manifest).expect_err("not a bundle");
        assert!(refused.contains(ARTIFACT_TYPE), "{refused}");
    }
}
