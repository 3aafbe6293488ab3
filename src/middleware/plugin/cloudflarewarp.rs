//! `github.com/BetterCorp/cloudflarewarp`: the client's address from
//! Cloudflare's `CF-Connecting-IP`, believed only from Cloudflare.
//!
//! As the plugin: a request whose TCP peer is in Cloudflare's published
//! ranges (unless `disableDefault`) or in `trustip` gets `X-Real-Ip` and
//! `X-Forwarded-For` set to `CF-Connecting-IP`, `X-Forwarded-Proto` to the
//! scheme in `CF-Visitor`, and `X-Is-Trusted: yes`; a `CF-Visitor` that is
//! not JSON marks it `danger` and both Cloudflare headers are dropped. Any
//! other peer gets `X-Is-Trusted: no`, `X-Real-Ip` set to the peer, and
//! the Cloudflare headers dropped, so they cannot be forged.

use super::PluginEnv;
use crate::middleware::ip::AddressList;
use crate::middleware::{Exchange, Flow, Middleware, MiddlewareError, Req};
use http::{HeaderName, HeaderValue};
use serde::Deserialize;

/// Cloudflare's published address ranges (cloudflare.com/ips).
const CLOUDFLARE: &[&str] = &[
    "173.245.48.0/20",
    "103.21.244.0/22",
    "103.22.200.0/22",
    "103.31.4.0/22",
    "141.101.64.0/18",
    "108.162.192.0/18",
    "190.93.240.0/20",
    "188.114.96.0/20",
    "197.234.240.0/22",
    "198.41.128.0/17",
    "162.158.0.0/15",
    "104.16.0.0/13",
    "104.24.0.0/14",
    "172.64.0.0/13",
    "131.0.72.0/22",
    "2400:cb00::/32",
    "2606:4700::/32",
    "2803:f800::/32",
    "2405:b500::/32",
    "2405:8100::/32",
    "2a06:98c0::/29",
    "2c0f:f248::/32",
];

const CF_CONNECTING_IP: HeaderName = HeaderName::from_static("cf-connecting-ip");
const CF_VISITOR: HeaderName = HeaderName::from_static("cf-visitor");
const X_IS_TRUSTED: HeaderName = HeaderName::from_static("x-is-trusted");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

/// The plugin's settings, by its own names.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Settings {
    #[serde(rename = "trustip")]
    trust_ip: Vec<String>,
    #[serde(rename = "disableDefault")]
    disable_default: bool,
}

/// `CF-Visitor`'s JSON.
#[derive(Deserialize)]
struct Visitor {
    #[serde(default)]
    scheme: String,
}

/// The compiled plugin.
pub struct CloudflareWarp {
    trusted: AddressList,
}

/// Compiles the plugin from its settings.
pub fn compile(
    settings: &serde_json::Value,
    env: &PluginEnv<'_>,
) -> Result<CloudflareWarp, MiddlewareError> {
    let read: Settings = env.read(settings)?;
    let mut ranges = read.trust_ip;
    if !read.disable_default {
        ranges.extend(CLOUDFLARE.iter().map(|r| (*r).to_owned()));
    }
    let trusted = AddressList::parse(&ranges, "trustip")
        .map_err(|e| env.invalid("trustip", e.to_string()))?;
    Ok(CloudflareWarp { trusted })
}

impl Middleware for CloudflareWarp {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        let headers = req.headers_mut();
        if !self.trusted.contains(cx.peer) {
            headers.insert(X_IS_TRUSTED, HeaderValue::from_static("no"));
            if let Ok(peer) = HeaderValue::from_str(&cx.peer.to_string()) {
                headers.insert(X_REAL_IP, peer);
            }
            headers.remove(CF_VISITOR);
            headers.remove(CF_CONNECTING_IP);
            return Flow::Continue;
        }
        if let Some(visitor) = headers.get(CF_VISITOR) {
            match serde_json::from_slice::<Visitor>(visitor.as_bytes()) {
                Ok(v) => {
                    if let Ok(scheme) = HeaderValue::from_str(&v.scheme) {
                        headers.insert(X_FORWARDED_PROTO, scheme);
                    }
                }
                Err(_) => {
                    headers.insert(X_IS_TRUSTED, HeaderValue::from_static("danger"));
                    headers.remove(CF_VISITOR);
                    headers.remove(CF_CONNECTING_IP);
                    return Flow::Continue;
                }
            }
        }
        headers.insert(X_IS_TRUSTED, HeaderValue::from_static("yes"));
        let client = headers
            .get(CF_CONNECTING_IP)
            .cloned()
            .unwrap_or(HeaderValue::from_static(""));
        headers.insert(X_FORWARDED_FOR, client.clone());
        headers.insert(X_REAL_IP, client);
        Flow::Continue
    }
}
