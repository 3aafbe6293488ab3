//! Requests that two HTTP parsers could read differently, sent as raw bytes
//! to the real binary: each is refused with 400 and its connection closed,
//! or re-framed so the backend sees one unambiguous request. Encoded and
//! dotted paths cannot slip past a `PathPrefix` router.

use crate::support;

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

    // A bad chunk size (already received with the head) is refused before
    // forwarding, and what followed is never read as a request.
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
    for path in ["/admin", "//admin", "/x/../admin", "/./admin/", "/%61dmin"] {
        let answer = raw(
            &gw,
            format!("GET {path} HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await;
        assert_eq!(answer.status(), 403, "{path}: {}", answer.text);
    }
    // Dot segments spelled with escapes are refused outright, whatever
    // `encodedCharacters` allows (every escape, by default).
    for path in [
        "/%2e%2e/admin",
        "/x/%2E%2E/admin/secret",
        "/static/..%2f..%2fadmin",
        "/static/..%5C..%5Cadmin",
        "/api/..%2F..%2Fadmin",
        "/api/%2E%2E/admin",
    ] {
        let answer = get_closing(&gw, path, "").await;
        assert_eq!(answer.status(), 400, "{path}: {}", answer.text);
    }
    assert!(received.lock().unwrap().is_empty());

    // `%2F` is allowed and is not a separator: a GitLab-style name
    // reaches the server as sent (the escape in upper case).
    let answer = get_closing(&gw, "/projects/group%2fproject", "").await;
    assert_eq!(answer.status(), 200, "{}", answer.text);
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].uri, "/projects/group%2Fproject");

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
                // 403 from /admin's ipAllowList, or 400 for a dot segment
                // spelled with escapes.
                assert!(
                    matches!(answer.status(), 400 | 403),
                    "{path}: {}",
                    answer.text
                );
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

/// The seven escapes Traefik 3.7 allows by default, each with its option.
const AMBIGUOUS: [(&str, &str); 7] = [
    ("%2F", "allowEncodedSlash"),
    ("%5c", "allowEncodedBackSlash"),
    ("%00", "allowEncodedNullCharacter"),
    ("%3B", "allowEncodedSemicolon"),
    ("%25", "allowEncodedPercent"),
    ("%3f", "allowEncodedQuestionMark"),
    ("%23", "allowEncodedHash"),
];

async fn get_closing(gw: &Gangway, target: &str, headers: &str) -> Answer {
    raw(
        gw,
        format!("GET {target} HTTP/1.1\r\nHost: a.test\r\n{headers}Connection: close\r\n\r\n")
            .as_bytes(),
    )
    .await
}

/// The flags that refuse every one of them except `allowed`'s.
fn strict_but(allowed: Option<&str>) -> Vec<String> {
    AMBIGUOUS
        .iter()
        .filter(|(_, option)| Some(*option) != allowed)
        .map(|(_, option)| format!("--entryPoints.web.http.encodedCharacters.{option}=false"))
        .collect()
}

#[tokio::test]
async fn ambiguous_escapes_pass_by_default_and_each_option_refuses_its_own() {
    let (backend, received) = recording().await;
    // By default (Traefik 3.7's) each reaches the server as sent.
    let open = start(&backend, &[]).await;
    for (escape, _) in AMBIGUOUS {
        received.lock().unwrap().clear();
        let path = format!("/x{escape}y");
        let answer = get_closing(&open, &path, "").await;
        assert_eq!(answer.status(), 200, "{path}: {}", answer.text);
        let got = received.lock().unwrap().clone();
        assert_eq!(got.len(), 1, "{path}");
        assert_eq!(got[0].uri, format!("/x{}y", escape.to_uppercase()));
    }
    let strict = strict_but(None);
    let strict: Vec<&str> = strict.iter().map(String::as_str).collect();
    let gw = start(&backend, &strict).await;
    received.lock().unwrap().clear();
    for (escape, _) in AMBIGUOUS {
        for path in [
            format!("/x{escape}y"),
            format!("/x{}y", escape.to_lowercase()),
        ] {
            let answer = get_closing(&gw, &path, "").await;
            assert_eq!(answer.status(), 400, "{path}: {}", answer.text);
        }
    }
    // Escapes of other characters, and the query, are not concerned.
    assert_eq!(get_closing(&gw, "/x%20y?a=%2F", "").await.status(), 200);
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].uri, "/x%20y?a=%2F");

    // With the others refused, each option lets its own escape through.
    for (allowed, option) in AMBIGUOUS {
        let flags = strict_but(Some(option));
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let gw = start(&backend, &flags).await;
        for (escape, _) in AMBIGUOUS {
            received.lock().unwrap().clear();
            let path = format!("/x{escape}y");
            let answer = get_closing(&gw, &path, "").await;
            let got = received.lock().unwrap().clone();
            if escape == allowed {
                assert_eq!(answer.status(), 200, "{option}, {path}: {}", answer.text);
                assert_eq!(got.len(), 1, "{option}, {path}");
                assert_eq!(got[0].uri, format!("/x{}y", escape.to_uppercase()));
            } else {
                assert_eq!(answer.status(), 400, "{option}, {path}: {}", answer.text);
                assert!(got.is_empty(), "{option}, {path}: {got:?}");
            }
        }
    }
}

