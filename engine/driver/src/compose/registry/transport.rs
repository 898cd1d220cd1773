//! HTTP to one repository of an OCI registry (the distribution API): sign-in (none,
//! basic, or a bearer token from the realm the registry names), manifests and blobs up
//! and down, and the referrers list. Nothing leads it away: a redirect, an upload
//! location or a token realm is followed only to HTTPS, or to plain HTTP on a loopback
//! address when the registry itself is reached by plain HTTP on loopback, and a refusal
//! names the address refused. Every response is read as a stream: its declared length is
//! checked before a byte is read, its length and digest while it is read, so what a
//! registry sends costs at most what the caller allows.

use futures_util::StreamExt as _;
use reqwest::{Method, StatusCode, Url};
use sha2::Digest as _;

/// The largest blob a pull takes: the largest file a bundle may hold (its `trace.json`).
pub const MAX_BLOB: u64 = 64 << 20;
/// The largest answer of a token service.
const MAX_TOKEN_ANSWER: u64 = 64 << 10;
/// How many redirects one request follows.
const MAX_REDIRECTS: usize = 10;

const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";

/// A username and password from the user's Docker configuration.
#[derive(Clone)]
pub struct Credentials {
    pub username: String,
    pub password: String,
}

/// Why an operation failed: the registry sent what is refused, or it could not be
/// reached (or answered an error).
#[derive(Debug)]
pub enum Failure {
    Refused(String),
    Unreachable(String),
}

/// A redirect the policy does not follow, naming where it led.
#[derive(Debug)]
struct RedirectRefused(String);

impl std::fmt::Display for RedirectRefused {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

impl std::error::Error for RedirectRefused {}

/// How requests are signed.
enum Authorization {
    None,
    Basic,
    Bearer(String),
}

/// One repository of one registry.
pub struct Transport {
    http: reqwest::Client,
    /// `scheme://host[:port]`.
    base: Url,
    repository: String,
    /// The registry is reached by plain HTTP on a loopback address.
    loopback_plain: bool,
    credentials: Option<Credentials>,
    authorization: Authorization,
}

fn host_is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether a request may go to `url`: HTTPS anywhere, plain HTTP only to a loopback
/// address and only from a registry reached by plain HTTP on loopback.
pub fn may_follow(url: &Url, loopback_plain: bool) -> bool {
    match url.scheme() {
        "https" => true,
        "http" => loopback_plain && url.host_str().is_some_and(host_is_loopback),
        _ => false,
    }
}

fn refusal_of(url: &Url) -> String {
    format!(
        "`{}` is refused: only HTTPS is followed, or plain HTTP between loopback addresses",
        super::client::shown(url.as_str())
    )
}

/// An error and its causes, one line, escaped (a registry's words are not trusted).
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    super::client::shown(&text)
}

/// Reads a response whole, at most `limit` bytes (refused by its declared length before
/// a byte is read, else as soon as it passes the limit), checked against `digest` when
/// one is given.
async fn read_limited(response: reqwest::Response, limit: u64, digest: Option<&str>) -> Result<Vec<u8>, Failure> {
    let declared = response.content_length();
    if let Some(length) = declared
        && length > limit
    {
        return Err(Failure::Refused(format!("declares {length} bytes, more than the {limit} it may have")));
    }
    let mut hasher = sha2::Sha256::new();
    let mut bytes: Vec<u8> = Vec::with_capacity(usize::try_from(declared.unwrap_or(0).min(limit)).unwrap_or(0));
    let mut stream = response.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|error| Failure::Unreachable(describe(&error)))?;
        let length = bytes.len() as u64 + chunk.len() as u64;
        if length > limit {
            return Err(Failure::Refused(format!("is larger than the {limit} bytes it may have")));
        }
        // Grow no further than the limit, whatever the chunks.
        if bytes.capacity() < bytes.len() + chunk.len() {
            let wanted =
                (bytes.capacity() * 2).max(bytes.len() + chunk.len()).min(usize::try_from(limit).unwrap_or(usize::MAX));
            bytes.reserve_exact(wanted - bytes.len());
        }
        hasher.update(&chunk);
        bytes.extend_from_slice(&chunk);
    }
    if let Some(digest) = digest
        && format!("sha256:{:x}", hasher.finalize()) != digest
    {
        return Err(Failure::Refused("does not match its digest".to_owned()));
    }
    Ok(bytes)
}

