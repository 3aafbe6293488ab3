//! HTTP middlewares, Traefik's own and the plugins gangway builds in.

mod crowdsec;
mod middlewares;
mod more_middlewares;
mod plugins;
mod rate_limit_redis;
