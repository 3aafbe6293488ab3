//! The `gangway.sleep.*` labels of a container: whether it sleeps when
//! idle, how a request to it is answered while it sleeps, and which group
//! it wakes with. Pure: labels in, a `SleepSpec` or typed errors out.

use std::collections::BTreeMap;
use std::time::Duration;

/// The labels' namespace. Gangway's own, whatever
/// `providers.docker.labelPrefix` is: Traefik has no such labels.
pub const PREFIX: &str = "gangway.sleep";

/// How long a request waits for a wake-up when no `hold` label says.
pub const DEFAULT_HOLD: Duration = Duration::from_secs(30);

/// How a request to a sleeping service is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The request waits (up to `hold`) for the wake-up, then goes through.
    Hold,
    /// A browser gets a page that reloads itself until the service is up;
    /// other clients are held as in `Hold`.
    Page,
}

/// What a container's sleep labels ask for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SleepSpec {
    /// Stop the container after this long without a request
    /// (`gangway.sleep.idle`); None: it never sleeps, but it may still be
    /// woken (`wakeable`).
    pub idle: Option<Duration>,
    /// How requests are answered while it sleeps (`gangway.sleep.mode`).
    pub mode: Mode,
    /// The longest a request waits for the wake-up (`gangway.sleep.hold`).
    pub hold: Duration,
    /// Containers with the same group sleep and wake together
    /// (`gangway.sleep.group`).
    pub group: Option<String>,
    /// Woken by a request even when stopped by someone else than gangway
    /// (`gangway.sleep.wakeable`).
    pub wakeable: bool,
}

/// A sleep label that cannot be read; the container then does not sleep.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SleepError {
    /// A duration label that is not a positive duration.
    #[error("label `{label}`: `{value}` is not a duration (try `10m` or `30s`)")]
    BadDuration {
        /// The label.
        label: String,
        /// Its value.
        value: String,
    },
    /// `gangway.sleep.mode` other than `hold` or `page`.
    #[error("label `{label}`: `{value}` is not a mode (use `hold` or `page`)")]
    BadMode {
        /// The label.
        label: String,
        /// Its value.
        value: String,
    },
    /// `gangway.sleep.wakeable` other than `true` or `false`.
    #[error("label `{label}`: `{value}` is not `true` or `false`")]
    BadBool {
        /// The label.
        label: String,
        /// Its value.
        value: String,
    },
    /// `gangway.sleep.group` that is empty.
    #[error("label `{label}`: a group needs a name")]
    EmptyGroup {
        /// The label.
        label: String,
    },
    /// A label below `gangway.sleep` that means nothing.
    #[error("label `{label}`: unknown sleep option (known: idle, mode, hold, group, wakeable)")]
    Unknown {
        /// The label.
        label: String,
    },
    /// Sleep labels while gangway cannot start or stop containers.
    #[error(
        "label `{label}`: gangway's Docker connection cannot start or stop containers ({reason}); give it write access to start, stop and inspect (see docs/labels.md, sleeping services) or remove the sleep labels"
    )]
    ReadOnly {
        /// The first sleep label of the container.
        label: String,
        /// What the daemon (or the proxy in front of it) answered.
        reason: String,
    },
    /// Sleep labels on a Swarm service that is not replicated: a global
    /// service runs one task per node and cannot be scaled to 0.
    #[error(
        "label `{label}`: service `{service}` runs in {mode} mode, which cannot be scaled to 0; only replicated services sleep (remove the sleep labels or deploy it with `mode: replicated`)"
    )]
    NotReplicated {
        /// The first sleep label of the service.
        label: String,
        /// The service's name.
        service: String,
        /// Its mode (`global`, `replicated-job`, `global-job`).
        mode: String,
    },
    /// Sleep labels on a Swarm service while gangway cannot update services.
    #[error(
        "label `{label}`: gangway's connection to the Swarm manager cannot update services ({reason}); give it write access to update and inspect services (see docs/swarm.md, sleeping services) or remove the sleep labels"
    )]
    SwarmReadOnly {
        /// The first sleep label of the service.
        label: String,
        /// What the manager (or the proxy in front of it) answered.
        reason: String,
    },
}

