//! Requests that two HTTP parsers could read differently, sent as raw bytes
//! to the real binary: each is refused with 400 and its connection closed,
//! or re-framed so the backend sees one unambiguous request. Encoded and
//! dotted paths cannot slip past a `PathPrefix` router.

mod support;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Backend, Gangway};

/// One request as the backend received it.
#[derive(Debug, Clone)]
struct Received {
    uri: String,
    headers: http::HeaderMap,
    body: Bytes,
}

/// A backend that records every request it gets.
async fn recording() -> (Backend, Arc<Mutex<Vec<Received>>>) {
    let log: Arc<Mutex<Vec<Received>>> = Arc::default();
    let seen = log.clone();
    let backend = Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let seen = seen.clone();
        async move {
            let (parts, body) = req.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            seen.lock().unwrap().push(Received {
                uri: parts.uri.to_string(),
                headers: parts.headers,
                body,
            });
            http::Response::new(Full::new(Bytes::from_static(b"backend")))
        }
    })
    .await;
    (backend, log)
}

/// What came back on a raw connection: the bytes, and whether gangway
/// closed it (rather than keeping it open for the next request).
struct Answer {
    text: String,
    closed: bool,
}

impl Answer {
    fn status(&self) -> u16 {
        self.text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0)
    }
}

async fn raw(gw: &Gangway, bytes: &[u8]) -> Answer {
    let (text, closed) = support::raw_exchange(gw, bytes, Duration::from_secs(2)).await;
    Answer { text, closed }
}

/// gangway with `config`, once its routes are in place.
async fn start(backend: &Backend, extra: &[&str]) -> Gangway {
    let gw = Gangway::with_file(&config(backend), extra).await;
    support::eventually(Duration::from_secs(10), "a.test is routed", || async {
        gw.get("a.test", "/").await.status == 200
    })
    .await;
    gw
}

fn config(backend: &Backend) -> String {
    format!(
        r#"
[http.routers.app]
rule = "Host(`a.test`)"
service = "app"
[http.routers.admin]
rule = "Host(`a.test`) && PathPrefix(`/admin`)"
service = "app"
middlewares = ["nobody"]
[http.middlewares.nobody.ipAllowList]
sourceRange = ["192.0.2.1/32"]
[http.routers.api]
rule = "Host(`a.test`) && PathPrefix(`/api`)"
service = "app"
middlewares = ["strip"]
[http.middlewares.strip.stripPrefix]
prefixes = ["/api"]
[http.services.app.loadBalancer]
[[http.services.app.loadBalancer.servers]]
url = "{}"
"#,
        backend.url()
    )
}

#[tokio::test]
async fn ambiguous_framing_and_bad_bytes_get_400_and_a_closed_connection() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    let post = |headers: &str, body: &str| {
        format!("POST / HTTP/1.1\r\nHost: a.test\r\n{headers}\r\n{body}")
    };
    let cases: Vec<(&str, String)> = vec![
        (
            "two different Content-Length",
            post("Content-Length: 1\r\nContent-Length: 2\r\n", "ab"),
        ),
        (
            "a Content-Length list",
            post("Content-Length: 2, 2\r\n", "ab"),
        ),
        (
            "a signed Content-Length",
            post("Content-Length: +2\r\n", "ab"),
        ),
        (
            "a non-numeric Content-Length",
            post("Content-Length: two\r\n", "ab"),
        ),
        (
            "an unknown transfer coding",
            post("Transfer-Encoding: gzip\r\n", "ab"),
        ),
        (
            "a coding before chunked",
            post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"),
        ),
        (
            "a misspelt chunked",
            post("Transfer-Encoding: xchunked\r\n", "0\r\n\r\n"),
        ),
        (
            "two Transfer-Encoding fields",
            post(
                "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
                "0\r\n\r\n",
            ),
        ),
        (
            "chunked on HTTP/1.0",
            "POST / HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
                .to_owned(),
        ),
        (
            "obsolete line folding",
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: b\r\n c\r\n\r\n".to_owned(),
        ),
        (
            "a bare CR in a value",
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: b\rc\r\n\r\n".to_owned(),
        ),
        (
            "a space in a field name",
            "GET / HTTP/1.1\r\nHost: a.test\r\nX A: b\r\n\r\n".to_owned(),
        ),
        (
            "a space before the colon",
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-A : b\r\n\r\n".to_owned(),
        ),
        (
            "a NUL in a value",
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: b\0c\r\n\r\n".to_owned(),
        ),
        (
            "a DEL in a value",
            "GET / HTTP/1.1\r\nHost: a.test\r\nX-A: b\x7fc\r\n\r\n".to_owned(),
        ),
        (
            "two Host fields",
            "GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n".to_owned(),
        ),
        ("no Host on HTTP/1.1", "GET / HTTP/1.1\r\n\r\n".to_owned()),
        (
            "a broken percent-escape in the path",
            "GET /a%zz HTTP/1.1\r\nHost: a.test\r\n\r\n".to_owned(),
        ),
    ];
    for (what, bytes) in &cases {
        // A second, valid request follows on the same connection: it must
        // not be read as one (the connection is closed instead).
        let follow = "GET /smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n";
        let answer = raw(&gw, format!("{bytes}{follow}").as_bytes()).await;
        assert_eq!(answer.status(), 400, "{what}: {}", answer.text);
        assert!(answer.closed, "{what}: the connection stays open");
        assert_eq!(
            answer.text.matches("HTTP/1.1 ").count(),
            1,
            "{what}: one answer only: {}",
            answer.text
        );
        let got = received.lock().unwrap().clone();
        assert!(got.is_empty(), "{what}: forwarded: {got:?}");
    }

    // A bad chunk size is found while the body streams, after the request
    // went out: the exchange fails and the connection closes, and what
    // followed is never read as a request.
    let answer = raw(
        &gw,
        format!(
            "{}GET /smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n",
            post("Transfer-Encoding: chunked\r\n", "zz\r\nab\r\n0\r\n\r\n")
        )
        .as_bytes(),
    )
    .await;
    // The client's fault, so 400 (never 502: the server did nothing wrong).
    assert_eq!(answer.status(), 400, "bad chunk: {}", answer.text);
    assert!(answer.closed, "bad chunk: the connection stays open");
    let got = received.lock().unwrap().clone();
    assert!(got.iter().all(|r| r.uri != "/smuggled"), "{got:?}");
}

