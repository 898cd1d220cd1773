//! Connections, bounded: the accept loop, a cap on the connections one client address
//! holds at once, a deadline for a request's head (idle keep-alive connections
//! included) and for its body, the refusal of a body by its declared length before a
//! byte of it is read, and the closing of a connection whose request was refused for
//! its token, host or origin. Knows nothing of People or of the routes.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes, HttpBody};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::error::{ApiError, MAX_REQUEST_BYTES};

/// The bounds of every connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// How long a client has to send a request's whole head, from when the server starts
    /// waiting for it (a new connection, or one idle after a response).
    pub header_timeout: Duration,
    /// How long a client has to send a request's whole body once its head is in.
    pub body_timeout: Duration,
    /// The most connections one client address holds at once; one more is closed as
    /// soon as it is accepted.
    pub per_client: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            per_client: 64,
        }
    }
}

/// How many connections each client address holds now.
#[derive(Debug, Default)]
pub struct Clients(Mutex<HashMap<IpAddr, usize>>);

/// One admitted connection of a client; gives its place back when dropped.
pub struct Slot {
    clients: Arc<Clients>,
    address: IpAddr,
}

impl Clients {
    /// A slot for one more connection of `address`, unless it holds `cap` already.
    fn admit(self: &Arc<Self>, address: IpAddr, cap: usize) -> Option<Slot> {
        let mut counts = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let count = counts.entry(address).or_default();
        if *count >= cap {
            return None;
        }
        *count += 1;
        Some(Slot { clients: Arc::clone(self), address })
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut counts = self.clients.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(count) = counts.get_mut(&self.address) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.address);
            }
        }
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
                    // Over the cap the stream is dropped here: closed at once.
                    if let Some(slot) = clients.admit(peer.ip(), limits.per_client) {
                        connections.spawn(connection(stream, app.clone(), stopped.clone(), limits, slot));
                    }
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
/// deadline; when the server stops, finishes the request in flight and closes.
async fn connection(
    stream: tokio::net::TcpStream,
    app: Router,
    stopped: watch::Receiver<bool>,
    limits: ConnectionLimits,
    _slot: Slot,
) {
    let mut builder = http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(limits.header_timeout);
    let served = builder.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app)).with_upgrades();
    let mut served = std::pin::pin!(served);
    tokio::select! {
        _ = served.as_mut() => return,
        () = stop_signal(stopped) => {}
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

    #[test]
    fn a_client_holds_at_most_its_cap_and_gets_places_back() {
        let clients = Arc::new(Clients::default());
        let address = IpAddr::from([127, 0, 0, 1]);
        let slots: Vec<Slot> = (0..3).filter_map(|_| clients.admit(address, 3)).collect();
        assert_eq!(slots.len(), 3);
        assert!(clients.admit(address, 3).is_none());
        assert!(clients.admit(IpAddr::from([127, 0, 0, 2]), 3).is_some(), "another client has its own places");
        drop(slots);
        assert!(clients.admit(address, 3).is_some());
    }
}
