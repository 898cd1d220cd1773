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
//! Every step waits on the page's settled signal (`<html data-state="settled">`, see
//! docs/serve.md) and acts in the same turn of the page's event loop: no lookup is
//! retried and no step sleeps.
//!
//! Without `chromium` and `chromedriver` on PATH the test says so and passes, unless
//! `ACOMPOSE_BROWSER_TESTS=required` (as `.ci/run` sets), which makes their absence, or
//! the absence of axe-core, a failure.

use crate::support;

use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
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

/// Starts chromedriver and waits for its own word that it listens.
fn start_driver(driver: &Path) -> Result<(Driver, u16)> {
    let port = free_port();
    let mut child =
        Command::new(driver).arg(format!("--port={port}")).stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let stdout = child.stdout.take().ok_or("chromedriver has no output")?;
    let driver = Driver(child);
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    loop {
        match lines.next() {
            Some(Ok(line)) if line.contains("started successfully") => break,
            Some(Ok(_)) => continue,
            _ => return Err("chromedriver ended before it listened".into()),
        }
    }
    // The rest of its output is read and dropped, so it never blocks on a full pipe.
    std::thread::spawn(move || lines.for_each(drop));
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

/// The page's settled signal and the step taken on it, in one script run inside the page:
/// it waits (on the page's own mutations, not by polling) until `<html data-state>` is
/// `settled`, the element `css` exists and `probe(node)` gives something other than
/// `null` or `undefined`, and then, in the same turn of the page's event loop, takes `action` on the
/// element: nothing a re-render could make stale lies between finding and acting.
/// Answers `{ok: value}` or, after 20 s, `{error: …}` with what it saw last.
const UNTIL: &str = r#"
const [css, action, value] = arguments;
return new Promise((resolve) => {
  let timer = null;
  let seen = null;
  let acted = false;
  const root = document.documentElement;
  const observer = new MutationObserver(() => check());
  const finish = (answer) => { acted = true; observer.disconnect(); window.clearTimeout(timer); resolve(answer); };
  const check = () => {
    if (acted || root.dataset.state !== 'settled') return;
    const node = document.querySelector(css);
    if (node === null) return;
    seen = node.innerText;
    const probed = probe(node);
    if (probed === null || probed === undefined) return;
    if (action === 'read') return finish({ok: probed});
    if (node.disabled) return;
    node.scrollIntoView({block: 'center'});
    if (action === 'click') {
      node.click();
      return finish({ok: true});
    }
    node.focus();
    node.value = value;
    node.dispatchEvent(new Event('input', {bubbles: true}));
    node.dispatchEvent(new Event('change', {bubbles: true}));
    finish({ok: true});
  };
  observer.observe(root, {attributes: true, childList: true, subtree: true, characterData: true});
  timer = window.setTimeout(() => finish({error: 'state ' + root.dataset.state + ', last seen ' + JSON.stringify(seen)}), 20000);
  check();
});
"#;

/// Runs [`UNTIL`] with `probe` (a JavaScript expression of `node`); `action` is `read`
/// (answers the probe's value), `click`, or `fill` (sets the value as typing would end).
async fn until(client: &Client, css: &str, probe: &str, action: &str, value: &str) -> Result<serde_json::Value> {
    let script = format!("const probe = (node) => ({probe});\n{UNTIL}");
    let answer = client
        .execute(&script, vec![serde_json::json!(css), serde_json::json!(action), serde_json::json!(value)])
        .await?;
    match answer.get("ok") {
        Some(value) => Ok(value.clone()),
        None => Err(format!("`{css}` never gave {probe} to {action}: {}", answer["error"]).into()),
    }
}

/// Waits until the page settles with `needle` in the element's text; returns the text.
async fn wait_text(client: &Client, css: &str, needle: &str) -> Result<String> {
    let probe = format!("node.innerText.includes({}) ? node.innerText : null", serde_json::json!(needle));
    Ok(until(client, css, &probe, "read", "").await?.as_str().unwrap_or_default().to_owned())
}

/// Clicks the element once the page has settled (and the element is enabled).
async fn click(client: &Client, css: &str) -> Result {
    until(client, css, "true", "click", "").await.map(drop)
}

/// Waits until the page settles with the element on it.
async fn wait_for(client: &Client, css: &str) -> Result {
    until(client, css, "true", "read", "").await.map(drop)
}

/// Fills the field once the page has settled, with the events typing gives.
async fn fill(client: &Client, css: &str, text: &str) -> Result {
    until(client, css, "true", "fill", text).await.map(drop)
}

/// Chooses `value` in a select once the page has settled.
async fn select(client: &Client, css: &str, value: &str) -> Result {
    until(client, css, "true", "fill", value).await.map(drop)
}

/// Gives a file input the path of `file` once the page has settled. (A file can only
/// be given through WebDriver; the views with file inputs do not redraw on their own.)
async fn send_file(client: &Client, css: &str, file: &Path) -> Result {
    wait_for(client, css).await?;
    client.find(Locator::Css(css)).await?.send_keys(&file.to_string_lossy()).await?;
    Ok(())
}

/// A real pointer click (the terminal takes focus on the pointer's events, not on a
/// scripted click), once the page has settled.
async fn pointer_click(client: &Client, css: &str) -> Result {
    wait_for(client, css).await?;
    client.find(Locator::Css(css)).await?.click().await?;
    Ok(())
}

/// Reads `expression` of the element `css` (named `node` in it) once the page has
/// settled and the expression gives something other than null.
async fn read(client: &Client, css: &str, expression: &str) -> Result<serde_json::Value> {
    until(client, css, expression, "read", "").await
}

/// The element's rendered text, read in one step.
async fn text_of(client: &Client, css: &str) -> Result<String> {
    Ok(read(client, css, "node.innerText").await?.as_str().unwrap_or_default().to_owned())
}

/// Sets the window's size and waits until the page has laid itself out again (two
/// animation frames) and settled.
async fn resize(client: &Client, (width, height): (u32, u32)) -> Result {
    client.set_window_size(width, height).await?;
    client
        .execute(
            "return new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true))));",
            vec![],
        )
        .await?;
    wait_for(client, "html").await
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
    acompose_driver::convergence::converge_home(
        &acompose_driver::home::Home::at(root.join("home")),
        &projects,
        &acompose_driver::NoProgress,
    )
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
    let mut server = sandbox();
    let (_driver, driver_port) = start_driver(&driver)?;
    let client = connect(driver_port, &browser).await?;
    let page = Page { client: &client, axe: axe.as_deref() };
    let outcome = journey(&page, &mut server).await;
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

async fn journey(page: &Page<'_>, server: &mut Server) -> Result {
    let client = page.client;
    client.goto(&server.handle.url()).await?;
    wait_text(client, "h2", "Roster").await?;
    // The token left the address bar.
    assert!(!client.current_url().await?.as_str().contains("token"), "the token stayed in the address");
    // The page listens for changes.
    wait_attribute(client, "body", "data-live", "connected").await?;
    // A screen without a terminal does not load the terminal library.
    assert_eq!(
        loaded_terminal(client).await?,
        serde_json::Value::Bool(false),
        "the roster loaded the terminal library"
    );

    create_edit_archive_restore(client, server).await?;
    a_stale_edit_keeps_the_archive(page, server).await?;
    import_through_review(page, server).await?;
    roster_views(page, server).await?;
    connection_banner(page, server).await?;
    add_a_project(page, server).await?;
    swarm(page, server).await?;
    live_session(page, server).await?;
    killed_outside(page, server).await?;
    world_follows(server, client).await?;
    composition(page).await?;
    cross_origin_write(client, server).await?;
    Ok(())
}

/// Whether the page has fetched the terminal library (its resource timing entries).
async fn loaded_terminal(client: &Client) -> Result<serde_json::Value> {
    let script =
        "return performance.getEntriesByType('resource').some((entry) => entry.name.endsWith('/assets/xterm.js'));";
    Ok(client.execute(script, vec![]).await?)
}

async fn wait_attribute(client: &Client, css: &str, name: &str, value: &str) -> Result {
    let probe = format!("node.getAttribute({}) === {} || null", serde_json::json!(name), serde_json::json!(value));
    until(client, css, &probe, "read", "").await.map(drop)
}

/// The view on screen at 1280×800 and at 390×844: a screenshot of each, no sideways
/// scrolling at 390 px, and no serious or critical accessibility violation at either.
async fn both_sizes(page: &Page<'_>, name: &str, css: &str) -> Result {
    let client = page.client;
    for (width, height) in [NARROW, WIDE] {
        resize(client, (width, height)).await?;
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
/// Goes to a view by its address, as a link would; returns once the page has taken up
/// the new address (its `hashchange`), so the next wait is for the new view.
async fn visit(client: &Client, fragment: &str) -> Result {
    let script = "const [fragment] = arguments; \
        if (window.location.hash === fragment) return true; \
        return new Promise((resolve) => { \
            window.addEventListener('hashchange', () => resolve(true), {once: true}); \
            window.location.hash = fragment; \
        });";
    client.execute(script, vec![serde_json::json!(fragment)]).await?;
    Ok(())
}

async fn create_edit_archive_restore(client: &Client, server: &Server) -> Result {
    // Cancel leaves the form for the roster, writing nothing.
    click(client, "a[data-nav=new]").await?;
    fill(client, "#field-id", "nobody").await?;
    click(client, "#cancel").await?;
    wait_text(client, "h2", "Roster").await?;
    assert!(!server.path("ws/people/nobody.json").exists(), "Cancel wrote a Person");
    click(client, "a[data-nav=new]").await?;
    // The Role box offers the roster's roles.
    let offered =
        read(client, "#role-choices", "node.querySelector('option[value=platform]') === null ? null : true").await?;
    assert_eq!(offered, serde_json::Value::Bool(true), "the roster's roles are not offered");
    // The colour picker fills the accent box.
    fill(client, "#field-avatar_accent_picker", "#aa3366").await?;
    let accent = read(client, "#field-avatar_accent", "node.value").await?;
    assert_eq!(accent, serde_json::json!("#aa3366"));
    fill(client, "#field-avatar_accent", "").await?;
    fill(client, "#field-id", "ada").await?;
    fill(client, "#field-name", HOSTILE_NAME).await?;
    fill(client, "#field-role", "lead").await?;
    fill(client, "#field-goal", "Lead the work.").await?;
    // The form enforces the schema before the server does: a bad role is not sent.
    fill(client, "#field-role", "Not A Slug").await?;
    click(client, "#save").await?;
    // Said in the page's own words beside Save, the field marked.
    wait_text(client, "#form-result", "“Role” takes lowercase letters").await?;
    let marked = read(client, "#field-role", "node.getAttribute('aria-invalid')").await?;
    assert_eq!(marked, serde_json::json!("true"));
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
    wait_text(client, "#field-max_seconds-said", "30 minutes").await?;
    shoot(client, "edit-form", "h2").await?;
    click(client, "#save").await?;
    wait_text(client, ".fields", "Lead the work, calmly.").await?;
    let stored: serde_json::Value = serde_json::from_slice(&fs::read(server.path("ws/people/ada.json"))?)?;
    assert_eq!(stored["skills"], serde_json::json!(["planning", "review"]));

    // Archive asks first; Cancel leaves the Person as it was.
    click(client, "#archive").await?;
    wait_text(client, ".confirm", "Archive").await?;
    click(client, "#archive-cancel").await?;
    wait_for(client, "#archive:not([hidden])").await?;
    let stored: serde_json::Value = serde_json::from_slice(&fs::read(server.path("ws/people/ada.json"))?)?;
    assert_eq!(stored["archived"], false, "archived without the confirmation");
    click(client, "#archive").await?;
    click(client, "#archive-confirm").await?;
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
    resize(client, WIDE).await?;
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

async fn roster_views(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    // A Person whose name is 120 characters long, one word of them unbroken.
    let long_name =
        format!("Maximiliana {} Longname-Featherstonehaugh", "Wolfeschlegelsteinhausenbergerdorff".repeat(2));
    let long_name: String = long_name.chars().chain(std::iter::repeat('x')).take(120).collect();
    let person = support::person("maximiliana", &long_name, "reception");
    assert_eq!(server.post("/api/v1/people", &person).status, 201);
    visit(client, "#/people/maximiliana").await?;
    wait_text(client, "h2", "Maximiliana").await?;
    both_sizes(page, "person-long-name", "h2").await?;
    // A roster of 40: compact by default, found by name, filtered by role, grouped.
    let hired = hire_a_crowd(server);
    click(client, "a[data-nav=people]").await?;
    let total = fs::read_dir(server.path("ws/people"))?
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".json"))
        .count();
    assert!(total >= 40, "{total} People");
    wait_text(client, "#roster-count", &format!("{total} People")).await?;
    let compact = read(client, "body", "node.classList.contains('compact')").await?;
    assert_eq!(compact, serde_json::Value::Bool(true), "a roster of {total} is not compact");
    fill(client, "#roster-search", "priya").await?;
    let found =
        read(client, "#configured", "[...node.querySelectorAll('li[data-person]')].map((li) => li.dataset.person)")
            .await?;
    assert_eq!(found, serde_json::json!(["priya-raman"]), "the search for one of {total}");
    fill(client, "#roster-search", "").await?;
    select(client, "#roster-role", "frontend").await?;
    let roles =
        read(client, "#configured", "[...node.querySelectorAll('li[data-person]')].map((li) => li.dataset.role)")
            .await?;
    let frontend = hired.iter().filter(|(_, _, role)| *role == "frontend").count();
    assert_eq!(roles, serde_json::json!(vec!["frontend"; frontend]));
    select(client, "#roster-role", "").await?;
    click(client, "#roster-group").await?;
    wait_for(client, ".role-group[data-role=platform]").await?;
    both_sizes(page, "roster-grouped", "body").await?;
    click(client, "#roster-group").await?;
    wait_text(client, "#configured", "Pam Beesly").await?;
    both_sizes(page, "roster", "body").await?;
    resize(client, NARROW).await?;
    click(client, "#compact").await?;
    shoot(client, "roster-cards-390", "body").await?;
    click(client, "#compact").await?;
    resize(client, WIDE).await?;
    // A Person's page: the role's card in its colour, the role's bundle and its skills.
    visit(client, "#/people/priya-raman").await?;
    wait_text(client, "#person-bundle", "skills").await?;
    let edge = read(client, "#person-role", "getComputedStyle(node).getPropertyValue('--role-colour').trim()").await?;
    let home = server.get("/api/v1/home").json();
    let platform = home["roles"].as_array().into_iter().flatten().find(|role| role["role"] == "platform").cloned();
    assert_eq!(Some(edge), platform.map(|role| role["favorite_color"].clone()), "the role colour on the Person's page");
    both_sizes(page, "person-with-role", "h2").await?;
    click(client, "a[data-nav=new]").await?;
    wait_for(client, "#person-form").await?;
    both_sizes(page, "new-person", "h2").await?;
    click(client, "a[data-nav=people]").await?;
    // A file that cannot be read is named as such: a read-only screen never says
    // "could not be saved".
    fs::write(server.path("ws/people/broken.json"), "{")?;
    visit(client, "#/world").await?;
    visit(client, "#/people").await?;
    let said = wait_text(client, "#view .error", "broken.json").await?;
    assert!(said.contains("could not be read") && !said.contains("saved"), "{said}");
    fs::remove_file(server.path("ws/people/broken.json"))?;
    // Keyboard use: focus moves to the first link and the skip link works.
    let focused = client
        .execute("document.querySelector('.skip').focus(); return document.activeElement.className", vec![])
        .await?;
    assert_eq!(focused, serde_json::json!("skip"));
    Ok(())
}

/// The server stops: within 5 s the page says so, live states read "unknown" and the view
/// cannot be used (a form cannot be filled against a server that is gone); started
/// again, the banner goes and the view works again.
async fn connection_banner(page: &Page<'_>, server: &mut Server) -> Result {
    let client = page.client;
    visit(client, "#/people").await?;
    wait_text(client, "li[data-person=ada] .presence", "offline").await?;
    let stopped_at = Instant::now();
    server.stop_for_now();
    wait_text(client, "#connection", "cannot be reached").await?;
    let shown_after = stopped_at.elapsed();
    assert!(shown_after < Duration::from_secs(5), "the banner came {shown_after:?} after the server stopped");
    wait_text(client, "li[data-person=ada] .presence", "unknown").await?;
    both_sizes(page, "connection-lost", "body").await?;
    visit(client, "#/people/new").await?;
    let inert = read(client, "#view", "node.inert").await?;
    assert_eq!(inert, serde_json::Value::Bool(true), "the view can be used while the server is gone");
    server.start_again();
    read(client, "#connection", "node.hidden || null").await?;
    let inert = read(client, "#field-name", "node.closest('[inert]') !== null").await?;
    assert_eq!(inert, serde_json::Value::Bool(false), "the form stays disabled after the server is back");
    visit(client, "#/people").await?;
    wait_text(client, "li[data-person=ada] .presence", "offline").await?;
    Ok(())
}

/// People with names a person would use, in seven roster roles (none of them `lead` or
/// `reception`, which the swarm steps resolve): with the journey's own, 40 or more.
const CROWD: [(&str, &str); 37] = [
    ("Priya Raman", "platform"),
    ("Jonas Lindqvist", "platform"),
    ("Amara Okafor", "platform"),
    ("Wei Chen", "sysadmin"),
    ("Sofia Marquez", "sysadmin"),
    ("Tomasz Nowak", "sysadmin"),
    ("Hannah Becker", "eval"),
    ("Kwame Mensah", "eval"),
    ("Yuki Tanaka", "eval"),
    ("Lena Fischer", "frontend"),
    ("Mateo Rossi", "frontend"),
    ("Aisha Rahman", "frontend"),
    ("Oliver Bennett", "frontend"),
    ("Fatima Zahra", "gamedev"),
    ("Diego Alvarez", "gamedev"),
    ("Ingrid Halvorsen", "gamedev"),
    ("Rahul Mehta", "tpm"),
    ("Chloe Dubois", "tpm"),
    ("Samuel Adeyemi", "tpm"),
    ("Mei Lin", "devrel"),
    ("Lucas Silva", "devrel"),
    ("Nora Kowalski", "devrel"),
    ("Elif Yilmaz", "platform"),
    ("Arjun Nair", "sysadmin"),
    ("Grace Kim", "eval"),
    ("Felix Wagner", "frontend"),
    ("Zainab Bello", "gamedev"),
    ("Henrik Larsen", "tpm"),
    ("Camila Torres", "devrel"),
    ("Noah Fitzgerald", "platform"),
    ("Leila Haddad", "sysadmin"),
    ("Emil Johansson", "eval"),
    ("Ana Petrovic", "frontend"),
    ("Kenji Watanabe", "gamedev"),
    ("Isabel Moreau", "tpm"),
    ("Omar Farouk", "devrel"),
    ("Rosa Delgado", "platform"),
];

/// Writes [`CROWD`] through the API; returns (id, name, role) of each.
fn hire_a_crowd(server: &Server) -> Vec<(String, &'static str, &'static str)> {
    CROWD
        .iter()
        .map(|(name, role)| {
            let id = name.to_lowercase().replace(' ', "-");
            let created = server.post("/api/v1/people", &support::person(&id, name, role));
            assert_eq!(created.status, 201, "{}", created.text());
            (id, *name, *role)
        })
        .collect()
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
    select(client, "#assign-lead", "ada").await?;
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
    // A limit the runner cannot enforce: Start waits for the acknowledgement. (No runner
    // records its spending while it runs, so a cost limit is never enforced.)
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
    assert_eq!(loaded_terminal(client).await?, serde_json::Value::Bool(true), "the terminal library never loaded");
    let address = client.current_url().await?;
    let session = address.fragment().unwrap_or_default().trim_start_matches("/sessions/").to_owned();

    // Online only while the PTY lives.
    click(client, "a[data-nav=people]").await?;
    wait_text(client, "li[data-person=ada] .presence", "online").await?;
    wait_text(client, "li[data-person^=pam] .presence", "offline").await?;

    // The World: Ada stands in desk with her runner; nobody is in the other project.
    click(client, "a[data-nav=world]").await?;
    wait_text(client, "li[data-place=desk] li[data-person=ada]", "claude").await?;
    wait_text(client, "li[data-place=second-project]", "Nobody").await?;
    both_sizes(page, "world", "h2").await?;

    // Reopened: the output so far is there, and typing reaches the runner.
    click(client, "a[data-nav=sessions]").await?;
    click(client, &format!("tr[data-session='{session}'] a")).await?;
    wait_text(client, "#terminal", READY).await?;
    pointer_click(client, "#terminal .xterm-screen").await?;
    client.active_element().await?.send_keys(&format!("ping{}", char::from(Key::Enter))).await?;
    wait_text(client, "#terminal", "got ping").await?;
    // Tab stays in the terminal; Escape then Tab leaves it.
    client.active_element().await?.send_keys(&char::from(Key::Tab).to_string()).await?;
    let inside =
        client.execute("return document.getElementById('terminal').contains(document.activeElement);", vec![]).await?;
    assert_eq!(inside, serde_json::Value::Bool(true), "Tab left the terminal");
    let keys = format!("{}{}", char::from(Key::Escape), char::from(Key::Tab));
    client.active_element().await?.send_keys(&keys).await?;
    let inside =
        client.execute("return document.getElementById('terminal').contains(document.activeElement);", vec![]).await?;
    assert_eq!(inside, serde_json::Value::Bool(false), "Escape then Tab did not leave the terminal");
    both_sizes(page, "live-session", "body").await?;
    // Stop asks first: the session runs on until the confirmation.
    click(client, "#stop").await?;
    wait_text(client, ".confirm", "Stop this session?").await?;
    wait_text(client, "#session-status", "running").await?;
    accessible(page, "the stop confirmation").await?;
    shoot(client, "stop-confirmation", "body").await?;
    click(client, "#stop-confirm").await?;
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
    // The page's own signal: the row, settled, no longer says running.
    let status = format!("{row} .session-status");
    read(client, &status, "node.innerText.includes('running') ? null : node.innerText").await?;
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

/// The World redraws itself: a session started and stopped elsewhere (here through the
/// API, as another tab or the cli would) brings Ada into desk and takes her out again.
async fn world_follows(server: &Server, client: &Client) -> Result {
    visit(client, "#/world").await?;
    wait_text(client, "li[data-place=desk]", "Nobody").await?;
    let body = serde_json::json!({"person_id": "ada", "project_id": "desk", "runner": "claude"});
    let started = server.post("/api/v1/sessions", &body.to_string());
    assert_eq!(started.status, 201, "{}", started.text());
    let id = started.json()["id"].as_str().unwrap_or_default().to_owned();
    wait_text(client, "li[data-place=desk] li[data-person=ada]", "running").await?;
    assert_eq!(server.post(&format!("/api/v1/sessions/{id}/stop"), "").status, 200);
    wait_text(client, "li[data-place=desk]", "Nobody").await?;
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
    // The bundle names the People in its role and lists its skills, filterable, each
    // with its Why.
    wait_text(client, "#bundle-people", "Priya Raman").await?;
    wait_text(client, "#skills", "deploy-check").await?;
    fill(client, "#skills-filter", "deploy").await?;
    let shown = read(
        client,
        "#skills",
        "[...node.querySelectorAll('tbody tr')].filter((row) => !row.hidden).map((row) => row.dataset.skill)",
    )
    .await?;
    assert_eq!(shown, serde_json::json!(["deploy-check"]));
    click(client, "tr[data-skill=deploy-check] .why-skill").await?;
    wait_text(client, "#why-answer", "deploy-check").await?;
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

/// A workspace whose People bind roles against `roster:core`, a fake `claude` and a fake
/// `gemini` that print their arguments, one Person (Ann, `platform`, a roster role) and a folder to work
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
    use std::os::unix::fs::PermissionsExt as _;
    for binary in ["claude", "gemini"] {
        let runner = root.join("bin").join(binary);
        fs::write(&runner, &script).expect("fake runner");
        fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("executable");
    }
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
    let axe = axe_source(required)?;
    let server = swarm_sandbox();
    let (_driver, driver_port) = start_driver(&driver)?;
    let client = connect(driver_port, &browser).await?;
    let page = Page { client: &client, axe: axe.as_deref() };
    let outcome = swarm_journey(&page, &server).await;
    if outcome.is_err() {
        let _ = shoot(&client, "swarm-failure", "body").await;
    }
    let _ = client.close().await;
    outcome
}

async fn swarm_journey(page: &Page<'_>, server: &Server) -> Result {
    let client = page.client;
    // Ann has a cost limit, which no runner can enforce: the run waits for the
    // acknowledgement in the page.
    let ann = server.path("ws/people/ann.json");
    let mut person: serde_json::Value = serde_json::from_slice(&fs::read(&ann)?)?;
    person["budget"] = serde_json::json!({"max_cost_usd": 5});
    fs::write(&ann, serde_json::to_vec_pretty(&person)?)?;
    let people_before = fs::read(&ann)?;
    // No file by hand: the project is chosen by its folder, the recipe made in the page,
    // the platform role pinned to Ann, and the run started.
    client.goto(&format!("{}#/projects", server.handle.url())).await?;
    wait_for(client, "#field-project_folder").await?;
    fill(client, "#field-project_folder", &server.path("project").to_string_lossy()).await?;
    fill(client, "#field-project_id", "desk").await?;
    click(client, "#add-project").await?;
    wait_text(client, "#projects", "desk").await?;
    assert!(fs::symlink_metadata(server.path("ws/projects/desk"))?.file_type().is_symlink());
    // Composition with the embedded roster only and no bundle: the roster's roles, in
    // their colours, each saying it has no bundle yet.
    visit(client, "#/composition").await?;
    wait_text(client, "#roles li[data-role=platform]", "No bundle yet").await?;
    wait_for(client, "#no-bundles").await?;
    let shown = text_of(client, "#view").await?;
    assert!(!shown.contains("null") && !shown.contains('`'), "raw values in the page: {shown}");
    let swatches = read(client, "#roles", "node.querySelectorAll('.swatch').length").await?;
    assert!(swatches.as_u64().unwrap_or(0) >= 2, "no colour swatches: {swatches}");
    both_sizes(page, "composition-roster-only", "h2").await?;
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
    read(client, "#run-runner", "(node.value = 'gemini')").await?;
    click(client, "#review-run").await?;
    // The review: Ann works as platform with its bundle; qa is ephemeral.
    wait_text(client, "#run-roles tr[data-role=platform]", "bundle").await?;
    wait_text(client, "#run-roles tr[data-role=platform]", "Ann").await?;
    let id_in_tooltip = read(client, "#run-roles tr[data-role=platform] span[title=ann]", "node.innerText").await?;
    assert_eq!(id_in_tooltip, serde_json::json!("Ann"), "the run review names Ann, her id in the tooltip");
    wait_text(client, "#run-roles tr[data-role=qa]", "ephemeral").await?;
    assert!(!server.path("ws/.agent-toolkit/runs").exists(), "the review recorded a run");
    shoot(client, "swarm-review", "#run-review").await?;
    wait_text(client, "#run-unsupported", "Max cost (USD)").await?;
    let review = text_of(client, "#run-review").await?;
    assert!(!review.contains("--"), "a command-line flag in the run review: {review}");
    let disabled = read(client, "#start-run", "node.disabled").await?;
    assert_eq!(disabled, serde_json::Value::Bool(true), "Start run is enabled before the acknowledgement");
    click(client, "#acknowledge-run").await?;
    both_sizes(page, "run-review", "#run-review").await?;
    click(client, "#start-run").await?;
    wait_text(client, "#run-sessions tr[data-role=platform] .run-status", "running").await?;
    wait_text(client, "#run-sessions tr[data-role=qa] .run-status", "running").await?;
    let runs: Vec<_> = fs::read_dir(server.path("ws/.agent-toolkit/runs"))?.flatten().collect();
    assert_eq!(runs.len(), 1, "one run is recorded");
    let run_address = client.current_url().await?;
    both_sizes(page, "run", "h2").await?;
    // In the World the run's Persons stand together in desk, Ann in her role's colour.
    visit(client, "#/world").await?;
    wait_text(client, "li[data-place=desk] li[data-person=ann]", "swarm run").await?;
    let edge = read(
        client,
        "li[data-place=desk] li[data-person=ann]",
        "getComputedStyle(node).getPropertyValue('--role-colour').trim()",
    )
    .await?;
    let home = server.get("/api/v1/home").json();
    let platform = home["roles"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|role| role["role"] == "platform")
        .cloned()
        .unwrap_or_default();
    assert_eq!(edge, platform["favorite_color"], "Ann is not shown in her role's colour");
    both_sizes(page, "world-swarm", "h2").await?;
    client.goto(run_address.as_str()).await?;
    visit(client, "#/runs").await?;
    wait_for(client, "#runs").await?;
    both_sizes(page, "runs", "h2").await?;
    client.goto(run_address.as_str()).await?;

    // Open the platform role's terminal, go back, and reopen it: the output is there.
    click(client, "#run-sessions tr[data-role=platform] .open-terminal").await?;
    wait_text(client, "#terminal", "role=platform").await?;
    client.goto(run_address.as_str()).await?;
    wait_for(client, "#run-sessions").await?;
    click(client, "#run-sessions tr[data-role=platform] .open-terminal").await?;
    wait_text(client, "#terminal", READY).await?;
    pointer_click(client, "#terminal .xterm-screen").await?;
    client.active_element().await?.send_keys(&format!("hello{}", char::from(Key::Enter))).await?;
    wait_text(client, "#terminal", "got hello").await?;
    shoot(client, "swarm-terminal", "body").await?;

    // Stop the whole run.
    client.goto(run_address.as_str()).await?;
    click(client, "#stop-run").await?;
    click(client, "#stop-run-confirm").await?;
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
    click(client, "#stop-confirm").await?;
    wait_text(client, "#session-status", "stopped").await?;
    Ok(())
}

/// What each screen of the showcase is: its file name, its address and what to wait for.
const SCREENS: [(&str, &str, &str); 14] = [
    ("world", "#/world", "li[data-place=web-shop] li[data-person]"),
    ("roster", "#/people", "#configured"),
    ("person", "#/people/priya-raman", "#person-role"),
    ("new-person", "#/people/new", "#person-form"),
    ("edit-person", "#/people/priya-raman/edit", "#person-form"),
    ("import", "#/import", "#hire-file"),
    ("swarm", "#/swarm", "#recipe-list"),
    ("runs", "#/runs", "#runs"),
    ("run", "#/runs/RUN", "#run-sessions"),
    ("sessions", "#/sessions", "#sessions"),
    ("session", "#/sessions/SESSION", "#terminal .xterm-rows"),
    ("projects", "#/projects", "#projects"),
    ("composition", "#/composition", "#roles"),
    ("bundle", "#/bundles/BUNDLE", "#skills"),
];

/// A workspace as a team would have it: 40 People with everyday names in seven roles,
/// two projects, a saved recipe, a live session, an ended one and a swarm run, over a
/// home with one composed bundle.
fn showcase_workspace() -> (Server, String, String, String) {
    let dir = tempfile::tempdir().expect("temporary folder");
    let root = dir.path();
    for folder in ["ws/people", "ws/projects", "ws/recipes", "web-shop", "data-pipeline", "bin"] {
        fs::create_dir_all(root.join(folder)).expect("folder");
    }
    for project in ["web-shop", "data-pipeline"] {
        std::os::unix::fs::symlink(root.join(project), root.join("ws/projects").join(project)).expect("link");
    }
    converged_home(root);
    let script = "#!/bin/sh\necho 'Reading the task and the repository…'\necho 'Plan: 1. reproduce the failing checkout test  2. fix the rounding  3. run the suite'\nwhile read line; do echo \"> $line\"; done\n";
    let runner = root.join("bin/claude");
    fs::write(&runner, script).expect("fake runner");
    use std::os::unix::fs::PermissionsExt as _;
    fs::set_permissions(&runner, fs::Permissions::from_mode(0o755)).expect("executable");
    let goals = [
        ("platform", "Keep the build, the deploy pipeline and the shared libraries fast and boring."),
        ("sysadmin", "Keep the hosts patched, backed up and observable."),
        ("eval", "Measure whether each change does what it claims, with evidence others can rerun."),
        ("frontend", "Make the shop's pages fast and accessible on every phone."),
        ("gamedev", "Prototype the loyalty mini-game and keep it playable."),
        ("tpm", "Keep the release plan honest and the blockers visible."),
        ("devrel", "Write the guides and answer the questions developers actually ask."),
    ];
    for (index, (name, role)) in CROWD.iter().enumerate() {
        let id = name.to_lowercase().replace(' ', "-");
        let goal = goals.iter().find(|(slug, _)| slug == role).map_or("Help the team.", |(_, goal)| goal);
        let mut person = serde_json::json!({"spec": "agent-toolkit/person@1", "id": id, "name": name, "role": role, "goal": goal, "archived": index == 36});
        if index % 3 == 0 {
            let accent = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"][index % 4];
            person["avatar"] = serde_json::json!({"character": "sprite", "accent": accent});
        }
        if index % 4 == 1 {
            person["budget"] = serde_json::json!({"max_seconds": 3600});
        }
        fs::write(root.join(format!("ws/people/{id}.json")), serde_json::to_vec_pretty(&person).expect("json"))
            .expect("a Person");
    }
    for (id, name, role, goal) in [
        ("maya-goldberg", "Maya Goldberg", "lead", "Lead the checkout rewrite."),
        ("tariq-haddad", "Tariq Haddad", "reception", "Triage what comes in and route it."),
        ("bea-santos", "Beatriz Santos", "lead", "Lead the data pipeline's move to streaming."),
    ] {
        let person = serde_json::json!({"spec": "agent-toolkit/person@1", "id": id, "name": name, "role": role, "goal": goal, "archived": false});
        fs::write(root.join(format!("ws/people/{id}.json")), serde_json::to_vec_pretty(&person).expect("json"))
            .expect("a Person");
    }
    let recipe = r#"{"spec": "acompose/people-recipe@1", "roles": [{"role": "platform"}, {"role": "frontend"}, {"role": "qa"}]}"#;
    fs::write(root.join("ws/recipes/release-crew.json"), recipe).expect("recipe");
    let path_variable = root.join("bin").into_os_string();
    let server = Server::start_with(dir, "ws", Some(path_variable));
    let start = |person: &str, project: &str| {
        let body = serde_json::json!({"person_id": person, "project_id": project, "runner": "claude", "task": "Fix the rounding of the checkout total."});
        let started = server.post("/api/v1/sessions", &body.to_string());
        assert_eq!(started.status, 201, "{}", started.text());
        started.json()["id"].as_str().unwrap_or_default().to_owned()
    };
    let ended = start("jonas-lindqvist", "web-shop");
    assert_eq!(server.post(&format!("/api/v1/sessions/{ended}/stop"), "").status, 200);
    let session = start("priya-raman", "web-shop");
    let body = serde_json::json!({"recipe_file_name": "release-crew.json", "recipe": recipe, "assignments": [], "project_id": "data-pipeline", "runner": "claude", "acknowledge_unsupported": true});
    let run = server.post("/api/v1/swarm", &body.to_string());
    assert_eq!(run.status, 201, "{}", run.text());
    let run = run.json()["id"].as_str().unwrap_or_default().to_owned();
    let bundle = server.get("/api/v1/home").json()["bundles"][0]["id"].as_str().unwrap_or_default().to_owned();
    (server, session, run, bundle)
}

/// Every screen of a realistic workspace at both sizes, into `ACOMPOSE_SCREENSHOTS`
/// (docs/serve/ for the documentation), with each screen's first load measured: the
/// bytes the browser received (compressed, page, assets and API answers) and the time
/// from the navigation to the page's settled signal. The table lands beside them as
/// `measures.md`. Not part of the suite (`--ignored`); docs/serve.md gives the command.
#[tokio::test]
#[ignore = "writes the documentation's screenshots; run on purpose"]
async fn screens_for_the_docs() -> Result {
    let (Some(browser), Some(driver)) =
        (on_path(&["chromium", "chromium-browser", "google-chrome"]), on_path(&["chromedriver"]))
    else {
        return Err("the screenshots need chromium and chromedriver on PATH".into());
    };
    let folder = PathBuf::from(std::env::var_os("ACOMPOSE_SCREENSHOTS").ok_or("set ACOMPOSE_SCREENSHOTS to a folder")?);
    fs::create_dir_all(&folder)?;
    let (server, session, run, bundle) = showcase_workspace();
    let (_driver, driver_port) = start_driver(&driver)?;
    let client = connect(driver_port, &browser).await?;
    let outcome = shoot_every_screen(&client, &server, &folder, [&session, &run, &bundle]).await;
    let _ = client.close().await;
    outcome
}

async fn shoot_every_screen(
    client: &Client,
    server: &Server,
    folder: &Path,
    [session, run, bundle]: [&String; 3],
) -> Result {
    let mut table = String::from(
        "| Screen | Transferred (first load) | Uncompressed | First load to settled |\n|---|---:|---:|---:|\n",
    );
    let measure = "const entries = [...performance.getEntriesByType('navigation'), ...performance.getEntriesByType('resource')]; \
        const settled = performance.getEntriesByName('acompose-first-settled')[0]; \
        return [entries.reduce((sum, entry) => sum + entry.transferSize, 0), entries.reduce((sum, entry) => sum + entry.decodedBodySize, 0), settled ? settled.startTime : -1];";
    for (name, address, ready) in SCREENS {
        let address = address.replace("SESSION", session).replace("RUN", run).replace("BUNDLE", bundle);
        client.set_window_size(WIDE.0, WIDE.1).await?;
        // A fresh load: the address with its token (the assets carry no validator, so
        // the browser fetches them again).
        client.goto("about:blank").await?;
        client.goto(&format!("{}{address}", server.handle.url())).await?;
        wait_for(client, ready).await?;
        let measured = client.execute(measure, vec![]).await?;
        let kib = |value: &serde_json::Value| value.as_f64().unwrap_or_default() / 1024.0;
        table.push_str(&format!(
            "| {name} | {:.0} KiB | {:.0} KiB | {:.0} ms |\n",
            kib(&measured[0]),
            kib(&measured[1]),
            measured[2].as_f64().unwrap_or_default()
        ));
        for size in [WIDE, NARROW] {
            resize(client, size).await?;
            let png = client.screenshot().await?;
            fs::write(folder.join(format!("{name}-{}.png", size.0)), png)?;
        }
    }
    fs::write(folder.join("measures.md"), table)?;
    Ok(())
}
