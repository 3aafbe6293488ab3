//! The proxy's path, request by request: listeners, HTTP/1.1, HTTP/2 and
//! HTTP/3, routing, forwarding to servers, limits and overload.

mod entry_point_options;
mod fairness;
mod faults;
mod forwarded;
mod http3;
mod large_bodies;
mod limits;
mod multi_layer;
mod overload;
mod protocols;
mod routing;
mod sizes;
mod smuggling;
mod transports;
mod upstream_connections;
mod workers;
