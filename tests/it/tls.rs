//! TLS termination and certificates: files, ACME through a real CA, DNS-01
//! and the stores certificates are shared in.

mod acme;
mod acme_ari;
mod acme_cluster;
mod acme_json;
mod acme_options;
mod acme_store;
mod dns;
mod dns_hosts;
mod termination;
