//! The connection to one repository of an OCI registry: the reference, the user's
//! existing container credentials (the Docker configuration file and its credential
//! helpers; anonymous when they name none), plain HTTP only for a loopback registry or
//! when asked, and the few registry operations a push or a pull needs, each blob bounded
//! by its descriptor's size and checked against its digest. Credentials stay in memory:
//! nothing here writes a file, and no message carries one.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::manifest::OciDescriptor;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};

use super::artifact::{Blob, Descriptor, MANIFEST_MEDIA_TYPE, MAX_DOCUMENT, sha256_digest};
use crate::error::HostError;

/// How a registry is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// Plain HTTP for a registry that is not on a loopback address.
    pub plain_http: bool,
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

fn shown(text: &str) -> String {
    acompose_engine::diagnostic::sanitize(text)
}

/// An error and its causes, one line, escaped (a registry's words are not trusted).
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    shown(&text)
}

/// Where Docker keeps its configuration: `$DOCKER_CONFIG`, else `~/.docker`.
fn docker_config() -> Option<PathBuf> {
    match std::env::var_os("DOCKER_CONFIG").filter(|value| !value.is_empty()) {
        Some(folder) => Some(PathBuf::from(folder).join("config.json")),
        None => std::env::home_dir().map(|home| home.join(".docker/config.json")),
    }
}

