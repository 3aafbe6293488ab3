//! KV store providers: routers, services, middlewares and TLS settings
//! written as keys under a root in Traefik v3's KV layout
//! (`<root>/http/routers/<name>/rule`), so that a Traefik KV setup works
//! unchanged.
//!
//! `parse` turns the keys into the dynamic model (pure); `watch` is the
//! loop every store shares (read, send, follow changes, reconnect), over
//! the [`Store`](crate::store::Store) contract of the store room; `redis`
//! and `etcd` read their options into a store.

pub mod etcd;
mod parse;
pub mod redis;
mod watch;

pub use parse::{Parsed, parse_pairs};
pub use watch::{Follow, run};

/// A KV provider's `rootKey` without surrounding blanks or trailing
/// slashes; None when nothing is left.
fn root_key(raw: &str) -> Option<String> {
    let root = raw.trim().trim_end_matches('/');
    (!root.is_empty()).then(|| root.to_owned())
}

/// A KV provider's `endpoints` without blanks; None when none is left.
fn endpoints(raw: &[String]) -> Option<Vec<String>> {
    let endpoints: Vec<String> = raw
        .iter()
        .map(|e| e.trim())
        .filter(|e| !e.is_empty())
        .map(str::to_owned)
        .collect();
    (!endpoints.is_empty()).then_some(endpoints)
}

#[cfg(test)]
mod tests {
    #[test]
    fn root_keys_and_endpoints_lose_blanks() {
        assert_eq!(super::root_key(" traefik/ ").as_deref(), Some("traefik"));
        assert_eq!(super::root_key(" / "), None);
        let given = [" a:1 ".to_owned(), String::new(), "b:2".to_owned()];
        assert_eq!(
            super::endpoints(&given),
            Some(vec!["a:1".to_owned(), "b:2".to_owned()])
        );
        assert_eq!(super::endpoints(&[" ".to_owned()]), None);
    }
}
