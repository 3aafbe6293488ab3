//! `inFlightReq`: at most `amount` requests of one source in progress at
//! once; the next gets 429. A request counts until its response body has
//! been sent.
//!
//! Counts are atomics in a lock-free map kept in `Registries`, so a
//! configuration swap neither resets them nor lets a burst through.

use super::source::{DefaultSource, SourceCriterion, SourceKey};
use super::{Exchange, Middleware, MiddlewareError, Next, Req, Resp, text_response};
use crate::body::ProxyBody;
use crate::config::dynamic::middleware as model;
use bytes::Bytes;
use futures_util::future::BoxFuture;
use http::StatusCode;
use http_body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::task::{Context, Poll};

const MAX_SOURCES: usize = 65_536;
/// A counter being removed from the map; takers must make a new one.
const GONE: i64 = i64::MIN;

/// The counts of one limiter, kept across configuration swaps.
#[derive(Default)]
pub struct State {
    counts: papaya::HashMap<SourceKey, AtomicI64>,
}

impl State {
    /// Takes one slot for `key` if fewer than `amount` are taken.
    pub(crate) fn acquire(self: &Arc<Self>, key: SourceKey, amount: i64) -> Option<Slot> {
        let counts = self.counts.pin();
        if counts.len() >= MAX_SOURCES && counts.get(&key).is_none() {
            // Idle sources (count 0) are forgotten; a taker racing with
            // this sees GONE and starts a fresh counter.
            counts.retain(|_, c| {
                c.compare_exchange(0, GONE, Ordering::AcqRel, Ordering::Acquire)
                    .is_err()
            });
        }
        loop {
            let count = counts.get_or_insert_with(key.clone(), || AtomicI64::new(0));
            let mut current = count.load(Ordering::Acquire);
            loop {
                if current == GONE {
                    break;
                }
                if current >= amount {
                    return None;
                }
                match count.compare_exchange_weak(
                    current,
                    current + 1,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => {
                        return Some(Slot {
                            state: self.clone(),
                            key,
                        });
                    }
                    Err(seen) => current = seen,
                }
            }
            counts
                .remove_if(&key, |_, c| c.load(Ordering::Acquire) == GONE)
                .ok();
        }
    }

    /// How many requests of `key` are in progress (for tests and the API).
    pub fn in_flight(&self, key: &SourceKey) -> i64 {
        self.counts
            .pin()
            .get(key)
            .map_or(0, |c| c.load(Ordering::Acquire).max(0))
    }
}

/// One taken slot, given back when dropped.
pub(crate) struct Slot {
    state: Arc<State>,
    key: SourceKey,
}

impl Drop for Slot {
    fn drop(&mut self) {
        // A counter above zero is never removed, so it is still there.
        if let Some(c) = self.state.counts.pin().get(&self.key) {
            c.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// A compiled `inFlightReq`.
pub struct InFlightReq {
    amount: i64,
    source: SourceCriterion,
    state: Arc<State>,
}

/// Compiles an `inFlightReq` around its kept `state`.
pub fn compile(
    cfg: &model::InFlightReq,
    state: Arc<State>,
) -> Result<InFlightReq, MiddlewareError> {
    if cfg.amount <= 0 {
        return Err(MiddlewareError::invalid(
            "amount",
            format!("must be at least 1, not {}", cfg.amount),
        ));
    }
    Ok(InFlightReq {
        amount: cfg.amount,
        source: SourceCriterion::compile(cfg.source_criterion.as_ref(), DefaultSource::Host)?,
        state,
    })
}

impl Middleware for InFlightReq {
    fn wraps(&self) -> bool {
        true
    }

    fn call<'a>(&'a self, req: Req, cx: &'a Exchange, next: Next<'a>) -> BoxFuture<'a, Resp> {
        let slot = self.state.acquire(self.source.key(&req, cx), self.amount);
        Box::pin(async move {
            let Some(slot) = slot else {
                return text_response(StatusCode::TOO_MANY_REQUESTS, "Too Many Requests\n");
            };
            let resp = next.run(req).await;
            if resp.body().is_end_stream() {
                return resp;
            }
            // The request is in flight until its body has been sent.
            resp.map(|body| ProxyBody::boxed(Held { body, _slot: slot }))
        })
    }
}

/// A response body that holds a slot until it ends (or is dropped).
struct Held {
    body: ProxyBody,
    _slot: Slot,
}

impl Body for Held {
    type Data = Bytes;
    type Error = crate::body::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_counted_and_given_back() {
        let state = Arc::new(State::default());
        let key = SourceKey::Unknown;
        let a = state.acquire(key.clone(), 2).expect("first");
        let b = state.acquire(key.clone(), 2).expect("second");
        assert!(state.acquire(key.clone(), 2).is_none());
        assert_eq!(state.in_flight(&key), 2);
        drop(a);
        let c = state.acquire(key.clone(), 2).expect("a slot is free again");
        drop((b, c));
        assert_eq!(state.in_flight(&key), 0);
        assert!(compile(&model::InFlightReq::default(), state).is_err());
    }
}
