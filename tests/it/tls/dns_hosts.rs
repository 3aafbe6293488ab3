//! DNS host API providers driven through gangway's DNS-01 solver, each
//! against a stand-in of the host's API written from the host's own
//! published API reference: the real APIs need accounts and cannot be
//! reached from here. Each stand-in checks the credentials as the host
//! does, answers errors in the host's shape, and holds the TXT records of
//! the zone `apps.test` (the account also has `other.test`), so a test
//! sees what a user would see in the host's control panel: both values of
//! a wildcard and its apex published at one name, then each removed
//! without touching the other. The whole DNS-01 path through pebble is in
//! `tests/it/tls/dns.rs`.

use crate::support;

use bytes::Bytes;
use gangway::acme::dns::Solver;
use gangway::config::static_config::{DnsChallenge, Propagation};
use http::StatusCode;
use http_body_util::{BodyExt, Full};
use std::sync::{Arc, Mutex};
use support::Backend;

/// The record every test publishes, below the zone's apex so the zone is
/// found by walking up the name.
const FQDN: &str = "_acme-challenge.www.apps.test.";
const NAME: &str = "_acme-challenge.www.apps.test";
/// The two values of a wildcard and its base domain.
const WILD: &str = "wild-Jx0dAq8YtT0f4uFf2nVZb1oP4n7d5cQeR3mS9hL2kWg";
const APEX: &str = "apex-Q2mB7fZt0Lk3pX9sVd4rN8cYh6wJ1eGu5aTo0iKb2Hs";

/// One TXT record a stand-in holds.
#[derive(Clone, Debug)]
struct Record {
    id: String,
    /// Its full name, without the final dot.
    name: String,
    value: String,
    ttl: u64,
}

/// What a stand-in holds and saw.
#[derive(Default)]
struct Held {
    records: Vec<Record>,
    calls: Vec<String>,
    next_id: u64,
}

impl Held {
    fn add(&mut self, name: &str, value: &str, ttl: u64) -> String {
        self.next_id += 1;
        let id = self.next_id.to_string();
        self.records.push(Record {
            id: id.clone(),
            name: name.trim_end_matches('.').to_owned(),
            value: value.trim_matches('"').to_owned(),
            ttl,
        });
        id
    }

    fn at(&self, name: &str) -> Vec<Record> {
        self.records
            .iter()
            .filter(|r| r.name == name)
            .cloned()
            .collect()
    }

    fn values(&self, name: &str) -> Vec<String> {
        self.at(name).into_iter().map(|r| r.value).collect()
    }
}

type Shared = Arc<Mutex<Held>>;

fn json_reply(status: StatusCode, body: &serde_json::Value) -> http::Response<Full<Bytes>> {
    http::Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

/// A request's parts and whole body, noted as `METHOD /path?query`.
async fn read(
    held: &Shared,
    req: http::Request<hyper::body::Incoming>,
) -> (http::request::Parts, Bytes) {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    held.lock().unwrap().calls.push(format!(
        "{} {}",
        parts.method,
        parts.uri.path_and_query().map_or("", |p| p.as_str())
    ));
    (parts, body)
}

fn header<'a>(parts: &'a http::request::Parts, name: &str) -> &'a str {
    parts
        .headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
}

/// `query`'s parameter `name`.
fn param(parts: &http::request::Parts, name: &str) -> Option<String> {
    parts.uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then(|| v.to_owned())
    })
}

/// The solver of `provider` with `env`, propagation checks off (no DNS
/// server holds the stand-ins' records).
fn solver(provider: &str, env: &[(&str, String)]) -> Arc<Solver> {
    let config = DnsChallenge {
        provider: provider.to_owned(),
        propagation: Propagation {
            disable_checks: true,
            ..Propagation::default()
        },
        ..DnsChallenge::default()
    };
    let env: Vec<(String, String)> = env
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let lookup = move |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    Arc::new(Solver::new("le", &config, &lookup).expect("the provider is set up"))
}

/// Publishes the wildcard's and the apex's values at one name, then
/// removes each, checking what the stand-in holds after every step.
async fn publish_both_and_remove_each(solver: &Arc<Solver>, held: &Shared) {
    let wild = solver.publish(FQDN, WILD, &|_| {}).await.unwrap();
    let apex = solver.publish(FQDN, APEX, &|_| {}).await.unwrap();
    let calls = held.lock().unwrap().calls.clone();
    assert_eq!(
        held.lock().unwrap().values(NAME),
        [WILD, APEX],
        "{calls:#?}"
    );
    wild.remove().await;
    let calls = held.lock().unwrap().calls.clone();
    assert_eq!(held.lock().unwrap().values(NAME), [APEX], "{calls:#?}");
    apex.remove().await;
    let calls = held.lock().unwrap().calls.clone();
    assert!(held.lock().unwrap().records.is_empty(), "{calls:#?}");
}

/// Publishing through `solver` fails, and the error says `expected`.
async fn publishing_fails_saying(solver: &Arc<Solver>, expected: &str) {
    let err = solver
        .publish(FQDN, WILD, &|_| {})
        .await
        .map(drop)
        .unwrap_err()
        .to_string();
    assert!(err.contains(expected), "{err}");
}

// === autodns ===

const AUTODNS_USER: &str = "autodns-user";
const AUTODNS_PASSWORD: &str = "autodns-pass-7Hq";

