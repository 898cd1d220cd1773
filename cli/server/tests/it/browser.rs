//! The page in a real Chromium, driven through chromedriver (WebDriver): create, edit,
//! archive and restore a Person, import a hire file through its review, the swarm view
//! with Remember and Clear, a start review, a live terminal that is reopened and
//! stopped, presence, and a cross-origin write that is refused. Screenshots of each
//! main screen land in `<target>/tmp/screenshots/`.
//!
//! Without `chromium` and `chromedriver` on PATH the test says so and passes, unless
//! `ACOMPOSE_BROWSER_TESTS=required` (as `.ci/run` sets), which makes their absence a
//! failure.

use crate::support;

use std::fs;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::key::Key;
use fantoccini::{Client, ClientBuilder, Locator};
use support::{HIRE, Server};

const READY: &str = "fake runner ready";
const HOSTILE_NAME: &str = "<script>alert(1)</script><img src=x onerror=alert(2)> Ada";
const RECIPE: &str = r#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "lead"}, {"role": "reception"}]}"#;

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

fn on_path(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|folder| names.iter().map(move |name| folder.join(name)))
        .find(|candidate| candidate.is_file())
}

struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or(9515)
}

fn start_driver(driver: &Path) -> Result<(Driver, u16)> {
    let port = free_port();
    let child =
        Command::new(driver).arg(format!("--port={port}")).stdout(Stdio::null()).stderr(Stdio::null()).spawn()?;
    let driver = Driver(child);
    let give_up = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > give_up {
            return Err("chromedriver did not start listening".into());
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok((driver, port))
}

async fn connect(port: u16, browser: &Path) -> Result<Client> {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        serde_json::json!({
            "binary": browser.to_string_lossy(),
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1440,1000"]
        }),
    );
    let client = ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(capabilities)
        .connect(&format!("http://127.0.0.1:{port}"))
        .await?;
    Ok(client)
}

