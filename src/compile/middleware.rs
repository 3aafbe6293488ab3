//! Middlewares of the dynamic configuration → each router's `Chain`:
//! resolve names (`name` or `name@provider`), flatten chains (detecting
//! cycles), compile each middleware once, and give the stateful ones
//! (rateLimit, inFlightReq, circuitBreaker) the state `Registries` keeps for
//! them.

use super::ServiceCompiler;
use crate::client::ClientSettings;
use crate::config::QualifiedName;
use crate::config::dynamic::{Dynamic, Middleware as Model};
use crate::config::problem::{ObjectKind, Problem, Reference};
use crate::middleware::{self as mw, Chain, Middleware, MiddlewareError, ServiceRef};
use crate::runtime::Registries;
use crate::runtime::registries::StateKey;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// Compiles middlewares for one runtime.
pub(super) struct MiddlewareCompiler<'a> {
    dynamic: &'a Dynamic,
    registries: &'a Registries,
    transport: &'a ClientSettings,
    /// Declared plugins: key → `moduleName`.
    plugins: &'a BTreeMap<String, String>,
    /// Stateless middlewares compiled so far (shared by every router).
    done: HashMap<String, Result<Arc<dyn Middleware>, Problem>>,
}

impl<'a> MiddlewareCompiler<'a> {
    pub(super) fn new(
        dynamic: &'a Dynamic,
        registries: &'a Registries,
        ctx: &'a super::CompileContext,
    ) -> Self {
        Self {
            dynamic,
            registries,
            transport: &ctx.default_transport,
            plugins: &ctx.plugins,
            done: HashMap::new(),
        }
    }

    /// The chain of a router from its `middlewares` list (already
    /// qualified). The error names the middleware at fault.
    pub(super) fn chain(
        &mut self,
        router: &str,
        names: &[String],
        services: &mut ServiceCompiler<'_>,
    ) -> Result<Chain, Problem> {
        let mut layers: Vec<(Arc<dyn Middleware>, mw::LayerName)> = Vec::with_capacity(names.len());
        let mut stack = Vec::new();
        for name in names {
            self.flatten(router, name, &mut stack, &mut layers, services)
                .map_err(|problem| Problem::InReference {
                    what: Reference::Middleware,
                    name: name.clone(),
                    problem: Box::new(problem),
                })?;
        }
        let (layers, names) = layers.into_iter().unzip();
        Ok(Chain::named(layers, names))
    }

    /// Checks one declared middleware on its own, for its report.
    pub(super) fn check(
        &mut self,
        name: &str,
        services: &mut ServiceCompiler<'_>,
    ) -> Result<(), Problem> {
        let mut layers = Vec::new();
        self.flatten("", name, &mut Vec::new(), &mut layers, services)
    }

    fn flatten(
        &mut self,
        router: &str,
        name: &str,
        stack: &mut Vec<String>,
        out: &mut Vec<(Arc<dyn Middleware>, mw::LayerName)>,
        services: &mut ServiceCompiler<'_>,
    ) -> Result<(), Problem> {
        if stack.iter().any(|s| s == name) {
            stack.push(name.to_owned());
            return Err(Problem::Cycle {
                what: Reference::Middleware,
                path: stack.clone(),
            });
        }
        let Some(m) = self.dynamic.http.middlewares.get(name) else {
            return Err(Problem::NotFound);
        };
        if let Some(why) = &m.invalid {
            // The model's reader found the options unreadable; its words.
            return Err(Problem::BadValue {
                message: why.clone(),
            });
        }
        let kind = match m.kinds().as_slice() {
            [kind] => *kind,
            [] => {
                return Err(Problem::NoType {
                    of: ObjectKind::Middleware,
                });
            }
            many => {
                return Err(Problem::SeveralTypes {
                    of: ObjectKind::Middleware,
                    types: many.iter().map(ToString::to_string).collect(),
                });
            }
        };
        let provider = QualifiedName::parse(name)
            .map(|q| q.provider)
            .unwrap_or_default();
        if let Some(chain) = &m.chain {
            stack.push(name.to_owned());
            for child in &chain.middlewares {
                let q = QualifiedName::resolve(child, &provider).to_string();
                self.flatten(router, &q, stack, out, services)
                    .map_err(|problem| Problem::InReference {
                        what: Reference::Middleware,
                        name: q.clone(),
                        problem: Box::new(problem),
                    })?;
            }
            stack.pop();
            return Ok(());
        }
        let layer = self.layer(router, name, &provider, m, services)?;
        out.push((layer, mw::LayerName::new(kind, name)));
        Ok(())
    }