/// `key="value"` pairs of a `WWW-Authenticate` challenge.
fn challenge_parameters(text: &str) -> Vec<(String, String)> {
    let mut parameters = Vec::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once('=') {
        let key = key.trim().trim_start_matches(',').trim().to_ascii_lowercase();
        let (value, remainder) = match after.strip_prefix('"') {
            Some(quoted) => quoted.split_once('"').unwrap_or((quoted, "")),
            None => after.split_once(',').unwrap_or((after, "")),
        };
        parameters.push((key, value.to_owned()));
        rest = remainder;
    }
    parameters
}

impl Transport {
    pub fn new(
        registry: &str,
        repository: &str,
        plain: bool,
        credentials: Option<Credentials>,
    ) -> Result<Transport, String> {
        let scheme = if plain { "http" } else { "https" };
        let base = Url::parse(&format!("{scheme}://{registry}/"))
            .map_err(|_| format!("`{}` is not a registry address", super::client::shown(registry)))?;
        let loopback_plain = plain && base.host_str().is_some_and(host_is_loopback);
        let policy = reqwest::redirect::Policy::custom(move |attempt| {
            if attempt.previous().len() >= MAX_REDIRECTS {
                let message = format!("more than {MAX_REDIRECTS} redirects, the last to `{}`", attempt.url());
                attempt.error(RedirectRefused(super::client::shown(&message)))
            } else if may_follow(attempt.url(), loopback_plain) {
                attempt.follow()
            } else {
                let message = format!("the redirect to {}", refusal_of(attempt.url()));
                attempt.error(RedirectRefused(message))
            }
        });
        let http = reqwest::Client::builder()
            .redirect(policy)
            .connect_timeout(std::time::Duration::from_secs(15))
            .read_timeout(std::time::Duration::from_secs(120))
            .user_agent(concat!("acompose/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|error| format!("cannot make the HTTP client: {}", describe(&error)))?;
        Ok(Transport {
            http,
            base,
            repository: repository.to_owned(),
            loopback_plain,
            credentials,
            authorization: Authorization::None,
        })
    }

    fn url(&self, path: &str) -> Result<Url, Failure> {
        self.base
            .join(&format!("v2/{}/{path}", self.repository))
            .map_err(|_| Failure::Unreachable(format!("`{}` makes no address", super::client::shown(path))))
    }

    fn request(&self, method: Method, url: Url) -> reqwest::RequestBuilder {
        let builder = self.http.request(method, url);
        match (&self.authorization, &self.credentials) {
            (Authorization::Bearer(token), _) => builder.bearer_auth(token),
            (Authorization::Basic, Some(credentials)) => {
                builder.basic_auth(&credentials.username, Some(&credentials.password))
            }
            _ => builder,
        }
    }

    async fn send(&self, builder: reqwest::RequestBuilder) -> Result<reqwest::Response, Failure> {
        builder.send().await.map_err(|error| Failure::Unreachable(describe(&error)))
    }

    fn unexpected(response: &reqwest::Response) -> Failure {
        Failure::Unreachable(format!(
            "`{}` answered {}",
            super::client::shown(response.url().as_str()),
            response.status()
        ))
    }

    /// Asks `/v2/` how to sign in, and does: nothing, basic credentials, or a bearer
    /// token for `scope` (`pull` or `pull,push`) from the realm the registry names.
    pub async fn authenticate(&mut self, scope: &str) -> Result<(), String> {
        let probe = self.base.join("v2/").map_err(|_| "no address".to_owned())?;
        let response = self.send(self.http.get(probe)).await.map_err(flatten)?;
        if response.status().is_success() {
            return Ok(());
        }
        if response.status() != StatusCode::UNAUTHORIZED {
            return Err(flatten(Self::unexpected(&response)));
        }
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        match challenge.split_once(' ') {
            Some((kind, _)) if kind.eq_ignore_ascii_case("basic") => {
                if self.credentials.is_none() {
                    return Err("the registry asks for credentials, and the Docker configuration holds none".to_owned());
                }
                self.authorization = Authorization::Basic;
                Ok(())
            }
            Some((kind, parameters)) if kind.eq_ignore_ascii_case("bearer") => {
                let token = self.token(&challenge_parameters(parameters), scope).await.map_err(flatten)?;
                self.authorization = Authorization::Bearer(token);
                Ok(())
            }
            _ => Err("the registry asks for a sign-in acompose does not speak".to_owned()),
        }
    }

    /// A bearer token from the challenge's realm, which must be an address the policy
    /// allows.
    async fn token(&self, parameters: &[(String, String)], scope: &str) -> Result<String, Failure> {
        let value = |key: &str| parameters.iter().find(|(name, _)| name == key).map(|(_, value)| value.clone());
        let realm =
            value("realm").ok_or_else(|| Failure::Unreachable("the sign-in challenge names no realm".to_owned()))?;
        let mut url = Url::parse(&realm).map_err(|_| {
            Failure::Refused(format!("the token service `{}` is no address", super::client::shown(&realm)))
        })?;
        if !may_follow(&url, self.loopback_plain) {
            return Err(Failure::Refused(format!("the token service {}", refusal_of(&url))));
        }
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = value("service") {
                query.append_pair("service", &service);
            }
            query.append_pair("scope", &format!("repository:{}:{scope}", self.repository));
        }
        let mut builder = self.http.get(url);
        if let Some(credentials) = &self.credentials {
            builder = builder.basic_auth(&credentials.username, Some(&credentials.password));
        }
        let response = self.send(builder).await?;
        if !response.status().is_success() {
            return Err(Self::unexpected(&response));
        }
        let bytes = read_limited(response, MAX_TOKEN_ANSWER, None).await?;
        #[derive(serde::Deserialize)]
        struct Answer {
            token: Option<String>,
            access_token: Option<String>,
        }
        let answer: Answer = serde_json::from_slice(&bytes)
            .map_err(|_| Failure::Refused("the token service's answer is not JSON".to_owned()))?;
        answer
            .token
            .or(answer.access_token)
            .ok_or_else(|| Failure::Refused("the token service's answer holds no token".to_owned()))
    }

    pub async fn has_blob(&self, digest: &str) -> Result<bool, String> {
        let url = self.url(&format!("blobs/{digest}")).map_err(flatten)?;
        let response = self.send(self.request(Method::HEAD, url)).await.map_err(flatten)?;
        match response.status() {
            status if status.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(flatten(Self::unexpected(&response))),
        }
    }

    /// Uploads a blob in one piece: a session is opened, and the bytes put at the
    /// location the registry names (which the policy must allow).
    pub async fn push_blob(&self, digest: &str, bytes: Vec<u8>) -> Result<(), String> {
        let start = self.url("blobs/uploads/").map_err(flatten)?;
        let response = self.send(self.request(Method::POST, start)).await.map_err(flatten)?;
        if response.status() != StatusCode::ACCEPTED {
            return Err(flatten(Self::unexpected(&response)));
        }
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| "the registry named no upload location".to_owned())?;
        let mut url = response
            .url()
            .join(location)
            .map_err(|_| format!("the upload location `{}` is no address", super::client::shown(location)))?;
        if !may_follow(&url, self.loopback_plain) {
            return Err(format!("the upload location {}", refusal_of(&url)));
        }
        url.query_pairs_mut().append_pair("digest", digest);
        let builder = self
            .request(Method::PUT, url)
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .body(bytes);
        let response = self.send(builder).await.map_err(flatten)?;
        if response.status() != StatusCode::CREATED {
            return Err(flatten(Self::unexpected(&response)));
        }
        Ok(())
    }

