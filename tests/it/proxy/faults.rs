//! Faults of a real host, against the real binary: servers that break the
//! exchange, an ACME server that answers garbage, certificate storage that
//! cannot be written. gangway answers what it can, says what is wrong, keeps
//! serving everything else and never panics.

use crate::support;

use http::StatusCode;
use std::time::Duration;
use support::{Backend, Gangway, eventually, one_route};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server that reads a request head and then does `fault` to the socket.
async fn faulty(fault: &'static str) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((mut s, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16384];
                let mut seen = Vec::new();
                while !seen.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => seen.extend_from_slice(&buf[..n]),
                    }
                }
                match fault {
                    // Promise 100 000 bytes, send 10, then reset.
                    "reset-mid-body" => {
                        let _ = s
                            .write_all(
                                b"HTTP/1.1 200 OK\r\ncontent-length: 100000\r\n\r\n0123456789",
                            )
                            .await;
                        let _ = s.flush().await;
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        let _ = s.set_zero_linger();
                    }
                    // Reset before any answer.
                    "reset-before-answer" => {
                        let _ = s.set_zero_linger();
                    }
                    // Not HTTP at all.
                    _ => {
                        let _ = s.write_all(b"\x00\x01garbage\xff\r\n\r\n").await;
                    }
                }
            });
        }
    });
    format!("http://{addr}")
}

fn routes(good: &str, bad: &[(&str, String)]) -> String {
    let mut s = one_route("good", "Host(`good.test`)", &[good]);
    for (name, url) in bad {
        s.push_str(&one_route(name, &format!("Host(`{name}.test`)"), &[url]));
    }
    s
}

#[tokio::test]
async fn servers_that_break_the_exchange_cost_only_their_own_requests() {
    let good = Backend::echo("good").await;
    let bad = [
        ("midbody", faulty("reset-mid-body").await),
        ("early", faulty("reset-before-answer").await),
        ("garbage", faulty("garbage").await),
    ];
    let gw = Gangway::with_file(&routes(&good.url(), &bad), &[]).await;
    eventually(Duration::from_secs(10), "routes loaded", || async {
        gw.get("good.test", "/").await.status == StatusCode::OK
    })
    .await;

    // A reset before the answer, or an answer that is not HTTP: 502.
    assert_eq!(
        gw.get("early.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );
    assert_eq!(
        gw.get("garbage.test", "/").await.status,
        StatusCode::BAD_GATEWAY
    );

    // A reset after the head: the client gets the head, then its body
    // breaks off — the truncation is passed on, never hidden as a complete
    // but short body.
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<http_body_util::Full<bytes::Bytes>>();
    let req = http::Request::get(gw.url("/"))
        .header("host", "midbody.test")
        .body(Default::default())
        .unwrap();
    let resp = client.request(req).await.expect("the head arrives");
    assert_eq!(resp.status(), StatusCode::OK);
    let body = http_body_util::BodyExt::collect(resp.into_body()).await;
    assert!(body.is_err(), "a truncated body must not look complete");

    // Everything else is served as before, and gangway is still up.
    for _ in 0..20 {
        assert_eq!(gw.get("good.test", "/").await.status, StatusCode::OK);
    }
    let log = gw.log();
    assert!(!log.contains("panicked"), "{log}");
}

#[tokio::test]
async fn an_acme_server_answering_garbage_is_reported_and_the_rest_served() {
    let good = Backend::echo("good").await;
    let ca = faulty("garbage").await;
    let tls = support::free_port();
    let storage = tempfile::tempdir().unwrap();
    let mut dynamic = routes(&good.url(), &[]);
    dynamic.push_str(
        "[http.routers.secure]\nrule = \"Host(`secure.test`)\"\nservice = \"good\"\n\
         [http.routers.secure.tls]\ncertResolver = \"le\"\n",
    );
    let gw = Gangway::with_file(
        &dynamic,
        &[
            &format!("--entryPoints.websecure.address=127.0.0.1:{tls}"),
            &format!("--certificatesResolvers.le.acme.caServer={ca}/dir"),
            &format!(
                "--certificatesResolvers.le.acme.storage={}",
                storage.path().join("acme").display()
            ),
        ],
    )
    .await;
    eventually(
        Duration::from_secs(30),
        "the failed order is logged",
        || async { gw.log().contains("certificate order failed") },
    )
    .await;
    let line = gw.log_line("certificate order failed").unwrap();
    assert!(line.contains("secure.test"), "{line}");
    assert!(line.contains("retry_in_s="), "{line}");
    // Plain routes keep working, and the TLS router gets the default
    // certificate meanwhile.
    assert_eq!(gw.get("good.test", "/").await.status, StatusCode::OK);
    let got = support::tls::TlsClient::insecure()
        .get(tls, "secure.test", None, "/", true)
        .await
        .expect("TLS with the default certificate");
    assert_eq!(got.common_name(), "GANGWAY DEFAULT CERT");
    assert_eq!(got.status, StatusCode::OK);
    assert!(!gw.log().contains("panicked"));
}