    fn layer(
        &mut self,
        router: &str,
        name: &str,
        provider: &str,
        m: &Model,
        services: &mut ServiceCompiler<'_>,
    ) -> Result<Arc<dyn Middleware>, Problem> {
        // State that outlives swaps is per router, as Traefik gives each
        // router its own instance, and keyed by the configuration too, so
        // that a changed limit starts afresh.
        let stateful = m.rate_limit.is_some()
            || m.in_flight_req.is_some()
            || m.circuit_breaker.is_some()
            || m.digest_auth.is_some();
        if stateful {
            let key = StateKey::Middleware {
                router: router.to_owned(),
                middleware: name.to_owned(),
                config: serde_json::to_string(m).unwrap_or_default(),
            };
            return self.build(name, provider, m, Some(&key), services);
        }
        if let Some(done) = self.done.get(name) {
            return done.clone();
        }
        let built = self.build(name, provider, m, None, services);
        self.done.insert(name.to_owned(), built.clone());
        built
    }

    fn build(
        &self,
        name: &str,
        provider: &str,
        m: &Model,
        state_key: Option<&StateKey>,
        services: &mut ServiceCompiler<'_>,
    ) -> Result<Arc<dyn Middleware>, Problem> {
        // Exhaustive, so that a new middleware type cannot be forgotten here.
        let Model {
            add_prefix,
            basic_auth,
            buffering,
            chain: _,
            circuit_breaker,
            compress,
            content_type,
            digest_auth,
            encoded_characters,
            errors,
            forward_auth,
            grpc_web,
            headers,
            ip_allow_list,
            ip_white_list,
            in_flight_req,
            pass_tls_client_cert,
            plugin,
            rate_limit,
            redirect_regex,
            redirect_scheme,
            replace_path,
            replace_path_regex,
            retry,
            strip_prefix,
            strip_prefix_regex,
            invalid: _,
        } = m;
        // Only the stateful types read `state_key`, and `layer` gives them one.
        fn kept<T: std::any::Any + Send + Sync>(
            reg: &Registries,
            key: Option<&StateKey>,
            make: fn() -> T,
        ) -> Arc<T> {
            match key {
                Some(key) => reg.state(key, make),
                None => Arc::new(make()),
            }
        }
        let reg = self.registries;
        if let Some(c) = add_prefix {
            return ok(mw::add_prefix::compile(c));
        }
        if let Some(c) = basic_auth {
            return ok(mw::basic_auth::compile(c));
        }
        if let Some(c) = buffering {
            return ok(mw::buffering::compile(c));
        }
        if let Some(c) = circuit_breaker {
            let state = kept(reg, state_key, mw::circuit_breaker::State::default);
            return ok(mw::circuit_breaker::compile(c, state));
        }
        if let Some(c) = compress {
            return ok(mw::compress::compile(c));
        }
        if let Some(c) = content_type {
            return ok(mw::content_type::compile(c));
        }
        if let Some(c) = digest_auth {
            let state = kept(reg, state_key, mw::digest_auth::State::default);
            return ok(mw::digest_auth::compile(c, state));
        }
        if let Some(c) = encoded_characters {
            return ok(mw::encoded_characters::compile(c));
        }
        if let Some(c) = errors {
            if c.service.is_empty() {
                return Err(MiddlewareError::invalid(
                    "service",
                    "the service that serves error pages is required",
                )
                .into());
            }
            let q = QualifiedName::resolve(&c.service, provider).to_string();
            let upstream = services.get(&q).map_err(|problem| Problem::InReference {
                what: Reference::Service,
                name: q.clone(),
                problem: Box::new(problem),
            })?;
            return ok(mw::errors::compile(c, ServiceRef::new(upstream)));
        }
        if let Some(c) = forward_auth {
            let transport = self.transport;
            return ok(mw::forward_auth::compile(
                c,
                transport,
                |settings, server| reg.client(settings, server),
            ));
        }
        if let Some(c) = grpc_web {
            return ok(mw::grpc_web::compile(c));
        }
        if let Some(c) = headers {
            return ok(mw::headers::compile(c));
        }
        if let Some(c) = ip_allow_list.as_ref().or(ip_white_list.as_ref()) {
            return ok(mw::ip_allow_list::compile(c));
        }
        if let Some(c) = in_flight_req {
            let state = kept(reg, state_key, mw::in_flight_req::State::default);
            return ok(mw::in_flight_req::compile(c, state));
        }
        if let Some(c) = pass_tls_client_cert {
            return ok(mw::pass_tls_client_cert::compile(c));
        }
        if let Some(c) = plugin {
            return self.plugin(name, c);
        }
        if let Some(c) = rate_limit {
            let state = kept(reg, state_key, mw::rate_limit::State::default);
            return ok(mw::rate_limit::compile(c, name, state));
        }
        if let Some(c) = redirect_regex {
            return ok(mw::redirect::compile_regex(c));
        }
        if let Some(c) = redirect_scheme {
            return ok(mw::redirect::compile_scheme(c));
        }
        if let Some(c) = replace_path {
            return ok(mw::replace_path::compile(c));
        }
        if let Some(c) = replace_path_regex {
            return ok(mw::replace_path::compile_regex(c));
        }
        if let Some(c) = retry {
            return ok(mw::retry::compile(c));
        }
        if let Some(c) = strip_prefix {
            return ok(mw::strip_prefix::compile(c));
        }
        if let Some(c) = strip_prefix_regex {
            return ok(mw::strip_prefix::compile_regex(c));
        }
        Err(Problem::NoType {
            of: ObjectKind::Middleware,
        })
    }
}

