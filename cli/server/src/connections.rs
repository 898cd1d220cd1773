//! Connections, bounded: the accept loop, the connections one client address holds at
//! once, a deadline for a request's head (idle keep-alive connections included) and for
//! its body, the refusal of a body by its declared length before a byte of it is read,
//! and the closing of a connection whose request was refused for its token, host or
//! origin. A connection is *unproven* until a request on it shows the token: unproven
//! connections have a short deadline to do so and a pool of their own per address, in
//! which a new one closes the oldest, so clients without the token cannot take the places
//! of the page's connections. Knows nothing of People or of the routes.

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};

use crate::error::{ApiError, MAX_REQUEST_BYTES};

/// The bounds of every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client has to send a request's whole head, from when the server starts
    /// waiting for it (a new connection, or one idle after a response).
    pub header_timeout: Duration,
    /// How long a client has to send a request's whole body once its head is in.
    pub body_timeout: Duration,
    /// The most connections one client address holds at once that have shown the token;
    /// past it a connection stays unproven.
    pub per_client: usize,
    /// The most unproven connections one client address holds at once: one more closes
    /// the oldest of them.
    pub unproven_per_client: usize,
    /// How long a connection may stay open without a request showing the token.
    pub token_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            per_client: 64,
            unproven_per_client: 64,
            token_timeout: Duration::from_secs(5),
        }
    }
}

/// One connection's standing, shared by its task and the requests on it.
#[derive(Debug, Default)]
pub struct Standing {
    id: u64,
    proven: AtomicBool,
    /// Told when the connection is closed to make room for a newer unproven one.
    evicted: Notify,
}

/// The connections of one client address: how many showed the token, and the unproven
/// ones oldest first.
#[derive(Debug, Default)]
struct Held {
    proven: usize,
    unproven: VecDeque<Arc<Standing>>,
}

/// The connections each client address holds now.
#[derive(Debug, Default)]
pub struct Clients {
    held: Mutex<HashMap<IpAddr, Held>>,
    next_id: AtomicU64,
}

/// One admitted connection of a client; gives its place back when dropped, and moves to
/// the proven pool when a request on it shows the token.
#[derive(Clone)]
pub struct Slot {
    clients: Arc<Clients>,
    address: IpAddr,
    standing: Arc<Standing>,
    per_client: usize,
}

impl Clients {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Held>> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A slot for a new, unproven connection of `address`; the oldest unproven one is
    /// closed first when the address holds `limits.unproven_per_client` of them.
    fn admit(self: &Arc<Self>, address: IpAddr, limits: &ConnectionLimits) -> Slot {
        let standing = Arc::new(Standing { id: self.next_id.fetch_add(1, Ordering::Relaxed), ..Standing::default() });
        let mut held = self.lock();
        let entry = held.entry(address).or_default();
        while entry.unproven.len() >= limits.unproven_per_client.max(1) {
            if let Some(oldest) = entry.unproven.pop_front() {
                oldest.evicted.notify_one();
            }
        }
        entry.unproven.push_back(Arc::clone(&standing));
        Slot { clients: Arc::clone(self), address, standing, per_client: limits.per_client }
    }
}

impl Slot {
    /// A request on this connection showed the token: it leaves the unproven pool, unless
    /// the address holds its cap of proven connections already.
    pub fn prove(&self) {
        if self.standing.proven.load(Ordering::Acquire) {
            return;
        }
        let mut held = self.clients.lock();
        let Some(entry) = held.get_mut(&self.address) else { return };
        let Some(position) = entry.unproven.iter().position(|other| other.id == self.standing.id) else { return };
        if entry.proven >= self.per_client {
            return;
        }
        entry.unproven.remove(position);
        entry.proven += 1;
        self.standing.proven.store(true, Ordering::Release);
    }

    fn is_proven(&self) -> bool {
        self.standing.proven.load(Ordering::Acquire)
    }

    /// Gives the place back.
    fn release(&self) {
        let mut held = self.clients.lock();
        let Some(entry) = held.get_mut(&self.address) else { return };
        if self.is_proven() {
            entry.proven = entry.proven.saturating_sub(1);
        } else {
            entry.unproven.retain(|other| other.id != self.standing.id);
        }
        if entry.proven == 0 && entry.unproven.is_empty() {
            held.remove(&self.address);
        }
    }
}

