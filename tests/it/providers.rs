//! Where configuration comes from: Docker, Swarm, files, HTTP and the key-value
//! stores.

mod docker;
mod docker_restart;
mod etcd;
mod file_provider;
mod file_templates;
mod http_provider;
mod kv_etcd;
mod kv_redis;
mod kv_sentinel;
mod swarm;
