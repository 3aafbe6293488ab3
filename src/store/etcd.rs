//! An etcd v3 client over etcd's JSON gateway, for the etcd provider and the
//! shared ACME storage.
//!
//! etcd serves its v3 API twice on the client port: as gRPC, and as JSON
//! over HTTP/1.1 under `/v3/…` (grpc-gateway). gangway speaks the JSON one
//! with hyper and rustls, so building it needs no protobuf compiler.
//!
//! What etcd 3.4.23 sends, as seen against the real server:
//!
//! - Every call is a `POST` of a JSON object; protobuf's JSON mapping
//!   applies, so keys and values are base64, 64-bit integers are strings
//!   (`"revision":"6"`), and fields at their zero value are left out: an
//!   empty value, a PUT event's `type`, `more` when false.
//! - An error is a non-2xx status with `{"error":…,"message":…,"code":N}`,
//!   `code` being the gRPC status: a stale token answers 401 with code 16,
//!   a request without a token to a server with auth 400 with code 3 ("user
//!   name is empty"), a wrong password 400 with code 3, `authenticate` on
//!   a server without auth 412 with code 9, a compacted revision 400 with
//!   code 11. Paths that do not exist answer `404` in plain text.
//! - The token (`Authorization: <token>`, no scheme) is etcd's "simple"
//!   token unless the server is set up for JWT. It survives a restart of
//!   the member (authentications are replayed from its log) and stops
//!   working when it expires or the user's password changes.
//! - `/v3/watch` answers 200 with a chunked body that stays open: one JSON
//!   object per line, each `{"result": WatchResponse}` followed by `\n`.
//!   The first says `"created":true`; each later one carries the events of
//!   one or more revisions (a short replay of history since
//!   `start_revision` came as one batch). A start revision that was compacted gives
//!   `created`, then `"canceled":true,"compact_revision":"N"`, and the
//!   stream stays open, so the client ends it itself. A token the server
//!   does not take still answers 200, with one line that is both
//!   `created` and `canceled`, `watch_id` -1 and a `cancel_reason`.
//!   When the server goes away the body just ends.
//!
//! Endpoints are tried in order (the one that answered last first), and a
//! request moves on to the next one only when it cannot connect: once
//! connected, an error is etcd's answer and is returned as it is (a
//! request is never sent twice, as it may have taken effect). A member
//! that does not answer in time, or answers that it cannot serve (503),
//! is tried last by the next request.

mod endpoint;
mod error;
mod kv;
mod watch;
pub(crate) mod wire;

pub use error::{EtcdError, Unreached};
pub use kv::{EtcdSettings, EtcdStore};
pub use watch::{Change, EtcdWatch, WatchBatch};

