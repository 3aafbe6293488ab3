//! The step every router takes, whatever its protocol: its rule parsed,
//! its entry points and its service resolved, and who it uses recorded.
//! A problem is recorded on the router's report, and one that stops the
//! router disables it; the HTTP, TCP and UDP compilers then build their
//! own routes from what the step resolved.

use super::CompileContext;
use crate::config::QualifiedName;
use crate::config::problem::{ConfigError, ObjectKind, ObjectRef, Problem, Reference};
use crate::rule::{RuleError, RuleSyntax};
use crate::runtime::report::{ObjectReport, Status};
use std::collections::BTreeMap;

/// What differs between HTTP, TCP and UDP routers in the step: the kinds
/// of object their problems and users are about.
pub(super) struct Family {
    /// The routers' kind.
    router: ObjectKind,
    /// The kind of the services they use.
    service: ObjectKind,
    /// The same, as a reference from a router.
    service_ref: Reference,
}

/// HTTP routers and services.
pub(super) const HTTP: Family = Family {
    router: ObjectKind::Router,
    service: ObjectKind::Service,
    service_ref: Reference::Service,
};

/// TCP routers and services.
pub(super) const TCP: Family = Family {
    router: ObjectKind::TcpRouter,
    service: ObjectKind::TcpService,
    service_ref: Reference::TcpService,
};

/// UDP routers and services.
pub(super) const UDP: Family = Family {
    router: ObjectKind::UdpRouter,
    service: ObjectKind::UdpService,
    service_ref: Reference::UdpService,
};

/// Who uses each service and middleware: the routers, by qualified name.
pub(super) type Using = BTreeMap<ObjectRef, Vec<String>>;

/// One router going through the step.
pub(super) struct RouterStep<'a> {
    family: &'static Family,
    /// Its qualified name.
    pub(super) name: &'a str,
    /// Its provider: names written without one resolve in it.
    pub(super) provider: String,
    /// Its report.
    pub(super) entry: &'a mut ObjectReport,
}

impl<'a> RouterStep<'a> {
    /// Starts the step for router `name` of `family`, reporting to `entry`.
    pub(super) fn new(family: &'static Family, name: &'a str, entry: &'a mut ObjectReport) -> Self {
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        RouterStep {
            family,
            name,
            provider,
            entry,
        }
    }

    /// `problem`, as the router's.
    pub(super) fn error(&self, problem: Problem) -> ConfigError {
        ConfigError::new(ObjectRef::new(self.family.router, self.name), problem)
    }

    /// Disables the router for `problem` with its option `at`.
    pub(super) fn disable(&mut self, problem: Problem, at: &'static str) {
        let error = self.error(problem).at(at);
        self.entry.disable(error);
    }

    /// Warns about `problem` with the router's option `at`.
    pub(super) fn warn(&mut self, problem: Problem, at: &'static str) {
        let error = self.error(problem).at(at);
        self.entry.warn(error);
    }

    /// A name as the router wrote it, qualified in its provider.
    pub(super) fn qualify(&self, written: &str) -> String {
        QualifiedName::resolve(written, &self.provider).to_string()
    }

    /// Records the router as a user of object `kind` named `qualified`.
    pub(super) fn uses(&self, using: &mut Using, kind: ObjectKind, qualified: &str) {
        using
            .entry(ObjectRef::new(kind, qualified))
            .or_default()
            .push(self.name.to_owned());
    }

    /// The parsed rule; a rule that does not parse disables the router.
    pub(super) fn rule<M>(&mut self, rule: &str, parsed: Result<M, RuleError>) -> Option<M> {
        match parsed {
            Ok(m) => Some(m),
            Err(e) => {
                self.disable(
                    Problem::RuleSyntax {
                        rule: rule.to_owned(),
                        error: e.to_string(),
                        column: e.position,
                    },
                    "rule",
                );
                None
            }
        }
    }

    /// The syntax the router's rule is read in: the one it names, else
    /// `default`. A value other than `v2` or `v3` is read as v3, as
    /// Traefik does, with a warning naming it.
    pub(super) fn rule_syntax(&mut self, written: Option<&str>, default: RuleSyntax) -> RuleSyntax {
        match (written, RuleSyntax::from_option(written)) {
            (_, Some(syntax)) => syntax,
            (None | Some(""), None) => default,
            (Some(other), None) => {
                self.warn(
                    Problem::UnknownRuleSyntax {
                        value: other.to_owned(),
                    },
                    "rulesyntax",
                );
                RuleSyntax::V3
            }
        }
    }

    /// The entry points the router joins, by index: the named ones, or
    /// every one but gangway's internal one when none is named; records
    /// them as the router's `using`. A name that does not exist is an error
    /// only when no named one exists; each is reported once either way, and
    /// a second, general "none exist" would only say the same again.
    pub(super) fn entry_points(&mut self, names: &[String], ctx: &CompileContext) -> Vec<usize> {
        let mut eps = Vec::new();
        if names.is_empty() {
            eps.extend(
                (0..ctx.entry_points.len())
                    .filter(|&i| !ctx.not_default.contains(&ctx.entry_points[i])),
            );
        } else {
            let mut missing = Vec::new();
            for ep in names {
                match ctx.entry_points.iter().position(|n| n == ep) {
                    Some(i) => eps.push(i),
                    None => missing.push(Problem::Missing {
                        what: Reference::EntryPoint,
                        name: ep.clone(),
                    }),
                }
            }
            for problem in missing {
                if eps.is_empty() {
                    self.disable(problem, "entrypoints");
                } else {
                    self.warn(problem, "entrypoints");
                }
            }
        }
        self.entry.using = eps.iter().map(|&i| ctx.entry_points[i].clone()).collect();
        eps
    }

    /// The router's service: its qualified name, and what `get` compiled
    /// it to. A router without a service, or whose service does not
    /// compile, is disabled; one that names it is its user either way.
    pub(super) fn service<T>(
        &mut self,
        written: &str,
        using: &mut Using,
        get: impl FnOnce(&str) -> Result<T, Problem>,
    ) -> (String, Option<T>) {
        let name = self.qualify(written);
        if written.is_empty() {
            self.disable(Problem::NoService, "service");
            return (name, None);
        }
        self.uses(using, self.family.service, &name);
        match get(&name) {
            Ok(compiled) => (name, Some(compiled)),
            Err(problem) => {
                self.disable(
                    Problem::InReference {
                        what: self.family.service_ref,
                        name: name.clone(),
                        problem: Box::new(problem),
                    },
                    "service",
                );
                (name, None)
            }
        }
    }

    /// Whether nothing disabled the router.
    pub(super) fn enabled(&self) -> bool {
        self.entry.status != Status::Disabled
    }
}
