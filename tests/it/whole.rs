//! The program as a whole: start and shutdown, the compose examples, the
//! documentation, Traefik's options and the container health check.

mod docs;
mod examples;
mod healthcheck;
mod lifecycle;
mod traefik_options;
