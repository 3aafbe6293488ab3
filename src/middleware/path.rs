//! Path rewriting shared by stripPrefix, addPrefix, replacePath and their
//! regex forms: swap the path of a request URI and keep its query.

use super::Req;
use http::Uri;
use http::uri::PathAndQuery;

/// Replaces the request's path (raw, percent-encoded as given), keeping the
/// query. `None` when the result is not a valid request target.
pub fn set_path(req: &mut Req, path: &str) -> Option<()> {
    let path = if path.is_empty() { "/" } else { path };
    let pq: PathAndQuery = match req.uri().query() {
        None => PathAndQuery::try_from(path).ok()?,
        Some(q) => {
            let mut s = String::with_capacity(path.len() + 1 + q.len());
            s.push_str(path);
            s.push('?');
            s.push_str(q);
            PathAndQuery::try_from(s).ok()?
        }
    };
    // A path with `?` or `#` in it would change the query; the caller's
    // path must be a path only.
    if pq.path().len() != path.len() {
        return None;
    }
    let mut parts = req.uri().clone().into_parts();
    parts.path_and_query = Some(pq);
    *req.uri_mut() = Uri::from_parts(parts).ok()?;
    Some(())
}

/// Whether `path` is already in the form path cleaning would give it: no
/// `.` or `..` segments (also percent-encoded) and no empty segments except
/// a trailing slash. Traefik answers 400 when stripping a prefix leaves a
/// path that cleaning would change, so `/api/../admin` cannot escape the
/// prefix a router matched.
pub fn is_clean(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return path.is_empty();
    };
    let segments: Vec<&str> = rest.split('/').collect();
    let last = segments.len() - 1;
    segments.iter().enumerate().all(|(i, seg)| {
        if seg.is_empty() {
            return i == last;
        }
        !is_dot_segment(seg)
    })
}

fn is_dot_segment(seg: &str) -> bool {
    let decoded = seg.replace("%2e", ".").replace("%2E", ".");
    decoded == "." || decoded == ".."
}

/// `s` with a leading `/`, added when missing (empty stays empty).
pub fn with_leading_slash(s: &str) -> std::borrow::Cow<'_, str> {
    if s.is_empty() || s.starts_with('/') {
        std::borrow::Cow::Borrowed(s)
    } else {
        std::borrow::Cow::Owned(format!("/{s}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::RequestBody;
    use http::Request;

    #[test]
    fn paths_swap_and_queries_stay() {
        let mut req = Request::get("http://a.test/x/y?q=1")
            .body(RequestBody::empty())
            .expect("request");
        set_path(&mut req, "/z").expect("valid");
        assert_eq!(req.uri().to_string(), "http://a.test/z?q=1");
        let mut req = Request::get("/x")
            .body(RequestBody::empty())
            .expect("request");
        set_path(&mut req, "").expect("valid");
        assert_eq!(req.uri().to_string(), "/");
        assert!(set_path(&mut req, "/a?b").is_none());
        assert!(set_path(&mut req, "/a b").is_none());
    }

    #[test]
    fn clean_paths_are_recognised() {
        for ok in ["", "/", "/a", "/a/", "/a/b.c", "/..a", "/a%2F.."] {
            assert!(is_clean(ok), "{ok}");
        }
        for bad in [
            "/..",
            "/../admin",
            "/a/./b",
            "//x",
            "/a//b",
            "/%2e%2E/x",
            "x",
        ] {
            assert!(!is_clean(bad), "{bad}");
        }
    }
}
