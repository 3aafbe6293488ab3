//! `sourceCriterion`: what counts as one client for rateLimit and
//! inFlightReq — an address (by `ipStrategy`), a request header's value, or
//! the request's host.

use super::ip::IpStrategy;
use super::{Exchange, MiddlewareError, Req};
use crate::config::dynamic::middleware as model;
use http::{HeaderName, HeaderValue};
use std::net::IpAddr;

/// One client, as a key of the per-source state maps.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum SourceKey {
    /// By address.
    Ip(IpAddr),
    /// By a header's value, or by host.
    Value(HeaderValue),
    /// The criterion found nothing (no such header, no address at that
    /// depth): all such requests share one source, as in Traefik.
    Unknown,
}

/// A compiled `sourceCriterion`.
#[derive(Clone, Debug)]
pub enum SourceCriterion {
    /// By client address.
    Ip(IpStrategy),
    /// By the value of a request header.
    Header(HeaderName),
    /// By the request's host.
    Host,
}

/// What a middleware uses when no criterion is configured.
#[derive(Clone, Copy, Debug)]
pub enum DefaultSource {
    /// The TCP peer (rateLimit).
    Peer,
    /// The request's host (inFlightReq).
    Host,
}

impl SourceCriterion {
    /// Compiles a `sourceCriterion`; exactly one way may be set.
    pub fn compile(
        cfg: Option<&model::SourceCriterion>,
        default: DefaultSource,
    ) -> Result<Self, MiddlewareError> {
        let fallback = match default {
            DefaultSource::Peer => SourceCriterion::Ip(IpStrategy::default()),
            DefaultSource::Host => SourceCriterion::Host,
        };
        let Some(cfg) = cfg else {
            return Ok(fallback);
        };
        let header = cfg.request_header_name.as_deref().filter(|h| !h.is_empty());
        let set = [
            cfg.ip_strategy.is_some(),
            header.is_some(),
            cfg.request_host,
        ];
        match set.iter().filter(|s| **s).count() {
            0 => Ok(fallback),
            1 => {
                if let Some(h) = header {
                    let name = HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
                        MiddlewareError::invalid(
                            "sourceCriterion.requestHeaderName",
                            format!("`{h}` is not a header name"),
                        )
                    })?;
                    Ok(SourceCriterion::Header(name))
                } else if cfg.request_host {
                    Ok(SourceCriterion::Host)
                } else {
                    Ok(SourceCriterion::Ip(IpStrategy::compile(
                        cfg.ip_strategy.as_ref(),
                        "sourceCriterion.ipStrategy",
                    )?))
                }
            }
            _ => Err(MiddlewareError::invalid(
                "sourceCriterion",
                "set only one of ipStrategy, requestHeaderName and requestHost",
            )),
        }
    }

    /// The source of this request.
    pub fn key(&self, req: &Req, cx: &Exchange) -> SourceKey {
        match self {
            SourceCriterion::Ip(s) => s
                .client_ip(req.headers(), cx.peer)
                .map_or(SourceKey::Unknown, SourceKey::Ip),
            SourceCriterion::Header(name) => req
                .headers()
                .get(name)
                .cloned()
                .map_or(SourceKey::Unknown, SourceKey::Value),
            SourceCriterion::Host => cx.host.clone().map_or(SourceKey::Unknown, SourceKey::Value),
        }
    }
}
