//! Signed bundles (`docs/distribution.md`, "Signatures"): an SSH signature (the SSHSIG
//! format of `ssh-keygen -Y sign` and git's SSH signing, namespace `acompose-bundle`)
//! over one message naming the bundle's id and the SHA-256 of its `manifest.json`; where
//! a home keeps it (`<home>/signatures/<id>.sig`); verification against an allowed-signers
//! file in git's format; and the host's `bundle_signers` policy, which makes `bundle
//! pull`, `launch --bundle` and `project` of a pulled bundle refuse one that is unsigned
//! or signed by no allowed signer. Reads keys and writes signatures; never prints.

use std::path::{Path, PathBuf};

use sha2::Digest as _;
use ssh_key::{HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

use crate::error::HostError;
use crate::home::Home;

/// The SSHSIG namespace of a bundle signature.
pub const NAMESPACE: &str = "acompose-bundle";
pub use crate::home::SIGNATURES_DIR;
/// Where a home records the bundles it pulled: `<home>/signatures/<id>.pulled`.
const PULLED_SUFFIX: &str = "pulled";
/// The largest signature or allowed-signers file read.
const MAX_FILE: u64 = 1 << 20;

/// The signed message of the bundle `id` whose `manifest.json` has `manifest` as bytes:
///
/// ```text
/// acompose-bundle-signature v1
/// bundle <id>
/// manifest sha256:<64 hex digits of manifest.json>
/// ```
///
/// each line ending in one line feed.
pub fn message(id: &str, manifest: &[u8]) -> Vec<u8> {
    format!("acompose-bundle-signature v1\nbundle {id}\nmanifest sha256:{:x}\n", sha2::Sha256::digest(manifest))
        .into_bytes()
}

fn shown(path: &Path) -> String {
    acompose_engine::diagnostic::sanitize(&path.display().to_string())
}

fn read_bounded(path: &Path, what: &str) -> Result<String, HostError> {
    let too_large = std::fs::metadata(path).is_ok_and(|metadata| metadata.len() > MAX_FILE);
    if too_large {
        return Err(HostError::invalid(path, format!("{what} `{}` is larger than {MAX_FILE} bytes", shown(path))));
    }
    std::fs::read_to_string(path).map_err(|error| {
        HostError::environment(
            path,
            format!("cannot read {what} `{}`: {}", shown(path), crate::compose::load::error_kind(&error)),
        )
    })
}

/// A verified bundle's id and its `manifest.json` bytes.
fn verified_bundle(bundle: &Path) -> Result<(String, Vec<u8>), HostError> {
    crate::compose::bundle::verify_directory(bundle).map_err(|problems| {
        HostError::invalid(bundle, format!("bundle `{}` failed verification: {}", shown(bundle), problems.join("; ")))
    })?;
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    let manifest = crate::compose::parted::manifest_bytes(bundle)
        .map_err(|problem| HostError::environment(bundle, format!("cannot read its manifest: {problem}")))?;
    Ok((id, manifest))
}

/// Signs a verified bundle with an OpenSSH private key (unencrypted; Ed25519): the
/// armored signature, and the bundle's id.
pub fn sign(bundle: &Path, key: &Path) -> Result<(String, String), HostError> {
    let (id, manifest) = verified_bundle(bundle)?;
    let text = read_bounded(key, "the key")?;
    let private = PrivateKey::from_openssh(text.trim())
        .map_err(|_| HostError::invalid(key, format!("`{}` is not an OpenSSH private key", shown(key))))?;
    if private.is_encrypted() {
        return Err(HostError::invalid(
            key,
            format!(
                "`{}` is encrypted; sign with `ssh-keygen -Y sign -n {NAMESPACE}` (docs/distribution.md), or use an unencrypted key",
                shown(key)
            ),
        ));
    }
    let signature = private.sign(NAMESPACE, HashAlg::Sha512, &message(&id, &manifest)).map_err(|_| {
        HostError::invalid(key, format!("`{}` cannot sign: acompose signs with Ed25519 keys", shown(key)))
    })?;
    let armored = signature
        .to_pem(LineEnding::LF)
        .map_err(|_| HostError::invalid(key, "the signature cannot be written".to_owned()))?;
    Ok((armored, id))
}

/// One line of an allowed-signers file: who, which key, and for which namespaces.
#[derive(Debug, Clone)]
pub struct AllowedSigner {
    pub principals: String,
    key: PublicKey,
    namespaces: Option<Vec<String>>,
}

/// Reads an allowed-signers file (git's `gpg.ssh.allowedSignersFile`, OpenSSH's
/// `ALLOWED SIGNERS`): `principals [options] keytype base64-key [comment]` a line, `#`
/// comments. Lines with `cert-authority` or a key acompose cannot read are skipped; the
/// `namespaces="…"` option is honoured.
pub fn read_allowed_signers(path: &Path) -> Result<Vec<AllowedSigner>, HostError> {
    let text = read_bounded(path, "the allowed-signers file")?;
    let signers = parse_allowed_signers(&text);
    if signers.is_empty() {
        return Err(HostError::invalid(path, format!("`{}` names no signer acompose can read", shown(path))));
    }
    Ok(signers)
}

fn is_key_type(word: &str) -> bool {
    word.starts_with("ssh-") || word.starts_with("ecdsa-") || word.starts_with("sk-")
}

/// The options field split at commas outside quotes.
fn options(field: &str) -> Vec<String> {
    let mut options = Vec::new();
    let (mut current, mut quoted) = (String::new(), false);
    for character in field.chars() {
        match character {
            '"' => quoted = !quoted,
            ',' if !quoted => options.push(std::mem::take(&mut current)),
            _ => current.push(character),
        }
    }
    options.push(current);
    options
}

pub fn parse_allowed_signers(text: &str) -> Vec<AllowedSigner> {
    let mut signers = Vec::new();
    for line in text.lines().map(str::trim).filter(|line| !line.is_empty() && !line.starts_with('#')) {
        let mut words = line.split_whitespace();
        let Some(principals) = words.next() else { continue };
        let Some(mut next) = words.next() else { continue };
        let mut namespaces = None;
        let mut usable = true;
        if !is_key_type(next) {
            for option in options(next) {
                let lowered = option.to_ascii_lowercase();
                if lowered == "cert-authority" {
                    usable = false;
                } else if let Some(list) = lowered.strip_prefix("namespaces=") {
                    namespaces = Some(list.split(',').map(str::to_owned).collect());
                }
            }
            let Some(key_type) = words.next() else { continue };
            next = key_type;
        }
        let Some(key) = words.next() else { continue };
        match PublicKey::from_openssh(&format!("{next} {key}")) {
            Ok(key) if usable => signers.push(AllowedSigner { principals: principals.to_owned(), key, namespaces }),
            _ => {}
        }
    }
    signers
}

/// Verifies an armored signature of the bundle `id` with `manifest` against the allowed
/// signers: the principals of the signer, or why not.
pub fn verify(armored: &str, id: &str, manifest: &[u8], signers: &[AllowedSigner]) -> Result<String, String> {
    let signature = SshSig::from_pem(armored.trim()).map_err(|_| "the signature is not an SSH signature".to_owned())?;
    if signature.namespace() != NAMESPACE {
        return Err(format!(
            "the signature is for the namespace `{}`, not `{NAMESPACE}`",
            sanitize(signature.namespace())
        ));
    }
    let signer = signers
        .iter()
        .filter(|signer| signer.namespaces.as_ref().is_none_or(|namespaces| namespaces.iter().any(|n| n == NAMESPACE)))
        .find(|signer| signer.key.key_data() == signature.public_key())
        .ok_or_else(|| "the signature is by a key no allowed signer holds".to_owned())?;
    signer
        .key
        .verify(NAMESPACE, &message(id, manifest), &signature)
        .map_err(|_| "the signature does not match the bundle".to_owned())?;
    Ok(signer.principals.clone())
}

fn sanitize(text: &str) -> String {
    acompose_engine::diagnostic::sanitize(text)
}

/// Where a home keeps the signature of bundle `id`.
pub fn signature_path(home: &Home, id: &str) -> PathBuf {
    home.signatures().join(format!("{id}.sig"))
}

fn pulled_path(home: &Home, id: &str) -> PathBuf {
    home.signatures().join(format!("{id}.{PULLED_SUFFIX}"))
}

/// Keeps a signature of bundle `id` in the home.
pub fn keep(home: &Home, id: &str, armored: &str) -> Result<PathBuf, HostError> {
    let path = signature_path(home, id);
    let folder = home.signatures();
    std::fs::create_dir_all(&folder).map_err(|error| {
        HostError::environment(
            &folder,
            format!("cannot create `{}`: {}", shown(&folder), crate::compose::load::error_kind(&error)),
        )
    })?;
    crate::home::atomic::replace(&folder, &format!("{id}.sig"), armored.as_bytes())
        .map_err(|error| HostError::environment(&path, error.to_string()))?;
    Ok(path)
}

/// Records that the home pulled bundle `id` (the policy applies to it from then on).
pub fn record_pulled(home: &Home, id: &str) -> Result<(), HostError> {
    keep_marker(home, id)
}

fn keep_marker(home: &Home, id: &str) -> Result<(), HostError> {
    let path = pulled_path(home, id);
    let folder = home.signatures();
    std::fs::create_dir_all(&folder).and_then(|()| std::fs::write(&path, b"")).map_err(|error| {
        HostError::environment(
            &path,
            format!("cannot write `{}`: {}", shown(&path), crate::compose::load::error_kind(&error)),
        )
    })
}

/// The home's signature of bundle `id`, when it keeps one.
pub fn kept(home: &Home, id: &str) -> Result<Option<String>, HostError> {
    let path = signature_path(home, id);
    if !path.is_file() {
        return Ok(None);
    }
    read_bounded(&path, "the signature").map(Some)
}

/// The allowed-signers file the host's `bundle_signers` names, resolved against home;
/// `None` when the policy is off.
pub fn policy(home: &Home) -> Result<Option<PathBuf>, HostError> {
    let config = crate::home::read_config(home, &crate::NoProgress)?;
    Ok(config.bundle_signers.map(|(path, _)| crate::home::config_path(&path, home)))
}

/// Under the `bundle_signers` policy: the bundle `id` (with `manifest`) and `armored`, its
/// signature if any, must verify against the allowed signers. The principals on success.
pub fn enforce(
    home: &Home,
    label: &str,
    id: &str,
    manifest: &[u8],
    armored: Option<&str>,
) -> Result<Option<String>, HostError> {
    let Some(signers_file) = policy(home)? else { return Ok(None) };
    let signers = read_allowed_signers(&signers_file)?;
    let refused = |why: String| {
        HostError::invalid(
            label,
            format!(
                "bundle `{id}` is refused under `bundle_signers` ({}): {why}; nothing was changed",
                shown(&signers_file)
            ),
        )
    };
    let Some(armored) = armored else { return Err(refused("it is not signed".to_owned())) };
    verify(armored, id, manifest, &signers).map(Some).map_err(refused)
}

/// The check `launch --bundle` and `project` make: a bundle the home pulled must pass
/// the policy with the signature the home keeps for it. Bundles the home composed itself
/// are not concerned.
pub fn enforce_for_use(home: &Home, bundle: &Path) -> Result<(), HostError> {
    let id = bundle
        .canonicalize()
        .ok()
        .and_then(|path| path.file_name().map(|name| name.to_string_lossy().into_owned()))
        .unwrap_or_default();
    if !pulled_path(home, &id).is_file() || policy(home)?.is_none() {
        return Ok(());
    }
    let manifest = crate::compose::parted::manifest_bytes(bundle)
        .map_err(|problem| HostError::environment(bundle, format!("cannot read its manifest: {problem}")))?;
    let armored = kept(home, &id)?;
    enforce(home, &bundle.display().to_string(), &id, &manifest, armored.as_deref()).map(|_| ())
}

/// `acompose verify BUNDLE --signers FILE`: the bundle verified, then its signature (the
/// home's, or `signature` when given) against the allowed signers. The principals.
pub fn verify_bundle(
    bundle: &Path,
    home: Option<&Home>,
    signature: Option<&Path>,
    signers: &Path,
) -> Result<String, HostError> {
    let (id, manifest) = verified_bundle(bundle)?;
    let armored = match (signature, home) {
        (Some(path), _) => Some(read_bounded(path, "the signature")?),
        (None, Some(home)) => kept(home, &id)?,
        (None, None) => None,
    };
    let Some(armored) = armored else {
        return Err(HostError::invalid(
            bundle,
            format!("bundle `{id}` is not signed: the home keeps no signature of it"),
        ));
    };
    let signers = read_allowed_signers(signers)?;
    verify(&armored, &id, &manifest, &signers)
        .map_err(|why| HostError::invalid(bundle, format!("bundle `{id}` is refused: {why}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allowed_signers_lines_are_read_with_their_options() {
        let key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIL1ULwEb+psYhoNx0J52OsGDDm31CVcL2ho8udqsuwCe";
        let text = format!(
            "# team\nada@example.org {key} laptop\nbob@example.org namespaces=\"git,acompose-bundle\" {key}\nca@example.org cert-authority {key}\n\n"
        );
        let signers = parse_allowed_signers(&text);
        let principals: Vec<&str> = signers.iter().map(|signer| signer.principals.as_str()).collect();
        assert_eq!(principals, ["ada@example.org", "bob@example.org"]);
        assert_eq!(signers[1].namespaces.as_deref(), Some(&["git".to_owned(), "acompose-bundle".to_owned()][..]));
    }

    #[test]
    fn the_message_names_the_id_and_the_manifest_digest() {
        let text = String::from_utf8(message("0123456789abcdef", b"{}")).expect("text");
        assert_eq!(
            text,
            "acompose-bundle-signature v1\nbundle 0123456789abcdef\nmanifest sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\n"
        );
    }
}
