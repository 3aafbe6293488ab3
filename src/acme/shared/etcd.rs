//! The shared ACME storage on etcd, through the same JSON gateway client
//! as the etcd provider: leases are etcd leases (the key is attached to
//! one and goes when it expires), taken and checked with transactions; the
//! fencing token is the revision at which the lease key was created.

use super::{Changes, KvStore, Lease, Pairs, SharedError, StoreUrl};
use crate::store::etcd::wire::{encode, prefix_end};
use crate::store::etcd::{EtcdClient, EtcdError};
use base64::Engine as _;
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::time::Duration;

/// The gRPC status etcd gives a lease it does not know (expired, revoked).
const GRPC_NOT_FOUND: i64 = 5;

pub struct EtcdKv {
    client: EtcdClient,
    location: String,
}

impl EtcdKv {
    pub fn new(url: &StoreUrl, timeout: Duration) -> Result<Self, SharedError> {
        let scheme = if url.tls { "https" } else { "http" };
        let endpoints: Vec<String> = url
            .endpoints
            .iter()
            .map(|e| format!("{scheme}://{e}"))
            .collect();
        let auth = url
            .username
            .clone()
            .map(|u| (u, url.password.clone().unwrap_or_default()));
        let client =
            EtcdClient::new(&endpoints, auth, None, timeout).map_err(|e| SharedError::BadUrl {
                resolver: String::new(),
                url: url.location(),
                problem: e.to_string(),
            })?;
        Ok(EtcdKv {
            client,
            location: url.location(),
        })
    }

    async fn call(
        &self,
        action: &'static str,
        path: &'static str,
        key: &str,
        body: Value,
    ) -> Result<Value, SharedError> {
        self.client
            .call::<Value>(path, Some(key), &body)
            .await
            .map(|(_, v)| v)
            .map_err(|e| SharedError::Store {
                location: self.location.clone(),
                action,
                key: key.to_owned(),
                source: Box::new(e),
            })
    }

    fn bad(&self, key: &str, problem: &str) -> SharedError {
        SharedError::BadValue {
            location: self.location.clone(),
            key: key.to_owned(),
            problem: problem.to_owned(),
        }
    }

    /// A lease of `ttl` (whole seconds, at least one); its id.
    async fn grant(&self, key: &str, ttl: Duration) -> Result<i64, SharedError> {
        let answer = self
            .call(
                "taking a lease for",
                "/v3/lease/grant",
                key,
                json!({ "TTL": ttl.as_secs().max(1) }),
            )
            .await?;
        int(&answer["ID"]).ok_or_else(|| self.bad(key, "a lease answer without an ID"))
    }
}

/// A 64-bit integer as the gateway writes it (a string) or a number.
fn int(v: &Value) -> Option<i64> {
    v.as_i64().or_else(|| v.as_str()?.parse().ok())
}

fn decode(v: &Value) -> Vec<u8> {
    v.as_str()
        .and_then(|s| base64::engine::general_purpose::STANDARD.decode(s).ok())
        .unwrap_or_default()
}