/// Reads a container's sleep labels: None when it has none; errors when
/// one does not parse (the container then does not sleep at all, rather
/// than sleep in a way nobody asked for).
pub fn parse_sleep_labels(
    labels: &BTreeMap<String, String>,
) -> Option<Result<SleepSpec, Vec<SleepError>>> {
    let mut spec = SleepSpec {
        idle: None,
        mode: Mode::Hold,
        hold: DEFAULT_HOLD,
        group: None,
        wakeable: false,
    };
    let mut errors = Vec::new();
    let mut any = false;
    for (label, value) in labels {
        let Some(option) = label
            .get(..PREFIX.len())
            .filter(|p| p.eq_ignore_ascii_case(PREFIX))
            .and_then(|_| label.get(PREFIX.len()..))
            .and_then(|rest| rest.strip_prefix('.'))
        else {
            continue;
        };
        any = true;
        let value = value.trim();
        let duration = || match value.parse::<crate::config::Duration>() {
            Ok(d) if !d.0.is_zero() => Ok(d.0),
            _ => Err(SleepError::BadDuration {
                label: label.clone(),
                value: value.to_owned(),
            }),
        };
        match option.to_ascii_lowercase().as_str() {
            "idle" => match duration() {
                Ok(d) => spec.idle = Some(d),
                Err(e) => errors.push(e),
            },
            "hold" => match duration() {
                Ok(d) => spec.hold = d,
                Err(e) => errors.push(e),
            },
            "mode" => match value.to_ascii_lowercase().as_str() {
                "hold" => spec.mode = Mode::Hold,
                "page" => spec.mode = Mode::Page,
                _ => errors.push(SleepError::BadMode {
                    label: label.clone(),
                    value: value.to_owned(),
                }),
            },
            "group" if value.is_empty() => errors.push(SleepError::EmptyGroup {
                label: label.clone(),
            }),
            "group" => spec.group = Some(value.to_owned()),
            "wakeable" => match value.to_ascii_lowercase().as_str() {
                "true" => spec.wakeable = true,
                "false" => spec.wakeable = false,
                _ => errors.push(SleepError::BadBool {
                    label: label.clone(),
                    value: value.to_owned(),
                }),
            },
            _ => errors.push(SleepError::Unknown {
                label: label.clone(),
            }),
        }
    }
    if !any {
        return None;
    }
    Some(if errors.is_empty() {
        Ok(spec)
    } else {
        Err(errors)
    })
}

/// The first sleep label of a container, to name it in an error about all
/// of them.
pub fn first_label(labels: &BTreeMap<String, String>) -> Option<&str> {
    labels
        .keys()
        .find(|k| {
            k.get(..PREFIX.len())
                .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
                && k.as_bytes().get(PREFIX.len()) == Some(&b'.')
        })
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn reads_every_option_and_defaults_the_rest() {
        assert_eq!(
            parse_sleep_labels(&labels(&[("traefik.enable", "true")])),
            None
        );
        let spec = parse_sleep_labels(&labels(&[("gangway.sleep.idle", "10m")]))
            .expect("labels")
            .expect("valid");
        assert_eq!(spec.idle, Some(Duration::from_secs(600)));
        assert_eq!(spec.mode, Mode::Hold);
        assert_eq!(spec.hold, DEFAULT_HOLD);
        assert_eq!(spec.group, None);
        assert!(!spec.wakeable);
        let spec = parse_sleep_labels(&labels(&[
            ("gangway.sleep.idle", "2s"),
            ("Gangway.Sleep.Mode", "PAGE"),
            ("gangway.sleep.hold", "1m30s"),
            ("gangway.sleep.group", "shop"),
            ("gangway.sleep.wakeable", "true"),
        ]))
        .expect("labels")
        .expect("valid");
        assert_eq!(
            spec,
            SleepSpec {
                idle: Some(Duration::from_secs(2)),
                mode: Mode::Page,
                hold: Duration::from_secs(90),
                group: Some("shop".into()),
                wakeable: true,
            }
        );
    }

    #[test]
    fn a_bad_value_is_a_typed_error_naming_its_label() {
        type Is = fn(&SleepError) -> bool;
        let table: &[(&str, &str, Is)] = &[
            ("gangway.sleep.idle", "soon", |e| {
                matches!(e, SleepError::BadDuration { .. })
            }),
            ("gangway.sleep.idle", "0s", |e| {
                matches!(e, SleepError::BadDuration { .. })
            }),
            ("gangway.sleep.hold", "-3s", |e| {
                matches!(e, SleepError::BadDuration { .. })
            }),
            ("gangway.sleep.mode", "wait", |e| {
                matches!(e, SleepError::BadMode { .. })
            }),
            ("gangway.sleep.wakeable", "yes", |e| {
                matches!(e, SleepError::BadBool { .. })
            }),
            ("gangway.sleep.group", " ", |e| {
                matches!(e, SleepError::EmptyGroup { .. })
            }),
            ("gangway.sleep.idel", "10m", |e| {
                matches!(e, SleepError::Unknown { .. })
            }),
        ];
        for (label, value, is) in table {
            let errors = parse_sleep_labels(&labels(&[(label, value)]))
                .expect("labels")
                .expect_err("invalid");
            assert_eq!(errors.len(), 1, "{label}={value}");
            assert!(is(&errors[0]), "{label}={value}: {}", errors[0]);
            assert!(errors[0].to_string().contains(label), "{}", errors[0]);
        }
    }

    #[test]
    fn first_label_names_only_sleep_labels() {
        let l = labels(&[("gangway.enable", "true"), ("gangway.sleep.idle", "1m")]);
        assert_eq!(first_label(&l), Some("gangway.sleep.idle"));
        assert_eq!(first_label(&labels(&[("gangway.sleepy", "1")])), None);
    }
}
