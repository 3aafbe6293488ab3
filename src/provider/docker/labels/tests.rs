use super::*;
use crate::config::dynamic::{Domain, RouterTls};
use serde_json::Value;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn traefik(pairs: &[(&str, &str)]) -> ContainerLabels {
    parse_labels("traefik", &labels(pairs))
}

/// Every HTTP label of Traefik v3's Docker label reference, with its
/// example value (`docs/content/reference/dynamic-configuration/docker-labels.yml`).
const REFERENCE: &[(&str, &str)] = &[
    (
        "traefik.http.middlewares.middleware01.addprefix.prefix",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware02.basicauth.headerfield",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware02.basicauth.realm",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware02.basicauth.removeheader",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware02.basicauth.users",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware02.basicauth.usersfile",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware03.buffering.maxrequestbodybytes",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware03.buffering.maxresponsebodybytes",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware03.buffering.memrequestbodybytes",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware03.buffering.memresponsebodybytes",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware03.buffering.retryexpression",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware04.chain.middlewares",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware05.circuitbreaker.checkperiod",
        "42s",
    ),
    (
        "traefik.http.middlewares.middleware05.circuitbreaker.expression",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware05.circuitbreaker.fallbackduration",
        "42s",
    ),
    (
        "traefik.http.middlewares.middleware05.circuitbreaker.recoveryduration",
        "42s",
    ),
    (
        "traefik.http.middlewares.middleware05.circuitbreaker.responsecode",
        "42",
    ),
    ("traefik.http.middlewares.middleware06.compress", "true"),
    (
        "traefik.http.middlewares.middleware06.compress.defaultencoding",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware06.compress.encodings",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware06.compress.excludedcontenttypes",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware06.compress.includedcontenttypes",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware06.compress.minresponsebodybytes",
        "42",
    ),
    ("traefik.http.middlewares.middleware07.contenttype", "true"),
    (
        "traefik.http.middlewares.middleware07.contenttype.autodetect",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware08.digestauth.headerfield",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware08.digestauth.realm",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware08.digestauth.removeheader",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware08.digestauth.users",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware08.digestauth.usersfile",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware09.errors.errorrequestheaders",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware09.errors.query",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware09.errors.service",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware09.errors.status",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware09.errors.statusrewrites.name0",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware09.errors.statusrewrites.name1",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.addauthcookiestoresponse",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.address",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.authrequestheaders",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.authresponseheaders",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.authresponseheadersregex",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.forwardbody",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.headerfield",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.maxbodysize",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.maxresponsebodysize",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.preservelocationheader",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.preserverequestmethod",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.tls.ca",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.tls.caoptional",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.tls.cert",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.tls.insecureskipverify",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.tls.key",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware10.forwardauth.trustforwardheader",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware11.grpcweb.alloworigins",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolallowcredentials",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolallowheaders",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolallowmethods",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolalloworiginlist",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolalloworiginlistregex",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolexposeheaders",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.accesscontrolmaxage",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.addvaryheader",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.allowedhosts",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.browserxssfilter",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.contentsecuritypolicy",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.contentsecuritypolicyreportonly",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.contenttypenosniff",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.custombrowserxssvalue",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.customframeoptionsvalue",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.customrequestheaders.name0",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.customrequestheaders.name1",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.customresponseheaders.name0",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.customresponseheaders.name1",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.featurepolicy",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.forcestsheader",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.framedeny",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.hostsproxyheaders",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.isdevelopment",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.permissionspolicy",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.publickey",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.referrerpolicy",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.sslforcehost",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.sslhost",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.sslproxyheaders.name0",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.sslproxyheaders.name1",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.sslredirect",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.ssltemporaryredirect",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.stsincludesubdomains",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.stspreload",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware12.headers.stsseconds",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware13.ipallowlist.ipstrategy",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware13.ipallowlist.ipstrategy.depth",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware13.ipallowlist.ipstrategy.excludedips",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware13.ipallowlist.ipstrategy.ipv6subnet",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware13.ipallowlist.rejectstatuscode",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware13.ipallowlist.sourcerange",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware14.ipwhitelist.ipstrategy",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware14.ipwhitelist.ipstrategy.depth",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware14.ipwhitelist.ipstrategy.excludedips",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware14.ipwhitelist.ipstrategy.ipv6subnet",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware14.ipwhitelist.sourcerange",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware15.inflightreq.amount",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware15.inflightreq.sourcecriterion.ipstrategy.depth",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware15.inflightreq.sourcecriterion.ipstrategy.excludedips",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware15.inflightreq.sourcecriterion.ipstrategy.ipv6subnet",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware15.inflightreq.sourcecriterion.requestheadername",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware15.inflightreq.sourcecriterion.requesthost",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware16.passtlsclientcert.info.issuer.commonname",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware16.passtlsclientcert.info.notafter",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware16.passtlsclientcert.info.sans",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware16.passtlsclientcert.info.subject.organizationalunit",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware16.passtlsclientcert.pem",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware17.plugin.pluginconf0.name0",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.average",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.burst",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.period",
        "42s",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.redis.db",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.redis.endpoints",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.redis.tls.insecureskipverify",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.sourcecriterion.ipstrategy.depth",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.sourcecriterion.ipstrategy.excludedips",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.sourcecriterion.ipstrategy.ipv6subnet",
        "42",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.sourcecriterion.requestheadername",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware18.ratelimit.sourcecriterion.requesthost",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware19.redirectregex.permanent",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware19.redirectregex.regex",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware19.redirectregex.replacement",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware20.redirectscheme.permanent",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware20.redirectscheme.port",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware20.redirectscheme.scheme",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware21.replacepath.path",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware22.replacepathregex.regex",
        "foobar",
    ),
    (
        "traefik.http.middlewares.middleware22.replacepathregex.replacement",
        "foobar",
    ),
    ("traefik.http.middlewares.middleware23.retry.attempts", "42"),
    (
        "traefik.http.middlewares.middleware23.retry.initialinterval",
        "42s",
    ),
    (
        "traefik.http.middlewares.middleware24.stripprefix.forceslash",
        "true",
    ),
    (
        "traefik.http.middlewares.middleware24.stripprefix.prefixes",
        "foobar, foobar",
    ),
    (
        "traefik.http.middlewares.middleware25.stripprefixregex.regex",
        "foobar, foobar",
    ),
    ("traefik.http.routers.router0.entrypoints", "foobar, foobar"),
    ("traefik.http.routers.router0.middlewares", "foobar, foobar"),
    (
        "traefik.http.routers.router0.observability.accesslogs",
        "true",
    ),
    ("traefik.http.routers.router0.observability.metrics", "true"),
    (
        "traefik.http.routers.router0.observability.traceverbosity",
        "foobar",
    ),
    ("traefik.http.routers.router0.observability.tracing", "true"),
    ("traefik.http.routers.router0.priority", "42"),
    ("traefik.http.routers.router0.rule", "foobar"),
    ("traefik.http.routers.router0.rulesyntax", "foobar"),
    ("traefik.http.routers.router0.service", "foobar"),
    ("traefik.http.routers.router0.tls", "true"),
    ("traefik.http.routers.router0.tls.certresolver", "foobar"),
    ("traefik.http.routers.router0.tls.domains[0].main", "foobar"),
    (
        "traefik.http.routers.router0.tls.domains[0].sans",
        "foobar, foobar",
    ),
    ("traefik.http.routers.router0.tls.domains[1].main", "foobar"),
    (
        "traefik.http.routers.router0.tls.domains[1].sans",
        "foobar, foobar",
    ),
    ("traefik.http.routers.router0.tls.options", "foobar"),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.followredirects",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.headers.name0",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.headers.name1",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.hostname",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.interval",
        "42s",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.method",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.mode",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.path",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.port",
        "42",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.scheme",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.status",
        "42",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.timeout",
        "42s",
    ),
    (
        "traefik.http.services.service03.loadbalancer.healthcheck.unhealthyinterval",
        "42s",
    ),
    (
        "traefik.http.services.service03.loadbalancer.passhostheader",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.passivehealthcheck.failurewindow",
        "42s",
    ),
    (
        "traefik.http.services.service03.loadbalancer.passivehealthcheck.maxfailedattempts",
        "42",
    ),
    (
        "traefik.http.services.service03.loadbalancer.responseforwarding.flushinterval",
        "42s",
    ),
    (
        "traefik.http.services.service03.loadbalancer.serverstransport",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.domain",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.httponly",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.maxage",
        "42",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.name",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.path",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.samesite",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.sticky.cookie.secure",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.strategy",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.server.port",
        "42",
    ),
    (
        "traefik.http.services.service03.loadbalancer.server.preservepath",
        "true",
    ),
    (
        "traefik.http.services.service03.loadbalancer.server.scheme",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.server.url",
        "foobar",
    ),
    (
        "traefik.http.services.service03.loadbalancer.server.weight",
        "42",
    ),
];