impl KvStore for EtcdKv {
    fn location(&self) -> &str {
        &self.location
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, SharedError>> {
        Box::pin(async move {
            let answer = self
                .call(
                    "reading",
                    "/v3/kv/range",
                    key,
                    json!({ "key": encode(key.as_bytes()) }),
                )
                .await?;
            Ok(answer["kvs"]
                .as_array()
                .and_then(|kvs| kvs.first())
                .map(|kv| decode(&kv["value"])))
        })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            let mut body = json!({ "key": encode(key.as_bytes()), "value": encode(value) });
            if let Some(ttl) = ttl {
                body["lease"] = json!(self.grant(key, ttl).await?.to_string());
            }
            self.call("writing", "/v3/kv/put", key, body)
                .await
                .map(drop)
        })
    }

    fn create<'a>(
        &'a self,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move {
            let k = encode(key.as_bytes());
            let answer = self
                .call(
                    "writing",
                    "/v3/kv/txn",
                    key,
                    json!({
                        "compare": [{ "key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
                        "success": [{ "request_put": { "key": k, "value": encode(value) } }],
                    }),
                )
                .await?;
            Ok(answer["succeeded"].as_bool() == Some(true))
        })
    }

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            self.call(
                "removing",
                "/v3/kv/deleterange",
                key,
                json!({ "key": encode(key.as_bytes()) }),
            )
            .await
            .map(drop)
        })
    }

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Pairs, SharedError>> {
        Box::pin(async move {
            let answer = self
                .call(
                    "listing",
                    "/v3/kv/range",
                    prefix,
                    json!({
                        "key": encode(prefix.as_bytes()),
                        "range_end": encode(&prefix_end(prefix.as_bytes())),
                    }),
                )
                .await?;
            Ok(answer["kvs"]
                .as_array()
                .map(|kvs| {
                    kvs.iter()
                        .map(|kv| {
                            (
                                String::from_utf8_lossy(&decode(&kv["key"])).into_owned(),
                                decode(&kv["value"]),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default())
        })
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, SharedError>> {
        Box::pin(async move {
            let id = self.grant(key, ttl).await?;
            let mark = format!("{holder}#{id:x}");
            let k = encode(key.as_bytes());
            let answer = self
                .call(
                    "taking the lease",
                    "/v3/kv/txn",
                    key,
                    json!({
                        "compare": [{ "key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0" }],
                        "success": [{ "request_put": { "key": k, "value": encode(mark.as_bytes()), "lease": id.to_string() } }],
                    }),
                )
                .await?;
            if answer["succeeded"].as_bool() != Some(true) {
                let _ = self
                    .call(
                        "giving up a lease for",
                        "/v3/lease/revoke",
                        key,
                        json!({ "ID": id.to_string() }),
                    )
                    .await;
                return Ok(None);
            }
            let token = int(&answer["header"]["revision"])
                .and_then(|r| u64::try_from(r).ok())
                .unwrap_or(0);
            Ok(Some(Lease {
                key: key.to_owned(),
                mark,
                token,
                etcd_lease: id,
            }))
        })
    }

    fn renew<'a>(
        &'a self,
        lease: &'a Lease,
        _ttl: Duration,
    ) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move {
            // One keep-alive on the streaming call: the gateway answers it
            // and ends the stream when the request body ends.
            let answer = self
                .call(
                    "renewing the lease",
                    "/v3/lease/keepalive",
                    &lease.key,
                    json!({ "ID": lease.etcd_lease.to_string() }),
                )
                .await?;
            let ttl = int(&answer["result"]["TTL"]).unwrap_or(0);
            if ttl <= 0 {
                return Ok(false);
            }
            // The lease lives; the key must still be the one it holds.
            Ok(self.get(&lease.key).await?.as_deref() == Some(lease.mark.as_bytes()))
        })
    }

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), SharedError>> {
        Box::pin(async move {
            let revoked = self
                .client
                .call::<Value>(
                    "/v3/lease/revoke",
                    Some(&lease.key),
                    &json!({ "ID": lease.etcd_lease.to_string() }),
                )
                .await;
            match revoked {
                // A lease that expired is released already.
                Ok(_)
                | Err(EtcdError::Status {
                    code: Some(GRPC_NOT_FOUND),
                    ..
                }) => Ok(()),
                Err(e) => Err(SharedError::Store {
                    location: self.location.clone(),
                    action: "releasing the lease",
                    key: lease.key.clone(),
                    source: Box::new(e),
                }),
            }
        })
    }

    fn watch<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Changes>, SharedError>> {
        Box::pin(async move {
            let watch = self
                .client
                .watch_prefix(key, 0)
                .await
                .map_err(|e| SharedError::Store {
                    location: self.location.clone(),
                    action: "watching",
                    key: key.to_owned(),
                    source: Box::new(e),
                })?;
            let changes = futures_util::stream::unfold(watch, |mut watch| async move {
                match watch.next().await {
                    Some(Ok(_)) => Some(((), watch)),
                    _ => None,
                }
            });
            Ok(Some(changes.boxed()))
        })
    }

    fn put_fenced<'a>(
        &'a self,
        lease: &'a Lease,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, SharedError>> {
        Box::pin(async move {
            let answer = self
                .call(
                    "writing",
                    "/v3/kv/txn",
                    key,
                    json!({
                        "compare": [{
                            "key": encode(lease.key.as_bytes()),
                            "target": "VALUE",
                            "result": "EQUAL",
                            "value": encode(lease.mark.as_bytes()),
                        }],
                        "success": [{ "request_put": { "key": encode(key.as_bytes()), "value": encode(value) } }],
                    }),
                )
                .await?;
            Ok(answer["succeeded"].as_bool() == Some(true))
        })
    }
}
