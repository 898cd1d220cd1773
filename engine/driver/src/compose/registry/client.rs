//! The connection to one repository of an OCI registry: the reference, the user's
//! existing container credentials (the Docker configuration file and its credential
//! helpers; anonymous when they name none), plain HTTP only for a loopback registry or
//! when asked, and the few registry operations a push or a pull needs, spoken over HTTP
//! here (`transport`) so that nothing leads the client away: a redirect or a token realm
//! is followed only to HTTPS, or to plain HTTP on loopback when the registry itself is a
//! plain-HTTP loopback one; every response is read as a stream, its declared length
//! checked before a byte is read and its digest while it is read, so a registry cannot
//! make it hold more than a bundle's own bytes. Credentials stay in memory: nothing here
//! writes a file, and no message carries one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use oci_client::Reference;

use super::artifact::{Blob, Descriptor, MANIFEST_MEDIA_TYPE, MAX_DOCUMENT, sha256_digest};
use super::transport::{Credentials, Transport};
use crate::error::HostError;

/// How long a whole push or pull may take when nothing else is said.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(300);

/// How a registry is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// Plain HTTP for a registry that is not on a loopback address.
    pub plain_http: bool,
    /// How long the whole push or pull may take, beside each read's own timeout.
    pub deadline: Duration,
}

impl Default for Access {
    fn default() -> Self {
        Access { plain_http: false, deadline: DEFAULT_DEADLINE }
    }
}

/// What crossed the wire: blobs and their bytes, each way (manifests counted as blobs).
#[derive(Debug, Default)]
pub struct Counters {
    pub sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub received: AtomicU64,
    pub bytes_received: AtomicU64,
}

impl Counters {
    fn count(count: &AtomicU64, bytes_counter: &AtomicU64, bytes: usize) {
        count.fetch_add(1, Ordering::Relaxed);
        bytes_counter.fetch_add(bytes as u64, Ordering::Relaxed);
    }
}

/// Whether a registry host (`host[:port]`, `[v6]:port`) is a loopback address.
pub fn is_loopback(registry: &str) -> bool {
    let host = match registry.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or_default(),
        None => registry.rsplit_once(':').map_or(registry, |(host, _)| host),
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `registry` is spoken to over plain HTTP: a loopback registry, or any when asked.
pub fn uses_plain_http(registry: &str, access: Access) -> bool {
    access.plain_http || is_loopback(registry)
}

/// Parses `registry/repository:tag` or `…@sha256:…`.
pub fn parse_reference(text: &str) -> Result<Reference, HostError> {
    text.parse::<Reference>().map_err(|error| {
        HostError::invalid(
            text,
            format!("`{}` is not a registry reference (`registry/repository:tag`): {error}", shown(text)),
        )
    })
}

pub(super) fn shown(text: &str) -> String {
    acompose_engine::diagnostic::sanitize(text)
}

/// Where Docker keeps its configuration: `$DOCKER_CONFIG`, else `~/.docker`.
fn docker_config() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG").filter(|value| !value.is_empty()) {
        Some(folder) => Some(PathBuf::from(folder).join("config.json")),
        None => std::env::home_dir().map(|home| home.join(".docker/config.json")),
    }
}