/// Reference labels for options gangway's model does not have (yet): each
/// must be reported as an unknown option naming its label, or, once the
/// model grows the option, land like the others.
const NOT_IN_MODEL: &[&str] = &[
    "middleware07.contenttype",
    "middleware08.digestauth",
    "middleware09.errors.errorrequestheaders",
    "middleware10.forwardauth.maxresponsebodysize",
    "middleware11.grpcweb",
    "middleware16.passtlsclientcert",
    "middleware18.ratelimit.redis",
];

/// The value at a label's path in a serialized object, keys matched without
/// regard to case, `[n]` indexing arrays.
fn at<'a>(mut node: &'a Value, path: &[&str]) -> Option<&'a Value> {
    for seg in path {
        let (name, index) = match seg.split_once('[') {
            Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (*seg, None),
        };
        node = node
            .as_object()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)?;
        if let Some(i) = index {
            // Indexes order the items; a lone `[1]` is the first item.
            let items = node.as_array()?;
            node = items.get(i.min(items.len().saturating_sub(1)))?;
        }
    }
    Some(node)
}

/// Whether `got` is what the label's text means.
fn means(text: &str, got: &Value) -> bool {
    match got {
        Value::String(s) => {
            s == text
                || s.parse::<crate::config::Duration>().ok() == text.parse().ok()
                    && s.ends_with('s')
        }
        Value::Bool(b) => b.to_string() == text,
        Value::Number(n) => n.to_string() == text,
        Value::Array(items) => {
            let want: Vec<&str> = text.split(',').map(str::trim).collect();
            items.len() == want.len() && items.iter().zip(want).all(|(i, w)| means(w, i))
        }
        // A section enabled with `true`.
        Value::Object(_) => text == "true",
        Value::Null => false,
    }
}

