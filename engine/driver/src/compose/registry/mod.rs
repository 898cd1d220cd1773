//! Bundles through an OCI registry: `bundle push` uploads a verified bundle as an
//! artifact (`artifact`), sending only the blobs the repository lacks; `bundle pull`
//! downloads an artifact's manifest, takes every store entry the home's store already
//! holds from there and only the rest from the registry, checks every blob against its
//! digest and the whole bundle as `verify` does, and only then places it in the home
//! (staged, verified, renamed, as `bundle import` does). A refused pull keeps nothing.
//! The network is reached on a runtime of the calling thread (`client`).

pub mod artifact;
pub mod client;
pub mod signed;
pub mod transport;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use acompose_engine::OutputFile;
use acompose_engine::bundle::{Bundle, Summary, TraceFile, verify};
use futures_util::{StreamExt as _, TryStreamExt as _};

use self::artifact::{Artifact, Blob, Remote};
use self::client::{Access, Connection, Operation, parse_reference};
use crate::compose::bundle::{Materialized, read_bundle};
use crate::compose::placement::{Target, destination, place};
use crate::compose::store::Store;
use crate::error::HostError;
use crate::home::Home;

/// How many blobs are in flight at once.
const IN_FLIGHT: usize = 16;
/// The most bytes the blobs of one pulled bundle may declare together: a pull holds them
/// in memory until the bundle is verified and placed.
pub const MAX_PULL_BYTES: u64 = 96 << 20;

/// What crossed the wire in one push or pull (manifests count as blobs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Transfer {
    pub blobs_sent: u64,
    pub bytes_sent: u64,
    pub blobs_received: u64,
    pub bytes_received: u64,
}

impl Transfer {
    fn of(connection: &Connection) -> Transfer {
        let counters = &connection.counters;
        Transfer {
            blobs_sent: counters.sent.load(Ordering::Relaxed),
            bytes_sent: counters.bytes_sent.load(Ordering::Relaxed),
            blobs_received: counters.received.load(Ordering::Relaxed),
            bytes_received: counters.bytes_received.load(Ordering::Relaxed),
        }
    }
}

/// One blob a push uploaded: its digest and what it carries (a store entry's name, a
/// bundle file's path, or `config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Uploaded {
    pub digest: String,
    pub media_type: &'static str,
    pub subject: String,
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pushed {
    pub id: String,
    pub role: String,
    /// The manifest's digest: `<repository>@<digest>` names exactly this bundle.
    pub digest: String,
    /// Every blob of the artifact (the config included).
    pub blobs: usize,
    /// The blobs the repository lacked, in manifest order.
    pub uploaded: Vec<Uploaded>,
    /// With `--sign`: the digest of the signature artifact pushed beside the bundle.
    pub signature: Option<String>,
    pub transfer: Transfer,
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulled {
    pub id: String,
    pub role: String,
    pub digest: String,
    pub path: PathBuf,
    /// `new`, or `reused` when the home held the bundle already.
    pub outcome: Materialized,
    /// Store entries the home's store already held, so not downloaded.
    pub entries_reused: usize,
    /// Whether the registry held a signature of the bundle (kept in the home), and under
    /// the `bundle_signers` policy the principals of its allowed signer.
    pub signed: bool,
    pub signer: Option<String>,
    pub transfer: Transfer,
}

fn runtime(label: &str) -> Result<tokio::runtime::Runtime, HostError> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|error| {
        HostError::environment(
            label,
            format!("cannot start the network runtime: {}", crate::compose::load::error_kind(&error)),
        )
    })
}

/// Runs a push's or pull's network part within the access's overall deadline (beside
/// each read's own timeout), so a registry that answers a byte at a time cannot hold it.
async fn within<T>(
    access: Access,
    reference: &str,
    work: impl std::future::Future<Output = Result<T, HostError>>,
) -> Result<T, HostError> {
    match tokio::time::timeout(access.deadline, work).await {
        Ok(result) => result,
        Err(_) => Err(HostError::environment(
            reference,
            format!(
                "`{}` did not finish within {} s (the deadline, `--deadline`); nothing was kept",
                client::shown(reference),
                access.deadline.as_secs()
            ),
        )),
    }
}

/// `acompose bundle push BUNDLE REF`: verifies the bundle (through its store links) as
/// `bundle export` does, then uploads the blobs the repository lacks and puts the
/// manifest under `reference`.
pub fn push(bundle: &Path, reference: &str, access: Access) -> Result<Pushed, HostError> {
    push_signed(bundle, reference, access, None)
}

