//! Bundles through a real OCI registry (`bundle push`, `bundle pull`): a round trip keeps
//! the id, a second push after one edit uploads only what changed (as the registry's own
//! log shows), and a blob or manifest tampered with in the registry's storage is refused
//! with the home left as it was.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use acompose_driver::compose::bundle::read_bundle;
use common::registry::Registry;
use common::{Output, acompose_with, tree_of};

fn skill(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\n# {name}\n\n{body}\n")
}

/// Writes a file dated an hour back (the fingerprint cache re-hashes racily fresh files).
fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(path, text).expect("write");
    let hour_ago = SystemTime::now() - Duration::from_secs(3600);
    std::fs::File::options().write(true).open(path).and_then(|file| file.set_modified(hour_ago)).expect("backdate");
}

const ROLES: &str = "repositories {\n    repository hardware path=\"example/hardware\"\n    repository benchmarks path=\"example/benchmarks\"\n}\nroles {\n    role platform { use-repository hardware; }\n    role eval { use-repository benchmarks; }\n}\n";

/// A trusted root and two skill repositories: platform takes the hardware skills, eval
/// the benchmark skills. Converged into `root/home`.
pub(crate) fn estate(root: &Path) -> (PathBuf, PathBuf) {
    let projects = root.join("projects");
    write(&projects.join("acme/root/.agents/roles.kdl"), ROLES);
    for name in ["machine-cpu", "machine-gpu", "machine-tpu"] {
        write(&projects.join(format!("example/hardware/.agents/skills/{name}/SKILL.md")), &skill(name, "Hardware."));
    }
    write(&projects.join("example/hardware/.agents/skills/machine-gpu/references/notes.md"), "GPU notes.\n");
    for name in ["bench-harness", "bench-report"] {
        write(&projects.join(format!("example/benchmarks/.agents/skills/{name}/SKILL.md")), &skill(name, "Bench."));
    }
    write(&projects.join("acme/root/.git/HEAD"), "ref: refs/heads/main\n");
    write(&projects.join("acme/root/.git/refs/heads/main"), "4b825dc642cb6eb9a060e54bf8d69288fbee4904\n");
    let home = root.join("home");
    write(&home.join("agent-compose.yaml"), "operating_context:\n  - acme/root\n");
    common::backdate_folders(&projects);
    converge(root);
    (home, projects)
}

fn converge(root: &Path) {
    let converged = run(root, &["--home", "home", "--projects-root", "projects"]);
    assert_eq!(converged.code, 0, "{}", converged.stderr);
}

/// A password in the Docker configuration every command of these tests reads; it must
/// never be written anywhere.
const PASSWORD: &str = "never-written-7f3a";

/// Runs acompose with a Docker configuration holding credentials for a registry other
/// than the one under test, and for that one (which asks for none).
pub(crate) fn run(root: &Path, arguments: &[&str]) -> Output {
    let docker = root.join("docker");
    if !docker.join("config.json").is_file() {
        std::fs::create_dir_all(&docker).expect("docker folder");
        let auth = format!("user:{PASSWORD}");
        let encoded = base64_encode(auth.as_bytes());
        let config = format!("{{\"auths\": {{\"registry.example\": {{\"auth\": \"{encoded}\"}}}}}}\n");
        std::fs::write(docker.join("config.json"), config).expect("docker config");
    }
    run_with_docker(root, &docker, arguments)
}

fn run_with_docker(root: &Path, docker: &Path, arguments: &[&str]) -> Output {
    let docker = docker.to_str().expect("utf-8").to_owned();
    acompose_with(root, arguments, &[("DOCKER_CONFIG", &docker)])
}

fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::new();
    for chunk in bytes.chunks(3) {
        let value =
            chunk.iter().enumerate().fold(0u32, |value, (index, byte)| value | u32::from(*byte) << (16 - 8 * index));
        for index in 0..4 {
            let sextet = (value >> (18 - 6 * index)) & 63;
            text.push(if index <= chunk.len() { char::from(ALPHABET[sextet as usize]) } else { '=' });
        }
    }
    text
}

