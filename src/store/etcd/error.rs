//! What can go wrong talking to etcd, with the endpoint that said so and,
//! where one is involved, the key.

use std::fmt;
use std::time::Duration;

/// An etcd request that did not give what was asked for.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    /// An endpoint in the configuration cannot be used.
    #[error("etcd endpoint `{endpoint}`: {problem}")]
    BadEndpoint {
        /// The endpoint as configured.
        endpoint: String,
        /// What is wrong with it.
        problem: String,
    },
    /// TLS towards an `https://` endpoint cannot be set up.
    #[error("etcd endpoint `{endpoint}`: cannot set up TLS: {error}")]
    TlsSetup {
        /// The endpoint as configured.
        endpoint: String,
        /// What rustls said.
        error: rustls::Error,
    },
    /// No endpoint could be connected to; every attempt, in order.
    #[error("no etcd endpoint could be reached: {}", Tried(.tried))]
    Unreachable {
        /// Each endpoint tried and why the connection failed.
        tried: Vec<Unreached>,
    },
    /// The endpoint accepted the connection but did not answer in time.
    #[error("etcd at {endpoint}: no answer to {path}{} within {timeout:?}", OnKey(.key))]
    Timeout {
        /// The endpoint asked.
        endpoint: String,
        /// The gateway path (`/v3/kv/range`).
        path: &'static str,
        /// The key or prefix the request was about.
        key: Option<String>,
        /// How long the client waited.
        timeout: Duration,
    },
    /// The connection broke while the answer was on its way.
    #[error("etcd at {endpoint}: {path}{} broke off: {reason}", OnKey(.key))]
    Broken {
        /// The endpoint asked.
        endpoint: String,
        /// The gateway path.
        path: &'static str,
        /// The key or prefix the request was about.
        key: Option<String>,
        /// What the connection reported.
        reason: String,
    },
    /// etcd answered with an error: the HTTP status, the gRPC code the
    /// gateway maps it from, and etcd's own message.
    #[error("etcd at {endpoint}: {path}{} answered {status}: {message}", OnKey(.key))]
    Status {
        /// The endpoint that answered.
        endpoint: String,
        /// The gateway path.
        path: &'static str,
        /// The key or prefix the request was about.
        key: Option<String>,
        /// The HTTP status.
        status: u16,
        /// The gRPC status code in the answer (16: unauthenticated, 11: out
        /// of range, for example a compacted revision), when it had one.
        code: Option<i64>,
        /// etcd's message, or the start of the body when it was not etcd's
        /// JSON error.
        message: String,
    },
    /// The answer is not the JSON etcd's gateway sends.
    #[error("etcd at {endpoint}: the answer to {path}{} is not etcd's: {reason}", OnKey(.key))]
    BadJson {
        /// The endpoint that answered.
        endpoint: String,
        /// The gateway path.
        path: &'static str,
        /// The key or prefix the request was about.
        key: Option<String>,
        /// What did not fit.
        reason: String,
    },
    /// An answer larger than the client reads.
    #[error("etcd at {endpoint}: the answer to {path}{} is larger than {limit} bytes", OnKey(.key))]
    TooLarge {
        /// The endpoint that answered.
        endpoint: String,
        /// The gateway path.
        path: &'static str,
        /// The key or prefix the request was about.
        key: Option<String>,
        /// The most the client reads of one answer (or one watch message).
        limit: usize,
    },
    /// etcd refused the user name and password.
    #[error("etcd at {endpoint}: authentication as `{user}` failed: {message}")]
    AuthFailed {
        /// The endpoint that refused.
        endpoint: String,
        /// The user name sent.
        user: String,
        /// etcd's message.
        message: String,
    },
    /// A key, or the value under it, is not UTF-8 text; configuration is
    /// text, so the key is reported rather than guessed at.
    #[error("etcd at {endpoint}: the {part} of key `{key}` is not UTF-8")]
    NotUtf8 {
        /// The endpoint that sent it.
        endpoint: String,
        /// The key, with bytes that are not UTF-8 replaced by U+FFFD.
        key: String,
        /// `key` or `value`.
        part: &'static str,
    },
    /// The revision a watch was to start from is gone (etcd compacted its
    /// history): changes since then cannot be replayed, so the caller must
    /// read the whole prefix again and watch from that read's revision.
    #[error(
        "etcd at {endpoint}: history of `{prefix}` is compacted up to revision {compact_revision}; read it again"
    )]
    Compacted {
        /// The endpoint that said so.
        endpoint: String,
        /// The watched prefix.
        prefix: String,
        /// The oldest revision etcd still has.
        compact_revision: i64,
    },
    /// etcd canceled a watch for another reason than compaction (for
    /// example a token it no longer accepts, or a permission).
    #[error("etcd at {endpoint}: the watch on `{prefix}` was canceled: {reason}")]
    WatchCanceled {
        /// The endpoint that canceled it.
        endpoint: String,
        /// The watched prefix.
        prefix: String,
        /// etcd's reason, when it gave one.
        reason: String,
    },
    /// The watch's stream ended (the server closed it, or the connection
    /// broke); the caller watches again from the revision after the last
    /// batch it received.
    #[error("etcd at {endpoint}: the watch on `{prefix}` ended: {reason}")]
    WatchEnded {
        /// The endpoint whose stream ended.
        endpoint: String,
        /// The watched prefix.
        prefix: String,
        /// How it ended.
        reason: String,
    },
}

/// One endpoint that could not be connected to.
#[derive(Debug, Clone)]
pub struct Unreached {
    /// The endpoint as configured.
    pub endpoint: String,
    /// Why the connection failed.
    pub reason: String,
}

struct Tried<'a>(&'a [Unreached]);

impl fmt::Display for Tried<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, u) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{} ({})", u.endpoint, u.reason)?;
        }
        Ok(())
    }
}

struct OnKey<'a>(&'a Option<String>);

impl fmt::Display for OnKey<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(key) => write!(f, " for `{key}`"),
            None => Ok(()),
        }
    }
}

impl EtcdError {
    /// The endpoint the error came from (for `Unreachable`, the last one
    /// tried; for `BadEndpoint`, the one configured).
    pub fn endpoint(&self) -> Option<&str> {
        match self {
            EtcdError::Unreachable { tried } => tried.last().map(|u| u.endpoint.as_str()),
            EtcdError::BadEndpoint { endpoint, .. }
            | EtcdError::TlsSetup { endpoint, .. }
            | EtcdError::Timeout { endpoint, .. }
            | EtcdError::Broken { endpoint, .. }
            | EtcdError::Status { endpoint, .. }
            | EtcdError::BadJson { endpoint, .. }
            | EtcdError::TooLarge { endpoint, .. }
            | EtcdError::AuthFailed { endpoint, .. }
            | EtcdError::NotUtf8 { endpoint, .. }
            | EtcdError::Compacted { endpoint, .. }
            | EtcdError::WatchCanceled { endpoint, .. }
            | EtcdError::WatchEnded { endpoint, .. } => Some(endpoint),
        }
    }
}
