//! The one list of providers: start-up spawns from it, `/api/overview`
//! names from it and `gangway check` checks options from it, so a provider
//! cannot be forgotten in one of them.

use super::Snapshot;
use crate::config::static_config::{FileProvider, Providers};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// A source of dynamic configuration that the static configuration can
/// turn on (`providers.<name>`). The internal provider (the API's own
/// routers) is always there and is not one of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProviderKind {
    /// `providers.file`: a file or a directory of files.
    File,
    /// `providers.docker`: container labels.
    Docker,
    /// `providers.swarm`: Swarm service labels.
    Swarm,
    /// `providers.redis`: keys in Redis.
    Redis,
    /// `providers.etcd`: keys in etcd.
    Etcd,
    /// `providers.http`: a configuration polled from an endpoint.
    Http,
}

/// A provider's options cannot be used: it cannot start.
#[derive(Debug, thiserror::Error)]
pub enum OptionsError {
    /// The Docker provider's options are wrong.
    #[error(transparent)]
    Docker(#[from] super::docker::DockerError),
    /// The Swarm provider's options are wrong.
    #[error(transparent)]
    Swarm(#[from] super::swarm::SwarmError),
    /// The Redis provider's options are wrong.
    #[error(transparent)]
    Redis(#[from] super::kv::redis::RedisError),
    /// The etcd provider's options are wrong.
    #[error(transparent)]
    Etcd(#[from] super::kv::etcd::EtcdProviderError),
    /// The HTTP provider's options are wrong.
    #[error(transparent)]
    Http(#[from] super::http::HttpProviderError),
}

impl ProviderKind {
    /// Every provider, in the order they start and the API lists them.
    pub const ALL: [ProviderKind; 6] = [
        ProviderKind::File,
        ProviderKind::Docker,
        ProviderKind::Swarm,
        ProviderKind::Redis,
        ProviderKind::Etcd,
        ProviderKind::Http,
    ];

    /// Traefik's capitalised name, as `/api/overview` lists it.
    pub const fn name(self) -> &'static str {
        match self {
            ProviderKind::File => "File",
            ProviderKind::Docker => "Docker",
            ProviderKind::Swarm => "Swarm",
            ProviderKind::Redis => "Redis",
            ProviderKind::Etcd => "Etcd",
            ProviderKind::Http => "HTTP",
        }
    }

    /// The Traefik names of the providers `providers` turns on, as
    /// `/api/overview` lists them.
    pub fn names(providers: &Providers) -> Vec<&'static str> {
        Self::configured(providers)
            .into_iter()
            .map(Self::name)
            .collect()
    }

    /// The providers `providers` turns on, in [`ProviderKind::ALL`]'s order.
    pub fn configured(providers: &Providers) -> Vec<ProviderKind> {
        // Taken apart with no `..`: a provider added to the static
        // configuration but to no kind here fails the build.
        #[deny(unused_variables)] // an option read nowhere fails the build
        let Providers {
            providers_throttle_duration: _, // aggregate's debounce
            file,
            docker,
            swarm,
            redis,
            etcd,
            http,
        } = providers;
        Self::ALL
            .into_iter()
            .filter(|kind| match kind {
                ProviderKind::File => file.is_some(),
                ProviderKind::Docker => docker.is_some(),
                ProviderKind::Swarm => swarm.is_some(),
                ProviderKind::Redis => redis.is_some(),
                ProviderKind::Etcd => etcd.is_some(),
                ProviderKind::Http => http.is_some(),
            })
            .collect()
    }

    /// Checks the options a provider reads only when it starts (an
    /// endpoint and its TLS files, a store's options), connecting to
    /// nothing; `Ok` when it is off.
    pub fn check_options(self, providers: &Providers) -> Result<(), OptionsError> {
        use super::docker::Endpoint;
        match self {
            // validate() has checked its one option that can be wrong.
            ProviderKind::File => {}
            ProviderKind::Docker => {
                if let Some(d) = &providers.docker {
                    Endpoint::with_tls(&d.endpoint, d.tls.as_ref())?;
                }
            }
            ProviderKind::Swarm => {
                if let Some(s) = &providers.swarm {
                    Endpoint::with_tls(&s.endpoint, s.tls.as_ref())
                        .map_err(super::swarm::SwarmError::from)?;
                }
            }
            ProviderKind::Redis => {
                if let Some(r) = &providers.redis {
                    crate::store::redis::RedisStore::new(r)?;
                }
            }
            ProviderKind::Etcd => {
                if let Some(e) = &providers.etcd {
                    crate::store::etcd::EtcdStore::new(e)?;
                }
            }
            ProviderKind::Http => {
                if let Some(h) = &providers.http {
                    super::http::check_http(h)?;
                }
            }
        }
        Ok(())
    }

    /// Checks the provider's options and starts it, sending a `Snapshot`
    /// on `tx` at every change; `None` when it is off.
    pub fn spawn(
        self,
        providers: &Providers,
        tx: &mpsc::Sender<Snapshot>,
        sleeper: &std::sync::Arc<crate::sleep::Sleeper>,
    ) -> Result<Option<JoinHandle<()>>, OptionsError> {
        let tx = tx.clone();
        Ok(match self {
            ProviderKind::File => providers.file.as_ref().and_then(|file| {
                #[deny(unused_variables)] // an option read nowhere fails the build
                let FileProvider {
                    filename,
                    directory,
                    watch,
                } = file;
                // validate() guarantees exactly one of filename and directory.
                let source = match (filename, directory) {
                    (Some(f), _) => super::file::Source::File(f.clone()),
                    (None, Some(d)) => super::file::Source::Directory(d.clone()),
                    (None, None) => return None,
                };
                Some(super::file::spawn_file(source, *watch, tx))
            }),
            ProviderKind::Docker => match &providers.docker {
                Some(c) => Some(super::docker::spawn_docker(c, tx, sleeper.clone())?),
                None => None,
            },
            ProviderKind::Swarm => match &providers.swarm {
                Some(c) => Some(super::swarm::spawn_swarm(c, tx, sleeper.clone())?),
                None => None,
            },
            ProviderKind::Redis => match &providers.redis {
                Some(c) => Some(super::kv::redis::spawn_redis(c, tx)?),
                None => None,
            },
            ProviderKind::Etcd => match &providers.etcd {
                Some(c) => Some(super::kv::etcd::spawn_etcd(c, tx)?),
                None => None,
            },
            ProviderKind::Http => match &providers.http {
                Some(c) => Some(super::http::spawn_http(c, tx)?),
                None => None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_configured_provider_is_named() {
        let providers = Providers {
            file: Some(FileProvider::default()),
            docker: Some(Default::default()),
            swarm: Some(Default::default()),
            redis: Some(Default::default()),
            etcd: Some(Default::default()),
            http: Some(Default::default()),
            ..Providers::default()
        };
        let names: Vec<_> = ProviderKind::configured(&providers)
            .into_iter()
            .map(ProviderKind::name)
            .collect();
        assert_eq!(names, ["File", "Docker", "Swarm", "Redis", "Etcd", "HTTP"]);
        assert!(ProviderKind::configured(&Providers::default()).is_empty());
    }

    #[test]
    fn the_names_list_every_configured_provider_swarm_too() {
        let swarm = ProviderKind::names(&Providers {
            swarm: Some(Default::default()),
            ..Providers::default()
        });
        assert_eq!(swarm, ["Swarm"]);
        let all = ProviderKind::names(&Providers {
            file: Some(Default::default()),
            docker: Some(Default::default()),
            swarm: Some(Default::default()),
            redis: Some(Default::default()),
            etcd: Some(Default::default()),
            ..Providers::default()
        });
        assert_eq!(all, ["File", "Docker", "Swarm", "Redis", "Etcd"]);
        assert!(ProviderKind::names(&Providers::default()).is_empty());
    }
}