    pub async fn push_manifest(&self, name: &str, media_type: &str, bytes: Vec<u8>) -> Result<(), String> {
        let url = self.url(&format!("manifests/{name}")).map_err(flatten)?;
        let builder = self.request(Method::PUT, url).header(reqwest::header::CONTENT_TYPE, media_type).body(bytes);
        let response = self.send(builder).await.map_err(flatten)?;
        if !response.status().is_success() {
            return Err(flatten(Self::unexpected(&response)));
        }
        Ok(())
    }

    /// A manifest by tag or digest, at most `limit` bytes; `None` when there is none.
    pub async fn pull_manifest(&self, name: &str, media_type: &str, limit: u64) -> Result<Option<Vec<u8>>, Failure> {
        let url = self.url(&format!("manifests/{name}"))?;
        let response = self.send(self.request(Method::GET, url).header(reqwest::header::ACCEPT, media_type)).await?;
        match response.status() {
            status if status.is_success() => read_limited(response, limit, None).await.map(Some),
            StatusCode::NOT_FOUND => Ok(None),
            _ => Err(Self::unexpected(&response)),
        }
    }

    /// A blob of `size` bytes (its descriptor's) and of `digest`; one declared larger than
    /// [`MAX_BLOB`] is refused before it is asked for.
    pub async fn pull_blob(&self, digest: &str, size: u64) -> Result<Vec<u8>, Failure> {
        if size > MAX_BLOB {
            return Err(Failure::Refused(format!(
                "is declared as {size} bytes, more than a bundle's blob may have ({MAX_BLOB})"
            )));
        }
        let url = self.url(&format!("blobs/{digest}"))?;
        let response = self.send(self.request(Method::GET, url)).await?;
        if !response.status().is_success() {
            return Err(Self::unexpected(&response));
        }
        let bytes = read_limited(response, size, Some(digest)).await?;
        if bytes.len() as u64 != size {
            return Err(Failure::Refused("was cut short".to_owned()));
        }
        Ok(bytes)
    }