#[test]
fn every_http_label_of_traefiks_reference_lands_or_is_named() {
    let mut landed = 0;
    for (label, value) in REFERENCE {
        let parsed = traefik(&[(label, value)]);
        let rest = label.strip_prefix("traefik.http.").unwrap();
        let gap = NOT_IN_MODEL
            .iter()
            .any(|g| rest.split_once('.').is_some_and(|(_, r)| r.starts_with(g)));
        let segs: Vec<&str> = rest.split('.').collect();
        let (kind, name, path) = (segs[0], segs[1], &segs[2..]);
        let found: Option<Value> = match kind {
            "routers" => parsed
                .routers
                .parsed
                .get(name)
                .map(|r| serde_json::to_value(r).unwrap()),
            "middlewares" => parsed
                .middlewares
                .parsed
                .get(name)
                .map(|m| serde_json::to_value(m).unwrap()),
            "services" if path.get(1) == Some(&"server") => parsed.servers.get(name).map(|s| {
                serde_json::json!({ "loadbalancer": { "server": {
                    "port": s.port, "scheme": s.scheme, "url": s.url,
                    "weight": s.weight, "preservepath": s.preserve_path,
                }}})
            }),
            _ => parsed
                .services
                .parsed
                .get(name)
                .map(|s| serde_json::to_value(s).unwrap()),
        };
        let ok = match &found {
            // The client key is never serialized; read it directly.
            Some(_) if label.ends_with("forwardauth.tls.key") => {
                parsed.middlewares.parsed[name]
                    .forward_auth
                    .as_ref()
                    .and_then(|f| f.tls.as_ref())
                    .and_then(|t| t.key.as_deref())
                    == Some("foobar")
            }
            Some(v) => at(v, path).is_some_and(|got| means(value, got)),
            None => false,
        };
        if ok {
            assert!(parsed.errors.is_empty(), "{label}: {:?}", parsed.errors);
            landed += 1;
            continue;
        }
        assert!(
            gap,
            "{label}={value} did not land: {found:?} errors {:?}",
            parsed.errors
        );
        let named = parsed
            .errors
            .iter()
            .any(|e| e.label() == *label && matches!(e, LabelError::UnknownOption { .. }));
        assert!(
            named,
            "{label}: expected an unknown-option error naming it, got {:?}",
            parsed.errors
        );
    }
    // 27 labels name options the model has not got today (NOT_IN_MODEL).
    assert!(landed >= 161, "only {landed} of {} landed", REFERENCE.len());
}

#[test]
fn the_whole_reference_at_once_breaks_only_objects_with_unknown_options() {
    let parsed = traefik(REFERENCE);
    assert!(parsed.routers.parsed.contains_key("router0"));
    let r = &parsed.routers.parsed["router0"];
    assert_eq!(r.entry_points, ["foobar", "foobar"]);
    assert_eq!(r.priority, Some(42));
    let tls = r.tls.as_ref().expect("tls");
    assert_eq!(tls.domains.len(), 2);
    assert_eq!(tls.domains[1].sans, ["foobar", "foobar"]);
    for name in [
        "middleware01",
        "middleware02",
        "middleware04",
        "middleware05",
        "middleware24",
    ] {
        assert!(
            parsed.middlewares.parsed.contains_key(name),
            "{name}: {:?}",
            parsed.middlewares.broken.get(name)
        );
    }
    // Broken objects are the ones with an option gangway does not know.
    for name in parsed.middlewares.broken.keys() {
        assert!(
            NOT_IN_MODEL.iter().any(|g| g.starts_with(name.as_str())),
            "{name}"
        );
    }
    let svc_ok = parsed.services.parsed.contains_key("service03");
    let svc_broken = parsed.services.broken.contains_key("service03");
    assert!(svc_ok ^ svc_broken);
    // url together with port and scheme is refused.
    let s = traefik(&[
        (
            "traefik.http.services.s.loadbalancer.server.url",
            "http://a:1",
        ),
        ("traefik.http.services.s.loadbalancer.server.port", "80"),
    ]);
    assert!(s.services.broken.contains_key("s"));
    assert!(
        s.errors[0].to_string().contains("cannot be combined"),
        "{:?}",
        s.errors
    );
}

