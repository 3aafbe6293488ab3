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
