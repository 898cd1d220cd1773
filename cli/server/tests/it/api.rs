//! The JSON API against a real server on a loopback port: the token, the Host and
//! Origin checks, every write with good and hostile input, and what lands on disk.

use crate::support;

use std::net::{IpAddr, TcpStream, UdpSocket};

use support::{HIRE, RECIPE, Server, person, raw};

fn import_body(content: &str) -> String {
    serde_json::json!({"file_name": "pam.json", "content": content}).to_string()
}

fn create(server: &Server, id: &str, role: &str) {
    let reply = server.post("/api/v1/people", &person(id, &format!("Person {id}"), role));
    assert_eq!(reply.status, 201, "{}", reply.text());
}

// ---------------------------------------------------------------------------------------
// The token

#[test]
fn the_api_refuses_requests_without_the_token_and_writes_nothing() {
    let server = Server::start();
    let before = server.snapshot();
    let reads = server.send("GET", "/api/v1/people", &[("Authorization", "")], b"");
    assert_eq!(reads.status, 401);
    assert_eq!(reads.code(), "token-required");
    let write = server.send(
        "POST",
        "/api/v1/people",
        &[("Authorization", ""), ("Content-Type", "application/json")],
        person("ada", "Ada", "lead").as_bytes(),
    );
    assert_eq!(write.status, 401);
    let wrong = server.send(
        "POST",
        "/api/v1/people",
        &[("Authorization", "Bearer 0000"), ("Content-Type", "application/json")],
        person("ada", "Ada", "lead").as_bytes(),
    );
    assert_eq!(wrong.status, 401);
    let basic = server.send("GET", "/api/v1/people", &[("Authorization", "Basic abc")], b"");
    assert_eq!(basic.status, 401);
    for path in ["/api/v1/people/ada/archive", "/api/v1/people/import/save", "/api/v1/people/bindings"] {
        let method = if path.ends_with("bindings") { "PUT" } else { "POST" };
        assert_eq!(server.send(method, path, &[("Authorization", "")], b"{}").status, 401, "{path}");
    }
    assert_eq!(server.snapshot(), before);
}

#[test]
fn a_terminal_websocket_without_the_token_is_refused() {
    let server = Server::start();
    let reply = server.send(
        "GET",
        "/api/v1/sessions/20260101-000000-ada-0000abcd/terminal",
        &[
            ("Authorization", ""),
            ("Upgrade", "websocket"),
            ("Connection", "Upgrade"),
            ("Sec-WebSocket-Version", "13"),
            ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ],
        b"",
    );
    assert_eq!(reply.status, 401, "{}", reply.text());
}

#[test]
fn the_page_and_assets_need_no_token_and_carry_a_strict_policy() {
    let server = Server::start();
    let page = server.send("GET", "/", &[("Authorization", "")], b"");
    assert_eq!(page.status, 200);
    let policy = page.header("content-security-policy").unwrap_or_default();
    for directive in ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "object-src 'none'"] {
        assert!(policy.contains(directive), "{policy}");
    }
    assert!(!policy.contains("unsafe-eval"));
    assert_eq!(page.header("x-frame-options"), Some("DENY"));
    assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
    // No inline script: every script element names a file of this server.
    let html = page.text();
    assert_eq!(html.matches("<script").count(), html.matches("<script src=\"/assets/").count());
    for asset in ["app.js", "app.css", "xterm.js", "xterm.css", "addon-fit.js", "xterm-LICENSE"] {
        let reply = server.send("GET", &format!("/assets/{asset}"), &[("Authorization", "")], b"");
        assert_eq!(reply.status, 200, "{asset}");
        assert!(!reply.body.is_empty(), "{asset}");
    }
    let missing = server.get("/assets/..%2Fsrc%2Flib.rs");
    assert_eq!(missing.status, 404);
    let api = server.get("/api/v1/people");
    assert!(api.header("content-security-policy").is_some());
}

// ---------------------------------------------------------------------------------------
// Host and Origin

#[test]
fn a_foreign_host_is_refused_even_with_the_token() {
    let server = Server::start();
    let before = server.snapshot();
    for host in ["evil.example", "evil.example:80", "127.0.0.1", "127.0.0.1:1", "localhost.evil.example"] {
        let reply = server.send(
            "POST",
            "/api/v1/people",
            &[("Host", host), ("Content-Type", "application/json")],
            person("ada", "Ada", "lead").as_bytes(),
        );
        assert_eq!(reply.status, 403, "{host}");
        assert_eq!(reply.code(), "foreign-host");
        assert_eq!(server.send("GET", "/", &[("Host", host)], b"").status, 403, "{host}");
    }
    let none = raw(server.handle.port, "GET", "/", &[], b"");
    assert_eq!(none.status, 403);
    assert_eq!(server.snapshot(), before);
    let localhost =
        server.send("GET", "/api/v1/people", &[("Host", &format!("localhost:{}", server.handle.port))], b"");
    assert_eq!(localhost.status, 200);
}

