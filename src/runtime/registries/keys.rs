//! The identities state is kept under across configuration swaps: one
//! type per family (balancer positions, middleware and connection state,
//! health checks), so keys of two families can never collide. Equal
//! inputs make equal keys, and so find the state a runtime before kept.

use crate::client::ClientSettings;
use crate::config::dynamic::HealthCheck;
use std::time::Duration;

/// Members of a balancer and their weights, in order: server URLs, or the
/// qualified names of a weighted service's services.
pub type Shape = Vec<(String, u32)>;

/// Where a rotation or a mirror's share stands.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PositionKey {
    /// The rotation over a load balancer's servers.
    Servers {
        /// The service, qualified.
        service: String,
        /// Its servers and weights; a change starts a new rotation.
        shape: Shape,
    },
    /// The rotation over a weighted service's services.
    Weighted {
        /// The service, qualified.
        service: String,
        /// Its services and weights; a change starts a new rotation.
        shape: Shape,
    },
    /// The share counter of one mirror of a mirroring service.
    Mirror {
        /// The mirroring service, qualified.
        service: String,
        /// The mirror, qualified.
        mirror: String,
    },
}

/// State of a middleware, a service's gate or a TCP server.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum StateKey {
    /// A stateful HTTP middleware (rateLimit, inFlightReq,
    /// circuitBreaker): per router, as Traefik gives each router its own
    /// instance, and per configuration, so a changed limit starts afresh.
    Middleware {
        /// The router, qualified.
        router: String,
        /// The middleware, qualified.
        middleware: String,
        /// Its options, as their JSON serialisation (the model holds free
        /// JSON values, which cannot be hashed).
        config: String,
    },
    /// A service's bound on requests in progress.
    ServiceGate {
        /// The service, qualified.
        service: String,
        /// Requests that may be in progress at once.
        max_concurrent: usize,
        /// How long a request past the bound may wait.
        queue_timeout: Duration,
    },
    /// A TCP `inFlightConn` middleware's counts.
    TcpInFlight {
        /// The middleware, qualified.
        middleware: String,
    },
    /// Passive health and load of one server of an HTTP load balancer: per
    /// service and server URL, so a server keeps its figures while others
    /// join or leave the pool.
    HttpServer {
        /// The service, qualified.
        service: String,
        /// The server's URL.
        url: String,
    },
    /// Whether a TCP server refused lately.
    TcpServerHealth {
        /// The TCP service, qualified.
        service: String,
        /// The server's address.
        address: String,
    },
    /// The active health check of a TCP load balancer: per service, check
    /// and servers, so a changed check or server list gets a new checker.
    TcpHealthCheck {
        /// The TCP service, qualified.
        service: String,
        /// The check's settings.
        check: crate::config::dynamic::tcp::TcpHealthCheck,
        /// The servers' addresses, in order.
        addresses: Vec<String>,
    },
}

/// The active health check of one load balancer.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HealthKey {
    /// The service, qualified.
    pub service: String,
    /// The check's settings.
    pub check: HealthCheck,
    /// The servers and their weights.
    pub shape: Shape,
    /// How the servers are connected to.
    pub transport: ClientSettings,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::Registries;
    use std::sync::Arc;

    #[test]
    fn equal_keys_share_state_and_families_never_meet() {
        let registries = Registries::default();
        let shape: Shape = vec![("http://a".into(), 1), ("http://b".into(), 2)];
        let servers = || PositionKey::Servers {
            service: "app@file".into(),
            shape: shape.clone(),
        };
        let weighted = PositionKey::Weighted {
            service: "app@file".into(),
            shape: shape.clone(),
        };
        let first = registries.position(&servers());
        assert!(Arc::ptr_eq(&first, &registries.position(&servers())));
        assert!(!Arc::ptr_eq(&first, &registries.position(&weighted)));

        let gate = |max_concurrent| StateKey::ServiceGate {
            service: "app@file".into(),
            max_concurrent,
            queue_timeout: Duration::ZERO,
        };
        let kept = registries.state(&gate(4), || 4_usize);
        assert!(Arc::ptr_eq(&kept, &registries.state(&gate(4), || 0_usize)));
        assert_eq!(*registries.state(&gate(5), || 5_usize), 5);
    }

    #[test]
    fn erased_state_outlives_a_sweep_while_held_and_only_then() {
        let registries = Registries::default();
        let key = StateKey::Middleware {
            router: String::new(),
            middleware: "bouncer@file".into(),
            config: "stream".into(),
        };
        let held = registries.kept(&key, || Arc::new(7_u32));
        registries.sweep();
        let again = registries.kept(&key, || Arc::new(0_u32));
        assert!(Arc::ptr_eq(&held, &again));
        drop((held, again));
        registries.sweep();
        let fresh = registries.kept(&key, || Arc::new(9_u32));
        assert_eq!(fresh.downcast_ref::<u32>(), Some(&9));
    }
}