#[test]
fn traefik_documentation_examples() {
    // "Specify a custom port for the container".
    let p = traefik(&[
        (
            "traefik.http.routers.my-container.rule",
            "Host(`example.com`)",
        ),
        (
            "traefik.http.services.my-service.loadbalancer.server.port",
            "12345",
        ),
    ]);
    assert!(p.errors.is_empty());
    assert_eq!(p.routers.parsed["my-container"].rule, "Host(`example.com`)");
    assert_eq!(p.servers["my-service"].port, Some(12345));
    assert!(p.services.parsed["my-service"].load_balancer.is_some());

    // "Specifying more than one router and service per container".
    let p = traefik(&[
        (
            "traefik.http.routers.www-router.rule",
            "Host(`example-a.com`)",
        ),
        ("traefik.http.routers.www-router.service", "www-service"),
        (
            "traefik.http.services.www-service.loadbalancer.server.port",
            "8000",
        ),
        (
            "traefik.http.routers.admin-router.rule",
            "Host(`example-b.com`)",
        ),
        ("traefik.http.routers.admin-router.service", "admin-service"),
        (
            "traefik.http.services.admin-service.loadbalancer.server.port",
            "9000",
        ),
    ]);
    assert!(p.errors.is_empty());
    assert_eq!(p.routers.parsed.len(), 2);
    assert_eq!(p.routers.parsed["admin-router"].service, "admin-service");
    assert_eq!(p.servers["www-service"].port, Some(8000));

    // "Declaring and referencing a middleware".
    let p = traefik(&[
        (
            "traefik.http.middlewares.my-redirect.redirectscheme.scheme",
            "https",
        ),
        (
            "traefik.http.routers.my-container.middlewares",
            "my-redirect",
        ),
    ]);
    assert!(p.errors.is_empty());
    assert_eq!(
        p.middlewares.parsed["my-redirect"]
            .redirect_scheme
            .as_ref()
            .unwrap()
            .scheme,
        "https"
    );
    assert_eq!(
        p.routers.parsed["my-container"].middlewares,
        ["my-redirect"]
    );

    // passHostHeader from the services section's example.
    let p = traefik(&[(
        "traefik.http.services.s.loadbalancer.passhostheader",
        "false",
    )]);
    assert_eq!(
        p.services.parsed["s"]
            .load_balancer
            .as_ref()
            .unwrap()
            .pass_host_header,
        Some(false)
    );

    // The provider-specific labels.
    let p = traefik(&[
        ("traefik.enable", "true"),
        ("traefik.docker.network", "mynetwork"),
        ("traefik.docker.allownonrunning", "true"),
    ]);
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    assert_eq!(p.enable, Some(true));
    assert_eq!(p.network.as_deref(), Some("mynetwork"));
    assert!(p.allow_non_running);
}

#[test]
fn keys_ignore_case_map_keys_keep_it() {
    let p = parse_labels(
        "gangway",
        &labels(&[
            ("Gangway.HTTP.Routers.Web.Rule", "Host(`a`)"),
            ("gangway.http.routers.web.EntryPoints", "web,  websecure ,"),
            (
                "gangway.http.middlewares.h.headers.customRequestHeaders.X-Foo",
                "bar",
            ),
            (
                "gangway.http.middlewares.h.headers.customrequestheaders.X-Empty",
                "",
            ),
            (
                "gangway.http.routers.web.tls.domains[0].main",
                "example.com",
            ),
            (
                "gangway.http.routers.web.tls.domains[0].sans",
                "a.example.com,b.example.com",
            ),
            ("gangway.http.routers.web.tls.certResolver", "le"),
        ]),
    );
    assert!(p.errors.is_empty(), "{:?}", p.errors);
    let web = &p.routers.parsed["Web"];
    assert_eq!(web.rule, "Host(`a`)");
    assert_eq!(web.entry_points, ["web", "websecure"]);
    assert_eq!(
        web.tls,
        Some(RouterTls {
            cert_resolver: Some("le".into()),
            domains: vec![Domain {
                main: "example.com".into(),
                sans: vec!["a.example.com".into(), "b.example.com".into()],
            }],
            ..RouterTls::default()
        })
    );
    let h = p.middlewares.parsed["h"].headers.as_ref().unwrap();
    assert_eq!(
        h.custom_request_headers.get("X-Foo").map(String::as_str),
        Some("bar")
    );
    assert_eq!(
        h.custom_request_headers.get("X-Empty").map(String::as_str),
        Some("")
    );
    // Other prefixes are none of our business.
    let p = parse_labels(
        "gangway",
        &labels(&[
            ("traefik.http.routers.x.rule", "Host(`x`)"),
            ("gangway-test.run", "1"),
        ]),
    );
    assert!(p.routers.is_empty() && p.errors.is_empty());
}