/// Waits until the element's text contains `needle`; returns the text.
async fn wait_text(client: &Client, css: &str, needle: &str) -> Result<String> {
    let give_up = Instant::now() + Duration::from_secs(20);
    let mut last = String::new();
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && let Ok(text) = element.text().await
        {
            if text.contains(needle) {
                return Ok(text);
            }
            last = text;
        }
        if Instant::now() > give_up {
            return Err(format!("`{css}` never showed {needle:?}; last {last:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Clicks, trying again while the page re-renders the element.
async fn click(client: &Client, css: &str) -> Result {
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let attempt = match client.find(Locator::Css(css)).await {
            Ok(element) => element.click().await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(error) if Instant::now() > give_up => return Err(format!("cannot click `{css}`: {error}").into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn wait_for(client: &Client, css: &str) -> Result {
    let give_up = Instant::now() + Duration::from_secs(20);
    while client.find(Locator::Css(css)).await.is_err() {
        if Instant::now() > give_up {
            return Err(format!("`{css}` never appeared").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(())
}

async fn fill(client: &Client, css: &str, text: &str) -> Result {
    wait_for(client, css).await?;
    let element = client.find(Locator::Css(css)).await?;
    element.clear().await?;
    element.send_keys(text).await?;
    Ok(())
}

fn screenshots() -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR")).join("screenshots");
    let _ = fs::create_dir_all(&folder);
    folder
}

/// A screenshot of the window with `css` scrolled to the top.
async fn shoot(client: &Client, name: &str, css: &str) -> Result {
    client
        .execute(
            "const node = document.querySelector(arguments[0]); if (node) node.scrollIntoView({block: 'start'});",
            vec![serde_json::json!(css)],
        )
        .await?;
    let png = client.screenshot().await?;
    fs::write(screenshots().join(format!("{name}.png")), png)?;
    Ok(())
}

/// A page on another loopback port: another origin, as a hostile site would be.
fn foreign_site() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buffer = [0_u8; 4096];
            let _ = stream.read(&mut buffer);
            let body = "<!doctype html><title>elsewhere</title><p>another site</p>";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(port)
}

fn sandbox() -> Server {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "project", "bin", "uploads"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
    std::os::unix::fs::symlink(root.join("project"), root.join("ws/projects/desk")).expect("link the project");
    let script = format!("#!/bin/sh\necho '{READY}'\nwhile read line; do echo \"got $line\"; done\n");
    let runner = root.join("bin/claude");
    fs::write(&runner, script).expect("fake runner");
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("executable");
    fs::write(root.join("uploads/pam.json"), HIRE).expect("hire file");
    fs::write(root.join("uploads/recipe.json"), RECIPE).expect("recipe");
    let path_variable = root.join("bin").into_os_string();
    Server::start_with(dir, "ws", Some(path_variable))
}

#[tokio::test]
async fn the_page_does_every_people_task_in_a_real_browser() -> Result {
    let required = std::env::var("ACOMPOSE_BROWSER_TESTS").is_ok_and(|value| value == "required");
    let (Some(browser), Some(driver)) =
        (on_path(&["chromium", "chromium-browser", "google-chrome"]), on_path(&["chromedriver"]))
    else {
        assert!(!required, "ACOMPOSE_BROWSER_TESTS=required but chromium or chromedriver is not on PATH");
        eprintln!(
            "skipped: the browser test needs `chromium` and `chromedriver` on PATH \
             (Debian: apt-get install chromium chromium-driver)"
        );
        return Ok(());
    };
    let server = sandbox();
    let (_driver, driver_port) = start_driver(&driver)?;
    let client = connect(driver_port, &browser).await?;
    let outcome = journey(&client, &server).await;
    if outcome.is_err() {
        let _ = shoot(&client, "failure", "body").await;
    }
    let _ = client.close().await;
    outcome
}

async fn journey(client: &Client, server: &Server) -> Result {
    client.goto(&server.handle.url()).await?;
    wait_text(client, "h2", "Roster").await?;
    // The token left the address bar.
    assert!(!client.current_url().await?.as_str().contains("token"), "the token stayed in the address");

    create_edit_archive_restore(client, server).await?;
    import_through_review(client, server).await?;
    roster_views(client).await?;
    swarm(client, server).await?;
    live_session(client, server).await?;
    cross_origin_write(client, server).await?;
    Ok(())
}

async fn create_edit_archive_restore(client: &Client, server: &Server) -> Result {
    click(client, "a[data-nav=new]").await?;
    fill(client, "#field-id", "ada").await?;
    fill(client, "#field-name", HOSTILE_NAME).await?;
    fill(client, "#field-role", "lead").await?;
    fill(client, "#field-goal", "Lead the work.").await?;
    // The form enforces the schema before the server does: a bad role is not sent.
    fill(client, "#field-role", "Not A Slug").await?;
    click(client, "#save").await?;
    assert!(!server.path("ws/people/ada.json").exists(), "an invalid form was sent");
    fill(client, "#field-role", "lead").await?;
    click(client, "#save").await?;
    wait_text(client, "h2", "Ada").await?;
    // The name is shown as text: the markup in it did not become elements.
    let heading = client.find(Locator::Css("h2")).await?.text().await?;
    assert_eq!(heading, HOSTILE_NAME);
    let injected = client.execute("return document.querySelectorAll('#view script, #view img').length", vec![]).await?;
    assert_eq!(injected, serde_json::json!(0));
    wait_text(client, "#presence", "offline").await?;

    click(client, "#edit").await?;
    wait_text(client, "h2", "Edit Person").await?;
    fill(client, "#field-goal", "Lead the work, calmly.").await?;
    fill(client, "#field-skills", "planning\nreview").await?;
    shoot(client, "edit-form", "h2").await?;
    click(client, "#save").await?;
    wait_text(client, ".fields", "Lead the work, calmly.").await?;
    let stored: serde_json::Value = serde_json::from_slice(&fs::read(server.path("ws/people/ada.json"))?)?;
    assert_eq!(stored["skills"], serde_json::json!(["planning", "review"]));

    click(client, "#archive").await?;
    wait_for(client, "#restore").await?;
    wait_text(client, "#presence", "archived").await?;
    click(client, "#restore").await?;
    wait_for(client, "#archive").await?;
    wait_text(client, "#presence", "offline").await?;
    Ok(())
}

async fn import_through_review(client: &Client, server: &Server) -> Result {
    click(client, "a[data-nav=import]").await?;
    wait_for(client, "#hire-file").await?;
    let upload = server.path("uploads/pam.json");
    client.find(Locator::Css("#hire-file")).await?.send_keys(&upload.to_string_lossy()).await?;
    fill(client, "#field-import_role", "reception").await?;
    click(client, "#review").await?;
    wait_text(client, "#mapped", "Pam Beesly").await?;
    wait_text(client, "#ignored", "author").await?;
    assert!(
        !server.path("ws/people/pam-beesly.json").exists() && !server.path("ws/people/pam.json").exists(),
        "the review wrote a file"
    );
    shoot(client, "import-review", "#import-review").await?;
    click(client, "#save-import").await?;
    wait_text(client, "h2", "Pam Beesly").await?;
    let written: Vec<String> = fs::read_dir(server.path("ws/people"))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(written.iter().any(|name| name.starts_with("pam")), "{written:?}");
    Ok(())
}

async fn roster_views(client: &Client) -> Result {
    click(client, "a[data-nav=people]").await?;
    wait_text(client, "#configured", "Pam Beesly").await?;
    shoot(client, "roster", "body").await?;
    client.set_window_size(360, 800).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    shoot(client, "roster-360", "body").await?;
    click(client, "#compact").await?;
    shoot(client, "roster-compact-360", "body").await?;
    click(client, "#compact").await?;
    client.set_window_size(1440, 1000).await?;
    // Keyboard use: focus moves to the first link and the skip link works.
    let focused = client
        .execute("document.querySelector('.skip').focus(); return document.activeElement.className", vec![])
        .await?;
    assert_eq!(focused, serde_json::json!("skip"));
    Ok(())
}

async fn swarm(client: &Client, server: &Server) -> Result {
    click(client, "a[data-nav=swarm]").await?;
    wait_for(client, "#recipe-file").await?;
    let recipe = server.path("uploads/recipe.json");
    client.find(Locator::Css("#recipe-file")).await?.send_keys(&recipe.to_string_lossy()).await?;
    click(client, "#preview").await?;
    wait_text(client, "#swarm", "reception").await?;
    wait_for(client, "#assign-lead").await?;
    // Choosing re-renders the table; a stale element afterwards is expected.
    let _ = client.find(Locator::Css("#assign-lead")).await?.select_by_value("ada").await;
    wait_text(client, "tr[data-role=lead] .resolved", "ada").await?;
    click(client, "tr[data-role=lead] .remember").await?;
    wait_text(client, "tr[data-role=lead]", "pinned: ada").await?;
    let bindings = fs::read_to_string(server.path("ws/people/bindings.yaml"))?;
    assert!(bindings.contains("person_id: \"ada\""), "{bindings}");
    shoot(client, "swarm", "h2").await?;
    click(client, "tr[data-role=lead] .clear").await?;
    wait_text(client, "#status", "Cleared").await?;
    let cleared = fs::read_to_string(server.path("ws/people/bindings.yaml"))?;
    assert!(!cleared.contains("ada"), "{cleared}");
    Ok(())
}

async fn live_session(client: &Client, server: &Server) -> Result {
    client.goto(&format!("{}/?reloaded#/people/ada", server.handle.origin())).await?;
    // A reload without the token shows how to get in, and nothing else.
    wait_text(client, "h2", "Token needed").await?;
    client.goto(&format!("{}#/start/ada", server.handle.url())).await?;
    wait_for(client, "#start-form").await?;
    fill(client, "#field-start_task", "Sort the mail.").await?;
    click(client, "#review-start").await?;
    let prompt = wait_text(client, "#prompt-preview", "Sort the mail.").await?;
    assert!(prompt.contains("Lead the work, calmly."), "{prompt}");
    assert!(
        server.snapshot().iter().all(|(path, _)| !path.to_string_lossy().contains("sessions/")),
        "the review wrote a record"
    );
    shoot(client, "start-review", "#start-review").await?;
    click(client, "#start-now").await?;
    wait_text(client, "#terminal", READY).await?;
    let address = client.current_url().await?;
    let session = address.fragment().unwrap_or_default().trim_start_matches("/sessions/").to_owned();

    // Online only while the PTY lives.
    click(client, "a[data-nav=people]").await?;
    wait_text(client, "li[data-person=ada] .presence", "online").await?;
    wait_text(client, "li[data-person^=pam] .presence", "offline").await?;

    // Reopened: the output so far is there, and typing reaches the runner.
    click(client, "a[data-nav=sessions]").await?;
    click(client, &format!("tr[data-session='{session}'] a")).await?;
    wait_text(client, "#terminal", READY).await?;
    click(client, "#terminal .xterm-screen").await?;
    client.active_element().await?.send_keys(&format!("ping{}", char::from(Key::Enter))).await?;
    wait_text(client, "#terminal", "got ping").await?;
    shoot(client, "live-session", "body").await?;
    click(client, "#stop").await?;
    wait_text(client, "#session-status", "stopped").await?;
    click(client, "a[data-nav=people]").await?;
    wait_text(client, "li[data-person=ada] .presence", "offline").await?;
    Ok(())
}

async fn cross_origin_write(client: &Client, server: &Server) -> Result {
    let port = foreign_site()?;
    client.goto(&format!("http://127.0.0.1:{port}/")).await?;
    let target = format!("{}/api/v1/people/ada/archive", server.handle.origin());
    // A form-like post (no preflight) and one that even carries the token.
    let script = "const [url, token] = arguments; \
        const plain = await fetch(url, {method: 'POST', mode: 'no-cors', body: 'x'}).then(() => 'sent', () => 'failed'); \
        const bearer = await fetch(url, {method: 'POST', headers: {Authorization: 'Bearer ' + token}}).then(r => String(r.status), () => 'failed'); \
        return [plain, bearer];";
    let outcome = client
        .execute(
            &format!("return (async () => {{ {script} }})();"),
            vec![serde_json::json!(target), serde_json::json!(server.handle.token)],
        )
        .await?;
    assert_eq!(
        outcome[1],
        serde_json::json!("failed"),
        "a cross-origin request with the token got an answer: {outcome}"
    );
    let ada = server.get("/api/v1/people/ada").json();
    assert_eq!(ada["archived"], false, "a cross-origin write went through");
    Ok(())
}

const SWARM_RECIPE: &str = r#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "platform"}, {"role": "qa"}]}"#;

/// A workspace whose People bind roles against `roster:core`, a fake `claude` that
/// prints its arguments, and a two-role recipe: `platform` (a roster role, Ann's) and
/// `qa` (no Person: ephemeral).
fn swarm_sandbox() -> Server {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "project", "bin", "uploads", "projects-root"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
    std::os::unix::fs::symlink(root.join("project"), root.join("ws/projects/desk")).expect("link the project");
    let script = format!(
        "#!/bin/sh\necho '{READY}' \"role=$AGENT_GIT_ATTRIBUTION_ROLE\" \"args=$*\"\nwhile read line; do echo \"got $line\"; done\n"
    );
    let runner = root.join("bin/claude");
    fs::write(&runner, script).expect("fake runner");
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("executable");
    let ann = acompose_driver::people::Person::new("ann", "Ann", "platform", "Keep the platform up.");
    fs::write(root.join("ws/people/ann.json"), acompose_driver::people::document::person_bytes(&ann))
        .expect("a Person");
    fs::write(root.join("uploads/swarm.json"), SWARM_RECIPE).expect("recipe");
    let path_variable = root.join("bin").into_os_string();
    Server::start_with_roster(dir, "ws", path_variable)
}

#[tokio::test]
async fn a_swarm_run_starts_reopens_stops_and_a_session_resumes_in_a_real_browser() -> Result {
    let required = std::env::var("ACOMPOSE_BROWSER_TESTS").is_ok_and(|value| value == "required");
    let (Some(browser), Some(driver)) =
        (on_path(&["chromium", "chromium-browser", "google-chrome"]), on_path(&["chromedriver"]))
    else {
        assert!(!required, "ACOMPOSE_BROWSER_TESTS=required but chromium or chromedriver is not on PATH");
        eprintln!("skipped: the browser test needs `chromium` and `chromedriver` on PATH");
        return Ok(());
    };
    let server = swarm_sandbox();
    let (_driver, driver_port) = start_driver(&driver)?;
    let client = connect(driver_port, &browser).await?;
    let outcome = swarm_journey(&client, &server).await;
    if outcome.is_err() {
        let _ = shoot(&client, "swarm-failure", "body").await;
    }
    let _ = client.close().await;
    outcome
}

async fn swarm_journey(client: &Client, server: &Server) -> Result {
    let people_before = fs::read(server.path("ws/people/ann.json"))?;
    client.goto(&format!("{}#/swarm", server.handle.url())).await?;
    wait_for(client, "#recipe-file").await?;
    let recipe = server.path("uploads/swarm.json");
    client.find(Locator::Css("#recipe-file")).await?.send_keys(&recipe.to_string_lossy()).await?;
    click(client, "#preview").await?;
    wait_text(client, "#swarm", "qa").await?;
    wait_for(client, "#run-form").await?;
    click(client, "#review-run").await?;
    // The review: Ann works as platform with its bundle; qa is ephemeral.
    wait_text(client, "#run-roles tr[data-role=platform]", "bundle").await?;
    wait_text(client, "#run-roles tr[data-role=platform]", "ann").await?;
    wait_text(client, "#run-roles tr[data-role=qa]", "ephemeral").await?;
    assert!(!server.path("ws/.agent-toolkit/runs").exists(), "the review recorded a run");
    shoot(client, "swarm-review", "#run-review").await?;
    click(client, "#start-run").await?;
    wait_text(client, "#run-sessions tr[data-role=platform] .run-status", "running").await?;
    wait_text(client, "#run-sessions tr[data-role=qa] .run-status", "running").await?;
    let runs: Vec<_> = fs::read_dir(server.path("ws/.agent-toolkit/runs"))?.flatten().collect();
    assert_eq!(runs.len(), 1, "one run is recorded");
    let run_address = client.current_url().await?;

    // Open the platform role's terminal, go back, and reopen it: the output is there.
    click(client, "#run-sessions tr[data-role=platform] .open-terminal").await?;
    wait_text(client, "#terminal", "role=platform").await?;
    client.goto(run_address.as_str()).await?;
    wait_for(client, "#run-sessions").await?;
    click(client, "#run-sessions tr[data-role=platform] .open-terminal").await?;
    wait_text(client, "#terminal", READY).await?;
    click(client, "#terminal .xterm-screen").await?;
    client.active_element().await?.send_keys(&format!("hello{}", char::from(Key::Enter))).await?;
    wait_text(client, "#terminal", "got hello").await?;
    shoot(client, "swarm-terminal", "body").await?;

    // Stop the whole run.
    client.goto(run_address.as_str()).await?;
    click(client, "#stop-run").await?;
    wait_text(client, "#run-sessions tr[data-role=platform] .run-status", "stopped").await?;
    wait_text(client, "#run-sessions tr[data-role=qa] .run-status", "stopped").await?;
    assert_eq!(fs::read(server.path("ws/people/ann.json"))?, people_before, "the run changed a Person");

    // Resume the platform session: a new session on the same conversation.
    click(client, "#run-sessions tr[data-role=platform] .open-terminal").await?;
    wait_for(client, "#resume").await?;
    let old = client.current_url().await?.fragment().unwrap_or_default().to_owned();
    click(client, "#resume").await?;
    wait_text(client, "#terminal", "args=--resume ").await?;
    let new = client.current_url().await?.fragment().unwrap_or_default().to_owned();
    assert_ne!(old, new, "the resume is a new session");
    let id = new.trim_start_matches("/sessions/");
    let entry = server.get(&format!("/api/v1/sessions/{id}")).json();
    assert_eq!(entry["resumed_from"], old.trim_start_matches("/sessions/"));
    shoot(client, "resumed", "body").await?;
    click(client, "#stop").await?;
    wait_text(client, "#session-status", "stopped").await?;
    Ok(())
}