use crate::client::control::{Builder, ControlClient};
use bytes::Bytes;
use endpoint::{Endpoint, parse_endpoint};
use http::{HeaderValue, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The most read of one answer, or of one line of a watch: configuration
/// trees are small, so anything larger is a fault, not data.
pub const MAX_ANSWER: usize = 64 * 1024 * 1024;

/// Keys asked for per range request; larger trees are read in pages.
const PAGE: u64 = 1000;

/// How often a paged read starts over when its revision is compacted
/// between two pages.
const COMPACTED_RETRIES: usize = 3;

/// gRPC status codes the gateway puts in an error's `code`.
const GRPC_INVALID_ARGUMENT: i64 = 3;
const GRPC_FAILED_PRECONDITION: i64 = 9;
const GRPC_OUT_OF_RANGE: i64 = 11;
const GRPC_UNAUTHENTICATED: i64 = 16;

/// How long a connection may stay silent before TCP checks the peer is
/// still there; a watch is silent while nothing changes, and a member that
/// vanished without closing must still end it.
const KEEPALIVE: Duration = Duration::from_secs(30);

/// Keys and values as etcd holds them, the revision they were read at, and
/// the endpoint that answered.
type RawRange = (BTreeMap<Vec<u8>, Vec<u8>>, i64, String);

type Client = ControlClient<Full<Bytes>>;

/// A client of one etcd cluster, through the JSON gateway of its members.
pub struct EtcdClient {
    endpoints: Vec<Endpoint>,
    /// The endpoint that answered last, tried first.
    preferred: AtomicUsize,
    credentials: Option<Credentials>,
    auth: Mutex<Auth>,
    client: Client,
    timeout: Duration,
}

/// A user name and password for etcd's auth.
struct Credentials {
    user: String,
    password: String,
}

/// What the client knows of etcd's auth.
#[derive(Clone)]
enum Auth {
    /// Not asked yet.
    Unknown,
    /// The server has auth turned off: requests go without a token.
    NotEnabled,
    /// The token sent as `Authorization`.
    Token(HeaderValue),
}

/// A response whose head has arrived.
struct Answer {
    endpoint: String,
    status: StatusCode,
    body: Incoming,
}

impl fmt::Debug for EtcdClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EtcdClient")
            .field("endpoints", &self.endpoints())
            .field("user", &self.credentials.as_ref().map(|c| &c.user))
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl EtcdClient {
    /// A client for `endpoints` (`host:port`, or URLs with `http://` or
    /// `https://`), authenticating as `auth`'s (user, password) when given,
    /// speaking TLS with `tls` to bare and `https://` endpoints (without
    /// it, `https://` endpoints are checked against the Web PKI roots).
    /// `timeout` bounds connecting, and then each answer.
    ///
    /// Nothing is sent yet; see [`EtcdClient::connect`].
    pub fn new(
        endpoints: &[String],
        auth: Option<(String, String)>,
        tls: Option<rustls::ClientConfig>,
        timeout: Duration,
    ) -> Result<Self, EtcdError> {
        if endpoints.is_empty() {
            return Err(EtcdError::BadEndpoint {
                endpoint: String::new(),
                problem: "no endpoint is configured".to_owned(),
            });
        }
        let endpoints = endpoints
            .iter()
            .map(|e| parse_endpoint(e, tls.is_some()))
            .collect::<Result<Vec<_>, _>>()?;
        let builder = match tls {
            Some(config) => Builder::with_config(config),
            None => Builder::web_pki().map_err(|error| EtcdError::TlsSetup {
                endpoint: endpoints[0].name.clone(),
                error,
            })?,
        };
        // HTTP/1.1 is what the gateway speaks.
        let client = builder
            .connect_timeout(timeout)
            .keepalive(KEEPALIVE)
            .nodelay()
            .build();
        Ok(EtcdClient {
            endpoints,
            preferred: AtomicUsize::new(0),
            credentials: auth.map(|(user, password)| Credentials { user, password }),
            auth: Mutex::new(Auth::Unknown),
            client,
            timeout,
        })
    }

    /// Like [`EtcdClient::new`], then makes sure the cluster answers: it
    /// authenticates when a user is given (a wrong password is
    /// [`EtcdError::AuthFailed`]), and asks a member's status otherwise.
    pub async fn connect(
        endpoints: &[String],
        auth: Option<(String, String)>,
        tls: Option<rustls::ClientConfig>,
        timeout: Duration,
    ) -> Result<Self, EtcdError> {
        let client = Self::new(endpoints, auth, tls, timeout)?;
        if client.credentials.is_some() {
            client.authenticate().await?;
        } else {
            client
                .call::<serde_json::Value>("/v3/maintenance/status", None, &serde_json::json!({}))
                .await?;
        }
        Ok(client)
    }

    /// The endpoints, as configured, in the order they are tried.
    pub fn endpoints(&self) -> Vec<&str> {
        self.endpoints.iter().map(|e| e.name.as_str()).collect()
    }

    /// Every key under `prefix` with its value, and the revision they were
    /// read at (watch from the one after it to miss no change). Large trees
    /// are read in pages, all at that one revision. A key or value that is
    /// not UTF-8 is an error naming the key; see
    /// [`EtcdClient::range_prefix_bytes`] to read them anyway.
    pub async fn range_prefix(
        &self,
        prefix: &str,
    ) -> Result<(BTreeMap<String, String>, i64), EtcdError> {
        let (raw, revision, endpoint) = self.read_all(prefix).await?;
        let mut pairs = BTreeMap::new();
        for (key, value) in raw {
            let (key, value) = text_pair(&endpoint, key, value)?;
            pairs.insert(key, value);
        }
        Ok((pairs, revision))
    }

    /// Like [`EtcdClient::range_prefix`], with keys and values as etcd
    /// holds them, so that one that is not text can be reported without
    /// losing the others.
    pub async fn range_prefix_bytes(
        &self,
        prefix: &str,
    ) -> Result<(BTreeMap<Vec<u8>, Vec<u8>>, i64), EtcdError> {
        let (pairs, revision, _) = self.read_all(prefix).await?;
        Ok((pairs, revision))
    }

    /// Every page under `prefix`, the revision, and the endpoint that
    /// answered last.
    async fn read_all(&self, prefix: &str) -> Result<RawRange, EtcdError> {
        let mut tries = 0;
        loop {
            match self.read_pages(prefix).await {
                // The revision of the first page was compacted before the
                // last was read: start over at a newer one.
                Err(EtcdError::Status {
                    code: Some(GRPC_OUT_OF_RANGE),
                    ..
                }) if tries < COMPACTED_RETRIES => tries += 1,
                done => return done,
            }
        }
    }

    async fn read_pages(&self, prefix: &str) -> Result<RawRange, EtcdError> {
        let end = wire::encode(&wire::prefix_end(prefix.as_bytes()));
        let mut from = prefix.as_bytes().to_vec();
        let mut revision = 0;
        let mut pairs = BTreeMap::new();
        loop {
            let mut request = serde_json::json!({
                "key": wire::encode(&from),
                "range_end": end,
                "limit": PAGE.to_string(),
            });
            if revision > 0 {
                request["revision"] = revision.to_string().into();
            }
            let (endpoint, page) = self
                .call::<wire::RangeResponse>("/v3/kv/range", Some(prefix), &request)
                .await?;
            if revision == 0 {
                revision = page.header.revision;
            }
            let mut last = None;
            for kv in page.kvs {
                last = Some(kv.key.0.clone());
                pairs.insert(kv.key.0, kv.value.0);
            }
            match (page.more, last) {
                (false, _) => return Ok((pairs, revision, endpoint)),
                (true, Some(last)) => {
                    // The next page starts just after the last key read.
                    from = last;
                    from.push(0);
                }
                (true, None) => {
                    return Err(EtcdError::BadJson {
                        endpoint,
                        path: "/v3/kv/range",
                        key: Some(prefix.to_owned()),
                        reason: "`more` is set on a page without keys".to_owned(),
                    });
                }
            }
        }
    }

    /// Follows the changes under `prefix` from `from_revision` on (the
    /// revision after a [`EtcdClient::range_prefix`]; 0 or less: from now).
    /// Returns once etcd has confirmed the watch. Its batches end with an
    /// error: [`EtcdError::Compacted`] (read the prefix again),
    /// [`EtcdError::WatchCanceled`], or [`EtcdError::WatchEnded`] (watch
    /// again from the revision after the last batch).
    pub async fn watch_prefix(
        &self,
        prefix: &str,
        from_revision: i64,
    ) -> Result<EtcdWatch, EtcdError> {
        let mut create = serde_json::json!({
            "key": wire::encode(prefix.as_bytes()),
            "range_end": wire::encode(&wire::prefix_end(prefix.as_bytes())),
        });
        if from_revision > 0 {
            create["start_revision"] = from_revision.to_string().into();
        }
        let body = Bytes::from(serde_json::json!({ "create_request": create }).to_string());
        self.ensure_token().await?;
        match self.start_watch(prefix, &body).await {
            // A token that expired is refused inside the stream, with
            // nothing but a text reason: with credentials at hand, a fresh
            // token is worth one more try whatever the reason was.
            Err(EtcdError::WatchCanceled { .. }) if self.credentials.is_some() => {
                self.authenticate().await?;
                self.start_watch(prefix, &body).await
            }
            Err(e) if self.wants_new_token(&e) => {
                self.authenticate().await?;
                self.start_watch(prefix, &body).await
            }
            started => started,
        }
    }

    async fn start_watch(&self, prefix: &str, body: &Bytes) -> Result<EtcdWatch, EtcdError> {
        const PATH: &str = "/v3/watch";
        let answer = self.open(PATH, Some(prefix), body, true).await?;
        if !answer.status.is_success() {
            let (endpoint, status) = (answer.endpoint.clone(), answer.status);
            let bytes = self.read_body(answer, PATH, Some(prefix)).await?;
            return Err(status_error(endpoint, PATH, Some(prefix), status, &bytes));
        }
        let mut watch = EtcdWatch::new(answer.endpoint, prefix.to_owned(), answer.body);
        let first = tokio::time::timeout(self.timeout, watch.confirm()).await;
        match first {
            Ok(Ok(())) => Ok(watch),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(EtcdError::Timeout {
                endpoint: watch.endpoint().to_owned(),
                path: PATH,
                key: Some(prefix.to_owned()),
                timeout: self.timeout,
            }),
        }
    }

    /// POSTs `body` to the gateway's `path` (`/v3/kv/txn`, `/v3/lease/grant`
    /// …) and reads etcd's JSON answer as `T`, with the token when auth is
    /// on (authenticating again once if etcd no longer takes it). `key`
    /// names what the request is about in errors. Returns the endpoint that
    /// answered with the answer.
    pub async fn call<T: DeserializeOwned>(
        &self,
        path: &'static str,
        key: Option<&str>,
        body: &serde_json::Value,
    ) -> Result<(String, T), EtcdError> {
        let body = Bytes::from(body.to_string());
        self.ensure_token().await?;
        match self.call_once(path, key, &body).await {
            Err(e) if self.wants_new_token(&e) => {
                self.authenticate().await?;
                self.call_once(path, key, &body).await
            }
            done => done,
        }
    }

    async fn call_once<T: DeserializeOwned>(
        &self,
        path: &'static str,
        key: Option<&str>,
        body: &Bytes,
    ) -> Result<(String, T), EtcdError> {
        let answer = self.open(path, key, body, true).await?;
        let (endpoint, status) = (answer.endpoint.clone(), answer.status);
        let bytes = self.read_body(answer, path, key).await?;
        if !status.is_success() {
            return Err(status_error(endpoint, path, key, status, &bytes));
        }
        match serde_json::from_slice(&bytes) {
            Ok(parsed) => Ok((endpoint, parsed)),
            Err(e) => Err(EtcdError::BadJson {
                endpoint,
                path,
                key: key.map(str::to_owned),
                reason: e.to_string(),
            }),
        }
    }

    /// Authenticates first when credentials are given and no token is held.
    async fn ensure_token(&self) -> Result<(), EtcdError> {
        if self.credentials.is_some() && matches!(self.auth_state(), Auth::Unknown) {
            self.authenticate().await?;
        }
        Ok(())
    }

    /// Trades the user name and password for a token.
    async fn authenticate(&self) -> Result<(), EtcdError> {
        const PATH: &str = "/v3/auth/authenticate";
        let Some(credentials) = &self.credentials else {
            return Ok(());
        };
        let body = Bytes::from(
            serde_json::json!({ "name": credentials.user, "password": credentials.password })
                .to_string(),
        );
        let answer = self.open(PATH, None, &body, false).await?;
        let (endpoint, status) = (answer.endpoint.clone(), answer.status);
        let bytes = self.read_body(answer, PATH, None).await?;
        if status.is_success() {
            let token = serde_json::from_slice::<wire::AuthenticateResponse>(&bytes)
                .map_err(|e| e.to_string())
                .and_then(|a| HeaderValue::try_from(a.token).map_err(|e| e.to_string()));
            return match token {
                Ok(mut token) => {
                    token.set_sensitive(true);
                    self.set_auth(Auth::Token(token));
                    Ok(())
                }
                Err(reason) => Err(EtcdError::BadJson {
                    endpoint,
                    path: PATH,
                    key: None,
                    reason,
                }),
            };
        }
        let error = status_error(endpoint, PATH, None, status, &bytes);
        match error {
            // Auth is off on the server: requests need no token (as etcd's
            // own client does, the credentials are then not an error).
            EtcdError::Status {
                code: Some(GRPC_FAILED_PRECONDITION),
                ..
            } => {
                self.set_auth(Auth::NotEnabled);
                Ok(())
            }
            EtcdError::Status {
                endpoint, message, ..
            } if status.is_client_error() => Err(EtcdError::AuthFailed {
                endpoint,
                user: credentials.user.clone(),
                message,
            }),
            other => Err(other),
        }
    }

    /// Whether `error` may go away with a new token: etcd refused the one
    /// sent (it expired, or the user's password changed), or none was sent
    /// because auth was off and etcd now wants one (it then says the user
    /// name is empty, an invalid argument).
    fn wants_new_token(&self, error: &EtcdError) -> bool {
        if self.credentials.is_none() {
            return false;
        }
        match error {
            EtcdError::Status {
                status: 401,
                code: Some(GRPC_UNAUTHENTICATED),
                ..
            } => true,
            EtcdError::Status {
                code: Some(GRPC_INVALID_ARGUMENT),
                ..
            } => matches!(self.auth_state(), Auth::NotEnabled),
            _ => false,
        }
    }

    fn auth_state(&self) -> Auth {
        self.auth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    fn set_auth(&self, auth: Auth) {
        *self
            .auth
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = auth;
    }

    /// Sends a POST and waits for the answer's head, trying the endpoints
    /// in turn (from the one that answered last) while they cannot be
    /// connected to.
    async fn open(
        &self,
        path: &'static str,
        key: Option<&str>,
        body: &Bytes,
        with_token: bool,
    ) -> Result<Answer, EtcdError> {
        let token = match self.auth_state() {
            Auth::Token(token) if with_token => Some(token),
            _ => None,
        };
        let first = self.preferred.load(Ordering::Relaxed);
        let mut tried = Vec::new();
        for step in 0..self.endpoints.len() {
            let index = (first + step) % self.endpoints.len();
            let endpoint = &self.endpoints[index];
            let mut request = http::Request::post(format!("{}{path}", endpoint.base))
                .header(http::header::CONTENT_TYPE, "application/json");
            if let Some(token) = &token {
                request = request.header(http::header::AUTHORIZATION, token.clone());
            }
            let request =
                request
                    .body(Full::new(body.clone()))
                    .map_err(|e| EtcdError::BadEndpoint {
                        endpoint: endpoint.name.clone(),
                        problem: format!("cannot make a request to it: {e}"),
                    })?;
            // Connecting has its own limit (the connector's), so a member
            // that cannot be reached is left for the next in time; this
            // one bounds connecting plus the wait for the answer.
            let sent = tokio::time::timeout(2 * self.timeout, self.client.request(request)).await;
            match sent {
                Ok(Ok(response)) => {
                    // A member that answers but cannot serve (it has no
                    // leader: 503) is passed over by the next request.
                    let next = if response.status() == StatusCode::SERVICE_UNAVAILABLE {
                        index + 1
                    } else {
                        index
                    };
                    self.preferred
                        .store(next % self.endpoints.len(), Ordering::Relaxed);
                    return Ok(Answer {
                        endpoint: endpoint.name.clone(),
                        status: response.status(),
                        body: response.into_body(),
                    });
                }
                Ok(Err(e)) if e.is_connect() => tried.push(Unreached {
                    endpoint: endpoint.name.clone(),
                    reason: crate::cause::WithCauses(&e).to_string(),
                }),
                Ok(Err(e)) => {
                    return Err(EtcdError::Broken {
                        endpoint: endpoint.name.clone(),
                        path,
                        key: key.map(str::to_owned),
                        reason: crate::cause::WithCauses(&e).to_string(),
                    });
                }
                Err(_) => {
                    // The request may have taken effect, so it is not sent
                    // again; but a member that hangs must not stay first,
                    // or every later request would wait on it too.
                    self.preferred
                        .store((index + 1) % self.endpoints.len(), Ordering::Relaxed);
                    return Err(EtcdError::Timeout {
                        endpoint: endpoint.name.clone(),
                        path,
                        key: key.map(str::to_owned),
                        timeout: 2 * self.timeout,
                    });
                }
            }
        }
        Err(EtcdError::Unreachable { tried })
    }

    /// Reads a whole answer, at most [`MAX_ANSWER`] bytes, within the
    /// timeout.
    async fn read_body(
        &self,
        answer: Answer,
        path: &'static str,
        key: Option<&str>,
    ) -> Result<Bytes, EtcdError> {
        let Answer { endpoint, body, .. } = answer;
        let read = tokio::time::timeout(self.timeout, Limited::new(body, MAX_ANSWER).collect());
        match read.await {
            Ok(Ok(collected)) => Ok(collected.to_bytes()),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(EtcdError::TooLarge {
                endpoint,
                path,
                key: key.map(str::to_owned),
                limit: MAX_ANSWER,
            }),
            Ok(Err(e)) => Err(EtcdError::Broken {
                endpoint,
                path,
                key: key.map(str::to_owned),
                reason: crate::cause::WithCauses(&*e).to_string(),
            }),
            Err(_) => Err(EtcdError::Timeout {
                endpoint,
                path,
                key: key.map(str::to_owned),
                timeout: self.timeout,
            }),
        }
    }
}

/// The error for a non-2xx answer: etcd's message and gRPC code when the
/// body is etcd's JSON error, the start of the body otherwise.
fn status_error(
    endpoint: String,
    path: &'static str,
    key: Option<&str>,
    status: StatusCode,
    body: &[u8],
) -> EtcdError {
    /// Most of a body that is not etcd's error shown in the message.
    const SHOWN: usize = 300;
    let (message, code) = match serde_json::from_slice::<wire::ErrorBody>(body) {
        Ok(e) if !e.message.is_empty() => (e.message, e.code),
        Ok(e) if !e.error.is_empty() => (e.error, e.code),
        _ => {
            let text = String::from_utf8_lossy(body);
            let shown: String = text.trim().chars().take(SHOWN).collect();
            (shown, None)
        }
    };
    EtcdError::Status {
        endpoint,
        path,
        key: key.map(str::to_owned),
        status: status.as_u16(),
        code,
        message,
    }
}

/// A key and its value as text, or the error naming the key.
fn text_pair(endpoint: &str, key: Vec<u8>, value: Vec<u8>) -> Result<(String, String), EtcdError> {
    let key = String::from_utf8(key).map_err(|e| EtcdError::NotUtf8 {
        endpoint: endpoint.to_owned(),
        key: String::from_utf8_lossy(e.as_bytes()).into_owned(),
        part: "key",
    })?;
    let value = String::from_utf8(value).map_err(|_| EtcdError::NotUtf8 {
        endpoint: endpoint.to_owned(),
        key: key.clone(),
        part: "value",
    })?;
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_answers_keep_etcds_message_and_code() {
        let body = br#"{"error":"etcdserver: invalid auth token","message":"etcdserver: invalid auth token","code":16}"#;
        let err = status_error(
            "127.0.0.1:2379".to_owned(),
            "/v3/kv/range",
            Some("traefik/"),
            StatusCode::UNAUTHORIZED,
            body,
        );
        let client = EtcdClient::new(
            &["127.0.0.1:2379".to_owned()],
            Some(("root".to_owned(), "pw".to_owned())),
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(client.wants_new_token(&err), "{err:?}");
        assert_eq!(
            err.to_string(),
            "etcd at 127.0.0.1:2379: /v3/kv/range for `traefik/` answered 401: etcdserver: invalid auth token"
        );
        let plain = status_error(
            "e".to_owned(),
            "/v3/nothing",
            None,
            StatusCode::NOT_FOUND,
            b"Not Found\n",
        );
        assert!(
            matches!(&plain, EtcdError::Status { code: None, message, status: 404, .. } if message == "Not Found"),
            "{plain:?}"
        );
    }

    #[test]
    fn keys_and_values_that_are_not_text_are_named() {
        let err = text_pair("e", b"traefik/\xff".to_vec(), b"v".to_vec()).unwrap_err();
        assert!(
            matches!(&err, EtcdError::NotUtf8 { key, part: "key", .. } if key == "traefik/\u{fffd}"),
            "{err:?}"
        );
        let err = text_pair("e", b"traefik/a".to_vec(), b"\xc3".to_vec()).unwrap_err();
        assert!(
            matches!(&err, EtcdError::NotUtf8 { key, part: "value", .. } if key == "traefik/a"),
            "{err:?}"
        );
    }

    #[test]
    fn the_client_can_be_shared_and_its_calls_spawned() {
        fn spawnable<T: Send + 'static>(_: &T) {}
        fn shared<T: Send + Sync>(_: &T) {}
        let client = std::sync::Arc::new(
            EtcdClient::new(
                &["127.0.0.1:2379".to_owned()],
                None,
                None,
                Duration::from_secs(1),
            )
            .unwrap(),
        );
        shared(&*client);
        let c = client.clone();
        spawnable(&async move { c.range_prefix("traefik/").await });
        let c = client.clone();
        spawnable(&async move {
            let mut watch = c.watch_prefix("traefik/", 0).await?;
            watch.next().await.transpose()
        });
        spawnable(&async move {
            client
                .call::<serde_json::Value>("/v3/kv/range", None, &serde_json::json!({}))
                .await
        });
    }

    #[test]
    fn a_client_needs_an_endpoint_that_can_work() {
        let none = EtcdClient::new(&[], None, None, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(none, EtcdError::BadEndpoint { .. }));
        let bad = EtcdClient::new(
            &["127.0.0.1:2379".to_owned(), "ftp://etcd".to_owned()],
            None,
            None,
            Duration::from_secs(1),
        )
        .unwrap_err();
        assert!(
            matches!(&bad, EtcdError::BadEndpoint { endpoint, .. } if endpoint == "ftp://etcd"),
            "{bad:?}"
        );
    }
}
