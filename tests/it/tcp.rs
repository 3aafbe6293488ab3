//! TCP and UDP routers and the servers behind them.

mod tcp_servers;
mod tcp_udp;
