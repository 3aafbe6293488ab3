//! etcd as a [`Store`], through the JSON gateway client: leases are etcd
//! leases (the key is attached to one and goes when it expires), taken and
//! checked with transactions; the fencing token is the revision at which
//! the lease key was created.

use super::wire::encode;
use super::{EtcdClient, EtcdError, EtcdWatch};
use crate::store::{Change, Changes, Lease, Listing, Store, StoreError, StoreSettings, Unreadable};
use arc_swap::ArcSwap;
use base64::Engine as _;
use futures_util::StreamExt as _;
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// The gRPC status etcd gives a lease it does not know (expired, revoked).
const GRPC_NOT_FOUND: i64 = 5;

/// An etcd cluster as a [`Store`].
pub struct EtcdStore {
    endpoints: Vec<String>,
    auth: Option<(String, String)>,
    tls: Option<rustls::ClientConfig>,
    timeout: Duration,
    /// Replaced by [`Store::connect`], so that a reconnection starts with
    /// fresh connections and a fresh token.
    client: ArcSwap<EtcdClient>,
    location: String,
}

/// How to reach an etcd cluster (see [`EtcdClient::new`]).
pub struct EtcdSettings {
    /// The members, `host:port` or URLs with `http://` or `https://`.
    pub endpoints: Vec<String>,
    /// The user and password to authenticate as, when given.
    pub auth: Option<(String, String)>,
    /// TLS towards bare and `https://` endpoints; without it, `https://`
    /// endpoints are checked against the Web PKI's roots.
    pub tls: Option<rustls::ClientConfig>,
    /// Bounds connecting, and then each answer.
    pub timeout: Duration,
    /// Where the store is, for messages (no password).
    pub location: String,
}

impl StoreSettings for EtcdSettings {
    type Store = EtcdStore;
    type Error = EtcdError;

    fn into_store(self) -> Result<EtcdStore, EtcdError> {
        let client = EtcdClient::new(
            &self.endpoints,
            self.auth.clone(),
            self.tls.clone(),
            self.timeout,
        )?;
        // Every setting is kept: a reconnection makes its client again.
        Ok(EtcdStore {
            endpoints: self.endpoints,
            auth: self.auth,
            tls: self.tls,
            timeout: self.timeout,
            client: ArcSwap::from_pointee(client),
            location: self.location,
        })
    }
}

impl EtcdStore {
    fn client(&self) -> Arc<EtcdClient> {
        self.client.load_full()
    }

    fn failed(&self, action: &'static str, key: &str, e: EtcdError) -> StoreError {
        StoreError::Request {
            location: self.location.clone(),
            action,
            key: key.to_owned(),
            source: Box::new(e),
        }
    }

    async fn call(
        &self,
        action: &'static str,
        path: &'static str,
        key: &str,
        body: Value,
    ) -> Result<Value, StoreError> {
        self.client()
            .call::<Value>(path, Some(key), &body)
            .await
            .map(|(_, v)| v)
            .map_err(|e| self.failed(action, key, e))
    }

    /// A lease of `ttl` (whole seconds, at least one); its id.
    async fn grant(&self, key: &str, ttl: Duration) -> Result<i64, StoreError> {
        let answer = self
            .call(
                "taking a lease for",
                "/v3/lease/grant",
                key,
                json!({ "TTL": ttl.as_secs().max(1) }),
            )
            .await?;
        int(&answer["ID"]).ok_or_else(|| StoreError::BadAnswer {
            location: self.location.clone(),
            key: key.to_owned(),
            problem: "a lease answer without an ID",
        })
    }
}

/// A watch's batches as [`Change`]s: history that is gone, or a change
/// that is not text, is [`Change::Lost`] (reading everything again catches
/// up either way); the stream ends after it or an error.
fn changes(watch: EtcdWatch, location: String, prefix: String) -> Changes {
    futures_util::stream::unfold(Some(watch), move |watch| {
        let (location, prefix) = (location.clone(), prefix.clone());
        async move {
            let mut watch = watch?;
            match watch.next().await {
                Some(Ok(batch)) => Some((
                    Ok(Change::Changed {
                        revision: batch.revision,
                    }),
                    Some(watch),
                )),
                Some(Err(EtcdError::Compacted { .. } | EtcdError::NotUtf8 { .. })) => {
                    Some((Ok(Change::Lost), None))
                }
                Some(Err(e)) => Some((
                    Err(StoreError::Request {
                        location,
                        action: "watching",
                        key: prefix,
                        source: Box::new(e),
                    }),
                    None,
                )),
                None => Some((Err(StoreError::WatchEnded { prefix }), None)),
            }
        }
    })
    .boxed()
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

impl Store for EtcdStore {
    fn location(&self) -> &str {
        &self.location
    }

    fn connect(&self) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            let client = EtcdClient::connect(
                &self.endpoints,
                self.auth.clone(),
                self.tls.clone(),
                self.timeout,
            )
            .await?;
            self.client.store(Arc::new(client));
            Ok(())
        })
    }

    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, StoreError>> {
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
    ) -> BoxFuture<'a, Result<(), StoreError>> {
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
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
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

    fn delete<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
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

    fn list<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Listing, StoreError>> {
        Box::pin(async move {
            let (raw, revision) = self
                .client()
                .range_prefix_bytes(prefix)
                .await
                .map_err(|e| self.failed("listing", prefix, e))?;
            let mut listing = Listing {
                revision,
                ..Listing::default()
            };
            for (key, value) in raw {
                match String::from_utf8(key) {
                    Ok(key) => listing.values.push((key, value)),
                    Err(e) => {
                        let name = String::from_utf8_lossy(e.as_bytes()).into_owned();
                        listing.unreadable.push((name, Unreadable::KeyNotText));
                    }
                }
            }
            Ok(listing)
        })
    }

    fn acquire<'a>(
        &'a self,
        key: &'a str,
        holder: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<Option<Lease>, StoreError>> {
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
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
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

    fn release<'a>(&'a self, lease: &'a Lease) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let revoked = self
                .client()
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
                Err(e) => Err(self.failed("releasing the lease", &lease.key, e)),
            }
        })
    }

    fn watch<'a>(&'a self, prefix: &'a str) -> BoxFuture<'a, Result<Option<Changes>, StoreError>> {
        Box::pin(async move {
            let watch = self
                .client()
                .watch_prefix(prefix, 0)
                .await
                .map_err(|e| self.failed("watching", prefix, e))?;
            Ok(Some(changes(
                watch,
                self.location.clone(),
                prefix.to_owned(),
            )))
        })
    }

    fn watch_is_complete(&self) -> bool {
        true
    }

    fn put_fenced<'a>(
        &'a self,
        lease: &'a Lease,
        key: &'a str,
        value: &'a [u8],
    ) -> BoxFuture<'a, Result<bool, StoreError>> {
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