    /// The image index of the manifests whose subject is `digest`; `None` when the
    /// registry has no referrers API.
    pub async fn referrers(&self, digest: &str, limit: u64) -> Result<Option<Vec<u8>>, Failure> {
        let url = self.url(&format!("referrers/{digest}"))?;
        let response =
            self.send(self.request(Method::GET, url).header(reqwest::header::ACCEPT, INDEX_MEDIA_TYPE)).await?;
        match response.status() {
            status if status.is_success() => read_limited(response, limit, None).await.map(Some),
            StatusCode::NOT_FOUND | StatusCode::METHOD_NOT_ALLOWED => Ok(None),
            _ => Err(Self::unexpected(&response)),
        }
    }
}

fn flatten(failure: Failure) -> String {
    match failure {
        Failure::Refused(message) | Failure::Unreachable(message) => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_go_to_https_or_between_loopback_addresses_only() {
        let url = |text: &str| Url::parse(text).expect("url");
        assert!(may_follow(&url("https://10.0.0.1/v2/"), false));
        assert!(may_follow(&url("http://127.0.0.1:5000/v2/"), true));
        assert!(may_follow(&url("http://[::1]:5000/v2/"), true));
        assert!(!may_follow(&url("http://10.0.0.1/v2/"), true), "off loopback");
        assert!(!may_follow(&url("http://127.0.0.1/v2/"), false), "plain HTTP from an HTTPS registry");
        assert!(!may_follow(&url("ftp://127.0.0.1/"), true));
    }

    #[test]
    fn a_challenge_is_read_into_its_parameters() {
        let parameters = challenge_parameters(
            r#"realm="https://auth.example/token",service="registry.example",scope="repository:a:pull""#,
        );
        assert_eq!(parameters[0], ("realm".to_owned(), "https://auth.example/token".to_owned()));
        assert_eq!(parameters[1].1, "registry.example");
    }
}