/// The user's credentials for `registry` as Docker finds them; none when the
/// configuration names none.
fn credentials(registry: &str) -> Result<Option<Credentials>, HostError> {
    use docker_credential::{CredentialRetrievalError as Failure, DockerCredential};
    let Some(config) = docker_config().filter(|config| config.is_file()) else {
        return Ok(None);
    };
    let refused = |message: String| HostError::environment(&config, message);
    let found = match docker_credential::get_credential(registry) {
        Ok(found) => found,
        Err(Failure::NoCredentialConfigured) => return Ok(None),
        // Docker's own helpers answer so for a registry they hold nothing for.
        Err(Failure::HelperFailure { stdout, .. }) if stdout.contains("credentials not found") => {
            return Ok(None);
        }
        Err(Failure::HelperFailure { helper, .. }) => {
            return Err(refused(format!(
                "the credential helper `{}` failed for `{}`",
                shown(&helper),
                shown(registry)
            )));
        }
        Err(Failure::HelperCommunicationError) => {
            return Err(refused(format!(
                "cannot run the credential helper `{}` names for `{}`",
                config.display(),
                shown(registry)
            )));
        }
        Err(Failure::ConfigNotFound | Failure::ConfigReadError) => {
            return Err(refused(format!("cannot read the Docker configuration `{}`", config.display())));
        }
        Err(_) => {
            return Err(refused(format!(
                "the credentials `{}` holds for `{}` cannot be decoded",
                config.display(),
                shown(registry)
            )));
        }
    };
    match found {
        DockerCredential::UsernamePassword(username, password) => Ok(Some(Credentials { username, password })),
        DockerCredential::IdentityToken(_) => Err(refused(format!(
            "`{}` holds an identity token for `{}`, which acompose cannot use; log in with a username and password",
            config.display(),
            shown(registry)
        ))),
    }
}

/// What a registry operation wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Pull,
    Push,
}

/// One repository of a registry, reached from a runtime of this thread.
pub struct Connection {
    transport: Transport,
    reference: Reference,
    /// The reference as given, for messages.
    label: String,
    pub counters: Counters,
}

