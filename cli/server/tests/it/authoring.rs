//! People without hand-made files: a project linked by its folder, swarm recipes written
//! in the format `acompose people resolve --recipe` reads, and the import review that
//! flags an id already taken before Save.

use crate::support;

use std::fs;

use support::{HIRE, Server, person};

#[test]
fn a_project_is_linked_by_its_folder_inside_the_workspace() {
    let server = Server::start();
    let folder = tempfile::tempdir().expect("project folder");
    let body = serde_json::json!({"id": "desk", "folder": folder.path().to_string_lossy()});
    let reply = server.post("/api/v1/projects", &body.to_string());
    assert_eq!(reply.status, 201, "{}", reply.text());
    let link = server.path("projects/desk");
    assert!(fs::symlink_metadata(&link).expect("the link").file_type().is_symlink());
    assert_eq!(fs::canonicalize(&link).ok(), fs::canonicalize(folder.path()).ok());
    assert_eq!(server.get("/api/v1/projects").json()["projects"][0]["id"], "desk");
    assert!(fs::read_dir(folder.path()).expect("folder").next().is_none(), "the project folder was written");

    let elsewhere = tempfile::tempdir().expect("another folder");
    let file = elsewhere.path().join("notes.txt");
    fs::write(&file, "not a folder").expect("a file");
    let before = server.snapshot();
    const MARKER: &str = "zq-folder-5120";
    let cases = [
        ("taken", serde_json::json!({"id": "desk", "folder": folder.path().to_string_lossy()})),
        ("relative", serde_json::json!({"id": "other", "folder": MARKER})),
        ("missing", serde_json::json!({"id": "other", "folder": format!("/nowhere/{MARKER}")})),
        ("bad id", serde_json::json!({"id": format!("../{MARKER}"), "folder": folder.path().to_string_lossy()})),
        ("a file", serde_json::json!({"id": "other", "folder": file.to_string_lossy()})),
    ];
    for (label, body) in cases {
        let reply = server.post("/api/v1/projects", &body.to_string());
        assert_eq!(reply.status, 422, "{label}: {}", reply.text());
        assert!(!reply.text().contains(MARKER), "{label} echoed: {}", reply.text());
    }
    assert_eq!(server.snapshot(), before);
}

#[test]
fn a_recipe_is_saved_in_the_cli_format_and_listed() {
    let server = Server::start();
    fs::create_dir_all(server.path("people")).expect("people");
    fs::write(server.path("people/ada.json"), person("ada", "Ada", "lead")).expect("Ada");
    let body = serde_json::json!({"name": "review-team", "roles": [{"role": "lead"}, {"role": "qa", "persona": "agents/tester"}]});
    let reply = server.post("/api/v1/recipes", &body.to_string());
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.json()["file"], "recipes/review-team.json");
    let written: serde_json::Value =
        serde_json::from_slice(&fs::read(server.path("recipes/review-team.json")).expect("recipe")).expect("json");
    assert_eq!(
        written,
        serde_json::json!({"spec": "acompose/people-recipe@1", "roles": [{"role": "lead"}, {"role": "qa", "persona": "agents/tester"}]})
    );
    let listing = server.get("/api/v1/recipes").json();
    assert_eq!(listing["recipes"][0]["file"], "recipes/review-team.json");
    assert_eq!(listing["recipes"][0]["roles"][1]["persona"], "agents/tester");
    // The saved text resolves as the cli would resolve the file.
    let resolve = serde_json::json!({"recipe_file_name": "review-team.json", "recipe": listing["recipes"][0]["text"]});
    let resolution = server.post("/api/v1/people/resolve", &resolve.to_string()).json();
    assert_eq!(resolution["roles"][0]["person_id"], "ada", "{resolution}");

    let before = server.snapshot();
    for (label, body) in [
        ("taken", serde_json::json!({"name": "review-team", "roles": [{"role": "lead"}]})),
        ("no roles", serde_json::json!({"name": "empty", "roles": []})),
        ("twice", serde_json::json!({"name": "twice", "roles": [{"role": "qa"}, {"role": "qa"}]})),
        ("bad role", serde_json::json!({"name": "bad", "roles": [{"role": "Not A Slug"}]})),
        ("bad name", serde_json::json!({"name": "../up", "roles": [{"role": "qa"}]})),
    ] {
        let reply = server.post("/api/v1/recipes", &body.to_string());
        assert_eq!(reply.status, 422, "{label}: {}", reply.text());
    }
    assert_eq!(server.snapshot(), before);
}

#[test]
fn the_import_review_flags_an_existing_id_before_save() {
    let server = Server::start();
    fs::create_dir_all(server.path("people")).expect("people");
    fs::write(server.path("people/pam.json"), person("pam", "Pam", "reception")).expect("Pam");
    let body = serde_json::json!({"file_name": "pam.json", "content": HIRE, "role": "reception", "id": "pam"});
    let review = server.post("/api/v1/people/import", &body.to_string()).json();
    assert_eq!(review["id_exists"], true, "{review}");
    assert_eq!(review["ready_to_save"], false);
    let flagged = review["needs_review"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|item| item["field"] == "id" && item["blocking"] == true);
    assert!(flagged, "{review}");
    let other = serde_json::json!({"file_name": "pam.json", "content": HIRE, "role": "reception", "id": "pam-2"});
    let fine = server.post("/api/v1/people/import", &other.to_string()).json();
    assert_eq!(
        (fine["id_exists"].clone(), fine["ready_to_save"].clone()),
        (serde_json::json!(false), serde_json::json!(true))
    );
}
