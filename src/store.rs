//! The stores gangway reads and writes keys in: Redis and etcd. Their
//! clients live here, apart from what uses them (the KV providers, the
//! shared ACME storage).

pub mod etcd;
pub mod redis;
