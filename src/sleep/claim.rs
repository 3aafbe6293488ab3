//! Sleep asked for by a middleware instead of a container's own labels:
//! the Sablier plugin's configuration names the containers that sleep (by
//! name, or as a group through their `sablier.*` labels) and how long a
//! session lasts. Pure: the claims and a container in, its spec out.

use super::SleepSpec;
use std::collections::BTreeMap;

/// Sablier's label that lets a container be found by its group.
pub const ENABLE_LABEL: &str = "sablier.enable";
/// Sablier's label naming a container's group.
pub const GROUP_LABEL: &str = "sablier.group";
/// The group of a container with `sablier.enable` and no group label, as
/// Sablier has it.
pub const DEFAULT_GROUP: &str = "default";

/// Containers a middleware puts to sleep, and how.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// The middleware that asks (`sablier@file`).
    pub by: String,
    /// Containers named outright; when any are, `group` is not read (as
    /// Sablier ignores its group then).
    pub names: Vec<String>,
    /// The containers whose `sablier.group` is this, with `sablier.enable`.
    pub group: Option<String>,
    /// How they sleep; its group is the unit they sleep and wake as.
    pub spec: SleepSpec,
}

impl Claim {
    /// Whether the container `name` with these labels is one of this
    /// claim's.
    pub fn covers(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        if !self.names.is_empty() {
            let name = name.trim_start_matches('/');
            return self.names.iter().any(|n| n == name);
        }
        let Some(group) = &self.group else {
            return false;
        };
        let label = |key: &str| {
            labels
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v.trim())
        };
        let enabled = label(ENABLE_LABEL).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        enabled && label(GROUP_LABEL).unwrap_or(DEFAULT_GROUP) == group
    }
}

/// The spec the first claim covering this container gives it.
pub fn claimed(
    claims: &[Claim],
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Option<SleepSpec> {
    claims
        .iter()
        .find(|c| c.covers(name, labels))
        .map(|c| c.spec.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sleep::Mode;
    use std::time::Duration;

    fn claim(names: &[&str], group: Option<&str>) -> Claim {
        Claim {
            by: "sablier@file".into(),
            names: names.iter().map(|n| (*n).to_owned()).collect(),
            group: group.map(str::to_owned),
            spec: SleepSpec {
                idle: Some(Duration::from_secs(60)),
                mode: Mode::Page,
                hold: Duration::from_secs(30),
                group: Some(group.unwrap_or("sablier@file").to_owned()),
                wakeable: true,
            },
        }
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn names_match_the_container_name_and_outrank_the_group() {
        let c = claim(&["whoami", "db"], Some("demo"));
        assert!(c.covers("/whoami", &labels(&[])));
        assert!(c.covers("db", &labels(&[])));
        assert!(!c.covers(
            "other",
            &labels(&[("sablier.enable", "true"), ("sablier.group", "demo")])
        ));
    }

    #[test]
    fn a_group_needs_the_enable_label_and_defaults_to_default() {
        let c = claim(&[], Some("demo"));
        assert!(c.covers(
            "a",
            &labels(&[("sablier.enable", "true"), ("Sablier.Group", "demo")])
        ));
        assert!(!c.covers("a", &labels(&[("sablier.group", "demo")])));
        assert!(!c.covers(
            "a",
            &labels(&[("sablier.enable", "false"), ("sablier.group", "demo")])
        ));
        let d = claim(&[], Some(DEFAULT_GROUP));
        assert!(d.covers("a", &labels(&[("sablier.enable", "true")])));
        assert!(!d.covers(
            "a",
            &labels(&[("sablier.enable", "true"), ("sablier.group", "demo")])
        ));
        let claims = [c, d];
        assert_eq!(
            claimed(&claims, "a", &labels(&[("sablier.enable", "true")])).and_then(|s| s.group),
            Some(DEFAULT_GROUP.to_owned())
        );
        assert_eq!(claimed(&claims, "a", &labels(&[])), None);
    }
}
