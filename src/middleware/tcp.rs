//! TCP middlewares: `ipAllowList` (and Traefik v2's `ipWhiteList`) and
//! `inFlightConn`. They see a connection, not a request: each decides on
//! the client's address once, when the connection is accepted. They share
//! address matching with the HTTP `ipAllowList` (`ip.rs`) and the counts
//! kept across swaps with `inFlightReq` (`in_flight_req.rs`).

use super::MiddlewareError;
use super::in_flight_req::{Slot, State};
use super::ip::AddressList;
use super::source::SourceKey;
use crate::config::dynamic::tcp::{TcpInFlightConn, TcpIpAllowList};
use std::net::IpAddr;
use std::sync::Arc;

/// A compiled TCP middleware.
pub struct TcpGuard {
    /// Its qualified name, for logs.
    pub name: String,
    /// What it checks.
    pub kind: TcpGuardKind,
}

/// What a TCP middleware checks.
pub enum TcpGuardKind {
    /// `ipAllowList`: the client's address.
    AllowList(AddressList),
    /// `inFlightConn`: open connections per client address, counted in
    /// state that outlives configuration swaps.
    InFlight {
        /// The most at once.
        amount: i64,
        /// The counts.
        state: Arc<State>,
    },
}

/// A connection a TCP middleware let through, and what it holds while the
/// connection lasts.
pub(crate) enum Admitted {
    /// Nothing to hold.
    Free,
    /// A slot of `inFlightConn`, given back when dropped.
    Holding(Slot),
}

impl TcpGuard {
    /// Decides on a connection from `client`: `None` refuses it.
    pub(crate) fn admit(&self, client: IpAddr) -> Option<Admitted> {
        match &self.kind {
            TcpGuardKind::AllowList(allowed) => allowed.contains(client).then_some(Admitted::Free),
            TcpGuardKind::InFlight { amount, state } => state
                .acquire(SourceKey::Ip(client.to_canonical()), *amount)
                .map(Admitted::Holding),
        }
    }
}

/// Compiles an `ipAllowList` of a TCP middleware.
pub fn compile_allow_list(cfg: &TcpIpAllowList) -> Result<TcpGuardKind, MiddlewareError> {
    if cfg.source_range.is_empty() {
        return Err(MiddlewareError::invalid(
            "ipAllowList.sourceRange",
            "at least one address or range is required",
        ));
    }
    Ok(TcpGuardKind::AllowList(AddressList::parse(
        &cfg.source_range,
        "ipAllowList.sourceRange",
    )?))
}

/// Compiles an `inFlightConn` around its kept `state`.
pub fn compile_in_flight(
    cfg: &TcpInFlightConn,
    state: Arc<State>,
) -> Result<TcpGuardKind, MiddlewareError> {
    if cfg.amount <= 0 {
        return Err(MiddlewareError::invalid(
            "inFlightConn.amount",
            format!("must be at least 1, not {}", cfg.amount),
        ));
    }
    Ok(TcpGuardKind::InFlight {
        amount: cfg.amount,
        state,
    })
}