/// AutoDNS's JSON API (`/v1`) for the calls gangway makes: `POST
/// /zone/_search` with a filter on the zone's name, `POST
/// /zone/{origin}/_stream` with `adds` and `rems`, HTTP basic
/// authentication and the `X-Domainrobot-Context` header, and its error
/// envelope (`status` and `messages` with codes).
async fn autodns_api(held: Shared) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let held = held.clone();
        async move {
            let (parts, body) = read(&held, req).await;
            let error = |status: StatusCode, code: &str, text: &str| {
                json_reply(
                    status,
                    &serde_json::json!({
                        "stid": "20261207-app1-1",
                        "status": {"code": "E0001", "text": "Request failed.", "type": "ERROR"},
                        "messages": [{"text": text, "code": code, "status": "ERROR"}],
                    }),
                )
            };
            let basic = format!(
                "Basic {}",
                base64_encode(&format!("{AUTODNS_USER}:{AUTODNS_PASSWORD}"))
            );
            if header(&parts, "authorization") != basic {
                return error(
                    StatusCode::UNAUTHORIZED,
                    "EF00000",
                    "Authentication failed.",
                );
            }
            if header(&parts, "x-domainrobot-context") != "4" {
                return error(StatusCode::BAD_REQUEST, "EF00001", "Invalid context.");
            }
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let path = parts.uri.path();
            if path == "/v1/zone/_search" && parts.method == "POST" {
                let name = json["filters"][0]["value"].as_str().unwrap_or_default();
                let data: Vec<serde_json::Value> = ["apps.test", "other.test"]
                    .iter()
                    .filter(|z| **z == name)
                    .map(|z| serde_json::json!({"origin": z, "virtualNameServer": "a.ns14.net"}))
                    .collect();
                return json_reply(
                    StatusCode::OK,
                    &serde_json::json!({
                        "status": {"code": "S0205", "text": "Zones found.", "type": "SUCCESS"},
                        "object": {"type": "Zone", "summary": data.len()},
                        "data": data,
                    }),
                );
            }
            let Some(origin) = path
                .strip_prefix("/v1/zone/")
                .and_then(|p| p.strip_suffix("/_stream"))
            else {
                return error(StatusCode::NOT_FOUND, "EF00404", "Not found.");
            };
            if origin != "apps.test" || parts.method != "POST" {
                return error(StatusCode::NOT_FOUND, "EF02020", "Zone not found.");
            }
            let mut held = held.lock().unwrap();
            let full = |r: &serde_json::Value| {
                let name = r["name"].as_str().unwrap_or_default();
                if name.is_empty() {
                    origin.to_owned()
                } else {
                    format!("{name}.{origin}")
                }
            };
            for r in json["adds"].as_array().into_iter().flatten() {
                held.add(
                    &full(r),
                    r["value"].as_str().unwrap_or_default(),
                    r["ttl"].as_u64().unwrap_or_default(),
                );
            }
            for r in json["rems"].as_array().into_iter().flatten() {
                let (name, value) = (full(r), r["value"].as_str().unwrap_or_default());
                held.records
                    .retain(|h| !(h.name == name && h.value == value));
            }
            json_reply(
                StatusCode::OK,
                &serde_json::json!({
                    "status": {"code": "S0306", "text": "Zone updated.", "type": "SUCCESS"},
                    "data": [{"origin": origin}],
                }),
            )
        }
    })
    .await
}

fn base64_encode(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn autodns_adds_and_removes_each_value_through_the_zone_stream() {
    let held = Shared::default();
    let api = autodns_api(held.clone()).await;
    let env = |password: &str| {
        vec![
            ("AUTODNS_API_USER", AUTODNS_USER.to_owned()),
            ("AUTODNS_API_PASSWORD", password.to_owned()),
            ("AUTODNS_ENDPOINT", format!("{}/v1/", api.url())),
        ]
    };
    publish_both_and_remove_each(&solver("autodns", &env(AUTODNS_PASSWORD)), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    assert!(
        calls.contains(&"POST /v1/zone/apps.test/_stream".to_owned()),
        "{calls:#?}"
    );
    publishing_fails_saying(
        &solver("autodns", &env("wrong")),
        "Request failed. (E0001); Authentication failed. (EF00000)",
    )
    .await;
}

// === ionos ===

const IONOS_KEY: &str = "publicprefix.s3cr3t-ionos";

/// IONOS's DNS API (`/dns/v1`) for the calls gangway makes: the zones
/// (`GET /zones`), a zone's records filtered by `recordName` and
/// `recordType`, `POST /zones/{id}/records` with a list, `DELETE
/// /zones/{id}/records/{id}`; the `X-API-Key` header, its TTL minimum and
/// its error list (`[{"code", "message"}]`).
async fn ionos_api(held: Shared) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let held = held.clone();
        async move {
            let (parts, body) = read(&held, req).await;
            let error = |status: StatusCode, code: &str, message: &str| {
                json_reply(status, &serde_json::json!([{"code": code, "message": message}]))
            };
            if header(&parts, "x-api-key") != IONOS_KEY {
                return error(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", "The customer is not authorized to do this operation.");
            }
            let path = parts.uri.path().to_owned();
            let method = parts.method.as_str();
            let zones = [("z-apps", "apps.test"), ("z-other", "other.test")];
            if path == "/dns/v1/zones" && method == "GET" {
                let list: Vec<_> = zones
                    .iter()
                    .map(|(id, name)| serde_json::json!({"id": id, "name": name, "type": "NATIVE"}))
                    .collect();
                return json_reply(StatusCode::OK, &serde_json::Value::Array(list));
            }
            let not_found = || error(StatusCode::NOT_FOUND, "NOT_FOUND", "Zone not found.");
            let Some(rest) = path.strip_prefix("/dns/v1/zones/z-apps") else {
                return not_found();
            };
            let mut held = held.lock().unwrap();
            match (method, rest) {
                ("GET", "") => {
                    let name = param(&parts, "recordName");
                    let records: Vec<_> = held
                        .records
                        .iter()
                        .filter(|r| name.as_deref().is_none_or(|n| n == r.name))
                        .map(|r| serde_json::json!({"id": r.id, "name": r.name, "rootName": "apps.test", "type": "TXT", "content": r.value, "ttl": r.ttl, "disabled": false}))
                        .collect();
                    json_reply(StatusCode::OK, &serde_json::json!({"id": "z-apps", "name": "apps.test", "type": "NATIVE", "records": records}))
                }
                ("POST", "/records") => {
                    let list: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap_or_default();
                    let mut made = Vec::new();
                    for r in &list {
                        let ttl = r["ttl"].as_u64().unwrap_or(3600);
                        if ttl < 300 {
                            return error(StatusCode::BAD_REQUEST, "INVALID_RECORD", "TTL must be at least 300.");
                        }
                        let name = r["name"].as_str().unwrap_or_default();
                        if !name.ends_with("apps.test") {
                            return error(StatusCode::BAD_REQUEST, "INVALID_RECORD", "Record name is not in the zone.");
                        }
                        let id = held.add(name, r["content"].as_str().unwrap_or_default(), ttl);
                        made.push(serde_json::json!({"id": id, "name": name, "type": "TXT"}));
                    }
                    json_reply(StatusCode::CREATED, &serde_json::Value::Array(made))
                }
                ("DELETE", rest) => {
                    let id = rest.strip_prefix("/records/").unwrap_or_default();
                    let before = held.records.len();
                    held.records.retain(|r| r.id != id);
                    if held.records.len() == before {
                        return error(StatusCode::NOT_FOUND, "RECORD_NOT_FOUND", "Record not found.");
                    }
                    json_reply(StatusCode::OK, &serde_json::json!({}))
                }
                _ => not_found(),
            }
        }
    })
    .await
}

#[tokio::test]
async fn ionos_creates_a_record_per_value_and_deletes_the_one_holding_it() {
    let held = Shared::default();
    let api = ionos_api(held.clone()).await;
    let env = |key: &str| {
        vec![
            ("IONOS_API_KEY", key.to_owned()),
            ("IONOS_API_URL", format!("{}/dns", api.url())),
        ]
    };
    publish_both_and_remove_each(&solver("ionos", &env(IONOS_KEY)), &held).await;
    publishing_fails_saying(
        &solver("ionos", &env("wrong.key")),
        "the API refused the credentials (401 Unauthorized): The customer is not authorized to do this operation. (UNAUTHORIZED)",
    )
    .await;
}