#[test]
fn a_foreign_origin_is_refused_and_this_origin_is_not() {
    let server = Server::start();
    let before = server.snapshot();
    let port = server.handle.port;
    for origin in [
        "http://evil.example".to_owned(),
        "null".to_owned(),
        format!("https://127.0.0.1:{port}"),
        format!("http://127.0.0.1:{}", port.wrapping_add(1)),
        format!("http://127.0.0.1:{port}.evil.example"),
    ] {
        let reply = server.send(
            "POST",
            "/api/v1/people",
            &[("Origin", &origin), ("Content-Type", "application/json")],
            person("ada", "Ada", "lead").as_bytes(),
        );
        assert_eq!(reply.status, 403, "{origin}");
        assert_eq!(reply.code(), "foreign-origin");
    }
    // A cross-site form post carries no token and a foreign Origin.
    let form = server.send(
        "POST",
        "/api/v1/people/ada/archive",
        &[("Origin", "http://evil.example"), ("Authorization", ""), ("Content-Type", "text/plain")],
        b"x",
    );
    assert_eq!(form.status, 403);
    assert_eq!(server.snapshot(), before);
    let same = server.send(
        "POST",
        "/api/v1/people",
        &[("Origin", &format!("http://127.0.0.1:{port}")), ("Content-Type", "application/json")],
        person("ada", "Ada", "lead").as_bytes(),
    );
    assert_eq!(same.status, 201, "{}", same.text());
}

#[test]
fn the_server_is_not_reachable_on_a_non_loopback_address() {
    let server = Server::start();
    // The address this machine would use towards the outside; connecting a UDP socket
    // sends nothing. Without one there is nothing else to try.
    let outward = UdpSocket::bind("0.0.0.0:0")
        .and_then(|socket| socket.connect("192.0.2.1:9").map(|()| socket))
        .and_then(|socket| socket.local_addr())
        .map(|address| address.ip());
    match outward {
        Ok(ip @ IpAddr::V4(v4)) if !v4.is_loopback() && !v4.is_unspecified() => {
            let reached = TcpStream::connect((ip, server.handle.port));
            assert!(reached.is_err(), "the server answered on {ip}");
        }
        _ => eprintln!("no non-loopback address on this machine: nothing to probe"),
    }
    assert!(TcpStream::connect(("127.0.0.1", server.handle.port)).is_ok());
}

// ---------------------------------------------------------------------------------------
// People

#[test]
fn people_are_created_shown_updated_archived_and_restored() {
    let server = Server::start();
    create(&server, "ada", "lead");
    let shown = server.get("/api/v1/people/ada").json();
    assert_eq!(shown["name"], "Person ada");
    let mut changed: serde_json::Value = serde_json::from_str(&person("ada", "Ada Lovelace", "qa")).expect("json");
    changed["capabilities"] = serde_json::json!(["review"]);
    let updated = server.put_current("/api/v1/people/ada", &changed.to_string());
    assert_eq!(updated.status, 200, "{}", updated.text());
    assert_eq!(updated.json()["role"], "qa");
    let on_disk: serde_json::Value =
        serde_json::from_slice(&std::fs::read(server.path("people/ada.json")).expect("file")).expect("json");
    assert_eq!(on_disk["name"], "Ada Lovelace");
    assert_eq!(server.post("/api/v1/people/ada/archive", "").json()["archived"], true);
    let listing = server.get("/api/v1/people").json();
    assert_eq!(listing["people"][0]["archived"], true);
    assert_eq!(server.post("/api/v1/people/ada/restore", "").json()["archived"], false);
    let again = server.post("/api/v1/people", &person("ada", "Other", "lead"));
    assert_eq!(again.status, 409);
    assert_eq!(again.code(), "person-exists");
    assert_eq!(server.get("/api/v1/people/bob").status, 404);
    assert_eq!(server.post("/api/v1/people/bob/archive", "").code(), "no-such-person");
    assert_eq!(server.put_at("/api/v1/people/bob", "absent", &person("bob", "Bob", "lead")).code(), "no-such-person");
}

