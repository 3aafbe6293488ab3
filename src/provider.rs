//! Sources of dynamic configuration. Each provider sends a whole `Dynamic`
//! for its own namespace on every change.

pub mod docker;
pub mod file;
pub mod http;
mod kind;
pub mod kv;
pub mod swarm;

pub use kind::{OptionsError, ProviderKind};

use crate::config::Dynamic;
use crate::config::problem::{ProviderError, Warning};
use crate::config::provenance::ProviderDetail;

/// One provider's newest word.
#[derive(Debug)]
pub struct Snapshot {
    /// The provider's namespace (`file`, `docker`, `internal`).
    pub provider: &'static str,
    /// The new configuration, or None when the newest attempt failed and the
    /// last good one must stay in use.
    pub dynamic: Option<Dynamic>,
    /// Why the newest attempt failed, if it did.
    pub error: Option<ProviderError>,
    /// Problems that did not stop the configuration from loading.
    pub warnings: Vec<Warning>,
    /// What the provider knows beyond the configuration (provenance,
    /// containers, connection state), for the API; None keeps the last one.
    pub detail: Option<ProviderDetail>,
}

impl Snapshot {
    /// A new configuration from a provider that watches a daemon, with what
    /// it knows beyond it.
    pub fn read(provider: &'static str, dynamic: Dynamic, detail: ProviderDetail) -> Snapshot {
        Snapshot {
            provider,
            dynamic: Some(dynamic),
            error: None,
            warnings: Vec::new(),
            detail: Some(detail),
        }
    }

    /// The provider cannot read its daemon: the last configuration stays in
    /// use, and its last detail says it is disconnected.
    pub fn unreachable(
        provider: &'static str,
        error: ProviderError,
        last: Option<&ProviderDetail>,
    ) -> Snapshot {
        let mut detail = last.cloned().unwrap_or_default();
        detail.connected = Some(false);
        Snapshot {
            provider,
            dynamic: None,
            error: Some(error),
            warnings: Vec::new(),
            detail: Some(detail),
        }
    }
}
