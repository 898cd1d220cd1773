//! The page in a real Chromium, driven through chromedriver (WebDriver): create, edit,
//! archive and restore a Person, a stale edit refused with 409 that keeps the archive,
//! import a hire file through its review (an id already taken flagged before Save, the
//! review kept when Save fails), a project added by its folder, a swarm recipe made in
//! the page with Remember, Clear and fallbacks, a start review, a live terminal that is
//! reopened and stopped, a session killed outside the page shown as ended within 2 s,
//! presence, the composition views, and a cross-origin write that is refused.
//!
//! Every view is shown at 1280×800 and at 390×844: at 390 px no view scrolls sideways,
//! at 1280 px the import review's first two columns are at least 12 characters wide.
//! axe-core (pinned in `.ci/browser/package.json`, installed by `.ci/run` into a cache
//! folder) is injected into every view at both sizes and must report no serious or
//! critical violation. The terminal shows `_` whole at device pixel ratio 1 and 2.
//! Screenshots of each view at both sizes land in `<target>/tmp/screenshots/`.
//!
//! Without `chromium` and `chromedriver` on PATH the test says so and passes, unless
//! `ACOMPOSE_BROWSER_TESTS=required` (as `.ci/run` sets), which makes their absence, or
//! the absence of axe-core, a failure.

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

const WIDE: (u32, u32) = (1280, 800);
const NARROW: (u32, u32) = (390, 844);

async fn connect(port: u16, browser: &Path) -> Result<Client> {
    connect_at(port, browser, 1).await
}