#[test]
fn every_refused_person_write_names_a_code_and_echoes_no_value() {
    let server = Server::start();
    create(&server, "ada", "lead");
    let before = server.snapshot();
    const MARKER: &str = "zq-marker-7781";
    let with = |key: &str, value: serde_json::Value| {
        let mut document: serde_json::Value = serde_json::from_str(&person("ada", "Ada", "lead")).expect("json");
        document[key] = value;
        document.to_string()
    };
    let cases: Vec<(&str, String, &str)> = vec![
        ("unknown field", with("shell", serde_json::json!(MARKER)), "unknown-field"),
        ("bad role", with("role", serde_json::json!(format!("Bad {MARKER}"))), ""),
        ("bad reference", with("preferred_model", serde_json::json!(format!("-{MARKER}"))), ""),
        ("empty name", with("name", serde_json::json!("")), ""),
        ("long goal", with("goal", serde_json::json!(MARKER.repeat(400))), ""),
        ("negative budget", with("budget", serde_json::json!({"max_tokens": -1})), ""),
        ("wrong spec", with("spec", serde_json::json!(MARKER)), ""),
        ("bad accent", with("avatar", serde_json::json!({"character": "a", "accent": MARKER})), ""),
        (
            "too many skills",
            with("skills", serde_json::json!((0..40).map(|n| format!("s{n}")).collect::<Vec<_>>())),
            "",
        ),
        (
            "duplicate key",
            format!(
                r#"{{"spec":"agent-toolkit/person@1","id":"ada","name":"{MARKER}","name":"{MARKER}","role":"lead","goal":"g","archived":false}}"#
            ),
            "",
        ),
        ("not json", format!("{{\"id\": {MARKER}"), ""),
        ("id mismatch", person("bob", MARKER, "lead"), "id-file-mismatch"),
    ];
    for (label, body, expected) in cases {
        let reply = server.put_current("/api/v1/people/ada", &body);
        assert!(reply.status == 422 || reply.status == 400, "{label}: {} {}", reply.status, reply.text());
        let code = reply.code();
        assert!(!code.is_empty(), "{label}");
        if !expected.is_empty() {
            assert_eq!(code, expected, "{label}: {}", reply.text());
        }
        assert!(!reply.text().contains(MARKER), "{label} echoed a value: {}", reply.text());
    }
    let created = server.post("/api/v1/people", &with("shell", serde_json::json!(MARKER)).replace("\"ada\"", "\"cy\""));
    assert_eq!(created.status, 422);
    assert!(!created.text().contains(MARKER));
    let bad_id = server.post("/api/v1/people", &person("Not A Slug", "X", "lead"));
    assert_eq!(bad_id.code(), "invalid-id");
    assert_eq!(server.get("/api/v1/people/Bad%20Id").code(), "invalid-id");
    assert_eq!(server.get("/api/v1/people/..%2F..%2Fetc").code(), "invalid-id");
    assert_eq!(server.snapshot(), before);
}

#[test]
fn an_oversize_body_is_refused_before_it_is_read() {
    let server = Server::start();
    let before = server.snapshot();
    let huge = format!("{{\"name\": \"{}\"}}", "a".repeat(acompose_server::MAX_REQUEST_BYTES + 10));
    for (method, path) in
        [("POST", "/api/v1/people"), ("POST", "/api/v1/people/import"), ("PUT", "/api/v1/people/bindings")]
    {
        let reply = server.send(method, path, &[("Content-Type", "application/json")], huge.as_bytes());
        assert_eq!(reply.status, 413, "{path}: {}", reply.text());
        assert_eq!(reply.code(), "body-too-large");
    }
    // A body within the request limit but over the person file limit is the engine's.
    let mut document: serde_json::Value = serde_json::from_str(&person("ada", "Ada", "lead")).expect("json");
    document["padding"] = serde_json::json!("b".repeat(70 * 1024));
    let file_sized = server.post("/api/v1/people", &document.to_string());
    assert_eq!(file_sized.status, 422);
    assert!(!file_sized.text().contains("bbbb"));
    assert_eq!(server.snapshot(), before);
}

#[test]
fn a_name_with_markup_is_stored_as_text_and_returned_as_json_text() {
    let server = Server::start();
    let name = "<script>alert(1)</script> & <img src=x onerror=alert(2)>";
    let reply = server.post("/api/v1/people", &person("ada", name, "lead"));
    assert_eq!(reply.status, 201, "{}", reply.text());
    assert_eq!(reply.header("content-type"), Some("application/json"));
    assert_eq!(server.get("/api/v1/people/ada").json()["name"], name);
    assert_eq!(server.get("/api/v1/people").json()["people"][0]["name"], name);
}

