//! Size claims that source comments rely on, kept as tests so they cannot
//! go stale: where a comment says a value is large enough to be worth
//! boxing, the bound is checked here.

use std::mem::size_of;

/// The proxy boxes a routed request before it goes down the async layers
/// to the server (src/proxy/pipeline.rs): each layer would otherwise keep
/// its own copy while the request is in flight. That only pays while the
/// request is several times larger than the pointer that replaces it.
#[test]
fn a_request_towards_a_server_is_large_enough_to_box() {
    let size = size_of::<http::Request<gangway::body::RequestBody>>();
    assert!(
        size >= 32 * size_of::<usize>(),
        "Request<RequestBody> is {size} bytes: boxing it may no longer pay"
    );
}

/// The observed request's record is boxed before the request is handled
/// (src/proxy/observe.rs), because the access log entry in it would
/// otherwise sit in every in-flight request's future.
#[test]
fn an_access_log_entry_is_large_enough_to_box() {
    let size = size_of::<gangway::access_log::Entry>();
    assert!(
        size >= 32 * size_of::<usize>(),
        "access_log::Entry is {size} bytes: boxing it may no longer pay"
    );
}

/// A served connection is one box, and the drive loop takes it boxed
/// (src/proxy/connection.rs): pinned inside the loop's future, or passed
/// through an `async fn`, it would be stored twice, and over TLS it
/// carries rustls' connection state inside h2's.
#[test]
fn a_tls_stream_and_an_h2_connection_are_large_enough_to_box() {
    type Tls = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    let tls = size_of::<Tls>();
    assert!(
        tls >= 128 * size_of::<usize>(),
        "a TLS stream is {tls} bytes: a second copy may no longer matter"
    );
    let h2 = size_of::<h2::server::Connection<Tls, bytes::Bytes>>();
    assert!(
        h2 >= 256 * size_of::<usize>(),
        "an h2 connection over TLS is {h2} bytes: a second copy may no longer matter"
    );
}
