//! `acompose serve`: a local JSON API and web page over the same driver functions as
//! the cli (`acompose_driver::people`). Owns binding to loopback only, the bounded
//! connections (deadlines, a per-client cap), the per-run token, the Host/Origin and
//! security-header guard, the HTTP routes and the embedded page.
//!
//! It implements no rule of its own: every check of a Person, a binding, an import or a
//! resolution is the engine's, reached through the host. It never prints and never
//! exits; the cli prints the address and decides when to stop.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod assets;
mod authoring_api;
mod changes;
mod composition_api;
mod connections;
mod error;
mod guard;
mod live;
mod people_api;
mod sessions_api;
mod state;
mod swarm_api;
mod versions;
mod world_api;

use std::ffi::OsString;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tokio::sync::watch;

use acompose_driver::people::{Stop, Workspace};

pub use connections::ConnectionLimits;
pub use error::MAX_REQUEST_BYTES;
use state::AppState;

/// What `acompose serve` was asked for.
#[derive(Debug, Clone)]
pub struct Options {
    pub workspace: PathBuf,
    /// The loopback port; 0 lets the system choose one.
    pub port: u16,
    /// The `PATH` runners are looked up on (the cli passes its own).
    pub path_variable: Option<OsString>,
    /// The deadlines and the per-client cap of every connection.
    pub limits: ConnectionLimits,
    /// The acompose home whose composition the page shows (`--home`); `None` resolves it
    /// as every command does (`$ACOMPOSE_HOME`, else `~/.agent-compose`).
    pub home: Option<PathBuf>,
    /// Where the roster is: a Person whose role is a roster role starts as it.
    pub roster: Option<acompose_driver::people::as_role::RosterPlace>,
    /// The `acompose` binary a tmux session runs as the supervisor of a hosted session;
    /// `None` runs sessions in PTYs this server holds (they end with it).
    pub supervisor: Option<PathBuf>,
}

/// Why the server could not start.
#[derive(Debug)]
pub enum ServeError {
    /// The workspace could not be opened.
    Workspace(Stop),
    /// The port could not be bound, the token not drawn or the runtime not built.
    Environment(String),
}

/// A running server: its address and token, and the means to stop it.
pub struct Handle {
    pub port: u16,
    pub token: String,
    stop: watch::Sender<bool>,
    thread: Option<JoinHandle<()>>,
    state: Arc<AppState>,
}

impl Handle {
    /// The address to open, token included. The page moves the token into memory and
    /// drops it from the address bar.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/?token={}", self.port, self.token)
    }

    /// The base address without the token.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Stops accepting, closes open terminals, lets requests in flight finish, ends the
    /// sessions this server started (and no other), and waits for the server thread.
    pub fn stop(mut self) {
        self.shut_down();
    }

    /// As [`Handle::stop`], in place: the handle stays, its server gone (stopping twice
    /// does nothing more).
    pub fn shut_down(&mut self) {
        // A send error means the server already ended; either way it is stopping.
        let _ = self.stop.send(true);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
            self.state.live.stop_all(sessions_api::SHUTDOWN_WAIT);
        }
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.shut_down();
    }
}

/// Opens the workspace, binds 127.0.0.1 (and ::1 on the same port when the system has
/// IPv6 loopback) and serves on a thread of its own until [`Handle::stop`].
pub fn start(options: &Options) -> Result<Handle, ServeError> {
    let token = guard::new_token().map_err(ServeError::Environment)?;
    start_with_token(options, token)
}