// === godaddy ===

const GODADDY_KEY: &str = "gd-key-9dK2";
const GODADDY_SECRET: &str = "gd-secret-Lm31";

/// GoDaddy's Domains API (`/v1/domains`) for the calls gangway makes: a
/// domain by name, a name's records of one type (`GET`, `PUT` replacing
/// them, `DELETE`), `sso-key` authentication, its TTL minimum and its
/// error shape (`{"code", "message"}`).
async fn godaddy_api(held: Shared) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let held = held.clone();
        async move {
            let (parts, body) = read(&held, req).await;
            let error = |status: StatusCode, code: &str, message: &str| {
                json_reply(status, &serde_json::json!({"code": code, "message": message}))
            };
            if header(&parts, "authorization") != format!("sso-key {GODADDY_KEY}:{GODADDY_SECRET}") {
                return error(StatusCode::UNAUTHORIZED, "UNABLE_TO_AUTHENTICATE", "Unauthorized : Could not authenticate API key/secret");
            }
            let path = parts.uri.path().to_owned();
            let Some(rest) = path.strip_prefix("/v1/domains/") else {
                return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Not found");
            };
            let (domain, rest) = rest.split_once('/').unwrap_or((rest, ""));
            if !["apps.test", "other.test"].contains(&domain) {
                return error(StatusCode::NOT_FOUND, "NOT_FOUND", &format!("Domain {domain} not found"));
            }
            let method = parts.method.as_str();
            if rest.is_empty() && method == "GET" {
                return json_reply(StatusCode::OK, &serde_json::json!({"domain": domain, "status": "ACTIVE"}));
            }
            let Some(name) = rest.strip_prefix("records/TXT/") else {
                return error(StatusCode::NOT_FOUND, "NOT_FOUND", "Not found");
            };
            let full = if name == "@" { domain.to_owned() } else { format!("{name}.{domain}") };
            let mut held = held.lock().unwrap();
            match method {
                "GET" => {
                    let list: Vec<_> = held.at(&full).iter().map(|r| serde_json::json!({"data": r.value, "name": name, "ttl": r.ttl, "type": "TXT"})).collect();
                    json_reply(StatusCode::OK, &serde_json::Value::Array(list))
                }
                "PUT" => {
                    let list: Vec<serde_json::Value> = serde_json::from_slice(&body).unwrap_or_default();
                    if list.iter().any(|r| r["ttl"].as_u64().unwrap_or(3600) < 600) {
                        return error(StatusCode::UNPROCESSABLE_ENTITY, "INVALID_BODY", "ttl must be at least 600");
                    }
                    held.records.retain(|r| r.name != full);
                    for r in &list {
                        held.add(&full, r["data"].as_str().unwrap_or_default(), r["ttl"].as_u64().unwrap_or(3600));
                    }
                    json_reply(StatusCode::OK, &serde_json::json!({}))
                }
                "DELETE" if held.at(&full).is_empty() => error(StatusCode::NOT_FOUND, "NOT_FOUND", "Record not found"),
                "DELETE" => {
                    held.records.retain(|r| r.name != full);
                    http::Response::builder().status(StatusCode::NO_CONTENT).body(Full::new(Bytes::new())).unwrap()
                }
                _ => error(StatusCode::NOT_FOUND, "NOT_FOUND", "Not found"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn godaddy_writes_the_names_records_back_whole_and_deletes_them_with_the_last_value() {
    let held = Shared::default();
    let api = godaddy_api(held.clone()).await;
    let env = |secret: &str| {
        vec![
            ("GODADDY_API_KEY", GODADDY_KEY.to_owned()),
            ("GODADDY_API_SECRET", secret.to_owned()),
            ("GODADDY_API_URL", api.url()),
        ]
    };
    publish_both_and_remove_each(&solver("godaddy", &env(GODADDY_SECRET)), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    let txt = "/v1/domains/apps.test/records/TXT/_acme-challenge.www";
    assert!(calls.contains(&format!("DELETE {txt}")), "{calls:#?}");
    assert!(calls.contains(&format!("PUT {txt}")), "{calls:#?}");
    publishing_fails_saying(
        &solver("godaddy", &env("wrong")),
        "Unauthorized : Could not authenticate API key/secret (UNABLE_TO_AUTHENTICATE)",
    )
    .await;
}

// === namecheap ===

const NAMECHEAP_USER: &str = "nc-user";
const NAMECHEAP_KEY: &str = "nc-key-0b5e";

/// A form body's fields, decoded.
fn form(body: &[u8]) -> Vec<(String, String)> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    String::from_utf8_lossy(body)
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (decode(k), decode(v)))
        .collect()
}

/// Namecheap's XML API (`/xml.response`) for the calls gangway makes:
/// `namecheap.domains.dns.getHosts` and `setHosts` (which replaces every
/// host of the domain), with the API user, key and allowed client IP
/// checked, and errors as `Status="ERROR"` with numbered `<Error>`s in a
/// 200 answer. The domain `apps.test` also holds an A record at `@` that
/// every `setHosts` must carry back.
async fn namecheap_api(held: Shared) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let held = held.clone();
        async move {
            let (_, body) = read(&held, req).await;
            let fields = form(&body);
            let field = |name: &str| {
                fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default()
            };
            let xml = |status: &str, inner: &str| {
                http::Response::builder()
                    .header("content-type", "text/xml")
                    .body(Full::new(Bytes::from(format!(
                        r#"<?xml version="1.0" encoding="utf-8"?><ApiResponse Status="{status}" xmlns="http://api.namecheap.com/xml.response">{inner}</ApiResponse>"#
                    ))))
                    .unwrap()
            };
            let error = |number: &str, text: &str| {
                xml("ERROR", &format!(r#"<Errors><Error Number="{number}">{text}</Error></Errors><Warnings /><RequestedCommand /><Server>TEST</Server>"#))
            };
            if field("ApiUser") != NAMECHEAP_USER || field("ApiKey") != NAMECHEAP_KEY {
                return error("1011102", "API Key is invalid or API access has not been enabled");
            }
            if field("ClientIp") != "127.0.0.1" {
                return error("1011150", "Invalid request IP");
            }
            if (field("SLD"), field("TLD")) != ("apps".to_owned(), "test".to_owned()) {
                return error("2019166", "Domain not found");
            }
            let mut held = held.lock().unwrap();
            match field("Command").as_str() {
                "namecheap.domains.dns.getHosts" => {
                    let mut hosts = String::from(r#"<host HostId="1" Name="@" Type="A" Address="127.0.0.1" MXPref="10" TTL="1800" AssociatedAppTitle="" FriendlyName="" IsActive="true" IsDDNSEnabled="false" />"#);
                    for r in &held.records {
                        let name = r.name.strip_suffix(".apps.test").unwrap_or("@");
                        hosts.push_str(&format!(r#"<host HostId="{}" Name="{name}" Type="TXT" Address="{}" MXPref="10" TTL="{}" IsActive="true" />"#, r.id, r.value, r.ttl));
                    }
                    xml("OK", &format!(r#"<Errors /><CommandResponse Type="namecheap.domains.dns.getHosts"><DomainDNSGetHostsResult Domain="apps.test" IsUsingOurDNS="true">{hosts}</DomainDNSGetHostsResult></CommandResponse>"#))
                }
                "namecheap.domains.dns.setHosts" => {
                    let mut hosts = Vec::new();
                    for n in 1.. {
                        let name = field(&format!("HostName{n}"));
                        if name.is_empty() {
                            break;
                        }
                        hosts.push((name, field(&format!("RecordType{n}")), field(&format!("Address{n}")), field(&format!("TTL{n}"))));
                    }
                    if !hosts.iter().any(|h| h.0 == "@" && h.1 == "A" && h.2 == "127.0.0.1") {
                        return error("2050900", "the test's A record was not carried back");
                    }
                    held.records.clear();
                    for (name, _, address, ttl) in hosts.iter().filter(|h| h.1 == "TXT") {
                        held.add(&format!("{name}.apps.test"), address, ttl.parse().unwrap_or_default());
                    }
                    xml("OK", r#"<Errors /><CommandResponse Type="namecheap.domains.dns.setHosts"><DomainDNSSetHostsResult Domain="apps.test" IsSuccess="true" /></CommandResponse>"#)
                }
                _ => error("1010101", "Unknown command"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn namecheap_writes_every_host_back_with_the_value_added_and_then_without_it() {
    let held = Shared::default();
    let api = namecheap_api(held.clone()).await;
    let env = |key: &str, ip: &str| {
        vec![
            ("NAMECHEAP_API_USER", NAMECHEAP_USER.to_owned()),
            ("NAMECHEAP_API_KEY", key.to_owned()),
            ("NAMECHEAP_CLIENT_IP", ip.to_owned()),
            ("NAMECHEAP_API_URL", format!("{}/xml.response", api.url())),
        ]
    };
    publish_both_and_remove_each(
        &solver("namecheap", &env(NAMECHEAP_KEY, "127.0.0.1")),
        &held,
    )
    .await;
    publishing_fails_saying(
        &solver("namecheap", &env("wrong", "127.0.0.1")),
        "the API refused it: API Key is invalid or API access has not been enabled (1011102)",
    )
    .await;
    publishing_fails_saying(
        &solver("namecheap", &env(NAMECHEAP_KEY, "127.0.0.2")),
        "Invalid request IP (1011150)",
    )
    .await;
}

// === netcup ===

const NETCUP_CUSTOMER: &str = "123456";
const NETCUP_KEY: &str = "netcup-key-x1";
const NETCUP_PASSWORD: &str = "netcup-pass-y2";
const NETCUP_SESSION: &str = "session-9f8e7d";

/// netcup's CCP DNS API (one JSON endpoint) for the calls gangway makes:
/// `login`, `infoDnsZone`, `infoDnsRecords`, `updateDnsRecords` (new
/// records without an id; `deleterecord` removes one), `logout`; every
/// answer a 200 with `status`, `statuscode`, `shortmessage` and
/// `longmessage`, and every call after login checked for the session.
async fn netcup_api(held: Shared) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let held = held.clone();
        async move {
            let (_, body) = read(&held, req).await;
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let (action, param) = (json["action"].as_str().unwrap_or_default(), &json["param"]);
            held.lock().unwrap().calls.push(action.to_owned());
            let answer = |status: &str, code: u32, short: &str, long: &str, data: serde_json::Value| {
                json_reply(StatusCode::OK, &serde_json::json!({
                    "serverrequestid": "srv-1", "clientrequestid": "", "action": action,
                    "status": status, "statuscode": code, "shortmessage": short, "longmessage": long,
                    "responsedata": data,
                }))
            };
            if param["customernumber"] != NETCUP_CUSTOMER || param["apikey"] != NETCUP_KEY {
                return answer("error", 4013, "Validation Error.", "The API key or customer number is wrong.", "".into());
            }
            if action == "login" {
                if param["apipassword"] != NETCUP_PASSWORD {
                    return answer("error", 4013, "Validation Error.", "Api password is wrong.", "".into());
                }
                return answer("success", 2000, "Login successful", "Session has been created successful.", serde_json::json!({"apisessionid": NETCUP_SESSION}));
            }
            if param["apisessionid"] != NETCUP_SESSION {
                return answer("error", 4001, "The session id is not in a valid format.", "", "".into());
            }
            let domain = param["domainname"].as_str().unwrap_or_default();
            let mut held = held.lock().unwrap();
            match action {
                "logout" => answer("success", 2000, "Logout successful", "", "".into()),
                _ if domain != "apps.test" => answer("error", 5029, "Can not get DNS records for zone.", "Domain not found", "".into()),
                "infoDnsZone" => answer("success", 2000, "DNS zone found", "", serde_json::json!({"name": "apps.test", "ttl": "86400", "serial": "2026120701", "refresh": "28800", "retry": "7200", "expire": "1209600", "dnssecstatus": false})),
                "infoDnsRecords" => {
                    let records: Vec<_> = held.records.iter().map(|r| serde_json::json!({
                        "id": r.id, "hostname": r.name.strip_suffix(".apps.test").unwrap_or("@"),
                        "type": "TXT", "priority": "0", "destination": r.value, "deleterecord": false, "state": "yes",
                    })).collect();
                    answer("success", 2000, "DNS records found", "", serde_json::json!({"dnsrecords": records}))
                }
                "updateDnsRecords" => {
                    for r in param["dnsrecordset"]["dnsrecords"].as_array().into_iter().flatten() {
                        if r["deleterecord"] == true {
                            let id = r["id"].as_str().unwrap_or_default();
                            held.records.retain(|h| h.id != id);
                        } else if r["id"].is_null() {
                            let host = r["hostname"].as_str().unwrap_or_default();
                            held.add(&format!("{host}.apps.test"), r["destination"].as_str().unwrap_or_default(), 86400);
                        }
                    }
                    answer("success", 2000, "DNS records successful updated", "", serde_json::json!({"dnsrecords": []}))
                }
                _ => answer("error", 4002, "Unknown action.", "", "".into()),
            }
        }
    })
    .await
}

#[tokio::test]
async fn netcup_logs_in_and_changes_only_its_own_record() {
    let held = Shared::default();
    let api = netcup_api(held.clone()).await;
    let env = |password: &str| {
        vec![
            ("NETCUP_CUSTOMER_NUMBER", NETCUP_CUSTOMER.to_owned()),
            ("NETCUP_API_KEY", NETCUP_KEY.to_owned()),
            ("NETCUP_API_PASSWORD", password.to_owned()),
            ("NETCUP_API_URL", format!("{}/endpoint.php?JSON", api.url())),
        ]
    };
    publish_both_and_remove_each(&solver("netcup", &env(NETCUP_PASSWORD)), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    let count = |a: &str| calls.iter().filter(|c| *c == a).count();
    assert_eq!(count("login"), 4, "{calls:#?}");
    assert_eq!(count("logout"), 4, "{calls:#?}");
    publishing_fails_saying(
        &solver("netcup", &env("wrong")),
        "the API refused the credentials (200 OK): Validation Error.: Api password is wrong. (4013)",
    )
    .await;
}

// === inwx ===

const INWX_USER: &str = "inwx-user";
const INWX_PASSWORD: &str = "inwx-pass-4Rt";
/// The two-factor secret of the account that has it: RFC 6238's test key.
const INWX_TFA_SECRET: &str = "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ";

/// RFC 6238's code (HMAC-SHA1, 6 digits) of `secret` for period `counter`,
/// as an authenticator app computes it.
fn totp_code(secret: &[u8], counter: u64) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret);
    let mac = ring::hmac::sign(&key, &counter.to_be_bytes());
    let mac = mac.as_ref();
    let at = usize::from(mac[19] & 0xf);
    let n = u32::from_be_bytes([mac[at] & 0x7f, mac[at + 1], mac[at + 2], mac[at + 3]]);
    format!("{:06}", n % 1_000_000)
}

/// INWX's DomRobot JSON-RPC API for the calls gangway makes:
/// `account.login` (the session is the `domrobot` cookie it sets; with
/// `tfa` the account then needs `account.unlock` with a TOTP code, each
/// code good once), `nameserver.info` (a zone; its records by name and
/// type), `nameserver.createRecord`, `nameserver.deleteRecord`,
/// `account.logout`; answers are 200 with `code` and `msg`.
async fn inwx_api(held: Shared, tfa: bool) -> Backend {
    let used: Arc<Mutex<Vec<String>>> = Arc::default();
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (held, used) = (held.clone(), used.clone());
        async move {
            let (parts, body) = read(&held, req).await;
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let (method, params) = (json["method"].as_str().unwrap_or_default(), &json["params"]);
            held.lock().unwrap().calls.push(method.to_owned());
            let answer = |code: u32, msg: &str, data: serde_json::Value| {
                json_reply(StatusCode::OK, &serde_json::json!({"code": code, "msg": msg, "resData": data}))
            };
            if method == "account.login" {
                if params["user"] != INWX_USER || params["pass"] != INWX_PASSWORD {
                    return answer(2200, "Authentication error", serde_json::json!({}));
                }
                let session = if tfa { "locked-1" } else { "open-1" };
                let mut reply = answer(1000, "Command completed successfully", serde_json::json!({"customerId": 1, "tfa": if tfa { "GOOGLE-AUTH" } else { "0" }}));
                reply.headers_mut().insert("set-cookie", format!("domrobot={session}; path=/; HttpOnly").parse().unwrap());
                return reply;
            }
            let cookie = header(&parts, "cookie").to_owned();
            if method == "account.unlock" && cookie == "domrobot=locked-1" {
                let tan = params["tan"].as_str().unwrap_or_default().to_owned();
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() / 30;
                let good = (now.saturating_sub(1)..=now).any(|t| totp_code(b"12345678901234567890", t) == tan);
                let mut used = used.lock().unwrap();
                if !good || used.contains(&tan) {
                    return answer(2200, "Authentication error", serde_json::json!({}));
                }
                used.push(tan);
                return answer(1000, "Command completed successfully", serde_json::json!({}));
            }
            let unlocked = cookie == "domrobot=open-1" || (tfa && !used.lock().unwrap().is_empty() && cookie == "domrobot=locked-1");
            if !unlocked {
                return answer(2200, "Authentication error", serde_json::json!({}));
            }
            let mut held = held.lock().unwrap();
            let domain = params["domain"].as_str().unwrap_or_default();
            match method {
                "account.logout" => answer(1500, "Command completed successfully; ending session", serde_json::json!({})),
                "nameserver.info" if domain != "apps.test" => answer(2303, "Object does not exist", serde_json::json!({})),
                "nameserver.info" => {
                    let name = params["name"].as_str();
                    let records: Vec<_> = held.records.iter().filter(|r| name.is_none_or(|n| n == r.name)).map(|r| serde_json::json!({"id": r.id.parse::<u64>().unwrap(), "name": r.name, "type": "TXT", "content": r.value, "ttl": r.ttl, "prio": 0})).collect();
                    answer(1000, "Command completed successfully", serde_json::json!({"roId": 77, "domain": "apps.test", "record": records}))
                }
                "nameserver.createRecord" => {
                    let (name, content) = (params["name"].as_str().unwrap_or_default(), params["content"].as_str().unwrap_or_default());
                    if domain != "apps.test" || !name.ends_with(".apps.test") {
                        return answer(2303, "Object does not exist", serde_json::json!({}));
                    }
                    if held.at(name).iter().any(|r| r.value == content) {
                        return answer(2302, "Object exists", serde_json::json!({}));
                    }
                    let id = held.add(name, content, params["ttl"].as_u64().unwrap_or_default());
                    answer(1000, "Command completed successfully", serde_json::json!({"id": id.parse::<u64>().unwrap()}))
                }
                "nameserver.deleteRecord" => {
                    let id = params["id"].to_string();
                    let before = held.records.len();
                    held.records.retain(|r| r.id != id);
                    if held.records.len() == before {
                        return answer(2303, "Object does not exist", serde_json::json!({}));
                    }
                    answer(1000, "Command completed successfully", serde_json::json!({}))
                }
                _ => answer(2000, "Unknown command", serde_json::json!({})),
            }
        }
    })
    .await
}

fn inwx_env(api: &Backend, password: &str) -> Vec<(&'static str, String)> {
    vec![
        ("INWX_USERNAME", INWX_USER.to_owned()),
        ("INWX_PASSWORD", password.to_owned()),
        ("INWX_SHARED_SECRET", INWX_TFA_SECRET.to_owned()),
        ("INWX_API_URL", format!("{}/jsonrpc/", api.url())),
    ]
}

#[tokio::test]
async fn inwx_logs_in_creates_and_deletes_its_record_and_logs_out() {
    let held = Shared::default();
    let api = inwx_api(held.clone(), false).await;
    publish_both_and_remove_each(&solver("inwx", &inwx_env(&api, INWX_PASSWORD)), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    let count = |a: &str| calls.iter().filter(|c| *c == a).count();
    assert_eq!(count("account.login"), 4, "{calls:#?}");
    assert_eq!(count("account.logout"), 4, "{calls:#?}");
    assert_eq!(count("account.unlock"), 0, "{calls:#?}");
    publishing_fails_saying(
        &solver("inwx", &inwx_env(&api, "wrong")),
        "the API refused the credentials (200 OK): Authentication error (2200)",
    )
    .await;
}

#[tokio::test]
async fn inwx_unlocks_an_account_with_two_factor_authentication_by_its_totp_code() {
    let held = Shared::default();
    let api = inwx_api(held.clone(), true).await;
    let solver = solver("inwx", &inwx_env(&api, INWX_PASSWORD));
    let published = solver.publish(FQDN, WILD, &|_| {}).await.unwrap();
    assert_eq!(held.lock().unwrap().values(NAME), [WILD]);
    // Removing it would log in again and wait for the next TOTP period
    // (a code is good once); the stand-in ends with the test.
    std::mem::forget(published);
    let calls = held.lock().unwrap().calls.clone();
    assert!(calls.contains(&"account.unlock".to_owned()), "{calls:#?}");
}

// === transip ===

const TRANSIP_ACCOUNT: &str = "transip-account";
const TRANSIP_TOKEN: &str = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzUxMiJ9.transip.token";

/// Runs openssl with `args` in `dir`; whether it succeeded.
fn openssl(dir: &std::path::Path, args: &[&str]) -> bool {
    std::process::Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Makes two RSA key pairs in `dir` with openssl: `private.pem` (with
/// `public.pem`) and `other.pem`, a key the stand-in does not know.
fn key_pairs(dir: &std::path::Path) {
    let private = |out: &str| {
        openssl(
            dir,
            &[
                "genpkey",
                "-algorithm",
                "RSA",
                "-pkeyopt",
                "rsa_keygen_bits:2048",
                "-out",
                out,
            ],
        )
    };
    let public = [
        "pkey",
        "-in",
        "private.pem",
        "-pubout",
        "-out",
        "public.pem",
    ];
    let made = private("private.pem") && openssl(dir, &public) && private("other.pem");
    assert!(made, "openssl makes the key pairs");
}

/// TransIP's REST API v6 for the calls gangway makes: `POST /auth` (the
/// body's RSA SHA-512 signature in the `Signature` header, checked with
/// the account's public key by openssl, each nonce good once; answers a
/// token), `GET /domains/{name}`, `POST` and `DELETE
/// /domains/{name}/dns` with a `dnsEntry`; bearer authentication and
/// its error shape (`{"error"}`).
async fn transip_api(held: Shared, keys: std::path::PathBuf) -> Backend {
    let nonces: Arc<Mutex<Vec<String>>> = Arc::default();
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (held, keys, nonces) = (held.clone(), keys.clone(), nonces.clone());
        async move {
            use base64::Engine as _;
            let (parts, body) = read(&held, req).await;
            let error = |status: StatusCode, message: &str| {
                json_reply(status, &serde_json::json!({"error": message}))
            };
            let path = parts.uri.path().to_owned();
            let json: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            if path == "/v6/auth" {
                let signature = base64::engine::general_purpose::STANDARD
                    .decode(header(&parts, "signature"))
                    .unwrap_or_default();
                let dir = tempfile::tempdir().unwrap();
                std::fs::write(dir.path().join("body"), &body).unwrap();
                std::fs::write(dir.path().join("sig"), signature).unwrap();
                let public = keys.join("public.pem");
                let verified = openssl(
                    dir.path(),
                    &[
                        "dgst",
                        "-sha512",
                        "-verify",
                        public.to_str().unwrap(),
                        "-signature",
                        "sig",
                        "body",
                    ],
                );
                if !verified {
                    return error(StatusCode::UNAUTHORIZED, "Invalid signature");
                }
                let nonce = json["nonce"].as_str().unwrap_or_default().to_owned();
                if json["login"] != TRANSIP_ACCOUNT
                    || nonce.len() < 8
                    || nonces.lock().unwrap().contains(&nonce)
                {
                    return error(StatusCode::UNAUTHORIZED, "Nonce or login is not valid");
                }
                nonces.lock().unwrap().push(nonce);
                return json_reply(
                    StatusCode::CREATED,
                    &serde_json::json!({"token": TRANSIP_TOKEN}),
                );
            }
            if header(&parts, "authorization") != format!("Bearer {TRANSIP_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, "Your access token is invalid");
            }
            let Some(rest) = path.strip_prefix("/v6/domains/") else {
                return error(StatusCode::NOT_FOUND, "Not found");
            };
            let (domain, rest) = rest.split_once('/').unwrap_or((rest, ""));
            if domain != "apps.test" {
                return error(StatusCode::NOT_FOUND, "Domain not found");
            }
            let method = parts.method.as_str();
            if rest.is_empty() && method == "GET" {
                return json_reply(
                    StatusCode::OK,
                    &serde_json::json!({"domain": {"name": "apps.test"}}),
                );
            }
            if rest != "dns" {
                return error(StatusCode::NOT_FOUND, "Not found");
            }
            let entry = &json["dnsEntry"];
            let (name, content) = (
                entry["name"].as_str().unwrap_or_default(),
                entry["content"].as_str().unwrap_or_default(),
            );
            let full = if name == "@" {
                "apps.test".to_owned()
            } else {
                format!("{name}.apps.test")
            };
            let mut held = held.lock().unwrap();
            match method {
                "POST" => {
                    held.add(&full, content, entry["expire"].as_u64().unwrap_or_default());
                    http::Response::builder()
                        .status(StatusCode::CREATED)
                        .body(Full::new(Bytes::new()))
                        .unwrap()
                }
                "DELETE" => {
                    let before = held.records.len();
                    held.records
                        .retain(|r| !(r.name == full && r.value == content));
                    if held.records.len() == before {
                        return error(StatusCode::NOT_FOUND, "DNS entry not found");
                    }
                    http::Response::builder()
                        .status(StatusCode::NO_CONTENT)
                        .body(Full::new(Bytes::new()))
                        .unwrap()
                }
                _ => error(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn transip_signs_its_token_request_and_adds_and_deletes_its_entry() {
    let keys = tempfile::tempdir().unwrap();
    key_pairs(keys.path());
    let held = Shared::default();
    let api = transip_api(held.clone(), keys.path().to_owned()).await;
    let env = |key: &str| {
        vec![
            ("TRANSIP_ACCOUNT_NAME", TRANSIP_ACCOUNT.to_owned()),
            (
                "TRANSIP_PRIVATE_KEY_PATH",
                keys.path().join(key).display().to_string(),
            ),
            ("TRANSIP_API_URL", format!("{}/v6", api.url())),
        ]
    };
    publish_both_and_remove_each(&solver("transip", &env("private.pem")), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    assert_eq!(
        calls.iter().filter(|c| *c == "POST /v6/auth").count(),
        4,
        "{calls:#?}"
    );
    publishing_fails_saying(
        &solver("transip", &env("other.pem")),
        "the API refused the credentials (401 Unauthorized): Invalid signature",
    )
    .await;
}

// === gcloud ===

const GCE_EMAIL: &str = "acme@gangway-test.iam.gserviceaccount.com";
const GCE_TOKEN: &str = "ya29.gangway-test-token";

/// Whether `jwt`'s RS256 signature verifies with `public` (PEM), by openssl.
fn jwt_verifies(jwt: &str, public: &std::path::Path) -> bool {
    use base64::Engine as _;
    let Some((signed, signature)) = jwt.rsplit_once('.') else {
        return false;
    };
    let Ok(signature) = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(signature) else {
        return false;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("signed"), signed).unwrap();
    std::fs::write(dir.path().join("sig"), signature).unwrap();
    openssl(
        dir.path(),
        &[
            "dgst",
            "-sha256",
            "-verify",
            public.to_str().unwrap(),
            "-signature",
            "sig",
            "signed",
        ],
    )
}

/// Google's OAuth 2.0 token endpoint (JWT grant: the assertion's RS256
/// signature checked by openssl, its `iss`, `scope` and `aud`) and Cloud
/// DNS's API v1 for the calls gangway makes: managed zones by `dnsName`
/// (the project also has a private zone for `other.test`), a name's TXT
/// set, `changes` (deletions then additions, the old set given whole;
/// `pending` until looked at once), with Google's error shape.
async fn gcloud_api(held: Shared, public: std::path::PathBuf) -> Backend {
    let port = Arc::new(Mutex::new(0u16));
    let backend_port = port.clone();
    let backend = Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let (held, public, port) = (held.clone(), public.clone(), port.clone());
        async move {
            use base64::Engine as _;
            let (parts, body) = read(&held, req).await;
            let error = |status: StatusCode, message: &str, code: &str| {
                json_reply(status, &serde_json::json!({"error": {"code": status.as_u16(), "message": message, "status": code}}))
            };
            let path = parts.uri.path().to_owned();
            if path == "/token" {
                let fields = form(&body);
                let field = |n: &str| fields.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).unwrap_or_default();
                let jwt = field("assertion");
                let claims: serde_json::Value = jwt.split('.').nth(1).and_then(|c| base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(c).ok()).and_then(|c| serde_json::from_slice(&c).ok()).unwrap_or_default();
                let aud = format!("http://127.0.0.1:{}/token", port.lock().unwrap());
                let good = field("grant_type") == "urn:ietf:params:oauth:grant-type:jwt-bearer"
                    && jwt_verifies(&jwt, &public)
                    && claims["iss"] == GCE_EMAIL
                    && claims["aud"] == aud.as_str()
                    && claims["scope"].as_str().is_some_and(|s| s.contains("clouddns"));
                if !good {
                    return json_reply(StatusCode::BAD_REQUEST, &serde_json::json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}));
                }
                return json_reply(StatusCode::OK, &serde_json::json!({"access_token": GCE_TOKEN, "expires_in": 3599, "token_type": "Bearer"}));
            }
            if header(&parts, "authorization") != format!("Bearer {GCE_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, "Request had invalid authentication credentials.", "UNAUTHENTICATED");
            }
            let Some(rest) = path.strip_prefix("/dns/v1/projects/gangway-test/managedZones") else {
                return error(StatusCode::NOT_FOUND, "The requested project was not found.", "NOT_FOUND");
            };
            let mut held = held.lock().unwrap();
            match (parts.method.as_str(), rest) {
                ("GET", "") => {
                    let dns_name = param(&parts, "dnsName").unwrap_or_default();
                    let zones: Vec<_> = [("apps-zone", "apps.test.", "public"), ("other-zone", "other.test.", "private")]
                        .iter()
                        .filter(|(_, d, _)| *d == dns_name)
                        .map(|(n, d, v)| serde_json::json!({"name": n, "dnsName": d, "visibility": v}))
                        .collect();
                    json_reply(StatusCode::OK, &serde_json::json!({"managedZones": zones}))
                }
                ("GET", "/apps-zone/rrsets") => {
                    let name = param(&parts, "name").unwrap_or_default();
                    let at = held.at(name.trim_end_matches('.'));
                    let sets: Vec<_> = (!at.is_empty()).then(|| serde_json::json!({"name": name, "type": "TXT", "ttl": at[0].ttl, "rrdatas": at.iter().map(|r| format!("\"{}\"", r.value)).collect::<Vec<_>>()})).into_iter().collect();
                    json_reply(StatusCode::OK, &serde_json::json!({"rrsets": sets}))
                }
                ("POST", "/apps-zone/changes") => {
                    let change: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    for set in change["deletions"].as_array().into_iter().flatten() {
                        let name = set["name"].as_str().unwrap_or_default().trim_end_matches('.').to_owned();
                        let now: Vec<String> = held.values(&name).iter().map(|v| format!("\"{v}\"")).collect();
                        if set["rrdatas"].as_array().map(|d| d.iter().filter_map(|v| v.as_str()).map(str::to_owned).collect::<Vec<_>>()) != Some(now) {
                            return error(StatusCode::PRECONDITION_FAILED, "The resource record set to delete does not match the existing one.", "FAILED_PRECONDITION");
                        }
                        held.records.retain(|r| r.name != name);
                    }
                    for set in change["additions"].as_array().into_iter().flatten() {
                        let name = set["name"].as_str().unwrap_or_default().trim_end_matches('.').to_owned();
                        if !held.at(&name).is_empty() {
                            return error(StatusCode::CONFLICT, "The resource record set already exists.", "ALREADY_EXISTS");
                        }
                        for v in set["rrdatas"].as_array().into_iter().flatten() {
                            held.add(&name, v.as_str().unwrap_or_default(), set["ttl"].as_u64().unwrap_or_default());
                        }
                    }
                    json_reply(StatusCode::OK, &serde_json::json!({"id": "7", "status": "pending", "kind": "dns#change"}))
                }
                ("GET", "/apps-zone/changes/7") => json_reply(StatusCode::OK, &serde_json::json!({"id": "7", "status": "done"})),
                _ => error(StatusCode::NOT_FOUND, "Not found.", "NOT_FOUND"),
            }
        }
    })
    .await;
    *backend_port.lock().unwrap() = backend.url().rsplit(':').next().unwrap().parse().unwrap();
    backend
}

#[tokio::test]
async fn gcloud_gets_a_token_by_the_jwt_grant_and_replaces_the_set_by_one_change() {
    let keys = tempfile::tempdir().unwrap();
    key_pairs(keys.path());
    let held = Shared::default();
    let api = gcloud_api(held.clone(), keys.path().join("public.pem")).await;
    let account = |key: &str| {
        serde_json::json!({
            "type": "service_account",
            "project_id": "gangway-test",
            "private_key_id": "k1",
            "private_key": std::fs::read_to_string(keys.path().join(key)).unwrap(),
            "client_email": GCE_EMAIL,
            "token_uri": format!("{}/token", api.url()),
        })
        .to_string()
    };
    let path = keys.path().join("account.json");
    std::fs::write(&path, account("private.pem")).unwrap();
    let env = vec![
        ("GCE_SERVICE_ACCOUNT_FILE", path.display().to_string()),
        ("GCE_API_URL", format!("{}/dns/v1", api.url())),
    ];
    publish_both_and_remove_each(&solver("gcloud", &env), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    assert!(
        calls.contains(
            &"GET /dns/v1/projects/gangway-test/managedZones/apps-zone/changes/7".to_owned()
        ),
        "{calls:#?}"
    );
    let env = vec![
        ("GCE_SERVICE_ACCOUNT", account("other.pem")),
        ("GCE_API_URL", format!("{}/dns/v1", api.url())),
    ];
    publishing_fails_saying(
        &solver("gcloud", &env),
        "Invalid JWT Signature. (invalid_grant)",
    )
    .await;
}

// === azuredns ===

const AZURE_TENANT: &str = "7f3c2e10-tenant";
const AZURE_CLIENT: &str = "c1d2e3f4-client";
const AZURE_SECRET: &str = "azure-secret~8Qw";
const AZURE_TOKEN: &str = "eyJ0eXAiOiJKV1QifQ.azure.token";
const AZURE_ZONES: &str =
    "/subscriptions/sub-1/resourceGroups/dns-rg/providers/Microsoft.Network/dnsZones";

/// Microsoft's identity platform (`/{tenant}/oauth2/v2.0/token`, the
/// client credentials grant for Resource Manager's `.default` scope, and
/// its `error_description`) and Resource Manager's DNS API (`api-version`
/// 2018-05-01): a zone by name, a TXT record set read, written whole with
/// `PUT` and deleted, a bearer token on each call, and its error shape
/// (`{"error": {"code", "message"}}`).
async fn azure_api(held: Shared) -> Backend {
    Backend::serve(move |req: http::Request<hyper::body::Incoming>| {
        let held = held.clone();
        async move {
            let (parts, body) = read(&held, req).await;
            let path = parts.uri.path().to_owned();
            if path == format!("/{AZURE_TENANT}/oauth2/v2.0/token") {
                let fields = form(&body);
                let field = |k: &str| fields.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
                let scope = field("scope").unwrap_or_default().to_owned();
                let good = field("grant_type") == Some("client_credentials")
                    && field("client_id") == Some(AZURE_CLIENT)
                    && field("client_secret") == Some(AZURE_SECRET)
                    && scope.ends_with("/.default");
                if !good {
                    return json_reply(StatusCode::UNAUTHORIZED, &serde_json::json!({"error": "invalid_client", "error_description": "AADSTS7000215: Invalid client secret provided.\r\nTrace ID: 1"}));
                }
                return json_reply(StatusCode::OK, &serde_json::json!({"token_type": "Bearer", "expires_in": 3599, "access_token": AZURE_TOKEN}));
            }
            let error = |status: StatusCode, code: &str, message: &str| {
                json_reply(status, &serde_json::json!({"error": {"code": code, "message": message}}))
            };
            if header(&parts, "authorization") != format!("Bearer {AZURE_TOKEN}") {
                return error(StatusCode::UNAUTHORIZED, "AuthenticationFailed", "Authentication failed.");
            }
            if param(&parts, "api-version").as_deref() != Some("2018-05-01") {
                return error(StatusCode::BAD_REQUEST, "InvalidApiVersionParameter", "The api-version is invalid.");
            }
            let Some(rest) = path.strip_prefix(&format!("{AZURE_ZONES}/")) else {
                return error(StatusCode::NOT_FOUND, "NotFound", "No route.");
            };
            let (zone, set) = rest.split_once("/TXT/").unwrap_or((rest, ""));
            if zone != "apps.test" {
                return error(StatusCode::NOT_FOUND, "ResourceNotFound", &format!("The Resource 'Microsoft.Network/dnszones/{zone}' under resource group 'dns-rg' was not found."));
            }
            if set.is_empty() {
                return json_reply(StatusCode::OK, &serde_json::json!({"name": "apps.test", "type": "Microsoft.Network/dnszones", "location": "global"}));
            }
            let name = if set == "@" { "apps.test".to_owned() } else { format!("{set}.apps.test") };
            let mut held = held.lock().unwrap();
            match parts.method.as_str() {
                "GET" if held.at(&name).is_empty() => error(StatusCode::NOT_FOUND, "NotFound", &format!("The resource record '{set}' does not exist in resource group 'dns-rg'.")),
                "GET" => {
                    let records: Vec<_> = held.at(&name).iter().map(|r| serde_json::json!({"value": [r.value]})).collect();
                    json_reply(StatusCode::OK, &serde_json::json!({"name": set, "properties": {"TTL": 60, "TXTRecords": records}}))
                }
                "PUT" => {
                    let sent: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                    let (Some(ttl), Some(records)) = (sent["properties"]["TTL"].as_u64(), sent["properties"]["TXTRecords"].as_array()) else {
                        return error(StatusCode::BAD_REQUEST, "BadRequest", "The record set is not valid.");
                    };
                    let values: Vec<String> = records.iter().flat_map(|r| r["value"].as_array().cloned().unwrap_or_default()).filter_map(|v| v.as_str().map(str::to_owned)).collect();
                    held.records.retain(|r| r.name != name);
                    for value in &values {
                        held.add(&name, value, ttl);
                    }
                    json_reply(StatusCode::OK, &sent)
                }
                "DELETE" => {
                    held.records.retain(|r| r.name != name);
                    json_reply(StatusCode::OK, &serde_json::json!({}))
                }
                _ => error(StatusCode::METHOD_NOT_ALLOWED, "MethodNotAllowed", "No such method."),
            }
        }
    })
    .await
}

#[tokio::test]
async fn azuredns_gets_a_client_credentials_token_and_writes_the_set_whole() {
    let held = Shared::default();
    let api = azure_api(held.clone()).await;
    let env = |secret: &str| {
        vec![
            ("AZURE_CLIENT_ID", AZURE_CLIENT.to_owned()),
            ("AZURE_CLIENT_SECRET", secret.to_owned()),
            ("AZURE_TENANT_ID", AZURE_TENANT.to_owned()),
            ("AZURE_SUBSCRIPTION_ID", "sub-1".to_owned()),
            ("AZURE_RESOURCE_GROUP", "dns-rg".to_owned()),
            ("AZURE_AUTHORITY_HOST", api.url()),
            ("AZURE_API_URL", api.url()),
        ]
    };
    publish_both_and_remove_each(&solver("azuredns", &env(AZURE_SECRET)), &held).await;
    let calls = held.lock().unwrap().calls.clone();
    let set = format!("{AZURE_ZONES}/apps.test/TXT/_acme-challenge.www?api-version=2018-05-01");
    assert!(calls.contains(&format!("PUT {set}")), "{calls:#?}");
    assert!(calls.contains(&format!("DELETE {set}")), "{calls:#?}");
    publishing_fails_saying(
        &solver("azuredns", &env("wrong")),
        "the API refused the credentials (401 Unauthorized): AADSTS7000215: Invalid client secret provided.",
    )
    .await;
}