#[test]
fn sections_take_true_false_and_options() {
    let p = traefik(&[
        ("traefik.http.routers.a.tls", "true"),
        ("traefik.http.routers.b.tls", "false"),
        ("traefik.http.routers.c.tls", "maybe"),
        ("traefik.http.middlewares.m.compress", "true"),
        ("traefik.http.services.s.loadbalancer.sticky.cookie", "true"),
        (
            "traefik.http.services.s.loadbalancer.healthcheck.interval",
            "10",
        ),
        (
            "traefik.http.services.t.loadbalancer.healthcheck.interval",
            "ten",
        ),
    ]);
    assert_eq!(p.routers.parsed["a"].tls, Some(RouterTls::default()));
    assert_eq!(p.routers.parsed["b"].tls, None);
    assert!(p.routers.broken.contains_key("c"));
    assert!(p.middlewares.parsed["m"].compress.is_some());
    let lb = p.services.parsed["s"].load_balancer.as_ref().unwrap();
    assert!(lb.sticky.as_ref().unwrap().cookie.is_some());
    assert_eq!(
        lb.health_check.as_ref().unwrap().interval,
        Some(crate::config::Duration::from_secs(10))
    );
    let t = &p.services.broken["t"][0];
    assert!(t.to_string().contains("`ten` is not a duration"), "{t}");
    assert_eq!(
        t.label(),
        "traefik.http.services.t.loadbalancer.healthcheck.interval"
    );
}

/// Labels, the object that must break, words the error must hold.
type Case = (
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
);

const MALFORMED: &[Case] = &[
    (
        &[("traefik.http.routers.web.rul", "Host(`a`)")],
        "r:web",
        "unknown option `rul` (did you mean `rule`?)",
    ),
    (
        &[("traefik.http.routers.web.priority", "high")],
        "r:web",
        "`high` is not a whole number",
    ),
    (
        &[("traefik.http.routers.web.entrypoints.x", "a")],
        "r:web",
        "comma-separated list",
    ),
    (
        &[("traefik.http.routers.web.rule.x", "a")],
        "r:web",
        "expects a value here",
    ),
    (
        &[("traefik.http.routers.we@b.rule", "Host(`a`)")],
        "r:we@b",
        "contains `@`",
    ),
    (
        &[("traefik.http.routers.web.tls", "maybe")],
        "r:web",
        "not a value for this section",
    ),
    (
        &[("traefik.http.routers.web.tls.domains[0].mian", "a")],
        "r:web",
        "did you mean `main`",
    ),
    (
        &[("traefik.http.services.s.loadbalancer.server.port", "http")],
        "s:s",
        "from 0 to 65535",
    ),
    (
        &[("traefik.http.services.s.loadbalancer.server.port", "99999")],
        "s:s",
        "from 0 to 65535",
    ),
    (
        &[("traefik.http.services.s.loadbalancer.server.prot", "80")],
        "s:s",
        "did you mean `port`",
    ),
    (
        &[("traefik.http.services.s.loadbalancer.passhostheader", "yes")],
        "s:s",
        "`yes` is not true or false",
    ),
    (
        &[("traefik.http.services.s.loadbalancr.server.port", "80")],
        "s:s",
        "did you mean `loadbalancer`",
    ),
    (
        &[(
            "traefik.http.services.s.loadbalancer.healthcheck.status",
            "-1",
        )],
        "s:s",
        "from 0 to 65535",
    ),
    (
        &[("traefik.http.middlewares.m.stripprefx.prefixes", "/a")],
        "m:m",
        "did you mean `stripprefix`",
    ),
    (
        &[("traefik.http.middlewares.m.ratelimit.average", "1.5")],
        "m:m",
        "not a whole number",
    ),
    (
        &[(
            "traefik.http.middlewares.m.headers.customrequestheaders",
            "x",
        )],
        "m:m",
        "named entries",
    ),
    (
        &[(
            "traefik.http.middlewares.m.errors.statusrewrites.418",
            "teapot",
        )],
        "m:m",
        "from 0 to 65535",
    ),
];

#[test]
fn malformed_labels_break_only_their_object() {
    let good = ("traefik.http.routers.good.rule", "Host(`good`)");
    for (pairs, broken, words) in MALFORMED {
        let mut all = pairs.to_vec();
        all.push(good);
        let p = traefik(&all);
        let (kind, name) = broken.split_once(':').unwrap();
        let errors = match kind {
            "r" => p.routers.broken.get(name),
            "s" => p.services.broken.get(name),
            _ => p.middlewares.broken.get(name),
        };
        let errors = errors.unwrap_or_else(|| panic!("{pairs:?}: {broken} not broken: {p:?}"));
        let text = errors[0].to_string();
        assert!(text.contains(words), "{pairs:?}: {text}");
        assert!(text.starts_with("label `traefik."), "{text}");
        assert!(p.routers.parsed.contains_key("good"), "{pairs:?}");
        assert_eq!(p.errors.len(), 1, "{pairs:?}: {:?}", p.errors);
    }
}