#[tokio::test]
async fn an_encoded_slash_cannot_reach_admin_and_a_backslash_never_passes() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    for path in [
        "/static/..%2f..%2fadmin",
        "/static%2F..%2F..%2Fadmin",
        "/static/..%5C..%5Cadmin",
        "/static\\..\\admin",
        "/admin\\",
    ] {
        let answer = get_closing(&gw, path, "").await;
        assert_eq!(answer.status(), 400, "{path}: {}", answer.text);
    }
    // An allowed `%5C` is part of a segment: /admin's router, and its
    // ipAllowList, still take the request.
    assert_eq!(get_closing(&gw, "/admin%5csecret", "").await.status(), 403);
    assert!(received.lock().unwrap().is_empty());
    // A raw backslash stays refused even with every escape allowed.
    let lax = start(
        &backend,
        &[
            "--entryPoints.web.http.encodedCharacters.allowEncodedSlash=true",
            "--entryPoints.web.http.encodedCharacters.allowEncodedBackSlash=true",
        ],
    )
    .await;
    assert_eq!(
        get_closing(&lax, "/static\\..\\admin", "").await.status(),
        400
    );
    assert_eq!(get_closing(&lax, "/x%5Cy", "").await.status(), 200);
    assert!(
        received
            .lock()
            .unwrap()
            .iter()
            .all(|r| !r.uri.contains('\\'))
    );
}

#[tokio::test]
async fn the_encoded_characters_middleware_makes_one_router_stricter() {
    let (backend, received) = recording().await;
    // The entry point lets `%2F` and `%3B` through; the `files` router
    // refuses `%2F` again, and `%3B` only when it is not allowed there.
    let dynamic = format!(
        "{}\n[http.routers.files]\nrule = \"Host(`a.test`) && PathPrefix(`/files`)\"\n\
         service = \"app\"\nmiddlewares = [\"strict\"]\n\
         [http.middlewares.strict.encodedCharacters]\nallowEncodedSemicolon = true\n",
        config(&backend)
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            "--entryPoints.web.http.encodedCharacters.allowEncodedSlash=true",
            "--entryPoints.web.http.encodedCharacters.allowEncodedSemicolon=true",
            "--entryPoints.web.http.encodedCharacters.allowEncodedHash=false",
        ],
    )
    .await;
    support::eventually(Duration::from_secs(10), "the files router", || async {
        gw.get("a.test", "/files/x").await.status == 200
    })
    .await;
    received.lock().unwrap().clear();
    assert_eq!(get_closing(&gw, "/a%2Fb", "").await.status(), 200);
    assert_eq!(get_closing(&gw, "/files/a%2Fb", "").await.status(), 400);
    assert_eq!(get_closing(&gw, "/files/a%3Bb", "").await.status(), 200);
    // What the entry point refuses, no middleware lets through.
    assert_eq!(get_closing(&gw, "/files/a%23b", "").await.status(), 400);
    let uris: Vec<String> = received
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.uri.clone())
        .collect();
    assert_eq!(uris, ["/a%2Fb", "/files/a%3Bb"]);
}

#[tokio::test]
async fn an_h2c_upgrade_never_reaches_the_server_and_websocket_still_does() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    for (upgrade, connection) in [
        ("h2c", "Upgrade, HTTP2-Settings"),
        ("H2C", "Upgrade"),
        ("h2c", "keep-alive"),
    ] {
        let answer = get_closing(
            &gw,
            "/",
            &format!(
                "Upgrade: {upgrade}\r\nConnection: {connection}\r\n\
                 HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n"
            ),
        )
        .await;
        // The server answers the plain request; nothing switches.
        assert_eq!(
            answer.status(),
            200,
            "{upgrade}/{connection}: {}",
            answer.text
        );
        let got = received.lock().unwrap().pop().expect("forwarded");
        for name in ["upgrade", "http2-settings"] {
            assert!(
                got.headers.get(name).is_none(),
                "{upgrade}/{connection}: the server saw {name}: {:?}",
                got.headers
            );
        }
    }
    // A WebSocket upgrade still reaches the server as one.
    received.lock().unwrap().clear();
    let _ = get_closing(
        &gw,
        "/",
        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n",
    )
    .await;
    let got = received.lock().unwrap().pop().expect("forwarded");
    assert_eq!(got.headers["upgrade"], "websocket");
    assert!(
        got.headers["connection"]
            .to_str()
            .unwrap()
            .eq_ignore_ascii_case("upgrade")
    );
}

