//! A bundle's signature in a registry: an OCI artifact of its own whose `subject` is the
//! bundle's manifest (so a registry with the referrers API lists it under the bundle),
//! also tagged `sha256-<hex of the bundle manifest's digest>.sig`, the fallback any
//! registry serves (Debian's `docker-registry` has no referrers API). One layer: the
//! armored SSH signature. Pull looks in the referrers list first, then at the tag.

use serde_json::json;

use super::artifact::{MANIFEST_MEDIA_TYPE, sha256_digest};
use super::client::Connection;
use crate::error::HostError;

/// The artifact type of a bundle signature.
pub const SIGNATURE_ARTIFACT_TYPE: &str = "application/vnd.acompose.bundle.signature.v1";
/// The media type of its one layer: an armored SSHSIG.
pub const SIGNATURE_MEDIA_TYPE: &str = "application/vnd.acompose.bundle.signature.v1.sshsig";
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// The largest signature blob read.
const MAX_SIGNATURE: u64 = 64 << 10;

/// The fallback tag of the signature of the manifest `digest` (`sha256:…`).
pub fn signature_tag(digest: &str) -> String {
    format!("{}.sig", digest.replace(':', "-"))
}

/// The signature artifact's manifest for the bundle manifest `subject` (`digest`, `size`).
fn manifest(subject: &str, subject_size: usize, signature: &[u8], id: &str) -> Vec<u8> {
    let document = json!({
        "schemaVersion": 2,
        "mediaType": MANIFEST_MEDIA_TYPE,
        "artifactType": SIGNATURE_ARTIFACT_TYPE,
        "config": { "mediaType": EMPTY_MEDIA_TYPE, "digest": sha256_digest(b"{}"), "size": 2 },
        "layers": [{ "mediaType": SIGNATURE_MEDIA_TYPE, "digest": sha256_digest(signature), "size": signature.len() }],
        "subject": { "mediaType": MANIFEST_MEDIA_TYPE, "digest": subject, "size": subject_size },
        "annotations": { super::artifact::BUNDLE_ANNOTATION: id },
    });
    serde_json::to_vec(&document).unwrap_or_default()
}

/// Uploads the signature of the bundle whose manifest is `subject` (`subject_size`
/// bytes): its blobs, its manifest by digest (for the referrers API) and under the
/// fallback tag.
pub async fn push_signature(
    connection: &Connection,
    subject: &str,
    subject_size: usize,
    armored: &str,
    id: &str,
) -> Result<String, HostError> {
    for (media_type, bytes) in [(SIGNATURE_MEDIA_TYPE, armored.as_bytes()), (EMPTY_MEDIA_TYPE, b"{}".as_slice())] {
        let blob = super::artifact::Blob {
            media_type: if media_type == SIGNATURE_MEDIA_TYPE { SIGNATURE_MEDIA_TYPE } else { EMPTY_MEDIA_TYPE },
            bytes: bytes.to_vec(),
            digest: sha256_digest(bytes),
            annotations: Default::default(),
        };
        if !connection.has_blob(&blob.digest).await? {
            connection.push_blob(&blob).await?;
        }
    }
    let bytes = manifest(subject, subject_size, armored.as_bytes(), id);
    let digest = sha256_digest(&bytes);
    connection.push_manifest_as(&digest, MANIFEST_MEDIA_TYPE, &bytes).await?;
    connection.push_manifest_as(&signature_tag(subject), MANIFEST_MEDIA_TYPE, &bytes).await?;
    Ok(digest)
}

/// The descriptor of the one layer of a signature artifact's manifest, when it is one.
fn signature_layer(bytes: &[u8], subject: &str) -> Option<super::artifact::Descriptor> {
    let document: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if document["artifactType"] != SIGNATURE_ARTIFACT_TYPE || document["subject"]["digest"] != subject {
        return None;
    }
    let layer = document["layers"].as_array()?.first()?;
    if layer["mediaType"] != SIGNATURE_MEDIA_TYPE {
        return None;
    }
    let size = layer["size"].as_u64().filter(|size| *size <= MAX_SIGNATURE)?;
    Some(super::artifact::Descriptor {
        media_type: SIGNATURE_MEDIA_TYPE.to_owned(),
        digest: layer["digest"].as_str()?.to_owned(),
        size,
        annotations: Default::default(),
    })
}

/// The armored signature the registry holds for the bundle manifest `subject`: from the
/// referrers list where the registry has one, else at the fallback tag; `None` when
/// there is none.
pub async fn pull_signature(connection: &Connection, subject: &str) -> Result<Option<String>, HostError> {
    let mut candidates = Vec::new();
    if let Some(index) = connection.referrers(subject).await? {
        let document: serde_json::Value = serde_json::from_slice(&index).unwrap_or_default();
        for entry in document["manifests"].as_array().into_iter().flatten() {
            if entry["artifactType"] == SIGNATURE_ARTIFACT_TYPE
                && let Some(digest) = entry["digest"].as_str()
            {
                candidates.push(digest.to_owned());
            }
        }
    }
    candidates.push(signature_tag(subject));
    for name in candidates {
        let Some(bytes) = connection.pull_manifest_named(&name, MANIFEST_MEDIA_TYPE).await? else { continue };
        let Some(layer) = signature_layer(&bytes, subject) else { continue };
        let blob = connection.pull_blob(&layer).await?;
        return Ok(Some(String::from_utf8_lossy(&blob).into_owned()));
    }
    Ok(None)
}
