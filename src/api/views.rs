//! JSON views of the runtime in Traefik's API shapes, and the Prometheus text.

use super::ApiState;
use crate::config::QualifiedName;
use crate::config::static_config::StaticConfig;
use crate::health::{ServerStatus, ServiceHealthReport};
use crate::runtime::{ObjectReport, Runtime};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn provider_of(name: &str) -> String {
    QualifiedName::parse(name)
        .map(|q| q.provider)
        .unwrap_or_default()
}

fn merge(mut base: Value, extra: Value) -> Value {
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    base
}

fn status_fields(report: Option<&ObjectReport>, using_key: &str) -> Value {
    let default = ObjectReport::default();
    let r = report.unwrap_or(&default);
    let mut v = json!({ "status": r.status });
    if !r.errors.is_empty() {
        v["error"] = json!(r.errors);
    }
    v[using_key] = json!(r.using);
    v
}

fn to_value<T: Serialize>(t: &T) -> Value {
    serde_json::to_value(t).unwrap_or(Value::Null)
}

/// Every router: the model as configured, plus name, provider, status,
/// errors, the entry points it is on (`using`) and its effective priority.
pub fn routers(rt: &Runtime) -> Vec<Value> {
    rt.dynamic
        .http
        .routers
        .iter()
        .map(|(name, r)| {
            let provider = provider_of(name);
            let mut v = merge(
                to_value(r),
                status_fields(rt.report.routers.get(name), "using"),
            );
            v["name"] = json!(name);
            v["provider"] = json!(provider);
            v["service"] = json!(QualifiedName::resolve(&r.service, &provider).to_string());
            v["middlewares"] = json!(
                r.middlewares
                    .iter()
                    .map(|m| QualifiedName::resolve(m, &provider).to_string())
                    .collect::<Vec<_>>()
            );
            if let (true, Value::Object(m)) = (r.middlewares.is_empty(), &mut v) {
                m.remove("middlewares");
            }
            v["priority"] = json!(
                r.priority
                    .unwrap_or_else(|| crate::rule::default_priority(&r.rule))
            );
            v
        })
        .collect()
}

/// Every service, including the internal ones in use. A load balancer's
/// `serverStatus` says UP or DOWN per server URL, from `health` (the active
/// health checks by service name); a server without a check is UP, as in
/// Traefik. Checked services also carry `serverHealth`, gangway's own
/// addition: per server, the status, the last check's error and its time.
pub fn services(rt: &Runtime, health: &BTreeMap<String, ServiceHealthReport>) -> Vec<Value> {
    let mut out: Vec<Value> = rt
        .dynamic
        .http
        .services
        .iter()
        .map(|(name, s)| {
            let mut v = merge(
                to_value(s),
                status_fields(rt.report.services.get(name), "usedBy"),
            );
            v["name"] = json!(name);
            v["provider"] = json!(provider_of(name));
            let kind = if s.load_balancer.is_some() {
                "loadbalancer"
            } else if s.weighted.is_some() {
                "weighted"
            } else if s.mirroring.is_some() {
                "mirroring"
            } else {
                "failover"
            };
            v["type"] = json!(kind);
            if let Some(lb) = &s.load_balancer {
                let checked = health.get(name);
                let status: serde_json::Map<String, Value> = lb
                    .servers
                    .iter()
                    .map(|srv| {
                        let up = checked
                            .and_then(|h| h.servers.get(&srv.url))
                            .map_or(ServerStatus::Up, |r| r.status);
                        (srv.url.clone(), to_value(&up))
                    })
                    .collect();
                v["serverStatus"] = Value::Object(status);
                if let Some(h) = checked {
                    v["serverHealth"] = to_value(&h.servers);
                }
            }
            v
        })
        .collect();
    for (name, report) in &rt.report.services {
        if !rt.dynamic.http.services.contains_key(name) {
            let mut v = status_fields(Some(report), "usedBy");
            v["name"] = json!(name);
            v["provider"] = json!(provider_of(name));
            out.push(v);
        }
    }
    out
}

/// Every middleware: its options under its type name, plus the usual fields.
pub fn middlewares(rt: &Runtime) -> Vec<Value> {
    rt.dynamic
        .http
        .middlewares
        .iter()
        .map(|(name, m)| {
            let mut v = merge(
                to_value(m),
                status_fields(rt.report.middlewares.get(name), "usedBy"),
            );
            v["name"] = json!(name);
            v["provider"] = json!(provider_of(name));
            if let Some(kind) = m.kinds().first() {
                v["type"] = json!(kind.to_ascii_lowercase());
            }
            v
        })
        .collect()
}

/// Every entry point as configured, with its name.
pub fn entry_points(config: &StaticConfig) -> Vec<Value> {
    config
        .entry_points
        .iter()
        .map(|(name, ep)| {
            let mut v = to_value(ep);
            v["name"] = json!(name);
            v
        })
        .collect()
}

/// The certificates for `/api/certificates`: ACME ones with their order
/// state, then file ones (status `valid` or `expired`), soonest expiry first
/// within each source.
pub fn certificates(state: &ApiState) -> Vec<Value> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let mut acme: Vec<Value> = state
        .certificates
        .snapshot()
        .into_iter()
        .map(|c| merge(json!(c), json!({ "source": "acme" })))
        .collect();
    acme.sort_by_key(|v| v["notAfter"].as_i64().unwrap_or(i64::MAX));
    let rt = state.runtime.load_full();
    let mut files: Vec<Value> = rt
        .tls
        .files
        .iter()
        .map(|c| {
            let status = if c.not_after <= now {
                "expired"
            } else {
                "valid"
            };
            merge(json!(c), json!({ "source": "file", "status": status }))
        })
        .collect();
    files.sort_by_key(|v| v["notAfter"].as_i64().unwrap_or(i64::MAX));
    acme.extend(files);
    acme
}