#[test]
fn stray_labels_are_reported_without_breaking_anything() {
    let p = traefik(&[
        ("traefik.http.routers.good.rule", "Host(`good`)"),
        ("traefik.http.routerz.x.rule", "Host(`x`)"),
        ("traefik.enable", "yes"),
        ("traefik.tls.options.strict.minversion", "VersionTLS13"),
        ("traefik.http..rule", "x"),
        ("traefik.http.routers.good.tls.domains[x].main", "a"),
        ("traefik.http.routers.good.tls.domains[5000].main", "a"),
        ("traefik.docker.netwrk", "n"),
        ("traefik.enabel", "true"),
        ("traefik.tcp.routers.t.rule", "HostSNI(`*`)"),
        ("traefik.udp.routers.u.service", "u"),
    ]);
    assert!(p.routers.parsed.contains_key("good"));
    assert_eq!(p.enable, None);
    assert!(p.udp_routers.parsed.contains_key("u"));
    assert!(p.tcp_routers.parsed.contains_key("t"));
    let text: Vec<String> = p.errors.iter().map(ToString::to_string).collect();
    for needle in [
        "`traefik.http.routerz.x.rule`: unknown option `routerz` (did you mean `routers`?)",
        "`traefik.enable`: `yes` is not true or false",
        "labels give only `tls.stores.default.defaultGeneratedCert`",
        "empty segment",
        "an index is written",
        "index too large",
        "unknown option `netwrk` (did you mean `network`?)",
        "unknown option `enabel` (did you mean `enable`?)",
    ] {
        assert!(
            text.iter().any(|t| t.contains(needle)),
            "{needle}: {text:#?}"
        );
    }
}

#[test]
fn a_label_given_twice_in_different_case_keeps_the_first() {
    let p = traefik(&[
        ("traefik.http.routers.web.RULE", "Host(`b`)"),
        ("traefik.http.routers.web.rule", "Host(`a`)"),
    ]);
    // Labels come in key order: upper case sorts first.
    assert_eq!(p.routers.parsed["web"].rule, "Host(`b`)");
    assert_eq!(p.errors.len(), 1);
    assert!(
        p.errors[0]
            .to_string()
            .contains("also set by `traefik.http.routers.web.RULE`")
    );
}

#[test]
fn provenance_lists_each_objects_labels() {
    let p = traefik(&[
        ("traefik.http.routers.web.rule", "Host(`a`)"),
        ("traefik.http.routers.web.service", "s"),
        ("traefik.http.services.s.loadbalancer.server.port", "80"),
    ]);
    assert_eq!(
        p.routers.labels["web"],
        [
            "traefik.http.routers.web.rule",
            "traefik.http.routers.web.service"
        ]
    );
    assert_eq!(
        p.services.labels["s"],
        ["traefik.http.services.s.loadbalancer.server.port"]
    );
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    fn segment() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("traefik".to_owned()),
            Just("http".to_owned()),
            Just("routers".to_owned()),
            Just("services".to_owned()),
            Just("middlewares".to_owned()),
            Just("loadbalancer".to_owned()),
            Just("server".to_owned()),
            Just("tls".to_owned()),
            Just("domains[0]".to_owned()),
            Just("headers".to_owned()),
            Just("customrequestheaders".to_owned()),
            Just("stripprefix".to_owned()),
            Just("rule".to_owned()),
            Just("port".to_owned()),
            Just("enable".to_owned()),
            Just("docker".to_owned()),
            "[a-zA-Z0-9@\\[\\]_-]{0,6}",
        ]
    }

    fn key() -> impl Strategy<Value = String> {
        (proptest::collection::vec(segment(), 1..9), "[.]{0,2}").prop_map(|(segs, tail)| {
            let mut k = segs.join(".");
            k.push_str(&tail);
            k
        })
    }

    fn value() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("true".to_owned()),
            Just("false".to_owned()),
            Just("42".to_owned()),
            Just("10s".to_owned()),
            Just("a, b,,c".to_owned()),
            Just("Host(`x`)".to_owned()),
            ".{0,12}",
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(500))]
        #[test]
        fn arbitrary_labels_never_panic(pairs in proptest::collection::btree_map(key(), value(), 0..24)) {
            let p = parse_labels("traefik", &pairs);
            // Every error names a label that was given, or a key path under the prefix.
            for e in &p.errors {
                prop_assert!(e.label().to_ascii_lowercase().starts_with("traefik"), "{e}");
            }
        }
    }
}