/// [`push`], and with `key` (an OpenSSH private key) the bundle's signature pushed
/// beside it (`signed`).
pub fn push_signed(bundle: &Path, reference: &str, access: Access, key: Option<&Path>) -> Result<Pushed, HostError> {
    let parsed = parse_reference(reference)?;
    let artifact = bundle_artifact(bundle)?;
    // A key that cannot sign stops the push before anything is sent.
    let signature = key.map(|key| crate::compose::signature::sign(bundle, key)).transpose()?;
    let mut connection = Connection::open(parsed, reference, access)?;
    let runtime = runtime(reference)?;
    let (uploaded, signed) = runtime.block_on(within(access, reference, async {
        connection.authenticate(&[Operation::Pull, Operation::Push]).await?;
        let uploaded = upload(&connection, &artifact).await?;
        let signed = match &signature {
            Some((armored, id)) => {
                Some(signed::push_signature(&connection, &artifact.digest, artifact.manifest.len(), armored, id).await?)
            }
            None => None,
        };
        Ok((uploaded, signed))
    }))?;
    Ok(Pushed {
        id: artifact.id,
        role: artifact.role,
        digest: artifact.digest,
        blobs: artifact.blobs.len(),
        uploaded,
        signature: signed,
        transfer: Transfer::of(&connection),
    })
}

/// Reads and verifies a bundle folder and makes its artifact.
fn bundle_artifact(bundle: &Path) -> Result<Artifact, HostError> {
    let failed = |problems: Vec<String>| {
        HostError::invalid(
            bundle,
            format!("bundle `{}` failed verification: {}", bundle.display(), problems.join("; ")),
        )
    };
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let files = read_bundle(bundle).map_err(failed)?;
    let verified = verify(&id, &files).map_err(|problems| {
        failed(problems.into_iter().map(|problem| format!("{}: {}", problem.file, problem.message)).collect())
    })?;
    artifact::artifact(&id, &verified.manifest, &files).map_err(|message| HostError::environment(bundle, message))
}

/// Uploads the blobs the repository lacks (a few at a time), then the manifest. The
/// blobs of the bundle the tag names now are in the repository (a registry keeps every
/// blob a manifest of it names), so only the others are asked for.
async fn upload(connection: &Connection, artifact: &Artifact) -> Result<Vec<Uploaded>, HostError> {
    let present = connection.tagged_blobs().await;
    let sent: Vec<Option<Uploaded>> = futures_util::stream::iter(&artifact.blobs)
        .filter(|blob| std::future::ready(!present.contains(&blob.digest)))
        .map(|blob| upload_blob(connection, blob))
        .buffered(IN_FLIGHT)
        .try_collect()
        .await?;
    connection.push_manifest(&artifact.manifest).await?;
    Ok(sent.into_iter().flatten().collect())
}

async fn upload_blob(connection: &Connection, blob: &Blob) -> Result<Option<Uploaded>, HostError> {
    if connection.has_blob(&blob.digest).await? {
        return Ok(None);
    }
    connection.push_blob(blob).await?;
    Ok(Some(Uploaded { digest: blob.digest.clone(), media_type: blob.media_type, subject: blob.subject().to_owned() }))
}

/// What a pull request names.
#[derive(Debug, Clone, Copy)]
pub struct PullRequest<'a> {
    pub reference: &'a str,
    pub home: &'a Home,
    pub access: Access,
}

/// `acompose bundle pull REF`: downloads the artifact's missing blobs, verifies them and
/// the bundle they make, and places the bundle in the home (its skills linked into the
/// home's store). A bundle the home holds already is verified and reused.
pub fn pull(request: &PullRequest<'_>) -> Result<Pulled, HostError> {
    let parsed = parse_reference(request.reference)?;
    crate::home::check_home(request.home)?;
    let mut connection = Connection::open(parsed, request.reference, request.access)?;
    let bundles = request.home.bundles();
    let store = Store::of_home(request.home);
    let runtime = runtime(request.reference)?;
    let (fetched, signature) = runtime.block_on(within(request.access, request.reference, async {
        connection.authenticate(&[Operation::Pull]).await?;
        let fetched = fetch(&connection, &bundles, &store).await?;
        let signature = signed::pull_signature(&connection, &fetched.digest).await?;
        Ok((fetched, signature))
    }))?;
    let transfer = Transfer::of(&connection);
    let path = bundles.join(&fetched.remote.id);
    // Under the `bundle_signers` policy the signature is checked before anything is kept.
    let manifest = match &fetched.files {
        Some(files) => files.get("manifest.json").cloned().unwrap_or_default(),
        None => crate::compose::parted::manifest_bytes(&path).unwrap_or_default(),
    };
    let id = fetched.remote.id.clone();
    let signer =
        crate::compose::signature::enforce(request.home, request.reference, &id, &manifest, signature.as_deref())?;
    let outcome = match fetched.files {
        None => Materialized::Reused,
        Some(files) => settle(request.home, &connection, &fetched.remote, files)?,
    };
    if let Some(armored) = &signature {
        crate::compose::signature::keep(request.home, &id, armored)?;
    }
    crate::compose::signature::record_pulled(request.home, &id)?;
    Ok(Pulled {
        id,
        role: fetched.remote.role,
        digest: fetched.digest,
        path,
        outcome,
        entries_reused: fetched.entries_reused,
        signed: signature.is_some(),
        signer,
        transfer,
    })
}

