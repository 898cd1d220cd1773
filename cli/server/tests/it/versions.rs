//! No lost edits: every read of a Person or of the bindings carries its version in
//! `ETag`, every write names the version it edits in `If-Match`, and a write over a newer
//! version is refused with 409 and what is there now, leaving the file as it was.

use crate::support;

use support::{Server, person};

fn create(server: &Server, id: &str) {
    let reply = server.post("/api/v1/people", &person(id, "Ada", "lead"));
    assert_eq!(reply.status, 201, "{}", reply.text());
}

#[test]
fn a_stale_edit_gets_409_and_keeps_the_archive() {
    let server = Server::start();
    create(&server, "ada");
    // The edit form opens on the Person as it is.
    let opened = server.get("/api/v1/people/ada");
    let version = opened.version();
    assert_eq!(version.len(), 64, "{:?}", opened.headers);
    // Meanwhile, another tab archives.
    let archived = server.post("/api/v1/people/ada/archive", "");
    assert_eq!(archived.json()["archived"], true);
    assert_ne!(archived.version(), version);
    // The form saves what it opened, with `archived: false`.
    let mut edited: serde_json::Value = opened.json();
    edited["goal"] = serde_json::json!("An edit made before the archive.");
    let before = server.snapshot();
    let stale = server.put_at("/api/v1/people/ada", &version, &edited.to_string());
    assert_eq!(stale.status, 409, "{}", stale.text());
    let body = stale.json();
    assert_eq!(body["code"], "stale-version");
    assert_eq!(body["current"]["archived"], true, "the answer shows what is there now: {body}");
    assert_eq!(body["version"], serde_json::json!(archived.version()));
    assert_eq!(server.snapshot(), before, "a stale edit wrote");
    assert_eq!(server.get("/api/v1/people/ada").json()["archived"], true, "the archive was undone");
    // With the current version the same edit goes through.
    let current = server.put_at("/api/v1/people/ada", &archived.version(), &edited.to_string());
    assert_eq!(current.status, 200, "{}", current.text());
    assert_eq!(current.version(), server.get("/api/v1/people/ada").version());
}

#[test]
fn a_write_without_a_version_is_refused_and_writes_nothing() {
    let server = Server::start();
    create(&server, "ada");
    let before = server.snapshot();
    let reply = server.put("/api/v1/people/ada", &person("ada", "Other", "lead"));
    assert_eq!((reply.status, reply.code().as_str()), (428, "version-required"), "{}", reply.text());
    let bindings = serde_json::json!({"spec": "agent-toolkit/people-bindings@1", "roles": {}});
    assert_eq!(server.put("/api/v1/people/bindings", &bindings.to_string()).status, 428);
    assert_eq!(server.snapshot(), before);
}

#[test]
fn an_edit_made_with_the_cli_in_between_is_not_overwritten() {
    let server = Server::start();
    create(&server, "ada");
    let version = server.get("/api/v1/people/ada").version();
    // The file changes on disk, as `acompose people edit` would change it.
    std::fs::write(server.path("people/ada.json"), person("ada", "Ada from the cli", "lead")).expect("edit");
    let stale = server.put_at("/api/v1/people/ada", &version, &person("ada", "Ada from the page", "lead"));
    assert_eq!(stale.status, 409);
    assert_eq!(stale.json()["current"]["name"], "Ada from the cli");
    // Archive and restore honour a version when one is named.
    let archive = server.send("POST", "/api/v1/people/ada/archive", &[("If-Match", &format!("\"{version}\""))], b"");
    assert_eq!(archive.status, 409, "{}", archive.text());
    assert_eq!(server.get("/api/v1/people/ada").json()["archived"], false);
}

#[test]
fn a_stale_bindings_write_is_refused() {
    let server = Server::start();
    create(&server, "ada");
    let body = |person: &str| {
        serde_json::json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"lead": {"person_id": person}}})
            .to_string()
    };
    let first = server.put_at("/api/v1/people/bindings", "absent", &body("ada"));
    assert_eq!(first.status, 200, "{}", first.text());
    assert_eq!(first.json()["version"], serde_json::json!(first.version()));
    // A second tab still holds "absent".
    let stale = server.put_at("/api/v1/people/bindings", "absent", &body("ada"));
    assert_eq!((stale.status, stale.code().as_str()), (409, "stale-version"));
}
