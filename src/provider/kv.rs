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