/// A browser whose device pixel ratio is `ratio`.
async fn connect_at(port: u16, browser: &Path, ratio: u32) -> Result<Client> {
    let mut capabilities = serde_json::Map::new();
    capabilities.insert(
        "goog:chromeOptions".to_owned(),
        serde_json::json!({
            "binary": browser.to_string_lossy(),
            "args": [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                format!("--window-size={},{}", WIDE.0, WIDE.1),
                format!("--force-device-scale-factor={ratio}"),
            ]
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

/// Gives a file input the path of `file`, trying again while the page re-renders it.
async fn send_file(client: &Client, css: &str, file: &Path) -> Result {
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let attempt = match client.find(Locator::Css(css)).await {
            Ok(element) => element.send_keys(&file.to_string_lossy()).await.map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(error) if Instant::now() > give_up => return Err(format!("cannot give `{css}` a file: {error}").into()),
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

/// Clears the field and types `text`, trying again while the page re-renders it.
async fn fill(client: &Client, css: &str, text: &str) -> Result {
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let attempt = match client.find(Locator::Css(css)).await {
            Ok(element) => match element.clear().await {
                Ok(()) => element.send_keys(text).await.map_err(|error| error.to_string()),
                Err(error) => Err(error.to_string()),
            },
            Err(error) => Err(error.to_string()),
        };
        match attempt {
            Ok(()) => return Ok(()),
            Err(error) if Instant::now() > give_up => return Err(format!("cannot fill `{css}`: {error}").into()),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Reads `expression` of the element `css` (named `node` in it) in the page, in one
/// step, so a re-render between finding the element and reading it cannot make the
/// read fail; waits while there is no such element.
async fn read(client: &Client, css: &str, expression: &str) -> Result<serde_json::Value> {
    let script =
        format!("const node = document.querySelector(arguments[0]); return node === null ? null : ({expression});");
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        let value = client.execute(&script, vec![serde_json::json!(css)]).await?;
        if !value.is_null() {
            return Ok(value);
        }
        if Instant::now() > give_up {
            return Err(format!("`{css}` never appeared").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The element's rendered text, read in one step.
async fn text_of(client: &Client, css: &str) -> Result<String> {
    Ok(read(client, css, "node.innerText").await?.as_str().unwrap_or_default().to_owned())
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

/// A home with one converged role, so the composition views have something to show.
fn converged_home(root: &Path) {
    let projects = root.join("estate");
    let skill = |name: &str| format!("---\nname: {name}\ndescription: The {name} skill.\n---\n\nBody of {name}.\n");
    for (path, text) in [
        ("acme/root/.agents/roles.kdl", "repositories {\n    repository tools path=\"acme/tools\"\n}\nroles {\n    role platform {\n        use-repository tools\n    }\n}\n".to_owned()),
        ("acme/root/.agents/skills/estate-map/SKILL.md", skill("estate-map")),
        ("acme/tools/.agents/skills/deploy-check/SKILL.md", skill("deploy-check")),
    ] {
        let path = projects.join(path);
        fs::create_dir_all(path.parent().expect("parent")).expect("folder");
        fs::write(path, text).expect("estate file");
    }
    fs::create_dir_all(root.join("home")).expect("home");
    fs::write(root.join("home/agent-compose.yaml"), "operating_context:\n  - acme/root\n").expect("config");
    acompose_driver::convergence::converge_home(&root.join("home"), &projects, &acompose_driver::NoProgress)
        .expect("the home converges");
}

fn sandbox() -> Server {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "project", "bin", "uploads", "second-project"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
    std::os::unix::fs::symlink(root.join("project"), root.join("ws/projects/desk")).expect("link the project");
    converged_home(root);
    let script = format!("#!/bin/sh\necho '{READY}'\nwhile read line; do echo \"got $line\"; done\n");
    use std::os::unix::fs::PermissionsExt as _;
    for binary in ["claude", "codex"] {
        let runner = root.join("bin").join(binary);
        fs::write(&runner, &script).expect("fake runner");
        fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("executable");
    }
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
    let axe = axe_source(required)?;
    let server = sandbox();
    let (_driver, driver_port) = start_driver(&driver)?;
    let client = connect(driver_port, &browser).await?;
    let page = Page { client: &client, axe: axe.as_deref() };
    let outcome = journey(&page, &server).await;
    if outcome.is_err() {
        let _ = shoot(&client, "failure", "body").await;
    }
    let _ = client.close().await;
    outcome?;
    // The terminal again, in a browser whose device pixel ratio is 2.
    let sharp = connect_at(driver_port, &browser, 2).await?;
    let outcome = terminal_glyphs_whole(&sharp, &server, 2).await;
    let _ = sharp.close().await;
    outcome
}

/// The page under test and the accessibility checker to inject into it.
struct Page<'a> {
    client: &'a Client,
    axe: Option<&'a str>,
}

/// axe-core's script: `ACOMPOSE_AXE_CORE`, else where `.ci/run` installs it. Without it
/// the accessibility check is skipped, unless the suite is required.
fn axe_source(required: bool) -> Result<Option<String>> {
    let path = std::env::var_os("ACOMPOSE_AXE_CORE").map(PathBuf::from).or_else(|| {
        let cache = std::env::var_os("XDG_CACHE_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::home_dir().map(|home| home.join(".cache")))?;
        Some(cache.join("acompose-ci/browser/node_modules/axe-core/axe.min.js"))
    });
    match path.map(fs::read_to_string) {
        Some(Ok(source)) => Ok(Some(source)),
        _ if required => {
            Err("ACOMPOSE_BROWSER_TESTS=required but axe-core is missing: install .ci/browser/package.json \
             into ~/.cache/acompose-ci/browser (as .ci/run does) or set ACOMPOSE_AXE_CORE"
                .into())
        }
        _ => {
            eprintln!("accessibility check skipped: axe-core is not installed (see .ci/browser/package.json)");
            Ok(None)
        }
    }
}

async fn journey(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    client.goto(&server.handle.url()).await?;
    wait_text(client, "h2", "Roster").await?;
    // The token left the address bar.
    assert!(!client.current_url().await?.as_str().contains("token"), "the token stayed in the address");
    // The page listens for changes.
    wait_attribute(client, "body", "data-live", "connected").await?;

    create_edit_archive_restore(client, server).await?;
    a_stale_edit_keeps_the_archive(page, server).await?;
    import_through_review(page, server).await?;
    roster_views(page).await?;
    add_a_project(page, server).await?;
    swarm(page, server).await?;
    live_session(page, server).await?;
    killed_outside(page, server).await?;
    composition(page).await?;
    cross_origin_write(client, server).await?;
    Ok(())
}

async fn wait_attribute(client: &Client, css: &str, name: &str, value: &str) -> Result {
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && element.attr(name).await.ok().flatten().as_deref() == Some(value)
        {
            return Ok(());
        }
        if Instant::now() > give_up {
            return Err(format!("`{css}` never had {name}={value:?}").into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The view on screen at 1280×800 and at 390×844: a screenshot of each, no sideways
/// scrolling at 390 px, and no serious or critical accessibility violation at either.
async fn both_sizes(page: &Page<'_>, name: &str, css: &str) -> Result {
    let client = page.client;
    for (width, height) in [NARROW, WIDE] {
        client.set_window_size(width, height).await?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let sizes = client
            .execute(
                "const root = document.documentElement; return [root.scrollWidth, root.clientWidth, window.innerWidth];",
                vec![],
            )
            .await?;
        if width == NARROW.0 {
            let scroll = sizes[0].as_u64().unwrap_or(u64::MAX);
            let client_width = sizes[1].as_u64().unwrap_or(0);
            assert!(scroll <= client_width, "{name} scrolls sideways at {width} px: {sizes}");
        }
        accessible(page, &format!("{name} at {width} px")).await?;
        shoot(client, &format!("{name}-{width}"), css).await?;
    }
    Ok(())
}

/// Runs axe-core on the page; fails on any serious or critical violation.
async fn accessible(page: &Page<'_>, label: &str) -> Result {
    let Some(axe) = page.axe else { return Ok(()) };
    let loaded = page.client.execute("return typeof window.axe", vec![]).await?;
    if loaded != serde_json::json!("object") {
        page.client.execute(axe, vec![]).await?;
    }
    let script = "return (async () => { \
        const result = await window.axe.run(document, {resultTypes: ['violations']}); \
        return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical') \
            .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')); \
    })();";
    let violations = page.client.execute(script, vec![]).await?;
    assert_eq!(violations, serde_json::json!([]), "axe-core on {label}");
    Ok(())
}

/// Goes to a view by its address, as a link would.
async fn visit(client: &Client, fragment: &str) -> Result {
    client.execute("window.location.hash = arguments[0];", vec![serde_json::json!(fragment)]).await?;
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
    let heading = text_of(client, "h2").await?;
    assert_eq!(heading, HOSTILE_NAME);
    let injected = client.execute("return document.querySelectorAll('#view script, #view img').length", vec![]).await?;
    assert_eq!(injected, serde_json::json!(0));
    wait_text(client, "#presence", "offline").await?;

    click(client, "#edit").await?;
    wait_text(client, "h2", "Edit Person").await?;
    fill(client, "#field-goal", "Lead the work, calmly.").await?;
    fill(client, "#field-skills", "planning\nreview").await?;
    fill(client, "#field-max_seconds", "1800").await?;
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

/// An edit form opened before an archive cannot undo it: the page says at once that the
/// Person changed, Save gets 409 and shows what changed, and the file stays archived.
async fn a_stale_edit_keeps_the_archive(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    visit(client, "#/people/ada/edit").await?;
    wait_text(client, "h2", "Edit Person").await?;
    both_sizes(page, "edit-form", "h2").await?;
    fill(client, "#field-goal", "An edit made before the archive.").await?;
    // Archived elsewhere (another tab, or the cli) while the form is open.
    assert_eq!(server.post("/api/v1/people/ada/archive", "").status, 200);
    wait_text(client, "#form-stale", "changed since you opened the form").await?;
    click(client, "#save").await?;
    wait_text(client, "#form-stale", "Not saved").await?;
    wait_text(client, "#form-stale .changes", "Archived").await?;
    shoot(client, "stale-edit", "#form-stale").await?;
    let stored: serde_json::Value = serde_json::from_slice(&fs::read(server.path("ws/people/ada.json"))?)?;
    assert_eq!(stored["archived"], true, "the stale edit undid the archive");
    assert_eq!(stored["goal"], "Lead the work, calmly.");
    // The current version opens; with it, Restore goes through.
    click(client, "#reload-current").await?;
    wait_for(client, "#person-form").await?;
    visit(client, "#/people/ada").await?;
    click(client, "#restore").await?;
    wait_text(client, "#presence", "offline").await?;
    both_sizes(page, "person", "h2").await?;
    Ok(())
}

/// The width of a table's first two columns in characters of the page's font.
async fn column_characters(client: &Client, table: &str) -> Result<Vec<f64>> {
    let script = "const cells = [...document.querySelectorAll(arguments[0] + ' tbody tr:first-child td')].slice(0, 2); \
        const probe = document.createElement('span'); probe.textContent = '0'.repeat(100); \
        cells[0].appendChild(probe); const ch = probe.getBoundingClientRect().width / 100; probe.remove(); \
        return cells.map(cell => { const style = getComputedStyle(cell); \
            return (cell.getBoundingClientRect().width - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)) / ch; });";
    let widths = client.execute(script, vec![serde_json::json!(table)]).await?;
    Ok(widths.as_array().into_iter().flatten().filter_map(serde_json::Value::as_f64).collect())
}

async fn import_through_review(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    click(client, "a[data-nav=import]").await?;
    wait_for(client, "#hire-file").await?;
    let upload = server.path("uploads/pam.json");
    send_file(client, "#hire-file", &upload).await?;
    fill(client, "#field-import_role", "reception").await?;
    fill(client, "#field-import_max_tokens", "1000").await?;
    click(client, "#review").await?;
    wait_text(client, "#mapped", "Pam Beesly").await?;
    wait_text(client, "#ignored", "author").await?;
    // Targets are named as the form labels them, not as schema paths.
    let mapped = wait_text(client, "#mapped", "Max tokens").await?;
    assert!(!mapped.contains("budget.max_tokens") && !mapped.contains("--"), "{mapped}");
    assert!(
        !server.path("ws/people/pam-beesly.json").exists() && !server.path("ws/people/pam.json").exists(),
        "the review wrote a file"
    );
    client.set_window_size(WIDE.0, WIDE.1).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let widths = column_characters(client, "#mapped").await?;
    assert!(
        widths.len() == 2 && widths.iter().all(|width| *width >= 12.0),
        "columns too narrow at 1280 px: {widths:?}"
    );
    both_sizes(page, "import-review", "#import-review").await?;

    // A Save that fails keeps the review: the file appears in between, as another
    // import would make it.
    let id = text_of(client, "#import-review").await?;
    assert!(id.contains("pam-beesly"), "{id}");
    fs::write(server.path("ws/people/pam-beesly.json"), support::person("pam-beesly", "Other Pam", "reception"))?;
    click(client, "#save-import").await?;
    wait_text(client, "#save-result", "already exists").await?;
    wait_text(client, "#mapped", "Pam Beesly").await?;
    // Reviewed again, the taken id is flagged before Save.
    click(client, "#review").await?;
    wait_for(client, "#id-exists").await?;
    let disabled = read(client, "#save-import", "node.hasAttribute('disabled')").await?;
    assert_eq!(disabled, serde_json::Value::Bool(true), "Save is offered for an id that exists");
    shoot(client, "import-id-taken", "#import-review").await?;
    fs::remove_file(server.path("ws/people/pam-beesly.json"))?;
    click(client, "#review").await?;
    wait_text(client, "#mapped", "Pam Beesly").await?;
    click(client, "#save-import").await?;
    wait_text(client, "h2", "Pam Beesly").await?;
    let written: Vec<String> = fs::read_dir(server.path("ws/people"))?
        .flatten()
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(written.iter().any(|name| name.starts_with("pam")), "{written:?}");
    Ok(())
}

async fn roster_views(page: &Page<'_>) -> Result {
    let client = page.client;
    click(client, "a[data-nav=people]").await?;
    wait_text(client, "#configured", "Pam Beesly").await?;
    both_sizes(page, "roster", "body").await?;
    client.set_window_size(NARROW.0, NARROW.1).await?;
    click(client, "#compact").await?;
    shoot(client, "roster-compact-390", "body").await?;
    click(client, "#compact").await?;
    client.set_window_size(WIDE.0, WIDE.1).await?;
    click(client, "a[data-nav=new]").await?;
    wait_for(client, "#person-form").await?;
    both_sizes(page, "new-person", "h2").await?;
    click(client, "a[data-nav=people]").await?;
    // Keyboard use: focus moves to the first link and the skip link works.
    let focused = client
        .execute("document.querySelector('.skip').focus(); return document.activeElement.className", vec![])
        .await?;
    assert_eq!(focused, serde_json::json!("skip"));
    Ok(())
}

/// A project added by its folder: the page makes the link inside the workspace.
async fn add_a_project(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    click(client, "a[data-nav=projects]").await?;
    wait_text(client, "#projects", "desk").await?;
    fill(client, "#field-project_folder", &server.path("second-project").to_string_lossy()).await?;
    // The id is suggested from the folder's name.
    let suggested = read(client, "#field-project_id", "node.value").await?;
    assert_eq!(suggested, serde_json::json!("second-project"));
    click(client, "#add-project").await?;
    wait_text(client, "#projects", "second-project").await?;
    let link = server.path("ws/projects/second-project");
    assert!(fs::symlink_metadata(&link)?.file_type().is_symlink());
    fill(client, "#field-project_folder", "/nowhere/at/all").await?;
    fill(client, "#field-project_id", "nowhere").await?;
    click(client, "#add-project").await?;
    wait_text(client, "#project-result", "no folder at this path").await?;
    both_sizes(page, "projects", "h2").await?;
    Ok(())
}

async fn swarm(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    click(client, "a[data-nav=swarm]").await?;
    wait_for(client, "#recipe-file").await?;
    // A recipe made in the page, in the format the cli reads.
    wait_for(client, "#recipe-form input[value=lead]").await?;
    fill(client, "#field-recipe_name", "front-office").await?;
    click(client, "#recipe-form input[value=lead]").await?;
    click(client, "#recipe-form input[value=reception]").await?;
    click(client, "#save-recipe").await?;
    wait_text(client, "#swarm", "reception").await?;
    let recipe: serde_json::Value = serde_json::from_slice(&fs::read(server.path("ws/recipes/front-office.json"))?)?;
    assert_eq!(
        recipe,
        serde_json::json!({"spec": "acompose/people-recipe@1", "roles": [{"role": "lead"}, {"role": "reception"}]})
    );
    wait_text(client, "#recipe-list", "front-office").await?;
    let recipe = server.path("uploads/recipe.json");
    send_file(client, "#recipe-file", &recipe).await?;
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
    // Fallbacks, in order, seen and edited in the page.
    fill(client, "#fallbacks-reception", "pam-beesly").await?;
    click(client, "tr[data-role=reception] .save-fallbacks").await?;
    wait_text(client, "#status", "fallbacks of reception").await?;
    let bindings = fs::read_to_string(server.path("ws/people/bindings.yaml"))?;
    assert!(bindings.contains("preferred_people") && bindings.contains("pam-beesly"), "{bindings}");
    both_sizes(page, "swarm", "h2").await?;
    click(client, "tr[data-role=lead] .clear").await?;
    wait_text(client, "#status", "Cleared").await?;
    let cleared = fs::read_to_string(server.path("ws/people/bindings.yaml"))?;
    assert!(!cleared.contains("ada"), "{cleared}");
    // A fallback who cannot fill the role is listed as passed over, with the reason.
    let archived = server.post("/api/v1/people/pam-beesly/archive", "");
    assert_eq!(archived.status, 200);
    click(client, "#recipe-list .use-recipe").await?;
    wait_text(client, "tr[data-role=reception] .skipped", "pam-beesly: is archived").await?;
    shoot(client, "swarm-skipped", "#swarm").await?;
    assert_eq!(server.post("/api/v1/people/pam-beesly/restore", "").status, 200);
    Ok(())
}

async fn live_session(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    client.goto(&format!("{}/?reloaded#/people/ada", server.handle.origin())).await?;
    // A reload without the token shows how to get in, and nothing else.
    wait_text(client, "h2", "Token needed").await?;
    // A limit the runner cannot enforce: Start waits for the acknowledgement. (Claude
    // Code's token and cost limits are enforced from its transcript; Codex records no
    // cost, so its cost limit is not.)
    let pam = server.path("ws/people/pam-beesly.json");
    let mut person: serde_json::Value = serde_json::from_slice(&fs::read(&pam)?)?;
    person["budget"]["max_cost_usd"] = serde_json::json!(5);
    fs::write(&pam, serde_json::to_vec_pretty(&person)?)?;
    client.goto(&format!("{}#/start/pam-beesly", server.handle.url())).await?;
    wait_for(client, "#start-form").await?;
    read(client, "#start-runner", "(node.value = 'codex')").await?;
    click(client, "#review-start").await?;
    wait_for(client, "#acknowledge").await?;
    let disabled = read(client, "#start-now", "node.hasAttribute('disabled')").await?;
    assert_eq!(disabled, serde_json::Value::Bool(true), "Start is enabled before the acknowledgement");
    click(client, "#acknowledge").await?;
    let disabled = read(client, "#start-now", "node.hasAttribute('disabled')").await?;
    assert_eq!(disabled, serde_json::Value::Bool(false), "Start stays disabled after the acknowledgement");
    both_sizes(page, "start-review-acknowledge", "#start-review").await?;

    visit(client, "#/start/ada").await?;
    wait_text(client, "#start-form", "Lead the work, calmly.").await?;
    // The goal is not preloaded as the task: it is in the prompt once.
    let task = read(client, "#field-start_task", "node.value").await?;
    assert_eq!(task, serde_json::json!(""));
    fill(client, "#field-start_task", "Sort the mail.").await?;
    click(client, "#review-start").await?;
    let prompt = wait_text(client, "#prompt-preview", "Sort the mail.").await?;
    assert_eq!(prompt.matches("Lead the work, calmly.").count(), 1, "{prompt}");
    // The enforced time limit is in the review.
    wait_text(client, "#start-facts", "30 minutes (enforced").await?;
    assert!(
        server.snapshot().iter().all(|(path, _)| !path.to_string_lossy().contains("sessions/")),
        "the review wrote a record"
    );
    both_sizes(page, "start-review", "#start-review").await?;
    click(client, "#start-now").await?;
    wait_text(client, "#terminal", READY).await?;
    terminal_glyphs_at(client, 1).await?;
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
    both_sizes(page, "live-session", "body").await?;
    click(client, "#stop").await?;
    wait_text(client, "#session-status", "stopped").await?;
    wait_text(client, "#session-ending", "ended").await?;
    click(client, "a[data-nav=people]").await?;
    wait_text(client, "li[data-person=ada] .presence", "offline").await?;
    Ok(())
}

/// Whether `_` fits inside its terminal row: its lowest pixel, measured in the
/// terminal's own font, lies above the row's bottom edge.
async fn terminal_glyphs_at(client: &Client, ratio: u32) -> Result {
    let script = "const row = document.querySelector('#terminal .xterm-rows > div'); \
        if (!row) return null; \
        const style = getComputedStyle(row); const context = document.createElement('canvas').getContext('2d'); \
        context.font = style.fontSize + ' ' + style.fontFamily; \
        const under = context.measureText('_'); const box = context.measureText('Mg'); \
        const height = row.getBoundingClientRect().height; \
        const content = box.fontBoundingBoxAscent + box.fontBoundingBoxDescent; \
        const baseline = (height - content) / 2 + box.fontBoundingBoxAscent; \
        return [window.devicePixelRatio, height, baseline + under.actualBoundingBoxDescent];";
    let measured = client.execute(script, vec![]).await?;
    let values: Vec<f64> = measured.as_array().into_iter().flatten().filter_map(serde_json::Value::as_f64).collect();
    assert_eq!(values.len(), 3, "no terminal row to measure: {measured}");
    assert_eq!(values[0], f64::from(ratio), "{measured}");
    assert!(values[2] <= values[1], "`_` reaches below its row at ratio {ratio}: {measured}");
    Ok(())
}

/// The terminal at another device pixel ratio: a session started for the purpose,
/// opened in `client`, measured and stopped.
async fn terminal_glyphs_whole(client: &Client, server: &Server, ratio: u32) -> Result {
    let body = serde_json::json!({"person_id": "ada", "project_id": "desk", "runner": "claude"});
    let started = server.post("/api/v1/sessions", &body.to_string());
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    client.goto(&format!("{}#/sessions/{id}", server.handle.url())).await?;
    wait_text(client, "#terminal", READY).await?;
    let outcome = terminal_glyphs_at(client, ratio).await;
    shoot(client, &format!("terminal-ratio-{ratio}"), "body").await?;
    server.post(&format!("/api/v1/sessions/{id}/stop"), "");
    outcome
}

/// A session killed from outside the page (as `kill -9` in a shell would) shows as
/// ended within 2 s, with its signal, and its Person as offline, without a reload.
async fn killed_outside(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    let body = serde_json::json!({"person_id": "ada", "project_id": "desk", "runner": "claude"});
    let started = server.post("/api/v1/sessions", &body.to_string());
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    visit(client, "#/sessions").await?;
    let row = format!("tr[data-session='{id}']");
    wait_text(client, &format!("{row} .session-status"), "running").await?;
    both_sizes(page, "sessions", "h2").await?;
    let record: serde_json::Value =
        serde_json::from_slice(&fs::read(server.path(&format!("ws/.agent-toolkit/sessions/{id}.json")))?)?;
    let pid = record["pid"].as_u64().ok_or("no pid in the record")?.to_string();
    let killed_at = Instant::now();
    assert!(Command::new("kill").args(["-KILL", &pid]).status()?.success());
    loop {
        // The live table is re-rendered as events arrive: a row missing for a moment
        // is read again, not taken as an answer.
        let status = client
            .execute(
                "const node = document.querySelector(arguments[0]); return node === null ? '' : node.innerText;",
                vec![serde_json::json!(format!("{row} .session-status"))],
            )
            .await?
            .as_str()
            .unwrap_or_default()
            .to_owned();
        if !status.is_empty() && !status.contains("running") {
            break;
        }
        assert!(killed_at.elapsed() < Duration::from_secs(2), "still shown as running 2 s after the kill");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let shown_after = killed_at.elapsed();
    assert!(shown_after < Duration::from_secs(2), "shown as ended after {shown_after:?}");
    wait_text(client, &format!("{row} .session-ending"), "signal 9 (SIGKILL)").await?;
    shoot(client, "sessions-killed", "h2").await?;
    click(client, &format!("{row} a")).await?;
    wait_text(client, "#session-ending", "SIGKILL").await?;
    let disabled = read(client, "#stop", "node.disabled").await?;
    assert_eq!(disabled, serde_json::Value::Bool(true), "Stop is offered for an ended session");
    both_sizes(page, "session-ended", "h2").await?;
    visit(client, "#/people").await?;
    wait_text(client, "li[data-person=ada] .presence", "offline").await?;
    Ok(())
}

/// The composition views: role cards with colours, the bundles, a bundle's providers and
/// budget, and `--why` followed from a skill to its source.
async fn composition(page: &Page<'_>) -> Result {
    let client = page.client;
    click(client, "a[data-nav=composition]").await?;
    wait_text(client, "#roles", "platform").await?;
    wait_text(client, "#bundles", "platform").await?;
    wait_text(client, "#store", "entries").await?;
    let swatches = client.execute("return document.querySelectorAll('#roles .swatch').length", vec![]).await?;
    assert!(swatches.as_u64().unwrap_or(0) >= 2, "no colour swatches: {swatches}");
    both_sizes(page, "composition", "h2").await?;
    click(client, "#roles li[data-role=platform] a").await?;
    wait_text(client, "#providers", "tools").await?;
    wait_for(client, "#budget .bar span").await?;
    fill(client, "#why-item", "skill:deploy-check").await?;
    click(client, "#ask-why").await?;
    wait_text(client, "#why-answer", "deploy-check").await?;
    click(client, "#why-answer .follow").await?;
    wait_text(client, "#why-answer", "source:").await?;
    fill(client, "#why-item", "skill:nothing-like-it").await?;
    click(client, "#ask-why").await?;
    wait_for(client, "#why-result .error").await?;
    both_sizes(page, "bundle", "h2").await?;
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

/// A workspace whose People bind roles against `roster:core`, a fake `claude` that
/// prints its arguments, one Person (Ann, `platform`, a roster role) and a folder to work
/// in. No recipe and no project link: the journey makes both in the page.
fn swarm_sandbox() -> Server {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "project", "bin", "projects-root"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
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
    // No file by hand: the project is chosen by its folder, the recipe made in the page,
    // the platform role pinned to Ann, and the run started.
    client.goto(&format!("{}#/projects", server.handle.url())).await?;
    wait_for(client, "#field-project_folder").await?;
    fill(client, "#field-project_folder", &server.path("project").to_string_lossy()).await?;
    fill(client, "#field-project_id", "desk").await?;
    click(client, "#add-project").await?;
    wait_text(client, "#projects", "desk").await?;
    assert!(fs::symlink_metadata(server.path("ws/projects/desk"))?.file_type().is_symlink());
    visit(client, "#/swarm").await?;
    wait_for(client, "#recipe-form input[value=platform]").await?;
    fill(client, "#field-recipe_name", "desk-crew").await?;
    click(client, "#recipe-form input[value=platform]").await?;
    fill(client, "#field-recipe_more", "qa").await?;
    click(client, "#save-recipe").await?;
    wait_text(client, "#recipe-list", "desk-crew").await?;
    let recipe: serde_json::Value = serde_json::from_slice(&fs::read(server.path("ws/recipes/desk-crew.json"))?)?;
    assert_eq!(
        recipe,
        serde_json::json!({"spec": "acompose/people-recipe@1", "roles": [{"role": "platform"}, {"role": "qa"}]})
    );
    wait_text(client, "#swarm", "qa").await?;
    click(client, "tr[data-role=platform] .remember").await?;
    wait_text(client, "tr[data-role=platform]", "pinned: ann").await?;
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