/// A compiled middleware as a layer, or its error as the report's problem.
fn ok<T: Middleware>(r: Result<T, MiddlewareError>) -> Result<Arc<dyn Middleware>, Problem> {
    r.map(|m| Arc::new(m) as Arc<dyn Middleware>)
        .map_err(Problem::from)
}

impl MiddlewareCompiler<'_> {
    /// Compiles a `plugin` middleware, lending it the client pool and
    /// state kept per middleware across swaps.
    fn plugin(
        &self,
        name: &str,
        model: &crate::config::dynamic::middleware::Plugin,
    ) -> Result<Arc<dyn Middleware>, Problem> {
        let reg = self.registries;
        let client =
            |settings: &ClientSettings, server: &http::uri::Authority| reg.client(settings, server);
        let keep = |part: &str, make: &mut dyn FnMut() -> mw::plugin::KeptState| {
            let key = StateKey::Middleware {
                router: String::new(),
                middleware: name.to_owned(),
                config: part.to_owned(),
            };
            // Kept as it is (not wrapped once more), so that the sweep sees
            // the middlewares' own references to it and keeps it across swaps.
            reg.kept(&key, make)
        };
        let host = mw::plugin::PluginHost {
            name,
            transport: self.transport,
            client: &client,
            keep: &keep,
        };
        mw::plugin::compile(model, self.plugins, &host).map_err(Problem::from)
    }
}

/// A middleware's error as the report's problem, in the same words.
impl From<MiddlewareError> for Problem {
    fn from(e: MiddlewareError) -> Self {
        match e {
            MiddlewareError::Regex {
                option,
                regex,
                reason,
            } => Problem::MiddlewareRegex {
                option: option.to_owned(),
                regex,
                reason,
            },
            MiddlewareError::Invalid { option, reason } => Problem::MiddlewareOption {
                option: option.to_owned(),
                reason,
            },
            MiddlewareError::Htpasswd {
                option,
                line,
                reason,
            } => Problem::PasswordLine {
                option: option.to_owned(),
                line,
                reason: reason.to_string(),
            },
            MiddlewareError::Htdigest {
                option,
                line,
                reason,
            } => Problem::PasswordLine {
                option: option.to_owned(),
                line,
                reason: reason.to_string(),
            },
            MiddlewareError::Plugin(problem) => Problem::Plugin(problem),
        }
    }
}