#[test]
fn an_object_reports_every_problem_with_its_label() {
    let p = traefik(&[
        ("traefik.http.routers.web.rule", "Host(`a`)"),
        ("traefik.http.routers.web.priority", "high"),
        ("traefik.http.routers.web.entrypoints", "web"),
        ("traefik.http.routers.web.tlss.certresolver", "le"),
        ("traefik.http.routers.web.tlss.options", "modern"),
        ("traefik.http.routers.web.middlewarez", "auth"),
        ("traefik.http.routers.good.rule", "Host(`good`)"),
    ]);
    let errors = &p.routers.broken["web"];
    let labels: Vec<&str> = errors.iter().map(LabelError::label).collect();
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        labels.contains(&"traefik.http.routers.web.priority"),
        "{labels:?}"
    );
    assert!(
        labels.contains(&"traefik.http.routers.web.middlewarez"),
        "{labels:?}"
    );
    assert_eq!(
        labels.iter().filter(|l| l.contains(".tlss.")).count(),
        1,
        "one unknown `tlss`, however many labels below it: {labels:?}"
    );
    assert!(
        matches!(&errors.iter().find(|e| e.label().ends_with("middlewarez")), Some(LabelError::UnknownOption { suggestion: Some(s), .. }) if s == "middlewares"),
        "{errors:?}"
    );
    assert!(!p.routers.parsed.contains_key("web"));
    assert!(p.routers.parsed.contains_key("good"));
    assert_eq!(p.errors.len(), 3, "{:?}", p.errors);
}

#[test]
fn encoded_characters_labels_read_as_traefik_writes_them() {
    let parsed = traefik(&[
        (
            "traefik.http.middlewares.strict.encodedcharacters.allowencodedslash",
            "true",
        ),
        (
            "traefik.http.middlewares.strict.encodedcharacters.allowEncodedHash",
            "true",
        ),
    ]);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let m = parsed.middlewares.parsed["strict"]
        .encoded_characters
        .expect("encodedCharacters");
    assert!(m.allow_encoded_slash && m.allow_encoded_hash);
    assert!(!m.allow_encoded_back_slash && !m.allow_encoded_percent);
}

#[test]
fn a_router_left_out_for_a_typo_still_reports_its_rule_error() {
    let p = traefik(&[
        ("traefik.http.routers.web.rul", "Host(`a`)"),
        ("traefik.http.routers.web.rule", "Host(`a`) &&"),
    ]);
    let errors = &p.routers.broken["web"];
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        matches!(&errors[1], LabelError::Rule { label, column: 13, .. } if label == "traefik.http.routers.web.rule"),
        "{errors:?}"
    );
    assert!(matches!(errors[1].problem(), Problem::RuleSyntax { .. }));
}

#[test]
fn a_misspelt_rule_gets_one_error_and_no_empty_rule_blamed_on_another_label() {
    let p = traefik(&[
        ("traefik.http.routers.web.rul", "Host(`a`)"),
        ("traefik.http.routers.web.middlewares", "auth"),
    ]);
    let errors = &p.routers.broken["web"];
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].to_string().contains("did you mean `rule`"),
        "{errors:?}"
    );
}

#[test]
fn tcp_labels_read_like_http_ones() {
    let p = traefik(&[
        ("traefik.tcp.routers.db.rule", "HostSNI(`db.test`)"),
        ("traefik.tcp.routers.db.entrypoints", "pg,other"),
        ("traefik.tcp.routers.db.tls.passthrough", "true"),
        ("traefik.tcp.routers.db.middlewares", "local"),
        ("traefik.tcp.services.db.loadbalancer.server.port", "5432"),
        (
            "traefik.tcp.services.db.loadbalancer.proxyprotocol.version",
            "2",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.serverstransport",
            "db@file",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.terminationdelay",
            "-1",
        ),
        ("traefik.tcp.services.db.loadbalancer.server.tls", "true"),
        (
            "traefik.tcp.services.db.loadbalancer.healthcheck.send",
            "PING",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.healthcheck.expect",
            "PONG",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.healthcheck.port",
            "6000",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.healthcheck.interval",
            "10s",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.healthcheck.unhealthyinterval",
            "1s",
        ),
        (
            "traefik.tcp.services.db.loadbalancer.healthcheck.timeout",
            "3s",
        ),
        (
            "traefik.tcp.middlewares.local.ipallowlist.sourcerange",
            "127.0.0.1/32,::1",
        ),
        ("traefik.tcp.routers.bad.rule", "Host(`x`)"),
        ("traefik.tcp.routers.bad.servise", "db"),
        ("traefik.tcp.servics.x.loadbalancer.server.port", "1"),
    ]);
    let db = &p.tcp_routers.parsed["db"];
    assert_eq!(db.rule, "HostSNI(`db.test`)");
    assert_eq!(db.entry_points, ["pg", "other"]);
    assert!(db.tls.as_ref().is_some_and(|t| t.passthrough));
    assert_eq!(db.middlewares, ["local"]);
    assert_eq!(p.tcp_servers["db"].port, Some(5432));
    assert_eq!(
        p.tcp_services.parsed["db"]
            .load_balancer
            .as_ref()
            .and_then(|lb| lb.proxy_protocol.as_ref())
            .map(|pp| pp.version),
        Some(2)
    );
    let lb = p.tcp_services.parsed["db"].load_balancer.clone().unwrap();
    assert_eq!(lb.servers_transport.as_deref(), Some("db@file"));
    assert_eq!(lb.termination_delay, Some(-1));
    let check = lb.health_check.unwrap();
    assert_eq!(
        (check.send.as_str(), check.expect.as_str()),
        ("PING", "PONG")
    );
    assert_eq!(check.port, Some(6000));
    assert_eq!(
        check.interval,
        Some(std::time::Duration::from_secs(10).into())
    );
    assert_eq!(
        check.unhealthy_interval,
        Some(std::time::Duration::from_secs(1).into())
    );
    assert_eq!(
        check.timeout,
        Some(std::time::Duration::from_secs(3).into())
    );
    assert_eq!(p.tcp_servers["db"].tls, Some(true));
    assert_eq!(
        p.tcp_middlewares.parsed["local"]
            .ip_allow_list
            .as_ref()
            .map(|a| a.source_range.clone()),
        Some(vec!["127.0.0.1/32".to_owned(), "::1".to_owned()])
    );
    // A broken router reports every problem, its TCP rule's among them.
    let bad: Vec<String> = p.tcp_routers.broken["bad"]
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(
        bad.iter()
            .any(|e| e.contains("unknown option `servise` (did you mean `service`?)")),
        "{bad:?}"
    );
    assert!(
        bad.iter()
            .any(|e| e.contains("`Host` is an HTTP router matcher")),
        "{bad:?}"
    );
    assert!(
        p.errors.iter().any(|e| e
            .to_string()
            .contains("unknown option `servics` (did you mean `services`?)")),
        "{:?}",
        p.errors
    );
}