#[tokio::test]
async fn length_with_chunked_is_reframed_and_the_connection_closed() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    // Transfer-Encoding wins, as RFC 9112 §6.1 says; "GET /smuggled" is the
    // chunked body's tail under the Content-Length reading, and must never
    // become a request.
    let answer = raw(
        &gw,
        b"POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n\
          5\r\nhello\r\n0\r\n\r\nGET /smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status(), 200, "{}", answer.text);
    assert!(answer.closed, "closed after the answer");
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body, Bytes::from_static(b"hello"));
    assert!(
        got[0]
            .headers
            .get("content-length")
            .is_none_or(|v| v == "5")
    );
    assert!(got.iter().all(|r| r.uri != "/smuggled"));

    // Equal duplicate lengths are one length (RFC 9110 §8.6): the backend
    // gets exactly one.
    received.lock().unwrap().clear();
    let answer = raw(
        &gw,
        b"POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nab",
    )
    .await;
    assert_eq!(answer.status(), 200, "{}", answer.text);
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].headers.get_all("content-length").iter().count(), 1);
    assert_eq!(got[0].body, Bytes::from_static(b"ab"));
}

#[tokio::test]
async fn absolute_form_targets_win_over_host_and_the_backend_sees_that_host() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    let answer = raw(
        &gw,
        b"GET http://a.test/x HTTP/1.1\r\nHost: elsewhere.test\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status(), 200, "{}", answer.text);
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].headers["host"], "a.test");
    assert_eq!(got[0].uri, "/x");
    // And the other way round: a target for an unknown host is not routed
    // by a known Host field.
    let answer = raw(
        &gw,
        b"GET http://elsewhere.test/x HTTP/1.1\r\nHost: a.test\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status(), 404, "{}", answer.text);
}

#[tokio::test]
async fn encoded_and_dotted_paths_cannot_slip_past_a_path_prefix_router() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    for path in [
        "/admin",
        "//admin",
        "/x/../admin",
        "/./admin/",
        "/%61dmin",
        "/%2e%2e/admin",
        "/x/%2E%2E/admin/secret",
        "/static/..%2f..%2fadmin",
    ] {
        let answer = raw(
            &gw,
            format!("GET {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await;
        // `%2F` is not a separator, so the last one stays outside /admin.
        let want = if path.contains("%2f") { 200 } else { 403 };
        assert_eq!(answer.status(), want, "{path}: {}", answer.text);
    }
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    // The backend sees the canonical path, `%2F` still encoded.
    assert_eq!(got[0].uri, "/static/..%2F..%2Fadmin");

    // With sanitizePath off, the path goes through untouched (and the
    // router is bypassed, which is why it is on by default).
    let raw_gw = start(&backend, &["--entryPoints.web.http.sanitizePath=false"]).await;
    received.lock().unwrap().clear();
    let answer = raw(
        &raw_gw,
        b"GET //admin HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status(), 200, "{}", answer.text);
    assert_eq!(received.lock().unwrap()[0].uri, "//admin");
}

#[tokio::test]
async fn strip_prefix_sees_the_canonical_path_so_encodings_cannot_steer_it() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    for (path, want) in [
        // Encoded or padded forms of /api/… meet the /api router and its
        // stripPrefix, and the server gets the rest only.
        ("/%61pi/users", Some("/users")),
        ("/api//users", Some("/users")),
        ("/api/./users", Some("/users")),
        ("/x/../api/users", Some("/users")),
        // Dot segments cannot climb out of /api into /admin past its
        // ipAllowList: they are resolved before routing.
        ("/api/../admin", None),
        ("/api/%2e%2e/admin/x", None),
    ] {
        received.lock().unwrap().clear();
        let answer = raw(
            &gw,
            format!("GET {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await;
        let got = received.lock().unwrap().clone();
        match want {
            Some(stripped) => {
                assert_eq!(answer.status(), 200, "{path}: {}", answer.text);
                assert_eq!(got.len(), 1, "{path}: {got:?}");
                assert_eq!(got[0].uri, stripped, "{path}");
                assert_eq!(
                    got[0]
                        .headers
                        .get("x-forwarded-prefix")
                        .map(|v| v.as_bytes()),
                    Some(&b"/api"[..]),
                    "{path}"
                );
            }
            None => {
                assert_eq!(answer.status(), 403, "{path}: {}", answer.text);
                assert!(got.is_empty(), "{path} reached the server: {got:?}");
            }
        }
    }
}

#[tokio::test]
async fn http2_authority_and_host_must_agree() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    let send = |host: String| {
        let req = http::Request::get(gw.url("/"))
            .version(http::Version::HTTP_2)
            .header("host", host)
            .body(Full::default())
            .unwrap();
        gw.send(req)
    };
    // The client derives :authority from the URL (127.0.0.1:port); a Host
    // field naming another host is refused.
    assert_eq!(send("a.test".to_owned()).await.status, 400);
    assert!(received.lock().unwrap().is_empty());
    // The same host in both is fine (no router for it here: 404).
    let authority = gw.url("").trim_start_matches("http://").to_owned();
    assert_eq!(send(authority).await.status, 404);
}