pub(crate) fn json(output: &Output) -> serde_json::Value {
    assert_eq!(output.code, 0, "{}{}", output.stdout, output.stderr);
    serde_json::from_str(&output.stdout).expect("a JSON report")
}

pub(crate) fn index(home: &Path) -> BTreeMap<String, String> {
    acompose_engine::convergence::parse_index(&std::fs::read(home.join("bundles/index.json")).expect("index"))
        .expect("parse")
}

fn store_entries(home: &Path) -> BTreeSet<String> {
    std::fs::read_dir(home.join("store"))
        .expect("store")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.starts_with('.'))
        .collect()
}

/// No file under `root` holds the password.
fn assert_no_credential_under(root: &Path) {
    for (path, content) in tree_of(root) {
        if path.starts_with("docker") {
            // The Docker configurations the tests wrote themselves.
            continue;
        }
        let encoded = base64_encode(format!("user:{PASSWORD}").as_bytes());
        assert!(!content.contains(PASSWORD) && !content.contains(&encoded), "`{path}` holds the password");
    }
}

#[test]
fn a_pushed_bundle_pulls_into_an_empty_home_with_the_same_id() {
    let Some(registry) = Registry::start("a_pushed_bundle_pulls_into_an_empty_home_with_the_same_id") else { return };
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, _) = estate(root);
    let platform = index(&home)["platform"].clone();
    let tag = format!("{}:platform", registry.repository("team/roles"));
    let pushed = json(&run(root, &["--home", "home", "bundle", "push", "platform", &tag, "--json"]));
    assert_eq!(pushed["bundle"], platform.as_str());
    assert_eq!(pushed["role"], "platform");
    let digest = pushed["digest"].as_str().expect("digest").to_owned();
    // Pushing it again, by its folder this time, uploads nothing and names the same manifest.
    let folder = format!("home/bundles/{platform}");
    let again = json(&run(root, &["--home", "home", "bundle", "push", &folder, &tag, "--json"]));
    assert_eq!(again["digest"], digest.as_str(), "one bundle, one manifest");
    assert_eq!(again["uploaded"].as_array().map(Vec::len), Some(0), "{again}");

    let pulled = json(&run(root, &["--home", "other", "bundle", "pull", &tag, "--json"]));
    assert_eq!(pulled["bundle"], platform.as_str(), "the trip keeps the id");
    assert_eq!(pulled["status"], "new");
    assert_eq!(pulled["digest"], digest.as_str());
    let copy = root.join("other/bundles").join(&platform);
    let verified = run(root, &["verify", copy.to_str().expect("utf-8")]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    assert_eq!(read_bundle(&copy).expect("read"), read_bundle(&home.join("bundles").join(&platform)).expect("read"));
    assert!(std::fs::read_link(copy.join("content/skills/hardware")).is_ok(), "its skills link into the home's store");

    // By digest, into the home that holds it: verified and reused, only the manifest fetched.
    let pinned = format!("{}@{digest}", registry.repository("team/roles"));
    let reused = json(&run(root, &["--home", "other", "bundle", "pull", &pinned, "--json"]));
    assert_eq!(reused["status"], "reused");
    assert_eq!(reused["transfer"]["blobs_received"], 1);

    // A pulled bundle projects like any other.
    let target = root.join("target");
    std::fs::create_dir_all(&target).expect("target");
    let target_text = target.to_str().expect("utf-8");
    let arguments = [
        "--home",
        "other",
        "project",
        copy.to_str().expect("utf-8"),
        "--layout",
        "claude",
        "--scope",
        "repo",
        "--target",
        target_text,
    ];
    let projected = run(root, &arguments);
    assert_eq!(projected.code, 0, "{}{}", projected.stdout, projected.stderr);
    assert_no_credential_under(root);
}

