//! `rateLimit.redis`: the buckets in Redis, through the store room's
//! client, so that every instance using the same Redis and middleware name
//! draws from one budget (Traefik 3.4). The same GCRA as the in-memory
//! limiter runs as one Lua script, atomic in Redis, on Redis' own clock,
//! so instances whose clocks differ still agree.

use super::SourceKey;
use crate::config::dynamic::middleware as model;
use crate::middleware::MiddlewareError;
use crate::store::StoreError;
use crate::store::redis::{RedisSettings, RedisStore, RedisTls};
use std::time::Duration;

/// One token for `KEYS[1]`: ARGV are the interval between tokens, the
/// credit a full bucket holds and the longest wait granted, all in
/// microseconds. Answers `{1, wait}` when granted, `{0, wait}` when the
/// wait would be longer. The arrival time is written with `%d`, since
/// Lua's default number format would round it.
const TAKE: &str = r"
local interval = tonumber(ARGV[1])
local capacity = tonumber(ARGV[2])
local max_delay = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0') or 0
if tat < now then tat = now end
local next = tat + interval
local wait = next - now - capacity
if wait > max_delay then return {0, wait} end
if wait < 0 then wait = 0 end
local ttl = math.floor((next - now) / 1000) + 1000
redis.call('SET', KEYS[1], string.format('%d', next), 'PX', ttl)
return {1, wait}";

/// Traefik's defaults for its Redis client.
const READ_TIMEOUT: Duration = Duration::from_secs(3);
const DIAL_TIMEOUT: Duration = Duration::from_secs(5);

/// A rate limiter's Redis side: the store, and the key prefix of this
/// middleware's buckets.
pub struct Shared {
    store: RedisStore,
    prefix: String,
}

impl Shared {
    /// A client for `cfg`'s servers (connected on first use), keeping the
    /// buckets of middleware `name`.
    pub fn open(cfg: &model::RateLimitRedis, name: &str) -> Result<Self, MiddlewareError> {
        let endpoints = if cfg.endpoints.is_empty() {
            vec!["localhost:6379".to_owned()]
        } else {
            cfg.endpoints.clone()
        };
        let tls = match &cfg.tls {
            Some(t) => Some(RedisTls {
                insecure: t.insecure_skip_verify,
                certificates: certificates(t)?,
            }),
            None => None,
        };
        let timeout = [cfg.read_timeout, cfg.write_timeout, cfg.dial_timeout]
            .iter()
            .flatten()
            .map(|d| d.0)
            .max()
            .unwrap_or(READ_TIMEOUT.max(DIAL_TIMEOUT));
        if timeout.is_zero() {
            return Err(MiddlewareError::invalid(
                "redis.readTimeout",
                "timeouts must be longer than 0",
            ));
        }
        let settings = RedisSettings {
            location: format!("redis://{}/{}", endpoints.join(","), cfg.db),
            endpoints,
            tls,
            username: cfg.username.clone(),
            password: cfg.password.clone(),
            db: cfg.db,
            timeout,
            sentinel: None,
        };
        let store = crate::store::open(settings)
            .map_err(|e| MiddlewareError::invalid("redis.endpoints", e.to_string()))?;
        Ok(Shared {
            store,
            prefix: format!("gangway:rateLimit:{name}:"),
        })
    }

    /// Takes a token for `key`: Ok(Ok(wait)) when granted after `wait`,
    /// Ok(Err(wait)) when the wait would be longer than `max_delay`.
    pub async fn take(
        &self,
        key: &SourceKey,
        interval: u64,
        capacity: u64,
        max_delay: Duration,
    ) -> Result<Result<Duration, Duration>, StoreError> {
        let source = match key {
            SourceKey::Ip(ip) => ip.to_string(),
            SourceKey::Value(v) => String::from_utf8_lossy(v.as_bytes()).into_owned(),
            SourceKey::Unknown => String::new(),
        };
        let redis_key = format!("{}{source}", self.prefix);
        let micros = |ns: u64| (ns / 1000).max(1).to_string();
        let max_delay = u64::try_from(max_delay.as_micros()).unwrap_or(u64::MAX);
        let (granted, wait): (i64, i64) = self
            .store
            .script(
                "rate limiting",
                TAKE,
                &[&redis_key],
                &[
                    micros(interval).as_bytes(),
                    micros(capacity).as_bytes(),
                    max_delay.to_string().as_bytes(),
                ],
            )
            .await?;
        let wait = Duration::from_micros(u64::try_from(wait).unwrap_or(0));
        Ok(if granted == 1 { Ok(wait) } else { Err(wait) })
    }
}

/// The TLS files, read; None when none is given.
fn certificates(
    tls: &model::ClientTls,
) -> Result<Option<::redis::TlsCertificates>, MiddlewareError> {
    let read = |option: &'static str, path: &Option<String>| {
        let Some(path) = path.as_deref().filter(|p| !p.is_empty()) else {
            return Ok(None);
        };
        std::fs::read(path)
            .map(Some)
            .map_err(|e| MiddlewareError::invalid(option, format!("cannot read `{path}`: {e}")))
    };
    let root_cert = read("redis.tls.ca", &tls.ca)?;
    let client_tls = match (
        read("redis.tls.cert", &tls.cert)?,
        read("redis.tls.key", &tls.key)?,
    ) {
        (Some(client_cert), Some(client_key)) => Some(::redis::ClientTlsConfig {
            client_cert,
            client_key,
        }),
        (None, None) => None,
        _ => {
            return Err(MiddlewareError::invalid(
                "redis.tls",
                "give both cert and key for a client certificate",
            ));
        }
    };
    if root_cert.is_none() && client_tls.is_none() {
        return Ok(None);
    }
    Ok(Some(::redis::TlsCertificates {
        client_tls,
        root_cert,
    }))
}