#[tokio::test]
async fn headers_with_underscores_follow_the_entry_points_strategy() {
    let (backend, received) = recording().await;
    let spoof = "X_Forwarded_For: 6.6.6.6\r\nX_Real_Ip: 6.6.6.6\r\nX_User: eve\r\n";

    // keep (the default): kept, but never the forwarded family of an
    // untrusted client.
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    assert_eq!(get_closing(&gw, "/", spoof).await.status(), 200);
    let got = received.lock().unwrap().pop().expect("forwarded");
    assert_eq!(got.headers["x_user"], "eve");
    assert!(
        got.headers.get("x_forwarded_for").is_none(),
        "{:?}",
        got.headers
    );
    assert!(got.headers.get("x_real_ip").is_none(), "{:?}", got.headers);
    assert_eq!(got.headers["x-forwarded-for"], "127.0.0.1");

    // keep, from a trusted proxy: its forwarded headers stay, as they are.
    let trusting = start(
        &backend,
        &["--entryPoints.web.forwardedHeaders.insecure=true"],
    )
    .await;
    assert_eq!(get_closing(&trusting, "/", spoof).await.status(), 200);
    let got = received.lock().unwrap().pop().expect("forwarded");
    assert_eq!(got.headers["x_forwarded_for"], "6.6.6.6");

    // delete: every such header goes.
    let gw = start(
        &backend,
        &["--entryPoints.web.http.underscoreHeadersStrategy=delete"],
    )
    .await;
    received.lock().unwrap().clear();
    assert_eq!(get_closing(&gw, "/", spoof).await.status(), 200);
    let got = received.lock().unwrap().pop().expect("forwarded");
    let underscored: Vec<&str> = got
        .headers
        .keys()
        .map(http::HeaderName::as_str)
        .filter(|n| n.contains('_'))
        .collect();
    assert!(underscored.is_empty(), "{underscored:?}");

    // reject: 400, nothing forwarded; a request without any still passes.
    let gw = start(
        &backend,
        &["--entryPoints.web.http.underscoreHeadersStrategy=reject"],
    )
    .await;
    received.lock().unwrap().clear();
    assert_eq!(get_closing(&gw, "/", "X_User: eve\r\n").await.status(), 400);
    assert!(received.lock().unwrap().is_empty());
    assert_eq!(get_closing(&gw, "/", "X-User: eve\r\n").await.status(), 200);
}

#[tokio::test]
async fn a_host_with_userinfo_or_spaces_gets_400() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    for request in [
        "GET / HTTP/1.1\r\nHost: evil@a.test\r\nConnection: close\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a.test@evil.test\r\nConnection: close\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a.test evil.test\r\nConnection: close\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a .test\r\nConnection: close\r\n\r\n",
        "GET http://evil@a.test/ HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n",
    ] {
        let answer = raw(&gw, request.as_bytes()).await;
        assert_eq!(answer.status(), 400, "{request:?}: {}", answer.text);
    }
    assert!(received.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_bad_chunk_already_received_is_refused_before_the_server_sees_the_head() {
    let (backend, received) = recording().await;
    let gw = start(&backend, &[]).await;
    received.lock().unwrap().clear();
    for body in [
        "zz\r\nab\r\n0\r\n\r\n",
        "5\r\nhello\r\n3\r\nab\r\n0\r\n\r\n",
        "2\r\nab\r\nfffffffffffffffffff\r\n",
    ] {
        let answer = raw(
            &gw,
            format!(
                "POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n{body}\
                 GET /smuggled HTTP/1.1\r\nHost: a.test\r\n\r\n"
            )
            .as_bytes(),
        )
        .await;
        assert_eq!(answer.status(), 400, "{body:?}: {}", answer.text);
        assert!(answer.closed, "{body:?}: the connection stays open");
        let got = received.lock().unwrap().clone();
        assert!(got.is_empty(), "{body:?}: the server saw {got:?}");
    }
    // A good chunked body, all at once, arrives whole.
    let answer = raw(
        &gw,
        b"POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n\
          5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
    )
    .await;
    assert_eq!(answer.status(), 200, "{}", answer.text);
    let got = received.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, Bytes::from_static(b"hello world"));
}