#[test]
fn concurrent_writes_of_one_person_leave_one_valid_file() {
    let server = Server::start();
    create(&server, "ada", "lead");
    let goals: Vec<String> = (0..12).map(|n| format!("Goal number {n}.")).collect();
    std::thread::scope(|scope| {
        for (n, goal) in goals.iter().enumerate() {
            let server = &server;
            scope.spawn(move || {
                let mut document: serde_json::Value =
                    serde_json::from_str(&person("ada", "Ada", "lead")).expect("json");
                document["goal"] = serde_json::json!(goal);
                let reply = if n % 3 == 0 {
                    server.post("/api/v1/people/ada/archive", "")
                } else {
                    server.put_current("/api/v1/people/ada", &document.to_string())
                };
                // An edit that another overtook between its read and its write is refused.
                assert!(reply.status == 200 || reply.status == 409, "{}", reply.text());
            });
        }
    });
    let folder: Vec<String> = std::fs::read_dir(server.path("people"))
        .expect("people folder")
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(folder, vec!["ada.json".to_owned()], "temporary files left behind");
    let stored: serde_json::Value =
        serde_json::from_slice(&std::fs::read(server.path("people/ada.json")).expect("file")).expect("one valid file");
    assert!(goals.iter().any(|goal| stored["goal"] == goal.as_str()) || stored["goal"] == "Keep the work moving.");
    assert_eq!(server.get("/api/v1/people/ada").status, 200);
}

// ---------------------------------------------------------------------------------------
// The reviewed import

#[test]
fn an_import_preview_writes_nothing_and_a_separate_save_writes_the_person() {
    let server = Server::start();
    let before = server.snapshot();
    let preview = server.post("/api/v1/people/import", &import_body(HIRE));
    assert_eq!(preview.status, 200, "{}", preview.text());
    let review = preview.json();
    assert!(review["mapped"].as_array().is_some_and(|mapped| !mapped.is_empty()));
    let ignored: Vec<&str> =
        review["ignored"].as_array().into_iter().flatten().filter_map(|item| item["name"].as_str()).collect();
    assert!(ignored.contains(&"author"), "{ignored:?}");
    assert_eq!(review["written"], serde_json::Value::Null);
    assert_eq!(server.snapshot(), before, "the preview wrote something");
    let saved = server.post("/api/v1/people/import/save", &import_body(HIRE));
    assert_eq!(saved.status, 201, "{}", saved.text());
    let person_id = saved.json()["person_id"].as_str().unwrap_or_default().to_owned();
    assert!(server.path(&format!("people/{person_id}.json")).is_file());
    let twice = server.post("/api/v1/people/import/save", &import_body(HIRE));
    assert_eq!(twice.code(), "person-exists");
}

