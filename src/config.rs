//! Configuration: the static configuration read at start, and the dynamic model
//! that providers produce. Plain data and serde only; this room uses no other.

pub mod duration;
pub mod dynamic;
pub mod format;
pub mod lenient;
pub mod problem;
pub mod provenance;
pub mod static_config;

pub use duration::{Duration, SignedDuration};
pub use dynamic::Dynamic;

use std::fmt;

/// A name qualified by the provider that defined it, printed as `name@provider`
/// (`whoami@docker`, `app@file`), as Traefik prints them.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(into = "String")]
pub struct QualifiedName {
    /// The name as the provider wrote it.
    pub name: String,
    /// The provider's namespace: `file`, `docker`, `internal`.
    pub provider: String,
}

impl QualifiedName {
    /// Builds a qualified name from its parts.
    pub fn new(name: impl Into<String>, provider: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            provider: provider.into(),
        }
    }

    /// Resolves a reference written inside `provider`'s configuration: a name
    /// with `@` names another provider's object, a bare name its own provider's.
    pub fn resolve(reference: &str, provider: &str) -> Self {
        match reference.rsplit_once('@') {
            Some((name, other)) if !name.is_empty() && !other.is_empty() => Self::new(name, other),
            _ => Self::new(reference, provider),
        }
    }

    /// Parses `name@provider`; None when there is no provider part.
    pub fn parse(qualified: &str) -> Option<Self> {
        let (name, provider) = qualified.rsplit_once('@')?;
        (!name.is_empty() && !provider.is_empty()).then(|| Self::new(name, provider))
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.provider)
    }
}

impl From<QualifiedName> for String {
    fn from(q: QualifiedName) -> String {
        q.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::QualifiedName;

    #[test]
    fn references_resolve_within_their_provider_unless_qualified() {
        assert_eq!(
            QualifiedName::resolve("app", "file").to_string(),
            "app@file"
        );
        assert_eq!(
            QualifiedName::resolve("app@docker", "file").to_string(),
            "app@docker"
        );
        assert_eq!(QualifiedName::resolve("@x", "file").to_string(), "@x@file");
        assert_eq!(
            QualifiedName::parse("a@b"),
            Some(QualifiedName::new("a", "b"))
        );
        assert_eq!(QualifiedName::parse("plain"), None);
    }
}