#[test]
fn a_second_push_after_one_edit_uploads_only_the_changed_entries_and_the_bundle_files() {
    let Some(registry) = Registry::start("a_second_push_after_one_edit_uploads_only_the_changed_entries") else {
        return;
    };
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    let (home, projects) = estate(root);
    let tag = format!("{}:platform", registry.repository("team/roles"));
    let first = json(&run(root, &["--home", "home", "bundle", "push", "platform", &tag, "--json"]));
    let entries_before = store_entries(&home);
    json(&run(root, &["--home", "other", "bundle", "pull", &tag, "--json"]));

    write(&projects.join("example/hardware/.agents/skills/machine-cpu/SKILL.md"), &skill("machine-cpu", "Edited."));
    common::backdate_folders(&projects);
    converge(root);
    let new_entries: BTreeSet<String> = store_entries(&home).difference(&entries_before).cloned().collect();
    assert_eq!(new_entries.len(), 2, "one skill tree and its provider's slice: {new_entries:?}");

    let logged_before = registry.requests().len();
    let second = json(&run(root, &["--home", "home", "bundle", "push", "platform", &tag, "--json"]));
    assert_ne!(second["bundle"], first["bundle"]);
    let uploaded = second["uploaded"].as_array().expect("uploaded");
    let kind = |blob: &serde_json::Value| blob["media_type"].as_str().unwrap_or_default().to_owned();
    let entries: BTreeSet<String> = uploaded
        .iter()
        .filter(|blob| kind(blob).contains(".store."))
        .map(|blob| blob["subject"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(entries, new_entries, "only the changed store entries were uploaded");
    for blob in uploaded.iter().filter(|blob| !kind(blob).contains(".store.")) {
        let kind = kind(blob);
        assert!(kind.ends_with("bundle.file.v1") || kind.ends_with("bundle.config.v1+json"), "{blob}");
    }
    // The registry's own log agrees: these uploads and no other.
    let reported: BTreeSet<String> =
        uploaded.iter().map(|blob| blob["digest"].as_str().unwrap_or_default().to_owned()).collect();
    let logged: BTreeSet<String> = Registry::uploads(&registry.requests()[logged_before..]).into_iter().collect();
    assert_eq!(logged, reported);
    assert!(uploaded.len() < second["blobs"].as_u64().unwrap_or(0) as usize, "{second}");

    // A home that pulled the first bundle downloads the new entries and none of the old.
    let store_digests = |report: &serde_json::Value| -> BTreeSet<String> {
        let blobs = report["uploaded"].as_array().expect("uploaded");
        let entries = blobs.iter().filter(|blob| kind(blob).contains(".store."));
        entries.map(|blob| blob["digest"].as_str().unwrap_or_default().to_owned()).collect()
    };
    let logged_before = registry.requests().len();
    let pulled = json(&run(root, &["--home", "other", "bundle", "pull", &tag, "--json"]));
    assert_eq!(pulled["bundle"], second["bundle"]);
    assert!(pulled["entries_reused"].as_u64().unwrap_or(0) > 0, "{pulled}");
    let downloaded: BTreeSet<String> = registry.requests()[logged_before..]
        .iter()
        .filter(|request| request.method == "GET" && request.uri.contains("/blobs/sha256:"))
        .filter_map(|request| request.uri.rsplit_once('/').map(|(_, digest)| digest.to_owned()))
        .collect();
    assert!(store_digests(&second).is_subset(&downloaded), "{downloaded:?}");
    assert!(store_digests(&first).is_disjoint(&downloaded), "{downloaded:?}");
    let verified = run(root, &["verify", &format!("other/bundles/{}", second["bundle"].as_str().unwrap_or_default())]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
}

/// Changes one byte of a file the registry stores (keeping its length).
fn corrupt(path: &Path) {
    let mut bytes = std::fs::read(path).expect("blob data");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    std::fs::write(path, bytes).expect("corrupt");
}

#[test]
fn a_blob_or_manifest_corrupted_in_the_registry_fails_the_pull_and_leaves_the_home_unchanged() {
    let Some(registry) = Registry::start("a_blob_or_manifest_corrupted_in_the_registry_fails_the_pull") else { return };
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    let repository = registry.repository("team/roles");
    let platform_tag = format!("{repository}:platform");
    let eval_tag = format!("{repository}:eval");
    let pushed = json(&run(root, &["--home", "home", "bundle", "push", "platform", &platform_tag, "--json"]));
    json(&run(root, &["--home", "home", "bundle", "push", "eval", &eval_tag, "--json"]));
    // The home pulling already holds another bundle and its store entries.
    json(&run(root, &["--home", "other", "bundle", "pull", &eval_tag, "--json"]));
    let other = root.join("other");
    let before = tree_of(&other);

    let tree = pushed["uploaded"]
        .as_array()
        .expect("uploaded")
        .iter()
        .find(|blob| blob["media_type"].as_str().is_some_and(|kind| kind.ends_with("store.tree.v1.tar")))
        .expect("a tree blob");
    corrupt(&registry.blob_data(tree["digest"].as_str().expect("digest")));
    let refused = run(root, &["--home", "other", "bundle", "pull", &platform_tag]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("does not match its digest"), "{}", refused.stderr);
    assert!(refused.stderr.contains("nothing was kept"), "{}", refused.stderr);
    assert_eq!(tree_of(&other), before, "the home is as it was");

    // The manifest of the eval tag, changed in the registry's storage, is refused too.
    let link = registry.storage.join("docker/registry/v2/repositories/team/roles/_manifests/tags/eval/current/link");
    let manifest = std::fs::read_to_string(link).expect("tag link");
    corrupt(&registry.blob_data(manifest.trim()));
    let refused = run(root, &["--home", "fresh", "bundle", "pull", &eval_tag]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains("manifest"), "{}", refused.stderr);
    assert!(!root.join("fresh").exists(), "nothing was written for a refused pull");
}

/// `user:never-written-7f3a` as an htpasswd line (bcrypt, cost 4: the registry checks it
/// on every request).
const HTPASSWD: &str = "user:$2b$04$C.2NxfL7b7Xu9u1ZhpdML.dyAR6XvsUlJokPNfTw0qGOQQnvAxtoy";

#[test]
fn credentials_from_the_docker_configuration_reach_the_registry_and_are_written_nowhere() {
    let test = "credentials_from_the_docker_configuration_reach_the_registry_and_are_written_nowhere";
    let Some(registry) = Registry::start_with(test, Some(HTPASSWD)) else { return };
    let temporary = tempfile::tempdir().expect("tempdir");
    let root = temporary.path();
    estate(root);
    let tag = format!("{}:platform", registry.repository("team/roles"));

    // No credential for this registry: anonymous, and the registry says no.
    let refused = run(root, &["--home", "home", "bundle", "push", "platform", &tag]);
    assert_ne!(refused.code, 0, "{}", refused.stdout);
    assert!(refused.stderr.contains(&tag), "{}", refused.stderr);

    let docker = root.join("docker-login");
    std::fs::create_dir_all(&docker).expect("docker folder");
    let auth = base64_encode(format!("user:{PASSWORD}").as_bytes());
    let config = format!("{{\"auths\": {{\"{}\": {{\"auth\": \"{auth}\"}}}}}}\n", registry.address);
    std::fs::write(docker.join("config.json"), config).expect("docker config");
    let mut outputs = Vec::new();
    let pushed = run_with_docker(root, &docker, &["--home", "home", "bundle", "push", "platform", &tag, "--json"]);
    outputs.push(pushed.stdout.clone() + &pushed.stderr);
    let pushed = json(&pushed);
    let pulled = run_with_docker(root, &docker, &["--home", "other", "bundle", "pull", &tag, "--json"]);
    outputs.push(pulled.stdout.clone() + &pulled.stderr);
    assert_eq!(json(&pulled)["bundle"], pushed["bundle"]);
    for output in outputs {
        assert!(!output.contains(PASSWORD) && !output.contains(&auth), "{output}");
    }
    assert_no_credential_under(root);
}