/// As [`start`], with a token drawn before (a server started again in its place, so an
/// open page reconnects: the tests of the page's connection banner).
pub fn start_with_token(options: &Options, token: String) -> Result<Handle, ServeError> {
    let workspace = Workspace::open(&options.workspace).map_err(ServeError::Workspace)?;
    let workspace_for_hosting = workspace.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .map_err(|error| ServeError::Environment(format!("cannot start the server runtime: {error}")))?;
    let (listeners, port) = bind_loopback(options.port).map_err(ServeError::Environment)?;
    let (stop, stopped) = watch::channel(false);
    let state = Arc::new(AppState {
        workspace,
        token: token.clone(),
        port,
        path_variable: options.path_variable.clone(),
        writes: std::sync::Mutex::new(()),
        live: live::LiveSessions::default(),
        stopping: stopped.clone(),
        changes: watch::channel(state::Versions::default()).0,
        home: acompose_driver::home::resolve_home(options.home.as_deref()).ok(),
        roster: options.roster.clone(),
        hosting: match &options.supervisor {
            Some(program) => acompose_driver::people::tmux::hosting(
                &workspace_for_hosting,
                options.path_variable.as_deref(),
                program.clone(),
            ),
            None => acompose_driver::people::tmux::Hosting::Missing("no supervisor binary was named".to_owned()),
        },
    });
    let limits = options.limits;
    let router = router(Arc::clone(&state), limits);
    let state_for_changes = Arc::clone(&state);
    let thread = std::thread::Builder::new()
        .name("acompose-serve".to_owned())
        .spawn(move || {
            runtime.block_on(async move {
                let watcher = tokio::spawn(changes::watch_workspace(Arc::clone(&state_for_changes), stopped.clone()));
                let mut servers = Vec::new();
                for listener in listeners.into_iter().filter_map(|listener| TcpListener::from_std(listener).ok()) {
                    servers.push(tokio::spawn(connections::serve(listener, router.clone(), stopped.clone(), limits)));
                }
                for server in servers {
                    let _ = server.await;
                }
                let _ = watcher.await;
            });
        })
        .map_err(|error| ServeError::Environment(format!("cannot start the server thread: {error}")))?;
    Ok(Handle { port, token, stop, thread: Some(thread), state })
}

/// Binds IPv4 loopback first (its port is the one printed), then IPv6 loopback on the
/// same port when available. Never a wildcard address. Binding happens before the
/// runtime runs, so `start` can be called from any thread, async or not.
fn bind_loopback(port: u16) -> Result<(Vec<std::net::TcpListener>, u16), String> {
    let bind = |address: SocketAddr| {
        std::net::TcpListener::bind(address).and_then(|listener| listener.set_nonblocking(true).map(|()| listener))
    };
    let v4 = bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port)))
        .map_err(|error| format!("cannot listen on 127.0.0.1:{port}: {error}"))?;
    let port = v4.local_addr().map_err(|error| format!("cannot read the bound address: {error}"))?.port();
    let mut listeners = vec![v4];
    // A machine without IPv6 loopback still serves on 127.0.0.1.
    if let Ok(v6) = bind(SocketAddr::from((Ipv6Addr::LOCALHOST, port))) {
        listeners.push(v6);
    }
    Ok((listeners, port))
}

fn router(state: Arc<AppState>, limits: ConnectionLimits) -> Router {
    let api = Router::new()
        .route("/people", get(people_api::list).post(people_api::create))
        .route("/people/import", post(people_api::import_preview))
        .route("/people/import/save", post(people_api::import_save))
        .route("/people/bindings", get(people_api::bindings).put(people_api::put_bindings))
        .route("/people/resolve", post(people_api::resolve))
        .route("/people/{id}", get(people_api::show).put(people_api::update))
        .route("/people/{id}/archive", post(people_api::archive))
        .route("/people/{id}/restore", post(people_api::restore))
        .route("/events", get(changes::events))
        .route("/home", get(composition_api::overview))
        .route("/bundles/{id}", get(composition_api::describe_bundle))
        .route("/bundles/{id}/why", get(composition_api::why_item))
        .route("/runners", get(sessions_api::runners))
        .route("/projects", get(sessions_api::projects).post(authoring_api::link_project))
        .route("/recipes", get(authoring_api::recipes).post(authoring_api::create_recipe))
        .route("/sessions", get(sessions_api::list).post(sessions_api::start))
        .route("/sessions/review", post(sessions_api::review))
        .route("/sessions/{id}", get(sessions_api::show))
        .route("/sessions/{id}/stop", post(sessions_api::stop))
        .route("/sessions/{id}/terminal", get(sessions_api::terminal))
        .route("/sessions/{id}/resume", post(swarm_api::resume))
        .route("/swarm", get(swarm_api::list_run).post(swarm_api::start_run))
        .route("/swarm/review", post(swarm_api::review_run))
        .route("/swarm/{id}", get(swarm_api::show))
        .route("/swarm/{id}/stop", post(swarm_api::stop))
        .route("/world", get(world_api::world))
        .fallback(error::not_found)
        .layer(axum::middleware::from_fn_with_state(limits, connections::bounded_body))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::require_token));
    Router::new()
        .nest("/api/v1", api)
        .route("/", get(assets::index))
        .route("/assets/{name}", get(assets::asset))
        .fallback(error::not_found)
        .layer(DefaultBodyLimit::max(MAX_REQUEST_BYTES))
        .layer(axum::middleware::from_fn(connections::declared_length))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::same_origin))
        .with_state(state)
}
