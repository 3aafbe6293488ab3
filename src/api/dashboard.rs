//! The dashboard: static files from `web-dashboard/`, embedded at build time,
//! each compressed once and named by a hash of its content, so a browser
//! that has it asks only whether it changed (`If-None-Match`) and gets an
//! empty 304 when it did not.

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use std::sync::LazyLock;

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

/// One asset ready to serve: its bytes as embedded and gzipped, and the
/// entity tag of each.
struct Prepared {
    asset: &'static Asset,
    gzip: Vec<u8>,
    etag: HeaderValue,
    etag_gzip: HeaderValue,
}

/// Every asset, compressed and hashed on first use, once per process.
static PREPARED: LazyLock<Vec<Prepared>> = LazyLock::new(|| FILES.iter().map(prepare).collect());

fn prepare(asset: &'static Asset) -> Prepared {
    use sha2::Digest as _;
    use std::io::Write as _;
    let digest = sha2::Sha256::digest(asset.bytes);
    let hash: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing to a Vec cannot fail; an asset that did would be served as is.
    let gzip = gz
        .write_all(asset.bytes)
        .and_then(|()| gz.finish())
        .unwrap_or_default();
    let tag = |suffix: &str| {
        HeaderValue::from_str(&format!("\"{hash}{suffix}\""))
            .unwrap_or_else(|_| HeaderValue::from_static("\"\""))
    };
    Prepared {
        asset,
        gzip,
        etag: tag(""),
        etag_gzip: tag("-gz"),
    }
}

/// Whether `If-None-Match` names `etag` (or is `*`).
pub(super) fn not_modified(headers: &HeaderMap, etag: &HeaderValue) -> bool {
    let Ok(etag) = etag.to_str() else {
        return false;
    };
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

fn file(name: &str, headers: &HeaderMap) -> Response {
    match PREPARED.iter().find(|p| p.asset.name == name) {
        Some(prepared) => {
            let asset = prepared.asset;
            let gzip = !prepared.gzip.is_empty()
                && super::encode::accepts(headers, super::encode::Coding::Gzip);
            let etag = if gzip {
                &prepared.etag_gzip
            } else {
                &prepared.etag
            };
            let mut r = if not_modified(headers, etag) {
                StatusCode::NOT_MODIFIED.into_response()
            } else if gzip {
                let mut r = prepared.gzip.clone().into_response();
                r.headers_mut()
                    .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
                r
            } else {
                asset.bytes.into_response()
            };
            r.headers_mut().insert(header::ETAG, etag.clone());
            r.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
            r.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(content_type(asset.name)),
            );
            // Kept, and asked about again on each use: the names carry no
            // hash, so a new gangway's files are seen at once.
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

/// `<base>/dashboard/…` and the redirects to it from `<base>/` and
/// `<base>/dashboard`; `base` is empty or `/a/b` (`api.basePath`). The
/// pages ask the API at the path they were served from, so they need no
/// rewriting for a base path.
pub fn router(base: &str) -> Router {
    let home = format!("{base}/dashboard/");
    let redirect = move || {
        let home = home.clone();
        async move { Redirect::temporary(&home) }
    };
    let root = if base.is_empty() {
        String::from("/")
    } else {
        base.to_owned()
    };
    let mut router = Router::new()
        .route(&root, get(redirect.clone()))
        .route(&format!("{base}/dashboard"), get(redirect.clone()));
    if !base.is_empty() {
        router = router.route(&format!("{base}/"), get(redirect));
    }
    router
        .route(
            &format!("{base}/dashboard/"),
            get(|headers: HeaderMap| async move { file("index.html", &headers) }),
        )
        .route(
            &format!("{base}/dashboard/{{file}}"),
            get(
                |axum::extract::Path(name): axum::extract::Path<String>, headers: HeaderMap| async move {
                    file(&name, &headers)
                },
            ),
        )
}