#[test]
fn hostile_hire_files_are_refused_with_a_code_and_no_echo() {
    let server = Server::start();
    let before = server.snapshot();
    const MARKER: &str = "zq-hire-9912";
    let duplicate =
        HIRE.replacen("\"name\": \"Pam Beesly\",", &format!("\"name\": \"{MARKER}\", \"name\": \"{MARKER}\","), 1);
    let cases = [
        ("duplicate key", import_body(&duplicate)),
        ("not a hire file", import_body(&format!(r#"{{"spec": "{MARKER}"}}"#))),
        ("not json", import_body(&format!("{{{MARKER}"))),
        (
            "oversize file",
            import_body(&format!(r#"{{"spec": "munder-difflin/hire@1", "x": "{}"}}"#, "c".repeat(70 * 1024))),
        ),
        ("unknown envelope field", serde_json::json!({"content": HIRE, "run": MARKER}).to_string()),
        ("bad id override", serde_json::json!({"content": HIRE, "id": format!("Bad {MARKER}")}).to_string()),
    ];
    for (label, body) in cases {
        for path in ["/api/v1/people/import", "/api/v1/people/import/save"] {
            let reply = server.post(path, &body);
            assert!(reply.status >= 400, "{label} {path}: {}", reply.text());
            assert!(!reply.code().is_empty(), "{label}");
            assert!(!reply.text().contains(MARKER), "{label} echoed: {}", reply.text());
            assert!(!reply.text().contains("cccc"), "{label} echoed");
        }
    }
    // A file name is reduced to its last segment.
    let named = serde_json::json!({"file_name": "../../etc/hire.json", "content": HIRE}).to_string();
    assert_eq!(server.post("/api/v1/people/import", &named).json()["file"], "hire.json");
    assert_eq!(server.snapshot(), before);
}

#[test]
fn an_incomplete_review_cannot_be_saved() {
    let server = Server::start();
    let before = server.snapshot();
    let without_goal = r#"{"spec": "munder-difflin/hire@1", "id": "kev", "name": "Kevin"}"#;
    let preview = server.post("/api/v1/people/import", &import_body(without_goal)).json();
    assert_eq!(preview["ready_to_save"], false);
    let save = server.post("/api/v1/people/import/save", &import_body(without_goal));
    assert_eq!(save.code(), "review-incomplete");
    assert_eq!(server.snapshot(), before);
    let answered =
        serde_json::json!({"content": without_goal, "goal": "Count things.", "role": "accounting"}).to_string();
    let saved = server.post("/api/v1/people/import/save", &answered);
    assert_eq!(saved.status, 201, "{}", saved.text());
}

// ---------------------------------------------------------------------------------------
// Bindings and resolution

#[test]
fn bindings_are_validated_like_people_validate_and_saved_canonically() {
    let server = Server::start();
    create(&server, "ada", "lead");
    create(&server, "bo", "qa");
    let empty = server.get("/api/v1/people/bindings").json();
    assert_eq!(empty["present"], false);
    let body = serde_json::json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"lead": {"person_id": "ada", "preferred_people": ["bo"]}}});
    assert_eq!(empty["version"], "absent");
    let unversioned = server.put("/api/v1/people/bindings", &body.to_string());
    assert_eq!((unversioned.status, unversioned.code().as_str()), (428, "version-required"));
    let reply = server.put_at("/api/v1/people/bindings", "absent", &body.to_string());
    assert_eq!(reply.status, 200, "{}", reply.text());
    assert_eq!(reply.json()["bindings"]["roles"]["lead"]["person_id"], "ada");
    let file = std::fs::read_to_string(server.path("people/bindings.yaml")).expect("bindings file");
    assert!(file.starts_with("spec: \"agent-toolkit/people-bindings@1\"\n"), "{file}");
    let before = server.snapshot();
    const MARKER: &str = "zq-bind-4410";
    let cases = [
        ("missing person", serde_json::json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"lead": {"person_id": "nobody"}}}).to_string()),
        ("unknown field", serde_json::json!({"spec": "agent-toolkit/people-bindings@1", "roles": {}, "x": MARKER}).to_string()),
        ("bad id", serde_json::json!({"spec": "agent-toolkit/people-bindings@1", "roles": {"lead": {"person_id": MARKER.to_uppercase()}}}).to_string()),
        ("wrong spec", serde_json::json!({"spec": MARKER, "roles": {}}).to_string()),
        ("duplicate key", format!(r#"{{"spec": "agent-toolkit/people-bindings@1", "roles": {{}}, "roles": {{"{MARKER}": {{}}}}}}"#)),
        ("not yaml", format!("spec: [{MARKER}")),
    ];
    for (label, body) in cases {
        let reply = server.put_current("/api/v1/people/bindings", &body);
        assert_eq!(reply.status, 422, "{label}: {}", reply.text());
        assert!(!reply.code().is_empty());
        assert!(
            !reply.text().contains(MARKER) && !reply.text().contains(&MARKER.to_uppercase()),
            "{label} echoed: {}",
            reply.text()
        );
    }
    assert_eq!(server.snapshot(), before);
}

#[test]
fn resolution_previews_roles_with_the_rule_that_chose_each_person() {
    let server = Server::start();
    create(&server, "ada", "lead");
    create(&server, "bo", "qa");
    let body = serde_json::json!({"recipe_file_name": "recipe.json", "recipe": RECIPE, "assignments": [{"role": "qa", "person_id": "bo"}]});
    let before = server.snapshot();
    let reply = server.post("/api/v1/people/resolve", &body.to_string());
    assert_eq!(reply.status, 200, "{}", reply.text());
    let roles = reply.json()["roles"].clone();
    assert_eq!(roles[0]["role"], "lead");
    assert_eq!(roles[1]["person_id"], "bo");
    assert!(roles[1]["rule"].as_str().is_some());
    assert_eq!(server.snapshot(), before);
    let bad_name = serde_json::json!({"recipe_file_name": "recipe.txt", "recipe": RECIPE});
    assert_eq!(server.post("/api/v1/people/resolve", &bad_name.to_string()).code(), "recipe-file-name");
    let archived_assignment = {
        server.post("/api/v1/people/bo/archive", "");
        serde_json::json!({"recipe_file_name": "recipe.json", "recipe": RECIPE, "assignments": [{"role": "qa", "person_id": "bo"}]})
    };
    // A refused assignment leaves the table: the other roles resolve, the refusal is
    // listed beside them.
    let refused = server.post("/api/v1/people/resolve", &archived_assignment.to_string()).json();
    assert_eq!(refused["roles"].as_array().map(Vec::len), Some(2), "{refused}");
    assert_ne!(refused["roles"][1]["person_id"], "bo", "{refused}");
    assert_eq!(refused["rejections"].as_array().map(Vec::len), Some(1), "{refused}");
    assert_eq!(refused["refused_assignments"][0]["role"], "qa", "{refused}");
}

#[test]
fn unknown_api_paths_answer_in_the_error_shape() {
    let server = Server::start();
    let reply = server.get("/api/v1/nothing");
    assert_eq!(reply.status, 404);
    let body = reply.json();
    assert_eq!(body["code"], "not-found");
    assert!(body.get("message").is_some() && body.get("pointer").is_some());
}

/// With no bundle and no trusted root (a new user's first home), `/api/v1/home` still
/// lists the roster's roles with their colours, as `roster show --json` has them.
#[test]
fn the_home_lists_the_roster_roles_before_any_bundle_exists() {
    let server = Server::start();
    let home = server.get("/api/v1/home");
    assert_eq!(home.status, 200, "{}", home.text());
    let home = home.json();
    assert_eq!(home["bundles"], serde_json::json!([]));
    assert_eq!(home["roster_problem"], serde_json::Value::Null);
    // The same roster as the driver loads for `roster show`.
    let model = acompose_driver::Sources::default()
        .load_model(&acompose_driver::compose::load::Selection {
            core_rules: true,
            person: acompose_driver::compose::load::Location::Embedded,
            libraries: Vec::new(),
        })
        .expect("the embedded roster loads")
        .model;
    let roles = home["roles"].as_array().expect("roles");
    let names: Vec<&str> = roles.iter().filter_map(|role| role["role"].as_str()).collect();
    let expected: Vec<&str> = model.roles.iter().map(|role| role.slug.as_str()).collect();
    assert_eq!(names, expected);
    for (role, model_role) in roles.iter().zip(&model.roles) {
        assert_eq!(role["favorite_color"], model_role.favourite.hex.as_str(), "{role}");
        let personalities = role["personalities"].as_array().expect("personalities");
        assert_eq!(personalities.len(), model_role.personalities.len(), "{role}");
        assert!(
            personalities
                .iter()
                .all(|personality| personality["color"].as_str().is_some_and(|colour| colour.starts_with('#'))),
            "{role}"
        );
    }
}

/// A browser that accepts gzip gets each asset gzip-compressed, and it unpacks to the
/// very bytes an uncompressed request gets; one that does not gets them plain.
#[test]
fn the_page_and_its_assets_are_served_gzip_compressed_when_accepted() {
    let server = Server::start();
    for path in ["/", "/assets/app.js", "/assets/app.css", "/assets/xterm.js"] {
        let plain = server.send("GET", path, &[], b"");
        assert_eq!(plain.status, 200, "{path}");
        assert_eq!(plain.header("content-encoding"), None, "{path}");
        let packed = server.send("GET", path, &[("Accept-Encoding", "gzip, deflate, br")], b"");
        assert_eq!(packed.status, 200, "{path}");
        assert_eq!(packed.header("content-encoding"), Some("gzip"), "{path}");
        assert!(packed.header("vary").is_some_and(|vary| vary.contains("accept-encoding")), "{path}");
        let body = &packed.body;
        assert_eq!(body[..3], [0x1f, 0x8b, 8], "{path}: not a gzip member");
        let trailer = &body[body.len() - 8..];
        let unpacked = miniz_oxide::inflate::decompress_to_vec(&body[10..body.len() - 8]).expect("deflate data");
        assert_eq!(unpacked, plain.body, "{path}");
        assert_eq!(u32::from_le_bytes(trailer[4..].try_into().expect("size")) as usize, plain.body.len(), "{path}");
        assert!(body.len() * 2 < plain.body.len(), "{path}: {} of {} bytes", body.len(), plain.body.len());
    }
}
