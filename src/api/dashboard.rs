//! The dashboard: static files from `web-dashboard/`, embedded at build time.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// (path under /dashboard/, content type, bytes)
const FILES: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../web-dashboard/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../web-dashboard/app.js"),
    ),
    (
        "style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../web-dashboard/style.css"),
    ),
];

fn file(name: &str) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        Some((_, kind, bytes)) => {
            let mut r = bytes.to_vec().into_response();
            r.headers_mut()
                .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            r
        }
        None => (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
    }
}

/// `/dashboard/…` and the redirect from `/`.
pub fn router() -> Router {
    Router::new()
        .route("/", get(|| async { Redirect::temporary("/dashboard/") }))
        .route(
            "/dashboard",
            get(|| async { Redirect::temporary("/dashboard/") }),
        )
        .route("/dashboard/", get(|| async { file("index.html") }))
        .route(
            "/dashboard/{file}",
            get(
                |axum::extract::Path(name): axum::extract::Path<String>| async move { file(&name) },
            ),
        )
}