#[test]
fn labels_outside_the_read_sections_are_passed_over_as_traefik_does_but_typos_are_not() {
    let parsed = traefik(&[
        ("traefik.constraint-label-stack", "public"),
        ("traefik.frontend.rule", "Host:old.test"),
        ("traefik.http.routers.app.rule", "Host(`app.test`)"),
    ]);
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    assert!(parsed.routers.parsed.contains_key("app"));
    let ignored: Vec<&str> = parsed.ignored.iter().map(LabelError::label).collect();
    assert_eq!(
        ignored,
        ["traefik.constraint-label-stack", "traefik.frontend.rule"]
    );

    let typo = traefik(&[("traefik.htpp.routers.app.rule", "Host(`app.test`)")]);
    assert!(typo.ignored.is_empty());
    assert_eq!(
        typo.errors,
        [LabelError::UnknownOption {
            label: "traefik.htpp.routers.app.rule".into(),
            option: "htpp".into(),
            suggestion: Some("http".into()),
        }]
    );
}

#[test]
fn parent_refs_are_not_read_from_labels_as_in_traefik() {
    let p = traefik(&[
        (
            "traefik.http.routers.child.rule",
            "Header(`X-Role`, `admin`)",
        ),
        ("traefik.http.routers.child.service", "admin"),
        ("traefik.http.routers.child.parentrefs", "portal@file"),
    ]);
    let text: Vec<String> = p.errors.iter().map(ToString::to_string).collect();
    assert!(
        text.iter()
            .any(|t| t.contains("traefik.http.routers.child.parentrefs")
                && t.contains("not read from labels")),
        "{text:#?}"
    );
    // The rest of the router is read: it is a root router of its own.
    let child = &p.routers.parsed["child"];
    assert!(child.parent_refs.is_empty());
    assert_eq!(child.service, "admin");
}

#[test]
fn the_default_store_s_generated_certificate_is_read_from_labels() {
    let p = traefik(&[
        ("traefik.http.routers.web.rule", "Host(`web`)"),
        (
            "traefik.tls.stores.default.defaultgeneratedcert.resolver",
            "le",
        ),
        (
            "traefik.tls.stores.default.defaultGeneratedCert.domain.main",
            "example.com",
        ),
        (
            "traefik.tls.stores.default.defaultgeneratedcert.domain.sans",
            "www.example.com,api.example.com",
        ),
        (
            "traefik.tls.stores.default.defaultcertificate.certfile",
            "/c.pem",
        ),
        (
            "traefik.tls.stores.other.defaultgeneratedcert.resolver",
            "le",
        ),
    ]);
    let generated = p.generated_cert.expect("read");
    assert_eq!(generated.resolver, "le");
    assert_eq!(
        generated.domains(),
        ["example.com", "www.example.com", "api.example.com"]
    );
    let text: Vec<String> = p.errors.iter().map(ToString::to_string).collect();
    assert_eq!(text.len(), 2, "{text:#?}");
    for label in [
        "traefik.tls.stores.default.defaultcertificate.certfile",
        "traefik.tls.stores.other.defaultgeneratedcert.resolver",
    ] {
        assert!(text.iter().any(|t| t.contains(label)), "{label}: {text:#?}");
    }
    let bad = traefik(&[(
        "traefik.tls.stores.default.defaultgeneratedcert.resolvr",
        "le",
    )]);
    assert_eq!(bad.generated_cert, None);
    assert!(
        bad.errors[0].to_string().contains("resolvr"),
        "{:?}",
        bad.errors
    );
}