/// Verifies the bundle's files as `verify` does and places it in the home.
fn settle(
    home: &Home,
    connection: &Connection,
    remote: &Remote,
    mut files: BTreeMap<String, Vec<u8>>,
) -> Result<Materialized, HostError> {
    verify(&remote.id, &files).map_err(|problems| {
        let problems: Vec<String> =
            problems.into_iter().map(|problem| format!("{}: {}", problem.file, problem.message)).collect();
        connection.refused(format!("its blobs make no valid bundle: {}", problems.join("; ")))
    })?;
    // `verify` found the trace among the files.
    let trace = TraceFile::from_bytes(files.remove(TraceFile::PATH).unwrap_or_default().into());
    let bundle = Bundle {
        id: remote.id.clone(),
        files: files.into_iter().map(|(path, bytes)| OutputFile { path, bytes: bytes.into() }).collect(),
        sourced: Vec::new(),
        trace,
        summary: Summary::default(),
    };
    let to = destination(Some(home), &home.bundles(), &Target::Store(None))?;
    Ok(place(&to, &bundle)?.outcome)
}

/// What a fetch brought: the artifact, and the bundle's files (`None` when the home holds
/// the bundle already and it verifies).
struct Fetched {
    remote: Remote,
    digest: String,
    files: Option<BTreeMap<String, Vec<u8>>>,
    entries_reused: usize,
}

/// Reads the manifest and the config, then the blobs the home lacks.
async fn fetch(connection: &Connection, bundles: &Path, store: &Store) -> Result<Fetched, HostError> {
    let (manifest, digest) = connection.pull_manifest().await?;
    let remote = artifact::read_manifest(&manifest).map_err(|message| connection.refused(message))?;
    // Every blob is held until the bundle is placed: what they declare together is
    // bounded before the first is asked for.
    let declared = std::iter::once(&remote.config)
        .chain(remote.files.iter().chain(&remote.slices).chain(&remote.trees).map(|(_, descriptor)| descriptor))
        .fold(0_u64, |total, descriptor| total.saturating_add(descriptor.size));
    if declared > MAX_PULL_BYTES {
        return Err(connection
            .refused(format!("its blobs declare {declared} bytes, more than a pull holds ({MAX_PULL_BYTES})")));
    }
    let present = bundles.join(&remote.id);
    if present.exists() {
        crate::compose::bundle::verify_directory(&present).map_err(|problems| {
            HostError::environment(
                &present,
                format!(
                    "bundle `{}` exists but is damaged ({}); remove it to pull it again",
                    present.display(),
                    problems.join("; ")
                ),
            )
        })?;
        return Ok(Fetched { remote, digest, files: None, entries_reused: 0 });
    }
    let config_bytes = connection.pull_blob(&remote.config).await?;
    let config = artifact::read_config(&config_bytes, &remote).map_err(|message| connection.refused(message))?;
    let own = download(connection, &remote.files).await?;
    let (slices, reused_slices) = entries(
        connection,
        store,
        &remote.slices,
        |name, bytes| artifact::read_slice(bytes, name),
        |name| store.slice_links(name),
    )
    .await?;
    let (trees, reused_trees) = entries(
        connection,
        store,
        &remote.trees,
        |key, bytes| artifact::read_tree(bytes, key),
        |key| store.read_tree_entry(key),
    )
    .await?;
    let files = artifact::assemble(&config, own, &slices, &trees).map_err(|message| connection.refused(message))?;
    Ok(Fetched { remote, digest, files: Some(files), entries_reused: reused_slices + reused_trees })
}

/// Downloads blobs by name, a few at a time.
async fn download(
    connection: &Connection,
    blobs: &[(String, artifact::Descriptor)],
) -> Result<BTreeMap<String, Vec<u8>>, HostError> {
    futures_util::stream::iter(blobs)
        .map(|(name, descriptor)| async move { Ok((name.clone(), connection.pull_blob(descriptor).await?)) })
        .buffered(IN_FLIGHT)
        .try_collect()
        .await
}

/// Store entries by name: each read from the home's store when it holds it whole (its
/// contents hash to its name), else downloaded and read from its blob. Returns the
/// entries and how many came from the store.
async fn entries<T>(
    connection: &Connection,
    store: &Store,
    blobs: &[(String, artifact::Descriptor)],
    read_blob: impl Fn(&str, &[u8]) -> Result<T, String>,
    read_store: impl Fn(&str) -> Result<T, String>,
) -> Result<(BTreeMap<String, T>, usize), HostError> {
    let mut found = BTreeMap::new();
    let mut missing = Vec::new();
    for (name, descriptor) in blobs {
        match store.contains(name).then(|| read_store(name)) {
            Some(Ok(entry)) => {
                found.insert(name.clone(), entry);
            }
            _ => missing.push((name.clone(), descriptor.clone())),
        }
    }
    let reused = found.len();
    for (name, bytes) in download(connection, &missing).await? {
        let entry = read_blob(&name, &bytes).map_err(|message| connection.refused(message))?;
        found.insert(name, entry);
    }
    Ok((found, reused))
}
