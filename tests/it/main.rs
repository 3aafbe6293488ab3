//! gangway's integration tests, one binary grouped by room: the real
//! binary against real parts (sockets, Docker, an ACME server, browsers,
//! stores), driven through tests/it/support.

mod support;

mod api;
mod middleware;
mod providers;
mod proxy;
mod servers;
mod tcp;
mod telemetry;
mod tls;
mod whole;
