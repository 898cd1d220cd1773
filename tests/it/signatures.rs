//! Signed bundles (docs/distribution.md, "Signatures"): a signature acompose makes
//! verifies with OpenSSH's `ssh-keygen -Y verify`, and one `ssh-keygen -Y sign` makes
//! verifies in `acompose verify --signers`; through a real `docker-registry` a signed
//! bundle pushed and pulled verifies, and under `bundle_signers` an unsigned bundle and
//! one signed by a key no allowed signer holds are refused by `bundle pull`, and a pulled
//! unsigned one by `project` and `launch --bundle`, with the home unchanged.

use std::path::Path;
use std::process::Command;

use crate::common::registry::Registry;
use crate::common::tree_of;
use crate::registry::{estate, index, json, run};

/// Whether OpenSSH's `ssh-keygen` can be run (`.ci/run` installs it).
fn ssh_keygen_present() -> bool {
    let present = Command::new("ssh-keygen").arg("-?").output().is_ok();
    if !present && std::env::var_os("CI").is_some() {
        panic!("ssh-keygen is missing: install openssh-client");
    }
    present
}

/// A new Ed25519 key pair at `path` (and `path.pub`), without a passphrase.
fn key(path: &Path, comment: &str) -> String {
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f"])
        .arg(path)
        .output()
        .expect("ssh-keygen");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    std::fs::read_to_string(path.with_extension("pub")).expect("public key").trim().to_owned()
}

/// The signed message of docs/distribution.md, built here from the bundle's files with
/// coreutils, not with acompose's code.
fn message(bundle: &Path) -> Vec<u8> {
    let id = bundle.canonicalize().expect("bundle").file_name().expect("id").to_string_lossy().into_owned();
    let summed = Command::new("sha256sum").arg(bundle.join("manifest.json")).output().expect("sha256sum");
    let digest = String::from_utf8_lossy(&summed.stdout).split_whitespace().next().expect("a digest").to_owned();
    format!("acompose-bundle-signature v1\nbundle {id}\nmanifest sha256:{digest}\n").into_bytes()
}

fn ssh_keygen_with_input(directory: &Path, arguments: &[&str], input: &[u8]) -> std::process::Output {
    use std::io::Write as _;
    let mut child = Command::new("ssh-keygen")
        .current_dir(directory)
        .args(arguments)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("ssh-keygen");
    child.stdin.take().expect("stdin").write_all(input).expect("send the message");
    child.wait_with_output().expect("ssh-keygen")
}

#[test]
fn signatures_interoperate_with_ssh_keygen_both_ways() {
    if !ssh_keygen_present() {
        return;
    }
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, _) = estate(root);
    let public = key(&root.join("ada"), "ada");
    std::fs::write(root.join("allowed_signers"), format!("ada@example.org {public}\n")).expect("signers");
    let platform = index(&home)["platform"].clone();
    let bundle = home.join("bundles").join(&platform);

    // acompose signs; OpenSSH verifies.
    let signed = run(root, &["--home", "home", "bundle", "sign", "platform", "--key", "ada"]);
    assert_eq!(signed.code, 0, "{}", signed.stderr);
    let signature = home.join("signatures").join(format!("{platform}.sig"));
    let signature_text = signature.to_str().expect("utf-8");
    let verified = ssh_keygen_with_input(
        root,
        &[
            "-Y",
            "verify",
            "-f",
            "allowed_signers",
            "-I",
            "ada@example.org",
            "-n",
            "acompose-bundle",
            "-s",
            signature_text,
        ],
        &message(&bundle),
    );
    assert!(
        verified.status.success(),
        "ssh-keygen -Y verify: {}{}",
        String::from_utf8_lossy(&verified.stdout),
        String::from_utf8_lossy(&verified.stderr)
    );
    let checked = run(root, &["--home", "home", "verify", "platform", "--signers", "allowed_signers"]);
    assert_eq!(checked.code, 0, "{}", checked.stderr);
    assert!(checked.stdout.contains("signed by ada@example.org"), "{}", checked.stdout);

    // The signature travels in `bundle export`'s archive, beside the bundle folder, and
    // is kept by the home that imports it.
    let exported = run(root, &["--home", "home", "bundle", "export", "platform", "--out", "platform.tar"]);
    assert_eq!(exported.code, 0, "{}", exported.stderr);
    std::fs::create_dir_all(root.join("fourth")).expect("home");
    let imported = run(root, &["--home", "fourth", "bundle", "import", "platform.tar"]);
    assert_eq!(imported.code, 0, "{}", imported.stderr);
    let checked = run(root, &["--home", "fourth", "verify", &platform, "--signers", "allowed_signers"]);
    assert_eq!(checked.code, 0, "{}", checked.stderr);

    // OpenSSH signs; acompose verifies.
    std::fs::write(root.join("message"), message(&bundle)).expect("message");
    let made = Command::new("ssh-keygen")
        .current_dir(root)
        .args(["-Y", "sign", "-f", "ada", "-n", "acompose-bundle", "message"])
        .output()
        .expect("ssh-keygen");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let arguments =
        ["--home", "home", "verify", "platform", "--signers", "allowed_signers", "--signature", "message.sig"];
    let checked = run(root, &arguments);
    assert_eq!(checked.code, 0, "{}", checked.stderr);

    // Another namespace, another bundle's message, another key: refused.
    let _ = std::fs::remove_file(root.join("message.sig"));
    let made = Command::new("ssh-keygen")
        .current_dir(root)
        .args(["-Y", "sign", "-f", "ada", "-n", "git", "message"])
        .output()
        .expect("ssh-keygen");
    assert!(made.status.success());
    let refused = run(root, &arguments);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("namespace"), "{}", refused.stderr);
    key(&root.join("eve"), "eve");
    let _ = std::fs::remove_file(root.join("message.sig"));
    let made = Command::new("ssh-keygen")
        .current_dir(root)
        .args(["-Y", "sign", "-f", "eve", "-n", "acompose-bundle", "message"])
        .output()
        .expect("ssh-keygen");
    assert!(made.status.success());
    let refused = run(root, &arguments);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("no allowed signer"), "{}", refused.stderr);
}

