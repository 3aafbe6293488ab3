//! Servers behind a service: balancing, passive and active health, and
//! sleeping services.

mod balancing;
mod passive_health;
mod serving_truth;
mod sleep;
mod strategies;
mod tcp_health;