/// Gives a connection's place back when its task ends, however it ends.
struct Release(Slot);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// Accepts connections on `listener` until `stopped`, each within `limits`, then lets
/// the requests in flight finish.
pub async fn serve(listener: TcpListener, app: Router, stopped: watch::Receiver<bool>, limits: ConnectionLimits) {
    let clients = Arc::new(Clients::default());
    let mut connections = tokio::task::JoinSet::new();
    let mut stop = std::pin::pin!(stop_signal(stopped.clone()));
    loop {
        tokio::select! {
            () = stop.as_mut() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let slot = clients.admit(peer.ip(), &limits);
                    connections.spawn(connection(stream, app.clone(), stopped.clone(), limits, slot));
                }
                // Out of descriptors, or a connection reset before it was accepted: wait a
                // little, so the loop does not spin, and accept again.
                Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
    while connections.join_next().await.is_some() {}
}

/// Resolves when the server stops (or its sender is gone).
async fn stop_signal(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Serves one connection (HTTP/1.1, upgrades to WebSocket allowed) with the head
/// deadline; an unproven connection is closed at its token deadline or to make room for
/// a newer one; when the server stops, finishes the request in flight and closes.
async fn connection(
    stream: tokio::net::TcpStream,
    app: Router,
    stopped: watch::Receiver<bool>,
    limits: ConnectionLimits,
    slot: Slot,
) {
    let standing = Arc::clone(&slot.standing);
    let release = Release(slot.clone());
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let app = app.layer(Extension(slot));
    let served = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app)).with_upgrades();
    let mut served = std::pin::pin!(served);
    let deadline = tokio::time::sleep(limits.token_timeout);
    let mut deadline = std::pin::pin!(deadline);
    let mut watching = true;
    loop {
        tokio::select! {
            _ = served.as_mut() => return,
            () = stop_signal(stopped.clone()) => break,
            () = standing.evicted.notified(), if watching => return,
            () = deadline.as_mut(), if watching => {
                if !release.0.is_proven() {
                    return;
                }
                watching = false;
            }
        }
    }
    served.as_mut().graceful_shutdown();
    let _ = served.await;
}

/// `response` with `Connection: close`: the connection ends once it is sent.
pub fn closing(mut response: Response) -> Response {
    response.headers_mut().insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

fn too_large() -> Response {
    closing(
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body-too-large",
            format!("the request body is larger than {MAX_REQUEST_BYTES} bytes"),
        )
        .into_response(),
    )
}

/// Refuses a request whose `Content-Length` is over [`MAX_REQUEST_BYTES`] (or not a
/// number) before a byte of its body is read, and closes its connection.
pub async fn declared_length(request: Request, next: Next) -> Response {
    let declared = request.headers().get(header::CONTENT_LENGTH).map(|value| {
        value
            .to_str()
            .ok()
            .and_then(|text| text.trim().parse::<u64>().ok())
            .filter(|length| usize::try_from(*length).is_ok_and(|length| length <= MAX_REQUEST_BYTES))
    });
    match declared {
        Some(None) => too_large(),
        _ => next.run(request).await,
    }
}

/// Reads a request's body within the body deadline and the size limit before the route
/// sees it, so no route waits on a slow client; a body too slow or too large is refused
/// and its connection closed.
pub async fn bounded_body(State(limits): State<ConnectionLimits>, request: Request, next: Next) -> Response {
    let (parts, body) = request.into_parts();
    match tokio::time::timeout(limits.body_timeout, read_body(body)).await {
        Ok(Ok(bytes)) => next.run(Request::from_parts(parts, Body::from(bytes))).await,
        Ok(Err(BodyRefusal::TooLarge)) => too_large(),
        Ok(Err(BodyRefusal::Unreadable)) => {
            closing(ApiError::invalid_request("the request body could not be read").into_response())
        }
        Err(_) => closing(
            ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "body-timeout",
                format!("the request body did not arrive within {} s", limits.body_timeout.as_secs()),
            )
            .into_response(),
        ),
    }
}

enum BodyRefusal {
    TooLarge,
    Unreadable,
}

/// The whole body, refused as soon as it passes [`MAX_REQUEST_BYTES`].
async fn read_body(mut body: Body) -> Result<Bytes, BodyRefusal> {
    let mut bytes = Vec::new();
    while let Some(frame) = std::future::poll_fn(|context| std::pin::Pin::new(&mut body).poll_frame(context)).await {
        let frame = frame.map_err(|_| BodyRefusal::Unreadable)?;
        if let Ok(data) = frame.into_data() {
            if bytes.len() + data.len() > MAX_REQUEST_BYTES {
                return Err(BodyRefusal::TooLarge);
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(Bytes::from(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(unproven: usize, proven: usize) -> ConnectionLimits {
        ConnectionLimits { unproven_per_client: unproven, per_client: proven, ..ConnectionLimits::default() }
    }

    #[test]
    fn a_new_unproven_connection_closes_the_oldest_and_proven_ones_have_their_own_places() {
        let clients = Arc::new(Clients::default());
        let address = IpAddr::from([127, 0, 0, 1]);
        let limits = limits(3, 2);
        let slots: Vec<Slot> = (0..3).map(|_| clients.admit(address, &limits)).collect();
        slots[1].prove();
        assert!(slots[1].is_proven());
        // Two unproven left; a third and a fourth close the oldest unproven (slot 0).
        let third = clients.admit(address, &limits);
        let fourth = clients.admit(address, &limits);
        let evicted =
            tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime").block_on(async {
                tokio::time::timeout(Duration::from_millis(100), slots[0].standing.evicted.notified()).await
            });
        assert!(evicted.is_ok(), "the oldest unproven connection was told to close");
        assert!(clients.lock()[&address].unproven.len() <= 3);
        // The proven pool has its own cap: past it a connection stays unproven.
        third.prove();
        fourth.prove();
        assert!(third.is_proven() && !fourth.is_proven());
        for slot in slots.iter().chain([&third, &fourth]) {
            slot.release();
        }
        assert!(clients.lock().is_empty(), "every place given back");
    }
}