/// Everything under the home but the lock file, to compare before and after.
fn home_state(home: &Path) -> Vec<(String, String)> {
    tree_of(home).into_iter().filter(|(path, _)| !path.ends_with(".acompose.lock")).collect()
}

#[test]
fn a_signed_bundle_travels_through_a_registry_and_the_policy_refuses_the_others() {
    if !ssh_keygen_present() {
        return;
    }
    let Some(registry) = Registry::start("a_signed_bundle_travels_through_a_registry") else { return };
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, _) = estate(root);
    let public = key(&root.join("ada"), "ada");
    key(&root.join("eve"), "eve");
    let index = index(&home);
    let tag = |name: &str| format!("{}:{name}", registry.repository("team/roles"));

    let pushed =
        json(&run(root, &["--home", "home", "bundle", "push", "platform", &tag("signed"), "--sign", "ada", "--json"]));
    assert_eq!(pushed["bundle"], index["platform"].as_str());
    let pushed = run(root, &["--home", "home", "bundle", "push", "eval", &tag("unsigned")]);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);
    let pushed = run(root, &["--home", "home", "bundle", "push", "devrel", &tag("stranger"), "--sign", "eve"]);
    assert_eq!(pushed.code, 0, "{}", pushed.stderr);

    // A home whose policy allows ada's key.
    std::fs::create_dir_all(root.join("other")).expect("home");
    std::fs::write(root.join("other/allowed_signers"), format!("ada@example.org {public}\n")).expect("signers");
    std::fs::write(root.join("other/agent-compose.yaml"), "bundle_signers: allowed_signers\n").expect("config");
    let pulled = run(root, &["--home", "other", "bundle", "pull", &tag("signed")]);
    assert_eq!(pulled.code, 0, "{}", pulled.stderr);
    assert!(pulled.stdout.contains("signed by ada@example.org"), "{}", pulled.stdout);
    let platform = &index["platform"];
    assert!(root.join("other/signatures").join(format!("{platform}.sig")).is_file(), "kept beside the bundle");
    let checked = run(root, &["--home", "other", "verify", platform, "--signers", "other/allowed_signers"]);
    assert_eq!(checked.code, 0, "{}", checked.stderr);

    for (name, why) in [("unsigned", "it is not signed"), ("stranger", "no allowed signer holds")] {
        let before = home_state(&root.join("other"));
        let refused = run(root, &["--home", "other", "bundle", "pull", &tag(name)]);
        assert_ne!(refused.code, 0, "{name}: {}", refused.stdout);
        assert!(refused.stderr.contains(why), "{name}: {}", refused.stderr);
        assert!(before == home_state(&root.join("other")), "{name}: the home is unchanged");
    }

    // Pulled before the policy was set, the unsigned bundle is refused by `project` after.
    std::fs::create_dir_all(root.join("third")).expect("home");
    let pulled = run(root, &["--home", "third", "bundle", "pull", &tag("unsigned")]);
    assert_eq!(pulled.code, 0, "{}", pulled.stderr);
    std::fs::write(root.join("third/allowed_signers"), format!("ada@example.org {public}\n")).expect("signers");
    std::fs::write(root.join("third/agent-compose.yaml"), "bundle_signers: allowed_signers\n").expect("config");
    let target = root.join("target");
    std::fs::create_dir_all(&target).expect("target");
    let before = home_state(&root.join("third"));
    let eval = &index["eval"];
    let arguments = ["--home", "third", "project", eval, "--layout", "claude", "--scope", "repo", "--target"];
    let mut arguments: Vec<&str> = arguments.to_vec();
    arguments.push(target.to_str().expect("utf-8"));
    let refused = run(root, &arguments);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("it is not signed"), "{}", refused.stderr);
    assert!(before == home_state(&root.join("third")), "the home is unchanged");
    assert_eq!(std::fs::read_dir(&target).expect("target").count(), 0, "nothing projected");
    // `launch --bundle` refuses it the same way, before anything is prepared.
    let arguments =
        ["--home", "third", "launch", "eval", "claude", "--bundle", eval, "--yes", "--projects-root", "projects"];
    let refused = run(root, &arguments);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("it is not signed"), "{}", refused.stderr);
    assert!(before == home_state(&root.join("third")), "the home is unchanged");
}