/// The user's credentials for `registry` as Docker finds them; anonymous when the
/// configuration names none.
fn credentials(registry: &str) -> Result<RegistryAuth, HostError> {
    use docker_credential::{CredentialRetrievalError as Failure, DockerCredential};
    let Some(config) = docker_config().filter(|config| config.is_file()) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let refused = |message: String| HostError::environment(&config, message);
    let found = match docker_credential::get_credential(registry) {
        Ok(found) => found,
        Err(Failure::NoCredentialConfigured) => return Ok(RegistryAuth::Anonymous),
        // Docker's own helpers answer so for a registry they hold nothing for.
        Err(Failure::HelperFailure { stdout, .. }) if stdout.contains("credentials not found") => {
            return Ok(RegistryAuth::Anonymous);
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
        DockerCredential::UsernamePassword(username, password) => Ok(RegistryAuth::Basic(username, password)),
        DockerCredential::IdentityToken(_) => Err(refused(format!(
            "`{}` holds an identity token for `{}`, which acompose cannot use; log in with a username and password",
            config.display(),
            shown(registry)
        ))),
    }
}

/// One repository of a registry, reached from a runtime of this thread.
pub struct Connection {
    /// Signs in and reads manifests.
    client: Client,
    /// Moves blobs and puts the manifest: `client` itself, or for a registry that asks
    /// for no credentials a client that holds none (one that holds some asks the
    /// registry's `/v2/` again before every request it cannot find a token for).
    blobs: Client,
    protocol: ClientProtocol,
    reference: Reference,
    auth: RegistryAuth,
    /// The reference as given, for messages.
    label: String,
    pub counters: Counters,
}

fn new_client(protocol: &ClientProtocol) -> Client {
    Client::new(ClientConfig {
        protocol: protocol.clone(),
        use_monolithic_push: true,
        platform_resolver: None,
        connect_timeout: Some(Duration::from_secs(15)),
        read_timeout: Some(Duration::from_secs(120)),
        user_agent: concat!("acompose/", env!("CARGO_PKG_VERSION")),
        ..ClientConfig::default()
    })
}

impl Connection {
    /// Reads the credentials and makes the client; nothing is sent yet.
    pub fn open(reference: Reference, label: &str, access: Access) -> Result<Connection, HostError> {
        // The process's TLS provider; another one installed first serves as well.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let registry = reference.resolve_registry().to_owned();
        let protocol = if uses_plain_http(&registry, access) {
            ClientProtocol::HttpsExcept(vec![registry])
        } else {
            ClientProtocol::Https
        };
        let auth = credentials(reference.registry())?;
        let client = new_client(&protocol);
        Ok(Connection {
            blobs: client.clone(),
            client,
            protocol,
            reference,
            auth,
            label: label.to_owned(),
            counters: Counters::default(),
        })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    fn unreachable(&self, what: &str, error: &dyn std::error::Error) -> HostError {
        HostError::environment(&self.label, format!("cannot {what} `{}`: {}", shown(&self.label), describe(error)))
    }

    pub fn refused(&self, message: String) -> HostError {
        HostError::invalid(&self.label, format!("`{}` is refused: {message}; nothing was kept", shown(&self.label)))
    }

    /// Signs in for the operations to come (a bearer token where the registry asks for one).
    pub async fn authenticate(&mut self, operations: &[RegistryOperation]) -> Result<(), HostError> {
        let mut challenged = false;
        for operation in operations {
            let token = self
                .client
                .auth(&self.reference, &self.auth, *operation)
                .await
                .map_err(|error| self.unreachable("sign in to", &error))?;
            challenged |= token.is_some();
        }
        if !challenged && self.auth == RegistryAuth::Anonymous {
            self.blobs = new_client(&self.protocol);
        }
        Ok(())
    }

    pub async fn has_blob(&self, digest: &str) -> Result<bool, HostError> {
        self.blobs.blob_exists(&self.reference, digest).await.map_err(|error| self.unreachable("ask", &error))
    }

    pub async fn push_blob(&self, blob: &Blob) -> Result<(), HostError> {
        self.blobs
            .push_blob(&self.reference, blob.bytes.clone(), &blob.digest)
            .await
            .map_err(|error| self.unreachable("upload a blob to", &error))?;
        Counters::count(&self.counters.sent, &self.counters.bytes_sent, blob.bytes.len());
        Ok(())
    }

    /// Puts the manifest under the reference's tag (or digest).
    pub async fn push_manifest(&self, bytes: &[u8]) -> Result<(), HostError> {
        let content_type = http::HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
        self.blobs
            .push_manifest_raw(&self.reference, bytes.to_vec(), content_type)
            .await
            .map_err(|error| self.unreachable("put the manifest to", &error))?;
        Counters::count(&self.counters.sent, &self.counters.bytes_sent, bytes.len());
        Ok(())
    }

    /// The manifest's bytes and digest, checked against the reference's digest when it
    /// names one.
    pub async fn pull_manifest(&self) -> Result<(Vec<u8>, String), HostError> {
        let (bytes, _) =
            self.client.pull_manifest_raw(&self.reference, &self.auth, &[MANIFEST_MEDIA_TYPE]).await.map_err(
                |error| match error {
                    oci_client::errors::OciDistributionError::DigestError(_) => {
                        self.refused("the manifest does not match its digest".to_owned())
                    }
                    other => self.unreachable("fetch the manifest of", &other),
                },
            )?;
        Counters::count(&self.counters.received, &self.counters.bytes_received, bytes.len());
        if bytes.len() as u64 > MAX_DOCUMENT {
            return Err(self.refused("the manifest is larger than a bundle's may be".to_owned()));
        }
        let digest = sha256_digest(&bytes);
        if self.reference.digest().is_some_and(|pinned| pinned != digest) {
            return Err(self.refused("the manifest does not match the digest the reference names".to_owned()));
        }
        Ok((bytes.to_vec(), digest))
    }

    /// The blobs of the bundle artifact the reference's tag names now; none when it names
    /// nothing, or nothing this build reads (it is then overwritten, and each blob asked for).
    pub async fn tagged_blobs(&self) -> std::collections::BTreeSet<String> {
        if self.reference.digest().is_some() {
            return std::collections::BTreeSet::new();
        }
        let Ok((bytes, _)) = self.client.pull_manifest_raw(&self.reference, &self.auth, &[MANIFEST_MEDIA_TYPE]).await
        else {
            return std::collections::BTreeSet::new();
        };
        Counters::count(&self.counters.received, &self.counters.bytes_received, bytes.len());
        super::artifact::read_manifest(&bytes).map(|remote| remote.digests()).unwrap_or_default()
    }

    /// A blob's bytes: no more than its descriptor's size, and of its digest.
    pub async fn pull_blob(&self, descriptor: &Descriptor) -> Result<Vec<u8>, HostError> {
        let wanted = OciDescriptor {
            media_type: descriptor.media_type.clone(),
            digest: descriptor.digest.clone(),
            size: i64::try_from(descriptor.size).unwrap_or(i64::MAX),
            ..OciDescriptor::default()
        };
        let mut stream = self
            .blobs
            .pull_blob_stream(&self.reference, &wanted)
            .await
            .map_err(|error| self.unreachable("fetch a blob of", &error))?;
        let mut bytes = Vec::with_capacity(usize::try_from(descriptor.size.min(1 << 20)).unwrap_or(0));
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|error| {
                // The client checks the digest as the bytes arrive and stops the stream.
                self.refused(format!(
                    "the blob `{}` does not match its digest or was cut short ({})",
                    descriptor.digest,
                    describe(&error)
                ))
            })?;
            if (bytes.len() + chunk.len()) as u64 > descriptor.size {
                return Err(self.refused(format!("the blob `{}` is larger than its manifest says", descriptor.digest)));
            }
            bytes.extend_from_slice(&chunk);
        }
        Counters::count(&self.counters.received, &self.counters.bytes_received, bytes.len());
        if bytes.len() as u64 != descriptor.size || sha256_digest(&bytes) != descriptor.digest {
            return Err(self.refused(format!("the blob `{}` does not match its digest", descriptor.digest)));
        }
        Ok(bytes)
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
        for remote in ["registry.example", "registry.example:5000", "10.0.0.1:5000", "localhost.example"] {
            assert!(!uses_plain_http(remote, Access::default()), "{remote}");
            assert!(uses_plain_http(remote, Access { plain_http: true }), "{remote}");
        }
    }
}
