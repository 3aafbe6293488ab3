//! The dashboard: static files from `web-dashboard/`, embedded at build time.

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;

/// One embedded file: its name under `/dashboard/` and its bytes.
struct Asset {
    name: &'static str,
    bytes: &'static [u8],
}

/// Embeds `web-dashboard/<name>` for each name, so the list of files is the
/// only thing to edit when the dashboard gains one.
macro_rules! assets {
    ($($name:literal),* $(,)?) => {
        &[$(Asset { name: $name, bytes: include_bytes!(concat!("../../web-dashboard/", $name)) }),*]
    };
}

const FILES: &[Asset] = assets![
    "index.html",
    "style.css",
    "favicon.svg",
    "theme.js",
    "app.js",
    "api.js",
    "dom.js",
    "overview.js",
    "lists.js",
    "detail.js",
    "certificates.js",
    "containers.js",
    "explain.js",
    "tcp.js",
];

/// Scripts, styles and data from gangway itself only; inline style
/// attributes are allowed for the sizes of the overview's bars.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
                   img-src 'self' data:; connect-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'";

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("svg") => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

fn file(name: &str) -> Response {
    match FILES.iter().find(|a| a.name == name) {
        Some(asset) => {
            let mut r = asset.bytes.into_response();
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(asset.name)),
            );
            r.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            // The pages load nothing from elsewhere and may not be framed:
            // say so, so a browser enforces it.
            r.headers_mut().insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(CSP),
            );
            r.headers_mut().insert(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            );
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