impl Connection {
    /// Reads the credentials and makes the client; nothing is sent yet.
    pub fn open(reference: Reference, label: &str, access: Access) -> Result<Connection, HostError> {
        // The process's TLS provider; another one installed first serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = reference.resolve_registry().to_owned();
        let plain = uses_plain_http(&registry, access);
        let credentials = credentials(reference.registry())?;
        let transport = Transport::new(&registry, reference.repository(), plain, credentials)
            .map_err(|message| HostError::environment(label, message))?;
        Ok(Connection { transport, reference, label: label.to_owned(), counters: Counters::default() })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    fn unreachable(&self, what: &str, error: &str) -> HostError {
        HostError::environment(&self.label, format!("cannot {what} `{}`: {error}", shown(&self.label)))
    }

    pub fn refused(&self, message: String) -> HostError {
        HostError::invalid(&self.label, format!("`{}` is refused: {message}; nothing was kept", shown(&self.label)))
    }

    /// Signs in for the operations to come (a bearer token where the registry asks for one).
    pub async fn authenticate(&mut self, operations: &[Operation]) -> Result<(), HostError> {
        let scope = if operations.contains(&Operation::Push) { "pull,push" } else { "pull" };
        self.transport.authenticate(scope).await.map_err(|error| self.unreachable("sign in to", &error))
    }

    /// The tag or digest the reference names.
    fn manifest_name(&self) -> String {
        self.reference
            .digest()
            .map(str::to_owned)
            .or_else(|| self.reference.tag().map(str::to_owned))
            .unwrap_or_else(|| "latest".to_owned())
    }

    pub async fn has_blob(&self, digest: &str) -> Result<bool, HostError> {
        self.transport.has_blob(digest).await.map_err(|error| self.unreachable("ask", &error))
    }

    pub async fn push_blob(&self, blob: &Blob) -> Result<(), HostError> {
        self.transport
            .push_blob(&blob.digest, blob.bytes.clone())
            .await
            .map_err(|error| self.unreachable("upload a blob to", &error))?;
        Counters::count(&self.counters.sent, &self.counters.bytes_sent, blob.bytes.len());
        Ok(())
    }

    /// Puts the manifest under the reference's tag (or digest).
    pub async fn push_manifest(&self, bytes: &[u8]) -> Result<(), HostError> {
        self.push_manifest_as(&self.manifest_name(), MANIFEST_MEDIA_TYPE, bytes).await
    }

    /// Puts a manifest of `media_type` under `name` (a tag or a digest) in the repository.
    pub async fn push_manifest_as(&self, name: &str, media_type: &str, bytes: &[u8]) -> Result<(), HostError> {
        self.transport
            .push_manifest(name, media_type, bytes.to_vec())
            .await
            .map_err(|error| self.unreachable("put a manifest to", &error))?;
        Counters::count(&self.counters.sent, &self.counters.bytes_sent, bytes.len());
        Ok(())
    }

    /// The manifest's bytes and digest, checked against the reference's digest when it
    /// names one.
    pub async fn pull_manifest(&self) -> Result<(Vec<u8>, String), HostError> {
        let pinned = self.reference.digest().map(str::to_owned);
        let bytes = self.pull_manifest_named(&self.manifest_name(), MANIFEST_MEDIA_TYPE).await?;
        let Some(bytes) = bytes else {
            return Err(self.unreachable("fetch the manifest of", "the registry has no such manifest"));
        };
        let digest = sha256_digest(&bytes);
        if pinned.is_some_and(|pinned| pinned != digest) {
            return Err(self.refused("the manifest does not match the digest the reference names".to_owned()));
        }
        Ok((bytes, digest))
    }

    /// A manifest by tag or digest, at most [`MAX_DOCUMENT`] bytes; `None` when the
    /// registry has none of that name.
    pub async fn pull_manifest_named(&self, name: &str, media_type: &str) -> Result<Option<Vec<u8>>, HostError> {
        let bytes =
            self.transport.pull_manifest(name, media_type, MAX_DOCUMENT).await.map_err(|failure| match failure {
                super::transport::Failure::Refused(message) => self.refused(format!("the manifest {message}")),
                super::transport::Failure::Unreachable(message) => self.unreachable("fetch the manifest of", &message),
            })?;
        if let Some(bytes) = &bytes {
            Counters::count(&self.counters.received, &self.counters.bytes_received, bytes.len());
        }
        Ok(bytes)
    }

    /// The blobs of the bundle artifact the reference's tag names now; none when it names
    /// nothing, or nothing this build reads (it is then overwritten, and each blob asked for).
    pub async fn tagged_blobs(&self) -> std::collections::BTreeSet<String> {
        if self.reference.digest().is_some() {
            return std::collections::BTreeSet::new();
        }
        let Ok(Some(bytes)) = self.pull_manifest_named(&self.manifest_name(), MANIFEST_MEDIA_TYPE).await else {
            return std::collections::BTreeSet::new();
        };
        super::artifact::read_manifest(&bytes).map(|remote| remote.digests()).unwrap_or_default()
    }

    /// A blob's bytes: no more than its descriptor's size, and of its digest.
    pub async fn pull_blob(&self, descriptor: &Descriptor) -> Result<Vec<u8>, HostError> {
        let bytes =
            self.transport.pull_blob(&descriptor.digest, descriptor.size).await.map_err(|failure| match failure {
                super::transport::Failure::Refused(message) => {
                    self.refused(format!("the blob `{}` {message}", descriptor.digest))
                }
                super::transport::Failure::Unreachable(message) => self.unreachable("fetch a blob of", &message),
            })?;
        Counters::count(&self.counters.received, &self.counters.bytes_received, bytes.len());
        Ok(bytes)
    }

    /// The manifests that name `digest` as their subject, as the registry's referrers API
    /// lists them (`None` where the registry has no such API).
    pub async fn referrers(&self, digest: &str) -> Result<Option<Vec<u8>>, HostError> {
        self.transport.referrers(digest, MAX_DOCUMENT).await.map_err(|failure| match failure {
            super::transport::Failure::Refused(message) => self.refused(format!("the referrers list {message}")),
            super::transport::Failure::Unreachable(message) => self.unreachable("list the referrers of", &message),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_is_for_loopback_registries_or_when_asked() {
        for loopback in ["127.0.0.1:5000", "localhost:5000", "localhost", "[::1]:5000", "127.8.9.1"] {
            assert!(uses_plain_http(loopback, Access::default()), "{loopback}");
        }
        let asked = Access { plain_http: true, ..Access::default() };
        for remote in ["registry.example", "registry.example:5000", "10.0.0.1:5000", "localhost.example"] {
            assert!(!uses_plain_http(remote, Access::default()), "{remote}");
            assert!(uses_plain_http(remote, asked), "{remote}");
        }
    }
}
