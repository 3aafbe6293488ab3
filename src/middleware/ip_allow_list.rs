//! `ipAllowList` (and Traefik v2's `ipWhiteList`): only clients from some
//! addresses get through.

use super::ip::{AddressList, IpStrategy};
use super::{Exchange, Flow, Middleware, MiddlewareError, Req, status_response};
use crate::config::dynamic::middleware as model;
use http::StatusCode;

/// A compiled `ipAllowList`.
pub struct IpAllowList {
    allowed: AddressList,
    strategy: IpStrategy,
    reject: StatusCode,
}

/// Compiles an `ipAllowList`.
pub fn compile(cfg: &model::IpAllowList) -> Result<IpAllowList, MiddlewareError> {
    if cfg.source_range.is_empty() {
        return Err(MiddlewareError::invalid(
            "sourceRange",
            "at least one address or range is required",
        ));
    }
    let reject = match cfg.reject_status_code {
        None => StatusCode::FORBIDDEN,
        Some(code) => StatusCode::from_u16(code)
            .ok()
            .filter(|s| s.as_u16() >= 200)
            .ok_or_else(|| {
                MiddlewareError::invalid(
                    "rejectStatusCode",
                    format!("{code} is not an HTTP status"),
                )
            })?,
    };
    Ok(IpAllowList {
        allowed: AddressList::parse(&cfg.source_range, "sourceRange")?,
        strategy: IpStrategy::compile(cfg.ip_strategy.as_ref(), "ipStrategy")?,
        reject,
    })
}

impl Middleware for IpAllowList {
    fn request(&self, req: &mut Req, cx: &Exchange) -> Flow {
        match self.strategy.client_ip(req.headers(), cx.peer) {
            Some(ip) if self.allowed.contains(ip) => Flow::Continue,
            _ => Flow::Respond(status_response(self.reject)),
        }
    }
}
